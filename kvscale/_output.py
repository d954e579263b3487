"""The one output sink: results to stdout, everything else (warnings, progress, errors) to stderr.

JSON goes straight to ``sys.stdout`` (never through rich, which wraps long lines and breaks
JSON). Human output goes through rich consoles; every checkpoint-controlled string must pass
through ``safe_text`` first, so that control characters, ANSI escapes and rich markup
(``[k_scale]`` would silently vanish) are shown literally and cannot change the terminal.
"""

from __future__ import annotations

import io
import json
import sys
import unicodedata
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console
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


def _defuse_workflow_commands(text: str) -> str:
    """GitHub's runner executes legacy ``##[command]`` markers found anywhere in a log line
    (stdout or stderr), so a tensor named ``##[set-output ...`` could forge one. ``#`` never
    occurs outside JSON strings, and ``\u0023`` decodes back to ``#``."""
    return text.replace("##[", "#\\u0023[")


def write_json(document: Any) -> None:
    """One JSON document on stdout, ASCII-only so hostile names cannot reach the terminal raw."""
    text = json.dumps(document, ensure_ascii=True, allow_nan=False, indent=2)
    sys.stdout.write(_defuse_workflow_commands(text))
    sys.stdout.write("\n")
    sys.stdout.flush()


def _tolerant(stream: TextIO) -> TextIO:
    """Make a text stream replace what its encoding cannot hold instead of raising.

    With ``PYTHONIOENCODING=ascii`` (or a Latin-1 locale) a non-ASCII tensor name would
    otherwise raise UnicodeEncodeError in the middle of a table, and then again while the
    error is reported. Only the error handler changes; the encoding stays the user's.
    """
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass
    return stream


def stdout_console() -> Console:
    from rich.console import Console

    _tolerant(sys.stdout)
    return Console(highlight=False, soft_wrap=False, emoji=False)


def stderr_console() -> Console:
    from rich.console import Console

    _tolerant(sys.stderr)
    return Console(stderr=True, highlight=False, soft_wrap=False, emoji=False)


def _one_line(prefix: str, message: str) -> str:
    # sanitize() escapes every control character, so the only newline is the final one,
    # whatever the message (file names, tensor names) holds.
    line = f"kvscale: {prefix}: {sanitize(message)}".replace("##[", "#\\x23[")
    encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        line = line.encode("ascii", "backslashreplace").decode("ascii")
    return line + "\n"


def error_line(message: str) -> None:
    """The single stderr line for a failed command (no rich: it must survive any terminal)."""
    sys.stderr.write(_one_line("error", message))
    sys.stderr.flush()


def warning_line(message: str) -> None:
    sys.stderr.write(_one_line("warning", message))
    sys.stderr.flush()
