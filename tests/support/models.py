"""Tiny random transformers models for the calibrate / verify --model tests (one builder).

Fixed seeds, saved with ``save_pretrained`` into the test's own directory: nothing is downloaded.
Import only where transformers is installed (the calibrate extra).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import torch
import transformers

VOCAB = 256

MLA_COMMON: dict[str, Any] = {
    "vocab_size": VOCAB,
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_attention_heads": 4,
    # transformers' MLA expands the latent to every attention head: 4 KV heads (2 fails).
    "num_key_value_heads": 4,
    "kv_lora_rank": 32,
    "qk_rope_head_dim": 16,
    "qk_nope_head_dim": 16,
    "v_head_dim": 16,
    "n_routed_experts": 4,
    "num_experts_per_tok": 2,
    "n_group": 1,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "n_shared_experts": 1,
    "max_position_embeddings": 128,
}
MLA_KINDS: dict[str, Any] = {
    "deepseek_v3": lambda **kw: transformers.DeepseekV3Config(q_lora_rank=48, **kw),
    "deepseek_v2": lambda **kw: transformers.DeepseekV2Config(q_lora_rank=None, **kw),
    "glm4_moe_lite": lambda **kw: transformers.Glm4MoeLiteConfig(q_lora_rank=None, **kw),
}


def tiny_config(kind: str, layers: int | None = None) -> Any:
    """hidden 64, 4 heads, 2 KV heads: ``llama``, ``qwen2`` (q/k/v biases), ``gemma2`` (layers
    0 and 2 slide over 4 tokens), ``lfm2`` (hybrid: convolutions around one attention layer),
    MLA (``MLA_KINDS``): ``deepseek_v3`` (q_lora_rank 48, the recipe of the MLA reference
    notes), ``deepseek_v2`` (q_lora_rank None: DeepSeek-V2-Lite's module set), ``glm4_moe_lite``
    (GLM-4.7-Flash); each caches a 32-wide latent and a 16-wide RoPE part, layer 0 dense, the
    others MoE."""
    common = {
        "vocab_size": VOCAB,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
    }
    if kind == "llama":
        return transformers.LlamaConfig(num_hidden_layers=layers or 2, **common)
    if kind == "qwen2":
        return transformers.Qwen2Config(num_hidden_layers=layers or 2, **common)
    if kind == "gemma2":
        return transformers.Gemma2Config(
            num_hidden_layers=layers or 3, head_dim=16, sliding_window=4, **common
        )
    if kind == "lfm2":
        return transformers.Lfm2Config(
            num_hidden_layers=3, layer_types=["conv", "full_attention", "conv"], **common
        )
    if kind in MLA_KINDS:
        return MLA_KINDS[kind](**MLA_COMMON, num_hidden_layers=layers or 3)
    raise ValueError(kind)


def save_tiny(
    kind: str, path: Path, *, dtype: Any = None, seed: int = 0, layers: int | None = None
) -> Path:
    """A randomly initialised model of ``kind`` saved to ``path`` (safetensors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(seed)
        model = transformers.AutoModelForCausalLM.from_config(tiny_config(kind, layers))
        if dtype is not None:
            model = model.to(dtype)
        model.save_pretrained(str(path))
    return path


def random_samples(lengths: tuple[int, ...], seed: int = 1) -> list[tuple[int, ...]]:
    """Token id samples of the given lengths."""
    g = torch.Generator().manual_seed(seed)
    return [tuple(torch.randint(0, VOCAB, (n,), generator=g).tolist()) for n in lengths]
