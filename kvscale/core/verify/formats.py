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
from kvscale.core.verify.chunks import RelativeRmsError, Sample, draw_heavy_tailed
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


class _RoundTrip:
    """One kind of one layer through a cache's round trip, chunk by chunk: the relative RMS
    error, absmax and count over the elements finite before and after."""

    def __init__(self) -> None:
        self.error = RelativeRmsError()
        self.absmax = 0.0
        self.finite = 0
        self.values = 0

    def add(self, x: torch.Tensor, y: torch.Tensor | None = None) -> None:
        """``x`` written, ``y`` what the cache gives back (None: the absmax and counts only)."""
        xf = x.to(torch.float32)
        finite = torch.isfinite(xf)
        if y is not None:
            finite &= torch.isfinite(y)
        kept = xf[finite]
        if y is not None:
            self.error.add(kept, y[finite])
        self.finite += kept.numel()
        self.values += x.numel()
        if kept.numel():
            self.absmax = max(self.absmax, float(kept.abs().max()))

    def empty_failures(self) -> list[str]:
        if self.values == 0:
            return ["no tokens to verify (the activations hold 0 tokens)"]
        if self.finite == 0:
            return ["no finite values: the activations are all NaN or infinite"]
        return []


def unquantized_layer(
    kv_data: Mapping[str, tuple[Sample, str]], host: tuple[float, float]
) -> tuple[KindStats, KindStats]:
    """A model-dtype cache: stored as it is (error 0); its scales are not read."""
    out = []
    for kind, scale in zip(("k", "v"), host, strict=True):
        x, src = kv_data[kind]
        trip = _RoundTrip()
        for chunk in x.chunks():
            trip.add(chunk)
        out.append(
            KindStats(scale, trip.absmax, 0.0, 0.0, 0.0, None, src, tuple(trip.empty_failures()))
        )
    return out[0], out[1]


def self_scaled_layer(
    kv_data: Mapping[str, tuple[Sample, str]], kv_cache_dtype: str
) -> tuple[KindStats, KindStats]:
    """vLLM's per-token-head formats (``kvscale.kernel.per_token_head``): each token and head
    gets its own scale at write time; nothing saturates or underflows by a checkpoint scale."""
    from kvscale.kernel.per_token_head import dequantize_per_token_head, quantize_per_token_head

    out = []
    for kind in ("k", "v"):
        x, src = kv_data[kind]
        trip = _RoundTrip()
        for chunk in x.chunks():
            stored = quantize_per_token_head(chunk, kv_cache_dtype)
            trip.add(chunk, dequantize_per_token_head(stored))
        out.append(
            KindStats(
                math.nan,
                trip.absmax,
                0.0,
                0.0,
                trip.error.value(),
                None,
                src,
                tuple(trip.empty_failures()),
            )  # fmt: skip
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
    from kvscale.core.verify.stats import BLOCK_SIZE, POISON_BYTE, shuffled_slots
    from kvscale.kernel.nvfp4 import (
        NVFP4PageLayout,
        nvfp4_kv_cache_shape,
        reference_reshape_and_cache_nvfp4,
    )
    from kvscale.kernel.triton_nvfp4 import reshape_and_cache_nvfp4

    tokens, heads, head_size = key.shape
    layout = NVFP4PageLayout.create(heads, head_size, BLOCK_SIZE)
    slot_mapping, num_blocks = shuffled_slots(tokens, generator)
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
    kv_data: Mapping[str, tuple[Sample, str]],
    kv_cache_dtype: str,
    mismatched: tuple[int, int] | None = None,
) -> tuple[KindStats, KindStats]:
    """NVFP4 (``kvscale.kernel.nvfp4``, vLLM's SM100 write): the layer's k/v scale is the global
    dequantization scale of the e4m3 block scales. ``mismatched``: the kernel's differing bytes
    of K and V on exact blocks, when it ran (``nvfp4_kernel_mismatches``)."""
    from kvscale.kernel.nvfp4 import nvfp4_write_round_trip

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
        blocks = zero_blocks = saturated_blocks = 0
        error = RelativeRmsError()
        trip = _RoundTrip()
        for chunk in x.chunks():
            if chunk.dtype == torch.float32:
                # NVFP4 writes take bf16/fp16; a float32 model is served in bf16.
                chunk = chunk.to(torch.bfloat16)
            counts, written, read = nvfp4_write_round_trip(
                chunk, host, kv_cache_dtype, track_ambiguity=False
            )
            blocks += counts.blocks
            zero_blocks += counts.zero_scale_blocks
            saturated_blocks += counts.saturated_blocks
            error.add(written, read)
            trip.add(chunk)
        absmax = trip.absmax
        failures.extend(trip.empty_failures())
        zero = zero_blocks / blocks if blocks else 0.0
        saturated = saturated_blocks / blocks if blocks else 0.0
        relative_rms_error = error.value()
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
        elif relative_rms_error > NVFP4_ERROR_LIMIT:
            failures.append(
                f"round-trip error {relative_rms_error:.3g} exceeds {NVFP4_ERROR_LIMIT:g} for nvfp4"
            )
        out.append(
            KindStats(
                host,
                absmax,
                0.0,
                zero,
                relative_rms_error,
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
) -> Sample:
    """K or V for a non-FP8 layer: heavy-tailed values with a few outlier channels, at unit
    magnitude for a format that scales itself, and for NVFP4 sized to the global scale (each
    head's absolute max at 98% of ``2688 x scale``, the largest a block scale of 448 holds)."""
    if fmt.scale_use is not ScaleUse.GLOBAL_SCALE:
        return draw_heavy_tailed(tokens, heads, head_size, generator, None)
    per_head = torch.tensor(list(scale), dtype=torch.float32).reshape(-1).expand(heads)
    valid = torch.isfinite(per_head) & (per_head > 0)
    per_head = torch.where(valid, per_head, torch.ones_like(per_head))

    def sizing(amax: torch.Tensor) -> torch.Tensor:
        return per_head * 2688.0 * 0.98 / amax.clamp_min(1e-30)

    return draw_heavy_tailed(tokens, heads, head_size, generator, sizing)
