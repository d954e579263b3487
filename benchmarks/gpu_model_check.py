"""GPU checks of calibrate and verify --model against the CPU, on a random Llama (device tool).

1. calibrate on one GPU and on the CPU, same model, dtype and tokens: the scales must be equal to
   the bit (the statistic is an exact max; only the forward pass's device differs, so any
   difference is the GPU's bf16 arithmetic, reported per layer);
2. calibrate with the model split by accelerate (``--device auto --max-memory``: part on the GPU,
   the rest offloaded to the CPU and disk): scales equal to the single-GPU run (issue 16);
3. verify --model with --gpu (the Triton kernel writes the cache) and without (the CPU reference):
   cache bytes identical (mismatched_bytes 0 per layer), perplexities printed side by side, and
   the time per 1k tokens of each.

Run on the device from the repository root:

    PYTHONPATH=. python3 benchmarks/gpu_model_check.py --out $OUT

Exit 0 only when every check holds; ``$OUT/gpu_model_check.json`` holds every number.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def make_model(path: Path, hidden: int, layers: int, vocab: int) -> Path:
    import torch
    import transformers

    config = transformers.LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 3,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=max(1, hidden // 256),
        max_position_embeddings=4096,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        model.save_pretrained(str(path))
    return path


def write_data(path: Path, samples: int, seq_len: int, vocab: int) -> Path:
    import torch

    g = torch.Generator().manual_seed(1)
    with path.open("w") as f:
        for _ in range(samples):
            ids = torch.randint(0, vocab, (seq_len,), generator=g).tolist()
            f.write(json.dumps({"input_ids": ids}) + "\n")
    return path


def cli(*args: object) -> tuple[int, dict[str, Any], float]:
    from typer.testing import CliRunner

    from kvscale.cli import app

    start = time.perf_counter()
    result = CliRunner().invoke(app, [str(a) for a in args])
    seconds = time.perf_counter() - start
    doc = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    if result.exit_code not in (0, 1):
        print(result.stdout, result.stderr, file=sys.stderr)
    return result.exit_code, doc, seconds


def scales(out: Path) -> dict[str, tuple[Any, Any]]:
    doc = json.loads((out / "kv_scales.json").read_text())
    return {n: (x["k_scale"], x["v_scale"]) for n, x in doc["layers"].items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    checks: dict[str, bool] = {}
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = make_model(root / "model", args.hidden, args.layers, 32000)
        data = write_data(root / "data.jsonl", args.samples, args.seq_len, 32000)
        common = ["--data", data, "--samples", args.samples, "--seq-len", args.seq_len, "--json"]
        runs = {}
        for name, device in (("cuda", ["--device", "cuda"]), ("cpu", ["--device", "cpu"])):
            code, doc, seconds = cli("calibrate", model, "--out", root / name, *common, *device)
            runs[name] = scales(root / name)
            report[f"calibrate_{name}"] = {
                "exit": code,
                "seconds": seconds,
                "tokens": doc["tokens"],
            }
        code, doc, seconds = cli(
            "calibrate", model, "--out", root / "split", *common, "--device", "auto",
            "--max-memory", "0=150MiB,cpu=100MiB",
        )  # fmt: skip
        runs["split"] = scales(root / "split")
        report["calibrate_split"] = {
            "exit": code,
            "seconds": seconds,
            "devices": doc.get("model_run", {}).get("devices"),
        }
        differ = [n for n in runs["cuda"] if runs["cuda"][n] != runs["cpu"][n]]
        report["cuda_vs_cpu_layers_differing"] = differ
        checks["split_equals_single_gpu"] = runs["split"] == runs["cuda"]
        checks["split_used_several_devices"] = len(report["calibrate_split"]["devices"] or []) > 1
        # verify --model: kernel vs reference on the model's own K/V.
        assert cli("calibrate", model, "--out", root / "ckpt", *common, "--device", "cuda",
                   "--checkpoint")[0] == 0  # fmt: skip
        target = root / "ckpt" / "checkpoint"
        vcommon = ["--data", data, "--samples", args.samples, "--seq-len", args.seq_len, "--json"]
        code_g, gpu, t_gpu = cli("verify", target, *vcommon, "--gpu")
        # The model on the GPU in both runs: only the cache write differs (kernel vs reference).
        code_c, cpu, t_cpu = cli("verify", target, *vcommon, "--model-device", "cuda")
        code_x, cpu_model, t_x = cli("verify", target, *vcommon)
        report["verify_model_on_cpu"] = {
            "exit": code_x,
            "seconds_per_1k_tokens": t_x / cpu_model["model_eval"]["tokens"] * 1000,
            "model_eval": cpu_model["model_eval"],
        }
        tokens = gpu["model_eval"]["tokens"]
        bad = [
            (layer["name"], kind)
            for layer in gpu["layers"]
            for kind in ("k", "v")
            if layer[kind]["mismatched_bytes"] != 0
        ]
        checks["kernel_bytes_equal_reference"] = not bad
        same_stats = [
            (a["k"]["saturated"], a["k"]["rel_rms_error"], a["v"]["saturated"])
            == (b["k"]["saturated"], b["k"]["rel_rms_error"], b["v"]["saturated"])
            for a, b in zip(gpu["layers"], cpu["layers"], strict=True)
        ]
        checks["ppl_equal_kernel_vs_reference"] = (
            gpu["model_eval"]["ppl_fp8"] == cpu["model_eval"]["ppl_fp8"]
        )
        checks["layer_stats_equal"] = all(same_stats)
        report["verify"] = {
            "exit_gpu": code_g,
            "exit_cpu": code_c,
            "tokens": tokens,
            "seconds_per_1k_tokens_gpu": t_gpu / tokens * 1000,
            "seconds_per_1k_tokens_cpu": t_cpu / tokens * 1000,
            "model_eval_gpu": gpu["model_eval"],
            "model_eval_cpu": cpu["model_eval"],
            "layer_stats_equal": all(same_stats),
        }
    (args.out / "gpu_model_check.json").write_text(
        json.dumps({**report, "checks": checks}, indent=2)
    )
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'} {name}")
    print(json.dumps(report, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
