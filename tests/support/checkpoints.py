"""The one builder of test checkpoints (torch + safetensors.torch, so values are exact).

One Llama config builder (``llama_config``), one quantization_config table (``quant_config``),
and the writers every test module uses; fixtures wrapping them live in ``tests/conftest.py``.

Valid files go through ``write_safetensors_file`` (the reference writer), or through
``layout_safetensors_file`` when they are written without torch (sparse files of any claimed
size, real bytes for the fault tests). Crafted, broken bytes go through ``safetensors_prefix``
(``raw_safetensors_file`` for a whole file): the one place a test packs a header by hand.
Checkpoint layouts built on them: Hugging Face caches (``hf_cache``), normalize outputs
(``scales_output``), and the named checkpoints below.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import struct
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import save_file

LLAMA_PREFIX = "model.layers.{}.self_attn"
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
FP8_TENSOR = {"dtype": "fp8_e4m3", "qscheme": "per_tensor"}


def quant_config(method: str, **extra: Any) -> dict[str, Any]:
    """A minimal quantization_config for each producer (``ct-head``: compressed-tensors
    ``attn_head``)."""
    if method in ("compressed-tensors", "ct-head"):
        qc: dict[str, Any] = {
            "quant_method": "compressed-tensors",
            "config_groups": {},
            "kv_cache_scheme": CT_HEAD if method == "ct-head" else CT_TENSOR,
        }
    elif method == "fp8":
        qc = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}
    elif method == "modelopt":
        qc = {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
            "producer": {"name": "modelopt", "version": "0.37.0"},
        }
    elif method == "quark":
        qc = {
            "quant_method": "quark",
            "export": {"kv_cache_group": ["*k_proj", "*v_proj"]},
            "layer_quant_config": {
                "*k_proj": {"output_tensors": FP8_TENSOR},
                "*v_proj": {"output_tensors": FP8_TENSOR},
            },
        }
    else:
        raise ValueError(method)
    qc.update(extra)
    return qc


def llama_config(
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    torch_dtype: str = "bfloat16",
    quant: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """config.json of a small Llama (4 heads, 2 kv heads, bf16), optionally quantized."""
    cfg: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "torch_dtype": torch_dtype,
    }
    if quant is not None:
        cfg["quantization_config"] = quant
    cfg.update(extra)
    return cfg


def ct_config(layers: int = 2, strategy: str = "tensor", **extra: Any) -> dict[str, Any]:
    """A Llama config with a compressed-tensors FP8 kv_cache_scheme (auto -> fp8)."""
    method = "ct-head" if strategy == "attn_head" else "compressed-tensors"
    if strategy not in ("tensor", "attn_head"):
        qc = quant_config("compressed-tensors")
        qc["kv_cache_scheme"] = {**CT_TENSOR, "strategy": strategy}
        return llama_config(layers, quant=qc, **extra)
    return llama_config(layers, quant=quant_config(method), **extra)


def fp8_config(layers: int = 2, **extra: Any) -> dict[str, Any]:
    """A Llama config with quant_method fp8 (the engine's base KV-scale path)."""
    return llama_config(
        layers, quant={"quant_method": "fp8", "activation_scheme": "static"}, **extra
    )


def tensor(value: Any, dtype: str = "F32", shape: tuple[int, ...] | None = None) -> torch.Tensor:
    t = torch.tensor(value, dtype=torch.float64).to(DTYPES[dtype])
    return t.reshape(shape) if shape is not None else t


def write_safetensors_file(
    path: Path, tensors: Mapping[str, Any], metadata: Mapping[str, str] | None = None
) -> Path:
    """A valid safetensors file written by the reference writer."""
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(dict(tensors), str(path), metadata=dict(metadata) if metadata else None)
    return path


DTYPE_BYTES = {"F64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "F8_E4M3": 1, "U8": 1}


def safetensors_prefix(header: Any, *, header_len: int | None = None, pad: bool = True) -> bytes:
    """The start of a safetensors file: the 8-byte little-endian header length, then the header.

    The one place tests pack a header by hand. ``header`` is a JSON-able object (written
    compactly), a ``str`` or raw ``bytes`` (taken as is); ``pad`` adds spaces up to a multiple
    of 8 as writers do; ``header_len`` replaces the true length (for crafted, broken files).
    Nothing is validated."""
    if isinstance(header, bytes):
        raw = header
    elif isinstance(header, str):
        raw = header.encode("utf-8", "surrogatepass")
    else:
        raw = json.dumps(header, separators=(",", ":")).encode()
    if pad and len(raw) % 8:
        raw += b" " * (8 - len(raw) % 8)  # writers pad with spaces to a multiple of 8
    return struct.pack("<Q", len(raw) if header_len is None else header_len) + raw


def raw_safetensors_file(
    path: Path,
    header: Any,
    data: bytes = b"",
    *,
    header_len: int | None = None,
    pad: bool = True,
) -> Path:
    """Exact bytes: ``safetensors_prefix(header, ...)`` then ``data``. Nothing is validated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(safetensors_prefix(header, header_len=header_len, pad=pad) + data)
    return path


def layout_header(
    tensors: Sequence[tuple[str, str, Sequence[int]]], metadata: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[int]]:
    """The header of ``(name, dtype, shape)`` tensors stored back to back in that order, and
    each tensor's size in bytes."""
    header: dict[str, Any] = {"__metadata__": dict(metadata)} if metadata else {}
    sizes: list[int] = []
    offset = 0
    for name, dtype, shape in tensors:
        size = DTYPE_BYTES[dtype] * math.prod(shape)
        header[name] = {
            "dtype": dtype,
            "shape": list(shape),
            "data_offsets": [offset, offset + size],
        }
        sizes.append(size)
        offset += size
    return header, sizes


def layout_safetensors_file(
    path: Path,
    tensors: Sequence[tuple[str, str, Sequence[int]]],
    fill: Callable[[str, int], bytes] | None = None,
    metadata: Mapping[str, str] | None = None,
) -> Path:
    """A valid safetensors file of ``(name, dtype, shape)`` tensors, written without torch:
    ``fill(name, size)`` gives each tensor's bytes; without ``fill`` the data is a hole (a
    sparse file: a file of any claimed size costs no disk and reads as zeros)."""
    header, sizes = layout_header(tensors, metadata)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(safetensors_prefix(header))
        if fill is None:
            fh.truncate(fh.tell() + sum(sizes))
        else:
            for (name, _, _), size in zip(tensors, sizes, strict=True):
                data = fill(name, size)
                assert len(data) == size, (name, len(data), size)
                fh.write(data)
    return path


def tensor_entry(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def llama_tensors(
    layers: int = 2,
    scales: Mapping[str, float] | None = None,
    dtype: str = "float32",
) -> dict[str, Any]:
    """q_proj weights plus ``<prefix>.k_proj.k_scale``-style scalars for every layer."""
    scales = {"k_scale": 0.5, "v_scale": 0.25} if scales is None else scales
    tensors: dict[str, Any] = {}
    for i in range(layers):
        prefix = LLAMA_PREFIX.format(i)
        tensors[f"{prefix}.q_proj.weight"] = torch.zeros(4, 4, dtype=torch.bfloat16)
        for kind, value in scales.items():
            proj = kind[0]
            tensors[f"{prefix}.{proj}_proj.{kind}"] = torch.tensor(
                value, dtype=getattr(torch, dtype)
            )
    return tensors


def make_checkpoint_dir(
    root: Path,
    name: str = "ckpt",
    *,
    layers: int = 2,
    scales: Mapping[str, float] | None = None,
    config: Mapping[str, Any] | None | bool = True,
    shards: int = 1,
    index: bool = True,
    tensors: Mapping[str, Any] | None = None,
) -> Path:
    """A directory checkpoint; ``config=True`` writes ``ct_config(layers)``, ``None``/False none.

    With ``shards > 1`` tensors are spread round-robin over ``model-0000i-of-0000n.safetensors``
    and, when ``index`` is true, a ``model.safetensors.index.json`` lists them.
    """
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    all_tensors = dict(llama_tensors(layers, scales) if tensors is None else tensors)
    if config is True:
        config = ct_config(layers)
    if config:
        (directory / "config.json").write_text(json.dumps(config))
    if shards == 1:
        write_safetensors_file(directory / "model.safetensors", all_tensors)
        return directory
    names = sorted(all_tensors)
    weight_map: dict[str, str] = {}
    for s in range(shards):
        shard = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: all_tensors[n] for n in names[s::shards]}
        write_safetensors_file(directory / shard, part)
        weight_map.update(dict.fromkeys(part, shard))
    if index:
        (directory / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
        )
    return directory


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
    return write_checkpoint(directory, scalars, llama_config(layers=layers, quant=quant))


def gemma2_quark_checkpoint(root: Path, layers: int = 4) -> Path:
    """``root/gemma2-quark``: Quark's ``k_proj.output_scale`` names under Gemma2, whose weight
    loader drops them (the architecture never maps ``output_scale``)."""
    tensors = attention_weights(layers)
    for i in range(layers):
        tensors[f"model.layers.{i}.self_attn.k_proj.output_scale"] = tensor(0.02)
        tensors[f"model.layers.{i}.self_attn.v_proj.output_scale"] = tensor(0.005)
    cfg = llama_config(
        layers,
        quant=quant_config("quark"),
        architectures=["Gemma2ForCausalLM"],
        model_type="gemma2",
    )
    return write_checkpoint(root / "gemma2-quark", tensors, cfg)


def distinct_k(i: int) -> float:
    """Layer ``i``'s k scale in ``distinct_scales``: (i + 1) / 1024, exact in float32 and bf16."""
    return (i + 1) / 1024


def distinct_v(i: int) -> float:
    """Layer ``i``'s v scale in ``distinct_scales``: (i + 1) / 2048."""
    return (i + 1) / 2048


def distinct_scales(layers: int, **overrides: float | None) -> dict[str, float]:
    """k/v scale names -> values, distinct per layer; overrides like ``k77=0.5`` or ``v3=None``
    (drop that tensor). For ``write_scalar_checkpoint``."""
    out: dict[str, float] = {}
    for i in range(layers):
        for kind, value in (("k", distinct_k(i)), ("v", distinct_v(i))):
            chosen = overrides.get(f"{kind}{i}", value)
            if chosen is not None:
                out[f"{LLAMA_PREFIX.format(i)}.{kind}_scale"] = chosen
    return out


def scales_output(
    directory: Path, k_device: list[float], k_host: float, head_size: int = 16
) -> Path:
    """A kvscale.scales/1 output directory (what ``normalize`` writes) for one layer: ``k_device``
    is the device tensor's values, ``k_host`` the JSON's k_scale (the max over heads)."""
    directory.mkdir()
    name = "model.layers.0.self_attn.attn"
    shape = () if len(k_device) == 1 else (len(k_device),)
    write_safetensors_file(
        directory / "kv_scales.safetensors",
        {
            f"{name}.k_scale": torch.tensor(k_device, dtype=torch.float32).reshape(shape),
            f"{name}.v_scale": torch.tensor(0.25, dtype=torch.float32),
            # normalize writes a device tensor for every kind the JSON holds
            f"{name}.q_scale": torch.tensor(1.0, dtype=torch.float32),
            f"{name}.prob_scale": torch.tensor(1.0, dtype=torch.float32),
        },
    )
    doc = {
        "schema": "kvscale.scales/1",
        "checkpoint": "x",
        "kv_cache_dtype": "fp8",
        "platform": "ocp",
        "engine_path": "base",
        "head_size": head_size,
        "layers": {
            name: {
                "k_scale": k_host,
                "v_scale": 0.25,
                "q_scale": 1.0,
                "prob_scale": 1.0,
                "rule": "separate",
                "sources": {},
            }
        },
    }
    (directory / "kv_scales.json").write_text(json.dumps(doc))
    return directory


def broken_checkpoint(root: Path) -> Path:
    """``root/broken``, compressed-tensors, 3 layers: layer 0 fine; layer 1 k_scale 0 (error)
    and no v_scale (warning); layer 2 no scales."""
    return write_scalar_checkpoint(
        root / "broken",
        {
            f"{LLAMA_PREFIX.format(0)}.k_scale": 0.0234375,
            f"{LLAMA_PREFIX.format(0)}.v_scale": 0.015625,
            f"{LLAMA_PREFIX.format(1)}.k_scale": 0.0,
        },
        layers=3,
    )


def good_checkpoint(root: Path) -> Path:
    """``root/good``, compressed-tensors, 2 layers, every scale 1/32: no problem at all."""
    return write_scalar_checkpoint(
        root / "good",
        {
            f"{LLAMA_PREFIX.format(i)}.{k}": 0.03125
            for i in range(2)
            for k in ("k_scale", "v_scale")
        },
        layers=2,
    )


def hf_cache(
    source: Path,
    repo: Path,
    *,
    revisions: tuple[str, ...] = ("0123456789abcdef0123456789abcdef01234567",),
    ref: bytes | None = None,
    refs: bool = True,
    drop_blob: bool = False,
    move: bool = False,
) -> Path:
    """``repo`` (``models--ORG--NAME``) as the Hugging Face cache lays out ``source``'s files:
    ``blobs/<sha256>``, ``snapshots/<revision>/<name>`` relative links to them and, with
    ``refs``, ``refs/main`` holding ``ref`` (default: the first revision). ``drop_blob`` leaves
    the safetensors blobs out (dangling links); ``move`` deletes ``source`` afterwards."""
    (repo / "blobs").mkdir(parents=True)
    (repo / "snapshots").mkdir()
    for revision in revisions:
        snapshot = repo / "snapshots" / revision
        snapshot.mkdir(parents=True)
        for item in sorted(source.iterdir()):
            data = item.read_bytes()
            blob = hashlib.sha256(data).hexdigest()
            if not (drop_blob and item.suffix == ".safetensors"):
                (repo / "blobs" / blob).write_bytes(data)
            (snapshot / item.name).symlink_to(f"../../blobs/{blob}")
    if refs:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_bytes(revisions[0].encode() if ref is None else ref)
    if move:
        shutil.rmtree(source)
    return repo


def big_modelopt_checkpoint(root: Path, total_mb: int, *, layers: int = 8, shards: int = 4) -> Path:
    """A ModelOpt FP8 checkpoint of real (random) bytes, about ``total_mb`` MB, written without
    torch: shards 1 to n-1 hold the layers' projections and float32 k/v scales (``normalize
    --checkpoint`` rewrites them), the last shard only ``lm_head.weight`` (copied whole); plus a
    300 KB tokenizer.json, a README.md and the index. Copies of it take a while: the fault
    tests interrupt them."""
    root.mkdir(parents=True)
    cfg = llama_config(layers, heads=8, kv_heads=2, quant=quant_config("modelopt"))
    (root / "config.json").write_text(json.dumps(cfg))
    (root / "tokenizer.json").write_bytes(os.urandom(300_000))
    (root / "README.md").write_text("# a model\n")
    block = os.urandom(8 << 20)

    def fill(name: str, size: int) -> bytes:
        if name.endswith("_scale"):
            return struct.pack("<f", 0.046875 if "k_scale" in name else 0.03125)
        return (block * (size // len(block) + 1))[:size]

    per_weight = (total_mb << 20) // (layers * 4 + 2) // 4096 * 4096
    per_shard = layers // (shards - 1)
    weight_map: dict[str, str] = {}
    for s in range(shards - 1):
        name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        tensors: list[tuple[str, str, list[int]]] = []
        for layer in range(s * per_shard, (s + 1) * per_shard):
            prefix = LLAMA_PREFIX.format(layer)
            for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
                tensors.append((f"{prefix}.{proj}.weight", "BF16", [per_weight // 2]))
            tensors += [
                (f"{prefix}.k_proj.k_scale", "F32", []),
                (f"{prefix}.v_proj.v_scale", "F32", []),
            ]
        tensors.sort()
        layout_safetensors_file(root / name, tensors, fill, {"format": "pt"})
        weight_map.update(dict.fromkeys((t[0] for t in tensors), name))
    last = f"model-{shards:05d}-of-{shards:05d}.safetensors"
    layout_safetensors_file(
        root / last, [("lm_head.weight", "BF16", [per_weight])], fill, {"format": "pt"}
    )
    weight_map["lm_head.weight"] = last
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root
