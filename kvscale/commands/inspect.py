"""``kvscale inspect``: show per layer what the engine will use, and why."""

from __future__ import annotations

from kvscale._cli_base import EXIT_CODES_HELP, app, handles_errors, progress_bar
from kvscale._options import (
    AllowOpt,
    CheckpointArg,
    FailOnOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    Platform,
    PlatformOpt,
    StrictOpt,
)
from kvscale.errors import ExitCode

EXAMPLES = """
Examples:

  kvscale inspect examples/llm-compressor-fp8

  kvscale inspect ./Llama-3.1-8B-FP8 --json | jq '.layers[] | {name, rule, k_scale}'

  kvscale inspect model.safetensors --kv-cache-dtype fp8 --platform fnuz

  kvscale inspect ~/.cache/huggingface/hub/models--ORG--NAME --strict
"""


@app.command(epilog=EXAMPLES.replace("\n", "\n\n") + "\n\n" + EXIT_CODES_HELP)
@handles_errors
def inspect(
    checkpoint: CheckpointArg,
    json_output: JsonOpt = False,
    kv_cache_dtype: KVCacheDtypeOpt = "auto",
    platform: PlatformOpt = Platform.ocp,
    model_dtype: ModelDtypeOpt = None,
    strict: StrictOpt = False,
    fail_on: FailOnOpt = None,
    allow: AllowOpt = None,
) -> None:
    """Find every KV-scale tensor, resolve it like vLLM 0.33, and flag problems.

    Reads only headers and scale bytes, never weights.
    """
    from kvscale.inspect import InspectOptions, inspect_checkpoint
    from kvscale.policy import Policy, parse_codes

    policy = Policy(
        strict=strict,
        fail_on=parse_codes(fail_on, "--fail-on"),
        allow=parse_codes(allow, "--allow"),
    )
    options = InspectOptions(kv_cache_dtype, platform.value, model_dtype)
    with progress_bar("reading shard headers", unit="shards") as bar:
        report = inspect_checkpoint(checkpoint, options, progress=bar.update)
    failing = policy.failing(report.problems)
    if json_output:
        from kvscale._output import write_json
        from kvscale.render.inspect import inspect_json

        write_json(inspect_json(report, failing, strict=strict))
    else:
        from kvscale._output import stdout_console
        from kvscale.render.inspect import inspect_renderables

        console = stdout_console()
        for renderable in inspect_renderables(report, failing):
            console.print(renderable)
    if failing:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
