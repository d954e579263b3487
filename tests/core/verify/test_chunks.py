"""kvscale.core.verify.chunks: a layer measured in chunks gives the whole layer's statistics, to
the last bit, in every cache format; the chunks, the draw and the error sums on their own."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from support.checkpoints import (
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
    write_safetensors_file,
)

from kvscale.core.verify import chunks
from kvscale.core.verify.formats import synthetic_for
from kvscale.core.verify.run import VerifyOptions, verify_target
from kvscale.core.verify.stats import (
    KindStats,
    run_latent_layer,
    run_layer,
    synthetic_activations,
)
from kvscale.core.verify.target import LayerScales
from kvscale.engine.options import EngineOptions
from kvscale.engine.vllm.kv_cache_dtypes import cache_format
from kvscale.kernel.formats import E4M3FN
from kvscale.kernel.reference import reference_reshape_and_cache_flash

P = "model.layers.{}.self_attn"


def budget(monkeypatch: pytest.MonkeyPatch, values: int) -> None:
    """Chunks of ``values`` K or V values."""
    monkeypatch.setattr(chunks, "CHUNK_BYTES", values * chunks.BYTES_PER_VALUE)


def checkpoint(root: Path, *, per_head: bool) -> Path:
    """Two layers of 2 kv heads x 32: one scale per tensor, or one per kv head."""
    t = attention_weights(2)
    for i in range(2):
        k, v = ([0.01 + i / 100, 0.02], [0.03, 0.01]) if per_head else (0.5 + i / 8, 0.25)
        shape = (2, 1, 1) if per_head else None
        t[f"{P.format(i)}.k_scale"] = tensor(k, shape=shape)
        t[f"{P.format(i)}.v_scale"] = tensor(v, shape=shape)
    quant = quant_config("ct-head" if per_head else "compressed-tensors")
    return write_checkpoint(root, t, llama_config(2, quant=quant, head_dim=32))


def test_spans_draw_multiples_of_16_values_and_fill_the_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    budget(monkeypatch, 100)
    assert chunks.token_spans(40, 8) == ((0, 12), (12, 24), (24, 36), (36, 40))
    # A last chunk under 16 values joins the one before it.
    assert chunks.token_spans(37, 8) == ((0, 12), (12, 24), (24, 37))
    # 15 values a row: 16 rows make the smallest chunk that draws a multiple of 16.
    assert chunks.token_spans(49, 15) == ((0, 16), (16, 32), (32, 49))
    assert chunks.token_spans(5, 15) == ((0, 5),)
    assert chunks.token_spans(3, 96) == ((0, 1), (1, 2), (2, 3))
    assert chunks.token_spans(0, 8) == ()
    assert chunks.row_fits(96) and not chunks.row_fits(112)
    # 8 rows of 6 values fit, 16 rows of 7 or 4 rows of 100 do not.
    assert chunks.row_fits(6) and not chunks.row_fits(7) and not chunks.row_fits(100)


@pytest.mark.parametrize(("tokens", "heads", "head_size"), [(37, 3, 5), (40, 2, 16), (40, 1, 1)])
def test_a_sample_drawn_in_chunks_is_the_sample_drawn_whole(
    monkeypatch: pytest.MonkeyPatch, tokens: int, heads: int, head_size: int
) -> None:
    """Every value, and the generator after it, for the FP8 and NVFP4 sizings and unit
    magnitude."""
    nvfp4 = cache_format("nvfp4", "ocp")
    int8 = cache_format("int8_per_token_head", "ocp")
    scale = [0.1 * (h + 1) for h in range(heads)]
    draws = {
        "fp8": lambda g: synthetic_activations(tokens, heads, head_size, scale, E4M3FN, g),
        "nvfp4": lambda g: synthetic_for(nvfp4, tokens, heads, head_size, [0.02], g),
        "unit": lambda g: synthetic_for(int8, tokens, heads, head_size, [1.0], g),
    }
    for name, draw in draws.items():
        whole_gen = torch.Generator().manual_seed(7)
        whole = draw(whole_gen)
        assert isinstance(whole, chunks.HeldSample), name
        budget(monkeypatch, 16)
        chunked_gen = torch.Generator().manual_seed(7)
        chunked = draw(chunked_gen)
        monkeypatch.undo()
        assert isinstance(chunked, chunks.DrawnSample) and len(chunked.spans) > 1, name
        assert torch.equal(chunked.whole().view(torch.int16), whole.values.view(torch.int16))
        assert torch.equal(chunked_gen.get_state(), whole_gen.get_state()), name


@pytest.mark.parametrize(
    ("per_head", "engine", "sum_block"),
    [
        (False, {}, chunks.SUM_BLOCK),
        (False, {}, 1000),
        (True, {}, chunks.SUM_BLOCK),
        (False, {"engine": "sglang", "kv_cache_dtype": "fp8_e5m2"}, chunks.SUM_BLOCK),
        (False, {"kv_cache_dtype": "nvfp4"}, 1000),
        (False, {"kv_cache_dtype": "int8_per_token_head"}, chunks.SUM_BLOCK),
        (False, {"kv_cache_dtype": "int4_per_token_head"}, 1000),
        (False, {"kv_cache_dtype": "bfloat16"}, chunks.SUM_BLOCK),
    ],
)
def test_chunked_statistics_equal_the_whole_layer(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    per_head: bool,
    engine: dict[str, str],
    sum_block: int,
) -> None:
    """Counts, maxima and errors, bit for bit: chunks of 2 tokens against one chunk, with the
    error summed in one block (as before) or in blocks of 1,000 values."""
    target = checkpoint(tmp_path, per_head=per_head)
    options = VerifyOptions(tokens=64, engine=EngineOptions(**engine))  # type: ignore[arg-type]
    monkeypatch.setattr(chunks, "SUM_BLOCK", sum_block)
    whole = verify_target(target, options)
    budget(monkeypatch, 128)
    chunked = verify_target(target, options)
    assert whole.layers == chunked.layers
    stats = [layer.k for layer in whole.layers]
    assert [s.data if s is not None else None for s in stats] == ["synthetic"] * 2
    quantized = engine.get("kv_cache_dtype") != "bfloat16"
    assert all(s is not None and (s.rel_rms_error > 0) == quantized for s in stats)


def test_chunked_statistics_of_captured_activations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A captured layer (with a NaN and a zero) is measured chunk by chunk as well; the other
    layer is synthetic."""
    target = checkpoint(tmp_path / "ckpt", per_head=False)
    g = torch.Generator().manual_seed(1)
    k, v = torch.randn(101, 2, 32, generator=g), torch.randn(101, 2, 32, generator=g) / 4
    k[3, 1, 5], v[50, 0, 0] = math.nan, 0.0
    name = "model.layers.0.self_attn.attn"
    activations = write_safetensors_file(
        tmp_path / "acts.safetensors",
        {f"{name}.k": k.to(torch.bfloat16), f"{name}.v": v.to(torch.bfloat16)},
    )
    options = VerifyOptions(tokens=64, activations=activations)
    whole = verify_target(target, options)
    budget(monkeypatch, 64)
    chunked = verify_target(target, options)
    assert whole.layers == chunked.layers
    assert whole.layers[0].k is not None and whole.layers[0].k.data == "activations"


def test_the_whole_cache_path_measures_what_the_chunks_measure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a kernel to compare (the reference itself, on the CPU), the layer is written whole
    into one cache; its statistics equal those of the chunked reference run."""
    layer = LayerScales("model.layers.0.self_attn.attn", 0.02, 0.01, (0.02, 0.01), (0.01, 0.01))
    g = torch.Generator().manual_seed(4)
    kv_data = {
        kind: (synthetic_activations(97, 2, 32, scale, E4M3FN, g), "synthetic")
        for kind, scale in (("k", [0.02, 0.01]), ("v", [0.01, 0.01]))
    }

    def run(kernel: Callable[..., None] | None) -> tuple[KindStats, KindStats]:
        return run_layer(
            layer, kv_data, "fp8", E4M3FN, torch.device("cpu"), kernel,
            torch.Generator().manual_seed(0), None, kernel,
        )  # fmt: skip

    budget(monkeypatch, 64)
    chunked = run(None)
    whole = run(reference_reshape_and_cache_flash)
    assert [replace(s, mismatched_bytes=None) for s in whole] == list(chunked)
    assert [s.mismatched_bytes for s in whole] == [0, 0]


def test_chunked_statistics_of_latent_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    g = torch.Generator().manual_seed(2)
    rows = (torch.randn(203, 48, generator=g) * 40).to(torch.bfloat16)
    layer = LayerScales("model.layers.0.self_attn.attn", 0.1, 0.1, (0.1,), (0.1,))

    def run() -> KindStats:
        return run_latent_layer(
            layer, rows, "activations", 32, "fp8", E4M3FN, torch.device("cpu"), None,
            torch.Generator().manual_seed(0),
        )  # fmt: skip

    whole = run()
    budget(monkeypatch, 100)
    assert run() == whole


def test_the_error_sums_as_one_torch_sum_up_to_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The block sums are torch's sums of the blocks' values, whatever pieces they came in."""
    g = torch.Generator().manual_seed(3)
    x = torch.randn(5000, generator=g)
    y = x + torch.randn(5000, generator=g) / 50
    xd, yd = x.double(), y.double()

    def sums(a: int, b: int) -> tuple[float, float]:
        return float((yd[a:b] - xd[a:b]).pow(2).sum()), float(xd[a:b].pow(2).sum())

    error = chunks.RelativeRmsError()
    for start in range(0, 5000, 700):
        error.add(x[start : start + 700], y[start : start + 700])
    whole_error, whole_energy = sums(0, 5000)
    assert error.value() == math.sqrt(whole_error / whole_energy)
    assert (error._errors, error._energies) == ([whole_error], [whole_energy])
    monkeypatch.setattr(chunks, "SUM_BLOCK", 1024)
    blocks = [sums(start, min(start + 1024, 5000)) for start in range(0, 5000, 1024)]
    expected = math.sqrt(math.fsum(e for e, _ in blocks) / math.fsum(n for _, n in blocks))
    for step in (1, 333, 1024, 5000):
        error = chunks.RelativeRmsError()
        for start in range(0, 5000, step):
            error.add(x[start : start + step], y[start : start + step])
        assert error.value() == expected
        assert list(zip(error._errors, error._energies, strict=True)) == blocks
    assert chunks.RelativeRmsError().value() == 0.0


def test_chunk_slots_keep_the_order_of_the_layer_slots() -> None:
    mapping, blocks = chunks.chunk_slots(torch.tensor([90, -1, 7, 300, 8, -1]), 16)
    assert mapping.tolist() == [2, -1, 0, 3, 1, -1] and blocks == 1
    mapping, blocks = chunks.chunk_slots(torch.tensor([-1, -1]), 16)
    assert mapping.tolist() == [-1, -1] and blocks == 1
