"""kvscale.render.formats: Markdown escapes checkpoint strings."""

from __future__ import annotations


def test_markdown_escapes_checkpoint_strings() -> None:
    from rich.text import Text

    from kvscale.render.formats import to_markdown

    text = to_markdown([Text("# not a heading *nor* `code` a_b _c_ [link](x)")])
    assert text == "\\# not a heading \\*nor\\* \\`code\\` a_b \\_c\\_ \\[link\\](x)\n"
