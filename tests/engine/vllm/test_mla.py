"""vLLM 0.33.0 on MLA models (kvscale/engine/vllm/mla.py): which layers are latent, the
KV-cache dtype an MLA model's layers cache, and the architectures beyond the executed catalogue
(tests/parity/test_vllm_arch_parity.py holds the executed ones)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import quant_config, tensor, write_checkpoint

from kvscale.core.inspect import ScaleReport, resolve_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.engine.vllm import mla, placement
from kvscale.engine.vllm.quant_config import parse_quant_config
from kvscale.io.inputs import open_input
from kvscale.model_config import RawQuantConfig, parse_model_shape

MLA_DIMS = {"kv_lora_rank": 32, "qk_rope_head_dim": 16, "qk_nope_head_dim": 16}


def shape(arch: str, model_type: str, **extra: Any) -> Any:
    return parse_model_shape(
        {"architectures": [arch], "model_type": model_type, "num_hidden_layers": 2, **extra}
    )


def quant(method: str | None) -> Any:
    if method is None:
        return parse_quant_config(None)
    return parse_quant_config(RawQuantConfig(quant_config(method), "config.json", "x", "q"))


@pytest.fixture(autouse=True)
def no_mla_disable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLLM_MLA_DISABLE", raising=False)


def test_latent_follows_the_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    assert mla.is_latent(shape("DeepseekV3ForCausalLM", "deepseek_v3", **MLA_DIMS))
    # MiniCPM3: an MLA-shaped config, plain Attention
    assert not mla.is_latent(shape("MiniCPM3ForCausalLM", "minicpm3", **MLA_DIMS))
    # Sarvam-MLA builds MLAAttention whatever its model_type says
    assert mla.is_latent(shape("SarvamMLAForCausalLM", "sarvam_mla", **MLA_DIMS))
    # DeepSeek's model_type "deepseek", or both head dims 0: plain multi-head attention
    assert not mla.is_latent(shape("DeepseekForCausalLM", "deepseek", **MLA_DIMS))
    zero = {**MLA_DIMS, "qk_rope_head_dim": 0, "qk_nope_head_dim": 0}
    assert not mla.is_latent(shape("DeepseekV3ForCausalLM", "deepseek_v3", **zero))
    # Kimi-Linear's own MLA layer
    assert mla.is_latent(shape("KimiLinearForCausalLM", "kimi_linear", **MLA_DIMS))
    # not in vLLM's registry: the Transformers backend, where kv_lora_rank decides
    assert mla.is_latent(shape("SomeNewMLAForCausalLM", "new", **MLA_DIMS))
    monkeypatch.setenv("VLLM_MLA_DISABLE", "1")
    assert not mla.is_latent(shape("DeepseekV3ForCausalLM", "deepseek_v3", **MLA_DIMS))
    assert mla.is_latent(shape("SarvamMLAForCausalLM", "sarvam_mla", **MLA_DIMS))


V32 = {**MLA_DIMS, "index_topk": 8}


@pytest.mark.parametrize(
    ("arch", "model_type", "method", "requested", "backend", "gpu", "platform", "expected"),
    [
        # MLAAttention has no compressed-tensors promotion of auto
        (
            "DeepseekV3ForCausalLM",
            "deepseek_v3",
            "compressed-tensors",
            "auto",
            None,
            None,
            "ocp",
            "auto",
        ),
        ("DeepseekV3ForCausalLM", "deepseek_v3", "modelopt", "auto", None, None, "ocp", "fp8_e4m3"),
        # V3.2 serves bfloat16 as auto; its sparse backends canonicalise quantized dtypes
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "bfloat16",
            None,
            None,
            "ocp",
            "auto",
        ),
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "fp8",
            None,
            None,
            "ocp",
            "fp8_ds_mla",
        ),
        ("DeepseekV32ForCausalLM", "deepseek_v32", "modelopt", "fp8", None, "sm100", "ocp", "fp8"),
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "auto",
            None,
            "sm120",
            "ocp",
            "fp8_ds_mla",
        ),
        ("DeepseekV32ForCausalLM", "deepseek_v32", "modelopt", "fp8", None, None, "fnuz", "fp8"),
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "nvfp4_ds_mla",
            None,
            "sm100",
            "ocp",
            "nvfp4_ds_mla",
        ),
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "fp8",
            "flashmla_sparse",
            "sm100",
            "ocp",
            "fp8_ds_mla",
        ),
        (
            "DeepseekV32ForCausalLM",
            "deepseek_v32",
            "modelopt",
            "fp8",
            "flashinfer_mla_sparse",
            None,
            "ocp",
            "fp8",
        ),
        # GLM-5 turns auto into fp8_e4m3 on SM10x CUDA devices only
        (
            "GlmMoeDsaForCausalLM",
            "glm_moe_dsa",
            None,
            "auto",
            "flashinfer_mla_sparse",
            "sm100",
            "ocp",
            "fp8_e4m3",
        ),
        (
            "GlmMoeDsaForCausalLM",
            "glm_moe_dsa",
            None,
            "auto",
            "flashinfer_mla_sparse",
            "sm90",
            "ocp",
            "auto",
        ),
    ],
)
def test_mla_kv_cache_dtype(
    arch: str,
    model_type: str,
    method: str | None,
    requested: str,
    backend: str | None,
    gpu: str | None,
    platform: str,
    expected: str,
) -> None:
    dims = V32 if "Dsa" in arch or "V32" in arch else MLA_DIMS
    options = EngineOptions(
        kv_cache_dtype=requested, attention_backend=backend, gpu_arch=gpu, platform=platform
    )
    got = mla.model_kv_cache_dtype(
        requested, quant(method), shape(arch, model_type, **dims), options
    )
    assert got == expected


def test_modelopt_method_reads_flat_and_nested_algos() -> None:
    assert placement.modelopt_method({"quant_method": "modelopt", "quant_algo": "NVFP4"}) == (
        "modelopt_fp4"
    )
    nested = {"quant_method": "modelopt", "quantization": {"quant_algo": "MIXED_PRECISION"}}
    assert placement.modelopt_method(nested) == "modelopt_mixed"
    assert placement.modelopt_method({"quant_method": "modelopt", "quant_algo": "FP8"}) == (
        "modelopt"
    )
    assert placement.modelopt_method({"quant_method": "fp8", "quant_algo": "FP8"}) is None


def _inspect(tmp: Path, config: dict[str, Any], tensors: dict[str, float]) -> ScaleReport:
    write_checkpoint(tmp, {n: tensor(v) for n, v in tensors.items()}, config)
    return resolve_checkpoint(open_input(str(tmp)), EngineOptions(kv_cache_dtype="fp8"))


@pytest.mark.parametrize(
    ("arch", "model_type", "why"),
    [
        (
            "KimiLinearForCausalLM",
            "kimi_linear",
            "own MLA layer calls _init_kv_cache_quant, but no quant config gives it a KV method",
        ),
        ("DeepseekV4ForCausalLM", "deepseek_v4", "builds no layer that holds KV-cache scales"),
    ],
)
def test_architectures_that_never_load_a_scale(
    arch: str, model_type: str, why: str, tmp_path: Path
) -> None:
    config = {
        "architectures": [arch],
        "model_type": model_type,
        "num_hidden_layers": 1,
        "quantization_config": quant_config("modelopt"),
        **MLA_DIMS,
    }
    prefix = "model.layers.0.self_attn"
    report = _inspect(
        tmp_path, config, {f"{prefix}.k_proj.k_scale": 0.5, f"{prefix}.v_proj.v_scale": 0.25}
    )
    (layer,) = report.layers
    assert (layer.k_scale, layer.v_scale, layer.error) == (1.0, 1.0, None)
    (problem,) = [p for p in report.problems if p.code == "scales-not-loaded"]
    assert why in problem.message and problem.severity.value == "error"


def test_fp8_e5m2_is_refused_only_where_the_mla_layer_has_a_kv_method(tmp_path: Path) -> None:
    def refusal(method: str) -> str | None:
        config = {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "deepseek_v3",
            "num_hidden_layers": 1,
            "quantization_config": quant_config(method),
            **MLA_DIMS,
        }
        write_checkpoint(tmp_path / method, {}, config)
        report = resolve_checkpoint(
            open_input(str(tmp_path / method)), EngineOptions(kv_cache_dtype="fp8_e5m2")
        )
        (layer,) = report.layers
        return layer.error

    assert refusal("modelopt") == (
        "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."
    )
    assert refusal("compressed-tensors") is None
