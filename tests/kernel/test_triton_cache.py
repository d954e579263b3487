"""The Triton kernel run by Triton's CPU interpreter (TRITON_INTERPRET=1), against the reference.

The interpreter's fp8 cast is not the GPU's (no saturation, NaN -> 384, ties not to even,
small subnormals flushed: kv-scale-rules section 7), so these tests feed only values whose
quotient is exactly representable in fp8 (small integers times powers of two, divided by
power-of-two scales). What they check is everything else: slot -> block/offset arithmetic,
strides of every tensor, per-head scale indexing, padding slots and ignored rows, masking of
non-power-of-two head counts and sizes, the default and two forced tiles, and the plain-copy
dtypes. Rounding, saturation and NaN bytes are checked on the GPU
(tests/kernel/test_triton_cache_gpu.py).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

from kvscale.kernel import reference_reshape_and_cache_flash, triton_cache  # noqa: E402

# Exactly representable in e4m3 and e5m2 after division by the power-of-two scales below.
VALUES = torch.tensor([0.0, 1.0, -1.0, 2.0, -3.0, 4.0, 6.0, -8.0, 12.0, 16.0, 0.5, -0.25, 0.75])


@pytest.fixture(autouse=True)
def _interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_cache, "_config_override", None)


def exact_values(
    shape: tuple[int, ...], dtype: torch.dtype, scale: torch.Tensor, g: torch.Generator
) -> torch.Tensor:
    idx = torch.randint(0, VALUES.numel(), shape, generator=g)
    s = scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())
    return (VALUES[idx] * s).to(dtype)


def build(
    layout: str,
    tokens: int,
    heads: int,
    head: int,
    bs: int,
    dtype: torch.dtype,
    cache_dtype: torch.dtype,
):
    blocks = (tokens + bs - 1) // bs + 2
    if layout == "contig":
        key = torch.empty(tokens, heads, head, dtype=dtype)
        value = torch.empty(tokens, heads, head, dtype=dtype)
        kc = torch.empty(blocks, bs, heads, head, dtype=cache_dtype)
        vc = torch.empty(blocks, bs, heads, head, dtype=cache_dtype)
        bases = [kc, vc]
    elif layout == "fused":
        qkv = torch.empty(tokens, 3 * heads * head, dtype=dtype)
        key = qkv[:, heads * head : 2 * heads * head].view(tokens, heads, head)
        value = qkv[:, 2 * heads * head :].view(tokens, heads, head)
        kv = torch.empty(blocks, 2, bs, heads, head, dtype=cache_dtype)
        kc, vc = kv[:, 0], kv[:, 1]
        bases = [kv]
    else:  # padded strides everywhere
        key = torch.empty(tokens, heads, head + 8, dtype=dtype)[..., :head]
        value = torch.empty(tokens + 3, heads + 1, head, dtype=dtype)[3:, 1:]
        kcb = torch.empty(blocks, bs, heads, head + 16, dtype=cache_dtype)
        vcb = torch.empty(blocks + 1, bs + 1, heads, head, dtype=cache_dtype)
        kc, vc = kcb[..., :head], vcb[1:, 1:]
        bases = [kcb, vcb]
    for b in bases:
        b.view(torch.uint8).fill_(0xC3)
    return key, value, kc, vc, blocks * bs, bases


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage()).clone()


CASES = [
    # layout, tokens, n, heads, head, block_size, kv dtype, input dtype, per-head k, per-head v
    ("contig", 40, 37, 4, 64, 16, "fp8", torch.bfloat16, False, False),
    ("contig", 40, 37, 4, 64, 16, "fp8_e5m2", torch.float16, True, False),
    ("fused", 33, 33, 2, 32, 8, "fp8_e4m3", torch.float32, True, True),
    ("padded", 21, 17, 3, 80, 12, "fp8", torch.bfloat16, True, True),
    ("padded", 21, 17, 6, 48, 32, "fp8_e5m2", torch.float32, False, True),
    ("fused", 18, 11, 5, 16, 4, "auto", torch.bfloat16, False, False),
    ("padded", 18, 11, 3, 24, 4, "float32", torch.float32, False, False),
    ("contig", 18, 11, 3, 64, 4, "float16", torch.float16, True, False),
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0]}-{c[6]}-{str(c[7])[6:]}-h{c[3]}x{c[4]}"
)
@pytest.mark.parametrize(
    "tile",
    # The forced tiles repeat the indexing under other block shapes: seconds in the interpreter.
    [
        "default",
        pytest.param("wide", marks=pytest.mark.slow),
        pytest.param("one_head", marks=pytest.mark.slow),
    ],
)
def test_interpreted_kernel_matches_reference(case: tuple, tile: str) -> None:
    layout, tokens, n, heads, head, bs, kvd, dtype, ph_k, ph_v = case
    g = torch.Generator().manual_seed(hash((case[:7], tile)) % 2**31)
    quantized = kvd.startswith("fp8")
    cache_dtype = torch.uint8 if quantized else dtype
    key, value, kc, vc, num_slots, _ = build(layout, tokens, heads, head, bs, dtype, cache_dtype)
    pow2 = torch.tensor([0.5, 2.0, 0.25, 4.0, 1.0, 8.0])[:heads]
    k_scale = pow2.clone() if ph_k else torch.tensor([2.0])
    v_scale = pow2.flip(0).clone() if ph_v else torch.tensor([0.5])
    key.copy_(exact_values(key.shape, dtype, k_scale, g))
    value.copy_(exact_values(value.shape, dtype, v_scale, g))
    slots = torch.randperm(num_slots, generator=g)[:n]
    slots[torch.rand(n, generator=g) < 0.2] = -1
    slots[0] = -2
    if tile == "wide":
        triton_cache._config_override = triton_cache.KernelConfig(4, 2, 4)
    elif tile == "one_head":
        triton_cache._config_override = triton_cache.KernelConfig(1, 1, 1)
    _, _, ref_kc, ref_vc, _, _ = build(layout, tokens, heads, head, bs, dtype, cache_dtype)
    triton_cache.reshape_and_cache_flash(key, value, kc, vc, slots, kvd, k_scale, v_scale)
    reference_reshape_and_cache_flash(key, value, ref_kc, ref_vc, slots, kvd, k_scale, v_scale)
    assert torch.equal(storage_bytes(kc), storage_bytes(ref_kc))
    assert torch.equal(storage_bytes(vc), storage_bytes(ref_vc))
    # Something was written, and slots nobody mapped (padding included) were not.
    if kc.is_contiguous():
        written = set(slots.tolist())
        flat = kc.reshape(-1, heads, head).view(torch.uint8)
        assert all(bool((flat[s] == 0xC3).all()) for s in range(num_slots) if s not in written)
    assert bool((storage_bytes(kc) != 0xC3).any())


def test_float8_typed_caches() -> None:
    g = torch.Generator().manual_seed(7)
    key = exact_values((9, 2, 32), torch.bfloat16, torch.tensor([1.0]), g)
    value = exact_values((9, 2, 32), torch.bfloat16, torch.tensor([1.0]), g)
    kc = torch.zeros(4, 4, 2, 32, dtype=torch.float8_e4m3fn)
    vc = torch.zeros_like(kc)
    ref_k, ref_v = kc.clone(), vc.clone()
    slots = torch.tensor([3, 1, -1, 15, 7, 0, 2, 9, 12])
    one = torch.ones(1)
    triton_cache.reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", one, one)
    reference_reshape_and_cache_flash(key, value, ref_k, ref_v, slots, "fp8", one, one)
    assert torch.equal(kc.view(torch.uint8), ref_k.view(torch.uint8))
    assert torch.equal(vc.view(torch.uint8), ref_v.view(torch.uint8))


def test_empty_slot_mapping_writes_nothing() -> None:
    key = torch.ones(3, 1, 16, dtype=torch.bfloat16)
    kc = torch.full((2, 4, 1, 16), 7, dtype=torch.uint8)
    vc = kc.clone()
    triton_cache.reshape_and_cache_flash(
        key, key, kc, vc, torch.empty(0, dtype=torch.int64), "fp8", torch.ones(1), torch.ones(1)
    )
    assert bool((kc == 7).all()) and bool((vc == 7).all())


def test_fnuz_is_refused_with_a_typed_error() -> None:
    from kvscale.kernel import UnsupportedOnDeviceError

    key = torch.ones(3, 1, 16, dtype=torch.bfloat16)
    kc = torch.zeros(2, 4, 1, 16, dtype=torch.uint8)
    with pytest.raises(UnsupportedOnDeviceError, match="cannot write e4m3fnuz"):
        triton_cache.reshape_and_cache_flash(
            key, key, kc, kc.clone(), torch.arange(3), "fp8_e4m3fnuz", torch.ones(1), torch.ones(1)
        )
