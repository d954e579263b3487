"""Rendering helpers shared by the command renderers."""

from __future__ import annotations

import re
from collections.abc import Sequence

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
