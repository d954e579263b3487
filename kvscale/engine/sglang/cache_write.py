"""SGLang 0.5.23's FP8 KV-cache write, reproduced on torch tensors with CUDA's semantics.

SGLang quantizes K and V for an FP8 pool in ``MHATokenToKVPool.set_kv_buffer``
(``srt/mem_cache/memory_pool.py:2891``; line numbers of the 0.5.23 wheel), the path of every MHA
backend that hands it scales (FlashInfer, Triton, FA3; TRTLLM-MHA for pools other than e4m3fn).
When the incoming tensor's dtype differs from the pool dtype (2926), it

1. divides K (V) **in place** by ``layer.k_scale`` (``layer.v_scale``) if one is given
   (2927-2930), so the quotient is held in the model dtype, not in float32;
2. casts the quotient with torch's eager ``.to(pool dtype)`` (2931-2932);
3. reinterprets the fp8 tensor as ``uint8``, the store dtype of every fp8 pool (2934-2936,
   2029-2033), and index-copies it into the layer's buffer (``_store_kv_layer``).

Each step is reproduced explicitly here, so the bytes do not depend on the torch build or device
at hand:

* Division. ``layer.k_scale`` is a 0-d float32 ``Parameter`` on the GPU
  (``srt/layers/quantization/kv_cache.py:39-44``), not a CPU scalar, so CUDA's ``div_`` casts it to
  the model dtype first: the effective divisor is ``model_dtype(s)`` (bf16(0.3) = 0.30078125), the
  quotient ``float(x) / float(model_dtype(s))`` is an IEEE float32 division rounded to the model
  dtype. On the CPU the same call divides by the float32 ``s`` (a 0-d CPU tensor *is* a CPU
  scalar), hence the explicit computation. A Python float scale (the ``--quantization-param-path``
  JSON path) is a CPU scalar on CUDA too: ``float(x) * float32(1 / float32(s))``. Scales are
  per tensor only: SGLang refuses per-head scales at load (``kv_cache.py:76-77``).
* NaN after the division: CUDA's float -> bf16/fp16 conversion (``cvt.rn.bf16.f32`` /
  ``cvt.rn.f16.f32``, used by c10 on the device) writes one positive canonical NaN, torch's CPU
  conversion writes 0xFFFF (negative). Reproduced: a positive canonical NaN (0x7FFF, or 0x7FFFFFFF
  for float32), so a NaN input becomes the positive NaN byte of the pool format.
* Cast. torch's c10 conversion rounds the model-dtype value to nearest even; what it does with
  values beyond the format depends on the torch version (:class:`TorchFP8Cast`). SGLang 0.5.23
  pins ``torch==2.14.1`` (wheel METADATA), the default here.

Pool formats (``srt/mem_cache/kv_cache_dtype.py:60-71``): ``fp8_e4m3`` -> ``float8_e4m3fn`` and
``fp8_e5m2`` -> ``float8_e5m2`` on CUDA; on ROCm both use the platform's fp8 dtype
(``float8_e4m3fnuz`` on gfx942).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from kvscale.errors import UsageError
from kvscale.kernel.formats import E4M3FN, E4M3FNUZ, E5M2, FP8_FORMATS, FP8Format
from kvscale.kernel.reference import CacheWriteArgumentError

__all__ = [
    "PINNED_TORCH",
    "SGLANG_VERSION",
    "TORCH_2_11",
    "TORCH_2_14_1",
    "SGLangCacheWrite",
    "TorchFP8Cast",
    "sglang_cache_write",
    "sglang_divide",
    "sglang_pool_format",
    "torch_cast_for",
    "torch_fp8_cast_bits",
]

SGLANG_VERSION = "0.5.23"
PINNED_TORCH = "2.14.1"
"""The torch SGLang 0.5.23 pins (``Requires-Dist: torch==2.14.1`` in the wheel's METADATA)."""

_MODEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
# Canonical NaN of an NVIDIA GPU's float arithmetic and float -> bf16/fp16 conversion.
_CANONICAL_NAN = {torch.bfloat16: 0x7FFF, torch.float16: 0x7FFF, torch.float32: 0x7FFFFFFF}
_INT_VIEW = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}


@dataclass(frozen=True)
class TorchFP8Cast:
    """What one torch version's eager ``.to(float8_*)`` does with values it cannot represent.

    In-range values round to nearest even in every version; only the edges differ:

    * ``e4m3fn_saturates``: False up to torch 2.11, whose c10 conversion
      (``fp8e4m3fn_from_fp32_value``) turns everything that rounds past 448 (``|x| > 464``) and
      +-inf into NaN (0x7F, sign bit kept). True from torch 2.12 on (PyTorch PR #178817, commit
      9deaf8dfd758408f41c815825beb14de394a20b4, merged 2026-04-17): finite overflow and +-inf
      saturate to +-448 (0x7E/0xFE). Checked in torch 2.13.0's
      ``torch/headeronly/util/Float8_e4m3fn.h:206-214, 234-237``.
    * ``nan_sign_kept``: c10's software conversion keeps a NaN's sign bit (-NaN -> 0xFF); a build
      that uses NVIDIA's hardware conversion writes 0x7F whatever the sign. Only reachable when no
      scale divides first (a division already yields the positive canonical NaN).

    Unchanged in every version: ``float8_e5m2`` rounds to inf from 61440 up (``|x| >= 61440``,
    ``Float8_e5m2.h:90, 117-119``), NaN -> 0x7F; ``float8_e4m3fnuz`` turns everything that rounds
    past 240 (``|x| >= 248``), +-inf and NaN into its single NaN 0x80 and has no negative zero
    (``Float8_e4m3fnuz.h:79, 107-110, 117-120``).
    """

    torch_version: str
    e4m3fn_saturates: bool
    nan_sign_kept: bool = True


TORCH_2_11 = TorchFP8Cast("2.11", e4m3fn_saturates=False)
TORCH_2_14_1 = TorchFP8Cast(PINNED_TORCH, e4m3fn_saturates=True)

_VERSION = re.compile(r"^\s*(\d+)\.(\d+)")


def torch_cast_for(version: str) -> TorchFP8Cast:
    """The cast semantics of a torch version string (``torch.__version__`` works: ``2.11.0+cu130``).

    Saturating e4m3fn from 2.12 on (PR #178817 is in the 2.12 nightlies: torchao PR #4364 gates its
    saturation test on ``2.12.0.dev0``). Raises UsageError for a string without ``major.minor``.
    """
    match = _VERSION.match(version)
    if match is None:
        raise UsageError(f"cannot read a torch version from {version!r}", hint="e.g. 2.14.1")
    major, minor = int(match[1]), int(match[2])
    return TorchFP8Cast(version.strip(), e4m3fn_saturates=(major, minor) >= (2, 12))


def sglang_pool_format(kv_cache_dtype: str, *, rocm_fnuz: bool = False) -> FP8Format:
    """The pool's fp8 format for SGLang's ``--kv-cache-dtype`` (``kv_cache_dtype.py:60-71``);
    ``rocm_fnuz``: a ROCm platform whose fp8 dtype is e4m3fnuz (gfx942), used for both names."""
    if kv_cache_dtype not in ("fp8_e4m3", "fp8_e5m2"):
        raise UsageError(
            f"SGLang's FP8 pool is fp8_e4m3 or fp8_e5m2, got kv-cache-dtype {kv_cache_dtype!r}"
        )
    if rocm_fnuz:
        return E4M3FNUZ
    return E4M3FN if kv_cache_dtype == "fp8_e4m3" else E5M2


def _format(pool: FP8Format | str) -> FP8Format:
    if isinstance(pool, FP8Format):
        return pool
    try:
        return FP8_FORMATS[pool]
    except KeyError:
        known = ", ".join(FP8_FORMATS)
        raise CacheWriteArgumentError(f"unknown pool format {pool!r}; expected {known}") from None


def _check_input(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or x.dtype not in _MODEL_DTYPES:
        got = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise CacheWriteArgumentError(
            f"K/V must be a bfloat16, float16 or float32 tensor, got {got}"
        )


def _check_scale(scale: torch.Tensor) -> torch.Tensor:
    if scale.dtype != torch.float32:
        raise CacheWriteArgumentError(
            f"SGLang's k/v scale is a float32 parameter (kv_cache.py:39-44), got {scale.dtype}"
        )
    if scale.numel() != 1:
        # SGLang's own refusal (kv_cache.py:76-77), raised at load for a per-head checkpoint.
        raise CacheWriteArgumentError(
            "Only support per-tensor scaling factor for fp8 KV cache "
            f"(SGLang's refusal; got {scale.numel()} scale values)"
        )
    return scale.reshape(())


def sglang_divide(x: torch.Tensor, scale: torch.Tensor | float | None) -> torch.Tensor:
    """What SGLang's in-place ``x.div_(scale)`` leaves in ``x`` on a CUDA GPU, on any device.

    ``scale``: a 1-element float32 tensor stands for ``layer.k_scale`` (a device tensor: divisor
    ``model_dtype(s)``, IEEE division); a Python float for a CPU scalar (``x * float32(1/s)``);
    None: no division (a copy). ``x`` is not modified; the result has its dtype and device.
    """
    _check_input(x)
    if scale is None:
        return x.clone()
    xf = x.to(torch.float32)
    if isinstance(scale, torch.Tensor):
        s = _check_scale(scale).to(device=x.device)
        # CUDA's div_ loads the 0-d float32 operand as the common (model) dtype, so the divisor
        # is rounded to bf16/fp16 first; for a float32 model this is s itself.
        divisor = s.to(x.dtype).to(torch.float32)
        y = xf / divisor
    else:
        # aten/src/ATen/native/cuda/BinaryDivTrueKernel.cu: a CPU-scalar divisor becomes a
        # multiplication by the float32 reciprocal of float32(s).
        s32 = torch.tensor(float(scale), dtype=torch.float32)
        inv = (torch.tensor(1.0, dtype=torch.float32) / s32).to(x.device)
        y = xf * inv
    out = y.to(x.dtype)
    nan = torch.isnan(out)
    if bool(nan.any()):
        out.view(_INT_VIEW[x.dtype])[nan] = _CANONICAL_NAN[x.dtype]
    return out


def _positive_grid(fmt: FP8Format, device: torch.device) -> torch.Tensor:
    """The value (float64) of every non-negative finite code 0 .. max_byte, in code order, which
    is ascending: a value's code is its index."""
    m = fmt.mantissa_bits
    codes = torch.arange(fmt.max_byte + 1, dtype=torch.int64, device=device)
    exp_field = codes >> m
    mant = (codes & ((1 << m) - 1)).to(torch.float64)
    emin = 1 - fmt.exponent_bias
    subnormal = mant * 2.0 ** (emin - m)
    normal = (1.0 + mant / (1 << m)) * torch.exp2((exp_field - fmt.exponent_bias).to(torch.float64))
    return torch.where(exp_field == 0, subnormal, normal)


@dataclass(frozen=True)
class _Cast:
    bits: torch.Tensor
    nan: torch.Tensor
    inf: torch.Tensor
    clamped: torch.Tensor


def _cast(v: torch.Tensor, fmt: FP8Format, cast: TorchFP8Cast) -> _Cast:
    if v.dtype not in _MODEL_DTYPES:
        raise CacheWriteArgumentError(f"cannot cast {v.dtype} (bf16, fp16 or fp32 only)")
    # c10 converts through float32; bf16/fp16/fp32 widen to float64 exactly.
    a64 = v.to(torch.float64)
    neg = torch.signbit(a64)
    is_nan = torch.isnan(a64)
    a = a64.abs()
    pos = torch.isfinite(a) & (a > 0)
    safe = torch.where(pos, a, torch.ones_like(a))
    # Round to nearest even on the format's grid: the spacing at |v| is 2^(e - mantissa_bits),
    # e = floor(log2 |v|) but not below the smallest normal exponent (subnormals share its
    # spacing). |v| / spacing is exact in float64 and torch.round rounds half to even.
    _, frexp_exp = torch.frexp(safe)
    e = torch.clamp(frexp_exp.to(torch.int64) - 1, min=1 - fmt.exponent_bias)
    spacing = torch.exp2((e - fmt.mantissa_bits).to(torch.float64))
    q = torch.where(pos, torch.round(safe / spacing) * spacing, a)
    over = q > fmt.max_finite  # rounds past the finite max, or +-inf (NaN compares False)
    grid = _positive_grid(fmt, v.device)
    code = torch.searchsorted(grid, torch.where(over | is_nan, torch.zeros_like(q), q))
    bits = code.to(torch.uint8)
    no = torch.zeros_like(is_nan)
    if fmt.name == "e4m3fnuz":
        # One NaN code (0x80) for overflow, inf and NaN; zero is unsigned.
        special = over | is_nan
        bits = torch.where(special, torch.full_like(bits, 0x80), bits)
        signed = neg & ~special & (q != 0)
        return _Cast(bits | (signed.to(torch.uint8) << 7), special, no, no)
    if fmt.name == "e4m3fn":
        over_byte = 0x7E if cast.e4m3fn_saturates else 0x7F
        bits = torch.where(over, torch.full_like(bits, over_byte), bits)
        nan_out = is_nan | (over & (not cast.e4m3fn_saturates))
        inf_out = no
        clamped = over if cast.e4m3fn_saturates else no
    elif fmt.name == "e5m2":
        bits = torch.where(over, torch.full_like(bits, 0x7C), bits)
        nan_out = is_nan
        inf_out = over
        clamped = no
    else:  # pragma: no cover - FP8_FORMATS holds the three above
        raise CacheWriteArgumentError(f"no torch cast is defined for {fmt.name}")
    bits = torch.where(is_nan, torch.full_like(bits, 0x7F), bits)
    signed = neg & (~is_nan | cast.nan_sign_kept)
    return _Cast(bits | (signed.to(torch.uint8) << 7), nan_out, inf_out, clamped)


def torch_fp8_cast_bits(
    v: torch.Tensor, pool: FP8Format | str, cast: TorchFP8Cast = TORCH_2_14_1
) -> torch.Tensor:
    """``v.to(float8_*).view(torch.uint8)`` as the chosen torch version computes it on CUDA (c10's
    conversion), on any device and whatever torch is installed. ``v``: bf16, fp16 or fp32."""
    return _cast(v, _format(pool), cast).bits


@dataclass(frozen=True, eq=False)
class SGLangCacheWrite:
    """One K or V write into SGLang's FP8 pool."""

    bits: torch.Tensor
    """uint8, the input's shape and device: the bytes that land in the pool."""
    divided: torch.Tensor
    """The model-dtype quotient SGLang leaves in the caller's tensor (its ``div_`` is in place)."""
    pool: FP8Format
    torch_cast: TorchFP8Cast
    became_nan: int
    """Values that are NaN in the pool although the input was not (overflow under torch <= 2.11's
    e4m3fn cast; overflow, inf and NaN alike in e4m3fnuz)."""
    became_inf: int
    """Finite inputs stored as +-inf (e5m2 overflow, ``|x / s| >= 61440``)."""
    saturated: int
    """Values clamped to +-max (e4m3fn from torch 2.12 on: rounded ``|x / s|`` past 448, inf)."""


def sglang_cache_write(
    x: torch.Tensor,
    scale: torch.Tensor | float | None,
    pool: FP8Format | str,
    *,
    torch_cast: TorchFP8Cast = TORCH_2_14_1,
) -> SGLangCacheWrite:
    """The bytes SGLang 0.5.23 writes for ``x`` (K or V, ``[tokens, kv_heads, head_size]`` in the
    model dtype) into an FP8 pool, as on a CUDA GPU, computed on ``x``'s device.

    ``scale``: ``layer.k_scale`` as a 1-element float32 tensor (what the FlashInfer, Triton and
    FA3 backends pass), a Python float (a CPU scalar), or None (no division). ``pool``: an
    :class:`FP8Format` or its name (``e4m3fn``, ``e5m2``, ``e4m3fnuz``). ``torch_cast``: the cast
    semantics of the torch SGLang runs with (default: the pinned 2.14.1; :func:`torch_cast_for`).
    ``x`` is not modified.
    """
    fmt = _format(pool)
    divided = sglang_divide(x, scale)
    out = _cast(divided, fmt, torch_cast)
    return SGLangCacheWrite(
        bits=out.bits,
        divided=divided,
        pool=fmt,
        torch_cast=torch_cast,
        became_nan=int((out.nan & ~torch.isnan(x)).sum()),
        became_inf=int((out.inf & torch.isfinite(x)).sum()),
        saturated=int(out.clamped.sum()),
    )
