"""CLI surface: help, version, exit codes, error messages, and one real subprocess run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from support.cli import CliRunner
from support.paths import EXAMPLES

from kvscale.cli import app

runner = CliRunner()


def test_help_lists_commands_and_exit_codes() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for word in ("inspect", "codes", "Exit codes"):
        assert word in result.stdout


def test_inspect_help_has_examples() -> None:
    result = runner.invoke(app, ["inspect", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "kvscale inspect examples/llm-compressor-fp8" in result.stdout
    assert "--kv-cache-dtype" in result.stdout


def test_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.startswith("kvscale ")


def test_missing_path_is_one_line_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0] and "no such file" in lines[0]
    assert "Traceback" not in result.stderr


def test_bad_option_values_are_usage_errors(tmp_path: Path) -> None:
    example = EXAMPLES / "llm-compressor-fp8"
    bad_dtype = runner.invoke(app, ["inspect", str(example), "--kv-cache-dtype", "fp9"])
    assert bad_dtype.exit_code == 2 and "fp9" in bad_dtype.stderr
    bad_model = runner.invoke(app, ["inspect", str(example), "--model-dtype", "int4"])
    assert bad_model.exit_code == 2 and "int4" in bad_model.stderr
    bad_code = runner.invoke(app, ["inspect", str(example), "--allow", "no-such-code"])
    assert bad_code.exit_code == 2 and "kvscale codes" in bad_code.stderr
    bad_platform = runner.invoke(app, ["inspect", str(example), "--platform", "tpu"])
    assert bad_platform.exit_code == 2


def test_debug_env_shows_traceback(tmp_path: Path) -> None:
    result = runner.invoke(app, ["inspect", str(tmp_path / "nope")], env={"KVSCALE_DEBUG": "1"})
    assert result.exit_code != 0
    assert result.exception is not None


def test_codes_json_lists_catalogue() -> None:
    result = runner.invoke(app, ["codes", "--json"])
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert {"layer-refused", "default-scale-used", "coverage-gap"} <= {
        c["code"] for c in doc["codes"]
    }


def test_installed_console_script_runs() -> None:
    exe = shutil.which("kvscale")
    if exe is None:
        pytest.skip(reason="the kvscale console script is not installed in this environment")
    out = subprocess.run(
        [exe, "inspect", str(EXAMPLES / "llm-compressor-fp8"), "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["schema"] == "kvscale.inspect/1" and doc["ok"] is True
    broken = subprocess.run(
        [exe, "inspect", str(EXAMPLES / "broken")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert broken.returncode == 1 and "scale-zero" in broken.stdout


def test_python_dash_m_works() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "kvscale", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0 and out.stdout.startswith("kvscale ")


def test_main_builds_each_command_alone_with_the_same_options(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``kvscale.cli.main`` builds only the command named on the command line (start-up); its help,
    parsing and exit code must be those of the full application, for every command."""
    import re

    from kvscale.cli import app, main

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    names = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]
    assert names == ["calibrate", "codes", "diff", "inspect", "normalize", "plan", "verify"]
    for name in names:
        full = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
        assert full.exit_code == 0, full.output
        monkeypatch.setattr(sys, "argv", ["kvscale", name, "--help"])
        with pytest.raises(SystemExit) as exited:
            main()
        assert exited.value.code in (0, None)
        alone = capsys.readouterr().out
        assert f"Usage: kvscale {name} [OPTIONS]" in alone
        options = set(re.findall(r"--[a-z][a-z0-9-]+", full.output))
        assert options and options == set(re.findall(r"--[a-z][a-z0-9-]+", alone)), name
        assert len(app.registered_commands) == len(names)  # restored after the run
    monkeypatch.setattr(sys, "argv", ["kvscale", "inspect", "--no-such-option"])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
