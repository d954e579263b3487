"""Table cells that carry their exact value: people read a short form, CSV the exact one.

Renderers build one table for every format (``kvscale.render.formats``); a number shown to six
digits in a table must still reach a spreadsheet as the JSON document holds it. Imported by the
renderers when they build a table (it imports rich).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.table import Table
from rich.text import Text

from kvscale.floats import exact_text, format_value


class ValueCell(Text):
    """A table cell: ``plain`` for people (and Markdown), ``exact`` for CSV."""

    __slots__ = ("exact",)

    def __init__(self, text: str, exact: str, style: str = "") -> None:
        super().__init__(text, style=style)
        self.exact = exact


def scale_cell(value: float | Sequence[float] | None, style: str = "") -> ValueCell:
    """A scale value: six significant digits (``*``: max over heads) for people, every digit
    (and every head) for CSV."""
    return ValueCell(format_value(value), exact_text(value), style)


def number_cell(value: float | None, shown: str, style: str = "") -> ValueCell:
    """Any other number, shown as ``shown``, exact in CSV."""
    return ValueCell(shown, exact_text(value), style)


def longest_word(cells: Iterable[object]) -> int:
    """The longest whitespace-separated word of the cells: the narrowest a wrapping column of
    numbers may get without splitting one."""
    words = [w for cell in cells for w in getattr(cell, "plain", str(cell)).split()]
    return max((len(w) for w in words), default=1)


def add_layer_column(table: Table, template: str | None) -> None:
    """The first column of a per-layer table: the layer index N when the names share a template
    (``render._common.layer_labels``; a number, never wrapped), else the names (they wrap and
    fold on a narrow terminal)."""
    table.add_column(
        "N" if template else "layer",
        justify="right" if template else "left",
        no_wrap=bool(template),
        overflow="fold",
    )
