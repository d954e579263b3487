"""verify's two paths on a GPU machine: without ``--gpu`` a layer is written and measured in
64 MiB chunks (kvscale/core/verify/chunks.py); with ``--gpu`` it is written whole, by the Triton
kernel and the reference, and compared byte for byte. Both must report the same statistics.

    PYTHONPATH=. python3 benchmarks/gpu_verify_chunks_check.py
    PYTHONPATH=. python3 benchmarks/gpu_verify_chunks_check.py --dry-run   # CPU: chunked only

For every target (the bundled FP8 examples, and one-layer checkpoints written here whose
config.json declares 8 kv heads x 128 and 16 x 4096), one line: the layers, the statistics that
differ between the chunked CPU run and the ``--gpu`` run (expected 0; ``mismatched_bytes`` is
left out, the CPU run has none), the kernel's differing cache bytes (expected 0), both wall
times, and each run's peak RSS (measured in a fresh process per run). Exit 0 when every count
is 0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EXAMPLES = ["llm-compressor-fp8", "llm-compressor-attn-head", "modelopt-fp8", "wrong-scale"]

ONE_RUN = """
import dataclasses, json, sys, time
from kvscale.core.verify.run import VerifyOptions, verify_target
start = time.perf_counter()
options = VerifyOptions(gpu=sys.argv[2] == "gpu", tokens=int(sys.argv[3]))
result = verify_target(sys.argv[1], options)
layers = [
    {kind: None if s is None else dataclasses.asdict(s) for kind, s in (("k", l.k), ("v", l.v))}
    for l in result.layers
]
print(json.dumps({"layers": layers, "wall": time.perf_counter() - start}))
"""


def wide_checkpoint(root: Path, kv_heads: int, head_dim: int) -> Path:
    """One layer of compressed-tensors FP8 scales (0.5), config.json declaring the shape."""
    import torch
    from safetensors.torch import save_file

    root.mkdir(parents=True)
    prefix = "model.layers.0.self_attn"
    tensors = {f"{prefix}.{p}_proj.weight": torch.zeros(4, 4, dtype=torch.bfloat16) for p in "qkvo"}
    tensors[f"{prefix}.k_scale"] = torch.tensor(0.5)
    tensors[f"{prefix}.v_scale"] = torch.tensor(0.5)
    save_file(tensors, str(root / "model.safetensors"))
    scheme = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": 1,
        "num_attention_heads": kv_heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "torch_dtype": "bfloat16",
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "config_groups": {},
            "kv_cache_scheme": {**scheme, "dynamic": False},
        },
    }
    (root / "config.json").write_text(json.dumps(config))
    return root


def run(target: Path, device: str, tokens: int) -> tuple[dict[str, object], int]:
    """One verify run in a fresh process: its layers and wall time, and its peak RSS (KiB)."""
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr)\n"
        "print(done.stdout.strip())\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    command = [sys.executable, "-c", ONE_RUN, str(target), device, str(tokens)]
    done = subprocess.run(
        [sys.executable, "-c", measure, *command], capture_output=True, text=True, check=True
    )
    report, peak = done.stdout.strip().splitlines()[-2:]
    return json.loads(report), int(peak)


def differing(cpu: list[dict[str, object]], gpu: list[dict[str, object]]) -> tuple[int, int]:
    """(statistics that differ, kernel bytes that differ) over all layers and kinds."""
    fields = bad_bytes = 0
    for cpu_layer, gpu_layer in zip(cpu, gpu, strict=True):
        for kind in ("k", "v"):
            a, b = cpu_layer[kind], gpu_layer[kind]
            if a is None or b is None:
                fields += a != b
                continue
            assert isinstance(a, dict) and isinstance(b, dict)
            bad_bytes += int(b.get("mismatched_bytes") or 0)
            # Compared as JSON, so that NaN equals NaN.
            fields += sum(
                json.dumps(a[key]) != json.dumps(b[key]) for key in a if key != "mismatched_bytes"
            )
    return fields, bad_bytes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU only: the chunked runs")
    args = parser.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="kvscale-chunks-") as scratch:
        targets = [(Path("examples") / name, 4096) for name in EXAMPLES] + [
            (wide_checkpoint(Path(scratch) / "llama3-shape", 8, 128), 4096),
            (wide_checkpoint(Path(scratch) / "hd4096x16", 16, 4096), 1024),
        ]
        for target, tokens in targets:
            cpu, cpu_peak = run(target, "cpu", tokens)
            line = (
                f"{target.name:28s} tokens={tokens:5d} layers={len(cpu['layers']):2d} "
                f"cpu: {cpu['wall']:7.2f} s peak {cpu_peak / 1024:7.0f} MiB"
            )
            if not args.dry_run:
                start = time.perf_counter()
                gpu, gpu_peak = run(target, "gpu", tokens)
                fields, bad_bytes = differing(cpu["layers"], gpu["layers"])
                failures += fields + bad_bytes
                line += (
                    f" | gpu: {gpu['wall']:7.2f} s peak {gpu_peak / 1024:7.0f} MiB "
                    f"({time.perf_counter() - start:.0f} s with start-up) | differing "
                    f"statistics {fields} | kernel bytes differing {bad_bytes}"
                )
            print(line, flush=True)
    print("OK" if failures == 0 else f"FAILED: {failures} differences")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
