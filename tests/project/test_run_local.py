"""examples/ci/run_local.sh: what it snapshots, that it shows progress, that an interrupted run
leaves nothing behind.

Before: every untracked file of the tree was snapshot (a virtual environment in it made the
run copy and hash gigabytes for ten minutes), nothing was printed while pip installed, and a
SIGTERM (a CI cancel, a closed terminal) left the temporary directory, venvs and all, behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.hostile import default_sigint
from support.run_local import run_local

ROOT = Path(__file__).resolve().parents[2]
RUN_LOCAL = ROOT / "examples" / "ci" / "run_local.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_snapshot_is_the_package_not_the_tree(tmp_path: Path) -> None:
    repo = tmp_path / "tree"
    (repo / "kvscale").mkdir(parents=True)
    (repo / "pyproject.toml").write_text("[project]\n")
    (repo / "kvscale" / "__init__.py").write_text("committed\n")
    (repo / ".gitignore").write_text(".venv/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x")
    (repo / "kvscale" / "__init__.py").write_text("changed, not committed\n")
    (repo / "kvscale" / "new_module.py").write_text("not added yet\n")
    (repo / "kvscale" / "__pycache__").mkdir()
    (repo / "kvscale" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    for venv in ("venv", ".venv", "kvscale/env"):  # one ignored, two not
        (repo / venv / "lib").mkdir(parents=True)
        (repo / venv / "pyvenv.cfg").write_text("home = /usr\n")
        (repo / venv / "lib" / "torch.py").write_text("gigabytes\n")
    (repo / "notes.txt").write_text("untracked, not the package\n")

    assert run_local.snapshot_files(repo) == [
        ".gitignore",
        "kvscale/__init__.py",
        "kvscale/new_module.py",
        "pyproject.toml",
    ]
    clone = run_local.snapshot_source(tmp_path / "clone", "v9", source=repo)
    assert (clone / "kvscale" / "__init__.py").read_text() == "changed, not committed\n"
    assert not (clone / "venv").exists() and not (clone / "notes.txt").exists()


def test_an_install_step_shows_its_output_as_it_comes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = "echo collecting; echo warning >&2; sleep 0.3; echo installed"
    result = run_local._bash(script, dict(os.environ), tmp_path, echo="github install")
    assert result.returncode == 0
    assert (result.stdout, result.stderr) == ("collecting\ninstalled\n", "warning\n")
    shown = capsys.readouterr().err.splitlines()
    assert sorted(shown) == sorted(
        [
            "  github install | collecting",
            "  github install | warning",
            "  github install | installed",
        ]
    )


@pytest.mark.parametrize(
    "signum",
    [
        signal.SIGTERM,
        pytest.param(signal.SIGINT, marks=pytest.mark.slow),
        pytest.param(signal.SIGHUP, marks=pytest.mark.slow),
    ],
)
def test_an_interrupted_install_run_removes_its_temporary_directory(
    tmp_path: Path, signum: int
) -> None:
    """Stopped while it creates the first virtual environment: exit 128+N, nothing left. (A
    run that never says it is creating one is stopped after 60 s, and fails.)"""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, str(RUN_LOCAL), "--install"],
        cwd=ROOT,
        env=env,
        preexec_fn=default_sigint,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: list[str] = []
    watchdog = threading.Timer(60, process.kill)
    watchdog.start()
    try:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if line.startswith("run_local: creating a virtual environment"):
                break
        time.sleep(0.2)
        process.send_signal(signum)
        _, rest = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
            process.wait()
    log = "".join(seen) + rest
    assert process.returncode == 128 + signum, log
    assert "run_local: snapshot of " in log  # progress, before anything slow
    assert f"run_local: interrupted ({signal.Signals(signum).name})" in log
    assert "run_local: removing " in log
    assert list(temp.iterdir()) == [], log
