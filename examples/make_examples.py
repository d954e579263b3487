"""Write the bundled example checkpoints (a few KB each) in each producer's real layout.

    python examples/make_examples.py            # regenerate examples/ in place
    python examples/make_examples.py --out DIR  # write them somewhere else

Every checkpoint is a tiny Llama-shaped model (4 layers, hidden 16) with real-looking FP8 weights
and the KV-scale tensors exactly as each producer names, shapes and types them. The output is
deterministic: running the script twice gives byte-identical files (a test checks the committed
files against a fresh run).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import save_file

HIDDEN, INTERMEDIATE, VOCAB, LAYERS = 16, 16, 16, 4


def _config(
    heads: int = 2, kv_heads: int = 1, layers: int = LAYERS, **extra: object
) -> dict[str, object]:
    config: dict[str, object] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": HIDDEN,
        "intermediate_size": INTERMEDIATE,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "head_dim": HIDDEN // heads,
        "vocab_size": VOCAB,
        "torch_dtype": "bfloat16",
    }
    config.update(extra)
    return config


def _weights(
    heads: int = 2, kv_heads: int = 1, static_inputs: bool = False, layers: int = LAYERS
) -> dict[str, torch.Tensor]:
    """Deterministic stand-in weights: FP8 linear layers with per-tensor weight scales (and input
    scales for static activation quantization, as ModelOpt writes them)."""
    gen = torch.Generator().manual_seed(0)
    head_dim = HIDDEN // heads
    shapes = {
        "self_attn.q_proj": (heads * head_dim, HIDDEN),
        "self_attn.k_proj": (kv_heads * head_dim, HIDDEN),
        "self_attn.v_proj": (kv_heads * head_dim, HIDDEN),
        "self_attn.o_proj": (HIDDEN, heads * head_dim),
        "mlp.gate_up_proj": (2 * INTERMEDIATE, HIDDEN),
        "mlp.down_proj": (HIDDEN, INTERMEDIATE),
    }
    tensors: dict[str, torch.Tensor] = {
        "model.embed_tokens.weight": torch.randn(VOCAB, HIDDEN, generator=gen).to(torch.bfloat16),
        "model.norm.weight": torch.ones(HIDDEN, dtype=torch.bfloat16),
    }
    for layer in range(layers):
        prefix = f"model.layers.{layer}"
        tensors[f"{prefix}.input_layernorm.weight"] = torch.ones(HIDDEN, dtype=torch.bfloat16)
        tensors[f"{prefix}.post_attention_layernorm.weight"] = torch.ones(
            HIDDEN, dtype=torch.bfloat16
        )
        for module, shape in shapes.items():
            weight = torch.randn(*shape, generator=gen) * 0.05
            scale = weight.abs().max() / 448.0
            tensors[f"{prefix}.{module}.weight"] = (weight / scale).to(torch.float8_e4m3fn)
            tensors[f"{prefix}.{module}.weight_scale"] = scale.reshape(()).to(torch.float32)
            if static_inputs:
                tensors[f"{prefix}.{module}.input_scale"] = torch.tensor(
                    0.0125, dtype=torch.float32
                )
    return tensors


# Calibrated-looking scales (amax / 448), chosen to be exactly representable in bfloat16 so the
# "good" examples pass `kvscale inspect --strict`.
K_SCALES = [0.02099609375, 0.0244140625, 0.0185546875, 0.0267333984375]
V_SCALES = [0.00482177734375, 0.006103515625, 0.00531005859375, 0.0040283203125]


def _bf16(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.bfloat16)


def _f32(value: float) -> torch.Tensor:
    return torch.tensor(value, dtype=torch.float32)


def _write(
    directory: Path, files: dict[str, dict[str, torch.Tensor]], config: dict, **json_files: dict
) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, tensors in files.items():
        save_file(tensors, str(directory / name), metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    for name, document in json_files.items():
        (directory / f"{name}.json").write_text(
            json.dumps(document, indent=2, sort_keys=True) + "\n"
        )


def _shard(
    tensors: dict[str, torch.Tensor], parts: int
) -> tuple[dict[str, dict[str, torch.Tensor]], dict]:
    """Split by layer the way transformers does, and build the index."""
    names = sorted(tensors)
    files: dict[str, dict[str, torch.Tensor]] = {}
    weight_map: dict[str, str] = {}
    for name in names:
        layer = int(name.split(".")[2]) if name.startswith("model.layers.") else -1
        part = 0 if layer < 0 else min(parts - 1, layer * parts // LAYERS)
        file = f"model-{part + 1:05d}-of-{parts:05d}.safetensors"
        files.setdefault(file, {})[name] = tensors[name]
        weight_map[name] = file
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    return files, {"metadata": {"total_size": total}, "weight_map": weight_map}


CT_WEIGHTS_GROUP = {
    "group_0": {
        "targets": ["Linear"],
        "weights": {
            "num_bits": 8,
            "type": "float",
            "strategy": "channel",
            "symmetric": True,
            "dynamic": False,
        },
        "input_activations": {
            "num_bits": 8,
            "type": "float",
            "strategy": "token",
            "symmetric": True,
            "dynamic": True,
        },
    }
}


def _ct_quant(strategy: str) -> dict[str, object]:
    """An llm-compressor quantization_config: FP8 weights plus an FP8 KV-cache scheme."""
    return {
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": CT_WEIGHTS_GROUP,
        "ignore": ["lm_head"],
        "kv_cache_scheme": {
            "num_bits": 8,
            "type": "float",
            "strategy": strategy,
            "symmetric": True,
            "dynamic": False,
        },
    }


def llm_compressor(out: Path) -> None:
    """compressed-tensors (llm-compressor): `self_attn.k_scale`/`v_scale`, bf16 [], single file."""
    tensors = _weights()
    for i in range(LAYERS):
        tensors[f"model.layers.{i}.self_attn.k_scale"] = _bf16(K_SCALES[i])
        tensors[f"model.layers.{i}.self_attn.v_scale"] = _bf16(V_SCALES[i])
    quant = _ct_quant("tensor")
    _write(
        out / "llm-compressor-fp8",
        {"model.safetensors": tensors},
        _config(quantization_config=quant),
    )


def llm_compressor_attn_head(out: Path) -> None:
    """compressed-tensors `attn_head`: per-head k/v [kv_heads,1,1], q [heads,1,1] (GQA 4:2)."""
    tensors = _weights(heads=4, kv_heads=2)
    for i in range(LAYERS):
        p = f"model.layers.{i}.self_attn"
        tensors[f"{p}.k_scale"] = torch.tensor(
            [[[K_SCALES[i]]], [[K_SCALES[i] / 2]]], dtype=torch.bfloat16
        )
        tensors[f"{p}.v_scale"] = torch.tensor(
            [[[V_SCALES[i]]], [[V_SCALES[i] * 2]]], dtype=torch.bfloat16
        )
        q = [0.015625, 0.03125, 0.0234375, 0.01171875]
        tensors[f"{p}.q_scale"] = torch.tensor(q, dtype=torch.bfloat16).reshape(4, 1, 1)
    quant = _ct_quant("attn_head")
    _write(
        out / "llm-compressor-attn-head",
        {"model.safetensors": tensors},
        _config(heads=4, kv_heads=2, quantization_config=quant),
    )


def modelopt(out: Path) -> None:
    """NVIDIA ModelOpt HF export: `k_proj.k_scale`/`v_proj.v_scale` float32 [], 2 shards + index."""
    tensors = _weights(static_inputs=True)
    for i in range(LAYERS):
        p = f"model.layers.{i}.self_attn"
        tensors[f"{p}.k_proj.k_scale"] = _f32(K_SCALES[i] * 64)
        tensors[f"{p}.v_proj.v_scale"] = _f32(V_SCALES[i] * 256)
    files, index = _shard(tensors, 2)
    quant = {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_scheme": {"dynamic": False, "num_bits": 8, "type": "float"},
        "producer": {"name": "modelopt", "version": "0.37.0"},
    }
    _write(
        out / "modelopt-fp8",
        files,
        _config(quantization_config=quant),
        **{"model.safetensors.index": index},
    )


def modelopt_legacy(out: Path) -> None:
    """ModelOpt <= 0.29: config in hf_quant_config.json; scales clamped to >= 1.0 (float32 [])."""
    tensors = _weights(static_inputs=True)
    for i in range(LAYERS):
        p = f"model.layers.{i}.self_attn"
        tensors[f"{p}.k_proj.k_scale"] = _f32(max(1.0, K_SCALES[i] * 64))
        tensors[f"{p}.v_proj.v_scale"] = _f32(max(1.0, V_SCALES[i] * 256))
    hf_quant = {
        "producer": {"name": "modelopt", "version": "0.29.0"},
        "quantization": {
            "quant_algo": "FP8",
            "kv_cache_quant_algo": "FP8",
            "exclude_modules": ["lm_head"],
        },
    }
    _write(
        out / "modelopt-legacy", {"model.safetensors": tensors}, _config(), hf_quant_config=hf_quant
    )


def quark(out: Path) -> None:
    """AMD Quark: `k_proj.output_scale`, `v_proj.output_scale`, `q_proj.output_scale`,
    `self_attn.prob_output_scale` (float32 []); KV cache declared via export.kv_cache_group."""
    tensors = _weights()
    for i in range(LAYERS):
        p = f"model.layers.{i}.self_attn"
        tensors[f"{p}.k_proj.output_scale"] = _f32(K_SCALES[i])
        tensors[f"{p}.v_proj.output_scale"] = _f32(V_SCALES[i])
        tensors[f"{p}.q_proj.output_scale"] = _f32(0.015625)
        tensors[f"{p}.prob_output_scale"] = _f32(0.0022321428)
    fp8 = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}
    quant = {
        "quant_method": "quark",
        "export": {"kv_cache_group": ["*k_proj", "*v_proj"], "pack_method": "reorder"},
        "layer_quant_config": {
            "*k_proj": {"weight": fp8, "input_tensors": fp8, "output_tensors": fp8},
            "*v_proj": {"weight": fp8, "input_tensors": fp8, "output_tensors": fp8},
        },
        "global_quant_config": {"weight": fp8, "input_tensors": fp8, "output_tensors": None},
        "exclude": ["lm_head"],
    }
    files, index = _shard(tensors, 2)
    _write(
        out / "quark-fp8",
        files,
        _config(quantization_config=quant),
        **{"model.safetensors.index": index},
    )


def autofp8_legacy(out: Path) -> None:
    """AutoFP8 before 2024-07: one deprecated `self_attn.kv_scale` for both k and v."""
    tensors = _weights()
    for i in range(LAYERS):
        tensors[f"model.layers.{i}.self_attn.kv_scale"] = _f32(K_SCALES[i])
    quant = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}
    _write(
        out / "autofp8-legacy", {"model.safetensors": tensors}, _config(quantization_config=quant)
    )


def hf_cache(out: Path) -> None:
    """A Hugging Face hub cache entry: refs/main -> snapshots/<rev>/ symlinked into blobs/."""
    import hashlib

    source = out / ".hf-cache-source"
    llm_compressor(source)
    repo = out / "hf-cache" / "models--kvscale--tiny-llama-fp8-kv"
    if repo.exists():
        shutil.rmtree(repo)
    revision = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo / "snapshots" / revision
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision)
    for file in sorted((source / "llm-compressor-fp8").iterdir()):
        data = file.read_bytes()
        blob = hashlib.sha256(data).hexdigest()
        (repo / "blobs" / blob).write_bytes(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), snapshot / file.name)
    shutil.rmtree(source)


def broken(out: Path) -> None:
    """The typical problems, in one 5-layer compressed-tensors checkpoint: a zero scale the engine
    uses (layer 0), a scale of exactly 1.0 (1), scales dropped by an export step (2), a missing
    k_scale and two tensors feeding one v_scale with different values (3), and a scale stored
    under a name no compressed-tensors convention maps, which the loader refuses (4)."""
    layers = LAYERS + 1
    tensors = _weights(layers=layers)
    p = "model.layers.{}.self_attn"
    tensors[f"{p.format(0)}.k_scale"] = _bf16(K_SCALES[0])
    tensors[f"{p.format(0)}.v_scale"] = _bf16(0.0)  # zero: saturates every cached value
    tensors[f"{p.format(1)}.k_scale"] = _bf16(1.0)  # indistinguishable from the default
    tensors[f"{p.format(1)}.v_scale"] = _bf16(V_SCALES[1])
    # layer 2: no scales at all (coverage gap)
    tensors[f"{p.format(3)}.v_scale"] = _bf16(V_SCALES[3])
    tensors[f"{p.format(3)}.attn.v_scale"] = _f32(0.25)  # second source for v, different value
    tensors[f"{p.format(4)}.k_proj.output_scale"] = _f32(K_SCALES[3])  # old CT name: unmapped
    tensors[f"{p.format(4)}.v_proj.output_scale"] = _f32(V_SCALES[3])
    quant = _ct_quant("tensor")
    _write(
        out / "broken",
        {"model.safetensors": tensors},
        _config(layers=layers, quantization_config=quant),
    )


def wrong_scale(out: Path) -> None:
    """llm-compressor-fp8 with layer 1's k_scale 100x too small: a valid-looking number that
    `inspect` cannot fault, but real activations saturate (`kvscale verify --activations`)."""
    tensors = _weights()
    for i in range(LAYERS):
        k = K_SCALES[i] / 128 if i == 1 else K_SCALES[i]
        tensors[f"model.layers.{i}.self_attn.k_scale"] = _bf16(k)
        tensors[f"model.layers.{i}.self_attn.v_scale"] = _bf16(V_SCALES[i])
    quant = _ct_quant("tensor")
    _write(out / "wrong-scale", {"model.safetensors": tensors}, _config(quantization_config=quant))


def activations(out: Path) -> None:
    """Captured-looking K/V for the 4-layer examples (`kvscale verify --activations`): per layer
    `<layer>.k` / `<layer>.v`, [64 tokens, 1 kv head, 8], bf16, heavy-tailed with an outlier
    channel, and an absolute max just under the calibrated scale x 448."""
    gen = torch.Generator().manual_seed(1)
    tensors: dict[str, torch.Tensor] = {}
    for i in range(LAYERS):
        for kind, scale in (("k", K_SCALES[i]), ("v", V_SCALES[i])):
            normal = torch.randn(64, 1, 8, generator=gen)
            chi2 = torch.randn(64, 1, 8, 4, generator=gen).pow(2).sum(-1)
            x = normal / torch.sqrt(chi2 / 4)
            x[..., 3] *= 4.0
            x = x * (scale * 448.0 * 0.98 / x.abs().max())
            tensors[f"model.layers.{i}.self_attn.attn.{kind}"] = x.to(torch.bfloat16)
    target = out / "activations"
    target.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(target / "tiny-llama-kv.safetensors"), metadata={"format": "pt"})


EXAMPLES = (
    llm_compressor,
    llm_compressor_attn_head,
    modelopt,
    modelopt_legacy,
    quark,
    autofp8_legacy,
    hf_cache,
    broken,
    wrong_scale,
    activations,
)
NAMES = (
    "llm-compressor-fp8",
    "llm-compressor-attn-head",
    "modelopt-fp8",
    "modelopt-legacy",
    "quark-fp8",
    "autofp8-legacy",
    "hf-cache",
    "broken",
    "wrong-scale",
    "activations",
)


def make_all(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        target = out / name
        if target.exists():
            shutil.rmtree(target)
    for make in EXAMPLES:
        make(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    make_all(args.out)
    for name in NAMES:
        size = sum(
            f.stat().st_size
            for f in (args.out / name).rglob("*")
            if f.is_file() and not f.is_symlink()
        )
        print(f"{name:28s} {size / 1024:6.1f} KiB")


if __name__ == "__main__":
    main()
