"""vLLM 0.33.0's per-token-head KV caches (``--kv-cache-dtype int8_per_token_head``,
``fp8_per_token_head``, ``int4_per_token_head``): the cache write, the in-cache layout and the
read, as a plain-torch reference (CPU; GPU tensors work too).

These dtypes take no scale from the checkpoint: ``BaseKVCacheMethod.process_weights_after_loading``
(``vllm/model_executor/layers/quantization/kv_cache.py:100-111``) sets ``_k_scale``/``_v_scale``
to 1.0 and deletes the loaded ``k_scale``/``v_scale``/``q_scale``/``prob_scale`` parameters. The
write kernel computes one float32 scale per (token, KV head) from the values it stores, and keeps
it in the cache next to them. Only the TRITON_ATTN backend lists these dtypes
(``vllm/v1/attention/backends/triton_attn.py:326-336``).

Write (``vllm/v1/attention/ops/triton_reshape_and_cache_flash.py``,
``_reshape_cache_per_token_head`` and its launcher; K and V independently, float32 throughout):

* int8 / fp8: ``s = max(max|x| / QMAX, 1e-6)`` (QMAX 127 / 448), ``y = x * (1 / s)``; int8 rounds
  half away from zero (``y +- 0.5``, then the int8 store truncates), clamps to [-128, 127]; fp8
  clamps to [-448, 448] and the store casts to e4m3fn, round to nearest even.
* int4 (``vllm/v1/attention/ops/int4_per_token_head.py``, ``reshape_and_cache_int4``): the input is
  first rotated, ``single_rht(x.float()).to(x.dtype)`` (a random Hadamard transform, see
  :func:`random_hadamard_transform`), then quantized asymmetrically:
  ``s = max((max - min) / 15, 1e-6)``, ``zp = clamp(round(-min / s), 0, 15)``,
  ``q = clamp(round(x * (1 / s) + zp), 0, 15)`` (round half away from zero), two codes per byte
  (even element in the low nibble), and the stored float32 is ``bits(s) & ~0xF | zp``.

Read (what attention computes with): int8/fp8 ``code * s`` (``triton_unified_attention.py``: the
code is cast to the query dtype, the dot product scaled by ``softmax_scale * s`` and the softmax
weights by the V scale); int4 ``(code - zp) * s'`` with ``s' = bits & ~0xF`` (the scale whose low
mantissa bits carry the zero point), in the rotated space: attention rotates the query the same
way, divides ``softmax_scale`` by the rotation's block size ``b`` and applies the inverse rotation
divided by ``b`` to its output (``unified_attention_int4``), which is the same as reading
``inverse_rht((code - zp) * s') / b`` in the original space.

Arithmetic: float32 operations rounded one at a time and IEEE division, as Triton's interpreter
executes the kernels (``tests/parity/vllm_per_token_head_expected.json`` pins vLLM's kernels run
that way, byte for byte). What a GPU can do differently, and what only a GPU run settles
(``benchmarks/gpu_per_token_head_check.py``):

* Triton lowers float32 ``/`` to ``div.full.f32`` (up to 2 ulp, benchmarks/RESULTS.md), so the
  scale and its reciprocal can be an ulp or two off IEEE, and fuses ``x * inv + zp`` into one FMA;
  either moves a value sitting within an ulp or two of a rounding boundary.
* NaN and overflow are not defined by the kernels; the reference follows Triton 3.6's lowering
  for sm90 (``tl.max``/``tl.min`` are NaN-ignoring ``maxnum``/``minnum``; arithmetic returns the
  positive canonical NaN; ``tl.clamp(y, -448, 448)`` becomes ``min.xorsign.abs``, which maps NaN
  to +448; other clamps map NaN to the lower bound; float-to-int conversions saturate and map NaN
  to 0): NaN is stored as int8 -128, fp8 0x7E, int4 code 0; an inf input gives scale inf.
* int4's rotation on CUDA is not this butterfly: with vLLM's compiled ``hadacore_transform``
  (present in the 0.33.0 wheel) it runs in bfloat16 and rescales by ``sqrt(b)``; without it,
  blocks of 16..128 go through a bfloat16 Triton matrix multiply. Both round the rotated values to
  bfloat16 on the way, so int4 bytes written on a GPU differ from these wherever that rounding
  differs (the error statistics do not change materially).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import torch

from kvscale.kernel.formats import E4M3FN, UnknownKVCacheDtypeError, resolve_kv_cache_dtype
from kvscale.kernel.reference import CacheWriteArgumentError, fp8_round

__all__ = [
    "FP8_PER_TOKEN_HEAD",
    "INT4_PER_TOKEN_HEAD",
    "INT8_PER_TOKEN_HEAD",
    "PER_TOKEN_HEAD_FORMATS",
    "PER_TOKEN_HEAD_KV_CACHE_DTYPES",
    "RHT_SEED",
    "SCALE_BYTES",
    "SCALE_FLOOR",
    "TRITON_ATTN_MIN_HEAD_SIZE",
    "NotPerTokenHeadError",
    "PerTokenHeadArgumentError",
    "PerTokenHeadCacheViews",
    "PerTokenHeadFormat",
    "PerTokenHeadLayout",
    "PerTokenHeadQuantized",
    "dequantize_per_token_head",
    "init_per_token_head_cache",
    "is_per_token_head",
    "kv_cache_bytes_per_token",
    "per_token_head_cache_views",
    "per_token_head_format",
    "per_token_head_layout",
    "per_token_head_read_back",
    "quantize_per_token_head",
    "random_hadamard_transform",
    "read_per_token_head_cache",
    "reference_reshape_and_cache_per_token_head",
    "rht_block_size",
    "rht_signs",
]

INT8_PER_TOKEN_HEAD = "int8_per_token_head"
FP8_PER_TOKEN_HEAD = "fp8_per_token_head"
INT4_PER_TOKEN_HEAD = "int4_per_token_head"
PER_TOKEN_HEAD_KV_CACHE_DTYPES = (INT8_PER_TOKEN_HEAD, FP8_PER_TOKEN_HEAD, INT4_PER_TOKEN_HEAD)

SCALE_FLOOR = 1e-6
"""The smallest scale the kernels store: ``tl.maximum(..., 1e-6)``, i.e. float32(1e-6),
bits 0x358637BD."""
SCALE_BYTES = 4
"""One float32 scale per (token, head) and side, inline in the cache."""
RHT_SEED = 0x9E3779B9
"""Seed of the CPU generator that draws int4's rotation signs (``_get_rht_signs``, round 0)."""
TRITON_ATTN_MIN_HEAD_SIZE = 32
"""``TritonAttentionBackend.supports_head_size``: head_size >= 32 (triton_attn.py:379-380)."""

_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_LOW_NIBBLE = 0xF


class PerTokenHeadArgumentError(CacheWriteArgumentError):
    """Shapes, dtypes, head sizes, slots or devices that the per-token-head write does not accept
    (exit 2)."""


class NotPerTokenHeadError(PerTokenHeadArgumentError):
    """The kv_cache_dtype is not one of the three per-token-head dtypes."""

    def __init__(self, kv_cache_dtype: str) -> None:
        self.kv_cache_dtype = kv_cache_dtype
        super().__init__(
            f"kv_cache_dtype {kv_cache_dtype!r} is not a per-token-head dtype; expected one of: "
            + ", ".join(PER_TOKEN_HEAD_KV_CACHE_DTYPES)
        )


@dataclass(frozen=True)
class PerTokenHeadFormat:
    """What one per-token-head dtype stores, from vLLM 0.33.0's tables and kernels.

    ``code_min``/``code_max`` bound the stored codes (int8 [-128, 127], fp8 [-448, 448] as
    values, int4 [0, 15]); ``scale_divisor`` is what the kernel divides the range by (127, 448 =
    ``finfo(float8_e4m3fn).max``, 15). ``storage_dtype`` is the cache tensor's dtype
    (``STR_DTYPE_TO_TORCH_DTYPE``, ``vllm/utils/torch_utils.py:40-64``).
    """

    kv_cache_dtype: str
    storage_dtype: str
    values_per_byte: int
    code_min: float
    code_max: float
    scale_divisor: float
    zero_point: bool
    """int4: asymmetric, the zero point rides in the scale's 4 low mantissa bits."""
    rotated: bool
    """int4: values are stored in the random-Hadamard-rotated space."""

    @property
    def torch_storage_dtype(self) -> torch.dtype:
        dtype: torch.dtype = getattr(torch, self.storage_dtype)
        return dtype


PER_TOKEN_HEAD_FORMATS: dict[str, PerTokenHeadFormat] = {
    INT8_PER_TOKEN_HEAD: PerTokenHeadFormat(
        INT8_PER_TOKEN_HEAD, "int8", 1, -128.0, 127.0, 127.0, zero_point=False, rotated=False
    ),
    # FP8_MAX/FP8_MIN = get_fp8_min_max() = finfo(float8_e4m3fn) on CUDA. ROCm's e4m3fnuz
    # (+-224, quant_utils.py:99-107) is not modelled.
    FP8_PER_TOKEN_HEAD: PerTokenHeadFormat(
        FP8_PER_TOKEN_HEAD, "uint8", 1, -448.0, 448.0, 448.0, zero_point=False, rotated=False
    ),
    INT4_PER_TOKEN_HEAD: PerTokenHeadFormat(
        INT4_PER_TOKEN_HEAD, "uint8", 2, 0.0, 15.0, 15.0, zero_point=True, rotated=True
    ),
}


def is_per_token_head(kv_cache_dtype: str) -> bool:
    """Whether the string is one of the three per-token-head dtypes (vLLM's
    ``kv_cache_uses_per_token_head_scales``)."""
    return kv_cache_dtype in PER_TOKEN_HEAD_FORMATS


def per_token_head_format(kv_cache_dtype: str) -> PerTokenHeadFormat:
    """The format of a per-token-head dtype; NotPerTokenHeadError for any other string."""
    try:
        return PER_TOKEN_HEAD_FORMATS[kv_cache_dtype]
    except (KeyError, TypeError):
        raise NotPerTokenHeadError(str(kv_cache_dtype)) from None


# --- layout ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerTokenHeadLayout:
    """Where the bytes of one (KV head, slot) live in vLLM's per-token-head cache.

    ``TritonAttentionBackend.customize_spec`` sizes the content of one (head, slot) cell as
    ``(hs_k + hs_v) * itemsize + 2 * 4`` bytes (int4: ``hs / 2`` bytes per side), and
    ``TritonAttentionImpl._ensure_scale_caches`` reads it as ``[K codes | K scale | V codes |
    V scale]``: each half is ``data_bytes`` of codes followed by one little-endian float32. The
    per-layer cache is logically ``[num_blocks, num_kv_heads, block_size, content_bytes]``
    (``compute_layer_kv_cache_shape_bytes``); its physical order (HND or NHD) does not change a
    cell. vLLM splits the content in two equal halves, so K and V share one head size.
    """

    kv_cache_dtype: str
    num_kv_heads: int
    head_size: int
    data_bytes: int
    """Bytes of codes per (head, slot) and side: head_size (int8, fp8) or head_size / 2 (int4)."""

    @property
    def k_data_offset(self) -> int:
        return 0

    @property
    def k_scale_offset(self) -> int:
        return self.data_bytes

    @property
    def v_data_offset(self) -> int:
        return self.data_bytes + SCALE_BYTES

    @property
    def v_scale_offset(self) -> int:
        return 2 * self.data_bytes + SCALE_BYTES

    @property
    def content_bytes(self) -> int:
        """Bytes per (head, slot): ``2 * (data_bytes + 4)``."""
        return 2 * (self.data_bytes + SCALE_BYTES)

    @property
    def bytes_per_token(self) -> int:
        """Cache bytes one token takes in one attention layer (all KV heads, K and V)."""
        return self.num_kv_heads * self.content_bytes

    @property
    def triton_attn_accepts_head_size(self) -> bool:
        """Whether TRITON_ATTN, the only backend for these dtypes, serves this head size."""
        return self.head_size >= TRITON_ATTN_MIN_HEAD_SIZE

    def cache_shape(self, num_blocks: int, block_size: int) -> tuple[int, int, int, int]:
        """The logical per-layer cache shape ``[num_blocks, num_kv_heads, block_size, content]``
        (elements are bytes: every storage dtype here is one byte wide)."""
        return (num_blocks, self.num_kv_heads, block_size, self.content_bytes)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PerTokenHeadArgumentError(f"{name} must be a positive integer, got {value!r}")
    return value


def _check_head_size(fmt: PerTokenHeadFormat, head_size: int) -> None:
    if fmt.values_per_byte == 2 and head_size % 2:
        # _run_reshape_kernel asserts head_size % 2 == 0 (int4_per_token_head.py:273).
        raise PerTokenHeadArgumentError(
            f"{fmt.kv_cache_dtype} packs two values per byte: head_size must be even, "
            f"got {head_size}"
        )


def per_token_head_layout(
    kv_cache_dtype: str, num_kv_heads: int, head_size: int
) -> PerTokenHeadLayout:
    """The in-cache layout of a per-token-head dtype for a layer's KV heads and head size.

    Raises PerTokenHeadArgumentError where vLLM cannot lay the cache out: int4 with an odd head
    size, and any head size whose codes are not a whole number of float32 words
    (``_ensure_scale_caches`` asserts ``data_bytes % 4 == 0``, triton_attn.py:443-446, so vLLM
    fails at its first forward pass): int8/fp8 need head_size % 4 == 0, int4 head_size % 8 == 0.
    """
    fmt = per_token_head_format(kv_cache_dtype)
    _positive_int("num_kv_heads", num_kv_heads)
    _positive_int("head_size", head_size)
    _check_head_size(fmt, head_size)
    data_bytes = head_size // fmt.values_per_byte
    if data_bytes % SCALE_BYTES:
        multiple = SCALE_BYTES * fmt.values_per_byte
        raise PerTokenHeadArgumentError(
            f"{kv_cache_dtype} with head_size {head_size}: the {data_bytes} code bytes per head "
            f"are not a whole number of float32 words, which vLLM's in-cache scale view requires "
            f"(head_size must be a multiple of {multiple})"
        )
    return PerTokenHeadLayout(kv_cache_dtype, num_kv_heads, head_size, data_bytes)


_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


def kv_cache_bytes_per_token(
    kv_cache_dtype: str, num_kv_heads: int, head_size: int, *, model_dtype: str = "bfloat16"
) -> int:
    """Bytes of KV cache per token and attention layer under a ``--kv-cache-dtype``.

    Per-token-head dtypes: the layout's ``num_kv_heads * 2 * (data_bytes + 4)``. FP8 per tensor:
    ``2 * num_kv_heads * head_size``. Unquantized: ``2 * num_kv_heads * head_size * itemsize``
    of the dtype, ``model_dtype`` for ``auto``. Raises UnknownKVCacheDtypeError for other
    strings, PerTokenHeadArgumentError for bad sizes.
    """
    if is_per_token_head(kv_cache_dtype):
        return per_token_head_layout(kv_cache_dtype, num_kv_heads, head_size).bytes_per_token
    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    _positive_int("num_kv_heads", num_kv_heads)
    _positive_int("head_size", head_size)
    if kv.fp8 is not None:
        return 2 * num_kv_heads * head_size
    name = kv.torch_dtype or model_dtype
    if name not in _DTYPE_BYTES:
        raise UnknownKVCacheDtypeError(name)
    return 2 * num_kv_heads * head_size * _DTYPE_BYTES[name]


# --- the random Hadamard transform (int4) ----------------------------------------------------


def rht_block_size(head_size: int) -> int:
    """The rotation's block: the largest power of two dividing head_size (``single_rht`` applies
    the transform block-diagonally, ``largest_power_of_2_divisor``, so its norm is sqrt(b))."""
    _positive_int("head_size", head_size)
    return head_size & -head_size


@functools.lru_cache(maxsize=32)
def _signs(block: int) -> torch.Tensor:
    # _get_rht_signs(d, 0, device): Bernoulli(0.5) draws from a CPU generator seeded with
    # 0x9E3779B9 over a float32 vector of length d (the default dtype at write time), as +-1.0.
    generator = torch.Generator(device="cpu")
    generator.manual_seed(RHT_SEED)
    probabilities = torch.full((block,), 0.5, dtype=torch.float32)
    return torch.bernoulli(probabilities, generator=generator) * 2.0 - 1.0


def rht_signs(block: int) -> torch.Tensor:
    """The fixed +-1 float32 signs int4 multiplies each block by before the Hadamard transform
    (a fresh CPU tensor)."""
    _positive_int("block", block)
    return _signs(block).clone()


def _walsh_hadamard(x: torch.Tensor) -> torch.Tensor:
    """The unnormalized Walsh-Hadamard transform of the last dim (a power of two), in float32,
    butterfly stages of span 1, 2, 4, ... as vLLM's torch path computes it
    (``fast_hadamard_transform`` tier 3), so every sum rounds the same way."""
    d = x.shape[-1]
    lead = x.shape[:-1]
    # Two buffers written in turn: each stage adds and subtracts straight into the next one
    # (1.7x faster on the CPU than stacking fresh sums; the same additions).
    buffers = tuple(torch.empty(x.shape, dtype=x.dtype, device=x.device) for _ in range(2))
    span = 1
    while span < d:
        out = buffers[0]
        pairs = x.reshape(*lead, d // (2 * span), 2, span)
        into = out.view(*lead, d // (2 * span), 2, span)
        low, high = pairs[..., 0, :], pairs[..., 1, :]
        torch.add(low, high, out=into[..., 0, :])
        torch.sub(low, high, out=into[..., 1, :])
        x, buffers = out, (buffers[1], out)
        span *= 2
    return x


def random_hadamard_transform(x: torch.Tensor, *, inverse: bool = False) -> torch.Tensor:
    """vLLM's ``single_rht`` on the last dim, in float32: ``H (D x)`` per block of
    ``rht_block_size(d)`` elements (``inverse``: ``D (H x)``), unnormalized, so applying both
    multiplies by the block size. Returns float32."""
    d = x.shape[-1]
    block = rht_block_size(d)
    xf = x.to(torch.float32).reshape(*x.shape[:-1], d // block, block)
    signs = _signs(block).to(xf.device)
    out = _walsh_hadamard(xf) * signs if inverse else _walsh_hadamard(xf * signs)
    return out.reshape(*x.shape)


# --- quantize / dequantize -------------------------------------------------------------------


@dataclass(frozen=True)
class PerTokenHeadQuantized:
    """One side (K or V) as the cache stores it, per (token, head).

    ``codes`` is ``[..., data_bytes]`` in the storage dtype: int8 codes, e4m3fn bits (uint8), or
    two int4 codes per byte (even element in the low nibble). ``scales`` is ``[...]`` float32,
    exactly the stored value (int4: the zero point in its 4 low bits).
    """

    format: PerTokenHeadFormat
    head_size: int
    codes: torch.Tensor
    scales: torch.Tensor

    @property
    def zero_points(self) -> torch.Tensor | None:
        """int4's zero points (uint8, 0..15) from the scale bits; None for int8/fp8."""
        if not self.format.zero_point:
            return None
        return (self.scales.view(torch.int32) & _LOW_NIBBLE).to(torch.uint8)

    @property
    def read_scales(self) -> torch.Tensor:
        """The float32 scale attention multiplies by: the stored scale, with int4's zero-point
        bits cleared (``bits & -16``, ``_attn_packed``)."""
        if not self.format.zero_point:
            return self.scales
        return (self.scales.view(torch.int32) & ~_LOW_NIBBLE).view(torch.float32)

    @property
    def unpacked_codes(self) -> torch.Tensor:
        """``[..., head_size]`` codes as float32 values (fp8 decoded, int4 unpacked)."""
        if self.format.kv_cache_dtype == FP8_PER_TOKEN_HEAD:
            return self.codes.view(torch.float8_e4m3fn).to(torch.float32)
        if self.format.values_per_byte == 1:
            return self.codes.to(torch.float32)
        low = self.codes & _LOW_NIBBLE
        high = self.codes >> 4
        return torch.stack((low, high), dim=-1).reshape(*self.codes.shape[:-1], -1).float()


def _full(like: torch.Tensor, value: float) -> torch.Tensor:
    # A same-shape operand rather than a Python scalar: CUDA divides by a CPU scalar as a
    # multiplication by its reciprocal, which is not the kernel's division.
    return torch.full_like(like, value, dtype=torch.float32)


def _round_half_away(y: torch.Tensor) -> torch.Tensor:
    """``where(y >= 0, y + 0.5, y - 0.5)`` truncated towards zero, float32 (the kernels' rounding;
    NaN stays NaN for the caller's clamp)."""
    # The same sums and their truncation, as floor(|y| + 0.5) with y's sign (y - 0.5 is
    # -(|y| + 0.5) exactly); y + 0.0 gives -0.0 the + of the y >= 0 branch. The CPU's trunc and
    # where are not vectorized (100 and 55 us per 100k values, against 6 for floor).
    # In place on its own temporaries: each fresh 100k-value tensor costs its page faults.
    sign = y + 0.0
    return y.abs().add_(0.5).floor_().copysign_(sign)


def _replace_nan(values: torch.Tensor, fill: float) -> torch.Tensor:
    """``values`` with NaN replaced by ``fill`` and every other value kept (infinities too)."""
    return values.nan_to_num(nan=fill, posinf=math.inf, neginf=-math.inf)


def _replace_nan_(values: torch.Tensor, fill: float) -> torch.Tensor:
    """``_replace_nan`` in place, for a tensor the caller owns."""
    return values.nan_to_num_(nan=fill, posinf=math.inf, neginf=-math.inf)


def _stored_scale(range_: torch.Tensor, divisor: float) -> torch.Tensor:
    # tl.maximum(range / divisor, 1e-6): maxnum, so a NaN quotient gives the floor.
    return torch.fmax(range_ / _full(range_, divisor), _full(range_, SCALE_FLOOR))


def _symmetric_levels(
    x: torch.Tensor, fmt: PerTokenHeadFormat
) -> tuple[torch.Tensor, torch.Tensor]:
    """int8 / fp8: (the values the store converts, float32; the stored scale per vector)."""
    absmax = _replace_nan_(x.abs(), float("-inf")).amax(dim=-1)
    scale = _stored_scale(absmax, fmt.scale_divisor)
    inv = torch.ones_like(scale) / scale
    y = x * inv.unsqueeze(-1)
    if fmt.kv_cache_dtype == INT8_PER_TOKEN_HEAD:
        q = _round_half_away(y)
        # tl.clamp(q, -128, 127) lowers to maxnum/minnum: NaN becomes the lower bound.
        return _replace_nan_(q, fmt.code_min).clamp_(fmt.code_min, fmt.code_max), scale
    # tl.clamp(y, -448, 448) is min.xorsign.abs(y, 448) on sm90: NaN (the positive canonical
    # NaN of the multiply) becomes +448; -0.0 keeps its sign. The store rounds to nearest even.
    return _replace_nan_(y, fmt.code_max).clamp_(fmt.code_min, fmt.code_max), scale


def _quantize_symmetric(x: torch.Tensor, fmt: PerTokenHeadFormat) -> PerTokenHeadQuantized:
    q, scale = _symmetric_levels(x, fmt)
    if fmt.kv_cache_dtype == INT8_PER_TOKEN_HEAD:
        codes = q.to(torch.int8)
    else:
        codes = q.to(torch.float8_e4m3fn).view(torch.uint8)
    return PerTokenHeadQuantized(fmt, x.shape[-1], codes, scale)


def _int4_levels(
    x: torch.Tensor, fmt: PerTokenHeadFormat
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """int4 (``x`` already rotated): (the codes as float32 integers 0..15, the zero points
    likewise, the scale per vector before the zero point goes into its low bits)."""
    low = _replace_nan(x, float("inf")).amin(dim=-1)
    high = _replace_nan(x, float("-inf")).amax(dim=-1)
    scale = _stored_scale(high - low, fmt.scale_divisor)
    # zp: -min / s (a division, not the reciprocal), rounded half away; the int32 conversion
    # saturates and turns NaN into 0, then clamp to [0, 15].
    zp = _round_half_away(-low / scale)
    zp = torch.clamp(_replace_nan(zp, 0.0), 0.0, 15.0)
    inv = torch.ones_like(scale) / scale
    y = (x * inv.unsqueeze(-1)).add_(zp.unsqueeze(-1))
    q = _round_half_away(y)
    return _replace_nan_(q, 0.0).clamp_(0.0, 15.0), zp, scale


def _quantize_int4(x: torch.Tensor, fmt: PerTokenHeadFormat) -> PerTokenHeadQuantized:
    q, zp, scale = _int4_levels(x, fmt)
    q8 = q.to(torch.uint8)
    codes = q8[..., 0::2] | (q8[..., 1::2] << 4)
    bits = (scale.view(torch.int32) & ~_LOW_NIBBLE) | zp.to(torch.int32)
    return PerTokenHeadQuantized(fmt, x.shape[-1], codes, bits.view(torch.float32))


def _check_values(x: torch.Tensor, name: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise PerTokenHeadArgumentError(f"{name} must be a tensor, got {type(x).__name__}")
    if x.dtype not in _INPUT_DTYPES:
        raise PerTokenHeadArgumentError(
            f"{name} must be bfloat16, float16 or float32, got {x.dtype}"
        )
    if x.dim() < 1 or x.shape[-1] < 1:
        raise PerTokenHeadArgumentError(
            f"{name} must be [..., head_size] with head_size >= 1, got {tuple(x.shape)}"
        )


def quantize_per_token_head(
    x: torch.Tensor, kv_cache_dtype: str, *, rotate: bool = True
) -> PerTokenHeadQuantized:
    """What the cache write stores for ``x`` (``[..., head_size]``, bf16/fp16/fp32): one scale per
    vector of the last dim, and its codes, bit for bit as vLLM's kernel under Triton's
    interpreter.

    int4 rotates first (``random_hadamard_transform``, then rounded back to ``x.dtype`` as
    ``reshape_and_cache_int4`` does); ``rotate=False`` takes ``x`` as already rotated (to
    compare the quantizer alone with a GPU whose rotation differs). Raises
    PerTokenHeadArgumentError / NotPerTokenHeadError.
    """
    fmt = per_token_head_format(kv_cache_dtype)
    _check_values(x, "x")
    _check_head_size(fmt, x.shape[-1])
    if fmt.rotated:
        if rotate:
            x = random_hadamard_transform(x).to(x.dtype)
        return _quantize_int4(x.to(torch.float32), fmt)
    return _quantize_symmetric(x.to(torch.float32), fmt)


Domain = Literal["original", "rotated"]


def dequantize_per_token_head(
    quantized: PerTokenHeadQuantized, *, domain: Domain = "original"
) -> torch.Tensor:
    """The float32 values attention reads, ``[..., head_size]``.

    int8/fp8: ``code * scale``. int4: ``(code - zp) * s'`` (``s'`` = scale bits with the zero
    point cleared), which is what attention multiplies the rotated query by; ``domain=
    "original"`` (default) maps it back through the inverse rotation divided by the block size,
    as attention does to its output (``unified_attention_int4``); ``"rotated"`` returns it as
    stored. Attention applies the scale to the dot product and the softmax weights rather than to
    each code, so its own float rounding is not part of this.
    """
    if domain not in ("original", "rotated"):
        raise PerTokenHeadArgumentError(f"domain must be 'original' or 'rotated', got {domain!r}")
    values = quantized.unpacked_codes
    scale = quantized.read_scales.unsqueeze(-1)
    zero_points = quantized.zero_points
    if zero_points is None:
        return values * scale
    rotated = (values - zero_points.to(torch.float32).unsqueeze(-1)) * scale
    if domain == "rotated":
        return rotated
    block = rht_block_size(quantized.head_size)
    return random_hadamard_transform(rotated, inverse=True) / _full(rotated, float(block))


def per_token_head_read_back(x: torch.Tensor, kv_cache_dtype: str) -> torch.Tensor:
    """``dequantize_per_token_head(quantize_per_token_head(x, kv_cache_dtype))``, float32, from
    the values the store converts, without codes: int8's code is its clamped integer, fp8's the
    nearest e4m3fn value (``fp8_round``), int4's the integer before packing (``+ 0.0``: a -0.0
    integer stores as code 0, which reads +0.0). The per-candidate read of ``plan`` and
    ``verify --data``; tested bit for bit against the codes' read."""
    fmt = per_token_head_format(kv_cache_dtype)
    _check_values(x, "x")
    _check_head_size(fmt, x.shape[-1])
    if fmt.rotated:
        rotated = random_hadamard_transform(x).to(x.dtype).to(torch.float32)
        q, zp, scale = _int4_levels(rotated, fmt)
        read_scale = (scale.view(torch.int32) & ~_LOW_NIBBLE).view(torch.float32)
        values = q.add_(0.0).sub_(zp.add_(0.0).unsqueeze(-1)).mul_(read_scale.unsqueeze(-1))
        # The block is a power of two: dividing by it is exact, however a device divides.
        block = rht_block_size(x.shape[-1])
        return random_hadamard_transform(values, inverse=True).div_(float(block))
    q, scale = _symmetric_levels(x.to(torch.float32), fmt)
    if fmt.kv_cache_dtype == INT8_PER_TOKEN_HEAD:
        q.add_(0.0)
    else:
        q = fp8_round(q, E4M3FN)
    return q * scale.unsqueeze(-1)


# --- the paged cache -------------------------------------------------------------------------


@dataclass(frozen=True)
class PerTokenHeadCacheViews:
    """Views into a per-token-head cache ``[num_blocks, num_kv_heads, block_size, content]``,
    as ``_ensure_scale_caches`` and ``_pth_key_value_caches`` carve them: codes
    ``[num_blocks, num_kv_heads, block_size, data_bytes]`` and scales
    ``[num_blocks, num_kv_heads, block_size]`` float32 (copies: the scale bytes are not aligned
    for a float32 view of an arbitrary tensor)."""

    layout: PerTokenHeadLayout
    k_codes: torch.Tensor
    k_scales: torch.Tensor
    v_codes: torch.Tensor
    v_scales: torch.Tensor


def _check_cache(
    kv_cache: torch.Tensor, kv_cache_dtype: str, num_kv_heads: int, head_size: int
) -> PerTokenHeadLayout:
    layout = per_token_head_layout(kv_cache_dtype, num_kv_heads, head_size)
    fmt = per_token_head_format(kv_cache_dtype)
    if not isinstance(kv_cache, torch.Tensor) or kv_cache.dim() != 4:
        shape = tuple(kv_cache.shape) if isinstance(kv_cache, torch.Tensor) else kv_cache
        raise PerTokenHeadArgumentError(
            f"kv_cache must be [num_blocks, num_kv_heads, block_size, content], got {shape}"
        )
    if kv_cache.dtype != fmt.torch_storage_dtype:
        raise PerTokenHeadArgumentError(
            f"{kv_cache_dtype} caches are {fmt.storage_dtype} tensors, got {kv_cache.dtype}"
        )
    expected = (num_kv_heads, layout.content_bytes)
    if (kv_cache.shape[1], kv_cache.shape[3]) != expected:
        raise PerTokenHeadArgumentError(
            f"kv_cache holds {kv_cache.shape[1]} heads x {kv_cache.shape[3]} bytes per slot; "
            f"{kv_cache_dtype} with {num_kv_heads} heads of {head_size} needs "
            f"{num_kv_heads} x {layout.content_bytes}"
        )
    if kv_cache.stride(3) != 1:
        raise PerTokenHeadArgumentError(
            f"kv_cache's content dim must be contiguous (stride 1), got strides {kv_cache.stride()}"
        )
    return layout


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.uint8) if t.dtype != torch.uint8 else t


def per_token_head_cache_views(
    kv_cache: torch.Tensor, kv_cache_dtype: str, head_size: int
) -> PerTokenHeadCacheViews:
    """Split a per-token-head cache into its code views and its (copied) scales."""
    layout = _check_cache(kv_cache, kv_cache_dtype, kv_cache.shape[1], head_size)
    raw = _bytes(kv_cache)

    def scales(offset: int) -> torch.Tensor:
        cell = raw[..., offset : offset + SCALE_BYTES].contiguous()
        return cell.view(torch.float32).squeeze(-1)

    db = layout.data_bytes
    return PerTokenHeadCacheViews(
        layout=layout,
        k_codes=kv_cache[..., layout.k_data_offset : layout.k_data_offset + db],
        k_scales=scales(layout.k_scale_offset),
        v_codes=kv_cache[..., layout.v_data_offset : layout.v_data_offset + db],
        v_scales=scales(layout.v_scale_offset),
    )


def init_per_token_head_cache(kv_cache: torch.Tensor, kv_cache_dtype: str, head_size: int) -> None:
    """Set every scale cell of a per-token-head cache to 1.0, in place, as
    ``_ensure_scale_caches`` does when a layer first touches its cache (codes are left as
    allocated)."""
    layout = _check_cache(kv_cache, kv_cache_dtype, kv_cache.shape[1], head_size)
    raw = _bytes(kv_cache)
    one = torch.ones(1, dtype=torch.float32, device=kv_cache.device).view(torch.uint8)
    for offset in (layout.k_scale_offset, layout.v_scale_offset):
        raw[..., offset : offset + SCALE_BYTES] = one


def _live_slots(
    slot_mapping: torch.Tensor, num_slots: int, device: torch.device, *, unique: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """(rows, slots) of the entries that address a cell: negative slots are padding."""
    if (
        not isinstance(slot_mapping, torch.Tensor)
        or slot_mapping.dim() != 1
        or slot_mapping.dtype != torch.int64
    ):
        raise PerTokenHeadArgumentError("slot_mapping must be a 1-D int64 tensor")
    slots = slot_mapping.to(device)
    rows = torch.nonzero(slots >= 0).flatten()
    live = slots[rows]
    if live.numel():
        if int(live.max()) >= num_slots:
            raise PerTokenHeadArgumentError(
                f"slot {int(live.max())} is past the cache's {num_slots} slots"
            )
        if unique and torch.unique(live).numel() != live.numel():
            # Two programs would race for one cell; vLLM never maps two tokens to one slot.
            raise PerTokenHeadArgumentError("slot_mapping maps two tokens to the same slot")
    return rows, live


def reference_reshape_and_cache_per_token_head(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    *,
    rotate: bool = True,
) -> None:
    """Write key/value into a per-token-head cache in place, as
    ``TritonAttentionImpl.do_kv_cache_update`` does for these dtypes (``rotate=False``: int4
    inputs that are already rotated, see :func:`quantize_per_token_head`).

    key/value: ``[num_tokens, num_kv_heads, head_size]`` bf16/fp16/fp32, same shape and dtype.
    kv_cache: the logical per-layer cache ``[num_blocks, num_kv_heads, block_size, content]``
    (int8 for ``int8_per_token_head``, uint8 otherwise; any strides with a contiguous content
    dim, e.g. an NHD buffer permuted). slot_mapping: int64 with at least num_tokens entries (the
    launcher's grid is ``key.shape[0]``; further entries are not read); token ``t`` goes to block
    ``slot // block_size``, offset ``slot % block_size``; negative slots are skipped. Bytes
    outside the written cells are left untouched.
    """
    for name, t in (("key", key), ("value", value)):
        _check_values(t, name)
        if t.dim() != 3:
            raise PerTokenHeadArgumentError(
                f"{name} must be [num_tokens, num_kv_heads, head_size], got {tuple(t.shape)}"
            )
    if key.shape != value.shape or key.dtype != value.dtype:
        raise PerTokenHeadArgumentError(
            "key and value must have one shape and dtype (vLLM's layout splits each cell in two "
            f"equal halves): {tuple(key.shape)} {key.dtype} vs {tuple(value.shape)} {value.dtype}"
        )
    num_tokens, num_kv_heads, head_size = key.shape
    layout = _check_cache(kv_cache, kv_cache_dtype, num_kv_heads, head_size)
    devices = {key.device, value.device, kv_cache.device}
    if len(devices) != 1:
        raise PerTokenHeadArgumentError(
            f"key, value and kv_cache must be on one device, got {sorted(map(str, devices))}"
        )
    if isinstance(slot_mapping, torch.Tensor) and slot_mapping.dim() == 1:
        if slot_mapping.shape[0] < num_tokens:
            # The launcher's grid is key.shape[0]: every token reads its slot_mapping entry.
            raise PerTokenHeadArgumentError(
                f"slot_mapping has {slot_mapping.shape[0]} entries for {num_tokens} tokens"
            )
        slot_mapping = slot_mapping[:num_tokens]
    num_blocks, _, block_size, _ = kv_cache.shape
    rows, live = _live_slots(slot_mapping, num_blocks * block_size, kv_cache.device, unique=True)
    if rows.numel() == 0:
        return
    blocks = torch.div(live, block_size, rounding_mode="floor")
    offsets = live - blocks * block_size
    raw = _bytes(kv_cache)
    db = layout.data_bytes
    for src, data_at, scale_at in (
        (key, layout.k_data_offset, layout.k_scale_offset),
        (value, layout.v_data_offset, layout.v_scale_offset),
    ):
        quantized = quantize_per_token_head(
            src.index_select(0, rows), kv_cache_dtype, rotate=rotate
        )
        # Advanced indices on dims 0 and 2 around a slice: the target is [rows, heads, bytes].
        raw[blocks, :, offsets, data_at : data_at + db] = _bytes(quantized.codes)
        scale_bytes = quantized.scales.contiguous().view(torch.uint8)
        raw[blocks, :, offsets, scale_at : scale_at + SCALE_BYTES] = scale_bytes.reshape(
            rows.numel(), num_kv_heads, SCALE_BYTES
        )


def read_per_token_head_cache(
    kv_cache: torch.Tensor, slot_mapping: torch.Tensor, kv_cache_dtype: str, head_size: int
) -> tuple[PerTokenHeadQuantized, PerTokenHeadQuantized]:
    """K and V of the given slots, ``[n, num_kv_heads, ...]``, as stored; a negative slot reads
    as nothing (its row is left out)."""
    views = per_token_head_cache_views(kv_cache, kv_cache_dtype, head_size)
    num_blocks, _, block_size, _ = kv_cache.shape
    _, live = _live_slots(slot_mapping, num_blocks * block_size, kv_cache.device, unique=False)
    blocks = torch.div(live, block_size, rounding_mode="floor")
    offsets = live - blocks * block_size
    fmt = per_token_head_format(kv_cache_dtype)

    def side(codes: torch.Tensor, scales: torch.Tensor) -> PerTokenHeadQuantized:
        return PerTokenHeadQuantized(
            fmt, head_size, codes[blocks, :, offsets], scales[blocks, :, offsets]
        )

    return side(views.k_codes, views.k_scales), side(views.v_codes, views.v_scales)
