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
    N.reference_reshape_and_cache_nvfp4(
        key, value, ref, slots, dtype, ks, vs, track_ambiguity=False
    )
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


@pytest.fixture
def gpu_arithmetic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give the interpreter the GPU's arithmetic where it differs: the fp32 -> e4m3 cast of
    cvt.rn.satfinite (RN-even, saturating, NaN 0x7F), a single-rounding fma, max.f32 skipping
    NaN, and for the kernel's interpreter reciprocal (``1.0 / v``) the reference's rcp model."""
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.interpreter_builder
    to_fp = builder.create_fp_to_fp

    def tensor(h: object, shape: tuple[int, ...]) -> torch.Tensor:
        data = np.broadcast_to(h.data, shape)  # type: ignore[attr-defined]
        return torch.from_numpy(np.ascontiguousarray(data).astype(np.float32))

    def fp_to_fp(src, dst_type, rounding_mode):  # type: ignore[no-untyped-def]
        if "fp8e4nv" in str(dst_type.scalar):
            bits = N._e4m3_bits(tensor(src, src.data.shape)).numpy()
            return interpreter.TensorHandle(
                bits.view(interpreter._get_np_dtype(dst_type)), dst_type.scalar
            )
        return to_fp(src, dst_type, rounding_mode)

    def fma(x, y, z):  # type: ignore[no-untyped-def]
        shape = np.broadcast_shapes(x.data.shape, y.data.shape, z.data.shape)
        out = N._fma(tensor(x, shape), tensor(y, shape), tensor(z, shape))
        return interpreter.TensorHandle(out.numpy(), z.dtype.scalar)

    def reciprocal(lhs, rhs):  # type: ignore[no-untyped-def]
        shape = np.broadcast_shapes(lhs.data.shape, rhs.data.shape)
        out = N._rcp_candidates(tensor(rhs, shape), False)[0]
        return interpreter.TensorHandle(out.numpy(), lhs.dtype.scalar)

    monkeypatch.setattr(builder, "create_fp_to_fp", fp_to_fp)
    monkeypatch.setattr(builder, "create_fma", fma)
    monkeypatch.setattr(builder, "create_maxnumf", lambda a, b: builder.binary_op(a, b, np.fmax))
    monkeypatch.setattr(builder, "create_fdiv", reciprocal)


@pytest.mark.usefixtures("gpu_arithmetic")
@pytest.mark.parametrize("variant", N.NVFP4_KV_CACHE_DTYPES)
@pytest.mark.parametrize("rule", [448.0, 2688.0, None])
def test_kernel_logic_on_stress_data(variant: str, rule: float | None) -> None:
    """With the GPU's arithmetic swapped into the interpreter, the kernel must equal the
    reference byte for byte on adversarial data (NaN, inf, zeros, ties, subnormal and saturated
    block scales), whole cache, ambiguous blocks included (both use the reciprocal model)."""
    g = torch.Generator().manual_seed(5)
    shape = (12, 2, 128)
    key = N.make_nvfp4_stress_values(shape, kind="adversarial", dtype=torch.bfloat16, generator=g)
    value = N.make_nvfp4_stress_values(shape, kind="adversarial", dtype=torch.float16, generator=g)
    value = value.to(torch.bfloat16)
    scales = []
    for x in (key, value):
        xf = x.float()
        amax = float(xf[torch.isfinite(xf)].abs().max())
        scales.append(torch.tensor([amax / rule if rule else 1.0]))
    poison = torch.randint(0, 256, N.nvfp4_kv_cache_shape(5, 2, 4, 128), generator=g,
                           dtype=torch.uint8)  # fmt: skip
    slots = torch.randperm(20, generator=g)[:11]
    slots[2] = -1
    ref, ker = poison.clone(), poison.clone()
    N.reference_reshape_and_cache_nvfp4(key, value, ref, slots, variant, *scales,
                                        track_ambiguity=False)  # fmt: skip
    triton_nvfp4.reshape_and_cache_nvfp4(key, value, ker, slots, variant, *scales)
    assert torch.equal(ker, ref)
