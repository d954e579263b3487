"""vLLM 0.33.0's attention backends and the KV-cache dtypes each can run.

``--attention-backend NAME`` (any case, as vLLM's ``AttentionConfig.validate_backend_before``
takes it) forces one backend for every attention layer; vLLM then refuses to start when
``validate_configuration`` (v1/attention/backend.py) gives a reason: the dtype not in the
backend's ``supports_kv_cache_dtype``, a compute capability or head size it does not run, a
dtype/head/capability combination its ``supports_combination`` refuses, or an MLA model on a
non-MLA backend. Without the flag vLLM picks the first valid backend of its platform's list
and fails only when none is valid.

``BACKENDS`` (``backend_table.py``, rendered from ``tests/parity/vllm_backends.json``) holds,
per backend, the compute capabilities, dtypes and head sizes it runs and the static refusals of
``supports_combination``; this module answers with it. Torch-free (``inspect`` imports it).
"""

from __future__ import annotations

from kvscale.engine.vllm.backend_table import BACKENDS as BACKENDS
from kvscale.engine.vllm.backend_table import PROBED_HEAD_SIZES as PROBED_HEAD_SIZES
from kvscale.engine.vllm.backend_types import Backend
from kvscale.engine.vllm.kv_cache_dtypes import is_quantized_kv_cache

PER_HEAD_BACKENDS = ("flash_attn",)
"""Backends whose cache write indexes per-head k/v scales by head: FLASH_ATTN's CUDA
``reshape_and_cache_flash`` (csrc/libtorch_stable/cache_kernels.cu); TRITON_ATTN's write reads
element 0 for every head (``per-head-collapsed``). Code reading: the oracle records no per-head
fact."""


def capability(gpu_arch: str) -> str:
    """``sm90`` -> ``9.0``, ``sm100`` -> ``10.0`` (``--gpu-arch`` values are NVIDIA's)."""
    digits = gpu_arch.removeprefix("sm")
    return f"{digits[:-1]}.{digits[-1]}"


def lookup(name: str) -> Backend | None:
    """The backend ``--attention-backend NAME`` selects (vLLM upper-cases the name)."""
    return BACKENDS.get(name.upper())


def reasons(
    backend: Backend,
    kv_cache_dtype: str,
    *,
    mla: bool,
    head_size: int | None = None,
    gpu_arch: str | None = None,
) -> list[str]:
    """Why ``validate_configuration`` refuses this backend for a layer, in vLLM's words, as far
    as the facts given decide it (an unknown head size or GPU rules nothing out)."""
    cap = capability(gpu_arch) if gpu_arch is not None and backend.vendor == "cuda" else None
    out: list[str] = []
    if head_size in PROBED_HEAD_SIZES and head_size not in backend.head_sizes:
        out.append("head_size not supported")
    accepted = kv_cache_dtype in backend.kv_cache_dtypes or (
        kv_cache_dtype in backend.limited
        and (cap is None or cap in backend.limited[kv_cache_dtype])
    )
    if not accepted:
        out.append("kv_cache_dtype not supported")
    if mla != backend.mla:
        out.append("MLA not supported" if mla else "non-MLA not supported")
    if gpu_arch is not None and backend.vendor != "cuda":
        out.append(f"a {backend.vendor} backend, not for an NVIDIA GPU")
    elif cap is not None and backend.capabilities is not None and cap not in backend.capabilities:
        out.append("compute capability not supported")
    for refusal in backend.refusals:
        if (
            refusal.kv_cache_dtype == kv_cache_dtype
            and (refusal.head_size is None or refusal.head_size == head_size)
            and cap in refusal.capabilities
        ):
            out.append(refusal.reason)
    return out


def backends_for(
    kv_cache_dtype: str,
    *,
    mla: bool,
    head_size: int | None = None,
    gpu_arch: str | None = None,
) -> list[str]:
    """The backends that can run ``kv_cache_dtype`` on a model of this kind (head size, GPU)."""
    return [
        b.name
        for b in BACKENDS.values()
        if not reasons(b, kv_cache_dtype, mla=mla, head_size=head_size, gpu_arch=gpu_arch)
    ]


def sparse_mla_kv_cache_dtype(attention_backend: str | None, kv_cache_dtype: str) -> str:
    """``_canonicalize_sparse_mla_kv_cache_dtype`` (layers/attention/mla_attention.py): on
    FLASHMLA_SPARSE every quantized dtype but ``nvfp4_ds_mla`` is served as ``fp8_ds_mla``; on
    FLASHINFER_MLA_SPARSE_SM120 ``auto``, ``fp8`` and ``fp8_e4m3`` are. It runs after the skip
    list, so a skipped layer on SM120 is ``fp8_ds_mla`` too."""
    name = attention_backend.upper() if attention_backend else None
    if name == "FLASHMLA_SPARSE" and is_quantized_kv_cache(kv_cache_dtype):
        return kv_cache_dtype if kv_cache_dtype == "nvfp4_ds_mla" else "fp8_ds_mla"
    if name == "FLASHINFER_MLA_SPARSE_SM120" and kv_cache_dtype in ("auto", "fp8", "fp8_e4m3"):
        return "fp8_ds_mla"
    return kv_cache_dtype
