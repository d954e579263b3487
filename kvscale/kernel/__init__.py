"""FP8 KV-cache write: the GPU kernel (Triton), its CPU reference, and the FP8 format table.

``reshape_and_cache_flash`` and ``concat_and_cache_mla`` (the Triton kernels) are imported on
first access, so this package imports without Triton or CUDA; everything else is plain torch.
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
from kvscale.kernel.mla import (
    MLALatentRows,
    dequantize_mla,
    reference_concat_and_cache_mla,
    vllm_mla_skip_scale,
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
    from kvscale.kernel import triton_cache, triton_mla
    from kvscale.kernel.triton_cache import TritonUnavailableError, reshape_and_cache_flash
    from kvscale.kernel.triton_mla import concat_and_cache_mla

__all__ = [
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "FP8_FORMATS",
    "CacheWriteArgumentError",
    "FP8Format",
    "KVCacheDtype",
    "KVCacheDtypeError",
    "MLALatentRows",
    "TritonUnavailableError",
    "UnknownKVCacheDtypeError",
    "UnsupportedOnDeviceError",
    "clipped",
    "concat_and_cache_mla",
    "dequantize",
    "dequantize_mla",
    "make_stress_values",
    "quantize_to_bits",
    "reference_concat_and_cache_mla",
    "reference_reshape_and_cache_flash",
    "reshape_and_cache_flash",
    "resolve_kv_cache_dtype",
    "triton_cache",
    "triton_mla",
    "vllm_mla_skip_scale",
]

_LAZY = {"reshape_and_cache_flash", "TritonUnavailableError", "triton_cache"}
_LAZY_MLA = {"concat_and_cache_mla", "triton_mla"}


def __getattr__(name: str) -> Any:
    # PEP 562: the Triton modules (and Triton itself, if installed) load on first use only.
    if name in _LAZY_MLA:
        triton_mla = importlib.import_module("kvscale.kernel.triton_mla")
        value = triton_mla if name == "triton_mla" else getattr(triton_mla, name)
        globals()[name] = value
        return value
    if name in _LAZY:
        triton_cache = importlib.import_module("kvscale.kernel.triton_cache")
        value = triton_cache if name == "triton_cache" else getattr(triton_cache, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
