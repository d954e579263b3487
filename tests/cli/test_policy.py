"""Policy on the command line: a warning passes by default, a kvscale.toml with strict fails it
and --no-policy ignores it, discovery from a subdirectory, options over the file, --fail-on over
the file's allow, --policy, and the usage errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import quant_config, write_scalar_checkpoint
from support.cli import CliRunner

from kvscale.cli import app

runner = CliRunner()

CT_QC = quant_config("compressed-tensors")


def write_ckpt(directory: Path, scales: list[tuple[float, float]]) -> Path:
    """A compressed-tensors Llama checkpoint with one (k, v) float32 pair per layer."""
    tensors: dict[str, float] = {}
    for i, (k, v) in enumerate(scales):
        tensors[f"model.layers.{i}.self_attn.k_scale"] = k
        tensors[f"model.layers.{i}.self_attn.v_scale"] = v
    return write_scalar_checkpoint(directory, tensors, len(scales), CT_QC)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository root (with .git) holding a checkpoint whose only problem is a warning:
    layer 1's k_scale is exactly 1.0 (scale-equals-default). The cwd is the repository."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    write_ckpt(root / "ckpt", [(0.0234375, 0.015625), (1.0, 0.015625)])
    monkeypatch.chdir(root)
    return root


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), env={"GITHUB_ACTIONS": "", **(env or {})})


def test_without_policy_file_warning_passes(repo: Path) -> None:
    result = invoke("inspect", "ckpt", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert [(p["code"], p["fails"]) for p in doc["problems"]] == [("scale-equals-default", False)]
    assert doc["strict"] is False


def test_policy_file_strict_fails_and_no_policy_ignores_it(repo: Path) -> None:
    (repo / "kvscale.toml").write_text("strict = true\n")
    result = invoke("inspect", "ckpt", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["strict"] is True and doc["ok"] is False
    assert [(p["code"], p["fails"]) for p in doc["problems"]] == [("scale-equals-default", True)]
    assert result.stderr == ""
    ignored = invoke("inspect", "ckpt", "--json", "--no-policy")
    assert ignored.exit_code == 0
    assert json.loads(ignored.stdout)["ok"] is True


def test_discovers_policy_from_a_subdirectory(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (repo / "pyproject.toml").write_text('[tool.kvscale]\nfail_on = ["scale-equals-default"]\n')
    monkeypatch.chdir(repo / "ckpt")
    assert invoke("inspect", ".").exit_code == 1


def test_options_win_over_the_file(repo: Path) -> None:
    (repo / "kvscale.toml").write_text(
        'fail_on = ["scale-equals-default"]\nkv_cache_dtype = "fp8_e4m3"\n'
    )
    from_file = invoke("inspect", "ckpt", "--json")
    assert from_file.exit_code == 1
    assert json.loads(from_file.stdout)["kv_cache_dtype"] == "fp8_e4m3"
    overridden = invoke(
        "inspect", "ckpt", "--json", "--allow", "scale-equals-default", "--kv-cache-dtype", "fp8"
    )
    assert overridden.exit_code == 0
    doc = json.loads(overridden.stdout)
    assert doc["kv_cache_dtype"] == "fp8" and doc["ok"] is True


def test_fail_on_overrides_file_allow(repo: Path) -> None:
    (repo / "kvscale.toml").write_text('allow = ["scale-equals-default"]\nstrict = true\n')
    assert invoke("inspect", "ckpt").exit_code == 0
    assert invoke("inspect", "ckpt", "--fail-on", "scale-equals-default").exit_code == 1


def test_explicit_policy_file(repo: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "release-policy.toml"
    elsewhere.write_text("strict = true\n")
    assert invoke("inspect", "ckpt", "--policy", str(elsewhere)).exit_code == 1


@pytest.mark.parametrize(
    ("content", "args", "needle"),
    [
        ("bogus = 1\n", [], "kvscale.toml: unknown key 'bogus'"),
        ('allow = ["nope"]\n', [], "kvscale.toml: unknown problem code 'nope' in allow"),
        (None, ["--policy", "missing.toml"], "missing.toml: policy file not found"),
        (None, ["--policy", "x.toml", "--no-policy"], "--policy and --no-policy exclude"),
        (None, ["--allow", "scale-zero", "--fail-on", "scale-zero"], "scale-zero given to both"),
    ],
)
def test_policy_usage_errors_exit_2(
    repo: Path, content: str | None, args: list[str], needle: str
) -> None:
    if content is not None:
        (repo / "kvscale.toml").write_text(content)
    result = invoke("inspect", "ckpt", *args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kvscale: error: ") and needle in lines[0]
