"""KV-cache dtype strings and the FP8 formats they select.

Plain Python on purpose: importing this module must not pull in torch, so the CLI can resolve and
validate a ``--kv-cache-dtype`` string before any heavy import.

The string table mirrors vLLM 0.33.0 (``vllm/utils/torch_utils.py``
``STR_DTYPE_TO_TORCH_DTYPE`` and ``vllm/v1/attention/ops/triton_reshape_and_cache_flash.py``
``_NATIVE_KV_CACHE_DTYPES``): ``fp8`` and ``fp8_e4m3`` both mean OCP e4m3fn on NVIDIA GPUs,
``fp8_e5m2`` means e5m2, and the unquantized names are a plain copy in which the scales are
never read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvscale.errors import EnvironmentMissingError, UsageError

__all__ = [
    "E4M3FN",
    "E4M3FNUZ",
    "E5M2",
    "FP8_FORMATS",
    "KVCacheDtype",
    "KVCacheDtypeError",
    "UnknownKVCacheDtypeError",
    "UnsupportedOnDeviceError",
    "known_kv_cache_dtypes",
    "resolve_kv_cache_dtype",
]


class KVCacheDtypeError(UsageError, ValueError):
    """Base class for problems with a KV-cache dtype string or its format."""


class UnknownKVCacheDtypeError(KVCacheDtypeError):
    """The string names no KV-cache dtype that kvscale knows."""

    def __init__(self, kv_cache_dtype: str) -> None:
        self.kv_cache_dtype = kv_cache_dtype
        known = ", ".join(known_kv_cache_dtypes())
        super().__init__(f"unknown kv_cache_dtype {kv_cache_dtype!r}; expected one of: {known}")


class UnsupportedOnDeviceError(EnvironmentMissingError, KVCacheDtypeError):
    """The format is known but the device or backend at hand cannot write it (exit 3)."""


@dataclass(frozen=True)
class FP8Format:
    """One 8-bit floating-point encoding as the cache-write kernel produces it.

    ``nan_byte`` is the single byte written for every NaN input, whatever its sign or payload.
    NVIDIA's ``cvt.rn.satfinite.{e4m3,e5m2}x2.f32`` writes one canonical NaN (0x7F) and torch's
    CPU cast keeps the sign bit (0xFF for -NaN), so the reference rewrites NaN to this byte
    (measured on an H200, see benchmarks/KERNEL_NOTES.md). fnuz has a single NaN code, 0x80.
    """

    name: str
    torch_dtype: str  # attribute name in the torch namespace, e.g. "float8_e4m3fn"
    mantissa_bits: int
    exponent_bias: int
    max_finite: float
    min_subnormal: float
    has_negative_zero: bool
    nan_byte: int
    gpu_writable: bool

    @property
    def clip_bound(self) -> float:
        """The largest |x / scale| the cache write stores without clipping: ``max_finite``
        plus half its ulp (e4m3fn 464, e5m2 61440, e4m3fnuz 248). Below it round-to-nearest
        reaches ``max_finite`` as it would in a wider format; only past it does the saturating
        store change a value more than rounding does."""
        exponent = math.floor(math.log2(self.max_finite))
        return self.max_finite + 2.0 ** (exponent - self.mantissa_bits) / 2

    @property
    def clips_at_bound(self) -> bool:
        """Whether ``|x / scale| == clip_bound`` clips: the tie goes to the even neighbour, which
        lies past ``max_finite`` when its mantissa is odd (e5m2, e4m3fnuz), not for e4m3fn."""
        exponent = math.floor(math.log2(self.max_finite))
        mantissa = int((self.max_finite / 2.0**exponent - 1) * 2**self.mantissa_bits)
        return mantissa % 2 == 1

    @property
    def max_byte(self) -> int:
        """Byte pattern of +max_finite (0x7E for e4m3fn, 0x7B for e5m2, 0x7F for e4m3fnuz)."""
        return {"e4m3fn": 0x7E, "e5m2": 0x7B, "e4m3fnuz": 0x7F}[self.name]


E4M3FN = FP8Format(
    name="e4m3fn",
    torch_dtype="float8_e4m3fn",
    mantissa_bits=3,
    exponent_bias=7,
    max_finite=448.0,
    min_subnormal=2.0**-9,
    has_negative_zero=True,
    nan_byte=0x7F,
    gpu_writable=True,
)

E5M2 = FP8Format(
    name="e5m2",
    torch_dtype="float8_e5m2",
    mantissa_bits=2,
    exponent_bias=15,
    max_finite=57344.0,
    min_subnormal=2.0**-16,
    has_negative_zero=True,
    nan_byte=0x7F,
    gpu_writable=True,
)

# ROCm gfx94x format. vLLM divides by 224 rather than 240 on those GPUs when *computing* scales
# (rules section 4), but the store itself saturates at the format's finite max, 240.
E4M3FNUZ = FP8Format(
    name="e4m3fnuz",
    torch_dtype="float8_e4m3fnuz",
    mantissa_bits=3,
    exponent_bias=8,
    max_finite=240.0,
    min_subnormal=2.0**-10,
    has_negative_zero=False,
    nan_byte=0x80,
    gpu_writable=False,
)

FP8_FORMATS: dict[str, FP8Format] = {f.name: f for f in (E4M3FN, E5M2, E4M3FNUZ)}


@dataclass(frozen=True)
class KVCacheDtype:
    """What a kv_cache_dtype string means for the cache write.

    ``fp8`` is None for the unquantized names: the write is a plain copy (cast to the cache
    tensor's own dtype) and the scales are not read. ``torch_dtype`` names the cache dtype the
    string pins, or None where the cache tensor decides (``auto``).
    """

    name: str
    fp8: FP8Format | None
    torch_dtype: str | None

    @property
    def quantized(self) -> bool:
        return self.fp8 is not None


_KV_CACHE_DTYPES: dict[str, KVCacheDtype] = {
    "auto": KVCacheDtype("auto", None, None),
    "bfloat16": KVCacheDtype("bfloat16", None, "bfloat16"),
    "float16": KVCacheDtype("float16", None, "float16"),
    "half": KVCacheDtype("half", None, "float16"),
    "float32": KVCacheDtype("float32", None, "float32"),
    "float": KVCacheDtype("float", None, "float32"),
    "fp8": KVCacheDtype("fp8", E4M3FN, E4M3FN.torch_dtype),
    "fp8_e4m3": KVCacheDtype("fp8_e4m3", E4M3FN, E4M3FN.torch_dtype),
    "fp8_e5m2": KVCacheDtype("fp8_e5m2", E5M2, E5M2.torch_dtype),
    "fp8_e4m3fnuz": KVCacheDtype("fp8_e4m3fnuz", E4M3FNUZ, E4M3FNUZ.torch_dtype),
}


def known_kv_cache_dtypes() -> tuple[str, ...]:
    """Every kv_cache_dtype string accepted by :func:`resolve_kv_cache_dtype`."""
    return tuple(_KV_CACHE_DTYPES)


def resolve_kv_cache_dtype(kv_cache_dtype: str) -> KVCacheDtype:
    """Map a kv_cache_dtype string to its meaning; raise UnknownKVCacheDtypeError otherwise."""
    try:
        return _KV_CACHE_DTYPES[kv_cache_dtype]
    except (KeyError, TypeError):
        raise UnknownKVCacheDtypeError(str(kv_cache_dtype)) from None
