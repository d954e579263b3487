"""SGLang 0.5.23's hand-mirrored loaders, layouts and KV-sharing rule (kvscale/engine/sglang/
models.py), against the recorded loader table and the parity oracle's executed cases
(tests/parity/sglang_expected.json: the error each loader raised, the layer_id each
RadixAttention got)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvscale.engine.sglang import architectures as A
from kvscale.engine.sglang import models as M
from kvscale.engine.sglang.names import substitute
from kvscale.model_config import ModelShape, parse_model_shape

GOLDEN: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "parity" / "sglang_expected.json").read_text()
)
P = "model.layers.0.self_attn"


def _params(*names: str) -> M.Params:
    return set(names).__contains__


MQA = _params(f"{P}.attn_mqa.k_scale", f"{P}.attn_mqa.v_scale")
MQA_MHA = _params(
    f"{P}.attn_mqa.k_scale",
    f"{P}.attn_mqa.v_scale",
    f"{P}.attn_mha.k_scale",
    f"{P}.attn_mha.v_scale",
)
NONE = _params()


# ------------------------------------------------------------------------------------------
# KV method per architecture
# ------------------------------------------------------------------------------------------


def test_kv_method_verdicts() -> None:
    assert M.kv_method("Qwen3ForCausalLM") == (
        M.KvMethod.NO,
        "qwen3.py:223; executed: sgl_arch_qwen3_canonical",
    )
    assert M.kv_method("GptOssForCausalLM")[0] is M.KvMethod.NO
    assert M.kv_method("Llama4ForConditionalGeneration")[0] is M.KvMethod.NO
    assert M.kv_method("FalconH1ForCausalLM") == (
        M.KvMethod.NO,
        "executed: sgl_model_falconh1_quark",
    )
    assert M.kv_method("Glm4MoeForCausalLM") == (
        M.KvMethod.NO,
        "glm4_moe.py:286; static reading of the model code",
    )
    # executed with a KV method although no RadixAttention site was found statically
    assert M.kv_method("NemotronHForCausalLM")[0] is M.KvMethod.YES
    assert M.kv_method("NemotronHPuzzleForCausalLM")[0] is M.KvMethod.YES  # same model code
    verdict, why = M.kv_method("Qwen3VLForConditionalGeneration")
    assert verdict is M.KvMethod.UNKNOWN
    assert why == (
        "RadixAttention built with quant_config at qwen2.py:215 and without at qwen3.py:223; "
        "which one this model builds is not recorded"
    )
    assert M.kv_method("LlamaForCausalLM") == (M.KvMethod.YES, "")
    assert M.kv_method(None) == (M.KvMethod.YES, "")


def test_executed_cases_agree_with_the_table() -> None:
    """Every architecture the oracle built: a layer with a KV method <=> not NO_KV_METHOD."""
    seen: dict[str, bool] = {}
    for case in GOLDEN["cases"].values():
        arch = case.get("architecture")
        if arch and case["engine_error"] is None and case["quant_config"] == "Fp8Config":
            seen[arch] = seen.get(arch, False) or any(
                layer["kv_method"] is not None for layer in case["layers"]
            )
    assert len(seen) >= 12
    for arch, has in seen.items():
        assert (M.kv_method(arch)[0] is not M.KvMethod.NO) == has, arch


# ------------------------------------------------------------------------------------------
# DeepSeek's loader
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("has_params", [True, False])
def test_deepseek_gives_every_recorded_outcome(has_params: bool) -> None:
    cls = A.LOADER_CLASSES[A.ARCHITECTURES["DeepseekV3ForCausalLM"].loader]
    params = MQA if has_params else NONE
    for tail in A.PROBE_TAILS:
        kind, target, index = cls.outcome(tail, has_params) or ("?", None, None)
        name = f"{P}.{tail}"
        got = M.deepseek(name, params, q_lora_rank=None)
        recorded = None if index is None else substitute(A.MESSAGES[index], P, name)
        assert got.kind == kind, tail
        if kind == "load":
            assert got.target == substitute(target or "", P, name), tail
        else:
            assert got.message == recorded, tail


def test_deepseek_names_outside_the_probe() -> None:
    kv_a = f"{P}.kv_a_proj_with_mqa.k_scale"
    assert M.deepseek(kv_a, MQA, q_lora_rank=None) == M.Outcome(
        "drop", kv_a, f"{kv_a} not found in params_dict."
    )
    fused = M.deepseek(kv_a, MQA, q_lora_rank=16)
    assert (fused.kind, fused.message) == ("drop", None)
    assert fused.why == (
        "with q_lora_rank set it waits to be fused with its q_a_proj / kv_a_proj_with_mqa "
        "partner into fused_qkv_a_proj_with_mqa and, alone, never loads"
    )
    vllm = f"{P}.mla_attn.mla_attn.k_scale"
    assert M.deepseek(vllm, MQA, None).message == f"{vllm} not found in params_dict."
    # the MHA prefill attention's own parameter loads (into attn_mha, not the latent cache)
    assert M.deepseek(f"{P}.attn_mha.k_scale", MQA_MHA, None) == M.Outcome(
        "load", f"{P}.attn_mha.k_scale", None
    )
    # "k_scale" is tested first: kv_scale holds "v_scale" and looks for v_proj
    assert M.deepseek(f"{P}.v_proj.v_scale", MQA, None).target == f"{P}.attn_mqa.v_scale"


# ------------------------------------------------------------------------------------------
# The other hand-mirrored loaders, against the oracle's executed errors
# ------------------------------------------------------------------------------------------


def _gold_error(case: str) -> str:
    (error,) = {layer["error"] for layer in GOLDEN["cases"][case]["layers"][:1]}
    return str(error)


def test_falcon_h1_raises_on_every_scale_name() -> None:
    assert M.falcon_h1(f"{P}.k_scale", NONE).message == _gold_error("sgl_model_falconh1_llmc")
    assert M.falcon_h1(f"{P}.k_proj.k_scale", NONE).message == _gold_error(
        "sgl_model_falconh1_modelopt"
    )
    assert M.falcon_h1(f"{P}.k_proj.output_scale", NONE).message == _gold_error(
        "sgl_model_falconh1_quark"
    )
    # the stacked loop continues after each rename: v_proj inside qkv_proj renames again
    assert M.falcon_h1(f"{P}.v_proj.v_scale", NONE).target == "model.layers.0.qkv_proj.v_scale"
    assert M.falcon_h1("model.layers.0.attn.k_scale", NONE).kind == "raise"


def test_minicpm3_loads_only_the_parameter_name() -> None:
    params = _params(f"{P}.attn.k_scale")
    assert M.minicpm3(f"{P}.attn.k_scale", params).kind == "load"
    for case, tail in (("llmc", "k_scale"), ("modelopt", "k_proj.k_scale")):
        got = M.minicpm3(f"{P}.{tail}", params)
        assert (got.kind, got.message) == ("raise", _gold_error(f"sgl_mla_minicpm3_{case}"))
    assert M.minicpm3(f"{P}.attn_mqa.k_scale", params).message == _gold_error(
        "sgl_mla_minicpm3_mqa"
    )


def test_mllama4() -> None:
    lm = "language_model.model.layers.0.self_attn"
    got = M.mllama4("model.language_model.layers.0.self_attn.k_scale", NONE)
    assert got.kind == "drop" and (got.message or "").startswith("Found .k_scale")
    assert got.target == "language_model.model.language_model.layers.0.self_attn.attn.k_scale"
    # Quark's output_scale: remapped, taken as handled, nothing logged
    assert M.mllama4(f"{lm}.k_proj.output_scale", NONE) == M.Outcome(
        "drop", f"{lm}.attn.k_scale", None
    )
    # a name the remap leaves alone reaches the unchecked default lookup
    assert M.mllama4(f"{lm}.q_scale", NONE) == M.Outcome(
        "raise", f"{lm}.q_scale", f"KeyError: '{lm}.q_scale'"
    )


def test_mistral_large_3() -> None:
    got = M.mistral_large_3("layers.0.attention.k_fake_quantizer.qscale_act", MQA_MHA, None)
    target = "model.layers.0.self_attn.mla_attn.mla_attn.k_scale"
    assert got == M.Outcome("drop", target, f"{target} not found in params_dict.")
    hf = "layers.0.attention.k_proj.k_scale"
    assert M.mistral_large_3(hf, MQA_MHA, None) == M.Outcome(
        "drop", hf, f"Unrecognized weight: {hf}. Skipping."
    )
    # the table's (\w+) takes any last segment: wkv_a_with_mqa.k_scale becomes DeepSeek's
    got = M.mistral_large_3("layers.0.attention.wkv_a_with_mqa.k_scale", MQA_MHA, 16)
    assert (got.kind, got.target) == ("drop", "model.layers.0.self_attn.kv_a_proj_with_mqa.k_scale")


def test_mla_correction_of_recorded_loaders() -> None:
    kimi_vl = A.LOADER_CLASSES[A.ARCHITECTURES["KimiVLForConditionalGeneration"].loader]
    # probed with the parameters on attn: the remapped self_attn.k_scale loaded there; the real
    # model's are on attn_mqa, which the remap never targets
    assert kimi_vl.outcome("k_scale", True) == ("load", "{prefix}.attn.k_scale", None)
    got = M.mla_recorded(f"{P}.k_scale", "attn_mqa", kimi_vl, MQA)
    assert got == M.Outcome(
        "drop",
        f"{P}.attn.k_scale",
        f"Found .k_scale in the checkpoint (e.g. {P}.k_scale), but not found the expected "
        f"name in the model (e.g. {P}.attn.k_scale). .k_scale is not loaded.",
    )
    assert M.mla_recorded(f"{P}.k_proj.k_scale", "attn_mqa", kimi_vl, MQA).kind == "drop"
    assert M.mla_recorded(f"{P}.attn_mqa.k_scale", "attn_mqa", kimi_vl, MQA).kind == "drop"
    assert M.mla_recorded(f"{P}.k_proj.output_scale", "attn_mqa", kimi_vl, MQA) == M.Outcome(
        "raise", f"{P}.attn.k_scale", f"KeyError: '{P}.attn.k_scale'"
    )
    glm = A.LOADER_CLASSES[A.ARCHITECTURES["Glm4MoeLiteForCausalLM"].loader]
    assert glm.family == "no-remap"
    assert M.mla_recorded(f"{P}.attn_mqa.k_scale", "attn_mqa", glm, MQA).kind == "load"
    assert M.mla_recorded(f"{P}.attn.k_scale", "attn_mqa", glm, MQA) == M.Outcome(
        "drop", f"{P}.attn.k_scale", None
    )


# ------------------------------------------------------------------------------------------
# Layouts and KV sharing
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arch", "prefix", "module"),
    [
        ("NemotronHForCausalLM", "backbone.layers.1.mixer", "model.layers.1.mixer"),
        ("NemotronHForCausalLM", "model.layers.1.self_attn", "model.layers.1.mixer"),
        ("FalconH1ForCausalLM", "model.layers.3.self_attn", "model.layers.3"),
        (
            "Gemma3ForConditionalGeneration",
            "model.language_model.layers.0.self_attn",
            "language_model.model.layers.0.self_attn",
        ),
        (
            "Gemma3ForConditionalGeneration",
            "language_model.model.layers.0.self_attn",
            "language_model.model.layers.0.self_attn",
        ),
        (
            "Llama4ForConditionalGeneration",
            "model.layers.2.self_attn",
            "language_model.model.layers.2.self_attn",
        ),
        ("MistralLarge3ForCausalLM", "layers.7.attention", "model.layers.7.self_attn"),
    ],
)
def test_module_prefix(arch: str, prefix: str, module: str) -> None:
    layout = M.layout(arch)
    assert layout is not None and layout.module_prefix(prefix) == module


def test_loader_prefix() -> None:
    nemotron = M.LAYOUTS["NemotronHForCausalLM"]
    assert nemotron.loader_prefix("backbone.layers.1.mixer") == "model.layers.1.mixer"
    gemma = M.LAYOUTS["Gemma3ForConditionalGeneration"]
    # the loader renames nothing: model.language_model names reach no module
    assert gemma.loader_prefix("model.language_model.layers.0.self_attn") == (
        "model.language_model.layers.0.self_attn"
    )
    assert M.layout("DeepseekV32ForCausalLM") is not None
    assert M.layout("DeepseekV32ForCausalLM").loader == "deepseek"  # type: ignore[union-attr]
    assert M.layout("LlamaForCausalLM") is None


def test_kv_shared_source_matches_every_executed_layer_id() -> None:
    from parity import sglang_model_cases

    checked = 0
    for name, case in sglang_model_cases.CASES_BY_NAME.items():
        shape = parse_model_shape(case["config"])
        for layer in GOLDEN["cases"][name]["layers"]:
            index = int(layer["name"].split(".layers.")[1].split(".")[0])
            source = M.kv_shared_source(shape, index)
            assert (index if source is None else source) == layer["attention"]["layer_id"], name
            checked += source is not None
    assert checked == 4  # Gemma-4's two sharing layers, in both cases


def test_kv_shared_source_rules() -> None:
    types = ("sliding_attention", "full_attention") * 3
    gemma4 = ModelShape(
        model_type="gemma4_text", num_hidden_layers=6, num_kv_shared_layers=2, hf_layer_types=types
    )
    assert [M.kv_shared_source(gemma4, i) for i in range(6)] == [None] * 4 + [2, 3]
    gemma3n = ModelShape(
        model_type="gemma3n_text", num_hidden_layers=6, num_kv_shared_layers=2, hf_layer_types=types
    )
    assert [M.kv_shared_source(gemma3n, i) for i in range(6)] == [None] * 4 + [2, 3]
    odd = ModelShape(
        model_type="gemma3n_text",
        num_hidden_layers=5,
        num_kv_shared_layers=2,
        hf_layer_types=("sliding_attention",) * 4 + ("full_attention",),
    )
    # Gemma-3n: the last sliding (first - 2) or full (first - 1) layer, whatever the types
    assert [M.kv_shared_source(odd, i) for i in (3, 4)] == [1, 2]
    # Gemma-4 with a type no earlier layer has: SGLang refuses to build; no source
    lone = ModelShape(
        model_type="gemma4",
        num_hidden_layers=3,
        num_kv_shared_layers=1,
        hf_layer_types=("sliding_attention", "sliding_attention", "full_attention"),
    )
    assert M.kv_shared_source(lone, 2) is None
    assert M.kv_shared_source(ModelShape(model_type="llama", num_hidden_layers=4), 3) is None


def test_nvfp4_search_paths() -> None:
    searched = M.NVFP4_SEARCHED.search
    assert searched("model.layers.0.self_attn.attn")
    assert searched("model.layers.0.attn")  # Falcon-H1
    assert searched("layers.0.attention.attn")
    assert not searched("model.layers.1.mixer.attn")  # NemotronH
