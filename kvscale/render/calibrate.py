"""Render a calibration: the ``kvscale.calibrate/1`` summary and the people's table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.core.calibrate import CalibrationPlan, CalibrationResult
from kvscale.floats import encode_json_value, format_value, max_nan
from kvscale.render._common import human_size, layer_labels, problem_lines
from kvscale.render.escape import safe_text

if TYPE_CHECKING:
    from rich.console import RenderableType

    from kvscale.engine.base import ScaleValue

SCHEMA = "kvscale.calibrate/1"


def _host(value: ScaleValue | None) -> float | None:
    if value is None:
        return None
    return max_nan(value) if isinstance(value, tuple) else value


def calibrate_json(
    plan: CalibrationPlan,
    result: CalibrationResult | None,
    applied: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """What was computed and written (or would have been): per layer the statistic, the float32
    scales in kv_scales.json and what the engine holds after its own rules."""
    capture = plan.capture
    files = [
        {"path": f.path, "action": f.action, "bytes": f.bytes, "sha256": f.sha256}
        for f in (result.files if result is not None else ())
    ]
    return {
        "schema": SCHEMA,
        "model": plan.model,
        "target": plan.target,
        "out": str(plan.out),
        "written": result is not None,
        "replaced": bool(result and result.replaced),
        "ok": result is not None,
        "engine": plan.engine,
        "policy_file": (applied or {}).get("policy_file"),
        "options": (applied or {}).get("options", plan.options.engine.chosen()),
        "data": {
            "path": plan.data.path,
            "sha256": plan.data.sha256,
            "kind": plan.data.kind,
            "samples": len(plan.data.samples),
            "tokens": plan.data.tokens,
        },
        "model_run": {
            "architecture": plan.loaded.architecture,
            "dtype": plan.loaded.dtype,
            "device": plan.loaded.device,
            "devices": list(plan.loaded.devices),
            "attn_implementation": plan.loaded.attn_implementation,
            "transformers_version": plan.loaded.transformers_version,
        },
        "nvfp4": plan.nvfp4.to_json() if plan.nvfp4 is not None else None,
        "strategy": capture.strategy,
        "headroom": capture.headroom,
        "min_scale": capture.min_scale,
        "samples": capture.samples,
        "tokens": capture.tokens,
        "holdout_samples": capture.holdout_samples,
        "holdout_tokens": capture.holdout_tokens,
        "engine_path": plan.settings.engine_path.value,
        "kv_cache_dtype": plan.settings.kv_cache_dtype,
        "platform": plan.settings.platform,
        "model_dtype": plan.settings.model_dtype,
        "checkpoint_copy": plan.options.checkpoint,
        "quantization_config": dict(plan.quantization_config),
        "layers": [
            {
                "name": layer.name,
                "k_amax": encode_json_value(layer.k_amax),
                "v_amax": encode_json_value(layer.v_amax),
                "k_scale": encode_json_value(layer.k_scale),
                "v_scale": encode_json_value(layer.v_scale),
                "rule": layer.held.rule.value,
                "engine_holds": {
                    kind: encode_json_value(layer.held.value(kind))
                    for kind in ("k_scale", "v_scale")
                },
                "tokens": layer.tokens,
                "holdout_saturated_k": layer.holdout_saturated_k,
                "holdout_saturated_v": layer.holdout_saturated_v,
                "checkpoint_tensors": dict(layer.checkpoint_tensors),
            }
            for layer in plan.layers
        ],
        "checked_copy": bool(result and result.checked),
        "files": files,
        "bytes": sum(f.bytes for f in (result.files if result is not None else ())),
        "warnings": [p.to_json() for p in plan.warnings],
        "problems": [p.to_json() for p in plan.blocking],
        "kvscale_version": __version__,
    }


def _where(plan: CalibrationPlan) -> str:
    """``cpu``, ``cuda:0``, or the devices accelerate spread the model over."""
    devices = plan.loaded.devices
    if plan.loaded.device == "auto" and devices:
        return f"{' + '.join(devices)} (accelerate device_map)"
    return plan.loaded.device


def _pct(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3%}" if value else "0"


def calibrate_renderables(
    plan: CalibrationPlan, result: CalibrationResult | None
) -> list[RenderableType]:
    """Per layer: amax, the scales written, what the engine holds; then what was written."""
    from rich.table import Table
    from rich.text import Text

    capture = plan.capture
    holdout = capture.holdout_samples > 0
    per_head = capture.strategy == "head"
    template, labels = layer_labels([layer.name for layer in plan.layers])
    title = Text("KV-cache scales calibrated on ")
    title.append_text(safe_text(plan.model, "bold"))
    title.append(
        f" ({capture.samples} samples, {capture.tokens} tokens; {plan.loaded.dtype} on "
        f"{_where(plan)}; {capture.strategy}" + (", max over heads shown" if per_head else "")
    )
    if template:
        title.append("; layer N = ")
        title.append_text(safe_text(template))
    title.append(")")
    table = Table(pad_edge=False)
    table.add_column(
        "N" if template else "layer", no_wrap=True, justify="right" if template else "left"
    )
    for column in ("k amax", "v amax", "k scale", "v scale", "engine k", "engine v"):
        table.add_column(column, justify="right", no_wrap=True)
    if holdout:
        table.add_column("held-out sat k", justify="right", no_wrap=True)
        table.add_column("held-out sat v", justify="right", no_wrap=True)
    table.add_column("rule", no_wrap=True)
    for label, layer in zip(labels, plan.layers, strict=True):
        row: list[RenderableType] = [
            safe_text(label),
            format_value(_host(layer.k_amax)),
            format_value(_host(layer.v_amax)),
            format_value(_host(layer.k_scale)),
            format_value(_host(layer.v_scale)),
            format_value(_host(layer.held.value("k_scale"))),
            format_value(_host(layer.held.value("v_scale"))),
        ]
        if holdout:
            row += [_pct(layer.holdout_saturated_k), _pct(layer.holdout_saturated_v)]
        row.append(layer.held.rule.value)
        table.add_row(*row)
    out: list[RenderableType] = [title]
    if plan.layers:
        out.append(table)
    settings = plan.settings
    out.append(
        Text(
            f"engine {plan.engine['name']} {plan.engine['version']}: {settings.engine_path.value} "
            f"path, kv cache {settings.kv_cache_dtype}, model dtype {settings.model_dtype}, "
            f"platform {settings.platform} (engine k/v: what it holds after its own rules)",
            style="dim",
        )
    )
    if plan.nvfp4 is not None:
        conv = plan.nvfp4.convention
        out.append(
            Text(f"NVFP4 global scales written as {conv.value} ({conv.meaning}): {plan.nvfp4.why}")
        )
    if result is not None:
        total = sum(f.bytes for f in result.files)
        line = Text("wrote ", style="bold green")
        line.append_text(safe_text(str(plan.out), "bold"))
        line.append(f": {human_size(total)}; kv_scales.safetensors, kv_scales.json")
        if plan.options.checkpoint:
            line.append(", checkpoint/ (")
            line.append_text(safe_text(plan.target))
            line.append(
                f" with the scales; inspected: {len(result.checked)} layers load them as planned)"
            )
        if result.replaced:
            line.append(" [replaced the previous output]")
        out.append(line)
    else:
        out.append(Text("nothing written: the problems above stop calibrate", style="bold red"))
    return out


__all__ = ["calibrate_json", "calibrate_renderables", "problem_lines"]
