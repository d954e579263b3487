"""Checkpoints with many names, for the timed tests: a 400-layer MoE's names and more.

Shards are header-only in spirit: every tensor is a scalar or a 4x4 block of zeros, so a file of
300,000 names is a few MB, and only its header is what the tests are about. ``cpu_seconds`` times
a block in CPU time (not wall time, so that other work on a busy CI machine does not decide a
test), and a wall-clock ``limit`` stops a block that would run for minutes.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from support.checkpoints import FP8_TENSOR, llama_config, quant_config, raw_safetensors_file

SIZES = {"F32": 4, "BF16": 2}
PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
EXPERT_PROJECTIONS = ("gate_proj", "up_proj", "down_proj")


def moe_module_names(layers: int, experts: int) -> list[str]:
    """The linear modules of a MoE model: 4 attention projections and 3 per expert per layer
    (400 layers x 256 experts: 308,800 names, DeepSeek-V3-like names at 6x its layers)."""
    names: list[str] = []
    for i in range(layers):
        names += [f"model.layers.{i}.self_attn.{p}" for p in PROJECTIONS]
        names += [
            f"model.layers.{i}.mlp.experts.{e}.{p}"
            for e in range(experts)
            for p in EXPERT_PROJECTIONS
        ]
    return names


def quark_patterns(count: int, layers: int) -> list[str]:
    """``count`` kv_cache_group patterns, one per layer in turn, in every form a glob takes:
    a suffix, a star in the middle, a set, a ``?``, two stars."""
    forms = (
        "*layers.{i}.self_attn.k_proj",
        "model.layers.{i}.*.v_proj",
        "model.layers.{i}.self_attn.[kv]_proj",
        "*.layers.{i}.self_attn.k_pro?",
        "*.layers.{i}.*.k_proj",
    )
    return [forms[n % len(forms)].format(i=n % layers) for n in range(count)]


def quark_quantization_config(layers: int, experts: int, patterns: int) -> dict[str, Any]:
    """A Quark quantization_config: every module in layer_quant_config (k/v_proj with FP8
    output_tensors, the rest with none) and ``patterns`` kv_cache_group globs."""
    layer_cfg = {
        name: {"output_tensors": FP8_TENSOR if name.endswith(("k_proj", "v_proj")) else None}
        for name in moe_module_names(layers, experts)
    }
    return {
        "quant_method": "quark",
        "export": {"kv_cache_group": quark_patterns(patterns, layers)},
        "layer_quant_config": layer_cfg,
    }


def zero_filled_safetensors(path: Path, tensors: list[tuple[str, str, list[int]]]) -> Path:
    """A valid safetensors file of ``(name, dtype, shape)`` tensors, all zeros."""
    header: dict[str, Any] = {}
    offset = 0
    for name, dtype, shape in tensors:
        size = SIZES[dtype]
        for d in shape:
            size *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    return raw_safetensors_file(path, header, bytes(offset))


def attention_weight_entries(layers: int) -> list[tuple[str, str, list[int]]]:
    return [
        (f"model.layers.{i}.self_attn.{p}.weight", "BF16", [4, 4])
        for i in range(layers)
        for p in PROJECTIONS
    ]


def quark_checkpoint(directory: Path, layers: int, experts: int, patterns: int) -> Path:
    """A Quark MoE checkpoint: the config above, attention weights, k/v output_scale scalars."""
    directory.mkdir(parents=True)
    config = llama_config(layers, quant=quark_quantization_config(layers, experts, patterns))
    (directory / "config.json").write_text(json.dumps(config, separators=(",", ":")))
    scales = [
        (f"model.layers.{i}.self_attn.{p}.output_scale", "F32", [])
        for i in range(layers)
        for p in ("k_proj", "v_proj")
    ]
    zero_filled_safetensors(
        directory / "model.safetensors", attention_weight_entries(layers) + scales
    )
    return directory


def unmapped_checkpoint(
    directory: Path, layers: int, names: list[str], architecture: str = "LlamaForCausalLM"
) -> Path:
    """An fp8 checkpoint whose scale-like tensors ``names`` reach no attention layer."""
    directory.mkdir(parents=True)
    config = llama_config(layers, quant=quant_config("fp8"), architectures=[architecture])
    (directory / "config.json").write_text(json.dumps(config))
    entries = attention_weight_entries(layers) + [(name, "F32", []) for name in names]
    zero_filled_safetensors(directory / "model.safetensors", entries)
    return directory


class Overtime(BaseException):
    """Raised by ``cpu_seconds`` at its wall-clock limit (a BaseException: no ``except
    Exception`` in kvscale eats it)."""


@contextmanager
def cpu_seconds(limit: float) -> Iterator[list[float]]:
    """Yields a list that holds, after the block, the CPU seconds it took; raises ``Overtime``
    after ``limit`` seconds of wall time (SIGALRM, main thread)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise Overtime(f"still running after {limit} s of wall time")

    used: list[float] = []
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    start = time.process_time()
    try:
        yield used
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        used.append(time.process_time() - start)
