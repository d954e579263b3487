"""kvscale.cli.output: one error line whatever the message or the terminal's encoding, exact
ASCII JSON, consoles that tolerate narrow encodings."""

from __future__ import annotations

import io
import json
import sys

import pytest
from support.hostile import HOSTILE

from kvscale.cli.output import Output
from kvscale.errors import InputError
from kvscale.render.escape import safe_text


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
