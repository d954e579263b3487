"""Checkpoint naming conventions for KV scales, and who writes them (engine-neutral).

How a particular engine maps these names to its parameters lives with the engine
(``kvscale/engine/<name>/names.py``); this module knows only what checkpoints contain: the
producers' naming conventions, which names look like KV scales, and the attention layers that
weight names reveal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class Convention(str, Enum):
    """A checkpoint naming convention, with the producers known to write it."""

    LLM_COMPRESSOR = "llm-compressor"
    MODELOPT = "modelopt"
    LEGACY_KV_SCALE = "legacy-kv-scale"
    FUSED_QKV = "fused-qkv"
    OUTPUT_SCALE = "output-scale"
    HUNYUAN_V3 = "hunyuan-v3"
    NEMOTRON_H = "nemotron-h"
    CANONICAL = "vllm-canonical"
    DEVICE_BUFFER = "vllm-buffer"
    ZERO_POINT = "zero-point"

    @property
    def producer(self) -> str:
        return _PRODUCERS[self]


_PRODUCERS = {
    Convention.LLM_COMPRESSOR: (
        "llm-compressor / compressed-tensors (since 2024-09), AutoFP8 (since 2024-07)"
    ),
    Convention.MODELOPT: "NVIDIA ModelOpt HF export",
    Convention.LEGACY_KV_SCALE: "AutoFP8 before 2024-07 (one kv_scale for k and v; deprecated)",
    Convention.FUSED_QKV: "fused-projection models / loader renames",
    Convention.OUTPUT_SCALE: "AMD Quark; compressed-tensors before 2024-09",
    Convention.HUNYUAN_V3: "HunYuan-V3",
    Convention.NEMOTRON_H: "NemotronH (mixer attention)",
    Convention.CANONICAL: "vLLM-internal names (already canonical)",
    Convention.DEVICE_BUFFER: "vLLM's device buffers (_k_scale ...), e.g. pre-processed exports",
    Convention.ZERO_POINT: "compressed-tensors >= 2025-10 zero points (ignored: symmetric only)",
}

NORMALIZED_MARK = "kvscale.normalized"
"""``__metadata__`` key of the shards ``kvscale normalize`` (value ``1``) and ``kvscale
calibrate`` (value ``calibrate``) rewrite, so that inspect attributes their scales to kvscale
rather than to the producer whose naming convention they use."""


@dataclass(frozen=True)
class Producer:
    """Who wrote a scale tensor: a short label (tables) and a description (JSON)."""

    label: str
    text: str


def producer_of(
    convention: Convention,
    quant_method: str | None,
    kvscale_mark: str | None = None,
    *,
    quark_export: bool = False,
) -> Producer:
    """The producer of a scale tensor, from its naming convention and what the checkpoint says.

    Several producers share the ``<prefix>.k_scale`` names: llm-compressor, AutoFP8, Quark's
    ``custom_mode="fp8"`` export and kvscale normalize; the quant method, normalize's shard mark
    and ``quark_export`` tell them apart. Quark 0.13's ``custom_mode="fp8"`` writes
    ``quant_method: "fp8"`` like AutoFP8, plus Quark's own ``export`` block (``kv_cache_group``,
    ``min_kv_scale``): ``quark_export`` is whether the config has it.
    """
    if kvscale_mark == "calibrate":
        return Producer("kvscale", "kvscale calibrate (from the model's activations)")
    if kvscale_mark is not None:
        return Producer("kvscale", "kvscale normalize (explicit scales)")
    if convention is Convention.LLM_COMPRESSOR:
        if quant_method == "quark" or quark_export:
            return Producer("quark", 'AMD Quark (custom_mode="fp8" export)')
        if quant_method == "fp8":
            return Producer("autofp8", "AutoFP8 (since 2024-07)")
        if quant_method == "modelopt":
            return Producer("modelopt", "NVIDIA ModelOpt")
    if convention is Convention.OUTPUT_SCALE and quant_method == "quark":
        return Producer("quark", "AMD Quark")
    return Producer(convention.value, convention.producer)


_SCALE_LIKE = re.compile(
    r"(?:^|\.)_?(?:[kvq]_scale|kv_scale|prob_scale|prob_output_scale|[kvq]_zero_point)$"
    r"|\.(?:q_proj|k_proj|v_proj)\.output_scale$"
    r"|\.(?:[kv]_cache|q)\.scale$"
)


# Tensors of a KV-cache scheme that are not scales: ModelOpt's affine KV cache writes an offset
# per projection (k_proj.k_bias / v_proj.v_bias) beside k_scale / v_scale.
_KV_SCHEME_EXTRA = re.compile(r"\.(?:k_proj\.k_bias|v_proj\.v_bias)$")


def is_kv_scheme_extra(name: str) -> bool:
    """A tensor the KV-cache scheme writes that is not a scale (ModelOpt affine-KV bias)."""
    return bool(_KV_SCHEME_EXTRA.search(name))


def looks_like_kv_scale(name: str) -> bool:
    """A tensor name some producer uses for a KV/attention scale (mapped or not)."""
    return bool(_SCALE_LIKE.search(name))


def convention_of(name: str) -> Convention:
    """The naming convention (producer family) of a KV-scale tensor name."""
    if name.endswith("_zero_point"):
        return Convention.ZERO_POINT
    if name.endswith(".kv_scale"):
        return Convention.LEGACY_KV_SCALE
    if re.search(r"\.mixer\.[kv]_proj\.[kv]_scale$", name):
        return Convention.NEMOTRON_H
    if re.search(r"\.self_attn\.[kv]_proj\.[kv]_scale$", name):
        return Convention.MODELOPT
    if re.search(r"\.qk(?:qk)?v_proj\.[kv]_scale$", name):
        return Convention.FUSED_QKV
    if re.search(r"\.(?:[kv]_cache|q)\.scale$", name):
        return Convention.HUNYUAN_V3
    if name.endswith("output_scale"):
        return Convention.OUTPUT_SCALE
    if re.search(r"\.attn\._(?:[kvq]_scale|prob_scale)$", name):
        return Convention.DEVICE_BUFFER
    if re.search(r"\.attn\.(?:[kvq]_scale|prob_scale)$", name):
        return Convention.CANONICAL
    return Convention.LLM_COMPRESSOR


# Attention containers whose projections reveal an attention layer in the weight names.
_ATTENTION_WEIGHT = re.compile(
    r"^(?P<prefix>.*?\.(?:self_attn|mixer|attention))\."
    r"(?:q_proj|k_proj|v_proj|qkv_proj|qkqkv_proj|o_proj|q_a_proj|kv_a_proj_with_mqa)\."
)
_LAYER_INDEX = re.compile(r"\.layers\.(\d+)\.")


def attention_prefixes_from_weights(names: Iterable[str]) -> set[str]:
    """Attention module prefixes (``model.layers.N.self_attn``) evidenced by projection weights."""
    found: set[str] = set()
    for name in names:
        match = _ATTENTION_WEIGHT.match(name)
        if match:
            found.add(match["prefix"])
    return found


def layer_index(layer: str) -> int | None:
    """The N of ``.layers.N.``; None when absent or absurdly long (hostile names)."""
    match = _LAYER_INDEX.search(layer + ".")
    if match is None or len(match.group(1)) > 18:
        return None
    return int(match.group(1))


def layer_sort_key(layer: str) -> tuple[int, str]:
    index = layer_index(layer)
    return (index if index is not None else 1 << 62, layer)


def engine_layer_name(prefix: str, renames: tuple[tuple[str, str], ...] = ()) -> str:
    """The engine's name for the attention layer under a checkpoint prefix (after the model's
    own prefix renames, e.g. NemotronH's ``backbone.`` -> ``model.``)."""
    for old, new in renames:
        if prefix.startswith(old):
            prefix = new + prefix[len(old) :]
            break
    return f"{prefix}.attn"


def attention_prefix(layer: str) -> str:
    return layer.removesuffix(".attn")
