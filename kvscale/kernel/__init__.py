"""KV-cache writes: the GPU kernels (Triton), their CPU references, and the FP8 format table.

FP8: ``reshape_and_cache_flash`` / ``reference_reshape_and_cache_flash``. NVFP4 (``nvfp4``,
``nvfp4_4over6``): ``reshape_and_cache_nvfp4`` / ``reference_reshape_and_cache_nvfp4`` and the
page layout, dequantization and statistics in :mod:`kvscale.kernel.nvfp4`. The Triton kernels
are imported on first access, so this package imports without Triton or CUDA; everything else
is plain torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from kvscale.kernel.formats import (
    E4M3FN,
    E4M3FNUZ,
    E5M2,
    FP8_FORMATS,
    FP8Format,
    KVCacheDtype,
    KVCacheDtypeError,
    UnknownKVCacheDtypeError,
    UnsupportedOnDeviceError,
    resolve_kv_cache_dtype,
)
from kvscale.kernel.nvfp4 import (
    NVFP4ArgumentError,
    reference_reshape_and_cache_nvfp4,
)
from kvscale.kernel.reference import (
    CacheWriteArgumentError,
    clipped,
    dequantize,
    make_stress_values,
    quantize_to_bits,
    reference_reshape_and_cache_flash,
)

if TYPE_CHECKING:
    from kvscale.kernel import triton_cache, triton_nvfp4
    from kvscale.kernel.triton_cache import TritonUnavailableError, reshape_and_cache_flash
    from kvscale.kernel.triton_nvfp4 import reshape_and_cache_nvfp4

__all__ = [
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "FP8_FORMATS",
    "CacheWriteArgumentError",
    "FP8Format",
    "KVCacheDtype",
    "KVCacheDtypeError",
    "NVFP4ArgumentError",
    "TritonUnavailableError",
    "UnknownKVCacheDtypeError",
    "UnsupportedOnDeviceError",
    "clipped",
    "dequantize",
    "make_stress_values",
    "quantize_to_bits",
    "reference_reshape_and_cache_flash",
    "reference_reshape_and_cache_nvfp4",
    "reshape_and_cache_flash",
    "reshape_and_cache_nvfp4",
    "resolve_kv_cache_dtype",
    "triton_cache",
    "triton_nvfp4",
]

_LAZY = {"reshape_and_cache_flash", "TritonUnavailableError", "triton_cache"}
_LAZY_NVFP4 = {"reshape_and_cache_nvfp4", "triton_nvfp4"}


def __getattr__(name: str) -> Any:
    # PEP 562: the Triton module (and Triton itself, if installed) loads on first use only.
    if name in _LAZY:
        triton_cache = importlib.import_module("kvscale.kernel.triton_cache")
        value = triton_cache if name == "triton_cache" else getattr(triton_cache, name)
        globals()[name] = value
        return value
    if name in _LAZY_NVFP4:
        triton_nvfp4 = importlib.import_module("kvscale.kernel.triton_nvfp4")
        value = triton_nvfp4 if name == "triton_nvfp4" else getattr(triton_nvfp4, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
