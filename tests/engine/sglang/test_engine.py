"""The SGLang engine's per-model rules through ``kvscale.inspect`` (kvscale/engine/sglang/
engine.py): architectures without a KV method, module layouts, MLA loaders and backends, KV
sharing and NVFP4's global scale. Values and layer names are checked against SGLang's own code
by tests/parity/test_sglang_parity.py; here, the problems kvscale reports about them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import quant_config, tensor, write_checkpoint

import kvscale
from kvscale.core.inspect import ScaleReport
from kvscale.engine.base import NameContext
from kvscale.engine.sglang.engine import SGLANG
from kvscale.model_config import find_quant_config, parse_model_shape
from kvscale.problems import Problem, Severity

K, V = 0.0234375, 0.015625
FP8 = quant_config("fp8")


def _config(arch: str, layers: int = 2, quant: dict[str, Any] | None = FP8, **extra: Any) -> Any:
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "torch_dtype": "bfloat16",
        "quantization_config": quant,
    }
    cfg.update(extra)
    return cfg


def _scales(prefix: str, layers: range, tails: tuple[str, str], k: float = K, v: float = V) -> Any:
    out = {}
    for i in layers:
        out[f"{prefix.format(i)}.{tails[0]}"] = tensor(k)
        out[f"{prefix.format(i)}.{tails[1]}"] = tensor(v)
    return out


def _inspect(d: Path, cfg: Any, tensors: Any, **options: str) -> ScaleReport:
    write_checkpoint(d, tensors, cfg)
    return kvscale.inspect(d, engine="sglang", kv_cache_dtype="fp8_e4m3", **options | {})


def _codes(report: ScaleReport) -> dict[str, Problem]:
    return {p.code: p for p in report.problems}


LLMC = ("k_scale", "v_scale")
MODELOPT = ("k_proj.k_scale", "v_proj.v_scale")
SA = "model.layers.{}.self_attn"


def test_architecture_without_kv_method(tmp_path: Path) -> None:
    report = _inspect(tmp_path / "q", _config("Qwen3ForCausalLM"), _scales(SA, range(2), LLMC))
    assert [(x.rule.value, x.k_scale, x.v_scale, dict(x.sources)) for x in report.layers] == [
        ("default", 1.0, 1.0, {})
    ] * 2
    found = _codes(report)["scales-not-loaded"]
    assert found.severity is Severity.ERROR
    assert found.layers == ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn")
    assert found.message == (
        "4 tensors are not used as KV scales (model.layers.0.self_attn.k_scale (model."
        "safetensors), model.layers.0.self_attn.v_scale (model.safetensors), model.layers.1."
        "self_attn.k_scale (model.safetensors) and 1 more): Qwen3ForCausalLM builds its "
        "RadixAttention without quant_config (qwen3.py:223; executed: sgl_arch_qwen3_canonical)"
        ": its layers get no KV-cache quant method and hold no k/v scale, so Qwen3ForCausalLM's "
        "load_weights (SGLang 0.5.23, srt/models/qwen3.py:685) drops every k/v scale name and "
        "the cache runs at 1.0"
    )
    assert "misleading-engine-log" not in _codes(report)
    # no name would load: normalize and calibrate say so (checkpoint_name None)
    assert SGLANG.checkpoint_name(SA.format(0), "k_scale", _context(tmp_path / "q")) is None


def _context(d: Path) -> NameContext:
    import json

    cfg = json.loads((d / "config.json").read_text())
    quant = SGLANG.quant_config(find_quant_config(cfg, None, "config.json"))
    return NameContext(quant, parse_model_shape(cfg), frozenset())


def test_llama_class_architecture_without_kv_method(tmp_path: Path) -> None:
    report = _inspect(tmp_path / "l4", _config("Llama4ForCausalLM"), _scales(SA, range(2), LLMC))
    assert [x.k_scale for x in report.layers] == [1.0, 1.0]
    assert _codes(report)["scales-not-loaded"].severity is Severity.ERROR


def test_unknown_kv_method_warns(tmp_path: Path) -> None:
    cfg = _config("Qwen3VLForConditionalGeneration")
    # its recorded loader keeps the parameter's own name (attn.k_scale)
    tails = ("attn.k_scale", "attn.v_scale")
    report = _inspect(tmp_path / "vl", cfg, _scales(SA, range(2), tails))
    assert [x.k_scale for x in report.layers] == [K, K]
    found = _codes(report)["scales-not-loaded"]
    assert found.severity is Severity.WARNING
    assert found.message.startswith(
        "kvscale cannot tell whether SGLang's Qwen3VLForConditionalGeneration builds its "
        "RadixAttention with quant_config (RadixAttention built with quant_config at "
        "qwen2.py:215 and without at qwen3.py:223; which one this model builds is not "
        "recorded): the values shown for 2 layers"
    )


def test_nemotron_h_names_and_loads(tmp_path: Path) -> None:
    cfg = _config(
        "NemotronHForCausalLM",
        quant=quant_config("compressed-tensors"),
        hybrid_override_pattern="M*",
    )
    report = _inspect(tmp_path / "nh", cfg, _scales("backbone.layers.{}.mixer", range(1, 2), LLMC))
    (layer,) = report.layers
    assert (layer.name, layer.k_scale, layer.v_scale) == ("model.layers.1.mixer.attn", K, V)
    assert layer.checkpoint_prefix == "backbone.layers.1.mixer"
    # NVFP4's layer search never finds mixer.attn: its global scale stays 1.0
    report = kvscale.inspect(tmp_path / "nh", engine="sglang", kv_cache_dtype="nvfp4")
    found = _codes(report)["scales-not-loaded"]
    assert found.layers == ("model.layers.1.mixer.attn",)
    assert "so their NVFP4 global scales stay 1.0" in found.message


def test_falcon_h1_refuses_scale_names(tmp_path: Path) -> None:
    cfg = _config("FalconH1ForCausalLM", quant=quant_config("compressed-tensors"))
    report = _inspect(tmp_path / "fh", cfg, _scales(SA, range(2), LLMC))
    assert [(x.name, x.rule.value) for x in report.layers] == [
        ("model.layers.0.attn", "error"),
        ("model.layers.1.attn", "error"),
    ]
    messages = [p.message for p in report.problems if p.code == "unmapped-scale-name"]
    assert any("raises KeyError: 'model.layers.N.k_scale'" in m for m in messages)


def test_gemma3_multimodal_layouts(tmp_path: Path) -> None:
    cfg = _config("Gemma3ForConditionalGeneration", quant=quant_config("compressed-tensors"))
    new = _inspect(
        tmp_path / "new", cfg, _scales("model.language_model.layers.{}.self_attn", range(2), LLMC)
    )
    assert [(x.name, x.k_scale) for x in new.layers] == [
        ("language_model.model.layers.0.self_attn.attn", 1.0),
        ("language_model.model.layers.1.self_attn.attn", 1.0),
    ]
    assert (
        "; the loader looks it up under <model.language_model.layers.N.self_attn>, where SGLang "
        "has no module (the layer is language_model.model.layers.N.self_attn.attn)"
    ) in _codes(new)["unmapped-scale-name"].message
    old = _inspect(
        tmp_path / "old", cfg, _scales("language_model.model.layers.{}.self_attn", range(2), LLMC)
    )
    assert [(x.name, x.k_scale, x.v_scale) for x in old.layers] == [
        ("language_model.model.layers.0.self_attn.attn", K, V),
        ("language_model.model.layers.1.self_attn.attn", K, V),
    ]
    quark = quant_config("quark")
    refused = _inspect(
        tmp_path / "quark",
        _config("Gemma3ForConditionalGeneration", quant=quark),
        _scales(
            "model.language_model.layers.{}.self_attn",
            range(2),
            ("k_proj.output_scale", "v_proj.output_scale"),
        ),
    )
    assert [x.rule.value for x in refused.layers] == ["error", "error"]


MLA = {"kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 16}


def test_deepseek_fused_a_proj(tmp_path: Path) -> None:
    cfg = _config("DeepseekV3ForCausalLM", q_lora_rank=32, **MLA)
    report = _inspect(
        tmp_path / "ds",
        cfg,
        _scales(SA, range(2), ("kv_a_proj_with_mqa.k_scale", "k_proj.k_scale")),
    )
    assert [(x.k_scale, x.v_scale) for x in report.layers] == [(V, V)] * 2  # k_proj.k_scale only
    found = _codes(report)["unmapped-scale-name"]
    assert found.message.endswith(
        "DeepseekV3ForCausalLM's load_weights (SGLang 0.5.23, srt/models/deepseek_v2.py:3436) "
        "drops it silently (no log line) (with q_lora_rank set it waits to be fused with its "
        "q_a_proj / kv_a_proj_with_mqa partner into fused_qkv_a_proj_with_mqa and, alone, never "
        "loads); the name this loader keeps is <prefix>.k_proj.k_scale"
    )
    context = _context(tmp_path / "ds")
    assert (
        SGLANG.checkpoint_name(SA.format(0), "k_scale", context) == f"{SA.format(0)}.k_proj.k_scale"
    )


def test_mla_backends(tmp_path: Path) -> None:
    cfg = _config("DeepseekV3ForCausalLM", **MLA)
    d = tmp_path / "mla"
    report = _inspect(d, cfg, _scales(SA, range(2), MODELOPT))
    summary = _codes(report)["scales-ignored-by-backend"]
    assert summary.severity is Severity.WARNING
    assert summary.message.startswith(
        "2 MLA layers load checkpoint scales (e.g. model.layers.0.self_attn.attn: k 0.0234375, v "
        "0.015625) that SGLang's MLA backends apply differently; pass --attention-backend for "
        "the one you serve with: flashinfer writes the latent unscaled"
    )
    for backend in ("flashinfer", "triton", "fa3", "flashmla", "trtllm_mla", "cutedsl_mla"):
        assert f"; {backend} " in summary.message or summary.message.count(f"{backend} ") >= 1
    assert "v-scale-unused" not in _codes(report)  # triton may read V with v_scale
    chosen = kvscale.inspect(
        d, engine="sglang", kv_cache_dtype="fp8_e4m3", attention_backend="flashmla"
    )
    found = _codes(chosen)["scales-ignored-by-backend"]
    assert found.severity is Severity.ERROR
    assert found.message == (
        "2 MLA layers (model.layers.0.self_attn.attn, model.layers.1.self_attn.attn): flashmla "
        "writes the latent unscaled (flashmla_backend.py:447) but on decode quantizes q with "
        "k_scale and descales q and k by k_scale (:462-476): every score is multiplied by "
        "k_scale (0.0234375)"
    )
    assert "v-scale-unused" in _codes(chosen)
    refused = kvscale.inspect(
        d, engine="sglang", kv_cache_dtype="fp8_e5m2", attention_backend="trtllm_mla"
    )
    assert _codes(refused)["backend-unsupported-dtype"].severity is Severity.ERROR
    mha = kvscale.inspect(
        d, engine="sglang", kv_cache_dtype="fp8_e4m3", attention_backend="trtllm_mha"
    )
    assert _codes(mha)["backend-unsupported-dtype"].message == (
        "--attention-backend trtllm_mha cannot run this MLA model: SGLang refuses to start, "
        "'ValueError: trtllm_mha backend can only be used with non-MLA models. "
        "(attention_registry.py:279-280)'"
    )
    # an FP4 pool on MLA reads no checkpoint scale at all
    fp4 = kvscale.inspect(d, engine="sglang", kv_cache_dtype="nvfp4")
    assert "scales-ignored-by-backend" not in _codes(fp4) and "scales-in-cache" in _codes(fp4)


GEMMA4 = {
    "model_type": "gemma4_text",
    "num_kv_shared_layers": 2,
    "layer_types": ["sliding_attention", "full_attention"] * 2,
}


@pytest.mark.parametrize("same", [True, False])
def test_kv_sharing(tmp_path: Path, same: bool) -> None:
    cfg = _config("Gemma4ForCausalLM", layers=4, quant=quant_config("compressed-tensors"), **GEMMA4)
    tensors = _scales(SA, range(2), LLMC)
    tensors |= _scales(SA, range(2, 4), LLMC, k=K if same else 2 * K, v=V if same else 2 * V)
    report = _inspect(tmp_path / "g4", cfg, tensors)
    caches = [x.cache.shared_from if x.cache else None for x in report.layers]
    assert caches == [None, None, "model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"]
    if same:
        assert "shared-cache-scale-mismatch" not in _codes(report)
        return
    found = _codes(report)["shared-cache-scale-mismatch"]
    assert (found.severity, found.layers) == (
        Severity.ERROR,
        ("model.layers.2.self_attn.attn", "model.layers.3.self_attn.attn"),
    )
    assert found.message == (
        "2 KV-sharing layers dequantize another layer's cache with their own scales: "
        "model.layers.2.self_attn.attn reads model.layers.0.self_attn.attn's cache, written "
        "with k 0.0234375 / v 0.015625, with its own k 0.046875 / v 0.03125; "
        "model.layers.3.self_attn.attn reads model.layers.1.self_attn.attn's cache, written "
        "with k 0.0234375 / v 0.015625, with its own k 0.046875 / v 0.03125: attention is off "
        "by the ratio"
    )
    nvfp4 = kvscale.inspect(
        tmp_path / "g4", engine="sglang", kv_cache_dtype="nvfp4", gpu_arch="sm90"
    )
    slots = _codes(nvfp4)["shared-cache-scale-mismatch"]
    assert (slots.severity, slots.layers) == (
        Severity.WARNING,
        ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"),
    )


def test_nvfp4_global_scale_readings(tmp_path: Path) -> None:
    """SGLang's x6 on SM100/SM103 reaches inspect's NVFP4 readings (kvscale.nvfp4_conventions)."""
    d = tmp_path / "fp4"
    _inspect(d, _config("LlamaForCausalLM"), _scales(SA, range(2), LLMC))
    both = kvscale.inspect(d, engine="sglang", kv_cache_dtype="nvfp4")
    assert both.nvfp4 is not None
    (layer, *_) = both.nvfp4.layers
    assert (layer.k_value, layer.v_value) == (0.0234375, 0.015625)
    groups = {(r.gpus, r.engine_scale) for r in layer.k}
    assert groups == {("sm100/sm103", 0.140625), ("other GPUs", 0.0234375)}
    sm103 = kvscale.inspect(d, engine="sglang", kv_cache_dtype="nvfp4", gpu_arch="sm103")
    assert sm103.nvfp4 is not None
    assert {(r.gpus, r.engine_scale) for r in sm103.nvfp4.layers[0].v} == {("sm103", 0.09375)}
    sm90 = kvscale.inspect(d, engine="sglang", kv_cache_dtype="nvfp4", gpu_arch="sm90")
    assert sm90.nvfp4 is not None
    assert {(r.gpus, r.engine_scale) for r in sm90.nvfp4.layers[0].k} == {("sm90", 0.0234375)}


def test_kimi_linear_ignores_layer_types(tmp_path: Path) -> None:
    cfg = _config(
        "KimiLinearForCausalLM",
        model_type="kimi_linear",
        layer_types=["linear_attention", "linear_attention"],
        **MLA,
    )
    report = _inspect(
        tmp_path / "kl", cfg, _scales(SA, range(2), ("attn_mqa.k_scale", "attn_mqa.v_scale"))
    )
    assert [(x.name, x.k_scale) for x in report.layers] == [
        ("model.layers.0.self_attn.attn", 1.0),
        ("model.layers.1.self_attn.attn", 1.0),
    ]


def test_fnuz_verify_write_uses_e4m3fnuz() -> None:
    write = SGLANG.cache_write("fp8_e4m3fnuz", None)
    assert write is not None and write.stored_kv_cache_dtype == "fp8_e4m3fnuz"
    import torch

    bits = write.write(torch.tensor([[[1.0, -2.0]]], dtype=torch.bfloat16), torch.tensor([1.0]))
    # e4m3fnuz: exponent bias 8, so 1.0 is 0x40 (e4m3fn: 0x38)
    assert bits.reshape(-1).tolist() == [0x40, 0xC8]
