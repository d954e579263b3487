"""kvscale.render.escape: sanitize, safe_text, neutralize."""

from __future__ import annotations

import io

import pytest
from support.hostile import HOSTILE, assert_terminal_safe

from kvscale.render.escape import neutralize, safe_text, sanitize


def test_neutralize_workflow_commands() -> None:
    text = "ok\n::error::forged\n   ::add-mask::x\nmid ::x:: stays\nlegacy ##[error]forged\n"
    assert neutralize(text) == (
        "ok\n\\x3a:error::forged\n   \\x3a:add-mask::x\nmid ::x:: stays\n"
        "legacy \\x23#[error]forged\n"
    )
    assert neutralize("│ 0 │ 0.5 │") == "│ 0 │ 0.5 │"


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
