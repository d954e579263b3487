"""Calibrated KV scale arithmetic, in pure Python (no torch).

The contract (``contract.md``, "Additions": calibrated scale) fixes every rounding step::

    scale = max(f32(f32(f32(amax) * f32(headroom)) / 448), f32(min_scale))

Python floats are doubles; the product and quotient of two float32 values, computed in double
and then rounded once to float32, equal the IEEE float32 operation (a double holds the exact
product of two 24-bit significands, and for the quotient the double-rounding is innocuous
because 53 >= 2 * 24 + 2; Figueroa, "When is double rounding innocuous?", 1995). So
``to_float32(a * b)`` is the float32 multiply a device would do, bit for bit.

448 is the largest finite OCP e4m3 value (``torch.finfo(torch.float8_e4m3fn).max``), the format
of vLLM's ``fp8``/``fp8_e4m3`` cache on NVIDIA GPUs. The engine's own later rules (model-dtype
rounding of the loaded scale, the fnuz x2 on ROCm) are *not* applied here: they belong to the
inspect path that reads the written checkpoint back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kvscale.errors import UsageError
from kvscale.floats import to_float32

E4M3_MAX = 448.0
"""Largest finite OCP float8 e4m3 (e4m3fn) value: the divisor of a calibrated scale."""

__all__ = [
    "E4M3_MAX",
    "check_scale_options",
    "kv_scale",
    "kv_scales",
]


def check_scale_options(headroom: float, min_scale: float) -> None:
    """Refuse a headroom or min-scale the arithmetic cannot use (UsageError, exit 2).

    ``headroom`` must be finite and > 0 once rounded to float32 (a headroom of 0 would make
    every scale ``min_scale``); ``min_scale`` finite and >= 0.
    """
    h = to_float32(float(headroom))
    if not (math.isfinite(h) and h > 0.0):
        raise UsageError(
            f"--headroom {headroom!r} must be a finite number > 0",
            hint="1.0 keeps the calibrated max; 1.25 leaves 25% room above it",
        )
    m = to_float32(float(min_scale))
    if not (math.isfinite(m) and m >= 0.0):
        raise UsageError(f"--min-scale {min_scale!r} must be a finite number >= 0")


def kv_scale(
    amax: float, *, headroom: float = 1.0, min_scale: float = 0.0, divisor: float = E4M3_MAX
) -> float:
    """One calibrated scale, every operation rounded to float32.

    ``divisor``: 448 for an FP8 cache; an NVFP4 global scale divides by its convention's
    (``nvfp4_conventions.GlobalScaleConvention.divisor``: 448 or 2688).

    ``amax`` is the largest |x| observed (a float32 value; a wider one is rounded first).
    Returns a float32 value as a Python float. A non-finite ``amax`` is a ValueError: a layer
    whose activations hold NaN/inf gets no scale (the caller reports it). The result can be
    ``0.0`` (``amax == 0`` and ``min_scale == 0``) or ``inf`` (``amax * headroom`` overflows
    float32); neither is a usable scale, and the caller must refuse to write it.
    """
    a = to_float32(float(amax))
    if not math.isfinite(a) or a < 0.0:
        raise ValueError(f"amax must be a finite non-negative number, got {amax!r}")
    scaled = to_float32(a * to_float32(float(headroom)))
    scale = to_float32(scaled / divisor)
    floor = to_float32(float(min_scale))
    # max(), not a clamp with NaN semantics: both operands are finite or +inf here.
    return scale if scale >= floor else floor


def kv_scales(
    amax: float | Sequence[float],
    *,
    headroom: float = 1.0,
    min_scale: float = 0.0,
    divisor: float = E4M3_MAX,
) -> float | tuple[float, ...]:
    """``kv_scale`` of one value (``--strategy tensor``) or of each KV head (``head``)."""
    if isinstance(amax, (int, float)):
        return kv_scale(float(amax), headroom=headroom, min_scale=min_scale, divisor=divisor)
    return tuple(
        kv_scale(float(a), headroom=headroom, min_scale=min_scale, divisor=divisor) for a in amax
    )
