"""Render a ``ScaleReport``: the ``kvscale.inspect/1`` JSON document and the people's view."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.core.inspect import ScaleReport
from kvscale.engine.base import ResolvedLayer, Rule, ScaleSource
from kvscale.floats import encode_json_value, format_value
from kvscale.policy import Policy
from kvscale.problems import Problem, Severity
from kvscale.render._common import human_size, layer_labels
from kvscale.render.escape import safe_text, sanitize

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
    return {**src.to_json(), "producer": src.made_by.text}


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
        "cache": layer.cache.to_json() if layer.cache is not None else None,
    }


def inspect_json(
    report: ScaleReport,
    failing: Sequence[Problem] | None = None,
    policy: Policy | None = None,
    applied: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The ``kvscale.inspect/1`` document; ``ok`` is false when the run exits non-zero.

    ``applied``: which policy file and options were applied (``RunSettings.applied``).
    """
    failing = list(report.errors) if failing is None else list(failing)
    failing_ids = {id(p) for p in failing}
    rules = Counter(layer.rule.value for layer in report.layers)
    applied = applied or {}
    rounding = report.rounding
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
        "strict": bool(policy and policy.strict),
        "engine": report.engine,
        "policy_file": applied.get("policy_file"),
        "options": applied.get("options", report.options.chosen()),
        "kv_cache_dtype_skip_layers": list(report.settings.skip_layers),
        "gpu_arch": report.settings.gpu_arch,
        "rounding": None
        if rounding is None
        else {
            "dtype": rounding.dtype,
            "values": rounding.values,
            "max_rel_change": rounding.max_rel_change,
        },
        "unmapped": [
            {"tensor": u.tensor, "file": u.file, "engine_name": u.engine_name, "reason": u.reason}
            for u in report.unmapped
        ],
        **({} if report.nvfp4 is None else {"nvfp4": report.nvfp4.to_json()}),
        **({} if report.remote is None else {"source": report.remote.to_json()}),
        "summary": {
            "layers": len(report.layers),
            "rules": dict(sorted(rules.items())),
            "errors": len(report.errors),
            "warnings": len(report.warnings),
            "info": len(report.problems) - len(report.errors) - len(report.warnings),
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
    labels = sorted({src.made_by.label for src in layer.sources.values()})
    return ", ".join(labels) if labels else "-"


def summary_line(report: ScaleReport, failing: Sequence[Problem]) -> str:
    rules = Counter(layer.rule.value for layer in report.layers)
    rule_text = ", ".join(f"{count} {rule}" for rule, count in sorted(rules.items())) or "none"
    kv = report.kv_cache_dtype
    if report.kv_cache_dtype_requested == "auto":
        kv += " (auto)"
    verdict = "FAIL" if failing else "OK"
    engine = report.engine
    line = (
        f"{verdict}: {len(report.layers)} attention layers ({rule_text}); "
        f"{len(report.errors)} errors, {len(report.warnings)} warnings"
        + (
            f", {infos} info"
            if (infos := len(report.problems) - len(report.errors) - len(report.warnings))
            else ""
        )
        + "; "
        f"{engine['name']} {engine['version']}, "
        f"quant_method {report.quant_method or 'none'}, engine path {report.engine_path.value}, "
        f"kv cache {kv}, model dtype {report.model_dtype}, platform {report.platform}"
    )
    remote = report.remote
    if remote is not None:
        where = f"{remote.repo}@{remote.sha[:12]}" if remote.repo and remote.sha else "the URL"
        if remote.cache:
            line += f"; read from the local Hugging Face cache of {where}"
        else:
            line += (
                f"; read {human_size(remote.bytes)} of {human_size(remote.size)} from {where} "
                f"in {remote.requests} requests"
            )
    return line


def problem_lines(problems: Sequence[Problem]) -> list[str]:
    """One line per problem (``--quiet``): severity, code, layer, message."""
    out = []
    for p in problems:
        where = f" {_short_layer(p.layer)}" if p.layer else ""
        out.append(f"{p.severity.value} {p.code}{where}: {p.message}")
    return out


def _layer_codes(report: ScaleReport) -> dict[str, list[Problem]]:
    by_layer: dict[str, list[Problem]] = defaultdict(list)
    for p in report.problems:
        if p.layer is not None:
            by_layer[p.layer].append(p)
        for name in p.layers:
            if name != p.layer:
                by_layer[name].append(p)
    return by_layer


def inspect_renderables(
    report: ScaleReport,
    failing: Sequence[Problem],
    *,
    table: bool = True,
    max_problems_per_code: int = 3,
) -> list[RenderableType]:
    """For people: a title line, one row per layer, problems grouped by code, a summary.

    ``table=False`` (pre-commit's ``--files``): the title, problems and summary only.
    """
    from rich.table import Table
    from rich.text import Text

    template, labels = layer_labels([layer.name for layer in report.layers])
    title = Text("KV-cache scales of ")
    title.append_text(safe_text(report.checkpoint, "bold"))
    if template and table:
        title.append(" (layer N = ")
        title.append_text(safe_text(template))
        title.append(")")
    if table and any(isinstance(layer.k_scale, tuple) for layer in report.layers):
        title.append("; * = max over heads (the host value)")
    out: list[RenderableType] = [title]
    if table and report.layers:
        by_layer = _layer_codes(report)
        show_prob = any(layer.prob_scale not in (None, 1.0) for layer in report.layers) or any(
            "prob_scale" in layer.sources for layer in report.layers
        )
        grid = Table(show_lines=False, pad_edge=False)
        grid.add_column(
            "N" if template else "layer", justify="right" if template else "left", no_wrap=True
        )
        kinds = ("k", "v", "q", "prob") if show_prob else ("k", "v", "q")
        for kind in kinds:
            grid.add_column(kind, justify="right", no_wrap=True)
        grid.add_column("rule", no_wrap=True, min_width=8)
        grid.add_column("source", no_wrap=True)
        grid.add_column("problems", no_wrap=True)
        for label, layer in zip(labels, report.layers, strict=True):
            # Facts (info) are told once, below the table; the column is for problems.
            items = [p for p in by_layer.get(layer.name, []) if p.severity is not Severity.INFO]
            codes = Counter(p.code for p in items)
            worst = any(p.severity is Severity.ERROR for p in items)
            problem_text = Text(
                "\n".join(code if n == 1 else f"{code} x{n}" for code, n in codes.items()) or "-",
                style="red" if worst else ("yellow" if codes else "dim"),
            )
            values = [format_value(layer.k_scale), format_value(layer.v_scale)]
            values.append(format_value(layer.q_scale))
            if show_prob:
                values.append(format_value(layer.prob_scale))
            grid.add_row(
                safe_text(label),
                *values,
                Text(layer.rule.value, style=_RULE_STYLE[layer.rule]),
                _sources_text(layer),
                problem_text,
            )
        out.append(grid)

    if report.problems:
        failing_ids = {id(p) for p in failing}
        grouped: dict[str, list[Problem]] = defaultdict(list)
        for p in report.problems:
            grouped[p.code].append(p)
        lines = Text()
        for code, items in sorted(grouped.items(), key=lambda kv: (_rank(kv[1]), kv[0])):
            severity = _worst(items).value
            fails = any(id(p) in failing_ids for p in items)
            style = {"error": "bold red", "warning": "yellow"}.get(severity, "cyan")
            lines.append(f"{severity} {code}", style=style)
            lines.append(f" ({len(items)})" if len(items) > 1 else "")
            lines.append("" if fails else "  (does not fail the run)", style="dim")
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
    if report.rounding is not None:
        r = report.rounding
        out.append(
            Text(
                f"note: the engine rounds {r.values} checkpoint scale value(s) to {r.dtype} "
                f"(largest relative change {r.max_rel_change:.2e}, within normal rounding)",
                style="dim",
            )
        )
    nvfp4 = nvfp4_note(report)
    if nvfp4 is not None:
        out.append(Text(sanitize(nvfp4), style="dim"))
    out.append(
        Text(sanitize(summary_line(report, failing)), style="bold red" if failing else "bold green")
    )
    return out


def nvfp4_note(report: ScaleReport) -> str | None:
    """One line on what the NVFP4 global scales are read as, where the convention is known
    (an unknown one is the ``nvfp4-convention-unknown`` problem)."""
    nv = report.nvfp4
    if nv is None or nv.evidence.convention is None or not nv.layers:
        return None
    first = nv.layers[0]
    groups = "; ".join(
        f"{r.gpus}: engine global scale {r.engine_scale:.4g}, largest block scale "
        f"{r.largest_block_scale:.4g}"
        for r in first.k
    )
    return (
        f"note: NVFP4 global scales are {nv.evidence.convention.value} ({nv.evidence.why}); "
        f"{_short_layer(first.name)} k on {groups}"
    )


def total_line(summary: Mapping[str, int]) -> RenderableType:
    from rich.text import Text

    bad = summary["failed"] + summary["unreadable"]
    return Text(
        f"{'FAIL' if bad else 'OK'}: {summary['checkpoints']} checkpoints: "
        f"{summary['passed']} pass, {summary['failed']} fail, {summary['unreadable']} unreadable",
        style="bold red" if bad else "bold green",
    )


def _worst(items: Sequence[Problem]) -> Severity:
    for severity in (Severity.ERROR, Severity.WARNING):
        if any(p.severity is severity for p in items):
            return severity
    return Severity.INFO


def _rank(items: list[Problem]) -> int:
    return list(Severity).index(_worst(items))
