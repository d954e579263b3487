"""kvscale's calibrated k/v scales against llm-compressor's, on one model and one set of token ids.

kvscale: ``capture_kv_amax`` (the statistic of ``kvscale calibrate``), scale = amax / 448 in
float32 (``kvscale.model.scales``), per tensor and per KV head. llm-compressor:
``oneshot`` with a KV-only ``QuantizationModifier`` (FP8, ``static_minmax`` observer, strategy
``tensor`` and ``attn_head``), batch 1, no shuffling. Its scales are the ``k_scale`` /
``v_scale`` parameters it attaches to each attention module, in the model dtype: it computes
``amax / 448`` in that dtype (``llmcompressor/observers``, ``calculate_qparams``).

Both runs use eager attention. llm-compressor 0.14 forces it for every calibration forward
pass (``calibration_forward_context`` -> ``use_eager_attention``,
``llmcompressor/utils/helpers.py:126-162`` at 0.14.0.1). Under sdpa, bf16 K/V can differ by an
ulp from a few layers in. Pass ``--kvscale-attention default`` to see that difference.

For each layer, kind and head it rounds kvscale's float32 scale to llm-compressor's dtype and
counts the ulps between the two in that dtype. 0 is equal; 1 is within the rounding of that
dtype (two independent roundings of nearly equal values). Anything more is a disagreement,
and the exit status is 1. It prints one line per layer and a summary line per strategy.

    PYTHONPATH=. python3 benchmarks/compare_llmcompressor.py              # SmolLM2, bf16, CPU
    PYTHONPATH=. python3 benchmarks/compare_llmcompressor.py --samples 8 --seq-len 512 \\
        --strategy tensor --json out.json

Needs llmcompressor (tested: 0.14.0.1, compressed-tensors 0.19.0, transformers 5.17.0); the
model and token options are those of bench_calibrate.py. Deterministic: same inputs, same
result.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import torch
from bench_calibrate import (
    DEFAULT_DATA,
    default_cache,
    llmcompressor_available,
    load_tokens,
    model_label,
    note,
    resolve_model,
    run_llmcompressor,
    versions,
    write_json,
)

from kvscale.model.capture import capture_kv_amax
from kvscale.model.load import DTYPES, load_model
from kvscale.model.scales import kv_scales

STRATEGIES = {"tensor": "tensor", "attn_head": "head"}  # llm-compressor name -> kvscale name


def rounded(values: list[float], dtype: torch.dtype) -> list[float]:
    return torch.tensor(values, dtype=torch.float32).to(dtype).float().tolist()


def ulps(a: float, b: float, dtype: torch.dtype) -> int:
    """Distance in representable values of ``dtype`` between two values of that dtype (both
    finite and of one sign here: scales are positive)."""
    bits = {torch.bfloat16: torch.int16, torch.float16: torch.int16, torch.float32: torch.int32}
    t = torch.tensor([a, b], dtype=torch.float32).to(dtype).view(bits[dtype]).long()
    return abs(int(t[0]) - int(t[1]))


def compare(
    strategy: str,
    ours: dict[str, tuple[list[float], list[float], list[float], list[float]]],
    theirs: dict[str, dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    rows: list[dict[str, Any]] = []
    counts = {"values": 0, "equal": 0, "one_ulp": 0, "beyond": 0, "missing": 0}
    for module_path, (k32, v32, k_amax, v_amax) in ours.items():
        t = theirs.get(module_path)
        if t is None:
            counts["missing"] += 1
            rows.append({"layer": module_path, "missing": True})
            continue
        dtype = DTYPES[t["dtype"]]
        row: dict[str, Any] = {"layer": module_path, "dtype": t["dtype"], "shape": t["shape"]}
        for kind, mine, amax in (("k", k32, k_amax), ("v", v32, v_amax)):
            mine_r = rounded(mine, dtype)
            other = t[kind]
            if len(other) != len(mine):
                raise SystemExit(
                    f"{module_path}.{kind}: llm-compressor wrote {len(other)} values for "
                    f"{strategy}, kvscale has {len(mine)}"
                )
            d = [ulps(a, b, dtype) for a, b in zip(mine_r, other, strict=True)]
            counts["values"] += len(d)
            counts["equal"] += sum(x == 0 for x in d)
            counts["one_ulp"] += sum(x == 1 for x in d)
            counts["beyond"] += sum(x > 1 for x in d)
            row[kind] = {
                "kvscale_amax": amax,
                "kvscale_float32": mine,
                "kvscale_rounded": mine_r,
                "llmcompressor": other,
                "ulps": d,
            }
        rows.append(row)
    return rows, counts


def print_rows(strategy: str, rows: list[dict[str, Any]]) -> None:
    print(
        f"\n{strategy}: kvscale amax/448 (float32) rounded to llm-compressor's dtype, vs its "
        "scale; ulps apart"
    )
    print(
        f"{'layer':<34}{'k kvscale':>12}{'k llmc':>12}{'ulps':>6}{'v kvscale':>12}"
        f"{'v llmc':>12}{'ulps':>6}"
    )
    for row in rows:
        if row.get("missing"):
            print(f"{row['layer']:<34}  no scale from llm-compressor")
            continue
        k, v = row["k"], row["v"]
        # per head: show the largest head's values and the worst ulp count of the heads
        ki = max(range(len(k["kvscale_rounded"])), key=lambda i: k["kvscale_rounded"][i])
        vi = max(range(len(v["kvscale_rounded"])), key=lambda i: v["kvscale_rounded"][i])
        print(
            f"{row['layer']:<34}{k['kvscale_rounded'][ki]:>12.6g}{k['llmcompressor'][ki]:>12.6g}"
            f"{max(k['ulps']):>6}{v['kvscale_rounded'][vi]:>12.6g}{v['llmcompressor'][vi]:>12.6g}"
            f"{max(v['ulps']):>6}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--model", help="a local Hugging Face model directory (default SmolLM2)")
    ap.add_argument("--random-llama", metavar="SIZE", help="e.g. 256x4 (see bench_calibrate.py)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--dtype", choices=("auto", *DTYPES), default="auto")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=str(default_cache()))
    ap.add_argument("--strategy", choices=("tensor", "attn_head", "both"), default="both")
    ap.add_argument(
        "--kvscale-attention",
        choices=("eager", "default"),
        default="eager",
        help="attention kvscale runs under (llm-compressor always runs eager)",
    )
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args(argv)
    if not llmcompressor_available():
        print("llmcompressor is not importable: pip install llmcompressor", file=sys.stderr)
        return 3
    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA device", file=sys.stderr)
        return 3

    model_dir, dtype = resolve_model(args)
    attn = "eager" if args.kvscale_attention == "eager" else None
    loaded = load_model(model_dir, dtype=dtype, device=args.device, attn_implementation=attn)
    dtype = loaded.dtype
    samples, source = load_tokens(loaded, args.data, args.samples, args.seq_len, args.seed)
    tokens = sum(len(s) for s in samples)
    print(f"model  {model_label(model_dir, loaded)}, {dtype}, {args.device}")
    print(f"tokens {len(samples)} samples, {tokens} tokens from {source}")
    print(f"attention: kvscale {loaded.attn_implementation}, llm-compressor eager (forced)")

    strategies = ["tensor", "attn_head"] if args.strategy == "both" else [args.strategy]
    doc: dict[str, Any] = {
        "schema": "kvscale.compare_llmcompressor/1",
        "model": str(model_dir),
        "dtype": dtype,
        "device": args.device,
        "tokens": tokens,
        "token_source": source,
        "kvscale_attention": loaded.attn_implementation,
        "versions": versions(),
        "strategies": {},
    }
    summaries = []
    failed = False
    for strategy in strategies:
        start = time.perf_counter()
        capture = capture_kv_amax(loaded, samples, strategy=STRATEGIES[strategy])
        ours_s = time.perf_counter() - start
        ours: dict[str, tuple[list[float], list[float], list[float], list[float]]] = {}
        for lc in capture.layers:
            k_amax = list(lc.k_amax) if isinstance(lc.k_amax, tuple) else [lc.k_amax]
            v_amax = list(lc.v_amax) if isinstance(lc.v_amax, tuple) else [lc.v_amax]
            k = kv_scales(k_amax)
            v = kv_scales(v_amax)
            assert isinstance(k, tuple) and isinstance(v, tuple)
            ours[lc.layer.module_path] = (list(k), list(v), k_amax, v_amax)
        note(f"{strategy}: llm-compressor oneshot ...")
        timing, theirs = run_llmcompressor(model_dir, samples, dtype, args.device, strategy)
        theirs_s = timing.wall
        rows, counts = compare(strategy, ours, theirs)
        print_rows(strategy, rows)
        bad = counts["beyond"] + counts["missing"]
        failed = failed or bad > 0
        summary = (
            f"{strategy}: {counts['equal']}/{counts['values']} values equal, "
            f"{counts['one_ulp']} one ulp apart (rounding), {counts['beyond']} further, "
            f"{counts['missing']} layers missing; kvscale {ours_s:.2f} s, llm-compressor "
            f"{theirs_s:.2f} s"
        )
        summaries.append(summary)
        doc["strategies"][strategy] = {
            "counts": counts,
            "rows": rows,
            "kvscale_s": ours_s,
            "llmcompressor_s": theirs_s,
        }
    print()
    for summary in summaries:
        print(("AGREE     " if "0 further, 0 layers" in summary else "DISAGREE  ") + summary)
    doc["agree"] = not failed
    write_json(args.json, doc)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
