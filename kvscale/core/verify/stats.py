"""One layer through the cache write, measured: the thresholds a layer must meet, synthetic K/V
sized to the scale, and the statistics of a write (saturated, underflow, round-trip error, bytes
that differ between the kernel and the reference).

Thresholds (documented in the README and ``kvscale verify --help``), per layer and kind:

* every scale finite and positive, host float == device tensor (bit for bit);
* ``mismatched_bytes == 0`` when the kernel ran (padding slots must stay untouched);
* ``saturated <= SATURATION_LIMIT``: the fraction of values whose ``x / scale`` lies beyond the
  format's finite max (clipped to +-max: the scale is too small for the data);
* ``underflow <= UNDERFLOW_LIMIT``: the fraction of nonzero values stored as zero (the scale is
  far too large for the data);
* ``rel_rms_error <= ERROR_LIMIT[format]``: ``||dequant(fp8) - x|| / ||x||`` over finite values,
  the round-trip error a calibrated scale keeps near the format's rounding noise (about 3% for
  e4m3, 6% for e5m2).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from kvscale.core.verify.chunks import (
    CHUNK_BYTES,
    HeldSample,
    RelativeRmsError,
    Sample,
    chunk_slots,
    chunk_values,
    draw_heavy_tailed,
    row_fits,
)
from kvscale.core.verify.target import LayerScales
from kvscale.engine.base import CacheWrite
from kvscale.errors import (
    InputError,
    LimitExceededError,
)
from kvscale.kernel.formats import FP8Format
from kvscale.kernel.mla import reference_concat_and_cache_mla, vllm_mla_skip_scale
from kvscale.kernel.reference import clipped, dequantize, reference_reshape_and_cache_flash

SATURATION_LIMIT = 1e-3


UNDERFLOW_LIMIT = 1e-2


ERROR_LIMIT = {"e4m3fn": 0.08, "e4m3fnuz": 0.08, "e5m2": 0.16}


POISON_BYTE = 0xA5
"""What the caches hold before the write: any byte the kernel leaves must still be this."""


PADDING_FRACTION = 0.0625


BLOCK_SIZE = 16


@dataclass(frozen=True)
class KindStats:
    scale: float
    absmax: float
    saturated: float
    underflow: float
    rel_rms_error: float
    mismatched_bytes: int | None
    data: str
    """``activations``, ``model`` or ``synthetic``."""
    failures: tuple[str, ...] = ()
    zero_blocks: float | None = None
    """NVFP4: the fraction of 16-value blocks stored with a zero block scale although they held
    a nonzero value (None for other formats)."""
    saturated_blocks: float | None = None
    """NVFP4: the fraction of blocks whose scale saturates at e4m3's 448 or whose values clip
    at e2m1's 6 (None for other formats)."""

    @property
    def passed(self) -> bool:
        return not self.failures


def synthetic_activations(
    tokens: int,
    heads: int,
    head_size: int,
    scale: Sequence[float],
    fmt: FP8Format,
    generator: torch.Generator,
) -> Sample:
    """K or V that looks like real attention activations, sized to the scale.

    Student-t (4 degrees of freedom) per element for heavy tails, times per-channel magnitudes
    with a few outlier channels (as in real K projections), each head scaled so that its
    absolute max is about 1.02 x scale x fp8_max: the bulk exercises precision, the largest few
    values saturation. Samples too small for the saturation budget end just under the limit.
    A sample larger than a chunk is drawn chunk by chunk (``chunks.draw_heavy_tailed``).
    """
    per_head = torch.tensor(list(scale), dtype=torch.float32).reshape(-1)
    if per_head.numel() == 1:
        per_head = per_head.expand(heads)
    valid = torch.isfinite(per_head) & (per_head > 0)
    per_head = torch.where(valid, per_head, torch.ones_like(per_head))
    # Calibration sets scale = amax / fp8_max on its own data; new data overshoots a little.
    # Put the max 2% past the limit, so the largest few values saturate, when the sample is
    # large enough for those few to stay well inside the saturation budget.
    overshoot = 1.02 if tokens * head_size * SATURATION_LIMIT >= 4 else 0.98

    def sizing(amax: torch.Tensor) -> torch.Tensor:
        return per_head * fmt.max_finite * overshoot / amax.clamp_min(1e-30)

    return draw_heavy_tailed(tokens, heads, head_size, generator, sizing)


def with_failure(stats: KindStats, reason: str) -> KindStats:
    return replace(stats, failures=(*stats.failures, reason))


def shuffled_slots(tokens: int, generator: torch.Generator) -> tuple[torch.Tensor, int]:
    """Where the cache write puts each token: distinct slots of a cache about 6% larger than the
    tokens, in shuffled order, with about one token in 16 a padding entry (slot -1, written
    nowhere). Returns the slot mapping and the cache's block count."""
    num_blocks = max(1, -(-int(tokens * (1 + PADDING_FRACTION)) // BLOCK_SIZE) + 1)
    slots = torch.randperm(num_blocks * BLOCK_SIZE, generator=generator)[:tokens]
    padding = torch.rand(tokens, generator=generator) < PADDING_FRACTION
    slot_mapping = torch.where(padding, torch.full_like(slots, -1), slots).to(torch.int64)
    return slot_mapping, num_blocks


def _places(slot_mapping: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The live tokens of a slot mapping, and the block and offset each was written to."""
    live = slot_mapping >= 0
    blocks = torch.div(slot_mapping[live], BLOCK_SIZE, rounding_mode="floor")
    return live, blocks, slot_mapping[live] - blocks * BLOCK_SIZE


def run_layer(
    layer: LayerScales,
    kv_data: Mapping[str, tuple[Sample, str]],
    kv_name: str,
    fmt: FP8Format,
    device: torch.device,
    kernel: Callable[..., None] | None,
    generator: torch.Generator,
    engine_write: CacheWrite | None = None,
    engine_kernel: Callable[..., None] | None = None,
) -> tuple[KindStats, KindStats]:
    """Write one layer's K/V through the cache write and measure it.

    ``kernel`` (kvscale's, on the GPU) is compared byte for byte with the reference writer.
    ``engine_write`` (the serving engine's own write where it differs from vLLM's CUDA kernel,
    e.g. SGLang's or vLLM's Triton backend) gives the bytes the statistics describe.
    ``engine_kernel`` (the engine's own GPU function, ``--engine-kernel``) is compared with
    kvscale's kernel: each differing byte is reported as an engine problem.

    Without a kernel the reference writes and measures the layer chunk by chunk
    (``core/verify/chunks.py``), each chunk's live tokens into a cache of their own, in the
    order of the layer's shuffled slots: the statistics are those of the whole layer."""
    key, key_src = kv_data["k"]
    value, value_src = kv_data["v"]
    if key.shape != value.shape:
        # K and V must share a slot mapping; fall back to the smaller common token count (of
        # captured K and V: synthetic ones are drawn with one).
        assert isinstance(key, HeldSample) and isinstance(value, HeldSample)
        tokens = min(key.shape[0], value.shape[0])
        key, value = HeldSample(key.values[:tokens]), HeldSample(value.values[:tokens])
    tokens, heads, head_size = key.shape
    k_scale = scale_tensor(layer.k_device, heads)
    v_scale = scale_tensor(layer.v_device, heads)
    slot_mapping, num_blocks = shuffled_slots(tokens, generator)
    written_with = {"k": k_scale, "v": v_scale}
    read_with = dict(written_with)
    stored_kv = kv_name
    if engine_write is not None:
        stored_kv = engine_write.stored_kv_cache_dtype
        if engine_write.scale_read is not None:
            read_with = {kind: engine_write.scale_read(s) for kind, s in written_with.items()}
    tallies = {"k": KindTally(), "v": KindTally()}
    mismatched: dict[str, int | None] = {"k": None, "v": None}
    engine_differs: dict[str, int] = {"k": 0, "v": 0}
    if kernel is not None:
        whole_key, whole_value = key.whole(), value.whole()
        # vLLM's flash layout: one [blocks, 2, block_size, heads, head] tensor; K and V are
        # strided views of it.
        ref_cache = torch.full(
            (num_blocks, 2, BLOCK_SIZE, heads, head_size), POISON_BYTE, dtype=torch.uint8
        )
        reference_reshape_and_cache_flash(
            whole_key, whole_value, ref_cache[:, 0], ref_cache[:, 1], slot_mapping, kv_name,
            k_scale, v_scale,
        )  # fmt: skip
        dev_cache = torch.full_like(ref_cache, POISON_BYTE, device=device)
        kernel(
            whole_key.to(device),
            whole_value.to(device),
            dev_cache[:, 0],
            dev_cache[:, 1],
            slot_mapping.to(device),
            kv_name,
            k_scale.to(device),
            v_scale.to(device),
        )
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        got = dev_cache.cpu()
        for i, kind in enumerate(("k", "v")):
            mismatched[kind] = int((got[:, i] != ref_cache[:, i]).sum())
        if engine_kernel is not None:
            engine_cache = torch.full_like(ref_cache, POISON_BYTE, device=device)
            engine_kernel(
                whole_key.to(device), whole_value.to(device), engine_cache[:, 0],
                engine_cache[:, 1], slot_mapping.to(device), kv_name, k_scale.to(device),
                v_scale.to(device),
            )  # fmt: skip
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            theirs, ours = engine_cache.cpu(), dev_cache.cpu()
            for i, kind in enumerate(("k", "v")):
                engine_differs[kind] = int((theirs[:, i] != ours[:, i]).sum())
        live, blocks, offsets = _places(slot_mapping)
        for i, (kind, x) in enumerate((("k", whole_key), ("v", whole_value))):
            _tally_written(
                tallies[kind], x[live], ref_cache[:, i][blocks, offsets], written_with[kind],
                read_with[kind], stored_kv, fmt, engine_write,
            )  # fmt: skip
    else:
        for (start, stop), k_rows, v_rows in zip(
            key.spans, key.chunks(), value.chunks(), strict=True
        ):
            mapping, chunk_blocks = chunk_slots(slot_mapping[start:stop], BLOCK_SIZE)
            cache = torch.full(
                (chunk_blocks, 2, BLOCK_SIZE, heads, head_size), POISON_BYTE, dtype=torch.uint8
            )
            reference_reshape_and_cache_flash(
                k_rows, v_rows, cache[:, 0], cache[:, 1], mapping, kv_name, k_scale, v_scale
            )
            live, blocks, offsets = _places(mapping)
            for i, (kind, x) in enumerate((("k", k_rows), ("v", v_rows))):
                _tally_written(
                    tallies[kind], x[live], cache[:, i][blocks, offsets], written_with[kind],
                    read_with[kind], stored_kv, fmt, engine_write,
                )  # fmt: skip
    out = []
    for kind, src, host in (("k", key_src, layer.k_host), ("v", value_src, layer.v_host)):
        stats = tallies[kind].stats(read_with[kind], fmt, host, mismatched[kind], src)
        if engine_differs[kind]:
            stats = with_failure(
                stats,
                f"the engine's own cache write differs from kvscale's kernel in "
                f"{engine_differs[kind]} bytes (engine problem: its cache holds other values "
                "than the scales say)",
            )
        out.append(stats)
    return out[0], out[1]


def _tally_written(
    tally: KindTally,
    written: torch.Tensor,
    stored: torch.Tensor,
    write_scale: torch.Tensor,
    read_scale: torch.Tensor,
    stored_kv: str,
    fmt: FP8Format,
    engine_write: CacheWrite | None,
) -> None:
    """Add the written tokens and what the cache holds for them (the engine's own bytes where
    its write differs) to one kind's tally."""
    if engine_write is not None:
        stored = engine_write.write(written, write_scale)
    tally.add(written, stored, read_scale, stored_kv, fmt)


LATENT_KINDS = ("kv_c", "k_pe")
"""An MLA layer's activations: ``<layer>.kv_c`` ``[tokens, kv_lora_rank]`` and ``<layer>.k_pe``
``[tokens, rope_dim]`` (the two inputs of ``concat_and_cache_mla``)."""


def latent_activations(
    activations: Mapping[str, torch.Tensor], layer: str, path: Path | None
) -> tuple[torch.Tensor, int] | None:
    """An MLA layer's cache rows ``[tokens, kv_lora_rank + rope_dim]`` and its kv_lora_rank from
    ``<layer>.kv_c`` / ``<layer>.k_pe``; None when the file holds neither. Raises InputError when
    it holds one without the other, or two that do not make rows."""
    kv_c = activations.get(f"{layer}.kv_c")
    k_pe = activations.get(f"{layer}.k_pe")
    if kv_c is None and k_pe is None:
        return None
    where = path or "activations"
    if kv_c is None or k_pe is None:
        have, lack = ("kv_c", "k_pe") if k_pe is None else ("k_pe", "kv_c")
        raise InputError(
            where, f"holds {layer}.{have} but no {layer}.{lack}: an MLA row needs both halves"
        )
    for kind, t in (("kv_c", kv_c), ("k_pe", k_pe)):
        if t.dim() != 2 or t.shape[1] < 1 or t.dtype not in _ACTIVATION_DTYPES:
            raise InputError(
                where,
                f"{layer}.{kind} must be [tokens, width] in bf16/fp16/fp32, got "
                f"{list(t.shape)} {t.dtype}",
            )
    if kv_c.shape[0] != k_pe.shape[0] or kv_c.dtype != k_pe.dtype:
        raise InputError(
            where,
            f"{layer}.kv_c is {list(kv_c.shape)} {kv_c.dtype} but {layer}.k_pe is "
            f"{list(k_pe.shape)} {k_pe.dtype}: the halves of one row share tokens and dtype",
        )
    width = int(kv_c.shape[1] + k_pe.shape[1])
    if not row_fits(width):
        raise LimitExceededError(
            where,
            f"{layer}.kv_c and {layer}.k_pe make rows of {width:,} values, more than verify "
            f"holds at once ({chunk_values():,} values, its {CHUNK_BYTES >> 20} MiB chunk)",
            hint="an MLA row is kv_lora_rank + qk_rope_head_dim, 576 in DeepSeek-V3",
        )
    return torch.cat([kv_c, k_pe], dim=1), int(kv_c.shape[1])


_ACTIVATION_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def run_latent_layer(
    layer: LayerScales,
    rows: torch.Tensor,
    data: str,
    kv_lora_rank: int,
    kv_name: str,
    fmt: FP8Format,
    device: torch.device,
    kernel: Callable[..., None] | None,
    generator: torch.Generator,
) -> KindStats:
    """Write one MLA layer's cache rows ``[tokens, kv_lora_rank + rope_dim]`` (``[kv_c | k_pe]``)
    through vLLM 0.33.0's ``concat_and_cache_mla`` with the layer's k scale and the
    ``skip_scale`` vLLM passes (``MLAAttention.update_kv_cache``), into a poisoned cache at
    shuffled slots with padding entries, and measure the row: the latent has no V of its own and
    its v scale is never read, so one ``KindStats`` describes the layer.

    ``kernel`` (kvscale's Triton ``concat_and_cache_mla``, on the GPU) is compared byte for byte
    with the reference, padding rows included."""
    tokens, width = rows.shape
    if len(layer.k_device) != 1:
        raise InputError(
            "scales",
            f"{layer.name} is an MLA layer (one latent row, one k scale), but holds "
            f"{len(layer.k_device)} per-head k scales",
        )
    k_scale = scale_tensor(layer.k_device, 1)
    skip_scale = vllm_mla_skip_scale(kv_name, layer.k_device[0])
    slot_mapping, num_blocks = shuffled_slots(tokens, generator)
    tally = KindTally()
    mismatched: int | None = None
    if kernel is not None:
        kv_c, k_pe = rows[:, :kv_lora_rank], rows[:, kv_lora_rank:]
        ref_cache = torch.full((num_blocks, BLOCK_SIZE, width), POISON_BYTE, dtype=torch.uint8)
        reference_concat_and_cache_mla(
            kv_c, k_pe, ref_cache, slot_mapping, kv_name, k_scale, skip_scale
        )
        dev_cache = torch.full_like(ref_cache, POISON_BYTE, device=device)
        kernel(
            kv_c.to(device), k_pe.to(device), dev_cache, slot_mapping.to(device), kv_name,
            k_scale.to(device), skip_scale,
        )  # fmt: skip
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        mismatched = int((dev_cache.cpu() != ref_cache).sum())
        live, blocks, offsets = _places(slot_mapping)
        tally.add(rows[live], ref_cache[blocks, offsets], k_scale, kv_name, fmt)
    else:
        held = HeldSample(rows)
        for (start, stop), chunk in zip(held.spans, held.chunks(), strict=True):
            mapping, chunk_blocks = chunk_slots(slot_mapping[start:stop], BLOCK_SIZE)
            cache = torch.full((chunk_blocks, BLOCK_SIZE, width), POISON_BYTE, dtype=torch.uint8)
            reference_concat_and_cache_mla(
                chunk[:, :kv_lora_rank], chunk[:, kv_lora_rank:], cache, mapping, kv_name,
                k_scale, skip_scale,
            )  # fmt: skip
            live, blocks, offsets = _places(mapping)
            tally.add(chunk[live], cache[blocks, offsets], k_scale, kv_name, fmt)
    return tally.stats(k_scale, fmt, layer.k_host, mismatched, data)


def scale_tensor(values: tuple[float, ...], heads: int) -> torch.Tensor:
    t = torch.tensor(values, dtype=torch.float32)
    if t.numel() not in (1, heads):
        raise InputError("scales", f"{t.numel()} per-head scales for {heads} kv heads")
    return t if t.numel() > 1 else t.reshape(1)


class KindTally:
    """One kind (K or V) of one layer, measured chunk by chunk: the counts, maximum and error
    sums ``kind_stats`` reads, added up exactly as they come out of the whole layer."""

    def __init__(self) -> None:
        self.values = 0
        self.finite = 0
        self.saturated = 0
        self.nonzero = 0
        self.underflow = 0
        self.absmax = 0.0
        self.error = RelativeRmsError()

    def add(
        self, x: torch.Tensor, stored: torch.Tensor, scale: torch.Tensor, kv_name: str,
        fmt: FP8Format,
    ) -> None:  # fmt: skip
        """``x`` written, ``stored`` the cache's bytes for it, ``scale`` what reads them."""
        xf = x.to(torch.float32)
        s = scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())
        finite = torch.isfinite(xf)
        self.values += x.numel()
        self.finite += int(finite.sum())
        self.saturated += int((clipped(xf / s, fmt) & finite).sum())
        deq = dequantize(stored, scale, kv_name)
        nonzero = finite & (xf != 0)
        self.nonzero += int(nonzero.sum())
        self.underflow += int(((deq == 0) & nonzero).sum())
        kept = xf[finite]
        self.error.add(kept, deq[finite])
        if kept.numel():
            self.absmax = max(self.absmax, float(kept.abs().max()))

    def stats(
        self,
        scale: torch.Tensor,
        fmt: FP8Format,
        host: float,
        mismatched: int | None,
        data: str,
    ) -> KindStats:
        saturated = float(self.saturated) / max(1, self.finite)
        underflow = float(self.underflow) / max(1, self.nonzero)
        err = self.error.value()
        absmax = self.absmax
        failures: list[str] = []
        scales = scale.reshape(-1).tolist()
        valid_scale = all(math.isfinite(v) and v > 0 for v in scales)
        if not valid_scale:
            # A zero, negative or NaN scale: what it does to the data (everything saturates, or
            # nothing survives) follows from that alone; saturation and underflow say nothing
            # more.
            failures.append(
                f"the scale ({host:.6g}) is not a positive finite number; write the calibrated "
                "amax / fp8_max (kvscale calibrate)"
            )
        if self.values == 0:
            failures.append("no tokens to verify (the activations hold 0 tokens)")
        elif self.finite == 0:
            failures.append("no finite values: the activations are all NaN or infinite")
        if mismatched:
            failures.append(f"{mismatched} cache bytes differ from the reference writer")
        if valid_scale and saturated > SATURATION_LIMIT:
            need = absmax / fmt.max_finite
            failures.append(
                f"{saturated:.2%} of values saturate at +-{fmt.max_finite:g} x scale: the scale "
                f"({host:.6g}) is too small for this data (absmax {absmax:.6g} needs >= "
                f"{need:.6g}); recalibrate the KV scales on representative data"
            )
        elif valid_scale and underflow > UNDERFLOW_LIMIT:
            failures.append(
                f"{underflow:.2%} of nonzero values are stored as zero: the scale ({host:.6g}) "
                "is too large for this data; recalibrate"
            )
        if (
            valid_scale
            and err > ERROR_LIMIT[fmt.name]
            and not (saturated > SATURATION_LIMIT or underflow > UNDERFLOW_LIMIT)
        ):
            failures.append(
                f"round-trip error {err:.3g} exceeds {ERROR_LIMIT[fmt.name]:g} for {fmt.name}"
            )
        return KindStats(host, absmax, saturated, underflow, err, mismatched, data, tuple(failures))


def kind_stats(
    x: torch.Tensor,
    stored: torch.Tensor,
    scale: torch.Tensor,
    kv_name: str,
    fmt: FP8Format,
    host: float,
    mismatched: int | None,
    data: str,
) -> KindStats:
    """The statistics of writing ``x`` whole (``stored``: what the cache holds for it)."""
    tally = KindTally()
    tally.add(x, stored, scale, kv_name, fmt)
    return tally.stats(scale, fmt, host, mismatched, data)
