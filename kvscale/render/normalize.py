"""Render a normalize plan/result: the ``kvscale.normalize/1`` summary and the people's view."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.core.normalize import NormalizePlan, NormalizeResult
from kvscale.engine.base import KINDS
from kvscale.floats import format_value
from kvscale.problems import Problem
from kvscale.render._common import human_size, layer_labels, problem_lines
from kvscale.render.escape import safe_text

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.normalize/1"


def _problems(items: Sequence[Problem]) -> list[dict[str, object]]:
    return [p.to_json() for p in items]


def normalize_json(
    plan: NormalizePlan,
    result: NormalizeResult | None,
    applied: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The summary for pipelines: what was (or would have been) written, sizes, digests."""
    rules = Counter(layer.rule for layer in plan.layers if not layer.skipped)
    report = plan.report
    files: list[dict[str, Any]] = []
    if result is not None:
        files = [
            {
                "path": f.path,
                "action": f.action,
                "bytes": f.bytes,
                "sha256": f.sha256,
                "method": f.method,
            }
            for f in result.files
        ]
    return {
        "schema": SCHEMA,
        "checkpoint": plan.checkpoint,
        "engine": report.engine,
        "out": str(plan.out),
        "written": result is not None,
        "replaced": bool(result and result.replaced),
        "ok": result is not None,
        "kv_cache_dtype": plan.kv_cache_dtype,
        "kv_cache_dtype_requested": report.kv_cache_dtype_requested,
        "kv_cache_dtype_effective": report.kv_cache_dtype,
        "platform": plan.platform,
        "engine_path": report.engine_path.value,
        "quant_method": report.quant_method,
        "model_dtype": report.model_dtype,
        "checkpoint_copy": plan.options.checkpoint,
        "layers": {
            "total": len(report.layers),
            "written": sum(1 for layer in plan.layers if not layer.skipped),
            "rules": dict(sorted(rules.items())),
            "skipped": [
                {"name": layer.name, "reason": layer.skipped} for layer in plan.skipped_layers
            ],
        },
        "files": files,
        "bytes": sum(f["bytes"] for f in files),
        "checkpoint_changes": {
            "removed": [{"file": s, "tensor": t} for s, t in plan.removed],
            "added": [{"file": s, "tensor": t} for s, t in plan.added],
        },
        "source_fingerprint": dict(plan.fingerprint),
        "nvfp4_conversion": (
            plan.nvfp4_conversion.to_json() if plan.nvfp4_conversion is not None else None
        ),
        "warnings": _problems(plan.warnings),
        "problems": _problems(plan.blocking),
        "kvscale_version": __version__,
        "policy_file": (applied or {}).get("policy_file"),
        "options": (applied or {}).get("options", report.options.chosen()),
    }


def normalize_renderables(
    plan: NormalizePlan, result: NormalizeResult | None
) -> list[RenderableType]:
    """People's output (stdout): the values written per layer, the files, one summary line."""
    from rich.table import Table
    from rich.text import Text

    out: list[RenderableType] = []
    title = Text(
        "KV-cache scales written for "
        if result is not None
        else "KV-cache scales normalize would write for "
    )
    title.append_text(safe_text(plan.checkpoint, "bold"))
    title.append(f" ({plan.platform}, kv cache {plan.kv_cache_dtype})")
    template, labels = layer_labels([layer.name for layer in plan.layers])
    if template:
        title.append(" (layer N = ")
        title.append_text(safe_text(template))
        title.append(")")
    out.append(title)
    table = Table(pad_edge=False)
    table.add_column(
        "N" if template else "layer", no_wrap=True, justify="right" if template else "left"
    )
    for kind in KINDS:
        table.add_column(kind.removesuffix("_scale"), justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    table.add_column("checkpoint names", no_wrap=True)
    for text, layer in zip(labels, plan.layers, strict=True):
        label = safe_text(text)
        if layer.skipped:
            table.add_row(label, "-", "-", "-", "-", Text("skipped", style="bold red"), "-")
            continue
        names = Text()
        for i, (_, tensor) in enumerate(layer.checkpoint_tensors):
            if i:
                names.append(", ")
            names.append_text(safe_text(tensor.name.rsplit(".", 1)[-1]))
        if layer.kept:
            names = Text("kept as is", style="yellow")
        table.add_row(
            label,
            *(format_value(layer.device[k]) for k in KINDS),
            layer.rule,
            names if layer.checkpoint_tensors or layer.kept else Text("-", style="dim"),
        )
    if plan.layers:
        out.append(table)
    conv = plan.nvfp4_conversion
    if conv is not None:
        factor = "x6" if conv.target.divisor < conv.source.divisor else "/6"
        out.append(
            Text(
                f"NVFP4 global scales of {conv.layers} layers rewritten {factor}: from "
                f"{conv.source.value} ({conv.source_why}) to {conv.target.value} "
                f"({conv.target_why})"
                if conv.source is not conv.target
                else f"NVFP4 global scales of {conv.layers} layers are already "
                f"{conv.target.value} ({conv.target_why}): written unchanged"
            )
        )
    if result is not None:
        actions = Counter(f.action for f in result.files if f.path.startswith("checkpoint/"))
        total = sum(f.bytes for f in result.files)
        line = Text("wrote ", style="bold green")
        line.append_text(safe_text(str(result.out), "bold"))
        line.append(f": {human_size(total)}; kv_scales.safetensors, kv_scales.json")
        if plan.options.sglang_json:
            line.append(", kv_cache_scales.json (SGLang --quantization-param-path)")
        if plan.options.checkpoint:
            line.append(
                f", checkpoint/ ({actions.get('rewritten', 0)} shard(s) rewritten, "
                f"{actions.get('copied', 0)} files copied, {len(plan.removed)} scale tensors "
                f"removed, {len(plan.added)} written)"
            )
        if result.replaced:
            line.append(" [replaced the previous output]")
        out.append(line)
    else:
        out.append(
            Text(
                "nothing written: the problems above stop normalize (--force leaves those layers "
                "as they are)",
                style="bold red",
            )
        )
    return out


__all__ = ["normalize_json", "normalize_renderables", "problem_lines"]
