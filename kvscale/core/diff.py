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
* ``drift`` (only with a threshold): the largest relative change of any of the layer's four
  scales exceeds it (strictly). The change is symmetric, ``max(a/b, b/a) - 1``, so a scale that
  shrinks (the kind that saturates) trips the gate as surely as one that grows; a change to or
  from a non-finite value, zero, or across the sign counts as infinite.

Layers only in B (``added``) are reported and never fail: inspect judges the new checkpoint.
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
from kvscale.engine.base import KINDS, ScaleValue
from kvscale.engine.options import EngineOptions, parse_platform
from kvscale.engine.registry import all_kv_cache_dtypes
from kvscale.errors import ConfigError, UsageError
from kvscale.floats import max_nan
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


def _layers_from_entries(entries: Sequence[LayerEntry]) -> tuple[LayerScales, ...]:
    layers = [LayerScales(e.name, e.rule, {k: e.values.get(k) for k in KINDS}) for e in entries]
    layers.sort(key=lambda layer: layer_sort_key(layer.name))
    return tuple(layers)


def _inspect_layers(path: Path, document: Mapping[str, Any]) -> tuple[LayerScales, ...]:
    raw_list = document.get("layers")
    if not isinstance(raw_list, list):
        raise ConfigError(path, "layers must be a list")
    seen: set[str] = set()
    layers: list[LayerScales] = []
    for entry in raw_list:
        name = entry.get("name") if isinstance(entry, Mapping) else None
        if not isinstance(name, str):
            raise ConfigError(path, "every layer needs a name")
        if name in seen:
            raise ConfigError(path, f"layer {name[:120]!r} appears twice")
        seen.add(name)
        rule = entry.get("rule")
        if not isinstance(rule, str):
            raise ConfigError(path, f"layer {name[:120]!r} has no rule")
        values = {
            kind: scale_value(path, f"{name[:120]}.{kind}", entry.get(kind)) for kind in KINDS
        }
        layers.append(LayerScales(name, rule, values))
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
            layers=_layers_from_entries(scales.layers),
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
            LayerScales(layer.name, layer.rule.value, {k: layer.value(k) for k in KINDS})
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
        worst = layer.max_change
        if worst is not None and worst.rel_change is not None and worst.rel_change > threshold:
            head = f" (head {worst.head})" if worst.head is not None else ""
            out.append(
                GateFailure(
                    "drift",
                    name,
                    f"{worst.kind}{head} {_fmt(worst.a)} -> {_fmt(worst.b)}: relative change "
                    f"{_fmt_rel(worst.rel_change)} > {threshold:g}",
                )
            )
    return out


def compare(a: ScaleSet, b: ScaleSet, threshold: float | None = None) -> DiffResult:
    """Layer by layer: status, rule change and the four value changes; then the gate."""
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
            LayerDiff(la.name, "changed" if changed else "unchanged", la.rule, lb.rule, values)
        )
    failures = [f for layer in diffs for f in _gate(layer, threshold)]
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
    threshold: float | None = None,
    *,
    progress: ProgressFn | None = None,
) -> DiffResult:
    side_a, side_b = load_pair(a, b, options or EngineOptions(), progress=progress)
    return compare(side_a, side_b, threshold)
