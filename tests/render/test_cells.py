"""CSV carries exact values, as the JSON documents do; tables and Markdown show six digits
(issue 25: CSV rounded what JSON kept exact)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.floats import exact_text
from kvscale.render.cells import ValueCell, scale_cell
from kvscale.render.formats import to_csv, to_markdown

ROOT = Path(__file__).resolve().parents[2]


def test_scale_cell_shows_six_digits_and_keeps_every_digit() -> None:
    cell = scale_cell(0.02099609375)
    assert (cell.plain, cell.exact) == ("0.0209961", "0.02099609375")
    heads = scale_cell((0.02099609375, 0.010498046875))
    assert (heads.plain, heads.exact) == ("0.0209961*", "[0.02099609375, 0.010498046875]")
    assert [exact_text(v) for v in (None, float("nan"), float("inf"))] == ["-", "NaN", "inf"]


def test_csv_is_exact_and_markdown_is_short() -> None:
    from rich.table import Table

    table = Table()
    table.add_column("k")
    table.add_row(scale_cell(0.1 + 0.2))
    table.add_row(ValueCell("1 -> 2", "1.0 -> 2.0000001"))
    assert to_csv([table]) == "k\n0.30000000000000004\n1.0 -> 2.0000001\n"
    assert "| 0.3 |" in to_markdown([table])


@pytest.mark.parametrize(
    "args",
    [
        ["inspect", "examples/llm-compressor-attn-head"],
        ["inspect", "examples/quark-fp8", "--kv-cache-dtype", "fp8"],
    ],
)
def test_inspect_csv_equals_the_json_values(
    args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    runner = CliRunner()
    document = json.loads(runner.invoke(app, [*args, "--json", "--no-policy"]).stdout)
    rows = list(
        csv.DictReader(
            io.StringIO(runner.invoke(app, [*args, "--format", "csv", "--no-policy"]).stdout)
        )
    )
    assert len(rows) == len(document["layers"])
    for row, layer in zip(rows, document["layers"], strict=True):
        for kind in ("k", "v", "q"):
            value = layer[f"{kind}_scale"]
            expected = json.loads(row[kind]) if isinstance(value, list) else float(row[kind])
            assert expected == value, (row, layer)


def test_diff_csv_is_exact() -> None:
    result = CliRunner().invoke(
        app,
        [
            "diff",
            str(ROOT / "examples/llm-compressor-fp8"),
            str(ROOT / "examples/wrong-scale"),
            "--format",
            "csv",
            "--no-policy",
        ],
    )
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1] == (
        "1,changed,separate,0.0244140625 -> 0.00019073486328125,0.006103515625,1.0,1.0,127.0"
    )
