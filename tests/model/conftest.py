"""Tiny random models (support/models.py), built and loaded once per session for every test of
the model runtime; a test that changes a model's weights restores them."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """``models(kind)``: the LoadedModel of ``kind`` (``llama``, ``qwen2``, ``gemma2``,
    ``lfm2``, optionally ``:dtype``, e.g. ``llama:bfloat16``), saved with seed 0."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
    from support.models import save_tiny

    from kvscale.model.load import load_model

    cache: dict[str, Any] = {}
    root = tmp_path_factory.mktemp("models")

    def get(kind: str) -> Any:
        if kind not in cache:
            base, _, dtype = kind.partition(":")
            path = save_tiny(
                base, root / kind.replace(":", "-"), dtype=getattr(torch, dtype) if dtype else None
            )
            cache[kind] = load_model(path)
        return cache[kind]

    return get
