"""kvscale.model.load on MLA models (DeepSeek-V2/V3 style): the probe records latent layers from
what ``cache.update`` receives, and refuses, in one line, what it cannot calibrate correctly: a
transformers that caches the expanded per-head K/V (5.0-5.14), an MLA config without the latent
widths, a latent of another width than the config's.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install 'kvscale[calibrate]'")
torch = pytest.importorskip("torch")

from support.cli import CliRunner  # noqa: E402
from support.models import random_samples  # noqa: E402

from kvscale.cli import app  # noqa: E402
from kvscale.model.hook import cache_kwarg_name  # noqa: E402
from kvscale.model.load import (  # noqa: E402
    AttentionLayer,
    LatentRow,
    LoadedModel,
    UnsupportedModelError,
    checkpoint_tensor_names,
    load_model,
    map_attention_layers,
)


@pytest.fixture(scope="module")
def deepseek_v3(mla_model_dir: Callable[[str], Path]) -> LoadedModel:
    return load_model(mla_model_dir("deepseek_v3"))


def expected_layers(count: int) -> tuple[AttentionLayer, ...]:
    return tuple(
        AttentionLayer(
            layer_idx=i,
            module_path=f"model.layers.{i}.self_attn",
            checkpoint_prefix=f"model.layers.{i}.self_attn",
            engine_name=f"model.layers.{i}.self_attn.attn",
            layer_type="full_attention",
            sliding_window=None,
            num_kv_heads=1,
            head_size=48,
            v_head_size=0,
            device="cpu",
            latent=LatentRow(kv_lora_rank=32, rope_dim=16),
        )
        for i in range(count)
    )


def test_deepseek_v3_layers_are_latent(deepseek_v3: LoadedModel) -> None:
    assert deepseek_v3.architecture == "DeepseekV3ForCausalLM"
    assert deepseek_v3.layers == expected_layers(3)
    assert deepseek_v3.skipped == ()
    assert LatentRow(32, 16).width == 48


@pytest.mark.parametrize(
    "kind", ["deepseek_v2", pytest.param("glm4_moe_lite", marks=pytest.mark.slow)]
)
def test_other_mla_architectures_are_latent(
    mla_model_dir: Callable[[str], Path], kind: str
) -> None:
    assert load_model(mla_model_dir(kind)).layers == expected_layers(3)


# --- refusals -------------------------------------------------------------------------------


def _caching_expanded_kv(attention_class: Any) -> Callable[..., Any]:
    """``attention_class.forward`` as transformers 5.0-5.14 ran MLA: the cache stores the
    per-head K/V made from the latent (the tensors the attention function gets), never the latent
    itself (5.14.0 ``modeling_deepseek_v3.py`` line 449). The probe under the real 5.14.0 wheel
    gives the message the next test expects, with that version in it."""
    latent_forward = attention_class.forward
    # The attention's cache argument: ``cache`` in transformers 5.24, ``past_key_values`` in 5.17.
    name = "cache" if "cache" in inspect.signature(latent_forward).parameters else "past_key_values"

    def forward(
        self: Any,
        hidden_states: Any,
        position_embeddings: Any,
        attention_mask: Any,
        **kwargs: Any,
    ) -> Any:
        cache = kwargs.pop(name, None)
        expand = type(self).expand_kv

        def expand_then_cache(kv_nope: Any, k_rot: Any) -> Any:
            key, value = expand(self, kv_nope, k_rot)
            if cache is None:
                return key, value
            return cache.update(key, value, self.layer_idx)

        self.expand_kv = expand_then_cache
        try:
            kwargs[name] = None
            return latent_forward(
                self, hidden_states, position_embeddings, attention_mask, **kwargs
            )
        finally:
            del self.expand_kv

    return forward


@pytest.fixture
def old_transformers(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from transformers.models.deepseek_v3 import modeling_deepseek_v3 as m

    monkeypatch.setattr(
        m.DeepseekV3Attention, "forward", _caching_expanded_kv(m.DeepseekV3Attention)
    )
    yield


def test_expand_then_cache_shim_caches_the_expanded_kv(
    old_transformers: None, deepseek_v3: LoadedModel
) -> None:
    """The shim the next test relies on: the cache gets K [1, 4, S, 32] / V [1, 4, S, 16]."""
    seen: list[tuple[int, ...]] = []

    class Recorder(transformers.DynamicCache):  # type: ignore[misc]
        def update(self, key: Any, value: Any, layer_idx: int, *a: Any, **kw: Any) -> Any:
            seen.append((*key.shape, *value.shape))
            return super().update(key, value, layer_idx, *a, **kw)

    with torch.inference_mode():
        deepseek_v3.model(
            torch.tensor([random_samples((5,))[0]]),
            **{cache_kwarg_name(deepseek_v3.model): Recorder(config=deepseek_v3.model.config)},
        )
    assert seen == [(1, 4, 5, 32, 1, 4, 5, 16)] * 3


def test_transformers_caching_expanded_kv_is_refused(
    old_transformers: None, mla_model_dir: Callable[[str], Path]
) -> None:
    path = mla_model_dir("deepseek_v3")
    with pytest.raises(UnsupportedModelError) as info:
        load_model(path)
    assert info.value.one_line() == (
        f"{path}: model.layers.0.self_attn: transformers {transformers.__version__} caches this "
        "MLA layer's "
        "decompressed per-head K/V [1, 4, 6, 32] / [1, 4, 6, 16], not the latent [kv_c | k_pe] "
        "the engine caches; transformers >= 5.15.0 caches the latent (pip install "
        "'transformers>=5.15.0')"
    )


def test_calibrate_with_old_transformers_exits_2_and_writes_nothing(
    old_transformers: None, mla_model_dir: Callable[[str], Path], tmp_path: Path
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"input_ids": list(range(1, 20))}) + "\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        ["calibrate", str(mla_model_dir("deepseek_v3")), "--data", str(data), "--out", str(out),
         "--device", "cpu"],
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("kvscale: error: ")
    assert "caches this MLA layer's decompressed per-head K/V" in line
    assert not out.exists()


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [("qk_rope_head_dim", None, "null"), ("kv_lora_rank", 0, "0"), ("kv_lora_rank", "32", '"32"')],
)
def test_mla_config_without_a_width_is_refused(
    mla_model_dir: Callable[[str], Path], tmp_path: Path, key: str, value: Any, shown: str
) -> None:
    path = tmp_path / "m"
    shutil.copytree(mla_model_dir("deepseek_v3"), path)
    config = json.loads((path / "config.json").read_text())
    config[key] = value
    (path / "config.json").write_text(json.dumps(config))
    with pytest.raises(UnsupportedModelError) as info:
        load_model(path)
    assert info.value.one_line() == (
        f"{path}: config.json is an MLA config without a usable {key} ({shown}); the engine's "
        "latent cache row is kv_lora_rank + qk_rope_head_dim wide"
    )


def test_a_latent_of_the_wrong_width_is_refused(
    deepseek_v3: LoadedModel, mla_model_dir: Callable[[str], Path]
) -> None:
    """The engine sizes its cache rows from config.json; an update of another width would be
    calibrated against rows the engine does not have."""
    path = mla_model_dir("deepseek_v3")
    config = deepseek_v3.model.config
    config.kv_lora_rank = 24
    try:
        with pytest.raises(UnsupportedModelError) as info:
            map_attention_layers(deepseek_v3.model, checkpoint_tensor_names(path), path=path)
    finally:
        config.kv_lora_rank = 32
    assert info.value.one_line() == (
        f"{path}: model.layers.0.self_attn: a latent of the wrong width: cache.update gets "
        "[1, 1, 6, 32] / [1, 1, 6, 16], the config's kv_lora_rank 24 and qk_rope_head_dim 16 "
        "mean [1, 1, 6, 24] / [1, 1, 6, 16]"
    )
