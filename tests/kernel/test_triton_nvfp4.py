"""The Triton NVFP4 kernel in Triton's CPU interpreter (TRITON_INTERPRET=1), against the reference.

The interpreter cannot run PTX (the kernel then takes an IEEE reciprocal), fuses nothing (its
fma is a product and a sum) and its fp8 cast is not the GPU's off exactly representable values.
So the inputs here make every one of those exact: power-of-two checkpoint scales, and groups whose
largest magnitude is 6 * 2^e (block scale 2^e, reciprocals exact) with every element on the e2m1
grid times 2^e. What these tests check is everything else: token/head/group indexing, the token
stride of a fused qkv tensor, slot -> page and offset, K linear and V swizzled scale positions
(including head size 192, whose swizzled rows hold 3 groups), padding slots, partial tiles, both
variants, and bytes outside the written slots left untouched. Rounding, NaN and the hardware
reciprocal are compared on the GPU (tests/kernel/test_triton_nvfp4_gpu.py,
benchmarks/gpu_nvfp4_check.py).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

from kvscale.kernel import nvfp4 as N  # noqa: E402
from kvscale.kernel import triton_nvfp4  # noqa: E402

# The interpreter's reciprocal is numpy's 1 / x, which warns where the kernel takes rcp(0) = inf
# (zero block scales, masked rows); the GPU has no such warning to give.
pytestmark = pytest.mark.filterwarnings("ignore:divide by zero encountered:RuntimeWarning")

GRID = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.5, -1, -2, -4, -6])


@pytest.fixture(autouse=True)
def _interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_nvfp4, "_config_override", None)


def exact_values(shape: tuple[int, int, int], g: torch.Generator) -> torch.Tensor:
    """[tokens, heads, hs] on the e2m1 grid times 2^e per group, each group's max exactly 6*2^e."""
    t, h, hs = shape
    idx = torch.randint(0, GRID.numel(), (t, h, hs // 16, 16), generator=g)
    expo = torch.randint(-4, 4, (t, h, hs // 16, 1), generator=g).float()
    vals = GRID[idx] * 2.0**expo
    vals[..., 0] = (
        6
        * 2.0 ** expo[..., 0]
        * torch.where(torch.rand(t, h, hs // 16, generator=g) < 0.5, 1.0, -1.0)
    )
    return vals.reshape(shape).to(torch.bfloat16)


def run_both(
    tokens: int,
    heads: int,
    head_size: int,
    block_size: int,
    dtype: str,
    *,
    fused: bool,
    seed: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    blocks = (tokens + block_size - 1) // block_size + 2
    if fused:  # key/value sliced out of one qkv row per token, as vLLM passes them
        qkv = torch.zeros(tokens, 3 * heads * head_size, dtype=torch.bfloat16)
        key = qkv[:, heads * head_size : 2 * heads * head_size].view(tokens, heads, head_size)
        value = qkv[:, 2 * heads * head_size :].view(tokens, heads, head_size)
        key.copy_(exact_values((tokens, heads, head_size), g))
        value.copy_(exact_values((tokens, heads, head_size), g))
    else:
        key = exact_values((tokens, heads, head_size), g)
        value = exact_values((tokens, heads, head_size), g)
    shape = N.nvfp4_kv_cache_shape(blocks, heads, block_size, head_size)
    poison = torch.randint(0, 256, shape, generator=g, dtype=torch.uint8)
    n = tokens - 1  # the last token has no slot (vLLM pads key/value, not slot_mapping)
    slots = torch.randperm(blocks * block_size, generator=g)[:n]
    slots[torch.rand(n, generator=g) < 0.2] = -1
    ks, vs = torch.tensor([0.5]), torch.tensor([4.0])
    ref, ker = poison.clone(), poison.clone()
    report = N.reference_reshape_and_cache_nvfp4(key, value, ref, slots, dtype, ks, vs)
    assert report.ambiguous_blocks == 0
    triton_nvfp4.reshape_and_cache_nvfp4(key, value, ker, slots, dtype, ks, vs)
    return ref, ker, poison


@pytest.mark.parametrize(
    ("tokens", "heads", "head_size", "block_size", "dtype", "fused"),
    [
        (9, 2, 64, 4, "nvfp4", False),
        (7, 3, 128, 16, "nvfp4_4over6", True),
        (5, 1, 192, 8, "nvfp4", True),
        (6, 2, 256, 4, "nvfp4_4over6", False),
    ],
)
def test_kernel_bytes_equal_reference(
    tokens: int, heads: int, head_size: int, block_size: int, dtype: str, fused: bool
) -> None:
    ref, ker, poison = run_both(tokens, heads, head_size, block_size, dtype, fused=fused, seed=7)
    assert (ref != poison).any()
    assert torch.equal(ker, ref)


@pytest.mark.parametrize("block_g", [16, 128])
def test_other_tiles(monkeypatch: pytest.MonkeyPatch, block_g: int) -> None:
    """Tiles smaller and larger than one token's groups (partial last tile masked)."""
    monkeypatch.setattr(
        triton_nvfp4, "_config_override", triton_nvfp4.NVFP4KernelConfig(block_g=block_g)
    )
    ref, ker, _ = run_both(5, 3, 64, 4, "nvfp4", fused=False, seed=3)
    assert torch.equal(ker, ref)


def test_4over6_choice_in_the_kernel() -> None:
    """Groups [4, 3, 2, 1] * 2^e: d = 4 is exact (sf4 = 2^e), d = 6 is not, so the kernel must
    store the 4-candidate: scale 2^e and codes 6, 5, 4, 2."""
    x = torch.zeros(2, 1, 64)
    x[..., 0::16], x[..., 1::16], x[..., 2::16], x[..., 3::16] = 4.0, 3.0, 2.0, 1.0
    key = x.to(torch.bfloat16)
    cache = torch.zeros(N.nvfp4_kv_cache_shape(1, 1, 4, 64), dtype=torch.uint8)
    ks = torch.tensor([1.0])
    triton_nvfp4.reshape_and_cache_nvfp4(
        key, key, cache, torch.tensor([0, 3]), "nvfp4_4over6", ks, ks
    )
    ref = torch.zeros_like(cache)
    N.reference_reshape_and_cache_nvfp4(key, key, ref, torch.tensor([0, 3]), "nvfp4_4over6", ks, ks)
    assert torch.equal(cache, ref)
    page = cache.view(-1)
    assert page[0:2].tolist() == [0x56, 0x24]  # K head 0, slot 0, group 0
    assert page[4 * 32] == 0x38  # its scale: 1.0


def test_same_argument_checks_as_the_reference() -> None:
    key = torch.zeros(2, 1, 80, dtype=torch.bfloat16)
    cache = torch.zeros(1, 2, 4, 45, dtype=torch.uint8)
    with pytest.raises(N.NVFP4HeadSizeError):
        triton_nvfp4.reshape_and_cache_nvfp4(
            key, key, cache, torch.tensor([0]), "nvfp4", torch.ones(1), torch.ones(1)
        )


def test_cpu_tensors_need_the_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET")
    key = torch.zeros(1, 1, 64, dtype=torch.bfloat16)
    cache = torch.zeros(N.nvfp4_kv_cache_shape(1, 1, 4, 64), dtype=torch.uint8)
    with pytest.raises(N.NVFP4ArgumentError, match="CUDA tensors"):
        triton_nvfp4.reshape_and_cache_nvfp4(
            key, key, cache, torch.tensor([0]), "nvfp4", torch.ones(1), torch.ones(1)
        )
