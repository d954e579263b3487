"""Hostile strings (tensor names, directory names, metadata) cannot reach the terminal raw.

Tables show control characters, ANSI escapes, carriage returns and bidi overrides escaped
(``\\x1b``, ``\\x0d``, ``\\u202e``) and rich markup literally (``[k_scale]`` stays visible); JSON
carries every string exactly (``json.loads`` gives back the original) in pure ASCII; error
messages stay one escaped line.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import unicodedata
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.cli.output import Output
from kvscale.errors import InputError
from kvscale.render.escape import safe_text, sanitize

HOSTILE = "\x1b[31m[k_scale][bold]x[/]\r\u202e\x07\x9b2J\x00\u2028"
"""ESC + SGR, rich markup (a tag, a name in brackets, a closing tag), CR, a bidi override, BEL,
a C1 CSI, NUL and a Unicode line separator."""
RAW_DANGER = ["\x1b", "\r", "\u202e", "\x07", "\x9b", "\x00", "\u2028"]


def assert_terminal_safe(text: str) -> None:
    """Nothing that moves the cursor, rings, recolours or reorders: only \\n and printables."""
    for ch in text:
        if ch == "\n":
            continue
        category = unicodedata.category(ch)
        assert category not in ("Cc", "Cf", "Zl", "Zp", "Cs"), f"raw {ch!r} in output"


def hostile_checkpoint(kit: SimpleNamespace, prefix: str) -> Path:
    """A real attention layer whose module prefix is hostile, with a zero k_scale (an error)."""
    import torch

    tensors = {
        f"{prefix}.self_attn.q_proj.weight": torch.zeros(2, 2, dtype=torch.bfloat16),
        f"{prefix}.self_attn.k_proj.k_scale": torch.tensor(0.0),
        f"{prefix}.self_attn.v_proj.v_scale": torch.tensor(0.25),
        f"model.layers.7.self_attn.{HOSTILE}.k_scale": torch.tensor(0.5),  # unmapped: warning
    }
    return kit.make("ckpt", config=kit.ct_config(1), tensors=tensors)


# --- sanitize / safe_text -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("model.layers.0.self_attn.k_scale", "model.layers.0.self_attn.k_scale"),
        ("a\x1b[31mb", "a\\x1b[31mb"),
        ("a\rb\nc\td", "a\\x0db\\x0ac\\x09d"),
        ("\u202eevil", "\\u202eevil"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("tag\U000e0041", "tag\\U000e0041"),
        ("undecodable\udcff", "undecodable\\udcff"),
        ("c1\x9b", "c1\\x9b"),
        ("[bold]x[/]", "[bold]x[/]"),  # markup is not sanitize's job: safe_text never parses it
        ("é 中文 😀", "é 中文 😀"),
    ],
)
def test_sanitize(raw: str, shown: str) -> None:
    assert sanitize(raw) == shown
    assert_terminal_safe(sanitize(raw))


def test_safe_text_renders_markup_literally() -> None:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, color_system=None)
    console.print(safe_text(f"model.layers.0.self_attn.[k_scale] {HOSTILE}"))
    out = buffer.getvalue()
    assert "[k_scale]" in out and "[bold]" in out and "[/]" in out
    assert "\\x1b[31m" in out and "\\u202e" in out
    assert_terminal_safe(out)


# --- the table and the JSON ---------------------------------------------------------------------


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
    import torch

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


def test_hostile_metadata_is_kept_exactly(ckpt_kit: SimpleNamespace) -> None:
    from kvscale.io.safetensors import read_header

    metadata = {f"key{HOSTILE}": f"[bold]{HOSTILE}", "format": "pt"}
    path = ckpt_kit.write(ckpt_kit.tmp / "m.safetensors", {"a": _zeros()}, metadata)
    assert read_header(path).metadata == metadata


def _zeros() -> Any:
    import torch

    return torch.zeros(1)


# --- one-line error messages --------------------------------------------------------------------


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
    if json_mode:  # the document says what happened, every character JSON-escaped
        assert result.stdout.isascii() and "\x1b" not in result.stdout
        assert json.loads(result.stdout)["input"] == str(bad)
    else:
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


def test_error_line_survives_an_ascii_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="strict")
    monkeypatch.setattr(sys, "stderr", stream)
    Output().error(f"/data/模型/é{HOSTILE}: broken")
    Output().warning("naïve")
    stream.flush()
    text = raw.getvalue().decode("ascii")
    assert text.count("\n") == 2
    assert "\\u6a21\\u578b/\\xe9\\x1b[31m" in text
    assert text.endswith("kvscale: warning: na\\xefve\n")


def test_one_line_even_when_the_message_holds_newlines() -> None:
    exc = InputError("/a\nb", "line one\nline two\r\n")
    buffer = io.StringIO()
    real, sys.stderr = sys.stderr, buffer
    try:
        Output().error(exc.one_line())
    finally:
        sys.stderr = real
    assert buffer.getvalue().count("\n") == 1


def test_write_json_is_exact_and_ascii(capsys: pytest.CaptureFixture[str]) -> None:
    document = {"name": HOSTILE, "lone": "\udcff", "emoji": "😀", HOSTILE: [HOSTILE]}
    Output().json(document)
    out = capsys.readouterr().out
    assert out.isascii() and out.endswith("}\n")
    assert json.loads(out) == document


def test_consoles_tolerate_narrow_encodings(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="latin-1", errors="strict")
    monkeypatch.setattr(sys, "stdout", stream)
    Output().render([safe_text("模型 é")])
    stream.flush()
    assert "\\u6a21\\u578b é" in raw.getvalue().decode("latin-1")


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
