"""SGLang-specific parity cases (same case format as tests/parity/cases.py).

`tests/parity/sglang_oracle.py` runs these after the applicable cases of `cases.py`. The
format is the one documented in cases.py, with SGLang's vocabulary in "options":

    "options": {"platform": "ocp" | "fnuz",        # CUDA (sm90) | ROCm gfx942 (MI300)
                "kv_cache_dtype": <--kv-cache-dtype of SGLang: auto, fp8_e4m3, fp8_e5m2,
                                   bf16, bfloat16>,
                "model_dtype": "bfloat16" | "float16" | "float32",   # --dtype
                "weight_loader": "legacy" | "v2"}   # v2 = SGLANG_ENABLE_WEIGHT_LOADER_V2=1

and one optional case key, "quant_param_json": the content of a `--quantization-param-path`
file (a JSON value written as is), {"__raw__": "<text>"} for a file with that exact text, or
{"__missing__": true} for a path that does not exist. Checkpoints are written by
`cases.write_case`; the oracle writes the JSON file next to them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["CASES", "CASES_BY_NAME"]

_HERE = Path(__file__).resolve().parent


def _cases_module() -> Any:
    mod = sys.modules.get("kvscale_parity_cases")
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location("kvscale_parity_cases", _HERE / "cases.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


C = _cases_module()
T, B, P, per_layer, llama_config = C.T, C.B, C.P, C.per_layer, C.llama_config
K, V, K2, V2, Q, PROB = C.K, C.V, C.K2, C.V2, C.Q, C.PROB
NAN, INF, NINF = C.NAN, C.INF, C.NINF
FP8_QC, MODELOPT_QC, ct_qc, quark_qc = C.FP8_QC, C.MODELOPT_QC, C.ct_qc, C.quark_qc
DROP = C._DROP  # ct_qc(...) field value that leaves the field out
L2 = 2

CASES: list[dict[str, Any]] = []


def sopts(
    platform: str = "ocp", kv: str = "fp8_e4m3", model: str = "bfloat16", loader: str = "legacy"
) -> dict[str, str]:
    return {
        "platform": platform,
        "kv_cache_dtype": kv,
        "model_dtype": model,
        "weight_loader": loader,
    }


def case(
    name: str,
    group: str,
    description: str,
    *,
    config: dict[str, Any],
    tensors: dict[str, dict[str, Any]] | None = None,
    options: dict[str, str] | None = None,
    hf_quant_config: dict[str, Any] | None = None,
    quant_param_json: Any = None,
) -> None:
    CASES.append(
        {
            "name": name,
            "group": group,
            "description": description,
            "options": dict(options or sopts()),
            "config": config,
            "hf_quant_config": hf_quant_config,
            "shards": [{"file": "model.safetensors", "tensors": tensors or {}}],
            "index": None,
            "quant_param_json": quant_param_json,
        }
    )


FP8 = llama_config(FP8_QC)
CT = llama_config(ct_qc("tensor"))
NOQ = llama_config(None)

# ---- zero / negative / NaN / inf on the base path (PR #27131 semantics) --------------
G = "sgl-values"
case(
    "sgl_both_zero",
    G,
    "k = v = 0 -> 1.0 / 1.0, silent",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(0.0)),
)
case(
    "sgl_k_zero_v_absent",
    G,
    "k = 0, v absent (sentinel -1) -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0)),
)
case(
    "sgl_v_zero_k_absent",
    G,
    "v = 0, k absent -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, v_scale=T(0.0)),
)
case(
    "sgl_k_zero_v_pos",
    G,
    "k = 0, v > 0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(V)),
)
case(
    "sgl_k_pos_v_zero",
    G,
    "k > 0, v = 0 -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(0.0)),
)
case(
    "sgl_zero_and_negative",
    G,
    "k = 0, v < 0 -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(-V)),
)
case(
    "sgl_both_negzero",
    G,
    "k = v = -0.0 -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=B(0x80000000, "F32"), v_scale=B(0x8000, "BF16")),
)
case(
    "sgl_both_negative",
    G,
    "k, v < 0 -> 1.0 / 1.0, no warning",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(-K), v_scale=T(-V)),
)
case(
    "sgl_k_nan_v_absent",
    G,
    "k NaN, v absent -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NAN)),
)
case(
    "sgl_k_absent_v_nan",
    G,
    "k absent, v NaN -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, v_scale=T(NAN)),
)
case(
    "sgl_k_nan_v_zero",
    G,
    "k NaN, v = 0 -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NAN), v_scale=T(0.0)),
)
case(
    "sgl_k_zero_v_nan",
    G,
    "k = 0, v NaN -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(NAN)),
)
case(
    "sgl_k_pos_v_nan",
    G,
    "k > 0, v NaN -> v := k",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(NAN)),
)
case(
    "sgl_k_posinf_v_absent",
    G,
    "k = +inf, v absent -> v := +inf",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(INF)),
)
case(
    "sgl_both_posinf",
    G,
    "k = v = +inf accepted",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(INF), v_scale=T(INF)),
)
case(
    "sgl_k_posinf_v_nan",
    G,
    "k = +inf, v NaN -> max keeps k: inf / inf",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(INF), v_scale=T(NAN)),
)
case(
    "sgl_k_absent_v_posinf",
    G,
    "k absent, v = +inf -> AssertionError",
    config=FP8,
    tensors=per_layer(L2, v_scale=T(INF)),
)
case(
    "sgl_k_neginf_v_zero",
    G,
    "k = -inf, v = 0 -> 1.0 / 1.0",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(NINF), v_scale=T(0.0)),
)
case(
    "sgl_v_greater_dup",
    G,
    "k > 0, v <= 0 never uses v; k = 0.5, v = -1",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.5), v_scale=T(-1.0)),
)
case(
    "sgl_f64_to_f32",
    G,
    "float64 on disk: one rounding to the float32 parameter",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(1.0 + 2.0**-8 + 2.0**-30, "F64"), v_scale=T(0.1, "F64")),
)
case(
    "sgl_f64_overflow",
    G,
    "float64 1e300 does not fit the float32 parameter (fill_)",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(1e300, "F64"), v_scale=T(V)),
)
case(
    "sgl_f32_not_rounded_to_bf16",
    G,
    "0.3 float32 stays float32 (no model-dtype rounding)",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(1.7)),
)
case(
    "sgl_f32_fp16_model",
    G,
    "fp16 model: 1e-8 / 1e5 kept as float32 values",
    config=FP8,
    options=sopts(model="float16"),
    tensors=per_layer(L2, k_scale=T(1e-8), v_scale=T(1e5)),
)
case(
    "sgl_fp8_on_disk",
    G,
    "F8_E4M3 scale tensors widened exactly",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(0.0234375, "F8_E4M3"), v_scale=T(0.015625, "F8_E4M3")),
)

# ---- shapes ---------------------------------------------------------------------------
G = "sgl-shape"
case(
    "sgl_per_head_H",
    G,
    "k, v shape [2] (= num_kv_heads) -> size AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2,)), v_scale=T([V, V2], shape=(2,))),
)
case(
    "sgl_per_head_H11",
    G,
    "k, v shape [2,1,1] -> size AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "sgl_per_head_v_only",
    G,
    "k [], v [2,1,1] -> AssertionError on v",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "sgl_shape_111",
    G,
    "shape [1,1,1] loads through fill_",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K, shape=(1, 1, 1)), v_scale=T(V, shape=(1, 1, 1))),
)
case(
    "sgl_shape_1",
    G,
    "shape [1] loads through fill_",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K, shape=(1,)), v_scale=T(V, shape=(1,))),
)
case(
    "sgl_shape_empty",
    G,
    "shape [0] -> size AssertionError",
    config=FP8,
    tensors=per_layer(L2, k_scale=T([], shape=(0,)), v_scale=T(V)),
)

# ---- compressed-tensors ---------------------------------------------------------------
G = "sgl-ct"
case(
    "sgl_ct_tensor_auto",
    G,
    "CT tensor, kv auto -> resolved fp8_e4m3 (kv_cache_quant_algo)",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.3), v_scale=T(0.2)),
)
case(
    "sgl_ct_tensor_fp8",
    G,
    "CT tensor, fp8_e4m3",
    config=CT,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_tensor_k_only",
    G,
    "CT: k only -> v := k (base path; vLLM CT keeps v = 1)",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K)),
)
case(
    "sgl_ct_tensor_v_only",
    G,
    "CT: v only -> AssertionError (vLLM CT: k = 1)",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, v_scale=T(V)),
)
case(
    "sgl_ct_tensor_both_zero",
    G,
    "CT: both 0 -> 1.0 (vLLM CT keeps 0)",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(0.0)),
)
case(
    "sgl_ct_tensor_negative",
    G,
    "CT: both < 0 -> 1.0 (vLLM CT keeps them)",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(-K), v_scale=T(-V)),
)
case(
    "sgl_ct_tensor_fnuz",
    G,
    "CT on fnuz: doubled (vLLM CT never doubles)",
    config=CT,
    options=sopts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_tensor_q",
    G,
    "CT: q_scale is never loaded",
    config=CT,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V), q_scale=T(Q)),
)
case(
    "sgl_ct_attn_head_auto",
    G,
    "CT attn_head: warning, no KV method, scales dropped, bf16 pool",
    config=llama_config(ct_qc("attn_head")),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "sgl_ct_attn_head_fp8",
    G,
    "CT attn_head + fp8_e4m3: fp8 pool, scales None",
    config=llama_config(ct_qc("attn_head")),
    tensors=per_layer(L2, k_scale=T([K, K2], shape=(2, 1, 1)), v_scale=T([V, V2], shape=(2, 1, 1))),
)
case(
    "sgl_ct_attn_head_scalar",
    G,
    "CT attn_head with scalar k/v: still no KV method",
    config=llama_config(ct_qc("attn_head")),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_no_symmetric_dynamic",
    G,
    "scheme without symmetric/dynamic keys is accepted",
    config=llama_config(ct_qc("tensor", symmetric=DROP, dynamic=DROP)),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_no_strategy",
    G,
    "scheme without strategy: unsupported -> warning, no KV method",
    config=llama_config(ct_qc(DROP)),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_dynamic_true",
    G,
    "dynamic true: unsupported -> warning",
    config=llama_config(ct_qc("tensor", dynamic=True)),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_num_bits_4",
    G,
    "num_bits 4: unsupported -> warning (vLLM: NotImplementedError)",
    config=llama_config(ct_qc("tensor", num_bits=4)),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_asymmetric",
    G,
    "symmetric false: unsupported -> warning",
    config=llama_config(ct_qc("tensor", symmetric=False)),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_scheme_null_fp8",
    G,
    "kv_cache_scheme null: no KV method, scales dropped",
    config=llama_config(ct_qc(scheme=None)),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_ct_e5m2",
    G,
    "CT + fp8_e5m2 accepted (vLLM: ValueError)",
    config=CT,
    options=sopts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)

# ---- fnuz (ROCm gfx942) -----------------------------------------------------------------
G = "sgl-fnuz"
case(
    "sgl_fnuz_fp8",
    G,
    "fnuz: loaded k, v doubled",
    config=FP8,
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_fnuz_k_only",
    G,
    "fnuz: k only -> v := k, both doubled",
    config=FP8,
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=T(K)),
)
case(
    "sgl_fnuz_absent",
    G,
    "fnuz: defaults 1.0 not doubled",
    config=FP8,
    options=sopts(platform="fnuz"),
    tensors={},
)
case(
    "sgl_fnuz_zero",
    G,
    "fnuz: both 0 -> 1.0, not doubled",
    config=FP8,
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=T(0.0), v_scale=T(0.0)),
)
case(
    "sgl_fnuz_huge",
    G,
    "fnuz: bf16 3e38 doubled as a Python float -> device inf, host 6e38",
    config=FP8,
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_scale=B(0x7F61, "BF16"), v_scale=T(V)),
)
case(
    "sgl_fnuz_modelopt",
    G,
    "fnuz + ModelOpt FP8: modelopt_fp8 is not a ROCm method",
    config=llama_config(MODELOPT_QC),
    options=sopts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_fnuz_e5m2",
    G,
    "fnuz + fp8_e5m2: pool is the platform fp8 type (e4m3fnuz)",
    config=FP8,
    options=sopts(platform="fnuz", kv="fp8_e5m2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_fnuz_auto_ct",
    G,
    "fnuz + CT + auto: resolved to the platform fp8 type",
    config=CT,
    options=sopts(platform="fnuz", kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_fnuz_quark",
    G,
    "fnuz + Quark: doubled",
    config=llama_config(quark_qc()),
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)

# ---- kv-cache dtype resolution and e5m2 ----------------------------------------------------
G = "sgl-kvdtype"
_fp8_algo = {**FP8_QC, "kv_cache_quant_algo": "FP8"}
case(
    "sgl_auto_fp8_config",
    G,
    "fp8 config, auto: no kv_cache_quant_algo -> bf16 pool, scales still resolved",
    config=FP8,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_auto_fp8_config_v_only",
    G,
    "fp8 config, auto (bf16 pool): v only still asserts",
    config=FP8,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, v_scale=T(V)),
)
case(
    "sgl_auto_fp8_config_algo",
    G,
    "fp8 config with kv_cache_quant_algo FP8: auto -> fp8_e4m3",
    config=llama_config(_fp8_algo),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_auto_fp8_config_algo_lower",
    G,
    "kv_cache_quant_algo 'fp8' (upper-cased): fp8_e4m3",
    config=llama_config({**FP8_QC, "kv_cache_quant_algo": "fp8"}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_bf16_explicit",
    G,
    "--kv-cache-dtype bf16: bf16 pool, scales resolved",
    config=FP8,
    options=sopts(kv="bf16"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_e5m2_fp8_config",
    G,
    "fp8_e5m2 + fp8 checkpoint scales: accepted",
    config=FP8,
    options=sopts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_e5m2_modelopt",
    G,
    "fp8_e5m2 + ModelOpt: accepted",
    config=llama_config(MODELOPT_QC),
    options=sopts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_e5m2_quark",
    G,
    "fp8_e5m2 + Quark (e4m3 KV config): accepted",
    config=llama_config(quark_qc()),
    options=sopts(kv="fp8_e5m2"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "sgl_auto_quark",
    G,
    "Quark, auto: no kv_cache_quant_algo attribute -> bf16 pool",
    config=llama_config(quark_qc()),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
_mo_nvfp4 = {k: v for k, v in MODELOPT_QC.items() if k != "kv_cache_scheme"}
case(
    "sgl_modelopt_kv_algo_nvfp4",
    G,
    "ModelOpt FP8 + kv_cache_quant_algo NVFP4: KV method, auto -> bf16",
    config=llama_config({**_mo_nvfp4, "kv_cache_quant_algo": "NVFP4"}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_kv_algo_auto_str",
    G,
    "kv_cache_quant_algo 'auto' is truthy: KV method",
    config=llama_config({**_mo_nvfp4, "kv_cache_quant_algo": "auto"}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_auto",
    G,
    "ModelOpt kv_cache_scheme float/8: auto -> fp8_e4m3",
    config=llama_config(MODELOPT_QC),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(1.7), v_proj__v_scale=T(1.3)),
)

# ---- quant configs ---------------------------------------------------------------------
G = "sgl-configs"
_mo_noalgo = {k: v for k, v in MODELOPT_QC.items() if k != "quant_algo"}
case(
    "sgl_modelopt_no_quant_algo",
    G,
    "ModelOpt config without quant_algo -> ValueError",
    config=llama_config(_mo_noalgo),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_kv_only",
    G,
    "ModelOpt config with only kv_cache_quant_algo -> ValueError",
    config=llama_config({"quant_method": "modelopt", "kv_cache_quant_algo": "FP8"}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_no_dynamic_key",
    G,
    "ModelOpt kv_cache_scheme without 'dynamic': FP8",
    config=llama_config({**MODELOPT_QC, "kv_cache_scheme": {"num_bits": 8, "type": "float"}}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_kv_scheme_int8",
    G,
    "ModelOpt kv_cache_scheme int/8: no KV method",
    config=llama_config({**MODELOPT_QC, "kv_cache_scheme": {"num_bits": 8, "type": "int"}}),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_no_kv",
    G,
    "ModelOpt without kv quant: no KV method, scales dropped",
    config=llama_config(_mo_nvfp4),
    options=sopts(kv="fp8_e4m3"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_fp8_model_f32",
    G,
    "fp8 config with --dtype float32 -> unsupported act dtype",
    config=llama_config(FP8_QC, torch_dtype="float32"),
    options=sopts(model="float32"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_noquant_scales",
    G,
    "no quantization_config, fp8_e4m3: scales dropped (no error)",
    config=NOQ,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_noquant_auto",
    G,
    "no quantization_config, auto: bf16 pool, scales None",
    config=NOQ,
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_quark_empty_kv_group_auto",
    G,
    "Quark, empty kv_cache_group: KV method anyway",
    config=llama_config(quark_qc(kv_group=[])),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)

# ---- checkpoint names ------------------------------------------------------------------
G = "sgl-names"
case(
    "sgl_vllm_canonical",
    G,
    "vLLM canonical P.attn.k_scale -> attn.attn.k_scale: dropped",
    config=FP8,
    tensors=per_layer(L2, attn__k_scale=T(K), attn__v_scale=T(V)),
)
case(
    "sgl_vllm_canonical_v2",
    G,
    "vLLM canonical names under weight loader v2: loaded",
    config=FP8,
    options=sopts(loader="v2"),
    tensors=per_layer(L2, attn__k_scale=T(K), attn__v_scale=T(V)),
)
case(
    "sgl_llama_k_proj_output_scale",
    G,
    "Llama k_proj.output_scale under fp8: loaded as k",
    config=FP8,
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "sgl_output_scale_no_kv_method",
    G,
    "k_proj.output_scale without KV method: 'Parameter ... not found in params_dict'",
    config=NOQ,
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "sgl_q_prob_names",
    G,
    "q and prob names: all dropped",
    config=FP8,
    tensors=per_layer(
        L2,
        k_scale=T(K),
        v_scale=T(V),
        q_scale=T(Q),
        attn__q_scale=T(Q),
        q_proj__output_scale=T(Q),
        prob_output_scale=T(PROB),
        attn__prob_scale=T(PROB),
    ),
)
case(
    "sgl_kv_scale_no_kv_method",
    G,
    "P.kv_scale without KV method: 'kv_scale is not loaded'",
    config=NOQ,
    tensors=per_layer(L2, kv_scale=T(K)),
)
case(
    "sgl_kv_scale_plus_v",
    G,
    "P.kv_scale and P.v_scale: k from kv_scale, v separate",
    config=FP8,
    tensors=per_layer(L2, kv_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_modelopt_names_fp8",
    G,
    "ModelOpt P.k_proj.k_scale names under fp8 config",
    config=FP8,
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_modelopt_names_v2",
    G,
    "v2 loader: P.k_proj.k_scale -> qkv_proj.k_scale, silent",
    config=FP8,
    options=sopts(loader="v2"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_plain_names_v2",
    G,
    "v2 loader: P.k_scale skipped silently",
    config=FP8,
    options=sopts(loader="v2"),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_kv_scale_v2",
    G,
    "v2 loader: P.kv_scale skipped silently",
    config=FP8,
    options=sopts(loader="v2"),
    tensors=per_layer(L2, kv_scale=T(K)),
)
case(
    "sgl_output_scale_v2",
    G,
    "v2 loader: P.k_proj.output_scale skipped silently",
    config=FP8,
    options=sopts(loader="v2"),
    tensors=per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V)),
)
case(
    "sgl_private_buffer_names",
    G,
    "P.attn._k_scale: not a parameter in SGLang",
    config=FP8,
    tensors=per_layer(L2, attn___k_scale=T(K), attn___v_scale=T(V)),
)

# ---- --quantization-param-path (JSON) ----------------------------------------------------
G = "sgl-json"


def _qp(
    factors: dict[int, float],
    *,
    dtype: str = "float8_e4m3fn",
    model_type: str = "llama",
    tp: int = 1,
) -> dict[str, Any]:
    return {
        "model_type": model_type,
        "kv_cache": {
            "dtype": dtype,
            "scaling_factor": {str(r): {str(i): f for i, f in factors.items()} for r in range(tp)},
        },
    }


case(
    "sgl_json_no_kv_method",
    G,
    "JSON path, no quant config, fp8_e4m3: k_scale = float, k_scale_float stays None",
    config=NOQ,
    quant_param_json=_qp({0: 0.5, 1: 0.25}),
)
case(
    "sgl_json_with_kv_method",
    G,
    "JSON path with an fp8 KV method: TypeError on assignment",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
    quant_param_json=_qp({0: 0.5, 1: 0.25}),
)
case(
    "sgl_json_kv_auto",
    G,
    "JSON path ignored unless --kv-cache-dtype fp8_e4m3",
    config=NOQ,
    options=sopts(kv="auto"),
    quant_param_json=_qp({0: 0.5, 1: 0.25}),
)
case(
    "sgl_json_e5m2_ignored",
    G,
    "JSON path ignored for fp8_e5m2",
    config=NOQ,
    options=sopts(kv="fp8_e5m2"),
    quant_param_json=_qp({0: 0.5, 1: 0.25}),
)
case(
    "sgl_json_bad_dtype",
    G,
    "JSON dtype float8_e5m2: logged, 1.0 defaults (None)",
    config=NOQ,
    quant_param_json=_qp({0: 0.5, 1: 0.25}, dtype="float8_e5m2"),
)
case(
    "sgl_json_missing_file",
    G,
    "JSON file missing: logged",
    config=NOQ,
    quant_param_json={"__missing__": True},
)
case(
    "sgl_json_not_json",
    G,
    "JSON file unparsable: logged",
    config=NOQ,
    quant_param_json={"__raw__": "{not json"},
)
case(
    "sgl_json_layer_count",
    G,
    "JSON with 1 layer for a 2-layer model: logged",
    config=NOQ,
    quant_param_json=_qp({0: 0.5}),
)
case(
    "sgl_json_model_type",
    G,
    "JSON model_type qwen2 for a llama model: logged",
    config=NOQ,
    quant_param_json=_qp({0: 0.5, 1: 0.25}, model_type="qwen2"),
)
case(
    "sgl_json_tp2",
    G,
    "JSON for TP 2 on a TP 1 engine: logged",
    config=NOQ,
    quant_param_json=_qp({0: 0.5, 1: 0.25}, tp=2),
)
case(
    "sgl_json_negative",
    G,
    "JSON negative / zero factors accepted as is",
    config=NOQ,
    quant_param_json=_qp({0: -0.5, 1: 0.0}),
)
case(
    "sgl_json_fnuz",
    G,
    "JSON on fnuz: not doubled",
    config=NOQ,
    options=sopts(platform="fnuz"),
    quant_param_json=_qp({0: 0.5, 1: 0.25}),
)
case(
    "sgl_no_json_fp8_warning",
    G,
    "fp8_e4m3 without a JSON file: warns even though checkpoint scales loaded",
    config=FP8,
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_json_null_model_type",
    G,
    "JSON model_type null for a llama model: rejected, logged",
    config=NOQ,
    quant_param_json={**_qp({0: 0.5, 1: 0.25}), "model_type": None},
)


# ---- other architectures: their own load_weights (tests/parity/sglang_architectures.py) ----
# The checkpoint is the same Llama-shaped two-layer model; config.json names another
# architecture (and the fields its loader reads), so SGLang runs that architecture's own
# load_weights on the names each producer writes.
G = "sgl-arch"


COMMON_HF_FIELDS: dict[str, Any] = {
    "hidden_act": "silu",
    "attention_bias": False,
    "rope_scaling": None,
    "pad_token_id": None,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
"""Fields every transformers config carries (the oracle builds the model with its own
``__init__``, which reads them)."""


def arch_config(arch: str, qc: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    cfg = llama_config(qc)
    cfg["architectures"] = [arch]
    cfg.update(COMMON_HF_FIELDS)
    cfg.update(extra)
    return cfg


_DEEPSEEK_FIELDS: dict[str, Any] = {
    "n_routed_experts": 2,
    "n_shared_experts": 1,
    "num_experts_per_tok": 1,
    "moe_intermediate_size": 64,
    "first_k_dense_replace": 0,
    "moe_layer_freq": 1,
    "n_group": 1,
    "topk_group": 1,
    "routed_scaling_factor": 1.0,
    "norm_topk_prob": True,
    "q_lora_rank": None,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
}
"""A small DeepSeek-V2-Lite-shaped MLA config (q_lora_rank None: no q_a_proj)."""

ARCH_FIELDS = {
    "Qwen2ForCausalLM": {"model_type": "qwen2"},
    "Qwen3ForCausalLM": {"model_type": "qwen3"},
    "Gemma2ForCausalLM": {
        "model_type": "gemma2",
        "tie_word_embeddings": True,
        "hidden_act": "gelu_pytorch_tanh",
        "hidden_activation": "gelu_pytorch_tanh",
        "query_pre_attn_scalar": 8,
        "sliding_window": 128,
        "attn_logit_softcapping": 50.0,
        "final_logit_softcapping": 30.0,
    },
    "MistralForCausalLM": {"model_type": "mistral"},
    "Phi3ForCausalLM": {"model_type": "phi3"},
    "MixtralForCausalLM": {
        "model_type": "mixtral",
        "num_local_experts": 2,
        "num_experts_per_tok": 1,
    },
    "Qwen2MoeForCausalLM": {
        "model_type": "qwen2_moe",
        "num_experts": 2,
        "num_experts_per_tok": 1,
        "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 64,
        "norm_topk_prob": False,
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
    },
    "DeepseekV2ForCausalLM": {"model_type": "deepseek_v2", **_DEEPSEEK_FIELDS},
    "DeepseekV3ForCausalLM": {
        "model_type": "deepseek_v3",
        **_DEEPSEEK_FIELDS,
        "scoring_func": "sigmoid",
        "topk_method": "noaux_tc",
    },
}
_QCS = {"ct": ct_qc("tensor"), "fp8": FP8_QC, "modelopt": MODELOPT_QC, "quark": quark_qc()}
_NAMES: dict[str, tuple[str, dict[str, dict[str, Any]]]] = {
    # producer convention -> (quant config, tensors)
    "llmc": ("ct", per_layer(L2, k_scale=T(K), v_scale=T(V))),
    "modelopt": ("modelopt", per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V))),
    "quark": ("quark", per_layer(L2, k_proj__output_scale=T(K), v_proj__output_scale=T(V))),
    "canonical": ("fp8", per_layer(L2, attn__k_scale=T(K), attn__v_scale=T(V))),
    "kv_scale": ("fp8", per_layer(L2, kv_scale=T(K))),
    "q_prob": ("quark", per_layer(L2, k_scale=T(K), v_scale=T(V), q_proj__output_scale=T(Q))),
    "affine": (
        "modelopt",
        per_layer(
            L2,
            k_proj__k_scale=T(K),
            v_proj__v_scale=T(V),
            k_proj__k_bias=T(0.0),
            v_proj__v_bias=T(0.0),
        ),
    ),
    "mqa": ("fp8", per_layer(L2, attn_mqa__k_scale=T(K), attn_mqa__v_scale=T(V))),
}
_ARCH_CASES: dict[str, tuple[str, ...]] = {
    "Qwen2ForCausalLM": ("llmc", "modelopt", "quark", "canonical", "kv_scale", "affine"),
    "Qwen3ForCausalLM": ("llmc", "modelopt", "quark", "canonical", "affine"),
    "Gemma2ForCausalLM": ("llmc", "modelopt", "quark", "canonical", "kv_scale", "q_prob"),
    "MistralForCausalLM": ("llmc", "modelopt", "quark", "canonical"),
    "Phi3ForCausalLM": ("llmc", "modelopt", "quark"),
    "MixtralForCausalLM": ("llmc", "modelopt", "quark", "canonical", "kv_scale", "affine"),
    "Qwen2MoeForCausalLM": ("llmc", "modelopt", "quark", "canonical"),
    "DeepseekV2ForCausalLM": ("llmc", "modelopt", "mqa"),
    "DeepseekV3ForCausalLM": ("llmc", "modelopt", "quark", "canonical", "mqa", "affine"),
}
for _arch, _conventions in _ARCH_CASES.items():
    for _conv in _conventions:
        _qc_name, _tensors = _NAMES[_conv]
        case(
            f"sgl_arch_{_arch.removesuffix('ForCausalLM').lower()}_{_conv}",
            G,
            f"{_arch}'s own load_weights, {_conv} names under quant_method {_qc_name}",
            config=arch_config(_arch, _QCS[_qc_name], **ARCH_FIELDS[_arch]),
            tensors=_tensors,
        )
case(
    "sgl_arch_qwen2_llmc_no_kv_method",
    G,
    "Qwen2ForCausalLM, llm-compressor names, compressed-tensors attn_head (no KV method)",
    config=arch_config("Qwen2ForCausalLM", ct_qc("attn_head"), **ARCH_FIELDS["Qwen2ForCausalLM"]),
    tensors=per_layer(L2, k_scale=T(K), v_scale=T(V)),
)
case(
    "sgl_arch_gemma2_canonical_no_quant",
    G,
    "Gemma2ForCausalLM, vLLM-canonical names, no quantization_config",
    config=arch_config("Gemma2ForCausalLM", None, **ARCH_FIELDS["Gemma2ForCausalLM"]),
    options=sopts(kv="auto"),
    tensors=per_layer(L2, attn__k_scale=T(K), attn__v_scale=T(V)),
)
case(
    "sgl_arch_deepseekv3_modelopt_fnuz",
    G,
    "DeepseekV3ForCausalLM, ModelOpt names under fp8 (ModelOpt is refused on ROCm), fnuz: "
    "attn_mqa doubled, attn_mha at 1.0",
    config=arch_config("DeepseekV3ForCausalLM", FP8_QC, **ARCH_FIELDS["DeepseekV3ForCausalLM"]),
    options=sopts(platform="fnuz"),
    tensors=per_layer(L2, k_proj__k_scale=T(K), v_proj__v_scale=T(V)),
)
case(
    "sgl_arch_mixtral_llmc_layer1_only",
    G,
    "MixtralForCausalLM: layer 0 ModelOpt names (raise), layer 1 the parameter's own names "
    "and an affine bias (skipped as an extra _bias)",
    config=arch_config("MixtralForCausalLM", FP8_QC, **ARCH_FIELDS["MixtralForCausalLM"]),
    tensors={
        f"{P(0)}.k_proj.k_scale": T(K),
        f"{P(1)}.attn.k_scale": T(K),
        f"{P(1)}.attn.v_scale": T(V),
        f"{P(1)}.v_proj.v_bias": T(0.0),
    },
)

CASES_BY_NAME: dict[str, dict[str, Any]] = {c["name"]: c for c in CASES}
if len(CASES_BY_NAME) != len(CASES):
    raise RuntimeError("duplicate case names")
