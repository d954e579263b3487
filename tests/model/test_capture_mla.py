"""``capture_kv_amax`` on MLA layers: the statistic is taken where the latent cache is written, one
scale per layer, ``max(amax(kv_c), amax(k_pe)) / 448``; it must equal, to the bit, what a plain
``DynamicCache`` subclass defined here sees in ``update`` on the same tokens.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install 'kvscale[calibrate]'")
torch = pytest.importorskip("torch")

from support.models import random_samples  # noqa: E402

from kvscale.errors import UsageError  # noqa: E402
from kvscale.model.capture import capture_kv_amax, holdout_indices  # noqa: E402
from kvscale.model.hook import cache_kwarg_name  # noqa: E402
from kvscale.model.load import LoadedModel, load_model  # noqa: E402

SAMPLES = (12, 5, 20)


class UpdateRecorder(transformers.DynamicCache):  # type: ignore[misc]
    """The oracle: every ``update`` input, kept as float32 on the CPU."""

    def __init__(self, config: Any, seen: dict[int, list[tuple[Any, Any]]]) -> None:
        super().__init__(config=config)
        self.seen = seen

    def update(self, key: Any, value: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
        self.seen.setdefault(layer_idx, []).append((key.float().cpu(), value.float().cpu()))
        return super().update(key, value, layer_idx, *args, **kwargs)


def recorded(lm: LoadedModel, samples: list[tuple[int, ...]]) -> dict[int, list[tuple[Any, Any]]]:
    seen: dict[int, list[tuple[Any, Any]]] = {}
    with torch.inference_mode():
        for sample in samples:
            # ``cache`` since transformers 5.24, ``past_key_values`` before (the GPU image's 5.17).
            cache = {cache_kwarg_name(lm.model): UpdateRecorder(lm.model.config, seen)}
            lm.model(torch.tensor([sample]), use_cache=True, **cache)
    return seen


def f32_div(a: float, b: float) -> float:
    return float(torch.tensor(a, dtype=torch.float32) / torch.tensor(b, dtype=torch.float32))


@pytest.fixture(scope="module")
def models(mla_model_dir: Callable[[str], Path]) -> Callable[[str], LoadedModel]:
    cache: dict[str, LoadedModel] = {}

    def get(kind: str) -> LoadedModel:
        if kind not in cache:
            cache[kind] = load_model(mla_model_dir(kind))
        return cache[kind]

    return get


@pytest.mark.parametrize(
    "kind",
    ["deepseek_v3", "deepseek_v2", pytest.param("glm4_moe_lite", marks=pytest.mark.slow)],
)
def test_one_scale_per_layer_equals_the_update_oracle(models: Any, kind: str) -> None:
    lm = models(kind)
    samples = random_samples(SAMPLES)
    result = capture_kv_amax(lm, samples)
    seen = recorded(lm, samples)
    assert sorted(seen) == [0, 1, 2]
    scales = result.scales()
    for lc in result.layers:
        parts = seen[lc.layer.layer_idx]
        assert [(tuple(k.shape), tuple(v.shape)) for k, v in parts] == [
            ((1, 1, n, 32), (1, 1, n, 16)) for n in SAMPLES
        ]
        kv_c = max(float(k.abs().max()) for k, _ in parts)
        k_pe = max(float(v.abs().max()) for _, v in parts)
        assert lc.latent_amax == (kv_c, k_pe)
        assert lc.k_amax == lc.v_amax == max(kv_c, k_pe)
        assert lc.tokens == sum(SAMPLES)
        want = f32_div(max(kv_c, k_pe), 448.0)
        assert scales[lc.name] == (want, want)


def test_padding_never_reaches_the_latent_statistic(models: Any) -> None:
    """Right-padded batches (pad id 0, its embedding blown up) give the batch-1 values up to GEMM
    float noise; a counted padded position would be off by orders of magnitude."""
    lm = models("deepseek_v3")
    samples = random_samples((16, 9, 3), seed=4)
    samples = [tuple(t or 1 for t in s) for s in samples]  # no real token is the pad id 0
    one = capture_kv_amax(lm, samples)
    emb = lm.model.get_input_embeddings().weight
    saved = emb[0].clone()
    try:
        with torch.no_grad():
            emb[0] = 1000.0
        batched = capture_kv_amax(lm, samples, batch_size=3)
    finally:
        with torch.no_grad():
            emb[0] = saved
    assert batched.tokens == one.tokens == 28
    for a, b in zip(one.layers, batched.layers, strict=True):
        assert a.latent_amax is not None and b.latent_amax is not None
        for x, y in zip(a.latent_amax, b.latent_amax, strict=True):
            assert y == pytest.approx(x, rel=1e-5)


def test_holdout_counts_the_rows_saturated_values(models: Any) -> None:
    """Half the headroom: the held-out sample's row values past 464 x scale (the e4m3fn store
    clips those) over all its row values."""
    lm = models("deepseek_v3")
    samples = random_samples((12, 30, 20), seed=2)
    held = holdout_indices(3, 0.34)
    assert held == (1,)
    result = capture_kv_amax(lm, samples, holdout=0.34, headroom=0.5)
    calib = recorded(lm, [samples[0], samples[2]])
    test = recorded(lm, [samples[1]])
    for lc in result.layers:
        idx = lc.layer.layer_idx
        amax = max(float(t.abs().max()) for pair in calib[idx] for t in pair)
        scale = f32_div(float(torch.tensor(amax, dtype=torch.float32) * 0.5), 448.0)
        ((k, v),) = test[idx]
        clipped = sum(int(((t / torch.tensor(scale)).abs() > 464).sum()) for t in (k, v))
        fraction = clipped / (30 * 48)
        assert fraction > 0
        assert lc.holdout_saturated_k == lc.holdout_saturated_v == fraction
        assert (lc.tokens, lc.holdout_tokens) == (32, 30)


def test_head_strategy_is_refused_for_latent_layers(models: Any) -> None:
    with pytest.raises(UsageError) as info:
        capture_kv_amax(models("deepseek_v3"), [(1, 2, 3)], strategy="head")
    assert info.value.one_line() == (
        "--strategy head: model.layers.0.self_attn and 2 more are MLA layers, whose cache holds "
        "one latent row per token ([kv_c | k_pe], one head) written with one k scale (use "
        "--strategy tensor)"
    )
