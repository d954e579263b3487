"""Render a ``ScaleReport``: the ``kvscale.inspect/1`` JSON document and the people's table."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvscale import __version__
from kvscale._output import safe_text, sanitize
from kvscale.floats import encode_json_value, format_value
from kvscale.inspect import ScaleReport
from kvscale.problems import Problem, Severity
from kvscale.render._common import layer_labels
from kvscale.resolve import ResolvedLayer, Rule, ScaleSource

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.inspect/1"
KIND_ORDER = (
    "k_scale",
    "v_scale",
    "q_scale",
    "prob_scale",
    "k_zero_point",
    "v_zero_point",
    "q_zero_point",
)


def _source_json(src: ScaleSource) -> dict[str, Any]:
    return {**src.to_json(), "producer": src.convention.producer}


def layer_json(layer: ResolvedLayer) -> dict[str, Any]:
    return {
        "name": layer.name,
        "rule": layer.rule.value,
        "k_scale": encode_json_value(layer.k_scale),
        "v_scale": encode_json_value(layer.v_scale),
        "q_scale": encode_json_value(layer.q_scale),
        "prob_scale": encode_json_value(layer.prob_scale),
        "checkpoint": {
            kind: _source_json(layer.sources[kind]) for kind in KIND_ORDER if kind in layer.sources
        },
        "error": layer.error,
    }


def inspect_json(
    report: ScaleReport, failing: Sequence[Problem] | None = None, *, strict: bool = False
) -> dict[str, Any]:
    """The ``kvscale.inspect/1`` document; ``ok`` is false when the run exits non-zero."""
    failing = list(report.errors) if failing is None else list(failing)
    failing_ids = {id(p) for p in failing}
    rules = Counter(layer.rule.value for layer in report.layers)
    return {
        "schema": SCHEMA,
        "checkpoint": report.checkpoint,
        "quant_method": report.quant_method,
        "engine_path": report.engine_path.value,
        "kv_cache_dtype": report.kv_cache_dtype,
        "platform": report.platform,
        "model_dtype": report.model_dtype,
        "layers": [layer_json(layer) for layer in report.layers],
        "problems": [{**p.to_json(), "fails": id(p) in failing_ids} for p in report.problems],
        "ok": not failing,
        "kvscale_version": __version__,
        "kv_cache_dtype_requested": report.kv_cache_dtype_requested,
        "model_dtype_source": report.model_dtype_source,
        "layout": report.layout,
        "files": list(report.files),
        "strict": strict,
        "unmapped": [
            {"tensor": u.tensor, "file": u.file, "engine_name": u.engine_name, "reason": u.reason}
            for u in report.unmapped
        ],
        "summary": {
            "layers": len(report.layers),
            "rules": dict(sorted(rules.items())),
            "errors": len(report.errors),
            "warnings": len(report.warnings),
            "failing": len(failing),
        },
    }


_RULE_STYLE = {
    Rule.SEPARATE: "green",
    Rule.PER_HEAD: "green",
    Rule.DUPLICATED: "yellow",
    Rule.PARTIAL: "yellow",
    Rule.DEFAULT: "yellow",
    Rule.UNQUANTIZED: "dim",
    Rule.ERROR: "bold red",
}


def _short_layer(name: str) -> str:
    return name.removesuffix(".attn")


def _sources_text(layer: ResolvedLayer) -> str:
    conventions = sorted({src.convention.value for src in layer.sources.values()})
    return ", ".join(conventions) if conventions else "-"


def summary_line(report: ScaleReport, failing: Sequence[Problem]) -> str:
    rules = Counter(layer.rule.value for layer in report.layers)
    rule_text = ", ".join(f"{count} {rule}" for rule, count in sorted(rules.items())) or "none"
    kv = report.kv_cache_dtype
    if report.kv_cache_dtype_requested == "auto":
        kv += " (auto)"
    verdict = "FAIL" if failing else "OK"
    return (
        f"{verdict}: {len(report.layers)} attention layers ({rule_text}); "
        f"{len(report.errors)} errors, {len(report.warnings)} warnings; "
        f"quant_method {report.quant_method or 'none'}, engine path {report.engine_path.value}, "
        f"kv cache {kv}, model dtype {report.model_dtype}, platform {report.platform}"
    )


def inspect_renderables(
    report: ScaleReport, failing: Sequence[Problem], *, max_problems_per_code: int = 3
) -> list[RenderableType]:
    """The table for people: one row per layer, then problems grouped by code, then a summary."""
    from rich.table import Table
    from rich.text import Text

    problems_by_layer: dict[str | None, list[Problem]] = defaultdict(list)
    for p in report.problems:
        problems_by_layer[p.layer].append(p)

    template, labels = layer_labels([layer.name for layer in report.layers])
    title = Text("KV-cache scales of ")
    title.append_text(safe_text(report.checkpoint, "bold"))
    if template:
        title.append(" (layer N = ")
        title.append_text(safe_text(template))
        title.append(")")
    table = Table(title=title, title_justify="left", show_lines=False, pad_edge=False)
    if any(isinstance(layer.k_scale, tuple) for layer in report.layers):
        title.append("; * = max over heads (the host value)")
    table.add_column(
        "N" if template else "layer",
        overflow="fold",
        justify="right" if template else "left",
        no_wrap=bool(template),
    )
    for kind in ("k", "v", "q"):
        table.add_column(kind, justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True, min_width=8)
    table.add_column("source", overflow="fold")
    table.add_column("problems", no_wrap=True)
    for label, layer in zip(labels, report.layers, strict=True):
        codes = Counter(p.code for p in problems_by_layer.get(layer.name, []))
        worst = any(p.severity is Severity.ERROR for p in problems_by_layer.get(layer.name, []))
        problem_text = Text(
            "\n".join(code if n == 1 else f"{code} x{n}" for code, n in codes.items()) or "-",
            style="red" if worst else ("yellow" if codes else "dim"),
        )
        table.add_row(
            safe_text(label),
            format_value(layer.k_scale),
            format_value(layer.v_scale),
            format_value(layer.q_scale),
            Text(layer.rule.value, style=_RULE_STYLE[layer.rule]),
            _sources_text(layer),
            problem_text,
        )
    out: list[RenderableType] = [table]

    if report.problems:
        failing_ids = {id(p) for p in failing}
        grouped: dict[str, list[Problem]] = defaultdict(list)
        for p in report.problems:
            grouped[p.code].append(p)
        lines = Text()
        for code, items in sorted(grouped.items(), key=lambda kv: (_rank(kv[1]), kv[0])):
            severity = "error" if any(p.severity is Severity.ERROR for p in items) else "warning"
            fails = any(id(p) in failing_ids for p in items)
            style = "bold red" if severity == "error" else "yellow"
            lines.append(f"{severity} {code}", style=style)
            lines.append(f" ({len(items)})" if len(items) > 1 else "")
            lines.append("" if fails else "  [does not fail the run]", style="dim")
            lines.append("\n")
            for p in items[:max_problems_per_code]:
                lines.append("  ")
                if p.layer:
                    lines.append_text(safe_text(_short_layer(p.layer), "cyan"))
                    lines.append(": ")
                lines.append_text(safe_text(p.message))
                lines.append("\n")
            if len(items) > max_problems_per_code:
                lines.append(
                    f"  ... and {len(items) - max_problems_per_code} more (--json lists all)\n",
                    style="dim",
                )
        out.append(lines)
    out.append(
        Text(sanitize(summary_line(report, failing)), style="bold red" if failing else "bold green")
    )
    return out


def _rank(items: list[Problem]) -> int:
    return 0 if any(p.severity is Severity.ERROR for p in items) else 1
