"""The Triton NVFP4 cache write on a GPU: bytes against the CPU reference, and bandwidth.

Three parts, all printed as tables (and written as JSON with --out):

1. The hardware reciprocal. ``rcp.approx.ftz.f32`` of 6.0 and 4.0 (vLLM's binary uses the folded
   constants 0x3E2AAAAB and 0.25 instead), of every normal power of two (the reference's model
   treats them as exact), and of all 2^23 mantissas in [1, 2): how many differ from the IEEE
   reciprocal and by how many ulps (the model's premise: at most one).
2. Bytes. For bf16 and fp16, ``nvfp4`` and ``nvfp4_4over6``, random / heavy-tailed / adversarial
   data (``make_nvfp4_stress_values``), and checkpoint scales amax/448 (ModelOpt >= 0.42),
   amax/2688 (ModelOpt < 0.42) and 1.0 (no scale), in two layouts (contiguous key/value; key and
   value sliced out of a fused qkv tensor), the cache is poisoned with random bytes, written by
   the kernel and by the reference, and compared whole. Printed per case: blocks, ambiguous
   blocks (the reference cannot know the hardware reciprocal's last bit for them), differing
   bytes on exact blocks (must be 0: any other byte is a kernel bug), differing bytes and blocks
   on ambiguous blocks (this GPU's reciprocal against the model).
3. Bandwidth. Median device time (``triton.testing.do_bench``, L2 flushed) of the kernel for
   each size and variant, against a device copy moving the same number of bytes (read K and V,
   write the cache, read the slots; the copy moves half of that each way), and the FP8 kernel
   (``reshape_and_cache_flash``, e4m3) on the same inputs. ``--sweep`` also times tiles.

    PYTHONPATH=. python3 benchmarks/gpu_nvfp4_check.py [--out DIR] [--quick] [--sweep]

``--interpret`` dry-runs part 2 on the CPU in Triton's interpreter (to catch a broken script
before spending device time; the interpreter's arithmetic is not the GPU's, so bytes may differ).

Exit status 0 only when every case has zero differing bytes on exact blocks.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

from kvscale.kernel import nvfp4 as N
from kvscale.kernel import triton_nvfp4 as TN

DEVICE = "cuda"  # "cpu" with --interpret
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
SCALE_RULES = {"amax/448": 448.0, "amax/2688": 2688.0, "1.0": None}


def bits(x: torch.Tensor) -> str:
    return f"0x{int(x.view(torch.int32)):08X}"


# ---- 1. the reciprocal ---------------------------------------------------------------------


def reciprocal_report() -> dict[str, object]:
    consts = torch.tensor([6.0, 4.0, 3.0, 1.25], dtype=torch.float32)
    approx = TN.rcp_approx_ftz(consts.cuda()).cpu()
    ieee = torch.reciprocal(consts)
    powers = torch.tensor([2.0**e for e in range(-125, 126)], dtype=torch.float32)
    p_ok = torch.equal(TN.rcp_approx_ftz(powers.cuda()).cpu(), torch.reciprocal(powers))
    mant = (torch.arange(0, 1 << 23, dtype=torch.int32) | 0x3F800000).view(torch.float32)
    a = TN.rcp_approx_ftz(mant.cuda()).cpu().view(torch.int32).long()
    e = torch.reciprocal(mant).view(torch.int32).long()
    diff = a - e
    return {
        "rcp_approx": {str(float(c)): bits(v) for c, v in zip(consts, approx, strict=True)},
        "rcp_ieee": {str(float(c)): bits(v) for c, v in zip(consts, ieee, strict=True)},
        "vllm_rcp6_constant": f"0x{N.RCP_SIX_BITS:08X}",
        "powers_of_two_exact": p_ok,
        "mantissas": int(mant.numel()),
        "mantissas_differing_from_ieee": int((diff != 0).sum()),
        "mantissas_one_ulp_above": int((diff == 1).sum()),
        "mantissas_one_ulp_below": int((diff == -1).sum()),
        "max_ulp_distance": int(diff.abs().max()),
    }


# ---- 2. bytes ------------------------------------------------------------------------------


def make_case(
    tokens: int, heads: int, hs: int, bs: int, dtype: torch.dtype, kind: str, fused: bool,
    g: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    key = N.make_nvfp4_stress_values((tokens, heads, hs), kind=kind, dtype=dtype, generator=g)
    value = N.make_nvfp4_stress_values((tokens, heads, hs), kind=kind, dtype=dtype, generator=g)
    if fused:
        qkv = torch.zeros(tokens, 3 * heads * hs, dtype=dtype)
        kv = qkv[:, heads * hs :].view(tokens, 2, heads, hs)
        kv[:, 0], kv[:, 1] = key, value
        key, value = kv[:, 0], kv[:, 1]
    blocks = (tokens + bs - 1) // bs + 4
    slots = torch.randperm(blocks * bs, generator=g)[: tokens - 3]
    slots[torch.rand(slots.shape[0], generator=g) < 0.1] = -1
    poison = torch.randint(
        0, 256, N.nvfp4_kv_cache_shape(blocks, heads, bs, hs), generator=g, dtype=torch.uint8
    )
    return key, value, slots, poison


def global_scale(x: torch.Tensor, rule: str) -> torch.Tensor:
    div = SCALE_RULES[rule]
    if div is None:
        return torch.tensor([1.0])
    xf = x.float()
    amax = float(xf[torch.isfinite(xf)].abs().max())
    return torch.tensor([amax / div])


def check_case(
    tokens: int, heads: int, hs: int, bs: int, dtype_name: str, variant: str, kind: str,
    rule: str, fused: bool, seed: int,
) -> dict[str, object]:  # fmt: skip
    g = torch.Generator().manual_seed(seed)
    key, value, slots, poison = make_case(tokens, heads, hs, bs, DTYPES[dtype_name], kind, fused, g)
    ks, vs = global_scale(key, rule), global_scale(value, rule)
    ref = poison.clone()
    t0 = time.perf_counter()
    report = N.reference_reshape_and_cache_nvfp4(key, value, ref, slots, variant, ks, vs)
    ref_s = time.perf_counter() - t0
    gpu = poison.to(DEVICE)
    TN.reshape_and_cache_nvfp4(
        key.to(DEVICE), value.to(DEVICE), gpu, slots.to(DEVICE), variant, ks.to(DEVICE),
        vs.to(DEVICE),
    )  # fmt: skip
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    differ = gpu.cpu() != ref
    amb = report.ambiguous_bytes
    # Ambiguous blocks whose bytes the GPU wrote differently (per block, K and V).
    lay = N.NVFP4PageLayout.create(heads, hs, bs)
    differ_blocks = 0
    rows = torch.nonzero(slots >= 0).flatten()
    live = slots[rows]
    pages = differ.view(differ.shape[0], -1)
    for side, mask in enumerate((report.key_ambiguous, report.value_ambiguous)):
        block, data_off, scale_off = lay.slot_offsets(side, live)
        per_block = (
            pages[block[:, None, None, None], data_off].any(-1)
            | pages[block[:, None, None], scale_off]
        )
        differ_blocks += int((per_block & mask[rows]).sum())
    return {
        "tokens": tokens, "heads": heads, "head_size": hs, "block_size": bs,
        "dtype": dtype_name, "variant": variant, "data": kind, "scale": rule,
        "layout": "fused" if fused else "contig",
        "blocks": report.blocks, "ambiguous_blocks": report.ambiguous_blocks,
        "exact_bytes_differing": int((differ & ~amb).sum()),
        "ambiguous_bytes_differing": int((differ & amb).sum()),
        "ambiguous_blocks_differing": differ_blocks,
        "cache_bytes": int(differ.numel()), "reference_s": round(ref_s, 2),
    }  # fmt: skip


# ---- 3. bandwidth --------------------------------------------------------------------------


def bench(fn: Callable[[], object], rep_ms: int = 200) -> float:
    """Median device time in microseconds (L2 flushed between runs)."""
    import triton.testing

    return float(triton.testing.do_bench(fn, warmup=25, rep=rep_ms, return_mode="median")) * 1e3


def size_rows(tokens: int, heads: int, hs: int, sweep: bool) -> list[dict[str, object]]:
    """Timings of one size: the copy, the FP8 kernel, and each NVFP4 variant (and tile)."""
    from kvscale.kernel import reshape_and_cache_flash

    bs = 16
    g = torch.Generator(device="cuda").manual_seed(0)
    key = torch.randn(tokens, heads, hs, device="cuda", dtype=torch.bfloat16, generator=g)
    value = torch.randn(tokens, heads, hs, device="cuda", dtype=torch.bfloat16, generator=g)
    blocks = (tokens + bs - 1) // bs + 8
    perm = torch.randperm(blocks, device="cuda", generator=g)
    t = torch.arange(tokens, device="cuda")
    slots = perm[t // bs] * bs + t % bs
    cache = torch.zeros(
        N.nvfp4_kv_cache_shape(blocks, heads, bs, hs), device="cuda", dtype=torch.uint8
    )
    ks = torch.tensor([float(key.abs().max()) / 448], device="cuda")
    vs = torch.tensor([float(value.abs().max()) / 448], device="cuda")
    nbytes = 4 * tokens * heads * hs + tokens * N.nvfp4_bytes_per_token(heads, hs) + 8 * tokens
    src = torch.randint(0, 255, (nbytes // 2,), device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    copy_us = bench(lambda: dst.copy_(src))
    fp8_kc = torch.zeros(blocks, bs, heads, hs, device="cuda", dtype=torch.uint8)
    fp8_vc = torch.zeros_like(fp8_kc)
    fp8_us = bench(
        lambda: reshape_and_cache_flash(key, value, fp8_kc, fp8_vc, slots, "fp8_e4m3", ks, vs)
    )
    configs = [TN.NVFP4KernelConfig()]
    if sweep:
        configs += [
            TN.NVFP4KernelConfig(b, w)
            for b, w in itertools.product((16, 32, 64, 128, 256), (1, 2, 4, 8))
        ]
    rows: list[dict[str, object]] = []
    for variant in N.NVFP4_KV_CACHE_DTYPES:
        for cfg in configs:
            TN._config_override = cfg
            us = bench(
                lambda v=variant: TN.reshape_and_cache_nvfp4(key, value, cache, slots, v, ks, vs)
            )
            rows.append({
                "tokens": tokens, "heads": heads, "head_size": hs, "variant": variant,
                "block_g": cfg.block_g, "num_warps": cfg.num_warps,
                "kernel_us": round(us, 2), "copy_us": round(copy_us, 2),
                "fp8_kernel_us": round(fp8_us, 2), "bytes": nbytes,
                "kernel_gbs": round(nbytes / us / 1e3, 1),
                "copy_gbs": round(nbytes / copy_us / 1e3, 1),
                "fraction_of_copy": round(copy_us / us, 3),
            })  # fmt: skip
        TN._config_override = None
    return rows


def table(rows: list[dict[str, object]], cols: list[str]) -> str:
    widths = [max(len(c), *(len(str(r[c])) for r in rows)) for c in cols]
    lines = [" ".join(c.rjust(w) for c, w in zip(cols, widths, strict=True))]
    lines += [" ".join(str(r[c]).rjust(w) for c, w in zip(cols, widths, strict=True))
              for r in rows]  # fmt: skip
    return "\n".join(lines)


def bytes_part(quick: bool) -> tuple[list[dict[str, object]], dict[str, int]]:
    print("\n== bytes: kernel vs reference ==")
    shapes = [(128, 8, 128, 16)]
    if not quick:
        shapes += [(96, 4, 64, 4), (48, 2, 256, 32), (64, 3, 192, 8)]
    cases = []
    seed = 0
    for (tokens, heads, hs, bs), dtype, variant, kind, rule in itertools.product(
        shapes, DTYPES, N.NVFP4_KV_CACHE_DTYPES, N.NVFP4_STRESS_KINDS, SCALE_RULES
    ):
        seed += 1
        fused = seed % 2 == 0
        if dtype == "fp16" and kind != "adversarial":
            continue
        cases.append(check_case(tokens, heads, hs, bs, dtype, variant, kind, rule, fused, seed))
        print(table([cases[-1]], list(cases[-1])).splitlines()[-1], flush=True)
    cols = ["tokens", "heads", "head_size", "dtype", "variant", "data", "scale", "layout",
            "blocks", "ambiguous_blocks", "exact_bytes_differing", "ambiguous_bytes_differing",
            "ambiguous_blocks_differing"]  # fmt: skip
    print(table(cases, cols))
    keys = ("blocks", "ambiguous_blocks", "exact_bytes_differing", "ambiguous_bytes_differing",
            "ambiguous_blocks_differing")  # fmt: skip
    total = {k: sum(int(str(c[k])) for c in cases) for k in keys}
    print(f"TOTAL {len(cases)} cases: {total}")
    return cases, total


def bandwidth_part(quick: bool, sweep: bool) -> list[dict[str, object]]:
    print("\n== bandwidth (median us, bf16 in, k = amax/448) ==")
    sizes = [(4096, 8, 128), (65536, 8, 128)] if quick else [
        (128, 8, 128), (4096, 8, 128), (65536, 8, 128), (262144, 8, 128), (16384, 32, 128),
        (65536, 8, 64), (32768, 8, 256)]  # fmt: skip
    bw = [row for size in sizes for row in size_rows(*size, sweep)]
    print(table(bw, list(bw[0])))
    for variant in N.NVFP4_KV_CACHE_DTYPES:
        default = [r for r in bw if r["variant"] == variant and r["block_g"] == 64
                   and r["num_warps"] == 4]  # fmt: skip
        med = statistics.median(float(str(r["fraction_of_copy"])) for r in default)
        print(f"{variant}: median fraction of copy bandwidth (default tile) {med:.3f}")
    if sweep:
        for key, group in itertools.groupby(
            sorted(bw, key=lambda r: (str(r["tokens"]), str(r["head_size"]), str(r["variant"]))),
            key=lambda r: (r["tokens"], r["heads"], r["head_size"], r["variant"]),
        ):
            best = min(group, key=lambda r: float(str(r["kernel_us"])))
            print(f"best tile {key}: block_g {best['block_g']} warps {best['num_warps']} "
                  f"{best['kernel_us']} us ({best['fraction_of_copy']} of copy)")  # fmt: skip
    return bw


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="directory for results.json")
    ap.add_argument("--quick", action="store_true", help="fewer cases and sizes")
    ap.add_argument("--sweep", action="store_true", help="also time a grid of tiles")
    ap.add_argument("--interpret", action="store_true", help="dry-run part 2 on the CPU")
    ap.add_argument("--parts", default="rcp,bytes,bandwidth",
                    help="comma-separated parts to run (rcp, bytes, bandwidth)")  # fmt: skip
    args = ap.parse_args(argv)
    if args.interpret:
        global DEVICE
        DEVICE = "cpu"
        os.environ["TRITON_INTERPRET"] = "1"
    elif not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 3
    parts = set(args.parts.split(","))
    rcp: dict[str, object] = {}
    cases: list[dict[str, object]] = []
    total: dict[str, int] = {"exact_bytes_differing": 0}
    bw: list[dict[str, object]] = []
    if not args.interpret:
        print(f"device: {torch.cuda.get_device_name()} cc "
              f"{torch.cuda.get_device_capability()}, torch {torch.__version__}")  # fmt: skip
    if "rcp" in parts and not args.interpret:
        rcp = reciprocal_report()
        print("\n== rcp.approx.ftz.f32 on this GPU ==")
        print(json.dumps(rcp, indent=1))
    if "bytes" in parts:
        cases, total = bytes_part(args.quick)
    if "bandwidth" in parts and not args.interpret:
        bw = bandwidth_part(args.quick, args.sweep)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        results = {"reciprocal": rcp, "cases": cases, "total": total, "bandwidth": bw}
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    ok = total["exact_bytes_differing"] == 0
    print("PASS" if ok else "FAIL: differing bytes on exact blocks")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
