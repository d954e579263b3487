"""People's output as Markdown (GitHub job summaries, PR comments) or CSV (spreadsheets).

The renderers build rich tables and texts once; these turn the same renderables into the other
formats, so that no command has a second renderer. Only the public rich API is read: a table's
``columns`` (``header``, ``cells``) and a text's ``plain``. Checkpoint strings arrive sanitized
(``render.escape``); here they are escaped for the target syntax.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

# Characters that start inline Markdown anywhere; "_" only at a word boundary (GitHub leaves
# intraword underscores, as in self_attn, alone); block markers only at the start of a line.
_MD_INLINE = re.compile(r"([\\`*\[\]<>|~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")
_MD_BLOCK = re.compile(r"^(\s*)([#+\-=>]|\d+[.)])")


def _plain(cell: object, exact: bool = False) -> str:
    """A cell's text on one line; ``exact``: the exact value of a ``ValueCell`` (CSV)."""
    value = getattr(cell, "exact", None) if exact else None
    plain = value if isinstance(value, str) else getattr(cell, "plain", None)
    text = plain if isinstance(plain, str) else str(cell)
    return " ".join(text.split())


def _rows(table: Table, exact: bool = False) -> tuple[list[str], list[list[str]]]:
    headers = [_plain(column.header) for column in table.columns]
    columns = [[_plain(cell, exact) for cell in column.cells] for column in table.columns]
    rows = [list(row) for row in zip(*columns, strict=True)] if columns else []
    return headers, rows


def _md_text(text: str) -> str:
    return _MD_BLOCK.sub(r"\1\\\2", _MD_INLINE.sub(r"\\\1", text))


def _md_cell(text: str) -> str:
    # In a table cell only the pipe and the backslash need escaping; code spans keep names exact.
    return text.replace("\\", "\\\\").replace("|", "\\|")


def _is_table(renderable: object) -> bool:
    from rich.table import Table

    return isinstance(renderable, Table)


def to_markdown(renderables: Sequence[RenderableType]) -> str:
    """Tables as GitHub-flavoured Markdown tables; every text as its own paragraph."""
    out: list[str] = []
    for renderable in renderables:
        if _is_table(renderable):
            headers, rows = _rows(renderable)  # type: ignore[arg-type]
            out.append("| " + " | ".join(_md_cell(h) or " " for h in headers) + " |")
            out.append("|" + "|".join("---" for _ in headers) + "|")
            out.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows)
            out.append("")
            continue
        for line in _plain_lines(renderable):
            out.append(_md_text(line))
            out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def to_csv(renderables: Sequence[RenderableType]) -> str:
    """The tables as CSV (RFC 4180, a header row each; several tables separated by an empty
    line). Texts are left out: CSV carries the rows, ``--format table`` the messages. Numbers
    are exact (``render.cells.ValueCell``), as in the JSON documents, not rounded as shown."""
    buffer = io.StringIO()
    import csv  # (only --format csv needs it)

    writer = csv.writer(buffer, lineterminator="\n")
    first = True
    for renderable in renderables:
        if not _is_table(renderable):
            continue
        if not first:
            buffer.write("\n")
        first = False
        headers, rows = _rows(renderable, exact=True)  # type: ignore[arg-type]
        writer.writerow(headers)
        writer.writerows(rows)
    return buffer.getvalue()


def _plain_lines(renderable: object) -> Iterable[str]:
    plain = getattr(renderable, "plain", None)
    text = plain if isinstance(plain, str) else str(renderable)
    for line in text.split("\n"):
        if line.strip():
            yield " ".join(line.split())
