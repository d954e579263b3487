"""The Triton MLA cache-write kernel on a CUDA GPU: every cache byte equal to the CPU reference.

Runs only with Triton, CUDA and native FP8 conversion (compute capability 8.9+); skipped
otherwise. Caches are poisoned with random bytes before each write and compared over their whole
storage, so padding slots, the padding of wider cache rows and rows past len(slot_mapping) must
stay untouched. Inputs: random, heavy-tailed and adversarial data (fp8 grid points, midpoints and
their fp32 neighbours, values past the max, subnormal ties, +-0, +-inf, NaN of both signs) in
bf16, fp16 and fp32, at scales 1.0 (with and without skip_scale), 0.3, 0.5, 0.0173 and
extreme ones.
"""

from __future__ import annotations

import pytest
import torch

from kvscale.kernel import (
    UnsupportedOnDeviceError,
    make_stress_values,
    reference_concat_and_cache_mla,
    resolve_kv_cache_dtype,
)


def _skip_reason() -> str | None:
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() < (8, 9):
        return "the GPU has no native FP8 conversion (needs compute capability 8.9+)"
    return None


_REASON = _skip_reason()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
]

DTYPES = [torch.bfloat16, torch.float16, torch.float32]
Q_LORA = 1536  # DeepSeek-V3's q_lora_rank: the fused q_a/kv_a output is [T, 1536 + 512 + 64]


def _storage(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _to_cuda(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """Each distinct storage copied to the GPU once, every view rebuilt on it (same strides and
    offsets)."""
    copies: dict[int, torch.Tensor] = {}
    out = []
    for t in tensors:
        st = t.untyped_storage()
        if st.data_ptr() not in copies:
            copies[st.data_ptr()] = torch.empty(0, dtype=torch.uint8).set_(st).cuda()
        out.append(
            copies[st.data_ptr()].view(t.dtype).as_strided(t.shape, t.stride(), t.storage_offset())
        )
    return out


def _layout(name: str, tokens: int, lora: int, rope: int, bs: int, dtype, cache_dtype):
    blocks = (tokens + bs - 1) // bs + 2
    width = lora + rope
    if name == "fused":  # both parts sliced out of the fused projection output
        fused = torch.empty(tokens, Q_LORA + width, dtype=dtype)
        kv_c, k_pe = fused[:, Q_LORA : Q_LORA + lora], fused[:, Q_LORA + lora :]
        cache = torch.empty(blocks, bs, width, dtype=cache_dtype)
    elif name == "normed":  # kv_c_normed contiguous (RMSNorm output), k_pe a slice
        kv_c = torch.empty(tokens, lora, dtype=dtype)
        k_pe = torch.empty(tokens, Q_LORA + width, dtype=dtype)[:, Q_LORA + lora :]
        cache = torch.empty(blocks, bs, width, dtype=cache_dtype)
    else:  # padded cache rows, non-adjacent blocks
        kv_c = torch.empty(tokens, lora + 8, dtype=dtype)[:, 8:]
        k_pe = torch.empty(tokens, rope, dtype=dtype)
        cache = torch.empty(blocks + 1, bs, width + 32, dtype=cache_dtype)[1:, :, :width]
    return kv_c, k_pe, cache, blocks * bs


def _check(
    kv_cache_dtype: str,
    dtype: torch.dtype,
    scale: float,
    skip_scale: bool = False,
    layout: str = "fused",
    tokens: int = 600,
    n: int = 560,
    lora: int = 512,
    rope: int = 64,
    bs: int = 16,
    kinds: tuple[str, ...] = ("random", "heavy", "adversarial"),
    seed: int = 0,
) -> None:
    from kvscale.kernel import concat_and_cache_mla

    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    fmt = kv.fp8 or resolve_kv_cache_dtype("fp8").fp8
    assert fmt is not None
    cache_dtype = torch.uint8 if kv.quantized else dtype
    s = torch.tensor([scale], dtype=torch.float32)
    for i, kind in enumerate(kinds):
        g = torch.Generator().manual_seed(seed * 31 + i)
        kv_c, k_pe, cache, num_slots = _layout(layout, tokens, lora, rope, bs, dtype, cache_dtype)
        x = make_stress_values(
            (tokens, 1, lora + rope), kind=kind, dtype=dtype, scale=s, fmt=fmt, generator=g
        ).reshape(tokens, lora + rope)
        kv_c.copy_(x[:, :lora])
        k_pe.copy_(x[:, lora:])
        _storage(cache).copy_(
            torch.randint(0, 256, (_storage(cache).numel(),), generator=g, dtype=torch.uint8)
        )
        slots = torch.randperm(num_slots, generator=g)[:n]
        slots[torch.rand(n, generator=g) < 0.1] = -1
        gc, gp, gk = _to_cuda([kv_c, k_pe, cache])
        concat_and_cache_mla(gc, gp, gk, slots.cuda(), kv_cache_dtype, s.cuda(), skip_scale)
        reference_concat_and_cache_mla(kv_c, k_pe, cache, slots, kv_cache_dtype, s, skip_scale)
        diff = _storage(gk).cpu() != _storage(cache)
        assert int(diff.sum()) == 0, (
            f"{int(diff.sum())} mismatched bytes ({kv_cache_dtype}, {dtype}, scale {scale}, "
            f"skip {skip_scale}, {layout}, {kind}, first at "
            f"{diff.nonzero()[:3].flatten().tolist()})"
        )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
@pytest.mark.parametrize(
    "scale,skip",
    [(1.0, True), (1.0, False), (0.3, False), (0.5, False), (0.0173, False)],
    ids=["1.0-skip", "1.0", "0.3", "0.5", "0.0173"],
)
def test_bit_exact(kv_cache_dtype: str, dtype: torch.dtype, scale: float, skip: bool) -> None:
    _check(kv_cache_dtype, dtype, scale, skip)


@pytest.mark.parametrize(
    "scale", [0.0, -1.5, float("inf"), float("nan"), 1e-30, 3e35, 2.0**-20], ids=str
)
def test_bit_exact_extreme_scales(scale: float) -> None:
    _check("fp8", torch.bfloat16, scale, kinds=("adversarial",))


@pytest.mark.parametrize("layout", ["normed", "padded"])
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
def test_bit_exact_layouts(layout: str, kv_cache_dtype: str) -> None:
    lora, rope = (512, 64) if layout == "normed" else (96, 40)
    _check(kv_cache_dtype, torch.bfloat16, 0.3, layout=layout, lora=lora, rope=rope, bs=32)


@pytest.mark.parametrize("tokens,n", [(7, 3), (1, 1), (5000, 4900)])
def test_bit_exact_batch_sizes(tokens: int, n: int) -> None:
    _check("fp8", torch.bfloat16, 0.0173, tokens=tokens, n=n, kinds=("adversarial",))


@pytest.mark.parametrize(
    "kv_cache_dtype,dtype",
    [
        ("auto", torch.bfloat16),
        ("auto", torch.float16),
        ("auto", torch.float32),
        ("bfloat16", torch.bfloat16),
        ("float16", torch.float16),
    ],
)
def test_plain_copy(kv_cache_dtype: str, dtype: torch.dtype) -> None:
    _check(kv_cache_dtype, dtype, float("nan"), kinds=("adversarial",))


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_special_value_bytes(kv_cache_dtype: str, dtype: torch.dtype, skip: bool) -> None:
    """NaN of both signs, infinities, signed zeros, ties, the clip bound and subnormal ties, with
    and without the division (skip_scale hands -NaN to the conversion without arithmetic)."""
    from kvscale.kernel import concat_and_cache_mla

    vals = [float("nan"), -float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 17.0, 19.0,
            500.0, 464.0, -464.0, 2.0**-10, 3 * 2.0**-10, 2.0**-9, 61440.0, 1e38, -1e-30,
            2.0**-17, 3 * 2.0**-17, 5 * 2.0**-17]  # fmt: skip
    x = torch.tensor(vals, dtype=torch.float32).to(dtype)
    kv_c = x.reshape(1, -1).repeat(4, 1)
    k_pe = x.flip(0).reshape(1, -1).repeat(4, 1)
    cache = torch.zeros(2, 4, 2 * len(vals), dtype=torch.uint8)
    slots = torch.tensor([5, 0, -1, 2])
    one = torch.ones(1)
    gk = cache.cuda()
    concat_and_cache_mla(
        kv_c.cuda(), k_pe.cuda(), gk, slots.cuda(), kv_cache_dtype, one.cuda(), skip
    )
    reference_concat_and_cache_mla(kv_c, k_pe, cache, slots, kv_cache_dtype, one, skip)
    got = gk.cpu()
    assert torch.equal(got, cache), (got[1, 1].tolist(), cache[1, 1].tolist())
    assert got[1, 1, 1] == 0x7F  # -NaN -> the one canonical NaN byte (e4m3fn and e5m2)


def test_float8_typed_cache() -> None:
    from kvscale.kernel import concat_and_cache_mla

    kv_c = torch.randn(64, 512, dtype=torch.bfloat16) * 100
    k_pe = torch.randn(64, 64, dtype=torch.bfloat16) * 100
    cache = torch.zeros(8, 16, 576, device="cuda", dtype=torch.float8_e4m3fn)
    ref = torch.zeros(8, 16, 576, dtype=torch.uint8)
    slots = torch.randperm(128)[:64]
    s = torch.tensor([0.7])
    concat_and_cache_mla(kv_c.cuda(), k_pe.cuda(), cache, slots.cuda(), "fp8", s.cuda())
    reference_concat_and_cache_mla(kv_c, k_pe, ref, slots, "fp8", s)
    assert torch.equal(cache.view(torch.uint8).cpu(), ref)


def test_fnuz_raises() -> None:
    from kvscale.kernel import concat_and_cache_mla

    cache = torch.zeros(2, 4, 24, device="cuda", dtype=torch.uint8)
    one = torch.ones(1, device="cuda")
    x = torch.ones(4, 16, device="cuda", dtype=torch.bfloat16)
    p = torch.ones(4, 8, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(UnsupportedOnDeviceError, match="an NVIDIA GPU cannot write e4m3fnuz"):
        concat_and_cache_mla(x, p, cache, torch.arange(4, device="cuda"), "fp8_e4m3fnuz", one)


def test_runs_on_a_side_stream() -> None:
    from kvscale.kernel import concat_and_cache_mla

    kv_c = torch.randn(256, 512, dtype=torch.bfloat16)
    k_pe = torch.randn(256, 64, dtype=torch.bfloat16)
    cache = torch.zeros(16, 16, 576, device="cuda", dtype=torch.uint8)
    ref = torch.zeros(16, 16, 576, dtype=torch.uint8)
    slots = torch.arange(256)
    s = torch.tensor([0.01])
    gc, gp = kv_c.cuda(), k_pe.cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        concat_and_cache_mla(gc, gp, cache, slots.cuda(), "fp8", s.cuda())
    torch.cuda.current_stream().wait_stream(side)
    reference_concat_and_cache_mla(kv_c, k_pe, ref, slots, "fp8", s)
    assert torch.equal(cache.cpu(), ref)
