"""What ``--help`` shows: every engine's KV-cache dtypes, usage lines that name the arguments,
examples one blank line apart; and a wrong ``--kv-cache-dtype`` is told the values of the
engine that runs (issue 25)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.engine.registry import ENGINES, kv_cache_dtypes

ENV = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
USAGE = {
    "inspect": "Usage: kvscale inspect [OPTIONS] CHECKPOINT...",
    "normalize": "Usage: kvscale normalize [OPTIONS] CHECKPOINT",
    "diff": "Usage: kvscale diff [OPTIONS] A B",
    "verify": "Usage: kvscale verify [OPTIONS] TARGET",
    "calibrate": "Usage: kvscale calibrate [OPTIONS] MODEL",
    "codes": "Usage: kvscale codes [OPTIONS] [CODE]",
}


def _help(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], env=ENV)
    assert result.exit_code == 0, result.output
    return result.stdout


def _option_help(text: str, option: str) -> str:
    """The help of one option as one string (rich wraps it over several table rows; a row that
    starts an option is indented less than the help column, whatever its text)."""
    raw = [line.strip("│").rstrip() for line in text.splitlines() if line.startswith("│")]

    def indent(row: str) -> int:
        return len(row) - len(row.lstrip())

    start = next(i for i, row in enumerate(raw) if row.lstrip().startswith(option + " "))
    parts = [raw[start].strip()]
    for row in raw[start + 1 :]:
        if indent(row) <= indent(raw[start]) + 2:
            break
        parts.append(row.strip())
    return " ".join(" ".join(parts).split())


@pytest.mark.parametrize("command", sorted(USAGE))
def test_usage_line_names_the_arguments(command: str) -> None:
    text = _help(command)
    usage = [line.strip() for line in text.splitlines() if "Usage:" in line]
    assert usage == [USAGE[command]]


@pytest.mark.parametrize("command", ["inspect", "normalize", "diff", "verify", "calibrate"])
def test_help_lists_every_engines_kv_cache_dtypes(command: str) -> None:
    shown = _option_help(_help(command), "--kv-cache-dtype")
    for name, engine in ENGINES.items():
        listed = re.search(re.escape(engine.title.split()[0]) + r": ([^;]*?)(?:;|\.$)", shown)
        assert listed is not None, (name, shown)
        values = [v.strip() for v in listed.group(1).split(",")]
        assert values == list(kv_cache_dtypes(name)), name


@pytest.mark.parametrize("command", sorted(USAGE))
def test_examples_are_one_blank_line_apart(command: str) -> None:
    lines = [line.strip() for line in _help(command).splitlines()]
    assert "\n\n\n" not in "\n".join(lines)  # never two blank lines in a row
    examples = [i for i, line in enumerate(lines) if line.startswith("kvscale ")]
    assert len(examples) >= 2
    assert "" in lines[examples[0] + 1 : examples[1]]  # one blank line between examples


@pytest.mark.parametrize(
    ("args", "engine"),
    [
        ([], "vllm"),
        (["--engine", "sglang"], "sglang"),
        (["--engine", "trtllm"], "trtllm"),
    ],
)
def test_wrong_kv_cache_dtype_lists_the_chosen_engines_values(args: list[str], engine: str) -> None:
    result = CliRunner().invoke(
        app,
        ["inspect", "examples/broken", "--no-policy", "--kv-cache-dtype", "nope", *args],
        env=ENV,
    )
    assert result.exit_code == 2
    assert result.stderr == (
        f"kvscale: error: unknown KV-cache dtype 'nope' for {engine} "
        f"(one of: {', '.join(kv_cache_dtypes(engine))})\n"
    )


def test_another_engines_dtype_is_refused_with_this_engines_list() -> None:
    """``mxfp8`` is SGLang's: under the default engine the error lists vLLM's values only."""
    assert "mxfp8" in kv_cache_dtypes("sglang") and "mxfp8" not in kv_cache_dtypes("vllm")
    result = CliRunner().invoke(
        app, ["diff", "a", "b", "--no-policy", "--kv-cache-dtype", "mxfp8"], env=ENV
    )
    assert result.exit_code == 2
    assert "for vllm (one of: " + ", ".join(kv_cache_dtypes("vllm")) + ")" in result.stderr
