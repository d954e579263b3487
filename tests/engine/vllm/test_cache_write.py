"""kvscale.engine.vllm.cache_write: vLLM 0.33.0's own Triton cache write, loaded from an
installed vllm or a source tree (``KVSCALE_VLLM_SRC``, with stubs for what the kernel file
imports), its refusals without a source or without CUDA, and its bytes on a GPU against the
reference."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kvscale.engine.vllm import cache_write as vcw
from kvscale.errors import EnvironmentMissingError, ExitCode
from kvscale.kernel.reference import reference_reshape_and_cache_flash

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _has_triton() -> bool:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


_FAKE_KERNEL = """
import torch

from vllm.model_executor.layers.quantization.utils.quant_utils import (
    FP8_DTYPE,
    get_fp8_min_max,
)
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton
from vllm.v1.kv_cache_interface import KVQuantMode, is_quantized_kv_cache

FP8_MIN, FP8_MAX = get_fp8_min_max()
SEEN = {
    "fp8_dtype": current_platform.fp8_dtype(),
    "rocm": current_platform.is_rocm(),
    "xpu": current_platform.is_xpu(),
    "fp8_quantized": is_quantized_kv_cache("fp8_e5m2"),
    "auto_quantized": is_quantized_kv_cache("auto"),
    "mode": int(KVQuantMode.INT4_PER_TOKEN_HEAD),
    "FP8_DTYPE": FP8_DTYPE,
    "tl": tl,
}


@triton.jit
def _kernel(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + 1)


def triton_reshape_and_cache_flash(*args):
    return None
"""


@pytest.fixture
def fresh_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vcw, "_loaded", None)


@pytest.mark.skipif(not _has_triton(), reason="Triton is not installed")
def test_source_tree_loads_with_stubs(tmp_path: Path, fresh_loader: None) -> None:
    import triton.language as tl

    kernel_file = tmp_path / vcw.KERNEL_FILE
    kernel_file.parent.mkdir(parents=True)
    kernel_file.write_text(textwrap.dedent(_FAKE_KERNEL))
    (tmp_path / "vllm" / "_version.py").write_text("__version__ = version = '0.33.0'\n")
    before = {m for m in sys.modules if m == "vllm" or m.startswith("vllm.")}
    loaded = vcw.load_vllm_kernel(src=str(tmp_path))
    assert loaded.origin == "source-tree"
    assert loaded.version == "0.33.0"
    assert loaded.path == str(kernel_file)
    assert loaded.function.__name__ == "triton_reshape_and_cache_flash"
    assert not loaded.is_pinned  # not vLLM's file
    # The stubs were in place while the file ran, and are gone afterwards.
    assert {m for m in sys.modules if m == "vllm" or m.startswith("vllm.")} == before
    module = sys.modules[loaded.function.__module__]
    assert module.FP8_MIN == -448.0 and module.FP8_MAX == 448.0
    assert module.SEEN == {
        "fp8_dtype": torch.float8_e4m3fn, "rocm": False, "xpu": False, "fp8_quantized": True,
        "auto_quantized": False, "mode": 4, "FP8_DTYPE": torch.float8_e4m3fn, "tl": tl,
    }  # fmt: skip
    # The vllm/ directory itself works as well.
    assert vcw.load_vllm_kernel(src=str(tmp_path / "vllm")).path == str(kernel_file)


def test_source_tree_without_the_kernel_file(tmp_path: Path) -> None:
    with pytest.raises(vcw.VllmKernelUnavailableError) as info:
        vcw.load_vllm_kernel(src=str(tmp_path))
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert vcw.KERNEL_FILE in info.value.one_line()


def test_neither_installed_nor_a_source_tree(
    monkeypatch: pytest.MonkeyPatch, fresh_loader: None
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )
    monkeypatch.delenv(vcw.ENV_VAR, raising=False)
    with pytest.raises(EnvironmentMissingError, match="vllm is not installed") as info:
        vcw.load_vllm_kernel()
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert vcw.ENV_VAR in info.value.one_line()


@pytest.mark.skipif(not _has_triton(), reason="Triton is not installed")
@pytest.mark.skipif(
    not os.environ.get(vcw.ENV_VAR), reason=f"{vcw.ENV_VAR} does not name a vLLM source tree"
)
def test_real_vllm_kernel_file_loads(fresh_loader: None) -> None:
    loaded = vcw.load_vllm_kernel(src=os.environ[vcw.ENV_VAR])
    assert loaded.is_pinned, f"{loaded.path} is not vLLM {vcw.VLLM_VERSION}'s kernel file"
    assert loaded.version == vcw.VLLM_VERSION
    module = sys.modules[loaded.function.__module__]
    assert module.FP8_MAX == 448.0
    assert module._is_supported_kv_cache_dtype("fp8") is torch.cuda.is_available()
    assert hasattr(module.reshape_and_cache_kernel_flash, "fn")  # a Triton JIT function


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_vllm_write_without_cuda_is_an_environment_error() -> None:
    t = torch.zeros(1)
    with pytest.raises(vcw.VllmKernelUnavailableError, match="needs a CUDA device") as info:
        vcw.reshape_and_cache_flash(t, t, t, t, t, "fp8", t, t)
    assert info.value.exit_code == ExitCode.ENVIRONMENT


def _vllm_gpu_reason() -> str | None:
    if not _has_triton():
        return "Triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() < (8, 9):
        return "the GPU has no native FP8 conversion (needs compute capability 8.9+)"
    try:
        vcw.load_vllm_kernel()
    except EnvironmentMissingError as exc:
        return exc.one_line()
    return None


@pytest.mark.gpu
def test_vllm_kernel_on_gpu() -> None:
    reason = _vllm_gpu_reason()
    if reason is not None:
        pytest.skip(reason)
    g = torch.Generator().manual_seed(0)
    key = (torch.randn(64, 8, 128, generator=g) * 40).to(torch.bfloat16)
    value = (torch.randn(64, 8, 128, generator=g) * 40).to(torch.bfloat16)
    slots = torch.randperm(96, generator=g)[:64]
    slots[::9] = -1
    per_head = torch.tensor([0.25, 0.5, 1.0, 2.0, 0.125, 4.0, 0.0625, 8.0])
    for kv, scale in (("fp8", torch.tensor([0.5])), ("fp8", per_head), ("fp8_e5m2", per_head)):
        cache = torch.full((6, 2, 16, 8, 128), 0xA5, dtype=torch.uint8)
        model = cache.clone()
        # vLLM's Triton kernel: e4m3 bytes for every fp8 string, element 0 of the scale.
        reference_reshape_and_cache_flash(key, value, model[:, 0], model[:, 1], slots, "fp8",
                                          scale[:1], scale[:1])  # fmt: skip
        dev = cache.cuda()
        vcw.reshape_and_cache_flash(key.cuda(), value.cuda(), dev[:, 0], dev[:, 1], slots.cuda(),
                                    kv, scale.cuda(), scale.cuda())  # fmt: skip
        torch.cuda.synchronize()
        assert torch.equal(dev.cpu(), model), (kv, scale.numel())
