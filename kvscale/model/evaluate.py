"""``verify --model``: what a checkpoint's KV scales do to the model, down to perplexity.

For every evaluation sample (batch 1, ``use_cache=False``, through ``attention_hook``) the model
runs once per variant:

* ``unquantized``: K/V untouched, what an unquantized cache holds;
* ``fp8``: every calibrated layer's K and V replaced, at the attention function (the cache
  point), by ``dequantize(quantize(x, scale))`` at TARGET's per-layer scales;
* ``unit_scales``: the same with every scale 1.0 (what the engine does when scales are missing).

``quantize(x, scale) -> uint8 bits`` is an argument: ``x`` is ``[tokens, num_kv_heads,
head_size]`` in the model dtype, ``scale`` a float32 tensor of 1 or ``num_kv_heads`` elements on
x's device; the CLI passes kvscale's CPU reference writer
(``functools.partial(kvscale.kernel.reference.quantize_to_bits, fmt=E4M3FN)``) or the Triton
kernel. Dequantization is vLLM's attention-side ``fp8 * scale`` in float32
(``kvscale.kernel.reference.dequantize``), then the cast to the model dtype the attention
function computes in. With a float32 model the K/V the attention sees are exactly
``fp8_value * scale``; with bf16/fp16 they are that product rounded once to the model dtype (the
engine's kernels multiply inside the attention in float32: a difference of at most half an ulp
of the model dtype per element, far below the FP8 rounding itself).

Each variant's loss is the model's own (``model(input_ids, labels=input_ids).loss``: mean
next-token cross entropy in float32); over several samples the mean is weighted by predicted
tokens. KL is ``KL(P_unquantized || P_variant)`` of the next-token distributions at the same
positions (``_Reference``: in chunks of ``KL_CHUNK`` positions, each clamped at 0), mean and max
over all positions.

Per layer and kind, on the *unquantized* run's K/V (the model's own activations: the same
tensors ``calibrate`` measures and ``--activations-out`` saves, so ``verify --activations`` on
that file reproduces these numbers): absmax, saturated fraction (``abs(f32(x) / scale) > fp8
max``), underflow fraction (nonzero values stored as zero), relative RMS round-trip error, with
the bytes ``quantize`` wrote; the definitions of ``kvscale.core.verify._stats``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import LimitExceededError, UsageError
from kvscale.io.staging import write_file_atomic
from kvscale.kernel.formats import FP8_FORMATS, FP8Format
from kvscale.kernel.reference import clipped
from kvscale.limits import MAX_ACTIVATION_BYTES
from kvscale.model.hook import HookError, attention_hook, quiet_transformers
from kvscale.model.load import AttentionLayer, LoadedModel, UnsupportedModelError
from kvscale.progress import ProgressEvent, ProgressFn

__all__ = [
    "ACTIVATION_DTYPES",
    "KL_CHUNK",
    "MAX_ACTIVATION_BYTES",
    "VARIANTS",
    "KindEval",
    "LayerEval",
    "ModelEvaluation",
    "QuantizeFn",
    "VariantResult",
    "evaluate_model",
]

QuantizeFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``quantize(x [tokens, kv_heads, head_size], scale float32 [1] | [kv_heads]) -> uint8 bits``."""

VARIANTS = ("unquantized", "fp8", "unit_scales")
KL_CHUNK = 256
ACTIVATION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


ScaleValue = float | Sequence[float]


@dataclass(frozen=True)
class VariantResult:
    name: str
    loss: float
    """Mean next-token cross entropy (nats) over the predicted tokens."""
    ppl: float
    kl_mean: float
    """Mean KL(unquantized || this) per predicted position; 0.0 for ``unquantized``."""
    kl_max: float
    tokens: int
    """Predicted tokens (each sample's length minus one)."""


@dataclass(frozen=True)
class KindEval:
    scale: float | tuple[float, ...]
    absmax: float
    """Largest finite |x| (0.0 when none is finite)."""
    saturated: float
    underflow: float
    rel_rms_error: float
    values: int
    nonfinite: int


@dataclass(frozen=True)
class LayerEval:
    layer: AttentionLayer
    k: KindEval
    v: KindEval

    @property
    def name(self) -> str:
        return self.layer.engine_name


@dataclass(frozen=True)
class ModelEvaluation:
    samples: int
    tokens: int
    """Tokens run through the model (per variant)."""
    variants: tuple[VariantResult, ...]
    layers: tuple[LayerEval, ...]
    activations_path: str | None

    def variant(self, name: str) -> VariantResult:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)


# --- accumulators ---------------------------------------------------------------------------


class _KindAcc:
    """Streaming sums for one layer and kind, on the layer's device."""

    __slots__ = ("absmax", "count", "err2", "nonzero", "numel", "sat", "under", "x2")

    def __init__(self) -> None:
        self.numel = 0
        self.count: torch.Tensor | int = 0
        self.sat: torch.Tensor | int = 0
        self.under: torch.Tensor | int = 0
        self.nonzero: torch.Tensor | int = 0
        self.err2: torch.Tensor | float = 0.0
        self.x2: torch.Tensor | float = 0.0
        self.absmax: torch.Tensor | None = None

    def add(self, x: torch.Tensor, deq: torch.Tensor, scale: torch.Tensor, fmt: FP8Format) -> None:
        # x, deq: [T, H, D]; scale broadcastable ([H, 1] or scalar). Same formulas as
        # kvscale.core.verify._stats, summed instead of averaged so that samples can stream.
        xf = x.float()
        fin = torch.isfinite(xf)
        y = xf / scale
        nonzero = fin & (xf != 0)
        self.numel += xf.numel()
        self.count = self.count + fin.sum()
        self.sat = self.sat + (clipped(y, fmt) & fin).sum()
        self.nonzero = self.nonzero + nonzero.sum()
        self.under = self.under + ((deq == 0) & nonzero).sum()
        xd = torch.where(fin, xf, 0.0).double()
        dd = torch.where(fin, deq, 0.0).double()
        self.err2 = self.err2 + (dd - xd).pow(2).sum()
        self.x2 = self.x2 + xd.pow(2).sum()
        m = xd.abs().amax() if xd.numel() else torch.zeros((), dtype=torch.float64)
        self.absmax = m if self.absmax is None else torch.maximum(self.absmax, m)

    def result(self, scale: float | tuple[float, ...]) -> KindEval:
        count = int(self.count)
        nonzero = int(self.nonzero)
        x2 = float(self.x2)
        err = math.sqrt(float(self.err2) / x2) if x2 > 0 else 0.0
        return KindEval(
            scale=scale,
            absmax=float(self.absmax) if self.absmax is not None else 0.0,
            saturated=int(self.sat) / max(1, count),
            underflow=int(self.under) / max(1, nonzero),
            rel_rms_error=err,
            values=self.numel,
            nonfinite=self.numel - count,
        )


class _Layer:
    __slots__ = (
        "k_acc",
        "k_host",
        "k_scale",
        "k_unit",
        "layer",
        "v_acc",
        "v_host",
        "v_scale",
        "v_unit",
        "saved_k",
        "saved_v",
    )

    def __init__(self, layer: AttentionLayer, k: ScaleValue, v: ScaleValue) -> None:
        self.layer = layer
        self.k_host = _host_scale(layer, "k", k)
        self.v_host = _host_scale(layer, "v", v)
        self.k_scale: torch.Tensor | None = None  # on the layer's device, set on first use
        self.v_scale: torch.Tensor | None = None
        self.k_unit: torch.Tensor | None = None
        self.v_unit: torch.Tensor | None = None
        self.k_acc = _KindAcc()
        self.v_acc = _KindAcc()
        self.saved_k: list[torch.Tensor] = []
        self.saved_v: list[torch.Tensor] = []

    def scales_on(self, device: torch.device) -> None:
        if self.k_scale is None or self.k_scale.device != device:
            self.k_scale = _tensor(self.k_host, device)
            self.v_scale = _tensor(self.v_host, device)
            self.k_unit = torch.ones(1, dtype=torch.float32, device=device)
            self.v_unit = self.k_unit


def _host_scale(layer: AttentionLayer, kind: str, value: ScaleValue) -> float | tuple[float, ...]:
    if isinstance(value, (int, float)):
        return float(value)
    values = tuple(float(x) for x in value)
    if len(values) == 1:
        return values[0]
    if len(values) != layer.num_kv_heads:
        raise UsageError(
            f"{layer.engine_name}: {len(values)} per-head {kind} scales for "
            f"{layer.num_kv_heads} KV heads"
        )
    return values


def _tensor(value: float | tuple[float, ...], device: torch.device) -> torch.Tensor:
    values = list(value) if isinstance(value, tuple) else [value]
    return torch.tensor(values, dtype=torch.float32, device=device)


def _broadcast(scale: torch.Tensor) -> torch.Tensor:
    """A [1] / [H] scale shaped to broadcast over [T, H, D] (as reference.dequantize does)."""
    return scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())


def _roundtrip(
    x: torch.Tensor, scale: torch.Tensor, quantize: QuantizeFn, fp8_dtype: torch.dtype
) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` [B, H, S, D] -> (tokens-major x [B*S, H, D], dequantized float32 [B*S, H, D])."""
    b, h, s, d = x.shape
    flat = x.transpose(1, 2).reshape(b * s, h, d)
    bits = quantize(flat, scale)
    if bits.dtype != torch.uint8 or bits.shape != flat.shape:
        raise UsageError(
            f"quantize returned {bits.dtype} {tuple(bits.shape)}, "
            f"expected uint8 {tuple(flat.shape)}"
        )
    deq = bits.view(fp8_dtype).to(torch.float32) * _broadcast(scale)
    return flat, deq


def _back(deq: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    b, h, s, d = like.shape
    return deq.to(like.dtype).reshape(b, s, h, d).transpose(1, 2)


# --- the run --------------------------------------------------------------------------------


def _format_of(fp8_dtype: torch.dtype) -> FP8Format:
    name = str(fp8_dtype).removeprefix("torch.")
    for fmt in FP8_FORMATS.values():
        if fmt.torch_dtype == name:
            return fmt
    raise UsageError(f"fp8_dtype {fp8_dtype} is not an FP8 cache format")


def _check_scales(
    loaded: LoadedModel, scales: Mapping[str, tuple[ScaleValue, ScaleValue]]
) -> dict[str, _Layer]:
    names = {layer.engine_name for layer in loaded.layers}
    missing = sorted(names - set(scales))
    extra = sorted(set(scales) - names)
    if missing:
        raise UsageError(
            f"no scales for {len(missing)} of the model's attention layers, first {missing[0]}"
        )
    if extra:
        raise UsageError(
            f"scales for {len(extra)} layer(s) the model does not have, first {extra[0]}"
        )
    return {layer.engine_name: _Layer(layer, *scales[layer.engine_name]) for layer in loaded.layers}


def _activation_budget(loaded: LoadedModel, tokens: int, dtype: torch.dtype, path: Path) -> None:
    per_token = sum(
        layer.num_kv_heads * (layer.head_size + layer.v_head_size) for layer in loaded.layers
    )
    size = tokens * per_token * torch.empty((), dtype=dtype).element_size()
    if size > MAX_ACTIVATION_BYTES.value():
        raise LimitExceededError(
            path,
            f"--activations-out would hold {size:,} bytes of K/V for {tokens:,} tokens",
            hint=MAX_ACTIVATION_BYTES.describe() + ", or pass fewer --samples",
        )


class _Reference:
    """The unquantized run's next-token log-probabilities of one sample (float32), kept for the
    KL of the other variants: ``KL(p || q) = sum p * (log p - log q)`` per position, computed in
    place chunk by chunk (one log-softmax of the variant, one exp of the reference chunk, a
    subtraction, a product and a row sum; 2.7x faster on CPU than ``kl_div`` over two fresh
    log-softmaxes). Summed over positions in float64. float32 log-softmax rounding leaves
    errors of about 1e-7 nats times the logits' magnitude, so each position is clamped at 0.
    """

    def __init__(self, logits: torch.Tensor, positions: int) -> None:
        self.positions = positions
        vocab = logits.shape[-1]
        self.logp = torch.empty((positions, vocab), dtype=torch.float32, device=logits.device)
        for start in range(0, positions, KL_CHUNK):
            stop = min(positions, start + KL_CHUNK)
            torch.log_softmax(
                logits[start:stop], dim=-1, dtype=torch.float32, out=self.logp[start:stop]
            )
        self.buffer = torch.empty(
            (min(KL_CHUNK, positions), vocab), dtype=torch.float32, device=logits.device
        )

    def kl(self, logits: torch.Tensor) -> tuple[float, float]:
        """(sum, max) of KL(reference || softmax(logits)) over the positions."""
        total = 0.0
        peak = 0.0
        for start in range(0, self.positions, KL_CHUNK):
            stop = min(self.positions, start + KL_CHUNK)
            ref = self.logp[start:stop]
            p = torch.exp(ref, out=self.buffer[: stop - start])
            d = torch.log_softmax(logits[start:stop], dim=-1, dtype=torch.float32)
            torch.sub(ref, d, out=d)
            d.mul_(p)
            kl = d.sum(-1).clamp_min_(0.0)
            total += float(kl.sum(dtype=torch.float64))
            chunk_max = float(kl.max())
            if math.isnan(total) or math.isnan(chunk_max):
                return math.nan, math.nan
            peak = max(peak, chunk_max)
        return total, peak


def _ppl(loss: float) -> float:
    if math.isnan(loss):
        return math.nan
    return math.exp(loss) if loss < 709.0 else math.inf


def evaluate_model(
    loaded: LoadedModel,
    samples: Sequence[Sequence[int]],
    scales: Mapping[str, tuple[ScaleValue, ScaleValue]],
    *,
    quantize: QuantizeFn,
    fp8_dtype: torch.dtype = torch.float8_e4m3fn,
    variants: Sequence[str] = VARIANTS,
    activations_out: Path | str | None = None,
    activations_dtype: str | None = None,
    progress: ProgressFn | None = None,
) -> ModelEvaluation:
    """Run ``variants`` over ``samples`` (see the module doc) at ``scales``.

    ``scales`` maps every engine layer name of ``loaded.layers`` to ``(k_scale, v_scale)``,
    each a float or one float per KV head, as the engine holds them (float32 values).
    ``fp8_dtype``: the cache format the bits are in (``torch.float8_e4m3fn``; its finite max is
    the saturation bound). ``activations_out``: also write the unquantized K/V as a safetensors
    file (``<layer>.k`` / ``<layer>.v``, ``[tokens, num_kv_heads, head_size]``) in
    ``activations_dtype`` (default: the model dtype, lossless), atomically.
    """
    variants = tuple(variants)
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants or len(set(variants)) != len(variants):
        raise UsageError(f"variants {list(variants)!r}: each of {', '.join(VARIANTS)} at most once")
    if "unquantized" not in variants:
        variants = ("unquantized", *variants)
    order = [v for v in VARIANTS if v in variants]
    if not samples or any(len(s) == 0 for s in samples):
        raise UsageError("evaluation needs at least one non-empty sample")
    layers = _check_scales(loaded, scales)
    fmt = _format_of(fp8_dtype)
    save_path = Path(activations_out) if activations_out is not None else None
    save_dtype = None
    if save_path is not None:
        name = activations_dtype or loaded.dtype
        if name not in ACTIVATION_DTYPES:
            raise UsageError(
                f"activations dtype {name!r} is not one of {', '.join(ACTIVATION_DTYPES)}"
            )
        save_dtype = ACTIVATION_DTYPES[name]
        _activation_budget(loaded, sum(len(s) for s in samples), save_dtype, save_path)
    model = loaded.model
    by_module = {id(model.get_submodule(s.layer.module_path)): s for s in layers.values()}
    state = {"mode": "unquantized"}

    def on_kv(
        module: Any, key: torch.Tensor, value: torch.Tensor, _: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        slot = by_module.get(id(module))
        if slot is None:
            return None
        slot.scales_on(key.device)
        mode = state["mode"]
        if mode == "unquantized":
            assert slot.k_scale is not None and slot.v_scale is not None
            kf, kd = _roundtrip(key, slot.k_scale, quantize, fp8_dtype)
            vf, vd = _roundtrip(value, slot.v_scale, quantize, fp8_dtype)
            slot.k_acc.add(kf, kd, _broadcast(slot.k_scale), fmt)
            slot.v_acc.add(vf, vd, _broadcast(slot.v_scale), fmt)
            if save_dtype is not None:
                slot.saved_k.append(kf.detach().to("cpu", save_dtype))
                slot.saved_v.append(vf.detach().to("cpu", save_dtype))
            return None
        ks, vs = (slot.k_scale, slot.v_scale) if mode == "fp8" else (slot.k_unit, slot.v_unit)
        assert ks is not None and vs is not None
        kd = _roundtrip(key, ks, quantize, fp8_dtype)[1]
        vd = _roundtrip(value, vs, quantize, fp8_dtype)[1]
        return _back(kd, key), _back(vd, value)

    sums = {v: [0.0, 0.0, 0.0] for v in order}  # loss * n, kl sum, kl max
    predicted = 0
    tokens = 0
    device = loaded.input_device
    try:
        with attention_hook(model, on_kv), torch.inference_mode(), quiet_transformers():
            for i, sample in enumerate(samples):
                ids = torch.tensor([list(sample)], dtype=torch.long, device=device)
                n = len(sample) - 1
                ref: _Reference | None = None
                for variant in order:
                    state["mode"] = variant
                    out = model(input_ids=ids, labels=ids, use_cache=False)
                    logits = out.logits[0]
                    if n > 0:
                        sums[variant][0] += float(out.loss) * n
                    if variant == "unquantized":
                        ref = _Reference(logits, n) if n > 0 else None
                    elif ref is not None:
                        kl_sum, kl_max = ref.kl(logits)
                        acc = sums[variant]
                        acc[1] += kl_sum
                        # max() would drop a NaN; a NaN KL must stay visible.
                        acc[2] = kl_max if math.isnan(kl_max) or kl_max > acc[2] else acc[2]
                    del out, logits
                predicted += max(0, n)
                tokens += len(sample)
                if progress is not None:
                    progress(ProgressEvent("evaluate", i + 1, len(samples), tokens=tokens))
    except HookError as exc:
        raise UnsupportedModelError(loaded.path, str(exc)) from None

    results = []
    for variant in order:
        loss_sum, kl_sum, kl_max = sums[variant]
        loss = loss_sum / predicted if predicted else math.nan
        results.append(
            VariantResult(
                name=variant,
                loss=loss,
                ppl=_ppl(loss),
                kl_mean=kl_sum / predicted if predicted else math.nan,
                kl_max=kl_max,
                tokens=predicted,
            )
        )
    layer_results = tuple(
        LayerEval(s.layer, s.k_acc.result(s.k_host), s.v_acc.result(s.v_host))
        for s in sorted(layers.values(), key=lambda s: s.layer.layer_idx)
    )
    written = None
    if save_path is not None:
        _write_activations(save_path, layers, loaded)
        written = str(save_path)
    return ModelEvaluation(
        samples=len(samples),
        tokens=tokens,
        variants=tuple(results),
        layers=layer_results,
        activations_path=written,
    )


def _write_activations(path: Path, layers: Mapping[str, _Layer], loaded: LoadedModel) -> None:
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for name, slot in layers.items():
        tensors[f"{name}.k"] = torch.cat(slot.saved_k).contiguous()
        tensors[f"{name}.v"] = torch.cat(slot.saved_v).contiguous()
        slot.saved_k.clear()
        slot.saved_v.clear()
    metadata = {"producer": "kvscale verify --model", "model": loaded.path}
    write_file_atomic(
        path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata), "activations"
    )
