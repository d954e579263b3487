"""``kvscale verify``: run the FP8 cache-write kernel with the resolved scales, bit-exact."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale._cli_base import EXIT_CODES_HELP, app, handles_errors, progress_bar
from kvscale._options import JsonOpt, StrictOpt
from kvscale.errors import ExitCode

EXAMPLES = """
Examples:

  kvscale verify examples/llm-compressor-fp8 --gpu

  kvscale normalize ./model --out ./scales && kvscale verify ./scales --gpu --json

  kvscale verify ./scales --gpu --activations captured_kv.safetensors

Thresholds per layer and kind: saturated <= 0.1% of values, underflow <= 1% of nonzero values,
relative RMS round-trip error <= 0.08 (e4m3) / 0.16 (e5m2), zero mismatched cache bytes, every
scale finite and positive, host float == device tensor.
"""


@app.command(epilog=EXAMPLES.replace("\n", "\n\n") + "\n\n" + EXIT_CODES_HELP)
@handles_errors
def verify(
    target: Annotated[
        Path,
        typer.Argument(
            help="A kvscale normalize output directory (kv_scales.json + kv_scales.safetensors) "
            "or a checkpoint.",
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
            "\\[tokens, kv_heads, head_size], bf16/fp16/fp32. Other layers use a synthetic sample.",
            show_default=False,
        ),
    ] = None,
    tokens: Annotated[
        int, typer.Option("--tokens", help="Tokens per layer in the synthetic sample.")
    ] = 4096,
    json_output: JsonOpt = False,
    strict: StrictOpt = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic sample.")] = 0,
    kv_cache_dtype: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--kv-cache-dtype",
            help="Write with this fp8 dtype (fp8, fp8_e4m3, fp8_e5m2) instead of the target's.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write every layer's K/V through the FP8 cache-write kernel and check it bit for bit.

    Reports per layer and kind: absmax, saturated and underflow fractions, relative RMS
    round-trip error and mismatched cache bytes against the CPU reference writer.
    """
    from kvscale.verify import VerifyOptions, verify_target

    options = VerifyOptions(
        gpu=gpu, activations=activations, tokens=tokens, seed=seed, kv_cache_dtype=kv_cache_dtype
    )
    with progress_bar("writing layers", unit="layers") as bar:
        result = verify_target(target, options, progress=bar.update)
    # --strict: a run whose kernel did not execute does not count as verified.
    ok = result.ok and not (strict and result.kernel is None)
    if json_output:
        from kvscale._output import write_json
        from kvscale.render.verify import verify_json

        write_json(verify_json(result, ok=ok))
    else:
        from kvscale._output import stdout_console
        from kvscale.render.verify import verify_renderables

        console = stdout_console()
        for renderable in verify_renderables(result):
            console.print(renderable)
    if not ok:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
