"""``python -m kvscale`` and the ``kvscale`` command: start-up, then ``kvscale.cli.main``.

Ctrl-C must end a run with one line and exit 130 wherever it lands, never with a traceback. The
first thing ``main`` does, before the heavy imports (typer, rich, the engines' tables take most of
the start-up), is install a SIGINT handler that writes that line and exits at once: while kvscale
starts, parses options or exits, nothing needs cleaning up. While a command runs,
``kvscale.cli.app.interrupts_raise`` makes SIGINT (and SIGTERM) raise KeyboardInterrupt instead,
so that staging directories are removed on the way out, and puts this handler back afterwards.

What comes before ``main`` belongs to Python: interpreter start-up and site (``.pth`` files, such
as setuptools' editable-install finder) and the tiny ``kvscale`` package; a Ctrl-C there gets
Python's own report.
"""

from __future__ import annotations

import os
import signal
import sys

INTERRUPTED_LINE = b"kvscale: error: interrupted\n"


def _exit_interrupted(signum: int, frame: object) -> None:
    # os.write and os._exit: the signal may land inside a write to sys.stderr, or inside an
    # import, where raising would print a traceback and re-entering the stream would fail.
    try:
        os.write(2, INTERRUPTED_LINE)
    except OSError:
        pass
    os._exit(130)  # ExitCode.INTERRUPTED (kvscale.errors is not imported yet)


def main() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        # (Left alone when the caller ignores SIGINT, as nohup and `cmd &` in scripts do.)
        signal.signal(signal.SIGINT, _exit_interrupted)
    try:
        from kvscale.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt:
        # SIGINT was not ours to handle (see above), or a KeyboardInterrupt raised by hand.
        sys.stderr.write(INTERRUPTED_LINE.decode())
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
