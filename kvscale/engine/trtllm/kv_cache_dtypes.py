"""TensorRT-LLM's KV-cache dtypes as kvscale models them (``kv_cache_config.dtype``).

Light on purpose (no other kvscale import): the command line's help lists these values.
"""

from __future__ import annotations

KV_CACHE_DTYPES = ("auto", "fp8", "nvfp4")
