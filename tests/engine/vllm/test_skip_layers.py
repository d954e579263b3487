"""vLLM 0.33.0's --kv-cache-dtype-skip-layers as kvscale applies it (kvscale/engine/vllm/
skip_layers.py). tests/parity/test_vllm_dtype_parity.py checks the same rules against vLLM's
own code on the oracle's catalogue; these pin the rules on configs the catalogue does not
build (GPT-OSS, Qwen2, Gemma-2, VLM text configs, odd entries)."""

from __future__ import annotations

from typing import Any

import pytest

from kvscale.engine.vllm.skip_layers import (
    boundary_skip_layers,
    effective_skip_layers,
    layer_sliding_window,
    skipped_by,
)
from kvscale.model_config import ModelShape, parse_model_shape


def _shape(arch: str, model_type: str, layers: int, **extra: Any) -> ModelShape:
    return parse_model_shape(
        {"architectures": [arch], "model_type": model_type, "num_hidden_layers": layers, **extra}
    )


def _windows(shape: ModelShape) -> list[int | None]:
    assert shape.num_hidden_layers is not None
    return [layer_sliding_window(shape, i) for i in range(shape.num_hidden_layers)]


def test_llama_model_level_window_without_layer_types() -> None:
    shape = _shape("LlamaForCausalLM", "llama", 3, sliding_window=64)
    assert _windows(shape) == [64, 64, 64]


def test_interleaved_layer_types_keep_full_layers_full() -> None:
    types = ["sliding_attention", "full_attention", "sliding_attention"]
    shape = _shape("LlamaForCausalLM", "llama", 3, sliding_window=64, layer_types=types)
    assert _windows(shape) == [64, None, 64]


def test_window_zero_or_null_is_none() -> None:
    assert _windows(_shape("LlamaForCausalLM", "llama", 2, sliding_window=0)) == [None, None]
    assert _windows(_shape("LlamaForCausalLM", "llama", 2, sliding_window=None)) == [None, None]


def test_gemma3_pattern_becomes_layer_types() -> None:
    # Gemma3TextConfig: layer i slides iff (i + 1) % sliding_window_pattern, default 6
    shape = _shape("Gemma3ForCausalLM", "gemma3_text", 7, sliding_window=512)
    assert _windows(shape) == [512] * 5 + [None, 512]
    three = _shape(
        "Gemma3ForCausalLM", "gemma3_text", 6, sliding_window=512, sliding_window_pattern=3
    )
    assert _windows(three) == [512, 512, None, 512, 512, None]


def test_gemma3_vlm_reads_its_text_config() -> None:
    shape = parse_model_shape(
        {
            "architectures": ["Gemma3ForConditionalGeneration"],
            "model_type": "gemma3",
            "text_config": {
                "model_type": "gemma3_text",
                "num_hidden_layers": 4,
                "sliding_window": 1024,
                "sliding_window_pattern": 2,
            },
        }
    )
    assert shape.hf_layer_types == (
        "sliding_attention",
        "full_attention",
        "sliding_attention",
        "full_attention",
    )
    assert _windows(shape) == [1024, None, 1024, None]


def test_gemma2_every_second_layer_is_full() -> None:
    assert _windows(_shape("Gemma2ForCausalLM", "gemma2", 4, sliding_window=4096)) == [
        4096,
        None,
        4096,
        None,
    ]


def test_gpt_oss_even_layers_slide() -> None:
    # models/gpt_oss.py: layer_idx % 2 == 0, whatever layer_types says
    types = ["full_attention"] * 4
    shape = _shape("GptOssForCausalLM", "gpt_oss", 4, sliding_window=128, layer_types=types)
    assert _windows(shape) == [128, None, 128, None]


def test_qwen2_window_needs_the_switch_and_has_no_per_layer_value() -> None:
    # Qwen2Config drops the window unless use_sliding_window (default false)
    off = _shape("Qwen2ForCausalLM", "qwen2", 4, sliding_window=4096)
    assert off.sliding_window is None and _windows(off) == [None] * 4
    # on, from max_window_layers: layer types mixed, and Qwen2's layers take no per-layer
    # window, so the model-level window does not apply either
    mixed = _shape(
        "Qwen2ForCausalLM",
        "qwen2",
        4,
        sliding_window=4096,
        use_sliding_window=True,
        max_window_layers=2,
    )
    assert mixed.hf_layer_types == ("full_attention",) * 2 + ("sliding_attention",) * 2
    assert _windows(mixed) == [None] * 4
    every = _shape(
        "Qwen2ForCausalLM",
        "qwen2",
        2,
        sliding_window=4096,
        use_sliding_window=True,
        max_window_layers=0,
    )
    assert _windows(every) == [4096, 4096]


def test_nemotron_h_every_attention_layer() -> None:
    shape = _shape(
        "NemotronHForCausalLM", "nemotron_h", 4, sliding_window=32, hybrid_override_pattern="M*M*"
    )
    assert [layer_sliding_window(shape, i) for i in (1, 3)] == [32, 32]


def test_boundary_layers() -> None:
    def boundary(n: int) -> tuple[str, ...]:
        return boundary_skip_layers("turboquant_k8v4", _shape("LlamaForCausalLM", "llama", n))

    assert [boundary(n) for n in (1, 2, 3, 4, 5)] == [
        (),
        ("0", "1"),
        ("0", "2"),
        ("0", "1", "2", "3"),
        ("0", "1", "3", "4"),
    ]
    assert boundary_skip_layers("fp8", _shape("LlamaForCausalLM", "llama", 12)) == ()
    hybrid = _shape("NemotronHForCausalLM", "nemotron_h", 6, hybrid_override_pattern="M*-*M*")
    assert boundary_skip_layers("ultraquant_4bit", hybrid) == ()


def test_effective_list() -> None:
    llama12 = _shape("LlamaForCausalLM", "llama", 12)
    # the union with the boundary, sorted as strings; other dtypes keep the user's list as given
    assert effective_skip_layers(
        ["5", "sliding_window", "10", "5"], "turboquant_k8v4", llama12
    ) == (
        "0",
        "1",
        "10",
        "11",
        "5",
        "sliding_window",
    )
    assert effective_skip_layers(["3", "1", "3"], "fp8", llama12) == ("3", "1", "3")
    assert effective_skip_layers([], "auto", llama12) == ()


@pytest.mark.parametrize("entry", ["01", " 1", "1 ", "+1", "1.0", "layers.1", "SLIDING_WINDOW"])
def test_entries_match_as_strings_only(entry: str) -> None:
    shape = _shape("LlamaForCausalLM", "llama", 4, sliding_window=64)
    assert skipped_by(1, [entry], "fp8", shape, latent=False) is None


def test_why_a_layer_is_skipped() -> None:
    shape = _shape("LlamaForCausalLM", "llama", 6, sliding_window=64)
    skip = effective_skip_layers(["2"], "turboquant_4bit_nc", shape)
    assert skipped_by(0, skip, "turboquant_4bit_nc", shape, latent=False) == (
        "a turboquant_4bit_nc boundary layer (vLLM keeps the first and last two)"
    )
    assert skipped_by(2, skip, "turboquant_4bit_nc", shape, latent=False) == (
        "its index is in --kv-cache-dtype-skip-layers"
    )
    assert skipped_by(2, ["sliding_window"], "fp8", shape, latent=False) == (
        "--kv-cache-dtype-skip-layers sliding_window"
    )
    # MLAAttention honours indices only
    assert skipped_by(2, ["sliding_window"], "fp8", shape, latent=True) is None
    assert skipped_by(2, ["2"], "fp8", shape, latent=True) == (
        "its index is in --kv-cache-dtype-skip-layers"
    )
