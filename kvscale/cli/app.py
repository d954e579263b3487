"""The typer application, and the one mapping from errors to exit codes and messages.

Every command is registered with ``command()``, which wraps it so that typer's ``CliRunner``
sees the real exit codes and no traceback reaches the user unless ``KVSCALE_DEBUG=1``:

* a ``KVScaleError`` prints its one line (message and how to fix it) and exits with its code;
* Ctrl-C exits 130, a closed stdout (``kvscale inspect --json | head``) 141, quietly;
* anything else is a bug in kvscale: one line asking for a report, exit 70.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import typer

from kvscale.cli.output import Output
from kvscale.errors import ExitCode, KVScaleError

EXIT_CODES_HELP = (
    "Exit codes: 0 done (warnings allowed unless --strict); 1 the check found problems "
    "(refused layer, invalid value, failed verification; warnings too with --strict); "
    "2 usage error or unreadable input; 3 required environment missing (no CUDA/FP8 GPU, or "
    "an optional extra not installed); 70 internal error (please report); 130 interrupted; "
    "141 stdout closed early."
)

app = typer.Typer(
    name="kvscale",
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

F = TypeVar("F", bound=Callable[..., Any])


def debug_enabled() -> bool:
    return os.environ.get("KVSCALE_DEBUG", "") not in ("", "0", "false", "no")


def handles_errors(func: F) -> F:
    """Map KVScaleError (and anything unexpected) to one stderr line and an exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        output = Output()
        try:
            with terminate_as_interrupt():
                return func(*args, **kwargs)
        except (typer.Exit, typer.Abort, SystemExit):
            raise
        except KVScaleError as exc:
            if debug_enabled():
                raise
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
            if debug_enabled():
                raise
            output.error(
                f"internal error: {type(exc).__name__}: {exc} "
                "(rerun with KVSCALE_DEBUG=1 for a traceback and please report it)"
            )
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return wrapper  # type: ignore[return-value]


def command(*, examples: str = "", extra_help: str = "", **settings: Any) -> Callable[[F], F]:
    """Register a command with its examples and the exit codes in its help epilog."""

    def decorate(func: F) -> F:
        parts = [p for p in (examples.strip(), extra_help.strip(), EXIT_CODES_HELP) if p]
        epilog = "\n\n".join(part.replace("\n", "\n\n") for part in parts)
        app.command(epilog=epilog, **settings)(handles_errors(func))
        return func

    return decorate


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI timeout, ``docker stop``, ``kill``) raises KeyboardInterrupt like Ctrl-C,
    so that staging directories and partial reports are cleaned up on the way out; exit 130."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
