"""``kvscale diff`` as a CI gate by default (issue 25): the drift bound that applied, and where
it came from, is in the summary and the JSON; ``--no-drift-gate`` (or ``max_rel_change = false``
in the policy file) turns it off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvscale.cli import app

ROOT = Path(__file__).resolve().parents[2]
A = str(ROOT / "examples/llm-compressor-fp8")
B = str(ROOT / "examples/wrong-scale")
DEFAULT = "drift gate: relative change <= 0.75 (kvscale's default; --max-rel-change sets another, "


def _diff(*args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["diff", A, B, *args], env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def test_128x_smaller_scale_fails_by_default() -> None:
    code, out, err = _diff("--no-policy")
    assert code == 1 and err == ""
    summary = out.splitlines()[-1]
    assert summary.startswith("FAIL: 1 of 4 layers changed")
    assert DEFAULT + "--no-drift-gate none); 1 gate failure" in summary
    assert "relative change 127 > 0.75" in out


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--no-drift-gate"], 0, "no drift gate (--no-drift-gate)"),
        (["--max-rel-change", "200"], 0, "drift gate: relative change <= 200 (--max-rel-change)"),
        (["--max-rel-change", "0.5"], 1, "drift gate: relative change <= 0.5 (--max-rel-change)"),
    ],
)
def test_command_line_bound_and_off(args: list[str], code: int, says: str) -> None:
    got, out, _ = _diff("--no-policy", *args)
    assert got == code
    assert says in out.splitlines()[-1]


@pytest.mark.parametrize(
    ("setting", "code", "says"),
    [
        ("max_rel_change = false", 0, "no drift gate (max_rel_change of policy file {path})"),
        (
            "max_rel_change = 130",
            0,
            "relative change <= 130 (max_rel_change of policy file {path})",
        ),
        ("strict = true", 1, DEFAULT + "--no-drift-gate none); policy file {path}"),
    ],
)
def test_policy_file_bound_off_and_named(
    tmp_path: Path, setting: str, code: int, says: str
) -> None:
    policy = tmp_path / "kvscale.toml"
    policy.write_text(setting + "\n")
    got, out, _ = _diff("--policy", str(policy))
    assert got == code
    assert says.format(path=policy) in out.splitlines()[-1]


def test_json_says_which_bound_applied() -> None:
    code, out, _ = _diff("--no-policy", "--json")
    doc = json.loads(out)
    assert (code, doc["max_rel_change"], doc["max_rel_change_source"]) == (1, 0.75, "default")
    assert [f["rule"] for f in doc["failures"]] == ["drift"]
    code, out, _ = _diff("--no-policy", "--json", "--no-drift-gate")
    doc = json.loads(out)
    assert (code, doc["max_rel_change"], doc["max_rel_change_source"]) == (0, None, "command-line")


def test_bound_and_off_exclude_each_other() -> None:
    code, out, err = _diff("--no-policy", "--no-drift-gate", "--max-rel-change", "1")
    assert (code, out) == (2, "")
    assert err == "kvscale: error: --max-rel-change and --no-drift-gate exclude each other\n"


def test_a_layer_named_twice_is_one_line_exit_2(tmp_path: Path) -> None:
    doc = json.loads(CliRunner().invoke(app, ["inspect", A, "--json", "--no-policy"]).stdout)
    doc["layers"].append(dict(doc["layers"][0], name="model.layers.0.self_attn", k_scale="NaN"))
    twice = tmp_path / "b.json"
    twice.write_text(json.dumps(doc))
    result = CliRunner().invoke(app, ["diff", A, str(twice), "--no-policy"])
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (
        f"kvscale: error: {twice}: layer 'model.layers.0.self_attn' appears twice (also as "
        "'model.layers.0.self_attn.attn'); which entry applies is undefined (keep one entry per "
        "layer)\n"
    )
