"""Entry point of the ``kvscale`` command (``kvscale.cli:main`` and ``python -m kvscale``).

Keep this module light: it must not import torch (``kvscale verify`` imports it lazily).
"""

from __future__ import annotations

import typer

from kvscale import __version__
from kvscale._cli_base import app
from kvscale.commands import codes as _codes  # noqa: F401  (registers the command)
from kvscale.commands import diff as _diff  # noqa: F401
from kvscale.commands import inspect as _inspect  # noqa: F401
from kvscale.commands import normalize as _normalize  # noqa: F401
from kvscale.commands import verify as _verify  # noqa: F401


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"kvscale {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version."
    ),
) -> None:
    """Inspect, normalize and GPU-verify FP8 KV-cache scales."""


def main() -> None:
    app(prog_name="kvscale")


__all__ = ["app", "main"]
