"""``kvscale inspect``: find every KV-scale tensor, resolve it like the engine, flag problems.

``resolve_checkpoint`` is the one resolution every command shares (inspect, normalize, diff,
verify): an opened checkpoint plus the engine options in, a ``ScaleReport`` out. It reads
headers and the few scale bytes only (never the weights) and imports no torch. The engine's
own rules come from ``options.rules`` (``kvscale/engine/<name>``); layer enumeration
(``kvscale.layers``) and problems (``kvscale.findings``) are engine-neutral.
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from kvscale.cache_formats import ScaleUse
from kvscale.conventions import (
    NORMALIZED_MARK,
    Convention,
    Producer,
    attention_prefix,
    attention_prefixes_from_weights,
    producer_of,
)
from kvscale.engine.base import (
    EnginePath,
    EngineSettings,
    NameContext,
    QuantConfig,
    ResolvedLayer,
    Rule,
    ScaleSource,
    UnmappedTensor,
)
from kvscale.engine.options import EngineOptions
from kvscale.errors import UsageError
from kvscale.findings import Rounding, layer_problems, model_problems, nvfp4_problems
from kvscale.floats import DECODABLE_DTYPES, decode_values
from kvscale.io.checkpoint import Checkpoint, TensorRef, input_paths
from kvscale.io.inputs import open_input
from kvscale.layers import attention_layers
from kvscale.limits import MAX_SCALE_ELEMENTS
from kvscale.model_config import ModelShape, find_quant_config, parse_model_shape
from kvscale.nvfp4_conventions import (
    CONVENTION_MARK,
    LayerReadings,
    Nvfp4Report,
    Reading,
    convention_of,
    readings,
)
from kvscale.problems import Problem, Severity, problem
from kvscale.progress import ProgressFn

if TYPE_CHECKING:
    from kvscale.io.remote.source import RemoteStats

_NON_KV_CACHE_PREFIX = re.compile(
    r"(?:^|\.)(?:vision|visual|vision_tower|vision_model|audio|audio_tower|image)"
)
"""Encoder attention of multimodal models: no KV cache, so not an attention layer here."""


@dataclass(frozen=True)
class ScaleReport:
    """Everything ``inspect`` found: the data behind the table and the JSON."""

    checkpoint: str
    root: str
    layout: str
    files: tuple[str, ...]
    options: EngineOptions
    """The options the scales were resolved with (after the policy-file merge)."""
    quant: QuantConfig
    shape: ModelShape
    settings: EngineSettings
    model_dtype_source: str
    layers: tuple[ResolvedLayer, ...]
    problems: tuple[Problem, ...]
    unmapped: tuple[UnmappedTensor, ...] = ()
    rounding: Rounding | None = None
    weight_dtypes: frozenset[str] = frozenset()
    refused_by: Mapping[str, tuple[UnmappedTensor, str]] = field(default_factory=dict)
    """Engine layer -> the unplaced tensor whose loading fails it, and the engine's error."""
    scale_like_count: int = 0
    remote: RemoteStats | None = None
    """Where a remote checkpoint was read from and what it cost; None for a local path."""
    input_paths: tuple[str, ...] = ()
    """The files and directories the checkpoint consists of (real paths too): what no report
    kvscale writes may land on (``--junit``)."""
    nvfp4_mark: str | None = None
    """The NVFP4 convention kvscale wrote into the scale shards' metadata, if it did."""
    nvfp4: Nvfp4Report | None = None
    """What the NVFP4 global scales mean and do, when some layer's cache is NVFP4."""

    @property
    def engine(self) -> dict[str, str]:
        return self.options.rules.describe()

    @property
    def quant_method(self) -> str | None:
        return self.quant.quant_method

    @property
    def engine_path(self) -> EnginePath:
        return self.settings.engine_path

    @property
    def kv_cache_dtype(self) -> str:
        return self.settings.kv_cache_dtype

    @property
    def kv_cache_dtype_requested(self) -> str:
        return self.options.requested_kv_cache_dtype

    @property
    def platform(self) -> str:
        return self.settings.platform

    @property
    def model_dtype(self) -> str:
        return self.settings.model_dtype

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.WARNING)

    @property
    def ok(self) -> bool:
        return not self.errors


def inspect_checkpoint(
    path: str | os.PathLike[str],
    options: EngineOptions | None = None,
    progress: ProgressFn | None = None,
    *,
    revision: str | None = None,
) -> ScaleReport:
    """Open a checkpoint (local, or remote: ``kvscale.io.inputs``), resolve every attention
    layer's scales, and collect problems."""
    ckpt = open_input(path, revision=revision, progress=progress)
    return resolve_checkpoint(ckpt, options or EngineOptions())


def _quark_export(quant: QuantConfig) -> bool:
    """The config carries Quark's export block (``kv_cache_group``), whatever its quant_method."""
    export = quant.raw.get("export") if quant.raw is not None else None
    return isinstance(export, Mapping) and "kv_cache_group" in export


def _remote_stats(ckpt: Checkpoint) -> RemoteStats | None:
    """What reading a remote checkpoint cost (taken after every read of the resolution)."""
    remote = sys.modules.get("kvscale.io.remote.source")
    # Not imported: nothing was opened remotely (and a local inspect stays free of it).
    return None if remote is None else remote.remote_stats(ckpt)


def resolve_checkpoint(
    ckpt: Checkpoint, options: EngineOptions, *, as_intended: bool = False
) -> ScaleReport:
    """What the engine holds for every attention layer of an opened checkpoint, and why.

    ``as_intended``: what it would hold if the architecture's own renames did not drop scale
    names first (``NameContext.as_intended``); only ``normalize`` asks, to repair such names.
    """
    engine = options.rules
    shape = parse_model_shape(ckpt.config, str(ckpt.config_path))
    raw_quant = find_quant_config(
        ckpt.config,
        ckpt.hf_quant_config,
        str(ckpt.config_path),
        hf_where=str(ckpt.hf_quant_config_path),
    )
    backend = options.attention_backend
    if backend is not None and backend not in engine.attention_backends:
        raise UsageError(
            f"unknown attention backend {backend!r} for {engine.name}",
            hint="one of: " + ", ".join(engine.attention_backends),
        )
    quant = engine.quant_config(raw_quant)
    weight_dtypes = frozenset(ref.info.dtype for ref in ckpt.tensors.values())
    settings, dtype_source = engine.settings(quant, shape, options, weight_dtypes)

    weight_prefixes = {
        p
        for p in attention_prefixes_from_weights(ckpt.tensors)
        if not _NON_KV_CACHE_PREFIX.search(p)
    }
    context = NameContext(quant, shape, frozenset(weight_prefixes), as_intended)
    kvscale_marks = {
        name: str(header.metadata[NORMALIZED_MARK])
        for name, header in ckpt.headers.items()
        if header.metadata is not None and NORMALIZED_MARK in header.metadata
    }
    nvfp4_marks = {
        str(header.metadata[CONVENTION_MARK])
        for header in ckpt.headers.values()
        if header.metadata is not None and CONVENTION_MARK in header.metadata
    }
    unmapped: list[UnmappedTensor] = []
    found: list[tuple[TensorRef, str, str, Convention]] = []
    for ref in _all_occurrences(ckpt, engine.file_order(ckpt.files)):
        routed = engine.route(ref.name, ref.file, context)
        if routed.unmapped is not None:
            unmapped.append(routed.unmapped)
        mapped = routed.mapped
        if mapped is None or mapped.layer is None or mapped.kind is None:
            continue
        assert mapped.convention is not None
        found.append((ref, mapped.layer, mapped.kind, mapped.convention))
    values = _read_values(ckpt, [ref for ref, *_ in found])
    by_layer: dict[str, list[ScaleSource]] = defaultdict(list)
    for ref, layer_name, kind, convention in found:
        producer = producer_of(
            convention,
            quant.quant_method,
            kvscale_marks.get(ref.file),
            quark_export=_quark_export(quant),
        )
        by_layer[layer_name].append(
            _make_source(ref, kind, convention, producer, values.get((ref.file, ref.name)))
        )
    scale_like_count = len(unmapped) + sum(len(v) for v in by_layer.values())

    # Layers the engine has even where none of their tensors reaches them (MLA models whose
    # loader drops every scale name; architectures that refuse them).
    evidenced = {*by_layer, *(u.layer for u in unmapped if u.layer is not None)}
    layer_names = attention_layers(engine.layer_shape(shape), weight_prefixes, evidenced)
    refusals = engine.unmapped_refusals(layer_names, unmapped)
    inputs = [
        (
            engine.layer_name(attention_prefix(name), shape),
            attention_prefix(name),
            tuple(by_layer.get(name, ())),
        )
        for name in layer_names
    ]
    # Refusals keyed by the engine's layer names (the checkpoint's may be renamed).
    refused_by = {
        layer: refusals[name]
        for (layer, _, _), name in zip(inputs, layer_names, strict=True)
        if name in refusals
    }
    remote = _remote_stats(ckpt)
    read_paths = tuple(str(p) for p in input_paths(ckpt)) if ckpt.is_local else ()
    return _resolve(
        ScaleReport(
            checkpoint=ckpt.given,
            root=str(ckpt.root),
            layout=ckpt.layout,
            files=ckpt.files,
            options=options,
            quant=quant,
            shape=shape,
            settings=settings,
            model_dtype_source=dtype_source,
            layers=(),
            problems=tuple(_checkpoint_problems(ckpt, by_layer)),
            unmapped=tuple(unmapped),
            weight_dtypes=weight_dtypes,
            refused_by=refused_by,
            scale_like_count=scale_like_count,
            remote=remote,
            input_paths=read_paths,
            nvfp4_mark=next(iter(nvfp4_marks)) if len(nvfp4_marks) == 1 else None,
        ),
        settings,
        inputs,
    )


def _resolve(
    base: ScaleReport,
    settings: EngineSettings,
    inputs: Sequence[tuple[str, str, tuple[ScaleSource, ...]]],
) -> ScaleReport:
    """Resolve every layer from its sources (engine layer name, checkpoint prefix, sources) and
    judge the result; ``base`` carries everything read from the checkpoint."""
    engine = base.options.rules
    resolved: list[ResolvedLayer] = []
    for name, prefix, sources in inputs:
        cache = engine.layer_cache(name, settings, base.shape)
        layer = engine.resolve_layer(
            name,
            sources,
            settings.for_layer(cache),
            checkpoint_prefix=prefix,
            refusal=base.refused_by[name][1] if name in base.refused_by else None,
        )
        resolved.append(replace(layer, cache=cache))
    layers = tuple(resolved)
    culprits = {name: item for name, (item, _) in base.refused_by.items()}
    problems, rounding = layer_problems(layers, settings, explained=frozenset(culprits))
    problems.extend(
        model_problems(
            layers,
            settings,
            base.quant,
            base.unmapped,
            culprits,
            base.scale_like_count,
            engine.fp8_kv_cache_dtype,
        )
    )
    problems.extend(engine.engine_problems(layers, settings, base.quant))
    nvfp4 = _nvfp4_report(base, settings, layers)
    if nvfp4 is not None:
        problems.extend(nvfp4_problems(nvfp4, f"{engine.name} {engine.version}"))
    checkpoint_level = [p for p in base.problems if p.code in _CHECKPOINT_CODES]
    return replace(
        base,
        settings=settings,
        layers=layers,
        problems=(*problems, *checkpoint_level),
        rounding=rounding,
        nvfp4=nvfp4,
    )


def _nvfp4_report(
    base: ScaleReport, settings: EngineSettings, layers: Sequence[ResolvedLayer]
) -> Nvfp4Report | None:
    """The readings of every NVFP4 layer whose k and v values come from the checkpoint (a
    default 1.0 has no convention)."""
    nvfp4 = [
        lay
        for lay in layers
        if lay.cache is not None
        and lay.cache.scale_use is ScaleUse.GLOBAL_SCALE
        and lay.rule is not Rule.ERROR
    ]
    if not nvfp4:
        return None
    evidence = convention_of(base.quant.raw, base.nvfp4_mark)
    engine = base.options.rules
    out = []
    for lay in nvfp4:
        per_kind: list[tuple[float, tuple[Reading, ...]]] = []
        for kind in ("k_scale", "v_scale"):
            value = lay.value(kind)
            host = float(max(value) if isinstance(value, tuple) else value or 0.0)
            usable = kind in lay.used_from_checkpoint and math.isfinite(host) and host > 0
            scales = engine.nvfp4_global_scales(host, settings.gpu_arch)
            per_kind.append((host, readings(host, evidence, scales) if usable else ()))
        if per_kind[0][1] or per_kind[1][1]:
            (k, k_readings), (v, v_readings) = per_kind
            out.append(LayerReadings(lay.name, k, v, k_readings, v_readings))
    return Nvfp4Report(evidence, settings.gpu_arch, tuple(out))


def resolve_again(report: ScaleReport, options: EngineOptions) -> ScaleReport:
    """The same checkpoint under other options of the same engine (another KV-cache dtype or
    platform), from the sources already read: nothing is read or routed again."""
    if options.engine_name != report.options.engine_name:
        raise ValueError("resolve_again keeps the engine; resolve the checkpoint again instead")
    settings, how = options.rules.settings(
        report.quant, report.shape, options, report.weight_dtypes
    )
    inputs = [
        (
            layer.name,
            layer.checkpoint_prefix,
            tuple(sorted([*layer.sources.values(), *layer.shadowed], key=lambda s: s.load_order)),
        )
        for layer in report.layers
    ]
    return _resolve(replace(report, options=options, model_dtype_source=how), settings, inputs)


_CHECKPOINT_CODES = frozenset(["index-missing-tensor", "duplicate-tensor"])


def _all_occurrences(ckpt: Checkpoint, file_order: Sequence[str]) -> list[TensorRef]:
    """Every tensor occurrence in the engine's load order (its shard order, then names within a
    shard, as ``safe_open(...).keys()`` gives them), numbered in that order."""
    refs: list[TensorRef] = list(ckpt.tensors.values())
    for occurrences in ckpt.duplicates.values():
        refs.extend(occurrences[:-1])  # the last one is already in ckpt.tensors
    rank = {name: i for i, name in enumerate(file_order)}
    refs.sort(key=lambda r: (rank[r.file], r.load_order))
    return [replace(ref, load_order=i) for i, ref in enumerate(refs)]


def _read_values(
    ckpt: Checkpoint, refs: Sequence[TensorRef]
) -> dict[tuple[str, str], tuple[float, ...]]:
    """The decoded values of every scale tensor that can be read, one read per shard (a remote
    source coalesces them), bounded by ``max-scale-elements``."""
    wanted: dict[str, list[TensorRef]] = defaultdict(list)
    for ref in refs:
        info = ref.info
        if info.dtype in DECODABLE_DTYPES and info.numel <= MAX_SCALE_ELEMENTS.value():
            wanted[ref.file].append(ref)
    out: dict[tuple[str, str], tuple[float, ...]] = {}
    for file, file_refs in wanted.items():
        raw = ckpt.read_tensors(file, [r.info for r in file_refs])
        for ref in file_refs:
            out[(file, ref.name)] = tuple(decode_values(ref.info.dtype, raw[ref.name]))
    return out


def _make_source(
    ref: TensorRef,
    kind: str,
    convention: Convention,
    producer: Producer,
    values: tuple[float, ...] | None,
) -> ScaleSource:
    info = ref.info
    return ScaleSource(
        tensor=info.name,
        file=ref.file,
        dtype=info.dtype,
        shape=info.shape,
        kind=kind,
        convention=convention,
        load_order=ref.load_order,
        values=values,
        path=ref.path,
        producer=producer,
    )


def _checkpoint_problems(
    ckpt: Checkpoint, by_layer: Mapping[str, Sequence[ScaleSource]]
) -> list[Problem]:
    """Problems of the files themselves (index, duplicate names), whatever the options."""
    out: list[Problem] = []
    if ckpt.unindexed:
        shown = ", ".join(ckpt.unindexed[:3])
        more = f" and {len(ckpt.unindexed) - 3} more" if len(ckpt.unindexed) > 3 else ""
        out.append(
            problem(
                "index-missing-tensor",
                f"{len(ckpt.unindexed)} tensors are in shards but not in the index: {shown}{more}",
            )
        )
    scale_names = {src.tensor for sources in by_layer.values() for src in sources}
    plain_dupes = sorted(n for n in ckpt.duplicates if n not in scale_names)
    if plain_dupes:
        where = ", ".join(r.file for r in ckpt.duplicates[plain_dupes[0]])
        out.append(
            problem(
                "duplicate-tensor",
                f"{len(plain_dupes)} tensor names occur in more than one shard, e.g. "
                f"{plain_dupes[0]} in {where}; the engine keeps the last one loaded",
            )
        )
    return out
