"""vLLM 0.33.0's weight loaders as data: the ``WeightsMapper`` name rewriting, one model's
loading step (``Loader``) and one registered architecture's facts (``ArchClass``).

``kvscale/engine/vllm/arch_classes.py`` holds an ``ArchClass`` for every architecture of vLLM's
registry, rendered from the static evidence in ``tests/parity/vllm_arch_classes.json``;
``kvscale/engine/vllm/placement.py`` walks a checkpoint name through them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

Rule = tuple[str, str | None]
"""``(match, replacement)``; a None replacement drops the weight (vLLM skips it)."""


@dataclass(frozen=True)
class WeightsMapper:
    """``WeightsMapper._map_name_with_shard`` (``model_executor/models/utils.py``): every
    matching regex, then every substring, stacked, prefix and suffix rule, each table in its
    insertion order, each applied to the name the previous rules produced."""

    regex: tuple[Rule, ...] = ()
    substr: tuple[Rule, ...] = ()
    stacked: tuple[tuple[str, str], ...] = ()
    prefix: tuple[Rule, ...] = ()
    suffix: tuple[Rule, ...] = ()

    @cached_property
    def _compiled(self) -> tuple[tuple[re.Pattern[str], str | None], ...]:
        return tuple((re.compile(p), r) for p, r in self.regex)

    def __or__(self, other: WeightsMapper) -> WeightsMapper:
        """``WeightsMapper.__or__``: each table merged as a dict (a key of ``other`` replaces
        the same key of ``self`` in place; new keys follow)."""
        return WeightsMapper(
            regex=_merged(self.regex, other.regex),
            substr=_merged(self.substr, other.substr),
            stacked=_merged(self.stacked, other.stacked),
            prefix=_merged(self.prefix, other.prefix),
            suffix=_merged(self.suffix, other.suffix),
        )

    def map(self, name: str) -> str | None:
        key = name
        for pattern, new in self._compiled:
            if pattern.search(key):
                if new is None:
                    return None
                key = pattern.sub(new, key)
        for old, new in self.substr:
            if old in key:
                if new is None:
                    return None
                key = key.replace(old, new, 1)
        for old, stacked in self.stacked:
            if old in key:
                key = key.replace(old, stacked, 1)
        for old, new in self.prefix:
            if key.startswith(old):
                if new is None:
                    return None
                key = key.replace(old, new, 1)
        for old, new in self.suffix:
            if key.endswith(old):
                if new is None:
                    return None
                key = new.join(key.rsplit(old, 1))
        return key


_V = TypeVar("_V")


def _merged(
    a: tuple[tuple[str, _V], ...], b: tuple[tuple[str, _V], ...]
) -> tuple[tuple[str, _V], ...]:
    out = dict(a)
    out.update(b)
    return tuple(out.items())


EMPTY = WeightsMapper()


@dataclass(frozen=True)
class Loader:
    """One ``load_weights`` on the path of a KV-scale name: the architecture's own, or that of
    the module it builds as ``self.model``."""

    owner: str
    """The class whose instance runs it (the name vLLM's errors quote)."""
    defined_in: str
    """``vllm/<file>:<line> (<Class>.load_weights)``."""
    auto: bool
    """It hands the names to an ``AutoWeightsLoader``, which raises ``There is no module or
    parameter named ...`` for a name it cannot place."""
    quant_visible: bool = False
    """(``auto``) the loader finds a ``quant_config`` on the module or a direct child: it adds
    the quant method's cache-scale mapper and ignores unexpected ``.k_scale``-like suffixes."""
    remap: bool = False
    """It calls ``maybe_remap_kv_scale_name`` (``model_loader/weight_utils.py``)."""
    indexes_params: bool = False
    """(hand-written) it looks names up in ``params_dict``: an unknown one may raise KeyError."""
    mapper: WeightsMapper | None = None
    """The model's own mapper this loader applies (``mapper=`` or ``hf_to_vllm_mapper``)."""
    mapper_unresolved: bool = False
    """It applies a mapper the static analysis could not evaluate."""


@dataclass(frozen=True)
class ArchClass:
    """What vLLM 0.33.0's registry entry for one architecture does with KV-scale names."""

    kind: str
    """The evidence file's class (``llama-like``, ``mla``, ``multimodal-wrapper``, ...)."""
    resolved: str
    """Where the class is defined (``vllm/<file>:<line>``)."""
    holders: frozenset[str] = field(default_factory=frozenset)
    """KV-scale holders its modules build: ``Attention``, ``MLAAttention``, ``custom-mla``
    (a layer calling ``_init_kv_cache_quant`` that no quant config gives a KV method),
    ``fixed`` (default scales only)."""
    top: Loader | None = None
    model: Loader | None = None
    """The loader of the ``self.model`` child (None: the top loader places every name)."""
    language_model: str | None = None
    """The text architecture a multimodal wrapper builds, when the source names it."""
    executed: bool = False
    """The parity oracle ran vLLM's own loaders on it (tests/parity/vllm_arch_expected.json)."""
