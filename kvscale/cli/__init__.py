"""The ``kvscale`` command (``kvscale.__main__:main``, ``python -m kvscale``): a thin typer layer.

Each command module maps its options to one core call, hands the result to a renderer
(``kvscale.render``) and the rendering to the one ``Output``; errors become exit codes in
``kvscale.cli.app``. Keep this package light: it must not import torch (``verify`` and
``calibrate`` import it when they run).
"""

from __future__ import annotations

import typer

from kvscale import __version__
from kvscale.cli import calibrate as _calibrate  # noqa: F401  (registers the command)
from kvscale.cli import codes as _codes  # noqa: F401
from kvscale.cli import diff as _diff  # noqa: F401
from kvscale.cli import inspect as _inspect  # noqa: F401
from kvscale.cli import normalize as _normalize  # noqa: F401
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
    app(prog_name="kvscale")


__all__ = ["app", "main"]
