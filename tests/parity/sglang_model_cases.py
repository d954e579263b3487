"""SGLang parity cases on SGLang's own models (MLA, multimodal wrappers, hybrids, MoE, KV
sharing, sliding windows with sinks): issues 22 and 23.

`tests/parity/sglang_oracle.py` runs these after `sglang_cases.py`. Every architecture here is
built by its own ``__init__`` (the oracle's construction World, `sglang_architectures.py`),
so which RadixAttention modules exist, where they sit (``language_model.model.layers.N``,
``model.layers.N.mixer``, ``attn_mqa`` / ``attn_mha``), which KV-cache slot each uses and
whether it gets a KV-cache quant method are SGLang's; then its own ``load_weights`` loads the
checkpoint. The configs are the smallest config.json each model's code builds from (two or four
layers; the fields it reads). Case format and options: `sglang_cases.py`.

Groups: ``sgl-mla`` (DeepSeek-V3's loader on every producer's MLA scale names under every
quant method; one real loader per group of MLA architectures), ``sgl-model`` (Llama-4 and
Gemma-3 multimodal checkpoints in both checkpoint layouts, Qwen3-MoE, Gemma-3/Gemma-4 sliding
windows and KV sharing, gpt-oss sinks, NemotronH and Falcon-H1 hybrids).
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["CASES", "CASES_BY_NAME"]

_HERE = Path(__file__).resolve().parent


def _module(name: str, file: str) -> Any:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, _HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


C = _module("kvscale_parity_cases", "cases.py")
S = _module("kvscale_parity_sglang_cases", "sglang_cases.py")
T, K, V, K2, V2 = C.T, C.K, C.V, C.K2, C.V2
QCS: dict[str, dict[str, Any] | None] = {
    "fp8": C.FP8_QC,
    "modelopt": C.MODELOPT_QC,
    "ct": C.ct_qc("tensor"),
    "quark": C.quark_qc(),
}

MODEL_CONFIGS: dict[str, dict[str, Any]] = {
    "MiniCPM3ForCausalLM": {
        "dim_model_base": 256,
        "hidden_act": "silu",
        "hidden_size": 64,
        "intermediate_size": 128,
        "kv_lora_rank": 16,
        "max_position_embeddings": 256,
        "model_type": "minicpm3",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "pad_token_id": None,
        "q_lora_rank": None,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "tie_word_embeddings": True,
        "vocab_size": 128,
    },
    "SarvamMLAForCausalLM": {
        "num_experts": 2,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": 64,
        "first_k_dense_replace": 0,
        "hidden_act": "silu",
        "hidden_size": 64,
        "intermediate_size": 128,
        "kv_lora_rank": 16,
        "max_position_embeddings": 256,
        "model_type": "sarvam_mla",
        "n_group": 1,
        "norm_topk_prob": True,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "pad_token_id": None,
        "q_lora_rank": None,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "rms_norm_eps": 1e-06,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "routed_scaling_factor": 2.5,
        "tie_word_embeddings": False,
        "topk_group": 1,
        "v_head_dim": 16,
        "vocab_size": 128,
    },
    "KimiLinearForCausalLM": {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": 163584,
        "eos_token_id": 163586,
        "head_dim": 16,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "kv_lora_rank": 16,
        "layer_types": ["linear_attention", "linear_attention"],
        "linear_conv_kernel_dim": 4,
        "linear_head_dim": 128,
        "linear_num_heads": 32,
        "mlp_layer_types": [
            "dense",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
            "sparse",
        ],
        "model_max_length": 1048576,
        "model_type": "kimi_linear",
        "moe_intermediate_size": 64,
        "moe_renormalize": True,
        "num_attention_heads": 4,
        "num_expert_group": 1,
        "num_experts": 2,
        "num_experts_per_token": 8,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "num_shared_experts": 1,
        "output_router_logits": False,
        "pad_token_id": 163839,
        "pretraining_tp": 1,
        "q_lora_rank": None,
        "qk_head_dim": 192,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "rms_norm_eps": 1e-05,
        "routed_scaling_factor": 2.446,
        "tie_word_embeddings": False,
        "topk_group": 1,
        "v_head_dim": 16,
        "vocab_size": 128,
    },
    "Glm4MoeLiteForCausalLM": {
        "first_k_dense_replace": 0,
        "hidden_act": "silu",
        "hidden_size": 64,
        "kv_lora_rank": 16,
        "max_position_embeddings": 256,
        "model_type": "glm4_moe_lite",
        "moe_intermediate_size": 64,
        "moe_layer_freq": 1,
        "n_group": 1,
        "n_routed_experts": 2,
        "n_shared_experts": 1,
        "norm_topk_prob": True,
        "num_attention_heads": 4,
        "num_experts_per_tok": 1,
        "num_hidden_layers": 2,
        "pad_token_id": None,
        "q_lora_rank": None,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "rms_norm_eps": 1e-06,
        "rope_interleave": True,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "deepseek_yarn"},
        "rope_theta": 10000.0,
        "routed_scaling_factor": 1.0,
        "topk_group": 1,
        "torch_dtype": "bfloat16",
        "v_head_dim": 16,
        "vocab_size": 128,
    },
    "MistralLarge3ForCausalLM": {
        "rope_theta": 10000.0,
        "first_k_dense_replace": 0,
        "hidden_act": "silu",
        "hidden_size": 64,
        "kv_lora_rank": 16,
        "max_position_embeddings": 256,
        "moe_intermediate_size": 64,
        "moe_layer_freq": 1,
        "n_group": 1,
        "n_routed_experts": 2,
        "n_shared_experts": 1,
        "norm_topk_prob": True,
        "num_attention_heads": 4,
        "num_experts_per_tok": 1,
        "num_hidden_layers": 2,
        "pad_token_id": None,
        "q_lora_rank": None,
        "qk_nope_head_dim": 16,
        "qk_rope_head_dim": 8,
        "rms_norm_eps": 1e-06,
        "routed_scaling_factor": 1.0,
        "scoring_func": "sigmoid",
        "tie_word_embeddings": False,
        "topk_group": 1,
        "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16",
        "v_head_dim": 16,
        "vocab_size": 128,
    },
    "KimiVLForConditionalGeneration": {
        "model_type": "kimi_vl",
        "text_config": {
            "attention_bias": False,
            "first_k_dense_replace": 0,
            "hidden_act": "silu",
            "hidden_size": 64,
            "intermediate_size": 128,
            "kv_lora_rank": 16,
            "max_position_embeddings": 256,
            "moe_intermediate_size": 64,
            "moe_layer_freq": 1,
            "n_group": 1,
            "n_routed_experts": 2,
            "n_shared_experts": 1,
            "norm_topk_prob": True,
            "num_attention_heads": 4,
            "num_experts_per_tok": 1,
            "num_hidden_layers": 2,
            "num_key_value_heads": 4,
            "pad_token_id": None,
            "q_lora_rank": None,
            "qk_nope_head_dim": 16,
            "qk_rope_head_dim": 8,
            "rms_norm_eps": 1e-06,
            "rope_scaling": None,
            "rope_theta": 10000.0,
            "routed_scaling_factor": 1.0,
            "scoring_func": "sigmoid",
            "tie_word_embeddings": False,
            "topk_group": 1,
            "topk_method": "noaux_tc",
            "torch_dtype": "bfloat16",
            "v_head_dim": 16,
            "vocab_size": 128,
        },
    },
    "Llama4ForConditionalGeneration": {
        "model_type": "llama4",
        "text_config": {
            "attn_scale": 0.1,
            "attn_temperature_tuning": True,
            "floor_scale": 8192,
            "head_dim": 16,
            "hidden_size": 64,
            "interleave_moe_layer_step": 1,
            "intermediate_size": 128,
            "max_position_embeddings": 256,
            "model_type": "llama4_text",
            "num_attention_heads": 4,
            "num_experts_per_tok": 1,
            "num_hidden_layers": 2,
            "num_key_value_heads": 4,
            "num_local_experts": 2,
            "pad_token_id": None,
            "rms_norm_eps": 1e-05,
            "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"},
            "tie_word_embeddings": False,
            "use_qk_norm": True,
            "vocab_size": 128,
        },
    },
    "Gemma3ForConditionalGeneration": {
        "mm_tokens_per_image": 256,
        "model_type": "gemma3",
        "text_config": {
            "attention_bias": False,
            "head_dim": 16,
            "hidden_activation": "gelu_pytorch_tanh",
            "hidden_size": 64,
            "intermediate_size": 128,
            "layer_types": ["sliding_attention", "full_attention"],
            "max_position_embeddings": 256,
            "model_type": "gemma3_text",
            "num_attention_heads": 4,
            "num_hidden_layers": 2,
            "num_key_value_heads": 4,
            "pad_token_id": 0,
            "query_pre_attn_scalar": 256,
            "rms_norm_eps": 1e-06,
            "rope_parameters": {
                "full_attention": {"rope_theta": 1000000.0, "rope_type": "default"},
                "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
            },
            "sliding_window": 4096,
            "tie_word_embeddings": True,
            "use_bidirectional_attention": False,
            "vocab_size": 128,
        },
        "vision_config": {
            "hidden_size": 64,
            "image_size": 224,
            "intermediate_size": 128,
            "layer_norm_eps": 1e-06,
            "model_type": "siglip_vision_model",
            "num_attention_heads": 4,
            "num_channels": 3,
            "num_hidden_layers": 2,
            "patch_size": 16,
        },
    },
    "GptOssForCausalLM": {
        "attention_bias": True,
        "head_dim": 16,
        "hidden_act": "silu",
        "hidden_size": 64,
        "intermediate_size": 128,
        "layer_types": ["sliding_attention", "full_attention"],
        "max_position_embeddings": 256,
        "model_type": "gpt_oss",
        "num_attention_heads": 4,
        "num_experts_per_tok": 1,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "num_local_experts": 2,
        "pad_token_id": None,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "rope_theta": 150000.0,
            "rope_type": "yarn",
            "truncate": False,
        },
        "sliding_window": 128,
        "swiglu_limit": 7.0,
        "vocab_size": 128,
    },
    "Gemma4ForCausalLM": {
        "attention_bias": False,
        "enable_moe_block": False,
        "head_dim": 16,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 64,
        "hidden_size_per_layer_input": 256,
        "intermediate_size": 128,
        "layer_types": [
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "full_attention",
        ],
        "max_position_embeddings": 256,
        "model_type": "gemma4_text",
        "num_attention_heads": 4,
        "num_hidden_layers": 4,
        "num_key_value_heads": 4,
        "num_kv_shared_layers": 2,
        "pad_token_id": 0,
        "rms_norm_eps": 1e-06,
        "rope_parameters": {
            "full_attention": {
                "partial_rotary_factor": 0.25,
                "rope_theta": 1000000.0,
                "rope_type": "proportional",
            },
            "sliding_attention": {"rope_theta": 10000.0, "rope_type": "default"},
        },
        "sliding_window": 512,
        "tie_word_embeddings": True,
        "use_double_wide_mlp": False,
        "vocab_size": 128,
        "vocab_size_per_layer_input": 262144,
    },
    "FalconH1ForCausalLM": {
        "attention_bias": False,
        "attention_dropout": 0.0,
        "attention_in_multiplier": 1.0,
        "attention_out_multiplier": 1.0,
        "bos_token_id": 1,
        "embedding_multiplier": 1.0,
        "eos_token_id": 2,
        "hidden_act": "silu",
        "hidden_size": 64,
        "initializer_range": 0.02,
        "intermediate_size": 128,
        "key_multiplier": 1.0,
        "lm_head_multiplier": 1.0,
        "mamba_chunk_size": 256,
        "mamba_conv_bias": True,
        "mamba_d_conv": 4,
        "mamba_d_head": 8,
        "mamba_d_ssm": 1024,
        "mamba_d_state": 256,
        "mamba_expand": 2,
        "mamba_n_groups": 1,
        "mamba_n_heads": 128,
        "mamba_norm_before_gate": True,
        "mamba_proj_bias": False,
        "mamba_rms_norm": False,
        "max_position_embeddings": 256,
        "mlp_bias": False,
        "mlp_multipliers": [1.0, 1.0],
        "model_type": "falcon_h1",
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "num_logits_to_keep": 1,
        "pad_token_id": 0,
        "projectors_bias": False,
        "rms_norm_eps": 1e-05,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "ssm_in_multiplier": 1.0,
        "ssm_multipliers": [1.0, 1.0, 1.0, 1.0, 1.0],
        "ssm_out_multiplier": 1.0,
        "tie_word_embeddings": False,
        "vocab_size": 128,
    },
    "NemotronHForCausalLM": {
        "head_dim": 16,
        "hidden_size": 64,
        "hybrid_override_pattern": "M*",
        "intermediate_size": 128,
        "mamba_head_dim": 16,
        "mamba_num_heads": 4,
        "model_type": "nemotron_h",
        "n_groups": 1,
        "num_attention_heads": 4,
        "num_hidden_layers": 2,
        "num_key_value_heads": 2,
        "ssm_state_size": 16,
        "vocab_size": 128,
    },
    "Qwen3MoeForCausalLM": {
        "attention_bias": False,
        "hidden_size": 64,
        "max_position_embeddings": 256,
        "model_type": "qwen3_moe",
        "moe_intermediate_size": 64,
        "norm_topk_prob": False,
        "num_attention_heads": 4,
        "num_experts": 2,
        "num_experts_per_tok": 1,
        "num_hidden_layers": 2,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "vocab_size": 128,
    },
}
"""Per architecture: the smallest config.json its ``__init__`` builds from (found by building
it; two layers, Gemma-4 four), without ``architectures`` / ``quantization_config``."""

for _arch in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM"):
    # the DeepSeek-V2-Lite-shaped configs of sglang_cases.py's sgl-arch cases
    MODEL_CONFIGS[_arch] = S.arch_config(_arch, None, **S.ARCH_FIELDS[_arch])
# Llama-4's and Gemma-3's text models alone: the multimodal configs' text_config
for _arch, _mm in (
    ("Llama4ForCausalLM", "Llama4ForConditionalGeneration"),
    ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"),
):
    MODEL_CONFIGS[_arch] = copy.deepcopy(MODEL_CONFIGS[_mm]["text_config"])

CASES: list[dict[str, Any]] = []


def model_config(arch: str, qc: dict[str, Any] | None, **fields: Any) -> dict[str, Any]:
    """MODEL_CONFIGS[arch] with its architecture, dtype, quantization_config and
    ``fields`` (into ``text_config`` where the model has one)."""
    cfg = copy.deepcopy(MODEL_CONFIGS[arch])
    (cfg.get("text_config") or cfg).update(fields)
    cfg["architectures"] = [arch]
    cfg["torch_dtype"] = "bfloat16"
    if qc is not None:
        cfg["quantization_config"] = copy.deepcopy(qc)
    return cfg


def scales(prefix: str, layers: range | list[int], tails: dict[str, float]) -> dict[str, Any]:
    """``{prefix.format(i) + "." + tail: T(value)}`` for every layer i."""
    return {f"{prefix.format(i)}.{t}": T(v) for i in layers for t, v in tails.items()}


def case(
    name: str,
    group: str,
    description: str,
    config: dict[str, Any],
    tensors: dict[str, Any],
    kv: str = "fp8_e4m3",
    platform: str = "ocp",
) -> None:
    CASES.append(
        {
            "name": name,
            "group": group,
            "description": description,
            "options": S.sopts(platform=platform, kv=kv),
            "config": config,
            "hf_quant_config": None,
            "shards": [{"file": "model.safetensors", "tensors": tensors}],
            "index": None,
            "quant_param_json": None,
        }
    )


# ---- MLA: DeepSeek-V3's loader (deepseek_common/deepseek_weight_loader.py) --------------
G = "sgl-mla"
SA = "model.layers.{}.self_attn"
MLA_NAMES: dict[str, dict[str, float]] = {
    # the names each producer writes for an MLA layer (mla.md section 3)
    "llmc": {"k_scale": K, "v_scale": V},  # llm-compressor / compressed-tensors, auto-round
    "modelopt": {"k_proj.k_scale": K, "v_proj.v_scale": V},  # ModelOpt HF export
    "mqa": {"attn_mqa.k_scale": K, "attn_mqa.v_scale": V},  # SGLang's own parameter names
    "vllm": {"mla_attn.mla_attn.k_scale": K, "mla_attn.mla_attn.v_scale": V},  # vLLM's
    "kv_scale": {"kv_scale": K},  # the deprecated single scale
    "kv_a": {"kv_a_proj_with_mqa.k_scale": K},  # a scale on the latent projection
    "canonical": {"attn.k_scale": K, "attn.v_scale": V},  # vLLM's dense canonical names
}
for _names, _tails in MLA_NAMES.items():
    for _qc in QCS:
        case(
            f"sgl_mla_deepseekv3_{_names}_{_qc}",
            G,
            f"DeepseekV3ForCausalLM (q_lora_rank None): {_names} names under {_qc}",
            model_config("DeepseekV3ForCausalLM", QCS[_qc]),
            scales(SA, range(2), _tails),
        )
for _names in ("kv_a", "modelopt", "llmc"):
    case(
        f"sgl_mla_deepseekv3_q_lora_{_names}",
        G,
        f"DeepseekV3ForCausalLM with q_lora_rank (fused q_a/kv_a loading): {_names} names, fp8",
        model_config("DeepseekV3ForCausalLM", QCS["fp8"], q_lora_rank=32),
        scales(SA, range(2), MLA_NAMES[_names]),
    )
for _kv in ("nvfp4", "fp4_mx_block16", "fp8_e5m2", "bf16"):
    case(
        f"sgl_mla_deepseekv3_modelopt_{_kv}",
        G,
        f"DeepseekV3ForCausalLM, ModelOpt names, --kv-cache-dtype {_kv} (the pool SGLang "
        "picks for MLA)",
        model_config("DeepseekV3ForCausalLM", QCS["modelopt"]),
        scales(SA, range(2), MLA_NAMES["modelopt"]),
        kv=_kv,
    )
case(
    "sgl_mla_deepseekv3_llmc_fnuz",
    G,
    "DeepseekV3ForCausalLM, llm-compressor names under compressed-tensors, fnuz",
    model_config("DeepseekV3ForCausalLM", QCS["ct"]),
    scales(SA, range(2), MLA_NAMES["llmc"]),
    platform="fnuz",
)
# One real loader per group of MLA architectures (tests/parity/sglang_architectures.json:
# "mla"; groups by loader): DeepSeek-V2 (DeepSeek-V3's group), MiniCPM3, Sarvam-MLA,
# Kimi-Linear, GLM-4.7-Flash (Glm4MoeLite), Mistral-Large-3, Kimi-VL (a multimodal wrapper).
MLA_ARCHS: dict[str, tuple[str, tuple[str, ...]]] = {
    # architecture -> (attention prefix in its checkpoints, producer names)
    "DeepseekV2ForCausalLM": (SA, ("llmc", "modelopt", "mqa")),
    "MiniCPM3ForCausalLM": (SA, ("llmc", "modelopt", "mqa")),
    "SarvamMLAForCausalLM": (SA, ("llmc", "modelopt", "mqa")),
    "KimiLinearForCausalLM": (SA, ("llmc", "modelopt", "mqa")),
    "Glm4MoeLiteForCausalLM": (SA, ("llmc", "modelopt", "mqa")),
    "KimiVLForConditionalGeneration": (
        "language_model.model.layers.{}.self_attn",
        ("llmc", "modelopt", "mqa"),
    ),
    # Mistral-format checkpoints (consolidated names; models/mistral_large_3.py remaps them)
    "MistralLarge3ForCausalLM": ("layers.{}.attention", ("mistral", "modelopt")),
}
MLA_NAMES["mistral"] = {"k_fake_quantizer.qscale_act": K, "v_fake_quantizer.qscale_act": V}
for _arch, (_prefix, _conventions) in MLA_ARCHS.items():
    _short = _arch.removesuffix("ForCausalLM").removesuffix("ForConditionalGeneration").lower()
    for _names in _conventions:
        case(
            f"sgl_mla_{_short}_{_names}",
            G,
            f"{_arch}: {_names} names under fp8",
            model_config(_arch, QCS["fp8"]),
            scales(_prefix, range(2), MLA_NAMES[_names]),
        )

# ---- multimodal wrappers, hybrids, MoE, KV sharing, sliding windows with sinks ------------
G = "sgl-model"
DENSE_NAMES: dict[str, tuple[str, dict[str, float]]] = {
    # producer -> (quant method, names under the attention prefix)
    "llmc": ("ct", {"k_scale": K, "v_scale": V}),
    "modelopt": ("modelopt", {"k_proj.k_scale": K, "v_proj.v_scale": V}),
    "quark": ("quark", {"k_proj.output_scale": K, "v_proj.output_scale": V}),
    "canonical": ("fp8", {"attn.k_scale": K, "attn.v_scale": V}),
}
LAYOUTS = {
    # checkpoint layouts of a multimodal model's language model: transformers < 4.52 saved
    # language_model.model.*, later versions save model.language_model.*
    "lm_model": "language_model.model.layers.{}.self_attn",
    "model_lm": "model.language_model.layers.{}.self_attn",
}
for _arch in ("Llama4ForConditionalGeneration", "Gemma3ForConditionalGeneration"):
    for _layout, _prefix in LAYOUTS.items():
        for _names in ("llmc", "modelopt", "quark", "canonical"):
            _qc, _tails = DENSE_NAMES[_names]
            case(
                f"sgl_mm_{_arch.removesuffix('ForConditionalGeneration').lower()}_{_layout}_{_names}",
                G,
                f"{_arch}, checkpoint layout {_prefix.split('.layers')[0]}: {_names} names "
                f"under {_qc}",
                model_config(_arch, QCS[_qc]),
                scales(_prefix, range(2), _tails),
            )
_SINGLE = {
    # architecture -> (attention prefix in its checkpoints, layers, what it exercises)
    "Llama4ForCausalLM": (SA, 2, "Llama-4 text model (no KV method on its attention)"),
    "Qwen3MoeForCausalLM": (SA, 2, "Qwen3-MoE (no KV method on its attention)"),
    "Gemma3ForCausalLM": (SA, 2, "Gemma-3: a sliding-window and a global layer"),
    "GptOssForCausalLM": (SA, 2, "gpt-oss: sinks, sliding and full layers"),
    "FalconH1ForCausalLM": ("model.layers.{}.self_attn", 2, "Falcon-H1 hybrid"),
    "NemotronHForCausalLM": ("backbone.layers.{}.mixer", [1], "NemotronH hybrid (M*)"),
}
for _arch, (_prefix, _layers, _what) in _SINGLE.items():
    for _names in ("llmc", "modelopt", "quark"):
        _qc, _tails = DENSE_NAMES[_names]
        case(
            f"sgl_model_{_arch.removesuffix('ForCausalLM').lower()}_{_names}",
            G,
            f"{_what}: {_names} names under {_qc}",
            model_config(_arch, QCS[_qc]),
            scales(_prefix, range(_layers) if isinstance(_layers, int) else _layers, _tails),
        )
for _names in ("llmc", "modelopt"):
    _qc, _tails = DENSE_NAMES[_names]
    case(
        f"sgl_model_gemma4_kv_shared_{_names}",
        G,
        f"Gemma-4 with KV sharing (layers 2, 3 read layers 0, 1's cache): {_names} names "
        f"under {_qc}, other values on the sharing layers",
        model_config("Gemma4ForCausalLM", QCS[_qc]),
        {
            **scales(SA, range(2), _tails),
            **scales(SA, range(2, 4), {t: v * 2 for t, v in _tails.items()}),
        },
    )

CASES_BY_NAME: dict[str, dict[str, Any]] = {c["name"]: c for c in CASES}
if len(CASES_BY_NAME) != len(CASES):
    raise RuntimeError("duplicate case names")
