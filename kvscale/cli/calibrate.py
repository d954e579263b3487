"""``kvscale calibrate``: KV-cache scales from the model's own activations."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale.cli.app import command
from kvscale.cli.output import output_for
from kvscale.cli.params import (
    EngineOpt,
    ForceOpt,
    FormatOpt,
    GpuArchOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    NoPolicyOpt,
    Nvfp4ConventionOpt,
    OutDirOpt,
    PlatformOpt,
    PolicyOpt,
    QuietOpt,
)
from kvscale.cli.settings import run_settings
from kvscale.errors import ExitCode, UsageError, require

EXAMPLES = """
Examples:

  kvscale calibrate ./Llama-3.1-8B-Instruct --data calib.jsonl --out ./scales

  kvscale calibrate ./model --data examples/calibration/kvscale-calibration.txt --out ./kv \\
      --samples 64 --seq-len 1024 --checkpoint && kvscale inspect ./kv/checkpoint

  kvscale calibrate ./bf16-model --data calib.jsonl --out ./kv --checkpoint \\
      --target ./fp8-release --strategy head --holdout 0.1

  kvscale calibrate ./model --data calib.jsonl --out ./nvfp4 --checkpoint \
      --kv-cache-dtype nvfp4 --engine sglang --gpu-arch sm100
"""

SCALE_HELP = (
    "Scale per layer and kind: max(amax x headroom / 448, min-scale) in float32, amax the "
    "largest |K| (|V|) of every calibration token as the engine caches it (post-RoPE, before "
    "GQA repetition). Large models spread over the GPUs of one host with --device auto "
    "(accelerate's device_map). Nothing is written when a layer's K/V hold NaN/inf (exit 1). "
    "--kv-cache-dtype nvfp4 writes NVFP4 global scales instead: amax / 448 or amax / 2688, "
    "the convention the engine turns into amax / 448 on --gpu-arch (--nvfp4-convention "
    "chooses)."
)


class DeviceChoice(str, Enum):
    auto = "auto"
    cpu = "cpu"
    cuda = "cuda"


class DtypeChoice(str, Enum):
    auto = "auto"
    bfloat16 = "bfloat16"
    float16 = "float16"
    float32 = "float32"


class StrategyChoice(str, Enum):
    tensor = "tensor"
    head = "head"


def parse_max_memory(text: str) -> dict[int | str, str]:
    """``0=70GiB,1=70GiB,cpu=200GiB`` -> accelerate's ``{0: "70GiB", 1: "70GiB", "cpu": ...}``."""
    out: dict[int | str, str] = {}
    for part in text.split(","):
        device, sep, amount = part.strip().partition("=")
        device, amount = device.strip(), amount.strip()
        if not sep or not device or not amount:
            raise UsageError(
                f"--max-memory {text!r}: expected DEVICE=AMOUNT[,...]",
                hint="e.g. 0=70GiB,1=70GiB,cpu=200GiB (a GPU index, cpu or disk)",
            )
        key: int | str = int(device) if device.isdecimal() else device
        if isinstance(key, str) and key not in ("cpu", "disk"):
            raise UsageError(f"--max-memory: unknown device {device!r} (a GPU index, cpu or disk)")
        out[key] = amount
    return out


@command(examples=EXAMPLES, extra_help=SCALE_HELP)
def calibrate(
    model: Annotated[
        Path,
        typer.Argument(
            help="A local Hugging Face model directory (config.json + safetensors weights; a "
            "tokenizer when the data is text), loaded with transformers.",
            show_default=False,
        ),
    ],
    data: Annotated[
        Path,
        typer.Option(
            "--data",
            help='Calibration data: .jsonl with {"text": ...} or {"input_ids": [...]} per line, '
            "or a text file cut into --seq-len token samples.",
            show_default=False,
            dir_okay=False,
        ),
    ],
    out: OutDirOpt,
    samples: Annotated[
        int, typer.Option("--samples", help="At most this many samples (file order).", min=1)
    ] = 512,
    seq_len: Annotated[
        int, typer.Option("--seq-len", help="Tokens per sample (longer ones are cut).", min=1)
    ] = 2048,
    batch_size: Annotated[
        int,
        typer.Option("--batch-size", help="Samples per forward pass (padding is masked).", min=1),
    ] = 1,
    device: Annotated[
        DeviceChoice,
        typer.Option(
            "--device",
            help="cpu, cuda (one GPU), or auto (every GPU of this host through accelerate's "
            'device_map="auto"; the CPU without CUDA).',
            case_sensitive=False,
        ),
    ] = DeviceChoice.auto,
    max_memory: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--max-memory",
            help="With --device auto: accelerate's max_memory per device, e.g. "
            "0=70GiB,1=70GiB,cpu=200GiB; what fits none is offloaded to disk (a temporary "
            "folder).",
            show_default=False,
        ),
    ] = None,
    dtype: Annotated[
        DtypeChoice,
        typer.Option(
            "--dtype",
            help="The dtype the model runs in (auto: config.json's; a float32 model stays "
            "float32).",
            case_sensitive=False,
        ),
    ] = DtypeChoice.auto,
    strategy: Annotated[
        StrategyChoice,
        typer.Option(
            "--strategy",
            help="tensor: one scale per layer and kind; head: one per KV head "
            "(compressed-tensors attn_head).",
            case_sensitive=False,
        ),
    ] = StrategyChoice.tensor,
    headroom: Annotated[
        float,
        typer.Option("--headroom", help="Multiply amax by this before dividing by 448.", min=0.0),
    ] = 1.0,
    min_scale: Annotated[
        float, typer.Option("--min-scale", help="Lower bound of every scale.", min=0.0)
    ] = 0.0,
    holdout: Annotated[
        float,
        typer.Option(
            "--holdout",
            help="Keep this fraction of the samples out of the statistic and report, per layer, "
            "the fraction of their values that would saturate (to choose --headroom).",
            min=0.0,
            max=0.95,
        ),
    ] = 0.0,
    checkpoint: Annotated[
        bool,
        typer.Option(
            "--checkpoint",
            help="Also write DIR/checkpoint/: the target with the scales and a "
            "quantization_config that makes the engine load them (other tensors byte-identical).",
        ),
    ] = False,
    target: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional at runtime on 3.10
        typer.Option(
            "--target",
            help="The checkpoint --checkpoint writes the scales into (default: MODEL), e.g. the "
            "FP8 release of the model calibrated in bf16.",
            show_default=False,
        ),
    ] = None,
    engine: EngineOpt = None,
    kv_cache_dtype: KVCacheDtypeOpt = None,
    platform: PlatformOpt = None,
    model_dtype: ModelDtypeOpt = None,
    gpu_arch: GpuArchOpt = None,
    nvfp4_convention: Nvfp4ConventionOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: FormatOpt = None,
    force: ForceOpt = False,
) -> None:
    """Compute FP8 KV-cache scales (or, with --kv-cache-dtype nvfp4, NVFP4 global scales) from
    the model's own activations and write them.

    Runs MODEL over the calibration data, observes K and V where the engine caches them, and
    writes kv_scales.json (with the statistic, per layer) and kv_scales.safetensors; with
    --checkpoint also a checkpoint the engine loads them from. Shows what the engine will hold.
    """
    require("torch", "kvscale calibrate", "calibrate")
    require("transformers", "kvscale calibrate", "calibrate")
    from kvscale.core.calibrate import (
        CalibrateOptions,
        plan_calibration,
        write_calibration,
    )
    from kvscale.render.calibrate import calibrate_json, calibrate_renderables, problem_lines

    settings = run_settings(
        engine=engine,
        kv_cache_dtype=kv_cache_dtype,
        platform=platform,
        model_dtype=model_dtype,
        gpu_arch=gpu_arch,
        policy_path=policy_path,
        no_policy=no_policy,
    )
    options = CalibrateOptions(
        samples=samples,
        seq_len=seq_len,
        batch_size=batch_size,
        device=device.value,
        dtype=dtype.value,
        strategy=strategy.value,
        headroom=headroom,
        min_scale=min_scale,
        holdout=holdout,
        checkpoint=checkpoint,
        target=target,
        engine=settings.options,
        force=force,
        max_memory=parse_max_memory(max_memory) if max_memory is not None else None,
        nvfp4_convention=nvfp4_convention,
    )
    output = output_for(json_output, quiet, fmt.value if fmt else None)
    with output.progress() as progress:
        plan = plan_calibration(model, data, out, options, progress)
        result = write_calibration(plan, progress) if plan.ok else None
    for line in problem_lines(plan.warnings):
        output.warning(line)
    for line in problem_lines(plan.blocking):
        output.error(line)
    if result is None:
        output.error(f"nothing written: {len(plan.blocking)} problem(s) stop calibrate")
    output.result(
        document=lambda: calibrate_json(plan, result, settings.applied()),
        renderables=lambda: calibrate_renderables(plan, result),
    )
    if result is None:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
