"""kvscale.io.safetensors: validated headers and bounded tensor reads."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from support.hostile import HOSTILE


def test_hostile_metadata_is_kept_exactly(ckpt_kit: SimpleNamespace) -> None:
    from kvscale.io.safetensors import read_header

    metadata = {f"key{HOSTILE}": f"[bold]{HOSTILE}", "format": "pt"}
    path = ckpt_kit.write(ckpt_kit.tmp / "m.safetensors", {"a": _zeros()}, metadata)
    assert read_header(path).metadata == metadata


def _zeros() -> Any:
    import torch

    return torch.zeros(1)
