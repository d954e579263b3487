"""vLLM 0.33.0's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (only the torch-free ``kvscale.cache_formats`` and ``model_config``): the
command line's help lists these values.
"""

from __future__ import annotations

from kvscale.cache_formats import (
    FP8_DS_MLA,
    FP8_E4M3,
    FP8_E4M3FNUZ,
    FP8_E5M2,
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
from kvscale.model_config import ModelShape

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
    # as for fp8 (no in-tree backend writes it).
    "fp8_inc": FP8_E4M3,
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


BACKENDS: dict[str, tuple[str, ...]] = {
    "fp8": ("flash_attn", "flashinfer", "triton_attn"),
    "fp8_e4m3": ("flash_attn", "flashinfer", "triton_attn"),
    "fp8_e5m2": ("flashinfer", "triton_attn"),
    "nvfp4": ("flashinfer",),
    "nvfp4_4over6": ("flashinfer",),
    "int8_per_token_head": ("triton_attn",),
    "fp8_per_token_head": ("triton_attn",),
    "int4_per_token_head": ("triton_attn",),
}
"""Which of the modelled backends (``--attention-backend``) list a dtype in their
``supported_kv_cache_dtypes`` (``v1/attention/backends/*.py``); a dtype not here is run by none
of them (a TurboQuant/Octave/UltraQuant backend, or none in the tree)."""

PER_HEAD_BACKENDS = ("flash_attn",)
"""Backends whose cache write indexes per-head scales by head (the CUDA
``reshape_and_cache_flash``); triton_attn's write uses head 0's (``per-head-collapsed``)."""

BOUNDARY_SKIP_DTYPES = frozenset([*TURBOQUANT, "ultraquant_4bit"])
"""``EngineArgs.create_engine_config`` (engine/arg_utils.py) adds boundary skip layers for
these packed formats."""


def boundary_skip_layers(kv_cache_dtype: str, shape: ModelShape) -> tuple[str, ...]:
    """``TurboQuantConfig.get_boundary_skip_layers`` (model_executor/layers/quantization/
    turboquant/config.py): the first and last ``min(2, num_hidden_layers // 2)`` layer indices of
    a dense model, as strings; none for hybrid models (layers that cache no K/V)."""
    if kv_cache_dtype not in BOUNDARY_SKIP_DTYPES:
        return ()
    if shape.layer_types is not None or shape.hybrid_override_pattern is not None:
        hybrid = shape.hybrid_override_pattern is not None or any(
            "attention" not in t.lower() or "linear" in t.lower() for t in shape.layer_types or ()
        )
        if hybrid:
            return ()
    layers = shape.num_hidden_layers or 0
    n = min(2, layers // 2)
    if n <= 0:
        return ()
    return tuple(str(i) for i in sorted(set(range(n)) | set(range(layers - n, layers))))
