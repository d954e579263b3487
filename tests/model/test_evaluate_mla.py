"""``evaluate_model`` on MLA layers: a latent codec replaces ``(kv_c, k_pe)`` where the cache is
written, so the model's attention reads the dequantized latent (checked against an independent
computation: a plain ``DynamicCache`` recording, the quantization formula written out, and the
model's own ``expand_kv``); the reference run is the model's own; the saved activations are the
latent rows the cache received.
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

from safetensors.torch import load_file  # noqa: E402
from support.models import random_samples  # noqa: E402

from kvscale.errors import UsageError  # noqa: E402
from kvscale.kernel.roundtrip import mla_latent_roundtrip, unquantized_roundtrip  # noqa: E402
from kvscale.model.evaluate import CacheVariant, LayerCodec, evaluate_model  # noqa: E402
from kvscale.model.hook import cache_kwarg_name  # noqa: E402
from kvscale.model.load import LoadedModel, load_model  # noqa: E402

LAYER0 = "model.layers.0.self_attn.attn"


@pytest.fixture(scope="module")
def lm(mla_model_dir: Callable[[str], Path]) -> LoadedModel:
    return load_model(mla_model_dir("deepseek_v3"))


class UpdateRecorder(transformers.DynamicCache):  # type: ignore[misc]
    def __init__(self, config: Any, seen: dict[int, tuple[Any, Any]]) -> None:
        super().__init__(config=config)
        self.seen = seen

    def update(self, key: Any, value: Any, layer_idx: int, *args: Any, **kwargs: Any) -> Any:
        self.seen[layer_idx] = (key.clone(), value.clone())
        return super().update(key, value, layer_idx, *args, **kwargs)


def latent_of(lm: LoadedModel, sample: tuple[int, ...]) -> dict[int, tuple[Any, Any]]:
    seen: dict[int, tuple[Any, Any]] = {}
    with torch.inference_mode():
        # ``cache`` since transformers 5.24, ``past_key_values`` before (the GPU image's 5.17).
        cache = {cache_kwarg_name(lm.model): UpdateRecorder(lm.model.config, seen)}
        lm.model(torch.tensor([sample]), **cache)
    return seen


def fp8_formula(x: Any, scale: float) -> Any:
    s = torch.tensor(scale, dtype=torch.float32)
    return (x.float() / s).clamp(-448.0, 448.0).to(torch.float8_e4m3fn).float() * s


@pytest.mark.parametrize("scale", [0.0078125 * 0.9, 1.0])
def test_attention_reads_the_dequantized_latent(
    lm: LoadedModel, monkeypatch: pytest.MonkeyPatch, scale: float
) -> None:
    """Only layer 0 quantized: its input is the unquantized model's, so what its ``expand_kv``
    gets must be the recorded latent through the formula, to the bit."""
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3Attention

    sample = random_samples((23,), seed=7)[0]
    kv_c, k_pe = latent_of(lm, sample)[0]
    expand = DeepseekV3Attention.expand_kv
    got: list[tuple[Any, Any]] = []

    def spy(self: Any, kv_nope: Any, k_rot: Any) -> Any:
        if self.layer_idx == 0:
            got.append((kv_nope.clone(), k_rot.clone()))
        return expand(self, kv_nope, k_rot)

    monkeypatch.setattr(DeepseekV3Attention, "expand_kv", spy)
    codec = LayerCodec(mla_latent_roundtrip(torch.tensor([scale]), "fp8", 32), latent=True)
    evaluate_model(lm, [sample], [CacheVariant("fp8", {LAYER0: codec})])
    reference, variant = got
    assert torch.equal(reference[0], kv_c) and torch.equal(reference[1], k_pe)
    row = fp8_formula(torch.cat([kv_c, k_pe], dim=-1), scale)
    assert torch.equal(variant[0], row[..., :32]) and torch.equal(variant[1], row[..., 32:])
    assert not torch.equal(variant[0], kv_c)  # the quantization did change the latent


def test_reference_is_the_models_own_and_activations_are_the_latent(
    lm: LoadedModel, tmp_path: Path
) -> None:
    samples = random_samples((19, 8), seed=9)
    saved = tmp_path / "kv.safetensors"
    exact = {name: LayerCodec(unquantized_roundtrip, latent=True) for name in _names(lm)}
    result = evaluate_model(lm, samples, [CacheVariant("copy", exact)], activations_out=saved)
    with torch.inference_mode():
        own = [lm.model(torch.tensor([s]), labels=torch.tensor([s])).loss for s in samples]
    want = (float(own[0]) * 18 + float(own[1]) * 7) / 25
    assert result.variant("unquantized").loss == want
    # A cache that stores the latent as it is changes no logit.
    assert result.variant("copy").loss == want and result.variant("copy").kl_max == 0.0
    tensors = load_file(str(saved))
    assert sorted(tensors) == sorted(f"{n}.{k}" for n in _names(lm) for k in ("kv_c", "k_pe"))
    for i, name in enumerate(_names(lm)):
        parts = [latent_of(lm, s)[i] for s in samples]
        kv_c = torch.cat([p[0].reshape(-1, 32) for p in parts])
        k_pe = torch.cat([p[1].reshape(-1, 16) for p in parts])
        assert torch.equal(tensors[f"{name}.kv_c"], kv_c)
        assert torch.equal(tensors[f"{name}.k_pe"], k_pe)


def _names(lm: LoadedModel) -> list[str]:
    return [layer.engine_name for layer in lm.layers]


def test_codecs_must_fit_the_layer(lm: LoadedModel) -> None:
    with pytest.raises(UsageError, match="a latent .MLA. codec has one round trip"):
        LayerCodec(unquantized_roundtrip, unquantized_roundtrip, latent=True)
    with pytest.raises(UsageError, match="a K/V codec needs a v round trip"):
        LayerCodec(unquantized_roundtrip)
    kv = LayerCodec(unquantized_roundtrip, unquantized_roundtrip)
    with pytest.raises(UsageError) as info:
        evaluate_model(lm, [(1, 2)], [CacheVariant("x", {LAYER0: kv})])
    assert info.value.one_line() == (
        f"variant 'x': {LAYER0} caches an MLA latent row, its codec K and V"
    )


def test_reference_from_the_captures_hidden_states(lm: LoadedModel) -> None:
    from kvscale.model.capture import capture_kv_amax

    samples = random_samples((19, 8), seed=9)
    scale = torch.tensor([0.05])
    fp8 = {
        name: LayerCodec(mla_latent_roundtrip(scale, "fp8", 32), latent=True) for name in _names(lm)
    }
    variants = [CacheVariant("fp8", fp8)]
    capture = capture_kv_amax(lm, samples, keep_final_hidden=True)
    kept = evaluate_model(lm, samples, variants, reference_hidden=capture.final_hidden)
    plain = evaluate_model(lm, samples, variants)
    given = evaluate_model(
        lm,
        samples,
        variants,
        reference_hidden=capture.final_hidden,
        reference_output=capture.first_output,
    )
    assert kept.reference_from_hidden and given.reference_from_hidden
    for run in (kept, given):
        assert [(v.loss, v.kl_mean, v.kl_max) for v in run.variants] == [
            (v.loss, v.kl_mean, v.kl_max) for v in plain.variants
        ]
