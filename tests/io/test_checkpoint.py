"""kvscale.io.checkpoint: ``open_checkpoint`` validates the index before opening any shard,
resolves Hugging Face caches, and reads only the shards the index names."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace
from typing import Any

import pytest
from support.checkpoints import hf_cache

from kvscale.errors import CheckpointLayoutError
from kvscale.io.checkpoint import open_checkpoint

INDEX = "model.safetensors.index.json"


def test_no_shard_is_opened_before_the_index_is_validated(
    ckpt_kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = ckpt_kit.make("ckpt", shards=2)
    doc = json.loads((directory / INDEX).read_text())
    doc["weight_map"]["zzz.last"] = "/etc/passwd"  # the very last entry is the bad one
    (directory / INDEX).write_text(json.dumps(doc))
    seen: list[str] = []
    real = os.open

    def record(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", record)
    with pytest.raises(CheckpointLayoutError, match="outside the checkpoint"):
        open_checkpoint(directory)
    assert not [p for p in seen if p.endswith(".safetensors")], seen


def test_hf_cache_resolves(ckpt_kit: SimpleNamespace) -> None:
    repo = hf_cache(
        ckpt_kit.make("source"), ckpt_kit.tmp / "models--org--name", revisions=("abc123",)
    )
    ckpt = open_checkpoint(repo)
    assert ckpt.layout == "hf-cache"
    assert ckpt.root == repo / "snapshots" / "abc123"
    assert ckpt.config is not None


def test_shard_not_in_index_is_ignored_like_the_engine(ckpt_kit: SimpleNamespace) -> None:
    """vLLM loads only the files the index names; a stray shard is not read at all."""
    directory = ckpt_kit.make("ckpt", shards=2)
    (directory / "stray.safetensors").write_bytes(b"garbage")
    ckpt = open_checkpoint(directory)
    assert "stray.safetensors" not in ckpt.files
