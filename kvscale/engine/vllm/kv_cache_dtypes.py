"""vLLM 0.33.0's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (no other kvscale import): the command line's help lists these values.
"""

from __future__ import annotations

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
