"""``kvscale diff``: compare the resolved scales of two checkpoints (or scale files) per layer."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from kvscale.cli.app import command
from kvscale.cli.output import output_for
from kvscale.cli.params import (
    Annotations,
    AnnotationsOpt,
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
    SkipLayersOpt,
)
from kvscale.cli.settings import run_settings
from kvscale.core.diff import DEFAULT_MAX_REL_CHANGE
from kvscale.errors import ExitCode, UsageError
from kvscale.policy import PolicyFile
from kvscale.render.diff import DriftGate

EXAMPLES = """
Examples:

  kvscale diff release-1.0/ release-1.1/ --max-rel-change 0.01

  kvscale diff previous/kv_scales.json ./Llama-3.1-8B-FP8 --json | jq '.failures'

  kvscale diff old-inspect.json new-checkpoint/ --all
"""

GATE_HELP = (
    "Gate (exit 1): a layer of A is missing in B; a rule gets worse (separate/per_head > "
    "partial/duplicated > default/unquantized > error); a scale that was positive and finite "
    "becomes zero, negative, NaN or inf; a checkpoint B has an error (kvscale inspect's) that A "
    "has not; any positive finite scale of a layer changes by more than the drift bound in "
    "either direction (max(a/b, b/a) - 1: a scale 128x smaller and one 128x larger both change "
    "by 127; a change to zero, NaN or inf is value-invalid, one from them a fix). The drift "
    "bound is "
    f"--max-rel-change, else the policy file's max_rel_change, else {DEFAULT_MAX_REL_CHANGE:g} "
    "(more than 1.75x either way: two honest calibrations of a model differ by less, a scale "
    "doubled, halved or computed for the other FP8 format by more); --no-drift-gate turns it "
    "off. The summary says which bound applied."
)

_SIDE_HELP = (
    "a checkpoint (as for inspect: local, hf://ORG/NAME[@REV] or an https:// URL), a "
    "kv_scales.json (kvscale normalize; or its output directory), or a saved `kvscale inspect "
    "--json` document."
)
SideAArg = Annotated[
    str, typer.Argument(help="Before: " + _SIDE_HELP, metavar="A", show_default=False)
]
SideBArg = Annotated[
    str, typer.Argument(help="After: " + _SIDE_HELP, metavar="B", show_default=False)
]
MaxRelChangeOpt = Annotated[
    Optional[float],  # noqa: UP045 - typer needs Optional at runtime on 3.10
    typer.Option(
        "--max-rel-change",
        help="Fail (exit 1) when any scale of a layer changes by more than this relative "
        "amount, e.g. 0.01 for 1%. Default: the policy file's max_rel_change, else "
        f"{DEFAULT_MAX_REL_CHANGE:g}.",
        min=0.0,
        show_default=False,
    ),
]
NoDriftGateOpt = Annotated[
    bool,
    typer.Option(
        "--no-drift-gate",
        help="No drift gate: scales may change by any amount (the other gates still apply).",
    ),
]
AllOpt = Annotated[bool, typer.Option("--all", help="List every layer, not only changed ones.")]


@command(examples=EXAMPLES, extra_help=GATE_HELP)
def diff(
    a: SideAArg,
    b: SideBArg,
    max_rel_change: MaxRelChangeOpt = None,
    no_drift_gate: NoDriftGateOpt = False,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: FormatOpt = None,
    show_all: AllOpt = False,
    engine: EngineOpt = None,
    kv_cache_dtype: KVCacheDtypeOpt = None,
    platform: PlatformOpt = None,
    model_dtype: ModelDtypeOpt = None,
    attention_backend: AttentionBackendOpt = None,
    kv_cache_dtype_skip_layers: SkipLayersOpt = None,
    gpu_arch: GpuArchOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    annotations: AnnotationsOpt = Annotations.auto,
) -> None:
    """Compare the resolved KV scales of A (before) and B (after), layer by layer.

    Shows relative changes per scale, layers added or lost, and rule changes.
    Use it as a gate for re-quantized releases (see the gate rules below).
    A checkpoint side uses the kv_cache_dtype and platform of a kv_scales.json on the other side,
    unless --kv-cache-dtype / --platform (or the policy file) set them.
    """

    from kvscale.core.diff import diff_paths
    from kvscale.render.annotations import annotations_enabled, diff_annotations
    from kvscale.render.diff import diff_json, diff_renderables, failure_lines

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
    gate = drift_gate(max_rel_change, no_drift_gate, settings.policy_file)
    output = output_for(json_output, quiet, fmt.value if fmt else None)
    with output.progress() as progress:
        result = diff_paths(a, b, settings.options, gate.threshold, progress=progress)
    output.result(
        document=lambda: diff_json(result, settings.applied(), gate),
        lines=lambda: failure_lines(result, gate, settings.policy_path),
        renderables=lambda: diff_renderables(
            result, show_all=show_all, gate=gate, policy_file=settings.policy_path
        ),
    )
    if annotations_enabled(annotations.value):
        output.annotations(
            diff_annotations([(f.rule, f.layer, f.message) for f in result.failures])
        )
    if result.failures:
        raise SystemExit(int(ExitCode.CHECK_FAILED))


def drift_gate(
    max_rel_change: float | None, no_drift_gate: bool, policy_file: PolicyFile | None
) -> DriftGate:
    """The drift bound that applies, and where it came from: the command line, else the policy
    file, else ``DEFAULT_MAX_REL_CHANGE``."""
    if no_drift_gate and max_rel_change is not None:
        raise UsageError("--max-rel-change and --no-drift-gate exclude each other")
    if no_drift_gate:
        return DriftGate(None, "command-line")
    if max_rel_change is not None:
        return DriftGate(max_rel_change, "command-line")
    if policy_file is not None and policy_file.no_drift_gate:
        return DriftGate(None, "policy-file", str(policy_file.path))
    if policy_file is not None and policy_file.max_rel_change is not None:
        return DriftGate(policy_file.max_rel_change, "policy-file", str(policy_file.path))
    return DriftGate(DEFAULT_MAX_REL_CHANGE, "default")
