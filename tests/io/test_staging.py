"""kvscale.io.staging: atomic single-file writes (JUnit reports, activations)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kvscale.errors import OutputError
from kvscale.io.staging import write_file_atomic


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
