"""FP8 KV-cache write: the GPU kernel (Triton), its CPU reference, and the FP8 format table.

``reshape_and_cache_flash`` (the Triton kernel) is imported on first access, so this package
imports without Triton or CUDA; everything else is plain torch.
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
from kvscale.kernel.reference import (
    CacheWriteArgumentError,
    clipped,
    dequantize,
    make_stress_values,
    quantize_to_bits,
    reference_reshape_and_cache_flash,
)

if TYPE_CHECKING:
    from kvscale.kernel import triton_cache
    from kvscale.kernel.triton_cache import TritonUnavailableError, reshape_and_cache_flash

__all__ = [
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "FP8_FORMATS",
    "CacheWriteArgumentError",
    "FP8Format",
    "KVCacheDtype",
    "KVCacheDtypeError",
    "TritonUnavailableError",
    "UnknownKVCacheDtypeError",
    "UnsupportedOnDeviceError",
    "clipped",
    "dequantize",
    "make_stress_values",
    "quantize_to_bits",
    "reference_reshape_and_cache_flash",
    "reshape_and_cache_flash",
    "resolve_kv_cache_dtype",
    "triton_cache",
]

_LAZY = {"reshape_and_cache_flash", "TritonUnavailableError", "triton_cache"}


def __getattr__(name: str) -> Any:
    # PEP 562: the Triton module (and Triton itself, if installed) loads on first use only.
    if name in _LAZY:
        triton_cache = importlib.import_module("kvscale.kernel.triton_cache")
        value = triton_cache if name == "triton_cache" else getattr(triton_cache, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
