"""kvscale.io.staging: atomic single-file writes (JUnit reports, activations), paths kept inside
the output, stale staging directories of dead runs cleaned."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kvscale.errors import OutputError
from kvscale.io.staging import _start_time, clean_stale, write_file_atomic
from kvscale.io.staging import inside as _inside


def test_write_atomic_replaces_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "new" / "kvscale.xml"
    write_file_atomic(target, b"one", "report")
    write_file_atomic(target, b"two", "report")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["kvscale.xml"]
    assert (target.stat().st_mode & 0o777) == 0o644


def test_write_atomic_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "kvscale.xml"
    target.write_bytes(b"old")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OutputError, match="kvscale.xml: cannot write report: No space left"):
        write_file_atomic(target, b"new", "report")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["kvscale.xml"]


def test_write_atomic_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"):
        write_file_atomic(tmp_path, b"x", "report")


def test_relative_paths_cannot_escape() -> None:
    root = Path("/nonexistent/out")
    assert _inside(root, "checkpoint/a.safetensors") == root / "checkpoint" / "a.safetensors"
    for bad in ("../x", "checkpoint/../../x", "/etc/passwd", "", "a//b", "./a", "a/\0b"):
        with pytest.raises(OutputError):
            _inside(root, bad)


def test_clean_stale_only_removes_dead_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    me = f"{os.getpid()}-{_start_time(os.getpid())}"
    stale = tmp_path / f".out.kvscale-tmp-{dead.pid}-0-abc"
    live = tmp_path / f".out.kvscale-tmp-{me}-def"
    other = tmp_path / ".other.kvscale-tmp-1-0-x"
    # In a container kvscale often runs as PID 1 in every run: a live pid whose start time
    # differs is an earlier process, and its staging directory is stale.
    reused = tmp_path / f".out.kvscale-tmp-{os.getpid()}-1-ghi"
    for p in (stale, live, other, reused):
        p.mkdir()
    assert sorted(clean_stale(out)) == sorted([stale, reused])
    assert live.exists() and other.exists()


def test_a_file_created_while_the_staging_is_removed_is_removed_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy thread that outlives the abort can create a file while rmtree runs (its last rmdir
    then fails, ENOTEMPTY, ignored): SIGTERM during normalize left the hidden staging behind."""
    import shutil

    from kvscale.io import staging as staging_module

    staging = tmp_path / ".out.kvscale-tmp-1-2-x"
    (staging / "sub").mkdir(parents=True)
    (staging / "sub" / "a").write_bytes(b"a")
    real = shutil.rmtree
    calls = []

    def racing_rmtree(path: Path, ignore_errors: bool = False) -> None:
        calls.append(path)
        if len(calls) > 1:
            real(path, ignore_errors=ignore_errors)
            return
        real(path / "sub")  # rmtree's walk, then a file appears before its last rmdir
        (path / "late").write_bytes(b"written by a copy thread after the listing")
        with pytest.raises(OSError):
            os.rmdir(path)

    monkeypatch.setattr(staging_module.shutil, "rmtree", racing_rmtree)
    staging_module.remove_staging(staging)
    assert not staging.exists()
    assert len(calls) == 2
