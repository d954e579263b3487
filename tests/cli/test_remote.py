"""The commands on remote inputs (a loopback Hub): inspect reports its source, --revision
reaches the Hub, normalize writes scales only, diff and verify read remote sides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli
from support.hub_server import HubServer
from support.paths import ROOT

pytest.importorskip("huggingface_hub")


def test_inspect_hub_repo_reports_its_source(hub: HubServer) -> None:
    directory = ROOT / "examples" / "llm-compressor-fp8"
    sha = hub.add_repo("org/fp8", directory)
    result = run_cli("inspect", "hf://org/fp8", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["checkpoint"] == "hf://org/fp8" and doc["layout"] == "remote"
    assert doc["source"]["sha"] == sha and doc["source"]["repo"] == "org/fp8"
    assert doc["source"]["requests"] == hub.stats.requests
    local = json.loads(run_cli("inspect", directory, "--json").stdout)
    assert "source" not in local
    assert {k: v for k, v in doc.items() if k not in ("checkpoint", "layout", "source")} == {
        k: v for k, v in local.items() if k not in ("checkpoint", "layout")
    }
    human = run_cli("inspect", "org/fp8").stdout.replace("\n", " ")
    assert f"from org/fp8@{sha[:12]} in " in human and "; read " in human


def test_revision_reaches_the_hub(hub: HubServer) -> None:
    sha = hub.add_repo("org/fp8", ROOT / "examples" / "llm-compressor-fp8", branches=("v2",))
    result = run_cli("inspect", "org/fp8", "--revision", "v2", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["source"] == {
        **json.loads(result.stdout)["source"],
        "revision": "v2",
        "sha": sha,
    }
    missing = run_cli("inspect", "org/fp8", "--revision", "nope")
    assert missing.exit_code == 2 and len(missing.stderr.strip().splitlines()) == 1


def test_revision_on_a_local_path_is_a_usage_error() -> None:
    result = run_cli("inspect", ROOT / "examples" / "llm-compressor-fp8", "--revision", "main")
    assert result.exit_code == 2
    assert "--revision applies to Hub repositories" in result.stderr


def test_normalize_remote_scales_only_and_checkpoint_refused(
    hub: HubServer, tmp_path: Path
) -> None:
    hub.add_repo("org/fp8", ROOT / "examples" / "llm-compressor-fp8")
    out = tmp_path / "scales"
    result = run_cli("normalize", "hf://org/fp8", "--out", out)
    assert result.exit_code == 0, result.stderr
    local = tmp_path / "local"
    assert (
        run_cli("normalize", ROOT / "examples" / "llm-compressor-fp8", "--out", local).exit_code
        == 0
    )
    assert (out / "kv_scales.safetensors").read_bytes() == (
        local / "kv_scales.safetensors"
    ).read_bytes()
    refused = run_cli("normalize", "hf://org/fp8", "--out", tmp_path / "c", "--checkpoint")
    assert refused.exit_code == 2
    assert "normalize --checkpoint needs a local copy" in refused.stderr
    assert not (tmp_path / "c").exists()


def test_diff_and_verify_read_remote_sides(hub: HubServer) -> None:
    directory = ROOT / "examples" / "llm-compressor-fp8"
    hub.add_repo("org/fp8", directory)
    hub.add_repo("org/wrong", ROOT / "examples" / "wrong-scale")
    same = run_cli("diff", directory, "hf://org/fp8", "--max-rel-change", "0")
    assert same.exit_code == 0, same.stderr
    changed = run_cli(
        "diff", "hf://org/fp8", "hf://org/wrong", "--max-rel-change", "0.01", "--json"
    )
    assert changed.exit_code == 1
    assert json.loads(changed.stdout)["b"]["path"] == "hf://org/wrong"
    verified = run_cli("verify", "hf://org/fp8", "--tokens", "32", "--json")
    assert verified.exit_code == 0, verified.stderr
    assert json.loads(verified.stdout)["layers"][0]["k"]["scale"] == 0.02099609375
