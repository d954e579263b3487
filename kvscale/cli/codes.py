"""``kvscale codes``: the problem codes, what they mean and how to fix them."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvscale.cli.app import command
from kvscale.cli.output import Output
from kvscale.cli.params import JsonOpt
from kvscale.errors import UsageError

EXAMPLES = """
Examples:

  kvscale codes

  kvscale codes scale-zero

  kvscale codes --json | jq -r '.codes[] | select(.severity == "error") | .code'
"""


@command(examples=EXAMPLES)
def codes(
    code: Annotated[
        Optional[str],  # noqa: UP045
        typer.Argument(help="Show only this code.", metavar="CODE", show_default=False),
    ] = None,
    json_output: JsonOpt = False,
) -> None:
    """List every problem code with its severity, meaning and fix."""
    from kvscale.problems import CATALOGUE
    from kvscale.render.codes import codes_json, codes_renderables

    entries = list(CATALOGUE.values())
    if code is not None:
        if code not in CATALOGUE:
            import difflib

            close = difflib.get_close_matches(code, list(CATALOGUE), n=3)
            raise UsageError(
                f"unknown problem code {code!r}",
                hint=("did you mean " + ", ".join(close) + "? " if close else "")
                + "run `kvscale codes` for the list",
            )
        entries = [CATALOGUE[code]]
    Output("json" if json_output else "human").result(
        document=lambda: codes_json(entries), renderables=lambda: codes_renderables(entries)
    )
