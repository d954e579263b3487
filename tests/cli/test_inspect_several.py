"""Several inputs, policy files and missing inputs, said where they matter (issue 25): ``-q``
lines name their checkpoint when several are given; the summary names the policy file that
decided; ``--json`` always prints a document that accounts for every input."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from kvscale.cli import app

ROOT = Path(__file__).resolve().parents[2]
BROKEN = str(ROOT / "examples/broken")
GOOD = str(ROOT / "examples/llm-compressor-fp8")
MISSING = "/nonexistent/kvscale-checkpoint"
MISSING_LINE = f"{MISSING}: no such file or directory"


def _run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [*args], env={"NO_COLOR": "1"})
    return result.exit_code, result.stdout, result.stderr


def test_quiet_lines_name_their_checkpoint_when_several() -> None:
    code, alone, _ = _run("inspect", BROKEN, "-q", "--no-policy")
    assert code == 1 and alone.startswith("error scale-zero model.layers.0.self_attn: ")
    code, several, _ = _run("inspect", BROKEN, GOOD, BROKEN, "-q", "--no-policy")
    lines = several.splitlines()
    assert code == 1 and len(lines) == 2 * len(alone.splitlines())
    assert lines == [f"{BROKEN}: {line}" for line in alone.splitlines()] * 2


def test_summary_names_the_policy_file(tmp_path: Path) -> None:
    policy = tmp_path / "kvscale.toml"
    policy.write_text('fail_on = ["coverage-gap"]\nallow = ["scale-zero"]\n')
    code, out, _ = _run("inspect", BROKEN, "--policy", str(policy))
    assert code == 1
    assert out.splitlines()[-1].endswith(f"platform ocp; policy file {policy}")
    code, out, _ = _run("inspect", BROKEN, "--no-policy")
    assert "policy file" not in out.splitlines()[-1]


def test_json_list_accounts_for_a_missing_input() -> None:
    code, out, err = _run("inspect", GOOD, MISSING, "--json", "--no-policy")
    assert code == 2
    assert err == f"kvscale: error: {MISSING_LINE}\n"
    documents = json.loads(out)
    assert [d["schema"] for d in documents] == ["kvscale.inspect/1", "kvscale.error/1"]
    assert documents[1] == {
        "schema": "kvscale.error/1",
        "kvscale_version": documents[0]["kvscale_version"],
        "input": MISSING,
        "error": {"type": "CheckpointNotFoundError", "message": MISSING_LINE, "exit_code": 2},
        "ok": False,
    }


def test_json_of_a_single_missing_input_is_an_error_document() -> None:
    for args in (["inspect", MISSING], ["diff", GOOD, MISSING], ["normalize", MISSING, "-o", "x"]):
        code, out, err = _run(*args, "--json", "--no-policy")
        assert code == 2, args
        assert err == f"kvscale: error: {MISSING_LINE}\n"
        doc = json.loads(out)
        assert (doc["schema"], doc["input"], doc["ok"]) == ("kvscale.error/1", MISSING, False)
        assert doc["error"]["message"] == MISSING_LINE


def test_json_with_only_missing_inputs_is_a_list_of_errors() -> None:
    code, out, _ = _run("inspect", MISSING, MISSING + "2", "--json", "--no-policy")
    assert code == 2
    assert [d["input"] for d in json.loads(out)] == [MISSING, MISSING + "2"]


def test_no_document_twice_when_the_command_wrote_one(tmp_path: Path) -> None:
    """A failure after the command printed its document adds no second document."""
    (tmp_path / "file").touch()  # --junit under a file fails after the output
    code, out, err = _run(
        "inspect", GOOD, "--json", "--no-policy", "--junit", str(tmp_path / "file" / "j.xml")
    )
    assert code == 2 and err.startswith("kvscale: error: ")
    assert json.loads(out)["schema"] == "kvscale.inspect/1"
