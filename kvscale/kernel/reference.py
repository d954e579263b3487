"""CPU reference for vLLM's ``reshape_and_cache_flash``, bit for bit what the GPU kernel writes.

Mirrors the semantics of vLLM 0.33.0 ``csrc/libtorch_stable/cache_kernels.cu``
(``reshape_and_cache_flash_kernel``) and its Triton twin
``vllm/v1/attention/ops/triton_reshape_and_cache_flash.py``: token ``t < len(slot_mapping)``
is written to block ``slot // block_size`` at offset ``slot % block_size``; a negative slot is a
padding token and writes nothing; each element is ``fp8(float32(x) / scale)``, rounded to
nearest even and saturated to the finite maximum.

The argument checks here are shared with the Triton launcher (``triton_cache.py``) so that both
refuse the same inputs with the same typed errors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from kvscale.errors import UsageError
from kvscale.floats import f32_bits
from kvscale.kernel.formats import FP8Format, KVCacheDtype, resolve_kv_cache_dtype

__all__ = [
    "CacheWriteArgumentError",
    "dequantize",
    "clipped",
    "fp8_read_back",
    "fp8_round",
    "quantize_to_bits",
    "reference_reshape_and_cache_flash",
]

_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


class CacheWriteArgumentError(UsageError, ValueError):
    """Shapes, dtypes, strides or devices that the cache write does not accept."""


@dataclass(frozen=True)
class CacheWriteLayout:
    """The facts about one call that the kernels specialize on (validated once per layout)."""

    kv: KVCacheDtype
    num_heads: int
    head_size: int
    block_size: int
    per_head_k: bool
    per_head_v: bool


def _fail(msg: str) -> CacheWriteArgumentError:
    return CacheWriteArgumentError(msg)


def _check_scale(name: str, scale: torch.Tensor, num_heads: int) -> bool:
    """Validate one scale tensor; return True when it holds one value per KV head."""
    if not isinstance(scale, torch.Tensor):
        raise _fail(f"{name} must be a float32 tensor, got {type(scale).__name__}")
    if scale.dtype != torch.float32:
        raise _fail(f"{name} must be float32, got {scale.dtype}")
    n = scale.numel()
    if n == 1:
        return False
    if n == num_heads and scale.dim() == 1 and scale.stride(0) == 1:
        return True
    raise _fail(
        f"{name} must hold 1 element (per tensor) or be a contiguous [num_kv_heads={num_heads}] "
        f"vector (per head), got shape {tuple(scale.shape)}"
    )


def validate_cache_write_args(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> CacheWriteLayout:
    """Check every argument of a cache write; raise CacheWriteArgumentError on the first problem."""
    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    for name, t in (("key", key), ("value", value)):
        if t.dim() != 3:
            raise _fail(
                f"{name} must be [num_tokens, num_kv_heads, head_size], got {tuple(t.shape)}"
            )
        if t.dtype not in _INPUT_DTYPES:
            raise _fail(f"{name} must be bfloat16, float16 or float32, got {t.dtype}")
        if t.stride(2) != 1 and t.shape[2] > 1:
            raise _fail(f"{name}'s head dim must be contiguous (stride 1), got {t.stride()}")
    if key.shape != value.shape or key.dtype != value.dtype:
        raise _fail(
            f"key and value must match: {tuple(key.shape)} {key.dtype} vs "
            f"{tuple(value.shape)} {value.dtype}"
        )
    num_tokens, num_heads, head_size = key.shape
    for name, c in (("key_cache", key_cache), ("value_cache", value_cache)):
        if c.dim() != 4:
            raise _fail(
                f"{name} must be [num_blocks, block_size, num_kv_heads, head_size], "
                f"got {tuple(c.shape)}"
            )
        if tuple(c.shape[2:]) != (num_heads, head_size):
            raise _fail(
                f"{name} holds {tuple(c.shape[2:])} heads x head_size, key has "
                f"{(num_heads, head_size)}"
            )
        if c.stride(3) != 1 and head_size > 1:
            raise _fail(f"{name}'s head dim must be contiguous (stride 1), got {c.stride()}")
        if kv.fp8 is not None:
            allowed = (torch.uint8, getattr(torch, kv.fp8.torch_dtype))
            if c.dtype not in allowed:
                raise _fail(
                    f"kv_cache_dtype {kv.name!r} needs a uint8 or {allowed[1]} {name}, "
                    f"got {c.dtype}"
                )
        else:
            # Unquantized caches hold the model dtype (vLLM's 'auto'); a cast between float
            # types would be a second rounding with its own NaN rules, so it is refused.
            if c.dtype != key.dtype:
                raise _fail(
                    f"kv_cache_dtype {kv.name!r} is a plain copy: {name} must have key's dtype "
                    f"{key.dtype}, got {c.dtype}"
                )
            if kv.torch_dtype is not None and c.dtype != getattr(torch, kv.torch_dtype):
                raise _fail(
                    f"kv_cache_dtype {kv.name!r} needs a {kv.torch_dtype} {name}, got {c.dtype}"
                )
    if key_cache.shape != value_cache.shape or key_cache.dtype != value_cache.dtype:
        raise _fail("key_cache and value_cache must have the same shape and dtype")
    if slot_mapping.dim() != 1 or slot_mapping.dtype != torch.int64:
        raise _fail(
            f"slot_mapping must be a 1-D int64 tensor, got {tuple(slot_mapping.shape)} "
            f"{slot_mapping.dtype}"
        )
    if slot_mapping.shape[0] > num_tokens:
        raise _fail(
            f"slot_mapping has {slot_mapping.shape[0]} entries but key has only {num_tokens} tokens"
        )
    per_head_k = _check_scale("k_scale", k_scale, num_heads)
    per_head_v = _check_scale("v_scale", v_scale, num_heads)
    devices = {t.device for t in (key, value, key_cache, value_cache, slot_mapping)}
    if kv.quantized:
        devices |= {k_scale.device, v_scale.device}
    if len(devices) != 1:
        raise _fail(f"all tensors must be on one device, got {sorted(map(str, devices))}")
    return CacheWriteLayout(
        kv=kv,
        num_heads=num_heads,
        head_size=head_size,
        block_size=key_cache.shape[1],
        per_head_k=per_head_k,
        per_head_v=per_head_v,
    )


def _torch_fp8(fmt: FP8Format) -> torch.dtype:
    dtype: torch.dtype = getattr(torch, fmt.torch_dtype)
    return dtype


def clipped(y: torch.Tensor, fmt: FP8Format) -> torch.Tensor:
    """Where the saturating store clips ``y = x / scale``: past ``fmt.clip_bound`` (the values
    that round to the format max anyway, up to half an ulp above it, are not clipped)."""
    a = y.abs()
    out = a > fmt.clip_bound
    return out | (a == fmt.clip_bound) if fmt.clips_at_bound else out


def _saturated_quotient(
    x: torch.Tensor, scale: torch.Tensor, fmt: FP8Format
) -> tuple[torch.Tensor, torch.Tensor]:
    """``clamp(float32(x) / scale, +-max_finite)`` (a fresh tensor), and the scale as float32
    on x's device, broadcastable against ``x`` (one element, or one per head)."""
    xf = x.to(torch.float32)
    s = scale.to(device=xf.device, dtype=torch.float32).reshape(-1)
    s = s.reshape(-1, 1) if s.numel() > 1 else s.reshape(())
    # A true division, not x * (1/scale): the reciprocal is rounded once more and flips
    # the fp8 rounding of values that land on a tie (rules section 5.3).
    # cvt.rn.satfinite: anything past the finite max, +-inf included, becomes +-max. torch's own
    # cast turns out-of-range values into NaN (e4m3fn) or inf (e5m2), hence the clamp first.
    # clamp() leaves NaN as NaN and keeps the sign of -0.0.
    return (xf / s).clamp_(-fmt.max_finite, fmt.max_finite), s


def quantize_to_bits(x: torch.Tensor, scale: torch.Tensor, fmt: FP8Format) -> torch.Tensor:
    """``fp8(float32(x) / scale)`` as uint8 bits, with the GPU's saturation and NaN byte.

    ``x`` is ``[..., num_heads, head_size]``; ``scale`` has 1 element or ``num_heads``.
    Computed on x's device; bit-exact against the GPU on the CPU, where torch's division is the
    IEEE one (correctly rounded, subnormals kept).
    """
    y, _ = _saturated_quotient(x, scale, fmt)
    bits = y.to(_torch_fp8(fmt)).view(torch.uint8)
    # torch keeps the NaN's sign bit (-NaN -> 0xFF); the GPU's cvt writes one canonical NaN byte
    # whatever the sign (measured on an H200, benchmarks/KERNEL_NOTES.md). Match the GPU.
    nan_byte = torch.full((), fmt.nan_byte, dtype=torch.uint8, device=bits.device)
    return torch.where(torch.isnan(y), nan_byte, bits)


_EXPONENT_MASK = 0x7F800000
"""float32's exponent field."""


def fp8_round(y: torch.Tensor, fmt: FP8Format) -> torch.Tensor:
    """``y.to(fp8).to(float32)`` for float32 ``y`` with ``|y| <= fmt.max_finite`` (or NaN): the
    nearest value of ``fmt``, ties to even, computed in float32 without the casts (torch 2.13's
    CPU fp8 -> float32 cast is not vectorized: 280 us per 98k values, against 9 for an add).

    ``|y| + c - c`` with ``c = 2^(e + 23 - m)``, ``e`` the exponent of ``|y|`` (at least the
    format's smallest normal exponent) and ``m`` its mantissa bits: ``|y| + c`` lies in ``c``'s
    binade, where float32's step is ``2^(e - m)``, the format's step at ``|y|``; float32's round
    to nearest even is then the format's (``c`` is an even multiple of that step), and the
    subtraction is exact. The sign goes back with ``copysign``; fnuz, which has no -0, gives +0.
    A NaN stays a NaN (of ``y``'s sign: the caller's cast would give the canonical one)."""
    magnitude = y.abs()
    exponent = magnitude.view(torch.int32) & _EXPONENT_MASK
    lowest = f32_bits(fmt.min_subnormal * 2.0**fmt.mantissa_bits)
    highest = f32_bits(2.0 ** math.floor(math.log2(fmt.max_finite)))
    # NaN's all-ones exponent is clamped too: its sum below stays NaN.
    exponent.clamp_(lowest, highest).add_((23 - fmt.mantissa_bits) << 23)
    step = exponent.view(torch.float32)
    rounded = magnitude.add_(step).sub_(step).copysign_(y)
    if not fmt.has_negative_zero:
        rounded.add_(0.0)
    return rounded


def fp8_read_back(x: torch.Tensor, scale: torch.Tensor, fmt: FP8Format) -> torch.Tensor:
    """What attention reads back from the bytes ``quantize_to_bits(x, scale, fmt)`` writes:
    ``fp8 * scale`` in float32 (vLLM's dequantization), from ``fp8_round`` of the same
    saturated quotient, without the bytes. A NaN input reads back as NaN, as the NaN byte does
    (its sign not canonical: no value depends on it)."""
    y, s = _saturated_quotient(x, scale, fmt)
    return fp8_round(y, fmt).mul_(s)


def _encode(
    x: torch.Tensor, scale: torch.Tensor, kv: KVCacheDtype, cache: torch.Tensor
) -> torch.Tensor:
    """The values to store, already in the cache tensor's own dtype."""
    if kv.fp8 is None:
        # Plain copy (same dtype, checked): the unquantized path never reads the scales.
        return x
    bits = quantize_to_bits(x, scale, kv.fp8)
    return bits if cache.dtype == torch.uint8 else bits.view(cache.dtype)


def reference_reshape_and_cache_flash(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    """Write key/value into the paged caches in place, exactly as the GPU kernel does.

    Shapes: key/value ``[num_tokens, num_kv_heads, head_size]`` (bf16/fp16/fp32); caches
    ``[num_blocks, block_size, num_kv_heads, head_size]`` (uint8 or torch fp8 storage for fp8
    dtypes, any strides on the first three dims); ``slot_mapping`` int64 ``[n]`` with
    ``n <= num_tokens``; scales float32 with 1 element or ``[num_kv_heads]``.
    Supports ``fp8_e4m3fnuz`` too (ROCm format; no NVIDIA kernel writes it).
    """
    layout = validate_cache_write_args(
        key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    n = slot_mapping.shape[0]
    if n == 0:
        return
    slots = slot_mapping.to(key_cache.device)
    rows = torch.nonzero(slots >= 0).flatten()
    if rows.numel() == 0:
        return
    live = slots[rows]
    num_slots = key_cache.shape[0] * layout.block_size
    if int(live.max()) >= num_slots:
        raise _fail(f"slot {int(live.max())} is past the cache's {num_slots} slots")
    blocks = torch.div(live, layout.block_size, rounding_mode="floor")
    offsets = live - blocks * layout.block_size
    for src, cache, scale in ((key, key_cache, k_scale), (value, value_cache, v_scale)):
        encoded = _encode(src[:n].index_select(0, rows.to(src.device)), scale, layout.kv, cache)
        # Advanced-index assignment writes through a strided view (e.g. kv_cache[:, 0]) in place.
        cache[blocks, offsets] = encoded.to(cache.device)


def dequantize(cache: torch.Tensor, scale: torch.Tensor, kv_cache_dtype: str) -> torch.Tensor:
    """Read cache contents back as float32: ``fp8 * scale`` (vLLM's attention-side dequant).

    ``cache`` is ``[..., num_kv_heads, head_size]`` (uint8 bits or torch fp8); a per-head scale
    broadcasts over the head dim. Unquantized dtypes are returned as float32, scale unread.
    """
    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    if kv.fp8 is None:
        return cache.to(torch.float32)
    values = cache.view(_torch_fp8(kv.fp8)) if cache.dtype == torch.uint8 else cache
    s = scale.to(device=cache.device, dtype=torch.float32).reshape(-1)
    s = s.reshape(-1, 1) if s.numel() > 1 else s.reshape(())
    return values.to(torch.float32) * s


STRESS_KINDS = ("random", "heavy", "adversarial")


def _fp8_grid(fmt: FP8Format) -> torch.Tensor:
    """All finite non-negative values of the format, ascending, as float64."""
    codes = torch.arange(0, 256, dtype=torch.int64).to(torch.uint8)
    vals = codes.view(_torch_fp8(fmt)).to(torch.float64)
    vals = vals[torch.isfinite(vals) & (vals >= 0)]
    grid: torch.Tensor = torch.unique(vals)
    return grid


def make_stress_values(
    shape: tuple[int, int, int],
    *,
    kind: str,
    dtype: torch.dtype,
    scale: torch.Tensor,
    fmt: FP8Format,
    generator: torch.Generator,
) -> torch.Tensor:
    """Inputs ``[num_tokens, num_kv_heads, head_size]`` that exercise every rounding rule.

    ``random``: normal, mostly inside the format's range after division by ``scale``.
    ``heavy``: Cauchy-tailed, a fair share beyond the finite max.
    ``adversarial``: fp8 values, exact midpoints between neighbours (ties after division when the
    scale is a power of two), midpoints nudged by one fp32 ulp, values just past the max and far
    past it, subnormal ties, +-0.0, +-inf, NaN of both signs, and subnormals of the input dtype.
    """
    if kind not in STRESS_KINDS:
        raise ValueError(f"kind must be one of {STRESS_KINDS}, got {kind!r}")
    num_tokens, num_heads, head_size = shape
    s = scale.detach().to("cpu", torch.float64).reshape(-1)
    s = s.reshape(1, -1, 1) if s.numel() > 1 else s.reshape(1, 1, 1)
    s = torch.where(torch.isfinite(s) & (s != 0), s, torch.ones_like(s))
    top = fmt.max_finite
    g = generator
    if kind == "random":
        v = torch.randn(shape, generator=g, dtype=torch.float64) * (top / 4)
    elif kind == "heavy":
        num = torch.randn(shape, generator=g, dtype=torch.float64)
        den = torch.randn(shape, generator=g, dtype=torch.float64).abs() + 1e-3
        v = num / den * (top / 32)
    else:
        grid = _fp8_grid(fmt)
        mids = (grid[1:] + grid[:-1]) / 2
        ulp = torch.nextafter(mids.float(), torch.tensor(float("inf"))).double() - mids
        pool = torch.cat(
            [
                grid,
                mids,
                mids + ulp,
                mids - ulp,
                torch.tensor([top * (1 + 2.0**-10), top * 1.0625, top * 1.5, top * 1e3, 1e30]),
                torch.tensor(
                    [fmt.min_subnormal / 2, fmt.min_subnormal * 1.5, fmt.min_subnormal / 3]
                ),
            ]
        )
        idx = torch.randint(0, pool.numel(), shape, generator=g)
        sign = torch.randint(0, 2, shape, generator=g).to(torch.float64) * 2 - 1
        v = pool[idx] * sign
    x = (v * s).to(dtype)
    if kind == "adversarial":
        specials = torch.tensor(
            [
                float("nan"),
                -float("nan"),
                float("inf"),
                -float("inf"),
                0.0,
                -0.0,
                torch.finfo(dtype).tiny / 4,  # a subnormal of the input dtype
                -torch.finfo(dtype).tiny / 4,
                torch.finfo(dtype).max,
                -torch.finfo(dtype).max,
            ],
            dtype=torch.float64,
        ).to(dtype)
        flat = x.reshape(-1)
        where = torch.randint(0, flat.numel(), (max(1, flat.numel() // 16),), generator=g)
        pick = torch.randint(0, specials.numel(), where.shape, generator=g)
        flat[where] = specials[pick]
    return x
