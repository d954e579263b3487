"""kvscale.model.capture: the K/V statistic (per tensor and per head), batches and padding, the
holdout's saturation, non-finite activations, progress and option checks.

Tiny random models of several architectures are built with fixed seeds and saved to a temporary
directory with ``save_pretrained``; the amax kvscale reports must equal, to the bit, what an
independent ``DynamicCache`` subclass sees in ``update`` on the same tokens."""

from __future__ import annotations

import os
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")
np = pytest.importorskip("numpy")

from support.models import random_samples  # noqa: E402

from kvscale.errors import UsageError  # noqa: E402
from kvscale.model.capture import capture_kv_amax, capture_with_cache, holdout_indices  # noqa: E402
from kvscale.model.hook import RecordingCache, cache_kwarg_name  # noqa: E402
from kvscale.model.scales import kv_scales  # noqa: E402
from kvscale.progress import ProgressEvent  # noqa: E402

ARCHS = ["llama", "qwen2", "gemma2", "llama:bfloat16", "lfm2"]


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
        ProgressEvent("calibrate", 0, 3, tokens=0),
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


@pytest.mark.parametrize("kind", ["llama", "gemma2"])
def test_final_hidden_states_are_the_decoders_output(models: Any, kind: str) -> None:
    lm = models(kind)
    data = random_samples((13, 7), seed=5)
    plain = capture_kv_amax(lm, data, strategy="head")
    kept = capture_kv_amax(lm, data, strategy="head", keep_final_hidden=True)
    assert kept.layers == plain.layers and plain.final_hidden is None
    assert kept.final_hidden is not None and len(kept.final_hidden) == 2
    for sample, hidden in zip(data, kept.final_hidden, strict=True):
        with torch.inference_mode():
            want = lm.model.get_decoder()(input_ids=torch.tensor([sample]), use_cache=False)
        assert torch.equal(hidden, want.last_hidden_state)
    # The first sample's own logits (every position's) and loss, for the reference's check.
    assert plain.first_output is None and kept.first_output is not None
    ids = torch.tensor([data[0]])
    with torch.inference_mode():
        own = lm.model(input_ids=ids, labels=ids, use_cache=False)
    logits, loss = kept.first_output
    assert logits.shape == (1, 13, lm.vocab_size) and torch.equal(logits, own.logits)
    assert torch.equal(loss, own.loss)
    with pytest.raises(UsageError, match="batch 1"):
        capture_kv_amax(lm, data, batch_size=2, keep_final_hidden=True)
    with pytest.raises(UsageError, match="no holdout"):
        capture_kv_amax(lm, data, holdout=0.5, keep_final_hidden=True)


@pytest.mark.parametrize("kind", ["llama", "gemma2"])
def test_forward_asks_for_the_last_positions_logits_as_a_fresh_row(models: Any, kind: str) -> None:
    from kvscale.model.capture import _forward_kwargs

    lm = models(kind)
    kwargs = _forward_kwargs(lm.model)
    ids = torch.tensor([random_samples((11,), seed=3)[0]])
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    head = lm.model.get_output_embeddings()
    hook = head.register_forward_pre_hook(
        lambda _m, args: seen.append((tuple(args[0].shape), args[0].stride()))
    )
    try:
        with torch.inference_mode():
            last = lm.model(input_ids=ids, **kwargs).logits
            full = lm.model(input_ids=ids, use_cache=False).logits
    finally:
        hook.remove()
    hidden = lm.model.config.hidden_size
    # The head gets one row with the strides of a fresh [1, 1, hidden] tensor: with int 1 the
    # batch stride is that of all 11 positions, and torch's matmul copies the head's weight.
    assert seen[0] == ((1, 1, hidden), (hidden, hidden, 1))
    assert seen[1][0] == (1, 11, hidden)
    assert last.shape == (1, 1, lm.vocab_size)
    torch.testing.assert_close(last[0, 0], full[0, -1], rtol=1e-5, atol=1e-6)
