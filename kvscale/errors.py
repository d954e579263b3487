"""One error taxonomy for the whole package, mapped once to exit codes.

Core modules raise these; they never print or exit. ``kvscale.cli`` turns each into a one-line
message on stderr and the exit code below (a traceback only with ``KVSCALE_DEBUG=1``).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes, identical for every command (see the README and ``--help``)."""

    OK = 0
    """Done; nothing of severity error (warnings allowed unless ``--strict``)."""
    CHECK_FAILED = 1
    """The check found problems: a refused layer, an invalid value, a failed verification."""
    USAGE = 2
    """Usage error, or an input that cannot be read."""
    ENVIRONMENT = 3
    """A required environment is missing (``verify --gpu`` without a usable CUDA device, or an
    optional extra that is not installed)."""
    INTERNAL = 70
    """A bug in kvscale (``EX_SOFTWARE`` of sysexits.h): one line asking for a report."""
    INTERRUPTED = 130
    """Interrupted (Ctrl-C, SIGINT; SIGTERM during a write): 128 + SIGINT, as shells report."""
    BROKEN_PIPE = 141
    """The reader of stdout went away (``| head``): 128 + SIGPIPE, as other Unix tools."""


class KVScaleError(Exception):
    """Base of every error kvscale raises on purpose.

    ``hint`` says how to fix it; ``exit_code`` is what the CLI exits with.
    """

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = self.message if not self.hint else f"{self.message} ({self.hint})"
        # One line, always: checkpoint-controlled text may hold newlines.
        return " ".join(text.split())


class UsageError(KVScaleError):
    """Bad options or arguments."""


class InputError(KVScaleError):
    """An input that cannot be read; always names the file."""

    def __init__(self, path: object, message: str, *, hint: str | None = None) -> None:
        super().__init__(f"{path}: {message}", hint=hint)
        self.path = str(path)


class CheckpointNotFoundError(InputError):
    """The path does not exist or holds no safetensors files."""


class CheckpointLayoutError(InputError):
    """The directory, index or Hugging Face cache layout is inconsistent."""


class SafetensorsFormatError(InputError):
    """A safetensors file is malformed (header, offsets, sizes, dtypes)."""


class ConfigError(InputError):
    """config.json / hf_quant_config.json is malformed or holds values of the wrong type."""


class LimitExceededError(InputError):
    """An input exceeds one of kvscale's documented safety limits."""


class OutputError(KVScaleError):
    """Writing results failed (disk full, permissions, output inside the input, ...)."""


class RefusedError(KVScaleError):
    """The check failed in a way that stops a command before it writes anything."""

    exit_code = ExitCode.CHECK_FAILED


class InternalCheckError(KVScaleError):
    """kvscale's own check of what it wrote failed (a bug in kvscale, not in the input)."""

    exit_code = ExitCode.INTERNAL


class EnvironmentMissingError(KVScaleError):
    """A required environment (CUDA device, FP8 support, Triton) is missing."""

    exit_code = ExitCode.ENVIRONMENT


class ExtraMissingError(EnvironmentMissingError):
    """A command needs an optional extra (``kvscale[gpu]``, ``kvscale[calibrate]``) that is not
    installed."""

    def __init__(self, feature: str, extra: str, missing: str) -> None:
        super().__init__(
            f"{feature} needs the {missing} package, which is not installed",
            hint=f"pip install 'kvscale[{extra}]'",
        )
        self.extra = extra
        self.missing = missing


def require(module: str, feature: str, extra: str) -> None:
    """Raise ``ExtraMissingError`` unless ``module`` can be imported (checked without importing
    it, so that the check costs nothing)."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ExtraMissingError(feature, extra, module.split(".")[0])


EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "verify": ("torch", "safetensors"),
    "calibrate": ("torch", "safetensors", "transformers"),
    "hub": ("huggingface_hub",),
}
"""What each extra of pyproject.toml brings that a feature imports (``compressed_tensors``, in
the calibrate extra too, only for loading a compressed-tensors model: ``kvscale.model.load``)."""


def require_extra(extra: str, feature: str) -> None:
    """Raise ``ExtraMissingError`` (exit 3) unless every module of ``extra`` can be imported:
    called before anything imports them, by the commands and the Python API alike."""
    for module in EXTRA_MODULES[extra]:
        require(module, feature, extra)
