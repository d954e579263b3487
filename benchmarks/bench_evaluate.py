"""What ``verify --model`` costs: evaluate_model per variant against one bare forward pass.

On one model, dtype, device and set of token ids, it times ``--runs`` times, interleaved, and
reports medians of:

* ``forward``: the bare forward pass, ``model(input_ids=ids, use_cache=False)`` per sample
  (batch 1) under ``torch.inference_mode()``: the yardstick;
* ``forward_labels``: the same with ``labels=ids`` (the loss evaluate_model reads), for
  reference;
* ``eval_unquantized``: ``evaluate_model`` with no variant, the model's own K/V (the reference
  run), the reference log-probabilities kept for the KL;
* ``eval_unq+fp8`` / ``eval_unq+unit``: ``("unquantized", "fp8")`` / ``("unquantized",
  "unit_scales")``; the ``fp8`` and ``unit_scales`` variants cost the difference to
  ``eval_unquantized``, taken run by run (paired), then the median;
* ``eval_all``: all three variants, what ``kvscale verify --model`` runs.

Budget (issue 12), printed as PASS/FAIL lines; the exit status is 1 when one fails: each
variant (unquantized, fp8, unit_scales) costs at most 2.5 x forward.

The scales are the model's own calibrated ones (``capture_kv_amax`` on the same samples, not
timed). Quantize step: on CUDA the project's Triton cache-write kernel
(``kvscale.kernel.triton_cache.reshape_and_cache_flash``, the tokens written in order into a
scratch paged cache and read back as bytes) when Triton is importable and the GPU writes FP8,
else the CPU reference writer ``kvscale.kernel.reference.quantize_to_bits`` (on x's device).
Peak memory of ``forward`` and ``eval_all`` is measured in child processes, as in
bench_calibrate.py. The model and token options are the same as there (SmolLM2 by default,
``--random-llama SIZE``, ``--model DIR``). Everything is seeded.

    PYTHONPATH=. python3 benchmarks/bench_evaluate.py                      # SmolLM2, CPU
    PYTHONPATH=. python3 benchmarks/bench_evaluate.py --samples 4 --seq-len 256 --runs 3
    PYTHONPATH=. python3 benchmarks/bench_evaluate.py --random-llama 4096x32 --device cuda \\
        --seq-len 2048 --json out.json
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from bench_calibrate import (
    add_common,
    budget_line,
    child_args,
    child_report,
    forward_fn,
    load_tokens,
    measure_child,
    median,
    model_label,
    note,
    peak_rss_kb,
    print_memory,
    print_times,
    read_tokens,
    resolve_model,
    run_interleaved,
    set_threads,
    timed,
    versions,
    write_json,
)

from kvscale.kernel.formats import E4M3FN
from kvscale.kernel.reference import quantize_to_bits
from kvscale.kernel.roundtrip import QuantizeFn, fp8_roundtrip
from kvscale.model.capture import capture_kv_amax
from kvscale.model.evaluate import CacheVariant, LayerCodec, evaluate_model
from kvscale.model.load import LoadedModel, load_model

BLOCK_SIZE = 16
BUDGET = 2.5


def triton_quantize() -> QuantizeFn:
    """``quantize(x, scale)`` through the Triton cache-write kernel: the tokens in slot order
    into a scratch paged cache (K and V caches both receive ``x``); the K cache's bytes back."""
    from kvscale.kernel.triton_cache import reshape_and_cache_flash

    def quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        tokens, heads, head_size = x.shape
        blocks = -(-tokens // BLOCK_SIZE)
        cache = torch.empty(
            (2, blocks, BLOCK_SIZE, heads, head_size), dtype=torch.uint8, device=x.device
        )
        slots = torch.arange(tokens, dtype=torch.int64, device=x.device)
        s = scale.reshape(-1).to(device=x.device, dtype=torch.float32).contiguous()
        x = x.contiguous()
        reshape_and_cache_flash(x, x, cache[0], cache[1], slots, "fp8", s, s)
        return cache[0].reshape(blocks * BLOCK_SIZE, heads, head_size)[:tokens]

    return quantize


def choose_quantize(device: str) -> tuple[QuantizeFn, str]:
    reference = functools.partial(quantize_to_bits, fmt=E4M3FN)
    if device != "cuda":
        return reference, "kvscale.kernel.reference.quantize_to_bits (CPU reference)"
    if importlib.util.find_spec("triton") is None:
        return reference, "quantize_to_bits on the GPU (Triton not importable)"
    if torch.cuda.get_device_capability() < (8, 9):
        return reference, "quantize_to_bits on the GPU (no FP8 conversion before sm_89)"
    return triton_quantize(), "kvscale.kernel.triton_cache.reshape_and_cache_flash (Triton)"


def cache_variants(
    scales: dict[str, Any], quantize: QuantizeFn, names: tuple[str, ...]
) -> list[CacheVariant]:
    """verify's variants: ``fp8`` at the calibrated scales, ``unit_scales`` at 1.0 (the
    reference run, ``unquantized``, always runs)."""

    def tensor(value: Any) -> torch.Tensor:
        return torch.tensor(list(value) if isinstance(value, tuple) else [value])

    out = []
    for name in names:
        if name == "unquantized":
            continue
        layers = {}
        for layer, (k, v) in scales.items():
            ks, vs = (tensor(k), tensor(v)) if name == "fp8" else (tensor(1.0), tensor(1.0))
            layers[layer] = LayerCodec(
                fp8_roundtrip(ks, E4M3FN, quantize), fp8_roundtrip(vs, E4M3FN, quantize)
            )
        out.append(CacheVariant(name, layers))
    return out


def eval_fn(
    loaded: LoadedModel,
    samples: list[tuple[int, ...]],
    scales: dict[str, Any],
    quantize: QuantizeFn,
    variants: tuple[str, ...],
) -> Callable[[], object]:
    chosen = cache_variants(scales, quantize, variants)
    return lambda: evaluate_model(loaded, samples, chosen)


CONFIGS = {
    "eval_unquantized": ("unquantized",),
    "eval_unq+fp8": ("unquantized", "fp8"),
    "eval_unq+unit": ("unquantized", "unit_scales"),
    "eval_all": ("unquantized", "fp8", "unit_scales"),
}


def child_main(args: argparse.Namespace) -> int:
    samples = read_tokens(Path(args.tokens))
    loaded = load_model(args.model, dtype=args.dtype, device=args.device)
    scales = capture_kv_amax(loaded, samples).scales()
    quantize, _ = choose_quantize(args.device)
    after = peak_rss_kb()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    fn = (
        forward_fn(loaded, samples)
        if args.child == "forward"
        else eval_fn(loaded, samples, scales, quantize, CONFIGS[args.child])
    )
    seconds = timed(fn, args.device)
    child_report(args.device, after, seconds.wall)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common(ap, samples=8, seq_len=512)
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        note("--device cuda: no CUDA device")
        return 3
    set_threads(args)
    if args.child:
        return child_main(args)

    torch.manual_seed(args.seed)
    model_dir, dtype = resolve_model(args)
    loaded = load_model(model_dir, dtype=dtype, device=args.device)
    dtype = loaded.dtype
    samples, source = load_tokens(loaded, args.data, args.samples, args.seq_len, args.seed)
    tokens = sum(len(s) for s in samples)
    quantize, quantize_name = choose_quantize(args.device)
    scales = capture_kv_amax(loaded, samples).scales()
    if any(k is None or v is None for k, v in scales.values()):
        raise SystemExit("the model's K/V hold NaN/inf: no scales to evaluate")
    label = model_label(model_dir, loaded)
    print(f"model    {label}, {dtype}, {args.device}, attention {loaded.attn_implementation}")
    print(f"tokens   {len(samples)} samples x {args.seq_len} = {tokens} tokens from {source}")
    print(f"quantize {quantize_name}")
    print(f"threads  {torch.get_num_threads()}; runs {args.runs}, interleaved; medians below")

    fns: dict[str, Callable[[], object]] = {
        "forward": forward_fn(loaded, samples),
        "forward_labels": lambda: _forward_labels(loaded, samples),
    }
    for name, variants in CONFIGS.items():
        fns[name] = eval_fn(loaded, samples, scales, quantize, variants)
    # Warm-up (allocator, kernel compilation, the Triton plan) on one sample.
    for variants in CONFIGS.values():
        evaluate_model(loaded, samples[:1], cache_variants(scales, quantize, variants))
    forward_fn(loaded, samples[:1])()

    times, cpu = run_interleaved(fns, args.runs, args.device)
    for name, base in (
        ("fp8 (paired diff)", "eval_unq+fp8"),
        ("unit (paired diff)", "eval_unq+unit"),
    ):
        for d in (times, cpu):
            d[name] = [a - b for a, b in zip(d[base], d["eval_unquantized"], strict=True)]
    unq = times["eval_unquantized"]
    print()
    print_times(times, cpu, tokens)
    fwd = median(times["forward"])
    per_variant = {
        "unquantized": median(unq) / fwd,
        "fp8": median(times["fp8 (paired diff)"]) / fwd,
        "unit_scales": median(times["unit (paired diff)"]) / fwd,
        "all three / 3": median(times["eval_all"]) / 3 / fwd,
    }
    per_1k = {name: median(t) / tokens * 1000 for name, t in times.items()}
    print()
    for name, value in per_variant.items():
        print(f"ratio {name + ' / forward':<28}{value:.3f}")
    print(f"verify --model (eval_all) per 1k tokens: {per_1k['eval_all']:.3f} s")

    memory: dict[str, dict[str, Any]] = {}
    if not args.no_memory:
        with tempfile.TemporaryDirectory(prefix="kvscale-bench-") as tmp:
            token_file = Path(tmp) / "tokens.json"
            token_file.write_text(json.dumps([list(s) for s in samples]), encoding="utf-8")
            extra = child_args(args, model_dir, dtype, token_file)
            for variant in ("forward", "eval_all"):
                note(f"memory: {variant} in a child process")
                memory[variant] = measure_child(Path(__file__), variant, extra)
        print()
        print_memory(memory, args.device)

    print()
    budgets = [
        budget_line(f"{name} / forward", value, "<=", BUDGET)
        for name, value in per_variant.items()
        if name != "all three / 3"
    ]
    write_json(
        args.json,
        {
            "schema": "kvscale.bench_evaluate/1",
            "model": label,
            "model_dir": str(model_dir),
            "dtype": dtype,
            "device": args.device,
            "attention": loaded.attn_implementation,
            "quantize": quantize_name,
            "samples": len(samples),
            "seq_len": args.seq_len,
            "tokens": tokens,
            "token_source": source,
            "runs": args.runs,
            "threads": torch.get_num_threads(),
            "versions": versions(),
            "seconds": times,
            "cpu_seconds": cpu,
            "median_s": {name: median(t) for name, t in times.items()},
            "seconds_per_1k_tokens": per_1k,
            "ratios": per_variant,
            "memory": memory,
            "budgets": budgets,
        },
    )
    return 0 if all(b["pass"] for b in budgets) else 1


def _forward_labels(loaded: LoadedModel, samples: list[tuple[int, ...]]) -> None:
    model, device = loaded.model, loaded.input_device
    with torch.inference_mode():
        for s in samples:
            ids = torch.tensor([list(s)], dtype=torch.long).to(device)
            model(input_ids=ids, labels=ids, use_cache=False)


if __name__ == "__main__":
    sys.exit(main())
