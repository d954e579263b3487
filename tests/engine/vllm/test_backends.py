"""kvscale/engine/vllm/backends.py: which of vLLM 0.33.0's attention backends run a dtype.

The table itself (``backend_table.py``) is rendered from tests/parity/vllm_backends.json, the
answers of every backend class of vLLM's registry executed by tests/parity/vllm_dtype_oracle.py;
tests/parity/test_tables.py re-renders it and checks the fold.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvscale.engine.vllm import backends
from kvscale.engine.vllm.backends import BACKENDS
from kvscale.engine.vllm.kv_cache_dtypes import KV_CACHE_DTYPES

DTYPE_DOC: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parents[2] / "parity" / "vllm_dtype_expected.json").read_text()
)


def test_which_dtypes_run_where() -> None:
    def runs(dtype: str, **kw: Any) -> set[str]:
        mla = kw.pop("mla", False)
        return set(backends.backends_for(dtype, mla=mla, **kw))

    # fp8_inc: the one accepted value no in-tree backend runs
    assert {d for d in KV_CACHE_DTYPES if not any(b.accepts(d) for b in BACKENDS.values())} == {
        "fp8_inc"
    }
    assert runs("int8_per_token_head") == {"TRITON_ATTN"}
    assert runs("turboquant_k3v4_nc") == {"TURBOQUANT"}
    assert runs("ultraquant_4bit") == {"ULTRAQUANT"}
    assert runs("octave_k3v4", head_size=256) == {"ROCM_OCTAVE"}
    assert runs("octave_k3v4", head_size=128) == set()  # the kernel's head size is 256
    assert runs("octave_k3v4", head_size=256, gpu_arch="sm90") == set()  # ROCm only
    assert runs("fp8_ds_mla") == set()  # MLA only
    assert runs("nvfp4", gpu_arch="sm90", head_size=128) == {"FLASHINFER"}
    assert runs("nvfp4", gpu_arch="sm90", head_size=64) == set()  # FA2 writer misreads it
    assert runs("nvfp4", gpu_arch="sm100", head_size=64) == {"FLASHINFER"}
    assert runs("nvfp4_4over6", gpu_arch="sm90") == set()  # no scale search in the FA2 writer
    # FLASHMLA_SPARSE: "only ... on SM100"; FLASHMLA_MEGA_ATTN_DSV41 runs on SM10x only
    assert runs("nvfp4_ds_mla", mla=True, gpu_arch="sm90") == set()
    assert runs("nvfp4_ds_mla", mla=True, gpu_arch="sm100") == {
        "FLASHMLA_SPARSE",
        "FLASHMLA_MEGA_ATTN_DSV41",
    }


@pytest.mark.parametrize(
    ("backend", "dtype", "kw", "want"),
    [
        ("FLASH_ATTN", "fp8_e5m2", {}, ["kv_cache_dtype not supported"]),
        ("FLASH_ATTN", "fp8", {"gpu_arch": "sm90"}, []),
        ("FLASH_ATTN", "auto", {"mla": True}, ["MLA not supported"]),
        ("TRITON_MLA", "fp8", {}, ["non-MLA not supported"]),
        (
            "FLASHINFER",
            "nvfp4",
            {"gpu_arch": "sm120", "head_size": 64},
            ["fa2 prefill misreads an NVFP4 KV cache at head_size 64"],
        ),
        (
            "FLASHINFER",
            "nvfp4",
            {"gpu_arch": "sm100", "head_size": 80},
            ["head_size not supported"],
        ),
        ("FLASHINFER", "nvfp4_4over6", {"gpu_arch": "sm90"}, ["kv_cache_dtype not supported"]),
        (
            "CUTLASS_MLA",
            "fp8",
            {"mla": True, "gpu_arch": "sm90"},
            ["compute capability not supported"],
        ),
        ("ROCM_ATTN", "fp8", {"gpu_arch": "sm90"}, ["a rocm backend, not for an NVIDIA GPU"]),
        ("ROCM_ATTN", "fp8_e5m2", {}, []),
    ],
)
def test_reasons(backend: str, dtype: str, kw: dict[str, Any], want: list[str]) -> None:
    mla = kw.pop("mla", False)
    assert backends.reasons(BACKENDS[backend], dtype, mla=mla, **kw) == want


def test_sparse_mla_canonical_dtype_is_vllms() -> None:
    table = DTYPE_DOC["mla_sparse_canonical_dtype"]
    for backend, by_dtype in table.items():
        for dtype, canonical in by_dtype.items():
            assert backends.sparse_mla_kv_cache_dtype(backend.lower(), dtype) == canonical
    assert backends.sparse_mla_kv_cache_dtype(None, "fp8") == "fp8"


def test_lookup_takes_any_case() -> None:
    assert backends.lookup("flashinfer") is BACKENDS["FLASHINFER"]
    assert backends.lookup("Triton_Attn") is BACKENDS["TRITON_ATTN"]
    assert backends.lookup("torch_sdpa") is None


def test_the_backend_a_serving_command_names_runs_on_the_platforms_gpus() -> None:
    """plan named ROCM_AITER_MLA (the first MLA backend of the unfiltered list) for an NVIDIA
    serve: a ROCm-only backend there fails at start-up."""
    from kvscale.engine.registry import get_engine

    vllm = get_engine("vllm")
    runnable = ("rocm_aiter_mla", "rocm_aiter_triton_mla", "triton_mla", "cpu_attn")
    assert vllm.backend_to_name(runnable, "ocp") == "triton_mla"
    assert vllm.backend_to_name(runnable, "fnuz") == "rocm_aiter_mla"
    assert vllm.backend_to_name(("rocm_attn",), "ocp") == "rocm_attn"  # OCP MI350: ROCm's
    assert vllm.backend_to_name(("cpu_attn", "rocm_attn"), "ocp") == "rocm_attn"
    assert get_engine("sglang").backend_to_name(("b", "a"), "ocp") == "b"
