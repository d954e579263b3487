"""GitHub Actions annotations end to end: on stderr under GITHUB_ACTIONS with stdout unchanged,
``--annotations none|github``, workspace-relative files, an unreadable checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import broken_checkpoint
from support.cli import CliRunner

from kvscale.cli import app
from tests.render.test_annotations import EXPECTED

runner = CliRunner()


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """cwd = tmp_path; returns the relative checkpoint path ("broken"), as a workflow gives it.
    Layer 1: k_scale 0 (error), no v_scale (warning); layer 2: no scales (warning)."""
    monkeypatch.chdir(tmp_path)
    return broken_checkpoint(tmp_path).name


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    base = {"GITHUB_ACTIONS": "", "GITHUB_WORKSPACE": "", "COLUMNS": "100"}
    return runner.invoke(app, [*args, "--no-policy"], env={**base, **(env or {})})


def test_under_github_actions_annotations_on_stderr_stdout_unchanged(broken: str) -> None:
    plain = invoke("inspect", broken)
    under_actions = invoke("inspect", broken, env={"GITHUB_ACTIONS": "true"})
    assert plain.exit_code == under_actions.exit_code == 1
    assert under_actions.stdout == plain.stdout
    assert plain.stderr == ""
    assert under_actions.stderr.splitlines() == EXPECTED


def test_json_stays_the_machine_contract(broken: str) -> None:
    plain = invoke("inspect", broken, "--json")
    annotated = invoke("inspect", broken, "--json", "--annotations", "github")
    assert annotated.exit_code == 1
    assert annotated.stdout == plain.stdout
    json.loads(annotated.stdout)
    assert annotated.stderr.splitlines() == EXPECTED


def test_annotations_none_and_forced(broken: str) -> None:
    off = invoke("inspect", broken, "--annotations", "none", env={"GITHUB_ACTIONS": "true"})
    assert off.exit_code == 1 and off.stderr == ""
    forced = invoke("inspect", broken, "--annotations", "GITHUB")
    assert forced.stderr.splitlines() == EXPECTED


def test_workspace_relative_file_for_absolute_paths(broken: str, tmp_path: Path) -> None:
    result = invoke(
        "inspect",
        str(tmp_path / broken),
        env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(tmp_path)},
    )
    assert result.stderr.splitlines()[0].startswith(
        "::error file=broken/model.safetensors,title=kvscale scale-zero::"
    )


def test_unreadable_checkpoint_annotation(tmp_path: Path) -> None:
    result = invoke("inspect", str(tmp_path / "nope"), "--annotations", "github")
    assert result.exit_code == 2
    first, second = result.stderr.splitlines()
    assert first.startswith("::error title=kvscale%3A cannot read checkpoint::")
    assert "nope" in first and "no such file" in first
    assert second.startswith("kvscale: error: ")
