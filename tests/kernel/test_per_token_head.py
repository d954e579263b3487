"""kvscale/kernel/per_token_head.py: vLLM 0.33.0's per-token-head KV caches, with bytes worked out
by hand (the arithmetic is in the comments); vLLM's own kernels are compared in
tests/parity/test_vllm_per_token_head.py."""

from __future__ import annotations

import pytest
import torch
from support.tensors import same_float32_bits

from kvscale.errors import ExitCode, UsageError
from kvscale.kernel.formats import UnknownKVCacheDtypeError
from kvscale.kernel.per_token_head import (
    FP8_PER_TOKEN_HEAD,
    INT4_PER_TOKEN_HEAD,
    INT8_PER_TOKEN_HEAD,
    NotPerTokenHeadError,
    PerTokenHeadArgumentError,
    PerTokenHeadQuantized,
    dequantize_per_token_head,
    init_per_token_head_cache,
    is_per_token_head,
    kv_cache_bytes_per_token,
    per_token_head_cache_views,
    per_token_head_format,
    per_token_head_layout,
    per_token_head_read_back,
    quantize_per_token_head,
    random_hadamard_transform,
    read_per_token_head_cache,
    reference_reshape_and_cache_per_token_head,
    rht_block_size,
    rht_signs,
)

NAN = float("nan")
INF = float("inf")
FLOOR_BITS = 0x358637BD  # float32(1e-6)


def f32(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32)


def scale_bits(q: PerTokenHeadQuantized) -> list[int]:
    bits: list[int] = (q.scales.view(torch.int32).reshape(-1) & 0xFFFFFFFF).tolist()
    return bits


def codes(q: PerTokenHeadQuantized) -> list[int]:
    values: list[int] = q.codes.reshape(-1).tolist()
    return values


# --- int8 ------------------------------------------------------------------------------------


def test_round_half_away_is_the_kernels_where_and_trunc() -> None:
    """The rounding as floor(|y| + 0.5) with y's sign against the kernels' own
    ``trunc(where(y >= 0, y + 0.5, y - 0.5))``, bit for bit (signed zeros, NaN), on every bf16
    value and on each of them plus one float32 ulp either side (the ties of every binade)."""
    from kvscale.kernel import per_token_head as P

    y = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    y = y.float()
    y = torch.cat([y, torch.nextafter(y, y.new_full((), INF)), torch.nextafter(y, -y.abs())])
    want = torch.trunc(torch.where(y >= 0, y + 0.5, y - 0.5))
    got = P._round_half_away(y)
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(got[~nan].view(torch.int32), want[~nan].view(torch.int32))
    assert P._round_half_away(f32([-0.0])).view(torch.int32).tolist() == [0]  # +0.0


def test_int8_rounds_ties_away_from_zero_at_scale_one() -> None:
    # absmax 127 -> s = 127 / 127 = 1.0 exactly, 1/s = 1: y = x, q = trunc(y +- 0.5).
    q = quantize_per_token_head(
        f32([127, 2.5, -2.5, 0.5, -0.5, 1.49, -126.5, 0]), "int8_per_token_head"
    )
    assert codes(q) == [127, 3, -3, 1, -1, 1, -127, 0]
    assert scale_bits(q) == [0x3F800000]
    assert q.codes.dtype == torch.int8


def test_int8_ties_at_scale_two() -> None:
    # absmax 254 -> s = 2.0, 1/s = 0.5: y = [127, 2.5, -2.5, 1.5, -0.5, 0.25, -126.5, 0].
    q = quantize_per_token_head(f32([254, 5, -5, 3, -1, 0.5, -253, 0]), INT8_PER_TOKEN_HEAD)
    assert codes(q) == [127, 3, -3, 2, -1, 0, -127, 0]
    assert scale_bits(q) == [0x40000000]


def test_int8_scale_floor() -> None:
    # absmax 1e-4 / 127 < 1e-6: s = float32(1e-6) (0x358637BD); 1 / s = 1000000.0025 rounds to
    # 1e6, so y = x * 1e6: 100, -50, 25, 1.5 -> 2, 0.75 -> 1, 0, 0, 30.
    x = f32([1e-4, -5e-5, 2.5e-5, 1.5e-6, 7.5e-7, 0.0, -0.0, 3e-5])
    q = quantize_per_token_head(x, INT8_PER_TOKEN_HEAD)
    assert codes(q) == [100, -50, 25, 2, 1, 0, 0, 30]
    assert scale_bits(q) == [FLOOR_BITS]
    # float32(1.27e-4) = 0x39052B4E divided by 127 rounds to the floor itself.
    q = quantize_per_token_head(f32([1.27e-4, -1.27e-4, 63.5e-6, 1e-6]), INT8_PER_TOKEN_HEAD)
    assert codes(q) == [127, -127, 64, 1]
    assert scale_bits(q) == [FLOOR_BITS]


@pytest.mark.parametrize("zero", [0.0, -0.0])
def test_int8_zeros(zero: float) -> None:
    q = quantize_per_token_head(f32([zero] * 8), INT8_PER_TOKEN_HEAD)
    assert codes(q) == [0] * 8
    assert scale_bits(q) == [FLOOR_BITS]


def test_int8_never_reaches_minus_128_from_finite_values() -> None:
    # |y| <= 127 (+ rounding) and -127.5 truncates to -127: the clamp's -128 is never used.
    x = torch.linspace(-1.0, 1.0, 257).reshape(1, 257)
    q = quantize_per_token_head(x, INT8_PER_TOKEN_HEAD)
    assert int(q.codes.min()) == -127 and int(q.codes.max()) == 127


def test_int8_nan_and_inf_derived_gpu_semantics() -> None:
    # NaN is ignored by the absmax (maxnum): s = 4 / 127, 1/s rounds to 31.75, y(2) = 63.5 -> 64;
    # the NaN itself survives the rounding and is clamped to the lower bound, -128.
    q = quantize_per_token_head(f32([NAN, 2.0, -4.0, 1.0]), INT8_PER_TOKEN_HEAD)
    assert codes(q) == [-128, 64, -127, 32]
    # inf: s = inf, 1/s = 0, finite values become 0, inf * 0 = NaN -> -128.
    q = quantize_per_token_head(f32([INF, 2.0, -4.0, 1.0]), INT8_PER_TOKEN_HEAD)
    assert codes(q) == [-128, 0, 0, 0]
    assert scale_bits(q) == [0x7F800000]
    # all NaN: absmax NaN -> s = maxnum(NaN, 1e-6) = the floor.
    assert scale_bits(quantize_per_token_head(f32([NAN] * 4), INT8_PER_TOKEN_HEAD)) == [FLOOR_BITS]


# --- fp8 -------------------------------------------------------------------------------------


def test_fp8_round_to_nearest_even_and_subnormals() -> None:
    # absmax 448: s = 1, y = x. e4m3fn: 448 = 0x7E; 17 is a tie between 16 (0x58) and 18
    # (0x59), even -> 0x58; 19 between 18 and 20 (0x5A) -> 0x5A; -0.0 -> 0x80; 2^-9 is the
    # smallest subnormal 0x01; 3 x 2^-10 ties between 0x01 and 0x02 -> 0x02; 2^-10 ties between
    # 0 and 0x01 -> 0x00; 1.0 = 0x38, -1.0 = 0xB8.
    x = f32([448, 17, 19, -0.0, 2**-9, 3 * 2**-10, 2**-10, 1, -1])
    q = quantize_per_token_head(x, FP8_PER_TOKEN_HEAD)
    assert codes(q) == [0x7E, 0x58, 0x5A, 0x80, 0x01, 0x02, 0x00, 0x38, 0xB8]
    assert scale_bits(q) == [0x3F800000]
    assert q.codes.dtype == torch.uint8


def test_fp8_quotient_above_448_is_clamped() -> None:
    # absmax a with float32(a * float32(1 / float32(a / 448))) just above 448: the clamp
    # stores 448 (0x7E), never the NaN byte 0x7F.
    a = 1 + torch.arange(1, 2048, dtype=torch.float32) / 1024
    q = quantize_per_token_head(torch.stack((a, -a), dim=-1), FP8_PER_TOKEN_HEAD)
    over = a * (torch.ones_like(q.scales) / q.scales) > 448
    assert int(over.sum()) > 0
    assert q.codes[over].tolist() == [[0x7E, 0xFE]] * int(over.sum())


def test_fp8_nan_and_inf_derived_gpu_semantics() -> None:
    # clamp(y, -448, 448) is min.xorsign.abs on sm90; the multiply's NaN is the positive
    # canonical NaN, so NaN -> +448 (0x7E). inf: s = inf, finite * 0 = +-0, inf * 0 = NaN.
    q = quantize_per_token_head(f32([NAN, 448, 1]), FP8_PER_TOKEN_HEAD)
    assert codes(q) == [0x7E, 0x7E, 0x38]
    q = quantize_per_token_head(f32([INF, -3.0, 0.0, 2.0]), FP8_PER_TOKEN_HEAD)
    assert codes(q) == [0x7E, 0x80, 0x00, 0x00]
    assert scale_bits(q) == [0x7F800000]


def test_fp8_scale_floor() -> None:
    q = quantize_per_token_head(f32([0.0] * 4), FP8_PER_TOKEN_HEAD)
    assert codes(q) == [0, 0, 0, 0] and scale_bits(q) == [FLOOR_BITS]
    # s = 1e-6, y = x * 1e6: 3e-4 -> 299.99999, e4m3 steps by 32 in [256, 448]: 288 =
    # 1.125 x 2^8 = 0x79; -1.1e-4 -> -110.00000, steps of 8 in [64, 128): -112 = 0xEE.
    q = quantize_per_token_head(f32([3e-4, -1.1e-4]), FP8_PER_TOKEN_HEAD)
    assert codes(q) == [0x79, 0xEE]
    assert scale_bits(q) == [FLOOR_BITS]


# --- int4 ------------------------------------------------------------------------------------


def hadamard(b: int) -> torch.Tensor:
    h = torch.ones(1, 1, dtype=torch.float64)
    while h.shape[0] < b:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h


SIGNS_8 = [1.0, -1.0, 1.0, 1.0, -1.0, -1.0, -1.0, -1.0]  # vLLM's _get_rht_signs(8, 0): "+-++----"


def unrotated(r: list[float]) -> torch.Tensor:
    """x with H (D x) == r: x = D H r / 8 (exact for these dyadic rows)."""
    d = torch.tensor(SIGNS_8, dtype=torch.float64)
    return (d * (hadamard(8) @ torch.tensor(r, dtype=torch.float64)) / 8).float()


def test_rht_signs_and_block() -> None:
    assert rht_signs(8).tolist() == SIGNS_8
    assert rht_signs(32).tolist()[:8] == SIGNS_8  # one Bernoulli stream: prefixes agree
    assert [rht_block_size(n) for n in (128, 96, 80, 40, 256, 6)] == [128, 32, 16, 8, 256, 2]


def test_rht_is_block_diagonal_with_shared_signs() -> None:
    # head 24 = 3 blocks of 8: a one-hot at position 9 (block 1, index 1) becomes
    # sign[1] * column 1 of H_8 = -[1, -1, 1, -1, 1, -1, 1, -1] in block 1, zeros elsewhere.
    x = torch.zeros(24)
    x[9] = 1.0
    y = random_hadamard_transform(x)
    assert y[:8].tolist() == [0.0] * 8 and y[16:].tolist() == [0.0] * 8
    assert y[8:16].tolist() == [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]
    # inverse(forward(x)) = b * x.
    x = torch.arange(24, dtype=torch.float32) - 7
    assert torch.equal(random_hadamard_transform(random_hadamard_transform(x), inverse=True), 8 * x)


def test_int4_ties_and_zero_point_packing() -> None:
    # Rotated r: min -5, max 10 -> s = 15 / 15 = 1, zp = round(5) = 5, q = r + 5 rounded half
    # away: [0, 15, 6, 3, 7, 8, 5, 12]; bytes (odd << 4) | even: F0 36 87 C5.
    # Stored scale: bits(1.0) = 0x3F800000, zero point in the low nibble: 0x3F800005.
    q = quantize_per_token_head(unrotated([-5, 10, 0.5, -2.5, 2, 3, 0, 7]), INT4_PER_TOKEN_HEAD)
    assert codes(q) == [0xF0, 0x36, 0x87, 0xC5]
    assert scale_bits(q) == [0x3F800005]
    assert q.zero_points is not None and q.zero_points.reshape(-1).tolist() == [5]
    assert q.read_scales.reshape(-1).tolist() == [1.0]
    rotated = dequantize_per_token_head(q, domain="rotated")
    assert rotated.tolist() == [-5.0, 10.0, 1.0, -2.0, 2.0, 3.0, 0.0, 7.0]
    # In the original space: D H r' / 8, exact here.
    want = unrotated([-5.0, 10.0, 1.0, -2.0, 2.0, 3.0, 0.0, 7.0])
    assert torch.equal(dequantize_per_token_head(q), want)


def test_int4_zero_point_tie_pushes_the_max_into_the_clamp() -> None:
    # min -2.5, max 12.5: s = 1, zp = round(2.5) = 3 (away from zero); q = r + 3:
    # -2.5 -> 0.5 -> 1, 12.5 -> 15.5 -> 16 -> clamped to 15, 0.5 -> 4, 1 -> 4, -1.5 -> 2,
    # 11.5 -> 15, 0 -> 3, 6 -> 9: bytes F1 44 F2 93, scale 0x3F800003.
    q = quantize_per_token_head(
        unrotated([-2.5, 12.5, 0.5, 1, -1.5, 11.5, 0, 6]), INT4_PER_TOKEN_HEAD
    )
    assert codes(q) == [0xF1, 0x44, 0xF2, 0x93]
    assert scale_bits(q) == [0x3F800003]


def test_int4_one_signed_range_clamps() -> None:
    # All positive: s = float32(7 / 15) = 0x3EEEEEEF, zp = round(-1 / s) = -2 -> clamped to 0;
    # q = r / s = [2.14, 17.1, 4.29, 6.43, 16.1, 8.57, 10.7, 12.9] -> [2, 15, 4, 6, 15, 9, 11, 13]:
    # bytes F2 64 9F DB; stored scale 0x3EEEEEE0 (low nibble replaced by zp 0).
    q = quantize_per_token_head(unrotated([1, 8, 2, 3, 7.5, 4, 5, 6]), INT4_PER_TOKEN_HEAD)
    assert codes(q) == [0xF2, 0x64, 0x9F, 0xDB]
    assert scale_bits(q) == [0x3EEEEEE0]
    # All negative: zp = round(15 * 8 / 7) = 17 -> clamped to 15; q = r / s + 15:
    # [12.9, -2.1, 10.7, 8.6, -1.1, 6.4, 4.3, 2.1] -> [13, 0, 11, 9, 0, 6, 4, 2]: 0D 9B 60 24;
    # the stored low nibble is zp 15, which happens to equal the scale's own.
    q = quantize_per_token_head(unrotated([-1, -8, -2, -3, -7.5, -4, -5, -6]), INT4_PER_TOKEN_HEAD)
    assert codes(q) == [0x0D, 0x9B, 0x60, 0x24]
    assert scale_bits(q) == [0x3EEEEEEF]


def test_int4_floor_and_zeros() -> None:
    # Constant 0.75: range 0 -> s = 1e-6 (0x358637BD), zp = round(-750000) -> 0, every code
    # 0.75e6 -> 15: bytes FF; stored scale 0x358637B0.
    q = quantize_per_token_head(unrotated([0.75] * 8), INT4_PER_TOKEN_HEAD)
    assert codes(q) == [0xFF] * 4 and scale_bits(q) == [0x358637B0]
    # Zeros: zp = round(-0.0 / s) = 0 (-0.0 >= 0 takes the + 0.5 branch), codes 0.
    q = quantize_per_token_head(f32([0.0] * 8), INT4_PER_TOKEN_HEAD)
    assert codes(q) == [0] * 4 and scale_bits(q) == [0x358637B0]


def test_int4_zero_point_replaces_nonzero_scale_bits() -> None:
    # min -0.5, max 1.0: s = float32(1.5 / 15) = float32(0.1) = 0x3DCCCCCD; -min / s rounds to
    # 5.0 -> zp 5; stored 0x3DCCCCC5; attention reads 0x3DCCCCC0 (0.09999996).
    q = quantize_per_token_head(
        unrotated([-0.5, 1.0, 0.25, -0.125, 0.375, 0.0, 0.5, -0.25]), INT4_PER_TOKEN_HEAD
    )
    assert scale_bits(q) == [0x3DCCCCC5]
    assert (q.read_scales.view(torch.int32) & 0xFFFFFFFF).reshape(-1).tolist() == [0x3DCCCCC0]
    # q = r / s + 5 = [0, 15, 7.5 -> 8, 3.75 -> 4, 8.75 -> 9, 5, 10, 2.5 -> 3]: F0 48 59 3A.
    assert codes(q) == [0xF0, 0x48, 0x59, 0x3A]


def test_int4_rotation_rounds_back_to_the_input_dtype() -> None:
    # reshape_and_cache_int4 rotates in float32 and casts back to x.dtype before quantizing:
    # rotate=False on that cast equals rotate=True on the original.
    g = torch.Generator().manual_seed(3)
    x = torch.randn(4, 2, 64, generator=g).to(torch.bfloat16)
    rotated = random_hadamard_transform(x).to(torch.bfloat16)
    a = quantize_per_token_head(x, INT4_PER_TOKEN_HEAD)
    b = quantize_per_token_head(rotated, INT4_PER_TOKEN_HEAD, rotate=False)
    assert torch.equal(a.codes, b.codes) and torch.equal(a.scales, b.scales)
    c = quantize_per_token_head(random_hadamard_transform(x), INT4_PER_TOKEN_HEAD, rotate=False)
    assert not torch.equal(a.scales, c.scales)  # without the bf16 rounding the scales move


@pytest.mark.parametrize("kv", [INT8_PER_TOKEN_HEAD, FP8_PER_TOKEN_HEAD, INT4_PER_TOKEN_HEAD])
def test_round_trip_error_is_bounded(kv: str) -> None:
    g = torch.Generator().manual_seed(11)
    x = torch.randn(64, 4, 128, generator=g) * torch.tensor([0.1, 1.0, 10.0, 100.0]).reshape(4, 1)
    q = quantize_per_token_head(x, kv)
    err = (dequantize_per_token_head(q) - x).abs()
    absmax = x.abs().amax(-1, keepdim=True)
    if kv == INT8_PER_TOKEN_HEAD:
        # Half a step of absmax / 127, plus float32 noise.
        assert bool((err <= absmax / 127 * (0.5 + 1e-5)).all())
    elif kv == FP8_PER_TOKEN_HEAD:
        # e4m3: relative half-ulp 2^-4 for normals; below 2^-6 * s the absolute step 2^-10 * s.
        bound = torch.maximum(x.abs() * 2**-4, absmax / 448 * 2**-10) * (1 + 1e-5)
        assert bool((err <= bound).all())
    else:
        # Each rotated value is within one step s = (max - min) / 15 (half a step of rounding,
        # half a step more where the zero point's rounding pushes the max into the clamp);
        # the inverse rotation / b averages b such errors: |error| <= s.
        r = random_hadamard_transform(x)
        step = (r.amax(-1, keepdim=True) - r.amin(-1, keepdim=True)) / 15
        assert bool((err <= step * (1 + 1e-4)).all())
        rel = float((err.square().mean() / x.square().mean()).sqrt())
        assert 0.02 < rel < 0.2  # int4: a few percent RMS


def _read_back_inputs(dtype: torch.dtype, head_size: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(head_size)
    # Magnitudes from 1e-8 to 1e4 per token, so scales hit the floor and small values sit near
    # every rounding boundary, and -0.0 codes (values rounding to zero from below) occur.
    x = torch.randn(96, 3, head_size, generator=g) * torch.logspace(-8, 4, 96).reshape(-1, 1, 1)
    x[0, 0, :6] = f32([NAN, INF, -INF, -0.0, 0.0, -1e-30])
    x[1, 1] = NAN
    x[2, 0] = -0.0
    x[3, 2] = torch.linspace(-0.49, 0.49, head_size)
    return x.to(dtype)


@pytest.mark.parametrize("kv", [INT8_PER_TOKEN_HEAD, FP8_PER_TOKEN_HEAD, INT4_PER_TOKEN_HEAD])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("head_size", [64, 96])
def test_read_back_is_the_codes_read_bit_for_bit(
    kv: str, dtype: torch.dtype, head_size: int
) -> None:
    x = _read_back_inputs(dtype, head_size)
    # The model's K arrives as a view of [heads, tokens, head_size]-ordered memory: the result's
    # layout matters too (attention and the error sums read it; their order follows it).
    for given in (x, x.transpose(0, 1).contiguous().transpose(0, 1)):
        want = dequantize_per_token_head(quantize_per_token_head(given, kv))
        got = per_token_head_read_back(given, kv)
        # The inputs hold values whose codes are -0.0 before the store (int8, int4): they read
        # back +0.0, and a read-back keeping that sign fails here.
        assert got.dtype == torch.float32 and same_float32_bits(got, want)
        assert got.stride() == want.stride()
    with pytest.raises(NotPerTokenHeadError):
        per_token_head_read_back(x, "fp8")


def test_walsh_hadamard_is_the_butterfly_in_stage_order() -> None:
    # Span 1, 2, 4, ... sums computed one stage at a time in float64 from float32 inputs, each
    # rounded to float32 (every float32 sum is exactly a float64 sum rounded once): the
    # rounding order of vLLM's torch path, which another order (a matrix product, stages
    # reversed) does not give bit for bit.
    g = torch.Generator().manual_seed(5)
    x = torch.randn(40, 2, 64, generator=g) * torch.logspace(-3, 3, 64)
    signs = rht_signs(64)
    want = (x * signs).reshape(-1, 64).double()
    span = 1
    while span < 64:
        pairs = want.reshape(-1, 64 // (2 * span), 2, span)
        low, high = pairs[:, :, 0], pairs[:, :, 1]
        low32, high32 = low.float().double(), high.float().double()
        want = torch.stack((low32 + high32, low32 - high32), dim=2).float().double()
        want = want.reshape(-1, 64)
        span *= 2
    got = random_hadamard_transform(x)
    assert got.shape == x.shape
    assert torch.equal(got.reshape(-1, 64), want.float())


# --- layout ----------------------------------------------------------------------------------


def test_layout_offsets() -> None:
    int8 = per_token_head_layout(INT8_PER_TOKEN_HEAD, 8, 128)
    assert (int8.k_data_offset, int8.k_scale_offset, int8.v_data_offset, int8.v_scale_offset) == (
        0,
        128,
        132,
        260,
    )
    assert int8.content_bytes == 264 and int8.bytes_per_token == 2112
    int4 = per_token_head_layout(INT4_PER_TOKEN_HEAD, 8, 128)
    assert (int4.k_scale_offset, int4.v_data_offset, int4.v_scale_offset) == (64, 68, 132)
    assert int4.content_bytes == 136 and int4.bytes_per_token == 1088
    assert per_token_head_layout(FP8_PER_TOKEN_HEAD, 2, 80).content_bytes == 168
    assert per_token_head_layout(INT4_PER_TOKEN_HEAD, 1, 40).content_bytes == 48
    assert int8.cache_shape(10, 16) == (10, 8, 16, 264)
    assert per_token_head_layout(INT8_PER_TOKEN_HEAD, 1, 128).triton_attn_accepts_head_size
    assert not per_token_head_layout(INT8_PER_TOKEN_HEAD, 1, 16).triton_attn_accepts_head_size


def test_bytes_per_token_next_to_other_dtypes() -> None:
    # Llama-3-8B: 8 KV heads of 128, per layer.
    kinds = ("auto", "float32", "fp8", "fp8_e5m2", INT8_PER_TOKEN_HEAD)
    got = [kv_cache_bytes_per_token(kv, 8, 128) for kv in kinds]
    assert got == [4096, 8192, 2048, 2048, 2112]
    assert kv_cache_bytes_per_token(FP8_PER_TOKEN_HEAD, 8, 128) == 2112
    assert kv_cache_bytes_per_token(INT4_PER_TOKEN_HEAD, 8, 128) == 1088
    assert kv_cache_bytes_per_token("auto", 8, 128, model_dtype="float32") == 8192
    with pytest.raises(UnknownKVCacheDtypeError):
        kv_cache_bytes_per_token("fp9", 8, 128)


@pytest.mark.parametrize(
    ("kv", "head_size", "match"),
    [
        (INT4_PER_TOKEN_HEAD, 33, "must be even"),
        (INT4_PER_TOKEN_HEAD, 36, "multiple of 8"),
        (INT8_PER_TOKEN_HEAD, 34, "multiple of 4"),
        (FP8_PER_TOKEN_HEAD, 0, "positive integer"),
    ],
)
def test_layout_refuses_what_vllm_cannot_lay_out(kv: str, head_size: int, match: str) -> None:
    with pytest.raises(PerTokenHeadArgumentError, match=match) as info:
        per_token_head_layout(kv, 4, head_size)
    assert isinstance(info.value, UsageError) and isinstance(info.value, ValueError)
    assert info.value.exit_code == ExitCode.USAGE


def test_formats_and_typed_dtype_error() -> None:
    assert is_per_token_head(INT4_PER_TOKEN_HEAD) and not is_per_token_head("fp8")
    assert per_token_head_format(INT8_PER_TOKEN_HEAD).torch_storage_dtype == torch.int8
    assert per_token_head_format(FP8_PER_TOKEN_HEAD).torch_storage_dtype == torch.uint8
    with pytest.raises(NotPerTokenHeadError, match="'fp8' is not a per-token-head") as info:
        per_token_head_layout("fp8", 1, 128)
    assert info.value.kv_cache_dtype == "fp8"
    with pytest.raises(PerTokenHeadArgumentError, match="bfloat16, float16 or float32"):
        quantize_per_token_head(torch.ones(8, dtype=torch.float64), INT8_PER_TOKEN_HEAD)
    with pytest.raises(PerTokenHeadArgumentError, match="domain"):
        dequantize_per_token_head(
            quantize_per_token_head(f32([1.0] * 4), INT8_PER_TOKEN_HEAD), domain="x"
        )  # type: ignore[arg-type]


# --- the paged cache -------------------------------------------------------------------------


def new_cache(
    kv: str, blocks: int, heads: int, bs: int, hs: int, nhd: bool = False
) -> torch.Tensor:
    layout = per_token_head_layout(kv, heads, hs)
    dtype = per_token_head_format(kv).torch_storage_dtype
    if nhd:
        buf = torch.full((blocks, bs, heads, layout.content_bytes), 0x5A, dtype=torch.uint8)
        return buf.view(dtype).permute(0, 2, 1, 3)
    return torch.full(layout.cache_shape(blocks, bs), 0x5A, dtype=torch.uint8).view(dtype)


def test_init_sets_every_scale_cell_to_one() -> None:
    cache = new_cache(INT8_PER_TOKEN_HEAD, 2, 2, 4, 32)
    init_per_token_head_cache(cache, INT8_PER_TOKEN_HEAD, 32)
    raw = cache.view(torch.uint8)
    assert raw[1, 1, 3, 32:36].tolist() == [0x00, 0x00, 0x80, 0x3F]  # 1.0f, little-endian
    assert raw[1, 1, 3, 68:72].tolist() == [0x00, 0x00, 0x80, 0x3F]
    assert (
        raw[1, 1, 3, 0:32].tolist() == [0x5A] * 32 and raw[1, 1, 3, 36:68].tolist() == [0x5A] * 32
    )


@pytest.mark.parametrize("kv", [INT8_PER_TOKEN_HEAD, FP8_PER_TOKEN_HEAD, INT4_PER_TOKEN_HEAD])
@pytest.mark.parametrize("nhd", [False, True])
def test_write_places_codes_and_scales_per_slot(kv: str, nhd: bool) -> None:
    g = torch.Generator().manual_seed(5)
    key = torch.randn(5, 2, 32, generator=g).to(torch.bfloat16)
    value = torch.randn(5, 2, 32, generator=g).to(torch.bfloat16)
    cache = new_cache(kv, 3, 2, 4, 32, nhd)
    slots = torch.tensor([9, -1, 0, 4, 11])
    reference_reshape_and_cache_per_token_head(key, value, cache, slots, kv)
    layout = per_token_head_layout(kv, 2, 32)
    kq, vq = quantize_per_token_head(key, kv), quantize_per_token_head(value, kv)
    raw = cache.view(torch.uint8)
    for t, slot in enumerate(slots.tolist()):
        if slot < 0:
            continue
        blk, off = divmod(slot, 4)
        for h in range(2):
            cell = raw[blk, h, off]
            db = layout.data_bytes
            assert torch.equal(cell[:db], kq.codes[t, h].view(torch.uint8))
            assert torch.equal(cell[db : db + 4], kq.scales[t, h].reshape(1).view(torch.uint8))
            assert torch.equal(cell[db + 4 : 2 * db + 4], vq.codes[t, h].view(torch.uint8))
            assert torch.equal(cell[2 * db + 4 :], vq.scales[t, h].reshape(1).view(torch.uint8))
    # Slots nobody maps keep their bytes: 1, 2, 3, 5, ...
    for slot in set(range(12)) - {9, 0, 4, 11}:
        blk, off = divmod(slot, 4)
        assert bool((raw[blk, :, off] == 0x5A).all())
    k_back, v_back = read_per_token_head_cache(cache, slots, kv, 32)
    live = torch.tensor([0, 2, 3, 4])
    assert torch.equal(k_back.codes, kq.codes[live]) and torch.equal(v_back.scales, vq.scales[live])
    views = per_token_head_cache_views(cache, kv, 32)
    assert views.k_scales.shape == (3, 2, 4) and views.v_codes.shape == (3, 2, 4, layout.data_bytes)


def test_writer_refuses_bad_arguments() -> None:
    key = torch.ones(3, 2, 32, dtype=torch.bfloat16)
    cache = new_cache(INT8_PER_TOKEN_HEAD, 2, 2, 4, 32)
    ok = torch.tensor([0, 1, 2])
    cases = [
        (key, key, cache, torch.tensor([0, 0, 1]), INT8_PER_TOKEN_HEAD, "same slot"),
        (key, key, cache, torch.tensor([0, 1, 8]), INT8_PER_TOKEN_HEAD, "past the cache"),
        (key, key, cache, torch.tensor([0, 1]), INT8_PER_TOKEN_HEAD, "2 entries for 3 tokens"),
        (key, key, cache, ok.int(), INT8_PER_TOKEN_HEAD, "1-D int64"),
        (key, key.float(), cache, ok, INT8_PER_TOKEN_HEAD, "one shape and dtype"),
        (key, key, cache.view(torch.uint8), ok, INT8_PER_TOKEN_HEAD, "int8 tensors"),
        (key, key, cache, ok, INT4_PER_TOKEN_HEAD, "uint8 tensors"),
        (key[:, :1], key[:, :1], cache, ok, INT8_PER_TOKEN_HEAD, "1 heads"),
        (key[0], key[0], cache, ok, INT8_PER_TOKEN_HEAD, "num_tokens, num_kv_heads"),
        (
            key,
            key,
            new_cache(INT8_PER_TOKEN_HEAD, 2, 2, 4, 68)[..., ::2],
            ok,
            INT8_PER_TOKEN_HEAD,
            "contiguous",
        ),
        (key, key, cache, ok, "fp8", "not a per-token-head"),
    ]
    for k, v, c, s, kv, match in cases:
        with pytest.raises(PerTokenHeadArgumentError, match=match):
            reference_reshape_and_cache_per_token_head(k, v, c, s, kv)
    # Extra slot_mapping entries beyond the tokens are not read (the grid is key.shape[0]).
    reference_reshape_and_cache_per_token_head(
        key, key, cache, torch.tensor([0, 1, 2, 0]), INT8_PER_TOKEN_HEAD
    )
