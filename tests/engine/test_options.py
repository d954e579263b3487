"""EngineOptions: the skip list as vLLM holds it, backend names in any case."""

from __future__ import annotations

import pytest

from kvscale.engine.options import EngineOptions, parse_skip_layers
from kvscale.errors import UsageError


def test_skip_entries_are_kept_verbatim() -> None:
    # vLLM compares entries with str(index): " 1" or "01" must reach the rules unchanged
    assert parse_skip_layers([" 1", "01", "sliding_window", "3", "3"]) == (
        " 1",
        "01",
        "sliding_window",
        "3",
        "3",
    )


def test_commas_are_kvscales_list_syntax() -> None:
    assert parse_skip_layers("0, 31,,sliding_window") == ("0", "31", "sliding_window")
    assert parse_skip_layers(["0,1", "5"]) == ("0", "1", "5")
    assert EngineOptions(kv_cache_dtype_skip_layers=("2,4",)).kv_cache_dtype_skip_layers == (
        "2",
        "4",
    )


def test_attention_backend_in_any_case() -> None:
    assert EngineOptions(engine="vllm", attention_backend="FLASHINFER").attention_backend == (
        "flashinfer"
    )
    assert EngineOptions(engine="vllm", attention_backend="TurboQuant").attention_backend == (
        "turboquant"
    )
    with pytest.raises(UsageError, match="unknown attention backend 'torch_sdpa' for vllm"):
        EngineOptions(engine="vllm", attention_backend="TORCH_SDPA")
