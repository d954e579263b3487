"""``kvscale diff``: compare the resolved scales of two checkpoints (or scale files) per layer.

Each side is a checkpoint (resolved with ``inspect_checkpoint``), a ``kv_scales.json``
(``kvscale.scales/1``, written by ``kvscale normalize``; a normalize output directory stands for
its ``kv_scales.json``) or a saved ``kvscale inspect --json`` document (``kvscale.inspect/1``).
The core returns a ``DiffResult``; rendering and exit codes belong to the CLI.

Gate rules (``DiffResult.failures``), each checked for every layer of A:

* ``layer-lost``: the layer is in A but not in B.
* ``rule-regressed``: B's rule ranks below A's (``RULE_RANK``): a layer that had calibrated
  scales now has fewer (partial, duplicated), none (default, unquantized) or is refused (error).
* ``value-invalid``: a scale that was a positive finite number in A is zero, negative, NaN or
  infinite in B.
* ``drift``: the largest relative change of any of the layer's four scales exceeds the
  threshold (strictly; ``DEFAULT_MAX_REL_CHANGE`` unless the caller sets another or turns the
  gate off with None). The change is symmetric, ``max(a/b, b/a) - 1``, so a scale that shrinks
  (the kind that saturates) trips the gate as surely as one that grows. Drift is measured where
  both sides hold calibrated values (``_drift_kinds``: the same rule rank, partial or better;
  not an engine default) that are positive and finite: a change to an invalid value is
  ``value-invalid``, one from an invalid value a fix, a rule that gets worse
  ``rule-regressed`` (the reported ``rel_change`` of each is still computed).
* ``new-error``: a checkpoint B has an error-severity problem (``kvscale inspect``'s) that A
  does not have (same code, same layer; every error of B when A is a scales document). The
  engine resolves a layer from one tensor per kind; what it leaves out (a shadowed duplicate
  holding NaN, a name it cannot map) reaches no compared value, and is accounted for here.

Every layer entry of a scales document is compared: a document that names one layer twice (as
``model.layers.0.self_attn`` and ``model.layers.0.self_attn.attn``) is refused, since which
entry applies is undefined. Layers only in B (``added``) are reported and never fail: inspect
judges the new checkpoint.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvscale.conventions import layer_sort_key
from kvscale.core.inspect import ScaleReport, inspect_checkpoint
from kvscale.engine.base import KINDS, ResolvedLayer, ScaleValue
from kvscale.engine.options import EngineOptions, parse_platform
from kvscale.engine.registry import all_kv_cache_dtypes
from kvscale.errors import ConfigError, UsageError
from kvscale.floats import max_nan
from kvscale.problems import Problem, Severity
from kvscale.progress import ProgressFn
from kvscale.scales_file import SCHEMA as SCALES_SCHEMA
from kvscale.scales_file import (
    LayerEntry,
    json_path_of,
    parse_scales,
    read_json_document,
    scale_value,
)

INSPECT_SCHEMA = "kvscale.inspect/1"

DEFAULT_MAX_REL_CHANGE = 0.75
"""The drift gate when none is given: fail when a calibrated scale changes by more than 1.75x
either way (``max(a/b, b/a) - 1 > 0.75``).

Honest recalibration stays below it. SmolLM2-135M (30 layers, k and v: 60 scales) calibrated by
``kvscale calibrate`` on disjoint quarters of ``examples/calibration/kvscale-calibration.txt``
(``benchmarks/calibration_noise.py``): 8 x 512 tokens each, pairs differ by at most 0.50 (p95
0.17, median 0.04; 6 pairs); 32 x 512 tokens, at most 0.33 (p95 0.16, median 0.03; 6 pairs);
8 against 32 samples of the same text, at most 0.56 (4 pairs). Larger calibration sets (the
usual 512 x 2048) differ less still.

The regressions the gate is for are larger: a scale computed for the other FP8 format
(448 / 240 = 1.87x, 0.87), one doubled or halved (fnuz doubling applied twice or not at all:
1.0), a scale left at amax (448x), a reciprocal, ``examples/wrong-scale`` (128x). A release
process that recalibrates on very little data can raise it (``--max-rel-change``, or
``max_rel_change`` in the policy file); an exact-reproduction pipeline should lower it (0
accepts no change at all)."""

RULE_RANK: Mapping[str, int] = {
    "error": 0,
    "default": 1,
    "unquantized": 1,
    "partial": 2,
    "duplicated": 2,
    "separate": 3,
    "per_head": 3,
}
"""How much of its calibration a layer keeps: a move to a lower rank is a regression."""


@dataclass(frozen=True)
class LayerScales:
    name: str
    rule: str
    values: Mapping[str, ScaleValue | None]
    loaded: frozenset[str] | None = None
    """Kinds whose value came from the checkpoint (not the engine's default, nor duplicated
    from another kind); None when the side does not say (a calibrate output: all calibrated)."""


@dataclass(frozen=True)
class ScaleSet:
    """One side of a diff: the resolved scales of every attention layer, in layer order."""

    path: str
    source: str
    """``checkpoint``, ``kvscale.scales/1`` or ``kvscale.inspect/1``."""
    kv_cache_dtype: str | None
    platform: str | None
    engine_path: str | None
    model_dtype: str | None
    layers: tuple[LayerScales, ...]
    report: ScaleReport | None = None

    @property
    def problems(self) -> tuple[Problem, ...]:
        """inspect's problems of a checkpoint side (a scales document has none to report)."""
        return tuple(self.report.problems) if self.report is not None else ()


@dataclass(frozen=True)
class ValueChange:
    kind: str
    a: ScaleValue | None
    b: ScaleValue | None
    changed: bool
    rel_change: float | None
    """``max(a/b, b/a) - 1`` (largest over heads); inf for a change involving NaN/inf, zero or
    a sign change; None when a side has no value (a refused layer)."""
    compared: str
    """``value``, ``per-head`` (element by element) or ``max-over-heads`` (layouts differ)."""
    head: int | None = None
    """Per head: the head with the largest relative change."""


@dataclass(frozen=True)
class LayerDiff:
    name: str
    status: str
    """``unchanged``, ``changed``, ``added`` or ``lost``."""
    rule_a: str | None
    rule_b: str | None
    values: tuple[ValueChange, ...]
    drift_kinds: frozenset[str] = frozenset()
    """The kinds the drift gate measures: calibrated on both sides (``_drift_kinds``)."""

    @property
    def rule_changed(self) -> bool:
        return self.rule_a is not None and self.rule_b is not None and self.rule_a != self.rule_b

    @property
    def max_change(self) -> ValueChange | None:
        """The value change with the largest relative change (None when nothing compares)."""
        best: ValueChange | None = None
        for v in self.values:
            if v.rel_change is None:
                continue
            if best is None or best.rel_change is None or v.rel_change > best.rel_change:
                best = v
        return best

    @property
    def max_rel_change(self) -> float | None:
        best = self.max_change
        return best.rel_change if best is not None else None


@dataclass(frozen=True)
class GateFailure:
    rule: str
    """``layer-lost``, ``rule-regressed``, ``value-invalid`` or ``drift``."""
    layer: str
    message: str


@dataclass(frozen=True)
class DiffResult:
    a: ScaleSet
    b: ScaleSet
    layers: tuple[LayerDiff, ...]
    threshold: float | None
    failures: tuple[GateFailure, ...]
    settings_differ: tuple[str, ...]
    """Names of settings (kv_cache_dtype, platform) that differ between the sides."""
    notes: tuple[str, ...] = ()
    """What the comparison cannot tell under these options: layers whose KV cache reads no
    k/v scales (an unquantized or self-scaled format), layers the engine refuses."""

    @property
    def ok(self) -> bool:
        return not self.failures

    def count(self, status: str) -> int:
        return sum(1 for layer in self.layers if layer.status == status)

    @property
    def largest(self) -> tuple[LayerDiff, ValueChange] | None:
        best: tuple[LayerDiff, ValueChange] | None = None
        for layer in self.layers:
            change = layer.max_change
            if change is None or change.rel_change is None or not change.changed:
                continue
            if best is None or change.rel_change > (best[1].rel_change or 0.0):
                best = (layer, change)
        return best


# --- loading -----------------------------------------------------------------------------------


def _one_entry_per_layer(path: Path, names: Sequence[str]) -> None:
    """Refuse a document that names one layer twice, under any spelling (``_canonical``)."""
    seen: dict[str, str] = {}
    for name in names:
        key = _canonical(name)
        if key in seen:
            first = seen[key]
            spelled = "" if first == name else f" (also as {first[:120]!r})"
            raise ConfigError(
                path,
                f"layer {name[:120]!r} appears twice{spelled}; which entry applies is undefined",
                hint="keep one entry per layer",
            )
        seen[key] = name


def _layers_from_entries(path: Path, entries: Sequence[LayerEntry]) -> tuple[LayerScales, ...]:
    _one_entry_per_layer(path, [e.name for e in entries])
    layers = [
        LayerScales(
            e.name,
            e.rule,
            {k: e.values.get(k) for k in KINDS},
            frozenset(e.sources) if e.sources else None,
        )
        for e in entries
    ]
    layers.sort(key=lambda layer: layer_sort_key(layer.name))
    return tuple(layers)


def _inspect_layers(path: Path, document: Mapping[str, Any]) -> tuple[LayerScales, ...]:
    raw_list = document.get("layers")
    if not isinstance(raw_list, list):
        raise ConfigError(path, "layers must be a list")
    names: list[str] = []
    for entry in raw_list:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            raise ConfigError(path, "every layer needs a name")
        names.append(name)
    _one_entry_per_layer(path, names)
    layers: list[LayerScales] = []
    for entry, name in zip(raw_list, names, strict=True):
        rule = entry.get("rule")
        if not isinstance(rule, str):
            raise ConfigError(path, f"layer {name[:120]!r} has no rule")
        values = {
            kind: scale_value(path, f"{name[:120]}.{kind}", entry.get(kind)) for kind in KINDS
        }
        sources = entry.get("checkpoint")
        loaded = frozenset(sources) if isinstance(sources, Mapping) and sources else None
        layers.append(LayerScales(name, rule, values, loaded))
    layers.sort(key=lambda layer: layer_sort_key(layer.name))
    return tuple(layers)


def _opt_str(document: Mapping[str, Any], key: str) -> str | None:
    value = document.get(key)
    return value if isinstance(value, str) else None


def scale_set_from_document(path: Path, document: object) -> ScaleSet:
    """A ``kvscale.scales/1`` or ``kvscale.inspect/1`` document as one side of a diff."""
    if not isinstance(document, Mapping):
        raise ConfigError(path, "is not a JSON object")
    schema = document.get("schema")
    if schema == SCALES_SCHEMA:
        scales = parse_scales(path, document)
        return ScaleSet(
            path=str(path),
            source=SCALES_SCHEMA,
            kv_cache_dtype=scales.kv_cache_dtype,
            platform=scales.platform,
            engine_path=scales.engine_path,
            model_dtype=scales.settings.model_dtype,
            layers=_layers_from_entries(path, scales.layers),
        )
    if schema == INSPECT_SCHEMA:
        return ScaleSet(
            path=str(path),
            source=INSPECT_SCHEMA,
            kv_cache_dtype=_opt_str(document, "kv_cache_dtype"),
            platform=_opt_str(document, "platform"),
            engine_path=_opt_str(document, "engine_path"),
            model_dtype=_opt_str(document, "model_dtype"),
            layers=_inspect_layers(path, document),
        )
    shown = repr(schema)[:60] if schema is not None else "no schema"
    raise ConfigError(
        path,
        f"not a kvscale scales document ({shown})",
        hint=f"expected {SCALES_SCHEMA} (kvscale normalize) or {INSPECT_SCHEMA} "
        "(kvscale inspect --json)",
    )


def _served_from_checkpoint(layer: ResolvedLayer) -> frozenset[str]:
    """The kinds whose checkpoint value the engine serves with: a cache that reads no k/v
    (self-scaled, unquantized, skipped) makes a change of theirs no drift (the notes say so)."""
    kinds = frozenset(layer.used_from_checkpoint)
    if layer.cache is not None and not layer.cache.scale_use.reads_checkpoint:
        kinds -= {"k_scale", "v_scale"}
    return kinds


def read_scales_document(path: Path) -> ScaleSet:
    return scale_set_from_document(path, read_json_document(path))


def scale_set_from_report(report: ScaleReport) -> ScaleSet:
    return ScaleSet(
        path=report.checkpoint,
        source="checkpoint",
        kv_cache_dtype=report.kv_cache_dtype,
        platform=report.platform,
        engine_path=report.engine_path.value,
        model_dtype=report.model_dtype,
        layers=tuple(
            LayerScales(
                layer.name,
                layer.rule.value,
                {k: layer.value(k) for k in KINDS},
                _served_from_checkpoint(layer),
            )
            for layer in report.layers
        ),
        report=report,
    )


def load_pair(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    options: EngineOptions,
    *,
    progress: ProgressFn | None = None,
) -> tuple[ScaleSet, ScaleSet]:
    """Load both sides. A checkpoint side is resolved, for every option the user left unset,
    with the settings a scales document on the other side was written for (KV-cache dtype,
    platform): otherwise every fnuz value of such a document would show as doubled."""
    loaded: dict[int, ScaleSet] = {}
    for i, side in enumerate((a, b)):
        document = json_path_of(side)
        if document is not None:
            loaded[i] = read_scales_document(document)
    reference = loaded.get(0) or loaded.get(1)
    if reference is not None:
        options = options.over(
            EngineOptions(
                kv_cache_dtype=reference.kv_cache_dtype
                if reference.kv_cache_dtype in all_kv_cache_dtypes()
                else None,
                platform=parse_platform(reference.platform)
                if reference.platform in ("ocp", "fnuz")
                else None,
            )
        )
    for i, side in enumerate((a, b)):
        if i not in loaded:
            loaded[i] = scale_set_from_report(inspect_checkpoint(side, options, progress))
    return loaded[0], loaded[1]


# --- comparison --------------------------------------------------------------------------------


def _same(x: float, y: float) -> bool:
    return x == y or (math.isnan(x) and math.isnan(y))


def rel_change(a: float, b: float) -> float:
    """The symmetric relative change ``max(a/b, b/a) - 1`` = ``|b - a| / min(|a|, |b|)``: a
    scale 128x too small and one 128x too large both change by 127. 0 for identical values
    (NaN == NaN here); inf for any other change that involves a non-finite value, a zero or a
    sign change."""
    if _same(a, b):
        return 0.0
    if not (math.isfinite(a) and math.isfinite(b)) or a == 0.0 or b == 0.0:
        return math.inf
    if (a < 0.0) != (b < 0.0):
        return math.inf
    return abs(b - a) / min(abs(a), abs(b))


def _valid(x: float) -> bool:
    return math.isfinite(x) and x > 0.0


def compare_values(kind: str, a: ScaleValue | None, b: ScaleValue | None) -> ValueChange:
    if a is None or b is None:
        return ValueChange(
            kind, a, b, changed=(a is None) != (b is None), rel_change=None, compared="value"
        )
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        rels = [rel_change(x, y) for x, y in zip(a, b, strict=True)]
        head = max(range(len(rels)), key=lambda i: rels[i])
        changed = not all(_same(x, y) for x, y in zip(a, b, strict=True))
        return ValueChange(kind, a, b, changed, rels[head], "per-head", head)
    if isinstance(a, tuple) or isinstance(b, tuple):
        # Layouts differ (per head vs per tensor, or another head count): compare what the
        # host sees, the max over heads, which is also what kv_scales.json stores.
        ha = max_nan(a) if isinstance(a, tuple) else a
        hb = max_nan(b) if isinstance(b, tuple) else b
        return ValueChange(kind, a, b, True, rel_change(ha, hb), "max-over-heads")
    return ValueChange(kind, a, b, not _same(a, b), rel_change(a, b), "value")


def _elements(value: ScaleValue | None) -> tuple[float, ...]:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


def _fmt(value: ScaleValue | None) -> str:
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return f"max {_fmt(max_nan(value))} over {len(value)} heads"
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _fmt_rel(rel: float) -> str:
    return "inf" if math.isinf(rel) else f"{rel:.3g}"


def _canonical(name: str) -> str:
    # kv_scales.json written by another tool may name layers by their attention prefix
    # (model.layers.0.self_attn) rather than the engine layer (model.layers.0.self_attn.attn).
    return name.removesuffix(".attn")


def _new_errors(a: ScaleSet, b: ScaleSet) -> list[GateFailure]:
    """B's error-severity problems that A does not have (by code and layer)."""

    def key(p: Problem) -> tuple[str, str]:
        return p.code, _canonical(p.layer or "")

    known = {key(p) for p in a.problems if p.severity is Severity.ERROR}
    return [
        GateFailure("new-error", p.layer or "", f"{p.code}: {p.message}")
        for p in b.problems
        if p.severity is Severity.ERROR and key(p) not in known
    ]


def _gate(layer: LayerDiff, threshold: float | None) -> list[GateFailure]:
    out: list[GateFailure] = []
    name = layer.name
    if layer.status == "lost":
        out.append(GateFailure("layer-lost", name, f"in A (rule {layer.rule_a}) but not in B"))
        return out
    if layer.status == "added":
        return out
    ra, rb = RULE_RANK.get(layer.rule_a or ""), RULE_RANK.get(layer.rule_b or "")
    if layer.rule_changed and ra is not None and rb is not None and rb < ra:
        out.append(GateFailure("rule-regressed", name, f"rule {layer.rule_a} -> {layer.rule_b}"))
    for change in layer.values:
        before, after = _elements(change.a), _elements(change.b)
        if not before or not after or not change.changed:
            continue
        if all(_valid(x) for x in before) and not all(_valid(y) for y in after):
            out.append(
                GateFailure(
                    "value-invalid",
                    name,
                    f"{change.kind} {_fmt(change.a)} -> {_fmt(change.b)}",
                )
            )
    if threshold is not None:
        drifts = [
            (d, change)
            for change in layer.values
            if change.kind in layer.drift_kinds and (d := _drift(change)) is not None
        ]
        if drifts:
            (rel, head), worst = max(drifts, key=lambda item: item[0][0])
            if rel > threshold:
                where = f" (head {head})" if head is not None else ""
                out.append(
                    GateFailure(
                        "drift",
                        name,
                        f"{worst.kind}{where} {_fmt(worst.a)} -> {_fmt(worst.b)}: relative "
                        f"change {_fmt_rel(rel)} > {threshold:g}",
                    )
                )
    return out


def _drift_kinds(a: LayerScales, b: LayerScales) -> frozenset[str]:
    """The kinds whose change is drift: the layer has calibrated scales on both sides, equally
    many (same ``RULE_RANK``, 2 or more: a rule that gets worse is ``rule-regressed``, one that
    gets better an upgrade whose new values are the point), and the kind came from the
    checkpoint on both sides where a side says so (an engine default of 1.0 that becomes a
    calibrated q_scale is no drift)."""
    rank_a, rank_b = RULE_RANK.get(a.rule), RULE_RANK.get(b.rule)
    if rank_a is None or rank_a != rank_b or rank_a < 2:
        return frozenset()
    kinds = frozenset(KINDS)
    for side in (a.loaded, b.loaded):
        if side is not None:
            kinds &= side
    return kinds


def _drift(change: ValueChange) -> tuple[float, int | None] | None:
    """The largest relative change between values that are valid (positive, finite) on both
    sides, and its head (per head); None when no such pair. A change from an invalid value is
    a fix, one to an invalid value is ``value-invalid``: neither is drift."""
    a, b = change.a, change.b
    if a is None or b is None:
        return None
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        pairs = [(rel_change(x, y), i) for i, (x, y) in enumerate(zip(a, b, strict=True))]
        valid = [p for p, x, y in zip(pairs, a, b, strict=True) if _valid(x) and _valid(y)]
        return max(valid, key=lambda p: p[0]) if valid else None
    host_a = max_nan(a) if isinstance(a, tuple) else a
    host_b = max_nan(b) if isinstance(b, tuple) else b
    if not (_valid(host_a) and _valid(host_b)):
        return None
    return rel_change(host_a, host_b), None


def compare(
    a: ScaleSet, b: ScaleSet, threshold: float | None = DEFAULT_MAX_REL_CHANGE
) -> DiffResult:
    """Layer by layer: status, rule change and the four value changes; then the gate
    (``threshold``: the drift bound, None for no drift gate)."""
    if threshold is not None and not math.isfinite(threshold):
        raise UsageError("--max-rel-change must be a finite number")
    by_a = {_canonical(layer.name): layer for layer in a.layers}
    by_b = {_canonical(layer.name): layer for layer in b.layers}
    keys = sorted(set(by_a) | set(by_b), key=layer_sort_key)
    diffs: list[LayerDiff] = []
    for key in keys:
        la, lb = by_a.get(key), by_b.get(key)
        if la is None and lb is not None:
            diffs.append(LayerDiff(lb.name, "added", None, lb.rule, ()))
            continue
        if lb is None and la is not None:
            diffs.append(LayerDiff(la.name, "lost", la.rule, None, ()))
            continue
        assert la is not None and lb is not None
        values = tuple(compare_values(k, la.values.get(k), lb.values.get(k)) for k in KINDS)
        changed = la.rule != lb.rule or any(v.changed for v in values)
        diffs.append(
            LayerDiff(
                la.name,
                "changed" if changed else "unchanged",
                la.rule,
                lb.rule,
                values,
                _drift_kinds(la, lb),
            )
        )
    failures = [f for layer in diffs for f in _gate(layer, threshold)] + _new_errors(a, b)
    differ = tuple(
        key
        for key in ("kv_cache_dtype", "platform")
        if getattr(a, key) is not None
        and getattr(b, key) is not None
        and getattr(a, key) != getattr(b, key)
    )
    return DiffResult(a, b, tuple(diffs), threshold, tuple(failures), differ, _notes(a, b, diffs))


def _notes(a: ScaleSet, b: ScaleSet, diffs: Sequence[LayerDiff]) -> tuple[str, ...]:
    """What the comparison cannot tell: per checkpoint side, layers whose cache reads no k/v
    (a text both sides share is said once); layers the engine refuses on both sides (one
    refused on one side only is a rule change, judged by the gate)."""
    texts: dict[str, list[str]] = {}
    for label, side in (("A", a), ("B", b)):
        report = side.report
        if report is None:
            continue
        unread = [
            layer
            for layer in report.layers
            if layer.cache is not None
            and layer.error is None
            and not layer.cache.scale_use.reads_checkpoint
        ]
        if unread:
            dtypes = ", ".join(sorted({lay.cache.kv_cache_dtype for lay in unread if lay.cache}))
            text = (
                f"the KV cache of {len(unread)} of {len(report.layers)} layers reads no k/v "
                f"scales (kv-cache dtype {dtypes}): a change of theirs does not change what the "
                "engine serves"
            )
            texts.setdefault(text, []).append(label)
    out = [f"{' and '.join(labels)}: {text}" for text, labels in texts.items()]
    refused = [d.name for d in diffs if d.rule_a == "error" and d.rule_b == "error"]
    if refused:
        errors = {lay.name: lay.error for lay in (a.report.layers if a.report else ())}
        why = f" ({errors[refused[0]]})" if errors.get(refused[0]) else ""
        out.append(
            f"A and B: the engine refuses {len(refused)} of {len(diffs)} layers{why}; their "
            "values are not compared"
        )
    return tuple(out)


def diff_paths(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    options: EngineOptions | None = None,
    threshold: float | None = DEFAULT_MAX_REL_CHANGE,
    *,
    progress: ProgressFn | None = None,
) -> DiffResult:
    side_a, side_b = load_pair(a, b, options or EngineOptions(), progress=progress)
    return compare(side_a, side_b, threshold)
