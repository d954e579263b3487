"""The benchmark's sparse checkpoints, built once per session for the remote tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.remote import bench_checkpoint


@pytest.fixture(scope="session")
def big_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sparse Llama-405B: 126 layers in 191 shards."""
    return bench_checkpoint(tmp_path_factory.mktemp("llama-405b"))


@pytest.fixture(scope="session")
def mid_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same layout with 8 layers in 12 shards."""
    return bench_checkpoint(tmp_path_factory.mktemp("llama-8-layers"), layers=8, shards=12)
