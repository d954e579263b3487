"""``python -m kvscale`` and the ``kvscale`` command: start-up, then ``kvscale.cli.main``.

Importing the CLI (typer, rich, the engines' tables) takes a moment; a Ctrl-C in it must end the
run like a Ctrl-C anywhere else (exit 130, one line), not with a traceback. Once ``main`` runs,
``kvscale.cli.app`` handles interrupts.
"""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from kvscale.cli import main as cli_main

        cli_main()  # (typer builds the command first: an interrupt there is start-up too)
    except KeyboardInterrupt:
        sys.stderr.write("kvscale: error: interrupted\n")
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
