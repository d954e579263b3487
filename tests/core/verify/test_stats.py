"""kvscale.core.verify.stats: the synthetic sample is sized from the scale."""

from __future__ import annotations

import torch

from kvscale.core.verify.stats import SATURATION_LIMIT, synthetic_activations
from kvscale.kernel.formats import E4M3FN


def test_synthetic_sample_is_sized_from_the_scale() -> None:
    gen = torch.Generator().manual_seed(0)
    scales = torch.tensor([0.01, 0.1])
    x = synthetic_activations(1024, 2, 64, scales.tolist(), E4M3FN, gen).whole().float()
    beyond = (x.abs() / scales.reshape(1, 2, 1) > 448).float().mean(dim=(0, 2))
    assert bool(((beyond > 0) & (beyond <= SATURATION_LIMIT / 2)).all()), beyond
    amax = x.abs().amax(dim=(0, 2))
    assert torch.allclose(amax, scales * 448 * 1.02, rtol=0.01)
    small = synthetic_activations(8, 1, 4, [0.5], E4M3FN, gen).whole().float()
    assert 0.9 * 0.5 * 448 < float(small.abs().max()) <= 0.5 * 448
