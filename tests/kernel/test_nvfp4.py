"""The NVFP4 reference write (kvscale/kernel/nvfp4.py) on vectors derived by hand from vLLM
0.33.0's CUDA (``csrc/nvfp4_kv_cache_kernels.cu``, ``nvfp4_utils.cuh``, checked against the
wheel's sm_100 SASS).

Unless a test says otherwise: one group of 16 bf16 values, k_scale = 1.0, so ``g = 1/1 = 1``,
``rcp(g) = 1`` exactly, ``sf = e4m3((m * RCP6) * 1)`` with ``RCP6 = 0x3E2AAAAB =
0.16666667163...``, and, when sf is a power of two, ``os = rcp(sf)`` exactly: such blocks are
never ambiguous. Bytes: element 2k in the low nibble of byte k; e2m1 code = sign << 3 | index
of {0, 0.5, 1, 1.5, 2, 3, 4, 6}; e4m3 0x38 = 1.0.
"""

from __future__ import annotations

import math

import pytest
import torch

from kvscale.errors import UsageError
from kvscale.kernel import nvfp4 as N
from kvscale.kernel.nvfp4 import (
    NVFP4ArgumentError,
    NVFP4BlockSizeError,
    NVFP4HeadSizeError,
    NVFP4LayoutError,
    NVFP4PageLayout,
    dequantize_nvfp4,
    nvfp4_bytes_per_token,
    nvfp4_full_dim,
    nvfp4_kv_cache_shape,
    nvfp4_layer_stats,
    nvfp4_write_stats,
    quantize_nvfp4,
    read_nvfp4_cache,
    reference_reshape_and_cache_nvfp4,
    v_scale_position,
)

NAN = float("nan")
INF = float("inf")


def group(*values: float) -> torch.Tensor:
    """One bf16 group of 16, zero-padded (every value below is exactly representable)."""
    x = torch.zeros(16, dtype=torch.float32)
    x[: len(values)] = torch.tensor(values, dtype=torch.float32)
    out = x.to(torch.bfloat16)
    assert torch.equal(out.float(), x) or any(math.isnan(v) for v in values)
    return out


def write(x: torch.Tensor, k: float = 1.0, dtype: str = "nvfp4") -> tuple[list[int], int, bool]:
    q = quantize_nvfp4(x[None], torch.tensor([k]), dtype)
    return q.data[0].tolist(), int(q.scales[0, 0]), bool(q.ambiguous[0, 0])


def padded(*first: int) -> list[int]:
    return list(first) + [0] * (8 - len(first))


# ---- e2m1 rounding -------------------------------------------------------------------------


def test_e2m1_ties_go_to_even_codes() -> None:
    """m = 6 -> sf = e4m3(6 * RCP6 = 1.00000003 -> fp32 1.0) = 0x38, os = 1: x * os = x. The
    midpoints 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5 round to the even code (0, 1.0, 1.0, 2.0, 2.0,
    4.0, 4.0 = codes 0, 2, 2, 4, 4, 6, 6), as cvt.rn.satfinite.e2m1x2.f32 and vLLM's
    round_to_nearest_e2m1 (<= 0.25, < 0.75, <= 1.25, ...) do; negatives set bit 3, -0.25 -> 0x8."""
    x = group(6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5,
              -0.25, -0.75, -1.25, -1.75, -2.5, -3.5, -5, 0)  # fmt: skip
    assert write(x) == ([0x07, 0x22, 0x44, 0x66, 0xA8, 0xCA, 0xEC, 0x0E], 0x38, False)


def test_e2m1_one_bf16_ulp_off_the_ties() -> None:
    """The bf16 neighbours of the midpoints round away from the tie: 0.251953125 -> 0.5 (1),
    0.74609375 -> 0.5 (1), 1.2578125 -> 1.5 (3), 1.7421875 -> 1.5 (3), 2.515625 -> 3 (5),
    3.484375 -> 3 (5), 5.03125 -> 6 (7)."""
    x = group(6, 0.251953125, 0.74609375, 1.2578125, 1.7421875, 2.515625, 3.484375, 5.03125)
    assert write(x) == (padded(0x17, 0x31, 0x53, 0x75), 0x38, False)


def _vllm_e2m1_index(a: float) -> int:
    """vLLM 0.33.0's ``round_to_nearest_e2m1`` thresholds on |y|, written out per value."""
    for index, (limit, inclusive) in enumerate(
        [(0.25, True), (0.75, False), (1.25, True), (1.75, False), (2.5, True), (3.5, False),
         (5.0, True)]
    ):  # fmt: skip
        if a < limit or (inclusive and a == limit):
            return index
    return 7


def test_e2m1_magnitude_code_at_every_float32_neighbour_of_the_boundaries() -> None:
    """The e2m1 rounding of the scaled float32 values (not only bf16 ones): at each midpoint and
    its float32 neighbours on both sides, both signs, and 0, inf and 6 beyond."""
    values = [0.0, 6.0, 7.0, INF, 1e30]
    for b in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0):
        t = torch.tensor(b, dtype=torch.float32)
        values += [b, float(torch.nextafter(t, torch.tensor(0.0))),
                   float(torch.nextafter(t, torch.tensor(INF)))]  # fmt: skip
    y = torch.tensor(values + [-v for v in values], dtype=torch.float32)
    got = N._e2m1_magnitude_code(y).tolist()
    assert got == [_vllm_e2m1_index(abs(v)) for v in y.tolist()]
    assert N._e2m1_magnitude_code(torch.tensor([NAN])).tolist() == [7]


def test_e2m1_magnitude_of_every_bf16_and_fp16_value() -> None:
    """The rounding by adding and subtracting a power of two (``_e2m1_magnitude``) against the
    thresholds written out, for each of the 2 x 65,536 half-precision bit patterns as float32
    (NaN -> 6, inf -> 6)."""
    patterns = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    magnitudes = torch.tensor(N.E2M1_MAGNITUDES)
    for dtype in (torch.bfloat16, torch.float16):
        a = patterns.view(dtype).float().abs()
        want = [7 if math.isnan(v) else _vllm_e2m1_index(v) for v in a.tolist()]
        got = N._e2m1_magnitude(a)
        assert torch.equal(got, magnitudes[want]), dtype
        assert N._magnitude_code(got).tolist() == want


def test_read_back_is_the_decoded_bytes() -> None:
    """``nvfp4_read_back`` (the values, no bytes) equals ``dequantize_nvfp4`` of
    ``quantize_nvfp4``'s bytes bit for bit: stress values of each kind, both dtypes and
    variants, global scales from tiny (output scales that flush or overflow) to large, and a
    head of special values (NaN of both signs, infinities, signed zeros, subnormals)."""
    specials = torch.tensor(
        [NAN, -NAN, INF, -INF, 0.0, -0.0, 1e-40, -1e-40, 3e38, -3e38, 0.25, -0.25, 5.0, -5.0,
         6.0, -7.0] * 4,
        dtype=torch.float32,
    )  # fmt: skip
    g = torch.Generator().manual_seed(7)
    checked = 0
    for dtype in (torch.bfloat16, torch.float16):
        for kind in N.NVFP4_STRESS_KINDS:
            x = N.make_nvfp4_stress_values((40, 2, 64), kind=kind, dtype=dtype, generator=g)
            x = torch.cat([x, specials.to(dtype).reshape(1, 1, 64).expand(1, 2, 64)])
            for variant in N.NVFP4_KV_CACHE_DTYPES:
                for k in (1e-30, 0.003, 1.0, 250.0):
                    q = quantize_nvfp4(x, k, variant, track_ambiguity=False)
                    want = dequantize_nvfp4(q.data, q.scales, k)
                    got = N.nvfp4_read_back(x, k, variant)
                    assert got.shape == x.shape
                    case = (dtype, kind, variant, k)
                    assert torch.equal(got.view(torch.int32), want.view(torch.int32)), case
                    checked += 1
    assert checked == 2 * len(N.NVFP4_STRESS_KINDS) * 2 * 4


def test_nibble_order_even_element_low() -> None:
    """cvt.rn.satfinite.e2m1x2.f32 d, a, b puts b in the low nibble; vLLM passes (odd, even)."""
    assert write(group(6)) == (padded(0x07), 0x38, False)
    assert write(group(0, 6)) == (padded(0x70), 0x38, False)


# ---- the e4m3 block scale ------------------------------------------------------------------


def test_block_scale_ties_round_to_even() -> None:
    """6.375 * RCP6 = 1.0625000104 -> fp32 1.0625, the midpoint of e4m3 1.0 (0x38, even) and
    1.125 (0x39): RN-even gives 0x38. 7.125 * RCP6 -> 1.1875, midpoint of 1.125 (0x39) and 1.25
    (0x3A, even): 0x3A. 6.4375 * RCP6 = 1.0729 -> 0x39, no tie. The one nonzero element lands
    at code 7 (x * os > 5) in each."""
    assert write(group(6.375)) == (padded(0x07), 0x38, False)
    assert write(group(7.125)) == (padded(0x07), 0x3A, False)
    assert write(group(6.4375)) == (padded(0x07), 0x39, False)


def test_subnormal_block_scales() -> None:
    """e4m3 subnormals are k * 2^-9. 0.03515625 * RCP6 -> fp32 3 * 2^-9 exactly (0x03).
    0.029296875 * RCP6 -> 2.5 * 2^-9, the midpoint of 0x02 (even) and 0x03: 0x02, so os = 256
    and x * os = 7.5 clips to 6 (code 7). 0.005859375 * RCP6 -> 2^-10, the midpoint of 0 and
    2^-9: ties to 0, the block is stored with scale 0 and codes 0."""
    assert write(group(0.03515625)) == (padded(0x07), 0x03, False)
    assert write(group(0.029296875)) == (padded(0x07), 0x02, False)
    assert write(group(0.005859375)) == (padded(0x00), 0x00, False)


def test_block_scale_saturates_at_448() -> None:
    """4096 * RCP6 = 682.7 > 448: satfinite stores 0x7E (448); os = rcp(448), 4096 * os = 9.1
    clips to code 7, 1 * os = 0.0022 -> 0."""
    assert write(group(4096, 1)) == (padded(0x07), 0x7E, False)


def test_zero_scale_block_keeps_the_sign_of_zero() -> None:
    """|x| <= 0.001 gives m * RCP6 < 2^-10: sf = 0, so os = 0 and x * 0 is +0 or -0: codes 0x0
    and 0x8 (the sign of a zero survives the e2m1 conversion)."""
    assert write(group(0.0009994506835937, -0.0009994506835937)) == (padded(0x80), 0x00, False)
    assert write(group(0.0, -0.0)) == (padded(0x80), 0x00, False)


# ---- NaN and inf ---------------------------------------------------------------------------


def test_nan_elements_are_skipped_by_the_max_and_stored_as_plus_six() -> None:
    """__hmax2 returns the non-NaN operand, so m = 6, sf = 0x38; NaN * os = NaN, which e2m1
    (no NaN encoding) stores as +6, code 0x7 (PTX .satfinite for NaN-less formats)."""
    assert write(group(NAN, 6)) == (padded(0x77), 0x38, False)


def test_all_nan_block() -> None:
    """m = NaN: the block scale is e4m3 NaN, 0x7F; NaN != 0 so os = rcp(NaN) = NaN: every
    code is 0x7."""
    x = torch.full((16,), NAN, dtype=torch.bfloat16)
    assert write(x) == ([0x77] * 8, 0x7F, False)


def test_inf_saturates() -> None:
    """m = inf -> sf = 448 (0x7E); inf * os = inf -> +6 (0x7), -inf -> -6 (0xF); 3 * os -> 0."""
    assert write(group(INF, 3, -INF)) == (padded(0x07, 0x0F), 0x7E, False)


# ---- 4over6 --------------------------------------------------------------------------------


def test_4over6_picks_4_when_its_error_is_smaller() -> None:
    """[4, 3, 2, 1]: with d = 4, sf4 = e4m3(4 * 0.25) = 1.0, every value is on the grid, error 0.
    With d = 6, sf6 = e4m3(4 * RCP6 = 0.6667) = 0.6875 (0x33) and 4 * rcp(0.6875) = 5.8 -> 6,
    error > 0. 4over6 stores 0x38 and codes 6, 5, 4, 2; nvfp4 stores 0x33 and 7, 6, 5, 3."""
    x = group(4, 3, 2, 1)
    assert write(x, dtype="nvfp4_4over6") == (padded(0x56, 0x24), 0x38, False)
    assert write(x, dtype="nvfp4") == (padded(0x67, 0x35), 0x33, False)


def test_4over6_keeps_6_when_its_error_is_smaller() -> None:
    """[6, 1]: d = 6 is exact (error 0); d = 4 gives sf4 = 1.5, 1 * rcp(1.5) = 0.667 -> 0.5,
    dequantized 0.75: error 0.0625. Keeps 6."""
    assert write(group(6, 1), dtype="nvfp4_4over6") == (padded(0x27), 0x38, False)


def test_4over6_tie_keeps_6() -> None:
    """[6, 3]: both errors are 0 (d = 4: os = rcp(1.5), 6 * os -> 4, 3 * os -> 2, dq = rcp(os)
    = 1.5, fma(4, 1.5, -6) = fma(2, 1.5, -3) = 0). use4 = err4 < err6 is false: 6 is kept. A
    reciprocal one ulp off only makes err4 > 0, so the block is exact."""
    assert write(group(6, 3), dtype="nvfp4_4over6") == (padded(0x57), 0x38, False)


def test_4over6_nan_error_keeps_6() -> None:
    """A NaN element makes both errors NaN; NaN < NaN is false: 6 (0x33 for m = 4)."""
    x = group(NAN, 4, 3, 2, 1)
    assert write(x, dtype="nvfp4_4over6") == (padded(0x77, 0x56, 0x03), 0x33, False)


# Blocks (k_scale 1.0) whose float64 error estimates order the two sides one way and the
# compiled float32 errors the other (found by search over small-integer bf16 blocks): the
# float64 screen must hand them to the exact emulation.
NEAR_TIES = [
    [0.5, 5, -1.25, 0.25, 2.25, 1.375, -2.625, 2.875, -3.625, -0.5, -0.5, -0.625, -4.625, 0.375,
     2.625, 1.25],
    [60, 60, 100, 148, 108, -124, -124, -84, -20, 96, 156, 148, 92, 76, -24, 48],
    [-22, 30, 40, 2, -35, 22, -11, -3, -16, -8, 21, 35, -13, 11, -38, -21],
    [17, 15, -12, 3, 18, -8, 22, -27, -12, -1, -6, -7, 10, -29, -7, 19],
    [-8.5, 10, 12, 3.5, 18.5, -18, -19, -2.5, 20, -13, -15, -15, 15, 6.5, -7, -6],
]  # fmt: skip


def _sides(x: torch.Tensor) -> tuple[tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    """(os, dq, rounded) of the 6 and the 4 side of float32 blocks ``x`` at k_scale 1.0."""
    m, one = x.abs().amax(dim=1), torch.tensor(1.0)
    six, four = (N._side(x, m, d, one, one).error_terms() for d in (N.RCP_SIX, N.RCP_FOUR))
    return six, four


def test_4over6_near_ties_are_decided_by_the_exact_error() -> None:
    x = torch.tensor(NEAR_TIES, dtype=torch.bfloat16).float()
    side6, side4 = _sides(x)
    exact = N._reconstruction_error(x, *side4) < N._reconstruction_error(x, *side6)
    minus_x = -x.double()
    estimate = N._error_estimate(minus_x, *side4[1:]) < N._error_estimate(minus_x, *side6[1:])
    assert (exact != estimate).all()  # the float64 estimate alone would choose wrong
    assert torch.equal(N._four_is_smaller(x, side6, side4), exact)


def test_4over6_screen_writes_the_bytes_of_the_exact_emulation() -> None:
    """Untracked writes (verify --data, plan) screen the 6-or-4 choice in float64; tracked
    writes compare the emulated float32 errors of every block. Same bytes, over blocks of every
    scale, exact ties (constant, all-zero, on-grid), near-ties, specials and overflowing
    errors."""
    g = torch.Generator().manual_seed(11)
    n = 1024
    wide = torch.randn(n, 16, generator=g) * torch.exp2(torch.randint(-30, 30, (n, 1), generator=g))
    ints = torch.randint(-40, 41, (n, 16), generator=g).float()
    blocks = torch.cat([wide, ints, torch.tensor(NEAR_TIES)])
    blocks[0] = 0.0
    blocks[1] = 3.0
    blocks[2, 3] = NAN
    blocks[3, 5] = INF
    blocks[4] = torch.tensor([6.0, 3.0] * 8)
    blocks[5] = 1e-38
    blocks[6:70] *= 1e30  # squares past float32's range: both errors inf, 6 is kept
    x = blocks.to(torch.bfloat16)
    for k in (1.0, 0.0173, 3.0e-6, 2.5e4, 1e28):
        fast = quantize_nvfp4(x, torch.tensor([k]), "nvfp4_4over6", track_ambiguity=False)
        exact = quantize_nvfp4(x, torch.tensor([k]), "nvfp4_4over6", track_ambiguity=True)
        assert torch.equal(fast.data, exact.data), k
        assert torch.equal(fast.scales, exact.scales), k


def test_fused_multiply_add_rounds_once() -> None:
    """The reconstruction error uses FFMA. (1 + 2^-12)^2 + 2^-80 = 1 + 2^-11 + 2^-24 + 2^-80 is
    just above a float32 midpoint: one rounding gives 1 + 2^-11 + 2^-23; rounding in float64
    first would land on the midpoint and tie down to 1 + 2^-11."""
    a = torch.tensor([1 + 2.0**-12], dtype=torch.float32)
    c = torch.tensor([2.0**-80], dtype=torch.float32)
    assert N._fma(a, a, c).item() == 1 + 2.0**-11 + 2.0**-23
    assert N._fma(a, a, -c).item() == 1 + 2.0**-11
    assert N._fma(a, a, torch.tensor([-1.0])).item() == 2.0**-11 + 2.0**-24


# ---- the approximate reciprocal ------------------------------------------------------------


def test_block_that_depends_on_the_hardware_reciprocal_is_ambiguous() -> None:
    """[7.5, 4.375]: sf = e4m3(7.5 * RCP6 -> 1.25) = 0x3A, os = rcp(1.25) ~ 0.8. With the IEEE
    0x3F4CCCCD, 4.375 * os = 3.50000005 -> fp32 3.5, a tie -> 4 (code 6); one ulp lower,
    3.4999998 -> 3 (code 5). The model's bytes are returned and the block is marked."""
    assert write(group(7.5, 4.375)) == (padded(0x67), 0x3A, True)
    q = quantize_nvfp4(group(7.5, 4.375)[None], 1.0, track_ambiguity=False)
    assert not bool(q.ambiguous.any())


def test_rcp_six_is_the_constant_vllm_compiled() -> None:
    assert N.RCP_SIX == 0.16666667163372039795
    assert torch.tensor(N.RCP_SIX, dtype=torch.float32).view(torch.int32).item() == 0x3E2AAAAB


def test_global_scale_is_an_ieee_division() -> None:
    """g = 1.0f / k_scale is correctly rounded (rcp.rn in the SASS). k = 3: g = RN(1/3);
    m = 6: sf = e4m3((6 * RCP6 -> 1.0) * g = 0.33333334) -> 0.34375 (0x2B)."""
    assert write(group(6), k=3.0)[1] == 0x2B


# ---- layout --------------------------------------------------------------------------------


def test_v_scale_swizzle_known_positions() -> None:
    """swizzle_scale_offset with S = 8 (head size 128), S / 4 = 2 groups per swizzled row."""
    assert v_scale_position(0, 0, 8) == (0, 0)
    assert v_scale_position(0, 1, 8) == (0, 4)
    assert v_scale_position(0, 2, 8) == (1, 0)
    assert v_scale_position(1, 0, 8) == (0, 1)
    assert v_scale_position(3, 3, 8) == (1, 7)
    assert v_scale_position(5, 7, 8) == (7, 5)


@pytest.mark.parametrize("scale_dim", [4, 8, 12, 16])
def test_v_scale_swizzle_is_a_permutation_of_each_four_slots(scale_dim: int) -> None:
    for base in (0, 4, 8):
        seen = {
            v_scale_position(t, s, scale_dim)
            for t in range(base, base + 4)
            for s in range(scale_dim)
        }
        assert seen == {(t, s) for t in range(base, base + 4) for s in range(scale_dim)}


def test_page_offsets() -> None:
    """H = 2, hs = 64, block 4: data 32 B and 4 scales per head-slot, side = 2*4*36 = 288 B.
    K data (h1, t2) at (1*4+2)*32 = 192; K scale (h1, t2, s3) at 256 + 6*4 + 3 = 283; V data
    (h0, t0) at 288; V scale (h1, t2, s3): S/4 = 1, slot' = 0 + 3, s' = 0 + 2 -> 288 + 256 +
    (4 + 3) * 4 + 2 = 574."""
    lay = NVFP4PageLayout.create(2, 64, 4)
    one, two, three, zero = (torch.tensor(v) for v in (1, 2, 3, 0))
    assert lay.page_bytes == 576
    assert int(lay.data_offsets(0, one, two)) == 192
    assert int(lay.scale_offsets(0, one, two, three)) == 283
    assert int(lay.data_offsets(1, zero, zero)) == 288
    assert int(lay.scale_offsets(1, one, two, three)) == 574


def test_write_touches_exactly_the_bytes_of_its_slot() -> None:
    """One token (H = 2, hs = 64) written to slot 6 = block 1, offset 2 of a poisoned cache:
    only that page's K/V data rows and their 8 scale bytes change, at the computed offsets."""
    lay = NVFP4PageLayout.create(2, 64, 4)
    g = torch.Generator().manual_seed(0)
    cache = torch.randint(0, 256, nvfp4_kv_cache_shape(3, 2, 4, 64), generator=g, dtype=torch.uint8)
    before = cache.clone()
    key = group(6, 3, 1).repeat(1, 2, 4)  # [1, 2, 64]: every group [6, 3, 1, 0...]
    value = group(4, 3, 2, 1).repeat(1, 2, 4)
    reference_reshape_and_cache_nvfp4(
        key, value, cache, torch.tensor([6]), "nvfp4", torch.tensor([1.0]), torch.tensor([1.0])
    )
    flat, old = cache.view(3, -1), before.view(3, -1)
    changed = torch.nonzero(flat != old)
    assert set(changed[:, 0].tolist()) == {1}
    expected: dict[int, int] = {}
    t = torch.tensor(2)
    for h in range(2):
        hh = torch.tensor(h)
        for s in range(4):
            k_data = int(lay.data_offsets(0, hh, t)) + 8 * s
            v_data = int(lay.data_offsets(1, hh, t)) + 8 * s
            for j, b in enumerate(padded(0x57, 0x02)):  # [6, 3, 1] -> codes 7, 5, 2
                expected[k_data + j] = b
            for j, b in enumerate(padded(0x67, 0x35)):  # [4, 3, 2, 1] with sf 0x33
                expected[v_data + j] = b
            expected[int(lay.scale_offsets(0, hh, t, torch.tensor(s)))] = 0x38
            expected[int(lay.scale_offsets(1, hh, t, torch.tensor(s)))] = 0x33
    for offset, b in expected.items():
        assert int(flat[1, offset]) == b
    assert set(changed[:, 1].tolist()) <= set(expected)


def test_round_trip_through_the_cache_with_padding() -> None:
    """Values on the e2m1 grid times 2^e with k = 1 are stored exactly by nvfp4_4over6 (d = 4
    or 6 both fit), so reading the cache back gives them exactly; padding slots stay untouched."""
    g = torch.Generator().manual_seed(1)
    grid = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6, -1, -6])
    n, h, hs, bs, blocks = 7, 2, 64, 8, 3
    idx = torch.randint(0, grid.numel(), (2, n, h, hs), generator=g)
    expo = torch.randint(-3, 3, (2, n, h, hs // 16, 1), generator=g).float()
    vals = (grid[idx].view(2, n, h, hs // 16, 16) * 2.0**expo).view(2, n, h, hs)
    vals[..., ::16] = 6 * 2.0 ** expo[..., 0]  # every group's max is 6 * 2^e: sf = 2^e exactly
    key, value = vals.to(torch.bfloat16)
    cache = torch.zeros(nvfp4_kv_cache_shape(blocks, h, bs, hs), dtype=torch.uint8)
    slots = torch.tensor([5, -1, 0, 23, 9, -1, 16])
    ks, vs = torch.tensor([1.0]), torch.tensor([1.0])
    report = reference_reshape_and_cache_nvfp4(key, value, cache, slots, "nvfp4_4over6", ks, vs)
    assert report.ambiguous_blocks == 0 and report.blocks == 2 * 5 * h * hs // 16
    k_back, v_back = read_nvfp4_cache(cache, slots, h, ks, vs)
    live = slots >= 0
    assert torch.equal(k_back[live], key[live].float())
    assert torch.equal(v_back[live], value[live].float())
    assert torch.isnan(k_back[~live]).all()


def test_dequantize() -> None:
    """0x57: codes 7 (6) and 5 (3); 0xF9: 9 (-0.5) and 15 (-6). sf 0x38 = 1, k = 2."""
    data = torch.tensor([0x57, 0xF9] + [0] * 6, dtype=torch.uint8)
    out = dequantize_nvfp4(data, torch.tensor([0x38], dtype=torch.uint8), 2.0)
    assert out[:4].tolist() == [12.0, 6.0, -1.0, -12.0]
    assert out[4:].abs().sum().item() == 0


def test_bytes_per_token() -> None:
    """Per head and side hs/2 + hs/16: 72 bytes at hs = 128; K and V of 8 heads: 1152 (FP8:
    2048)."""
    assert nvfp4_full_dim(128) == 72
    assert nvfp4_full_dim(64) == 36
    assert nvfp4_bytes_per_token(8, 128) == 1152
    assert nvfp4_kv_cache_shape(10, 8, 16, 128) == (10, 16, 16, 72)


# ---- argument checks -----------------------------------------------------------------------


def _args(h: int = 2, hs: int = 64, bs: int = 4, dtype: torch.dtype = torch.bfloat16):
    key = torch.zeros(3, h, hs, dtype=dtype)
    cache = torch.zeros(2, 2 * h, bs, hs // 2 + hs // 16, dtype=torch.uint8)
    return key, key.clone(), cache, torch.tensor([0, 1, 2]), torch.ones(1), torch.ones(1)


def test_head_size_not_a_multiple_of_16() -> None:
    with pytest.raises(NVFP4HeadSizeError, match="not a multiple of 16") as info:
        quantize_nvfp4(torch.zeros(2, 40, dtype=torch.bfloat16), 1.0)
    assert isinstance(info.value, UsageError)
    with pytest.raises(NVFP4HeadSizeError, match="not a multiple of 16"):
        nvfp4_bytes_per_token(8, 72)


def test_head_size_whose_v_scales_cannot_be_swizzled() -> None:
    with pytest.raises(NVFP4HeadSizeError, match="multiples of 64"):
        NVFP4PageLayout.create(8, 80, 16)
    with pytest.raises(NVFP4HeadSizeError, match="multiples of 64"):
        key, value, cache, slots, ks, vs = _args(hs=96)
        reference_reshape_and_cache_nvfp4(key, value, cache, slots, "nvfp4", ks, vs)


def test_block_size_not_a_multiple_of_4() -> None:
    with pytest.raises(NVFP4BlockSizeError, match="multiple of 4") as info:
        nvfp4_kv_cache_shape(4, 8, 6, 128)
    assert isinstance(info.value, UsageError)


def test_token_major_pages_are_refused() -> None:
    key, value, cache, slots, ks, vs = _args()
    nhd = torch.zeros(2, 4, 4, 36, dtype=torch.uint8).transpose(1, 2).contiguous().transpose(1, 2)
    with pytest.raises(NVFP4LayoutError, match="NHD"):
        reference_reshape_and_cache_nvfp4(key, value, nhd, slots, "nvfp4", ks, vs)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"dtype": "fp8"}, "not an NVFP4 dtype"),
        ({"key": torch.zeros(3, 2, 64)}, "bfloat16 or float16"),
        ({"ks": torch.ones(2)}, "1 element"),
        ({"slots": torch.tensor([0, 0])}, "repeats a slot"),
        ({"slots": torch.tensor([8])}, "past the cache"),
        ({"cache": torch.zeros(2, 4, 4, 40, dtype=torch.uint8)}, "does not hold"),
    ],
)
def test_bad_arguments(change: dict[str, object], match: str) -> None:
    key, value, cache, slots, ks, vs = _args()
    args: dict[str, object] = {"key": key, "value": value, "cache": cache, "slots": slots,
                               "dtype": "nvfp4", "ks": ks, "vs": vs}  # fmt: skip
    args.update(change)
    if "key" in change:
        args["value"] = args["key"]
    with pytest.raises(NVFP4ArgumentError, match=match):
        reference_reshape_and_cache_nvfp4(
            args["key"], args["value"], args["cache"], args["slots"], args["dtype"],  # type: ignore[arg-type]
            args["ks"], args["vs"],  # type: ignore[arg-type]
        )  # fmt: skip


# ---- statistics ----------------------------------------------------------------------------


def test_stats_count_each_kind_of_block() -> None:
    """Five groups: exact [6, 3]; zero-scale [0.001, -0.001]; saturated scale [4096, 1] (also
    clipped: 9.1 >= 7); subnormal scale that clips [0.029296875] (7.5); NaN [NaN, 6]. The
    round-trip error counts finite elements: only 4096 -> 6 * 448 = 2688, 1 -> 0, the two
    0.001 -> 0 and 0.029296875 -> 6 * 2^-8 = 0.0234375 are off."""
    tiny = 0.0009994506835937
    x = torch.stack([group(6, 3), group(tiny, -tiny), group(4096, 1), group(0.029296875),
                     group(NAN, 6)])  # fmt: skip
    s = nvfp4_write_stats(x, 1.0)
    assert (s.blocks, s.zero_scale_blocks, s.scale_saturated_blocks, s.clipped_blocks) == (
        5,
        1,
        1,
        2,
    )
    assert (s.saturated_blocks, s.nonfinite_blocks, s.ambiguous_blocks) == (2, 1, 0)
    assert s.zero_scale_fraction == 0.2 and s.saturated_fraction == 0.4
    num = (4096 - 2688) ** 2 + 1 + 2 * tiny**2 + (0.029296875 - 0.0234375) ** 2
    den = 36 + 9 + 2 * tiny**2 + 4096**2 + 1 + 0.029296875**2 + 36
    assert s.relative_rms_error == pytest.approx(math.sqrt(num / den), rel=1e-12)


def test_layer_stats_exact_tie_error() -> None:
    """[6, 5]: 5 is a tie between 4 and 6 and goes to 4: relative RMS error sqrt(1 / 61)."""
    x = group(6, 5)[None]
    stats = nvfp4_layer_stats(x, x, 1.0, 1.0)
    assert stats.key.relative_rms_error == math.sqrt(1 / 61)
    assert stats.value == stats.key
