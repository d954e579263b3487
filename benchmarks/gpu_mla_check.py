"""Whole-cache bit-exactness of the Triton MLA cache write against the CPU reference, on a GPU.

For every input dtype (bf16, fp16, fp32), both NVIDIA fp8 formats and the plain-copy dtypes,
scales 1.0 with and without skip_scale, 0.3, 0.5, 0.0173 and extreme ones (0, -1.5, inf, NaN,
1e-30, 3e35), three layouts (kv_c and k_pe sliced out of DeepSeek-V3's fused q_a/kv_a output;
a contiguous kv_c with a sliced k_pe; padded cache rows with non-adjacent blocks and
non-power-of-two widths), random / heavy-tailed / adversarial data, padding slots and rows past
len(slot_mapping), small and large batches: the cache is filled with random poison bytes,
written by the kernel on the GPU and by the reference on the CPU, and compared byte for byte
over its whole storage. A special-value probe prints the GPU's byte for NaN, -NaN, +-inf, +-0,
ties and subnormals next to the reference's, with and without the division.

    PYTHONPATH=. python3 benchmarks/gpu_mla_check.py [--out DIR] [--quick] [--interpret]

Exit status 0 only when every case has zero mismatched bytes. ``--interpret`` dry-runs the
script on the CPU in Triton's interpreter (its fp8 rounding differs: expect mismatches).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from kvscale.kernel import triton_mla as tm
from kvscale.kernel.formats import resolve_kv_cache_dtype
from kvscale.kernel.mla import reference_concat_and_cache_mla
from kvscale.kernel.reference import STRESS_KINDS, make_stress_values

DEVICE = "cuda"  # "cpu" with --interpret
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
Q_LORA = 1536
# (scale, skip_scale)
SCALES = [(1.0, True), (1.0, False), (0.3, False), (0.5, False), (0.0173, False)]
EXTREME = [(0.0, False), (-1.5, False), (float("inf"), False), (float("nan"), False),
           (1e-30, False), (3e35, False), (7.0, True)]  # fmt: skip
# layout -> (kv_lora_rank, rope_dim, block_size)
LAYOUTS = {"fused": (512, 64, 16), "normed": (512, 64, 64), "padded": (96, 40, 32)}


def make_tensors(
    layout: str, tokens: int, dtype: torch.dtype, cache_dtype: torch.dtype, g: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """kv_c, k_pe, kv_cache (CPU, in the layout's strides; cache poisoned) and the slot count."""
    lora, rope, bs = LAYOUTS[layout]
    width = lora + rope
    blocks = (tokens + bs - 1) // bs + 3
    if layout == "fused":
        fused = torch.empty(tokens, Q_LORA + width, dtype=dtype)
        kv_c, k_pe = fused[:, Q_LORA : Q_LORA + lora], fused[:, Q_LORA + lora :]
        cache = torch.empty(blocks, bs, width, dtype=cache_dtype)
    elif layout == "normed":
        kv_c = torch.empty(tokens, lora, dtype=dtype)
        k_pe = torch.empty(tokens, Q_LORA + width, dtype=dtype)[:, Q_LORA + lora :]
        cache = torch.empty(blocks, bs, width, dtype=cache_dtype)
    else:
        kv_c = torch.empty(tokens, lora + 8, dtype=dtype)[:, 8:]
        k_pe = torch.empty(tokens, rope, dtype=dtype)
        cache = torch.empty(blocks + 1, bs, width + 32, dtype=cache_dtype)[1:, :, :width]
    raw = _storage_bytes(cache)
    raw.copy_(torch.randint(0, 256, raw.shape, generator=g, dtype=torch.uint8))
    return kv_c, k_pe, cache, blocks * bs


def run_case(
    kv_cache_dtype: str,
    dtype_name: str,
    scale: float,
    skip: bool,
    layout: str,
    tokens: int,
    n: int,
    kind: str,
    seed: int,
) -> dict[str, object]:
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dtype_name]
    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    fmt = kv.fp8 or resolve_kv_cache_dtype("fp8").fp8
    assert fmt is not None
    kv_c, k_pe, cache, num_slots = make_tensors(
        layout, tokens, dtype, torch.uint8 if kv.quantized else dtype, g
    )
    s = torch.tensor([scale], dtype=torch.float32)
    lora = kv_c.shape[1]
    x = make_stress_values(
        (tokens, 1, lora + k_pe.shape[1]), kind=kind, dtype=dtype, scale=s, fmt=fmt, generator=g
    ).reshape(tokens, -1)
    kv_c.copy_(x[:, :lora])
    k_pe.copy_(x[:, lora:])
    slots = torch.randperm(num_slots, generator=g)[:n].to(torch.int64)
    slots[torch.rand(n, generator=g) < 0.1] = -1
    if n > 2:
        slots[1] = -7  # any negative slot is padding
    dev = torch.device(DEVICE)
    gc, gp, gk = to_device([kv_c, k_pe, cache], dev)
    tm.concat_and_cache_mla(gc, gp, gk, slots.to(dev), kv_cache_dtype, s.to(dev), skip)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    reference_concat_and_cache_mla(kv_c, k_pe, cache, slots, kv_cache_dtype, s, skip)
    got = _storage_bytes(gk).cpu()
    want = _storage_bytes(cache)
    diff = got != want
    examples = [
        {"byte": i, "gpu": int(got[i]), "ref": int(want[i])}
        for i in diff.nonzero().flatten()[:6].tolist()
    ]
    return {
        "kv_cache_dtype": kv_cache_dtype,
        "dtype": dtype_name,
        "scale": repr(scale),
        "skip_scale": skip,
        "layout": layout,
        "tokens": tokens,
        "n": n,
        "kind": kind,
        "mismatched_bytes": int(diff.sum()),
        "cache_bytes": want.numel(),
        "examples": examples,
    }


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def to_device(tensors: list[torch.Tensor], dev: torch.device) -> list[torch.Tensor]:
    """Copy each distinct storage to the device once and rebuild every view on it."""
    copies: dict[int, torch.Tensor] = {}
    out = []
    for t in tensors:
        storage = t.untyped_storage()
        if storage.data_ptr() not in copies:
            copies[storage.data_ptr()] = (
                torch.empty(0, dtype=torch.uint8).set_(storage).to(dev, copy=True)
            )
        flat = copies[storage.data_ptr()].view(t.dtype)
        out.append(flat.as_strided(t.shape, t.stride(), t.storage_offset()))
    return out


def special_probe() -> list[dict[str, object]]:
    """The GPU's byte for hand-picked values at scale 1, with and without the division."""
    vals = [float("nan"), -float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 17.0, 19.0,
            500.0, 464.0, -464.0, 2.0**-10, 3 * 2.0**-10, 2.0**-9, 61440.0, 1e38, -1e-30,
            2.0**-17, 3 * 2.0**-17]  # fmt: skip
    rows = []
    dev = torch.device(DEVICE)
    for kvd, dtype_name, skip in itertools.product(("fp8", "fp8_e5m2"), ("fp32", "bf16"),
                                                   (False, True)):  # fmt: skip
        x = torch.tensor(vals, dtype=torch.float32).to(DTYPES[dtype_name]).reshape(1, -1)
        cache = torch.zeros(1, 1, 2 * len(vals), dtype=torch.uint8)
        one = torch.ones(1)
        slots = torch.zeros(1, dtype=torch.int64)
        gk = cache.to(dev)
        tm.concat_and_cache_mla(x.to(dev), x.to(dev), gk, slots.to(dev), kvd, one.to(dev), skip)
        reference_concat_and_cache_mla(x, x, cache, slots, kvd, one, skip)
        got = gk.cpu()[0, 0, : len(vals)].tolist()
        want = cache[0, 0, : len(vals)].tolist()
        for v, gb, wb in zip(vals, got, want, strict=True):
            label = "-nan" if math.isnan(v) and math.copysign(1.0, v) < 0 else repr(v)
            rows.append({"fmt": kvd, "in": dtype_name, "skip_scale": skip, "x": label,
                         "gpu": f"0x{gb:02x}", "ref": f"0x{wb:02x}", "ok": gb == wb})  # fmt: skip
    return rows


def all_cases(quick: bool) -> list[tuple[object, ...]]:
    cases: list[tuple[object, ...]] = []
    seed = 0
    for kvd, dt in itertools.product(("fp8", "fp8_e5m2"), DTYPES):
        scales = SCALES if quick else SCALES + EXTREME
        for (scale, skip), layout in itertools.product(scales, LAYOUTS):
            for kind in STRESS_KINDS:
                seed += 1
                cases.append((kvd, dt, scale, skip, layout, 700, 650, kind, seed))
            seed += 1
            cases.append((kvd, dt, scale, skip, layout, 9, 5, "adversarial", seed))
            if layout == "fused" and not quick:
                cases.append((kvd, dt, scale, skip, layout, 4100, 4000, "adversarial", seed))
    for kvd, dt in [("auto", "bf16"), ("auto", "fp16"), ("auto", "fp32"), ("bfloat16", "bf16"),
                    ("float16", "fp16")]:  # fmt: skip
        for layout in LAYOUTS:
            seed += 1
            cases.append((kvd, dt, float("nan"), False, layout, 700, 650, "adversarial", seed))
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write mla_check.json here")
    ap.add_argument("--quick", action="store_true", help="fewer scales and sizes")
    ap.add_argument("--interpret", action="store_true", help="dry run in Triton's interpreter")
    args = ap.parse_args(argv)
    global DEVICE
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    else:
        print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    t0 = time.time()
    probe = special_probe()
    probe_bad = [r for r in probe if not r["ok"]]
    print(f"special-value probe: {len(probe) - len(probe_bad)}/{len(probe)} bytes match")
    for r in probe:
        if not r["ok"] or (r["in"] == "fp32" and r["x"] in ("nan", "-nan", "inf", "-0.0")):
            print("   ", json.dumps(r))
    results = []
    total_bad = len(probe_bad)
    total_bytes = 0
    cases = all_cases(args.quick or args.interpret)
    if args.interpret:  # the interpreter takes ~1.5 s a case: a sample is enough for a dry run
        cases = cases[::12]
    for case in cases:
        r = run_case(*case)  # type: ignore[arg-type]
        results.append(r)
        total_bad += int(r["mismatched_bytes"])  # type: ignore[call-overload]
        total_bytes += int(r["cache_bytes"])  # type: ignore[call-overload]
        if r["mismatched_bytes"]:
            print("MISMATCH", json.dumps(r))
    by_group: dict[str, list[int]] = {}
    for r in results:
        key = f"{r['kv_cache_dtype']:>9} {r['dtype']:>4} skip={int(bool(r['skip_scale']))}"
        cell = by_group.setdefault(key, [0, 0, 0])
        cell[0] += 1
        cell[1] += int(r["cache_bytes"])  # type: ignore[call-overload]
        cell[2] += int(r["mismatched_bytes"])  # type: ignore[call-overload]
    print(f"{'group':>26} {'cases':>6} {'bytes compared':>15} {'mismatched':>10}")
    for key, (c, b, m) in sorted(by_group.items()):
        print(f"{key:>26} {c:6d} {b:15d} {m:10d}")
    print(
        f"TOTAL: {len(results)} cases, {total_bytes} cache bytes compared, mismatched bytes = "
        f"{total_bad} ({time.time() - t0:.1f}s)"
    )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "mla_check.json").write_text(
            json.dumps({"probe": probe, "cases": results}, indent=1)
        )
    return 0 if total_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
