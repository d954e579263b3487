"""``kvscale inspect``: show per layer what the engine will use, and why.

CI additions: policy files (``--policy``, discovery, ``--no-policy``), ``--junit FILE``,
GitHub Actions annotations (``--annotations``), and ``--files`` for the pre-commit hook.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvscale._cli_base import EXIT_CODES_HELP, app, handles_errors, progress_bar
from kvscale._options import (
    AllowOpt,
    Annotations,
    AnnotationsOpt,
    CheckpointArg,
    FailOnOpt,
    JsonOpt,
    JunitOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    NoPolicyOpt,
    Platform,
    PlatformOpt,
    PolicyOpt,
    StrictOpt,
)
from kvscale.errors import ExitCode, KVScaleError, UsageError

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

    from kvscale.inspect import InspectOptions, ScaleReport
    from kvscale.policy import Policy, PolicyFile

EXAMPLES = """
Examples:

  kvscale inspect examples/llm-compressor-fp8

  kvscale inspect ./Llama-3.1-8B-FP8 --json | jq '.layers[] | {name, rule, k_scale}'

  kvscale inspect model.safetensors --kv-cache-dtype fp8 --platform fnuz

  kvscale inspect ~/.cache/huggingface/hub/models--ORG--NAME --strict

  kvscale inspect ./ckpt --strict --allow precision-lost --junit reports/kvscale.xml

  kvscale inspect --files --strict a/model-00001-of-00002.safetensors b/config.json
"""

FilesOpt = Annotated[
    bool,
    typer.Option(
        "--files",
        help="Treat CHECKPOINT and any further arguments as files of checkpoints (shards, "
        "config.json, index), as pre-commit passes them, and inspect each checkpoint "
        "directory once (problems and a summary per checkpoint; no --json).",
    ),
]

CHECKPOINT_FILE_SUFFIXES = (".safetensors", ".safetensors.index.json")
CHECKPOINT_FILE_NAMES = ("config.json", "hf_quant_config.json")


def _given(ctx: typer.Context, name: str) -> bool:
    """Whether an option came from the command line (not its default)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name != "DEFAULT"


def resolve_settings(
    ctx: typer.Context,
    *,
    policy_path: Path | None,
    no_policy: bool,
    strict: bool,
    fail_on: Sequence[str] | None,
    allow: Sequence[str] | None,
    kv_cache_dtype: str,
    platform: str,
    model_dtype: str | None,
) -> tuple[Policy, InspectOptions, PolicyFile | None]:
    """Command-line options on top of the policy file (if any): the effective policy and
    inspect options, plus the file that was used."""
    from kvscale.inspect import InspectOptions
    from kvscale.policy import Policy, parse_codes, resolve_policy_file

    if policy_path is not None and no_policy:
        raise UsageError("--policy and --no-policy exclude each other")
    cli = Policy(
        strict=strict,
        fail_on=parse_codes(fail_on, "--fail-on"),
        allow=parse_codes(allow, "--allow"),
    )
    both = sorted(cli.fail_on & cli.allow)
    if both:
        raise UsageError(f"{', '.join(both)} given to both --fail-on and --allow")
    file = resolve_policy_file(policy_path, discover=not no_policy)
    if file is None:
        return cli, InspectOptions(kv_cache_dtype, platform, model_dtype), None
    options = InspectOptions(
        kv_cache_dtype
        if _given(ctx, "kv_cache_dtype") or file.kv_cache_dtype is None
        else file.kv_cache_dtype,
        platform if _given(ctx, "platform") or file.platform is None else file.platform,
        model_dtype if _given(ctx, "model_dtype") or file.model_dtype is None else file.model_dtype,
    )
    return file.policy.merged(cli), options, file


def checkpoints_of_files(paths: Sequence[Path]) -> list[Path]:
    """The checkpoint directories that given files belong to, each once, in sorted order.

    A directory stands for itself. A shard, index, config.json or hf_quant_config.json stands
    for its directory when that directory holds a ``.safetensors`` file (so an unrelated
    config.json is ignored). Other files are ignored.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.add(path)
            continue
        name = path.name
        if not (name.endswith(CHECKPOINT_FILE_SUFFIXES) or name in CHECKPOINT_FILE_NAMES):
            continue
        directory = path.parent
        try:
            with os.scandir(directory) as entries:
                holds_shards = any(
                    entry.name.endswith(".safetensors") and entry.is_file() for entry in entries
                )
        except OSError:
            holds_shards = False
        if holds_shards:
            found.add(directory)
    return sorted(found, key=lambda p: p.as_posix())


def _timestamp() -> str:
    # The Ant JUnit schema's timestamp has no time zone; UTC avoids ambiguity.
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")  # noqa: UP017 (3.10)


def _print_human(renderables: Sequence[Any]) -> None:
    """Render through rich, then write neutralized text (see render.annotations.neutralize)."""
    from kvscale._output import stdout_console
    from kvscale.render.annotations import write_stdout_human

    console = stdout_console()
    with console.capture() as capture:
        for renderable in renderables:
            console.print(renderable)
    write_stdout_human(capture.get())


@app.command(
    epilog=EXAMPLES.replace("\n", "\n\n") + "\n\n" + EXIT_CODES_HELP,
    context_settings={"allow_extra_args": True},  # further paths, for --files only
)
@handles_errors
def inspect(
    ctx: typer.Context,
    checkpoint: CheckpointArg,
    json_output: JsonOpt = False,
    kv_cache_dtype: KVCacheDtypeOpt = "auto",
    platform: PlatformOpt = Platform.ocp,
    model_dtype: ModelDtypeOpt = None,
    strict: StrictOpt = False,
    fail_on: FailOnOpt = None,
    allow: AllowOpt = None,
    policy_path: PolicyOpt = None,
    no_policy: NoPolicyOpt = False,
    junit: JunitOpt = None,
    annotations: AnnotationsOpt = Annotations.auto,
    files: FilesOpt = False,
) -> None:
    """Find every KV-scale tensor, resolve it like vLLM 0.33, and flag problems.

    Reads only headers and scale bytes, never weights. A policy file (kvscale.toml, or
    \\[tool.kvscale] in pyproject.toml) sets strict / fail_on / allow and option defaults.
    """
    from kvscale.render.annotations import annotations_enabled

    extra = [Path(arg) for arg in ctx.args]
    if extra and not files:
        raise UsageError(
            f"inspect takes one CHECKPOINT, got {1 + len(extra)} paths",
            hint="pass --files to inspect the checkpoints of several files",
        )
    if files and json_output:
        raise UsageError("--files and --json exclude each other (--json prints one document)")
    policy, options, policy_file = resolve_settings(
        ctx,
        policy_path=policy_path,
        no_policy=no_policy,
        strict=strict,
        fail_on=fail_on,
        allow=allow,
        kv_cache_dtype=kv_cache_dtype,
        platform=platform.value,
        model_dtype=model_dtype,
    )
    annotate = annotations_enabled(annotations.value)
    policy_name = str(policy_file.path) if policy_file else None
    if files:
        code = _inspect_files([checkpoint, *extra], options, policy, junit, annotate, policy_name)
        if code:
            raise SystemExit(code)
        return
    _inspect_one(checkpoint, options, policy, json_output, junit, annotate, policy_name)


def _run_inspect(
    checkpoint: Path, options: InspectOptions
) -> tuple[ScaleReport | None, KVScaleError | None, float]:
    from kvscale.inspect import inspect_checkpoint

    start = time.monotonic()
    try:
        with progress_bar("reading shard headers", unit="shards") as bar:
            report = inspect_checkpoint(checkpoint, options, progress=bar.update)
    except KVScaleError as exc:
        return None, exc, time.monotonic() - start
    return report, None, time.monotonic() - start


def _error_suite(checkpoint: Path, exc: KVScaleError, duration: float) -> Element:
    from kvscale.render.junit import junit_error_suite

    return junit_error_suite(
        str(checkpoint),
        exc.one_line(),
        type(exc).__name__,
        duration=duration,
        timestamp=_timestamp(),
    )


def _inspect_one(
    checkpoint: Path,
    options: InspectOptions,
    policy: Policy,
    json_output: bool,
    junit: Path | None,
    annotate: bool,
    policy_name: str | None,
) -> None:
    report, exc, duration = _run_inspect(checkpoint, options)
    if exc is not None:
        if junit is not None:
            from kvscale.render.junit import write_junit

            write_junit(junit, [_error_suite(checkpoint, exc, duration)])
        if annotate:
            from kvscale.render.annotations import command_line, emit

            emit([command_line("error", exc.one_line(), title="kvscale: cannot read checkpoint")])
        raise exc
    assert report is not None
    failing = policy.failing(report.problems)
    if json_output:
        from kvscale._output import write_json
        from kvscale.render.inspect import inspect_json

        write_json(inspect_json(report, failing, strict=policy.strict))
    else:
        from kvscale.render.inspect import inspect_renderables

        _print_human(inspect_renderables(report, failing))
    if annotate:
        from kvscale.render.annotations import emit, inspect_annotations

        emit(inspect_annotations(report, policy))
    if junit is not None:
        from kvscale.render.junit import junit_suite, write_junit

        suite = junit_suite(
            report, policy, duration=duration, timestamp=_timestamp(), policy_file=policy_name
        )
        write_junit(junit, [suite])
    if failing:
        raise SystemExit(int(ExitCode.CHECK_FAILED))


def _inspect_files(
    paths: Sequence[Path],
    options: InspectOptions,
    policy: Policy,
    junit: Path | None,
    annotate: bool,
    policy_name: str | None,
) -> int:
    """Inspect the checkpoint of every given file once; the exit code is the worst one."""
    from rich.text import Text

    from kvscale._output import error_line, safe_text
    from kvscale.render.annotations import command_line, emit, inspect_annotations
    from kvscale.render.inspect import inspect_renderables
    from kvscale.render.junit import junit_suite, write_junit

    checkpoints = checkpoints_of_files(paths)
    suites: list[Element] = []
    worst = int(ExitCode.OK)
    for checkpoint in checkpoints:
        report, exc, duration = _run_inspect(checkpoint, options)
        if exc is not None:
            error_line(exc.one_line())
            if annotate:
                emit(
                    [command_line("error", exc.one_line(), title="kvscale: cannot read checkpoint")]
                )
            suites.append(_error_suite(checkpoint, exc, duration))
            worst = max(worst, int(exc.exit_code))
            continue
        assert report is not None
        failing = policy.failing(report.problems)
        header = Text("kvscale inspect ")
        header.append_text(safe_text(checkpoint, "bold"))
        # Without the per-layer table: a hook's output should be the problems and the verdict.
        _print_human([header, *inspect_renderables(report, failing)[1:]])
        if annotate:
            emit(inspect_annotations(report, policy))
        suites.append(
            junit_suite(
                report, policy, duration=duration, timestamp=_timestamp(), policy_file=policy_name
            )
        )
        if failing:
            worst = max(worst, int(ExitCode.CHECK_FAILED))
    if not checkpoints:
        from kvscale._output import warning_line

        warning_line("none of the given files belongs to a safetensors checkpoint")
    if junit is not None:
        write_junit(junit, suites)
    return worst
