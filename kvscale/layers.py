"""Which attention layers a checkpoint has: from its weight names, its scale names and config.json.

Engine-neutral. Layers are named ``<attention prefix>.attn`` as the checkpoint spells the
prefix (``model.layers.0.self_attn.attn``); an engine may rename the prefix afterwards
(``Engine.layer_name``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from kvscale.conventions import attention_prefix, layer_index, layer_sort_key
from kvscale.errors import LimitExceededError
from kvscale.limits import MAX_LAYERS
from kvscale.model_config import ModelShape

_DEFAULT_TEMPLATE = "model.layers.{}.self_attn"
_INDEXED = re.compile(r"\.layers\.\d+\.")


def is_kv_cache_layer(shape: ModelShape, index: int) -> bool:
    """Whether layer ``index`` caches K/V: a model-specific pattern
    (``ModelShape.kv_layer_pattern``: Jamba, BailingMoeV3), config.json's
    ``hybrid_override_pattern`` (NemotronH: ``*`` is attention) or ``layer_types`` (linear
    attention and Mamba layers cache none)."""
    if shape.kv_layer_pattern is not None:
        return index < len(shape.kv_layer_pattern) and shape.kv_layer_pattern[index]
    if shape.hybrid_override_pattern is not None:
        pattern = shape.hybrid_override_pattern
        return index < len(pattern) and pattern[index] == "*"
    if shape.layer_types is not None:
        if index >= len(shape.layer_types):
            return True
        kind = shape.layer_types[index].lower()
        return "attention" in kind and "linear" not in kind
    return True


def _template(prefixes: Iterable[str]) -> str:
    """``model.layers.{}.self_attn``-style template of the prefixes (the first, sorted)."""
    templates = sorted({_INDEXED.sub(".layers.{}.", p + ".").removesuffix(".") for p in prefixes})
    for template in templates:
        if "{}" in template:
            return template
    return _DEFAULT_TEMPLATE


def _layer_modules(template: str, index: int, shape: ModelShape) -> list[str]:
    """The attention prefixes of decoder layer ``index``: the template's, or one per module
    when the config says a layer holds several (``ModelShape.attention_modules``)."""
    if not shape.attention_modules or ".layers.{}." not in template + ".":
        return [template.format(index)]
    stack = template.split(".layers.{}", 1)[0] + ".layers.{}"
    return [f"{stack.format(index)}.{module}" for module in shape.attention_modules]


def attention_layers(
    shape: ModelShape, weight_prefixes: set[str], scale_layers: Iterable[str]
) -> list[str]:
    """Every attention layer, in layer order: those the projection weights show, those that
    scale tensors target, and (when the weights show none, or the config types its layers)
    one per KV-cache layer of ``num_hidden_layers``."""
    scale_layers = set(scale_layers)
    layers = {f"{p}.attn" for p in weight_prefixes} | scale_layers
    template = _template(weight_prefixes | {attention_prefix(n) for n in scale_layers})
    n = shape.num_hidden_layers
    typed = (
        shape.layer_types is not None
        or shape.hybrid_override_pattern is not None
        or shape.kv_layer_pattern is not None
    )
    if n and (not weight_prefixes or typed):
        for i in range(n):
            if is_kv_cache_layer(shape, i):
                layers.update(f"{p}.attn" for p in _layer_modules(template, i, shape))
    if typed:
        layers = {
            name
            for name in layers
            if (index := layer_index(name)) is None or is_kv_cache_layer(shape, index)
        }
    limit = MAX_LAYERS.value()
    if len(layers) > limit:
        # Layers also come from tensor names, which the config's bound does not cover.
        raise LimitExceededError(
            "checkpoint", f"{len(layers):,} attention layers", hint=MAX_LAYERS.describe()
        )
    return sorted(layers, key=layer_sort_key)
