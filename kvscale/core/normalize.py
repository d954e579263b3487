"""``kvscale normalize``: write the engine's scales explicitly, and optionally a normalized copy.

Two steps, as the style guide asks ("validate everything, then write anything"):

* ``plan_normalize`` resolves the checkpoint once (``resolve_checkpoint``; other KV-cache
  dtypes or platforms from the same sources with ``resolve_again``), decides every value, name,
  shard and file of the output and validates all of it. It writes nothing.
* ``write_plan`` hands the files to ``kvscale.io.staging.write_output``: staged next to
  ``--out``, fsynced, renamed into place at once.

Values (the engine's semantics, see ``kvscale/engine/<name>/rules.py``):

* ``kv_scales.safetensors``/``kv_scales.json`` hold the device values for the requested platform
  and the KV-cache dtype actually used (below), one float32 tensor per layer and kind.
* The normalized checkpoint holds, per layer, the value the engine reports on the ``ocp`` platform.
  Every such value is already exact in the scale parameter's dtype (the base path rounds the loaded
  scale to the model dtype before anything else), so loading it again reproduces it bit for bit,
  and the fnuz doubling of ``BaseKVCacheMethod.process_weights_after_loading``
  (``quantization/kv_cache.py``) applies to it exactly as it applied to the original.
* Exceptions, each reported as a warning:

  - base path, no k/v scales (rule ``default``): the engine's 1.0 is a constant that fnuz does not
    double, while an explicit value is doubled. With ``--platform ocp`` kvscale writes 1.0 (exact
    on OCP; the copy gives 2.0 on fnuz); with ``--platform fnuz`` it writes 0.5 (exact on fnuz;
    the copy is then fnuz-specific).
  - q/prob are written only where the engine took them from the checkpoint; where it used its 1.0
    default they are left out, so that neither platform sees a new explicit value.
  - an unquantized effective KV-cache dtype (``auto`` on fp8/quark checkpoints, ``bfloat16``,
    per-token-head dtypes) ignores k/v; kvscale then resolves with ``fp8`` for what it writes, so
    the calibrated values stay usable with ``--kv-cache-dtype fp8`` and the unquantized engine is
    unchanged (it ignores k/v either way).

Names come from the engine (``Engine.checkpoint_name``): a name its own mapping sends back to the
same layer and kind. What is removed: every source tensor of the four scale kinds of every
normalized layer, shadowed duplicates included. What stays: zero points, tensors loaded straight
into vLLM's device buffers (``attn._k_scale``), scale-like names no loader maps, every other
tensor, and layers left as they are (refused ones under ``--unsafe-write-unfixed``; layers
whose explicit form would not load the same, see ``_verify_copy``). New tensors go to the shard
that held the layer's winning scale, else to the shard with its attention weights, else to the
first shard. Rewritten shards carry ``conventions.NORMALIZED_MARK`` in their metadata.

Before anything is written, every layer's new tensors are resolved again with the engine rules
(both platforms, the requested and the written KV-cache dtype) and must give the source's values;
a layer where they would not (e.g. ``attn_head`` without ``config_groups``, whose loader refuses
any explicit tensor) keeps its original tensors and is reported (``kept-as-is``).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import kvscale.scales_file as scales_file
from kvscale._version import __version__
from kvscale.cache_formats import ScaleUse
from kvscale.conventions import NORMALIZED_MARK, Convention
from kvscale.core.inspect import ScaleReport, resolve_again, resolve_checkpoint
from kvscale.engine.base import (
    KINDS,
    Engine,
    EnginePath,
    EngineSettings,
    NameContext,
    ResolvedLayer,
    Rule,
    ScaleSource,
    ScaleValue,
)
from kvscale.engine.options import EngineOptions, Platform
from kvscale.errors import InputError, RefusedError, UsageError
from kvscale.floats import decode_values, max_nan, round_to_dtype
from kvscale.io.checkpoint import Checkpoint, input_paths
from kvscale.io.checkpoint_copy import (
    ShardEdit,
    plan_copy,
    scale_shards,
    scale_tensor,
)
from kvscale.io.inputs import open_input
from kvscale.io.safetensors import read_tensor_bytes
from kvscale.io.safetensors_write import NewTensor
from kvscale.io.staging import (
    FileJob,
    WriteOptions,
    WrittenFile,
    check_not_input,
    check_out,
    write_output,
)
from kvscale.nvfp4_conventions import (
    CONVENTION_MARK,
    GlobalScaleConvention,
    convert,
    expected_convention,
    parse_convention,
)
from kvscale.problems import Problem, Severity
from kvscale.progress import ProgressFn


@dataclass(frozen=True)
class NormalizeOptions:
    engine: EngineOptions = field(default_factory=EngineOptions)
    checkpoint: bool = False
    """Also write ``DIR/checkpoint/``."""
    force: bool = False
    """Replace an existing output (only an untouched kvscale output, ``io.staging``)."""
    unsafe_write_unfixed: bool = False
    """Write the layers that cannot be normalized (refused, invalid values) as they are instead
    of stopping: unsafe, the engine refuses or misuses them (``LayerPlan.skipped``)."""
    write: WriteOptions = field(default_factory=WriteOptions)
    revision: str | None = None
    """Revision of a Hub checkpoint (``--revision``)."""
    sglang_json: bool = False
    """Also write SGLang's ``--quantization-param-path`` JSON (``--format sglang-json``)."""
    nvfp4_convention: str | None = None
    """Rewrite NVFP4 global scales to ``amax/448``, ``amax/2688`` or ``engine`` (the
    convention the engine expects on ``--gpu-arch``: ``nvfp4_conventions``)."""
    nvfp4_convention_from: str | None = None
    """The source values' convention (``amax/448``, ``amax/2688``) where the checkpoint does
    not say it."""

    def __post_init__(self) -> None:
        if self.nvfp4_convention_from is not None and self.nvfp4_convention is None:
            raise UsageError("--nvfp4-convention-from needs --nvfp4-convention (the target)")
        for flag, value in (
            ("--nvfp4-convention", self.nvfp4_convention),
            ("--nvfp4-convention-from", self.nvfp4_convention_from),
        ):
            if value is None or (value == "engine" and flag == "--nvfp4-convention"):
                continue
            try:
                parse_convention(value)
            except ValueError:
                raise UsageError(
                    f"{flag} {value!r} is not a convention",
                    hint="amax/448 or amax/2688"
                    + (" or engine" if flag == "--nvfp4-convention" else ""),
                ) from None


@dataclass(frozen=True)
class LayerPlan:
    """What normalize writes for one attention layer."""

    name: str
    rule: str
    """The rule under the KV-cache dtype used for the values (``kv_cache_dtype`` of the plan)."""
    device: Mapping[str, ScaleValue]
    """Device values (k/v/q/prob) for the requested platform: ``kv_scales.safetensors``."""
    sources: Mapping[str, ScaleSource]
    shadowed: tuple[ScaleSource, ...]
    checkpoint_tensors: tuple[tuple[str, NewTensor], ...] = ()
    """(kind, tensor) written to the normalized checkpoint."""
    shard: str | None = None
    """The shard that receives this layer's new tensors."""
    skipped: str | None = None
    """Why this layer is written unfixed (only with ``--unsafe-write-unfixed``): no device
    values, its source tensors kept as they are."""
    kept: str | None = None
    """Why the copy keeps this layer's source tensors as they are (its values are still in
    ``kv_scales``): the explicit form would not load to the same values."""

    def host(self, kind: str) -> float:
        value = self.device[kind]
        return max_nan(value) if isinstance(value, tuple) else value


@dataclass(frozen=True)
class NormalizePlan:
    checkpoint: str
    out: Path
    options: NormalizeOptions
    report: ScaleReport
    """The source resolved with the requested options."""
    values_report: ScaleReport
    """The report the written values come from (KV-cache dtype ``kv_cache_dtype``)."""
    kv_cache_dtype: str
    layers: tuple[LayerPlan, ...]
    files: tuple[FileJob, ...]
    removed: tuple[tuple[str, str], ...]
    """(shard, tensor) removed from the normalized checkpoint."""
    added: tuple[tuple[str, str], ...]
    """(shard, tensor) added to the normalized checkpoint."""
    warnings: tuple[Problem, ...]
    blocking: tuple[Problem, ...]
    """Problems that stop the run (exit 1, nothing written); ``--unsafe-write-unfixed`` turns
    the layer problems among them into warnings."""
    skipped_files: tuple[tuple[str, str], ...] = ()
    fingerprint: Mapping[str, object] = field(default_factory=dict)
    nvfp4_conversion: Nvfp4Conversion | None = None

    @property
    def platform(self) -> str:
        return self.report.platform

    @property
    def ok(self) -> bool:
        """Whether ``write_plan`` will write (``--unsafe-write-unfixed`` waives only layer
        problems; they are then warnings, so ``blocking`` holds what cannot be waived)."""
        return not self.blocking

    @property
    def total_bytes(self) -> int:
        return sum(job.size for job in self.files)

    @property
    def skipped_layers(self) -> tuple[LayerPlan, ...]:
        return tuple(layer for layer in self.layers if layer.skipped)


@dataclass(frozen=True)
class NormalizeResult:
    plan: NormalizePlan
    out: Path
    files: tuple[WrittenFile, ...]
    replaced: bool
    """An existing output was replaced (``--force``)."""


# --- planning -----------------------------------------------------------------------------------


def _warning(code: str, message: str, layer: str | None = None) -> Problem:
    return Problem(Severity.WARNING, code, layer, message)


def _error(code: str, message: str, layer: str | None = None) -> Problem:
    return Problem(Severity.ERROR, code, layer, message)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def safe_tensor_name(name: str) -> bool:
    """Names kvscale writes: printable, no path separators, no control characters."""
    return bool(name) and name.isprintable() and "/" not in name and "\\" not in name


def _flat(value: ScaleValue | None) -> tuple[float, ...]:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


def _value_problems(layer: ResolvedLayer, platform: str) -> list[str]:
    out = []
    for kind in KINDS:
        for i, v in enumerate(_flat(layer.value(kind))):
            if not (math.isfinite(v) and v > 0.0):
                where = f"{kind}[{i}]" if isinstance(layer.value(kind), tuple) else kind
                src = layer.sources.get(kind)
                origin = f" (from {src.tensor} in {src.file})" if src is not None else ""
                out.append(
                    f"{where} would be {_fmt(v)} on {platform}{origin}; only positive finite "
                    "scales can be written"
                )
    return out


def _same_value(a: ScaleValue | None, b: ScaleValue | None) -> bool:
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def _promotion_text(report: ScaleReport, kv_dtype: str, kept: Sequence[str]) -> str:
    """What a normalize run for a KV-cache dtype (or skip list) that reads no k/v writes."""
    dtype = report.kv_cache_dtype
    served = [lay.cache.format for lay in report.layers if lay.cache and not lay.cache.skipped_by]
    parts: list[str] = []
    if not report.settings.uses_kv_scales and served:
        fmt = served[0]
        if fmt.scale_use is ScaleUse.IN_CACHE:
            parts.append(
                f"--kv-cache-dtype {dtype} ({fmt.title}) computes its scales when K/V are "
                "written and never reads the checkpoint's k/v, so normalizing changes nothing "
                "the engine serves with it"
            )
        elif fmt.scale_use is ScaleUse.OUT_OF_TREE:
            parts.append(
                f"--kv-cache-dtype {dtype} is written by no backend of the engine's own code "
                "(a platform plugin's), so what its cache reads is not known"
            )
        else:
            parts.append(
                f"the effective KV-cache dtype {dtype} is unquantized and ignores k/v, so "
                "loading the copy with it is unchanged"
            )
    if kept:
        shown = ", ".join(kept[:3]) + (f" and {len(kept) - 3} more" if len(kept) > 3 else "")
        reasons = sorted(
            {lay.cache.skipped_by for lay in report.layers if lay.cache and lay.cache.skipped_by}
        )
        parts.append(
            f"{len(kept)} layers ({shown}) keep an unquantized cache and ignore k/v "
            f"({'; '.join(reasons)})"
        )
    where = f"--kv-cache-dtype {kv_dtype}" + (" without the skip list" if kept else "")
    return (
        f"{'; '.join(parts)}; the values written are those of {where}, where the calibrated "
        "scales are read (loading the copy under these options is unchanged)"
    )


def _verify_copy(
    report: ScaleReport,
    layer: ResolvedLayer,
    tensors: Sequence[tuple[str, NewTensor]],
    shard: str,
    settings_variants: Sequence[EngineSettings],
    platform: str,
) -> str | None:
    """Resolve the layer again from what the copy will hold (the new tensors plus the zero
    points that stay) with the same rules as the source, for both platforms and for the
    requested and the written KV-cache dtype; None when the engine gets the same values.

    The one accepted difference is the documented one: a base-path layer that used the 1.0
    default loads differently on the platform the copy was not written for.
    """
    engine = report.options.rules
    everything = [*layer.sources.values(), *layer.shadowed]
    kept = [src for src in everything if src.kind not in KINDS]
    new = [
        ScaleSource(
            tensor=t.name,
            file=shard,
            dtype=t.dtype,
            shape=t.shape,
            kind=kind,
            convention=Convention.CANONICAL,
            load_order=(1 << 40) + i,
            values=tuple(decode_values(t.dtype, t.data)),
        )
        for i, (kind, t) in enumerate(tensors)
    ]
    prefix = layer.checkpoint_prefix
    for settings in settings_variants:
        for engine_platform in ("ocp", "fnuz"):
            variant = replace(settings, platform=engine_platform)
            before = engine.resolve_layer(layer.name, everything, variant, checkpoint_prefix=prefix)
            after = engine.resolve_layer(
                layer.name, [*kept, *new], variant, checkpoint_prefix=prefix
            )
            if (
                engine_platform != platform
                and settings.engine_path is EnginePath.BASE
                and before.rule is Rule.DEFAULT
            ):
                continue
            if after.rule is Rule.ERROR and before.rule is not Rule.ERROR:
                return f"the engine would refuse the explicit form ({after.error})"
            for kind in KINDS:
                if not _same_value(before.value(kind), after.value(kind)):
                    return (
                        f"the explicit form would load {kind} differently on {engine_platform} "
                        f"with --kv-cache-dtype {settings.kv_cache_dtype}"
                    )
    return None


def _source_fingerprint(ckpt: Checkpoint) -> dict[str, object]:
    """A cheap identity of the source checkpoint: file names, sizes and header sizes."""
    digest = hashlib.sha256()
    total = 0
    for name in ckpt.files:
        header = ckpt.headers[name]
        total += header.file_size
        digest.update(f"{name}\0{header.file_size}\0{header.header_size}\0".encode())
        for tensor in header.tensors.values():
            digest.update(
                f"{tensor.name}\0{tensor.dtype}\0{tensor.shape}\0{tensor.start}\0".encode()
            )
    return {"files": len(ckpt.files), "bytes": total, "headers_sha256": digest.hexdigest()}


def _scales_fingerprint(ckpt: Checkpoint, layers: Sequence[ResolvedLayer]) -> str:
    """sha256 over every scale tensor's name, file, dtype, shape and raw bytes."""
    digest = hashlib.sha256()
    seen: set[tuple[str, str]] = set()
    entries: list[tuple[str, str]] = []
    for layer in layers:
        for src in [*layer.sources.values(), *layer.shadowed]:
            key = (src.file, src.tensor)
            if key not in seen:
                seen.add(key)
                entries.append(key)
    for file, tensor in sorted(entries):
        info = ckpt.headers[file].tensors[tensor]
        digest.update(f"{file}\0{tensor}\0{info.dtype}\0{list(info.shape)}\0".encode())
        try:
            digest.update(read_tensor_bytes(ckpt.path_of(file), info))
        except InputError:
            digest.update(b"<not read>")
    return digest.hexdigest()


@dataclass(frozen=True)
class Nvfp4Conversion:
    """NVFP4 global scales rewritten from one convention to another (``--nvfp4-convention``)."""

    source: GlobalScaleConvention
    source_why: str
    target: GlobalScaleConvention
    target_why: str
    layers: int

    def to_json(self) -> dict[str, object]:
        return {
            "from": self.source.value,
            "from_why": self.source_why,
            "to": self.target.value,
            "to_why": self.target_why,
            "layers": self.layers,
        }


_CHECKPOINT_DTYPES = {"BF16": "bfloat16", "F16": "float16"}


def _convert_nvfp4(
    report: ScaleReport, options: NormalizeOptions
) -> tuple[ScaleReport, Nvfp4Conversion]:
    """The report with every NVFP4 layer's k/v source values rewritten to the target
    convention (each value multiplied or divided by 6, rounded to the tensor's dtype), resolved
    again so that every later step (the values written, the copy's check) sees them."""
    engine = report.options.rules
    nvfp4_layers = [
        lay
        for lay in report.layers
        if lay.cache is not None and lay.cache.scale_use is ScaleUse.GLOBAL_SCALE
    ]
    if not nvfp4_layers or report.nvfp4 is None:
        raise UsageError(
            "--nvfp4-convention rewrites NVFP4 global scales, but no layer of "
            f"{report.checkpoint} has an NVFP4 cache under --kv-cache-dtype "
            f"{report.kv_cache_dtype}",
            hint="pass --kv-cache-dtype nvfp4",
        )
    source = (
        parse_convention(options.nvfp4_convention_from)
        if options.nvfp4_convention_from is not None
        else None
    )
    source_why = "--nvfp4-convention-from"
    if source is None:
        source = report.nvfp4.evidence.convention
        source_why = report.nvfp4.evidence.why
    if source is None:
        raise UsageError(
            f"the convention of {report.checkpoint}'s NVFP4 values cannot be known "
            f"({report.nvfp4.evidence.why})",
            hint="pass --nvfp4-convention-from amax/448 or amax/2688 (what the producer wrote)",
        )
    wanted = options.nvfp4_convention or "engine"
    if wanted == "engine":
        groups = engine.nvfp4_global_scales(0.5, report.settings.gpu_arch)
        targets = {expected_convention(g) for g in groups}
        if len(targets) != 1:
            raise UsageError(
                f"{engine.name} {engine.version} reads NVFP4 global scales differently per GPU "
                f"({', '.join(f'{g.gpus}: {g.how}' for g in groups)})",
                hint="pass --gpu-arch (e.g. sm100 or sm90) for the GPUs that will serve it",
            )
        target = targets.pop()
        gpus = report.settings.gpu_arch or "every GPU"
        target_why = f"what {engine.name} {engine.version} turns into amax/448 on {gpus}"
    else:
        target = parse_convention(wanted)
        target_why = "--nvfp4-convention"
    names = {lay.name for lay in nvfp4_layers}

    def converted(src: ScaleSource) -> ScaleSource:
        if src.kind not in ("k_scale", "v_scale") or src.values is None:
            return src
        dtype = _CHECKPOINT_DTYPES.get(src.dtype)
        values = tuple(
            round_to_dtype(convert(v, source, target), dtype)
            if dtype
            else convert(v, source, target)
            for v in src.values
        )
        return replace(src, values=values)

    layers = tuple(
        replace(
            lay,
            sources={k: converted(v) for k, v in lay.sources.items()},
            shadowed=tuple(converted(v) for v in lay.shadowed),
        )
        if lay.name in names
        else lay
        for lay in report.layers
    )
    again = resolve_again(replace(report, layers=layers, nvfp4_mark=target.value), report.options)
    return again, Nvfp4Conversion(source, source_why, target, target_why, len(names))


def plan_normalize(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: NormalizeOptions | None = None,
    progress: ProgressFn | None = None,
) -> NormalizePlan:
    """Decide and validate everything; writes nothing. ``plan.blocking`` lists what stops
    the run (the caller decides, see ``write_plan``)."""
    options = options or NormalizeOptions()
    out_path = Path(out)

    options.engine.rules.require("normalize")
    ckpt = open_input(
        checkpoint,
        revision=options.revision,
        progress=progress,
        local_only="normalize --checkpoint" if options.checkpoint else None,
    )
    check_not_input(out_path, input_paths(ckpt, other=True) if ckpt.is_local else [], "--out")
    check_out(out_path, options.force)

    report = resolve_checkpoint(ckpt, options.engine)
    conversion: Nvfp4Conversion | None = None
    if options.nvfp4_convention is not None:
        report, conversion = _convert_nvfp4(report, options)
    engine = report.options.rules
    warnings: list[Problem] = []
    blocking: list[Problem] = []
    kv_dtype = report.kv_cache_dtype
    values_report = report
    dropped: list[str] = []
    if report.unmapped:
        # Scales the engine cannot place under their names (the architecture's rename drops
        # them, or the quant method does not map that convention) but whose producer's meaning
        # is clear: the copy can hold them under names the engine loads.
        intended = resolve_checkpoint(ckpt, options.engine, as_intended=True)
        still = {u.tensor for u in intended.unmapped}
        dropped = [u.tensor for u in report.unmapped if u.tensor not in still]
        if dropped and options.checkpoint:
            values_report = intended
            warnings.append(
                _warning(
                    "name-repaired",
                    f"{len(dropped)} scale tensor(s) the engine cannot load under their names "
                    f"({dropped[0]}, ...) are written under names it loads, with the values "
                    "their producer meant",
                )
            )
    promoted = report.engine_path is not EnginePath.NONE and not report.settings.uses_kv_scales
    kept_unquantized = [
        layer.name
        for layer in report.layers
        if layer.cache is not None
        and layer.cache.skipped_by
        and not layer.cache.scale_use.reads_checkpoint
    ]
    if promoted or (kept_unquantized and report.engine_path is not EnginePath.NONE):
        # Values for the layers that read no k/v come from the same checkpoint as the engine
        # would hold them where the cache reads them: FP8 for a whole model whose dtype reads
        # none, the layer's own dtype without the skip list for layers it keeps unquantized.
        kv_dtype = engine.fp8_kv_cache_dtype if promoted else report.kv_cache_dtype
        values_report = resolve_again(
            values_report,
            replace(report.options, kv_cache_dtype=kv_dtype, kv_cache_dtype_skip_layers=()),
        )
        warnings.append(
            _warning("kv-dtype-promoted", _promotion_text(report, kv_dtype, kept_unquantized))
        )
    platform = report.platform
    ocp_report = values_report
    if platform != "ocp":
        ocp_report = resolve_again(
            values_report, replace(values_report.options, platform=Platform.OCP)
        )

    base = report.engine_path is EnginePath.BASE
    write_scales = options.checkpoint and report.engine_path is not EnginePath.NONE
    if options.checkpoint and report.engine_path is EnginePath.NONE:
        warnings.append(
            _warning(
                "no-kv-scale-parameters",
                "no quant method of this checkpoint creates KV-scale parameters (every scale is "
                "1.0 and checkpoint scales reach nothing); the checkpoint copy is left unchanged",
            )
        )

    context = NameContext(report.quant, report.shape, frozenset())
    unreachable = _unreachable_kinds(engine, ocp_report, context) if write_scales else ()
    if unreachable:
        blocking.append(_no_loadable_name(report, unreachable))
    shards = scale_shards(ckpt, values_report.layers)
    plans: list[LayerPlan] = []
    default_layers: list[str] = []
    settings_variants = [values_report.settings, report.settings]
    for layer, ocp_layer in zip(values_report.layers, ocp_report.layers, strict=True):
        assert layer.name == ocp_layer.name
        reasons: list[tuple[str, str]] = []
        prefix = layer.checkpoint_prefix
        if not (safe_tensor_name(layer.name) and safe_tensor_name(prefix)):
            reasons.append(
                (
                    "unsafe-tensor-name",
                    f"layer name {prefix!r} holds control characters or "
                    "path separators; kvscale writes no name derived from it",
                )
            )
        if layer.rule is Rule.ERROR:
            why = layer.error or "the engine refuses this layer"
            if dropped and not options.checkpoint:
                why += (
                    " (normalize --checkpoint rewrites these names so that the engine loads them)"
                )
            reasons.append(("layer-refused", why))
        else:
            reasons.extend(("invalid-scale-value", m) for m in _value_problems(layer, platform))
            if platform != "ocp":
                reasons.extend(
                    ("invalid-scale-value", m) for m in _value_problems(ocp_layer, "ocp")
                )
        tensors: list[tuple[str, NewTensor]] = []
        if not reasons and write_scales:
            kinds: list[str] = ["k_scale", "v_scale"]
            kinds += [k for k in ("q_scale", "prob_scale") if k in ocp_layer.used_from_checkpoint]
            fnuz_default = base and layer.rule is Rule.DEFAULT and platform == "fnuz"
            if base and layer.rule is Rule.DEFAULT:
                default_layers.append(layer.name)
            for kind in kinds:
                if kind in unreachable:
                    continue  # one problem for the whole model (no-loadable-name)
                name = engine.checkpoint_name(ocp_layer.checkpoint_prefix, kind, context)
                if name is None:
                    reasons.append(
                        (
                            "unmappable-name",
                            f"no checkpoint name maps back to {layer.name}.{kind} "
                            f"under quant_method {report.quant_method}",
                        )
                    )
                    continue
                value = ocp_layer.value(kind)
                assert value is not None
                if fnuz_default and kind in ("k_scale", "v_scale"):
                    # fnuz doubles explicit k/v but not the 1.0 default: 0.5 x 2 = 1.0.
                    value = 0.5
                tensors.append(
                    (kind, scale_tensor(name, kind, value, report.shape.num_attention_heads))
                )
        if reasons and layer.name in default_layers:
            default_layers.remove(layer.name)
        kept = None
        if tensors and not reasons:
            kept = _verify_copy(
                report, layer, tensors, shards[layer.name], settings_variants, platform
            )
            if kept is not None:
                tensors = []
                if layer.name in default_layers:
                    default_layers.remove(layer.name)
                warnings.append(
                    _warning(
                        "kept-as-is",
                        f"the copy keeps this layer's tensors as they are: {kept}",
                        layer.name,
                    )
                )
        if reasons:
            problems = [_error(code, msg, layer.name) for code, msg in reasons]
            if options.unsafe_write_unfixed:
                warnings.extend(
                    _warning(
                        "layer-skipped",
                        f"written unfixed (--unsafe-write-unfixed): {p.message}",
                        layer.name,
                    )
                    for p in problems
                )
                plans.append(
                    LayerPlan(
                        layer.name,
                        layer.rule.value,
                        {},
                        dict(layer.sources),
                        layer.shadowed,
                        skipped="; ".join(msg for _, msg in reasons),
                    )
                )
            else:
                blocking.extend(problems)
            continue
        device = {kind: layer.value(kind) for kind in KINDS}
        plans.append(
            LayerPlan(
                layer.name,
                layer.rule.value,
                {k: v for k, v in device.items() if v is not None},
                dict(layer.sources),
                layer.shadowed,
                checkpoint_tensors=tuple(tensors),
                shard=shards[layer.name] if tensors else None,
                kept=kept,
            )
        )

    if default_layers and write_scales:
        shown = ", ".join(default_layers[:3]) + (
            f" and {len(default_layers) - 3} more" if len(default_layers) > 3 else ""
        )
        if platform == "ocp":
            warnings.append(
                _warning(
                    "default-made-explicit",
                    f"{len(default_layers)} layers have no k/v scales ({shown}); the copy holds an "
                    "explicit 1.0, which equals the engine's default on OCP but is doubled on fnuz "
                    "(ROCm), where the original loads 1.0 and the copy 2.0; run with --platform "
                    "fnuz for a ROCm copy",
                )
            )
        else:
            warnings.append(
                _warning(
                    "fnuz-specific-copy",
                    f"{len(default_layers)} layers have no k/v scales ({shown}); the copy holds an "
                    "explicit 0.5, which fnuz doubles to the engine's default 1.0; this copy is "
                    "fnuz-specific (on OCP it loads 0.5)",
                )
            )

    fingerprint = _source_fingerprint(ckpt)
    fingerprint["scales_sha256"] = _scales_fingerprint(ckpt, values_report.layers)
    layers = tuple(plans)
    removed: tuple[tuple[str, str], ...] = ()
    added: tuple[tuple[str, str], ...] = ()
    skipped_files: tuple[tuple[str, str], ...] = ()
    copy_jobs: tuple[FileJob, ...] = ()
    if options.checkpoint:
        marks = {NORMALIZED_MARK: "1"}
        if conversion is not None:
            marks[CONVENTION_MARK] = conversion.target.value
        copy = plan_copy(
            ckpt, _shard_edits(ckpt, layers, write_scales, marks), scales_file.CHECKPOINT_DIR
        )
        copy_jobs, removed, added, skipped_files = (
            copy.jobs,
            copy.removed,
            copy.added,
            copy.skipped,
        )
        for shard, name in copy.collisions:
            blocking.append(
                _error(
                    "name-collision",
                    f"{name} would be written to {shard}, but a tensor of that name is kept in "
                    "the checkpoint",
                )
            )
        for rel, why in skipped_files:
            warnings.append(_warning("file-not-copied", f"{rel} is not copied: {why}"))
        # The copy reads these files: none of them may live inside --out (a link into the old
        # output would be replaced under the copy's feet).
        check_not_input(
            out_path, [job.source for job in copy_jobs if job.source is not None], "--out"
        )

    plan = NormalizePlan(
        checkpoint=ckpt.given,
        out=out_path,
        options=options,
        report=report,
        values_report=values_report,
        kv_cache_dtype=kv_dtype,
        layers=layers,
        files=(),
        removed=removed,
        added=added,
        warnings=tuple(warnings),
        blocking=tuple(blocking),
        skipped_files=skipped_files,
        fingerprint=fingerprint,
        nvfp4_conversion=conversion,
    )
    scales = scales_of(plan)
    json_blob = scales_file.json_bytes(scales)
    st_blob = scales_file.safetensors_bytes(scales)
    jobs = (
        FileJob(scales_file.TENSORS_NAME, "generated", len(st_blob), data=st_blob),
        FileJob(scales_file.JSON_NAME, "generated", len(json_blob), data=json_blob),
        *_sglang_param_jobs(plan, warnings, blocking),
        *copy_jobs,
    )
    return replace(plan, files=jobs, warnings=tuple(warnings), blocking=tuple(blocking))


def _unreachable_kinds(
    engine: Engine, report: ScaleReport, context: NameContext
) -> tuple[str, ...]:
    """The scales the copy would write for which the engine's loader takes no checkpoint name
    in any layer (``Engine.checkpoint_name`` is None wherever the kind is written): vLLM
    0.33.0's DeepSeek-family loaders drop every k/v/q name, Jamba's refuses them. A copy cannot
    make the engine load them."""
    written: dict[str, list[str]] = {}
    for layer in report.layers:
        if layer.rule is Rule.ERROR:
            continue
        kinds = ["k_scale", "v_scale"]
        kinds += [k for k in ("q_scale", "prob_scale") if k in layer.used_from_checkpoint]
        for kind in kinds:
            written.setdefault(kind, []).append(layer.checkpoint_prefix)
    return tuple(
        kind
        for kind in KINDS
        if kind in written
        and all(engine.checkpoint_name(prefix, kind, context) is None for prefix in written[kind])
    )


def _no_loadable_name(report: ScaleReport, kinds: Sequence[str]) -> Problem:
    engine = report.options.rules
    arch = next(iter(report.shape.architectures), "this model")
    names = [layer.name for layer in report.layers]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return _error(
        "no-loadable-name",
        f"{engine.name} {engine.version} loads no checkpoint name into {_either(kinds)} of "
        f"{arch}'s attention layers ({len(names)}: {shown}; inspect reports why: "
        "scales-not-loaded): a normalized copy would still run them at the engine's default, "
        "so none is written (--force does not change this)",
    )


def _either(kinds: Sequence[str]) -> str:
    return ", ".join(kinds[:-1]) + (" or " if len(kinds) > 1 else "") + kinds[-1]


def _sglang_param_jobs(
    plan: NormalizePlan, warnings: list[Problem], blocking: list[Problem]
) -> list[FileJob]:
    """``--format sglang-json``: SGLang's ``--quantization-param-path`` file, when asked."""
    if not plan.options.sglang_json:
        return []
    from kvscale.conventions import layer_index
    from kvscale.engine.sglang.param_path import FILE_NAME, quantization_param_json

    shape = plan.report.shape
    rows = []
    for layer in plan.layers:
        index = layer_index(layer.name)
        k, v = layer.device.get("k_scale"), layer.device.get("v_scale")
        if index is None or layer.skipped or k is None or v is None:
            continue
        rows.append((index, layer.name, max_nan(_flat(k)), max_nan(_flat(v))))
    try:
        made = quantization_param_json(shape.model_type, shape.num_hidden_layers or 0, rows)
    except ValueError as exc:
        blocking.append(_error("sglang-json-incomplete", str(exc)))
        return []
    if made.disagree:
        name, k, v = made.disagree[0]
        warnings.append(
            _warning(
                "json-scales-disagree",
                f"{len(made.disagree)} layer(s) have k != v (e.g. {name}: k {k!r}, v {v!r}); "
                f"{FILE_NAME} holds one scale per layer, max(k, v), for both",
            )
        )
    return [FileJob(FILE_NAME, "generated", len(made.data), data=made.data)]


def _shard_edits(
    ckpt: Checkpoint, layers: Sequence[LayerPlan], write_scales: bool, marks: Mapping[str, str]
) -> dict[str, ShardEdit]:
    """Per shard: the scale tensors removed and added."""
    remove: dict[str, set[str]] = {name: set() for name in ckpt.files}
    add: dict[str, list[NewTensor]] = {name: [] for name in ckpt.files}
    if write_scales:
        for layer in layers:
            if layer.skipped or not layer.checkpoint_tensors:
                continue  # left as it is: its source tensors stay
            for src in [*layer.sources.values(), *layer.shadowed]:
                # Zero points stay: the compressed-tensors path creates parameters for them (and
                # ignores their values); removing them changes nothing, keeping them is harmless.
                if src.kind in KINDS:
                    remove[src.file].add(src.tensor)
            if layer.shard is not None:
                add[layer.shard].extend(t for _, t in layer.checkpoint_tensors)
    edits: dict[str, ShardEdit] = {}
    for name in ckpt.files:
        if remove[name] or add[name]:
            edits[name] = ShardEdit(frozenset(remove[name]), tuple(add[name]), dict(marks))
    return edits


# --- the kvscale.scales/1 document ---------------------------------------------------------------


def scales_of(plan: NormalizePlan) -> scales_file.ScalesFile:
    """``kv_scales.json`` / ``kv_scales.safetensors``: host scales (each equal to its device
    tensor), rule, provenance."""
    report = plan.report
    entries: list[scales_file.LayerEntry] = []
    for layer in plan.layers:
        extra: dict[str, object] = {}
        if layer.skipped:
            extra["skipped"] = layer.skipped
        if layer.kept:
            extra["checkpoint_kept"] = layer.kept
        if layer.checkpoint_tensors:
            extra["checkpoint_tensors"] = {
                kind: tensor.name for kind, tensor in layer.checkpoint_tensors
            }
        if layer.shadowed:
            extra["shadowed"] = [src.to_json() for src in layer.shadowed]
        entries.append(
            scales_file.LayerEntry(
                layer.name,
                layer.rule,
                {} if layer.skipped else dict(layer.device),
                {kind: src.to_json() for kind, src in layer.sources.items()},
                extra,
            )
        )
    return scales_file.ScalesFile(
        checkpoint=plan.checkpoint,
        kv_cache_dtype=plan.kv_cache_dtype,
        platform=plan.platform,
        engine_path=report.engine_path.value,
        layers=tuple(entries),
        settings=scales_file.ScalesSettings(
            engine=report.engine,
            quant_method=report.quant_method,
            model_dtype=report.model_dtype,
            kv_cache_dtype_requested=report.kv_cache_dtype_requested,
            kv_cache_dtype_effective=report.kv_cache_dtype,
            kvscale_version=__version__,
            num_kv_heads=report.shape.kv_heads,
            head_size=report.shape.head_size,
            source_fingerprint=dict(plan.fingerprint),
            warnings=tuple(p.to_json() for p in plan.warnings),
            other=(
                {"nvfp4_conversion": plan.nvfp4_conversion.to_json()}
                if plan.nvfp4_conversion is not None
                else {}
            ),
        ),
    )


# --- writing ------------------------------------------------------------------------------------


def write_plan(plan: NormalizePlan, progress: ProgressFn | None = None) -> NormalizeResult:
    """Write a validated plan atomically (``kvscale.io.staging.write_output``).

    Raises ``RefusedError`` (exit 1) when the plan has blocking problems and
    ``--unsafe-write-unfixed`` was not given; ``OutputError`` (exit 2) when writing fails
    (``--out`` is then unchanged).
    """
    unforceable = [p for p in plan.blocking if p.code == "name-collision"]
    if unforceable or (plan.blocking and not plan.options.unsafe_write_unfixed):
        first = plan.blocking[0]
        more = f" (and {len(plan.blocking) - 1} more)" if len(plan.blocking) > 1 else ""
        where = f"{first.layer}: " if first.layer else ""
        raise RefusedError(
            f"nothing written: {where}{first.message}{more}",
            hint="fix the checkpoint, or pass --unsafe-write-unfixed to write such layers as "
            "they are (unsafe)",
        )

    write = replace(plan.options.write, force=plan.options.force)
    files, replaced = write_output(plan.out, plan.files, write, progress, source=plan.checkpoint)
    return NormalizeResult(plan, plan.out, files, replaced)


def normalize_checkpoint(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    options: NormalizeOptions | None = None,
    progress: ProgressFn | None = None,
) -> NormalizeResult:
    """Plan, validate and write in one call (library use)."""
    plan = plan_normalize(checkpoint, out, options, progress)
    return write_plan(plan, progress)


__all__ = [
    "LayerPlan",
    "NormalizeOptions",
    "NormalizePlan",
    "NormalizeResult",
    "normalize_checkpoint",
    "plan_normalize",
    "safe_tensor_name",
    "scales_of",
    "write_plan",
]
