"""The serving engines kvscale models: one registry, the one place an engine is named.

The command line's ``--engine`` choices and help, the policy file's ``engine`` key and
``EngineOptions`` validation are all derived from ``ENGINES``. Each entry says where its rules
live; they are imported on first use (``get_engine``), so naming an engine costs no import of
another engine's tables.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import Enum
from functools import cache
from typing import TYPE_CHECKING

from kvscale.errors import UsageError

if TYPE_CHECKING:
    from kvscale.engine.base import Engine


class EngineName(str, Enum):
    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"


@dataclass(frozen=True)
class EngineEntry:
    """One engine: what it is called, which release its rules mirror, where they live."""

    name: EngineName
    title: str
    release: str
    """The release (or commit) whose code the rules mirror; JSON ``engine.version``."""
    scope: str
    """What kvscale models of it, for help texts."""
    rules: str
    """``module:attribute`` of its ``Engine`` instance."""
    kv_cache_dtypes: str
    """``module:attribute`` of the tuple of its ``--kv-cache-dtype`` values (a light module)."""

    def describe(self) -> str:
        """``vllm (0.33.0)``; the scope too where it is not every command."""
        scope = "" if self.scope == "every command" else f"; {self.scope}"
        return f"{self.name.value} ({self.release}{scope})"


ENGINES: dict[EngineName, EngineEntry] = {
    entry.name: entry
    for entry in (
        EngineEntry(
            EngineName.VLLM,
            "vLLM",
            "0.33.0",
            "every command",
            "kvscale.engine.vllm.engine:VLLM",
            "kvscale.engine.vllm.kv_cache_dtypes:KV_CACHE_DTYPES",
        ),
        EngineEntry(
            EngineName.SGLANG,
            "SGLang",
            "0.5.23",
            "every command",
            "kvscale.engine.sglang.engine:SGLANG",
            "kvscale.engine.sglang.kv_cache_dtypes:KV_CACHE_DTYPES",
        ),
        EngineEntry(
            EngineName.TRTLLM,
            "TensorRT-LLM",
            "main@00bbf71e (PyTorch backend)",
            "inspect and diff",
            "kvscale.engine.trtllm.engine:TRTLLM",
            "kvscale.engine.trtllm.kv_cache_dtypes:KV_CACHE_DTYPES",
        ),
    )
}
DEFAULT_ENGINE = EngineName.VLLM


def engine_names() -> str:
    """``vllm, sglang or trtllm``: for messages."""
    names = [e.value for e in ENGINES]
    return ", ".join(names[:-1]) + " or " + names[-1]


def parse_engine(value: str | EngineName) -> EngineName:
    if isinstance(value, EngineName):
        return value
    try:
        return EngineName(str(value).strip().lower())
    except ValueError:
        raise UsageError(f"unknown engine {value!r}", hint=f"use {engine_names()}") from None


def _attribute(spec: str) -> object:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


@cache
def get_engine(name: EngineName | str = DEFAULT_ENGINE) -> Engine:
    """The rules of the named engine."""
    engine = _attribute(ENGINES[parse_engine(name)].rules)
    return engine  # type: ignore[return-value]


@cache
def kv_cache_dtypes(name: EngineName | str) -> tuple[str, ...]:
    """The engine's own ``--kv-cache-dtype`` values (without importing its rules)."""
    values = _attribute(ENGINES[parse_engine(name)].kv_cache_dtypes)
    assert isinstance(values, tuple)
    return values


def all_kv_cache_dtypes() -> tuple[str, ...]:
    """Every engine's ``--kv-cache-dtype`` values, each once, in registry order."""
    out: dict[str, None] = {}
    for name in ENGINES:
        out.update(dict.fromkeys(kv_cache_dtypes(name)))
    return tuple(out)
