"""The model on real text with its KV cache quantized: perplexity and KL, per cache variant.

For every sample (batch 1, ``use_cache=False``, through ``attention_hook``) the model runs once
unquantized (the reference: its own K/V, what an unquantized cache holds) and once per
``CacheVariant``: every layer the variant names gets its K and V replaced, at the attention
function (the cache point), by what the cache gives back, ``LayerCodec.k(x)`` / ``.v(x)``: the
round trip through the variant's format (FP8 at a scale, NVFP4, per-token-head, ...; built by
``kvscale.kernel.roundtrip``), as float32, then cast to the model dtype the attention computes
in. With a float32 model the attention sees exactly what the cache dequantizes to; with
bf16/fp16, that rounded once to the model dtype (the engines' kernels multiply inside the
attention in float32: at most half an ulp of the model dtype per element, far below the
quantization itself).

Each variant's loss is the model's own (``model(input_ids, labels=input_ids).loss``: mean
next-token cross entropy in float32); over several samples the mean is weighted by predicted
tokens. KL is ``KL(P_unquantized || P_variant)`` of the next-token distributions at the same
positions (``_Reference``: in chunks of ``KL_CHUNK`` positions, each clamped at 0), mean and max
over all positions.

``activations_out`` saves the reference run's K/V (``<layer>.k`` / ``<layer>.v``, ``[tokens,
num_kv_heads, head_size]``): the tensors ``calibrate`` measures, on which ``verify`` computes
its per-layer statistics (``kvscale.core.verify.stats``) and ``plan`` quantizes each candidate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import LimitExceededError, UsageError
from kvscale.io.staging import write_file_atomic
from kvscale.limits import MAX_ACTIVATION_BYTES
from kvscale.model.hook import HookError, attention_hook, quiet_transformers
from kvscale.model.load import LoadedModel, UnsupportedModelError
from kvscale.progress import ProgressEvent, ProgressFn

__all__ = [
    "ACTIVATION_DTYPES",
    "KL_CHUNK",
    "REFERENCE",
    "CacheVariant",
    "LayerCodec",
    "ModelEvaluation",
    "Roundtrip",
    "VariantResult",
    "evaluate_model",
]

Roundtrip = Callable[[torch.Tensor], torch.Tensor]
"""``roundtrip(x) -> what the cache gives back``: ``x`` ``[tokens, num_kv_heads, head_size]`` in
the model dtype, the result float32 of the same shape, on x's device."""

REFERENCE = "unquantized"
"""The reference run's name: the model's own K/V, every variant's KL is against it."""
KL_CHUNK = 256
ACTIVATION_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


@dataclass(frozen=True)
class LayerCodec:
    """How one layer's cache stores K and V."""

    k: Roundtrip
    v: Roundtrip


@dataclass(frozen=True)
class CacheVariant:
    """One configuration of the KV cache to run the model with."""

    name: str
    layers: Mapping[str, LayerCodec]
    """Engine layer name -> its codec; a layer not named keeps its K/V unquantized."""


@dataclass(frozen=True)
class VariantResult:
    name: str
    loss: float
    """Mean next-token cross entropy (nats) over the predicted tokens."""
    ppl: float
    kl_mean: float
    """Mean KL(unquantized || this) per predicted position; 0.0 for the reference."""
    kl_max: float
    tokens: int
    """Predicted tokens (each sample's length minus one)."""
    seconds: float = 0.0
    """Wall time of this variant's forward passes, its K/V round trips included."""


@dataclass(frozen=True)
class ModelEvaluation:
    samples: int
    tokens: int
    """Tokens run through the model (per variant)."""
    variants: tuple[VariantResult, ...]
    """The reference first, then each variant in the order given."""
    activations_path: str | None

    def variant(self, name: str) -> VariantResult:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)


def _flat(x: torch.Tensor) -> torch.Tensor:
    """``[B, H, S, D]`` (the attention function's layout) -> tokens-major ``[B*S, H, D]``."""
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b * s, h, d)


def _back(deq: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    b, h, s, d = like.shape
    if deq.dtype != torch.float32 or deq.shape != (b * s, h, d):
        raise UsageError(
            f"a codec returned {deq.dtype} {tuple(deq.shape)}, expected float32 {(b * s, h, d)}"
        )
    return deq.to(like.dtype).reshape(b, s, h, d).transpose(1, 2)


def _check_variants(loaded: LoadedModel, variants: Sequence[CacheVariant]) -> None:
    names = {layer.engine_name for layer in loaded.layers}
    seen: set[str] = {REFERENCE}
    for variant in variants:
        if variant.name in seen:
            raise UsageError(f"variant {variant.name!r} given twice (or named like the reference)")
        seen.add(variant.name)
        extra = sorted(set(variant.layers) - names)
        if extra:
            raise UsageError(
                f"variant {variant.name!r} names {len(extra)} layer(s) the model does not have, "
                f"first {extra[0]}"
            )


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
    variants: Sequence[CacheVariant],
    *,
    activations_out: Path | str | None = None,
    activations_dtype: str | None = None,
    progress: ProgressFn | None = None,
) -> ModelEvaluation:
    """Run the reference and ``variants`` over ``samples`` (see the module doc).

    ``activations_out``: also write the reference run's K/V as a safetensors file
    (``<layer>.k`` / ``<layer>.v``, ``[tokens, num_kv_heads, head_size]``) in
    ``activations_dtype`` (default: the model dtype, lossless), atomically.
    """
    if not samples or any(len(s) == 0 for s in samples):
        raise UsageError("evaluation needs at least one non-empty sample")
    _check_variants(loaded, variants)
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
    by_module = {id(model.get_submodule(layer.module_path)): layer for layer in loaded.layers}
    saved: dict[str, tuple[list[torch.Tensor], list[torch.Tensor]]] = {
        layer.engine_name: ([], []) for layer in loaded.layers
    }
    active: dict[str, Mapping[str, LayerCodec] | None] = {"codecs": None}

    def on_kv(
        module: Any, key: torch.Tensor, value: torch.Tensor, _: dict[str, Any]
    ) -> tuple[torch.Tensor, torch.Tensor] | None:
        layer = by_module.get(id(module))
        if layer is None:
            return None
        codecs = active["codecs"]
        if codecs is None:
            if save_dtype is not None:
                keys, values = saved[layer.engine_name]
                keys.append(_flat(key).detach().to("cpu", save_dtype))
                values.append(_flat(value).detach().to("cpu", save_dtype))
            return None
        codec = codecs.get(layer.engine_name)
        if codec is None:
            return None
        return _back(codec.k(_flat(key)), key), _back(codec.v(_flat(value)), value)

    runs: list[tuple[str, Mapping[str, LayerCodec] | None]] = [(REFERENCE, None)]
    runs.extend((v.name, v.layers) for v in variants)
    sums = {name: [0.0, 0.0, 0.0] for name, _ in runs}  # loss * n, kl sum, kl max
    seconds = dict.fromkeys(sums, 0.0)
    predicted = 0
    tokens = 0
    device = loaded.input_device
    try:
        with attention_hook(model, on_kv), torch.inference_mode(), quiet_transformers():
            for i, sample in enumerate(samples):
                ids = torch.tensor([list(sample)], dtype=torch.long, device=device)
                n = len(sample) - 1
                ref: _Reference | None = None
                for name, codecs in runs:
                    active["codecs"] = codecs
                    began = time.perf_counter()
                    out = model(input_ids=ids, labels=ids, use_cache=False)
                    logits = out.logits[0]
                    if n > 0:
                        sums[name][0] += float(out.loss) * n
                    if codecs is None:
                        ref = _Reference(logits, n) if n > 0 else None
                    elif ref is not None:
                        kl_sum, kl_max = ref.kl(logits)
                        acc = sums[name]
                        acc[1] += kl_sum
                        # max() would drop a NaN; a NaN KL must stay visible.
                        acc[2] = kl_max if math.isnan(kl_max) or kl_max > acc[2] else acc[2]
                    del out, logits
                    seconds[name] += time.perf_counter() - began
                predicted += max(0, n)
                tokens += len(sample)
                if progress is not None:
                    progress(ProgressEvent("evaluate", i + 1, len(samples), tokens=tokens))
    except HookError as exc:
        raise UnsupportedModelError(loaded.path, str(exc)) from None

    results = []
    for name, _ in runs:
        loss_sum, kl_sum, kl_max = sums[name]
        loss = loss_sum / predicted if predicted else math.nan
        results.append(
            VariantResult(
                name=name,
                loss=loss,
                ppl=_ppl(loss),
                kl_mean=kl_sum / predicted if predicted else math.nan,
                kl_max=kl_max,
                tokens=predicted,
                seconds=seconds[name],
            )
        )
    written = None
    if save_path is not None:
        _write_activations(save_path, saved, loaded)
        written = str(save_path)
    return ModelEvaluation(
        samples=len(samples), tokens=tokens, variants=tuple(results), activations_path=written
    )


def _write_activations(
    path: Path,
    saved: Mapping[str, tuple[list[torch.Tensor], list[torch.Tensor]]],
    loaded: LoadedModel,
) -> None:
    from safetensors.torch import save_file

    tensors: dict[str, torch.Tensor] = {}
    for name, (keys, values) in saved.items():
        tensors[f"{name}.k"] = torch.cat(keys).contiguous()
        tensors[f"{name}.v"] = torch.cat(values).contiguous()
        keys.clear()
        values.clear()
    metadata = {"producer": "kvscale verify --model", "model": loaded.path}
    write_file_atomic(
        path, lambda tmp: save_file(tensors, str(tmp), metadata=metadata), "activations"
    )
