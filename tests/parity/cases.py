"""The vLLM-parity case catalogue: small synthetic checkpoints, as plain data.

Every case is a JSON-serialisable dict:

    {
      "name": "base_plain_kv",                 # unique, used as the pytest id
      "group": "base-naming",                  # for the summary only
      "description": "...",
      "options": {"platform": "ocp" | "fnuz", "kv_cache_dtype": "...", "model_dtype": "..."},
      "config": {...},                          # config.json, written as is
      "hf_quant_config": None | {...},          # hf_quant_config.json (legacy ModelOpt)
      "shards": [{"file": "model.safetensors", "tensors": {name: TENSOR, ...}}, ...],
      "index": None | {"omit": [file, ...]},    # model.safetensors.index.json
    }

    TENSOR = {"dtype": "F32" | "F16" | "BF16" | "F64" | "F8_E4M3", "shape": [...],
              "values": [float | "nan" | "inf" | "-inf", ...]}     # row-major
           | {"dtype": ..., "shape": [...], "bits": [int, ...]}    # raw IEEE bit patterns

`write_case(case, directory)` materialises a case with torch + `safetensors.torch.save_file`.
Values go float64 -> target dtype through torch (exact for every value below that is
representable in the target dtype); `bits` give exact control (NaN payloads, -0.0, ...).
The index, when present, maps every tensor to its shard; files named in `omit` are left
out of the index (vLLM then never reads them).

Both the oracle (tests/parity/vllm_oracle.py) and the CI test (tests/test_vllm_parity.py)
write the checkpoints with this one writer, so they always look at identical bytes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

__all__ = ["CASES", "CASES_BY_NAME", "write_case", "engine_layer_names"]

# --------------------------------------------------------------------------------------
# building blocks (plain data)
# --------------------------------------------------------------------------------------

NAN = "nan"
INF = "inf"
NINF = "-inf"

# Values exactly representable in bf16 AND fp16 (and fp32): the engine keeps them as is.
K = 0.0234375  # 3/128
V = 0.015625  # 1/64
Q = 0.125
PROB = 0.0625
K2 = 0.046875  # 3/64
V2 = 0.03125

FP8_QC = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}

MODELOPT_QC = {
    "quant_method": "modelopt",
    "quant_algo": "FP8",
    "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False},
    "ignore": ["lm_head"],
    "producer": {"name": "modelopt", "version": "0.37.0"},
}

MODELOPT_LEGACY_HF_QUANT = {
    "producer": {"name": "modelopt", "version": "0.29.0"},
    "quantization": {
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "FP8",
        "exclude_modules": ["lm_head"],
    },
}

_QUARK_FP8_TENSOR = {
    "dtype": "fp8_e4m3",
    "qscheme": "per_tensor",
    "is_dynamic": False,
    "symmetric": True,
    "ch_axis": None,
    "group_size": None,
    "round_method": "half_even",
    "scale_type": "float",
    "observer_cls": "PerTensorMinMaxObserver",
}


def quark_qc(
    kv_output: dict[str, Any] | None = None,
    kv_group: list[str] | None = None,
    layer_keys: tuple[str, ...] = ("*k_proj", "*v_proj"),
) -> dict[str, Any]:
    kv_output = _QUARK_FP8_TENSOR if kv_output is None else kv_output
    kv_group = ["*k_proj", "*v_proj"] if kv_group is None else kv_group
    layer_cfg = {
        "weight": _QUARK_FP8_TENSOR,
        "input_tensors": _QUARK_FP8_TENSOR,
        "output_tensors": kv_output,
        "bias": None,
    }
    return {
        "quant_method": "quark",
        "export": {
            "kv_cache_group": kv_group,
            "pack_method": "reorder",
            "weight_format": "real_quantized",
        },
        "global_quant_config": {
            "weight": _QUARK_FP8_TENSOR,
            "input_tensors": _QUARK_FP8_TENSOR,
            "output_tensors": None,
            "bias": None,
        },
        "layer_quant_config": {k: copy.deepcopy(layer_cfg) for k in layer_keys},
        "layer_type_quant_config": {},
        "exclude": ["lm_head"],
        "algo_config": None,
        "quant_mode": "eager_mode",
        "version": "0.9",
    }


_CT_GROUPS = {
    "group_0": {
        "targets": ["Linear"],
        "weights": {
            "num_bits": 8,
            "type": "float",
            "symmetric": True,
            "strategy": "tensor",
            "dynamic": False,
        },
        "input_activations": {
            "num_bits": 8,
            "type": "float",
            "symmetric": True,
            "strategy": "tensor",
            "dynamic": False,
        },
        "output_activations": None,
    }
}


def ct_qc(
    strategy: Any = "tensor",
    *,
    groups: bool = True,
    scheme: Any = "default",
    **scheme_overrides: Any,
) -> dict[str, Any]:
    """compressed-tensors quantization_config.

    scheme=None writes `"kv_cache_scheme": null`; a field set to _DROP is left out."""
    if scheme == "default":
        scheme = {
            "num_bits": 8,
            "type": "float",
            "symmetric": True,
            "dynamic": False,
            "strategy": strategy,
        }
        scheme.update(scheme_overrides)
        scheme = {k: v for k, v in scheme.items() if v is not _DROP}
    qc: dict[str, Any] = {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "quantization_status": "compressed",
        "global_compression_ratio": None,
        "ignore": ["lm_head"],
        "kv_cache_scheme": scheme,
    }
    if groups:
        qc["config_groups"] = copy.deepcopy(_CT_GROUPS)
    return qc


class _Drop:
    def __repr__(self) -> str:
        return "_DROP"


_DROP = _Drop()


def llama_config(
    qc: dict[str, Any] | None = None,
    *,
    layers: int = 2,
    heads: int = 8,
    kv_heads: int = 2,
    torch_dtype: str = "bfloat16",
    arch: str = "LlamaForCausalLM",
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": [arch],
        "model_type": "llama",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": 64 // heads,
        "vocab_size": 128,
        "max_position_embeddings": 256,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "torch_dtype": torch_dtype,
    }
    if arch == "Gemma3ForCausalLM":
        cfg.update(
            {
                "model_type": "gemma3_text",
                "query_pre_attn_scalar": 8,
                "sliding_window": 128,
                "final_logit_softcapping": None,
                "attn_logit_softcapping": None,
                "hidden_activation": "gelu_pytorch_tanh",
            }
        )
    if qc is not None:
        cfg["quantization_config"] = copy.deepcopy(qc)
    return cfg


def nemotron_h_config(
    qc: dict[str, Any] | None = None,
    *,
    pattern: str = "M*-*",
    heads: int = 8,
    kv_heads: int = 2,
    torch_dtype: str = "bfloat16",
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": len(pattern),
        "hybrid_override_pattern": pattern,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": 64 // heads,
        "vocab_size": 128,
        "mamba_num_heads": 4,
        "mamba_head_dim": 16,
        "n_groups": 1,
        "ssm_state_size": 16,
        "conv_kernel": 4,
        "expand": 1,
        "layer_norm_epsilon": 1e-5,
        "tie_word_embeddings": False,
        "torch_dtype": torch_dtype,
    }
    if qc is not None:
        cfg["quantization_config"] = copy.deepcopy(qc)
    return cfg


def T(value: Any, dtype: str = "F32", shape: tuple[int, ...] | list[int] = ()) -> dict[str, Any]:
    """A tensor filled with `value` (a scalar, or a flat list of len prod(shape))."""
    n = 1
    for s in shape:
        n *= s
    values = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(values) != n:
        raise ValueError(f"{len(values)} values for shape {list(shape)}")
    return {"dtype": dtype, "shape": list(shape), "values": values}


def B(bits: int, dtype: str, shape: tuple[int, ...] = ()) -> dict[str, Any]:
    """A tensor given by a raw bit pattern (repeated)."""
    n = 1
    for s in shape:
        n *= s
    return {"dtype": dtype, "shape": list(shape), "bits": [bits] * n}


def P(i: int) -> str:
    return f"model.layers.{i}.self_attn"


def per_layer(layers: int, **suffix_tensors: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{"k_scale": T(..)} -> {"model.layers.N.self_attn.k_scale": T(..) for every layer}.

    Keyword names use "__" for "." (k_proj__k_scale -> k_proj.k_scale)."""
    out: dict[str, dict[str, Any]] = {}
    for i in range(layers):
        for suffix, t in suffix_tensors.items():
            out[f"{P(i)}.{suffix.replace('__', '.')}"] = t
    return out


def one_file(
    tensors: dict[str, dict[str, Any]], file: str = "model.safetensors"
) -> list[dict[str, Any]]:
    return [{"file": file, "tensors": tensors}]


OCP_FP8_BF16 = {"platform": "ocp", "kv_cache_dtype": "fp8", "model_dtype": "bfloat16"}


def opts(platform: str = "ocp", kv: str = "fp8", model: str = "bfloat16") -> dict[str, str]:
    return {"platform": platform, "kv_cache_dtype": kv, "model_dtype": model}


# --------------------------------------------------------------------------------------
# the catalogue
# --------------------------------------------------------------------------------------

CASES: list[dict[str, Any]] = []


def case(
    name: str,
    group: str,
    description: str,
    *,
    config: dict[str, Any],
    tensors: dict[str, dict[str, Any]] | None = None,
    shards: list[dict[str, Any]] | None = None,
    options: dict[str, str] | None = None,
    hf_quant_config: dict[str, Any] | None = None,
    index: dict[str, Any] | None = None,
) -> None:
    if tensors is not None and shards is not None:
        raise ValueError(f"{name}: give tensors or shards, not both")
    CASES.append(
        {
            "name": name,
            "group": group,
            "description": description,
            "options": dict(options or OCP_FP8_BF16),
            "config": config,
            "hf_quant_config": hf_quant_config,
            "shards": shards if shards is not None else one_file(tensors or {}),
            "index": index,
        }
    )


L2 = 2
FP8 = llama_config(FP8_QC)

# ---- base path: naming conventions ---------------------------------------------------
G = "base-naming"
case(
    "base_plain_kv",
    G,
    "P.k_scale / P.v_scale (AutoFP8 / llm-compressor naming)",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "base_plain_kvq",
    G,
    "P.k_scale, P.v_scale, P.q_scale",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q)),
)
case(
    "base_modelopt_proj_names_under_fp8",
    G,
    "ModelOpt P.k_proj.k_scale / P.v_proj.v_scale, quant_method fp8",
    config=FP8,
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "base_legacy_kv_scale",
    G,
    "deprecated fused P.kv_scale -> k, v duplicated",
    config=FP8,
    tensors=per_layer(L2, kv_scale=T(K)),
)
case(
    "base_qkv_proj_names",
    G,
    "P.qkv_proj.k_scale / P.qkv_proj.v_scale",
    config=FP8,
    tensors=per_layer(L2, qkv_proj__k_scale=T(K), qkv_proj__v_scale=T(V)),
)
case(
    "base_qkqkv_proj_names",
    G,
    "P.qkqkv_proj.k_scale / P.qkqkv_proj.v_scale",
    config=FP8,
    tensors=per_layer(L2, qkqkv_proj__k_scale=T(K), qkqkv_proj__v_scale=T(V)),
)
case(
    "base_output_scale_fp8",
    G,
    "Quark/old-CT *_proj.output_scale + prob_output_scale under quant_method fp8",
    config=FP8,
    tensors=per_layer(
        L2,
        k_proj__output_scale=T(K),
        v_proj__output_scale=T(V),
        q_proj__output_scale=T(Q),
        prob_output_scale=T(PROB),
    ),
)
case(
    "base_output_scale_quark_fp8kv",
    G,
    "Quark *_proj.output_scale under quant_method quark, --kv-cache-dtype fp8",
    config=llama_config(quark_qc()),
    tensors=per_layer(
        L2,
        k_proj__output_scale=T(K),
        v_proj__output_scale=T(V),
        q_proj__output_scale=T(Q),
        prob_output_scale=T(PROB),
    ),
)
case(
    "base_output_scale_quark_auto",
    G,
    "Quark names, kv dtype auto: quark stays unquantized (k=v=1), q/prob still loaded",
    config=llama_config(quark_qc()),
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_proj__output_scale=T(K),
        v_proj__output_scale=T(V),
        q_proj__output_scale=T(Q),
        prob_output_scale=T(PROB),
    ),
)
case(
    "base_output_scale_under_modelopt",
    G,
    "k_proj.output_scale is not mapped under modelopt: becomes qkv_proj.output_scale -> refused",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "base_prob_output_scale_under_modelopt",
    G,
    "prob_output_scale is not mapped under modelopt -> refused",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V), prob_output_scale=T(PROB)),
)
case(
    "base_hunyuan_names",
    G,
    "HunYuan-V3 P.k_cache.scale / P.v_cache.scale / P.q.scale",
    config=FP8,
    tensors=per_layer(L2, k_cache__scale=T(K), v_cache__scale=T(V), q__scale=T(Q)),
)
case(
    "base_canonical_attn_names",
    G,
    "already-canonical P.attn.{k,v,q,prob}_scale",
    config=FP8,
    tensors=per_layer(
        L2, attn__k_scale=T(K), attn__v_scale=T(V), attn__q_scale=T(Q), attn__prob_scale=T(PROB)
    ),
)
case(
    "base_zero_points_ignored",
    G,
    "P.{k,v,q}_zero_point next to scales: ignored on the base path",
    config=FP8,
    tensors=per_layer(
        L2,
        k_scale=T(K),
        v_scale=T(V),
        k_zero_point=T(0.0, "BF16"),
        v_zero_point=T(0.0, "BF16"),
        q_zero_point=T(0.0, "BF16"),
    ),
)
case(
    "base_kv_proj_mixed_names",
    G,
    "k from ModelOpt name, v from plain name",
    config=FP8,
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_scale=T(V)),
)
case(
    "base_partial_layers",
    G,
    "layer 0 has scales, layer 1 none (4 layers, 1 and 3 with scales)",
    config=llama_config(FP8_QC, layers=4),
    tensors={
        f"{P(0)}.k_scale": T(K),
        f"{P(0)}.v_scale": T(V),
        f"{P(2)}.k_scale": T(K2),
        f"{P(2)}.v_scale": T(V2),
    },
)
case(
    "base_private_buffer_name_auto",
    G,
    "P.attn._k_scale loads straight into the device buffer; kv auto keeps it",
    config=FP8,
    options=opts(kv="auto"),
    tensors=per_layer(L2, attn___k_scale=T(K), attn___v_scale=T(V)),
)
case(
    "base_private_buffer_name_fp8",
    G,
    "P.attn._k_scale with fp8 kv: overwritten by the k/v resolution (defaults)",
    config=FP8,
    tensors=per_layer(L2, attn___k_scale=T(K), attn___v_scale=T(V)),
)

# ---- base path: on-disk dtype, shape, model dtype ------------------------------------
G = "base-dtype-shape"
case(
    "dtype_f32_rounds_to_bf16",
    G,
    "0.3 float32 on disk -> bf16 parameter 0.30078125",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(0.3), q_scale=T(0.3)),
)
case(
    "dtype_f32_rounds_to_fp16",
    G,
    "0.3 float32 on disk, model float16",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(model="float16"),
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(0.3), q_scale=T(0.3)),
)
case(
    "dtype_f32_model_f32",
    G,
    "0.3 float32 on disk, model float32: kept",
    config=llama_config(FP8_QC, torch_dtype="float32"),
    options=opts(model="float32"),
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(0.3), q_scale=T(0.3)),
)
case(
    "dtype_bf16_on_disk",
    G,
    "bf16 on disk, bf16 model",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.30078125, "BF16"), v_scale=T(0.0146484375, "BF16")),
)
case(
    "dtype_f16_on_disk_bf16_model",
    G,
    "fp16 value (fp16 of 0.1) rounded to bf16",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0999755859375, "F16"), v_scale=T(0.0999755859375, "F16")),
)
case(
    "dtype_bf16_on_disk_fp16_model",
    G,
    "fp16 model: bf16 0.30078125 is exact in fp16; bf16 2^-30 underflows fp16 to 0 -> v := k",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(model="float16"),
    tensors=per_layer(L2, k_scale=T(0.30078125, "BF16"), v_scale=T(2.0**-30, "BF16")),
)
case(
    "dtype_f64_on_disk_bf16_model",
    G,
    "float64 0.1 on disk -> bf16",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.1, "F64"), v_scale=T(0.1, "F64")),
)
case(
    "dtype_f64_double_rounding_bf16",
    G,
    "float64 1+2^-8+2^-30: via float32 ties to even (1.0), directly it would be 1.0078125",
    config=FP8,
    tensors=per_layer(
        L2, k_scale=T(1.0 + 2.0**-8 + 2.0**-30, "F64"), v_scale=T(1.0 + 2.0**-8 + 2.0**-30, "F64")
    ),
)
case(
    "dtype_f64_model_f32",
    G,
    "float64 0.1 on disk, model float32",
    config=llama_config(FP8_QC, torch_dtype="float32"),
    options=opts(model="float32"),
    tensors=per_layer(L2, k_scale=T(0.1, "F64"), v_scale=T(0.2, "F64")),
)
case(
    "dtype_fp16_underflow_to_zero",
    G,
    "1e-8 float32 underflows to 0 in fp16 -> k=0 -> refused",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(model="float16"),
    tensors=per_layer(L2, k_scale=T(1e-8), v_scale=T(1e-8)),
)
case(
    "dtype_fp16_subnormal",
    G,
    "4e-8 float32 -> fp16 subnormal (2^-24)",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(model="float16"),
    tensors=per_layer(L2, k_scale=T(4e-8), v_scale=T(4e-8)),
)
case(
    "dtype_fp16_overflow_to_inf",
    G,
    "1e5 float32 overflows fp16 to +inf (accepted)",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(model="float16"),
    tensors=per_layer(L2, k_scale=T(1e5), v_scale=T(1e5), q_scale=T(1e5)),
)
case(
    "dtype_f32_subnormal_bf16_model",
    G,
    "float32 subnormal 1e-40 survives in bf16 (same exponent range)",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(1e-40), v_scale=T(1e-40)),
)
case(
    "dtype_f32_subnormal_f32_model",
    G,
    "float32 min subnormal 2^-149, model float32",
    config=llama_config(FP8_QC, torch_dtype="float32"),
    options=opts(model="float32"),
    tensors=per_layer(L2, k_scale=B(0x00000001, "F32"), v_scale=T(V)),
)
case(
    "shape_one",
    G,
    "shape [1] accepted",
    config=FP8,
    tensors=per_layer(
        L2, k_scale=T(K, shape=(1,)), v_scale=T(V, shape=(1,)), q_scale=T(Q, shape=(1,))
    ),
)
case(
    "shape_one_by_one",
    G,
    "shape [1,1] accepted",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K, shape=(1, 1)), v_scale=T(V, shape=(1, 1))),
)
case(
    "shape_two_refused",
    G,
    "k shape [2] -> ValueError from KVCacheScaleParameter",
    config=FP8,
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2,)), v_scale=T(V)),
)
case(
    "shape_empty_refused",
    G,
    "v shape [0] -> ValueError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T([], shape=(0,))),
)
case(
    "shape_q_two_refused",
    G,
    "q shape [2] -> ValueError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T([Q, Q], shape=(2,))),
)

# ---- base path: values ---------------------------------------------------------------
G = "base-values"
case("val_k_only", G, "k only -> v := k", config=FP8, tensors=per_layer(L2, k_scale=T(K)))
case("val_v_only", G, "v only -> AssertionError", config=FP8, tensors=per_layer(L2, v_scale=T(V)))
case("val_both_absent", G, "no scale tensors -> 1.0 / 1.0", config=FP8, tensors={})
case(
    "val_k_zero",
    G,
    "k = 0, v > 0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(V)),
)
case(
    "val_v_zero",
    G,
    "k > 0, v = 0 -> max -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(0.0)),
)
case(
    "val_k_negative",
    G,
    "k < 0, v > 0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(-K), v_scale=T(V)),
)
case(
    "val_both_negative",
    G,
    "k < 0 and v < 0 -> treated as absent: 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(-K), v_scale=T(-V)),
)
case(
    "val_v_negative",
    G,
    "k > 0, v < 0 -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(-V)),
)
case(
    "val_k_nan",
    G,
    "k NaN -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NAN), v_scale=T(V)),
)
case(
    "val_v_nan",
    G,
    "v NaN, k > 0 -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(NAN)),
)
case(
    "val_both_nan",
    G,
    "k and v NaN -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NAN), v_scale=T(NAN)),
)
case(
    "val_k_posinf",
    G,
    "k = +inf accepted",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(INF), v_scale=T(V)),
)
case(
    "val_v_posinf",
    G,
    "v = +inf accepted",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(INF)),
)
case(
    "val_k_neginf",
    G,
    "k = -inf, v > 0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NINF), v_scale=T(V)),
)
case(
    "val_both_neginf",
    G,
    "k = v = -inf -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NINF), v_scale=T(NINF)),
)
case(
    "val_k_negzero",
    G,
    "k = -0.0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=B(0x8000, "BF16"), v_scale=T(V)),
)
case(
    "val_v_negzero",
    G,
    "v = -0.0, k > 0 -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=B(0x80000000, "F32")),
)
case(
    "val_exactly_one",
    G,
    "k = v = 1.0 (ModelOpt clamp floor)",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(1.0), v_scale=T(1.0)),
)
case(
    "val_k_smaller_than_v",
    G,
    "both positive, v > k: kept separate",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(V), v_scale=T(K)),
)
case(
    "val_q_zero",
    G,
    "q = 0 -> 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(0.0)),
)
case(
    "val_q_nan",
    G,
    "q NaN -> 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(NAN)),
)
case(
    "val_q_negative",
    G,
    "q < 0 -> 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(-Q)),
)
case(
    "val_q_inf",
    G,
    "q = +inf kept",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(INF)),
)
case(
    "val_q_only", G, "q only: k = v = 1.0, q kept", config=FP8, tensors=per_layer(L2, q_scale=T(Q))
)
case(
    "val_prob_present",
    G,
    "prob via attn.prob_scale, q via q_scale",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q), attn__prob_scale=T(PROB)),
)
case(
    "val_prob_zero",
    G,
    "prob = 0 -> 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), prob_output_scale=T(0.0)),
)
case(
    "val_prob_nan_q_neg",
    G,
    "prob NaN and q < 0 -> both 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(-1.0), prob_output_scale=T(NAN)),
)
case(
    "val_large_values",
    G,
    "k = 448, v = 3.0e38 (bf16-representable) kept",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(448.0), v_scale=B(0x7F61, "BF16")),
)

# ---- base path: kv cache dtypes and platforms ----------------------------------------
G = "base-kvdtype-platform"
BASE_KVQP = per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q), prob_output_scale=T(PROB))
case(
    "kv_auto_fp8_config",
    G,
    "fp8 config with kv auto stays unquantized: k=v=1, q/prob loaded",
    config=FP8,
    options=opts(kv="auto"),
    tensors=BASE_KVQP,
)
case(
    "kv_bfloat16_explicit",
    G,
    "explicit bfloat16 kv cache: k=v=1",
    config=FP8,
    options=opts(kv="bfloat16"),
    tensors=BASE_KVQP,
)
case(
    "kv_float16_explicit",
    G,
    "explicit float16 kv cache: k=v=1",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(kv="float16", model="float16"),
    tensors=BASE_KVQP,
)
case(
    "kv_fp8_e4m3",
    G,
    "fp8_e4m3 behaves like fp8",
    config=FP8,
    options=opts(kv="fp8_e4m3"),
    tensors=BASE_KVQP,
)
case(
    "kv_fp8_e5m2_refused",
    G,
    "fp8_e5m2 with an fp8 checkpoint -> ValueError at engine start",
    config=FP8,
    options=opts(kv="fp8_e5m2"),
    tensors=BASE_KVQP,
)
case(
    "kv_fp8_per_token_head",
    G,
    "fp8_per_token_head: k=v=1, q/prob 1 (scales ignored)",
    config=FP8,
    options=opts(kv="fp8_per_token_head"),
    tensors=BASE_KVQP,
)
case(
    "kv_int8_per_token_head",
    G,
    "int8_per_token_head: k=v=1",
    config=FP8,
    options=opts(kv="int8_per_token_head"),
    tensors=BASE_KVQP,
)
case(
    "kv_per_token_head_bad_shape",
    G,
    "per-token-head ignores scales, but a [2] k still fails to load",
    config=FP8,
    options=opts(kv="fp8_per_token_head"),
    tensors=per_layer(L2, k_scale=T([K, K], shape=(2,)), v_scale=T(V)),
)
case(
    "kv_auto_v_only_no_assert",
    G,
    "kv auto: v-only is not checked (unquantized)",
    config=FP8,
    options=opts(kv="auto"),
    tensors=per_layer(L2, v_scale=T(V), q_scale=T(Q)),
)
case(
    "fnuz_both",
    G,
    "fnuz doubles loaded k and v, q and prob",
    config=FP8,
    options=opts(platform="fnuz"),
    tensors=BASE_KVQP,
)
case(
    "fnuz_k_only",
    G,
    "fnuz: k only -> max then doubled",
    config=FP8,
    options=opts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=T(K)),
)
case(
    "fnuz_absent",
    G,
    "fnuz: defaults 1.0 are not doubled",
    config=FP8,
    options=opts(platform="fnuz"),
    tensors={},
)
case(
    "fnuz_kv_auto",
    G,
    "fnuz, kv auto: k=v=1, q/prob doubled",
    config=FP8,
    options=opts(platform="fnuz", kv="auto"),
    tensors=BASE_KVQP,
)
case(
    "fnuz_fp16_q_overflow",
    G,
    "fnuz, fp16 model: q=40000 doubled in fp16 -> inf; k=40000 doubled in python float -> 80000",
    config=llama_config(FP8_QC, torch_dtype="float16"),
    options=opts(platform="fnuz", model="float16"),
    tensors=per_layer(
        L2, k_scale=T(40000.0), v_scale=T(V), q_scale=T(40000.0), prob_output_scale=T(40000.0)
    ),
)
case(
    "fnuz_bf16_huge_k",
    G,
    "fnuz: bf16 k=3e38 doubled in python float exceeds float32 -> fill_ overflow RuntimeError",
    config=FP8,
    options=opts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=B(0x7F61, "BF16"), v_scale=T(V)),
)
case(
    "fnuz_inf",
    G,
    "fnuz: +inf stays inf",
    config=FP8,
    options=opts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=T(INF), v_scale=T(V)),
)
case(
    "fnuz_per_token_head",
    G,
    "fnuz + per-token-head: 1.0, nothing doubled",
    config=FP8,
    options=opts(platform="fnuz", kv="fp8_per_token_head"),
    tensors=BASE_KVQP,
)
case(
    "fnuz_modelopt",
    G,
    "fnuz with ModelOpt names",
    config=llama_config(MODELOPT_QC),
    options=opts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)

# ---- base path: load order -----------------------------------------------------------
G = "base-order"
case(
    "order_kv_scale_after_k_scale",
    G,
    "P.k_scale and P.kv_scale both feed attn.k_scale; kv_scale sorts later and wins",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), kv_scale=T(K2)),
)
case(
    "order_plain_after_modelopt",
    G,
    "P.k_proj.k_scale then P.k_scale (sorted keys): plain wins",
    config=FP8,
    tensors=per_layer(L2, k_proj__k_scale=T(K2), k_scale=T(K), v_scale=T(V)),
)
case(
    "order_plain_after_canonical",
    G,
    "P.attn.k_scale then P.k_scale: plain wins",
    config=FP8,
    tensors=per_layer(L2, attn__k_scale=T(K2), k_scale=T(K), v_scale=T(V)),
)
case(
    "order_same_name_two_shards",
    G,
    "same tensor in shard 1 and 2: shard 2 (read last) wins",
    config=FP8,
    shards=[
        {
            "file": "model-00001-of-00002.safetensors",
            "tensors": per_layer(L2, k_scale=T(K2), v_scale=T(V2)),
        },
        {
            "file": "model-00002-of-00002.safetensors",
            "tensors": per_layer(L2, k_scale=T(K), v_scale=T(V)),
        },
    ],
)
case(
    "order_natural_sort",
    G,
    "model-2 vs model-10: natural sort reads model-10 last (lexicographic would not)",
    config=FP8,
    shards=[
        {"file": "model-10.safetensors", "tensors": per_layer(L2, k_scale=T(K), v_scale=T(V))},
        {"file": "model-2.safetensors", "tensors": per_layer(L2, k_scale=T(K2), v_scale=T(V2))},
    ],
)
case(
    "order_hunyuan_vs_plain_q",
    G,
    "P.q.scale then P.q_scale: q_scale wins",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q__scale=T(0.25), q_scale=T(Q)),
)

# ---- ModelOpt / Quark / fp8 configs, no quant config ----------------------------------
G = "configs"
case(
    "modelopt_configjson_dynamic_false",
    G,
    "ModelOpt config.json kv_cache_scheme {dynamic: false}: auto -> fp8",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
_mo_nodyn = copy.deepcopy(MODELOPT_QC)
del _mo_nodyn["kv_cache_scheme"]["dynamic"]
case(
    "modelopt_configjson_no_dynamic_key",
    G,
    "ModelOpt kv_cache_scheme without 'dynamic': not recognised -> auto (k=v=1)",
    config=llama_config(_mo_nodyn),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
_mo_algo = copy.deepcopy(MODELOPT_QC)
del _mo_algo["kv_cache_scheme"]
_mo_algo["kv_cache_quant_algo"] = "FP8"
case(
    "modelopt_configjson_kv_algo_string",
    G,
    "ModelOpt flat kv_cache_quant_algo 'FP8': auto -> fp8_e4m3",
    config=llama_config(_mo_algo),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
_mo_nokv = copy.deepcopy(MODELOPT_QC)
del _mo_nokv["kv_cache_scheme"]
case(
    "modelopt_no_kv_quant",
    G,
    "ModelOpt without kv quant: auto stays auto; scales still load (k=v=1 used)",
    config=llama_config(_mo_nokv),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "modelopt_legacy_hf_quant_config",
    G,
    "legacy hf_quant_config.json {producer modelopt, kv_cache_quant_algo FP8}",
    config=llama_config(None),
    hf_quant_config=MODELOPT_LEGACY_HF_QUANT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
_legacy_nokv = copy.deepcopy(MODELOPT_LEGACY_HF_QUANT)
del _legacy_nokv["quantization"]["kv_cache_quant_algo"]
case(
    "modelopt_legacy_no_kv_algo",
    G,
    "legacy hf_quant_config.json without kv_cache_quant_algo: auto",
    config=llama_config(None),
    hf_quant_config=_legacy_nokv,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "modelopt_clamped_to_one",
    G,
    "ModelOpt values clamped to 1.0",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(1.0), v_proj__v_scale=T(1.0)),
)
case(
    "modelopt_f32_rounds_to_bf16",
    G,
    "ModelOpt float32 scale rounded to bf16",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(1.7), v_proj__v_scale=T(1.3)),
)
case(
    "modelopt_e5m2_refused",
    G,
    "ModelOpt + fp8_e5m2 -> ValueError",
    config=llama_config(MODELOPT_QC),
    options=opts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "quark_e5m2_refused",
    G,
    "Quark + fp8_e5m2 -> ValueError",
    config=llama_config(quark_qc()),
    options=opts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "quark_kv_dtype_e5m2_config",
    G,
    "Quark output_tensors dtype fp8_e5m2 -> NotImplementedError",
    config=llama_config(quark_qc(kv_output={**_QUARK_FP8_TENSOR, "dtype": "fp8_e5m2"})),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "quark_kv_per_channel_config",
    G,
    "Quark output_tensors qscheme per_channel -> NotImplementedError",
    config=llama_config(
        quark_qc(kv_output={**_QUARK_FP8_TENSOR, "qscheme": "per_channel", "ch_axis": 0})
    ),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "quark_kv_group_without_layer_config",
    G,
    "Quark kv_cache_group with no matching layer_quant_config -> ValueError",
    config=llama_config(quark_qc(layer_keys=("*o_proj",))),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "quark_no_kv_group",
    G,
    "Quark without kv_cache_group: KV method still loads the scales",
    config=llama_config(quark_qc(kv_group=[])),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
_fp8_noact = {k: v for k, v in FP8_QC.items() if k != "activation_scheme"}
case(
    "fp8_config_missing_activation_scheme",
    G,
    "quant_method fp8 without activation_scheme -> ValueError (config refused)",
    config=llama_config(_fp8_noact),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "fp8_dynamic_activation",
    G,
    "quant_method fp8, activation_scheme dynamic: KV path unchanged",
    config=llama_config({**FP8_QC, "activation_scheme": "dynamic"}),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "noquant_no_scales",
    G,
    "no quantization_config, no scales: 1.0 everywhere",
    config=llama_config(None),
    options=opts(kv="auto"),
    tensors={},
)
case(
    "noquant_fp8_kv",
    G,
    "no quantization_config, --kv-cache-dtype fp8: 1.0 everywhere",
    config=llama_config(None),
    options=opts(kv="fp8"),
    tensors={},
)
case(
    "noquant_with_scales_refused",
    G,
    "no quantization_config but k_scale tensors: nothing maps them -> load refused",
    config=llama_config(None),
    options=opts(kv="fp8"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "noquant_e5m2",
    G,
    "no quantization_config, fp8_e5m2 allowed (1.0)",
    config=llama_config(None),
    options=opts(kv="fp8_e5m2"),
    tensors={},
)

# ---- compressed-tensors: strategy tensor ---------------------------------------------
G = "ct-tensor"
QH8 = [0.01, 0.02, 0.03, 0.04, 0.08, 0.07, 0.06, 0.05]
CT = llama_config(ct_qc("tensor"))
case(
    "ct_tensor_kvq",
    G,
    "k/v/q float32 loaded as float32 (no model-dtype rounding); auto -> fp8",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(0.2), q_scale=T(0.1)),
)
case(
    "ct_tensor_k_only",
    G,
    "k only: v stays 1.0 (no duplication)",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K)),
)
case(
    "ct_tensor_v_only",
    G,
    "v only: k stays 1.0, no assertion",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, v_scale=T(V)),
)
case(
    "ct_tensor_absent",
    G,
    "declared scheme, no tensors: 1.0",
    config=CT,
    options=opts(kv="auto"),
    tensors={},
)
case(
    "ct_tensor_zero",
    G,
    "zero accepted as is",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(V)),
)
case(
    "ct_tensor_negative",
    G,
    "negative accepted as is",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(-K), v_scale=T(-V), q_scale=T(-Q)),
)
case(
    "ct_tensor_nan",
    G,
    "NaN accepted as is",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(NAN), v_scale=T(V)),
)
case(
    "ct_tensor_inf",
    G,
    "+/-inf accepted as is",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(INF), v_scale=T(NINF)),
)
case(
    "ct_tensor_negzero",
    G,
    "-0.0 kept with its sign",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=B(0x80000000, "F32"), v_scale=T(V)),
)
case(
    "ct_tensor_f64",
    G,
    "float64 rounded to float32",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.1, "F64"), v_scale=T(1e300, "F64")),
)
case(
    "ct_tensor_bf16_f16_on_disk",
    G,
    "bf16 / fp16 on disk widened exactly",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.30078125, "BF16"), v_scale=T(0.0999755859375, "F16")),
)
case(
    "ct_tensor_shape_1x1",
    G,
    "shape [1,1] accepted",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K, shape=(1, 1)), v_scale=T(V, shape=(1,))),
)
case(
    "ct_tensor_per_head_shape_refused",
    G,
    "per-head [2,1,1] k under strategy tensor -> AssertionError from default_weight_loader",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T(V)),
)
case(
    "ct_tensor_q_8_heads_refused",
    G,
    "q [8,1,1] under strategy tensor -> AssertionError",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(QH8, shape=(8, 1, 1))),
)
case(
    "ct_tensor_output_scale_refused",
    G,
    "Quark-style k_proj.output_scale is not mapped under CT -> refused",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "ct_tensor_prob_refused",
    G,
    "P.attn.prob_scale: no such parameter on the CT path -> refused",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), attn__prob_scale=T(PROB)),
)
case(
    "ct_tensor_prob_output_scale_refused",
    G,
    "P.prob_output_scale is not mapped under CT -> refused",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), prob_output_scale=T(PROB)),
)
case(
    "ct_tensor_zero_points",
    G,
    "F8_E4M3 zero points load into the unused zero-point parameters",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T(K),
        v_scale=T(V),
        q_scale=T(Q),
        k_zero_point=T(0.0, "F8_E4M3"),
        v_zero_point=T(0.0, "F8_E4M3"),
        q_zero_point=T(0.0, "F8_E4M3"),
    ),
)
case(
    "ct_tensor_kv_bfloat16",
    G,
    "explicit bfloat16 kv: CT still installs the checkpoint values",
    config=CT,
    options=opts(kv="bfloat16"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_tensor_per_token_head",
    G,
    "CT + fp8_per_token_head: values as loaded",
    config=CT,
    options=opts(kv="fp8_per_token_head"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_tensor_e5m2_refused",
    G,
    "CT with a kv_cache_scheme + fp8_e5m2 -> ValueError",
    config=CT,
    options=opts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_tensor_fnuz",
    G,
    "CT on fnuz: no doubling",
    config=CT,
    options=opts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q)),
)
case(
    "ct_tensor_no_config_groups",
    G,
    "strategy tensor without config_groups",
    config=llama_config(ct_qc("tensor", groups=False)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_tensor_legacy_kv_scale",
    G,
    "P.kv_scale under CT: k only, v stays 1.0",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, kv_scale=T(K)),
)
case(
    "ct_tensor_modelopt_names",
    G,
    "ModelOpt names under CT",
    config=CT,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "ct_tensor_fp16_model",
    G,
    "CT float32 values with a float16 model: still float32",
    config=llama_config(ct_qc("tensor"), torch_dtype="float16"),
    options=opts(kv="auto", model="float16"),
    tensors=per_layer(L2, k_scale=T(1e-8), v_scale=T(1e5)),
)
case(
    "ct_scheme_null_scales",
    G,
    "kv_cache_scheme null: auto stays auto, scales still installed",
    config=llama_config(ct_qc(scheme=None)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_scheme_null_e5m2",
    G,
    "kv_cache_scheme null + fp8_e5m2: allowed",
    config=llama_config(ct_qc(scheme=None)),
    options=opts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_scheme_null_fp8",
    G,
    "kv_cache_scheme null + fp8: values as loaded",
    config=llama_config(ct_qc(scheme=None)),
    options=opts(kv="fp8"),
    tensors=per_layer(L2, k_scale=T(K)),
)

# ---- compressed-tensors: strategy attn_head ------------------------------------------
G = "ct-attn-head"
CTH = llama_config(ct_qc("attn_head"))  # 8 heads, 2 kv heads
QH = QH8
case(
    "ct_head_kvq",
    G,
    "k/v [2,1,1], q [8,1,1] reduced by max over each GQA group of 4",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, K2], shape=(2, 1, 1)),
        v_scale=T([V, V2], shape=(2, 1, 1)),
        q_scale=T(QH, shape=(8, 1, 1)),
    ),
)
case(
    "ct_head_flat_shapes",
    G,
    "k/v [2], q [8] (already flat)",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, K2], shape=(2,)),
        v_scale=T([V, V2], shape=(2,)),
        q_scale=T(QH, shape=(8,)),
    ),
)
case(
    "ct_head_absent",
    G,
    "attn_head, no tensors: [1.0, 1.0]",
    config=CTH,
    options=opts(kv="auto"),
    tensors={},
)
case(
    "ct_head_per_tensor_kv",
    G,
    "k/v shape [] under attn_head: broadcast to every head",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_head_per_tensor_q_gqa",
    G,
    "q shape [] under attn_head with GQA 4 -> view(-1, 4) fails",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q)),
)
case(
    "ct_head_per_tensor_q_mha",
    G,
    "q shape [] under attn_head, 4 heads / 4 kv heads: broadcast",
    config=llama_config(ct_qc("attn_head"), heads=4, kv_heads=4),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T([K, K2, K, K2], shape=(4, 1, 1)), v_scale=T(V), q_scale=T(Q)),
)
case(
    "ct_head_too_many_heads",
    G,
    "k [4,1,1] with 2 kv heads: silently truncated to the first 2",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2, k_scale=T([K, K2, 0.5, 0.75], shape=(4, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))
    ),
)
case(
    "ct_head_too_few_heads",
    G,
    "k [3,1,1] with 4 kv heads -> copy_ size mismatch",
    config=llama_config(ct_qc("attn_head"), heads=8, kv_heads=4),
    options=opts(kv="auto"),
    tensors=per_layer(
        L2, k_scale=T([K, K2, K], shape=(3, 1, 1)), v_scale=T([V] * 4, shape=(4, 1, 1))
    ),
)
case(
    "ct_head_q_wrong_count",
    G,
    "q [6,1,1] with GQA 4 -> view fails",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, K2], shape=(2, 1, 1)),
        v_scale=T([V, V2], shape=(2, 1, 1)),
        q_scale=T(QH[:6], shape=(6, 1, 1)),
    ),
)
case(
    "ct_head_nan_one_head",
    G,
    "NaN in one head kept as is",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, NAN], shape=(2, 1, 1)),
        v_scale=T([V, V2], shape=(2, 1, 1)),
        q_scale=T([0.01, NAN, 0.03, 0.04, 0.08, 0.07, 0.06, 0.05], shape=(8, 1, 1)),
    ),
)
case(
    "ct_head_bf16_on_disk",
    G,
    "bf16 per-head values widened exactly",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([0.30078125, 0.0146484375], "BF16", (2, 1, 1)),
        v_scale=T([V, V2], "BF16", (2, 1, 1)),
    ),
)
case(
    "ct_head_zero_points",
    G,
    "per-head zero points are dropped by the loader",
    config=CTH,
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, K2], shape=(2, 1, 1)),
        v_scale=T([V, V2], shape=(2, 1, 1)),
        k_zero_point=T(0.0, "F8_E4M3", (2, 1, 1)),
        v_zero_point=T(0.0, "F8_E4M3", (2, 1, 1)),
    ),
)
case(
    "ct_head_fnuz",
    G,
    "attn_head on fnuz: no doubling",
    config=CTH,
    options=opts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "ct_head_no_config_groups_kv",
    G,
    "attn_head without config_groups: total_num_kv_heads unset -> AssertionError",
    config=llama_config(ct_qc("attn_head", groups=False)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "ct_head_no_config_groups_q",
    G,
    "attn_head without config_groups: q reduction divides None -> TypeError",
    config=llama_config(ct_qc("attn_head", groups=False)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, q_scale=T(QH, shape=(8, 1, 1))),
)
case(
    "ct_head_no_config_groups_absent",
    G,
    "attn_head without config_groups and no tensors: fine",
    config=llama_config(ct_qc("attn_head", groups=False)),
    options=opts(kv="auto"),
    tensors={},
)
case(
    "ct_head_mha_4_heads",
    G,
    "4 heads / 4 kv heads, per-head q reduced by groups of 1",
    config=llama_config(ct_qc("attn_head"), heads=4, kv_heads=4),
    options=opts(kv="auto"),
    tensors=per_layer(
        L2,
        k_scale=T([K, K2, V, V2], shape=(4, 1, 1)),
        v_scale=T([V, V2, K, K2], shape=(4, 1, 1)),
        q_scale=T([0.1, 0.2, 0.3, 0.4], shape=(4, 1, 1)),
    ),
)

# ---- compressed-tensors: unsupported schemes -----------------------------------------
G = "ct-unsupported"
case(
    "ct_num_bits_4",
    G,
    "num_bits 4 -> NotImplementedError",
    config=llama_config(ct_qc("tensor", num_bits=4)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_type_int",
    G,
    "type int -> NotImplementedError",
    config=llama_config(ct_qc("tensor", type="int")),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_asymmetric",
    G,
    "symmetric false -> NotImplementedError",
    config=llama_config(ct_qc("tensor", symmetric=False)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_strategy_channel",
    G,
    "strategy channel -> NotImplementedError",
    config=llama_config(ct_qc("channel")),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_strategy_missing",
    G,
    "no strategy -> ValueError from QuantizationStrategy(None)",
    config=llama_config(ct_qc(_DROP)),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "ct_num_bits_4_explicit_bf16",
    G,
    "unsupported scheme refuses even with an explicit bfloat16 kv cache",
    config=llama_config(ct_qc("tensor", num_bits=4)),
    options=opts(kv="bfloat16"),
    tensors={},
)

# ---- sharded checkpoints -------------------------------------------------------------
G = "sharded"
_filler1 = {"model.norm.weight": T(1.0, "BF16", (64,))}
_filler3 = {"lm_head.weight": T(0.0, "BF16", (128, 64))}


def _three_shards(
    scales: dict[str, dict[str, Any]], extra3: dict[str, dict[str, Any]] | None = None
):
    return [
        {"file": "model-00001-of-00003.safetensors", "tensors": _filler1},
        {"file": "model-00002-of-00003.safetensors", "tensors": scales},
        {"file": "model-00003-of-00003.safetensors", "tensors": {**_filler3, **(extra3 or {})}},
    ]


case(
    "shard_scales_in_2_of_3_index",
    G,
    "scales in shard 2 of 3, with index",
    config=FP8,
    shards=_three_shards(per_layer(L2, k_scale=T(K), v_scale=T(V))),
    index={},
)
case(
    "shard_scales_in_2_of_3_no_index",
    G,
    "scales in shard 2 of 3, no index",
    config=FP8,
    shards=_three_shards(per_layer(L2, k_scale=T(K), v_scale=T(V))),
)
case(
    "shard_split_k_v",
    G,
    "k in shard 2, v in shard 3, with index",
    config=FP8,
    shards=_three_shards(per_layer(L2, k_scale=T(K)), per_layer(L2, v_scale=T(V))),
    index={},
)
case(
    "shard_not_in_index_ignored",
    G,
    "a 4th shard not named by the index is never read",
    config=FP8,
    shards=_three_shards(per_layer(L2, k_scale=T(K), v_scale=T(V)))
    + [
        {
            "file": "model-00004-of-00004.safetensors",
            "tensors": per_layer(L2, k_scale=T(0.5), v_scale=T(0.5)),
        }
    ],
    index={"omit": ["model-00004-of-00004.safetensors"]},
)
case(
    "shard_ct_head_split",
    G,
    "CT attn_head, k/q in shard 2, v in shard 3",
    config=CTH,
    options=opts(kv="auto"),
    shards=_three_shards(
        per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), q_scale=T(QH, shape=(8, 1, 1))),
        per_layer(L2, v_scale=T([V, V2], shape=(2, 1, 1))),
    ),
    index={},
)

# ---- architectures -------------------------------------------------------------------
G = "arch"
_quark_out = per_layer(
    L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V), q_proj__output_scale=T(Q)
)
case(
    "arch_llama_quark_output_scale",
    G,
    "LlamaForCausalLM: cache-scale mapper runs in its own top-level pass -> loads",
    config=llama_config(quark_qc()),
    tensors=_quark_out,
)
case(
    "arch_gemma3_quark_output_scale",
    G,
    "Gemma3ForCausalLM: stacked .k_proj -> .qkv_proj runs before the suffix mapper -> refused",
    config=llama_config(quark_qc(), arch="Gemma3ForCausalLM"),
    tensors=_quark_out,
)
case(
    "arch_gemma3_fp8_output_scale",
    G,
    "Gemma3ForCausalLM, quant_method fp8, k_proj.output_scale -> refused",
    config=llama_config(FP8_QC, arch="Gemma3ForCausalLM"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "arch_gemma3_plain_names",
    G,
    "Gemma3ForCausalLM with plain k_scale/v_scale and prob_output_scale: fine",
    config=llama_config(quark_qc(), arch="Gemma3ForCausalLM"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q), prob_output_scale=T(PROB)),
)
case(
    "arch_gemma3_modelopt_names",
    G,
    "Gemma3ForCausalLM with ModelOpt names: regex runs before stacked -> fine",
    config=llama_config(MODELOPT_QC, arch="Gemma3ForCausalLM"),
    options=opts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)


def _nem(i: int) -> str:
    return f"backbone.layers.{i}.mixer"


case(
    "arch_nemotronh_modelopt",
    G,
    "NemotronH backbone.layers.N.mixer.{k,v}_proj.{k,v}_scale (attention at 1 and 3)",
    config=nemotron_h_config(MODELOPT_QC),
    options=opts(kv="auto"),
    tensors={
        f"{_nem(i)}.{p}_proj.{p}_scale": T(x) for i in (1, 3) for p, x in (("k", K), ("v", V))
    },
)
case(
    "arch_nemotronh_plain_names",
    G,
    "NemotronH backbone.layers.N.mixer.k_scale",
    config=nemotron_h_config(FP8_QC),
    tensors={
        f"{_nem(i)}.{p}_scale": T(x) for i in (1, 3) for p, x in (("k", K), ("v", V), ("q", Q))
    },
)
case(
    "arch_nemotronh_quark_output_scale",
    G,
    "NemotronH: stacked mapping in the same pass drops Quark output_scale -> refused",
    config=nemotron_h_config(quark_qc()),
    tensors={
        f"{_nem(i)}.{p}_proj.output_scale": T(x) for i in (1, 3) for p, x in (("k", K), ("v", V))
    },
)
case(
    "arch_nemotronh_k_only",
    G,
    "NemotronH layer 1 k only, layer 3 nothing",
    config=nemotron_h_config(MODELOPT_QC),
    options=opts(kv="fp8"),
    tensors={f"{_nem(1)}.k_proj.k_scale": T(K)},
)


CASES_BY_NAME: dict[str, dict[str, Any]] = {c["name"]: c for c in CASES}
if len(CASES_BY_NAME) != len(CASES):
    raise RuntimeError("duplicate case names")


# --------------------------------------------------------------------------------------
# engine layer names (what `kvscale inspect` must list, in order)
# --------------------------------------------------------------------------------------


def engine_layer_names(config: dict[str, Any]) -> list[str]:
    """Attention layers vLLM 0.33.0 builds for the architectures used in this catalogue."""
    arch = (config.get("architectures") or ["LlamaForCausalLM"])[0]
    if arch == "NemotronHForCausalLM":
        pattern = config["hybrid_override_pattern"]
        return [f"model.layers.{i}.mixer.attn" for i, c in enumerate(pattern) if c == "*"]
    if arch in ("LlamaForCausalLM", "Gemma3ForCausalLM"):
        return [f"model.layers.{i}.self_attn.attn" for i in range(config["num_hidden_layers"])]
    raise ValueError(f"architecture {arch} is not modelled")


# --------------------------------------------------------------------------------------
# writer
# --------------------------------------------------------------------------------------

_DTYPES = {
    "F64": ("float64", "int64"),
    "F32": ("float32", "int32"),
    "F16": ("float16", "int16"),
    "BF16": ("bfloat16", "int16"),
    "F8_E4M3": ("float8_e4m3fn", "int8"),
}


def _tensor(spec: dict[str, Any]):  # -> torch.Tensor
    import torch

    dtype_name, int_name = _DTYPES[spec["dtype"]]
    dtype = getattr(torch, dtype_name)
    shape = list(spec["shape"])
    if "bits" in spec:
        bits = [int(b) for b in spec["bits"]]
        width = torch.finfo(dtype).bits
        signed = [b - (1 << width) if b >= (1 << (width - 1)) else b for b in bits]
        t = torch.tensor(signed, dtype=getattr(torch, int_name)).view(dtype)
    else:
        vals = [float(v) for v in spec["values"]]
        t = torch.tensor(vals, dtype=torch.float64).to(dtype)
    return t.reshape(shape).contiguous()


def write_case(case: dict[str, Any], directory: str | Path) -> Path:
    """Write the checkpoint of `case` into `directory` (created) and return it."""
    from safetensors.torch import save_file

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(case["config"], indent=2) + "\n")
    if case.get("hf_quant_config") is not None:
        (d / "hf_quant_config.json").write_text(
            json.dumps(case["hf_quant_config"], indent=2) + "\n"
        )
    weight_map: dict[str, str] = {}
    total = 0
    omit = set((case.get("index") or {}).get("omit", []))
    for shard in case["shards"]:
        tensors = {name: _tensor(spec) for name, spec in shard["tensors"].items()}
        save_file(tensors, str(d / shard["file"]), metadata={"format": "pt"})
        if shard["file"] not in omit:
            for name, t in tensors.items():
                weight_map[name] = shard["file"]
                total += t.numel() * t.element_size()
    if case.get("index") is not None:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (d / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return d
