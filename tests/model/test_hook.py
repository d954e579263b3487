"""kvscale.model.hook: what the attention interface receives is what the cache stores, element
for element; the hook leaves the model as it found it."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")

from support.models import random_samples  # noqa: E402

from kvscale.model.hook import RecordingCache, attention_hook, cache_kwarg_name  # noqa: E402


def test_interface_and_cache_see_the_same_tensors(models: Any) -> None:
    """Element for element, not only the max: what the attention function gets with
    use_cache=False is what DynamicCache.update stores (sliding layers included)."""
    lm = models("gemma2")
    ids = torch.tensor([random_samples((10,))[0]])
    via_hook: dict[int, tuple[Any, Any]] = {}
    via_cache: dict[int, tuple[Any, Any]] = {}

    def hook(module: Any, k: Any, v: Any, _: Any) -> None:
        via_hook[module.layer_idx] = (k.clone(), v.clone())

    def record(idx: int, k: Any, v: Any) -> None:
        via_cache[idx] = (k.clone(), v.clone())

    with torch.inference_mode():
        with attention_hook(lm.model, hook):
            lm.model(input_ids=ids, use_cache=False)
        cache = RecordingCache(lm.model.config, record)
        lm.model(input_ids=ids, use_cache=True, **{cache_kwarg_name(lm.model): cache})
    assert sorted(via_hook) == sorted(via_cache) == [0, 1, 2]
    for idx in via_hook:
        assert torch.equal(via_hook[idx][0], via_cache[idx][0])
        assert torch.equal(via_hook[idx][1], via_cache[idx][1])
        assert via_hook[idx][0].shape == (1, 2, 10, 16)  # [batch, kv heads, tokens, head_dim]


def test_hook_restores_the_model(models: Any) -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS

    lm = models("llama")
    before = set(AttentionInterface._global_mapping)
    with pytest.raises(RuntimeError, match="boom"):
        with attention_hook(lm.model, lambda *a: None) as name:
            assert lm.model.config._attn_implementation == name
            assert lm.model.model.layers[0].self_attn.config._attn_implementation == name
            raise RuntimeError("boom")
    assert lm.model.config._attn_implementation == lm.attn_implementation == "sdpa"
    assert set(AttentionInterface._global_mapping) == before
    assert not any(
        k.startswith("kvscale_hook") for k in type(ALL_MASK_ATTENTION_FUNCTIONS)._global_mapping
    )
