"""Calibrated scale arithmetic (kvscale.model.scales): each step rounded to float32."""

from __future__ import annotations

import math
import struct

import pytest

from kvscale.errors import UsageError
from kvscale.model.scales import E4M3_MAX, check_scale_options, kv_scale, kv_scales

np = pytest.importorskip("numpy")


def f32(x: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", x))[0])


def numpy_scale(amax: float, headroom: float, min_scale: float) -> float:
    """The contract's formula with numpy float32 operations (an independent implementation)."""
    a = np.float32(amax)
    s = np.float32(np.float32(a * np.float32(headroom)) / np.float32(448.0))
    return float(max(s, np.float32(min_scale)))


@pytest.mark.parametrize(
    ("amax", "headroom", "min_scale"),
    [
        (19.5, 1.0, 0.0),
        (f32(8.8125), 1.25, 0.0),
        (f32(0.6), 1.1, 0.0),
        (f32(11.8), 1.0, 0.01),  # 11.8 / 448 = 0.0263: above the floor
        (f32(11.8), 1.0, 0.05),  # the floor wins
        (1e-30, 1.0, 1e-6),  # the floor wins
        (f32(3.4e38), 1.0, 0.0),
        (f32(1e-40), 1.0, 0.0),  # float32 subnormal amax
    ],
)
def test_matches_numpy_float32(amax: float, headroom: float, min_scale: float) -> None:
    assert kv_scale(amax, headroom=headroom, min_scale=min_scale) == numpy_scale(
        amax, headroom, min_scale
    )


def test_each_operation_is_rounded_to_float32() -> None:
    # A headroom that is not a float32 value is rounded first: 1.1 -> 1.10000002384...
    amax = f32(1.7)
    expected = f32(f32(amax * f32(1.1)) / 448.0)
    assert kv_scale(amax, headroom=1.1) == expected
    assert E4M3_MAX == 448.0


def test_random_values_against_numpy() -> None:
    rng = np.random.default_rng(0)
    for amax, head in zip(
        rng.lognormal(0.0, 3.0, 2000).astype(np.float32), rng.uniform(0.5, 4.0, 2000), strict=True
    ):
        assert kv_scale(float(amax), headroom=float(head)) == numpy_scale(
            float(amax), float(head), 0.0
        )


def test_per_head_and_degenerate_results() -> None:
    assert kv_scales((448.0, 224.0)) == (1.0, 0.5)
    assert kv_scales(448.0) == 1.0
    assert kv_scale(0.0) == 0.0  # unusable: the caller refuses to write it
    assert kv_scale(f32(3.4e38), headroom=2.0) == math.inf
    with pytest.raises(ValueError, match="amax must be a finite non-negative number"):
        kv_scale(math.nan)
    with pytest.raises(ValueError):
        kv_scale(math.inf)


@pytest.mark.parametrize(
    ("headroom", "min_scale", "message"),
    [
        (0.0, 0.0, "--headroom 0.0 must be a finite number > 0"),
        (1e-50, 0.0, "--headroom 1e-50 must be a finite number > 0"),  # 0 in float32
        (math.inf, 0.0, "--headroom inf must be a finite number > 0"),
        (1.0, -1.0, "--min-scale -1.0 must be a finite number >= 0"),
        (1.0, math.nan, "--min-scale nan must be a finite number >= 0"),
    ],
)
def test_option_checks(headroom: float, min_scale: float, message: str) -> None:
    with pytest.raises(UsageError) as info:
        check_scale_options(headroom, min_scale)
    assert info.value.message == message
