"""Render the problem catalogue (``kvscale codes``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvscale.problems import ProblemCode

if TYPE_CHECKING:
    from rich.console import RenderableType

SCHEMA = "kvscale.codes/1"


def codes_json(entries: Sequence[ProblemCode]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "codes": [
            {"code": c.code, "severity": c.severity.value, "meaning": c.meaning, "fix": c.fix}
            for c in entries
        ],
    }


def codes_renderables(entries: Sequence[ProblemCode]) -> list[RenderableType]:
    """One block per code: the code and severity, then its meaning and fix on their own lines
    (no table: long sentences stay whole, and grep finds each on one line)."""
    from rich.text import Text

    out: list[RenderableType] = []
    for c in entries:
        block = Text()
        block.append(c.code, style="bold")
        block.append(
            f"  ({c.severity.value})\n", style="red" if c.severity.value == "error" else "yellow"
        )
        block.append(f"  meaning: {c.meaning}\n")
        block.append(f"  fix: {c.fix}")
        out.append(block)
    return out
