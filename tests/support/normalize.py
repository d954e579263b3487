"""Builders and checks shared by the ``kvscale normalize`` tests.

Every case writes a tiny synthetic checkpoint with torch + ``safetensors.torch.save_file`` into a
directory and returns the path to pass to ``normalize`` (a directory, a file or an HF cache).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from support.checkpoints import hf_cache, llama_config, write_safetensors_file
from support.checkpoints import quant_config as qc

from kvscale.core.inspect import ScaleReport, inspect_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.io.safetensors import read_header

P = "model.layers.{}.self_attn"


def t(value: Any, dtype: torch.dtype = torch.float32, shape: tuple[int, ...] | None = None):
    x = torch.tensor(value, dtype=torch.float64).to(dtype)
    return x.reshape(shape) if shape is not None else x


def weights(layers: int, prefix: str = P, seed: int = 0) -> dict[str, torch.Tensor]:
    """Random projection weights (so byte comparisons mean something) plus odd-sized extras."""
    gen = torch.Generator().manual_seed(seed)
    out: dict[str, torch.Tensor] = {}
    for i in range(layers):
        for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[f"{prefix.format(i)}.{proj}.weight"] = torch.randn(8, 8, generator=gen).to(
                torch.bfloat16
            )
    out["model.embed_tokens.weight"] = torch.randn(16, 8, generator=gen).to(torch.bfloat16)
    out["model.norm.weight"] = torch.randn(8, generator=gen)
    out["model.odd_u8"] = torch.arange(3, dtype=torch.uint8)
    out["model.positions"] = torch.arange(5, dtype=torch.int64)
    return out


def write_dir(
    directory: Path,
    tensors: dict[str, torch.Tensor],
    cfg: dict[str, Any] | None,
    *,
    shards: int = 1,
    index: bool = True,
    placement: Callable[[str], int] | None = None,
    extra_files: dict[str, bytes] | None = None,
    hf_quant: dict[str, Any] | None = None,
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    if cfg is not None:
        (directory / "config.json").write_text(json.dumps(cfg, indent=2))
    if hf_quant is not None:
        (directory / "hf_quant_config.json").write_text(json.dumps(hf_quant))
    for rel, data in (extra_files or {}).items():
        (directory / rel).parent.mkdir(parents=True, exist_ok=True)
        (directory / rel).write_bytes(data)
    if shards == 1:
        write_safetensors_file(directory / "model.safetensors", tensors, {"format": "pt"})
        return directory
    parts: list[dict[str, torch.Tensor]] = [{} for _ in range(shards)]
    for n, name in enumerate(sorted(tensors)):
        where = placement(name) if placement else n % shards
        parts[where][name] = tensors[name]
    weight_map = {}
    for s, part in enumerate(parts):
        fname = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        write_safetensors_file(directory / fname, part, {"format": "pt", "shard": str(s)})
        weight_map.update(dict.fromkeys(part, fname))
    if index:
        doc = {"metadata": {"total_size": 12345}, "weight_map": weight_map}
        (directory / "model.safetensors.index.json").write_text(json.dumps(doc))
    return directory


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Path], Path]
    kv_cache_dtype: str = "auto"
    model_dtype: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


# --- the catalogue ------------------------------------------------------------------------------


def _ct_tensor(d: Path) -> Path:
    w = weights(3)
    p0, p1 = P.format(0), P.format(1)
    w[f"{p0}.k_scale"] = t(0.3)  # float32, not bf16-exact: the CT path keeps it as is
    w[f"{p0}.v_scale"] = t(0.2)
    w[f"{p0}.q_scale"] = t(0.05, shape=(1,))
    w[f"{p0}.k_zero_point"] = t(0, torch.float32, (1,))
    w[f"{p0}.v_zero_point"] = t(0, torch.float32, (1,))
    w[f"{p1}.k_scale"] = t(0.7)  # partial: v stays 1.0
    return write_dir(d, w, llama_config(3, quant=qc("compressed-tensors")))


def _ct_head(d: Path) -> Path:
    w = weights(2)
    p0, p1 = P.format(0), P.format(1)
    w[f"{p0}.k_scale"] = t([0.1, 0.3], shape=(2, 1, 1))
    w[f"{p0}.v_scale"] = t([0.2, 0.05], shape=(2, 1, 1))
    w[f"{p0}.q_scale"] = t([0.01, 0.04, 0.03, 0.02], shape=(4, 1, 1))
    w[f"{p1}.k_scale"] = t([0.5, 0.25], shape=(2, 1, 1))  # v missing: ones
    return write_dir(d, w, llama_config(2, quant=qc("ct-head")))


def _modelopt(d: Path) -> Path:
    w = weights(4)
    p = [P.format(i) for i in range(4)]
    w[f"{p[0]}.k_proj.k_scale"] = t(0.3)  # rounds to 0.30078125 in bf16
    w[f"{p[0]}.v_proj.v_scale"] = t(1.5)
    w[f"{p[0]}.attn.prob_scale"] = t(0.0625)  # canonical prob: the only prob name modelopt maps
    w[f"{p[1]}.k_proj.k_scale"] = t(2.0)  # v missing: duplicated
    w[f"{p[2]}.k_proj.k_scale"] = t(0.25)
    w[f"{p[2]}.v_proj.v_scale"] = t(float("nan"))  # NaN v: duplicated from k, warning only
    # layer 3: no scales (default)
    return write_dir(d, w, llama_config(4, quant=qc("modelopt")))


def _modelopt_legacy(d: Path) -> Path:
    w = weights(2)
    w[f"{P.format(0)}.k_proj.k_scale"] = t(0.75, torch.bfloat16)
    w[f"{P.format(0)}.v_proj.v_scale"] = t(0.5, torch.bfloat16)
    w[f"{P.format(1)}.k_proj.k_scale"] = t(1.25, torch.float16)
    w[f"{P.format(1)}.v_proj.v_scale"] = t(0.125, torch.float64)
    hf = {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    }
    return write_dir(d, w, llama_config(2, quant=None), hf_quant=hf)


def _fp8_legacy_kv(d: Path) -> Path:
    w = weights(2)
    w[f"{P.format(0)}.kv_scale"] = t(0.3)
    w[f"{P.format(1)}.kv_scale"] = t(0.6, shape=(1,))
    return write_dir(d, w, llama_config(2, quant=qc("fp8")))


def _fp8_fused(d: Path) -> Path:
    w = weights(2)
    for i in range(2):
        w[f"{P.format(i)}.qkv_proj.k_scale"] = t(0.125 * (i + 1))
        w[f"{P.format(i)}.qkv_proj.v_scale"] = t(0.0625)
    w[f"{P.format(0)}.q_scale"] = t(0.1)
    w[f"{P.format(0)}.prob_output_scale"] = t(0.02)
    w[f"{P.format(1)}.q_scale"] = t(0.0)  # not > 0: the engine uses 1.0, normalize omits it
    return write_dir(d, w, llama_config(2, quant=qc("fp8")))


def _quark(d: Path) -> Path:
    w = weights(2)
    for i in range(2):
        p = P.format(i)
        w[f"{p}.k_proj.output_scale"] = t(0.5 + i)
        w[f"{p}.v_proj.output_scale"] = t(0.25)
        w[f"{p}.q_proj.output_scale"] = t(0.125 if i == 0 else -1.0)
        w[f"{p}.prob_output_scale"] = t(0.0625)
    return write_dir(d, w, llama_config(2, quant=qc("quark")))


def _hunyuan(d: Path) -> Path:
    w = weights(2)
    for i in range(2):
        p = P.format(i)
        w[f"{p}.k_cache.scale"] = t(0.046875)
        w[f"{p}.v_cache.scale"] = t(0.03125)
        w[f"{p}.q.scale"] = t(0.01)
    return write_dir(d, w, llama_config(2, quant=qc("modelopt")))


def _nemotron(d: Path) -> Path:
    gen = torch.Generator().manual_seed(3)
    w = {
        "backbone.layers.0.mixer.in_proj.weight": torch.randn(4, 4, generator=gen),
        "backbone.layers.1.mixer.q_proj.weight": torch.randn(4, 4, generator=gen),
        "backbone.layers.1.mixer.k_proj.weight": torch.randn(4, 4, generator=gen),
        "backbone.layers.1.mixer.k_proj.k_scale": t(0.125),
        "backbone.layers.1.mixer.v_proj.v_scale": t(0.0625),
        "backbone.layers.3.mixer.q_proj.weight": torch.randn(4, 4, generator=gen),
        "backbone.layers.3.mixer.k_proj.weight": torch.randn(4, 4, generator=gen),
    }
    cfg = llama_config(4, quant=qc("modelopt"), architectures=["NemotronHForCausalLM"])
    cfg["hybrid_override_pattern"] = "M*M*"
    return write_dir(d, w, cfg)


def _canonical(d: Path) -> Path:
    w = weights(2)
    for i in range(2):
        w[f"{P.format(i)}.attn.k_scale"] = t(0.5, torch.bfloat16)
        w[f"{P.format(i)}.attn.v_scale"] = t(0.375, torch.bfloat16)
    w[f"{P.format(1)}.attn.q_scale"] = t(0.25, torch.bfloat16)
    return write_dir(d, w, llama_config(2, quant=qc("fp8")))


def _sharded(d: Path) -> Path:
    """3 shards + index: scales for layer 0 in the last shard, a scale-free shard, extras."""
    w = weights(3)
    w[f"{P.format(0)}.k_scale"] = t(0.3)
    w[f"{P.format(0)}.v_scale"] = t(0.4)
    w[f"{P.format(1)}.k_proj.k_scale"] = t(0.5)
    w[f"{P.format(1)}.v_proj.v_scale"] = t(0.5)

    def placement(name: str) -> int:
        if name.startswith("model.layers.0") and name.endswith("_scale"):
            return 2
        if name.startswith("model.layers.1"):
            return 1
        if name.startswith("model.layers.2"):
            return 0  # holds no scale: copied whole
        return 2 if "scale" in name else 0

    extras = {
        "tokenizer.json": b'{"version": "1.0"}\n',
        "generation_config.json": b"{}",
        "original/params.json": b'{"dim": 8}',
        "README.md": b"# test model\n",
        "unindexed.safetensors": b"not even a safetensors file",
    }
    return write_dir(
        d,
        w,
        llama_config(3, quant=qc("modelopt")),
        shards=3,
        placement=placement,
        extra_files=extras,
    )


def _sharded_noindex(d: Path) -> Path:
    w = weights(2)
    w[f"{P.format(0)}.k_scale"] = t(0.3)
    w[f"{P.format(0)}.v_scale"] = t(0.4)
    w[f"{P.format(1)}.k_scale"] = t(0.8)
    w[f"{P.format(1)}.v_scale"] = t(0.9)
    return write_dir(d, w, llama_config(2, quant=qc("compressed-tensors")), shards=2, index=False)


def _duplicates(d: Path) -> Path:
    """The same k_scale in two shards (no index): the engine keeps the last one loaded."""
    w = weights(2)
    w[f"{P.format(0)}.v_scale"] = t(0.4)
    write_dir(d, w, llama_config(2, quant=qc("fp8")), shards=1)
    write_safetensors_file(d / "a-extra.safetensors", {f"{P.format(0)}.k_scale": t(0.25)})
    write_safetensors_file(d / "z-extra.safetensors", {f"{P.format(0)}.k_scale": t(0.5)})
    return d


def _single_file(d: Path) -> Path:
    w = weights(2)
    w[f"{P.format(0)}.k_scale"] = t(0.3)
    w[f"{P.format(0)}.v_scale"] = t(0.2)
    write_dir(d, w, llama_config(2, quant=qc("compressed-tensors")))
    (d / "notes.txt").write_text("not copied for a single-file input")
    return d / "model.safetensors"


def _hf_cache(d: Path) -> Path:
    _modelopt(d / "_src")
    return hf_cache(d / "_src", d / "models--org--tiny", move=True)


CASES: list[Case] = [
    Case("ct-tensor", _ct_tensor),
    Case("ct-attn-head", _ct_head),
    Case("modelopt", _modelopt),
    Case("modelopt-legacy-hf-quant-config", _modelopt_legacy),
    Case("fp8-legacy-kv-scale", _fp8_legacy_kv),
    Case("fp8-fused-qkv", _fp8_fused),
    Case("fp8-fused-qkv-fp8", _fp8_fused, kv_cache_dtype="fp8"),
    Case("quark", _quark),
    Case("quark-fp16", _quark, kv_cache_dtype="fp8_e4m3", model_dtype="float16"),
    Case("hunyuan", _hunyuan),
    Case("nemotron-h", _nemotron),
    Case("canonical", _canonical, kv_cache_dtype="fp8"),
    Case("sharded-index", _sharded),
    Case("sharded-no-index", _sharded_noindex),
    Case("duplicate-across-shards", _duplicates, kv_cache_dtype="fp8"),
    Case("single-file", _single_file),
    Case("hf-cache", _hf_cache),
    Case("per-token-head", _modelopt, kv_cache_dtype="int8_per_token_head"),
    Case("bfloat16-cache", _ct_tensor, kv_cache_dtype="bfloat16"),
]
CASES_BY_NAME = {c.name: c for c in CASES}


# --- checks -------------------------------------------------------------------------------------


def tree_bytes(root: Path) -> dict[str, bytes]:
    """Every regular file under root (symlinks followed), by relative path."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            full = Path(dirpath) / f
            out[str(full.relative_to(root))] = full.read_bytes()
    return out


def tensor_bytes(path: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    header = read_header(path)
    data = path.read_bytes()
    return {
        name: (info.dtype, info.shape, data[info.start : info.end])
        for name, info in header.tensors.items()
    }


def same(a: Any, b: Any) -> bool:
    """Exact equality of scale values (floats or tuples), NaN equal to NaN."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(same(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def report(path: Path, kv: str, platform: str, model_dtype: str | None = None) -> ScaleReport:
    return inspect_checkpoint(
        path, EngineOptions(kv_cache_dtype=kv, platform=platform, model_dtype=model_dtype)
    )


def values(layer: Any) -> tuple[Any, ...]:
    return (layer.k_scale, layer.v_scale, layer.q_scale, layer.prob_scale)
