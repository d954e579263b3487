"""vLLM 0.33.0's cache-scale name mapper: checkpoint tensor names -> KV-scale parameters.

The mapping is ``QuantizationConfig.get_cache_scale_mapper``
(``model_executor/layers/quantization/base_config.py``) for every quant method, plus the
``orig_to_new_suffix`` entries that ``Fp8Config`` (``fp8.py``) and ``QuarkConfig``
(``quark/quark.py``) merge in front of it. ``WeightsMapper._map_name_with_shard``
(``model_executor/models/utils.py``) applies *every* matching regex in insertion order to the
progressively rewritten name, then substring, stacked, prefix and finally suffix rules; so do we.
"""

from __future__ import annotations

import re

from kvscale.conventions import convention_of
from kvscale.engine.base import MappedName
from kvscale.engine.vllm.loaders import WeightsMapper

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


def map_name(name: str, quant_method: str | None, stacked_first: bool = False) -> MappedName:
    """Map one checkpoint name; ``layer``/``kind`` are None when it is not a KV-scale parameter."""
    engine = map_engine_name(name, quant_method, stacked_first)
    match = _TARGET.match(engine)
    if match is None:
        return MappedName(name, engine, None, None, None)
    return MappedName(name, engine, match["layer"], match["kind"], convention_of(name))


def cache_scale_mapper(quant_method: str | None) -> WeightsMapper:
    """The cache-scale mapper an ``AutoWeightsLoader`` that finds this quant method's config
    merges into its pass (``mapper |= quant_config.get_cache_scale_mapper()``, models/utils.py):
    the base regexes, and for fp8/quark the output-scale suffixes
    (``Fp8Config.get_cache_scale_mapper``: suffixes first, then ``| base``)."""
    regex = tuple((pattern.pattern, replacement) for pattern, replacement in _BASE_REGEX)
    if quant_method in OUTPUT_SCALE_METHODS:
        return WeightsMapper(regex=regex, suffix=_OUTPUT_SCALE_SUFFIXES)
    return WeightsMapper(regex=regex)
