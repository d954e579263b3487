"""Exact float arithmetic for scale values, in pure Python (no torch import).

Every value kvscale reports is the float32 a device tensor of the engine would hold. Python floats
are IEEE doubles, which hold every float32/bf16/fp16 value exactly, so the engine's conversions can
be reproduced bit for bit with ``struct`` and integer bit manipulation:

* float32 rounding is C's ``(float)double`` (round to nearest even, overflow to inf), which is what
  ``struct.pack('<f')`` does before it refuses values that became infinite;
* bfloat16 rounding is c10's ``round_to_nearest_even`` on the float32 bit pattern
  (``c10/util/BFloat16.h``), with NaN kept as NaN;
* float16 rounding from a float32 value is IEEE round to nearest even with subnormals, which
  ``struct.pack('<e')`` implements exactly;
* torch converts a float64 tensor to bf16/fp16 through float32 (``c10::BFloat16(float)``,
  ``c10::Half(float)``), i.e. with double rounding, and so do we.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence

FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
FLOAT32_TINY = 2.0**-126  # smallest normal float32
FLOAT16_TINY = 2.0**-14  # smallest normal float16

# Safetensors dtype name -> (bytes per element, struct format or decoder name)
_STRUCT_FORMATS: dict[str, tuple[int, str]] = {
    "F64": (8, "d"),
    "F32": (4, "f"),
    "F16": (2, "e"),
    "I64": (8, "q"),
    "U64": (8, "Q"),
    "I32": (4, "i"),
    "U32": (4, "I"),
    "I16": (2, "h"),
    "U16": (2, "H"),
    "I8": (1, "b"),
    "U8": (1, "B"),
    "BOOL": (1, "?"),
}
DECODABLE_DTYPES = frozenset(
    [*_STRUCT_FORMATS, "BF16", "F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0"]
)
FLOAT_DTYPES = frozenset(["F64", "F32", "F16", "BF16"])
"""Dtypes whose values decode exactly; anything else is reported as an unusual scale dtype."""


def f32_bits(value: float) -> int:
    """The float32 bit pattern of a value that is exactly representable in float32."""
    return int.from_bytes(struct.pack("<f", value), "little")


def from_f32_bits(bits: int) -> float:
    return float(struct.unpack("<f", (bits & 0xFFFFFFFF).to_bytes(4, "little"))[0])


def to_float32(value: float) -> float:
    """Round a double to float32 (nearest even; overflow to +-inf; NaN stays NaN)."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return float(struct.unpack("<f", struct.pack("<f", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def float32_to_bfloat16(value: float) -> float:
    """c10's float -> bfloat16 conversion (round to nearest even on the bit pattern)."""
    if math.isnan(value):
        return value
    bits = f32_bits(value)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return from_f32_bits((bits >> 16) << 16)


def float32_to_float16(value: float) -> float:
    """IEEE float -> half (nearest even, subnormals, overflow to inf)."""
    if math.isnan(value) or math.isinf(value):
        return value
    try:
        return float(struct.unpack("<e", struct.pack("<e", value))[0])
    except OverflowError:
        return math.copysign(math.inf, value)


def round_to_dtype(value: float, dtype: str) -> float:
    """Convert a value held exactly in a double (any checkpoint dtype) into a torch dtype, the
    way ``param.data.copy_(loaded_weight)`` does: through float32 first for 16-bit targets."""
    as_f32 = to_float32(value)
    if dtype == "float32":
        return as_f32
    if dtype == "bfloat16":
        return float32_to_bfloat16(as_f32)
    if dtype == "float16":
        return float32_to_float16(as_f32)
    raise ValueError(f"unsupported model dtype {dtype!r}")


def _decode_minifloat(byte: int, exp_bits: int, man_bits: int, bias: int, fmt: str) -> float:
    sign = -1.0 if byte >> (exp_bits + man_bits) & 1 else 1.0
    exp = (byte >> man_bits) & ((1 << exp_bits) - 1)
    man = byte & ((1 << man_bits) - 1)
    if fmt == "fnuz":
        if byte == 0x80:
            return math.nan
        sign = -1.0 if byte & 0x80 else 1.0
    elif fmt == "fn":  # e4m3fn: no inf, S.1111.111 is NaN
        if exp == (1 << exp_bits) - 1 and man == (1 << man_bits) - 1:
            return math.nan
    elif exp == (1 << exp_bits) - 1:  # IEEE-like (e5m2)
        return sign * math.inf if man == 0 else math.nan
    if exp == 0:
        return sign * man * 2.0 ** (1 - bias - man_bits)
    return sign * (1 + man / (1 << man_bits)) * 2.0 ** (exp - bias)


def decode_values(dtype: str, raw: bytes) -> list[float]:
    """Decode the little-endian bytes of a tensor into exact Python floats."""
    if dtype in _STRUCT_FORMATS:
        size, code = _STRUCT_FORMATS[dtype]
        count = len(raw) // size
        return [float(v) for v in struct.unpack(f"<{count}{code}", raw[: count * size])]
    if dtype == "BF16":
        count = len(raw) // 2
        halves = struct.unpack(f"<{count}H", raw[: count * 2])
        return [from_f32_bits(h << 16) for h in halves]
    if dtype == "F8_E4M3":
        return [_decode_minifloat(b, 4, 3, 7, "fn") for b in raw]
    if dtype == "F8_E5M2":
        return [_decode_minifloat(b, 5, 2, 15, "ieee") for b in raw]
    if dtype == "F8_E4M3FNUZ":
        return [_decode_minifloat(b, 4, 3, 8, "fnuz") for b in raw]
    if dtype == "F8_E5M2FNUZ":
        return [_decode_minifloat(b, 5, 2, 16, "fnuz") for b in raw]
    if dtype == "F8_E8M0":
        return [math.nan if b == 0xFF else 2.0 ** (b - 127) for b in raw]
    raise ValueError(f"cannot decode dtype {dtype}")


def is_subnormal(value: float, dtype: str = "float32") -> bool:
    """Nonzero and below the smallest normal number of ``dtype``."""
    tiny = FLOAT16_TINY if dtype == "float16" else FLOAT32_TINY
    return value != 0.0 and math.isfinite(value) and abs(value) < tiny


def encode_json_value(value: float | Sequence[float] | None) -> object:
    """The contract's number encoding: shortest repr of the float32 value; non-finite as strings."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return [encode_json_value(v) for v in value]
    assert isinstance(value, float)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def format_value(value: float | Sequence[float] | None) -> str:
    """Short human rendering of a scale value (tables); JSON uses ``encode_json_value``."""
    if value is None:
        return "-"
    if not isinstance(value, float):
        if not value:
            return "[]"
        return format_value(max_nan(value)) + "*"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.6g}"


def exact_text(value: float | Sequence[float] | None) -> str:
    """A scale value as text without rounding (CSV): the shortest repr that round-trips, as the
    JSON documents hold it; every head of a per-head value, as a list."""
    if value is None:
        return "-"
    if not isinstance(value, float):
        return "[" + ", ".join(exact_text(v) for v in value) + "]"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def max_nan(values: Sequence[float]) -> float:
    """``torch.max`` semantics: NaN if any element is NaN."""
    result = -math.inf
    for v in values:
        if math.isnan(v):
            return v
        if v > result:
            result = v
    return result
