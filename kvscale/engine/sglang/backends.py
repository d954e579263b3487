"""Which copy of the KV scales each SGLang 0.5.23 attention backend uses, and where that goes
wrong (code reading of the wheel; ``srt/layers/attention/``).

* flashinfer: writes through ``set_kv_buffer(..., layer.k_scale, layer.v_scale)`` (a division
  in the model dtype); reads the host ``k_scale_float`` / ``v_scale_float``, whatever the pool;
* triton: the same write; reads ``k_scale_float`` when ``layer.k_scale`` is set, any pool;
* fa3: the same write; reads the device ``layer.k_scale``, only when the dtype is not ``auto``;
* trtllm_mha: a fused writer (``x * (1/s)``) for an e4m3 pool, else ``set_kv_buffer``; reads
  the host float only for an e4m3fn pool (an e5m2 pool is written divided and read at 1.0);

An MLA model's latent cache (``MLATokenToKVPool``: ``set_kv_buffer`` takes no scale and casts,
``memory_pool.py:4942-4971``) is another story per backend (``MLA_PATHS``): flashinfer and fa3
ignore the scale on both sides; triton divides before the write and multiplies K by k and V
(the latent again) by v; flashmla, trtllm_mla and cutedsl_mla write unscaled but multiply the
scores by k on read; aiter hands it to a kernel that is not in the wheel.
"""

from __future__ import annotations

from dataclasses import dataclass

from kvscale.problems import Severity

ATTENTION_BACKENDS = (
    "flashinfer",
    "triton",
    "fa3",
    "trtllm_mha",
    "flashmla",
    "trtllm_mla",
    "cutedsl_mla",
    "aiter",
)
"""``--attention-backend`` values (``srt/arg_groups/choices.py:69``) whose scale handling is
modelled; the MLA-only ones (flashmla, trtllm_mla, cutedsl_mla) for latent caches only."""

MLA_ONLY = frozenset(["flashmla", "trtllm_mla", "cutedsl_mla"])

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
    return None


def model_kind_refusal(backend: str | None, mla: bool) -> str | None:
    """SGLang's refusal at start of a backend built for the other kind of model
    (``layers/attention/attention_registry.py``), or None."""
    if backend in ("trtllm_mla", "cutedsl_mla") and not mla:
        line = "96-97" if backend == "trtllm_mla" else "120-121"
        return (
            f"ValueError: {backend} backend can only be used with MLA models. "
            f"(attention_registry.py:{line})"
        )
    if backend == "trtllm_mha" and mla:
        return (
            "ValueError: trtllm_mha backend can only be used with non-MLA models. "
            "(attention_registry.py:279-280)"
        )
    return None


@dataclass(frozen=True)
class MlaPath:
    """What one attention backend does with an MLA layer's k/v scales."""

    backend: str
    text: str
    """What it does, citing the code (``srt/layers/attention/``)."""
    severity: Severity | None
    """None: the cache is written and read alike (the scale is applied consistently, or the
    checkpoint's scale has no effect because it is 1.0); warning: the scale is ignored on
    both sides (the cache runs at 1.0); error: written and read with different scales."""
    code: str = "scales-ignored-by-backend"


def mla_path(backend: str, kv_cache_dtype: str, k: float, v: float) -> MlaPath | None:
    """What ``backend`` does with a latent cache of ``kv_cache_dtype`` whose layer holds k / v
    (after loading); None: the backend does not run MLA (``trtllm_mha``)."""
    fp8 = kv_cache_dtype in ("fp8_e4m3", "fp8_e5m2")
    scaled = k != 1.0
    if backend in ("flashinfer", "fa3"):
        where = (
            "flashinfer_mla_backend.py:102, 725: the kernels are planned in the model dtype"
            if backend == "flashinfer"
            else "flashattention_backend.py:1428: only heads <= 256 are descaled, never the latent"
        )
        text = f"{backend} writes the latent unscaled and reads no scale ({where})"
        if fp8 and scaled:
            return MlaPath(
                backend,
                text + ": the checkpoint's k_scale is ignored, the cache runs at 1.0",
                Severity.WARNING,
            )
        return MlaPath(backend, text, None)
    if backend == "triton":
        text = (
            "triton divides the latent by k_scale in the model dtype before the unscaled write "
            "of a decode step (triton_backend.py:2329) and reads every token's K with "
            "k_scale_float and V, the same latent, with v_scale_float (:2369-2370), but a "
            "prompt without a cached prefix goes to the MHA path, whose write takes no scale "
            "(attention_backend_handler.py:247-251, forward_mha.py:596-610)"
        )
        if k != 1.0 or v != 1.0:
            return MlaPath(
                backend,
                text + f": prompt tokens are read with scores x {k!r} and values x {v!r}, "
                f"decode tokens with values x {v / k if k else float('inf'):.6g}",
                Severity.ERROR,
            )
        return MlaPath(backend, text, None)
    if backend == "flashmla":
        text = (
            "flashmla writes the latent unscaled (flashmla_backend.py:447) but on decode quantizes "
            "q with k_scale and descales q and k by k_scale (:462-476)"
        )
        if fp8 and scaled:
            return MlaPath(
                backend, text + f": every score is multiplied by k_scale ({k!r})", Severity.ERROR
            )
        return MlaPath(backend, text, None)
    if backend in ("trtllm_mla", "cutedsl_mla"):
        if backend == "trtllm_mla" and kv_cache_dtype not in ("fp8_e4m3", "bf16", "auto"):
            return MlaPath(
                backend,
                "trtllm_mla accepts only --kv-cache-dtype fp8_e4m3, bf16 or auto "
                f"(arg_groups/overrides.py:1207-1214): SGLang refuses {kv_cache_dtype} at start",
                Severity.ERROR,
                "backend-unsupported-dtype",
            )
        text = (
            f"{backend} writes the latent with a plain FP8 cast (trtllm_mla_backend.py:1262"
            + (", cutedsl_mla_backend.py:217" if backend == "cutedsl_mla" else "")
            + ") and sets bmm1 = k_scale_float x the softmax scale for a float8_e4m3fn cache "
            "only, with no V scale (trtllm_mla_backend.py:959-974)"
        )
        if kv_cache_dtype == "fp8_e4m3" and scaled:
            return MlaPath(
                backend, text + f": every score is multiplied by k_scale ({k!r})", Severity.ERROR
            )
        return MlaPath(backend, text, None)
    if backend == "aiter":
        return MlaPath(
            backend,
            "aiter hands attn_mqa.k_scale to its fused rope + cache-write kernel "
            "(forward_mla_rocm.py:418, 486), which is not in the wheel: kvscale cannot say what "
            "it does with it",
            Severity.WARNING if scaled else None,
        )
    return None
