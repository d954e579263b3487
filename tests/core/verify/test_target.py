"""kvscale.core.verify.target: host and device copies of a scales output agree bit for bit."""

from __future__ import annotations

import math

from kvscale.core.verify.target import LayerScales, host_device_agree


def test_host_device_bits() -> None:
    same = LayerScales("l", 0.5, math.nan, (0.5,), (math.nan,))
    assert host_device_agree(same) == []
    per_head = LayerScales("l", 0.75, 0.25, (0.5, 0.75), (0.25,))
    assert host_device_agree(per_head) == []
    wrong_max = LayerScales("l", 0.5, 0.25, (0.5, 0.75), (0.25,))
    assert host_device_agree(wrong_max)
