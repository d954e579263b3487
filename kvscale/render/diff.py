"""Render a ``DiffResult``: the ``kvscale.diff/1`` JSON document and the people's table."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.core.diff import DiffResult, LayerDiff, ScaleSet, ValueChange
from kvscale.engine.base import KINDS, ScaleValue
from kvscale.floats import encode_json_value, format_value
from kvscale.render._common import layer_labels
from kvscale.render.escape import safe_text, sanitize

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.diff/1"


def _rel_json(rel: float | None) -> object:
    return None if rel is None else encode_json_value(rel)


def _value_json(value: ScaleValue | None) -> object:
    return encode_json_value(value)


def _side_json(side: ScaleSet) -> dict[str, Any]:
    return {
        "path": side.path,
        "source": side.source,
        "kv_cache_dtype": side.kv_cache_dtype,
        "platform": side.platform,
        "engine_path": side.engine_path,
        "model_dtype": side.model_dtype,
        "layers": len(side.layers),
    }


def _change_json(change: ValueChange) -> dict[str, Any]:
    return {
        "a": _value_json(change.a),
        "b": _value_json(change.b),
        "changed": change.changed,
        "rel_change": _rel_json(change.rel_change),
        "compared": change.compared,
        "head": change.head,
    }


def _layer_json(layer: LayerDiff, failures: dict[str, list[str]]) -> dict[str, Any]:
    worst = layer.max_change
    return {
        "name": layer.name,
        "status": layer.status,
        "rule_a": layer.rule_a,
        "rule_b": layer.rule_b,
        "rule_changed": layer.rule_changed,
        "max_rel_change": _rel_json(worst.rel_change if worst else None),
        "max_kind": worst.kind if worst else None,
        "scales": {change.kind: _change_json(change) for change in layer.values},
        "failures": failures.get(layer.name, []),
    }


def failure_lines(result: DiffResult) -> list[str]:
    """``--quiet``: one line per gate failure, then the summary."""
    lines = [f"fail {f.rule} {f.layer.removesuffix('.attn')}: {f.message}" for f in result.failures]
    return [*lines, summary_line(result)]


def diff_json(result: DiffResult, applied: Mapping[str, object] | None = None) -> dict[str, Any]:
    """The ``kvscale.diff/1`` document: every layer of both sides, the gate and a summary."""
    by_layer: dict[str, list[str]] = defaultdict(list)
    for failure in result.failures:
        by_layer[failure.layer].append(failure.rule)
    largest = result.largest
    return {
        "schema": SCHEMA,
        "kvscale_version": __version__,
        "a": _side_json(result.a),
        "b": _side_json(result.b),
        "max_rel_change": result.threshold,
        "settings_differ": list(result.settings_differ),
        "notes": list(result.notes),
        "layers": [_layer_json(layer, by_layer) for layer in result.layers],
        "failures": [
            {"rule": f.rule, "layer": f.layer, "message": f.message} for f in result.failures
        ],
        "summary": {
            "layers_a": len(result.a.layers),
            "layers_b": len(result.b.layers),
            "unchanged": result.count("unchanged"),
            "changed": result.count("changed"),
            "added": result.count("added"),
            "lost": result.count("lost"),
            "rule_changes": sum(1 for layer in result.layers if layer.rule_changed),
            "largest": None
            if largest is None
            else {
                "layer": largest[0].name,
                "kind": largest[1].kind,
                "a": _value_json(largest[1].a),
                "b": _value_json(largest[1].b),
                "rel_change": _rel_json(largest[1].rel_change),
                "head": largest[1].head,
            },
        },
        "ok": result.ok,
        "policy_file": (applied or {}).get("policy_file"),
        "options": (applied or {}).get("options", {}),
    }


def _rel_text(rel: float | None) -> str:
    if rel is None:
        return "-"
    if math.isinf(rel):
        return "inf"
    return f"{rel:.3g}"


def _cell(change: ValueChange | None) -> Any:
    from rich.text import Text

    if change is None:
        return Text("-", style="dim")
    if not change.changed:
        return Text(format_value(change.a), style="dim")
    text = Text(f"{format_value(change.a)} -> {format_value(change.b)}", style="yellow")
    if change.head is not None:
        text.append(f" (head {change.head})", style="dim")
    return text


def summary_line(result: DiffResult) -> str:
    changed = result.count("changed")
    total = len({layer.name for layer in result.layers})
    verdict = "FAIL" if result.failures else "OK"
    parts = [f"{verdict}: {changed} of {total} layers changed"]
    largest = result.largest
    if largest is not None:
        layer, change = largest
        head = f" head {change.head}" if change.head is not None else ""
        parts[0] += (
            f" (largest relative change {_rel_text(change.rel_change)}: {layer.name} "
            f"{change.kind}{head} {format_value(change.a)} -> {format_value(change.b)})"
        )
    rule_changes = sum(1 for layer in result.layers if layer.rule_changed)
    parts.append(
        f"{result.count('added')} added, {result.count('lost')} lost, "
        f"{rule_changes} rule change{'' if rule_changes == 1 else 's'}"
    )
    if result.threshold is None:
        parts.append("no drift gate (pass --max-rel-change)")
    else:
        parts.append(f"gate --max-rel-change {result.threshold:g}")
    if result.failures:
        n = len(result.failures)
        parts.append(f"{n} gate failure{'' if n == 1 else 's'}")
    return "; ".join(parts)


def diff_renderables(result: DiffResult, *, show_all: bool = False) -> list[RenderableType]:
    """Changed layers (all with ``show_all``), then gate failures and warnings, then a summary."""
    from rich.table import Table
    from rich.text import Text

    out: list[RenderableType] = []
    title = Text("KV-scale diff: A = ")
    title.append_text(safe_text(result.a.path, "bold"))
    title.append(", B = ")
    title.append_text(safe_text(result.b.path, "bold"))
    shown = [layer for layer in result.layers if show_all or layer.status != "unchanged"]
    if shown:
        template, labels = layer_labels([layer.name for layer in shown])
        if template:
            title.append(" (layer N = ")
            title.append_text(safe_text(template))
            title.append(")")
        out.append(title)
        table = Table(pad_edge=False)
        table.add_column(
            "N" if template else "layer", no_wrap=True, justify="right" if template else "left"
        )
        table.add_column("status", no_wrap=True)
        table.add_column("rule", no_wrap=True)
        for kind in KINDS:
            table.add_column(kind.removesuffix("_scale"), no_wrap=True)
        table.add_column("max rel", justify="right", no_wrap=True)
        status_style = {"changed": "yellow", "added": "cyan", "lost": "bold red"}
        for label, layer in zip(labels, shown, strict=True):
            by_kind = {change.kind: change for change in layer.values}
            if layer.rule_changed:
                rule = Text(f"{layer.rule_a} -> {layer.rule_b}", style="yellow")
            else:
                rule = Text(layer.rule_a or layer.rule_b or "-")
            table.add_row(
                safe_text(label),
                Text(layer.status, style=status_style.get(layer.status, "dim")),
                rule,
                *(_cell(by_kind.get(kind)) for kind in KINDS),
                _rel_text(layer.max_rel_change),
            )
        out.append(table)
    else:
        line = Text()
        line.append_text(title)
        line.append(f": no layer changed ({len(result.layers)} layers compared)")
        out.append(line)

    notes = Text()
    for key in result.settings_differ:
        notes.append("warning ", style="yellow")
        notes.append(
            f"{key} differs: A {getattr(result.a, key)}, B {getattr(result.b, key)}; "
            "values are not comparable (pass --kv-cache-dtype / --platform)\n"
        )
    for note in result.notes:
        notes.append("note ", style="cyan")
        notes.append_text(safe_text(note))
        notes.append("\n")
    grouped: dict[str, list[str]] = defaultdict(list)
    for failure in result.failures:
        grouped[failure.rule].append(f"{failure.layer.removesuffix('.attn')}: {failure.message}")
    for rule_name in sorted(grouped):
        items = grouped[rule_name]
        notes.append(f"fail {rule_name}", style="bold red")
        notes.append(f" ({len(items)})\n" if len(items) > 1 else "\n")
        for item in items[:10]:
            notes.append("  ")
            notes.append_text(safe_text(item))
            notes.append("\n")
        if len(items) > 10:
            notes.append(f"  ... and {len(items) - 10} more (--json lists all)\n", style="dim")
    if notes.plain:
        out.append(notes)
    out.append(
        Text(
            sanitize(summary_line(result)),
            style="bold red" if result.failures else "bold green",
        )
    )
    return out
