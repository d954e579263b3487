"""Every usage error is one line on stderr, ``kvscale: error: ...``, exit 2, nothing on stdout
(issue 25: ``normalize --out`` naming a file drew a six-line usage panel)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvscale.cli import app

ROOT = Path(__file__).resolve().parents[2]
A_FILE = str(ROOT / "README.md")

CASES = {
    "no command": (["nosuch"], "No such command 'nosuch'"),
    "root option": (["--bogus"], "No such option: --bogus"),
    "inspect no checkpoint": (["inspect"], "Missing argument 'CHECKPOINT'"),
    "inspect option": (["inspect", "x", "--bogus"], "No such option: --bogus"),
    "inspect engine": (["inspect", "x", "--engine", "foo"], "'foo' is not one of"),
    "inspect format": (["inspect", "x", "--format", "yaml"], "'yaml' is not one of"),
    "inspect policy dir": (["inspect", "x", "--policy", str(ROOT)], "is a directory"),
    "normalize no out": (["normalize", "x"], "Missing option '--out'"),
    "normalize out file": (["normalize", "x", "--out", A_FILE], "is a file"),
    "diff no b": (["diff", "a"], "Missing argument 'B'"),
    "diff negative": (["diff", "a", "b", "--max-rel-change", "-1"], "not in the range"),
    "diff not a number": (["diff", "a", "b", "--max-rel-change", "x"], "is not a valid float"),
    "verify no target": (["verify"], "Missing argument 'TARGET'"),
    "verify tokens": (["verify", "x", "--tokens", "many"], "is not a valid int"),
    "calibrate no data": (["calibrate", "m", "--out", "o"], "Missing option '--data'"),
    "calibrate holdout": (
        ["calibrate", "m", "--data", "d", "--out", "o", "--holdout", "2"],
        "not in the range",
    ),
    "codes extra": (["codes", "a", "b"], "unexpected extra argument(s) (b)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_usage_error_is_one_line_and_exit_2(case: str) -> None:
    args, says = CASES[case]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kvscale: error: ") and says in lines[0], lines[0]
    command = args[0] if args[0] in app_commands() else None
    where = f"kvscale {command} --help" if command else "kvscale --help"
    assert lines[0].endswith(f"(see: {where})")


def app_commands() -> set[str]:
    return {"inspect", "normalize", "diff", "verify", "calibrate", "codes"}


def test_usage_error_from_the_installed_entry_point() -> None:
    """The same line from a real process (the console script's ``main``)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "kvscale", "normalize", "examples/broken", "--out", A_FILE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"kvscale: error: Invalid value for '--out' / '-o': Directory '{A_FILE}' is a file. "
        "(see: kvscale normalize --help)\n"
    )


def test_option_without_its_value() -> None:
    # (click raises this one without the command's context: no "see" hint)
    result = CliRunner().invoke(app, ["normalize", "x", "--out"], env={"NO_COLOR": "1"})
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == "kvscale: error: Option '--out' requires an argument.\n"


def test_no_arguments_still_shows_the_help() -> None:
    result = CliRunner().invoke(app, [], env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert result.exit_code == 2
    assert "Usage: kvscale [OPTIONS] COMMAND [ARGS]..." in result.stdout
    assert "kvscale: error" not in result.output
