"""SGLang 0.5.23's ``--kv-cache-dtype`` values and what each one means for the KV cache.

Light on purpose (no other kvscale import): the command line's help lists these values.
"""

from __future__ import annotations

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
