"""The ``kvscale`` command (``kvscale.__main__:main``, ``python -m kvscale``): a thin typer layer.

Each command module maps its options to one core call, hands the result to a renderer
(``kvscale.render``) and the rendering to the one ``Output``; errors become exit codes in
``kvscale.cli.app``. Keep this package light: it must not import torch (``verify`` and
``calibrate`` import it when they run).
"""

from __future__ import annotations

import os
import sys

import typer
import typer.main
import typer.models

from kvscale._version import __version__
from kvscale.cli import calibrate as _calibrate  # noqa: F401  (registers the command)
from kvscale.cli import codes as _codes  # noqa: F401
from kvscale.cli import diff as _diff  # noqa: F401
from kvscale.cli import inspect as _inspect  # noqa: F401
from kvscale.cli import normalize as _normalize  # noqa: F401
from kvscale.cli import plan as _plan  # noqa: F401
from kvscale.cli import verify as _verify  # noqa: F401
from kvscale.cli.app import app


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"kvscale {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        callback=_version_callback,
        is_eager=True,
        help="Show the version.",
    ),
) -> None:
    """Inspect, normalize, calibrate and verify FP8 KV-cache scales."""


def main() -> None:
    # typer turns every registered command into a click command (signatures, annotations,
    # converters) before it looks at argv; building only the one that runs saves ~25 ms of a
    # pre-commit hook's ~125 ms start-up (benchmarks/bench_startup.py). Help, completion and
    # unknown names see them all.
    everything = app.registered_commands
    wanted = sys.argv[1] if len(sys.argv) > 1 else ""
    running = [info for info in everything if _command_name(info) == wanted]
    if running and not any(key.endswith("_COMPLETE") for key in os.environ):
        app.registered_commands = running
    try:
        app(prog_name="kvscale")
    finally:
        app.registered_commands = everything


def _command_name(info: typer.models.CommandInfo) -> str:
    if info.name:
        return info.name
    callback = info.callback
    return typer.main.get_command_name(callback.__name__) if callback is not None else ""


__all__ = ["app", "main"]
