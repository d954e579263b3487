"""kvscale's explicit safety limits, each with the environment variable that raises it.

Checkpoints come from strangers; these bounds keep every command's time and memory small whatever
the input. A refusal names the limit and the variable (see ``LimitExceededError``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

SAFETENSORS_MAX_HEADER_BYTES = 100_000_000
"""The format's own limit (``MAX_HEADER_SIZE`` in huggingface/safetensors ``src/tensor.rs``)."""


@dataclass(frozen=True)
class Limit:
    name: str
    env: str
    default: int
    ceiling: int | None
    what: str

    def value(self) -> int:
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            value = int(raw)
        except ValueError:
            return self.default
        if value < 1:
            return self.default
        return min(value, self.ceiling) if self.ceiling is not None else value

    def describe(self) -> str:
        hint = f"set {self.env} to raise it"
        if self.ceiling is not None:
            hint += f" (at most {self.ceiling:,})"
        return f"limit {self.name} = {self.value():,} {self.what}; {hint}"


MAX_HEADER_BYTES = Limit(
    "max-header-bytes",
    "KVSCALE_MAX_HEADER_BYTES",
    SAFETENSORS_MAX_HEADER_BYTES,
    SAFETENSORS_MAX_HEADER_BYTES,
    "bytes of safetensors JSON header",
)
MAX_SCALE_ELEMENTS = Limit(
    "max-scale-elements",
    "KVSCALE_MAX_SCALE_ELEMENTS",
    65_536,
    None,
    "elements read from one scale tensor",
)
MAX_SHARDS = Limit(
    "max-shards", "KVSCALE_MAX_SHARDS", 10_000, None, "safetensors files in one checkpoint"
)
MAX_CONFIG_BYTES = Limit(
    "max-config-bytes",
    "KVSCALE_MAX_CONFIG_BYTES",
    16_000_000,
    None,
    "bytes of config.json, hf_quant_config.json or index JSON",
)

ALL_LIMITS = (MAX_HEADER_BYTES, MAX_SCALE_ELEMENTS, MAX_SHARDS, MAX_CONFIG_BYTES)
