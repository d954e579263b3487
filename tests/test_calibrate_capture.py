"""Model loading, the layer probe and the K/V statistic (kvscale/core/calibrate: model, hook,
capture).

Tiny random models of several architectures are built with fixed seeds and saved to a temporary
directory with ``save_pretrained``; the amax kvscale reports must equal, to the bit, what an
independent ``DynamicCache`` subclass sees in ``update`` on the same tokens.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from support.models import random_samples, save_tiny, tiny_config  # noqa: E402

from kvscale.errors import EnvironmentMissingError, InputError, UsageError  # noqa: E402
from kvscale.model.capture import (  # noqa: E402
    capture_kv_amax,
    capture_with_cache,
    holdout_indices,
)
from kvscale.model.hook import RecordingCache, attention_hook, cache_kwarg_name  # noqa: E402
from kvscale.model.load import (  # noqa: E402
    LoadedModel,
    ModelLoadError,
    UnsupportedModelError,
    checkpoint_tensor_names,
    load_model,
    map_attention_layers,
)
from kvscale.model.scales import kv_scales  # noqa: E402
from kvscale.progress import ProgressEvent  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], LoadedModel]:
    cache: dict[str, LoadedModel] = {}
    root = tmp_path_factory.mktemp("models")

    def get(kind: str) -> LoadedModel:
        if kind not in cache:
            base, _, dtype = kind.partition(":")
            path = save_tiny(
                base, root / kind.replace(":", "-"), dtype=getattr(torch, dtype) if dtype else None
            )
            cache[kind] = load_model(path)
        return cache[kind]

    return get


ARCHS = ["llama", "qwen2", "gemma2", "llama:bfloat16", "lfm2"]


# --- the statistic equals the cache oracle, to the bit ---------------------------------------


@pytest.mark.parametrize("kind", ARCHS)
@pytest.mark.parametrize("strategy", ["tensor", "head"])
def test_amax_equals_the_dynamic_cache_oracle(models: Any, kind: str, strategy: str) -> None:
    lm = models(kind)
    samples = random_samples((12, 5, 20))  # gemma2: longer than its 4-token window
    result = capture_kv_amax(lm, samples, strategy=strategy)
    oracle = capture_with_cache(lm, samples, strategy=strategy)
    assert [lc.name for lc in result.layers] == list(oracle)
    for lc in result.layers:
        assert (lc.k_amax, lc.v_amax) == oracle[lc.name], lc.name
        assert lc.tokens == 37
    assert result.samples == 3 and result.tokens == 37 and result.strategy == strategy


@pytest.mark.parametrize("kind", ["llama", "qwen2", "gemma2"])
def test_scales_equal_amax_over_448_in_float32(models: Any, kind: str) -> None:
    lm = models(kind)
    samples = random_samples((9, 14))
    oracle = capture_with_cache(lm, samples)
    scales = capture_kv_amax(lm, samples).scales()
    for name, (k_amax, v_amax) in oracle.items():
        expected = (
            float(np.float32(k_amax) / np.float32(448)),
            float(np.float32(v_amax) / np.float32(448)),
        )
        assert scales[name] == expected


def test_per_head_is_the_max_over_heads(models: Any) -> None:
    lm = models("gemma2")
    samples = random_samples((11,))
    per_tensor = capture_kv_amax(lm, samples)
    per_head = capture_kv_amax(lm, samples, strategy="head")
    for a, b in zip(per_tensor.layers, per_head.layers, strict=True):
        assert isinstance(b.k_amax, tuple) and len(b.k_amax) == 2
        assert a.k_amax == max(b.k_amax) and a.v_amax == max(b.v_amax)
    assert per_head.scales()[per_head.layers[0].name][0] == kv_scales(per_head.layers[0].k_amax)


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


# --- batches, padding, holdout, NaN ----------------------------------------------------------


@pytest.mark.parametrize("kind", ["llama", "gemma2"])
def test_padded_batches_match_batch_one(models: Any, kind: str) -> None:
    lm = models(kind)
    samples = random_samples((16, 7, 3, 11, 16))
    # Make padding conspicuous: token 0 (the pad id) gets a huge embedding, so a statistic that
    # counted padded positions would be far off.
    samples = [tuple(t if t else 1 for t in s) for s in samples]
    one = capture_kv_amax(lm, samples, strategy="head")
    emb = lm.model.get_input_embeddings().weight
    saved = emb[0].clone()
    try:
        with torch.no_grad():
            emb[0] = 1000.0
        batched = capture_kv_amax(lm, samples, strategy="head", batch_size=3)
    finally:
        with torch.no_grad():
            emb[0] = saved
    assert batched.tokens == one.tokens == 53
    for a, b in zip(one.layers, batched.layers, strict=True):
        # Float noise only (a GEMM over 3 x 16 rows rounds differently from one over 16, and
        # masked sdpa from causal sdpa); counting a padded position would be off by ~1000x.
        for x, y in zip(a.k_amax + a.v_amax, b.k_amax + b.v_amax, strict=True):
            assert y == pytest.approx(x, rel=1e-5)


def test_holdout_indices() -> None:
    assert holdout_indices(10, 0.0) == ()
    assert holdout_indices(10, 0.2) == (2, 7)
    assert holdout_indices(10, 0.5) == (1, 3, 5, 7, 9)
    assert holdout_indices(3, 0.01) == (1,)  # at least one
    assert holdout_indices(2, 0.99) == (1,)  # at least one calibration sample stays
    with pytest.raises(UsageError, match="needs at least 2 samples"):
        holdout_indices(1, 0.5)
    with pytest.raises(UsageError, match=r"must be a fraction in \[0, 1\)"):
        holdout_indices(5, 1.0)


def test_holdout_saturation_counts_what_the_cache_write_clips(models: Any) -> None:
    lm = models("llama")
    samples = random_samples((12, 9, 15, 10, 8, 14))
    held = holdout_indices(len(samples), 0.34)
    assert held == (1, 4)
    headroom = 0.5  # a scale half the calibrated max: some held-out values must clip
    result = capture_kv_amax(lm, samples, holdout=0.34, headroom=headroom)
    calib = [s for i, s in enumerate(samples) if i not in held]
    oracle = capture_with_cache(lm, calib)
    seen: dict[int, list[Any]] = {}

    def record(idx: int, k: Any, v: Any) -> None:
        seen.setdefault(idx, []).append((k.float(), v.float()))

    with torch.inference_mode():
        for i in held:
            ids = torch.tensor([samples[i]])
            cache = RecordingCache(lm.model.config, record)
            lm.model(input_ids=ids, use_cache=True, **{cache_kwarg_name(lm.model): cache})
    assert result.samples == 4 and result.holdout_samples == 2
    assert result.tokens == 12 + 15 + 10 + 14 and result.holdout_tokens == 9 + 8
    for lc in result.layers:
        assert (lc.k_amax, lc.v_amax) == oracle[lc.name]
        k_scale, v_scale = kv_scales(oracle[lc.name], headroom=headroom)
        for kind, scale, got in (
            ("k", k_scale, lc.holdout_saturated_k),
            ("v", v_scale, lc.holdout_saturated_v),
        ):
            col = 0 if kind == "k" else 1
            xs = [pair[col] for pair in seen[lc.layer.layer_idx]]
            # e4m3fn clips past 464 = 448 + half its ulp (32): below, values round to 448.
            clipped = sum(
                int(((x / torch.tensor(scale, dtype=torch.float32)).abs() > 464).sum()) for x in xs
            )
            total = sum(x.numel() for x in xs)
            assert got == clipped / total
            assert got > 0


def test_without_holdout_fields_are_none(models: Any) -> None:
    result = capture_kv_amax(models("llama"), random_samples((5,)))
    assert result.holdout_samples == 0
    assert all(
        lc.holdout_saturated_k is None and lc.holdout_saturated_v is None for lc in result.layers
    )


def test_nonfinite_activations_are_reported_without_a_scale(models: Any) -> None:
    lm = models("qwen2")
    bias = lm.model.model.layers[1].self_attn.v_proj.bias
    saved = bias.clone()
    try:
        with torch.no_grad():
            bias[0] = float("nan")
        result = capture_kv_amax(lm, random_samples((6, 4)))
    finally:
        with torch.no_grad():
            bias.copy_(saved)
    layer0, layer1 = result.layers
    assert layer0.k_finite and layer0.v_finite
    assert layer1.k_finite and not layer1.v_finite
    assert result.nonfinite_layers == ("model.layers.1.self_attn.attn",)
    scales = result.scales()
    assert scales["model.layers.1.self_attn.attn"][1] is None
    assert scales["model.layers.1.self_attn.attn"][0] is not None
    assert all(v is not None for v in scales["model.layers.0.self_attn.attn"])


def test_progress_callback(models: Any) -> None:
    calls: list[ProgressEvent] = []
    capture_kv_amax(
        models("llama"),
        random_samples((4, 5, 6)),
        batch_size=2,
        progress=calls.append,
    )
    assert calls == [
        ProgressEvent("calibrate", 2, 3, tokens=9),
        ProgressEvent("calibrate", 3, 3, tokens=15),
    ]


def test_capture_option_errors(models: Any) -> None:
    lm = models("llama")
    with pytest.raises(UsageError, match="--strategy 'channel' is not one of tensor, head"):
        capture_kv_amax(lm, [(1, 2)], strategy="channel")
    with pytest.raises(UsageError, match="--batch-size 0 must be at least 1"):
        capture_kv_amax(lm, [(1, 2)], batch_size=0)
    with pytest.raises(UsageError, match="--headroom"):
        capture_kv_amax(lm, [(1, 2)], headroom=0.0)
    with pytest.raises(UsageError, match="must not be empty"):
        capture_kv_amax(lm, [(1, 2), ()])


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


# --- the layer map ---------------------------------------------------------------------------


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


# --- loading and its refusals ----------------------------------------------------------------


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
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path / "model.safetensors"))
    del tensors["model.layers.1.mlp.up_proj.weight"]
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
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
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(path / "model.safetensors"))
    tensors["model.layers.1.self_attn.k_proj.weight"][0, 0] = float("nan")
    save_file(tensors, str(path / "model.safetensors"), metadata={"format": "pt"})
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
