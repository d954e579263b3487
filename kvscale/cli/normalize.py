"""``kvscale normalize``: write the engine's scales explicitly (and a normalized checkpoint)."""

from __future__ import annotations

from kvscale.cli.app import command
from kvscale.cli.output import output_for
from kvscale.cli.params import (
    AttentionBackendOpt,
    CheckpointArg,
    CheckpointCopyOpt,
    DigestsOpt,
    EngineOpt,
    ForceOpt,
    GpuArchOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    NoPolicyOpt,
    NormalizeFormatOpt,
    Nvfp4ConventionFromOpt,
    Nvfp4ConventionOpt,
    OutDirOpt,
    PlatformOpt,
    PolicyOpt,
    QuietOpt,
    RevisionOpt,
    SkipLayersOpt,
)
from kvscale.cli.settings import run_settings
from kvscale.errors import ExitCode

EXAMPLES = """
Examples:

  kvscale normalize ./Llama-3.1-8B-FP8 --out ./llama-scales

  kvscale normalize ./Llama-3.1-8B-FP8 --out ./llama-normalized --checkpoint --json

  kvscale normalize ./model --out ./rocm --checkpoint --platform fnuz

  kvscale normalize ./model --out ./for-sglang --checkpoint --engine sglang

  kvscale normalize ~/.cache/huggingface/hub/models--ORG--NAME --out ./out --force

  kvscale normalize ./nvfp4-model --out ./for-b200 --checkpoint --engine sglang \
      --kv-cache-dtype nvfp4 --gpu-arch sm100 --nvfp4-convention engine
"""


@command(examples=EXAMPLES)
def normalize(
    checkpoint: CheckpointArg,
    out: OutDirOpt,
    checkpoint_copy: CheckpointCopyOpt = False,
    engine: EngineOpt = None,
    kv_cache_dtype: KVCacheDtypeOpt = None,
    platform: PlatformOpt = None,
    model_dtype: ModelDtypeOpt = None,
    attention_backend: AttentionBackendOpt = None,
    kv_cache_dtype_skip_layers: SkipLayersOpt = None,
    gpu_arch: GpuArchOpt = None,
    nvfp4_convention: Nvfp4ConventionOpt = None,
    nvfp4_convention_from: Nvfp4ConventionFromOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: NormalizeFormatOpt = None,
    force: ForceOpt = False,
    digests: DigestsOpt = False,
    revision: RevisionOpt = None,
) -> None:
    """Write the scales the engine uses, explicitly: kv_scales.safetensors (device tensors) and
    kv_scales.json (host values, rule, source tensors); with --checkpoint also a normalized copy
    of the checkpoint.

    Everything is validated before anything is written; a layer the engine refuses, or a value
    that is not a positive finite number, stops the run (exit 1) unless --force.
    """
    from kvscale.core.normalize import NormalizeOptions, plan_normalize, write_plan
    from kvscale.io.staging import WriteOptions
    from kvscale.render.normalize import normalize_json, normalize_renderables, problem_lines

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
    )
    sglang_json = fmt is not None and fmt.value == "sglang-json"
    options = NormalizeOptions(
        engine=settings.options,
        checkpoint=checkpoint_copy,
        force=force,
        write=WriteOptions(digests=digests),
        revision=revision,
        sglang_json=sglang_json,
        nvfp4_convention=nvfp4_convention,
        nvfp4_convention_from=nvfp4_convention_from,
    )
    output = output_for(json_output, quiet, None if sglang_json or fmt is None else fmt.value)
    result = None
    with output.progress() as progress:
        plan = plan_normalize(checkpoint, out, options, progress)
        if plan.ok:
            result = write_plan(plan, progress)
    for line in problem_lines(plan.warnings):
        output.warning(line)
    for line in problem_lines(plan.blocking):
        output.error(line)
    if result is None:
        output.error(
            f"nothing written: {len(plan.blocking)} problem(s) normalization cannot fix "
            "(pass --force to leave those layers as they are)"
        )
    output.result(
        document=lambda: normalize_json(plan, result, settings.applied()),
        renderables=lambda: normalize_renderables(plan, result),
    )
    if result is None:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
