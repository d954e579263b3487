"""GPU checks of calibrate and verify --data on an MLA model (random DeepSeek-V3, the real latent
widths: kv_lora_rank 512, qk_rope_head_dim 64), device tool.

1. calibrate on the GPU: every layer's scale equals, to the bit, f32(max(amax kv_c, amax k_pe) /
   448) of an independent capture (a plain ``DynamicCache`` subclass recording ``update``, the
   same model on the same GPU, batch 1); calibrate on the CPU too, and the layers whose scale
   differs are listed (the GPU's bf16 arithmetic, not a failure);
2. verify --data with ``--gpu`` (kvscale's Triton ``concat_and_cache_mla`` writes the latent, in
   the model run's round trip and in the per-layer statistics) against the same run without it
   (the CPU reference writer on the GPU's tensors; the model on the GPU in both): mismatched
   bytes 0 per layer, the same perplexities and KL to the bit, the same per-layer statistics; the
   time per 1k tokens of each.

Run on the device from the repository root:

    PYTHONPATH=. python3 benchmarks/gpu_mla_model_check.py --out $OUT
    PYTHONPATH=. python3 benchmarks/gpu_mla_model_check.py --out /tmp/x --dry-run   # CPU plumbing

Prints one PASS/FAIL line per check, then the report; ``$OUT/gpu_mla_model_check.json`` holds
every number. Exit 0 only when every check holds.
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
VOCAB = 32000


def make_model(path: Path, hidden: int, layers: int) -> Path:
    import torch
    import transformers

    config = transformers.DeepseekV3Config(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=hidden * 3,
        moe_intermediate_size=hidden // 2,
        num_hidden_layers=layers,
        num_attention_heads=16,
        num_key_value_heads=16,
        kv_lora_rank=512,
        q_lora_rank=768,
        qk_rope_head_dim=64,
        qk_nope_head_dim=128,
        v_head_dim=128,
        n_routed_experts=8,
        num_experts_per_tok=2,
        n_group=1,
        topk_group=1,
        first_k_dense_replace=1,
        n_shared_experts=1,
        max_position_embeddings=4096,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
        model.save_pretrained(str(path))
    return path


def write_data(path: Path, samples: int, seq_len: int) -> list[list[int]]:
    import torch

    g = torch.Generator().manual_seed(1)
    rows = [torch.randint(0, VOCAB, (seq_len,), generator=g).tolist() for _ in range(samples)]
    path.write_text("".join(json.dumps({"input_ids": r}) + "\n" for r in rows))
    return rows


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


def oracle_scales(model: Path, rows: list[list[int]], device: str) -> dict[str, float]:
    """f32(max(amax kv_c, amax k_pe) / 448) per layer from a plain DynamicCache subclass."""
    import torch
    import transformers

    amax: dict[int, float] = {}

    class Recorder(transformers.DynamicCache):  # type: ignore[misc]
        def update(self, key: Any, value: Any, layer_idx: int, *a: Any, **kw: Any) -> Any:
            m = max(float(key.float().abs().max()), float(value.float().abs().max()))
            amax[layer_idx] = max(amax.get(layer_idx, 0.0), m)
            return super().update(key, value, layer_idx, *a, **kw)

    from kvscale.model.hook import cache_kwarg_name

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = transformers.AutoModelForCausalLM.from_pretrained(
            str(model), dtype=torch.bfloat16, device_map={"": device}
        ).eval()
        name = cache_kwarg_name(lm)
        with torch.inference_mode():
            for r in rows:
                ids = torch.tensor([r], device=device)
                lm(input_ids=ids, use_cache=True, **{name: Recorder(config=lm.config)})
    return {
        f"model.layers.{i}.self_attn.attn": float(
            torch.tensor(a, dtype=torch.float32) / torch.tensor(448.0)
        )
        for i, a in amax.items()
    }


def scales(out: Path) -> dict[str, tuple[float, float]]:
    doc = json.loads((out / "kv_scales.json").read_text())
    return {n: (x["k_scale"], x["v_scale"]) for n, x in doc["layers"].items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8)
    parser.add_argument("--seq-len", type=int, default=512)
    parser.add_argument("--dry-run", action="store_true", help="CPU only, no --gpu (plumbing)")
    args = parser.parse_args()
    if args.dry_run:
        args.hidden, args.layers, args.samples, args.seq_len = 256, 2, 2, 64
    device = "cpu" if args.dry_run else "cuda"
    args.out.mkdir(parents=True, exist_ok=True)
    checks: dict[str, bool] = {}
    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = make_model(root / "model", args.hidden, args.layers)
        rows = write_data(root / "data.jsonl", args.samples, args.seq_len)
        common = ["--data", root / "data.jsonl", "--samples", args.samples, "--seq-len",
                  args.seq_len, "--json"]  # fmt: skip
        runs = {}
        for name, dev in (("main", device), ("cpu", "cpu")):
            code, doc, seconds = cli("calibrate", model, "--out", root / name, *common,
                                     "--device", dev)  # fmt: skip
            runs[name] = scales(root / name)
            report[f"calibrate_{name}"] = {"device": dev, "exit": code, "seconds": seconds}
        want = oracle_scales(model, rows, device)
        checks["calibrate_equals_update_oracle"] = runs["main"] == {
            n: (s, s) for n, s in want.items()
        }
        report["calibrate_layers"] = len(want)
        report["calibrate_differs_from_oracle"] = sorted(
            n for n in want if runs["main"].get(n) != (want[n], want[n])
        )
        report["gpu_vs_cpu_layers_differing"] = sorted(
            n for n in runs["main"] if runs["main"][n] != runs["cpu"].get(n)
        )
        target = root / "main"
        vcommon = [*common, "--model", model, "--model-device", device]
        gpu_flag = [] if args.dry_run else ["--gpu"]
        code_g, gpu, t_gpu = cli("verify", target, *vcommon, *gpu_flag)
        code_c, ref, t_ref = cli("verify", target, *vcommon)
        tokens = gpu["model_eval"]["tokens"]
        compared = None if args.dry_run else 0  # no kernel runs in a dry run
        bad = [x["name"] for x in gpu["layers"] if x["k"]["mismatched_bytes"] != compared]
        checks["kernel_bytes_equal_reference"] = not bad
        keys = ("ppl_unquantized", "ppl_fp8", "ppl_unit_scales", "kl_mean", "kl_mean_unit_scales")
        checks["model_eval_equal_kernel_vs_reference"] = all(
            gpu["model_eval"][k] == ref["model_eval"][k] for k in keys
        )
        stat_keys = ("saturated", "underflow", "rel_rms_error", "absmax")
        checks["layer_stats_equal"] = all(
            [a["k"][k] for k in stat_keys] == [b["k"][k] for k in stat_keys]
            for a, b in zip(gpu["layers"], ref["layers"], strict=True)
        )
        checks["verify_passes"] = code_g == 0 and code_c == 0
        report["verify"] = {
            "exit_kernel": code_g,
            "exit_reference": code_c,
            "tokens": tokens,
            "mismatched_bytes": {x["name"]: x["k"]["mismatched_bytes"] for x in gpu["layers"]},
            "seconds_per_1k_tokens_kernel": t_gpu / tokens * 1000,
            "seconds_per_1k_tokens_reference": t_ref / tokens * 1000,
            "model_eval_kernel": gpu["model_eval"],
            "model_eval_reference": ref["model_eval"],
            "layers_kernel": [{"name": x["name"], **x["k"]} for x in gpu["layers"]],
        }
    (args.out / "gpu_mla_model_check.json").write_text(
        json.dumps({**report, "checks": checks}, indent=2)
    )
    for name, ok in checks.items():
        print(f"{'PASS' if ok else 'FAIL'} {name}")
    print(json.dumps(report, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
