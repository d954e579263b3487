"""Benchmark: ``kvscale normalize --checkpoint`` against ``cp -r`` on a multi-GB checkpoint.

    python benchmarks/bench_normalize.py --size-gb 6 --runs 5

Builds a synthetic checkpoint of real (random) bytes in a temporary directory (``--dir``, default
the system temp dir; free space is checked first: the source plus two outputs must fit), then
times, side by side and alternating the order on each run (page-cache state cannot be reset
without root, so neither command always goes first):

* ``cp -r SRC DST`` (what the issue compares against; the data may still be in the page cache
  when it returns),
* ``cp -r SRC DST && sync`` (the same copy made durable, like kvscale's fsynced output),
* ``kvscale normalize SRC --out DST --checkpoint`` (the real CLI in a subprocess; every file is
  fsynced before the final rename),
* the same through the library with ``fsync=False`` (what the copy itself costs).

Every shard holds KV scales in ModelOpt naming (``k_proj.k_scale``), so every shard is rewritten
(header + new scale tensors + kept bytes by ``copy_file_range``), the worst case for kvscale;
one extra shard holds no scales and is copied whole. Prints medians, throughputs, ratios and
the peak RSS of each kvscale process (``os.wait4``'s rusage of that child).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LAYERS = 32
HIDDEN_DTYPE = "BF16"


def _write_shard(path: Path, tensors: list[tuple[str, str, list[int], int]], fill: bytes) -> int:
    """A safetensors file whose big tensors hold ``fill`` bytes repeated (real data on disk)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, dtype, shape, nbytes in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        for name, dtype, _, nbytes in tensors:
            if dtype == "F32" and nbytes == 4:
                fh.write(struct.pack("<f", 0.0234375 if "k_scale" in name else 0.015625))
                continue
            left = nbytes
            shift = hash(name) % 4096
            while left:
                chunk = fill[shift : shift + min(left, len(fill) - shift)]
                fh.write(chunk)
                left -= len(chunk)
                shift = 0
    return path.stat().st_size


def build_checkpoint(root: Path, size_gb: float, shards: int) -> int:
    root.mkdir(parents=True)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "torch_dtype": "bfloat16",
        "quantization_config": {
            "quant_method": "modelopt",
            "quant_algo": "FP8",
            "kv_cache_scheme": {"num_bits": 8, "type": "float", "dynamic": False},
            "producer": {"name": "modelopt", "version": "0.37.0"},
        },
    }
    (root / "config.json").write_text(json.dumps(config, indent=2))
    (root / "tokenizer.json").write_bytes(os.urandom(9_000_000))
    (root / "generation_config.json").write_text("{}")
    total = int(size_gb * 1e9)
    per_layer = total // (LAYERS + 2)
    # Four projection weights per layer, sizes multiple of 2 (bf16) and of 4096 elements.
    per_weight = (per_layer // 4) // 8192 * 8192
    fill = os.urandom(64 << 20)
    weight_map: dict[str, str] = {}
    per_shard = (LAYERS + shards - 1) // shards
    size = 0
    for s in range(shards):
        name = f"model-{s + 1:05d}-of-{shards + 1:05d}.safetensors"
        tensors: list[tuple[str, str, list[int], int]] = []
        for layer in range(s * per_shard, min(LAYERS, (s + 1) * per_shard)):
            p = f"model.layers.{layer}.self_attn"
            for proj in ("q_proj", "k_proj", "v_proj", "o_proj"):
                tensors.append(
                    (
                        f"{p}.{proj}.weight",
                        HIDDEN_DTYPE,
                        [per_weight // 2 // 4096, 4096],
                        per_weight,
                    )
                )
            tensors.append((f"{p}.k_proj.k_scale", "F32", [], 4))
            tensors.append((f"{p}.v_proj.v_scale", "F32", [], 4))
        tensors.sort(key=lambda t: t[0])
        size += _write_shard(root / name, tensors, fill)
        weight_map.update({t[0]: name for t in tensors})
    # One shard without scales (embeddings, lm_head): copied whole.
    last = f"model-{shards + 1:05d}-of-{shards + 1:05d}.safetensors"
    big = (total - size) // 2 // 8192 * 8192
    tail = [
        ("lm_head.weight", HIDDEN_DTYPE, [max(1, big // 2 // 4096), 4096], max(8192, big)),
        (
            "model.embed_tokens.weight",
            HIDDEN_DTYPE,
            [max(1, big // 2 // 4096), 4096],
            max(8192, big),
        ),
    ]
    size += _write_shard(root / last, tail, fill)
    weight_map.update({t[0]: last for t in tail})
    index = {"metadata": {"total_size": size}, "weight_map": dict(sorted(weight_map.items()))}
    (root / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
    return sum(p.stat().st_size for p in root.iterdir())


def _run(cmd: list[str]) -> tuple[float, int]:
    """Wall time and the peak RSS (bytes) of exactly this child process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {err[-2000:]}")
    return elapsed, usage.ru_maxrss * 1024  # ru_maxrss is in KiB on Linux


def _sync() -> None:
    subprocess.run(["sync"], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-gb", type=float, default=6.0)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--dir", default=None, help="where to build (default: the temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the checkpoint afterwards")
    ap.add_argument("--build-into", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_into:  # child mode: build, so the timing parent stays small
        total = build_checkpoint(Path(args.build_into), args.size_gb, args.shards)
        print(total)
        return 0

    base = Path(tempfile.mkdtemp(prefix="kvscale-bench-", dir=args.dir))
    need = 3.1 * args.size_gb * 1e9
    free = shutil.disk_usage(base).free
    if free < need:
        shutil.rmtree(base)
        raise SystemExit(f"need {need / 1e9:.1f} GB free in {base.parent}, have {free / 1e9:.1f}")
    src = base / "src"
    t0 = time.perf_counter()
    # Built in a child: a forked child's peak RSS (ru_maxrss) starts at the parent's RSS at
    # fork time, so the timing parent must stay small for the RSS numbers to mean anything.
    built = subprocess.run(
        [
            sys.executable,
            __file__,
            "--size-gb",
            str(args.size_gb),
            "--shards",
            str(args.shards),
            "--build-into",
            str(src),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    total = int(built.stdout.strip())
    _sync()
    print(f"built {total / 1e9:.2f} GB in {time.perf_counter() - t0:.1f} s at {src}")
    own = int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) * 1024
    print(f"timing parent RSS {own / 2**20:.1f} MiB (a floor for every child's peak RSS below)")
    kvscale = [sys.executable, "-m", "kvscale"]
    no_fsync = (
        "import sys; from kvscale.core.normalize import NormalizeOptions, normalize_checkpoint; "
        "normalize_checkpoint(sys.argv[1], sys.argv[2], "
        "NormalizeOptions(checkpoint=True, fsync=False))"
    )
    commands = {
        "cp -r": lambda dst: ["cp", "-r", str(src), str(dst)],
        "cp -r && sync": lambda dst: ["sh", "-c", f'cp -r "{src}" "{dst}" && sync'],
        "kvscale normalize --checkpoint": lambda dst: [
            *kvscale,
            "normalize",
            str(src),
            "--out",
            str(dst),
            "--checkpoint",
        ],
        "normalize (library, no fsync)": lambda dst: [
            sys.executable,
            "-c",
            no_fsync,
            str(src),
            str(dst),
        ],
    }
    times: dict[str, list[float]] = {k: [] for k in commands}
    rss: dict[str, list[int]] = {k: [] for k in commands}
    names = list(commands)
    try:
        for run in range(args.runs):
            order = names if run % 2 == 0 else names[::-1]
            for key in order:
                dst = base / "out"
                shutil.rmtree(dst, ignore_errors=True)
                _sync()
                elapsed, peak = _run(commands[key](dst))
                times[key].append(elapsed)
                rss[key].append(peak)
                print(
                    f"run {run + 1} {key:32s} {elapsed:7.2f} s  {total / elapsed / 1e9:6.2f} GB/s"
                    f"  peak RSS {peak / 2**20:7.1f} MiB"
                )
            shutil.rmtree(base / "out", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)

    med = {k: statistics.median(v) for k, v in times.items()}
    print()
    print(
        f"date {time.strftime('%Y-%m-%d')}; {platform.node()}; {platform.platform()}; "
        f"{os.cpu_count()} CPUs; python {platform.python_version()}"
    )
    print(f"checkpoint {total / 1e9:.2f} GB, {args.shards + 1} shards; median of {args.runs} runs")
    for key, value in med.items():
        print(
            f"  {key:32s} {value:7.2f} s  {total / value / 1e9:6.2f} GB/s  "
            f"max peak RSS {max(rss[key]) / 2**20:7.1f} MiB"
        )
    norm = med["kvscale normalize --checkpoint"]
    print(f"throughput ratio normalize / cp -r          = {med['cp -r'] / norm:.2f}")
    print(f"throughput ratio normalize / cp -r && sync  = {med['cp -r && sync'] / norm:.2f}")
    print(
        f"throughput ratio no-fsync normalize / cp -r = "
        f"{med['cp -r'] / med['normalize (library, no fsync)']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
