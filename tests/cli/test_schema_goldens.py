"""Golden files pinning ``kv_scales.json`` (``kvscale.scales/1``) and ``verify --json``
(``kvscale.verify/1``) on the bundled examples.

Regenerate after a deliberate change with ``KVSCALE_UPDATE_GOLDEN=1 python -m pytest
tests/cli/test_schema_goldens.py`` and review the diff like code. The verify golden pins every
key and every deterministic value; the measured statistics (which depend on floating-point summation
order) are pinned by type and checked against the documented thresholds instead.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.cli import CliRunner
from support.paths import GOLDEN, ROOT

from kvscale.cli import app

runner = CliRunner()
UPDATE = os.environ.get("KVSCALE_UPDATE_GOLDEN", "") not in ("", "0", "false", "no")
MEASURED = ("absmax", "saturated", "underflow", "rel_rms_error")


def _compare(name: str, document: dict[str, Any]) -> None:
    path = GOLDEN / name
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    if UPDATE:
        path.write_text(text)
    assert path.exists(), f"missing {path}; run with KVSCALE_UPDATE_GOLDEN=1"
    assert json.loads(path.read_text()) == document


@pytest.mark.parametrize(
    "example", ["llm-compressor-fp8", "llm-compressor-attn-head", "modelopt-fp8"]
)
def test_scales_json_golden(example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    result = runner.invoke(app, ["normalize", f"examples/{example}", "--out", str(out)])
    assert result.exit_code == 0, result.stderr
    doc = json.loads((out / "kv_scales.json").read_text())
    assert doc["schema"] == "kvscale.scales/1"
    for key in ("schema", "checkpoint", "kv_cache_dtype", "platform", "engine_path", "layers"):
        assert key in doc, key
    for entry in doc["layers"].values():
        for key in ("k_scale", "v_scale", "q_scale", "prob_scale", "rule", "sources"):
            assert key in entry, key
    doc["kvscale_version"] = "<version>"
    _compare(f"scales_{example}.json", doc)


def test_verify_json_golden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = ["verify", "examples/llm-compressor-fp8", "--json", "--tokens", "256"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    limits = doc["thresholds"]
    for layer in doc["layers"]:
        assert set(layer) >= {"name", "k", "v", "pass"}
        for kind in ("k", "v"):
            stats = layer[kind]
            assert set(stats) >= {"scale", *MEASURED, "mismatched_bytes"}
            assert stats["saturated"] <= limits["saturated"]
            assert stats["underflow"] <= limits["underflow"]
            assert stats["rel_rms_error"] <= limits["rel_rms_error"]
            for key in MEASURED:
                assert isinstance(stats[key], float)
                stats[key] = "<measured float>"
    doc["kvscale_version"] = "<version>"
    _compare("verify_llm-compressor-fp8_cpu.json", doc)
