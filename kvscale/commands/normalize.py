"""``kvscale normalize``: write the engine's scales explicitly (and a normalized checkpoint)."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kvscale._cli_base import EXIT_CODES_HELP, app, handles_errors
from kvscale._options import (
    CheckpointArg,
    CheckpointCopyOpt,
    DigestsOpt,
    ForceOpt,
    JsonOpt,
    KVCacheDtypeOpt,
    ModelDtypeOpt,
    OutDirOpt,
    Platform,
    PlatformOpt,
)
from kvscale.errors import ExitCode

EXAMPLES = """
Examples:

  kvscale normalize ./Llama-3.1-8B-FP8 --out ./llama-scales

  kvscale normalize ./Llama-3.1-8B-FP8 --out ./llama-normalized --checkpoint --json

  kvscale normalize ./model --out ./rocm --checkpoint --platform fnuz

  kvscale normalize ~/.cache/huggingface/hub/models--ORG--NAME --out ./out --force
"""


class ByteProgress:
    """A rich progress bar on stderr (bytes, speed, shards) shown only for runs that last."""

    def __init__(self, *, delay: float = 0.5, enabled: bool = True) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.delay = delay
        self._start = time.monotonic()
        self._progress: Any = None
        self._task: Any = None
        self._lock = threading.Lock()

    def update(self, event: Any) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._progress is None:
                if time.monotonic() - self._start < self.delay or event.done >= event.total:
                    return
                self._open()
            description = "reading headers" if event.phase == "headers" else "writing"
            unit = "shards" if event.phase == "headers" else "files"
            self._progress.update(
                self._task,
                completed=event.done,
                total=event.total,
                description=description,
                files=f"{event.files_done}/{event.files_total} {unit}",
                bytes=event.phase != "headers",
            )

    def _open(self) -> None:
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from kvscale._output import stderr_console

        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TextColumn("{task.fields[files]}", markup=False),
            TimeRemainingColumn(),
            console=stderr_console(),
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("", total=1, files="", bytes=True)

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises KeyboardInterrupt, so the staging directory is cleaned up on the way out."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.command(epilog=EXAMPLES.replace("\n", "\n\n") + "\n\n" + EXIT_CODES_HELP)
@handles_errors
def normalize(
    checkpoint: CheckpointArg,
    out: OutDirOpt,
    checkpoint_copy: CheckpointCopyOpt = False,
    kv_cache_dtype: KVCacheDtypeOpt = "auto",
    platform: PlatformOpt = Platform.ocp,
    model_dtype: ModelDtypeOpt = None,
    json_output: JsonOpt = False,
    force: ForceOpt = False,
    digests: DigestsOpt = False,
) -> None:
    """Write the scales the engine uses, explicitly: kv_scales.safetensors (device tensors) and
    kv_scales.json (host values, rule, source tensors); with --checkpoint also a normalized copy
    of the checkpoint.

    Everything is validated before anything is written; a layer the engine refuses, or a value
    that is not a positive finite number, stops the run (exit 1) unless --force.
    """
    from kvscale._output import stderr_console, stdout_console, warning_line, write_json
    from kvscale.normalize import NormalizeOptions, plan_normalize, write_plan
    from kvscale.render.normalize import normalize_json, normalize_renderables, problem_lines

    options = NormalizeOptions(
        kv_cache_dtype=kv_cache_dtype,
        platform=platform.value,
        model_dtype=model_dtype,
        checkpoint=checkpoint_copy,
        force=force,
        digests=digests,
    )
    bar = ByteProgress()
    result = None
    try:
        with _terminate_as_interrupt():
            plan = plan_normalize(checkpoint, out, options, bar.update)
            if plan.ok:
                result = write_plan(plan, bar.update)
    finally:
        bar.close()
    for line in problem_lines(plan.warnings):
        warning_line(line)
    if result is None:
        from kvscale._output import error_line

        for line in problem_lines(plan.blocking):
            stderr_console().print(f"  {line}", markup=False, highlight=False)
        error_line(
            f"nothing written: {len(plan.blocking)} problem(s) normalization cannot fix "
            "(pass --force to leave those layers as they are)"
        )
    if json_output:
        write_json(normalize_json(plan, result))
    else:
        console = stdout_console()
        for renderable in normalize_renderables(plan, result):
            console.print(renderable)
    if result is None:
        raise SystemExit(int(ExitCode.CHECK_FAILED))
