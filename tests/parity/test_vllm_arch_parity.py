"""The architecture evidence of vLLM 0.33.0 (tests/parity/vllm_arch_oracle.py): the committed
goldens match the case catalogue, pin the facts kvscale's rules are written against, and
(with KVSCALE_VLLM_SRC set, slow) are what the oracle produces today.

The goldens are data about vLLM, not about kvscale: kvscale's own parity test against them
comes with the rules that implement them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PARITY = Path(__file__).resolve().parent
GOLDEN = PARITY / "vllm_arch_expected.json"
CLASSES = PARITY / "vllm_arch_classes.json"
ORACLE = PARITY / "vllm_arch_oracle.py"
VOLATILE_PROVENANCE = ("torch_version", "python_version", "device", "regex_module")


def _load(name: str, file: str) -> ModuleType:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, PARITY / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


CASES = _load("kvscale_parity_arch_cases", "arch_cases.py")
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
CLASSES_DOC: dict[str, Any] = json.loads(CLASSES.read_text())


def _layer(case: str, index: int = 0) -> dict[str, Any]:
    layers: list[dict[str, Any]] = DOC["cases"][case]["layers"]
    return layers[index]


def test_golden_covers_the_catalogue() -> None:
    assert DOC["schema"] == "kvscale.vllm-arch-parity/1"
    assert DOC["provenance"]["vllm_version"] == "0.33.0"
    names = [c["name"] for c in CASES.CASES]
    assert len(names) == len(set(names))
    assert sorted(DOC["cases"]) == sorted(names), "regenerate vllm_arch_expected.json"
    for c in CASES.CASES:
        gold = DOC["cases"][c["name"]]
        assert gold["options"] == c["options"], c["name"]
        assert gold["architecture"] == c["config"]["architectures"][0], c["name"]


def test_classes_cover_the_registry_and_the_executed_architectures() -> None:
    assert CLASSES_DOC["schema"] == "kvscale.vllm-arch-classes/1"
    archs = CLASSES_DOC["architectures"]
    assert sum(CLASSES_DOC["counts"].values()) == len(archs)
    assert set(CLASSES_DOC["counts"]) <= set(CLASSES_DOC["classes"])
    executed = {c["config"]["architectures"][0] for c in CASES.CASES}
    for arch in executed:
        assert "executed_by_oracle" in archs[arch], arch


# --- the facts the rules are written against (the report cites these cases) -------------


def test_deepseek_family_drops_every_qkv_scale_name_under_modelopt() -> None:
    # AutoWeightsLoader's cache-scale mapper renames before maybe_remap_kv_scale_name
    for producer in ("ct", "modelopt", "vllm_mla", "attn", "kv_scale", "kv_a_proj", "sglang_mla"):
        layer = _layer(f"dsv3_modelopt_{producer}")
        assert layer["kv_method"] == "ModelOptKVCacheMethod"
        assert (layer["k_scale"], layer["v_scale"], layer["q_scale"]) == (1.0, 1.0, 1.0)
        qkv = [t for t in layer["tensors"] if not t["name"].endswith("prob_scale")]
        assert qkv and all(t["loaded_into"] == [] for t in qkv), producer
    warning = _layer("dsv3_modelopt_modelopt")["warnings"][0]
    assert warning == (
        "Found k_scale in the checkpoint (e.g. layers.0.self_attn.attn.k_scale), but not "
        "found the expected name in the model (e.g. layers.0.self_attn.attn.attn.k_scale). "
        "k_scale is not loaded."
    )


def test_deepseek_prob_scale_under_its_vllm_name_loads() -> None:
    # the mapper's rules cover [qkv]_scale only: mla_attn.mla_attn.prob_scale passes
    assert _layer("dsv3_modelopt_vllm_mla")["prob_scale"] == 0.0625
    assert _layer("dsv3_fnuz_modelopt_vllm_mla")["prob_scale"] == 0.125
    # ... and without a KV method it is an unknown parameter: the load fails
    assert _layer("dsv3_fp8_vllm_mla")["error"] == (
        "KeyError: 'layers.0.self_attn.mla_attn.mla_attn.prob_scale'"
    )


def test_bailing_v3_loads_modelopt_and_vllm_names() -> None:
    assert _layer("bailing_v3_modelopt_modelopt")["k_scale"] == 0.0234375
    assert _layer("bailing_v3_modelopt_vllm_mla")["q_scale"] == 0.125
    assert _layer("bailing_v3_fnuz_modelopt_modelopt")["k_scale"] == 0.046875
    assert _layer("bailing_v3_modelopt_ct")["k_scale"] == 1.0


def test_jamba_refuses_every_kv_scale_name() -> None:
    for name, case in DOC["cases"].items():
        if case["architecture"] == "JambaForCausalLM":
            assert [layer["error"] is not None for layer in case["layers"]] == [True], name
    assert _layer("jamba_fp8_ct")["error"] == (
        "ValueError: There is no module or parameter named 'model.layers.1.k_scale' in "
        "JambaForCausalLM."
    )


def test_mla_disabled_loads_like_llama() -> None:
    assert _layer("dsv3_mladisable_modelopt_modelopt")["k_scale"] == 0.0234375
    assert _layer("llama_modelopt_modelopt")["k_scale"] == 0.0234375


@pytest.mark.slow
def test_goldens_are_up_to_date(tmp_path: Path) -> None:
    src = os.environ.get("KVSCALE_VLLM_SRC")
    if not src:
        pytest.skip("set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 tree to re-run")
    out, classes = tmp_path / "arch.json", tmp_path / "classes.json"
    subprocess.run(
        [
            sys.executable,
            str(ORACLE),
            "--vllm-src",
            src,
            "--out",
            str(out),
            "--classes-out",
            str(classes),
            "--quiet",
        ],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    fresh = json.loads(out.read_text())
    for key in VOLATILE_PROVENANCE:
        fresh["provenance"].pop(key, None)
    committed = json.loads(GOLDEN.read_text())
    for key in VOLATILE_PROVENANCE:
        committed["provenance"].pop(key, None)
    assert fresh == committed, "regenerate tests/parity/vllm_arch_expected.json"
    assert json.loads(classes.read_text()) == CLASSES_DOC, "regenerate vllm_arch_classes.json"
