"""The architecture-parity case catalogue (tests/parity/vllm_arch_oracle.py): synthetic
checkpoints of architectures other than Llama, as plain data.

Same case format as tests/parity/cases.py (``write_case`` there writes them), with extra
options that pick a GPU-dependent engine choice:

    "options": {"platform", "kv_cache_dtype", "model_dtype",
                "device_family"?: CUDA capability family (default "90"; "100" = SM10x),
                "mla_backend"?: the dense MLA backend name (default FLASHMLA),
                "mla_sparse_backend"?: the sparse one (default FLASHMLA_SPARSE),
                "mla_disable"?: "1" for VLLM_MLA_DISABLE=1}

Every layer carries the same scale values as the Llama catalogue (exact in bf16 and fp16),
so a loaded value is recognisable: k = 3/128, v = 1/64, q = 1/8, prob = 1/16.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["CASES", "CASES_BY_NAME", "PRODUCERS"]


def _cases_module() -> Any:
    name = "kvscale_parity_cases"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cases.py"))
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


_c = _cases_module()
T = _c.T
K, V, Q, PROB = _c.K, _c.V, _c.Q, _c.PROB
FP8_QC = _c.FP8_QC
MODELOPT_QC = _c.MODELOPT_QC
MODELOPT_LEGACY_HF_QUANT = _c.MODELOPT_LEGACY_HF_QUANT
ct_qc = _c.ct_qc
quark_qc = _c.quark_qc
opts = _c.opts

MODELOPT_NVFP4_QC = {
    "quant_method": "modelopt",
    "quant_algo": "NVFP4",
    "group_size": 16,
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False},
    "ignore": ["lm_head"],
    "producer": {"name": "modelopt", "version": "0.37.0"},
}
MODELOPT_NVFP4_LEGACY_HF_QUANT = {
    "producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {
        "quant_algo": "NVFP4",
        "kv_cache_quant_algo": "FP8",
        "group_size": 16,
        "exclude_modules": ["lm_head"],
    },
}
MODELOPT_MIXED_QC = {
    "quant_method": "modelopt",
    "quant_algo": "MIXED_PRECISION",
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False},
    "ignore": ["lm_head"],
    "quantized_layers": {
        "model.layers.0.mlp.gate_up_proj": {"quant_algo": "FP8"},
        "model.layers.1.mlp.gate_up_proj": {"quant_algo": "NVFP4", "group_size": 16},
    },
    "producer": {"name": "modelopt", "version": "0.37.0"},
}

# ---- checkpoint naming conventions of the producers (suffixes after the attention
# module of the checkpoint, e.g. model.layers.N.self_attn.) -----------------------------
PRODUCERS: dict[str, dict[str, Any]] = {
    # llm-compressor / compressed-tensors, auto-round (LLMC export)
    "ct": {"k_scale": K, "v_scale": V, "q_scale": Q},
    # NVIDIA ModelOpt HF export (unified_export_hf): on the k_proj / v_proj quantizers
    "modelopt": {"k_proj.k_scale": K, "v_proj.v_scale": V},
    # vLLM's own parameter path of MLA (what a vLLM state dict would hold)
    "vllm_mla": {
        "mla_attn.mla_attn.k_scale": K,
        "mla_attn.mla_attn.v_scale": V,
        "mla_attn.mla_attn.q_scale": Q,
        "mla_attn.mla_attn.prob_scale": PROB,
    },
    # the engine's attention layer name (`...self_attn.attn`)
    "attn": {"attn.k_scale": K, "attn.v_scale": V},
    # deprecated fused scale
    "kv_scale": {"kv_scale": K},
    # a scale on the latent projection
    "kv_a_proj": {"kv_a_proj_with_mqa.k_scale": K, "kv_a_proj_with_mqa.v_scale": V},
    # SGLang's MLA parameter path
    "sglang_mla": {"attn_mqa.k_scale": K, "attn_mqa.v_scale": V},
    # Quark / old compressed-tensors output scales
    "output_scale": {"k_proj.output_scale": K, "v_proj.output_scale": V},
    # Quark / fp8 attention-probability scale
    "prob": {"prob_output_scale": PROB},
}


def attn_tensors(
    layers: list[int] | range, producer: str, prefix: str = "model.layers.{i}.self_attn"
) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for i in layers:
        for suffix, value in PRODUCERS[producer].items():
            out[f"{prefix.format(i=i)}.{suffix}"] = T(value)
    return out


def one_file(tensors: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"file": "model.safetensors", "tensors": tensors}]


CASES: list[dict[str, Any]] = []


def case(
    name: str,
    group: str,
    description: str,
    *,
    config: dict[str, Any],
    tensors: dict[str, dict[str, Any]],
    options: dict[str, str] | None = None,
    hf_quant_config: dict[str, Any] | None = None,
) -> None:
    if any(c["name"] == name for c in CASES):
        raise ValueError(f"duplicate case {name}")
    CASES.append(
        {
            "name": name,
            "group": group,
            "description": description,
            "options": dict(options or opts()),
            "config": config,
            "hf_quant_config": hf_quant_config,
            "shards": one_file(tensors),
            "index": None,
        }
    )


def with_qc(cfg: dict[str, Any], qc: dict[str, Any] | None) -> dict[str, Any]:
    out = copy.deepcopy(cfg)
    if qc is not None:
        out["quantization_config"] = copy.deepcopy(qc)
    return out


# ======================================================================================
# MLA: DeepSeek-V2/V3 family
# ======================================================================================


def deepseek_config(
    arch: str = "DeepseekV3ForCausalLM",
    model_type: str = "deepseek_v3",
    *,
    q_lora_rank: int | None = 24,
    layers: int = 2,
    torch_dtype: str = "bfloat16",
    **extra: Any,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": 64,
        "intermediate_size": 128,
        "moe_intermediate_size": 32,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "kv_lora_rank": 32,
        "q_lora_rank": q_lora_rank,
        "qk_rope_head_dim": 16,
        "qk_nope_head_dim": 16,
        "v_head_dim": 16,
        "n_routed_experts": 4,
        "n_shared_experts": 1,
        "num_experts_per_tok": 2,
        "first_k_dense_replace": layers,
        "moe_layer_freq": 1,
        "n_group": 1,
        "topk_group": 1,
        "vocab_size": 128,
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "tie_word_embeddings": False,
        "torch_dtype": torch_dtype,
    }
    cfg.update(extra)
    return cfg


DSV3 = deepseek_config()
DSV2_LITE = deepseek_config("DeepseekV2ForCausalLM", "deepseek_v2", q_lora_rank=None)
L2 = range(2)

# quant configs: (key, config.json quantization_config, hf_quant_config.json)
QUANT_CONFIGS: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None]] = [
    ("modelopt", MODELOPT_QC, None),
    ("modelopt_legacy", None, MODELOPT_LEGACY_HF_QUANT),
    ("nvfp4", MODELOPT_NVFP4_QC, None),
    ("nvfp4_legacy", None, MODELOPT_NVFP4_LEGACY_HF_QUANT),
    ("mixed", MODELOPT_MIXED_QC, None),
    ("fp8", FP8_QC, None),
    ("ct", ct_qc("tensor"), None),
    ("quark", quark_qc(), None),
    ("none", None, None),
]


def matrix(
    tag: str,
    group: str,
    cfg: dict[str, Any],
    producers: list[str],
    quant: list[str],
    *,
    prefix: str = "model.layers.{i}.self_attn",
    layers: list[int] | range = L2,
    options: dict[str, str] | None = None,
    what: str = "",
) -> None:
    for qkey, qc, hfq in QUANT_CONFIGS:
        if qkey not in quant:
            continue
        for producer in producers:
            case(
                f"{tag}_{qkey}_{producer}",
                group,
                f"{cfg['architectures'][0]}{what}, {qkey} quantization, {producer} names",
                config=with_qc(cfg, qc),
                hf_quant_config=hfq,
                tensors=attn_tensors(layers, producer, prefix),
                options=options,
            )


ALL_Q = [q[0] for q in QUANT_CONFIGS]
ALL_P = list(PRODUCERS)
# the producers that matter per quant method: ModelOpt exports on k_proj/v_proj; CT and
# auto-round on the attention module; vLLM's own state-dict path; Quark output scales
MAIN_P = ["ct", "modelopt", "vllm_mla", "output_scale"]

G = "mla-deepseek"
matrix("dsv3", G, DSV3, ALL_P, ALL_Q)
matrix("dsv2lite", G, DSV2_LITE, ALL_P, ["modelopt", "fp8"])
for kv in ("auto", "fp8_e4m3", "fp8_e5m2"):
    matrix(
        f"dsv3_kv{kv}",
        G,
        DSV3,
        ["modelopt", "vllm_mla"],
        ["modelopt", "ct"],
        options=opts(kv=kv),
        what=f" --kv-cache-dtype {kv}",
    )
matrix(
    "dsv3_fnuz",
    G,
    DSV3,
    ["modelopt", "vllm_mla"],
    ["modelopt"],
    options=opts("fnuz"),
    what=" on ROCm (fnuz)",
)
matrix(
    "dsv3_fp16",
    G,
    deepseek_config(torch_dtype="float16"),
    ["vllm_mla"],
    ["modelopt"],
    options=opts(model="float16"),
    what=" float16",
)
matrix(
    "dsv3_mladisable",
    G,
    DSV3,
    ["ct", "modelopt", "vllm_mla"],
    ["modelopt", "fp8", "ct"],
    options={**opts(), "mla_disable": "1"},
    what=" with VLLM_MLA_DISABLE=1",
)
matrix(
    "deepseek_mha",
    G,
    deepseek_config("DeepseekForCausalLM", "deepseek", qk_nope_head_dim=0, qk_rope_head_dim=0),
    ["ct", "modelopt"],
    ["modelopt", "fp8"],
    what=" (model_type deepseek: MHA)",
)
matrix(
    "kimi_k2",
    G,
    deepseek_config(model_type="kimi_k2"),
    ["ct", "modelopt", "vllm_mla"],
    ["modelopt"],
    what=" (Kimi-K2, model_type kimi_k2)",
)

G = "mla-dsa"
DSV32 = deepseek_config(
    "DeepseekV32ForCausalLM", "deepseek_v32", index_topk=8, index_n_heads=2, index_head_dim=16
)
PRODUCERS["vllm_dsa"] = {"k_scale": K, "v_scale": V, "q_scale": Q, "prob_scale": PROB}
matrix("dsv32", G, DSV32, ALL_P + ["vllm_dsa"], ["modelopt", "nvfp4", "fp8", "ct", "none"])
for kv in ("auto", "fp8_e4m3", "bfloat16"):
    matrix(
        f"dsv32_kv{kv}",
        G,
        DSV32,
        ["modelopt", "vllm_dsa"],
        ["modelopt"],
        options=opts(kv=kv),
        what=f" --kv-cache-dtype {kv}",
    )
matrix(
    "dsv32_fnuz",
    G,
    DSV32,
    ["modelopt", "vllm_dsa"],
    ["modelopt", "fp8"],
    options=opts("fnuz"),
    what=" on ROCm (fnuz: models/deepseek_v32/amd)",
)
matrix(
    "dsv32_densebackend",
    G,
    DSV32,
    ["modelopt", "vllm_dsa"],
    ["modelopt"],
    options={**opts(), "mla_sparse_backend": "FLASHINFER_MLA_SPARSE"},
    what=" on FLASHINFER_MLA_SPARSE (standard fp8 cache)",
)
GLM_DSA = deepseek_config(
    "GlmMoeDsaForCausalLM", "glm_moe_dsa", index_topk=8, index_n_heads=2, index_head_dim=16
)
matrix(
    "glm_moe_dsa_sm100",
    G,
    GLM_DSA,
    ["modelopt", "vllm_dsa"],
    ["modelopt", "none"],
    options={**opts(kv="auto"), "device_family": "100"},
    what=" on SM10x, --kv-cache-dtype auto",
)
matrix(
    "glm_moe_dsa",
    G,
    deepseek_config(
        "GlmMoeDsaForCausalLM", "glm_moe_dsa", index_topk=8, index_n_heads=2, index_head_dim=16
    ),
    ["modelopt", "vllm_dsa"],
    ["modelopt", "fp8"],
)

G = "mla-other"
matrix(
    "glm4lite",
    G,
    deepseek_config("Glm4MoeLiteForCausalLM", "glm4_moe_lite"),
    MAIN_P,
    ["modelopt", "fp8", "ct"],
)
MISTRAL_L3 = deepseek_config("MistralLarge3ForCausalLM", "deepseek_v3")
matrix("mistral_large3", G, MISTRAL_L3, MAIN_P, ["modelopt", "fp8", "ct"])
PRODUCERS["mistral_native"] = {
    "k_fake_quantizer.qscale_act": K,
    "v_fake_quantizer.qscale_act": V,
}
matrix(
    "mistral_large3_native",
    G,
    MISTRAL_L3,
    ["mistral_native"],
    ["fp8"],
    prefix="layers.{i}.attention",
    what=" (consolidated/Mistral names)",
)
KIMI_K25 = {
    "architectures": ["KimiK25ForConditionalGeneration"],
    "model_type": "kimi_k25",
    "image_token_id": 1,
    "text_config": deepseek_config(model_type="kimi_k2"),
    "vision_config": {"num_attention_heads": 4, "hidden_size": 32},
    "torch_dtype": "bfloat16",
}
matrix(
    "kimi_k25",
    G,
    KIMI_K25,
    MAIN_P,
    ["modelopt", "ct"],
    prefix="language_model.model.layers.{i}.self_attn",
)
matrix(
    "kimi_k25_legacy",
    G,
    KIMI_K25,
    ["modelopt", "vllm_mla"],
    ["modelopt"],
    prefix="language_model.layers.{i}.self_attn",
    what=" (legacy language_model.layers.)",
)
BAILING_V3 = deepseek_config(
    "BailingMoeV3ForCausalLM",
    "bailing_hybrid",
    layer_group_size=2,
    num_experts=4,
    first_k_dense_replace=2,
    moe_shared_expert_intermediate_size=32,
    num_shared_experts=1,
)
# layer 0 is a KDA (linear attention) layer, layer 1 MLA (_is_kda_layer, group size 2)
matrix(
    "bailing_v3",
    G,
    BAILING_V3,
    ALL_P,
    ["modelopt", "modelopt_legacy", "nvfp4", "fp8", "ct", "none"],
)
matrix(
    "bailing_v3_attention",
    G,
    BAILING_V3,
    ["ct", "modelopt", "vllm_mla"],
    ["modelopt"],
    prefix="model.layers.{i}.attention",
    what=" (Ling names: .attention.)",
)
for kv in ("auto", "fp8_e4m3"):
    matrix(
        f"bailing_v3_kv{kv}",
        G,
        BAILING_V3,
        ["modelopt"],
        ["modelopt"],
        options=opts(kv=kv),
        what=f" --kv-cache-dtype {kv}",
    )
matrix(
    "bailing_v3_fnuz",
    G,
    BAILING_V3,
    ["modelopt"],
    ["modelopt"],
    options=opts("fnuz"),
    what=" on ROCm (fnuz)",
)
LONGCAT = deepseek_config(
    "LongcatFlashForCausalLM",
    "longcat_flash",
    num_layers=2,
    moe_topk=2,
    mla_scale_q_lora=False,
    mla_scale_kv_lora=False,
)
matrix(
    "longcat", G, LONGCAT, MAIN_P, ["modelopt", "fp8", "ct"], prefix="model.layers.{i}.self_attn.0"
)
SARVAM = deepseek_config(
    "SarvamMLAForCausalLM",
    "sarvam_mla",
    num_experts=4,
    num_experts_per_tok=2,
    moe_shared_expert_intermediate_size=32,
)
matrix("sarvam", G, SARVAM, MAIN_P, ["modelopt", "fp8", "ct", "none"])


MINICPM3 = {
    "architectures": ["MiniCPM3ForCausalLM"],
    "model_type": "minicpm3",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 16,
    "v_head_dim": 16,
    "q_lora_rank": 24,
    "kv_lora_rank": 32,
    "vocab_size": 128,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "scale_emb": 12,
    "scale_depth": 1.4,
    "dim_model_base": 64,
    "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
matrix(
    "minicpm3",
    "mla-config-attention",
    MINICPM3,
    ["ct", "modelopt", "kv_scale", "attn", "output_scale"],
    ["modelopt", "fp8", "ct", "quark", "none"],
    what=" (MLA-shaped config, plain Attention)",
)


# ======================================================================================
# Hybrids, MoE, multimodal wrappers, KV sharing (non-MLA architecture classes)
# ======================================================================================

LLAMA_P = ["ct", "modelopt", "kv_scale", "output_scale", "attn"]

JAMBA = {
    "architectures": ["JambaForCausalLM"],
    "model_type": "jamba",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "attn_layer_period": 2,
    "attn_layer_offset": 1,
    "expert_layer_period": 2,
    "expert_layer_offset": 1,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "mamba_d_state": 16,
    "mamba_d_conv": 4,
    "mamba_expand": 2,
    "mamba_dt_rank": 8,
    "mamba_conv_bias": True,
    "mamba_proj_bias": False,
    "vocab_size": 128,
    "rms_norm_eps": 1e-6,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
# layer 1 is the attention layer (attn_layer_period 2, offset 1); layer 0 Mamba
matrix(
    "jamba",
    "hybrid-jamba",
    JAMBA,
    LLAMA_P + ["prob"],
    ["modelopt", "fp8", "ct", "quark", "none"],
    layers=[1],
)


def llama_like_config(arch: str, model_type: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "model_type": model_type,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 8,
        "num_key_value_heads": 2,
        "head_dim": 8,
        "vocab_size": 128,
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0},
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }
    cfg.update(extra)
    return cfg


Q_MAIN = ["modelopt", "fp8", "ct", "quark", "none"]
G = "moe"
matrix(
    "mixtral",
    G,
    llama_like_config("MixtralForCausalLM", "mixtral", num_local_experts=4, num_experts_per_tok=2),
    LLAMA_P + ["prob"],
    Q_MAIN,
)
matrix(
    "qwen3_moe",
    G,
    llama_like_config(
        "Qwen3MoeForCausalLM",
        "qwen3_moe",
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        decoder_sparse_step=1,
        mlp_only_layers=[],
    ),
    LLAMA_P + ["prob"],
    Q_MAIN,
)
G = "hybrid"
# layer 0 is a short-convolution layer, layer 1 full attention
matrix(
    "lfm2",
    G,
    llama_like_config(
        "Lfm2ForCausalLM",
        "lfm2",
        norm_eps=1e-5,
        conv_L_cache=3,
        conv_dim=64,
        conv_dim_out=64,
        conv_bias=False,
        block_dim=64,
        block_ff_dim=128,
        block_multiple_of=16,
        block_ffn_dim_multiplier=1.0,
        block_auto_adjust_ff_dim=False,
        layer_types=["conv", "full_attention"],
    ),
    LLAMA_P + ["prob"],
    Q_MAIN,
    layers=[1],
)


G = "reference-llama"
LLAMA = llama_like_config("LlamaForCausalLM", "llama")
matrix("llama", G, LLAMA, LLAMA_P + ["prob"], Q_MAIN)

G = "multimodal"
MISTRAL3 = {
    "architectures": ["Mistral3ForConditionalGeneration"],
    "model_type": "mistral3",
    "projector_hidden_act": "gelu",
    "spatial_merge_size": 2,
    "multimodal_projector_bias": False,
    "image_token_index": 10,
    "vision_config": {
        "hidden_size": 32,
        "patch_size": 14,
        "hidden_act": "silu",
        "num_attention_heads": 2,
    },
    # no "architectures" in text_config (as in the released checkpoints): vLLM takes
    # transformers' causal-LM class for model_type "mistral"
    "text_config": {
        k: v
        for k, v in llama_like_config("x", "mistral").items()
        if k not in ("architectures", "torch_dtype")
    },
    "torch_dtype": "bfloat16",
}
# transformers >= 4.52 save_pretrained names (model.language_model.*) and the older ones
# (language_model.model.*)
matrix(
    "mistral3",
    G,
    MISTRAL3,
    LLAMA_P + ["prob"],
    ["modelopt", "fp8", "ct"],
    prefix="model.language_model.layers.{i}.self_attn",
)
matrix(
    "mistral3_old",
    G,
    MISTRAL3,
    ["ct", "modelopt"],
    ["modelopt", "fp8", "ct"],
    prefix="language_model.model.layers.{i}.self_attn",
    what=" (pre-4.52 names)",
)


G = "kv-sharing"
GEMMA3N = llama_like_config(
    "Gemma3nForCausalLM",
    "gemma3n_text",
    num_hidden_layers=4,
    num_kv_shared_layers=2,
    intermediate_size=[128, 128, 128, 128],
    activation_sparsity_pattern=[0.0] * 4,
    layer_types=["sliding_attention", "full_attention"] * 2,
    sliding_window=64,
    rope_parameters={
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
    },
    altup_active_idx=0,
    altup_correct_scale=True,
    altup_num_inputs=4,
    altup_coef_clip=120.0,
    laurel_rank=8,
    hidden_size_per_layer_input=16,
    vocab_size_per_layer_input=128,
    hidden_activation="gelu_pytorch_tanh",
    final_logit_softcapping=30.0,
    attention_bias=False,
)
# layers 2 and 3 share the KV caches of layers 0 and 1 (num_kv_shared_layers 2)
matrix(
    "gemma3n",
    G,
    GEMMA3N,
    ["ct", "modelopt", "kv_scale"],
    ["modelopt", "fp8", "ct"],
    layers=range(4),
)


G = "moe-sinks"
GPT_OSS = llama_like_config(
    "GptOssForCausalLM",
    "gpt_oss",
    head_dim=8,
    num_local_experts=4,
    num_experts_per_tok=2,
    sliding_window=128,
    layer_types=["sliding_attention", "full_attention"],
    rope_parameters={
        "rope_type": "yarn",
        "rope_theta": 150000.0,
        "factor": 32.0,
        "original_max_position_embeddings": 4096,
        "beta_fast": 32.0,
        "beta_slow": 1.0,
    },
)
# layer 0 sliding window (even layers) with attention sinks, layer 1 full attention
# (Quark: GptOssModel._load_weights_quark reads the experts' quant methods: not modelled)
matrix("gpt_oss", G, GPT_OSS, LLAMA_P + ["prob"], ["modelopt", "fp8", "ct", "none"])

CASES_BY_NAME = {c["name"]: c for c in CASES}
