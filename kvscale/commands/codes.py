"""``kvscale codes``: the problem codes, what they mean and how to fix them."""

from __future__ import annotations

from kvscale._cli_base import app, handles_errors
from kvscale._options import JsonOpt


@app.command()
@handles_errors
def codes(json_output: JsonOpt = False) -> None:
    """List every problem code with its severity, meaning and fix."""
    from kvscale.problems import CATALOGUE

    if json_output:
        from kvscale._output import write_json

        write_json(
            {
                "schema": "kvscale.codes/1",
                "codes": [
                    {
                        "code": c.code,
                        "severity": c.severity.value,
                        "meaning": c.meaning,
                        "fix": c.fix,
                    }
                    for c in CATALOGUE.values()
                ],
            }
        )
        return
    from rich.table import Table

    from kvscale._output import stdout_console

    table = Table(show_lines=True)
    for column in ("code", "severity", "meaning", "fix"):
        table.add_column(column, overflow="fold")
    for c in CATALOGUE.values():
        table.add_row(c.code, c.severity.value, c.meaning, c.fix)
    stdout_console().print(table)
