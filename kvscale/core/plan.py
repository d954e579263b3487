"""``kvscale plan``: which KV-cache setting to serve a model with, measured on its own text.

The candidates come from the chosen engine's rules, not from a fixed list: every
``--kv-cache-dtype`` the engine accepts whose format kvscale can reproduce (a reference writer:
``CacheFormat.reference``) and that an attention backend of the engine runs for this model
(``Engine.backends_for``); checkpoint-scaled formats once per source of scales (the
checkpoint's, freshly calibrated ones, 1.0), FP8 per head where a backend honours it. A format
kvscale cannot reproduce is listed as not measurable, never estimated.

Cost, in forward passes over the data (``PlanResult.forward_passes``):

1. one pass of the unquantized model capturing max |K| / |V| per layer and KV head (the
   calibration statistic, ``kvscale.model.capture``; the calibrated candidates' scales come from
   it, exactly the values ``kvscale calibrate`` writes from the same data) and keeping the
   decoder's last hidden state per sample: the reference's logits and loss are the causal-LM
   head applied to it (``kvscale.model.evaluate``: checked bit for bit against the model's own
   logits and loss on the first sample, which the capture asks for there; a model where they
   differ gets its own reference pass, one more);
2. one pass per candidate (``kvscale.model.evaluate``): perplexity, KL mean and max against the
   reference, and per layer the round-trip error of the K and V the candidate's own run wrote;
3. only when the answer keeps layers unquantized (``--kv-cache-dtype-skip-layers``): a
   confirmation run of exactly that configuration, one pass per attempt (the reference again
   from the kept hidden states).

Selection: the cheapest configuration (fewest KV-cache bytes per token) whose measured KL (or
perplexity increase) meets the budget. A cheaper candidate that misses the budget may still win
with some layers kept unquantized (vLLM only): layers are taken in order of their estimated share
of the KL (each layer's squared relative round-trip error of K and V, a proxy, said so in the
output) until the estimate meets the budget, and the confirmation run decides; the attribution is
never the answer.
"""

from __future__ import annotations

import functools
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.engine.options import EngineOptions
from kvscale.errors import UsageError
from kvscale.progress import ProgressEvent, ProgressFn

if TYPE_CHECKING:
    import torch

    from kvscale.core.inspect import ScaleReport
    from kvscale.engine.base import Engine
    from kvscale.model.capture import CaptureResult
    from kvscale.model.load import LoadedModel

DEFAULT_MAX_KL = 0.01
"""The default budget: mean KL(unquantized || candidate) of the next-token distributions, in
nats per token. FP8 at calibrated scales stays well below it on the models measured
(SmolLM2-135M: 0.007, benchmarks/RESULTS.md); a wrong or missing scale, or a 4-bit format on a
small model, does not."""

SCALE_SOURCES = ("checkpoint", "calibrated", "unit")
MAX_CONFIRMATIONS = 3
"""Confirmation runs tried for one candidate with skipped layers (each adds the next layer)."""


@dataclass(frozen=True)
class PlanOptions:
    data: Path
    engine: EngineOptions = field(default_factory=EngineOptions)
    max_kl: float | None = None
    max_ppl_increase: float | None = None
    candidates: tuple[str, ...] | None = None
    """Candidate names to evaluate (``Candidate.name``); None: every candidate the engine offers."""
    samples: int = 32
    seq_len: int = 1024
    dtype: str = "auto"
    device: str = "cpu"
    gpu_memory: int | None = None
    """Bytes of GPU memory for the KV cache, to report how many tokens fit."""
    out: Path | None = None
    """Where to write a checkpoint with the chosen scales, when the answer needs new ones."""
    force: bool = False

    def __post_init__(self) -> None:
        if self.max_kl is not None and self.max_ppl_increase is not None:
            raise UsageError("--max-kl and --max-ppl-increase exclude each other: pick one budget")
        for flag, value in (
            ("--max-kl", self.max_kl),
            ("--max-ppl-increase", self.max_ppl_increase),
        ):
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise UsageError(f"{flag} must be a finite number >= 0, got {value!r}")
        if self.samples < 1:
            raise UsageError(f"--samples {self.samples} must be at least 1")
        if self.seq_len < 2:
            raise UsageError(f"--seq-len {self.seq_len} must be at least 2")
        if self.gpu_memory is not None and self.gpu_memory <= 0:
            raise UsageError(f"--gpu-memory {self.gpu_memory} must be a positive number of bytes")

    @property
    def budget(self) -> tuple[str, float]:
        """(``kl`` or ``ppl_increase``, the bound)."""
        if self.max_ppl_increase is not None:
            return "ppl_increase", self.max_ppl_increase
        return "kl", self.max_kl if self.max_kl is not None else DEFAULT_MAX_KL


@dataclass(frozen=True)
class Candidate:
    """One KV-cache configuration the engine can serve."""

    kv_cache_dtype: str
    format: CacheFormat
    scales: str | None
    """``checkpoint``, ``calibrated`` or ``unit`` for formats that read checkpoint scales; None
    for self-scaled and unquantized ones."""
    per_head: bool = False
    backends: tuple[str, ...] | None = None
    """The engine's attention backends that run it (None: not modelled; any)."""
    skip_layers: tuple[str, ...] = ()
    default: bool = True
    """Evaluated without ``--candidates``: the engine's FP8 spelling at every scale source, FP8
    per head, NVFP4 at calibrated and checkpoint scales, every self-scaled format. The others
    (``fp8_e5m2``, NVFP4 at 1.0) are dominated at the same bytes and run only when named."""

    @property
    def name(self) -> str:
        parts = [self.kv_cache_dtype + ("-per-head" if self.per_head else "")]
        if self.scales is not None:
            parts.append(self.scales)
        return ":".join(parts)


@dataclass(frozen=True)
class LayerShare:
    name: str
    k_error: float
    v_error: float
    share: float
    """Estimated fraction of the candidate's KL from this layer (sums to 1)."""


@dataclass(frozen=True)
class CandidateResult:
    candidate: Candidate
    status: str
    """``measured``, ``not-measurable`` (kvscale has no reference writer for the format) or
    ``unsupported`` (no backend of the engine runs it here, or the checkpoint has no scales)."""
    why: str | None
    bytes_per_token: float | None
    """KV-cache bytes per token over all attention layers (skipped layers at the model dtype)."""
    tokens_fit: int | None
    ppl: float | None = None
    kl_mean: float | None = None
    kl_max: float | None = None
    layers: tuple[LayerShare, ...] = ()
    confirmation: bool = False
    """A confirmation run of a configuration with skipped layers."""

    @property
    def name(self) -> str:
        return self.candidate.name + (
            f"+skip:{','.join(self.candidate.skip_layers)}" if self.candidate.skip_layers else ""
        )

    def ppl_increase(self, reference: float) -> float | None:
        return None if self.ppl is None else self.ppl / reference - 1.0

    def meets(self, budget: tuple[str, float], reference: float) -> bool:
        kind, bound = budget
        value = self.kl_mean if kind == "kl" else self.ppl_increase(reference)
        return value is not None and not math.isnan(value) and value <= bound


@dataclass(frozen=True)
class PlanResult:
    model: str
    data: str
    engine: Mapping[str, str]
    options: PlanOptions
    budget: tuple[str, float]
    samples: int
    tokens: int
    ppl_unquantized: float
    results: tuple[CandidateResult, ...]
    """Every candidate, in evaluation order, then confirmation runs."""
    chosen: CandidateResult | None
    closest: CandidateResult | None
    """When nothing meets the budget: the measured configuration nearest to it."""
    flags: tuple[str, ...]
    """The serving command line of the chosen configuration."""
    verify_command: tuple[str, ...]
    """``kvscale verify --data`` of exactly the chosen configuration: it reproduces the plan's
    perplexity and KL (same data, samples, codecs)."""
    checkpoint: str | None
    """The checkpoint to serve (MODEL, or the one written with the chosen scales)."""
    checkpoint_needed: bool
    """The chosen configuration needs scales MODEL does not hold (written with --out)."""
    forward_passes: int
    seconds: float
    forward_seconds: float
    """One pass of the unquantized model over the data (the capture pass and the head's
    logits from its hidden states; or the reference's own pass): the unit of
    ``seconds / forward_seconds``."""
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.chosen is not None


# --- candidates ------------------------------------------------------------------------------


def candidates_for(
    report: ScaleReport, options: EngineOptions, head_size: int, num_kv_heads: int
) -> list[Candidate]:
    """Every configuration the engine offers for this model, from its rules (see module doc)."""
    engine = options.rules
    latent = report.shape.latent_width is not None
    out: list[Candidate] = []
    has_scales = any(
        kind in layer.sources for layer in report.layers for kind in ("k_scale", "v_scale")
    )
    seen: set[str] = set()
    preferred_fp8 = engine.cache_format(engine.fp8_kv_cache_dtype, report.platform, latent=latent)
    for dtype in engine.kv_cache_dtypes:
        fmt = engine.cache_format(dtype, report.platform, latent=latent)
        if fmt.scale_use is ScaleUse.NONE or fmt.name in seen:
            continue  # the unquantized cache is the reference; aliases (fp8 = fp8_e4m3) once
        seen.add(fmt.name)
        if fmt == preferred_fp8:
            dtype = engine.fp8_kv_cache_dtype
        backends = engine.backends_for(
            dtype, head_size=head_size, gpu_arch=options.gpu_arch, latent=latent
        )
        if fmt.scale_use is ScaleUse.IN_CACHE:
            out.append(Candidate(dtype, fmt, None, backends=backends))
            continue
        dominated = fmt.scale_use is ScaleUse.DIVISOR and fmt != preferred_fp8
        for source in SCALE_SOURCES:
            if source == "checkpoint" and not has_scales:
                continue
            default = not dominated and (fmt == preferred_fp8 or source != "unit")
            out.append(Candidate(dtype, fmt, source, backends=backends, default=default))
        per_head = engine.per_head_backends(dtype)
        if fmt.scale_use is ScaleUse.DIVISOR and per_head and num_kv_heads > 1 and not latent:
            out.append(
                Candidate(
                    dtype,
                    fmt,
                    "calibrated",
                    per_head=True,
                    backends=per_head,
                    default=not dominated,
                )
            )
    return out


def _status(candidate: Candidate, backend: str | None) -> tuple[str, str | None]:
    fmt = candidate.format
    if candidate.backends is not None:
        if not candidate.backends:
            return "unsupported", "no attention backend of the engine runs it for this model"
        if backend is not None and backend not in candidate.backends:
            return "unsupported", (
                f"--attention-backend {backend} does not run it (backends that do: "
                f"{', '.join(candidate.backends)})"
            )
    if fmt.reference is None:
        return "not-measurable", f"kvscale has no reference writer for {fmt.name} ({fmt.title})"
    return "measured", None


# --- the run ---------------------------------------------------------------------------------


def _bytes_per_token(
    candidate: Candidate, loaded: LoadedModel, model_dtype_bytes: int
) -> float | None:
    total = 0.0
    skipped = set(candidate.skip_layers)
    for layer in loaded.layers:
        fmt = candidate.format
        if str(layer.layer_idx) in skipped:
            from kvscale.cache_formats import MODEL_DTYPE

            fmt = MODEL_DTYPE
        size = fmt.bytes_per_token(
            num_kv_heads=layer.num_kv_heads,
            head_size=layer.head_size,
            model_dtype_bytes=model_dtype_bytes,
        )
        if size is None:
            return None
        total += size
    return total


class _ErrorMeter:
    """Sums of squared round-trip error and of squared input, per layer and kind, over a run."""

    def __init__(self) -> None:
        self.sums: dict[tuple[str, str], list[float]] = {}

    def wrap(self, layer: str, kind: str, roundtrip: Callable[..., Any]) -> Callable[..., Any]:
        acc = self.sums.setdefault((layer, kind), [0.0, 0.0])

        def measured(x: torch.Tensor) -> torch.Tensor:
            import torch

            y: torch.Tensor = roundtrip(x)
            xf = x.to(torch.float32)
            # Squares in float32 summed in float64: one pass each. Squared in place where the
            # tensor is this function's own (not y, which the model reads, nor x when it is
            # float32 already): each fresh tensor can cost its page faults (alone, the meter
            # took 159 us per 98k values with them, 81 without). A sum that is not
            # finite (a NaN or inf value, or a square past float32's range) is redone over the
            # finite values in float64; the masks cost as much as the model's attention, per
            # candidate.
            diff = y - xf
            err2 = float(torch.sum(diff.mul_(diff), dtype=torch.float64))
            x2 = float(torch.sum(xf * xf if xf is x else xf.mul_(xf), dtype=torch.float64))
            if not (math.isfinite(err2) and math.isfinite(x2)):
                xf = x.to(torch.float32)
                diff = y - xf
                finite = torch.isfinite(xf) & torch.isfinite(y)
                err2 = float((torch.where(finite, diff, 0.0).double() ** 2).sum())
                x2 = float((torch.where(finite, xf, 0.0).double() ** 2).sum())
            acc[0] += err2
            acc[1] += x2
            return y

        return measured

    def shares(self, layers: Sequence[str]) -> tuple[LayerShare, ...]:
        errors = []
        for name in layers:
            rel = []
            for kind in ("k", "v"):
                err2, x2 = self.sums.get((name, kind), [0.0, 0.0])
                rel.append(math.sqrt(err2 / x2) if x2 > 0 else 0.0)
            errors.append((name, rel[0], rel[1]))
        weights = [k * k + v * v for _, k, v in errors]
        total = sum(weights)
        return tuple(
            LayerShare(name, k, v, (w / total) if total > 0 else 0.0)
            for (name, k, v), w in zip(errors, weights, strict=True)
        )


def _codecs(
    candidate: Candidate,
    loaded: LoadedModel,
    scales: Mapping[str, tuple[Any, Any]],
    meter: _ErrorMeter,
    engine_options: EngineOptions,
) -> dict[str, Any]:
    """The candidate's cache per layer, built like ``verify --data`` builds the target's
    (``kvscale.model.cache_codecs``): skipped layers keep the model's own K/V."""
    from kvscale.model.cache_codecs import layer_codec

    engine = engine_options.rules
    write = engine.cache_write(candidate.kv_cache_dtype, engine_options.attention_backend)
    skipped = set(candidate.skip_layers)
    codecs: dict[str, Any] = {}
    for layer in loaded.layers:
        name = layer.engine_name
        if str(layer.layer_idx) in skipped:
            continue
        k, v = scales.get(name, (1.0, 1.0))
        codec = layer_codec(
            candidate.format,
            candidate.kv_cache_dtype,
            k,
            v,
            engine=engine,
            gpu_arch=engine_options.gpu_arch,
            quantize=write.write if write is not None else None,
            latent=layer.latent,
            wrap=functools.partial(meter.wrap, name),
        )
        if codec is not None:
            codecs[name] = codec
    return codecs


def _held_scales(
    candidate: Candidate,
    report: ScaleReport,
    options: PlanOptions,
    model: Path,
    amax: Mapping[str, tuple[tuple[float, ...], tuple[float, ...]]],
    names: Sequence[str],
) -> Mapping[str, tuple[Any, Any]]:
    """The k/v values the engine holds, per layer, under this candidate: 1.0; the checkpoint's
    own under the candidate's dtype; or the calibrated values as the engine would load them from
    the checkpoint ``kvscale calibrate`` writes (``calibrate.engine_holds``: same rounding),
    FP8 at amax/448, NVFP4 in the convention the engine expects (``calibrate.nvfp4_target``).
    A ``UsageError`` says why the candidate cannot be had."""
    from kvscale.core.calibrate import CalibrateOptions, engine_holds, nvfp4_target
    from kvscale.core.inspect import resolve_again
    from kvscale.model.scales import E4M3_MAX, kv_scales

    if candidate.scales is None:
        return {}
    if candidate.scales == "unit":
        return dict.fromkeys(names, (1.0, 1.0))
    dtype_options = replace(
        options.engine, kv_cache_dtype=candidate.kv_cache_dtype, kv_cache_dtype_skip_layers=()
    )
    if candidate.scales == "checkpoint":
        again = resolve_again(report, dtype_options)
        held = {
            layer.name: (layer.k_scale, layer.v_scale)
            for layer in again.layers
            if layer.k_scale is not None and layer.v_scale is not None
        }
        if not set(names) <= set(held):
            raise UsageError("the engine holds no checkpoint k/v scale for some layers")
        return held
    calibrate_options = CalibrateOptions(
        strategy="head" if candidate.per_head else "tensor", engine=dtype_options
    )
    target = nvfp4_target(report, calibrate_options)
    divisor = target.convention.divisor if target is not None else E4M3_MAX
    values = {
        name: (
            kv_scales(k if candidate.per_head else max(k), divisor=divisor),
            kv_scales(v if candidate.per_head else max(v), divisor=divisor),
        )
        for name, (k, v) in amax.items()
    }
    return engine_holds(model, calibrate_options, values)


def plan_model(
    model: str | os.PathLike[str],
    options: PlanOptions,
    progress: ProgressFn | None = None,
) -> PlanResult:
    """Evaluate the candidates on ``options.data`` and choose (see the module doc)."""
    import torch

    from kvscale.core.inspect import inspect_checkpoint
    from kvscale.model.capture import capture_kv_amax
    from kvscale.model.data import load_calibration_data
    from kvscale.model.evaluate import CacheVariant, evaluate_model, require_predicted_tokens
    from kvscale.model.load import load_model

    start = time.monotonic()
    engine = options.engine.rules
    engine.require("plan")
    model_path = Path(model)
    report = inspect_checkpoint(model_path, options.engine)
    shape = report.shape
    if not shape.head_size or not shape.kv_heads:
        raise UsageError(
            f"{model_path}: config.json does not give the attention shape (head_dim or "
            "hidden_size / num_attention_heads, num_key_value_heads)"
        )
    candidates = candidates_for(report, options.engine, shape.head_size, shape.kv_heads)
    if options.candidates is None:
        candidates = [c for c in candidates if c.default]
    elif options.candidates != ("all",):
        known = {c.name for c in candidates}
        unknown = [name for name in options.candidates if name not in known]
        if unknown:
            raise UsageError(
                f"unknown candidate {unknown[0]!r} for {engine.name} and this model",
                hint="one of: all, " + ", ".join(sorted(known)),
            )
        candidates = [c for c in candidates if c.name in options.candidates]

    def phase(name: str, done: int, total: int, label: str = "") -> None:
        if progress is not None:
            progress(ProgressEvent(name, done, total, label))

    phase("model", 0, 1, str(model_path))
    loaded = load_model(model_path, dtype=options.dtype, device=options.device)
    phase("model", 1, 1)
    data = load_calibration_data(
        options.data,
        seq_len=options.seq_len,
        max_samples=options.samples,
        encode=loaded.encode if loaded.has_tokenizer else None,
        vocab_size=loaded.vocab_size,
    )
    phase("data", 1, 1)
    require_predicted_tokens(data.samples)
    if not loaded.layers:
        raise UsageError(f"{model_path}: no attention layer with a KV cache to plan for")

    dtype_bytes = torch.empty((), dtype=getattr(torch, loaded.dtype)).element_size()
    names = [layer.engine_name for layer in loaded.layers]
    results: list[CandidateResult] = []
    measured: list[Candidate] = []
    for candidate in candidates:
        status, why = _status(candidate, options.engine.attention_backend)
        if status == "measured":
            measured.append(candidate)
        else:
            results.append(
                CandidateResult(
                    candidate,
                    status,
                    why,
                    _bytes_per_token(candidate, loaded, dtype_bytes),
                    None,
                )
            )

    # Pass 1: the calibration statistic, per KV head (per tensor is the max over heads), and
    # the decoder's last hidden state per sample: the reference's logits without another pass.
    capture_began = time.perf_counter()
    capture = capture_kv_amax(
        loaded, data.samples, strategy="head", keep_final_hidden=True, progress=progress
    )
    capture_seconds = time.perf_counter() - capture_began
    amax: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {}
    for lc in capture.layers:
        amax_k = lc.k_amax if isinstance(lc.k_amax, tuple) else (lc.k_amax,)
        amax_v = lc.v_amax if isinstance(lc.v_amax, tuple) else (lc.v_amax,)
        if not all(math.isfinite(a) for a in (*amax_k, *amax_v)):
            raise UsageError(
                f"{lc.name}: K or V hold NaN or inf on this data; no scale can be calibrated",
                hint="check the model and the data (kvscale calibrate reports the same)",
            )
        amax[lc.name] = (amax_k, amax_v)
    held_cache: dict[tuple[str, str | None, bool], Mapping[str, tuple[Any, Any]]] = {}

    def scales_for(candidate: Candidate) -> Mapping[str, tuple[Any, Any]]:
        key = (candidate.kv_cache_dtype, candidate.scales, candidate.per_head)
        if key not in held_cache:
            held_cache[key] = _held_scales(candidate, report, options, model_path, amax, names)
        return held_cache[key]

    # Pass 2: the reference and every measurable candidate, per sample.
    meters = {c.name: _ErrorMeter() for c in measured}
    variants = []
    for candidate in measured:
        try:
            scales = scales_for(candidate)
        except UsageError as exc:
            results.append(
                CandidateResult(
                    candidate,
                    "unsupported",
                    exc.message,
                    _bytes_per_token(candidate, loaded, dtype_bytes),
                    None,
                )
            )
            continue
        variants.append(
            CacheVariant(
                candidate.name,
                _codecs(candidate, loaded, scales, meters[candidate.name], options.engine),
            )
        )
    evaluation = evaluate_model(
        loaded,
        data.samples,
        variants,
        reference_hidden=capture.final_hidden,
        reference_output=capture.first_output,
        progress=progress,
    )
    reference = evaluation.variant("unquantized")
    passes = 1 + evaluation.forward_passes
    forward_seconds = reference.seconds
    if evaluation.reference_from_hidden:
        # The unquantized model's pass over the data: the capture, then the head's logits.
        forward_seconds += capture_seconds
    for candidate in measured:
        if candidate.name not in {v.name for v in variants}:
            continue
        run = evaluation.variant(candidate.name)
        size = _bytes_per_token(candidate, loaded, dtype_bytes)
        results.append(
            CandidateResult(
                candidate,
                "measured",
                None,
                size,
                _tokens_fit(size, options.gpu_memory),
                run.ppl,
                run.kl_mean,
                run.kl_max,
                meters[candidate.name].shares(names),
            )
        )
    budget = options.budget
    chosen, closest, confirmations, extra_passes = _choose(
        results,
        budget,
        reference.ppl,
        engine.supports_skip_layers,
        lambda c: _bytes_per_token(c, loaded, dtype_bytes),
        lambda c: _confirm(
            c,
            loaded,
            data.samples,
            scales_for(c),
            dtype_bytes,
            options.engine,
            options.gpu_memory,
            capture,
            progress,
        ),
    )
    passes += extra_passes
    results.extend(confirmations)

    checkpoint = str(model_path)
    needed = chosen is not None and chosen.candidate.scales == "calibrated"
    written = None
    if needed and chosen is not None and options.out is not None:
        written = _write_checkpoint(model_path, options, chosen.candidate, progress)
        checkpoint = str(written)
        passes += 1
    flags: tuple[str, ...] = ()
    verify_command: tuple[str, ...] = ()
    if chosen is not None:
        flags, backend = serve_flags(
            engine, chosen.candidate, checkpoint, options.engine.attention_backend, report.platform
        )
        verify_command = _verify_command(checkpoint, options, chosen.candidate, backend)
    notes = []
    if needed and options.out is None:
        notes.append(
            "the chosen configuration needs the calibrated scales: pass --out DIR to write a "
            "checkpoint holding them (kvscale calibrate --checkpoint writes the same values)"
        )
    return PlanResult(
        model=str(model_path),
        data=str(options.data),
        engine=engine.describe(),
        options=options,
        budget=budget,
        samples=evaluation.samples,
        tokens=evaluation.tokens,
        ppl_unquantized=reference.ppl,
        results=tuple(results),
        chosen=chosen,
        closest=closest,
        flags=flags,
        verify_command=verify_command,
        checkpoint=checkpoint if chosen is not None else None,
        checkpoint_needed=needed,
        forward_passes=passes,
        seconds=time.monotonic() - start,
        forward_seconds=forward_seconds,
        notes=tuple(notes),
    )


def serve_flags(
    engine: Engine,
    candidate: Candidate,
    checkpoint: str,
    attention_backend: str | None,
    platform: str,
) -> tuple[tuple[str, ...], str | None]:
    """The engine's serving command for a chosen candidate (``PlanResult.flags``), and the
    attention backend it names. A backend is named when the user chose one, or when the
    configuration depends on it (a format only some backends run, per-head scales only some
    honour) and the engine's default backend is not among them: the engine's pick for the
    platform (``Engine.backend_to_name``).
    ``tests/parity/serve_flags_oracle.py`` parses every such command with the engine's own
    argument parser."""
    backend = attention_backend
    needs = candidate.backends
    if backend is None and needs and engine.default_attention_backend not in needs:
        backend = engine.backend_to_name(needs, platform)
    flags = engine.serve_command(
        checkpoint,
        candidate.kv_cache_dtype,
        skip_layers=candidate.skip_layers,
        attention_backend=backend,
    )
    return flags, backend


def _verify_command(
    checkpoint: str, options: PlanOptions, candidate: Candidate, backend: str | None
) -> tuple[str, ...]:
    cmd = ["kvscale", "verify", checkpoint]
    engine = options.engine
    if engine.engine is not None:
        cmd += ["--engine", engine.engine.value]
    if engine.platform is not None:
        cmd += ["--platform", engine.platform.value]
    cmd += ["--kv-cache-dtype", candidate.kv_cache_dtype]
    if candidate.skip_layers:
        cmd += ["--kv-cache-dtype-skip-layers", ",".join(candidate.skip_layers)]
    if backend is not None:
        cmd += ["--attention-backend", backend]
    if engine.gpu_arch is not None:
        cmd += ["--gpu-arch", engine.gpu_arch]
    cmd += ["--data", str(options.data), "--samples", str(options.samples)]
    cmd += ["--seq-len", str(options.seq_len)]
    if options.device != "cpu":
        cmd += ["--model-device", options.device]
    return tuple(cmd)


def _tokens_fit(size: float | None, gpu_memory: int | None) -> int | None:
    if size is None or gpu_memory is None or size <= 0:
        return None
    return int(gpu_memory // size)


def _confirm(
    candidate: Candidate,
    loaded: LoadedModel,
    samples: Sequence[Sequence[int]],
    scales: Mapping[str, tuple[Any, Any]],
    dtype_bytes: int,
    engine_options: EngineOptions,
    gpu_memory: int | None,
    capture: CaptureResult,
    progress: ProgressFn | None,
) -> tuple[CandidateResult, int]:
    """The confirmation run and the forward passes it took (one, or two when the reference
    has to run again); the reference from the capture's hidden states, as in the plan's run."""
    from kvscale.model.evaluate import CacheVariant, evaluate_model

    meter = _ErrorMeter()
    variant = CacheVariant(
        candidate.name, _codecs(candidate, loaded, scales, meter, engine_options)
    )
    evaluation = evaluate_model(
        loaded,
        samples,
        [variant],
        reference_hidden=capture.final_hidden,
        reference_output=capture.first_output,
        progress=progress,
    )
    run = evaluation.variant(candidate.name)
    size = _bytes_per_token(candidate, loaded, dtype_bytes)
    names = [layer.engine_name for layer in loaded.layers]
    return CandidateResult(
        candidate,
        "measured",
        None,
        size,
        _tokens_fit(size, gpu_memory),
        run.ppl,
        run.kl_mean,
        run.kl_max,
        meter.shares(names),
        confirmation=True,
    ), evaluation.forward_passes


def _choose(
    results: Sequence[CandidateResult],
    budget: tuple[str, float],
    reference_ppl: float,
    can_skip: bool,
    size_of: Callable[[Candidate], float | None],
    confirm: Callable[[Candidate], tuple[CandidateResult, int]],
) -> tuple[CandidateResult | None, CandidateResult | None, list[CandidateResult], int]:
    """(chosen, closest when none, confirmation runs, forward passes they took).

    Order: fewest bytes per token; at equal bytes the configuration that needs least (no new
    scales before calibrated ones, per tensor before per head), then the lower KL."""

    def key(r: CandidateResult) -> tuple[float, int, int, float]:
        c = r.candidate
        kl = r.kl_mean if r.kl_mean is not None and not math.isnan(r.kl_mean) else math.inf
        return (r.bytes_per_token or 0.0, c.scales == "calibrated", c.per_head, kl)

    measured = sorted(
        (r for r in results if r.status == "measured" and r.bytes_per_token is not None),
        key=key,
    )
    confirmations: list[CandidateResult] = []
    passes = 0
    meeting = [r for r in measured if r.meets(budget, reference_ppl)]
    best = meeting[0] if meeting else None
    if can_skip:
        for result in measured:
            if best is not None and key(result) >= key(best):
                break
            if result.meets(budget, reference_ppl) or not result.layers:
                continue
            for skip in _skip_sets(result, budget, reference_ppl):
                trial = replace(result.candidate, skip_layers=skip)
                size = size_of(trial)
                if size is None or (
                    best is not None and size >= (best.bytes_per_token or math.inf)
                ):
                    break  # keeping these layers costs as much as the next answer
                confirmed, confirm_passes = confirm(trial)
                confirmations.append(confirmed)
                passes += confirm_passes
                if confirmed.meets(budget, reference_ppl):
                    best = confirmed
                    break
    closest = None
    if best is None and measured:
        kind = budget[0]

        def distance(r: CandidateResult) -> float:
            value = r.kl_mean if kind == "kl" else r.ppl_increase(reference_ppl)
            return value if value is not None and not math.isnan(value) else math.inf

        closest = min([*measured, *confirmations], key=distance)
    return best, closest, confirmations, passes


def _skip_sets(
    result: CandidateResult, budget: tuple[str, float], reference_ppl: float
) -> list[tuple[str, ...]]:
    """Growing sets of layers to keep unquantized, by estimated KL share: the first set whose
    estimate meets the budget, then one more layer each, up to ``MAX_CONFIRMATIONS`` sets."""
    kind, bound = budget
    value = result.kl_mean if kind == "kl" else result.ppl_increase(reference_ppl)
    if value is None or math.isnan(value) or value <= 0:
        return []
    order = sorted(result.layers, key=lambda s: s.share, reverse=True)
    from kvscale.conventions import layer_index

    remaining = 1.0
    chosen: list[str] = []
    sets: list[tuple[str, ...]] = []
    for share in order[:-1]:  # keeping every layer unquantized is the unquantized cache
        index = layer_index(share.name)
        if index is None:
            continue
        chosen.append(str(index))
        remaining -= share.share
        if value * remaining <= bound or sets:
            sets.append(tuple(sorted(chosen, key=int)))
            if len(sets) >= MAX_CONFIRMATIONS:
                break
    return sets


def _write_checkpoint(
    model: Path, options: PlanOptions, candidate: Candidate, progress: ProgressFn | None
) -> Path:
    """The chosen calibrated scales written into a copy of MODEL, by ``kvscale calibrate``'s
    writer (same data, same samples: the same values the plan measured)."""
    from kvscale.core.calibrate import CalibrateOptions, calibrate
    from kvscale.scales_file import CHECKPOINT_DIR

    assert options.out is not None
    calibrate(
        model,
        options.data,
        options.out,
        CalibrateOptions(
            samples=options.samples,
            seq_len=options.seq_len,
            device=options.device,
            dtype=options.dtype,
            strategy="head" if candidate.per_head else "tensor",
            checkpoint=True,
            engine=replace(options.engine, kv_cache_dtype=candidate.kv_cache_dtype),
            force=options.force,
        ),
        progress,
    )
    return options.out / CHECKPOINT_DIR
