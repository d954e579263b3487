"""Parity with SGLang 0.5.23: `kvscale inspect --engine sglang --json` against SGLang's own code.

The expected values come from tests/parity/sglang_expected.json, which
tests/parity/sglang_oracle.py produces by executing SGLang's own source on the shared catalogue
(tests/parity/cases.py) and the SGLang-specific one (tests/parity/sglang_cases.py); see
tests/parity/SGLANG.md. For every case this test writes the same checkpoint, runs the CLI
in-process and compares, per attention layer: the names, whether SGLang refuses the layer, and
otherwise the device values ``k_scale``/``v_scale`` exactly (as JSON text); and the effective
KV-cache dtype when the engine starts.

Where SGLang creates no KV-cache quant method, its layers have no scale parameters at all
(``k_scale`` None); kvscale reports 1.0 there, the value every backend reads for a missing scale.

Not compared (kvscale does not model them, and says so): the ``--quantization-param-path`` JSON
path (``quant_param_json`` cases; ``normalize --format sglang-json`` writes that file) and
``SGLANG_ENABLE_WEIGHT_LOADER_V2=1`` (the ``v2`` loader cases; the default loader is legacy).

Architectures other than Llama (group ``sgl-arch``) run their own ``load_weights``; kvscale
reads what each does from ``kvscale/engine/sglang/architectures.py``, rendered from the
evidence tests/parity/sglang_architectures.py derives from SGLang's source (both checked by
tests/parity/test_tables.py), and the per-model rules of kvscale/engine/sglang/models.py
(architectures without a KV method, module layouts, hand-mirrored loaders). SGLang's
RadixAttention of DeepSeek MLA is ``self_attn.attn_mqa`` (its ``attn_mha`` companion, recorded
apart, keeps the 1.0 default); kvscale calls the layer ``self_attn.attn`` like every other, and
names every other layer as SGLang's module path (NemotronH ``model.layers.N.mixer``,
multimodal ``language_model.model.layers.N``, Falcon-H1 ``model.layers.N``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.modules import load_module

PARITY = Path(__file__).resolve().parent
GOLDEN: dict[str, Any] = json.loads((PARITY / "sglang_expected.json").read_text())


SHARED = load_module("kvscale_parity_cases", PARITY / "cases.py")
SGL = load_module("kvscale_parity_sglang_cases", PARITY / "sglang_cases.py")
MODELS = load_module("kvscale_parity_sglang_model_cases", PARITY / "sglang_model_cases.py")
ALL_CASES = {**SHARED.CASES_BY_NAME, **SGL.CASES_BY_NAME, **MODELS.CASES_BY_NAME}
NOT_MODELLED = {
    name
    for name, gold in GOLDEN["cases"].items()
    if gold["options"].get("weight_loader") != "legacy" or gold.get("quantization_param_path")
}
COMPARED = sorted(name for name in GOLDEN["cases"] if name not in NOT_MODELLED)

# Recorded from SGLang's own code, not yet modelled by kvscale: each is expected to disagree
# until kvscale implements the rule, and strictly so: a case that starts to agree must leave
# this table (rule -> case names).
PENDING: dict[str, tuple[str, ...]] = {}
_PENDING_REASON = {name: rule for rule, names in PENDING.items() for name in names}


def _compared(name: str) -> Any:
    reason = _PENDING_REASON.get(name)
    if reason is None:
        return name
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason))


def _enc(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _kvscale_layer(radix_attention: str) -> str:
    """kvscale's name for the layer of one of SGLang's RadixAttention modules."""
    return re.sub(r"\.attn_mqa$", ".attn", radix_attention)


def test_golden_is_complete() -> None:
    assert GOLDEN["schema"] == "kvscale.sglang-parity/2"
    assert GOLDEN["provenance"]["sglang_version"] == "0.5.23"
    recorded = set(GOLDEN["cases"]) | set(GOLDEN["skipped"])
    assert recorded == set(ALL_CASES), "regenerate tests/parity/sglang_expected.json"
    # What is left out is exactly the JSON path and the non-default loader: nothing else.
    assert len(NOT_MODELLED) == sum(
        1
        for gold in GOLDEN["cases"].values()
        if gold["options"]["weight_loader"] == "v2" or gold.get("quantization_param_path")
    )
    assert len(COMPARED) > 200


def test_pending_cases_are_recorded() -> None:
    assert set(_PENDING_REASON) <= set(COMPARED)
    assert len(_PENDING_REASON) == sum(len(names) for names in PENDING.values())


@pytest.mark.parametrize("name", [_compared(n) for n in COMPARED], ids=COMPARED)
def test_inspect_matches_sglang(name: str, tmp_path: Path) -> None:
    from support.cli import CliRunner

    from kvscale.cli import app

    case, gold = ALL_CASES[name], GOLDEN["cases"][name]
    ckpt = SHARED.write_case(case, tmp_path / "ckpt")
    opts = gold["options"]
    args = [
        "inspect",
        str(ckpt),
        "--json",
        "--no-policy",
        "--engine",
        "sglang",
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
        f"kvscale {' '.join(args)}\nexit {result.exit_code}\n{result.exception!r}\n{result.stderr}"
    )
    doc = json.loads(result.stdout)
    mismatches: list[str] = []
    names = [layer["name"] for layer in doc["layers"]]
    gold_names = [_kvscale_layer(layer["name"]) for layer in gold["layers"]]
    if names != gold_names:
        mismatches.append(f"layers: kvscale {names} != SGLang {gold_names}")
    if gold["engine_error"] is None and doc["kv_cache_dtype"] != gold["kv_cache_dtype"]:
        ours_dtype, gold_dtype = doc["kv_cache_dtype"], gold["kv_cache_dtype"]
        mismatches.append(f"kv_cache_dtype: kvscale {ours_dtype!r} != SGLang {gold_dtype!r}")
    ours = {layer["name"]: layer for layer in doc["layers"]}
    for g in gold["layers"]:
        k = ours.get(_kvscale_layer(g["name"]))
        if k is None:
            continue
        refused = g["error"] is not None or gold["engine_error"] is not None
        if refused != (k["rule"] == "error"):
            theirs = f"refuses: {g['error'] or gold['engine_error']}" if refused else "loads"
            mismatches.append(
                f"{g['name']}: SGLang {theirs}, kvscale rule={k['rule']!r} error={k['error']!r}"
            )
            continue
        if refused:
            continue
        for field in ("k_scale", "v_scale"):
            expected = g[field] if g["kv_method"] is not None else 1.0
            if _enc(k[field]) != _enc(expected):
                mismatches.append(
                    f"{g['name']}.{field}: kvscale {_enc(k[field])} != SGLang {_enc(expected)}"
                )
        if gold["group"] == "sgl-arch":
            # which checkpoint tensors the architecture's loader put into the layer
            ours_loaded = sorted(src["tensor"] for src in (k.get("checkpoint") or {}).values())
            if ours_loaded != sorted(g["loaded"]):
                mismatches.append(
                    f"{g['name']}: kvscale loads {ours_loaded}, SGLang {sorted(g['loaded'])}"
                )
    assert not mismatches, f"{name}: {case['description']}\n" + "\n".join(mismatches)


# ------------------------------------------------------------------------------------------
# The per-architecture loader table (kvscale/engine/sglang/architectures.py)
# ------------------------------------------------------------------------------------------


def test_architecture_cases_cover_the_brief() -> None:
    archs = {g["architecture"] for g in GOLDEN["cases"].values() if g["group"] == "sgl-arch"}
    assert archs >= {
        "Qwen2ForCausalLM",
        "Qwen3ForCausalLM",
        "Gemma2ForCausalLM",
        "MistralForCausalLM",
        "Phi3ForCausalLM",
        "MixtralForCausalLM",
        "Qwen2MoeForCausalLM",
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
    }


def test_llama_class_is_names_remap() -> None:
    """kvscale routes LlamaForCausalLM's loader class through names.remap (the mechanism,
    for any name); on every recorded probe it gives what SGLang's own loader did."""
    from kvscale.engine.sglang import architectures as A
    from kvscale.engine.sglang import names

    cls = A.LOADER_CLASSES["LlamaForCausalLM"]
    prefix = "model.layers.0.self_attn"
    for has in (True, False):
        params = {f"{prefix}.attn.k_scale", f"{prefix}.attn.v_scale"} if has else set()
        for tail in A.PROBE_TAILS:
            name = f"{prefix}.{tail}"
            kind, target, index = cls.outcome(tail, has) or ("?", None, None)
            if tail.endswith(("k_bias", "v_bias")):
                continue  # routed as KV-scheme extras (ignored-kv-tensor), not remapped
            got = names.remap(name, params.__contains__)
            recorded = None if index is None else names.substitute(A.MESSAGES[index], prefix, name)
            if kind == "load":
                assert got.dropped is None and got.name == names.substitute(
                    target or "", prefix, name
                ), (tail, has, got)
            else:
                assert kind == "drop" and got.dropped is not None, (tail, has, got)
                assert (recorded or "").endswith(got.dropped), (tail, has, got, recorded)
