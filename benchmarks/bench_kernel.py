"""Benchmark of the FP8 cache-write kernel (bf16 in, fp8 e4m3 out) against copy bandwidth.

For each size (tokens x kv heads x head size) it times, as the median of many runs with CUDA
events (``triton.testing.do_bench``, L2 flushed before every run):

  (a) kvscale's Triton kernel, ``reshape_and_cache_flash``;
  (b) a device-to-device copy ``dst.copy_(src)`` moving the same number of bytes (read + write);
  (c) a plain torch implementation: fp8 computed with torch ops, then index_copy_ into the cache.

Bytes counted for (a) and (c): read K and V, write both caches, read the slot mapping. Then the
small-batch end-to-end time per call from Python: many back-to-back calls, one sync at the end,
timed with a host clock and with CUDA events, launch overhead included.

    PYTHONPATH=. python3 benchmarks/bench_kernel.py [--sweep] [--out DIR]

``--sweep`` also times a grid of tile configurations per size (used to pick the defaults).
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

from kvscale.kernel import triton_cache as tc

SIZES = [(128, 8, 128), (4096, 8, 128), (65536, 8, 128), (262144, 8, 128), (16384, 32, 128)]
BLOCK_SIZE = 16
FP8_MAX = 448.0


def make_inputs(tokens: int, heads: int, head: int, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator(device="cuda").manual_seed(seed)
    key = torch.randn(tokens, heads, head, device="cuda", dtype=torch.bfloat16, generator=g)
    value = torch.randn(tokens, heads, head, device="cuda", dtype=torch.bfloat16, generator=g)
    num_blocks = (tokens + BLOCK_SIZE - 1) // BLOCK_SIZE + 8
    kc = torch.zeros(num_blocks, BLOCK_SIZE, heads, head, device="cuda", dtype=torch.uint8)
    vc = torch.zeros_like(kc)
    # Engine-like slot mapping: consecutive slots inside a block, blocks in random order.
    perm = torch.randperm(num_blocks, device="cuda", generator=g)
    t = torch.arange(tokens, device="cuda")
    slots = perm[t // BLOCK_SIZE] * BLOCK_SIZE + t % BLOCK_SIZE
    k_scale = torch.tensor([0.0173], device="cuda")
    v_scale = torch.tensor([0.0211], device="cuda")
    return {"key": key, "value": value, "kc": kc, "vc": vc, "slots": slots, "ks": k_scale,
            "vs": v_scale}  # fmt: skip


def kernel_call(d: dict[str, torch.Tensor]) -> Callable[[], None]:
    key, value, kc, vc, slots, ks, vs = (
        d[k] for k in ("key", "value", "kc", "vc", "slots", "ks", "vs")
    )

    def run() -> None:
        tc.reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", ks, vs)

    return run


def torch_scatter_call(d: dict[str, torch.Tensor]) -> Callable[[], None]:
    key, value, kc, vc, slots, ks, vs = (
        d[k] for k in ("key", "value", "kc", "vc", "slots", "ks", "vs")
    )
    h, dim = key.shape[1], key.shape[2]
    kflat = kc.view(-1, h, dim)
    vflat = vc.view(-1, h, dim)

    def run() -> None:
        kq = (key.float() / ks).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
        vq = (value.float() / vs).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn).view(torch.uint8)
        kflat.index_copy_(0, slots, kq)
        vflat.index_copy_(0, slots, vq)

    return run


def copy_call(nbytes: int) -> Callable[[], None]:
    src = torch.randint(0, 255, (nbytes,), device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)

    def run() -> None:
        dst.copy_(src)

    return run


def generic_call(d: dict[str, torch.Tensor]) -> Callable[[], None]:
    """The same compiled kernel started through Triton's generic ``kernel[grid](...)`` path."""
    key, value, kc, vc, slots, ks, vs = (
        d[k] for k in ("key", "value", "kc", "vc", "slots", "ks", "vs")
    )
    n = slots.shape[0]
    cfg = tc.default_config(key.shape[1], key.shape[2])
    consts = tc._constexprs(key, value, kc, vc, 1, False, False, cfg)
    grid = ((n + cfg.block_t - 1) // cfg.block_t, key.shape[1] // cfg.block_h, 1)
    kernel = tc._KERNEL.get(interpret=False)

    def run() -> None:
        kernel[grid](key, value, kc, vc, slots, ks, vs, n, num_warps=cfg.num_warps,
                     num_stages=1, **consts)  # fmt: skip

    return run


def bench(fn: Callable[[], object], rep_ms: int = 200) -> float:
    """Median device time in microseconds (events around each run; L2 flushed between runs)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")) * 1e3


def necessary_bytes(tokens: int, heads: int, head: int) -> int:
    elems = tokens * heads * head
    return 2 * elems * 2 + 2 * elems * 1 + tokens * 8


def end_to_end(fn: Callable[[], object], calls: int = 5000) -> tuple[float, float]:
    """Per-call time (us) of back-to-back calls: (host wall clock, CUDA events)."""
    for _ in range(200):
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


def host_breakdown(d: dict[str, torch.Tensor]) -> dict[str, float]:
    """Where the small-batch end-to-end time goes (us per call, host wall clock)."""
    key, value, kc, vc, slots, ks, vs = (
        d[k] for k in ("key", "value", "kc", "vc", "slots", "ks", "vs")
    )
    tc.reshape_and_cache_flash(key, value, kc, vc, slots, "fp8", ks, vs)
    plan = list(tc._plans.values())[-1]
    dev = key.get_device()
    stream = torch._C._cuda_getCurrentRawStream(dev)
    ptrs = (key.data_ptr(), value.data_ptr(), kc.data_ptr(), vc.data_ptr(), slots.data_ptr(),
            ks.data_ptr(), vs.data_ptr())  # fmt: skip
    n = slots.shape[0]
    raw_args = ((n + plan.block_t - 1) // plan.block_t, plan.grid_h, 1, stream, plan._function,
                plan._coop, plan._pdl, None, None, plan._packed, None, None, None, *ptrs, n,
                *plan._tail)  # fmt: skip
    one = torch.zeros(1, device="cuda")

    def plan_only() -> None:
        plan.launch(n, stream, *ptrs)

    def raw_only() -> None:
        plan._raw(*raw_args)

    def torch_op() -> None:
        one.add_(1)

    def python_side() -> None:  # the wrapper's Python work without the launch
        kp, vp, kcp, vcp = key.data_ptr(), value.data_ptr(), kc.data_ptr(), vc.data_ptr()
        pkey = ("fp8", key.dtype, value.dtype, kc.dtype, vc.dtype, slots.dtype, ks.dtype, vs.dtype,
                key.stride(), value.stride(), kc.stride(), vc.stride(), key.shape[1:],
                value.shape[1:], kc.shape[1:], vc.shape[1:], ks.shape, vs.shape, ks.stride(),
                vs.stride(), slots.stride(), (kp & 15) | (vp & 15) << 4 | (kcp & 15) << 8
                | (vcp & 15) << 12, key.get_device(),
                value.get_device(), kc.get_device(), vc.get_device(), slots.get_device(),
                ks.get_device(), vs.get_device(), None)  # fmt: skip
        tc._plans.get(pkey)
        torch._C._cuda_getDevice()
        torch._C._cuda_getCurrentRawStream(dev)
        (slots.data_ptr(), ks.data_ptr(), vs.data_ptr())

    out = {}
    for name, fn in (("full_call", kernel_call(d)), ("plan_launch", plan_only),
                     ("raw_launcher", raw_only), ("torch_add_", torch_op),
                     ("python_side_only", python_side)):  # fmt: skip
        wall, _ = end_to_end(fn, calls=5000)
        out[name] = wall
    return out


def sweep_configs(heads: int) -> list[tc.KernelConfig]:
    """(block_t, block_h, num_warps) candidates; the first and last entries are the same config,
    so their difference shows the run-to-run noise."""
    if heads <= 8:
        shapes = [(1, 8, 2), (1, 8, 4), (2, 8, 4), (4, 4, 4), (1, 4, 1), (2, 4, 2), (4, 8, 8),
                  (1, 8, 2)]  # fmt: skip
    else:
        shapes = [(1, 8, 2), (1, 32, 8), (1, 16, 4), (2, 8, 4), (1, 4, 1), (1, 8, 2)]
    return [tc.KernelConfig(bt, bh, w) for bt, bh, w in shapes]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweep", action="store_true", help="time a grid of tile configs too")
    ap.add_argument(
        "--variants", action="store_true", help="the streaming (evict-first) variant too"
    )
    ap.add_argument("--out", type=Path, default=None, help="write bench.json here")
    ap.add_argument("--sizes", default=None, help="e.g. 65536x8x128,16384x32x128")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA device")
        return 2
    sizes = SIZES
    if args.sizes:
        sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]  # type: ignore[misc]
    import triton

    name = torch.cuda.get_device_name()
    print(f"device: {name}  torch {torch.__version__}  triton {triton.__version__}")
    rows = []
    sweep_rows = []
    for tokens, heads, head in sizes:
        d = make_inputs(tokens, heads, head)
        nbytes = necessary_bytes(tokens, heads, head)
        kern = kernel_call(d)
        kern()
        torch.cuda.synchronize()
        t_kernel = bench(kern)
        half = nbytes // 2
        t_copy = bench(copy_call(half))
        t_torch = bench(torch_scatter_call(d))
        row = {
            "size": f"{tokens}x{heads}x{head}",
            "bytes": nbytes,
            "kernel_us": t_kernel,
            "copy_us": t_copy,
            "torch_us": t_torch,
            "kernel_GBps": nbytes / t_kernel / 1e3,
            "copy_GBps": 2 * half / t_copy / 1e3,
            "torch_GBps": nbytes / t_torch / 1e3,
        }
        row["kernel_pct_copy"] = 100 * row["kernel_GBps"] / row["copy_GBps"]
        row["torch_pct_copy"] = 100 * row["torch_GBps"] / row["copy_GBps"]
        if args.variants:
            for name, cfg in (
                (
                    "streaming",
                    tc.KernelConfig(**{**_cfg_dict(tokens, heads, head), "streaming": True}),
                ),
            ):
                tc._config_override = cfg
                try:
                    kern()
                    row[f"{name}_us"] = bench(kern)
                finally:
                    tc._config_override = None
        if tokens <= 4096 and args.variants:
            gw, _ = end_to_end(generic_call(d), calls=1000)
            row["generic_triton_launch_e2e_wall_us_per_call"] = gw
        if tokens == 128 and args.variants:
            row["host_breakdown_us"] = host_breakdown(d)
        if tokens <= 4096:
            wall, ev = end_to_end(kern)
            row["e2e_wall_us_per_call"] = wall
            row["e2e_event_us_per_call"] = ev
            twall, tev = end_to_end(torch_scatter_call(d), calls=1000)
            row["torch_e2e_wall_us_per_call"] = twall
        rows.append(row)
        print(json.dumps(row))
        if args.sweep and tokens >= 4096:
            for cfg in sweep_configs(heads):
                tc._config_override = cfg
                try:
                    kern()
                    t = bench(kern, rep_ms=100)
                finally:
                    tc._config_override = None
                pct = 100 * nbytes / t / 1e3 / float(row["copy_GBps"])
                sweep_rows.append(
                    {"size": row["size"], "config": cfg.__dict__, "us": t, "pct_copy": pct}
                )
                print("  sweep", json.dumps(sweep_rows[-1]))
        del d
        torch.cuda.empty_cache()

    print()
    print(format_table(rows))
    for r in rows:
        if "e2e_wall_us_per_call" in r:
            print(
                f"end-to-end {r['size']}: {r['e2e_wall_us_per_call']:.2f} us/call wall, "
                f"{r['e2e_event_us_per_call']:.2f} us/call events; torch scatter "
                f"{r['torch_e2e_wall_us_per_call']:.2f} us/call wall"
            )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "bench.json").write_text(
            json.dumps({"rows": rows, "sweep": sweep_rows}, indent=1)
        )
    return 0


def format_table(rows: list[dict[str, object]]) -> str:
    cols = [
        ("size", "{:>14}", "size"),
        ("MB", "{:8.1f}", None),
        ("kernel us", "{:10.1f}", "kernel_us"),
        ("GB/s", "{:7.0f}", "kernel_GBps"),
        ("%copy", "{:6.1f}", "kernel_pct_copy"),
        ("copy us", "{:9.1f}", "copy_us"),
        ("copy GB/s", "{:9.0f}", "copy_GBps"),
        ("torch us", "{:9.1f}", "torch_us"),
        ("%copy", "{:6.1f}", "torch_pct_copy"),
        ("torch/kernel", "{:12.1f}", None),
    ]
    widths = [len(fmt.format(0 if key != "size" else "")) for _, fmt, key in cols]
    lines = [" ".join(f"{name:>{w}}" for (name, _, _), w in zip(cols, widths, strict=True))]
    for r in rows:
        cells = []
        for name, fmt, key in cols:
            if name == "MB":
                val: object = float(r["bytes"]) / 1e6  # type: ignore[arg-type]
            elif name == "torch/kernel":
                val = float(r["torch_us"]) / float(r["kernel_us"])  # type: ignore[arg-type]
            else:
                val = r[key]  # type: ignore[index]
            cells.append(fmt.format(val))
        lines.append(" ".join(cells))
    return "\n".join(lines)


def _cfg_dict(tokens: int, heads: int, head: int) -> dict[str, object]:
    del tokens
    return dict(tc.default_config(heads, head).__dict__)


if __name__ == "__main__":
    sys.exit(main())
