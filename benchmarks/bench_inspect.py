"""Speed of ``kvscale inspect --json`` on a Llama-405B-shaped checkpoint, side by side with a
minimal ``safe_open(framework="pt")`` script that reads the same scale tensors.

    python benchmarks/bench_inspect.py                 # build (once) and compare, 7 runs each
    python benchmarks/bench_inspect.py --runs 11 --dir /tmp/kvscale-405b

The checkpoint is sparse: 126 layers in 191 shards with real headers (every tensor of an FP8
Llama-3.1-405B export: q/k/v/o, gate/up/down, norms, weight/input scales, k/v scales) and ~400 GB
of apparent size, of which only the headers and the scale bytes exist on disk. Both programs run
as fresh processes (interpreter start and imports included, as a user experiences them); the
table prints medians and the ratio kvscale / safe_open. A second check runs inspect in-process
and counts every byte it reads from the shards, proving it never touches weight bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import struct
import subprocess
import sys
import time
from pathlib import Path

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, VOCAB = 126, 16384, 128, 8, 128, 53248, 128256
SHARDS = 191


def _layer_tensors(i: int) -> list[tuple[str, str, list[int]]]:
    p = f"model.layers.{i}"
    out: list[tuple[str, str, list[int]]] = [
        (f"{p}.input_layernorm.weight", "BF16", [HIDDEN]),
        (f"{p}.post_attention_layernorm.weight", "BF16", [HIDDEN]),
    ]
    linears = {
        "self_attn.q_proj": [HEADS * HEAD_DIM, HIDDEN],
        "self_attn.k_proj": [KV_HEADS * HEAD_DIM, HIDDEN],
        "self_attn.v_proj": [KV_HEADS * HEAD_DIM, HIDDEN],
        "self_attn.o_proj": [HIDDEN, HEADS * HEAD_DIM],
        "mlp.gate_proj": [FFN, HIDDEN],
        "mlp.up_proj": [FFN, HIDDEN],
        "mlp.down_proj": [HIDDEN, FFN],
    }
    for module, shape in linears.items():
        out.append((f"{p}.{module}.weight", "F8_E4M3", shape))
        out.append((f"{p}.{module}.weight_scale", "F32", [shape[0], 1]))
    out.append((f"{p}.self_attn.k_scale", "BF16", []))
    out.append((f"{p}.self_attn.v_scale", "BF16", []))
    return out


_SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1}


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def build(directory: Path) -> None:
    """Write the sparse checkpoint (idempotent: skipped when already complete)."""
    marker = directory / ".complete"
    if marker.exists():
        return
    directory.mkdir(parents=True, exist_ok=True)
    tensors: list[tuple[str, str, list[int]]] = [
        ("model.embed_tokens.weight", "BF16", [VOCAB, HIDDEN])
    ]
    for i in range(LAYERS):
        tensors += _layer_tensors(i)
    tensors += [
        ("model.norm.weight", "BF16", [HIDDEN]),
        ("lm_head.weight", "BF16", [VOCAB, HIDDEN]),
    ]
    per_shard = -(-len(tensors) // SHARDS)
    weight_map: dict[str, str] = {}
    total = 0
    for s in range(SHARDS):
        chunk = tensors[s * per_shard : (s + 1) * per_shard]
        name = f"model-{s + 1:05d}-of-{SHARDS:05d}.safetensors"
        header: dict[str, object] = {"__metadata__": {"format": "pt"}}
        offset = 0
        scale_writes: list[tuple[int, bytes]] = []
        for tname, dtype, shape in sorted(chunk):
            nbytes = _numel(shape) * _SIZES[dtype]
            header[tname] = {
                "dtype": dtype,
                "shape": shape,
                "data_offsets": [offset, offset + nbytes],
            }
            if tname.endswith(("k_scale", "v_scale")):
                layer = int(tname.split(".")[2])
                value = (0.0125 + layer * 1e-4) * (1.0 if tname.endswith("k_scale") else 0.5)
                bf16 = struct.unpack("<I", struct.pack("<f", value))[0] >> 16
                scale_writes.append((offset, struct.pack("<H", bf16)))
            offset += nbytes
            weight_map[tname] = name
        raw = json.dumps(header, separators=(",", ":")).encode()
        raw += b" " * (-len(raw) % 8)
        path = directory / name
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            base = 8 + len(raw)
            for off, data in scale_writes:
                f.seek(base + off)
                f.write(data)
            f.truncate(base + offset)
        total += offset
    (directory / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map})
    )
    quant = {
        "quant_method": "compressed-tensors",
        "config_groups": {
            "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float"}}
        },
        "kv_cache_scheme": {
            "num_bits": 8,
            "type": "float",
            "strategy": "tensor",
            "symmetric": True,
        },
    }
    config = {
        "architectures": ["LlamaForCausalLM"],
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "num_key_value_heads": KV_HEADS,
        "hidden_size": HIDDEN,
        "torch_dtype": "bfloat16",
        "quantization_config": quant,
    }
    (directory / "config.json").write_text(json.dumps(config))
    marker.write_text("ok")


SAFE_OPEN_SCRIPT = """
import sys
from pathlib import Path
from safetensors import safe_open
values = {}
for shard in sorted(Path(sys.argv[1]).glob("*.safetensors")):
    with safe_open(str(shard), framework="pt") as f:
        for name in f.keys():
            if name.endswith(("k_scale", "v_scale")):
                values[name] = f.get_tensor(name).float().item()
print(len(values))
"""


def _time(cmd: list[str]) -> float:
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if out.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:3]} failed: {out.stderr.decode()[-500:]}")
    return elapsed


def bytes_read_in_process(directory: Path) -> tuple[int, int, int]:
    """(bytes inspect read from shard files, header bytes on disk, scale bytes on disk)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from kvscale.core.inspect import inspect_checkpoint
    from kvscale.io.safetensors import read_header

    counted = [0]
    real = os.pread

    def pread(fd: int, n: int, offset: int) -> bytes:
        data = real(fd, n, offset)
        counted[0] += len(data)
        return data

    os.pread = pread  # type: ignore[assignment]
    try:
        report = inspect_checkpoint(directory)
    finally:
        os.pread = real  # type: ignore[assignment]
    headers = scales = 0
    for shard in sorted(directory.glob("*.safetensors")):
        h = read_header(shard)
        headers += 8 + h.header_size
        scales += sum(
            t.nbytes for t in h.tensors.values() if t.name.endswith(("k_scale", "v_scale"))
        )
    assert len(report.layers) == LAYERS and all(
        layer.rule.value == "separate" for layer in report.layers
    )
    return counted[0], headers, scales


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dir", type=Path, default=Path("/tmp/kvscale-bench-405b"))
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    build(args.dir)
    apparent = sum(p.stat().st_size for p in args.dir.glob("*.safetensors"))
    on_disk = sum(p.stat().st_blocks * 512 for p in args.dir.glob("*.safetensors"))
    shards = len(list(args.dir.glob("*.safetensors")))

    kvscale_cmd = [sys.executable, "-m", "kvscale", "inspect", str(args.dir), "--json"]
    safe_open_cmd = [sys.executable, "-c", SAFE_OPEN_SCRIPT, str(args.dir)]
    for cmd in (kvscale_cmd, safe_open_cmd):  # warm the page cache and the .pyc files
        _time(cmd)
    kv_times, so_times = [], []
    for i in range(args.runs):  # alternate so drift affects both alike
        order = [(kvscale_cmd, kv_times), (safe_open_cmd, so_times)]
        for cmd, sink in order if i % 2 == 0 else order[::-1]:
            sink.append(_time(cmd))
    kv, so = statistics.median(kv_times), statistics.median(so_times)
    read, headers, scales = bytes_read_in_process(args.dir)

    size = f"{apparent / 1e9:.0f} GB apparent, {on_disk / 1e6:.1f} MB on disk"
    print(f"checkpoint: {shards} shards, {LAYERS} layers, {size}")
    print(f"{'program':38s} {'median s':>9s} {'min s':>8s} {'max s':>8s}")
    print(f"{'kvscale inspect --json':38s} {kv:9.3f} {min(kv_times):8.3f} {max(kv_times):8.3f}")
    label = "safe_open(framework=pt) + get_tensor"
    print(f"{label:38s} {so:9.3f} {min(so_times):8.3f} {max(so_times):8.3f}")
    print(f"ratio kvscale / safe_open: {kv / so:.3f}x  (target <= 0.25x; kvscale target < 0.5 s)")
    print(f"bytes read by inspect from shards: {read:,}")
    print(f"  on disk: headers {headers:,} + scale tensors {scales:,}; weights read: 0")


if __name__ == "__main__":
    main()
