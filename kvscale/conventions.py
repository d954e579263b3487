"""Checkpoint tensor names -> the engine's KV-scale parameters, attributed to their producers.

The mapping is the cache-scale mapper of vLLM v0.33.0:
``QuantizationConfig.get_cache_scale_mapper``
(``model_executor/layers/quantization/base_config.py``)
for every quant method, plus the ``orig_to_new_suffix`` entries that ``Fp8Config`` (``fp8.py``) and
``QuarkConfig`` (``quark/quark.py``) merge in front of it. ``WeightsMapper._map_name_with_shard``
(``model_executor/models/utils.py``) applies *every* matching regex in insertion order to the
progressively rewritten name, then substring, stacked, prefix and finally suffix rules; we do the
same, in the same order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum


class ScaleKind(str, Enum):
    """The four per-layer scale parameters of an attention layer (``_k_scale`` ...)."""

    K = "k_scale"
    V = "v_scale"
    Q = "q_scale"
    PROB = "prob_scale"


KINDS = (ScaleKind.K, ScaleKind.V, ScaleKind.Q, ScaleKind.PROB)
ZERO_POINT_KINDS = ("k_zero_point", "v_zero_point", "q_zero_point")


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

# (pattern, replacement) in the insertion order of QuantizationConfig.get_cache_scale_mapper.
_BASE_REGEX: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\.kv_scale$"), r".attn.k_scale"),
    (re.compile(r"\.self_attn\.[kv]_proj\.([kv])_scale$"), r".self_attn.attn.\1_scale"),
    (re.compile(r"\.self_attn\.qk(?:qk)?v_proj\.([kv])_scale$"), r".self_attn.attn.\1_scale"),
    (re.compile(r"\.mixer\.[kv]_proj\.([kv])_scale$"), r".mixer.attn.\1_scale"),
    (re.compile(r"\.self_attn\.q\.scale$"), r".self_attn.attn.q_scale"),
    (re.compile(r"\.self_attn\.([kv])_cache\.scale$"), r".self_attn.attn.\1_scale"),
    (re.compile(r"(?<!\.attn)\.([qkv])_scale$"), r".attn.\1_scale"),
    (re.compile(r"(?<!\.attn)\.([qkv])_zero_point$"), r".attn.\1_zero_point"),
)

# Fp8Config / QuarkConfig.get_cache_scale_mapper: suffix renames applied after the regexes.
_OUTPUT_SCALE_SUFFIXES: tuple[tuple[str, str], ...] = (
    (".k_proj.output_scale", ".attn.k_scale"),
    (".v_proj.output_scale", ".attn.v_scale"),
    (".q_proj.output_scale", ".attn.q_scale"),
    (".self_attn.prob_output_scale", ".self_attn.attn.prob_scale"),
)
OUTPUT_SCALE_METHODS = frozenset(["fp8", "quark"])

# Model-level stacked renames (``hf_to_vllm_mapper.orig_to_new_stacked``) that some architectures
# merge into the same mapper pass as the cache-scale mapper, so they run before the suffix rules.
_STACKED_QKV: tuple[tuple[str, str], ...] = (
    (".q_proj", ".qkv_proj"),
    (".k_proj", ".qkv_proj"),
    (".v_proj", ".qkv_proj"),
)

_TARGET = re.compile(
    r"^(?P<layer>.+\.attn)\.(?P<kind>_?[kvq]_scale|_?prob_scale|[kvq]_zero_point)$"
)
"""``<layer>.attn.<kind>``: a scale parameter, a zero point, or (leading underscore) one of the
device buffers ``set_default_quant_scales`` registers, which the loader fills directly."""

_SCALE_LIKE = re.compile(
    r"(?:^|\.)_?(?:[kvq]_scale|kv_scale|prob_scale|prob_output_scale|[kvq]_zero_point)$"
    r"|\.(?:q_proj|k_proj|v_proj)\.output_scale$"
    r"|\.(?:[kv]_cache|q)\.scale$"
)


def looks_like_kv_scale(name: str) -> bool:
    """A tensor name some producer uses for a KV/attention scale (mapped or not)."""
    return bool(_SCALE_LIKE.search(name))


@dataclass(frozen=True)
class MappedName:
    """Where the engine sends one checkpoint tensor."""

    tensor: str
    engine_name: str
    layer: str | None
    """Engine attention layer (``<prefix>.attn``) when the name is a KV-scale parameter."""
    kind: str | None
    """``k_scale``/``v_scale``/``q_scale``/``prob_scale`` or a ``*_zero_point``."""
    convention: Convention | None


def map_engine_name(name: str, quant_method: str | None, stacked_first: bool = False) -> str:
    """The name vLLM's cache-scale mapper turns ``name`` into, for this quant method."""
    key = name
    for pattern, replacement in _BASE_REGEX:
        if pattern.search(key):
            key = pattern.sub(replacement, key)
    if stacked_first:
        for old, new in _STACKED_QKV:
            if old in key:
                key = key.replace(old, new, 1)
    if quant_method in OUTPUT_SCALE_METHODS:
        for suffix, new in _OUTPUT_SCALE_SUFFIXES:
            if key.endswith(suffix):
                key = new.join(key.rsplit(suffix, 1))
    return key


def _convention_of(name: str) -> Convention:
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


def map_name(name: str, quant_method: str | None, stacked_first: bool = False) -> MappedName:
    """Map one checkpoint name; ``layer``/``kind`` are None when it is not a KV-scale parameter."""
    engine = map_engine_name(name, quant_method, stacked_first)
    match = _TARGET.match(engine)
    if match is None:
        return MappedName(name, engine, None, None, None)
    return MappedName(name, engine, match["layer"], match["kind"], _convention_of(name))


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
