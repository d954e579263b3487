"""Tiny synthetic checkpoints for tests (torch + safetensors.torch, so values are exact)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

DTYPES = {
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "F64": torch.float64,
    "I32": torch.int32,
    "F8_E4M3": torch.float8_e4m3fn,
}

CT_TENSOR = {
    "num_bits": 8,
    "type": "float",
    "strategy": "tensor",
    "symmetric": True,
    "dynamic": False,
}
CT_HEAD = {**CT_TENSOR, "strategy": "attn_head"}


def quant_config(method: str, **extra: Any) -> dict[str, Any]:
    """A minimal quantization_config for each producer."""
    if method == "compressed-tensors":
        qc: dict[str, Any] = {
            "quant_method": "compressed-tensors",
            "config_groups": {},
            "kv_cache_scheme": CT_TENSOR,
        }
    elif method == "fp8":
        qc = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}
    elif method == "modelopt":
        qc = {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
        }
    elif method == "quark":
        fp8 = {"dtype": "fp8_e4m3", "qscheme": "per_tensor"}
        qc = {
            "quant_method": "quark",
            "export": {"kv_cache_group": ["*k_proj", "*v_proj"]},
            "layer_quant_config": {
                "*k_proj": {"output_tensors": fp8},
                "*v_proj": {"output_tensors": fp8},
            },
        }
    else:
        raise ValueError(method)
    qc.update(extra)
    return qc


def config(
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    dtype: str = "bfloat16",
    quant: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "torch_dtype": dtype,
    }
    if quant is not None:
        cfg["quantization_config"] = quant
    cfg.update(extra)
    return cfg


def tensor(value: Any, dtype: str = "F32", shape: tuple[int, ...] | None = None) -> torch.Tensor:
    t = torch.tensor(value, dtype=torch.float64).to(DTYPES[dtype])
    return t.reshape(shape) if shape is not None else t


def write_checkpoint(
    directory: Path,
    tensors: dict[str, torch.Tensor] | None = None,
    cfg: dict[str, Any] | None = None,
    *,
    shards: list[dict[str, torch.Tensor]] | None = None,
    index: bool = False,
    extra_json: dict[str, Any] | None = None,
) -> Path:
    """Write config.json plus one file (``tensors``) or several shards (``shards``)."""
    directory.mkdir(parents=True, exist_ok=True)
    if cfg is not None:
        (directory / "config.json").write_text(json.dumps(cfg))
    for name, document in (extra_json or {}).items():
        (directory / name).write_text(json.dumps(document))
    if shards is None:
        save_file(dict(tensors or {}), str(directory / "model.safetensors"))
        return directory
    weight_map: dict[str, str] = {}
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        save_file(dict(shard), str(directory / name))
        weight_map.update(dict.fromkeys(shard, name))
    if index:
        (directory / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
        )
    return directory


def attention_weights(
    layers: int, prefix: str = "model.layers.{}.self_attn"
) -> dict[str, torch.Tensor]:
    """Projection weights that make the layers visible as attention layers."""
    out: dict[str, torch.Tensor] = {}
    for i in range(layers):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[f"{prefix.format(i)}.{proj}.weight"] = torch.zeros(4, 4, dtype=torch.bfloat16)
    return out


def write_scalar_checkpoint(
    directory: Path, tensors: dict[str, float], layers: int, qc: dict[str, Any] | None = None
) -> Path:
    """A new directory: a Llama config (compressed-tensors by default) plus float32 scalar
    tensors; the attention layers come from num_hidden_layers."""
    directory.mkdir(parents=True)
    quant = qc if qc is not None else quant_config("compressed-tensors")
    scalars = {name: tensor(value) for name, value in tensors.items()}
    return write_checkpoint(directory, scalars, config(layers=layers, quant=quant))
