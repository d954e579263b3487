"""People's output, piped into a CI log: the same text at every terminal width, no colour, every
value and column whole, every problem message on one line; and the Markdown / CSV forms.

Goldens: tests/golden/human/<case>.txt (regenerate with KVSCALE_UPDATE_GOLDEN=1 and review)."""

from __future__ import annotations

import csv
import io
import os
import re
from pathlib import Path

import pytest
from support.cli import CliRunner
from support.paths import GOLDEN, ROOT

from kvscale.cli import app

HUMAN = GOLDEN / "human"

UPDATE = os.environ.get("KVSCALE_UPDATE_GOLDEN", "") not in ("", "0", "false", "no")

runner = CliRunner()

CASES = {
    "inspect-broken": ["inspect", "examples/broken"],
    "inspect-quark-fp8": ["inspect", "examples/quark-fp8", "--kv-cache-dtype", "fp8"],
    "inspect-many": ["inspect", "examples/llm-compressor-fp8", "examples/broken"],
    "verify-broken": ["verify", "examples/broken", "--tokens", "64"],
    "verify-wrong-scale": [
        "verify",
        "examples/wrong-scale",
        "--activations",
        "examples/activations/tiny-llama-kv.safetensors",
    ],
    "diff-broken": ["diff", "examples/llm-compressor-fp8", "examples/broken", "--all"],
    "codes-scale-zero": ["codes", "scale-zero"],
}


def _run(args: list[str], columns: int, **env: str) -> tuple[int, str]:
    result = runner.invoke(
        app, args, env={"COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb", **env}
    )
    return result.exit_code, result.stdout


@pytest.fixture(autouse=True)
def _at_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # examples/... relative, as a user types them
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_text_at_60_80_200_columns_and_golden(case: str) -> None:
    outputs = {columns: _run(CASES[case], columns) for columns in (60, 80, 200)}
    codes = {code for code, _ in outputs.values()}
    texts = {text for _, text in outputs.values()}
    assert len(codes) == 1 and len(texts) == 1, f"{case}: output depends on the width"
    text = texts.pop()
    assert "\x1b[" not in text, "colour escape in piped output"
    assert all(line == line.rstrip() for line in text.splitlines()), "trailing spaces"
    golden = HUMAN / f"{case}.txt"
    if UPDATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text, encoding="utf-8")
    assert golden.read_text(encoding="utf-8") == text, (
        f"{case}: human output changed; if intended, regenerate with KVSCALE_UPDATE_GOLDEN=1"
    )


def test_nothing_truncated_or_dropped() -> None:
    _, text = _run(CASES["verify-broken"], 60)
    header = next(line for line in text.splitlines() if "absmax" in line)
    for column in ("N", "scale", "absmax", "saturated", "underflow", "rel err", "bad bytes"):
        assert column in header
    assert "…" not in text and "..." not in text.replace("....", "")
    _, inspected = _run(CASES["inspect-quark-fp8"], 60)
    assert "0.0209961" in inspected and "0.00482178" in inspected


def test_each_problem_message_greps_as_one_line() -> None:
    _, text = _run(CASES["inspect-broken"], 60)
    from kvscale.core.inspect import inspect_checkpoint

    for problem in inspect_checkpoint(ROOT / "examples" / "broken").problems:
        assert any(problem.message in line for line in text.splitlines()), problem.code


def test_markdown_is_a_table_and_paragraphs() -> None:
    code, text = _run([*CASES["inspect-broken"], "--format", "markdown"], 80)
    assert code == 1
    lines = text.splitlines()
    assert "| N | k | v | q | rule | source | problems |" in lines
    assert "|---|---|---|---|---|---|---|" in lines
    assert "| 0 | 0.0209961 | 0 | 1 | separate | llm-compressor | scale-zero |" in lines
    assert lines[-1].startswith("FAIL: 5 attention layers")


def test_csv_is_the_table_rows() -> None:
    code, text = _run(["inspect", "examples/llm-compressor-fp8", "--format", "csv"], 80)
    assert code == 0
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["N", "k", "v", "q", "rule", "source", "problems"]
    assert rows[1] == ["0", "0.0209961", "0.00482178", "1", "separate", "llm-compressor", "-"]
    assert len(rows) == 5


def test_github_step_summary_gets_the_markdown(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    code, text = _run(["inspect", "examples/broken", "--annotations", "none"], 80, **env)
    assert code == 1 and "┃" in text  # the terminal still gets the table
    written = summary.read_text()
    assert written.startswith("earlier step\n")
    assert "| 0 | 0.0209961 | 0 | 1 | separate | llm-compressor | scale-zero |" in written
    assert re.search(r"(?m)^FAIL: 5 attention layers", written)


def test_step_summary_ignored_outside_actions(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    _run(["inspect", "examples/broken"], 80, GITHUB_STEP_SUMMARY=str(summary))
    assert not summary.exists()
