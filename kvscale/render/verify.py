"""Render a ``VerifyResult``: the ``kvscale.verify/1`` JSON document and the people's table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvscale import __version__
from kvscale._output import safe_text, sanitize
from kvscale.floats import encode_json_value
from kvscale.render._common import layer_labels
from kvscale.verify import KindStats, VerifyResult

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.verify/1"


def _stats_json(stats: KindStats | None) -> dict[str, Any] | None:
    if stats is None:
        return None
    return {
        "scale": encode_json_value(stats.scale),
        "absmax": encode_json_value(stats.absmax),
        "saturated": stats.saturated,
        "underflow": stats.underflow,
        "rel_rms_error": encode_json_value(stats.rel_rms_error),
        "mismatched_bytes": stats.mismatched_bytes,
        "data": stats.data,
        "failures": list(stats.failures),
    }


def verify_json(result: VerifyResult, *, ok: bool | None = None) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "target": result.target,
        "device": result.device,
        "kernel": result.kernel,
        "host_device_agree": result.host_device_agree,
        "layers": [
            {
                "name": layer.name,
                "k": _stats_json(layer.k),
                "v": _stats_json(layer.v),
                "pass": layer.passed,
                "error": layer.error,
            }
            for layer in result.layers
        ],
        "ok": result.ok if ok is None else ok,
        "kvscale_version": __version__,
        "target_kind": result.target_kind,
        "kv_cache_dtype": result.kv_cache_dtype,
        "fp8_format": result.fp8_format,
        "platform": result.platform,
        "tokens": result.tokens,
        "thresholds": dict(result.thresholds),
        "notes": list(result.notes),
    }


def _pct(value: float) -> str:
    return f"{value:.3%}" if value else "0"


def verify_renderables(result: VerifyResult) -> list[RenderableType]:
    from rich.table import Table
    from rich.text import Text

    template, labels = layer_labels([layer.name for layer in result.layers])
    sources = sorted(
        {s.data for layer in result.layers for s in (layer.k, layer.v) if s is not None}
    )
    title = Text("FP8 cache write of ")
    title.append_text(safe_text(result.target, "bold"))
    title.append(f" on {sanitize(result.device)} ({result.kv_cache_dtype} = {result.fp8_format}")
    title.append(f", {' + '.join(sources) or 'no'} data")
    if template:
        title.append("; layer N = ")
        title.append_text(safe_text(template))
    title.append(")")
    table = Table(title=title, title_justify="left", pad_edge=False)
    table.add_column("N" if template else "layer", overflow="fold", no_wrap=bool(template))
    table.add_column("", no_wrap=True)
    for column in ("scale", "absmax", "saturated", "underflow", "rel err", "bad bytes"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("result", no_wrap=True)
    for label, layer in zip(labels, result.layers, strict=True):
        if layer.k is None or layer.v is None:
            table.add_row(
                safe_text(label),
                "",
                "-",
                "-",
                "-",
                "-",
                "-",
                "-",
                Text("REFUSED", style="bold red"),
            )
            continue
        for kind, stats in (("k", layer.k), ("v", layer.v)):
            table.add_row(
                safe_text(label) if kind == "k" else Text(""),
                kind,
                f"{stats.scale:.6g}",
                f"{stats.absmax:.4g}",
                _pct(stats.saturated),
                _pct(stats.underflow),
                f"{stats.rel_rms_error:.4f}",
                "-" if stats.mismatched_bytes is None else str(stats.mismatched_bytes),
                Text("pass", style="green") if stats.passed else Text("FAIL", style="bold red"),
            )
    out: list[RenderableType] = [table]
    failures = Text()
    for layer in result.layers:
        if layer.error is not None:
            failures.append_text(safe_text(f"{layer.name}: ", "cyan"))
            failures.append_text(safe_text(f"the engine refuses this layer: {layer.error}"))
            failures.append("\n")
        for kind, maybe in (("k", layer.k), ("v", layer.v)):
            if maybe is None:
                continue
            for reason in maybe.failures:
                failures.append_text(safe_text(f"{layer.name} {kind}: ", "cyan"))
                failures.append_text(safe_text(reason))
                failures.append("\n")
    if failures:
        out.append(failures)
    for note in result.notes:
        out.append(safe_text(f"note: {note}", "dim"))
    passed = sum(layer.passed for layer in result.layers)
    limits = ", ".join(f"{k} <= {v:g}" for k, v in result.thresholds.items())
    verdict = "OK" if result.ok else "FAIL"
    bad = sum(
        stats.mismatched_bytes or 0
        for layer in result.layers
        for stats in (layer.k, layer.v)
        if stats is not None
    )
    if result.kernel is None:
        kernel = "kernel not run (no --gpu)"
    elif bad:
        kernel = f"kernel DIFFERS from the reference in {bad} bytes"
    else:
        kernel = "kernel bit-exact vs reference"
    out.append(
        Text(
            f"{verdict}: {passed}/{len(result.layers)} layers pass ({limits}); {kernel}; "
            f"host/device scales {'agree' if result.host_device_agree else 'DISAGREE'}",
            style="bold green" if result.ok else "bold red",
        )
    )
    return out
