"""Layers whose KV cache is not FP8 per tensor: NVFP4 (the checkpoint scale is the global
scale), the self-scaled per-token-head formats (no checkpoint scale is read) and layers kept
unquantized (``--kv-cache-dtype-skip-layers``). Each is written through kvscale's reference of
the engine's write and measured as ``stats`` measures FP8; ``stats.run_layer`` keeps the FP8
path (with its GPU kernel).

Thresholds besides the FP8 ones (``stats``):

* NVFP4: ``zero_blocks <= UNDERFLOW_LIMIT`` (a global scale too large sends blocks to a zero
  block scale), ``saturated_blocks <= SATURATION_LIMIT`` (too small: block scales pinned at 448
  or values clipped at 6), ``rel_rms_error <= NVFP4_ERROR_LIMIT``;
* self-scaled formats: no checkpoint scale can be wrong; their error is reported, not judged
  (``kvscale plan`` weighs it against the budget).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.core.verify.stats import (
    SATURATION_LIMIT,
    UNDERFLOW_LIMIT,
    KindStats,
)
from kvscale.core.verify.target import LayerScales
from kvscale.errors import UsageError

NVFP4_ERROR_LIMIT = 0.2
"""Relative RMS round-trip error an NVFP4 layer may keep: e2m1 with a block scale per 16 values
leaves about 0.1 on Gaussian data at the calibrated global scale (measured: 0.095)."""


def verifiable(fmt: CacheFormat) -> bool:
    """kvscale has a reference writer for the format (``verify`` can measure it)."""
    return fmt.scale_use is ScaleUse.NONE or fmt.reference is not None


def refuse_unverifiable(formats: Sequence[CacheFormat], measurable: Sequence[str]) -> None:
    """A format kvscale cannot write is refused before anything runs (never measured as FP8);
    ``measurable`` names the engine's dtypes verify can measure, for the hint."""
    missing = sorted({f.name for f in formats if not verifiable(f)})
    if missing:
        raise UsageError(
            f"kvscale has no reference writer for {', '.join(missing)}: verify cannot measure "
            "what that cache stores",
            hint="--kv-cache-dtype one of: " + ", ".join(measurable),
        )


def _error(x: torch.Tensor, y: torch.Tensor) -> tuple[float, float, int]:
    """(relative RMS error, absmax, finite values) over the finite elements."""
    xf = x.to(torch.float32)
    finite = torch.isfinite(xf) & torch.isfinite(y)
    xd, yd = xf[finite].double(), y[finite].double()
    denom = float(xd.pow(2).sum())
    err = math.sqrt(float((yd - xd).pow(2).sum()) / denom) if denom > 0 else 0.0
    absmax = float(xd.abs().max()) if xd.numel() else 0.0
    return err, absmax, int(finite.sum())


def _empty_failures(x: torch.Tensor, finite: int) -> list[str]:
    if x.numel() == 0:
        return ["no tokens to verify (the activations hold 0 tokens)"]
    if finite == 0:
        return ["no finite values: the activations are all NaN or infinite"]
    return []


def unquantized_layer(
    kv_data: Mapping[str, tuple[torch.Tensor, str]], host: tuple[float, float]
) -> tuple[KindStats, KindStats]:
    """A model-dtype cache: stored as it is (error 0); its scales are not read."""
    out = []
    for kind, scale in zip(("k", "v"), host, strict=True):
        x, src = kv_data[kind]
        _, absmax, finite = _error(x, x.to(torch.float32))
        out.append(
            KindStats(scale, absmax, 0.0, 0.0, 0.0, None, src, tuple(_empty_failures(x, finite)))
        )
    return out[0], out[1]


def self_scaled_layer(
    kv_data: Mapping[str, tuple[torch.Tensor, str]], kv_cache_dtype: str
) -> tuple[KindStats, KindStats]:
    """vLLM's per-token-head formats (``kvscale.kernel.per_token_head``): each token and head
    gets its own scale at write time; nothing saturates or underflows by a checkpoint scale."""
    from kvscale.kernel.per_token_head import dequantize_per_token_head, quantize_per_token_head

    out = []
    for kind in ("k", "v"):
        x, src = kv_data[kind]
        q = quantize_per_token_head(x, kv_cache_dtype)
        err, absmax, finite = _error(x, dequantize_per_token_head(q))
        out.append(
            KindStats(math.nan, absmax, 0.0, 0.0, err, None, src, tuple(_empty_failures(x, finite)))
        )
    return out[0], out[1]


def nvfp4_kernel_mismatches(
    layer: LayerScales,
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache_dtype: str,
    device: torch.device,
    generator: torch.Generator,
) -> tuple[int, int, int]:
    """kvscale's Triton NVFP4 write against the reference on one paged cache (padding slots
    included): differing bytes of K and of V where the reference is exact, and differing bytes
    where it is not (blocks whose bytes depend on the GPU's approximate reciprocal,
    ``kvscale.kernel.nvfp4``)."""
    from kvscale.core.verify.stats import BLOCK_SIZE, PADDING_FRACTION, POISON_BYTE
    from kvscale.kernel.nvfp4 import (
        NVFP4PageLayout,
        nvfp4_kv_cache_shape,
        reference_reshape_and_cache_nvfp4,
    )
    from kvscale.kernel.triton_nvfp4 import reshape_and_cache_nvfp4

    tokens, heads, head_size = key.shape
    layout = NVFP4PageLayout.create(heads, head_size, BLOCK_SIZE)
    num_blocks = max(1, -(-int(tokens * (1 + PADDING_FRACTION)) // BLOCK_SIZE) + 1)
    slots = torch.randperm(num_blocks * BLOCK_SIZE, generator=generator)[:tokens]
    padding = torch.rand(tokens, generator=generator) < PADDING_FRACTION
    slot_mapping = torch.where(padding, torch.full_like(slots, -1), slots).to(torch.int64)
    shape = nvfp4_kv_cache_shape(num_blocks, heads, BLOCK_SIZE, head_size)
    ks = torch.tensor([layer.k_host], dtype=torch.float32)
    vs = torch.tensor([layer.v_host], dtype=torch.float32)
    ref = torch.full(shape, POISON_BYTE, dtype=torch.uint8)
    report = reference_reshape_and_cache_nvfp4(
        key, value, ref, slot_mapping, kv_cache_dtype, ks, vs, track_ambiguity=True
    )
    got = torch.full(shape, POISON_BYTE, dtype=torch.uint8, device=device)
    reshape_and_cache_nvfp4(
        key.to(device),
        value.to(device),
        got,
        slot_mapping.to(device),
        kv_cache_dtype,
        ks.to(device),
        vs.to(device),
    )
    torch.cuda.synchronize(device)
    differ = got.cpu() != ref
    exact = (differ & ~report.ambiguous_bytes).reshape(num_blocks, 2, layout.side_bytes)
    return (
        int(exact[:, 0].sum()),
        int(exact[:, 1].sum()),
        int((differ & report.ambiguous_bytes).sum()),
    )


def nvfp4_layer(
    layer: LayerScales,
    kv_data: Mapping[str, tuple[torch.Tensor, str]],
    kv_cache_dtype: str,
    mismatched: tuple[int, int] | None = None,
) -> tuple[KindStats, KindStats]:
    """NVFP4 (``kvscale.kernel.nvfp4``, vLLM's SM100 write): the layer's k/v scale is the global
    dequantization scale of the e4m3 block scales. ``mismatched``: the kernel's differing bytes
    of K and V on exact blocks, when it ran (``nvfp4_kernel_mismatches``)."""
    from kvscale.kernel.nvfp4 import nvfp4_write_stats

    out = []
    for i, (kind, host) in enumerate((("k", layer.k_host), ("v", layer.v_host))):
        x, src = kv_data[kind]
        bad_bytes = None if mismatched is None else mismatched[i]
        failures = []
        if bad_bytes:
            failures.append(f"{bad_bytes} cache bytes differ from the reference writer")
        if not (math.isfinite(host) and host > 0):
            failures.append(
                f"the global scale ({host:.6g}) is not a positive finite number; write the "
                "calibrated amax / 2688 (kvscale calibrate --kv-cache-dtype nvfp4)"
            )
            out.append(KindStats(host, 0.0, 0.0, 0.0, math.nan, bad_bytes, src, tuple(failures)))
            continue
        if x.dtype == torch.float32:
            # NVFP4 writes take bf16/fp16; a float32 model is served in bf16.
            x = x.to(torch.bfloat16)
        stats = nvfp4_write_stats(x, host, kv_cache_dtype, track_ambiguity=False)
        _, absmax, finite = _error(x, x.to(torch.float32))
        failures.extend(_empty_failures(x, finite))
        zero, saturated = stats.zero_scale_fraction, stats.saturated_fraction
        if saturated > SATURATION_LIMIT:
            failures.append(
                f"{saturated:.2%} of 16-value blocks saturate (block scale at 448 or values "
                f"clipped at 6): the global scale ({host:.6g}) is too small for this data "
                f"(absmax {absmax:.6g} needs >= {absmax / 2688:.6g})"
            )
        elif zero > UNDERFLOW_LIMIT:
            failures.append(
                f"{zero:.2%} of 16-value blocks get a zero block scale and are stored as zeros: "
                f"the global scale ({host:.6g}) is too large for this data (absmax {absmax:.6g} "
                f"suggests about {absmax / 2688:.6g})"
            )
        elif stats.relative_rms_error > NVFP4_ERROR_LIMIT:
            failures.append(
                f"round-trip error {stats.relative_rms_error:.3g} exceeds {NVFP4_ERROR_LIMIT:g} "
                "for nvfp4"
            )
        out.append(
            KindStats(
                host,
                absmax,
                0.0,
                zero,
                stats.relative_rms_error,
                bad_bytes,
                src,
                tuple(failures),
                zero_blocks=zero,
                saturated_blocks=saturated,
            )
        )
    return out[0], out[1]


def synthetic_for(
    fmt: CacheFormat,
    tokens: int,
    heads: int,
    head_size: int,
    scale: Sequence[float],
    generator: torch.Generator,
) -> torch.Tensor:
    """K or V for a non-FP8 layer: heavy-tailed values with a few outlier channels, at unit
    magnitude for a format that scales itself, and for NVFP4 sized to the global scale (each
    head's absolute max at 98% of ``2688 x scale``, the largest a block scale of 448 holds)."""
    normal = torch.randn((tokens, heads, head_size), generator=generator)
    chi2 = torch.randn((tokens, heads, head_size, 4), generator=generator)
    x = normal / torch.sqrt(chi2.pow(2).sum(-1) / 4)
    channel = torch.ones(head_size)
    channel[torch.randperm(head_size, generator=generator)[: max(1, head_size // 64)]] = 6.0
    x = x * channel
    if fmt.scale_use is ScaleUse.GLOBAL_SCALE:
        per_head = torch.tensor(list(scale), dtype=torch.float32).reshape(-1).expand(heads)
        valid = torch.isfinite(per_head) & (per_head > 0)
        per_head = torch.where(valid, per_head, torch.ones_like(per_head))
        amax = x.abs().amax(dim=(0, 2)).clamp_min(1e-30)
        x = x * (per_head * 2688.0 * 0.98 / amax).reshape(1, heads, 1)
    return x.to(torch.bfloat16)
