"""vLLM 0.33.0's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (only the torch-free ``kvscale.cache_formats``): the command line's help lists
these values.
"""

from __future__ import annotations

from kvscale.cache_formats import (
    FP8_DS_MLA,
    FP8_E4M3,
    FP8_E4M3FNUZ,
    FP8_E5M2,
    FP8_INC,
    FP8_PER_TOKEN_HEAD,
    INT4_PER_TOKEN_HEAD,
    INT8_PER_TOKEN_HEAD,
    MODEL_DTYPE,
    NVFP4,
    NVFP4_4OVER6,
    NVFP4_DS_MLA,
    OCTAVE,
    TURBOQUANT,
    ULTRAQUANT_4BIT,
    CacheFormat,
)

KV_CACHE_DTYPES = (
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4_ds_mla",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "octave_k3v4",
    "octave_k3v3",
    "octave_k3v3_compact",
    "ultraquant_4bit",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
)
"""``CacheDType`` in vLLM v0.33.0 ``vllm/config/cache.py``."""

PER_TOKEN_HEAD_DTYPES = frozenset(
    ["int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"]
)


def is_quantized_kv_cache(kv_cache_dtype: str) -> bool:
    """``get_kv_quant_mode(d) != NONE`` (``vllm/v1/kv_cache_interface.py``)."""
    if kv_cache_dtype in PER_TOKEN_HEAD_DTYPES:
        return True
    return kv_cache_dtype.startswith(("fp8", "nvfp4", "turboquant_", "octave_", "ultraquant_4bit"))


def uses_per_token_head_scales(kv_cache_dtype: str) -> bool:
    return kv_cache_dtype in PER_TOKEN_HEAD_DTYPES


_FORMATS: dict[str, CacheFormat] = {
    "auto": MODEL_DTYPE,
    "float16": MODEL_DTYPE,
    "bfloat16": MODEL_DTYPE,
    "fp8": FP8_E4M3,
    "fp8_e4m3": FP8_E4M3,
    "fp8_e5m2": FP8_E5M2,
    # Intel Gaudi's FP8 (vllm-gaudi plugin): float8_e4m3fn storage, per-tensor scales resolved
    # as for fp8 by BaseKVCacheMethod, but no backend in vLLM's tree writes it.
    "fp8_inc": FP8_INC,
    "fp8_ds_mla": FP8_DS_MLA,
    "nvfp4_ds_mla": NVFP4_DS_MLA,
    "nvfp4": NVFP4,
    "nvfp4_4over6": NVFP4_4OVER6,
    "int8_per_token_head": INT8_PER_TOKEN_HEAD,
    "fp8_per_token_head": FP8_PER_TOKEN_HEAD,
    "int4_per_token_head": INT4_PER_TOKEN_HEAD,
    **TURBOQUANT,
    **OCTAVE,
    "ultraquant_4bit": ULTRAQUANT_4BIT,
}
assert set(_FORMATS) == set(KV_CACHE_DTYPES)


def cache_format(kv_cache_dtype: str, platform: str) -> CacheFormat:
    """The format a dtype string stores: ``fp8``/``fp8_e4m3`` are e4m3fnuz on ROCm MI300
    (``current_platform.fp8_dtype()``, ``STR_DTYPE_TO_TORCH_DTYPE``)."""
    fmt = _FORMATS[kv_cache_dtype]
    if fmt is FP8_E4M3 and platform == "fnuz":
        return FP8_E4M3FNUZ
    return fmt
