"""Escaping of untrusted strings, in one place: for terminals, for rich, for CI logs.

Checkpoint strings (tensor, file, layer names; config values) come from strangers:

* ``sanitize``: control and format characters become visible escapes (a name cannot move the
  cursor, reorder text or end a line);
* ``safe_text``: a rich ``Text`` that is never parsed as markup (``[k_scale]`` would vanish);
* ``neutralize``: no line can become a GitHub Actions workflow command.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

_ESCAPED_CATEGORIES = frozenset(["Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"])
"""Control, format (bidi overrides, zero-width), line/paragraph separators, surrogates (from
undecodable file names), private-use and unassigned characters: none may reach a terminal raw."""


def _escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def sanitize(value: object) -> str:
    """Printable text: control/format characters (ESC, CR, bidi overrides, ...) become escapes.

    Escapes use Python's notation (``\\x1b``, ``\\u202e``, ``\\U000e0001``), so what is shown can
    be pasted into a Python string to get the original back. Other whitespace (NBSP, ...)
    is kept: it cannot move the cursor or reorder text.
    """
    text = str(value)
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif unicodedata.category(ch) in _ESCAPED_CATEGORIES:
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


def safe_text(value: object, style: str = "") -> Text:
    """A rich Text (never parsed as markup) holding the sanitized string."""
    from rich.text import Text

    return Text(sanitize(value), style=style)


_LINE_START_COMMAND = re.compile(r"^(\s*):(?=:)", re.MULTILINE)


def neutralize(text: str) -> str:
    """Text that cannot trigger a workflow command, whatever it holds.

    GitHub's runner executes a line that starts with ``::`` (after whitespace) and the legacy
    ``##[command]`` marker anywhere in a line, on stdout and stderr alike (actions/runner
    ``ActionCommandManager``); ``\\x3a`` and ``\\x23`` are the escape style ``sanitize`` uses.
    Apply it to final lines: wrapping can move ``::`` to the start of a line.
    """
    text = _LINE_START_COMMAND.sub(lambda m: m.group(1) + "\\x3a", text)
    return text.replace("##[", "\\x23#[")
