"""Rendering helpers shared by the command renderers."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kvscale._version import __version__
from kvscale.problems import Problem
from kvscale.render.escape import sanitize

ERROR_SCHEMA = "kvscale.error/1"

_INDEXED = re.compile(r"^(.*\.layers\.)(\d+)(\..*)$")


def layer_labels(names: Sequence[str]) -> tuple[str | None, list[str]]:
    """Compact labels for long models: when every name is ``<A>.layers.N.<B>`` with one A and B,
    the column shows N and the title the template; otherwise the names without ``.attn``."""
    matches = [_INDEXED.match(name) for name in names]
    if names and all(matches):
        shapes = {(m.group(1), m.group(3)) for m in matches if m}
        if len(shapes) == 1:
            head, tail = shapes.pop()
            return f"{head}{{N}}{tail}", [m.group(2) for m in matches if m]
    return None, [name.removesuffix(".attn") for name in names]


def human_size(n: int) -> str:
    """``950 B``, ``9.7 KB``, ``1.2 GB`` (decimal units, as download tools show sizes)."""
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"  # pragma: no cover


def problem_lines(items: Sequence[Problem]) -> list[str]:
    """One sanitized line per problem (``code: layer: message``), for stderr."""
    return [sanitize(f"{p.code}: {p.layer + ': ' if p.layer else ''}{p.message}") for p in items]


def error_json(
    error_type: str, message: str, exit_code: int, input_: str | None = None
) -> dict[str, object]:
    """The ``kvscale.error/1`` document: what ``--json`` prints instead of a result when a
    command (or, in a list, one of several inputs) fails with an error, so that the document
    always says what happened. ``input``: the input it concerns, when known."""
    return {
        "schema": ERROR_SCHEMA,
        "kvscale_version": __version__,
        "input": input_,
        "error": {"type": error_type, "message": message, "exit_code": exit_code},
        "ok": False,
    }
