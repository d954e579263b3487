"""kvscale.model.load: the layer map (sliding windows, hybrid models, checkpoint prefixes), the
dtype, and every refusal (MLA, attention outside the interface, missing weights, unknown or non-
causal architectures, unloadable models, no CUDA, max_memory without --device auto)."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import write_safetensors_file

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")

from support.models import random_samples, save_tiny, tiny_config  # noqa: E402

from kvscale.errors import EnvironmentMissingError, InputError, UsageError  # noqa: E402
from kvscale.model.capture import capture_kv_amax  # noqa: E402
from kvscale.model.load import (  # noqa: E402
    ModelLoadError,
    UnsupportedModelError,
    checkpoint_tensor_names,
    load_model,
    map_attention_layers,
)


def test_layer_map_of_a_sliding_window_model(models: Any) -> None:
    lm = models("gemma2")
    assert [(layer.layer_idx, layer.layer_type, layer.sliding_window) for layer in lm.layers] == [
        (0, "sliding_attention", 4),
        (1, "full_attention", None),
        (2, "sliding_attention", 4),
    ]
    first = lm.layers[0]
    assert first.module_path == first.checkpoint_prefix == "model.layers.0.self_attn"
    assert first.engine_name == "model.layers.0.self_attn.attn"
    assert (first.num_kv_heads, first.head_size, first.v_head_size, first.device) == (
        2,
        16,
        16,
        "cpu",
    )
    assert lm.skipped == ()
    assert lm.dtype == "float32" and lm.architecture == "Gemma2ForCausalLM"


def test_hybrid_model_calibrates_only_its_attention_layers(models: Any) -> None:
    lm = models("lfm2")
    assert [layer.engine_name for layer in lm.layers] == ["model.layers.1.self_attn.attn"]
    assert [(s.layer_idx, s.layer_type) for s in lm.skipped] == [(0, "conv"), (2, "conv")]
    assert all(s.reason == "no KV cache (not an attention layer)" for s in lm.skipped)


def test_attention_that_bypasses_the_interface_is_refused(tmp_path: Path) -> None:
    """A layer that writes its cache but computes attention itself must not be calibrated from
    a tensor the engine would not cache."""
    path = save_tiny("llama", tmp_path / "m")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = transformers.AutoModelForCausalLM.from_pretrained(str(path))
    attn = model.model.layers[1].self_attn
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    def forward(
        hidden_states: Any,
        position_embeddings: Any,
        attention_mask: Any = None,
        past_key_values: Any = None,
        **kwargs: Any,
    ) -> Any:
        shape = (*hidden_states.shape[:-1], -1, attn.head_dim)
        q = attn.q_proj(hidden_states).view(shape).transpose(1, 2)
        k = attn.k_proj(hidden_states).view(shape).transpose(1, 2)
        v = attn.v_proj(hidden_states).view(shape).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, *position_embeddings)
        cache = past_key_values if past_key_values is not None else kwargs.get("cache")
        if cache is not None:  # ``cache`` since transformers 5.2x
            k, v = cache.update(k, v, attn.layer_idx)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True, enable_gqa=True
        )
        return attn.o_proj(out.transpose(1, 2).reshape(*hidden_states.shape[:-1], -1)), None

    attn.forward = forward
    with pytest.raises(UnsupportedModelError) as info:
        map_attention_layers(model, checkpoint_tensor_names(path), path=path)
    assert info.value.message == (
        f"{path}: layer 1 writes its KV cache but does not call transformers' attention interface; "
        "its attention cannot be observed where the engine caches"
    )


def test_checkpoint_prefix_from_the_checkpoint_names(tmp_path: Path) -> None:
    """A checkpoint saved from the base model has no ``model.`` prefix; transformers adds it on
    load, and the scales must go under the checkpoint's own names."""
    config = tiny_config("llama")
    config.tie_word_embeddings = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        transformers.LlamaModel(config).save_pretrained(str(tmp_path / "base"))
    names = checkpoint_tensor_names(tmp_path / "base")
    assert "layers.0.self_attn.k_proj.weight" in names
    lm = load_model(tmp_path / "base")
    assert [
        (layer.module_path, layer.checkpoint_prefix, layer.engine_name) for layer in lm.layers
    ] == [
        ("model.layers.0.self_attn", "layers.0.self_attn", "layers.0.self_attn.attn"),
        ("model.layers.1.self_attn", "layers.1.self_attn", "layers.1.self_attn.attn"),
    ]


def test_dtype_auto_follows_the_config(tmp_path: Path) -> None:
    path = save_tiny("llama", tmp_path / "bf16", dtype=torch.bfloat16)
    assert json.loads((path / "config.json").read_text())["dtype"] == "bfloat16"
    assert load_model(path).dtype == "bfloat16"
    lm = load_model(path, dtype="float32")
    assert lm.dtype == "float32" and lm.model.dtype == torch.float32
    f32 = save_tiny("llama", tmp_path / "f32")
    assert load_model(f32).dtype == "float32"
    with pytest.raises(
        UsageError, match="--dtype 'int8' is not one of auto, bfloat16, float16, float32"
    ):
        load_model(f32, dtype="int8")


def test_missing_weights(tmp_path: Path) -> None:
    path = save_tiny("llama", tmp_path / "m")
    from safetensors.torch import load_file

    tensors = load_file(str(path / "model.safetensors"))
    del tensors["model.layers.1.mlp.up_proj.weight"]
    write_safetensors_file(path / "model.safetensors", tensors, {"format": "pt"})
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert info.value.message == (
        f"{path}: missing weights: 1 parameter(s) absent from the checkpoint, first "
        "model.layers.1.mlp.up_proj.weight (transformers would initialize them randomly)"
    )
    (path / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError) as info:
        load_model(path)
    assert info.value.message == f"{path}: missing weights: no *.safetensors file"


def test_unknown_and_non_causal_architectures(tmp_path: Path) -> None:
    path = save_tiny("llama", tmp_path / "m")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "model_type": "kvscale-imaginary"}))
    with pytest.raises(UnsupportedModelError) as info:
        load_model(path)
    assert info.value.message == (
        f"{path}: unknown architecture: transformers does not recognize this model_type"
    )
    vit = transformers.ViTConfig(
        hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    vit.save_pretrained(str(path))
    with pytest.raises(UnsupportedModelError) as info:
        load_model(path)
    assert info.value.message == (
        f"{path}: unknown architecture: transformers has no causal-LM class for model_type 'vit'"
    )


def test_unloadable_models(tmp_path: Path) -> None:
    nowhere = tmp_path / "nowhere"
    with pytest.raises(InputError) as info:
        load_model(nowhere)
    assert info.value.message == (
        f"{nowhere}: model does not exist (give a local Hugging Face model directory)"
    )
    path = save_tiny("llama", tmp_path / "m")
    (path / "config.json").write_text("{not json")
    with pytest.raises(ModelLoadError, match="unreadable config.json"):
        load_model(path)
    path = save_tiny("llama", tmp_path / "shape")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "hidden_size": 32}))
    with pytest.raises(ModelLoadError, match=r"wrong shape|cannot load the model"):
        load_model(path)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA refusal")
def test_cuda_without_cuda(tmp_path: Path) -> None:
    path = save_tiny("llama", tmp_path / "m")
    with pytest.raises(EnvironmentMissingError, match="--device cuda: no CUDA device is available"):
        load_model(path, device="cuda")
    assert load_model(path, device="auto").device == "cpu"  # auto falls back to the CPU


def test_a_model_with_nan_weights_loads_and_is_reported(tmp_path: Path) -> None:
    """NaN activations are a result (the layer is reported, exit 1), not a refusal."""
    path = save_tiny("llama", tmp_path / "nan")
    from safetensors.torch import load_file

    tensors = load_file(str(path / "model.safetensors"))
    tensors["model.layers.1.self_attn.k_proj.weight"][0, 0] = float("nan")
    write_safetensors_file(path / "model.safetensors", tensors, {"format": "pt"})
    lm = load_model(path)
    assert len(lm.layers) == 2
    result = capture_kv_amax(lm, random_samples((6,)))
    assert result.nonfinite_layers == ("model.layers.1.self_attn.attn",)
    assert not result.layers[1].k_finite and result.layers[1].v_finite
    assert math.isnan(result.layers[1].k_amax)
    assert result.scales()["model.layers.1.self_attn.attn"][0] is None


def test_max_memory_needs_device_auto(tmp_path: Path) -> None:
    path = save_tiny("llama", tmp_path / "m")
    with pytest.raises(UsageError, match="max_memory only applies to --device auto"):
        load_model(path, max_memory={"cpu": "1GiB"})
