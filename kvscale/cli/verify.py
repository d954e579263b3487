"""``kvscale verify``: run the FP8 cache-write kernel with the resolved scales, bit-exact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale.cli.app import command
from kvscale.cli.output import output_for
from kvscale.cli.params import (
    CHECKPOINT_HELP,
    AttentionBackendOpt,
    EngineOpt,
    FormatOpt,
    GpuArchOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    NoPolicyOpt,
    PlatformOpt,
    PolicyOpt,
    QuietOpt,
    RevisionOpt,
    SkipLayersOpt,
    StrictOpt,
)
from kvscale.cli.settings import run_settings
from kvscale.errors import ExitCode, require_extra

EXAMPLES = """
Examples:

  kvscale verify examples/llm-compressor-fp8 --gpu

  kvscale normalize ./model --out ./scales && kvscale verify ./scales --gpu --json

  kvscale verify ./scales --gpu --activations captured_kv.safetensors

  kvscale verify examples/quark-fp8 --kv-cache-dtype fp8
"""

THRESHOLDS = """
Thresholds per layer and kind: saturated <= 0.1% of values, underflow <= 1% of nonzero values,
relative RMS round-trip error <= 0.08 (e4m3) / 0.16 (e5m2), zero mismatched cache bytes, every
scale finite and positive, host float == device tensor. A checkpoint is resolved with the same
options and policy file as kvscale inspect; a scales output keeps the settings it was written
for.
"""


@command(examples=EXAMPLES, extra_help=THRESHOLDS)
def verify(
    target: Annotated[
        str,
        typer.Argument(
            help="A scales output directory (kvscale normalize or calibrate: kv_scales.json + "
            "kv_scales.safetensors) or a checkpoint: " + CHECKPOINT_HELP + ".",
            metavar="TARGET",
            show_default=False,
        ),
    ],
    gpu: Annotated[
        bool,
        typer.Option("--gpu", help="Run the Triton kernel on CUDA (exit 3 without a usable GPU)."),
    ] = False,
    activations: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--activations",
            help="safetensors file of captured K/V: <layer>.k and <layer>.v, "
            "\\[tokens, kv_heads, head_size], bf16/fp16/fp32. Layers it lacks use a synthetic "
            "sample (and are named); a file that feeds no layer is an error.",
            show_default=False,
        ),
    ] = None,
    tokens: Annotated[
        int, typer.Option("--tokens", help="Tokens per layer in the synthetic sample.")
    ] = 4096,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: FormatOpt = None,
    strict: StrictOpt = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic sample.")] = 0,
    engine: EngineOpt = None,
    kv_cache_dtype: KVCacheDtypeOpt = None,
    platform: PlatformOpt = None,
    model_dtype: ModelDtypeOpt = None,
    attention_backend: AttentionBackendOpt = None,
    kv_cache_dtype_skip_layers: SkipLayersOpt = None,
    gpu_arch: GpuArchOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    revision: RevisionOpt = None,
    engine_kernel: Annotated[
        bool,
        typer.Option(
            "--engine-kernel",
            help="With --gpu: also run the engine's own cache-write kernel (vLLM's Triton "
            "triton_reshape_and_cache_flash, from an installed vllm or $KVSCALE_VLLM_SRC) on the "
            "same K/V and report every byte it writes differently from kvscale's kernel.",
        ),
    ] = False,
    model: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--model",
            help="With --data: the runnable model (Hugging Face directory) whose K/V are "
            "captured; default TARGET itself. The scales stay TARGET's.",
            show_default=False,
        ),
    ] = None,
    data: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--data",
            help="Run the model on this text (.jsonl or text, as for calibrate) and verify on "
            "its real K/V, down to perplexity and KL with the cache in FP8.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
    samples: Annotated[
        int, typer.Option("--samples", help="With --data: at most this many samples.", min=1)
    ] = 32,
    seq_len: Annotated[
        int, typer.Option("--seq-len", help="With --data: tokens per sample.", min=2)
    ] = 1024,
    max_ppl_increase: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-ppl-increase",
            help="With --data: fail when perplexity with the FP8 cache exceeds the unquantized "
            "one by more than this fraction (0.01 = 1%).",
            min=0.0,
            show_default=False,
        ),
    ] = None,
    max_kl: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option(
            "--max-kl",
            help="With --data: fail when the mean KL divergence of the next-token "
            "distributions (FP8 cache vs unquantized) exceeds this.",
            min=0.0,
            show_default=False,
        ),
    ] = None,
    model_device: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--model-device",
            help="With --data: where the model runs (cpu, cuda, auto = accelerate over the GPUs). "
            "Default: cuda with --gpu, else cpu.",
            show_default=False,
        ),
    ] = None,
    activations_out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--activations-out",
            help="With --data: also save the captured K/V (the --activations format) to this "
            "file, so the run can be repeated without the model.",
            show_default=False,
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """Write every layer's K/V through the FP8 cache-write kernel and check it bit for bit.

    Reports per layer and kind: absmax, saturated and underflow fractions, relative RMS
    round-trip error and mismatched cache bytes against the CPU reference writer. With --strict
    a run whose kernel did not execute (no --gpu) fails.
    """
    require_extra("verify", "kvscale verify")
    from kvscale.core.verify.model_run import ModelOptions
    from kvscale.core.verify.run import VerifyOptions, verify_target
    from kvscale.render.verify import verify_json, verify_lines, verify_renderables

    model_options = ModelOptions.for_data(
        data,
        model=model,
        samples=samples,
        seq_len=seq_len,
        max_ppl_increase=max_ppl_increase,
        max_kl=max_kl,
        activations_out=activations_out,
        device=model_device,
    )
    if model_options is not None:
        require_extra("calibrate", "kvscale verify --data")
    settings = run_settings(
        engine=engine,
        kv_cache_dtype=kv_cache_dtype,
        platform=platform,
        model_dtype=model_dtype,
        attention_backend=attention_backend,
        kv_cache_dtype_skip_layers=kv_cache_dtype_skip_layers,
        gpu_arch=gpu_arch,
        policy_path=policy_path,
        no_policy=no_policy,
        strict=strict,
    )
    options = VerifyOptions(
        gpu=gpu,
        activations=activations,
        tokens=tokens,
        seed=seed,
        engine=settings.options,
        revision=revision,
        model=model_options,
        engine_kernel=engine_kernel,
        strict=settings.policy.strict,
    )
    output = output_for(json_output, quiet, fmt.value if fmt else None)
    with output.progress() as progress:
        result = verify_target(target, options, progress=progress)
    output.result(
        document=lambda: verify_json(result, applied=settings.applied()),
        lines=lambda: verify_lines(result, settings.applied()),
        renderables=lambda: verify_renderables(result, applied=settings.applied()),
    )
    if not result.ok:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
