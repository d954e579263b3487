"""The one output sink: results to stdout, everything else (warnings, progress, errors) to stderr.

JSON goes straight to ``sys.stdout`` (never through rich, which wraps long lines and breaks
JSON). Human output goes through rich consoles; every checkpoint-controlled string must pass
through ``safe_text`` first, so that control characters, ANSI escapes and rich markup
(``[k_scale]`` would silently vanish) are shown literally and cannot change the terminal.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text


def sanitize(value: object) -> str:
    """Printable text: control/format characters (ESC, CR, bidi overrides, ...) become escapes."""
    text = str(value)
    if text.isprintable():
        return text
    out: list[str] = []
    for ch in text:
        if ch.isprintable() or ch == " ":
            out.append(ch)
            continue
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
            code = ord(ch)
            out.append(f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def safe_text(value: object, style: str = "") -> Text:
    """A rich Text (never parsed as markup) holding the sanitized string."""
    from rich.text import Text

    return Text(sanitize(value), style=style)


def write_json(document: Any) -> None:
    """One JSON document on stdout, ASCII-only so hostile names cannot reach the terminal raw."""
    sys.stdout.write(json.dumps(document, ensure_ascii=True, allow_nan=False, indent=2))
    sys.stdout.write("\n")
    sys.stdout.flush()


def stdout_console() -> Console:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=False)


def error_line(message: str) -> None:
    """The single stderr line for a failed command (no rich: it must survive any terminal)."""
    sys.stderr.write(f"kvscale: error: {sanitize(message)}\n")
    sys.stderr.flush()


def warning_line(message: str) -> None:
    sys.stderr.write(f"kvscale: warning: {sanitize(message)}\n")
    sys.stderr.flush()
