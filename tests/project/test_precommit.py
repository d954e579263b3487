"""The pre-commit hook (.pre-commit-hooks.yaml) run by pre-commit itself, from a local clone.

``pre-commit try-repo CLONE kvscale-inspect --files ...`` in a fresh git repository holding a
passing and a failing checkpoint, and the ``repo:``/``rev:`` form of ``.pre-commit-config.yaml``
that the hooks file documents, with ``rev`` a tag of the clone. CLONE is a snapshot of this
working tree committed and tagged in a temporary directory (examples/ci/run_local.py), so what
is tested is what would be pushed. pre-commit builds the hook's environment with pip (kvscale,
typer, rich, setuptools from the package index): the tests are slow, and they check that the
environment has no torch. They skip when pre-commit is neither importable nor on PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from support.paths import ROOT

GOOD = ROOT / "examples" / "llm-compressor-fp8"
BROKEN = ROOT / "examples" / "broken"

pytestmark = pytest.mark.slow


def _pre_commit() -> list[str] | None:
    if importlib.util.find_spec("pre_commit") is not None:
        return [sys.executable, "-m", "pre_commit"]
    found = shutil.which("pre-commit")
    return [found] if found else None


PRE_COMMIT = _pre_commit()
needs_pre_commit = pytest.mark.skipif(
    PRE_COMMIT is None,
    reason="pre-commit is neither importable nor on PATH (pip install 'pre-commit>=3')",
)


def _load_run_local() -> ModuleType:
    path = ROOT / "examples" / "ci" / "run_local.py"
    spec = importlib.util.spec_from_file_location("kvscale_ci_run_local", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


run_local = _load_run_local()
TAG = run_local.requirement_tag(run_local.gitlab_job()[0]["KVSCALE_PACKAGE"])


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.pop("SKIP", None)
    env.pop("VIRTUAL_ENV", None)
    # The hook environments of this test only; pip keeps HOME for its index settings.
    env.update(PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", PIP_NO_INPUT="1")
    return env


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("git") is None:
        pytest.fail("git is needed to clone kvscale for pre-commit")
    return run_local.snapshot_source(tmp_path_factory.mktemp("src") / "kvscale", TAG)


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A repository that holds two checkpoints, staged."""
    repo = tmp_path / "models-repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    shutil.copytree(GOOD, repo / "good")
    shutil.copytree(BROKEN, repo / "broken")
    (repo / "README.md").write_text("checkpoints\n")
    _git(repo, "add", "-A")
    return repo


def _run(
    args: list[str], repo: Path, home: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    return subprocess.run(
        [*PRE_COMMIT, *args],
        cwd=repo,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _files(repo: Path, name: str) -> list[str]:
    return sorted(p.relative_to(repo).as_posix() for p in (repo / name).iterdir())


@needs_pre_commit
@pytest.mark.parametrize(("checkpoint", "expected"), [("good", 0), ("broken", 1)])
def test_try_repo(
    clone: Path, user_repo: Path, tmp_path: Path, checkpoint: str, expected: int
) -> None:
    files = _files(user_repo, checkpoint) + ["README.md"]  # README.md: not the hook's files
    result = _run(
        ["try-repo", str(clone), "kvscale-inspect", "--verbose", "--files", *files],
        user_repo,
        tmp_path / "pc-home",
    )
    out = result.stdout
    assert result.returncode == expected, out + result.stderr
    assert re.search(r"(?m)^kvscale inspect \(FP8 KV-cache scales\)\.+(Passed|Failed)$", out), out
    assert "Traceback" not in out + result.stderr
    if expected:
        assert re.search(r"(?m)^- exit code: 1$", out), out
        assert "KV-cache scales of broken\n" in out
        assert "error scale-zero" in out
        assert re.search(r"(?m)^FAIL: 5 attention layers", out), out
    else:
        assert "(FP8 KV-cache scales)" in out and "Passed" in out
        assert re.search(r"(?m)^OK: 4 attention layers", out), out


@needs_pre_commit
def test_repo_rev_form(clone: Path, user_repo: Path, tmp_path: Path) -> None:
    """The ``repos: - repo: URL rev: TAG`` form the hooks file documents; the hook environment
    is built once, holds no torch, and a second run reuses it."""
    config = (
        "repos:\n"
        f"  - repo: {clone.as_uri()}\n"
        f"    rev: {TAG}\n"
        "    hooks:\n"
        "      - id: kvscale-inspect\n"
    )
    (user_repo / ".pre-commit-config.yaml").write_text(config)
    _git(user_repo, "add", ".pre-commit-config.yaml")
    home = tmp_path / "pc-home"

    installed = _run(["install-hooks"], user_repo, home)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    (env_dir,) = [p for p in home.glob("repo*/py_env-*") if p.is_dir()]
    listing = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    packages = {p["name"].lower() for p in json.loads(listing)}
    assert "kvscale" in packages
    assert not packages & {"torch", "safetensors", "triton", "numpy", "huggingface-hub"}, packages

    started = time.monotonic()
    good = _run(["run", "kvscale-inspect", "--files", *_files(user_repo, "good")], user_repo, home)
    elapsed = time.monotonic() - started
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    # No install on this run: the environment from install-hooks is reused (a generous bound for
    # a 2-core machine; one kvscale process plus pre-commit's own start-up).
    assert "Installing environment" not in good.stdout + good.stderr
    assert elapsed < 20, elapsed

    both = _run(
        [
            "run",
            "kvscale-inspect",
            "--files",
            *_files(user_repo, "good"),
            *_files(user_repo, "broken"),
        ],
        user_repo,
        home,
    )
    assert both.returncode == 1, both.stdout + both.stderr
    # require_serial: one kvscale process inspects both checkpoints, each once.
    assert both.stdout.count("KV-cache scales of broken\n") == 1, both.stdout
    assert both.stdout.count("KV-cache scales of good\n") == 1, both.stdout
