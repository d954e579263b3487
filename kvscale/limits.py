"""kvscale's explicit safety limits, each with the environment variable that changes it.

Checkpoints come from strangers; these bounds keep every command's time and memory small whatever
the input. A refusal names the limit and the variable (see ``LimitExceededError``), and
``docs/limits.md`` lists them all. A variable that is set but not a positive integer is a usage
error (exit 2), never silently ignored: a CI job that thinks it raised a limit must not run with
the default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kvscale.errors import UsageError

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
            value = int(raw.strip().replace("_", ""))
        except ValueError:
            value = 0
        if value < 1:
            raise UsageError(
                f"{self.env} must be a positive integer, got {raw[:40]!r}",
                hint=f"unset it to use the default {self.default:,}",
            )
        return min(value, self.ceiling) if self.ceiling is not None else value

    def describe(self) -> str:
        """``limit NAME = VALUE WHAT; how to raise it`` (or why it cannot be raised)."""
        value = self.value()
        if self.ceiling is not None and value >= self.ceiling:
            hint = "the safetensors format's own maximum; it cannot be raised"
        else:
            hint = f"set {self.env} to raise it"
            if self.ceiling is not None:
                hint += f" (at most {self.ceiling:,})"
        return f"limit {self.name} = {value:,} {self.what}; {hint}"


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
    "bytes of config.json or hf_quant_config.json",
)
# Why separate: an index lists every tensor (DeepSeek-V3's is about 9 MB; an MoE with 4x the
# experts passes 16 MB), while a config.json is a few KB.
MAX_INDEX_BYTES = Limit(
    "max-index-bytes",
    "KVSCALE_MAX_INDEX_BYTES",
    64_000_000,
    None,
    "bytes of model.safetensors.index.json",
)
MAX_LAYERS = Limit(
    "max-layers",
    "KVSCALE_MAX_LAYERS",
    4_096,
    None,
    "hidden layers declared by config.json (num_hidden_layers)",
)
# Why: layer enumeration and per-head scale lists are sized from config.json; a hostile
# num_hidden_layers or num_key_value_heads of 10**9 would otherwise cost minutes and gigabytes
# before a single tensor is read. Real models stay far below (Llama 3.1 405B: 126 layers,
# 128 heads).
MAX_HEADS = Limit(
    "max-heads",
    "KVSCALE_MAX_HEADS",
    1_024,
    None,
    "attention or key/value heads declared by config.json",
)
MAX_POLICY_BYTES = Limit(
    "max-policy-bytes",
    "KVSCALE_MAX_POLICY_BYTES",
    1_000_000,
    None,
    "bytes of a policy file (kvscale.toml, pyproject.toml)",
)
MAX_DOCUMENT_BYTES = Limit(
    "max-document-bytes",
    "KVSCALE_MAX_DOCUMENT_BYTES",
    64_000_000,
    None,
    "bytes of a JSON document kvscale reads back (kv_scales.json, saved inspect --json)",
)
# Why: verify's work follows config values and activation files; a one-layer checkpoint claiming
# 10**6 heads of size 10**6 would otherwise run for days, and with --gpu (which compares whole
# caches) allocate a terabyte. Without --gpu memory follows a 64 MiB chunk (core/verify/chunks.py).
MAX_VERIFY_ELEMENTS = Limit(
    "max-verify-elements",
    "KVSCALE_MAX_VERIFY_ELEMENTS",
    1 << 28,
    None,
    "K or V elements verify writes per layer (tokens x kv heads x head size)",
)
MAX_DATA_BYTES = Limit(
    "max-data-bytes",
    "KVSCALE_MAX_DATA_BYTES",
    1 << 30,
    None,
    "bytes of calibration data (--data)",
)
"""1 GiB: about 250M tokens of text, 250x the common 512 x 2048 recipe; hashing it takes ~2 s."""

REMOTE_READ_SECONDS = Limit(
    "remote-read-seconds",
    "KVSCALE_REMOTE_READ_SECONDS",
    30,
    None,
    "seconds for one remote read (its redirects, retries and whole answer)",
)
"""Why: a read timeout bounds each wait for a byte, not a read: a server that sends a byte every
few seconds would keep a run going for hours. 30 s reads a 64 MB index at 2 MB/s."""

MAX_ACTIVATION_BYTES = Limit(
    "max-activation-bytes",
    "KVSCALE_MAX_ACTIVATION_BYTES",
    4 << 30,
    None,
    "bytes of captured K/V held for --activations-out",
)
"""Saved activations are held in memory until written: SmolLM2 in bf16 takes 23 KB per token."""
