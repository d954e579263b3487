"""``kvscale plan``: which KV-cache setting to serve a model with, measured on its own text."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale.cli.app import command
from kvscale.cli.output import output_for
from kvscale.cli.params import (
    AttentionBackendOpt,
    EngineOpt,
    ForceOpt,
    FormatOpt,
    GpuArchOpt,
    JsonOpt,
    NoPolicyOpt,
    PlatformOpt,
    PolicyOpt,
    QuietOpt,
)
from kvscale.cli.settings import run_settings
from kvscale.errors import ExitCode, UsageError, require

EXAMPLES = """
Examples:

  kvscale plan ./Llama-3.1-8B-Instruct --data examples/calibration/kvscale-calibration.txt

  kvscale plan ./model --data calib.jsonl --max-ppl-increase 0.005 --gpu-arch sm100 \\
      --gpu-memory 40GiB --out ./serve-me

  kvscale plan ./model --data calib.jsonl --engine sglang --json | jq .command
"""

HOW = (
    "Candidates: every --kv-cache-dtype the engine accepts whose format kvscale can reproduce, "
    "for the backends that run it; FP8 and NVFP4 with the checkpoint's scales, freshly "
    "calibrated ones and 1.0; FP8 per head where a backend honours it; vLLM may keep layers "
    "unquantized. Cost: 1 + (number of candidates) forward passes over the data (the "
    "calibration pass is the unquantized reference), plus 1 per confirmation run when layers "
    "are skipped. The answer is the cheapest configuration (KV "
    "bytes per token) whose measured KL (or perplexity increase) meets the budget."
)

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_UNITS |= {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}


def parse_size(text: str) -> int:
    """``40GiB``, ``80GB``, ``1073741824`` -> bytes."""
    raw = text.strip().lower().replace(" ", "")
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = raw[len(digits) :]
    try:
        value = float(digits)
    except ValueError:
        value = -1.0
    if unit not in _UNITS or not value > 0:
        raise UsageError(
            f"--gpu-memory {text!r} is not a size", hint="e.g. 40GiB, 80GB or a number of bytes"
        )
    return int(value * _UNITS[unit])


@command(examples=EXAMPLES, extra_help=HOW)
def plan(
    model: Annotated[
        Path,
        typer.Argument(
            help="A local Hugging Face model directory (config.json, safetensors weights, a "
            "tokenizer when the data is text); its own KV scales, if any, are a candidate.",
            show_default=False,
        ),
    ],
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help="Text to measure on (.jsonl or text, as for calibrate); the calibrated "
            "candidates are calibrated on it too.",
            show_default=False,
            dir_okay=False,
        ),
    ],
    max_kl: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-kl",
            help="Budget: mean KL(unquantized || candidate) of the next-token distributions, "
            "nats per token. Default 0.01 (when --max-ppl-increase is not given).",
            show_default=False,
        ),
    ] = None,
    max_ppl_increase: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-ppl-increase",
            help="Budget instead: relative perplexity increase (0.01 = 1%).",
            show_default=False,
        ),
    ] = None,
    candidates: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--candidates",
            help="Only these configurations, comma-separated or repeated (names as in the "
            "table: fp8:calibrated, int8_per_token_head, nvfp4:calibrated, ...).",
            metavar="NAMES",
            show_default=False,
        ),
    ] = None,
    gpu_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--gpu-memory",
            help="GPU memory for the KV cache (e.g. 40GiB): how many tokens each configuration "
            "fits.",
            show_default=False,
        ),
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", help="At most this many samples.", min=1)
    ] = 32,
    seq_len: Annotated[int, typer.Option("--seq-len", help="Tokens per sample.", min=2)] = 1024,
    device: Annotated[
        str, typer.Option("--device", help="Where the model runs: cpu or cuda.")
    ] = "cpu",
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--out",
            "-o",
            help="When the answer needs new scales: write them into a copy of MODEL here "
            "(DIR/checkpoint, as kvscale calibrate --checkpoint does). Never touches MODEL.",
            show_default=False,
            file_okay=False,
        ),
    ] = None,
    engine: EngineOpt = None,
    platform: PlatformOpt = None,
    attention_backend: AttentionBackendOpt = None,
    gpu_arch: GpuArchOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: FormatOpt = None,
    force: ForceOpt = False,
) -> None:
    """Choose the KV-cache configuration to serve MODEL with: measured, as the engine's flags.

    Evaluates every configuration the engine can run on MODEL's own K/V over the data
    (perplexity and KL against the unquantized cache, KV bytes per token) and prints the
    cheapest one within the budget as the engine's command line.
    """
    require("torch", "kvscale plan", "calibrate")
    require("transformers", "kvscale plan", "calibrate")
    from kvscale.core.plan import PlanOptions, plan_model
    from kvscale.render.plan import plan_json, plan_renderables, plan_summary

    settings = run_settings(
        engine=engine,
        platform=platform,
        attention_backend=attention_backend,
        gpu_arch=gpu_arch,
        policy_path=policy_path,
        no_policy=no_policy,
    )
    options = PlanOptions(
        data=data,
        engine=settings.options,
        max_kl=max_kl,
        max_ppl_increase=max_ppl_increase,
        candidates=tuple(n.strip() for item in candidates for n in item.split(",") if n.strip())
        if candidates
        else None,
        samples=samples,
        seq_len=seq_len,
        device=device,
        gpu_memory=parse_size(gpu_memory) if gpu_memory is not None else None,
        out=out,
        force=force,
    )
    output = output_for(json_output, quiet, fmt.value if fmt else None)
    with output.progress() as progress:
        result = plan_model(model, options, progress)
    output.result(
        document=lambda: plan_json(result, settings.applied()),
        lines=lambda: plan_summary(result),
        renderables=lambda: plan_renderables(result),
    )
    if not result.ok:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
