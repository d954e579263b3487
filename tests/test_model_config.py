"""``layer_types`` and ``sliding_window`` as the Hugging Face config classes hold them, which
vLLM reads after the class ran (``hf_text_config``): kvscale derives them from config.json
without transformers (``kvscale.model_config.derived_layer_types``). The slow test runs the
installed transformers' own config classes on the same configs."""

from __future__ import annotations

from typing import Any

import pytest

from kvscale.model_config import parse_model_shape

CONFIGS: list[tuple[str, dict[str, Any]]] = [
    ("gemma2", {"num_hidden_layers": 5, "sliding_window": 4096}),
    ("gemma3_text", {"num_hidden_layers": 7, "sliding_window": 512}),
    ("gemma3_text", {"num_hidden_layers": 6, "sliding_window": 512, "sliding_window_pattern": 3}),
    ("cohere2", {"num_hidden_layers": 8, "sliding_window": 4096}),
    ("cohere2", {"num_hidden_layers": 6, "sliding_window": 4096, "sliding_window_pattern": 3}),
    ("gpt_oss", {"num_hidden_layers": 4, "sliding_window": 128}),
    ("qwen2", {"num_hidden_layers": 4, "sliding_window": 4096}),
    ("qwen2", {"num_hidden_layers": 4, "sliding_window": 4096, "use_sliding_window": True}),
    (
        "qwen2",
        {
            "num_hidden_layers": 4,
            "sliding_window": 64,
            "use_sliding_window": True,
            "max_window_layers": 2,
        },
    ),
    (
        "qwen3",
        {
            "num_hidden_layers": 3,
            "sliding_window": 64,
            "use_sliding_window": True,
            "max_window_layers": 0,
        },
    ),
    (
        "qwen2_moe",
        {
            "num_hidden_layers": 6,
            "sliding_window": 64,
            "use_sliding_window": True,
            "max_window_layers": 4,
        },
    ),
    ("qwen2_moe", {"num_hidden_layers": 4, "sliding_window": 64}),
    ("llama", {"num_hidden_layers": 3, "sliding_window": 64}),
    ("llama", {"num_hidden_layers": 2, "sliding_window": 0}),
    (
        "llama",
        {
            "num_hidden_layers": 2,
            "sliding_window": 64,
            "layer_types": ["full_attention", "sliding_attention"],
        },
    ),
]


def _ids() -> list[str]:
    return [f"{m}-{i}" for i, (m, _) in enumerate(CONFIGS)]


def test_exact_derivations() -> None:
    def shape(model_type: str, **config: Any) -> tuple[Any, Any]:
        s = parse_model_shape({"model_type": model_type, **config})
        return s.hf_layer_types, s.sliding_window

    s, f = "sliding_attention", "full_attention"
    assert shape("gemma3_text", num_hidden_layers=7, sliding_window=8) == ((s,) * 5 + (f, s), 8)
    assert shape("gemma2", num_hidden_layers=3, sliding_window=8) == ((s, f, s), 8)
    assert shape("cohere2", num_hidden_layers=4, sliding_window=8) == ((s, s, s, f), 8)
    assert shape("qwen2", num_hidden_layers=2, sliding_window=8) == ((f, f), None)
    assert shape(
        "qwen2_moe",
        num_hidden_layers=4,
        sliding_window=8,
        use_sliding_window=True,
        max_window_layers=3,
    ) == ((s, f, s, f), 8)
    # config.json's own list wins; a model type no class derives for keeps None
    assert shape("gemma2", num_hidden_layers=2, layer_types=[f, f]) == ((f, f), None)
    assert shape("llama", num_hidden_layers=2, sliding_window=0) == (None, None)


@pytest.mark.slow
@pytest.mark.parametrize(("model_type", "config"), CONFIGS, ids=_ids())
def test_matches_transformers_config_classes(model_type: str, config: dict[str, Any]) -> None:
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoConfig.for_model(model_type, **config)
    shape = parse_model_shape({"model_type": model_type, **config})
    types = getattr(hf, "layer_types", None)
    assert shape.hf_layer_types == (tuple(types) if types is not None else None)
    # vLLM's ModelConfig turns a 0 window into None (config/model.py)
    assert shape.sliding_window == (getattr(hf, "sliding_window", None) or None)
