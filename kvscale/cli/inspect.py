"""``kvscale inspect``: show per layer what the engine will hold, and why."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kvscale.cli.app import command
from kvscale.cli.output import Output, output_for
from kvscale.cli.params import (
    CHECKPOINT_HELP,
    AllowOpt,
    Annotations,
    AnnotationsOpt,
    AttentionBackendOpt,
    EngineOpt,
    FailOnOpt,
    FormatOpt,
    GpuArchOpt,
    JsonOpt,
    JunitOpt,
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
from kvscale.cli.settings import RunSettings, run_settings
from kvscale.errors import ExitCode, KVScaleError
from kvscale.io.inputs import checkpoints_of_files, is_remote

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from kvscale.core.inspect import ScaleReport

EXAMPLES = """
Examples:

  kvscale inspect examples/llm-compressor-fp8

  kvscale inspect ./Llama-3.1-8B-FP8 --json | jq '.layers[] | {name, rule, k_scale}'

  kvscale inspect model.safetensors --kv-cache-dtype fp8 --platform fnuz

  kvscale inspect ./model --engine sglang

  kvscale inspect ~/.cache/huggingface/hub/models--ORG--NAME --strict

  kvscale inspect ./ckpt --strict --allow scale-equals-default --junit reports/kvscale.xml

  kvscale inspect --files --strict a/model-00001-of-00002.safetensors b/config.json
"""

CheckpointsArg = Annotated[
    list[str],
    typer.Argument(
        help="One or more checkpoints: " + CHECKPOINT_HELP + ".",
        metavar="CHECKPOINT",
        show_default=False,
    ),
]
FilesOpt = Annotated[
    bool,
    typer.Option(
        "--files",
        help="Treat the arguments as files of checkpoints (shards, config.json, index), as "
        "pre-commit passes them, and inspect each checkpoint directory once (problems and a "
        "summary per checkpoint).",
    ),
]


def _timestamp() -> str:
    # The Ant JUnit schema's timestamp has no time zone; UTC avoids ambiguity.
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")  # noqa: UP017 (3.10)


@command(examples=EXAMPLES)
def inspect(
    checkpoints: CheckpointsArg,
    json_output: JsonOpt = False,
    quiet: QuietOpt = False,
    fmt: FormatOpt = None,
    engine: EngineOpt = None,
    kv_cache_dtype: KVCacheDtypeOpt = None,
    platform: PlatformOpt = None,
    model_dtype: ModelDtypeOpt = None,
    attention_backend: AttentionBackendOpt = None,
    kv_cache_dtype_skip_layers: SkipLayersOpt = None,
    gpu_arch: GpuArchOpt = None,
    strict: StrictOpt = False,
    fail_on: FailOnOpt = None,
    allow: AllowOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    junit: JunitOpt = None,
    annotations: AnnotationsOpt = Annotations.auto,
    files: FilesOpt = False,
    revision: RevisionOpt = None,
) -> None:
    """Find every KV-scale tensor, resolve it like the engine, and flag problems.

    Reads only headers and scale bytes, never weights. A policy file (kvscale.toml, or
    \\[tool.kvscale] in pyproject.toml) sets strict / fail_on / allow and option defaults.
    """
    from kvscale.render.annotations import annotations_enabled

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
        fail_on=fail_on,
        allow=allow,
    )
    output = output_for(json_output, quiet, fmt.value if fmt else None)
    targets: list[str | Path] = (
        list(checkpoints_of_files([Path(p) for p in checkpoints])) if files else list(checkpoints)
    )
    if files and not targets:
        output.warning("none of the given files belongs to a safetensors checkpoint")
    annotate = annotations_enabled(annotations.value)
    # One checkpoint without --files: an unreadable input is the command's error (exit 2, one
    # line). Several: each is reported and the run goes on to the next.
    single = len(targets) == 1 and not files
    runs = [_run(target, settings, output, revision) for target in targets]
    if junit is not None:
        # Before anything is printed: a report refused after the output would look like a run.
        from kvscale.io.staging import check_not_input

        inputs = [Path(str(run.target)) for run in runs if not is_remote(str(run.target))]
        for run in runs:
            if run.report is not None:
                inputs.extend(Path(p) for p in run.report.input_paths)
        check_not_input(junit, inputs, "--junit")
    _report(runs, settings, output, junit=junit, annotate=annotate, table=not files, single=single)
    if single and runs[0].error is not None:
        raise runs[0].error
    worst = max((run.exit_code for run in runs), default=int(ExitCode.OK))
    if worst:
        raise SystemExit(worst)


class _Run:
    def __init__(
        self,
        target: str | Path,
        settings: RunSettings,
        report: ScaleReport | None,
        error: KVScaleError | None,
        duration: float,
    ) -> None:
        self.target = target
        self.report = report
        self.error = error
        self.duration = duration
        self.failing = settings.policy.failing(report.problems) if report is not None else []

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return int(self.error.exit_code)
        return int(ExitCode.CHECK_FAILED) if self.failing else int(ExitCode.OK)


def _run(
    target: str | Path, settings: RunSettings, output: Output, revision: str | None = None
) -> _Run:
    from kvscale.core.inspect import inspect_checkpoint

    start = time.monotonic()
    with output.progress() as progress:
        try:
            report = inspect_checkpoint(
                target, settings.options, progress=progress, revision=revision
            )
        except KVScaleError as exc:
            return _Run(target, settings, None, exc, time.monotonic() - start)
    return _Run(target, settings, report, None, time.monotonic() - start)


def _report(
    runs: Sequence[_Run],
    settings: RunSettings,
    output: Output,
    *,
    junit: Path | None,
    annotate: bool,
    table: bool,
    single: bool,
) -> None:
    from kvscale.render import inspect as render
    from kvscale.render._common import error_json

    suites: list[Element] = []
    documents: list[dict[str, object]] = []
    for run in runs:
        if run.error is not None:
            if not single:  # a single run's error is the command's error, printed once
                output.error(run.error.one_line())
                if output.mode == "json":  # the list holds every input, each one accounted for
                    documents.append(
                        error_json(
                            type(run.error).__name__,
                            run.error.one_line(),
                            run.exit_code,
                            str(run.target),
                        )
                    )
            if annotate:
                from kvscale.render.annotations import command_line

                output.annotations(
                    [
                        command_line(
                            "error", run.error.one_line(), title="kvscale: cannot read checkpoint"
                        )
                    ]
                )
            if junit is not None:
                suites.append(_error_suite(run))
            continue
        report = run.report
        assert report is not None
        if output.mode == "json":
            documents.append(
                render.inspect_json(report, run.failing, settings.policy, settings.applied())
            )
        elif output.mode == "quiet":
            # Several checkpoints: each line names its own.
            named = None if single else report.checkpoint
            output.lines(render.problem_lines(run.failing, named))
        else:
            output.render(
                render.inspect_renderables(
                    report, run.failing, table=table, policy_file=settings.policy_path
                )
            )
        if annotate:
            from kvscale.render.annotations import inspect_annotations

            output.annotations(inspect_annotations(report, settings.policy))
        if junit is not None:
            from kvscale.render.junit import junit_suite

            suites.append(
                junit_suite(
                    report,
                    settings.policy,
                    duration=run.duration,
                    timestamp=_timestamp(),
                    policy_file=settings.policy_path,
                )
            )
    if output.mode == "json" and not (single and runs[0].error is not None):
        output.json(documents[0] if len(runs) == 1 else documents)
    if output.mode == "human" and len(runs) > 1:
        output.render([render.total_line(runs_summary(runs))])
    if junit is not None:
        from kvscale.io.staging import write_file_atomic
        from kvscale.render.junit import junit_document

        write_file_atomic(junit, junit_document(suites), "report")


def runs_summary(runs: Sequence[_Run]) -> dict[str, int]:
    return {
        "checkpoints": len(runs),
        "failed": sum(1 for run in runs if run.report is not None and run.failing),
        "unreadable": sum(1 for run in runs if run.error is not None),
        "passed": sum(1 for run in runs if run.report is not None and not run.failing),
    }


def _error_suite(run: _Run) -> Element:
    from kvscale.render.junit import junit_error_suite

    assert run.error is not None
    return junit_error_suite(
        str(run.target),
        run.error.one_line(),
        type(run.error).__name__,
        duration=run.duration,
        timestamp=_timestamp(),
    )
