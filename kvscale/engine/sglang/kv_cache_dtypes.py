"""SGLang 0.5.23's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (only the torch-free ``kvscale.cache_formats``): the command line's help lists
these values.
"""

from __future__ import annotations

from kvscale.cache_formats import (
    FP4_MX_BLOCK16,
    FP8_E4M3,
    FP8_E4M3FNUZ,
    FP8_E5M2,
    MODEL_DTYPE,
    MXFP8,
    NVFP4,
    CacheFormat,
)

KV_CACHE_DTYPES = (
    "auto",
    "fp8_e5m2",
    "fp8_e4m3",
    "mxfp8",
    "bf16",
    "bfloat16",
    "nvfp4",
    "fp4_mx_block16",
)
"""``--kv-cache-dtype`` choices (``srt/arg_groups/fields/model.py``): vLLM's ``fp8`` is not one."""

FP8_KV_CACHE_DTYPES = frozenset(["fp8_e4m3", "fp8_e5m2"])
"""Per-tensor FP8 pools: the cache write divides by the k/v scales."""


_FORMATS: dict[str, CacheFormat] = {
    "auto": MODEL_DTYPE,
    "fp8_e5m2": FP8_E5M2,
    "fp8_e4m3": FP8_E4M3,
    "mxfp8": MXFP8,
    "bf16": MODEL_DTYPE,
    "bfloat16": MODEL_DTYPE,
    "nvfp4": NVFP4,
    "fp4_mx_block16": FP4_MX_BLOCK16,
}
assert set(_FORMATS) == set(KV_CACHE_DTYPES)


def cache_format(kv_cache_dtype: str, platform: str, *, latent: bool) -> CacheFormat:
    """The format a dtype string stores. ``fp8_e4m3`` on HIP is the platform's fp8 (e4m3fnuz on
    gfx94x); an MLA model with ``nvfp4`` gets ``MLATokenToKVPoolFP4`` (MX-style UE8M0 per-16
    blocks, no global scale: ``mem_cache/kv_cache_configurator.py``)."""
    fmt = _FORMATS[kv_cache_dtype]
    if fmt is FP8_E4M3 and platform == "fnuz":
        return FP8_E4M3FNUZ
    if fmt is NVFP4 and latent:
        return FP4_MX_BLOCK16
    return fmt
