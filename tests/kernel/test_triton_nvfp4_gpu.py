"""The Triton NVFP4 kernel on a CUDA GPU against the CPU reference.

Every byte of the cache (poisoned first) must equal the reference's, except the bytes of blocks
the reference marks ambiguous (their value depends on the hardware's rcp.approx, which the
reference can only model; see kvscale/kernel/nvfp4.py). Needs Triton, CUDA and native e4m3
conversion (compute capability 8.9+); skipped otherwise.
"""

from __future__ import annotations

import pytest
import torch

from kvscale.kernel import nvfp4 as N


def _skip_reason() -> str | None:
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() < (8, 9):
        return "the GPU has no native e4m3 conversion (needs compute capability 8.9+)"
    return None


_REASON = _skip_reason()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_REASON is not None, reason=_REASON or ""),
]


def _compare(
    kind: str, dtype: torch.dtype, variant: str, scale_rule: str, seed: int
) -> tuple[int, int]:
    from kvscale.kernel.triton_nvfp4 import reshape_and_cache_nvfp4

    g = torch.Generator().manual_seed(seed)
    tokens, heads, hs, bs = 96, 4, 128, 16
    key = N.make_nvfp4_stress_values((tokens, heads, hs), kind=kind, dtype=dtype, generator=g)
    value = N.make_nvfp4_stress_values((tokens, heads, hs), kind=kind, dtype=dtype, generator=g)
    scales = []
    for x in (key, value):
        finite = x.float()[torch.isfinite(x.float())]
        amax = float(finite.abs().max())
        scales.append(
            torch.tensor([{"448": amax / 448, "2688": amax / 2688, "1": 1.0}[scale_rule]])
        )
    blocks = tokens // bs + 3
    poison = torch.randint(
        0, 256, N.nvfp4_kv_cache_shape(blocks, heads, bs, hs), generator=g, dtype=torch.uint8
    )
    slots = torch.randperm(blocks * bs, generator=g)[: tokens - 2]
    slots[::7] = -1
    ref = poison.clone()
    report = N.reference_reshape_and_cache_nvfp4(key, value, ref, slots, variant, *scales)
    gpu = poison.cuda()
    reshape_and_cache_nvfp4(
        key.cuda(), value.cuda(), gpu, slots.cuda(), variant, scales[0].cuda(), scales[1].cuda()
    )
    differ = gpu.cpu() != ref
    return int((differ & ~report.ambiguous_bytes).sum()), int(
        (differ & report.ambiguous_bytes).sum()
    )


@pytest.mark.parametrize("variant", N.NVFP4_KV_CACHE_DTYPES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("kind", N.NVFP4_STRESS_KINDS)
@pytest.mark.parametrize("scale_rule", ["448", "2688", "1"])
def test_exact_blocks_match_the_reference(
    variant: str, dtype: torch.dtype, kind: str, scale_rule: str
) -> None:
    exact_diff, _ = _compare(kind, dtype, variant, scale_rule, seed=11)
    assert exact_diff == 0


def test_reciprocal_model_premises_hold_on_this_gpu() -> None:
    """The reference treats rcp.approx.ftz.f32 as exact on powers of two and within one ulp of
    the IEEE reciprocal elsewhere; check both on this GPU (all normal powers of two, and every
    mantissa of [1, 2) at one exponent)."""
    from kvscale.kernel.triton_nvfp4 import rcp_approx_ftz

    powers = torch.tensor([2.0**e for e in range(-125, 126)], dtype=torch.float32)
    assert torch.equal(rcp_approx_ftz(powers.cuda()).cpu(), torch.reciprocal(powers))
    mant = (torch.arange(0, 1 << 23, dtype=torch.int32) | 0x3F800000).view(torch.float32)
    approx = rcp_approx_ftz(mant.cuda()).cpu().view(torch.int32).long()
    ieee = torch.reciprocal(mant).view(torch.int32).long()
    assert int((approx - ieee).abs().max()) <= 1
