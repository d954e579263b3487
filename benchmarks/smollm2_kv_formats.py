"""Accuracy of every KV-cache format kvscale can measure, on SmolLM2-135M (CPU): one
``kvscale verify --data`` run per format, each printing perplexity and KL against the unquantized
cache.

* FP8 per tensor at calibrated scales (``kvscale calibrate --checkpoint``) and at 1.0;
* the per-token-head formats (``int8``, ``fp8``, ``int4_per_token_head``: no checkpoint scale);
* NVFP4 and NVFP4 4-over-6 with calibrated global scales (``calibrate --kv-cache-dtype nvfp4``,
  amax/448 for vLLM) and, from the same run, calibrated in each convention (amax/2688,
  amax/448) and at 1.0.

    python3 examples/smollm2/make_model.py --out /tmp/smol     # or any SmolLM2 directory
    PYTHONPATH=. python3 benchmarks/smollm2_kv_formats.py --model /tmp/smol --out /tmp/fmt

Prints one markdown table (``benchmarks/RESULTS.md``); ``OUT/results.json`` holds every run's
``model_eval``. Deterministic on one machine (CPU, float32 reductions in a fixed order).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "examples" / "calibration" / "kvscale-calibration.txt"


def kvscale(*args: object) -> dict:
    cmd = [sys.executable, "-m", "kvscale", *(str(a) for a in args)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if run.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)}: exit {run.returncode}\n{run.stderr}")
    return json.loads(run.stdout) if run.stdout.strip() else {}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=512)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = ["--data", DATA, "--samples", args.samples, "--seq-len", args.seq_len]
    fp8 = args.out / "fp8"
    nvfp4 = args.out / "nvfp4"
    for out, extra in ((fp8, ()), (nvfp4, ("--kv-cache-dtype", "nvfp4"))):
        if not (out / "checkpoint").is_dir():
            kvscale("calibrate", args.model, *data, "--out", out, "--checkpoint", "--force",
                    "--device", "cpu", *extra, "--json")  # fmt: skip
    runs = [
        ("fp8", fp8 / "checkpoint", "fp8"),
        ("int8_per_token_head", args.model, "int8_per_token_head"),
        ("fp8_per_token_head", args.model, "fp8_per_token_head"),
        ("int4_per_token_head", args.model, "int4_per_token_head"),
        ("nvfp4", nvfp4 / "checkpoint", "nvfp4"),
        ("nvfp4_4over6", nvfp4 / "checkpoint", "nvfp4_4over6"),
    ]
    results = {}
    rows = []
    for name, target, dtype in runs:
        began = time.monotonic()
        doc = kvscale("verify", target, "--kv-cache-dtype", dtype, *data, "--json")
        seconds = time.monotonic() - began
        model_eval = doc["model_eval"]
        results[name] = {"seconds": seconds, "model_eval": model_eval}
        for v in model_eval["variants"]:
            label = {
                "target": "calibrated" if name in ("fp8", "nvfp4", "nvfp4_4over6") else "-",
                "unit_scales": "1.0",
            }.get(v["name"], v["name"].removeprefix("nvfp4 ") + " (calibrated)")
            if name.endswith("per_token_head") and v["name"] == "unit_scales":
                continue  # reads no scale: the same run
            rows.append((name, label, v["ppl"], v["kl_mean"], v["kl_max"]))
        print(f"{name}: {seconds:.0f} s", file=sys.stderr)
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    first = results["fp8"]["model_eval"]
    print(
        f"SmolLM2-135M, {first['samples']} samples, {first['tokens']} tokens, "
        f"{first['dtype']}; unquantized perplexity {first['ppl_unquantized']:.4f}\n"
    )
    print("| format | scales | perplexity | KL mean | KL max |")
    print("|---|---|---|---|---|")
    for name, label, ppl, kl_mean, kl_max in rows:
        print(f"| {name} | {label} | {ppl:.4f} | {kl_mean:.4g} | {kl_max:.4g} |")


if __name__ == "__main__":
    main()
