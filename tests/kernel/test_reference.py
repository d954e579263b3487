"""The CPU reference of the FP8 cache write: exact bytes, layouts, padding, errors (no GPU)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from support.tensors import same_float32_bits

from kvscale.kernel import (
    CacheWriteArgumentError,
    UnknownKVCacheDtypeError,
    UnsupportedOnDeviceError,
    dequantize,
    reference_reshape_and_cache_flash,
)
from kvscale.kernel.formats import E4M3FN, E4M3FNUZ, E5M2, FP8Format
from kvscale.kernel.reference import (
    STRESS_KINDS,
    _fp8_grid,
    fp8_read_back,
    fp8_round,
    make_stress_values,
    quantize_to_bits,
)

NAN = float("nan")

INF = float("inf")


def bits(values: list[float], fmt: FP8Format, scale: float = 1.0) -> list[int]:
    x = torch.tensor(values, dtype=torch.float32)
    out = quantize_to_bits(x, torch.tensor([scale]), fmt)
    return [int(b) for b in out.tolist()]


def test_e4m3fn_bytes() -> None:
    vals = [448.0, 500.0, 464.0, -500.0, INF, -INF, NAN, -NAN, 0.0, -0.0, 17.0, 18.0, 19.0]
    assert bits(vals, E4M3FN) == [
        0x7E, 0x7E, 0x7E, 0xFE, 0x7E, 0xFE, 0x7F, 0x7F, 0x00, 0x80, 0x58, 0x59, 0x5A,
    ]  # fmt: skip
    # Subnormals: 2^-9 is the smallest; 2^-10 ties to 0 (even); 3*2^-10 ties up to 2^-8;
    # 7*2^-9 is the largest subnormal, 2^-6 the smallest normal; anything below 2^-10 -> +-0.
    sub = [2.0**-9, 2.0**-10, 3 * 2.0**-10, 7 * 2.0**-9, 2.0**-6, -(2.0**-12), 2.0**-130]
    assert bits(sub, E4M3FN) == [0x01, 0x00, 0x02, 0x07, 0x08, 0x80, 0x00]


def test_e5m2_bytes() -> None:
    vals = [57344.0, 61440.0, 1e6, INF, -INF, NAN, -NAN, -0.0, 17.0, 2.0**-16, 2.0**-17]
    assert bits(vals, E5M2) == [0x7B, 0x7B, 0x7B, 0x7B, 0xFB, 0x7F, 0x7F, 0x80, 0x4C, 0x01, 0x00]
    # 3*2^-17 ties to the even subnormal 2*2^-16; 5*2^-17 to 2*2^-16 as well.
    assert bits([3 * 2.0**-17, 5 * 2.0**-17], E5M2) == [0x02, 0x02]


def test_e4m3fnuz_bytes() -> None:
    vals = [240.0, 500.0, -500.0, INF, NAN, -NAN, -0.0, 17.0, 2.0**-10, 2.0**-11]
    # fnuz: one NaN (0x80), no negative zero, max 240 = 0x7F, smallest subnormal 2^-10.
    assert bits(vals, E4M3FNUZ) == [0x7F, 0x7F, 0xFF, 0x7F, 0x80, 0x80, 0x00, 0x60, 0x01, 0x00]


def test_division_is_true_division_not_reciprocal() -> None:
    # x / s lands just below the midpoint 15*2^-10 of 7*2^-9 (0x07) and 2^-6 (0x08); x * (1/s)
    # lands exactly on it and ties to even (0x08). The kernel must give 0x07.
    s = torch.tensor([0.3], dtype=torch.float32)
    x = torch.tensor([0.00439453125], dtype=torch.bfloat16)
    assert float(x.float() * (1 / s)) == 15 * 2.0**-10
    assert int(quantize_to_bits(x, s, E4M3FN)[0]) == 0x07


def test_scale_divides_and_negative_scale_flips_sign() -> None:
    assert bits([34.0, -34.0], E4M3FN, scale=2.0) == [0x58, 0xD8]
    assert bits([34.0], E4M3FN, scale=-2.0) == [0xD8]
    assert bits([1.0, 0.0, -1.0], E4M3FN, scale=0.0) == [0x7E, 0x7F, 0xFE]  # +inf, NaN, -inf


def _oracle_byte(y: float, fmt: FP8Format) -> int:
    """Encode one float into the format with exact rational arithmetic (no torch)."""
    if math.isnan(y):
        return fmt.nan_byte
    neg = math.copysign(1.0, y) < 0
    a = Fraction(min(abs(y), fmt.max_finite)) if not math.isinf(y) else Fraction(fmt.max_finite)
    m = fmt.mantissa_bits
    min_normal_exp = 1 - fmt.exponent_bias
    if a == 0:
        mag = 0
    else:
        e = max(math.floor(math.log2(a)), min_normal_exp)
        while Fraction(2) ** e > a:  # guard against log2 rounding
            e -= 1
        while Fraction(2) ** (e + 1) <= a:
            e += 1
        e = max(e, min_normal_exp)
        quantum = Fraction(2) ** (e - m)
        n = a / quantum
        r = math.floor(n)
        if n - r > Fraction(1, 2) or (n - r == Fraction(1, 2) and r % 2 == 1):
            r += 1
        value = r * quantum  # may carry into the next binade: fine, encoded below
        if value > fmt.max_finite:
            value = Fraction(fmt.max_finite)
        if value == 0:
            mag = 0
        else:
            e2 = math.floor(math.log2(value))
            if e2 < min_normal_exp:  # subnormal
                mag = int(value / Fraction(2) ** (min_normal_exp - m))
            else:
                frac = value / Fraction(2) ** e2 - 1
                mag = ((e2 + fmt.exponent_bias) << m) | int(frac * 2**m)
    if mag == 0 and not fmt.has_negative_zero:
        return 0
    return mag | (0x80 if neg else 0)


@settings(max_examples=400, deadline=None)
@given(
    x=st.floats(width=32, allow_nan=True, allow_infinity=True),
    s=st.sampled_from([1.0, 0.5, 2.0, 0.0173, 0.3, 3.7, 1e-3, 100.0, -1.5]),
    fmt=st.sampled_from([E4M3FN, E5M2, E4M3FNUZ]),
)
def test_reference_matches_exact_oracle(x: float, s: float, fmt: FP8Format) -> None:
    with np.errstate(all="ignore"):
        y = float(np.float32(x) / np.float32(s))  # IEEE fp32 division
    got = int(quantize_to_bits(torch.tensor([x], dtype=torch.float32), torch.tensor([s]), fmt)[0])
    assert got == _oracle_byte(y, fmt), (x, s, y, fmt.name)


def test_oracle_agrees_on_every_fp8_value_and_midpoint() -> None:
    for fmt in (E4M3FN, E5M2, E4M3FNUZ):
        codes = torch.arange(256).to(torch.uint8).view(getattr(torch, fmt.torch_dtype)).float()
        finite = torch.unique(codes[torch.isfinite(codes)])
        mids = (finite[1:] + finite[:-1]) / 2
        probe = torch.cat([finite, mids, -mids])
        got = quantize_to_bits(probe, torch.tensor([1.0]), fmt).tolist()
        assert got == [_oracle_byte(v, fmt) for v in probe.tolist()], fmt.name


def _setup(num_tokens: int = 6, heads: int = 3, head: int = 4, blocks: int = 4, bs: int = 4):
    key = torch.arange(num_tokens * heads * head, dtype=torch.float32).reshape(
        num_tokens, heads, head
    )
    key = (key % 13 - 6).to(torch.bfloat16)
    value = (-key).contiguous()
    kc = torch.full((blocks, bs, heads, head), 0xA5, dtype=torch.uint8)
    vc = torch.full((blocks, bs, heads, head), 0x5A, dtype=torch.uint8)
    return key, value, kc, vc


def test_writes_slots_and_leaves_padding_untouched() -> None:
    key, value, kc, vc = _setup()
    slots = torch.tensor([5, -1, 0, 15, -3], dtype=torch.int64)  # row 5 is past n: ignored
    k_scale = torch.tensor([0.5])
    v_scale = torch.tensor([2.0])
    reference_reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", k_scale, v_scale)
    flat_k = kc.view(-1, 3, 4)
    flat_v = vc.view(-1, 3, 4)
    for row, slot in enumerate(slots.tolist()):
        if slot < 0:
            continue
        assert torch.equal(flat_k[slot], quantize_to_bits(key[row], k_scale, E4M3FN))
        assert torch.equal(flat_v[slot], quantize_to_bits(value[row], v_scale, E4M3FN))
    untouched = [s for s in range(16) if s not in (5, 0, 15)]
    assert bool((flat_k[untouched] == 0xA5).all()) and bool((flat_v[untouched] == 0x5A).all())


def test_block_and_offset_arithmetic() -> None:
    key, value, kc, vc = _setup()
    slots = torch.tensor([6], dtype=torch.int64)  # block 1, offset 2
    reference_reshape_and_cache_flash(
        key, value, kc, vc, slots, "fp8", torch.ones(1), torch.ones(1)
    )
    want = quantize_to_bits(key[0], torch.ones(1), E4M3FN)
    assert torch.equal(kc[1, 2], want)
    assert int((kc != 0xA5).sum()) <= want.numel()


def test_per_head_scales_index_by_head() -> None:
    key, value, kc, vc = _setup()
    k_scale = torch.tensor([1.0, 2.0, 4.0])
    slots = torch.tensor([3], dtype=torch.int64)
    reference_reshape_and_cache_flash(key, value, kc, vc, slots, "fp8_e4m3", k_scale, torch.ones(1))
    for h in range(3):
        want = quantize_to_bits(key[0, h], torch.tensor([k_scale[h].item()]), E4M3FN)
        assert torch.equal(kc[0, 3, h], want)
    per_tensor = kc.clone()
    reference_reshape_and_cache_flash(
        key, value, per_tensor, vc, slots, "fp8", torch.ones(1), torch.ones(1)
    )
    assert not torch.equal(per_tensor[0, 3, 1], kc[0, 3, 1])


def test_strided_view_caches() -> None:
    key, value, _, _ = _setup()
    kv = torch.full((4, 2, 4, 3, 4), 0x33, dtype=torch.uint8)
    kc, vc = kv[:, 0], kv[:, 1]
    slots = torch.tensor([1, 9, -1, 14], dtype=torch.int64)
    reference_reshape_and_cache_flash(
        key, value, kc, vc, slots, "fp8", torch.ones(1), torch.ones(1)
    )
    dense_k = torch.full((4, 4, 3, 4), 0x33, dtype=torch.uint8)
    dense_v = dense_k.clone()
    reference_reshape_and_cache_flash(
        key, value, dense_k, dense_v, slots, "fp8", torch.ones(1), torch.ones(1)
    )
    assert torch.equal(kv[:, 0], dense_k) and torch.equal(kv[:, 1], dense_v)


def test_float8_cache_dtype_matches_uint8() -> None:
    key, value, kc, vc = _setup()
    slots = torch.tensor([0, 2, 4], dtype=torch.int64)
    k8 = kc.clone().view(torch.float8_e5m2)
    v8 = vc.clone().view(torch.float8_e5m2)
    scale = torch.tensor([0.25])
    reference_reshape_and_cache_flash(key, value, kc, vc, slots, "fp8_e5m2", scale, scale)
    reference_reshape_and_cache_flash(key, value, k8, v8, slots, "fp8_e5m2", scale, scale)
    assert torch.equal(k8.view(torch.uint8), kc) and torch.equal(v8.view(torch.uint8), vc)


def test_fnuz_reference() -> None:
    key, value, kc, vc = _setup()
    slots = torch.tensor([0], dtype=torch.int64)
    reference_reshape_and_cache_flash(
        key, value, kc, vc, slots, "fp8_e4m3fnuz", torch.tensor([0.03125]), torch.ones(1)
    )
    # -6 / 2^-5 = -192 = -1.5 * 2^7: exponent 7 + 8 = 15, mantissa 100 -> 0b1_1111_100
    assert int(kc[0, 0, 0, 0]) == 0xFC


def test_plain_copy_keeps_bits_and_ignores_scales() -> None:
    key, value, _, _ = _setup()
    key[0, 0, 0] = NAN
    kc = torch.zeros(4, 4, 3, 4, dtype=torch.bfloat16)
    vc = torch.zeros_like(kc)
    slots = torch.tensor([3, 0], dtype=torch.int64)
    nan_scale = torch.tensor([NAN])
    for name in ("auto", "bfloat16"):
        reference_reshape_and_cache_flash(key, value, kc, vc, slots, name, nan_scale, nan_scale)
        assert torch.equal(kc[0, 3].view(torch.int16), key[0].view(torch.int16))
        assert torch.equal(vc[0, 0].view(torch.int16), value[1].view(torch.int16))


def test_dequantize_round_trip() -> None:
    g = torch.Generator().manual_seed(0)
    for fmt_name, fmt in (("fp8", E4M3FN), ("fp8_e5m2", E5M2), ("fp8_e4m3fnuz", E4M3FNUZ)):
        scale = torch.tensor([0.75, 2.0, 0.01])
        x = make_stress_values(
            (64, 3, 16), kind="random", dtype=torch.float32, scale=scale, fmt=fmt, generator=g
        )
        q = quantize_to_bits(x, scale, fmt)
        back = dequantize(q, scale, fmt_name)
        assert back.dtype == torch.float32
        s = scale.reshape(-1, 1)
        rel = 2.0 ** -(fmt.mantissa_bits + 1)
        in_range = x.abs() <= fmt.max_finite * s
        tol = rel * x.abs() + fmt.min_subnormal * s / 2
        assert bool(((back - x).abs() <= tol)[in_range].all()), fmt_name
        # Exact: the max byte times the scale.
        top = torch.full((1, 3, 1), fmt.max_byte, dtype=torch.uint8)
        assert (
            dequantize(top, scale, fmt_name).flatten().tolist() == (fmt.max_finite * scale).tolist()
        )
    plain = torch.tensor([1.5, -2.0], dtype=torch.bfloat16)
    assert dequantize(plain, torch.tensor([NAN]), "auto").tolist() == [1.5, -2.0]


def test_stress_values_cover_the_rules() -> None:
    g = torch.Generator().manual_seed(1)
    for kind in STRESS_KINDS:
        x = make_stress_values(
            (32, 2, 64),
            kind=kind,
            dtype=torch.bfloat16,
            scale=torch.ones(1),
            fmt=E4M3FN,
            generator=g,
        )
        assert x.shape == (32, 2, 64) and x.dtype == torch.bfloat16
    q = quantize_to_bits(x, torch.ones(1), E4M3FN)
    assert bool((q == 0x7F).any()) and bool((q == 0x7E).any()) and bool((q == 0x80).any())


def test_argument_errors() -> None:
    key, value, kc, vc = _setup()
    one = torch.ones(1)
    slots = torch.tensor([0], dtype=torch.int64)
    with pytest.raises(UnknownKVCacheDtypeError):
        reference_reshape_and_cache_flash(key, value, kc, vc, slots, "int4", one, one)
    with pytest.raises(CacheWriteArgumentError, match="int64"):
        reference_reshape_and_cache_flash(key, value, kc, vc, slots.int(), "fp8", one, one)
    with pytest.raises(CacheWriteArgumentError, match="num_kv_heads"):
        reference_reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", torch.ones(2), one)
    with pytest.raises(CacheWriteArgumentError, match="entries"):
        reference_reshape_and_cache_flash(
            key, value, kc, vc, torch.zeros(9, dtype=torch.int64), "fp8", one, one
        )
    with pytest.raises(CacheWriteArgumentError, match="past the cache"):
        reference_reshape_and_cache_flash(key, value, kc, vc, torch.tensor([16]), "fp8", one, one)
    with pytest.raises(CacheWriteArgumentError, match="float8_e4m3fnuz"):
        reference_reshape_and_cache_flash(
            key,
            value,
            kc.view(torch.float8_e4m3fn),
            vc.view(torch.float8_e4m3fn),
            slots,
            "fp8_e4m3fnuz",
            one,
            one,
        )
    with pytest.raises(CacheWriteArgumentError, match="plain copy"):
        reference_reshape_and_cache_flash(key, value, kc, vc, slots, "auto", one, one)
    with pytest.raises(CacheWriteArgumentError, match="contiguous"):
        reference_reshape_and_cache_flash(
            key.transpose(1, 2), value, kc, vc, slots, "fp8", one, one
        )


def test_kernel_refuses_fnuz_and_cpu_tensors_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    from kvscale.kernel import reshape_and_cache_flash

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    key, value, kc, vc = _setup()
    one = torch.ones(1)
    slots = torch.tensor([0], dtype=torch.int64)
    with pytest.raises(UnsupportedOnDeviceError, match="an NVIDIA GPU cannot write e4m3fnuz"):
        reshape_and_cache_flash(key, value, kc, vc, slots, "fp8_e4m3fnuz", one, one)
    with pytest.raises(CacheWriteArgumentError, match="CUDA tensors"):
        reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", one, one)


# --- fp8_round / fp8_read_back: the values without the bytes ---------------------------------


def _all_half_values(fmt: FP8Format) -> torch.Tensor:
    """Every bf16 and fp16 value as float32, and the float32 neighbours of every midpoint
    between consecutive values of ``fmt`` (the ties and both sides of each), within +-max."""
    every = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    halves = torch.cat([every.view(torch.bfloat16).float(), every.view(torch.float16).float()])
    grid = _fp8_grid(fmt)
    mids = ((grid[1:] + grid[:-1]) / 2).float()
    bits = mids.view(torch.int32)
    near = torch.cat([(bits + d).view(torch.float32) for d in (-1, 0, 1)])
    values = torch.cat([halves, near, -near])
    return values[values.isnan() | (values.abs() <= fmt.max_finite)]


@pytest.mark.parametrize("fmt", [E4M3FN, E5M2, E4M3FNUZ], ids=lambda f: f.name)
def test_fp8_round_is_the_cast_for_every_half_value_and_tie(fmt: FP8Format) -> None:
    # Checked once over every float32 with |y| <= max (2.3e9 values per format, 0 mismatches,
    # 80 s each); here every bf16/fp16 value (subnormals of both, signed zeros) and each tie.
    y = _all_half_values(fmt)
    want = y.to(getattr(torch, fmt.torch_dtype)).float()
    got = fp8_round(y.clone(), fmt)
    assert same_float32_bits(got, want)
    # fnuz has no -0: -0.0 and negative values rounding to zero read +0.0.
    zero = fp8_round(torch.tensor([-0.0, -fmt.min_subnormal / 4]), fmt)
    assert zero.view(torch.int32).tolist() == ([0, 0] if fmt is E4M3FNUZ else [-(2**31)] * 2)


@pytest.mark.parametrize("fmt", [E4M3FN, E5M2, E4M3FNUZ], ids=lambda f: f.name)
@pytest.mark.parametrize("kind", STRESS_KINDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("per_head", [False, True])
def test_fp8_read_back_is_the_decoded_bytes(
    fmt: FP8Format, kind: str, dtype: torch.dtype, per_head: bool
) -> None:
    g = torch.Generator().manual_seed(3)
    scale = torch.tensor([0.02, 1.5, 3e-4]) if per_head else torch.tensor([0.37])
    x = make_stress_values((80, 3, 32), kind=kind, dtype=dtype, scale=scale, fmt=fmt, generator=g)
    x[0, 0, :4] = torch.tensor([NAN, -NAN, INF, -INF]).to(dtype)
    s = scale.reshape(-1, 1) if per_head else scale.reshape(())
    # Also as a view of [heads, tokens, head_size]-ordered memory, as the model's K arrives:
    # the result keeps the layout the bytes' read has.
    for values in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):
        fp8 = getattr(torch, fmt.torch_dtype)
        want = quantize_to_bits(values, scale, fmt).view(fp8).float() * s
        got = fp8_read_back(values, scale, fmt)
        assert same_float32_bits(got, want) and got.stride() == want.stride()
