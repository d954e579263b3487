"""KV-cache writes: the GPU kernels (Triton), their CPU references, and the FP8 format table.

FP8 per tensor: ``reshape_and_cache_flash`` / ``reference_reshape_and_cache_flash``. MLA latent
rows: ``concat_and_cache_mla`` / ``reference_concat_and_cache_mla`` (:mod:`kvscale.kernel.mla`).
NVFP4 (``nvfp4``, ``nvfp4_4over6``): ``reshape_and_cache_nvfp4`` /
``reference_reshape_and_cache_nvfp4`` and the page layout, dequantization and statistics in
:mod:`kvscale.kernel.nvfp4`. Per-token-head formats: :mod:`kvscale.kernel.per_token_head`. The
Triton kernels are imported on first access, so this package imports without Triton or CUDA;
everything else is plain torch.
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
    from kvscale.kernel import triton_cache, triton_mla, triton_nvfp4
    from kvscale.kernel.jit import TritonUnavailableError
    from kvscale.kernel.triton_cache import reshape_and_cache_flash
    from kvscale.kernel.triton_mla import concat_and_cache_mla
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
    "MLALatentRows",
    "NVFP4ArgumentError",
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
    "reference_reshape_and_cache_nvfp4",
    "reshape_and_cache_flash",
    "reshape_and_cache_nvfp4",
    "resolve_kv_cache_dtype",
    "triton_cache",
    "triton_mla",
    "triton_nvfp4",
    "vllm_mla_skip_scale",
]

_LAZY = {
    "triton_cache": "kvscale.kernel.triton_cache",
    "reshape_and_cache_flash": "kvscale.kernel.triton_cache",
    "TritonUnavailableError": "kvscale.kernel.jit",
    "triton_mla": "kvscale.kernel.triton_mla",
    "concat_and_cache_mla": "kvscale.kernel.triton_mla",
    "triton_nvfp4": "kvscale.kernel.triton_nvfp4",
    "reshape_and_cache_nvfp4": "kvscale.kernel.triton_nvfp4",
}
"""Names served by a Triton module, imported on first access."""


def __getattr__(name: str) -> Any:
    # PEP 562: the Triton modules (and Triton itself, if installed) load on first use only.
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(module_name)
    value = module if name == module_name.rpartition(".")[2] else getattr(module, name)
    globals()[name] = value
    return value
