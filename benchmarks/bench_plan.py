"""What ``kvscale plan`` costs: a whole default plan against one bare forward pass over the data.

On one model, dtype, device and set of token ids, it times ``--runs`` times, interleaved, and
reports medians of:

* ``forward``: the bare forward pass, ``model(input_ids=ids, use_cache=False)`` per sample
  (batch 1) under ``torch.inference_mode()``, the model already loaded;
* ``forward_x10``: that pass 10 times in a row, right before each plan: the yardstick. This
  VM's pass time drifts by 10-30% within a minute of full load (0.63 to 0.89 s for the same
  512 tokens of SmolLM2); ten passes in a row see the conditions a plan's own passes see, a lone
  pass of a few seconds may not;
* ``plan``: ``kvscale.core.plan.plan_model`` over the default candidates of the engine
  (``--engine``, default vLLM), everything ``kvscale plan MODEL --data FILE`` does after its
  imports: the checkpoint read, the model load, the capture pass, one pass per candidate, the
  choice (no ``--out``: nothing is written).

It prints ``plan / sustained forward pass`` (per run, the plan over a tenth of the
``forward_x10`` run before it; the median of these ratios), ``plan / lone forward pass``
(medians), and the plan's own count (``PlanResult.seconds / PlanResult.forward_seconds``, whose
unit is its unquantized pass: the capture and the reference's logits, log-probabilities and
loss), a median over the runs.

Budget (issue 24), printed as a PASS/FAIL line; the exit status is 1 when it fails: a full
default plan within 10 forward-pass equivalents of the data: within the time of 10 bare passes
run back to back.

The model and token options are those of bench_calibrate.py (SmolLM2 by default,
``--random-llama SIZE``, ``--model DIR``); the plan reads the same ``--data`` with the same
``--samples`` and ``--seq-len``, so both see the same tokens (random ids are not possible here:
the plan tokenizes its data itself).

    PYTHONPATH=. python3 benchmarks/bench_plan.py --threads 0 --runs 3      # SmolLM2, CPU
    PYTHONPATH=. python3 benchmarks/bench_plan.py --samples 2 --seq-len 128 --runs 1
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import torch
from bench_calibrate import (
    add_common,
    budget_line,
    forward_fn,
    load_tokens,
    median,
    model_label,
    note,
    print_times,
    resolve_model,
    run_interleaved,
    set_threads,
    versions,
    write_json,
)

from kvscale.core.plan import PlanOptions, PlanResult, plan_model
from kvscale.engine.options import EngineOptions
from kvscale.model.load import load_model

BUDGET = 10.0
BUDGET_PASSES = 10


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common(ap, samples=8, seq_len=512)
    ap.add_argument("--engine", default="vllm", help="the engine whose candidates are planned")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        note("--device cuda: no CUDA device")
        return 3
    set_threads(args)
    torch.manual_seed(args.seed)
    model_dir, dtype = resolve_model(args)
    loaded = load_model(model_dir, dtype=dtype, device=args.device)
    if not loaded.has_tokenizer:
        raise SystemExit(f"{model_dir}: no tokenizer; kvscale plan tokenizes --data itself")
    samples, source = load_tokens(loaded, args.data, args.samples, args.seq_len, args.seed)
    tokens = sum(len(s) for s in samples)
    options = PlanOptions(
        data=args.data,
        engine=EngineOptions(engine=args.engine),
        samples=args.samples,
        seq_len=args.seq_len,
        dtype=dtype,
        device=args.device,
    )
    results: list[PlanResult] = []

    def plan() -> None:
        results.append(plan_model(model_dir, options))

    label = model_label(model_dir, loaded)
    attention = loaded.attn_implementation
    print(f"model    {label}, {loaded.dtype}, {args.device}, attention {attention}")
    print(f"tokens   {len(samples)} samples x {args.seq_len} = {tokens} tokens from {source}")
    print(f"threads  {torch.get_num_threads()}; runs {args.runs}, interleaved; medians below")
    forward = forward_fn(loaded, samples)

    def forward_x10() -> None:
        for _ in range(BUDGET_PASSES):
            forward()

    fns: dict[str, Callable[[], object]] = {"forward": forward, "forward_x10": forward_x10}
    fns["plan"] = plan
    wall, cpu = run_interleaved(fns, args.runs, args.device)
    print_times(wall, cpu, tokens)
    last = results[-1]
    measured = [r.name for r in last.results if r.status == "measured"]
    own = [r.seconds / r.forward_seconds for r in results if r.forward_seconds > 0]
    # The budget's unit is a pass inside a sustained run (see the module doc): each plan is
    # paired with the 10 passes run just before it.
    sustained = [
        p / (x10 / BUDGET_PASSES) for x10, p in zip(wall["forward_x10"], wall["plan"], strict=True)
    ]
    ratio = median(sustained)
    lone = median(wall["plan"]) / median(wall["forward"])
    print(
        f"plan     {len(measured)} candidates measured ({', '.join(measured)}), "
        f"{last.forward_passes} forward passes, chose {last.chosen.name if last.chosen else None}"
    )
    print(
        f"plan / sustained forward pass (median of the runs' ratios): {ratio:.2f} "
        f"(runs: {', '.join(f'{r:.2f}' for r in sustained)}); plan / lone forward pass: "
        f"{lone:.2f}; the plan's own count (median): {median(own):.2f}"
    )
    budgets = [budget_line("plan <= 10 x sustained forward", ratio, "<=", BUDGET, "x")]
    doc: dict[str, Any] = {
        "benchmark": "bench_plan",
        "model": label,
        "dtype": loaded.dtype,
        "device": args.device,
        "threads": torch.get_num_threads(),
        "samples": len(samples),
        "tokens": tokens,
        "runs": args.runs,
        "wall_s": wall,
        "cpu_s": cpu,
        "plan_over_sustained_forward": ratio,
        "plan_over_sustained_forward_runs": sustained,
        "plan_over_lone_forward": lone,
        "plan_own_equivalents": own,
        "forward_passes": last.forward_passes,
        "candidates_measured": measured,
        "budgets": budgets,
        "versions": versions(),
    }
    write_json(args.json, doc)
    return 0 if all(b["pass"] for b in budgets) else 1


if __name__ == "__main__":
    sys.exit(main())
