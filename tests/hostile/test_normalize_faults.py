"""``kvscale normalize`` under faults: SIGKILL at random moments, a full disk, an output
directory that vanishes or turns read-only mid-run, hostile names.

What must hold every time: the input's bytes are unchanged; no file under a final output name is
partial (``--out`` is either absent, or complete and byte-identical to an uninterrupted run; with
``--force`` either the old or the new complete output); failures exit 2 with one line saying what
happened. Real faults are used where this machine allows (a small tmpfs needs root and
``mount``); otherwise, and in addition, the same faults are simulated at the system-call seam."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import big_modelopt_checkpoint, write_safetensors_file
from support.cli import CliRunner
from support.normalize import tree_bytes

from kvscale.cli import app
from kvscale.core.normalize import NormalizeOptions, plan_normalize, write_plan
from kvscale.errors import OutputError
from kvscale.io.staging import WriteOptions, is_own_output
from kvscale.progress import ProgressEvent

runner = CliRunner()


def digest_tree(root: Path) -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = Path(dirpath) / f
            h = hashlib.sha256()
            with open(full, "rb") as fh:
                for chunk in iter(lambda fh=fh: fh.read(1 << 22), b""):
                    h.update(chunk)
            out[str(full.relative_to(root))] = h.hexdigest()
    return out


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], dict[str, str]]:
    """A ~240 MB checkpoint (its copy takes long enough to be killed at random points), its
    digest, and the digest of an uninterrupted normalize: for the slow tests."""
    base = tmp_path_factory.mktemp("big")
    src = big_modelopt_checkpoint(base / "src", 240)
    ref = base / "reference"
    _cli_subprocess(src, ref, "--checkpoint").check_returncode()
    return src, digest_tree(src), digest_tree(ref)


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A ~96 MB checkpoint and its digest: room for every fault the in-process tests inject
    (the last at 60 MB of copying)."""
    src = big_modelopt_checkpoint(tmp_path_factory.mktemp("medium") / "src", 96)
    return src, digest_tree(src)


def _cli_args(src: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "kvscale", "normalize", str(src), "--out", str(out), *extra]


def _cli_subprocess(src: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(_cli_args(src, out, *extra), capture_output=True, timeout=300)


def _final_names(parent: Path, out: Path) -> list[str]:
    """Entries next to ``out`` that are not kvscale's hidden staging names."""
    return sorted(
        p.name for p in parent.iterdir() if p != out and not p.name.startswith(f".{out.name}.")
    )


@pytest.mark.slow
def test_sigkill_at_random_points(big: Any, tmp_path: Path) -> None:
    src, src_digest, ref_digest = big
    start = time.monotonic()
    _cli_subprocess(src, tmp_path / "timing", "--checkpoint").check_returncode()
    duration = time.monotonic() - start
    shutil.rmtree(tmp_path / "timing")
    rng = random.Random(20261129)
    outcomes = {"absent": 0, "complete": 0}
    for i in range(8):
        parent = tmp_path / f"run{i}"
        parent.mkdir()
        out = parent / "out"
        proc = subprocess.Popen(
            _cli_args(src, out, "--checkpoint"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, duration * 1.2))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert _final_names(parent, out) == []
        if out.exists():
            assert digest_tree(out) == ref_digest, f"run {i}: a partial output under {out}"
            outcomes["complete"] += 1
        else:
            outcomes["absent"] += 1
        # Rerunning finishes the job and removes what the killed run left behind.
        shutil.rmtree(out, ignore_errors=True)
        done = _cli_subprocess(src, out, "--checkpoint")
        assert done.returncode == 0, done.stderr
        assert digest_tree(out) == ref_digest
        assert [p.name for p in parent.iterdir()] == ["out"], "stale staging left behind"
    assert digest_tree(src) == src_digest, "the input changed"
    assert outcomes["absent"] >= 1, outcomes  # the kills did land mid-run


@pytest.mark.slow
def test_sigkill_during_force_replacement(big: Any, tmp_path: Path) -> None:
    src, src_digest, ref_digest = big
    out = tmp_path / "out"
    old = _cli_subprocess(src, out, "--checkpoint", "--platform", "fnuz")
    assert old.returncode == 0, old.stderr
    old_digest = digest_tree(out)
    assert old_digest != ref_digest
    rng = random.Random(7)
    for _ in range(5):
        proc = subprocess.Popen(
            _cli_args(src, out, "--checkpoint", "--force"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.05, 2.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        now = digest_tree(out)
        assert now in (old_digest, ref_digest), "neither the old nor the new complete output"
        assert _final_names(tmp_path, out) == []
        if now == ref_digest:  # the new one won: put the old one back for the next round
            shutil.rmtree(out)
            _cli_subprocess(src, out, "--checkpoint", "--platform", "fnuz").check_returncode()
    assert digest_tree(src) == src_digest


@pytest.mark.slow  # waits for a copy to be under way in a subprocess: seconds
def test_sigterm_cleans_up(big: Any, tmp_path: Path) -> None:
    src, src_digest, _ = big
    out = tmp_path / "out"
    proc = subprocess.Popen(
        _cli_args(src, out, "--checkpoint"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    # Wait for the staging directory to appear, then interrupt.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(tmp_path.glob(".out.kvscale-tmp-*")):
        if proc.poll() is not None:
            break
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    if proc.returncode == 0:  # finished before the signal: nothing to check
        return
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    # Nothing left behind: no staging directory, and --out absent or complete (the signal may
    # land after the final rename).
    assert [p.name for p in tmp_path.iterdir() if p.name != "out"] == []
    assert not out.exists() or is_own_output(out)
    assert digest_tree(src) == src_digest


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 24 MiB tmpfs (root only), unmounted afterwards."""
    if not _can_mount():
        pytest.skip("mounting a tmpfs needs root and mount(8); the simulated tests cover this")
    mnt = tmp_path / "small"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.slow  # mounts a real tmpfs and fills it (test_full_disk_simulated runs by default)
def test_full_disk_real(big: Any, small_fs: Path) -> None:
    src, src_digest, _ = big
    out = small_fs / "out"
    result = _cli_subprocess(src, out, "--checkpoint")
    assert result.returncode == 2, result.stderr
    err = result.stderr.decode()
    assert err.count("\n") == 1 and err.startswith("kvscale: error: ")
    assert "no space left" in err and str(out) in err
    assert list(small_fs.iterdir()) == []  # no output, staging removed
    assert digest_tree(src) == src_digest


def _failing(after_bytes: int, code: int) -> Any:
    real = os.copy_file_range
    state = {"done": 0}

    def copy_file_range(src: int, dst: int, count: int, *args: Any) -> int:
        if state["done"] >= after_bytes:
            raise OSError(code, os.strerror(code))
        n = real(src, dst, min(count, 1 << 20), *args)
        state["done"] += n
        return n

    return copy_file_range


@pytest.mark.parametrize(
    "after_mb",
    [0, pytest.param(3, marks=pytest.mark.slow), pytest.param(60, marks=pytest.mark.slow)],
)
def test_full_disk_simulated(
    medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after_mb: int
) -> None:
    src, src_digest = medium
    monkeypatch.setattr(os, "copy_file_range", _failing(after_mb << 20, errno.ENOSPC))
    out = tmp_path / "out"
    result = runner.invoke(app, ["normalize", str(src), "--out", str(out), "--checkpoint"])
    assert result.exit_code == 2, result.output
    assert "no space left on the output filesystem" in result.stderr
    assert f"nothing was written to {out}" in result.stderr
    assert list(tmp_path.iterdir()) == []
    assert digest_tree(src) == src_digest


def test_enospc_at_fsync(medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, _ = medium
    real = os.fsync
    calls = {"n": 0}

    def fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    result = runner.invoke(
        app,
        [
            "normalize",
            str(src),
            "--out",
            str(tmp_path / "out"),
            "-o",
            str(tmp_path / "out"),
            "--checkpoint",
        ],
    )
    assert result.exit_code == 2
    assert "no space left" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_existing_output_survives_failed_force(
    medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, _ = medium
    out = tmp_path / "out"
    runner.invoke(app, ["normalize", str(src), "--out", str(out)])
    before = tree_bytes(out)
    monkeypatch.setattr(os, "copy_file_range", _failing(5 << 20, errno.ENOSPC))
    result = runner.invoke(
        app, ["normalize", str(src), "--out", str(out), "--checkpoint", "--force"]
    )
    assert result.exit_code == 2
    assert tree_bytes(out) == before
    assert [p.name for p in tmp_path.iterdir()] == ["out"]


def _run_with_fault(src: Path, out: Path, fault: Any, *, at_bytes: int, workers: int = 0) -> Any:
    plan = plan_normalize(
        src, out, NormalizeOptions(checkpoint=True, write=WriteOptions(workers=workers))
    )
    fired = {"done": False}

    def progress(event: ProgressEvent) -> None:
        if not fired["done"] and event.phase == "write" and event.done >= at_bytes:
            fired["done"] = True
            fault()

    with pytest.raises(OutputError) as info:
        write_plan(plan, progress)
    assert fired["done"]
    return info.value


@pytest.mark.parametrize("at_mb", [0, 40])
def test_output_directory_vanishes(medium: Any, tmp_path: Path, at_mb: int) -> None:
    src, src_digest = medium
    dest = tmp_path / "dest"
    dest.mkdir()
    out = dest / "out"

    def vanish() -> None:
        # Copy threads may still create files while the tree goes; a plain rmtree can then fail
        # with ENOTEMPTY inside the fault itself, so remove until the directory is gone.
        while dest.exists():
            shutil.rmtree(dest, ignore_errors=True)

    error = _run_with_fault(src, out, vanish, at_bytes=at_mb << 20)
    assert "vanished" in error.one_line()
    assert not dest.exists()
    assert digest_tree(src) == src_digest


def test_output_directory_vanishes_cli(
    medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src, _ = medium
    dest = tmp_path / "dest"
    dest.mkdir()
    real = os.copy_file_range

    def copy_file_range(*args: Any) -> int:
        shutil.rmtree(dest, ignore_errors=True)
        return real(*args)

    monkeypatch.setattr(os, "copy_file_range", copy_file_range)
    result = runner.invoke(app, ["normalize", str(src), "--out", str(dest / "out"), "--checkpoint"])
    assert result.exit_code == 2, result.output
    assert "vanished" in result.stderr and result.stderr.count("\n") == 1


def test_output_turns_read_only_real(medium: Any, small_fs: Path) -> None:
    """A remount read-only between two files (workers=1: no file is open at that moment)."""
    src, src_digest = medium
    (small_fs / "keep").mkdir()
    src_small = big_modelopt_checkpoint(small_fs.parent / "src-small", 8)
    out = small_fs / "out"

    def remount() -> None:
        subprocess.run(["mount", "-o", "remount,ro", str(small_fs)], check=True)

    try:
        plan = plan_normalize(
            src_small, out, NormalizeOptions(checkpoint=True, write=WriteOptions(workers=1))
        )
        files_seen = {"n": 0}

        def progress(event: ProgressEvent) -> None:
            if event.phase == "write" and event.files_done == 1 and files_seen["n"] == 0:
                files_seen["n"] = 1
                remount()

        with pytest.raises(OutputError) as info:
            write_plan(plan, progress)
        assert "read-only" in info.value.one_line()
        assert not out.exists()
        assert _final_names(small_fs, out) == ["keep"]
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_fs)], check=False)
    assert digest_tree(src) == src_digest


@pytest.mark.parametrize("code, words", [(errno.EROFS, "read-only"), (errno.EACCES, "permission")])
def test_output_turns_read_only_simulated(
    medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    src, src_digest = medium
    import kvscale.io.safetensors_write as sw

    real = sw.open_new
    calls = {"n": 0}

    def open_new(path: Path) -> int:
        calls["n"] += 1
        if calls["n"] > 2:
            raise OSError(code, os.strerror(code), str(path))
        return real(path)

    monkeypatch.setattr(sw, "open_new", open_new)
    out = tmp_path / "out"
    result = runner.invoke(app, ["normalize", str(src), "--out", str(out), "--checkpoint"])
    assert result.exit_code == 2, result.output
    assert words in result.stderr and result.stderr.count("\n") == 1
    assert list(tmp_path.iterdir()) == []
    assert digest_tree(src) == src_digest


@pytest.mark.skipif(
    hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores directory permissions"
)
def test_parent_made_read_only_before_commit(medium: Any, tmp_path: Path) -> None:
    src, _ = medium
    dest = tmp_path / "dest"
    dest.mkdir()
    try:
        error = _run_with_fault(src, dest / "out", lambda: dest.chmod(0o555), at_bytes=1 << 20)
        assert "permission denied" in error.one_line()
        assert _final_names(dest, dest / "out") == []
    finally:
        dest.chmod(0o755)


def test_tensor_names_with_paths_are_refused(tmp_path: Path) -> None:
    from support.checkpoints import llama_config, quant_config
    from support.normalize import t

    src = tmp_path / "src"
    src.mkdir()
    (src / "config.json").write_text(
        json.dumps(llama_config(1, quant=quant_config("compressed-tensors")))
    )
    bad = "../../escape/model.layers.0.self_attn"
    write_safetensors_file(
        src / "model.safetensors", {f"{bad}.k_scale": t(0.5), f"{bad}.v_scale": t(0.5)}
    )
    result = runner.invoke(
        app, ["normalize", str(src), "--out", str(tmp_path / "o"), "--checkpoint"]
    )
    assert result.exit_code == 1
    assert "unsafe-tensor-name" in result.stderr
    result = runner.invoke(
        app, ["normalize", str(src), "--out", str(tmp_path / "o"), "--checkpoint", "--force"]
    )
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "escape").exists()
    written = {str(p.relative_to(tmp_path / "o")) for p in (tmp_path / "o").rglob("*")}
    assert written == {
        ".kvscale-manifest.json",
        "kv_scales.json",
        "kv_scales.safetensors",
        "checkpoint",
        "checkpoint/config.json",
        "checkpoint/model.safetensors",
    }


def test_commit_refused_simulated(
    medium: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The final rename fails (parent made read-only as a non-root user): staging is removed."""
    import kvscale.io.staging as nz

    src, _ = medium

    def refuse(*args: Any, **kwargs: Any) -> bool:
        raise OSError(errno.EACCES, "Permission denied", str(tmp_path / "out"))

    monkeypatch.setattr(nz, "renameat2", refuse)
    monkeypatch.setattr(os, "rename", refuse)
    result = runner.invoke(app, ["normalize", str(src), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "permission denied" in result.stderr
    assert list(tmp_path.iterdir()) == []
