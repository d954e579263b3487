"""kvscale.core.normalize: ``plan_normalize`` writes nothing and reports its progress;
``write_plan`` reports every file and byte."""

from __future__ import annotations

import os
from pathlib import Path

from support.normalize import CASES_BY_NAME

from kvscale.core.normalize import NormalizeOptions, plan_normalize, write_plan
from kvscale.io.staging import MANIFEST_NAME
from kvscale.progress import ProgressEvent


def test_progress_callback(tmp_path: Path) -> None:
    src = CASES_BY_NAME["sharded-index"].build(tmp_path / "src")
    events: list[ProgressEvent] = []
    plan = plan_normalize(src, tmp_path / "out", NormalizeOptions(checkpoint=True), events.append)
    assert events and events[-1].phase == "headers"
    events.clear()
    result = write_plan(plan, events.append)
    writing = [e for e in events if e.phase == "write"]
    assert writing[-1].done == writing[-1].total == plan.total_bytes
    assert writing[-1].files_done == writing[-1].files_total == len(plan.files)
    assert [f.path for f in result.files] == [j.path for j in plan.files] + [MANIFEST_NAME]
    assert [e.done for e in writing] == sorted(e.done for e in writing)


def test_plan_writes_nothing(tmp_path: Path) -> None:
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    before = sorted(os.listdir(tmp_path))
    plan = plan_normalize(src, tmp_path / "out", NormalizeOptions(checkpoint=True))
    assert sorted(os.listdir(tmp_path)) == before
    assert plan.ok and not plan.blocking
    assert {job.action for job in plan.files} == {"generated", "rewritten", "copied"}
