"""Which copy of the KV scales each SGLang 0.5.23 attention backend uses, and where that goes
wrong (code reading of the wheel; ``srt/layers/attention/``).

* flashinfer: writes through ``set_kv_buffer(..., layer.k_scale, layer.v_scale)`` (a division
  in the model dtype); reads the host ``k_scale_float`` / ``v_scale_float``, whatever the pool;
* triton: the same write; reads ``k_scale_float`` when ``layer.k_scale`` is set, any pool;
* fa3: the same write; reads the device ``layer.k_scale``, only when the dtype is not ``auto``;
* trtllm_mha: a fused writer (``x * (1/s)``) for an e4m3 pool, else ``set_kv_buffer``; reads
  the host float only for an e4m3fn pool (an e5m2 pool is written divided and read at 1.0);
* flashmla: ``set_kv_buffer`` without scales; reads the device ``k_scale`` for K and Q.
"""

from __future__ import annotations

ATTENTION_BACKENDS = ("flashinfer", "triton", "fa3", "trtllm_mha", "flashmla")

# Backends that multiply by the checkpoint scales on read even when the pool is bf16
# (flashinfer_backend.py:1436-1438, 1499-1500; triton_backend.py:1835-1840).
READS_SCALES_ON_ANY_POOL = frozenset(["flashinfer", "triton"])


def backend_problem(
    backend: str | None, kv_cache_dtype: str, pool_is_fp8: bool
) -> tuple[str, str] | None:
    """(code, message) of a write/read disagreement for this backend and pool, or None.

    ``backend`` None: the default depends on the GPU and model; the FlashInfer/Triton case is
    reported as a risk.
    """
    if not pool_is_fp8:
        if backend is None or backend in READS_SCALES_ON_ANY_POOL:
            who = backend or "flashinfer and triton (the usual defaults)"
            return (
                "scales-on-unquantized-cache",
                f"the KV cache is {kv_cache_dtype} (not FP8): the write does not divide by the "
                f"checkpoint scales, but {who} still multiply attention by k_scale_float / "
                "v_scale_float on read, so logits and outputs are off by those factors "
                "(srt/layers/attention/flashinfer_backend.py, triton_backend.py); serve with "
                "--kv-cache-dtype fp8_e4m3, or remove the scales",
            )
        return None
    if backend == "trtllm_mha" and kv_cache_dtype == "fp8_e5m2":
        return (
            "scales-ignored-by-backend",
            "trtllm_mha applies scales only to an fp8_e4m3 pool: with fp8_e5m2 the write divides "
            "by k_scale but the read uses 1.0 (trtllm_mha_backend.py:_get_bmm_scales)",
        )
    if backend == "flashmla":
        return (
            "scales-ignored-by-backend",
            "flashmla writes the cache without scales but descales K and Q by k_scale on read "
            "(flashmla_backend.py): with k_scale != 1 attention is off by that factor",
        )
    return None
