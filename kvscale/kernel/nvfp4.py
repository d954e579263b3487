"""CPU reference for vLLM 0.33.0's NVFP4 KV-cache write (``nvfp4``, ``nvfp4_4over6``).

What it mirrors: ``csrc/nvfp4_kv_cache_kernels.cu`` (``reshape_and_cache_nvfp4_kernel`` and
``reshape_and_cache_nvfp4_dispatch``, source @5d11149b) with ``cvt_warp_fp16_to_fp4`` from
``csrc/libtorch_stable/quantization/fp4/nvfp4_utils.cuh``, checked instruction by instruction
against the SASS that the 0.33.0 wheel ships (``vllm/_C_stable_libtorch.abi3.so``, cubin for
sm_100, disassembled with ``nvdisasm``), and the Python side in ``vllm/v1/attention/backends/
flashinfer.py`` (``do_kv_cache_update``, ``_nvfp4_kv_views``, ``customize_spec``) and
``vllm/utils/torch_utils.py`` (``nvfp4_kv_cache_full_dim``, ``nvfp4_split_data_scale``).

Per token, per KV head, per group of 16 elements, separately for K (``k_scale``) and V
(``v_scale``), in float32 arithmetic:

1. ``g = 1.0f / k_scale``: an IEEE division (``MUFU.RCP`` plus Newton fix-up and the
   ``__cuda_sm20_rcp_rn_f32_slowpath`` call in the SASS: vLLM builds without fast math).
2. ``m = max |x_i|`` over the 16 bf16/fp16 values (``__habs2``/``__hmax2``; a NaN element is
   skipped, a group of NaNs gives NaN).
3. ``sf = e4m3_rn_satfinite((m * RCP6) * g)``. ``RCP6`` is the source's
   ``rcp.approx.ftz.f32(6.0f)``, which ptxas folded into the constant ``0x3E2AAAAB`` (the
   ``FMUL R, R, 0.16666667163372039795`` in the SASS): no hardware reciprocal is involved.
4. ``os = sf != 0 ? rcp(float(sf) * rcp(g)) : 0`` with ``rcp = rcp.approx.ftz.f32``
   (``MUFU.RCP``); a NaN ``sf`` counts as nonzero.
5. ``code_i = cvt.rn.satfinite.e2m1x2.f32(x_i * os)``: nearest of {0, 0.5, 1, 1.5, 2, 3, 4, 6},
   ties to even, clipped at 6. Element ``2k`` is the low nibble of byte ``k`` (``cvt d, a, b``
   puts ``b`` in the low nibble; vLLM passes the odd element as ``a``).

``nvfp4_4over6`` computes steps 3-4 for the divisors 6 and 4 (``rcp.approx(4.0f)`` folded to 0.25)
and keeps 4 only when its reconstruction error is strictly smaller, ties and NaN keeping 6
(``cvt_warp_fp16_to_fp4_4over6``). The error is the compiled sequence, reproduced here exactly:
``dq = os != 0 ? rcp(os) : 0``; per element ``d = fma(R(x*os), dq, -x)`` (``d = x`` when
``os == 0``), where ``R`` rounds to the nearest e2m1 value by vLLM's ``round_to_nearest_e2m1``
thresholds and keeps the sign; per pair ``p_k = fma(d_2k, d_2k, d_2k+1 * d_2k+1)``; and
``err = ((0 + p_0) + p_1) + ... + p_7`` in order.

The approximate reciprocal. ``rcp.approx.ftz.f32`` (``MUFU.RCP``) is not correctly rounded and
its exact results on the engine's GPU (sm_100) cannot be known here. The model: flush a subnormal
input to a signed zero, take the IEEE reciprocal, flush a subnormal result to a signed zero;
exact for zero, infinity, NaN and powers of two (``benchmarks/gpu_nvfp4_check.py`` prints, on the
GPU it runs on, how many of all 2^23 mantissas rcp.approx rounds differently from IEEE, the largest
ulp distance, and whether powers of two are exact). Every write also marks each block that the
model cannot decide: a block is *ambiguous* when its stored bytes change for some choice of every
approximate reciprocal among {model, one ulp below, one ulp above} (the hardware's documented
error bound is 1 ulp); the choice of 6 or 4 counts too. All other blocks are *exact*: any
reciprocal within one ulp gives their bytes. The block scale byte of ``nvfp4`` never depends on a
reciprocal; the e2m1 codes and the 4over6 choice can.

The e2m1 conversion of special values follows the PTX ISA's ``.satfinite`` rule for formats
without NaN: NaN becomes +6 (code 0x7), +-inf becomes +-6, a negative value that rounds to zero
keeps its sign (0x8). The e4m3 block scale writes 0x7F for NaN (measured on an H200 for the FP8
write, ``benchmarks/KERNEL_NOTES.md``). No SM100 GPU was available to measure the e2m1 cases; the
sign of zero follows the e4m3 conversion (-0.0 -> 0x80, measured), whereas vLLM's own Triton
emulation of this conversion for another op (``models/muse_spark/nvidia/ops/
prepare_trtllm_nvfp4.py``) takes the sign from ``scaled < 0`` and would store -0.0 as 0x0.

Page layout (vLLM allocates ``(num_blocks, 2 * num_kv_heads, block_size, full_dim)`` uint8 with
``full_dim = head_size / 2 + head_size / 16``, ``FlashInferBackend.customize_spec``; on SM100,
the only place this kernel runs, the pages are head-major, ``supported_kv_cache_layouts``). Each
page is ``[K data | K scales | V data | V scales]``:

- data, per side: ``[head][slot][head_size / 2]``, group ``s`` at byte ``8 * s``;
- K scales: ``[head][slot][head_size / 16]``, linear;
- V scales: ``[head][slot'][s']`` swizzled for trtllm-gen:
  ``slot' = (slot // 4) * 4 + s // (S / 4)``, ``s' = (s % (S / 4)) * 4 + slot % 4``,
  ``S = head_size / 16``.

Arguments that vLLM's kernel would write undefined bytes for are refused with typed errors:
head sizes that are not a multiple of 16 (vLLM refuses them) or of 64 (then the V-scale swizzle
is not a permutation of the page's scale bytes), block sizes that are not a multiple of 4 (vLLM
refuses them), token-major (NHD) pages (the kernel's K and V regions would overlap), repeated
slots (the GPU's writes would race).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass, replace

import torch

from kvscale.kernel.reference import CacheWriteArgumentError

__all__ = [
    "E2M1_MAGNITUDES",
    "NVFP4_KV_CACHE_DTYPES",
    "RCP_SIX",
    "NVFP4ArgumentError",
    "NVFP4BlockSizeError",
    "NVFP4HeadSizeError",
    "NVFP4LayerStats",
    "NVFP4LayoutError",
    "NVFP4PageLayout",
    "NVFP4Quantized",
    "NVFP4WriteReport",
    "NVFP4WriteStats",
    "NVFP4_STRESS_KINDS",
    "dequantize_nvfp4",
    "make_nvfp4_stress_values",
    "nvfp4_bytes_per_token",
    "nvfp4_full_dim",
    "nvfp4_kv_cache_shape",
    "nvfp4_layer_stats",
    "nvfp4_read_back",
    "nvfp4_write_round_trip",
    "nvfp4_write_stats",
    "quantize_nvfp4",
    "read_nvfp4_cache",
    "reference_reshape_and_cache_nvfp4",
    "v_scale_position",
    "validate_nvfp4_write_args",
]

NVFP4_KV_CACHE_DTYPES = ("nvfp4", "nvfp4_4over6")
"""The ``--kv-cache-dtype`` values this writer handles (vLLM ``CacheDType``)."""

SF_VEC_SIZE = 16
"""Elements per block scale (``CVT_FP4_SF_VEC_SIZE``)."""

E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
"""e2m1 magnitude by code (bits 2..0); bit 3 is the sign."""

E2M1_CLIP_BOUND = 7.0
"""|x * os| from which the e2m1 store clips: 6 plus half the step to the next binade's 8 (7 ties
to 8, the even mantissa); below it rounding reaches 6 as it would in a wider format."""

E4M3_MAX = 448.0
E4M3_MAX_BYTE = 0x7E
E4M3_NAN_BYTE = 0x7F

RCP_SIX_BITS = 0x3E2AAAAB
RCP_SIX: float = struct.unpack("<f", struct.pack("<I", RCP_SIX_BITS))[0]
"""rcp.approx.ftz.f32(6.0f) as compiled into vLLM 0.33.0's sm_100 kernel (a folded constant)."""

RCP_FOUR = 0.25
"""rcp.approx.ftz.f32(4.0f), folded to 0.25 in the 4over6 kernel."""

_F32_MIN_NORMAL = 2.0**-126
_HALF_DTYPES = (torch.bfloat16, torch.float16)


class NVFP4ArgumentError(CacheWriteArgumentError):
    """Arguments the NVFP4 cache write does not accept."""


class NVFP4HeadSizeError(NVFP4ArgumentError):
    """A head size the NVFP4 cache cannot hold (not a multiple of 16, or of 64 for V scales)."""


class NVFP4BlockSizeError(NVFP4ArgumentError):
    """A block size that is not a multiple of 4 (the V-scale swizzle works on 4 slots)."""


class NVFP4LayoutError(NVFP4ArgumentError):
    """A cache tensor whose pages are not vLLM's head-major NVFP4 pages."""


def _check_head_size(head_size: int) -> None:
    if head_size <= 0 or head_size % SF_VEC_SIZE:
        raise NVFP4HeadSizeError(
            f"head_size {head_size} is not a multiple of 16: NVFP4 stores one e4m3 block scale "
            "per 16 elements (vLLM's reshape_and_cache_nvfp4_dispatch refuses it too)"
        )


def _check_swizzle(head_size: int) -> None:
    if head_size % (4 * SF_VEC_SIZE):
        raise NVFP4HeadSizeError(
            f"head_size {head_size} gives {head_size // SF_VEC_SIZE} block scales per token, "
            "not a multiple of 4: vLLM 0.33.0's V-scale swizzle (swizzle_scale_offset) then "
            "sends two scales to one byte or divides by zero, so the bytes it writes are not "
            "defined and kvscale does not predict them (head sizes that are multiples of 64 work)"
        )


def _check_block_size(block_size: int) -> None:
    if block_size <= 0 or block_size % 4:
        raise NVFP4BlockSizeError(
            f"block_size {block_size} is not a multiple of 4: the V-scale swizzle of the NVFP4 "
            "cache works on groups of 4 slots (vLLM's reshape_and_cache_nvfp4_dispatch refuses "
            "it too)"
        )


def nvfp4_full_dim(head_size: int) -> int:
    """Bytes per token and head on one side (K or V): ``head_size / 2`` e2m1 bytes plus
    ``head_size / 16`` e4m3 scales (vLLM ``nvfp4_kv_cache_full_dim``)."""
    _check_head_size(head_size)
    return head_size // 2 + head_size // SF_VEC_SIZE


def nvfp4_bytes_per_token(num_kv_heads: int, head_size: int) -> int:
    """Cache bytes one token occupies in one layer: K and V, ``hs/2 + hs/16`` per head each."""
    if num_kv_heads <= 0:
        raise NVFP4ArgumentError(f"num_kv_heads must be positive, got {num_kv_heads}")
    return 2 * num_kv_heads * nvfp4_full_dim(head_size)


def nvfp4_kv_cache_shape(
    num_blocks: int, num_kv_heads: int, block_size: int, head_size: int
) -> tuple[int, int, int, int]:
    """Shape of one layer's cache as vLLM allocates it: ``(num_blocks, 2 * num_kv_heads,
    block_size, full_dim)`` uint8, K head slots first (``FlashInferBackend.customize_spec``)."""
    layout = NVFP4PageLayout.create(num_kv_heads, head_size, block_size)
    return (num_blocks, 2 * num_kv_heads, block_size, layout.full_dim)


def v_scale_position(slot: int, group: int, scale_dim: int) -> tuple[int, int]:
    """Where the V scale of (slot in block, group) is stored: ``(slot', group')`` within its head
    (vLLM ``swizzle_scale_offset``); ``scale_dim = head_size / 16``, a multiple of 4."""
    per_row = scale_dim // 4
    return (slot // 4) * 4 + group // per_row, (group % per_row) * 4 + slot % 4


@dataclass(frozen=True)
class NVFP4PageLayout:
    """Byte offsets inside one page of a head-major NVFP4 cache (``[K data | K scales | V data |
    V scales]``). Build with :meth:`create`, which validates the sizes."""

    num_kv_heads: int
    head_size: int
    block_size: int

    @classmethod
    def create(cls, num_kv_heads: int, head_size: int, block_size: int) -> NVFP4PageLayout:
        if num_kv_heads <= 0:
            raise NVFP4ArgumentError(f"num_kv_heads must be positive, got {num_kv_heads}")
        _check_head_size(head_size)
        _check_swizzle(head_size)
        _check_block_size(block_size)
        return cls(num_kv_heads, head_size, block_size)

    @property
    def data_dim(self) -> int:
        return self.head_size // 2

    @property
    def scale_dim(self) -> int:
        return self.head_size // SF_VEC_SIZE

    @property
    def full_dim(self) -> int:
        return self.data_dim + self.scale_dim

    @property
    def side_bytes(self) -> int:
        """Bytes of one side (K or V) of a page: its data, then its scales."""
        return self.num_kv_heads * self.block_size * self.full_dim

    @property
    def page_bytes(self) -> int:
        return 2 * self.side_bytes

    def data_offsets(self, side: int, head: torch.Tensor, slot: torch.Tensor) -> torch.Tensor:
        """Offset in the page of the first data byte of (side, head, slot in block)."""
        return side * self.side_bytes + (head * self.block_size + slot) * self.data_dim

    def scale_offsets(
        self, side: int, head: torch.Tensor, slot: torch.Tensor, group: torch.Tensor
    ) -> torch.Tensor:
        """Offset in the page of the scale byte of (side, head, slot in block, group); V scales
        swizzled."""
        if side == 1:
            per_row = self.scale_dim // 4
            slot, group = (
                torch.div(slot, 4, rounding_mode="floor") * 4
                + torch.div(group, per_row, rounding_mode="floor"),
                (group % per_row) * 4 + slot % 4,
            )
        region = side * self.side_bytes + self.num_kv_heads * self.block_size * self.data_dim
        return region + (head * self.block_size + slot) * self.scale_dim + group

    def slot_offsets(
        self, side: int, slots: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """For live slots ``[L]`` (int64, >= 0): their page index ``[L]``, the offsets of their
        data bytes ``[L, heads, groups, 8]`` and of their scale bytes ``[L, heads, groups]``."""
        block = torch.div(slots, self.block_size, rounding_mode="floor")
        t = (slots - block * self.block_size)[:, None, None]
        heads = torch.arange(self.num_kv_heads)[None, :, None]
        groups = torch.arange(self.scale_dim)[None, None, :]
        data = (
            self.data_offsets(side, heads, t)[..., None]
            + groups[..., None] * (SF_VEC_SIZE // 2)
            + torch.arange(SF_VEC_SIZE // 2)
        )
        return block, data, self.scale_offsets(side, heads, t, groups)


# --------------------------------------------------------------------------------------------
# Arithmetic of the GPU, in float32 on the CPU


def _f32(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def _ftz(x: torch.Tensor) -> torch.Tensor:
    """Flush subnormals to a zero of the same sign (the .ftz of rcp.approx.ftz.f32)."""
    tiny = (x.abs() < _F32_MIN_NORMAL) & (x != 0)
    return torch.where(tiny, torch.copysign(torch.zeros_like(x), x), x)


def _rcp_candidates(x: torch.Tensor, track: bool) -> list[torch.Tensor]:
    """rcp.approx.ftz.f32(x): the model value first, then (with ``track``) the results one ulp
    below and above it, which the hardware may return instead. Zero, infinity, NaN and powers of
    two are exact (one candidate)."""
    r = torch.reciprocal(_ftz(x))
    model = _ftz(r)
    if not track:
        return [model]
    bits = x.view(torch.int32)
    power_of_two = ((bits & 0x7FFFFF) == 0) & (x.abs() >= _F32_MIN_NORMAL) & torch.isfinite(x)
    exact = power_of_two | (r == 0) | torch.isinf(r) | torch.isnan(r)
    inf = torch.full_like(r, math.inf)
    below = torch.where(exact, model, _ftz(torch.nextafter(r, -inf)))
    above = torch.where(exact, model, _ftz(torch.nextafter(r, inf)))
    return [model, below, above]


def _fma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """float32 fused multiply-add, rounded once (the GPU's FFMA), for broadcastable float32
    tensors: the product is exact in float64, the sum is formed exactly (TwoSum) and rounded to
    odd at 53 bits, which then rounds correctly to 24 bits."""
    prod = a.double() * b.double()
    c64 = c.double()
    s = prod + c64
    virtual = s - prod
    err = (prod - (s - virtual)) + (c64 - virtual)
    odd = (s.view(torch.int64) & 1) == 1
    toward = torch.where(err > 0, math.inf, -math.inf).to(torch.float64)
    nudge = (err != 0) & ~odd & torch.isfinite(s)
    return torch.where(nudge, torch.nextafter(s, toward), s).float()


def _e4m3_bits(v: torch.Tensor) -> torch.Tensor:
    """cvt.rn.satfinite.e4m3x2.f32 (``__nv_fp8_e4m3(float)``): RN-even, +-inf and overflow to
    +-448, one NaN byte 0x7F."""
    bits = v.clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
    return torch.where(torch.isnan(v), torch.tensor(E4M3_NAN_BYTE, dtype=torch.uint8), bits)


def _e4m3_value(bits: torch.Tensor) -> torch.Tensor:
    return bits.view(torch.float8_e4m3fn).to(torch.float32)


def _e2m1_magnitude(a: torch.Tensor) -> torch.Tensor:
    """The nearest e2m1 magnitude of ``a = |y|`` (float32, from ``abs``), ties to even, clipped
    at 6, NaN -> 6: vLLM's ``round_to_nearest_e2m1`` (``<= 0.25``, ``< 0.75``, ``<= 1.25``, ...),
    whose thresholds match cvt.rn.satfinite.e2m1x2.f32.

    The e2m1 step is 0.5 below 2, 1 in [2, 4) and 2 from 4. Adding 2^22, 2^23 or 2^24 (whose
    float32 ulp is that step) rounds ``a`` to the step by float32's own round-to-nearest-even,
    which is e2m1's tie rule (the even multiple of the step is the even code), and subtracting it
    back is exact. The constant is ``a``'s binade clamped to 0..2, plus 22 (a few integer
    operations on the bits). Then the clip at 6, and NaN to 6. Equal to counting the
    rounding boundaries below ``a`` for every non-negative float32 and NaN (all 2^31 bit
    patterns, checked once; the tests check every neighbour of each boundary), 6x faster on
    the CPU."""
    binade = (a.view(torch.int32) >> 23).clamp_(127, 129)
    step_constant = binade.add_(22).bitwise_left_shift_(23).view(torch.float32)
    # clamp_max and nan_to_num: 10x faster on the CPU than fmin, or than where with a scalar.
    return (a + step_constant).sub_(step_constant).clamp_max_(6.0).nan_to_num_(nan=6.0)


def _magnitude_code(magnitude: torch.Tensor) -> torch.Tensor:
    """The e2m1 magnitude code 0..7 of a magnitude from ``_e2m1_magnitude``: 0, 0.5, ..., 2 are
    codes 0-4 (twice the value), 3 and 4 are 5 and 6, 6 is 7."""
    code = torch.where(magnitude <= 2.0, magnitude * 2.0, magnitude + 2.0).clamp_max_(7.0)
    return code.to(torch.uint8)


def _e2m1_magnitude_code(y: torch.Tensor) -> torch.Tensor:
    """Magnitude code 0..7 of the nearest e2m1 value, ties to even (the thresholds of vLLM's
    ``round_to_nearest_e2m1``, which match cvt.rn.satfinite.e2m1x2.f32); NaN gives 7."""
    return _magnitude_code(_e2m1_magnitude(y.abs()))


def _with_sign(magnitude: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """cvt.rn.satfinite.e2m1x2.f32's 4-bit code from y's magnitude code: sign in bit 3 (NaN
    -> +6)."""
    negative = torch.signbit(y) & ~torch.isnan(y)
    return magnitude | (negative.to(torch.uint8) << 3)


def _e2m1_codes(y: torch.Tensor) -> torch.Tensor:
    """cvt.rn.satfinite.e2m1x2.f32 per element: 4-bit code, sign in bit 3 (NaN -> +6)."""
    return _with_sign(_e2m1_magnitude_code(y), y)


_MAGNITUDES = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float32)


def _e2m1_round(y: torch.Tensor) -> torch.Tensor:
    """vLLM's ``round_to_nearest_e2m1``: the nearest e2m1 value as float, sign copied from y."""
    return torch.copysign(_e2m1_magnitude(y.abs()), y)


def _stored_values(magnitude: torch.Tensor, scaled: torch.Tensor) -> torch.Tensor:
    """The e2m1 values the codes of ``scaled`` encode (``_with_sign``): the magnitude with
    scaled's sign, except NaN, which stores +6."""
    # A NaN's sign source becomes +1 (nan_to_num keeps zeros and infinities, signs included):
    # the values of where(isnan(scaled), magnitude, copysign(magnitude, scaled)) without the
    # CPU's where, which torch 2.13 does not vectorize.
    sign = scaled.nan_to_num(nan=1.0, posinf=math.inf, neginf=-math.inf)
    return torch.copysign(magnitude, sign, out=sign)


def _output_scale(sf: torch.Tensor, rcp_g: torch.Tensor, track: bool) -> list[torch.Tensor]:
    """``sf != 0 ? rcp(sf * rcp(g)) : 0`` for one value of rcp(g); model first."""
    zero = torch.zeros_like(sf)
    return [torch.where(sf != 0, r, zero) for r in _rcp_candidates(sf * rcp_g, track)]


def _dequant_scales(os: torch.Tensor, track: bool) -> list[torch.Tensor]:
    zero = torch.zeros_like(os)
    return [torch.where(os != 0, r, zero) for r in _rcp_candidates(os, track)]


def _reconstruction_error(
    x: torch.Tensor, os: torch.Tensor, dq: torch.Tensor, rounded: torch.Tensor | None = None
) -> torch.Tensor:
    """``nvfp4_reconstruction_error`` as compiled (FFMA/FMUL/FADD order of the 0.33.0 SASS).
    ``rounded``: ``_e2m1_round(x * os[:, None])`` when the caller has it already."""
    if rounded is None:
        rounded = _e2m1_round(x * os[:, None])
    d = _fma(rounded, dq[:, None], -x)
    d = torch.where((os == 0)[:, None], x, d)
    pairs = d.view(-1, SF_VEC_SIZE // 2, 2)
    dx, dy = pairs[..., 0], pairs[..., 1]
    p = _fma(dx, dx, dy * dy)
    err = torch.zeros(x.shape[0], dtype=torch.float32)
    for k in range(SF_VEC_SIZE // 2):
        err = err + p[:, k]
    return err


# |err32 - E| <= 12.1 * 2^-24 * E for the compiled float32 error (2 roundings per square, one
# per fused add, 8 sums of non-negative terms) and far less for the float64 estimate; 2^-19 is
# 32 * 2^-24. The absolute term covers gradual underflow (at most 2^-150 per rounding, 12 of
# them); the estimates must stay below 2^100 so that no float32 square or sum overflows.
_SETTLED_REL = 2.0**-19
_SETTLED_ABS = 2.0**-140
_SETTLED_MAX = 2.0**100


def _error_estimate(minus_x: torch.Tensor, dq: torch.Tensor, rounded: torch.Tensor) -> torch.Tensor:
    """The reconstruction error of ``_reconstruction_error`` in float64, ``sum (R * dq - x)^2``
    (``minus_x``: ``-x`` as float64), within ``2^-50`` relative of the exact value of its terms.
    Where ``os == 0``, ``dq`` is 0 and ``R`` finite, so the term is ``x^2``, as there."""
    # R * dq is exact in float64 (R has 2 significant bits, dq 24), so multiplying then adding
    # rounds once, as addcmul would; in place, one float64 temporary (each fresh one costs page
    # faults on the CPU).
    d = rounded.double().mul_(dq.double()[:, None]).add_(minus_x)
    return d.square_().sum(dim=1)


def _four_is_smaller(
    x: torch.Tensor,
    side6: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    side4: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> torch.Tensor:
    """``err4 < err6`` per block, as the compiled float32 errors compare (``side``: os, dq and
    the rounded e2m1 values). The exact emulation (``_reconstruction_error``, about 20 float64
    operations per fused multiply-add) runs only on the blocks whose float64 estimates are
    closer than the float32 errors can stray from them, or not finite, or large: ties (an
    all-zero block: both 0) and a few near-ties. Everywhere else the estimates decide, with the
    same answer. 4over6's write costs 0.3x what it did on the CPU (SmolLM2's K/V)."""
    minus_x = x.double().neg_()
    e6, e4 = (_error_estimate(minus_x, dq, rounded) for _, dq, rounded in (side6, side4))
    use4 = e4 < e6
    settled = ((e4 - e6).abs() > _SETTLED_REL * (e4 + e6) + _SETTLED_ABS) & (
        torch.maximum(e4, e6) < _SETTLED_MAX
    )  # NaN compares False: not settled
    rest = torch.nonzero(~settled).flatten()
    if rest.numel():
        xs = x[rest]
        err6 = _reconstruction_error(xs, *(t[rest] for t in side6))
        err4 = _reconstruction_error(xs, *(t[rest] for t in side4))
        use4[rest] = err4 < err6
    return use4


def _unstable_codes(
    x: torch.Tensor, sf: torch.Tensor, rcp_g: list[torch.Tensor], codes: torch.Tensor
) -> torch.Tensor:
    """Blocks whose codes differ from ``codes`` for some output scale the hardware may compute
    from ``sf`` (every candidate of rcp(g), then of rcp(sf * rcp(g)))."""
    unstable = torch.zeros(x.shape[0], dtype=torch.bool)
    for r in rcp_g:
        for o in _output_scale(sf, r, True):
            unstable |= (_e2m1_codes(x * o[:, None]) != codes).any(dim=1)
    return unstable


def _error_margin(x: torch.Tensor, os: torch.Tensor, err: torch.Tensor) -> torch.Tensor:
    """A bound on how far the computed reconstruction error can move when every reciprocal is
    off by one ulp and no code changes: the dequantization scale moves by at most ~4 ulps
    (bounded here by 2^-18 relative), each term ``d_i = q_i * dq - x_i`` by ``|q_i dq| 2^-18``,
    so ``sum d_i^2`` by ``2 sqrt(E S) 2^-18 + S 2^-36`` (``S = sum (q_i dq)^2``, Cauchy-Schwarz),
    plus the rounding of the two evaluations (< 2^-19 E). Used with a factor of 4 to spare."""
    dq = _dequant_scales(os, False)[0]
    qd = _e2m1_round(x * os[:, None]) * dq[:, None]
    s = (qd.double() ** 2).sum(dim=1)
    e = err.double()
    return 2.0**-15 * torch.sqrt(e * s) + 2.0**-33 * s + 2.0**-15 * e + 1e-38


def _enumerate_4over6(
    x: torch.Tensor,
    side_sf: list[torch.Tensor],
    use4: torch.Tensor,
    codes: torch.Tensor,
    rcp_g: list[torch.Tensor],
) -> torch.Tensor:
    """Ambiguity of 4over6 blocks by trying every candidate of every reciprocal: the choice must
    be the same for all of them, and so must the chosen side's codes."""
    ambiguous = torch.zeros(x.shape[0], dtype=torch.bool)
    for r in rcp_g:
        candidates = [_output_scale(sf, r, True) for sf in side_sf]
        e6, e4 = (
            torch.stack(
                [
                    _reconstruction_error(x, o, dq)
                    for o in cands
                    for dq in _dequant_scales(o, True)
                ]  # fmt: skip
            )
            for cands in candidates
        )
        always4 = ~torch.isnan(e4).any(0) & ~torch.isnan(e6).any(0) & (e4.amax(0) < e6.amin(0))
        lowest4 = torch.where(torch.isnan(e4), math.inf, e4).amin(0)
        highest6 = torch.where(torch.isnan(e6), -math.inf, e6).amax(0)
        ambiguous |= torch.where(use4, ~always4, ~(lowest4 >= highest6))
        for o6, o4 in zip(*candidates, strict=True):
            o = torch.where(use4, o4, o6)
            ambiguous |= (_e2m1_codes(x * o[:, None]) != codes).any(dim=1)
    return ambiguous


@dataclass(frozen=True)
class _Side:
    """Groups at one block-scale divisor (6; ``nvfp4_4over6`` also tries 4, then keeps one side
    per block in a ``_Side`` of its own): the e4m3 block scale, the output scale ``os`` (model
    reciprocals), the values the e2m1 conversion sees (``x * os``) and their e2m1 magnitudes,
    rounded once for the error, the codes and the values read back."""

    scale_bits: torch.Tensor  # uint8 [N]
    scale: torch.Tensor  # float32 [N]: the block scale's value
    output_scale: torch.Tensor  # float32 [N]
    scaled: torch.Tensor  # float32 [N, 16]
    magnitude: torch.Tensor  # float32 [N, 16]

    def codes(self) -> torch.Tensor:
        return _with_sign(_magnitude_code(self.magnitude), self.scaled)

    def error_terms(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(os, dq, rounded e2m1 values): what ``_reconstruction_error`` and
        ``_four_is_smaller`` read."""
        os = self.output_scale
        rounded = torch.copysign(self.magnitude, self.scaled)
        return os, _dequant_scales(os, False)[0], rounded


def _side(
    x: torch.Tensor, m: torch.Tensor, rcp_divisor: float, g: torch.Tensor, rcp_g: torch.Tensor
) -> _Side:
    """Steps 3-5 of the module docstring for one divisor (``rcp_divisor``: ``RCP_SIX`` or
    ``RCP_FOUR``), ``m`` the groups' max |x|, ``rcp_g`` the model value of ``rcp(g)``."""
    scale_bits = _e4m3_bits((m * _f32(rcp_divisor)) * g)
    scale = _e4m3_value(scale_bits)
    os = _output_scale(scale, rcp_g, False)[0]
    scaled = x * os[:, None]
    return _Side(scale_bits, scale, os, scaled, _e2m1_magnitude(scaled.abs()))


def _quantize_groups(
    x: torch.Tensor, global_scale: torch.Tensor, four_over_six: bool, track: bool
) -> tuple[_Side, torch.Tensor]:
    """Quantize float32 groups ``x [N, 16]`` exactly as the kernel does (see module docstring):
    the side each block keeps (4over6: 6 or 4 per block) and which blocks are ambiguous (bool
    [N], all False without ``track``)."""
    n = x.shape[0]
    if n == 0:
        no_blocks, no_values = torch.zeros(0), torch.zeros(0, SF_VEC_SIZE)
        empty = _Side(torch.zeros(0, dtype=torch.uint8), no_blocks, no_blocks, no_values, no_values)
        return empty, torch.zeros(0, dtype=torch.bool)
    g = torch.reciprocal(global_scale.to(torch.float32).reshape(()))  # IEEE 1.0f / k_scale
    absx = x.abs()
    # A NaN element is skipped; a group of NaNs gives NaN: its max over -inf is -inf, which no
    # other group's (>= 0) can be.
    m = absx.nan_to_num_(nan=-math.inf, posinf=math.inf).amax(dim=1)
    m = m.masked_fill_(m == -math.inf, math.nan)
    rcp_g = _rcp_candidates(g, track)
    six = _side(x, m, RCP_SIX, g, rcp_g[0])
    if not four_over_six:
        ambiguous = (
            _unstable_codes(x, six.scale, rcp_g, six.codes())
            if track
            else torch.zeros(n, dtype=torch.bool)
        )
        return six, ambiguous
    four = _side(x, m, RCP_FOUR, g, rcp_g[0])
    terms6, terms4 = six.error_terms(), four.error_terms()
    if track:
        err6, err4 = _reconstruction_error(x, *terms6), _reconstruction_error(x, *terms4)
        use4 = err4 < err6
    else:
        use4 = _four_is_smaller(x, terms6, terms4)
    os6, os4 = six.output_scale, four.output_scale
    use4_rows = use4[:, None]
    chosen = _Side(
        torch.where(use4, four.scale_bits, six.scale_bits),
        torch.where(use4, four.scale, six.scale),
        torch.where(use4, os4, os6),
        torch.where(use4_rows, four.scaled, six.scaled),
        torch.where(use4_rows, four.magnitude, six.magnitude),
    )
    ambiguous = torch.zeros(n, dtype=torch.bool)
    if track:
        codes6, codes4 = six.codes(), four.codes()
        codes = chosen.codes()
        # Screen: a block with NaN or inf keeps 6 whatever the reciprocals (every error is NaN
        # or inf, never smaller), so only its codes can move. Otherwise, with stable codes on
        # both sides and errors further apart than the reciprocals can move them, the choice
        # and the codes are certain. Only the rest is enumerated.
        unstable6 = _unstable_codes(x, six.scale, rcp_g, codes6)
        nonfinite = ~torch.isfinite(x).all(dim=1)
        ambiguous = nonfinite & unstable6
        settled = nonfinite | (
            ~unstable6
            & ~_unstable_codes(x, four.scale, rcp_g, codes4)
            & torch.isfinite(err6)
            & torch.isfinite(err4)
            & ((err4.double() - err6.double()).abs()
               > _error_margin(x, os6, err6) + _error_margin(x, os4, err4))
        )  # fmt: skip
        rest = torch.nonzero(~settled).flatten()
        if rest.numel():
            ambiguous[rest] = _enumerate_4over6(
                x[rest], [six.scale[rest], four.scale[rest]], use4[rest], codes[rest], rcp_g
            )
    return chosen, ambiguous


def _pack(codes: torch.Tensor) -> torch.Tensor:
    """Two codes per byte, element 2k in the low nibble: ``[..., 2n] -> [..., n]``."""
    return codes[..., 0::2] | (codes[..., 1::2] << 4)


def _unpack(data: torch.Tensor) -> torch.Tensor:
    out = torch.stack([data & 0xF, data >> 4], dim=-1)
    return out.reshape(*data.shape[:-1], data.shape[-1] * 2)


def _check_variant(kv_cache_dtype: str) -> bool:
    """True for ``nvfp4_4over6``; refuses anything that is not an NVFP4 dtype."""
    if kv_cache_dtype not in NVFP4_KV_CACHE_DTYPES:
        raise NVFP4ArgumentError(
            f"kv_cache_dtype {kv_cache_dtype!r} is not an NVFP4 dtype; expected one of "
            f"{', '.join(NVFP4_KV_CACHE_DTYPES)}"
        )
    return kv_cache_dtype == "nvfp4_4over6"


def _scale_tensor(name: str, scale: torch.Tensor | float) -> torch.Tensor:
    if not isinstance(scale, torch.Tensor):
        return torch.tensor(float(scale), dtype=torch.float32)
    if scale.dtype != torch.float32 or scale.numel() != 1:
        raise NVFP4ArgumentError(
            f"{name} must be a float32 tensor with 1 element, got {scale.dtype} "
            f"{tuple(scale.shape)} (vLLM's NVFP4 kernel reads element 0 of the layer's scale)"
        )
    return scale.detach().to("cpu").reshape(())


@dataclass(frozen=True)
class NVFP4Quantized:
    """One tensor quantized as the cache write does, before it is placed in pages.

    ``data`` uint8 ``[..., head_size / 2]`` (two e2m1 codes per byte, even element low);
    ``scales`` uint8 ``[..., head_size / 16]`` (e4m3 bits); ``ambiguous`` bool
    ``[..., head_size / 16]`` (blocks whose bytes depend on the hardware reciprocal, see the
    module docstring; all False when not tracked); ``scaled`` float32 ``[..., head_size]``,
    the values the e2m1 conversion saw (``x * os``).
    """

    data: torch.Tensor
    scales: torch.Tensor
    ambiguous: torch.Tensor
    scaled: torch.Tensor


def _quantized_groups(
    x: torch.Tensor, global_scale: torch.Tensor | float, kv_cache_dtype: str, track: bool
) -> tuple[_Side, torch.Tensor, torch.Tensor]:
    """``x [..., head_size]`` checked and quantized per group of 16 on the CPU: the kept side,
    the ambiguous blocks and the global scale as a float32 tensor."""
    four_over_six = _check_variant(kv_cache_dtype)
    if x.dtype not in _HALF_DTYPES:
        raise NVFP4ArgumentError(
            f"NVFP4 cache writes take bfloat16 or float16 inputs (vLLM dispatches half types "
            f"only), got {x.dtype}"
        )
    if x.dim() == 0:
        raise NVFP4ArgumentError("x must have a head dimension")
    _check_head_size(x.shape[-1])
    scale = _scale_tensor("global_scale", global_scale)
    xf = x.detach().to("cpu", torch.float32).reshape(-1, SF_VEC_SIZE)
    return (*_quantize_groups(xf, scale, four_over_six, track), scale)


def quantize_nvfp4(
    x: torch.Tensor,
    global_scale: torch.Tensor | float,
    kv_cache_dtype: str = "nvfp4",
    *,
    track_ambiguity: bool = True,
) -> NVFP4Quantized:
    """Quantize ``x [..., head_size]`` (bf16/fp16, any device) with the checkpoint scale
    ``global_scale`` (k_scale or v_scale: dequantization multiplies by it) as vLLM 0.33.0's
    write does. Computed on the CPU."""
    kept, ambiguous, _ = _quantized_groups(x, global_scale, kv_cache_dtype, track_ambiguity)
    lead = x.shape[:-1]
    head_size = x.shape[-1]
    groups = head_size // SF_VEC_SIZE
    return NVFP4Quantized(
        data=_pack(kept.codes()).reshape(*lead, head_size // 2),
        scales=kept.scale_bits.reshape(*lead, groups),
        ambiguous=ambiguous.reshape(*lead, groups),
        scaled=kept.scaled.reshape(*lead, head_size),
    )


def dequantize_nvfp4(
    data: torch.Tensor, scales: torch.Tensor, global_scale: torch.Tensor | float
) -> torch.Tensor:
    """``e2m1 * float(block_scale) * global_scale`` in float32: ``data [..., hs/2]`` and
    ``scales [..., hs/16]`` uint8 -> ``[..., hs]``."""
    codes = _unpack(data.to("cpu"))
    values = torch.copysign(_MAGNITUDES[(codes & 7).long()], -((codes >> 3).float() * 2 - 1))
    sf = _e4m3_value(scales.to("cpu"))
    per_group = values.reshape(*sf.shape, SF_VEC_SIZE) * sf[..., None]
    k = _scale_tensor("global_scale", global_scale)
    return (per_group * k).reshape(values.shape)


def nvfp4_read_back(
    x: torch.Tensor, global_scale: torch.Tensor | float, kv_cache_dtype: str = "nvfp4"
) -> torch.Tensor:
    """What the cache gives back for ``x``: ``dequantize_nvfp4`` of ``quantize_nvfp4(x, ...)``'s
    bytes (float32, ``x``'s shape, on the CPU; ambiguity not tracked), computed from the e2m1
    values without packing and decoding codes (2.5x faster for ``nvfp4`` on SmolLM2's K/V; the
    same bits, tested). ``verify --data`` and ``plan`` read the cache through it."""
    kept, _, k = _quantized_groups(x, global_scale, kv_cache_dtype, False)
    # In place on the fresh values: the same two roundings as (values * scale) * k.
    values = _stored_values(kept.magnitude, kept.scaled)
    return values.mul_(kept.scale[:, None]).mul_(k).reshape(x.shape)


# --------------------------------------------------------------------------------------------
# The cache write


def _pages(kv_cache: torch.Tensor, layout: NVFP4PageLayout) -> torch.Tensor:
    """``[num_blocks, page_bytes]`` view of the cache storage (writes go through to it)."""
    return torch.as_strided(
        kv_cache,
        (kv_cache.shape[0], layout.page_bytes),
        (kv_cache.stride(0), 1),
        kv_cache.storage_offset(),
    )


def validate_nvfp4_write_args(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> NVFP4PageLayout:
    """Check every argument of an NVFP4 cache write; raise NVFP4ArgumentError (or a subclass)
    on the first problem. Shared by the reference and the Triton launcher."""
    _check_variant(kv_cache_dtype)
    for name, t in (("key", key), ("value", value)):
        if t.dim() != 3:
            raise NVFP4ArgumentError(
                f"{name} must be [num_tokens, num_kv_heads, head_size], got {tuple(t.shape)}"
            )
        if t.dtype not in _HALF_DTYPES:
            raise NVFP4ArgumentError(
                f"{name} must be bfloat16 or float16 (vLLM dispatches half types only), got "
                f"{t.dtype}"
            )
    if key.shape != value.shape or key.dtype != value.dtype:
        raise NVFP4ArgumentError(
            f"key and value must match: {tuple(key.shape)} {key.dtype} vs {tuple(value.shape)} "
            f"{value.dtype}"
        )
    num_tokens, num_heads, head_size = key.shape
    _check_head_size(head_size)
    for name, t in (("key", key), ("value", value)):
        # The kernel addresses token_row + head * head_size + element.
        if (t.stride(2) != 1 or t.stride(1) != head_size) and num_heads * head_size > 0:
            raise NVFP4ArgumentError(
                f"{name} must hold each token's heads contiguously (strides (*, {head_size}, 1)), "
                f"got {t.stride()}: vLLM's NVFP4 kernel uses only the token stride"
            )
    if kv_cache.dim() != 4 or kv_cache.dtype != torch.uint8:
        raise NVFP4LayoutError(
            "kv_cache must be a uint8 [num_blocks, 2 * num_kv_heads, block_size, full_dim] "
            f"tensor, got {kv_cache.dtype} {tuple(kv_cache.shape)}"
        )
    num_blocks, slots, block_size, full_dim = kv_cache.shape
    layout = NVFP4PageLayout.create(num_heads, head_size, block_size)
    if slots != 2 * num_heads or full_dim != layout.full_dim:
        raise NVFP4LayoutError(
            f"kv_cache {tuple(kv_cache.shape)} does not hold {num_heads} K and {num_heads} V "
            f"heads of {layout.full_dim} bytes (head_size {head_size})"
        )
    head_major = (block_size * full_dim, full_dim, 1)
    if kv_cache.stride()[1:] != head_major:
        if kv_cache.stride()[1:] == (full_dim, slots * full_dim, 1):
            raise NVFP4LayoutError(
                "kv_cache pages are token-major (NHD): vLLM 0.33.0 runs this kernel only on "
                "SM100, where NVFP4 pages are head-major (FlashInferBackend."
                "supported_kv_cache_layouts), and with NHD pages the kernel's K and V regions "
                "overlap"
            )
        raise NVFP4LayoutError(
            f"kv_cache pages must be dense and head-major (strides (*, {head_major[0]}, "
            f"{full_dim}, 1)), got {kv_cache.stride()}"
        )
    if num_blocks > 1 and kv_cache.stride(0) < layout.page_bytes:
        raise NVFP4LayoutError(
            f"kv_cache pages overlap: block stride {kv_cache.stride(0)} < {layout.page_bytes}"
        )
    if slot_mapping.dim() != 1 or slot_mapping.dtype != torch.int64:
        raise NVFP4ArgumentError(
            f"slot_mapping must be a 1-D int64 tensor, got {tuple(slot_mapping.shape)} "
            f"{slot_mapping.dtype}"
        )
    if slot_mapping.shape[0] > num_tokens:
        raise NVFP4ArgumentError(
            f"slot_mapping has {slot_mapping.shape[0]} entries but key has only {num_tokens} tokens"
        )
    for name, s in (("k_scale", k_scale), ("v_scale", v_scale)):
        if not isinstance(s, torch.Tensor) or s.dtype != torch.float32 or s.numel() != 1:
            raise NVFP4ArgumentError(
                f"{name} must be a float32 tensor with 1 element (vLLM's NVFP4 kernel reads "
                "element 0 of the layer's scale)"
            )
    devices = {t.device for t in (key, value, kv_cache, slot_mapping, k_scale, v_scale)}
    if len(devices) != 1:
        raise NVFP4ArgumentError(
            f"all tensors must be on one device, got {sorted(map(str, devices))}"
        )
    return layout


@dataclass(frozen=True)
class NVFP4WriteReport:
    """What the reference wrote besides the bytes: which blocks the reciprocal model cannot
    decide (module docstring). ``key_ambiguous``/``value_ambiguous`` are bool
    ``[len(slot_mapping), num_kv_heads, head_size / 16]`` (False for padding slots);
    ``ambiguous_bytes`` is a bool tensor shaped like the cache, True at every byte (data and
    scale) of an ambiguous block. ``tracked`` is False when ambiguity was not computed."""

    key_ambiguous: torch.Tensor
    value_ambiguous: torch.Tensor
    ambiguous_bytes: torch.Tensor
    blocks: int
    tracked: bool

    @property
    def ambiguous_blocks(self) -> int:
        return int(self.key_ambiguous.sum()) + int(self.value_ambiguous.sum())


def _live_slots(
    slot_mapping: torch.Tensor, layout: NVFP4PageLayout, num_blocks: int
) -> tuple[torch.Tensor, torch.Tensor]:
    slots = slot_mapping.to("cpu")
    rows = torch.nonzero(slots >= 0).flatten()
    live = slots[rows]
    if live.numel():
        capacity = num_blocks * layout.block_size
        if int(live.max()) >= capacity:
            raise NVFP4ArgumentError(f"slot {int(live.max())} is past the cache's {capacity} slots")
        if torch.unique(live).numel() != live.numel():
            raise NVFP4ArgumentError(
                "slot_mapping repeats a slot: the GPU's writes to it would race"
            )
    return rows, live


def reference_reshape_and_cache_nvfp4(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
    *,
    track_ambiguity: bool = True,
) -> NVFP4WriteReport:
    """Write key/value into one layer's NVFP4 cache in place, as vLLM 0.33.0 does on SM100.

    key/value ``[num_tokens, num_kv_heads, head_size]`` bf16/fp16 (heads contiguous within a
    token); ``kv_cache`` uint8 ``[num_blocks, 2 * num_kv_heads, block_size, full_dim]`` with
    head-major pages (:func:`nvfp4_kv_cache_shape`); ``slot_mapping`` int64 ``[n]``, ``n <=
    num_tokens``, negative = padding (nothing written); ``k_scale``/``v_scale`` float32, one
    element each (the checkpoint scales). Runs on the CPU whatever the tensors' device.
    """
    layout = validate_nvfp4_write_args(
        key, value, kv_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    n = slot_mapping.shape[0]
    rows, live = _live_slots(slot_mapping, layout, kv_cache.shape[0])
    groups = layout.scale_dim
    masks = [torch.zeros(n, layout.num_kv_heads, groups, dtype=torch.bool) for _ in range(2)]
    ambiguous_bytes = torch.zeros(kv_cache.shape, dtype=torch.bool)
    if rows.numel():
        pages = _pages(kv_cache, layout)
        byte_pages = _pages(ambiguous_bytes, layout)
        cpu_pages = pages.to("cpu")
        for side, (src, scale) in enumerate(((key, k_scale), (value, v_scale))):
            x = src[:n].index_select(0, rows.to(src.device))
            q = quantize_nvfp4(x, scale, kv_cache_dtype, track_ambiguity=track_ambiguity)
            block, data_off, scale_off = layout.slot_offsets(side, live)
            data = q.data.reshape(*data_off.shape)
            cpu_pages[block[:, None, None, None], data_off] = data
            cpu_pages[block[:, None, None], scale_off] = q.scales
            masks[side][rows] = q.ambiguous
            amb = q.ambiguous
            byte_pages[block[:, None, None, None], data_off] |= amb[..., None]
            byte_pages[block[:, None, None], scale_off] |= amb
        pages.copy_(cpu_pages)
    return NVFP4WriteReport(
        key_ambiguous=masks[0],
        value_ambiguous=masks[1],
        ambiguous_bytes=ambiguous_bytes,
        blocks=2 * int(rows.numel()) * layout.num_kv_heads * groups,
        tracked=track_ambiguity,
    )


def read_nvfp4_cache(
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    num_kv_heads: int,
    k_scale: torch.Tensor | float,
    v_scale: torch.Tensor | float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Dequantized K and V of the given slots, float32 ``[n, num_kv_heads, head_size]``
    (``e2m1 * float(block_scale) * scale``, V scales unswizzled); NaN rows for padding slots."""
    if kv_cache.dim() != 4 or kv_cache.dtype != torch.uint8:
        raise NVFP4LayoutError(f"kv_cache must be a 4-D uint8 tensor, got {kv_cache.dtype}")
    full_dim = kv_cache.shape[3]
    if (full_dim * 16) % 9:
        raise NVFP4LayoutError(f"kv_cache last dim {full_dim} is not head_size * 9 / 16")
    layout = NVFP4PageLayout.create(num_kv_heads, full_dim * 16 // 9, kv_cache.shape[2])
    if kv_cache.shape[1] != 2 * num_kv_heads or kv_cache.stride()[1:] != (
        layout.block_size * full_dim,
        full_dim,
        1,
    ):
        raise NVFP4LayoutError(
            f"kv_cache {tuple(kv_cache.shape)} strides {kv_cache.stride()} are not head-major "
            f"pages of {num_kv_heads} K and V heads"
        )
    slots = slot_mapping.to("cpu")
    n = slots.shape[0]
    pages = _pages(kv_cache, layout).to("cpu")
    out = []
    live_rows = torch.nonzero(slots >= 0).flatten()
    live = slots[live_rows]
    for side, scale in enumerate((k_scale, v_scale)):
        result = torch.full((n, num_kv_heads, layout.head_size), math.nan)
        block, data_off, scale_off = layout.slot_offsets(side, live)
        data = pages[block[:, None, None, None], data_off].reshape(
            live.numel(), num_kv_heads, layout.data_dim
        )
        sf = pages[block[:, None, None], scale_off]
        result[live_rows] = dequantize_nvfp4(data, sf, scale)
        out.append(result)
    return out[0], out[1]


# --------------------------------------------------------------------------------------------
# Statistics


@dataclass(frozen=True)
class NVFP4WriteStats:
    """What the NVFP4 write does to one tensor (K or V of one layer).

    - ``zero_scale_blocks``: blocks whose scale is stored as zero although they held a nonzero
      value (all their codes are then signed zeros, or +6 for NaN elements);
    - ``scale_saturated_blocks``: block scale at the e4m3 maximum 448 (byte 0x7E);
    - ``clipped_blocks``: some ``|x * os|`` reached 7, where the e2m1 store clips to 6;
    - ``saturated_blocks``: blocks with either of the two;
    - ``nonfinite_blocks``: blocks holding NaN or inf;
    - ``ambiguous_blocks``: blocks the reciprocal model cannot decide;
    - ``relative_rms_error``: ``sqrt(sum((dequant - x)^2) / sum(x^2))`` over finite elements.
    """

    blocks: int
    zero_scale_blocks: int
    scale_saturated_blocks: int
    clipped_blocks: int
    saturated_blocks: int
    nonfinite_blocks: int
    ambiguous_blocks: int
    relative_rms_error: float

    @property
    def zero_scale_fraction(self) -> float:
        return self.zero_scale_blocks / self.blocks if self.blocks else 0.0

    @property
    def saturated_fraction(self) -> float:
        return self.saturated_blocks / self.blocks if self.blocks else 0.0


def nvfp4_write_round_trip(
    x: torch.Tensor,
    global_scale: torch.Tensor | float,
    kv_cache_dtype: str = "nvfp4",
    *,
    track_ambiguity: bool = True,
) -> tuple[NVFP4WriteStats, torch.Tensor, torch.Tensor]:
    """Write ``x [..., head_size]`` (bf16/fp16) with checkpoint scale ``global_scale`` and read it
    back: the block counts (``relative_rms_error`` left NaN), and over the finite elements of
    ``x`` its float32 values and what the cache gives back for them, the pairs the error sums
    over (``nvfp4_write_stats`` at once; ``kvscale verify`` chunk by chunk)."""
    q = quantize_nvfp4(x, global_scale, kv_cache_dtype, track_ambiguity=track_ambiguity)
    xf = x.detach().to("cpu", torch.float32)
    groups = xf.reshape(-1, SF_VEC_SIZE)
    scale_values = _e4m3_value(q.scales.reshape(-1))
    zero_scale = (scale_values == 0) & (groups != 0).any(dim=1)
    scale_saturated = q.scales.reshape(-1) == E4M3_MAX_BYTE
    clipped = (q.scaled.reshape(-1, SF_VEC_SIZE).abs() >= E2M1_CLIP_BOUND).any(dim=1)
    nonfinite = ~torch.isfinite(groups).all(dim=1)
    deq = dequantize_nvfp4(q.data, q.scales, global_scale).reshape(-1)
    ref = xf.reshape(-1)
    finite = torch.isfinite(ref)
    counts = NVFP4WriteStats(
        blocks=groups.shape[0],
        zero_scale_blocks=int(zero_scale.sum()),
        scale_saturated_blocks=int(scale_saturated.sum()),
        clipped_blocks=int(clipped.sum()),
        saturated_blocks=int((scale_saturated | clipped).sum()),
        nonfinite_blocks=int(nonfinite.sum()),
        ambiguous_blocks=int(q.ambiguous.sum()),
        relative_rms_error=math.nan,
    )
    return counts, ref[finite], deq[finite]


def nvfp4_write_stats(
    x: torch.Tensor,
    global_scale: torch.Tensor | float,
    kv_cache_dtype: str = "nvfp4",
    *,
    track_ambiguity: bool = True,
) -> NVFP4WriteStats:
    """Statistics of writing ``x [..., head_size]`` (bf16/fp16) with checkpoint scale
    ``global_scale``."""
    counts, written, read = nvfp4_write_round_trip(
        x, global_scale, kv_cache_dtype, track_ambiguity=track_ambiguity
    )
    ref, deq = written.double(), read.double()
    denominator = float((ref**2).sum())
    numerator = float(((deq - ref) ** 2).sum())
    return replace(
        counts,
        relative_rms_error=math.sqrt(numerator / denominator) if denominator > 0 else 0.0,
    )


@dataclass(frozen=True)
class NVFP4LayerStats:
    """:class:`NVFP4WriteStats` of one layer's K and V."""

    key: NVFP4WriteStats
    value: NVFP4WriteStats


def nvfp4_layer_stats(
    key: torch.Tensor,
    value: torch.Tensor,
    k_scale: torch.Tensor | float,
    v_scale: torch.Tensor | float,
    kv_cache_dtype: str = "nvfp4",
    *,
    track_ambiguity: bool = True,
) -> NVFP4LayerStats:
    """Write statistics of one layer: ``key``/``value`` ``[..., head_size]`` bf16/fp16."""
    return NVFP4LayerStats(
        key=nvfp4_write_stats(key, k_scale, kv_cache_dtype, track_ambiguity=track_ambiguity),
        value=nvfp4_write_stats(value, v_scale, kv_cache_dtype, track_ambiguity=track_ambiguity),
    )


# --------------------------------------------------------------------------------------------
# Test data


NVFP4_STRESS_KINDS = ("random", "heavy", "adversarial")


def make_nvfp4_stress_values(
    shape: tuple[int, int, int],
    *,
    kind: str,
    dtype: torch.dtype,
    generator: torch.Generator,
) -> torch.Tensor:
    """Inputs ``[num_tokens, num_kv_heads, head_size]`` for checking an NVFP4 writer.

    ``random``: normal. ``heavy``: Cauchy-tailed. ``adversarial``: per group a unit ``u`` (an
    e4m3 value from the subnormals to 448, times a power of two) and elements ``u`` times e2m1
    values, their midpoints (ties), midpoints one bf16 step off, 6 times e4m3 midpoints (block
    scale ties) and values past 7 (clipping); signs random; then NaN, +-inf, +-0 and subnormals
    of the input dtype sprinkled over 1/16 of the elements.
    """
    if kind not in NVFP4_STRESS_KINDS:
        raise ValueError(f"kind must be one of {NVFP4_STRESS_KINDS}, got {kind!r}")
    g = generator
    if kind == "random":
        return torch.randn(shape, generator=g).to(dtype)
    if kind == "heavy":
        num = torch.randn(shape, generator=g, dtype=torch.float64)
        den = torch.randn(shape, generator=g, dtype=torch.float64).abs() + 1e-3
        return (num / den).to(dtype)
    t, h, hs = shape
    groups = t * h * hs // SF_VEC_SIZE
    e2m1 = torch.tensor(E2M1_MAGNITUDES[1:], dtype=torch.float64)
    mids = (e2m1[1:] + e2m1[:-1]) / 2
    e4m3_grid = (
        torch.arange(1, 127, dtype=torch.int64).to(torch.uint8).view(torch.float8_e4m3fn).double()
    )
    e4m3_mids = (e4m3_grid[1:] + e4m3_grid[:-1]) / 2
    pool = torch.cat(
        [
            e2m1,
            mids,
            mids * (1 + 2.0**-7),
            mids * (1 - 2.0**-7),
            torch.tensor([0.25, 7.0, 7.5, 9.0, 12.0]),
        ]
    )
    unit = e4m3_grid[torch.randint(0, e4m3_grid.numel(), (groups, 1), generator=g)]
    unit = unit * 2.0 ** torch.randint(-20, 4, (groups, 1), generator=g).double()
    v = pool[torch.randint(0, pool.numel(), (groups, SF_VEC_SIZE), generator=g)] * unit
    # A quarter of the groups get a maximum at 6 times an e4m3 midpoint: sf lands on a tie.
    tie = torch.rand(groups, generator=g) < 0.25
    top = 6 * e4m3_mids[torch.randint(0, e4m3_mids.numel(), (groups,), generator=g)]
    v[:, 0] = torch.where(tie, top * 2.0 ** torch.randint(-8, 4, (groups,), generator=g), v[:, 0])
    v = v * (torch.randint(0, 2, v.shape, generator=g).double() * 2 - 1)
    x = v.reshape(shape).to(dtype)
    specials = torch.tensor(
        [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0,
         torch.finfo(dtype).tiny / 4, -torch.finfo(dtype).tiny / 4],
        dtype=torch.float64,
    ).to(dtype)  # fmt: skip
    flat = x.view(-1)
    where = torch.randint(0, flat.numel(), (max(1, flat.numel() // 16),), generator=g)
    flat[where] = specials[torch.randint(0, specials.numel(), where.shape, generator=g)]
    return x
