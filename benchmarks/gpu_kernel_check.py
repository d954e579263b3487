"""Whole-cache bit-exactness of the Triton cache-write kernel against the CPU reference, on a GPU.

For every input dtype (bf16, fp16, fp32), both fp8 formats and the plain-copy dtypes, per-tensor
and per-head scales (ordinary, powers of two, and extreme: 0, negative, tiny, huge, inf, NaN),
three memory layouts (contiguous; key/value sliced out of a fused qkv tensor with caches that are
views kv_cache[:, 0] / [:, 1]; padded head strides with a non-power-of-two head size), padding
slots and rows past len(slot_mapping), small and large batches, and both division variants: the
caches are filled with random poison bytes, written by the kernel on the GPU and by the reference
on the CPU, and compared byte for byte over the whole cache (so untouched padding slots count).

    PYTHONPATH=. python3 benchmarks/gpu_kernel_check.py [--out DIR] [--quick]

Exit status 0 only when every case has zero mismatched bytes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from kvscale.kernel import triton_cache as tc
from kvscale.kernel.formats import resolve_kv_cache_dtype
from kvscale.kernel.reference import (
    STRESS_KINDS,
    make_stress_values,
    reference_reshape_and_cache_flash,
)

DEVICE = "cuda"  # "cpu" with --interpret: Triton's interpreter, to dry-run this script
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}

# Scales (per tensor) and per-head scale vectors, including extreme and invalid ones.
TENSOR_SCALES = {
    "pow2": [0.5],
    "plain": [0.0173],
    "neg": [-2.0],
    "zero": [0.0],
    "tiny": [1e-30],
    "huge": [3e35],
    "inf": [float("inf")],
    "nan": [float("nan")],
}
HEAD_SCALES = {
    "mixed": [0.0173, 2.0, 0.5, 3.7, 1e-3, 128.0, 0.0625, 7.0],
    "extreme": [0.5, 1e-12, 0.0, -1.5, float("inf"), 1e12, float("nan"), 0.25],
}


@dataclass
class Layout:
    name: str
    num_heads: int
    head_size: int
    block_size: int


LAYOUTS = {
    "contig": Layout("contig", 8, 128, 16),
    "fused": Layout("fused", 8, 128, 16),
    "padded": Layout("padded", 6, 80, 32),
}


def make_tensors(
    layout: Layout,
    num_tokens: int,
    dtype: torch.dtype,
    cache_dtype: torch.dtype,
    g: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Key/value (CPU) and caches (CPU) in the layout's strides; returns the slot count too."""
    h, d, bs = layout.num_heads, layout.head_size, layout.block_size
    num_blocks = (num_tokens + bs - 1) // bs + 3
    if layout.name == "contig":
        key = torch.empty(num_tokens, h, d, dtype=dtype)
        value = torch.empty(num_tokens, h, d, dtype=dtype)
        kc = torch.empty(num_blocks, bs, h, d, dtype=cache_dtype)
        vc = torch.empty(num_blocks, bs, h, d, dtype=cache_dtype)
    elif layout.name == "fused":
        hq = 4 * h  # a GQA model's fused qkv projection output
        qkv = torch.empty(num_tokens, (hq + 2 * h) * d, dtype=dtype)
        key = qkv[:, hq * d : (hq + h) * d].view(num_tokens, h, d)
        value = qkv[:, (hq + h) * d :].view(num_tokens, h, d)
        kv = torch.empty(num_blocks, 2, bs, h, d, dtype=cache_dtype)
        kc, vc = kv[:, 0], kv[:, 1]
    else:
        key = torch.empty(num_tokens, h, d + 16, dtype=dtype)[:, :, :d]
        value = torch.empty(num_tokens, h + 1, d, dtype=dtype)[:, 1:, :]
        kc = torch.empty(num_blocks, bs, h, d + 32, dtype=cache_dtype)[..., :d]
        vc = torch.empty(num_blocks + 1, bs, h, d, dtype=cache_dtype)[1:]
    for c in (kc, vc):  # poison: random bytes, NaN patterns included
        raw = c.view(torch.uint8)
        raw.copy_(torch.randint(0, 256, raw.shape, generator=g, dtype=torch.uint8))
    return key, value, kc, vc, num_blocks * bs


def run_case(
    kv_cache_dtype: str,
    dtype_name: str,
    k_scale_list: list[float],
    v_scale_list: list[float],
    layout: Layout,
    num_tokens: int,
    n: int,
    kind: str,
    seed: int,
) -> dict[str, object]:
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dtype_name]
    kv = resolve_kv_cache_dtype(kv_cache_dtype)
    cache_dtype = torch.uint8 if kv.quantized else dtype
    key, value, kc, vc, num_slots = make_tensors(layout, num_tokens, dtype, cache_dtype, g)
    k_scale = torch.tensor(k_scale_list, dtype=torch.float32)
    v_scale = torch.tensor(v_scale_list, dtype=torch.float32)
    fmt = kv.fp8 or resolve_kv_cache_dtype("fp8").fp8
    assert fmt is not None
    shape = (num_tokens, layout.num_heads, layout.head_size)
    key.copy_(
        make_stress_values(shape, kind=kind, dtype=dtype, scale=k_scale, fmt=fmt, generator=g)
    )
    value.copy_(
        make_stress_values(shape, kind=kind, dtype=dtype, scale=v_scale, fmt=fmt, generator=g)
    )
    slots = torch.randperm(num_slots, generator=g)[:n].to(torch.int64)
    pad = torch.rand(n, generator=g) < 0.1
    slots[pad] = -1
    if n > 2:
        slots[1] = -7  # any negative slot is padding
    # GPU copies first (views are rebuilt on the device with the same strides via the base).
    dev = torch.device(DEVICE)
    key_d, value_d, kc_d, vc_d = to_device([key, value, kc, vc], dev)
    slots_d, ks_d, vs_d = slots.to(dev), k_scale.to(dev), v_scale.to(dev)
    assert key_d.stride() == key.stride() and kc_d.stride() == kc.stride()
    tc.reshape_and_cache_flash(key_d, value_d, kc_d, vc_d, slots_d, kv_cache_dtype, ks_d, vs_d)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    reference_reshape_and_cache_flash(key, value, kc, vc, slots, kv_cache_dtype, k_scale, v_scale)
    # Compare the caches' whole storages, not just the views: bytes outside the view (padding of a
    # padded head stride, the other half of a fused kv tensor) must be untouched too.
    bad = 0
    examples: list[dict[str, object]] = []
    pairs = [("key_cache", kc_d, kc)]
    if vc.untyped_storage().data_ptr() != kc.untyped_storage().data_ptr():
        pairs.append(("value_cache", vc_d, vc))
    for name, got, want in pairs:
        gb = _storage_bytes(got).cpu()
        wb = _storage_bytes(want)
        diff = gb != wb
        bad += int(diff.sum())
        for idx in diff.nonzero().flatten()[:4].tolist():
            if len(examples) < 8:
                examples.append(
                    {"cache": name, "byte": idx, "gpu": int(gb[idx]), "ref": int(wb[idx])}
                )
    return {
        "kv_cache_dtype": kv_cache_dtype,
        "dtype": dtype_name,
        "layout": layout.name,
        "tokens": num_tokens,
        "n": n,
        "kind": kind,
        "k_scale": k_scale_list if len(k_scale_list) < 3 else "per-head",
        "mismatched_bytes": bad,
        "cache_bytes": sum(_storage_bytes(w).numel() for _, _, w in pairs),
        "examples": examples,
    }


def _storage_bytes(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def to_device(tensors: list[torch.Tensor], dev: torch.device) -> list[torch.Tensor]:
    """Copy each distinct storage to the device once and rebuild every view on it (same strides
    and offsets), so views that share a storage (kv_cache[:, 0] and [:, 1]) still share it."""
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


def nan_probe() -> list[dict[str, object]]:
    """Bytes the GPU writes for hand-picked values (scale 1), next to the reference's."""
    vals = [float("nan"), -float("nan"), float("inf"), -float("inf"), -0.0, 0.0, 17.0, 500.0,
            464.0, -464.0, 2.0**-10, 3 * 2.0**-10, 2.0**-9, 61440.0, 1e38, -1e-30, 2.0**-17,
            3 * 2.0**-17]  # fmt: skip
    rows = []
    for kv_cache_dtype in ("fp8_e4m3", "fp8_e5m2"):
        for dtype_name in ("fp32", "bf16"):
            dtype = DTYPES[dtype_name]
            x = torch.tensor(vals, dtype=torch.float32).to(dtype)
            key = x.reshape(len(vals), 1, 1).repeat(1, 1, 16)
            kc = torch.zeros(len(vals), 1, 1, 16, dtype=torch.uint8)
            one = torch.ones(1)
            slots = torch.arange(len(vals))
            kc_d = kc.cuda()
            vc_d = kc.cuda()
            for _ in (0,):
                tc._config_override = tc.KernelConfig(1, 1, 1)
                tc.reshape_and_cache_flash(
                    key.cuda(),
                    key.cuda(),
                    kc_d,
                    vc_d,
                    slots.cuda(),
                    kv_cache_dtype,
                    one.cuda(),
                    one.cuda(),
                )
                torch.cuda.synchronize()
                tc._config_override = None
                ref = kc.clone()
                reference_reshape_and_cache_flash(
                    key, key, ref, ref.clone(), slots, kv_cache_dtype, one, one
                )
                got = kc_d[:, 0, 0, 0].cpu().tolist()
                want = ref[:, 0, 0, 0].tolist()
                for v, gb, wb in zip(vals, got, want, strict=True):
                    rows.append(
                        {
                            "fmt": kv_cache_dtype,
                            "in": dtype_name,
                            "x": repr(v),
                            "gpu": f"0x{gb:02x}",
                            "ref": f"0x{wb:02x}",
                            "ok": gb == wb,
                        }
                    )
    return rows


def all_cases(quick: bool) -> list[tuple]:
    cases = []
    seed = 0
    quant = ["fp8", "fp8_e5m2"]
    for kvd, dt in itertools.product(quant, DTYPES):
        scale_sets = [
            (k, v)
            for k, v in [
                (TENSOR_SCALES["pow2"], TENSOR_SCALES["plain"]),
                (TENSOR_SCALES["neg"], TENSOR_SCALES["pow2"]),
                (HEAD_SCALES["mixed"], HEAD_SCALES["mixed"]),
            ]
        ]
        if not quick:
            scale_sets += [
                (TENSOR_SCALES["zero"], TENSOR_SCALES["tiny"]),
                (TENSOR_SCALES["huge"], TENSOR_SCALES["inf"]),
                (TENSOR_SCALES["nan"], TENSOR_SCALES["plain"]),
                (HEAD_SCALES["extreme"], HEAD_SCALES["extreme"]),
                (HEAD_SCALES["mixed"], TENSOR_SCALES["pow2"]),
            ]
        for ks, vs in scale_sets:
            for lay in ("contig", "fused", "padded"):
                layout = LAYOUTS[lay]
                ks_l = ks[: layout.num_heads] if len(ks) > 1 else ks
                vs_l = vs[: layout.num_heads] if len(vs) > 1 else vs
                for kind in STRESS_KINDS:
                    seed += 1
                    cases.append((kvd, dt, ks_l, vs_l, layout, 700, 650, kind, seed))
                seed += 1
                # a large batch (the large-tile variant) and a tiny one with extra ignored rows
                cases.append((kvd, dt, ks_l, vs_l, layout, 2500, 2400, "adversarial", seed))
                cases.append((kvd, dt, ks_l, vs_l, layout, 9, 5, "adversarial", seed + 1))
                seed += 1
    for kvd, dt in [("auto", "bf16"), ("auto", "fp16"), ("auto", "fp32"), ("bfloat16", "bf16"),
                    ("float16", "fp16"), ("float32", "fp32")]:  # fmt: skip
        for lay in ("contig", "fused", "padded"):
            seed += 1
            cases.append((kvd, dt, [1.0], [1.0], LAYOUTS[lay], 700, 650, "adversarial", seed))
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write check.json here")
    ap.add_argument("--quick", action="store_true", help="fewer scale sets")
    ap.add_argument(
        "--interpret",
        action="store_true",
        help="dry run on the CPU in Triton's interpreter (its fp8 rounding differs: expect "
        "mismatches on non-representable values)",
    )
    args = ap.parse_args(argv)
    global DEVICE
    if args.interpret:
        import os

        os.environ["TRITON_INTERPRET"] = "1"
        DEVICE = "cpu"
        results = [run_case(*c) for c in all_cases(True)]
        for r in results:
            print(
                r["kv_cache_dtype"],
                r["dtype"],
                r["layout"],
                r["kind"],
                r["n"],
                r["mismatched_bytes"],
            )
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device: nothing to check")
        return 2
    print(f"device: {torch.cuda.get_device_name()}  torch {torch.__version__}")
    t0 = time.time()
    probe = nan_probe()
    probe_bad = [r for r in probe if not r["ok"]]
    print(f"special-value probe: {len(probe) - len(probe_bad)}/{len(probe)} bytes match")
    for r in probe:
        if not r["ok"] or r["in"] == "fp32":
            print("   ", r)
    results = []
    total_bad = len(probe_bad)
    total_bytes = 0
    for variant in ("default",):
        for case in all_cases(args.quick):
            r = run_case(*case)
            r["variant"] = variant
            results.append(r)
            total_bad += int(r["mismatched_bytes"])
            total_bytes += int(r["cache_bytes"])
            if r["mismatched_bytes"]:
                print("MISMATCH", json.dumps(r))
        print(
            f"{variant}: {sum(1 for r in results if r['variant'] == variant)} cases checked, "
            f"{time.time() - t0:.1f}s so far"
        )
    print(
        f"TOTAL: {len(results)} cases, {total_bytes} cache bytes compared, "
        f"mismatched bytes = {total_bad}"
    )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "check.json").write_text(
            json.dumps({"probe": probe, "cases": results}, indent=1)
        )
    return 0 if total_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
