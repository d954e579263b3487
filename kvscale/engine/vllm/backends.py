"""vLLM 0.33.0's attention backends and the KV-cache dtypes each can run.

``--attention-backend NAME`` (any case, as vLLM's ``AttentionConfig.validate_backend_before``
takes it) forces one backend for every attention layer; vLLM then refuses to start when
``validate_configuration`` (v1/attention/backend.py) gives a reason: the dtype not in the
backend's ``supports_kv_cache_dtype``, a compute capability or head size it does not run, a
dtype/head/capability combination its ``supports_combination`` refuses, or an MLA model on a
non-MLA backend. Without the flag vLLM picks the first valid backend of its platform's list
and fails only when none is valid.

``BACKENDS`` is what ``tests/parity/vllm_dtype_oracle.py`` recorded by asking every backend
class of the registry (``tests/parity/vllm_backends.json``, ``backends``), folded per backend:
the compute capabilities it runs on (None: every one of its vendor's, or a CPU/XPU backend),
the dtypes it accepts on all of them, the dtypes it accepts on some only (``limited``), the
head sizes it runs of those probed (64, 80, 96, 128, 192, 256, 512, 576), and the static
refusals of ``supports_combination``. An answer that depends on the machine (flash-attn
version, an installed package, an environment variable) counts as accepted: kvscale cannot
rule it out. ``tests/engine/vllm/test_backends.py`` folds the evidence file again and requires
this table. Torch-free (``inspect`` imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kvscale.engine.vllm.kv_cache_dtypes import is_quantized_kv_cache

PROBED_HEAD_SIZES = (64, 80, 96, 128, 192, 256, 512, 576)
"""The head sizes the oracle asked every backend about (an MLA layer's is 576)."""


@dataclass(frozen=True)
class Refusal:
    """One static refusal of a backend's ``supports_combination``."""

    kv_cache_dtype: str
    head_size: int | None
    """The head size it refuses (None: an MLA backend's, asked at the latent row only)."""
    capabilities: tuple[str, ...]
    reason: str
    """vLLM's own words."""


@dataclass(frozen=True)
class Backend:
    """One ``AttentionBackendEnum`` member with a backend class."""

    name: str
    vendor: str
    """``cuda``, ``rocm``, ``cpu`` or ``xpu``: the platform whose backend list holds it."""
    mla: bool = False
    sparse: bool = False
    capabilities: tuple[str, ...] | None = None
    """Compute capabilities ``supports_compute_capability`` accepts (None: every one)."""
    kv_cache_dtypes: tuple[str, ...] = ()
    """Dtypes ``supports_kv_cache_dtype`` accepts on every capability it runs on."""
    limited: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Dtypes it accepts on these capabilities only."""
    head_sizes: tuple[int, ...] = ()
    """Of ``PROBED_HEAD_SIZES``, those ``supports_head_size`` accepts."""
    refusals: tuple[Refusal, ...] = ()

    def accepts(self, kv_cache_dtype: str) -> bool:
        """The dtype runs on this backend on some capability."""
        return kv_cache_dtype in self.kv_cache_dtypes or kv_cache_dtype in self.limited


BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "FLASH_ATTN",
            "cuda",
            capabilities=("8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 80, 96, 128, 192, 256),
        ),
        Backend(
            "FLASH_ATTN_DIFFKV",
            "cuda",
            capabilities=("8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 80, 96, 128, 192, 256),
        ),
        Backend(
            "TRITON_ATTN",
            "cuda",
            kv_cache_dtypes=(
                "auto",
                "float16",
                "bfloat16",
                "fp8",
                "fp8_e4m3",
                "fp8_e5m2",
                "int4_per_token_head",
                "int8_per_token_head",
                "fp8_per_token_head",
            ),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "TRITON_ATTN_DIFFKV",
            "cuda",
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "TRITON_FLASH_ATTN",
            "cuda",
            capabilities=("9.0",),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(256,),
        ),
        Backend(
            "ROCM_ATTN",
            "rocm",
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 80, 96, 128, 192, 256),
        ),
        Backend(
            "ROCM_SEGMENTED_ATTN",
            "rocm",
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 128, 256),
        ),
        Backend(
            "ROCM_AITER_MLA",
            "rocm",
            mla=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "ROCM_AITER_TRITON_MLA",
            "rocm",
            mla=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "ROCM_AITER_FA",
            "rocm",
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 128, 256),
        ),
        Backend(
            "ROCM_AITER_MLA_SPARSE",
            "rocm",
            mla=True,
            sparse=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "XPU_MLA_SPARSE",
            "xpu",
            mla=True,
            sparse=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16"),
            head_sizes=(576,),
        ),
        Backend(
            "FLASHINFER",
            "cuda",
            capabilities=("8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "11.0", "12.0", "12.1"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            limited={
                "nvfp4": ("8.0", "8.6", "8.9", "9.0", "10.0", "10.3", "12.0", "12.1"),
                "nvfp4_ds_mla": ("10.0", "10.3"),
                "nvfp4_4over6": ("10.0", "10.3"),
            },
            head_sizes=(64, 128, 256, 512),
            refusals=(
                Refusal(
                    "nvfp4",
                    64,
                    ("8.0", "8.6", "8.9", "9.0", "12.0", "12.1"),
                    "fa2 prefill misreads an NVFP4 KV cache at head_size 64",
                ),
            ),
        ),
        Backend(
            "TRITON_FLASHINFER",
            "cuda",
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(256, 512),
        ),
        Backend(
            "FLASHINFER_MLA",
            "cuda",
            mla=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "TOKENSPEED_MLA",
            "cuda",
            mla=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASHINFER_MLA_SPARSE",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASHINFER_MLA_SPARSE_SM120",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("12.0", "12.1"),
            kv_cache_dtypes=("auto", "fp8", "fp8_e4m3", "fp8_ds_mla"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASHINFER_MLA_SPARSE_SM90",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("9.0",),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "TRITON_MLA",
            "cuda",
            mla=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "CUTLASS_MLA",
            "cuda",
            mla=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASHMLA",
            "cuda",
            mla=True,
            capabilities=("9.0", "10.0", "10.3"),
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASHMLA_SPARSE",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("9.0", "10.0", "10.3"),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_ds_mla", "nvfp4_ds_mla"),
            head_sizes=(512, 576),
            refusals=(
                Refusal(
                    "nvfp4_ds_mla",
                    None,
                    ("9.0",),
                    "FLASHMLA_SPARSE only supports the nvfp4_ds_mla kv-cache dtype on SM100 "
                    "(Blackwell)",
                ),
            ),
        ),
        Backend(
            "FLASHMLA_SPARSE_DSV4",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("9.0", "10.0", "10.3"),
            kv_cache_dtypes=("auto", "fp8", "fp8_ds_mla"),
            head_sizes=(512,),
        ),
        Backend(
            "FLASHINFER_MLA_SPARSE_DSV4",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("10.0", "10.3", "12.0", "12.1"),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_ds_mla"),
            head_sizes=(512,),
            refusals=(
                Refusal(
                    "fp8_ds_mla",
                    None,
                    ("10.0", "10.3"),
                    "FLASHINFER_MLA_SPARSE_DSV4 SM10x uses the plain per-tensor FP8 KV layout, "
                    "not fp8_ds_mla",
                ),
                Refusal(
                    "auto",
                    None,
                    ("12.0", "12.1"),
                    "kv_cache_dtype not supported",
                ),
                Refusal(
                    "bfloat16",
                    None,
                    ("12.0", "12.1"),
                    "kv_cache_dtype not supported",
                ),
            ),
        ),
        Backend(
            "ROCM_FLASHMLA_SPARSE_DSV4",
            "rocm",
            mla=True,
            sparse=True,
            capabilities=("9.4", "9.5"),
            kv_cache_dtypes=("auto", "fp8", "fp8_ds_mla"),
            head_sizes=(512,),
        ),
        Backend(
            "FLASHMLA_SPARSE_DSV41",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("9.0", "10.0", "10.3"),
            kv_cache_dtypes=("auto", "fp8", "fp8_ds_mla"),
            head_sizes=(512,),
        ),
        Backend(
            "FLASHINFER_MLA_SPARSE_DSV41",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("10.0", "10.3", "12.0", "12.1"),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_ds_mla"),
            head_sizes=(512,),
            refusals=(
                Refusal(
                    "fp8_ds_mla",
                    None,
                    ("10.0", "10.3"),
                    "FLASHINFER_MLA_SPARSE_DSV4 SM10x uses the plain per-tensor FP8 KV layout, "
                    "not fp8_ds_mla",
                ),
                Refusal(
                    "auto",
                    None,
                    ("12.0", "12.1"),
                    "kv_cache_dtype not supported",
                ),
                Refusal(
                    "bfloat16",
                    None,
                    ("12.0", "12.1"),
                    "kv_cache_dtype not supported",
                ),
            ),
        ),
        Backend(
            "ROCM_FLASHMLA_SPARSE_DSV41",
            "rocm",
            mla=True,
            sparse=True,
            capabilities=("9.4", "9.5"),
            kv_cache_dtypes=("auto", "fp8", "fp8_ds_mla"),
            head_sizes=(512,),
        ),
        Backend(
            "FLASHMLA_MEGA_ATTN_DSV41",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "fp8", "fp8_ds_mla", "nvfp4_ds_mla"),
            head_sizes=(512,),
        ),
        Backend(
            "B12X",
            "cuda",
            capabilities=("12.0", "12.1"),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(64, 128, 192, 256),
        ),
        Backend(
            "FLASH_ATTN_MLA",
            "cuda",
            mla=True,
            capabilities=("9.0",),
            kv_cache_dtypes=("auto", "float16", "bfloat16"),
            head_sizes=(512, 576),
        ),
        Backend(
            "FLASH_ATTN_MLA_SPARSE",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("9.0",),
            kv_cache_dtypes=("auto", "float16", "bfloat16"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "FLASH_ATTN_MLA_SPARSE_FA4",
            "cuda",
            mla=True,
            sparse=True,
            capabilities=("10.0", "10.3"),
            kv_cache_dtypes=("auto", "bfloat16"),
            head_sizes=(576,),
        ),
        Backend(
            "MINIMAX_M3_SPARSE",
            "cuda",
            sparse=True,
            kv_cache_dtypes=("bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(128,),
        ),
        Backend(
            "CUTLASS_MSA",
            "cuda",
            sparse=True,
            kv_cache_dtypes=("bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(128,),
        ),
        Backend(
            "TRITON_MSA",
            "cuda",
            sparse=True,
            kv_cache_dtypes=("bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(128,),
        ),
        Backend(
            "STEP5_DSA",
            "cuda",
            sparse=True,
            capabilities=("9.0", "10.0", "10.3"),
            kv_cache_dtypes=("auto", "bfloat16", "fp8", "fp8_e4m3"),
            head_sizes=(192,),
        ),
        Backend(
            "FLEX_ATTENTION",
            "cuda",
            kv_cache_dtypes=("auto", "float16", "bfloat16"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "HPC_ATTN",
            "cuda",
            capabilities=("9.0",),
            kv_cache_dtypes=("auto", "bfloat16", "fp8_e4m3"),
            head_sizes=(128,),
        ),
        Backend(
            "ROCM_AITER_UNIFIED_ATTN",
            "rocm",
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "CPU_ATTN",
            "cpu",
            kv_cache_dtypes=("auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2"),
            head_sizes=(64, 80, 96, 128, 192, 256, 512),
        ),
        Backend(
            "CPU_MLA",
            "cpu",
            mla=True,
            kv_cache_dtypes=("auto",),
            head_sizes=(576,),
        ),
        Backend(
            "AMX_MLA",
            "cpu",
            mla=True,
            kv_cache_dtypes=("auto", "float16", "bfloat16"),
            head_sizes=(576,),
        ),
        Backend(
            "TURBOQUANT",
            "cuda",
            kv_cache_dtypes=(
                "turboquant_k8v4",
                "turboquant_4bit_nc",
                "turboquant_k3v4_nc",
                "turboquant_3bit_nc",
            ),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
        Backend(
            "ROCM_OCTAVE",
            "rocm",
            kv_cache_dtypes=("octave_k3v4", "octave_k3v3", "octave_k3v3_compact"),
            head_sizes=(256,),
        ),
        Backend(
            "ULTRAQUANT",
            "rocm",
            kv_cache_dtypes=("ultraquant_4bit",),
            head_sizes=(64, 80, 96, 128, 192, 256, 512, 576),
        ),
    )
}


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
