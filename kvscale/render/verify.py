"""Render a ``VerifyResult``: the ``kvscale.verify/1`` JSON document and the people's table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.core.verify.model_run import ModelEval
from kvscale.core.verify.run import VerifyResult
from kvscale.core.verify.stats import KindStats
from kvscale.floats import encode_json_value
from kvscale.render._common import layer_labels
from kvscale.render.escape import safe_text, sanitize

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
        **(
            {}
            if stats.zero_blocks is None
            else {"zero_blocks": stats.zero_blocks, "saturated_blocks": stats.saturated_blocks}
        ),
    }


def verify_json(
    result: VerifyResult,
    *,
    applied: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "target": result.target,
        "engine": dict(result.engine),
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
                "data": layer.data,
            }
            for layer in result.layers
        ],
        "ok": result.ok,
        "kvscale_version": __version__,
        "target_kind": result.target_kind,
        "kv_cache_dtype": result.kv_cache_dtype,
        "fp8_format": result.fp8_format,
        "platform": result.platform,
        "tokens": result.tokens,
        "thresholds": dict(result.thresholds),
        "checked": list(result.checked),
        "not_checked": list(result.not_checked),
        "notes": list(result.notes),
        "synthetic_layers": list(result.synthetic_layers),
        "policy_file": (applied or {}).get("policy_file"),
        "options": (applied or {}).get("options", dict(result.options)),
        "model_eval": _model_eval_json(result.model_eval),
    }


def _model_eval_json(model_eval: ModelEval | None) -> dict[str, Any] | None:
    if model_eval is None:
        return None
    return {
        "model": model_eval.model,
        "samples": model_eval.samples,
        "tokens": model_eval.tokens,
        "ppl_unquantized": encode_json_value(model_eval.ppl_unquantized),
        "ppl_fp8": encode_json_value(model_eval.ppl_fp8),
        "ppl_unit_scales": encode_json_value(model_eval.ppl_unit_scales),
        "ppl_increase": encode_json_value(model_eval.ppl_increase),
        "kl_mean": encode_json_value(model_eval.kl_mean),
        "kl_max": encode_json_value(model_eval.kl_max),
        "kl_mean_unit_scales": encode_json_value(model_eval.kl_mean_unit_scales),
        "kl_max_unit_scales": encode_json_value(model_eval.kl_max_unit_scales),
        "dtype": model_eval.dtype,
        "device": model_eval.device,
        "activations_out": model_eval.activations_out,
        "max_ppl_increase": model_eval.max_ppl_increase,
        "max_kl": model_eval.max_kl,
        "failures": list(model_eval.failures),
        "variants": [v.to_json() for v in model_eval.variants],
    }


def model_eval_line(model_eval: ModelEval) -> str:
    """The end-to-end numbers in one line (more variants: one more line each)."""
    line = (
        f"model {model_eval.model} on {model_eval.tokens} tokens ({model_eval.samples} samples, "
        f"{model_eval.dtype} on {model_eval.device}): perplexity {model_eval.ppl_unquantized:.4f} "
        f"unquantized, {model_eval.ppl_fp8:.4f} with the target's cache "
        f"({model_eval.ppl_increase:+.2%}), {model_eval.ppl_unit_scales:.4f} with every scale "
        f"1.0; KL vs unquantized: mean {model_eval.kl_mean:.3g}, max {model_eval.kl_max:.3g} "
        f"(scales 1.0: mean {model_eval.kl_mean_unit_scales:.3g}, max "
        f"{model_eval.kl_max_unit_scales:.3g})"
    )
    for v in model_eval.variants:
        if v.name in ("target", "unit_scales"):
            continue
        line += (
            f"\n  {v.name} ({v.description}): perplexity {v.ppl:.4f}, KL mean "
            f"{v.kl_mean:.3g}, max {v.kl_max:.3g}"
        )
    return line


def _pct(value: float) -> str:
    return f"{value:.3%}" if value else "0"


def _kernel_text(result: VerifyResult) -> str:
    bad = sum(
        stats.mismatched_bytes or 0
        for layer in result.layers
        for stats in (layer.k, layer.v)
        if stats is not None
    )
    if result.kernel is None:
        return "kernel not run (no --gpu)"
    if bad:
        return f"kernel DIFFERS from the reference in {bad} bytes"
    return "kernel bit-exact vs reference"


def verdict_line(result: VerifyResult) -> str:
    passed = sum(layer.passed for layer in result.layers)
    limits = (
        ", ".join(f"{k} <= {v:g}" for k, v in result.thresholds.items())
        or "self-scaled or unquantized cache: errors reported, not judged"
    )
    verdict = "OK" if result.ok else "FAIL"
    line = (
        f"{verdict}: {passed}/{len(result.layers)} layers pass ({limits}); "
        f"{_kernel_text(result)}; host/device scales "
        f"{'agree' if result.host_device_agree else 'DISAGREE'}"
    )
    model_eval = result.model_eval
    if model_eval is not None:
        gates = [
            f"{name} {value:g}"
            for name, value in (
                ("--max-ppl-increase", model_eval.max_ppl_increase),
                ("--max-kl", model_eval.max_kl),
            )
            if value is not None
        ]
        if gates:
            line += (
                f"; model gate ({', '.join(gates)}) {'FAILED' if model_eval.failures else 'passed'}"
            )
    if result.unverified:
        line += "; --strict needs the kernel to run: pass --gpu on a CUDA machine"
    return line


def coverage_line(result: VerifyResult) -> str:
    """What the verdict rests on, and what it does not."""
    line = "checked: " + "; ".join(result.checked)
    if result.not_checked:
        line += ". NOT checked: " + "; ".join(result.not_checked)
    return line


def verify_lines(result: VerifyResult) -> list[str]:
    """``--quiet``: one line per failure, then the verdict."""
    out = []
    for layer in result.layers:
        if layer.error is not None:
            out.append(f"{layer.name}: the engine refuses this layer: {layer.error}")
        for kind, stats in (("k", layer.k), ("v", layer.v)):
            if stats is not None:
                out.extend(f"{layer.name} {kind}: {reason}" for reason in stats.failures)
    if result.model_eval is not None:
        out.extend(f"model: {failure}" for failure in result.model_eval.failures)
    out.append(coverage_line(result))
    out.append(verdict_line(result))
    return out


def resolved_with_line(result: VerifyResult, applied: Mapping[str, object] | None = None) -> str:
    """Which engine, options and policy file gave the scales (defect: verify once ignored them)."""
    applied = applied or {}
    chosen = applied.get("options", dict(result.options))
    given = ", ".join(f"{key}={value}" for key, value in dict(chosen).items()) or "none"  # type: ignore[call-overload]
    engine = " ".join(str(result.engine.get(key, "")) for key in ("name", "version")).strip()
    if result.target_kind == "checkpoint":
        how = "resolved as kvscale inspect resolves them"
    else:
        how = "as written by kvscale normalize/calibrate"
    return (
        f"scales {how}: {engine or 'engine'}, kv cache {result.kv_cache_dtype}, platform "
        f"{result.platform}; options set: {given}; "
        f"policy file: {applied.get('policy_file') or 'none'}"
    )


def verify_renderables(
    result: VerifyResult,
    *,
    applied: Mapping[str, object] | None = None,
) -> list[RenderableType]:
    from rich.table import Table
    from rich.text import Text

    template, labels = layer_labels([layer.name for layer in result.layers])
    sources = sorted({layer.data for layer in result.layers if layer.data is not None})
    title = Text("FP8 cache write of ")
    title.append_text(safe_text(result.target, "bold"))
    title.append(f" on {sanitize(result.device)} ({result.kv_cache_dtype} = {result.fp8_format}")
    title.append(f", {' + '.join(sources) or 'no'} data")
    if template:
        title.append("; layer N = ")
        title.append_text(safe_text(template))
    title.append(")")
    table = Table(pad_edge=False)
    table.add_column("N" if template else "layer", no_wrap=True)
    table.add_column("", no_wrap=True)
    for column in ("scale", "absmax", "saturated", "underflow", "rel err", "bad bytes"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("data", no_wrap=True)
    table.add_column("result", no_wrap=True)
    for label, layer in zip(labels, result.layers, strict=True):
        if layer.k is None or layer.v is None:
            table.add_row(
                safe_text(label), "", "-", "-", "-", "-", "-", "-", "-",
                Text("REFUSED", style="bold red"),
            )  # fmt: skip
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
                stats.data,
                Text("pass", style="green") if stats.passed else Text("FAIL", style="bold red"),
            )
    out: list[RenderableType] = [
        title,
        safe_text(resolved_with_line(result, applied), "dim"),
        table,
    ]
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
    if result.model_eval is not None:
        out.append(safe_text(model_eval_line(result.model_eval)))
        for failure in result.model_eval.failures:
            out.append(safe_text(f"model: {failure}", "bold red"))
    # The verdict stays the last line (CI logs and scripts read it); what it rests on before it.
    out.append(safe_text(coverage_line(result), "dim" if not result.not_checked else "yellow"))
    out.append(Text(verdict_line(result), style="bold green" if result.ok else "bold red"))
    return out
