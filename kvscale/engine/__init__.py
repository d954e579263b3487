"""The serving engines whose KV-scale rules kvscale reproduces, one package per engine.

``get_engine(name)`` returns the rules of one engine (see ``kvscale.engine.base.Engine``);
each package states the release it mirrors.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kvscale.engine.base import Engine
    from kvscale.options import EngineName


@cache
def get_engine(name: EngineName | str = "vllm") -> Engine:
    """The rules of the named engine (``vllm`` or ``sglang``)."""
    from kvscale.options import parse_engine

    engine = parse_engine(name)
    if engine.value == "vllm":
        from kvscale.engine.vllm import VLLM

        return VLLM
    if engine.value == "trtllm":
        from kvscale.engine.trtllm import TRTLLM

        return TRTLLM
    from kvscale.engine.sglang import SGLANG

    return SGLANG


def all_kv_cache_dtypes() -> tuple[str, ...]:
    """Every engine's ``--kv-cache-dtype`` values, each once, in a stable order."""
    from kvscale.options import EngineName

    out: dict[str, None] = {}
    for name in EngineName:
        try:
            out.update(dict.fromkeys(get_engine(name).kv_cache_dtypes))
        except ImportError:  # an engine package not written yet
            continue
    return tuple(out)
