"""The typer application and the one mapping from errors to exit codes and messages.

Commands live in ``kvscale/commands/``; each is wrapped by ``handles_errors`` so that typer's
``CliRunner`` sees the real exit codes, and so that no traceback reaches the user unless
``KVSCALE_DEBUG=1``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer

from kvscale._output import error_line, sanitize
from kvscale.errors import ExitCode, KVScaleError

EXIT_CODES_HELP = (
    "Exit codes: 0 done (warnings allowed unless --strict); 1 the check found problems "
    "(refused layer, invalid value, failed verification; warnings too with --strict); "
    "2 usage error or unreadable input; 3 required environment missing (no CUDA/FP8 GPU)."
)

app = typer.Typer(
    name="kvscale",
    help=(
        "Inspect, normalize and GPU-verify the FP8 KV-cache scales of safetensors checkpoints, "
        "resolved exactly as vLLM 0.33 resolves them.\n\n" + EXIT_CODES_HELP
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])


def debug_enabled() -> bool:
    return os.environ.get("KVSCALE_DEBUG", "") not in ("", "0", "false", "no")


def handles_errors(func: F) -> F:
    """Map KVScaleError (and anything unexpected) to one stderr line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KVScaleError as exc:
            if debug_enabled():
                raise
            error_line(exc.one_line())
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            error_line("interrupted")
            raise typer.Exit(130) from None
        except BrokenPipeError:
            # The reader of stdout went away (`kvscale inspect --json | head`): stop quietly,
            # with the status a process killed by SIGPIPE would have, like other Unix tools.
            _silence_stdout()
            raise typer.Exit(141) from None
        except MemoryError:
            if debug_enabled():
                raise
            error_line("out of memory")
            raise typer.Exit(int(ExitCode.USAGE)) from None
        except Exception as exc:  # a bug in kvscale, or an input we failed to classify
            if debug_enabled():
                raise
            error_line(
                f"internal error: {type(exc).__name__}: {exc} "
                "(rerun with KVSCALE_DEBUG=1 for a traceback and please report it)"
            )
            raise typer.Exit(int(ExitCode.USAGE)) from None

    return wrapper  # type: ignore[return-value]


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


class DelayedProgress:
    """A rich progress bar on stderr that appears only when work lasts more than a moment.

    Core code calls ``update(done, total, label)``; nothing is drawn for fast runs, for
    non-terminals, or when disabled.
    """

    def __init__(
        self, description: str, *, unit: str = "files", delay: float = 0.4, enabled: bool = True
    ) -> None:
        self.description = description
        self.unit = unit
        self.delay = delay
        self.enabled = enabled and sys.stderr.isatty()
        self._start = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def update(self, done: int, total: int, label: str = "") -> None:
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self._start < self.delay or done >= total:
                return
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            from kvscale._output import stderr_console

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(self.unit),
                TimeElapsedColumn(),
                TextColumn("{task.fields[label]}", markup=False),
                console=stderr_console(),
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.description, total=total, label="")
        # Shard and layer names come from the checkpoint: escape before rich sees them.
        self._progress.update(self._task, completed=done, total=total, label=sanitize(label)[-40:])

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def progress_bar(
    description: str, *, unit: str = "files", enabled: bool = True
) -> Iterator[DelayedProgress]:
    bar = DelayedProgress(description, unit=unit, enabled=enabled)
    try:
        yield bar
    finally:
        bar.close()
