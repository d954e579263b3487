"""Hostile strings (tensor names, directory names, metadata) cannot reach the terminal raw.

Tables show control characters, ANSI escapes, carriage returns and bidi overrides escaped
(``\x1b``, ``\x0d``, ``\u202e``) and rich markup literally (``[k_scale]`` stays visible); JSON
carries every string exactly (``json.loads`` gives back the original) in pure ASCII; error
messages stay one escaped line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from support.checkpoints import (
    LLAMA_PREFIX,
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
)
from support.checkpoints import write_scalar_checkpoint as write_ckpt
from support.cli import CliRunner, run_cli
from support.hardening import P, invoke
from support.hostile import HOSTILE, RAW_DANGER, assert_terminal_safe

from kvscale.cli import app


def hostile_checkpoint(kit: SimpleNamespace, prefix: str) -> Path:
    """A real attention layer whose module prefix is hostile, with a zero k_scale (an error)."""

    tensors = {
        f"{prefix}.self_attn.q_proj.weight": torch.zeros(2, 2, dtype=torch.bfloat16),
        f"{prefix}.self_attn.k_proj.k_scale": torch.tensor(0.0),
        f"{prefix}.self_attn.v_proj.v_scale": torch.tensor(0.25),
        f"model.layers.7.self_attn.{HOSTILE}.k_scale": torch.tensor(0.5),  # unmapped: warning
    }
    return kit.make("ckpt", config=kit.ct_config(1), tensors=tensors)


def test_table_escapes_hostile_layer_names(ckpt_kit: SimpleNamespace) -> None:
    path = hostile_checkpoint(ckpt_kit, f"model.{HOSTILE}.layers.0")
    result = CliRunner().invoke(app, ["inspect", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 1, result.stderr  # the zero k_scale
    out = result.stdout
    assert_terminal_safe(out)
    for raw in RAW_DANGER:
        assert raw not in out
    assert "\\x1b[31m[k_scale][bold]x[/]\\x0d\\u202e\\x07\\x9b2J\\x00\\u2028" in out
    assert "scale-zero" in out
    assert result.stderr == ""


def test_json_carries_hostile_names_exactly(ckpt_kit: SimpleNamespace) -> None:
    prefix = f"model.{HOSTILE}.layers.0"
    path = hostile_checkpoint(ckpt_kit, prefix)
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert result.exit_code == 1
    assert result.stdout.isascii()  # escapes only: nothing raw reaches a terminal that cats it
    doc = json.loads(result.stdout)
    layer = doc["layers"][0]
    assert layer["name"] == f"{prefix}.self_attn.attn"
    assert layer["checkpoint"]["k_scale"]["tensor"] == f"{prefix}.self_attn.k_proj.k_scale"
    unmapped = {u["tensor"] for u in doc["unmapped"]}
    assert f"model.layers.7.self_attn.{HOSTILE}.k_scale" in unmapped
    assert any(HOSTILE in p["message"] for p in doc["problems"])


def test_json_structure_cannot_be_forged(ckpt_kit: SimpleNamespace) -> None:
    """A name that is itself JSON text stays a string value; the document keeps its keys."""

    forged = 'x", "ok": true, "problems": [], "y": "'
    tensors = {
        "model.layers.0.self_attn.q_proj.weight": torch.zeros(2, 2),
        "model.layers.0.self_attn.k_proj.k_scale": torch.tensor(0.0),
        f"model.layers.0.self_attn.{forged}.k_scale": torch.tensor(1.0),
    }
    path = ckpt_kit.make("ckpt", config=ckpt_kit.ct_config(1), tensors=tensors)
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    doc = json.loads(result.stdout)
    assert doc["ok"] is False and result.exit_code == 1
    assert f"model.layers.0.self_attn.{forged}.k_scale" in {u["tensor"] for u in doc["unmapped"]}
    assert list(doc)[:3] == ["schema", "checkpoint", "quant_method"]


def test_hostile_directory_name(ckpt_kit: SimpleNamespace) -> None:
    """The checkpoint path itself is shown escaped in the table and exactly in JSON."""
    name = "ck\x1b[2Jpt[bold]\u202e"
    path = ckpt_kit.make(name)
    table = CliRunner().invoke(app, ["inspect", str(path)], env={"COLUMNS": "300"})
    assert table.exit_code == 0, table.stderr
    assert_terminal_safe(table.stdout)
    assert "ck\\x1b[2Jpt[bold]\\u202e" in table.stdout
    as_json = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert json.loads(as_json.stdout)["checkpoint"] == str(path)


@pytest.mark.parametrize("json_mode", [False, True])
def test_error_with_hostile_file_name_is_one_escaped_line(
    ckpt_kit: SimpleNamespace, json_mode: bool
) -> None:
    directory = ckpt_kit.make("ckpt")
    bad = directory / "a\x1b]0;owned\x07\n[bold]\u202e.safetensors"
    bad.write_bytes(b"")
    args = ["inspect", str(directory), *(["--json"] if json_mode else [])]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.stdout == ""
    err = result.stderr
    assert err.count("\n") == 1 and err.endswith("\n")
    assert_terminal_safe(err)
    assert "a\\x1b]0;owned\\x07 [bold]\\u202e.safetensors: not a valid safetensors file" in err


def test_error_with_hostile_tensor_name_is_one_escaped_line(ckpt_kit: SimpleNamespace) -> None:
    name = f"t{HOSTILE}\n" + "y" * 5000
    path = ckpt_kit.raw(ckpt_kit.tmp / "bad.safetensors", {name: {"dtype": "F128"}})
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code == 2
    err = result.stderr
    assert err.count("\n") == 1
    assert_terminal_safe(err)
    assert "has unknown dtype 'F128'" in err
    assert len(err) < 500  # the 5000-character name is cut
    assert "\\x1b[31m[k_scale][bold]x[/]\\r\\u202e\\x07\\x9b2J\\x00\\u2028" in err


def test_subprocess_with_ascii_io_and_unicode_names(ckpt_kit: SimpleNamespace) -> None:
    """PYTHONIOENCODING=ascii: non-ASCII names neither crash the table nor the error line."""
    good = ckpt_kit.make("模型-é")
    bad = ckpt_kit.tmp / "坏.safetensors"
    bad.write_bytes(b"\0")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KVSCALE_")}
    env["PYTHONIOENCODING"] = "ascii"
    for path, code in ((good, 0), (bad, 2)):
        proc = subprocess.run(
            [sys.executable, "-m", "kvscale", "inspect", str(path)],
            capture_output=True,
            env=env,
            timeout=10,
            check=False,
        )
        assert proc.returncode == code, proc.stderr
        assert b"Traceback" not in proc.stderr
        proc.stdout.decode("ascii")
        proc.stderr.decode("ascii")


HOSTILE_PREFIX = "model.##[error]boom.layers.0"


def _hostile(tmp: Path) -> Path:
    prefix = f"{HOSTILE_PREFIX}.self_attn"
    tensors = {
        **attention_weights(1, prefix),
        f"{prefix}.k_scale": tensor(0.5),
        f"{prefix}.v_scale": tensor(0.25),
    }
    return write_checkpoint(tmp / "hostile", tensors, llama_config(1, quant=quant_config("fp8")))


@pytest.mark.parametrize("command", ["inspect", "normalize", "verify"])
def test_no_raw_workflow_marker_on_stdout(tmp_path: Path, command: str) -> None:
    """normalize and verify printed a hostile name's ``##[error]`` raw (issue 10, defect 4)."""
    ckpt = _hostile(tmp_path)
    args: list[Any] = [command, ckpt]
    if command == "normalize":
        args += ["--out", tmp_path / "out", "--kv-cache-dtype", "fp8"]
    if command == "verify":
        args += ["--tokens", "16", "--kv-cache-dtype", "fp8"]
    result = run_cli(*args)
    assert result.exit_code in (0, 1), result.stderr
    assert "boom" in result.stdout
    assert "##[" not in result.stdout and "##[" not in result.stderr
    assert "\\x23#[error]boom" in result.stdout


def test_no_scratch_left(tmp_path: Path) -> None:
    """The hostile checkpoint builder leaves only its own directory."""
    _hostile(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile"]
    shutil.rmtree(tmp_path / "hostile")


def test_hostile_tensor_names_cannot_forge_workflow_commands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tensor name holding ``::error::``/``##[`` and control characters must not produce any
    output line GitHub would execute, other than kvscale's own annotations."""
    monkeypatch.chdir(tmp_path)
    hostile = "model.layers.0.self_attn\x1b[2J\n::warning::forged ##[add-mask]x\r::error::y"
    write_ckpt(
        tmp_path / "evil",
        {
            f"{LLAMA_PREFIX.format(0)}.k_scale": 0.5,
            f"{LLAMA_PREFIX.format(0)}.v_scale": 0.5,
            f"{hostile}.k_scale": 0.0,
        },
        layers=1,
    )
    for columns in ("40", "80", "200"):
        env = {"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": "", "COLUMNS": columns}
        result = run_cli("inspect", "evil", "--strict", "--no-policy", env=env)
        assert result.exit_code == 1
        for line in result.stdout.splitlines():
            assert not line.lstrip().startswith("::"), line
            assert "##[" not in line, line
        assert "\x1b" not in result.stdout
        assert "unmapped-scale-name" in result.stdout
        for line in result.stderr.splitlines():
            assert line.startswith(("::error ", "::warning ")), line
            assert line.count("::") >= 2
            head = line.split("::")[1]
            assert "\r" not in line and "\x1b" not in line
            assert head.split(" ", 1)[0] in ("error", "warning")


WORKFLOW_HOSTILE = " ::error title=owned::pwned ##[group]x ::set-output name=a::b "


def _workflow_names_checkpoint(root: Path) -> Path:
    # A prefix longer than any render width, with '::' words wherever a line may wrap.
    long = "w" * 4_060 + "".join(f" ::e{i}" for i in range(40)) + " ##[x]"
    t = attention_weights(2)
    for prefix in (f"model{WORKFLOW_HOSTILE}", f"model{long}"):
        t.update(attention_weights(1, prefix=prefix + ".layers.{}.self_attn"))
        t[f"{prefix}.layers.0.self_attn.k_proj.k_scale"] = tensor(0.5)
    t[f"{P.format(0)}.k_scale"] = tensor(0.0)  # skipped under --force: a warning naming it
    t[f"{P.format(0)}.v_scale"] = tensor(0.5)
    src = write_checkpoint(
        root / "ckpt", t, llama_config(2, quant=quant_config("fp8"), head_dim=16)
    )
    os.symlink("/etc/hostname", src / f"notes{WORKFLOW_HOSTILE}.txt")  # 'file-not-copied' names it
    os.rename(src / "model.safetensors", src / f"m{WORKFLOW_HOSTILE}.safetensors")
    return src


def _workflow_commands(lines: str) -> list[str]:
    return [line for line in lines.splitlines() if line.lstrip().startswith("::") or "##[" in line]


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_no_workflow_command_from_names(tmp_path: Path, columns: str) -> None:
    """No workflow command from a checkpoint name, after wrapping (issue 17, item 11)."""
    src = _workflow_names_checkpoint(tmp_path)
    env = {"GITHUB_ACTIONS": "true", "COLUMNS": columns}
    out = tmp_path / "out"
    result = invoke("normalize", src, "--out", out, "--checkpoint", "--force", env=env)
    assert result.exit_code == 0, result.stderr
    assert _workflow_commands(result.stderr) == []
    assert "notes ::error" in result.stderr  # shown, defused: not dropped
    assert "\\x23#[group]" in result.stderr
    shown = ""
    for args in (("verify", out, "--tokens", "64"), ("verify", out, "--tokens", "64", "--quiet")):
        result = invoke(*args, env=env)
        assert result.exit_code == 0, result.stderr
        assert _workflow_commands(result.stdout) == [], _workflow_commands(result.stdout)[:3]
        assert _workflow_commands(result.stderr) == []
        shown += result.stdout
    assert "pwned" in shown  # the hostile layer is shown, defused
