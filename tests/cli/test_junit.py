"""``inspect --junit`` end to end: failures match the exit code, stdout unchanged, an error case
for an unreadable checkpoint, one suite per checkpoint with ``--files``."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import broken_checkpoint, good_checkpoint
from support.cli import CliRunner
from support.junit import validate

from kvscale.cli import app

runner = CliRunner()


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return broken_checkpoint(tmp_path)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return good_checkpoint(tmp_path)


def invoke(*args: str) -> Any:
    return runner.invoke(app, [*args, "--no-policy"], env={"GITHUB_ACTIONS": ""})


@pytest.mark.parametrize(
    ("args", "code", "failures"),
    [
        ([], 1, 1),
        (["--strict"], 1, 4),
        (["--allow", "scale-zero"], 0, 0),
        (["--allow", "scale-zero", "--fail-on", "coverage-gap"], 1, 1),
    ],
)
def test_failures_match_the_exit_code(
    broken: Path, tmp_path: Path, args: list[str], code: int, failures: int
) -> None:
    report = tmp_path / "out" / "junit.xml"
    result = invoke("inspect", str(broken), "--junit", str(report), *args)
    assert result.exit_code == code
    validate(report)
    root = ET.parse(report).getroot()
    assert root.get("failures") == str(failures)
    assert (failures > 0) == (code == 1)


def test_json_stdout_is_unchanged(broken: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    plain = invoke("inspect", str(broken), "--json")
    with_junit = invoke("inspect", str(broken), "--json", "--junit", str(report))
    assert plain.exit_code == with_junit.exit_code == 1
    assert json.loads(plain.stdout) == json.loads(with_junit.stdout)
    assert with_junit.stderr == ""
    assert report.is_file()


def test_unreadable_checkpoint_writes_an_error_case(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    result = invoke("inspect", str(tmp_path / "missing"), "--junit", str(report))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "missing" in result.stderr and "no such file" in result.stderr
    validate(report)
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("errors")) == ("1", "1")
    error = root.find("testsuite/testcase/error")
    assert error is not None and error.get("type") == "CheckpointNotFoundError"


def test_junit_to_a_directory_is_exit_2(good: Path, tmp_path: Path) -> None:
    result = invoke("inspect", str(good), "--junit", str(tmp_path))
    assert result.exit_code == 2
    assert "junit" in result.stderr.lower() or "directory" in result.stderr


def test_files_mode_one_suite_per_checkpoint(good: Path, broken: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    result = invoke(
        "inspect",
        "--files",
        str(good / "model.safetensors"),
        str(broken / "config.json"),
        str(tmp_path / "unrelated.txt"),
        "--junit",
        str(report),
    )
    assert result.exit_code == 1
    validate(report)
    root = ET.parse(report).getroot()
    names = [s.get("name") for s in root.iter("testsuite")]
    assert names == [f"kvscale inspect {broken}", f"kvscale inspect {good}"]
    assert (root.get("tests"), root.get("failures")) == ("47", "1")
