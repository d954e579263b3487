"""Parity with vLLM 0.33.0: `kvscale inspect --json` against the engine's own loading code.

The expected values come from tests/parity/vllm_expected.json, which
tests/parity/vllm_oracle.py produces by executing vLLM's own source on every case of
tests/parity/cases.py (see tests/parity/README.md). For every case this test writes the same
checkpoint into tmp_path, runs the CLI in-process and compares, per attention layer:

* the layer names and their order (engine names, e.g. ``model.layers.0.self_attn.attn``),
* ``rule == "error"`` exactly where the engine refuses the layer,
* otherwise ``k_scale``, ``v_scale``, ``q_scale``, ``prob_scale`` exactly, as encoded
  (shortest repr of the float32 value, "NaN"/"Infinity"/"-Infinity", lists per head; the
  comparison is on the JSON text, so -0.0 != 0.0, 1 != 1.0 and "NaN" == "NaN"),
* the effective ``kv_cache_dtype`` when the engine starts at all.

`test_golden_file_is_up_to_date` re-runs the oracle when KVSCALE_VLLM_SRC points at an
extracted vLLM 0.33.0 tree (the directory holding ``vllm/``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.modules import load_module
from support.paths import PARITY

GOLDEN = PARITY / "vllm_expected.json"
ARCH_DROP = PARITY / "arch_output_scale_drop.json"
ORACLE = PARITY / "vllm_oracle.py"
VALUE_FIELDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
# machine facts, not inputs: ignored by the up-to-date check
VOLATILE_PROVENANCE = ("torch_version", "python_version", "device", "regex_module")


CASES = load_module("kvscale_parity_cases", PARITY / "cases.py")
GOLDEN_DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
CASE_NAMES = [c["name"] for c in CASES.CASES]


def _enc(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def test_golden_covers_the_catalogue() -> None:
    golden = GOLDEN_DOC["cases"]
    assert GOLDEN_DOC["schema"] == "kvscale.vllm-parity/1"
    assert GOLDEN_DOC["provenance"]["vllm_version"] == "0.33.0"
    missing = [n for n in CASE_NAMES if n not in golden]
    extra = [n for n in golden if n not in CASES.CASES_BY_NAME]
    assert not missing and not extra, (
        f"golden file is stale (missing {missing}, extra {extra}): regenerate it with "
        "tests/parity/vllm_oracle.py (see tests/parity/README.md)"
    )
    for name in CASE_NAMES:
        case, gold = CASES.CASES_BY_NAME[name], golden[name]
        assert gold["options"] == case["options"], name
        assert [x["name"] for x in gold["layers"]] == CASES.engine_layer_names(case["config"])


@pytest.mark.parametrize("name", CASE_NAMES, ids=CASE_NAMES)
def test_inspect_matches_vllm(name: str, tmp_path: Path) -> None:
    from support.cli import CliRunner

    from kvscale.cli import app

    case = CASES.CASES_BY_NAME[name]
    gold = GOLDEN_DOC["cases"].get(name)
    assert gold is not None, f"{name} is not in {GOLDEN.name}: regenerate the golden file"
    ckpt = CASES.write_case(case, tmp_path / "ckpt")
    opts = case["options"]
    args = [
        "inspect",
        str(ckpt),
        "--json",
        "--platform",
        opts["platform"],
        "--kv-cache-dtype",
        opts["kv_cache_dtype"],
        "--model-dtype",
        opts["model_dtype"],
    ]
    result = CliRunner().invoke(app, args)
    crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
    assert not crashed and result.exit_code in (0, 1), (
        f"kvscale {' '.join(args)}\nexit code {result.exit_code}\n"
        f"exception: {result.exception!r}\nstderr:\n{result.stderr}"
    )
    doc = json.loads(result.stdout)

    mismatches: list[str] = []
    names = [layer["name"] for layer in doc["layers"]]
    gold_names = [layer["name"] for layer in gold["layers"]]
    if names != gold_names:
        mismatches.append(f"layers: kvscale {names} != vLLM {gold_names}")
    if gold["engine_error"] is None and doc.get("kv_cache_dtype") != gold["kv_cache_dtype"]:
        ours_dtype, gold_dtype = doc.get("kv_cache_dtype"), gold["kv_cache_dtype"]
        mismatches.append(f"kv_cache_dtype: kvscale {ours_dtype!r} != vLLM {gold_dtype!r}")
    ours = {layer["name"]: layer for layer in doc["layers"]}
    for g in gold["layers"]:
        k = ours.get(g["name"])
        if k is None:
            continue
        refused, k_refused = g["error"] is not None, k.get("rule") == "error"
        if refused != k_refused:
            mismatches.append(
                f"{g['name']}: vLLM {'refuses: ' + g['error'] if refused else 'loads'}, "
                f"kvscale rule={k.get('rule')!r} error={k.get('error')!r}"
            )
            continue
        if refused:
            continue
        for f in VALUE_FIELDS:
            if _enc(k.get(f)) != _enc(g[f]):
                mismatches.append(f"{g['name']}.{f}: kvscale {_enc(k.get(f))} != vLLM {_enc(g[f])}")
    assert not mismatches, f"{name}: {case['description']}\n" + "\n".join(mismatches)


def _strip_volatile(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    for key in VOLATILE_PROVENANCE:
        doc.get("provenance", {}).pop(key, None)
    return doc


@pytest.mark.skipif(
    not os.environ.get("KVSCALE_VLLM_SRC"),
    reason="set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 source tree to re-run the oracle",
)
def test_golden_file_is_up_to_date(tmp_path: Path) -> None:
    out, drop = tmp_path / "expected.json", tmp_path / "drop.json"
    cmd = [sys.executable, str(ORACLE), "--vllm-src", os.environ["KVSCALE_VLLM_SRC"]]
    cmd += ["--out", str(out), "--arch-drop-out", str(drop), "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    new = _strip_volatile(json.loads(out.read_text()))
    old = _strip_volatile(GOLDEN_DOC)
    stale = sorted(
        n
        for n in set(new["cases"]) | set(old["cases"])
        if new["cases"].get(n) != old["cases"].get(n)
    )
    assert new["provenance"] == old["provenance"], "vLLM sources differ from the golden file's"
    assert not stale, (
        f"golden file is stale for {stale[:20]}: regenerate it (tests/parity/README.md)"
    )
    assert json.loads(drop.read_text()) == json.loads(ARCH_DROP.read_text()), (
        f"{ARCH_DROP.name} is stale: regenerate it"
    )
