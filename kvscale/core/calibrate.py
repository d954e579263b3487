"""``kvscale calibrate``: KV-cache scales from a model's own activations, written so the engine
loads them.

The model side (loading, the observation point, the statistic) lives in ``model`` and
``capture``; this module decides what is written, and proves it:

1. ``plan_calibration`` loads MODEL (``model.load_model``), reads the data
   (``data.load_calibration_data``), captures every KV layer's amax
   (``capture.capture_kv_amax``) and turns it into float32 scales (``scales.kv_scales``). It
   plans the output: ``kv_scales.json`` (``kvscale.scales/1`` holding those float32 values plus a
   ``calibration`` object) and ``kv_scales.safetensors``; with ``checkpoint``, a copy of the
   target checkpoint (``target``, default MODEL) with the scales under its attention prefixes and
   a quantization_config that makes the engine load them. What the engine will hold (model-dtype
   rounding, fnuz doubling) comes from the engine's own resolution rules on the planned tensors.
2. ``write_calibration`` writes atomically (``io.staging.write_output``); a checkpoint copy is
   inspected with the same engine before it becomes visible: every calibrated layer must load
   exactly the planned values, else nothing is written.

The scales are for the OCP e4m3 cache (``448``): vLLM doubles loaded scales itself on fnuz
platforms, so one file serves both.

MLA layers (DeepSeek-V2/V3 style) get one scale, ``k = v = max(amax(kv_c), amax(k_pe)) / 448``
(``capture``: observed at the cache update), written under the names the engine loads. Where the
engine's loader takes no name for a layer (``Engine.checkpoint_name`` is None for both kinds:
vLLM 0.33.0's DeepSeek-family loaders for MLA layers), the scales still go to
``kv_scales.json``/``.safetensors`` with what the engine holds (its default), a ``--checkpoint``
copy carries none for that layer, and ``calibrated-scales-not-loaded`` says so.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import kvscale.scales_file as scales_file
from kvscale._version import __version__
from kvscale.cache_formats import ScaleUse
from kvscale.conventions import NORMALIZED_MARK, Convention
from kvscale.core.inspect import ScaleReport, resolve_again, resolve_checkpoint
from kvscale.engine.base import (
    EnginePath,
    EngineSettings,
    NameContext,
    QuantConfig,
    ResolvedLayer,
    Rule,
    ScaleSource,
    ScaleValue,
)
from kvscale.engine.options import EngineOptions
from kvscale.errors import InternalCheckError, RefusedError, UsageError
from kvscale.floats import decode_values
from kvscale.io.checkpoint import Checkpoint, input_paths, open_checkpoint
from kvscale.io.checkpoint_copy import (
    ShardEdit,
    plan_copy,
    scale_shards,
    scale_tensor,
)
from kvscale.io.staging import (
    FileJob,
    WriteOptions,
    WrittenFile,
    check_not_input,
    check_out,
    write_output,
)
from kvscale.model.scales import E4M3_MAX
from kvscale.model_config import (
    ct_kv_cache_scheme,
    find_quant_config,
    kv_only_quantization_config,
)
from kvscale.nvfp4_conventions import (
    CONVENTION_MARK,
    GlobalScaleConvention,
    expected_convention,
    parse_convention,
)
from kvscale.problems import Problem, Severity, problem
from kvscale.progress import ProgressEvent, ProgressFn

if TYPE_CHECKING:
    from kvscale.model.capture import CaptureResult
    from kvscale.model.data import CalibrationData
    from kvscale.model.load import LoadedModel

PHASES = ("model", "data", "calibrate", "write")


@dataclass(frozen=True)
class CalibrateOptions:
    samples: int = 512
    seq_len: int = 2048
    batch_size: int = 1
    device: str = "auto"
    """``cpu``, ``cuda`` or ``auto`` (accelerate's ``device_map="auto"`` over the GPUs, else
    the CPU)."""
    dtype: str = "auto"
    strategy: str = "tensor"
    headroom: float = 1.0
    min_scale: float = 0.0
    holdout: float = 0.0
    checkpoint: bool = False
    """Also write ``DIR/checkpoint/``: the target with the scales."""
    target: Path | None = None
    """The checkpoint the scales are written into (default: MODEL)."""
    engine: EngineOptions = field(default_factory=EngineOptions)
    force: bool = False
    write: WriteOptions = field(default_factory=WriteOptions)
    max_memory: Mapping[Any, Any] | None = None
    """accelerate ``max_memory`` for ``device="auto"`` (per GPU, e.g. ``{0: "20GiB"}``)."""
    nvfp4_convention: str | None = None
    """With ``--kv-cache-dtype nvfp4``: write the global scales as ``amax/448``, ``amax/2688``
    or ``engine`` (default: what the engine turns into amax/448 on ``--gpu-arch``)."""

    def __post_init__(self) -> None:
        if self.target is not None and not self.checkpoint:
            raise UsageError("--target names where --checkpoint writes; pass --checkpoint too")
        if self.nvfp4_convention not in (None, "engine"):
            try:
                parse_convention(self.nvfp4_convention)
            except ValueError:
                raise UsageError(
                    f"--nvfp4-convention {self.nvfp4_convention!r} is not a convention",
                    hint="amax/448, amax/2688 or engine",
                ) from None


@dataclass(frozen=True)
class CalibratedLayer:
    """One layer's result: the statistic, the float32 scales written, what the engine holds."""

    name: str
    """The engine's attention layer name (as ``inspect`` names layers)."""
    checkpoint_prefix: str
    k_amax: ScaleValue
    v_amax: ScaleValue
    k_scale: ScaleValue
    v_scale: ScaleValue
    tokens: int
    holdout_saturated_k: float | None
    holdout_saturated_v: float | None
    held: ResolvedLayer
    """The target engine's resolution of the planned tensors (rounding, fnuz doubling)."""
    checkpoint_tensors: tuple[tuple[str, str], ...] = ()
    """(kind, tensor name) written into the copy."""
    latent_amax: tuple[float, float] | None = None
    """MLA: (max |kv_c|, max |k_pe|); ``k_amax`` and ``v_amax`` are their max."""
    latent_width: tuple[int, int] | None = None
    """MLA: (kv_lora_rank, rope_dim) of the cached row."""


@dataclass(frozen=True)
class CalibrationPlan:
    model: str
    data: CalibrationData
    out: Path
    options: CalibrateOptions
    loaded: LoadedModelSummary
    capture: CaptureResult
    layers: tuple[CalibratedLayer, ...]
    target: str
    settings: EngineSettings
    """The engine settings the copy (or MODEL with a KV-only config) is resolved under."""
    quantization_config: Mapping[str, Any]
    """The quantization_config the copy carries."""
    warnings: tuple[Problem, ...]
    blocking: tuple[Problem, ...]
    files: tuple[FileJob, ...] = ()
    nvfp4: Nvfp4Target | None = None
    """With ``--kv-cache-dtype nvfp4``: the convention the global scales are written in."""

    @property
    def ok(self) -> bool:
        return not self.blocking

    @property
    def engine(self) -> dict[str, str]:
        return self.options.engine.rules.describe()


@dataclass(frozen=True)
class LoadedModelSummary:
    """What was loaded (the model object itself is not kept past the capture)."""

    path: str
    architecture: str
    model_type: str
    dtype: str
    device: str
    attn_implementation: str
    transformers_version: str
    skipped: tuple[tuple[str, str], ...]
    """(module or layer, why) of decoder layers with no KV cache of their own."""
    devices: tuple[str, ...] = ()
    """Where accelerate put the layers (``device_map="auto"``): ``cuda:0``, ``cuda:1``, ``disk``."""


@dataclass(frozen=True)
class CalibrationResult:
    plan: CalibrationPlan
    files: tuple[WrittenFile, ...]
    replaced: bool
    checked: tuple[ResolvedLayer, ...] = ()
    """What ``inspect`` resolves in the written copy, layer by layer (empty without a copy)."""


class CalibrationCheckError(InternalCheckError):
    """The written copy does not load the planned values: a kvscale bug (nothing is written)."""


# --- planning -------------------------------------------------------------------------------------


def _summary(loaded: LoadedModel) -> LoadedModelSummary:
    return LoadedModelSummary(
        path=loaded.path,
        architecture=loaded.architecture,
        model_type=loaded.model_type,
        dtype=loaded.dtype,
        device=loaded.device,
        attn_implementation=loaded.attn_implementation,
        transformers_version=loaded.transformers_version,
        skipped=tuple((s.module_path or f"layer {s.layer_idx}", s.reason) for s in loaded.skipped),
        devices=tuple(
            dict.fromkeys(
                f"cuda:{d}" if isinstance(d, int) else str(d)
                for d in (loaded.device_map or {}).values()
            )
        ),
    )


def _copy_quantization_config(
    ckpt: Checkpoint, report: ScaleReport, strategy: str
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(the quantization_config the copy carries, the new config.json or None when unchanged).

    An unquantized target gets the compressed-tensors KV-only form; a compressed-tensors target
    without a ``kv_cache_scheme`` gets one; any other quantized target keeps its method, which
    must already create KV-scale parameters."""
    raw = find_quant_config(
        ckpt.config,
        ckpt.hf_quant_config,
        str(ckpt.config_path),
        hf_where=str(ckpt.hf_quant_config_path),
    )
    if raw is None:
        qc = kv_only_quantization_config(strategy)
        config = dict(ckpt.config or {})
        config["quantization_config"] = qc
        return qc, config
    qc = dict(raw.config)
    method = report.quant_method
    if method == "compressed-tensors" and qc.get("kv_cache_scheme") is None:
        if raw.source != "config.json" or raw.key != "quantization_config":
            raise UsageError(
                f"{ckpt.given}: its compressed-tensors config is in {raw.where} ({raw.key}); "
                "kvscale adds a kv_cache_scheme only to config.json's quantization_config"
            )
        qc["kv_cache_scheme"] = ct_kv_cache_scheme(strategy)
        config = dict(ckpt.config or {})
        config["quantization_config"] = qc
        return qc, config
    if report.engine_path is EnginePath.NONE:
        raise UsageError(
            f"{ckpt.given}: its quant_method {method} creates no KV-scale parameters, so the "
            "engine would ignore calibrated scales",
            hint="write them into the unquantized model (--target MODEL), or use a checkpoint "
            "quantized with compressed-tensors, fp8, ModelOpt or Quark",
        )
    if method == "compressed-tensors":
        scheme = qc.get("kv_cache_scheme")
        want = ct_kv_cache_scheme(strategy)["strategy"]
        if isinstance(scheme, Mapping) and scheme.get("strategy", "tensor") != want:
            qc["kv_cache_scheme"] = {**scheme, "strategy": want}
            config = dict(ckpt.config or {})
            config["quantization_config"] = qc
            return qc, config
    return qc, None


def _target_settings(
    target: Checkpoint, report: ScaleReport, options: CalibrateOptions
) -> tuple[dict[str, Any], dict[str, Any] | None, QuantConfig, EngineSettings]:
    """The copy's quantization_config (and new config.json), the quant config the engine reads
    from it, and the settings the written scales are resolved under."""
    engine = options.engine.rules
    copy_qc, new_config = _copy_quantization_config(target, report, options.strategy)
    raw = find_quant_config(
        new_config if new_config is not None else target.config,
        target.hf_quant_config,
        str(target.config_path),
        hf_where=str(target.hf_quant_config_path),
    )
    quant = engine.quant_config(raw)
    if options.strategy == "head" and quant.engine_path is not EnginePath.COMPRESSED_TENSORS:
        raise UsageError(
            f"--strategy head needs the compressed-tensors path (attn_head); {target.given} "
            f"loads KV scales through quant_method {quant.quant_method}, which takes one per "
            "tensor",
            hint="use --strategy tensor, or --target an unquantized or compressed-tensors "
            "checkpoint",
        )
    settings, _ = engine.settings(quant, report.shape, options.engine, report.weight_dtypes)
    if not settings.uses_kv_scales:
        # The scales are for an FP8 cache; show what the engine holds with one.
        settings, _ = engine.settings(
            quant,
            report.shape,
            replace(options.engine, kv_cache_dtype=engine.fp8_kv_cache_dtype),
            report.weight_dtypes,
        )
    return copy_qc, new_config, quant, settings


def engine_holds(
    target_path: str | os.PathLike[str],
    options: CalibrateOptions,
    scales: Mapping[str, tuple[ScaleValue, ScaleValue]],
) -> dict[str, tuple[ScaleValue | None, ScaleValue | None]]:
    """What the engine would hold for each layer if calibrate wrote ``scales`` (float32 values
    per engine layer name) into a copy of the target: its resolution of exactly the tensors
    ``plan_calibration`` writes (``plan`` measures candidates at these values, so a served copy
    reproduces them). A layer whose loader takes no name holds the engine's default."""
    engine = options.engine.rules
    target = open_checkpoint(Path(target_path))
    report = resolve_checkpoint(target, options.engine)
    _, _, quant, settings = _target_settings(target, report, options)
    context = NameContext(quant, report.shape, frozenset())
    out: dict[str, tuple[ScaleValue | None, ScaleValue | None]] = {}
    for layer in report.layers:
        if layer.name not in scales:
            continue
        prefix = layer.checkpoint_prefix
        tensors = []
        for kind, value in zip(("k_scale", "v_scale"), scales[layer.name], strict=True):
            name = engine.checkpoint_name(prefix, kind, context)
            if name is not None:
                tensors.append(
                    (kind, scale_tensor(name, kind, value, report.shape.num_attention_heads))
                )
        held = _held(options.engine, layer.name, prefix, tensors, settings)
        out[layer.name] = (held.k_scale, held.v_scale)
    return out


def _held(
    engine_options: EngineOptions,
    name: str,
    prefix: str,
    tensors: Sequence[tuple[str, Any]],
    settings: EngineSettings,
) -> ResolvedLayer:
    """What the engine holds for one layer given the new tensors (its own resolution rules)."""
    engine = engine_options.rules
    sources = [
        ScaleSource(
            tensor=tensor.name,
            file="",
            dtype=tensor.dtype,
            shape=tensor.shape,
            kind=kind,
            convention=Convention.LLM_COMPRESSOR,
            load_order=i,
            values=tuple(decode_values(tensor.dtype, tensor.data)),
        )
        for i, (kind, tensor) in enumerate(tensors)
    ]
    return engine.resolve_layer(name, sources, settings, checkpoint_prefix=prefix)


def _bad_scale(value: ScaleValue) -> bool:
    values = value if isinstance(value, tuple) else (value,)
    return any(not (math.isfinite(v) and v > 0) for v in values)


def _capture(
    loaded: LoadedModel,
    data: str | os.PathLike[str],
    options: CalibrateOptions,
    progress: ProgressFn | None,
) -> tuple[CalibrationData, CaptureResult, LoadedModelSummary]:
    from kvscale.model.capture import capture_kv_amax
    from kvscale.model.data import load_calibration_data

    calibration = load_calibration_data(
        Path(data),
        seq_len=options.seq_len,
        max_samples=options.samples,
        encode=loaded.encode if loaded.has_tokenizer else None,
        vocab_size=loaded.vocab_size,
    )
    if progress is not None:
        progress(ProgressEvent("data", 1, 1))
    capture = capture_kv_amax(
        loaded,
        calibration.samples,
        strategy=options.strategy,
        batch_size=options.batch_size,
        holdout=options.holdout,
        headroom=options.headroom,
        min_scale=options.min_scale,
        progress=progress,
    )
    return calibration, capture, _summary(loaded)


@dataclass(frozen=True)
class Nvfp4Target:
    """The convention calibrate writes NVFP4 global scales in, and why."""

    convention: GlobalScaleConvention
    why: str

    def to_json(self) -> dict[str, object]:
        return {
            "convention": self.convention.value,
            "divisor": self.convention.divisor,
            "why": self.why,
        }


def nvfp4_target(report: ScaleReport, options: CalibrateOptions) -> Nvfp4Target | None:
    """None for an FP8 calibration; the convention for ``--kv-cache-dtype nvfp4`` (refused
    where the cache reads no global scale: MLA latents, per-head strategy)."""
    engine = options.engine.rules
    requested = options.engine.kv_cache_dtype
    fmt = engine.cache_format(requested, report.platform) if requested else None
    if fmt is None or fmt.scale_use is not ScaleUse.GLOBAL_SCALE:
        if options.nvfp4_convention is not None:
            raise UsageError(
                "--nvfp4-convention applies to NVFP4 global scales",
                hint="pass --kv-cache-dtype nvfp4",
            )
        return None
    if report.shape.latent_width is not None:
        raise UsageError(
            f"--kv-cache-dtype {requested} on an MLA model caches the latent with its own "
            "per-16 block scales (no checkpoint scale is read): there is nothing to calibrate",
            hint="calibrate an FP8 latent cache (--kv-cache-dtype fp8)",
        )
    if options.strategy == "head":
        raise UsageError(
            "--strategy head: an NVFP4 cache has one global scale per layer for K and one for V",
            hint="use --strategy tensor",
        )
    wanted = options.nvfp4_convention or "engine"
    if wanted != "engine":
        return Nvfp4Target(parse_convention(wanted), "--nvfp4-convention")
    groups = engine.nvfp4_global_scales(0.5, options.engine.gpu_arch)
    targets = {expected_convention(g) for g in groups}
    if len(targets) != 1:
        raise UsageError(
            f"{engine.name} {engine.version} reads NVFP4 global scales differently per GPU "
            f"({', '.join(f'{g.gpus}: {g.how}' for g in groups)}), so the value to write "
            "depends on the GPU",
            hint="pass --gpu-arch (e.g. sm100 or sm90), or --nvfp4-convention amax/448",
        )
    gpus = options.engine.gpu_arch or "every GPU"
    return Nvfp4Target(
        targets.pop(), f"what {engine.name} {engine.version} turns into amax/448 on {gpus}"
    )


def plan_calibration(
    model: str | os.PathLike[str],
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: CalibrateOptions | None = None,
    progress: ProgressFn | None = None,
) -> CalibrationPlan:
    """Load, read, capture and decide everything; writes nothing (``write_calibration`` does)."""
    from kvscale.model.load import load_model
    from kvscale.model.scales import check_scale_options

    options = options or CalibrateOptions()
    out_path = Path(out)
    model_path = Path(model)
    target_path = Path(options.target) if options.target is not None else model_path
    engine = options.engine.rules
    engine.require("calibrate")
    check_scale_options(options.headroom, options.min_scale)
    if not 0.0 <= options.holdout < 1.0:
        raise UsageError(f"--holdout {options.holdout} must be in [0, 1)")
    if options.strategy == "head" and engine.name == "sglang":
        raise UsageError(
            "--strategy head: SGLang 0.5.23 loads per-tensor KV scales only "
            "(it refuses per-head ones)",
            hint="use --strategy tensor with --engine sglang",
        )

    # The target first: a bad --target or --out fails before minutes of calibration.
    target = open_checkpoint(target_path)
    report = resolve_checkpoint(target, options.engine)
    if options.strategy == "head" and report.shape.latent_width is not None:
        raise UsageError(
            f"--strategy head: {target.given} is an MLA model (kv_lora_rank "
            f"{report.shape.kv_lora_rank}): its cache holds one latent row per token ([kv_c | "
            "k_pe], one head) written with one k scale",
            hint="use --strategy tensor",
        )
    nvfp4 = nvfp4_target(report, options)
    inputs = [model_path, Path(data), *input_paths(target, other=True)]
    check_not_input(out_path, inputs, "--out")
    check_out(out_path, options.force)
    copy_qc, new_config, quant, settings = _target_settings(target, report, options)

    def phase(name: str, done: int, total: int, tokens: int | None = None, label: str = "") -> None:
        if progress is not None:
            progress(ProgressEvent(name, done, total, label, tokens=tokens))

    phase("model", 0, 1, label=str(model_path))
    with tempfile.TemporaryDirectory(prefix="kvscale-offload-") as offload:
        loaded = load_model(
            model_path,
            dtype=options.dtype,
            device=options.device,
            max_memory=options.max_memory,
            offload_folder=offload if options.max_memory is not None else None,
        )
        phase("model", 1, 1)
        calibration, capture, summary = _capture(loaded, data, options, progress)
        del loaded  # the model is not needed past the capture (its memory can go)

    warnings: list[Problem] = []
    blocking: list[Problem] = []
    if calibration.short:
        warnings.append(
            problem(
                "fewer-tokens-than-asked",
                f"{calibration.path} holds {len(calibration.samples)} sample(s), "
                f"{calibration.tokens} tokens, fewer than the {options.samples} x "
                f"{options.seq_len} asked: the scales come from those",
            )
        )
    for module, why in summary.skipped:
        warnings.append(problem("layer-not-calibrated", f"{module}: {why}"))

    by_name = {layer.name: layer for layer in report.layers}
    calibrated = {lc.name for lc in capture.layers}
    missing = [name for name in by_name if name not in calibrated]
    extra = [name for name in calibrated if name not in by_name]
    if extra:
        raise UsageError(
            f"{target.given} has no attention layer named {extra[0]} (MODEL's layer"
            + (f", and {len(extra) - 1} more" if len(extra) > 1 else "")
            + "): the target is not a checkpoint of MODEL's architecture",
            hint="pass --target a checkpoint of the same model (e.g. its FP8 release)",
        )
    if missing:
        blocking.append(
            problem(
                "layer-not-calibrated",
                f"{len(missing)} attention layer(s) of {target.given} got no scale from MODEL "
                f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''})",
                severity=Severity.ERROR,
                layers=tuple(missing),
            )
        )

    context = NameContext(quant, report.shape, frozenset())
    shards = scale_shards(target, report.layers)
    scales = capture.scales(nvfp4.convention.divisor if nvfp4 is not None else E4M3_MAX)
    layers: list[CalibratedLayer] = []
    edits_remove: dict[str, set[str]] = {name: set() for name in target.files}
    edits_add: dict[str, list[Any]] = {name: [] for name in target.files}
    replaced_layers: list[str] = []
    not_loaded: list[str] = []
    for lc in capture.layers:
        k, v = scales[lc.name]
        if k is None or v is None:
            kinds = [kind for kind, s in (("K", k), ("V", v)) if s is None]
            blocking.append(
                problem(
                    "nonfinite-activations",
                    f"{' and '.join(kinds)} of {lc.name} hold NaN or inf on the calibration "
                    "data: no scale can be computed for it",
                    lc.name,
                )
            )
            continue
        if _bad_scale(k) or _bad_scale(v):
            blocking.append(
                problem(
                    "invalid-scale-value",
                    f"{lc.name}: the calibrated scale is 0 or inf (amax k {lc.k_amax}, v "
                    f"{lc.v_amax}); an engine cannot load it",
                    lc.name,
                    severity=Severity.ERROR,
                )
            )
            continue
        target_layer = by_name[lc.name]
        prefix = target_layer.checkpoint_prefix
        latent = lc.layer.latent
        names = {
            kind: engine.checkpoint_name(prefix, kind, context) for kind in ("k_scale", "v_scale")
        }
        if all(name is None for name in names.values()):
            # The loader takes no name for this layer: the engine holds its default whatever a
            # checkpoint says; the values still go to kv_scales.json.
            not_loaded.append(lc.name)
            layers.append(
                CalibratedLayer(
                    name=lc.name,
                    checkpoint_prefix=prefix,
                    k_amax=lc.k_amax,
                    v_amax=lc.v_amax,
                    k_scale=k,
                    v_scale=v,
                    tokens=lc.tokens,
                    holdout_saturated_k=lc.holdout_saturated_k,
                    holdout_saturated_v=lc.holdout_saturated_v,
                    held=_held(options.engine, lc.name, prefix, [], settings),
                    latent_amax=lc.latent_amax,
                    latent_width=(latent.kv_lora_rank, latent.rope_dim) if latent else None,
                )
            )
            continue
        tensors = []
        for kind, value in (("k_scale", k), ("v_scale", v)):
            name = names[kind]
            if name is None:
                raise UsageError(
                    f"no checkpoint name maps to {lc.name}.{kind} under quant_method "
                    f"{quant.quant_method}"
                )
            tensors.append(
                (kind, scale_tensor(name, kind, value, report.shape.num_attention_heads))
            )
        held = _held(options.engine, lc.name, prefix, tensors, settings)
        if held.rule not in (Rule.SEPARATE, Rule.PER_HEAD):
            blocking.append(
                problem(
                    "layer-refused",
                    f"the engine would not load the calibrated scales of {lc.name}: "
                    f"{held.error or held.rule.value}",
                    lc.name,
                )
            )
            continue
        old = [
            src
            for src in (*target_layer.sources.values(), *target_layer.shadowed)
            if src.kind in ("k_scale", "v_scale")
        ]
        if old:
            replaced_layers.append(lc.name)
        for src in old:
            edits_remove[src.file].add(src.tensor)
        edits_add[shards[lc.name]].extend(t for _, t in tensors)
        layers.append(
            CalibratedLayer(
                name=lc.name,
                checkpoint_prefix=prefix,
                k_amax=lc.k_amax,
                v_amax=lc.v_amax,
                k_scale=k,
                v_scale=v,
                tokens=lc.tokens,
                holdout_saturated_k=lc.holdout_saturated_k,
                holdout_saturated_v=lc.holdout_saturated_v,
                held=held,
                checkpoint_tensors=tuple((kind, t.name) for kind, t in tensors)
                if options.checkpoint
                else (),
                latent_amax=lc.latent_amax,
                latent_width=(latent.kv_lora_rank, latent.rope_dim) if latent else None,
            )
        )
    if not_loaded:
        engine_label = f"{engine.name} {engine.version}"
        warnings.append(
            problem(
                "calibrated-scales-not-loaded",
                f"{engine_label} loads no checkpoint name for the k/v scales of "
                f"{len(not_loaded)} layer(s) ({', '.join(not_loaded[:3])}"
                f"{' ...' if len(not_loaded) > 3 else ''}): it runs them at its default 1.0 "
                "whatever a checkpoint holds; kv_scales.json holds the calibrated values"
                + ("; the copy carries no scale for them" if options.checkpoint else ""),
                layers=tuple(not_loaded),
            )
        )
    if replaced_layers and options.checkpoint:
        warnings.append(
            problem(
                "scales-replaced",
                f"{len(replaced_layers)} layer(s) of {target.given} already had k/v scales; the "
                "copy holds the calibrated ones instead",
                layers=tuple(replaced_layers),
            )
        )

    plan = CalibrationPlan(
        model=str(model_path),
        data=calibration,
        out=out_path,
        options=options,
        loaded=summary,
        capture=capture,
        layers=tuple(layers),
        target=target.given,
        settings=settings,
        quantization_config=copy_qc,
        warnings=tuple(warnings),
        blocking=tuple(blocking),
        nvfp4=nvfp4,
    )
    document = scales_of(plan)
    json_blob = scales_file.json_bytes(document)
    st_blob = scales_file.safetensors_bytes(document)
    jobs: list[FileJob] = [
        FileJob(scales_file.TENSORS_NAME, "generated", len(st_blob), data=st_blob),
        FileJob(scales_file.JSON_NAME, "generated", len(json_blob), data=json_blob),
    ]
    if options.checkpoint:
        marks = {NORMALIZED_MARK: "calibrate"}
        if nvfp4 is not None:
            marks[CONVENTION_MARK] = nvfp4.convention.value
        edits = {
            name: ShardEdit(frozenset(edits_remove[name]), tuple(edits_add[name]), dict(marks))
            for name in target.files
            if edits_remove[name] or edits_add[name]
        }
        replaced = {}
        if new_config is not None:
            # transformers' save_pretrained style: indent 2, sorted keys, trailing newline.
            replaced["config.json"] = (
                json.dumps(new_config, indent=2, sort_keys=True) + "\n"
            ).encode()
        copy = plan_copy(target, edits, scales_file.CHECKPOINT_DIR, replaced=replaced)
        for shard, name in copy.collisions:
            blocking.append(
                problem(
                    "name-collision",
                    f"{name} would be written to {shard}, but a tensor of that name is kept",
                )
            )
        for rel, why in copy.skipped:
            warnings.append(problem("file-not-copied", f"{rel} is not copied: {why}"))
        check_not_input(
            out_path, [job.source for job in copy.jobs if job.source is not None], "--out"
        )
        jobs.extend(copy.jobs)
    return replace(plan, files=tuple(jobs), warnings=tuple(warnings), blocking=tuple(blocking))


# --- the kvscale.scales/1 document ---------------------------------------------------------------


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _json_value(value: ScaleValue | float | None) -> Any:
    from kvscale.floats import encode_json_value

    return encode_json_value(value)


def _latent_json(layer: CalibratedLayer) -> dict[str, object]:
    """An MLA layer's row and both parts of its amax (``k_amax`` = ``v_amax`` = their max)."""
    if layer.latent_amax is None or layer.latent_width is None:
        return {}
    return {
        "kv_c_amax": _json_value(layer.latent_amax[0]),
        "k_pe_amax": _json_value(layer.latent_amax[1]),
        "kv_lora_rank": layer.latent_width[0],
        "rope_dim": layer.latent_width[1],
    }


def scales_of(plan: CalibrationPlan) -> scales_file.ScalesFile:
    """``kv_scales.json`` / ``kv_scales.safetensors``: the float32 calibrated values (the OCP
    e4m3 cache's), the rule the engine loads them with, and the ``calibration`` object."""
    data = plan.data
    capture = plan.capture
    entries = []
    for layer in plan.layers:
        extra: dict[str, object] = {
            "k_amax": _json_value(layer.k_amax),
            "v_amax": _json_value(layer.v_amax),
            "engine_holds": {
                kind: _json_value(layer.held.value(kind)) for kind in ("k_scale", "v_scale")
            },
        }
        if layer.checkpoint_tensors:
            extra["checkpoint_tensors"] = dict(layer.checkpoint_tensors)
        entries.append(
            scales_file.LayerEntry(
                layer.name,
                layer.held.rule.value,
                {"k_scale": layer.k_scale, "v_scale": layer.v_scale},
                {},
                extra,
            )
        )
    calibration = {
        "model": plan.model,
        "data": data.path,
        "data_sha256": data.sha256,
        "data_kind": data.kind,
        "samples": capture.samples,
        "tokens": capture.tokens,
        "seq_len": data.seq_len,
        "batch_size": capture.batch_size,
        "strategy": capture.strategy,
        "headroom": capture.headroom,
        "min_scale": capture.min_scale,
        "holdout_samples": capture.holdout_samples,
        "holdout_tokens": capture.holdout_tokens,
        "dtype": plan.loaded.dtype,
        "device": plan.loaded.device,
        "attn_implementation": plan.loaded.attn_implementation,
        "transformers_version": plan.loaded.transformers_version,
        **({"nvfp4": plan.nvfp4.to_json()} if plan.nvfp4 is not None else {}),
        "layers": {
            layer.name: {
                "k_amax": _json_value(layer.k_amax),
                "v_amax": _json_value(layer.v_amax),
                "tokens": layer.tokens,
                "holdout_saturated_k": layer.holdout_saturated_k,
                "holdout_saturated_v": layer.holdout_saturated_v,
                **_latent_json(layer),
            }
            for layer in plan.layers
        },
    }
    settings = plan.settings
    first = plan.capture.layers[0].layer if plan.capture.layers else None
    return scales_file.ScalesFile(
        checkpoint=plan.target,
        kv_cache_dtype="fp8" if plan.nvfp4 is None else "nvfp4",
        platform="ocp",
        engine_path=settings.engine_path.value,
        layers=tuple(entries),
        settings=scales_file.ScalesSettings(
            engine=plan.engine,
            quant_method=_str_or_none(plan.quantization_config.get("quant_method")),
            model_dtype=settings.model_dtype,
            kv_cache_dtype_effective=settings.kv_cache_dtype,
            engine_platform=settings.platform,
            kvscale_version=__version__,
            num_kv_heads=first.num_kv_heads if first else None,
            head_size=first.head_size if first else None,
            warnings=tuple(p.to_json() for p in plan.warnings),
            calibration=calibration,
        ),
    )


# --- writing ------------------------------------------------------------------------------------


def _check_copy(plan: CalibrationPlan, sink: list[ResolvedLayer]) -> Callable[[Path], None]:
    """Inspect the staged copy with the same engine: every calibrated layer must load exactly
    the planned values (the promise ``kvscale inspect DIR/checkpoint`` then keeps)."""

    def check(staging: Path) -> None:
        options = plan.options.engine
        report = resolve_checkpoint(open_checkpoint(staging / scales_file.CHECKPOINT_DIR), options)
        if not report.settings.uses_kv_scales:
            # As _target_settings resolved the plan: the scales are for an FP8 cache (vLLM's
            # MLA layers keep `auto` unquantized even under a kv_cache_scheme).
            fp8 = replace(options, kv_cache_dtype=options.rules.fp8_kv_cache_dtype)
            report = resolve_again(report, fp8)
        got = {layer.name: layer for layer in report.layers}
        for layer in plan.layers:
            seen = got.get(layer.name)
            if seen is None or seen.rule is not layer.held.rule:
                raise CalibrationCheckError(
                    f"the written copy resolves {layer.name} as "
                    f"{seen.rule.value if seen else 'missing'}, not {layer.held.rule.value}",
                    hint="this is a kvscale bug: please report it with the command line",
                )
            for kind in ("k_scale", "v_scale"):
                if seen.value(kind) != layer.held.value(kind):
                    raise CalibrationCheckError(
                        f"the written copy loads {layer.name}.{kind} = {seen.value(kind)}, not "
                        f"the planned {layer.held.value(kind)}",
                        hint="this is a kvscale bug: please report it with the command line",
                    )
        sink.extend(got[layer.name] for layer in plan.layers)

    return check


def write_calibration(
    plan: CalibrationPlan, progress: ProgressFn | None = None
) -> CalibrationResult:
    """Write a plan atomically; ``RefusedError`` (exit 1) when it has blocking problems."""
    if not plan.ok:
        raise RefusedError(
            f"nothing written: {len(plan.blocking)} problem(s) stop calibrate "
            f"({plan.blocking[0].code}: {plan.blocking[0].message})"
        )

    checked: list[ResolvedLayer] = []
    files, replaced = write_output(
        plan.out,
        plan.files,
        replace(plan.options.write, force=plan.options.force),
        progress,
        source=plan.target,
        check=_check_copy(plan, checked) if plan.options.checkpoint else None,
    )
    return CalibrationResult(plan, files, replaced, tuple(checked))


def calibrate(
    model: str | os.PathLike[str],
    data: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: CalibrateOptions | None = None,
    progress: ProgressFn | None = None,
) -> CalibrationResult:
    """Plan and write in one call (library use): ``RefusedError`` when something stops it."""
    return write_calibration(plan_calibration(model, data, out, options, progress), progress)


__all__ = [
    "CalibrateOptions",
    "CalibratedLayer",
    "CalibrationCheckError",
    "CalibrationPlan",
    "CalibrationResult",
    "LoadedModelSummary",
    "calibrate",
    "plan_calibration",
    "write_calibration",
]
