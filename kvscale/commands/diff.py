"""``kvscale diff``: compare the resolved scales of two checkpoints (or scale files) per layer."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from kvscale._cli_base import EXIT_CODES_HELP, app, handles_errors, progress_bar
from kvscale._options import (
    Annotations,
    AnnotationsOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    NoPolicyOpt,
    Platform,
    PlatformOpt,
    PolicyOpt,
)
from kvscale.errors import ExitCode, UsageError

EXAMPLES = """
Examples:

  kvscale diff release-1.0/ release-1.1/ --max-rel-change 0.01

  kvscale diff previous/kv_scales.json ./Llama-3.1-8B-FP8 --json | jq '.failures'

  kvscale diff old-inspect.json new-checkpoint/ --all
"""

GATE_HELP = (
    "Gate (exit 1): a layer of A is missing in B; a rule gets worse (separate/per_head > "
    "partial/duplicated > default/unquantized > error); a scale that was positive and finite "
    "becomes zero, negative, NaN or inf; with --max-rel-change X, any scale of a layer changes "
    "by more than X relative to A (|b - a| / |a|; changes to or from NaN/inf count as infinite)."
)

_SIDE_HELP = (
    "a checkpoint (as for inspect), a kv_scales.json (kvscale normalize; or its output "
    "directory), or a saved `kvscale inspect --json` document."
)
SideAArg = Annotated[
    Path, typer.Argument(help="Before: " + _SIDE_HELP, metavar="A", show_default=False)
]
SideBArg = Annotated[
    Path, typer.Argument(help="After: " + _SIDE_HELP, metavar="B", show_default=False)
]
MaxRelChangeOpt = Annotated[
    Optional[float],  # noqa: UP045 - typer needs Optional at runtime on 3.10
    typer.Option(
        "--max-rel-change",
        help="Fail (exit 1) when any scale of a layer changes by more than this relative "
        "amount, e.g. 0.01 for 1%. Default: from the policy file, else no drift gate.",
        min=0.0,
        show_default=False,
    ),
]
AllOpt = Annotated[bool, typer.Option("--all", help="List every layer, not only changed ones.")]


def _given(ctx: typer.Context, name: str) -> bool:
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


@app.command(epilog=EXAMPLES.replace("\n", "\n\n") + "\n\n" + GATE_HELP + "\n\n" + EXIT_CODES_HELP)
@handles_errors
def diff(
    ctx: typer.Context,
    a: SideAArg,
    b: SideBArg,
    max_rel_change: MaxRelChangeOpt = None,
    json_output: JsonOpt = False,
    show_all: AllOpt = False,
    kv_cache_dtype: KVCacheDtypeOpt = "auto",
    platform: PlatformOpt = Platform.ocp,
    model_dtype: ModelDtypeOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    annotations: AnnotationsOpt = Annotations.auto,
) -> None:
    """Compare the resolved KV scales of A (before) and B (after), layer by layer.

    Shows relative changes per scale, layers added or lost, and rule changes.
    Use it as a gate for re-quantized releases (see the gate rules below).
    A checkpoint side uses the kv_cache_dtype and platform of a kv_scales.json on the other side,
    unless --kv-cache-dtype / --platform are given.
    """
    import math

    from kvscale.diff import diff_paths
    from kvscale.inspect import InspectOptions
    from kvscale.policy import resolve_policy_file
    from kvscale.render.annotations import annotations_enabled

    if policy_path is not None and no_policy:
        raise UsageError("--policy and --no-policy exclude each other")
    if max_rel_change is not None and not math.isfinite(max_rel_change):
        raise UsageError("--max-rel-change must be a finite number")
    file = resolve_policy_file(policy_path, discover=not no_policy)
    explicit = [name for name in ("kv_cache_dtype", "platform") if _given(ctx, name)]
    kv, plat, mdt = kv_cache_dtype, platform.value, model_dtype
    threshold = max_rel_change
    if file is not None:
        if not _given(ctx, "kv_cache_dtype") and file.kv_cache_dtype is not None:
            kv = file.kv_cache_dtype
            explicit.append("kv_cache_dtype")
        if not _given(ctx, "platform") and file.platform is not None:
            plat = file.platform
            explicit.append("platform")
        if not _given(ctx, "model_dtype") and file.model_dtype is not None:
            mdt = file.model_dtype
        if threshold is None:
            threshold = file.max_rel_change
    options = InspectOptions(kv, plat, mdt)
    with progress_bar("reading shard headers", unit="shards") as bar:
        result = diff_paths(a, b, options, threshold, explicit=explicit, progress=bar.update)

    if json_output:
        from kvscale._output import write_json
        from kvscale.render.diff import diff_json

        write_json(diff_json(result))
    else:
        from kvscale._output import stdout_console
        from kvscale.render.annotations import write_stdout_human
        from kvscale.render.diff import diff_renderables

        console = stdout_console()
        with console.capture() as capture:
            for renderable in diff_renderables(result, show_all=show_all):
                console.print(renderable)
        write_stdout_human(capture.get())
    if annotations_enabled(annotations.value):
        from kvscale.render.annotations import diff_annotations, emit

        emit(diff_annotations([(f.rule, f.layer, f.message) for f in result.failures]))
    if result.failures:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
