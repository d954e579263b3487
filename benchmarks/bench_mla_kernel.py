"""Benchmark of the MLA latent-cache write (bf16 in, fp8 e4m3 out) against copy bandwidth.

DeepSeek-V3 geometry: kv_lora_rank 512 + rope_dim 64 = 576 values per token, block size 64
(FlashMLA's), slots consecutive within blocks and blocks in random order. For each token count
it times, as the median of many runs with CUDA events (``triton.testing.do_bench``, L2 flushed
before every run):

  (a) kvscale's Triton kernel ``concat_and_cache_mla`` with scale 0.0173 (division) and with
      skip_scale (scale 1.0), for two input layouts: ``contig`` (kv_c and k_pe separate
      contiguous tensors) and ``vllm`` (kv_c_normed contiguous, k_pe a column slice of the
      fused q_a/kv_a projection output [T, 1536 + 576], as vLLM passes it);
  (b) a device-to-device copy ``dst.copy_(src)`` moving the same number of bytes (read + write);
  (c) a plain torch implementation (cat, divide, clamp, cast, index_copy_), for scale.

Bytes counted for (a) and (c): read kv_c and k_pe, write the cache rows, read the slot mapping.
Then a byte check: the kernel's cache against the CPU reference, whole storage, at every size.
Small batches (128, 4096 tokens) also get the end-to-end time per call from Python.

    PYTHONPATH=. python3 benchmarks/bench_mla_kernel.py [--sweep] [--sizes 65536,262144]
        [--out DIR]

``--sweep`` also times a grid of tile configurations (block_t, num_warps) at each size.
The full bit-exactness sweep is ``benchmarks/gpu_mla_check.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from kvscale.kernel import triton_mla as tm
from kvscale.kernel.mla import reference_concat_and_cache_mla

LORA, ROPE, Q_LORA = 512, 64, 1536
BLOCK_SIZE = 64
SIZES = [65536, 262144]
SMALL = [128, 4096]
SCALE = 0.0173
FP8_MAX = 448.0


def make_inputs(tokens: int, layout: str, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    if layout == "vllm":
        fused = torch.randn(tokens, Q_LORA + LORA + ROPE, device="cuda", dtype=torch.bfloat16,
                            generator=g)  # fmt: skip
        k_pe = fused[:, Q_LORA + LORA :]
    else:
        k_pe = torch.randn(tokens, ROPE, device="cuda", dtype=torch.bfloat16, generator=g)
    kv_c = torch.randn(tokens, LORA, device="cuda", dtype=torch.bfloat16, generator=g)
    num_blocks = (tokens + BLOCK_SIZE - 1) // BLOCK_SIZE + 8
    cache = torch.zeros(num_blocks, BLOCK_SIZE, LORA + ROPE, device="cuda", dtype=torch.uint8)
    perm = torch.randperm(num_blocks, device="cuda", generator=g)
    t = torch.arange(tokens, device="cuda")
    slots = perm[t // BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE
    return {"kv_c": kv_c, "k_pe": k_pe, "cache": cache, "slots": slots,
            "scale": torch.tensor([SCALE], device="cuda"),
            "one": torch.ones(1, device="cuda")}  # fmt: skip


def kernel_call(d: dict[str, torch.Tensor], skip: bool = False) -> Callable[[], None]:
    kv_c, k_pe, cache, slots = d["kv_c"], d["k_pe"], d["cache"], d["slots"]
    scale = d["one"] if skip else d["scale"]

    def run() -> None:
        tm.concat_and_cache_mla(kv_c, k_pe, cache, slots, "fp8", scale, skip)

    return run


def torch_call(d: dict[str, torch.Tensor]) -> Callable[[], None]:
    kv_c, k_pe, cache, slots, scale = d["kv_c"], d["k_pe"], d["cache"], d["slots"], d["scale"]
    flat = cache.view(-1, LORA + ROPE)

    def run() -> None:
        rows = torch.cat([kv_c, k_pe], dim=1).float() / scale
        q = rows.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
        flat.index_copy_(0, slots, q)

    return run


def copy_call(nbytes: int) -> Callable[[], None]:
    src = torch.randint(0, 255, (nbytes,), device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)

    def run() -> None:
        dst.copy_(src)

    return run


def bench(fn: Callable[[], object], rep_ms: int = 300) -> float:
    """Median device time in microseconds (events around each run; L2 flushed between runs)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")) * 1e3


def necessary_bytes(tokens: int) -> int:
    return tokens * (LORA + ROPE) * 2 + tokens * (LORA + ROPE) + tokens * 8


def end_to_end(fn: Callable[[], object], calls: int = 3000) -> tuple[float, float]:
    """Per-call time (us) of back-to-back calls: (host wall clock, CUDA events)."""
    for _ in range(100):
        fn()
    torch.cuda.synchronize()
    walls, evs = [], []
    for _ in range(5):
        e0 = torch.cuda.Event(enable_timing=True)
        e1 = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        e0.record()
        for _ in range(calls):
            fn()
        e1.record()
        torch.cuda.synchronize()
        walls.append((time.perf_counter() - t0) / calls * 1e6)
        evs.append(e0.elapsed_time(e1) / calls * 1e3)
    return statistics.median(walls), statistics.median(evs)


def byte_check(d: dict[str, torch.Tensor], skip: bool) -> dict[str, int]:
    """Kernel vs CPU reference on the whole cache (poisoned first)."""
    g = torch.Generator(device="cuda").manual_seed(1)
    cache = d["cache"]
    cache.copy_(torch.randint(0, 256, cache.shape, device="cuda", dtype=torch.uint8, generator=g))
    slots = d["slots"].clone()
    slots[::97] = -1  # some padding
    want = cache.cpu()
    scale = d["one"] if skip else d["scale"]
    tm.concat_and_cache_mla(d["kv_c"], d["k_pe"], cache, slots, "fp8", scale, skip)
    torch.cuda.synchronize()
    reference_concat_and_cache_mla(
        d["kv_c"].cpu(), d["k_pe"].cpu(), want, slots.cpu(), "fp8", scale.cpu(), skip
    )
    return {"bytes": want.numel(), "mismatched": int((cache.cpu() != want).sum())}


SWEEP = [(1, 1), (1, 2), (2, 2), (2, 4), (4, 2), (4, 4), (8, 4), (8, 8), (16, 8), (2, 2)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="time a grid of tile configs too")
    ap.add_argument("--sizes", default=None, help="token counts, e.g. 65536,262144")
    ap.add_argument("--out", type=Path, default=None, help="write bench_mla.json here")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 2
    import triton

    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else SIZES
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}  "
          f"triton {triton.__version__}")  # fmt: skip
    print(f"default tile: {tm.default_mla_config(LORA, ROPE)}")
    rows: list[dict[str, object]] = []
    sweep_rows: list[dict[str, object]] = []
    failed = False
    for tokens in sizes:
        nbytes = necessary_bytes(tokens)
        t_copy = bench(copy_call(nbytes // 2))
        for layout in ("contig", "vllm"):
            d = make_inputs(tokens, layout)
            row: dict[str, object] = {"tokens": tokens, "layout": layout, "bytes": nbytes,
                                      "copy_us": t_copy}  # fmt: skip
            for name, skip in (("kernel", False), ("skip", True)):
                fn = kernel_call(d, skip)
                fn()
                torch.cuda.synchronize()
                t = bench(fn)
                row[f"{name}_us"] = t
                row[f"{name}_pct_copy"] = 100 * t_copy / t
            row["torch_us"] = bench(torch_call(d))
            check = byte_check(d, skip=False)
            check_skip = byte_check(d, skip=True)
            row["check_bytes"] = check["bytes"] + check_skip["bytes"]
            row["check_mismatched"] = check["mismatched"] + check_skip["mismatched"]
            failed |= bool(row["check_mismatched"])
            rows.append(row)
            print(json.dumps(row))
            if args.sweep:
                for bt, w in SWEEP:
                    tm._config_override = tm.MLAKernelConfig(bt, w)
                    try:
                        fn = kernel_call(d)
                        fn()
                        t = bench(fn, rep_ms=150)
                    finally:
                        tm._config_override = None
                    sweep_rows.append({"tokens": tokens, "layout": layout, "block_t": bt,
                                       "num_warps": w, "us": t,
                                       "pct_copy": 100 * t_copy / t})  # fmt: skip
                    print("  sweep", json.dumps(sweep_rows[-1]))
            del d
            torch.cuda.empty_cache()
    small = []
    for tokens in SMALL:
        d = make_inputs(tokens, "vllm")
        wall, ev = end_to_end(kernel_call(d))
        twall, _ = end_to_end(torch_call(d), calls=500)
        small.append({"tokens": tokens, "e2e_wall_us": wall, "e2e_event_us": ev,
                      "torch_e2e_wall_us": twall, "device_us": bench(kernel_call(d))})  # fmt: skip
        print(json.dumps(small[-1]))

    print()
    print(f"{'tokens':>8} {'layout':>7} {'MB':>7} {'kernel us':>10} {'%copy':>6} {'skip us':>8} "
          f"{'%copy':>6} {'copy us':>8} {'copy GB/s':>9} {'torch us':>9} {'bytes chk':>10} "
          f"{'mismatch':>8}")  # fmt: skip
    for r in rows:
        print(f"{r['tokens']:>8} {r['layout']:>7} {float(r['bytes']) / 1e6:7.1f} "  # type: ignore[arg-type]
              f"{r['kernel_us']:10.1f} {r['kernel_pct_copy']:6.1f} {r['skip_us']:8.1f} "
              f"{r['skip_pct_copy']:6.1f} {r['copy_us']:8.1f} "
              f"{float(r['bytes']) / float(r['copy_us']) / 1e3:9.0f} {r['torch_us']:9.1f} "  # type: ignore[arg-type]
              f"{r['check_bytes']:>10} {r['check_mismatched']:>8}")  # fmt: skip
    for s in small:
        print(f"end-to-end {s['tokens']} tokens: {s['e2e_wall_us']:.2f} us/call wall, "
              f"{s['e2e_event_us']:.2f} us/call events, {s['device_us']:.2f} us device; torch "
              f"{s['torch_e2e_wall_us']:.2f} us/call wall")  # fmt: skip
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench_mla.json").write_text(
            json.dumps({"rows": rows, "sweep": sweep_rows, "small": small}, indent=1)
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
