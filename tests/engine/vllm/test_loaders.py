"""kvscale/engine/vllm/loaders.py: vLLM 0.33.0's ``WeightsMapper`` as data."""

from __future__ import annotations

from kvscale.engine.vllm.loaders import WeightsMapper


def test_weights_mapper_applies_vllms_order() -> None:
    """WeightsMapper._map_name_with_shard: every regex, substring, stacked, prefix and suffix
    rule in turn, each on the name the previous ones produced; a None target drops it."""
    mapper = WeightsMapper(
        regex=((r"\.kv_scale$", ".attn.k_scale"),),
        substr=((".self_attn.", ".attn."),),
        stacked=((".k_proj", ".qkv_proj"),),
        prefix=(("model.", "language_model.model."), ("language_model.model.x", None)),
        suffix=((".output_scale", ".attn.k_scale"),),
    )
    assert mapper.map("model.layers.0.self_attn.kv_scale") == (
        "language_model.model.layers.0.attn.attn.k_scale"
    )
    assert mapper.map("model.layers.0.self_attn.k_proj.output_scale") == (
        "language_model.model.layers.0.attn.qkv_proj.attn.k_scale"
    )
    assert mapper.map("model.x") is None
    merged = WeightsMapper(substr=(("a", "b"),)) | WeightsMapper(substr=(("a", "c"), ("d", "e")))
    assert merged.substr == (("a", "c"), ("d", "e"))
