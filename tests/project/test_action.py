"""action.yml: the reusable GitHub Action (``uses: OWNER/kvscale@TAG``).

Checked as far as possible without GitHub: its metadata against the rules of GitHub's
action.yml schema, and its composite steps' scripts run as the runner runs them
(``run_local.run_action``: the step env's expressions evaluated, bash with errexit and pipefail,
GITHUB_OUTPUT read back) with the inputs, on a passing, a failing and a hostile checkpoint. The
install step itself (pip from the package index) runs in ``-m slow``.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from support.run_local import run_local

ROOT = Path(__file__).resolve().parents[2]
ACTION = run_local.load_yaml(ROOT / "action.yml")

# GitHub's metadata syntax for actions (docs: "Metadata syntax for GitHub Actions").
TOP_LEVEL = {"name", "author", "description", "inputs", "outputs", "runs", "branding"}
INPUT_KEYS = {"description", "required", "default", "deprecationMessage"}
STEP_KEYS = {"name", "id", "if", "run", "shell", "env", "working-directory", "uses", "with"}
INPUT_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def test_metadata_follows_the_action_schema() -> None:
    assert set(ACTION) <= TOP_LEVEL
    assert {"name", "description", "runs"} <= set(ACTION)
    assert isinstance(ACTION["name"], str) and isinstance(ACTION["description"], str)
    assert ACTION["runs"]["using"] == "composite"
    for name, spec in ACTION["inputs"].items():
        assert INPUT_ID.match(name), name
        assert set(spec) <= INPUT_KEYS and spec["description"], name
        assert spec.get("required") is True or "default" in spec, name
    ids = [step.get("id") for step in ACTION["runs"]["steps"] if step.get("id")]
    assert len(ids) == len(set(ids))
    for step in ACTION["runs"]["steps"]:
        assert set(step) <= STEP_KEYS, step
        # A composite run step must name its shell.
        assert "run" not in step or step.get("shell") == "bash", step


def test_inputs_reach_the_shell_only_through_the_environment() -> None:
    """No ``${{ }}`` inside a script (an input would be pasted into bash: script injection);
    every declared input is used, every used one declared."""
    used: set[str] = set()
    for step in ACTION["runs"]["steps"]:
        assert "${{" not in step.get("run", ""), step["name"]
        for value in (step.get("env") or {}).values():
            used |= set(re.findall(r"\$\{\{\s*inputs\.([A-Za-z0-9_-]+)\s*\}\}", str(value)))
    assert used == set(ACTION["inputs"])


@pytest.fixture
def kvscale(tmp_path: Path) -> Path:
    """This tree's kvscale as an executable (the install step's output, without installing)."""
    script = tmp_path / "bin" / "kvscale"
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kvscale "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def _run(kvscale: Path, tmp_path: Path, **inputs: str) -> Any:
    temp = tmp_path / "runner-temp"
    temp.mkdir(exist_ok=True)
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    return run_local.run_action(inputs, ROOT, temp, env=env, kvscale=kvscale)


def test_a_passing_checkpoint_passes(kvscale: Path, tmp_path: Path) -> None:
    junit = tmp_path / "reports" / "kvscale.xml"
    result = _run(kvscale, tmp_path, checkpoint="examples/llm-compressor-fp8", junit=str(junit))
    assert result.code == 0, result.stderr
    assert re.search(r"(?m)^OK: 4 attention layers \(4 separate\); 0 errors", result.stdout)
    assert 'failures="0"' in junit.read_text()


def test_a_failing_checkpoint_fails_with_annotations(kvscale: Path, tmp_path: Path) -> None:
    result = _run(kvscale, tmp_path, checkpoint="examples/broken", engine="sglang")
    assert result.code == 1, result.stderr
    assert re.search(r"(?m)^FAIL: .*; sglang 0\.5\.23", result.stdout)
    assert re.search(
        r"(?m)^::error file=examples/broken/model\.safetensors,title=kvscale ", result.stderr
    )


def test_strict_and_a_policy_reach_the_command(kvscale: Path, tmp_path: Path) -> None:
    """examples/quark-fp8 has one warning (scales-unused): strict fails it, a policy that
    allows the code passes it again, and a strict that is neither true nor false is refused."""
    checkpoint = "examples/quark-fp8"
    assert _run(kvscale, tmp_path, checkpoint=checkpoint).code == 0
    strict = _run(kvscale, tmp_path, checkpoint=checkpoint, strict="true")
    assert strict.code == 1, strict.stdout
    assert "::warning" in strict.stderr or "::error" in strict.stderr
    policy = tmp_path / "kvscale.toml"
    policy.write_text('allow = ["scales-unused"]\n')
    allowed = _run(kvscale, tmp_path, checkpoint=checkpoint, strict="true", policy=str(policy))
    assert allowed.code == 0, allowed.stdout
    bad = _run(kvscale, tmp_path, checkpoint=checkpoint, strict="yes")
    assert bad.code == 2
    assert bad.stdout == "::error title=kvscale::the input strict is true or false\n"


def test_a_hostile_input_is_data_not_code(kvscale: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    result = _run(kvscale, tmp_path, checkpoint=f'x"; touch {marker}; echo "', engine="$(id)")
    assert result.code == 2
    assert not marker.exists()
    assert "--engine" in result.stderr or "engine" in result.stderr


def test_a_missing_required_input_is_refused() -> None:
    with pytest.raises(ValueError, match="required input 'checkpoint' is missing"):
        run_local.action_inputs({})
    with pytest.raises(ValueError, match="inputs the action does not declare"):
        run_local.action_inputs({"checkpoint": "x", "model": "y"})


@pytest.mark.slow
def test_the_install_step_installs_the_light_package(tmp_path: Path) -> None:
    """The action's own install step, from a snapshot of this tree (pip's package index)."""
    clone = run_local.snapshot_source(tmp_path / "src", "v0", source=ROOT)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {"HOME": os.environ.get("HOME", str(tmp_path))}
    result = run_local.run_action(
        {"checkpoint": "examples/llm-compressor-fp8"}, ROOT, temp, env=env, action_path=clone
    )
    assert result.code == 0, result.stderr
    installed = Path(result.outputs["install"]["kvscale"])
    assert installed == temp / "kvscale-action-venv" / "bin" / "kvscale"
    packages = run_local.installed_packages(installed.parent)
    assert "huggingface-hub" in packages
    assert not set(run_local.HEAVY_PACKAGES) & set(packages)
