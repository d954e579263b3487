"""The calibration statistic: running max of |K| and |V| where the engine caches them.

``capture_kv_amax`` runs the model over the calibration samples through ``attention_hook``
(``use_cache=False``: the attention function then gets exactly the new tokens, once each, in
every layer, sliding-window layers included) and keeps, per calibrated layer, a running max of
|K| and |V|, per tensor or per KV head, in float32. abs and max are exact in any float dtype and
bf16/fp16 -> float32 is exact, so taking them in the model dtype and converting the result
equals taking them in float32. Accumulators stay on the layer's device (no host sync per layer:
``device_map`` splits keep their speed) and are reduced once, on the host, at the end.

Nothing is stored but those accumulators: no activation outlives its attention call. The
forward pass asks for the last position's logits only (``logits_to_keep``, when the model takes
it), so calibrating costs less than a plain forward pass.

Padding (``batch_size > 1``): samples are right-padded and an ``attention_mask`` is passed, so
real tokens see exactly what they see alone (causal attention never looks right); padded
positions are zeroed before the statistic (|0| never raises a max) and not counted.

MLA layers (``AttentionLayer.latent``) are observed where their cache is written: the model runs
with ``use_cache=True`` and a fresh ``RecordingCache`` per forward pass, whose ``update`` gets the
new tokens' latent ``kv_c`` and post-RoPE ``k_pe`` once each (the attention function sees the
expanded per-head K/V, which the engine never caches). One scale per layer: vLLM 0.33.0's
``concat_and_cache_mla`` divides the whole ``[kv_c | k_pe]`` row by the k scale, so ``k_amax =
v_amax = max(amax(kv_c), amax(k_pe))`` (both parts kept in ``LayerCapture.latent_amax``), and the
holdout counts the row's saturated values. ``--strategy head`` is refused for them (one latent
"head").

NaN/inf: max propagates NaN and reaches inf, so a non-finite amax marks the layer's kind as
non-finite; it gets no scale (``CaptureResult.scales`` leaves it out).

Holdout (``holdout > 0``): ``holdout_indices`` picks evenly spread samples that the statistic never
sees; they run after all calibration samples, and for each layer and kind the fraction of their
values with ``abs(f32(x) / scale) > 464`` at the calibrated scale is reported: the cache write
clips exactly those (``kvscale.kernel.reference.clipped``; up to 464, half an ulp above 448,
values round to 448 as they would without the clamp).

``keep_final_hidden`` (batch 1, no holdout) also keeps, per sample, the decoder's last hidden
state (``model.get_decoder()``'s ``last_hidden_state``): what the causal-LM head turns into the
logits, so that ``kvscale.model.evaluate`` can compute the unquantized reference from it without
running the model again (``kvscale plan``: the calibration pass is the reference pass). The first
sample's pass then asks for all its logits and its loss (``CaptureResult.first_output``), against
which that recomputation is checked.

``capture_with_cache`` is an independent oracle for tests: a ``DynamicCache`` subclass records
the ``update`` inputs (batch 1, ``use_cache=True``), the other observation point of the engine's
cache content.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from kvscale.errors import UsageError
from kvscale.kernel.formats import E4M3FN
from kvscale.kernel.reference import clipped
from kvscale.model.hook import (
    HookError,
    RecordingCache,
    attention_hook,
    cache_kwarg_name,
    quiet_transformers,
)
from kvscale.model.load import AttentionLayer, LoadedModel, UnsupportedModelError
from kvscale.model.scales import E4M3_MAX, check_scale_options, kv_scales
from kvscale.progress import ProgressEvent, ProgressFn

__all__ = [
    "STRATEGIES",
    "CaptureResult",
    "LayerCapture",
    "capture_kv_amax",
    "capture_with_cache",
    "holdout_indices",
]

STRATEGIES = ("tensor", "head")


Amax = float | tuple[float, ...]


@dataclass(frozen=True)
class LayerCapture:
    layer: AttentionLayer
    k_amax: Amax
    """float32 max |K| (``tensor``) or one per KV head (``head``); NaN/inf when non-finite."""
    v_amax: Amax
    tokens: int
    """Calibration tokens this layer saw (padding excluded): the same for every layer."""
    holdout_tokens: int
    holdout_saturated_k: float | None
    """Fraction of held-out K values that saturate at the calibrated k scale; None without a
    holdout or without a scale (non-finite amax)."""
    holdout_saturated_v: float | None
    latent_amax: tuple[float, float] | None = None
    """MLA: (max |kv_c|, max |k_pe|); ``k_amax`` and ``v_amax`` are both their max."""

    @property
    def name(self) -> str:
        return self.layer.engine_name

    @property
    def k_finite(self) -> bool:
        return _finite(self.k_amax)

    @property
    def v_finite(self) -> bool:
        return _finite(self.v_amax)


@dataclass(frozen=True)
class CaptureResult:
    strategy: str
    headroom: float
    min_scale: float
    batch_size: int
    samples: int
    """Samples in the statistic (holdout excluded)."""
    tokens: int
    holdout_samples: int
    holdout_tokens: int
    layers: tuple[LayerCapture, ...]
    final_hidden: tuple[torch.Tensor, ...] | None = field(default=None, repr=False, compare=False)
    """With ``keep_final_hidden``: per sample, ``[1, tokens, hidden]`` on the model's device;
    None when the model has no decoder module whose output could be kept."""
    first_output: tuple[torch.Tensor, torch.Tensor] | None = field(
        default=None, repr=False, compare=False
    )
    """With ``final_hidden``: the model's own logits and loss on the first sample (that pass
    asks for every position's logits and for the loss): what ``evaluate_model`` checks the
    reference recomputed from the hidden state against, instead of a pass of its own."""

    @property
    def nonfinite_layers(self) -> tuple[str, ...]:
        """Engine names of layers whose K or V held NaN/inf (reported, no scale: exit 1)."""
        return tuple(lc.name for lc in self.layers if not (lc.k_finite and lc.v_finite))

    def scales(self, divisor: float = E4M3_MAX) -> dict[str, tuple[Amax | None, Amax | None]]:
        """Engine layer name -> (k_scale, v_scale) by ``scales.kv_scales`` (``divisor``: 448
        for FP8, an NVFP4 convention's); None for a kind with non-finite activations."""
        out: dict[str, tuple[Amax | None, Amax | None]] = {}
        for lc in self.layers:
            k = _scale(lc.k_amax, self.headroom, self.min_scale, divisor)
            v = _scale(lc.v_amax, self.headroom, self.min_scale, divisor)
            out[lc.name] = (k, v)
        return out


def _finite(value: Amax) -> bool:
    values = (value,) if isinstance(value, float) else value
    return all(math.isfinite(v) for v in values)


def _scale(amax: Amax, headroom: float, min_scale: float, divisor: float = E4M3_MAX) -> Amax | None:
    if not _finite(amax):
        return None
    return kv_scales(amax, headroom=headroom, min_scale=min_scale, divisor=divisor)


def holdout_indices(num_samples: int, fraction: float) -> tuple[int, ...]:
    """Which samples (indices in file order) the statistic leaves out for ``--holdout F``.

    ``k = round(num_samples * F)`` clipped to ``[1, num_samples - 1]``, evenly spread:
    sample ``floor((j + 0.5) * num_samples / k)`` for ``j < k``. ``F == 0``: none.
    """
    if not (math.isfinite(fraction) and 0.0 <= fraction < 1.0):
        raise UsageError(f"--holdout {fraction!r} must be a fraction in [0, 1)")
    if fraction == 0.0:
        return ()
    if num_samples < 2:
        raise UsageError(
            f"--holdout needs at least 2 samples (the data gave {num_samples})",
            hint="give more samples, or drop --holdout",
        )
    k = min(max(1, round(num_samples * fraction)), num_samples - 1)
    return tuple(int((j + 0.5) * num_samples / k) for j in range(k))


# --- the hot path ---------------------------------------------------------------------------


class _Slot:
    """Per-layer accumulators, on the layer's device."""

    __slots__ = ("calls", "hk", "hv", "k", "layer", "sk", "sv", "v")

    def __init__(self, layer: AttentionLayer) -> None:
        self.layer = layer
        self.calls = 0
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None
        self.sk: torch.Tensor | None = None  # holdout scales, broadcastable to [B, H, S, D]
        self.sv: torch.Tensor | None = None
        self.hk: torch.Tensor | None = None  # holdout saturation counts (int64)
        self.hv: torch.Tensor | None = None


def _amax(x: torch.Tensor, per_head: bool) -> torch.Tensor:
    if per_head:
        return x.abs().amax(dim=(0, 2, 3)).float()
    # One pass, no |x| temporary: max(|x|) == max(max(x), -min(x)); NaN propagates through
    # both (torch.aminmax, torch.maximum).
    lo, hi = torch.aminmax(x)
    return torch.maximum(hi, -lo).float().reshape(1)


def _running_max(acc: torch.Tensor | None, new: torch.Tensor) -> torch.Tensor:
    return new if acc is None else torch.maximum(acc, new)


def _saturated(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    # The cache write's own division (float32), then the values its saturating store clips.
    return clipped(x.float() / scale, E4M3FN).sum()


def _forward_kwargs(model: Any) -> dict[str, Any]:
    params = inspect.signature(model.forward).parameters
    kwargs: dict[str, Any] = {"use_cache": False}
    if "logits_to_keep" in params:
        # The last position, as a 1-D index tensor rather than the int 1: transformers slices
        # ``hidden[:, -1:, :]`` for an int (``slice_logits_to_keep``, v5.25), a view whose size-1
        # batch dim keeps the stride of all positions; torch 2.13's matmul then takes its bmm
        # path and copies the whole output embedding first (56 MB, 80 ms per sample for
        # SmolLM2 on the CPU, more than the 2.4 ms of the head itself). The index gives a fresh
        # [1, 1, hidden] tensor, the same row.
        kwargs["logits_to_keep"] = torch.tensor([-1])
    return kwargs


def _refuse_head_strategy_for_latent(layers: Sequence[AttentionLayer], strategy: str) -> None:
    """``--strategy head`` on an MLA layer is a UsageError: its cache row is one head."""
    latent = [layer for layer in layers if layer.latent is not None]
    if strategy == "head" and latent:
        raise UsageError(
            f"--strategy head: {latent[0].module_path}"
            + (f" and {len(latent) - 1} more" if len(latent) > 1 else "")
            + " are MLA layers, whose cache holds one latent row per token ([kv_c | k_pe], one "
            "head) written with one k scale",
            hint="use --strategy tensor",
        )


def _batches(
    samples: Sequence[Sequence[int]], order: Sequence[int], batch_size: int
) -> list[list[int]]:
    return [list(order[i : i + batch_size]) for i in range(0, len(order), batch_size)]


def _batch_tensors(
    samples: Sequence[Sequence[int]], batch: Sequence[int], device: torch.device
) -> tuple[torch.Tensor, torch.Tensor | None, int]:
    lengths = [len(samples[i]) for i in batch]
    width = max(lengths)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    for row, i in enumerate(batch):
        ids[row, : lengths[row]] = torch.tensor(samples[i], dtype=torch.long)
    mask = None
    if min(lengths) != width:
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, n in enumerate(lengths):
            mask[row, :n] = 1
        mask = mask.to(device)
    return ids.to(device), mask, sum(lengths)


def capture_kv_amax(
    loaded: LoadedModel,
    samples: Sequence[Sequence[int]],
    *,
    strategy: str = "tensor",
    batch_size: int = 1,
    holdout: float = 0.0,
    headroom: float = 1.0,
    min_scale: float = 0.0,
    keep_final_hidden: bool = False,
    progress: ProgressFn | None = None,
) -> CaptureResult:
    """Calibrate: the running max |K| / |V| of every layer of ``loaded.layers`` over ``samples``.

    ``samples`` are token id sequences (``CalibrationData.samples``), each non-empty.
    ``headroom``/``min_scale`` only serve the holdout saturation (the scale it is measured at);
    ``CaptureResult.scales()`` applies them too. Raises UsageError for bad options,
    UnsupportedModelError when a layer is not called exactly once per forward pass.
    """
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    if batch_size < 1:
        raise UsageError(f"--batch-size {batch_size} must be at least 1")
    check_scale_options(headroom, min_scale)
    if not samples:
        raise UsageError("no calibration sample")
    if any(len(s) == 0 for s in samples):
        raise UsageError("calibration samples must not be empty")
    _refuse_head_strategy_for_latent(loaded.layers, strategy)
    if keep_final_hidden and (batch_size != 1 or holdout):
        raise UsageError("keep_final_hidden keeps one state per sample: batch 1, no holdout")
    per_head = strategy == "head"
    held = holdout_indices(len(samples), holdout)
    held_set = set(held)
    calib = [i for i in range(len(samples)) if i not in held_set]
    model = loaded.model
    device = loaded.input_device
    slots = {
        id(_module(model, layer)): _Slot(layer) for layer in loaded.layers if layer.latent is None
    }
    latent_slots = {
        layer.layer_idx: _Slot(layer) for layer in loaded.layers if layer.latent is not None
    }
    state: dict[str, Any] = {"holdout": False, "mask": None, "masks": {}}

    def mask_for(dev: torch.device) -> torch.Tensor:
        masks: dict[torch.device, torch.Tensor] = state["masks"]
        m = masks.get(dev)
        if m is None:
            m = state["mask"].to(dev, non_blocking=True).bool()[:, None, :, None]
            masks[dev] = m
        return m

    def on_kv(module: Any, key: torch.Tensor, value: torch.Tensor, _: dict[str, Any]) -> None:
        slot = slots.get(id(module))
        if slot is None:
            return None
        slot.calls += 1
        if state["mask"] is not None:
            keep = mask_for(key.device)
            key = key.masked_fill(~keep, 0)
            value = value.masked_fill(~keep, 0)
        if not state["holdout"]:
            slot.k = _running_max(slot.k, _amax(key, per_head))
            slot.v = _running_max(slot.v, _amax(value, per_head))
            return None
        if slot.sk is not None:
            c = _saturated(key, slot.sk)
            slot.hk = c if slot.hk is None else slot.hk + c
        if slot.sv is not None:
            c = _saturated(value, slot.sv)
            slot.hv = c if slot.hv is None else slot.hv + c
        return None

    def on_update(layer_idx: int, kv_c: torch.Tensor, k_pe: torch.Tensor) -> None:
        # An MLA layer's cache write: kv_c [B, 1, S, kv_lora_rank], k_pe [B, 1, S, rope].
        slot = latent_slots.get(layer_idx)
        if slot is None:
            return None
        slot.calls += 1
        if state["mask"] is not None:
            keep = mask_for(kv_c.device)
            kv_c = kv_c.masked_fill(~keep, 0)
            k_pe = k_pe.masked_fill(~keep, 0)
        if not state["holdout"]:
            slot.k = _running_max(slot.k, _amax(kv_c, False))
            slot.v = _running_max(slot.v, _amax(k_pe, False))
            return None
        if slot.sk is not None:
            # The row's values, each through the one divide of concat_and_cache_mla.
            c = _saturated(kv_c, slot.sk) + _saturated(k_pe, slot.sk)
            slot.hk = c if slot.hk is None else slot.hk + c
        return None

    forward_kwargs = _forward_kwargs(model)
    cache_kwarg = cache_kwarg_name(model) if latent_slots else None
    every_slot = [*slots.values(), *latent_slots.values()]
    total = len(samples)
    done = 0
    tokens_done = 0
    calib_tokens = 0
    held_tokens = 0
    kept: list[Any] | None = None
    first: tuple[Any, Any] = (None, None)
    decoder = _decoder(model) if keep_final_hidden else None
    hook = None
    if decoder is not None:
        kept = []

        def keep(_module: Any, _args: Any, output: Any) -> None:
            assert kept is not None
            hidden = getattr(output, "last_hidden_state", None)
            if hidden is None and isinstance(output, tuple) and output:
                hidden = output[0]
            kept.append(hidden)

        hook = decoder.register_forward_hook(keep)
    if progress is not None:
        # The phase's start: a rate and an ETA need it (the next events come after a batch).
        progress(ProgressEvent("calibrate", 0, total, tokens=0))
    try:
        with attention_hook(model, on_kv), torch.inference_mode(), quiet_transformers():
            for phase, order in (("calib", calib), ("holdout", list(held))):
                if phase == "holdout":
                    if not order:
                        break
                    state["holdout"] = True
                    _prepare_holdout(slots, per_head, headroom, min_scale)
                    _prepare_latent_holdout(latent_slots, headroom, min_scale)
                for batch in _batches(samples, order, batch_size):
                    ids, mask, n_tokens = _batch_tensors(samples, batch, device)
                    state["mask"] = mask
                    state["masks"] = {}
                    kwargs = dict(forward_kwargs)
                    if mask is not None:
                        kwargs["attention_mask"] = mask
                    if cache_kwarg is not None:
                        # A fresh cache per pass: its update sees this batch's tokens once.
                        kwargs["use_cache"] = True
                        kwargs[cache_kwarg] = RecordingCache(model.config, on_update)
                    # The first sample's output serves as the check of the reference from
                    # the hidden states (CaptureResult.first_output): all its logits, its loss.
                    keep_output = kept is not None and done == 0
                    if keep_output:
                        kwargs.pop("logits_to_keep", None)
                        kwargs["labels"] = ids
                    out = model(input_ids=ids, **kwargs)
                    if keep_output:
                        first = (getattr(out, "logits", None), getattr(out, "loss", None))
                    del out
                    for slot in every_slot:
                        if slot.calls != 1:
                            raise UnsupportedModelError(
                                loaded.path,
                                f"{slot.layer.module_path} ran its attention {slot.calls} times in "
                                "one forward pass",
                            )
                        slot.calls = 0
                    done += len(batch)
                    tokens_done += n_tokens
                    if phase == "calib":
                        calib_tokens += n_tokens
                    else:
                        held_tokens += n_tokens
                    if progress is not None:
                        progress(ProgressEvent("calibrate", done, total, tokens=tokens_done))
    except HookError as exc:
        raise UnsupportedModelError(loaded.path, str(exc)) from None
    finally:
        if hook is not None:
            hook.remove()
    final_hidden = None
    first_output = None
    if kept is not None and len(kept) == len(samples):
        if all(isinstance(h, torch.Tensor) for h in kept):
            final_hidden = tuple(kept)
            if all(isinstance(t, torch.Tensor) for t in first):
                first_output = first

    layers = [_latent_capture(slot, calib_tokens, held_tokens) for slot in latent_slots.values()]
    for slot in slots.values():
        h = slot.layer.num_kv_heads * slot.layer.head_size
        hv = slot.layer.num_kv_heads * slot.layer.v_head_size
        layers.append(
            LayerCapture(
                layer=slot.layer,
                k_amax=_host(slot.k, per_head),
                v_amax=_host(slot.v, per_head),
                tokens=calib_tokens,
                holdout_tokens=held_tokens,
                holdout_saturated_k=_fraction(slot.hk, slot.sk, held_tokens * h),
                holdout_saturated_v=_fraction(slot.hv, slot.sv, held_tokens * hv),
            )
        )
    layers.sort(key=lambda lc: lc.layer.layer_idx)
    return CaptureResult(
        strategy=strategy,
        headroom=float(headroom),
        min_scale=float(min_scale),
        batch_size=batch_size,
        samples=len(calib),
        tokens=calib_tokens,
        holdout_samples=len(held),
        holdout_tokens=held_tokens,
        layers=tuple(layers),
        final_hidden=final_hidden,
        first_output=first_output,
    )


def _decoder(model: Any) -> Any:
    """The module whose output is the last hidden state the causal-LM head reads
    (``PreTrainedModel.get_decoder``), or None."""
    get = getattr(model, "get_decoder", None)
    if get is None:
        return None
    try:
        decoder = get()
    except (AttributeError, NotImplementedError, ValueError):
        return None
    if decoder is None or decoder is model:
        return None
    return decoder


def _latent_capture(slot: _Slot, calib_tokens: int, held_tokens: int) -> LayerCapture:
    assert slot.k is not None and slot.v is not None, "every layer is observed at least once"
    kv_c, k_pe = _host_float(slot.k), _host_float(slot.v)
    # torch.maximum keeps a NaN of either part (a Python max() could drop it).
    row = _host_float(torch.maximum(slot.k, slot.v))
    assert slot.layer.latent is not None
    saturated = _fraction(slot.hk, slot.sk, held_tokens * slot.layer.latent.width)
    return LayerCapture(
        layer=slot.layer,
        k_amax=row,
        v_amax=row,
        tokens=calib_tokens,
        holdout_tokens=held_tokens,
        holdout_saturated_k=saturated,
        holdout_saturated_v=saturated,
        latent_amax=(kv_c, k_pe),
    )


def _prepare_latent_holdout(slots: dict[int, _Slot], headroom: float, min_scale: float) -> None:
    """The one calibrated scale of each MLA layer (float32, from the row's amax), on its
    device."""
    for slot in slots.values():
        assert slot.k is not None and slot.v is not None
        scale = _scale(_host_float(torch.maximum(slot.k, slot.v)), headroom, min_scale)
        if scale is None:
            continue
        slot.sk = torch.tensor(scale, dtype=torch.float32, device=slot.k.device)


def _module(model: Any, layer: AttentionLayer) -> Any:
    return model.get_submodule(layer.module_path)


def _host(acc: torch.Tensor | None, per_head: bool) -> Amax:
    assert acc is not None, "every layer is observed at least once"
    values = [float(v) for v in acc.detach().to("cpu", torch.float32).reshape(-1).tolist()]
    return tuple(values) if per_head else values[0]


def _host_float(acc: torch.Tensor) -> float:
    return float(acc.detach().to("cpu", torch.float32).reshape(-1)[0].item())


def _fraction(count: torch.Tensor | None, scale: torch.Tensor | None, values: int) -> float | None:
    if scale is None or values == 0:
        return None
    n = 0 if count is None else int(count.item())
    return n / values


def _prepare_holdout(
    slots: dict[int, _Slot], per_head: bool, headroom: float, min_scale: float
) -> None:
    """Compute each layer's calibrated scales (float32, ``scales.kv_scales``) on the host once,
    and put them on the layer's device in a shape that broadcasts over ``[B, H, S, D]``."""
    for slot in slots.values():
        for kind in ("k", "v"):
            acc = getattr(slot, kind)
            amax = _host(acc, per_head)
            scale = _scale(amax, headroom, min_scale) if amax is not None else None
            if scale is None:
                continue
            values = list(scale) if isinstance(scale, tuple) else [scale]
            t = torch.tensor(values, dtype=torch.float32, device=acc.device)
            setattr(slot, "s" + kind, t.reshape(1, -1, 1, 1) if per_head else t.reshape(()))


# --- the oracle -----------------------------------------------------------------------------


def capture_with_cache(
    loaded: LoadedModel, samples: Sequence[Sequence[int]], *, strategy: str = "tensor"
) -> dict[str, tuple[Amax, Amax]]:
    """Engine layer name -> (k_amax, v_amax) from a ``DynamicCache`` subclass's ``update``
    inputs, batch 1, ``use_cache=True``: an observation point independent of the attention
    interface, for cross-checks. For an MLA layer these are the amax of ``kv_c`` and of ``k_pe``
    (``LayerCapture.latent_amax``), not the row's. Slower and memory-hungry (the cache keeps
    every sample's K/V); tests only."""
    if strategy not in STRATEGIES:
        raise UsageError(f"--strategy {strategy!r} is not one of {', '.join(STRATEGIES)}")
    per_head = strategy == "head"
    by_idx = {layer.layer_idx: layer for layer in loaded.layers}
    acc: dict[int, list[torch.Tensor]] = {}

    def record(layer_idx: int, key: torch.Tensor, value: torch.Tensor) -> None:
        if layer_idx not in by_idx:
            return
        # Deliberately another computation than the hot path: float32 first, then |x|, then max.
        dims = (0, 2, 3) if per_head else (0, 1, 2, 3)
        k = key.detach().float().abs().amax(dim=dims).cpu()
        v = value.detach().float().abs().amax(dim=dims).cpu()
        if layer_idx in acc:
            acc[layer_idx] = [
                torch.maximum(acc[layer_idx][0], k),
                torch.maximum(acc[layer_idx][1], v),
            ]
        else:
            acc[layer_idx] = [k, v]

    model = loaded.model
    name = cache_kwarg_name(model)
    with torch.inference_mode(), quiet_transformers():
        for sample in samples:
            ids = torch.tensor([list(sample)], dtype=torch.long, device=loaded.input_device)
            model(input_ids=ids, use_cache=True, **{name: RecordingCache(model.config, record)})
    out: dict[str, tuple[Amax, Amax]] = {}
    for idx, layer in by_idx.items():
        k, v = acc[idx]
        kv = [float(x) for x in k.reshape(-1).tolist()]
        vv = [float(x) for x in v.reshape(-1).tolist()]
        out[layer.engine_name] = (tuple(kv), tuple(vv)) if per_head else (kv[0], vv[0])
    return out
