"""kvscale.floats reproduces torch's conversions bit for bit, without importing torch."""

from __future__ import annotations

import math
import random
import struct

import pytest
import torch

from kvscale.floats import (
    decode_values,
    encode_json_value,
    float32_to_bfloat16,
    float32_to_float16,
    max_nan,
    round_to_dtype,
    to_float32,
)

TORCH = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _random_f32_patterns(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    values = []
    for _ in range(n):
        bits = rng.getrandbits(32)
        values.append(struct.unpack("<f", bits.to_bytes(4, "little"))[0])
    # edges: subnormals, max, ties for bf16/fp16, overflow boundaries
    values += [0.0, -0.0, 1.0, 0.3, 2.0**-149, 2.0**-126, 3.4028234663852886e38, 65504.0, 65520.0]
    values += [
        1 + 2**-8,
        1 + 3 * 2**-8,
        1 + 2**-11,
        1 + 3 * 2**-11,
        2.0**-24,
        2.0**-25,
        3 * 2.0**-26,
    ]
    values += [math.inf, -math.inf]
    return values


def _same(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_float32_to_model_dtype_matches_torch_copy(dtype: str) -> None:
    values = _random_f32_patterns(20_000, seed=1)
    src = torch.tensor(values, dtype=torch.float32)
    expected = torch.empty_like(src, dtype=TORCH[dtype]).copy_(src).to(torch.float64).tolist()
    for value, want in zip(values, expected, strict=True):
        got = round_to_dtype(value, dtype)
        assert _same(got, want), (value, got, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_float64_scales_round_like_torch(dtype: str) -> None:
    """torch converts float64 to bf16/fp16 through float32 (double rounding); so do we."""
    rng = random.Random(2)
    values = [rng.uniform(-4, 4) * 10.0 ** rng.randint(-45, 40) for _ in range(5_000)]
    values += [1 + 2**-8 + 2**-40, 1 + 2**-11 + 2**-40, 1e39, -1e39, 1e-46, 3.5e38]
    src = torch.tensor(values, dtype=torch.float64)
    expected = torch.empty_like(src, dtype=TORCH[dtype]).copy_(src).to(torch.float64).tolist()
    for value, want in zip(values, expected, strict=True):
        assert _same(round_to_dtype(value, dtype), want), value


def test_double_rounding_examples() -> None:
    assert (
        round_to_dtype(1 + 2**-8 + 2**-40, "bfloat16") == 1.0
    )  # direct rounding would give 1+2^-7
    assert round_to_dtype(0.3, "bfloat16") == 0.30078125
    assert round_to_dtype(1e5, "float16") == math.inf
    assert round_to_dtype(1e-8, "float16") == 0.0
    assert to_float32(3.5e38) == math.inf
    assert to_float32(0.1) == 0.10000000149011612
    assert math.isnan(float32_to_bfloat16(math.nan))
    assert float32_to_float16(-0.0) == 0.0 and math.copysign(1, float32_to_float16(-0.0)) == -1


@pytest.mark.parametrize(
    "st_dtype, torch_dtype",
    [
        ("F64", torch.float64),
        ("F32", torch.float32),
        ("F16", torch.float16),
        ("BF16", torch.bfloat16),
        ("F8_E4M3", torch.float8_e4m3fn),
        ("F8_E5M2", torch.float8_e5m2),
        ("F8_E4M3FNUZ", torch.float8_e4m3fnuz),
        ("F8_E5M2FNUZ", torch.float8_e5m2fnuz),
        ("I32", torch.int32),
        ("I8", torch.int8),
        ("U8", torch.uint8),
        ("I64", torch.int64),
    ],
)
def test_decode_matches_torch(st_dtype: str, torch_dtype: torch.dtype) -> None:
    if torch_dtype.is_floating_point and torch_dtype.itemsize == 1:
        raw = bytes(range(256))
        expected = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(torch_dtype)
    else:
        gen = torch.Generator().manual_seed(3)
        if torch_dtype.is_floating_point:
            t = (torch.randn(1000, generator=gen, dtype=torch.float64) * 100).to(torch_dtype)
        else:
            t = torch.randint(-100 if torch_dtype.is_signed else 0, 100, (1000,), generator=gen).to(
                torch_dtype
            )
        expected = t
        raw = t.contiguous().view(torch.uint8).numpy().tobytes()
    got = decode_values(st_dtype, raw)
    want = expected.to(torch.float64).tolist()
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _same(g, w), (st_dtype, g, w)


def test_json_encoding_and_nan_max() -> None:
    assert encode_json_value(math.nan) == "NaN"
    assert encode_json_value(math.inf) == "Infinity"
    assert encode_json_value(-math.inf) == "-Infinity"
    assert encode_json_value((1.0, math.nan)) == [1.0, "NaN"]
    assert encode_json_value(0.30078125) == 0.30078125
    assert math.isnan(max_nan([1.0, math.nan, 2.0]))
    assert max_nan([1.0, 3.0, 2.0]) == 3.0
