"""The typer application, and the one mapping from errors to exit codes and messages.

Every command is registered with ``command()``, which wraps it so that typer's ``CliRunner``
sees the real exit codes and no traceback reaches the user unless ``KVSCALE_DEBUG=1``:

* a ``KVScaleError`` prints its one line (message and how to fix it) and exits with its code;
* Ctrl-C exits 130, a closed stdout (``kvscale inspect --json | head``) 141, quietly;
* anything else is a bug in kvscale: one line asking for a report, exit 70.

Errors found before a command runs (an unknown option, a missing argument, a value click
refuses) are one line too, ``kvscale: error: ...``, exit 2 (``KVScaleGroup``): typer would
draw a usage panel of six lines or more.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer
import typer.core

from kvscale.cli.output import Output, documents_written
from kvscale.errors import ExitCode, KVScaleError

EXIT_CODES_HELP = (
    "Exit codes: 0 done (warnings allowed unless --strict); 1 the check found problems "
    "(refused layer, invalid value, failed verification; warnings too with --strict); "
    "2 usage error or unreadable input; 3 required environment missing (no CUDA/FP8 GPU, or "
    "an optional extra not installed); 70 internal error (please report); 130 interrupted; "
    "141 stdout closed early."
)

F = TypeVar("F", bound=Callable[..., Any])


def _click_error_types() -> tuple[type[Exception], type[Exception]]:
    """``ClickException`` and ``UsageError`` of the click that typer runs on: typer 0.28 vendors
    click as a private module, so they are taken from the bases of ``typer.BadParameter``, the
    public one of them."""
    bases = {cls.__name__: cls for cls in typer.BadParameter.__mro__}
    return bases["ClickException"], bases["UsageError"]


ClickError, ClickUsageError = _click_error_types()


class KVScaleCommand(typer.core.TyperCommand):
    """A command whose usage line names its arguments as click does (``CHECKPOINT...``, ``A B``),
    not typer's ``{checkpoints}...``."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if not isinstance(param, typer.core.TyperArgument):
                continue
            name = (param.metavar or param.name or "").upper()
            if param.nargs != 1:
                name += "..."
            pieces.append(name if param.required else f"[{name}]")
        return pieces


class KVScaleGroup(typer.core.TyperGroup):
    """The ``kvscale`` group: a usage error is one line, ``kvscale: error: ...``, exit 2."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
        except ClickError as exc:
            if not standalone_mode:
                raise
            if type(exc).__name__ != "NoArgsIsHelpError":  # (that one has shown the help)
                Output().error(usage_error_line(exc))
            sys.exit(int(getattr(exc, "exit_code", ExitCode.USAGE)))
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def usage_error_line(exc: Exception) -> str:
    """A click error as one line, with where to read the usage."""
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    text = " ".join(str(message).split())
    ctx = getattr(exc, "ctx", None)
    if isinstance(exc, ClickUsageError) and ctx is not None:
        text += f" (see: {ctx.command_path} --help)"
    return text


app = typer.Typer(
    name="kvscale",
    cls=KVScaleGroup,
    help=(
        "Inspect, normalize, calibrate and verify the FP8 KV-cache scales of safetensors "
        "checkpoints, resolved exactly as the serving engine resolves them.\n\n" + EXIT_CODES_HELP
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)


def debug_enabled() -> bool:
    return os.environ.get("KVSCALE_DEBUG", "") not in ("", "0", "false", "no")


def handles_errors(func: F) -> F:
    """Map KVScaleError (and anything unexpected) to one stderr line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output = Output()
        # --json (or --format json): stdout holds one document whatever happens; a command that
        # fails before writing its own gets a kvscale.error/1 document.
        json_mode = kwargs.get("json_output") is True or _value(kwargs.get("fmt")) == "json"
        written = documents_written()

        def error_document(error_type: str, message: str, code: int, input_: Any) -> None:
            if json_mode and documents_written() == written:
                from kvscale.render._common import error_json

                output.json(error_json(error_type, message, code, input_))

        try:
            with interrupts_raise():
                return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KVScaleError as exc:
            if debug_enabled():
                raise
            error_document(
                type(exc).__name__, exc.one_line(), int(exc.exit_code), getattr(exc, "path", None)
            )
            output.error(exc.one_line())
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            output.error("interrupted")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:
            # The reader of stdout went away: stop quietly, with the status a process killed by
            # SIGPIPE would have, like other Unix tools.
            _silence_stdout()
            raise typer.Exit(int(ExitCode.BROKEN_PIPE)) from None
        except MemoryError:
            if debug_enabled():
                raise
            output.error("out of memory")
            raise typer.Exit(int(ExitCode.USAGE)) from None
        except Exception as exc:  # a bug in kvscale, or an input we failed to classify
            if _interrupted(exc):
                output.error("interrupted")
                raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
            if debug_enabled():
                raise
            message = (
                f"internal error: {type(exc).__name__}: {exc} "
                "(rerun with KVSCALE_DEBUG=1 for a traceback and please report it)"
            )
            error_document("InternalError", " ".join(message.split()), int(ExitCode.INTERNAL), None)
            output.error(message)
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return wrapper  # type: ignore[return-value]


def _interrupted(exc: BaseException) -> bool:
    """A Ctrl-C that Python re-raised as another exception: an interrupt landing in a class body
    being built (``dataclass`` fields, during a lazy import) becomes ``RuntimeError: Error calling
    __set_name__`` with the KeyboardInterrupt as its cause."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _value(choice: object) -> object:
    return getattr(choice, "value", choice)


def command(*, examples: str = "", extra_help: str = "", **settings: Any) -> Callable[[F], F]:
    """Register a command with its examples and the exit codes in its help epilog."""

    def decorate(func: F) -> F:
        app.command(epilog=epilog(examples, extra_help), cls=KVScaleCommand, **settings)(
            handles_errors(func)
        )
        return func

    return decorate


def _typer_joins_epilog_paragraphs() -> bool:
    """typer before 0.27.1 shows an epilog's paragraphs (split at blank lines) one per line,
    single line breaks turned into spaces; 0.27.1 shows it as written (``rich_utils``,
    fastapi/typer#1405)."""
    found = re.match(r"(\d+)\.(\d+)\.(\d+)", typer.__version__)
    return found is not None and tuple(int(n) for n in found.groups()) < (0, 27, 1)


def epilog(examples: str, extra_help: str = "") -> str:
    """A command's help epilog, shown with one blank line between paragraphs and every example
    on a line of its own: its examples, its extra help, the exit codes."""
    parts = [part for part in (examples.strip(), extra_help.strip(), EXIT_CODES_HELP) if part]
    if _typer_joins_epilog_paragraphs():
        # Every line its own paragraph, and an empty paragraph for each blank line.
        return "\n\n".join(part.replace("\n", "\n\n") for part in parts)
    return "\n\n".join(parts)


@contextmanager
def interrupts_raise() -> Iterator[None]:
    """While a command runs, Ctrl-C (SIGINT) and SIGTERM (a CI timeout, ``docker stop``,
    ``kill``) raise KeyboardInterrupt, so that staging directories and partial reports are
    cleaned up on the way out; exit 130. Before and after (``kvscale.__main__`` installs a
    handler that exits at once) there is nothing to clean up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous_term = signal.signal(signal.SIGTERM, handler)
    previous_int = signal.getsignal(signal.SIGINT)
    # (A background job of a script ignores SIGINT; None: a handler not set from Python.)
    swap = previous_int not in (signal.SIG_IGN, None)
    if swap:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if swap:
            signal.signal(signal.SIGINT, previous_int)
        signal.signal(signal.SIGTERM, previous_term)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
