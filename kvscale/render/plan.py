"""Render a plan: the ``kvscale.plan/1`` document, the people's table and its text summary."""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__
from kvscale.conventions import layer_index
from kvscale.core.plan import CandidateResult, PlanResult
from kvscale.floats import encode_json_value
from kvscale.render.escape import safe_text

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.plan/1"
TOP_LAYERS = 5
"""Layers named in a candidate's KL attribution (the JSON lists every layer)."""


def _budget_text(result: PlanResult) -> str:
    kind, bound = result.budget
    return f"mean KL <= {bound:g}" if kind == "kl" else f"perplexity increase <= {bound:.2%}"


def _result_json(r: CandidateResult, reference_ppl: float) -> dict[str, Any]:
    c = r.candidate
    increase = r.ppl_increase(reference_ppl)
    return {
        "name": r.name,
        "kv_cache_dtype": c.kv_cache_dtype,
        "format": c.format.name,
        "scales": c.scales,
        "per_head": c.per_head,
        "skip_layers": list(c.skip_layers),
        "backends": list(c.backends) if c.backends is not None else None,
        "status": r.status,
        "why": r.why,
        "confirmation": r.confirmation,
        "bytes_per_token": encode_json_value(r.bytes_per_token),
        "tokens_fit": r.tokens_fit,
        "ppl": encode_json_value(r.ppl),
        "ppl_increase": encode_json_value(increase),
        "kl_mean": encode_json_value(r.kl_mean),
        "kl_max": encode_json_value(r.kl_max),
        "layers": [
            {
                "name": s.name,
                "k_rel_rms_error": encode_json_value(s.k_error),
                "v_rel_rms_error": encode_json_value(s.v_error),
                "kl_share_estimate": encode_json_value(s.share),
            }
            for s in r.layers
        ],
    }


def plan_json(result: PlanResult, applied: Mapping[str, object] | None = None) -> dict[str, Any]:
    kind, bound = result.budget
    return {
        "schema": SCHEMA,
        "model": result.model,
        "data": result.data,
        "engine": dict(result.engine),
        "policy_file": (applied or {}).get("policy_file"),
        "options": (applied or {}).get("options", result.options.engine.chosen()),
        "budget": {"kind": kind, "bound": bound},
        "samples": result.samples,
        "tokens": result.tokens,
        "ppl_unquantized": encode_json_value(result.ppl_unquantized),
        "candidates": [_result_json(r, result.ppl_unquantized) for r in result.results],
        "chosen": None if result.chosen is None else result.chosen.name,
        "closest": None if result.closest is None else result.closest.name,
        "command": list(result.flags),
        "verify_command": list(result.verify_command),
        "checkpoint": result.checkpoint,
        "checkpoint_needed": result.checkpoint_needed,
        "forward_passes": result.forward_passes,
        "seconds": round(result.seconds, 3),
        "forward_seconds": round(result.forward_seconds, 3),
        "notes": list(result.notes),
        "ok": result.ok,
        "kvscale_version": __version__,
    }


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _size(value: float | None) -> str:
    if value is None:
        return "?"
    return f"{value / 1024:,.1f} KiB" if value >= 1024 else f"{value:,.0f} B"


def plan_summary(result: PlanResult) -> list[str]:
    """The plot-free text summary (also ``--quiet``'s lines): the answer, or the closest."""
    lines = []
    budget = _budget_text(result)
    if result.chosen is not None:
        c = result.chosen
        lines.append(
            f"OK: serve with {c.name} ({_size(c.bytes_per_token)} of KV cache per token, mean "
            f"KL {_fmt(c.kl_mean, '.4g')}, perplexity {_fmt(c.ppl, '.4f')} vs "
            f"{result.ppl_unquantized:.4f} unquantized; budget {budget})"
        )
        lines.append("command: " + shlex.join(result.flags))
        lines.append("reproduce: " + shlex.join(result.verify_command))
        if c.candidate.skip_layers:
            base = _base_run(result, c)
            if base is not None:
                lines.append(
                    f"keeping layers {', '.join(c.candidate.skip_layers)} unquantized lowers the "
                    f"mean KL from {_fmt(base.kl_mean, '.4g')} to {_fmt(c.kl_mean, '.4g')} "
                    "(both measured)"
                )
    else:
        closest = result.closest
        near = (
            f"; closest: {closest.name} (mean KL {_fmt(closest.kl_mean, '.4g')}, perplexity "
            f"{_fmt(closest.ppl, '.4f')})"
            if closest is not None
            else ""
        )
        lines.append(f"FAIL: no configuration meets the budget ({budget}){near}")
    lines.extend(f"note: {n}" for n in result.notes)
    equivalents = result.seconds / result.forward_seconds if result.forward_seconds > 0 else 0.0
    lines.append(
        f"{result.forward_passes} forward passes over {result.samples} samples "
        f"({result.tokens} tokens), {result.seconds:.1f} s (~{equivalents:.1f}x its "
        "unquantized pass)"
    )
    return lines


def _base_run(result: PlanResult, chosen: CandidateResult) -> CandidateResult | None:
    """The run of the chosen configuration with every layer quantized."""
    base = dataclasses.replace(chosen.candidate, skip_layers=())
    for r in result.results:
        if r.candidate == base and not r.confirmation:
            return r
    return None


def _layer_label(name: str) -> str:
    index = layer_index(name)
    return str(index) if index is not None else name


def plan_renderables(result: PlanResult) -> list[RenderableType]:
    from rich.table import Table
    from rich.text import Text

    title = Text("KV-cache plan for ")
    title.append_text(safe_text(result.model, "bold"))
    title.append(
        f" ({result.engine.get('name', '')} {result.engine.get('version', '')}; "
        f"{_budget_text(result)}; unquantized perplexity {result.ppl_unquantized:.4f})"
    )
    table = Table(show_lines=False, pad_edge=False)
    fits = result.options.gpu_memory is not None
    for column, justify in (
        ("configuration", "left"),
        ("bytes/token", "right"),
        *((("tokens fit", "right"),) if fits else ()),
        ("ppl", "right"),
        ("KL mean", "right"),
        ("KL max", "right"),
        ("top layers (est. KL share)", "left"),
    ):
        table.add_column(column, justify=justify)
    chosen = result.chosen
    measured = [r for r in result.results if r.status == "measured"]
    measured.sort(key=lambda r: (r.bytes_per_token or 0.0, r.confirmation, r.name))
    for r in measured:
        top = sorted(r.layers, key=lambda s: s.share, reverse=True)[:TOP_LAYERS]
        shares = ", ".join(f"{_layer_label(s.name)} {s.share:.0%}" for s in top)
        meets = r.meets(result.budget, result.ppl_unquantized)
        style = "bold green" if r is chosen else ("green" if meets else "")
        table.add_row(
            safe_text(r.name + (" (confirmation)" if r.confirmation else ""), style),
            _size(r.bytes_per_token),
            *(("-" if r.tokens_fit is None else f"{r.tokens_fit:,}",) if fits else ()),
            _fmt(r.ppl, ".4f"),
            _fmt(r.kl_mean, ".4g"),
            _fmt(r.kl_max, ".4g"),
            safe_text(shares),
        )
    out: list[RenderableType] = [title, table]
    by_why: dict[str, list[str]] = {}
    for r in result.results:
        if r.status != "measured":
            by_why.setdefault(f"{r.status}: {r.why}", []).append(r.name)
    for why, names in by_why.items():
        out.append(safe_text(f"not evaluated ({why}): {', '.join(names)}", "dim"))
    lines = plan_summary(result)
    out.append(Text(lines[0], style="bold green" if result.ok else "bold red"))
    out.extend(safe_text(line) for line in lines[1:])
    return out
