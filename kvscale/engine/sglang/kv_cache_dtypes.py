"""SGLang 0.5.23's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (only the torch-free ``kvscale.cache_formats`` and ``kvscale.floats``): the
command line's help lists these values.
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
from kvscale.floats import to_float32

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
    """The format a dtype string stores (``configure_kv_cache_dtype``,
    ``srt/mem_cache/kv_cache_dtype.py:59-71``). On HIP both ``fp8_e4m3`` and ``fp8_e5m2`` are
    the platform's fp8 ("Using natively supported format": e4m3fnuz on gfx94x), ``mxfp8``
    stays e4m3fn; an MLA model with ``nvfp4`` gets ``MLATokenToKVPoolFP4`` (MX-style UE8M0
    per-16 blocks, no global scale, no scale argument: ``kv_cache_configurator.py:1874-1875``,
    ``memory_pool.py:5209``), and ``fp4_mx_block16`` ignores the scales on MHA too
    (``FP4MXBlock16KVCacheMethod``, ``fp4_kv_cache_quant_method.py:771-860``)."""
    fmt = _FORMATS[kv_cache_dtype]
    if fmt in (FP8_E4M3, FP8_E5M2) and platform == "fnuz":
        return FP8_E4M3FNUZ
    if fmt is NVFP4 and latent:
        return FP4_MX_BLOCK16
    return fmt


E2M1_MAX = 6.0
"""``srt/layers/quantization/kvfp4_tensor.py:19``."""

E2M1_SCALED_ARCHS = frozenset(["sm100", "sm103"])
"""The ``--gpu-arch`` values SGLang's ``get_platform().is_sm100`` is true on (device capability
major 10: B200/GB200, B300/GB300); SM90, SM110, SM120 and SM121 are not (the oracle ran
SGLang's own platform probes on each)."""


def nvfp4_global_scale(value: float | None, gpu_arch: str) -> float:
    """The NVFP4 global scale of one layer's K or V on ``gpu_arch``
    (``NVFP4KVCacheMethod.load_scales_from_model``, ``fp4_kv_cache_quant_method.py:532-562``):
    ``float(layer.k_scale)`` (1.0 without a KV method), times ``E2M1_MAX`` on SM100 when it is
    not exactly 1.0 ("Keep that neutral fallback"); the quantizer reads the float32 copy
    (``k_scales_gpu``), so the product is rounded to float32."""
    scale = 1.0 if value is None else value
    if gpu_arch in E2M1_SCALED_ARCHS and scale != 1.0:
        scale = to_float32(scale * E2M1_MAX)
    return scale
