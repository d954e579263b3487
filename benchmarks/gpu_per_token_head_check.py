"""vLLM 0.33.0's per-token-head cache writes on a GPU against kvscale's reference, byte for byte.

    PYTHONPATH=. KVSCALE_VLLM_SRC=DIR_WITH_VLLM python3 benchmarks/gpu_per_token_head_check.py \
        --out DIR
    PYTHONPATH=. KVSCALE_VLLM_SRC=/tmp/vllm_dl/src python3 benchmarks/gpu_per_token_head_check.py \
        --interpret          # CPU dry run: vLLM's kernels in Triton's interpreter, small sizes

vLLM's kernels come from the source tree (tests/parity/vllm_per_token_head_oracle.py,
``VllmPerTokenHead``: the launcher ``triton_reshape_and_cache_flash_per_token_head_quant``, the int4
write with its Hadamard transform, the in-cache views of ``TritonAttentionImpl``), compiled for the
GPU. Without vLLM's compiled ``_C`` extension the int4 rotation takes vLLM's Triton
bfloat16 matrix-multiply tier for blocks of 16..128 and the torch butterfly otherwise; the report
says which. The reference (kvscale/kernel/per_token_head.py) runs on the CPU.

Parts, each printed as one line per row and written to DIR/gpu_per_token_head_check.json:

1. ``golden``: every parity case (tests/parity/per_token_head_cases.py) written by vLLM on the GPU
   against the golden file (vLLM in the interpreter == the reference): differing bytes, scales
   (count, max ulps), codes (count, max code step), int4 zero points; int4 also the rotated
   inputs vLLM computes on the GPU vs the CPU butterfly, and the GPU bytes against the reference
   quantizing vLLM's own GPU rotation (``rotate=False``), which isolates the quantizer.
2. ``random``: 4096 tokens x 8 heads, head sizes 64/96/128/256, bf16/fp16/fp32, normal values with
   per-head magnitudes and outlier channels, and the same comparison; plus the relative RMS error
   of what attention reads (dequantized GPU bytes vs input) next to the reference's, and fp8
   per-tensor at the ideal scale absmax/448 for comparison.
3. ``ties``: power-of-two scales (absmax = 127 / 448 x 2^k; int4: range 15 x 2^k on a 256 block,
   which vLLM rotates with the exact butterfly) with every other value on a rounding boundary:
   int8 half-integers, fp8 midpoints, subnormal ties and the mantissa-carry zone, int4 ties in
   codes and zero points. The interpreter cannot produce these bytes; the GPU and the reference
   must agree if the quotients are exact (expected 0 differing).
4. ``nan_inf``: NaN, -NaN, +-inf and all-NaN vectors: vLLM's bytes next to the reference's
   (the kernels leave these to the platform; the reference encodes a derivation).
4b. ``attention``: vLLM's attention kernel (``unified_attention``, int4's
   ``unified_attention_int4``) over the cache vLLM wrote on the device, against float64 attention
   over the reference's ``dequantize_per_token_head`` of that same cache (the read side: expect
   float32 / tf32 rounding only), against the golden (interpreter) output, and the quantization
   error itself; the parity attention cases plus 1000-token, 8-head bf16 sequences per dtype.
5. ``timing`` (GPU only): medians of 50 CUDA-event timed writes of 16384 tokens x 8 x 128 bf16:
   vLLM's int8/fp8/int4 per-token-head writes, vLLM's fp8 per-tensor Triton write
   (``triton_reshape_and_cache_flash``), and the reference on CUDA tensors; ratios to fp8 per
   tensor.
6. ``reference_on_cuda``: the reference run on CUDA tensors vs on the CPU (must be 0 differing).

Exit status 0 when part 6 holds and every run completed; the rest are measurements.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from kvscale.kernel import per_token_head as pth

ROOT = Path(__file__).resolve().parent.parent
PARITY = ROOT / "tests" / "parity"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
KINDS = pth.PER_TOKEN_HEAD_KV_CACHE_DTYPES
POISON = 0xA5


def _load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# --- caches and comparisons --------------------------------------------------------------------


def reference_cache(kv: str, key: torch.Tensor, value: torch.Tensor, slots: torch.Tensor,
                    blocks: int, block_size: int, physical: str = "HND",
                    rotate: bool = True) -> torch.Tensor:  # fmt: skip
    """The reference's write into a cache prepared as vLLM prepares it: the logical view."""
    heads, hs = key.shape[1], key.shape[2]
    layout = pth.per_token_head_layout(kv, heads, hs)
    dims = (blocks, heads, block_size, layout.content_bytes)
    if physical == "NHD":
        dims = (blocks, block_size, heads, layout.content_bytes)
    dtype = pth.per_token_head_format(kv).torch_storage_dtype
    buf = torch.full(dims, POISON, dtype=torch.uint8, device=key.device).view(dtype)
    cache = buf if physical == "HND" else buf.permute(0, 2, 1, 3)
    pth.init_per_token_head_cache(cache, kv, hs)
    pth.reference_reshape_and_cache_per_token_head(key, value, cache, slots, kv, rotate=rotate)
    return cache


def vllm_cache(vllm: Any, kv: str, key: torch.Tensor, value: torch.Tensor, slots: torch.Tensor,
               blocks: int, block_size: int, physical: str = "HND") -> torch.Tensor:  # fmt: skip
    cache, _ = vllm.new_cache(kv, blocks, key.shape[1], block_size, key.shape[2], physical)
    dev = vllm.device
    vllm.write(kv, key.to(dev), value.to(dev), cache, slots.to(dev))
    if dev == "cuda":
        torch.cuda.synchronize()
    return cache.cpu()


def compare(kv: str, got: torch.Tensor, want: torch.Tensor, head_size: int) -> dict[str, Any]:
    """Differences between two caches of one layout (logical views, CPU)."""
    g8 = got.view(torch.uint8) if got.dtype != torch.uint8 else got
    w8 = want.view(torch.uint8) if want.dtype != torch.uint8 else want
    out: dict[str, Any] = {"bytes": g8.numel(), "differing_bytes": int((g8 != w8).sum())}
    gv = pth.per_token_head_cache_views(got, kv, head_size)
    wv = pth.per_token_head_cache_views(want, kv, head_size)
    scale_diff = 0
    max_ulps = 0
    code_diff = 0
    max_step = 0
    zp_diff = 0
    for side in ("k", "v"):
        gs = getattr(gv, f"{side}_scales").view(torch.int32)
        ws = getattr(wv, f"{side}_scales").view(torch.int32)
        if kv == pth.INT4_PER_TOKEN_HEAD:
            zp_diff += int(((gs & 0xF) != (ws & 0xF)).sum())
            gs, ws = gs & ~0xF, ws & ~0xF
        d = gs != ws
        scale_diff += int(d.sum())
        if bool(d.any()):
            max_ulps = max(max_ulps, int((gs[d].long() - ws[d].long()).abs().max()))
        gc = _code_index(kv, getattr(gv, f"{side}_codes"))
        wc = _code_index(kv, getattr(wv, f"{side}_codes"))
        dc = gc != wc
        code_diff += int(dc.sum())
        if bool(dc.any()):
            max_step = max(max_step, int((gc[dc] - wc[dc]).abs().max()))
    if kv == pth.INT4_PER_TOKEN_HEAD:
        out["differing_zero_points"] = zp_diff
    out.update(differing_scales=scale_diff, max_scale_ulps=max_ulps, differing_codes=code_diff,
               max_code_step=max_step)  # fmt: skip
    return out


def _code_index(kv: str, codes: torch.Tensor) -> torch.Tensor:
    """Codes as ordered integers (fp8: sign-magnitude folded, so neighbours differ by 1)."""
    if kv == pth.INT8_PER_TOKEN_HEAD:
        return codes.to(torch.int64)
    if kv == pth.FP8_PER_TOKEN_HEAD:
        c = codes.to(torch.int64)
        return torch.where(c >= 128, -(c - 128), c)
    lo, hi = codes & 0xF, codes >> 4
    return torch.stack((lo, hi), dim=-1).to(torch.int64)


def rel_rms(x: torch.Tensor, y: torch.Tensor) -> float:
    x, y = x.double(), y.double()
    return float(((x - y).square().mean() / y.square().mean()).sqrt())


def read_values(
    kv: str, cache: torch.Tensor, slots: torch.Tensor, hs: int
) -> tuple[torch.Tensor, torch.Tensor]:
    k, v = pth.read_per_token_head_cache(cache, slots, kv, hs)
    return pth.dequantize_per_token_head(k), pth.dequantize_per_token_head(v)


# --- inputs ------------------------------------------------------------------------------------


def realistic(tokens: int, heads: int, hs: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(tokens, heads, hs, generator=g)
    x *= torch.tensor([2.0 ** (h % 4 - 2) for h in range(heads)]).reshape(1, heads, 1)
    outliers = torch.randperm(hs, generator=g)[: max(1, hs // 32)]
    x[..., outliers] *= 8.0
    return x.to(dtype)


def tie_values(
    kv: str, tokens: int, heads: int, hs: int, dtype: torch.dtype, seed: int
) -> torch.Tensor:
    """Vectors whose quotients sit on rounding boundaries at power-of-two scales."""
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(-6, 4, (tokens, heads, 1), generator=g).double()
    scale = 2.0**k
    if kv == pth.INT8_PER_TOKEN_HEAD:
        grid = torch.arange(-127, 127).double() + 0.5
        y = grid[torch.randint(0, grid.numel(), (tokens, heads, hs), generator=g)]
        y[..., 0] = 127.0
    elif kv == pth.FP8_PER_TOKEN_HEAD:
        codes = torch.arange(0, 127, dtype=torch.uint8).view(torch.float8_e4m3fn).double()
        mids = (codes[1:] + codes[:-1]) / 2  # ties, subnormal ties, carry-zone midpoints
        pool = torch.cat([mids, -mids, codes[:8], torch.tensor([2.0**-10, 3 * 2.0**-10])])
        y = pool[torch.randint(0, pool.numel(), (tokens, heads, hs), generator=g)]
        y[..., 0] = 448.0
    else:
        cases = _load("kvscale_parity_per_token_head_cases", PARITY / "per_token_head_cases.py")
        grid = torch.arange(-5, 10).double() + 0.5
        rows = []
        for _ in range(tokens * heads):
            r = grid[torch.randint(0, grid.numel(), (hs,), generator=g)]
            r[0], r[1] = -5.0, 10.0  # s = 2^k exactly, zp = 5
            rows.append(cases.unrotate(r.tolist()))
        return (torch.tensor(rows).reshape(tokens, heads, hs) * scale).to(dtype)
    return (y * scale).to(dtype)


def probe_values(hs: int, dtype: torch.dtype) -> torch.Tensor:
    nan, inf = float("nan"), float("inf")
    rows = [
        [nan, 2.0, -4.0, 1.0],
        [-nan, 2.0, -4.0, 1.0],
        [inf, 2.0, -4.0, 1.0],
        [-inf, 2.0, 4.0, 1.0],
        [nan] * 4,
        [inf, -inf, 1.0, 0.0],
    ]
    x = torch.zeros(len(rows), 1, hs, dtype=torch.float64)
    for i, r in enumerate(rows):
        x[i, 0, : len(r)] = torch.tensor(r, dtype=torch.float64)
        x[i, 0, len(r) :] = 0.5
    return x.to(dtype)  # row 1 keeps -nan's sign bit (Python negation flips it)


# --- parts -------------------------------------------------------------------------------------


def part_golden(vllm: Any) -> list[dict[str, Any]]:
    cases = _load("kvscale_parity_per_token_head_cases", PARITY / "per_token_head_cases.py")
    golden = json.loads((PARITY / "vllm_per_token_head_expected.json").read_text())
    rows = []
    for case in cases.CASES:
        key, value, slots = cases.build_inputs(case)
        got = vllm_cache(vllm, case.kv_cache_dtype, key, value, slots, case.blocks,
                         case.block_size, case.physical)  # fmt: skip
        want = reference_cache(case.kv_cache_dtype, key, value, slots, case.blocks,
                               case.block_size, case.physical)  # fmt: skip
        row: dict[str, Any] = {"case": case.name, "kv": case.kv_cache_dtype}
        row.update(compare(case.kv_cache_dtype, got, want, case.head_size))
        row["reference_is_golden"] = (
            _storage_sha(want) == golden["cases"][case.name]["cache_sha256"]
        )
        if case.kv_cache_dtype == pth.INT4_PER_TOKEN_HEAD:
            row.update(_int4_rotation(vllm, case, key, value, slots, got))
        rows.append(row)
    return rows


def _storage_sha(cache: torch.Tensor) -> str:
    import hashlib

    data = torch.empty(0, dtype=torch.uint8).set_(cache.untyped_storage()).numpy().tobytes()
    return hashlib.sha256(data).hexdigest()


def _int4_rotation(vllm: Any, case: Any, key: torch.Tensor, value: torch.Tensor,
                   slots: torch.Tensor, got: torch.Tensor) -> dict[str, Any]:  # fmt: skip
    dev = vllm.device
    rk = vllm.single_rht(key.to(dev)).cpu()
    rv = vllm.single_rht(value.to(dev)).cpu()
    cpu_k = pth.random_hadamard_transform(key).to(key.dtype)
    cpu_v = pth.random_hadamard_transform(value).to(value.dtype)
    differing = int((rk != cpu_k).sum()) + int((rv != cpu_v).sum())
    same_rot = reference_cache(case.kv_cache_dtype, rk, rv, slots, case.blocks, case.block_size,
                               case.physical, rotate=False)  # fmt: skip
    quantizer = compare(case.kv_cache_dtype, got, same_rot, case.head_size)
    return {
        "hadamard_tier": hadamard_tier(vllm, case.head_size),
        "rotated_elements": 2 * key.numel(),
        "rotated_differing": differing,
        "vs_reference_on_vllm_rotation": quantizer,
    }


def hadamard_tier(vllm: Any, head_size: int) -> str:
    b = head_size & -head_size
    if vllm.device == "cuda" and vllm.ns_int4["_hadacore_available"]():
        return "hadacore"
    if vllm.device == "cuda" and 16 <= b <= 128:
        return "triton-mma-bf16"
    return "torch-butterfly"


def part_random(vllm: Any, tokens: int, sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    seed = 100
    for kv in KINDS:
        for hs in sizes:
            for dname, dtype in DTYPES.items():
                seed += 1
                heads, bs = 8, 16
                key = realistic(tokens, heads, hs, dtype, seed)
                value = realistic(tokens, heads, hs, dtype, seed + 1000)
                blocks = tokens // bs + 2
                g = torch.Generator().manual_seed(seed)
                slots = torch.randperm(blocks * bs, generator=g)[:tokens]
                got = vllm_cache(vllm, kv, key, value, slots, blocks, bs)
                want = reference_cache(kv, key, value, slots, blocks, bs)
                row: dict[str, Any] = {"kv": kv, "dtype": dname, "head_size": hs, "tokens": tokens}
                row.update(compare(kv, got, want, hs))
                gk, gv = read_values(kv, got, slots, hs)
                wk, wv = read_values(kv, want, slots, hs)
                row["rel_rms_vllm"] = [rel_rms(gk, key), rel_rms(gv, value)]
                row["rel_rms_reference"] = [rel_rms(wk, key), rel_rms(wv, value)]
                if kv == pth.FP8_PER_TOKEN_HEAD:
                    row["rel_rms_fp8_per_tensor"] = [_fp8_per_tensor(key), _fp8_per_tensor(value)]
                rows.append(row)
    return rows


def _fp8_per_tensor(x: torch.Tensor) -> float:
    from kvscale.kernel.formats import E4M3FN
    from kvscale.kernel.reference import quantize_to_bits

    s = (x.float().abs().amax() / 448).reshape(1)
    bits = quantize_to_bits(x, s, E4M3FN)
    return rel_rms(bits.view(torch.float8_e4m3fn).float() * s, x)


def part_ties(vllm: Any, tokens: int) -> list[dict[str, Any]]:
    rows = []
    for i, kv in enumerate(KINDS):
        hs = 256 if kv == pth.INT4_PER_TOKEN_HEAD else 128
        for dname, dtype in DTYPES.items():
            if kv == pth.INT4_PER_TOKEN_HEAD and dname != "fp32":
                continue  # D H r / 256 needs 13 significant bits: exact in fp32 only
            key = tie_values(kv, tokens, 2, hs, dtype, 7 + i)
            value = tie_values(kv, tokens, 2, hs, dtype, 70 + i)
            bs = 16
            blocks = tokens // bs + 2
            slots = torch.arange(tokens, dtype=torch.int64)
            got = vllm_cache(vllm, kv, key, value, slots, blocks, bs)
            want = reference_cache(kv, key, value, slots, blocks, bs)
            row: dict[str, Any] = {"kv": kv, "dtype": dname, "head_size": hs, "tokens": tokens}
            row.update(compare(kv, got, want, hs))
            rows.append(row)
    return rows


def part_nan_inf(vllm: Any) -> list[dict[str, Any]]:
    rows = []
    for kv in KINDS:
        hs = 32
        x = probe_values(hs, torch.float32)
        slots = torch.arange(x.shape[0], dtype=torch.int64)
        got = vllm_cache(vllm, kv, x, x, slots, 1, 16)
        want = reference_cache(kv, x, x, slots, 1, 16)
        gk = pth.read_per_token_head_cache(got, slots, kv, hs)[0]
        wk = pth.read_per_token_head_cache(want, slots, kv, hs)[0]
        for r in range(x.shape[0]):
            rows.append({
                "kv": kv, "row": r, "input": [repr(float(v)) for v in x[r, 0, :4]],
                "vllm_codes": gk.codes[r, 0, :4].view(torch.uint8).tolist(),
                "reference_codes": wk.codes[r, 0, :4].view(torch.uint8).tolist(),
                "vllm_scale": f"{int(gk.scales[r, 0].view(torch.int32)) & 0xFFFFFFFF:08x}",
                "reference_scale": f"{int(wk.scales[r, 0].view(torch.int32)) & 0xFFFFFFFF:08x}",
                "equal": bool(torch.equal(gk.codes[r], wk.codes[r])
                              and torch.equal(gk.scales[r], wk.scales[r])),
            })  # fmt: skip
    return rows


def part_attention(vllm: Any, oracle: ModuleType, gpu: bool) -> list[dict[str, Any]]:
    """vLLM's attention over the cache vLLM wrote (on the device) against float64 attention over
    the reference's dequantization of that same cache, and against the golden output."""
    import numpy as np

    cases = _load("kvscale_parity_per_token_head_cases", PARITY / "per_token_head_cases.py")
    golden = json.loads((PARITY / "vllm_per_token_head_expected.json").read_text())["attention"]
    todo = list(cases.ATTENTION_CASES)
    if gpu:
        todo += [
            cases.AttentionCase(f"serving-{kv}", kv, "bfloat16", 8, 128, 1000, 16) for kv in KINDS
        ]
    rows = []
    dev = vllm.device
    for case in todo:
        key, value, query, slots, block_table = cases.build_attention_inputs(case)
        cache, _ = vllm.new_cache(case.kv_cache_dtype, case.blocks, case.num_kv_heads,
                                  case.block_size, case.head_size, "HND")  # fmt: skip
        views = vllm.write(case.kv_cache_dtype, key.to(dev), value.to(dev), cache, slots.to(dev))
        with oracle.one_element_loop_bounds(), np.errstate(invalid="ignore", divide="ignore"):
            out = vllm.attention(views, query, block_table, case.seq_len, case.softmax_scale)
        out = out.cpu().double()
        k_q, v_q = pth.read_per_token_head_cache(cache.cpu(), slots, case.kv_cache_dtype,
                                                 case.head_size)  # fmt: skip
        ours = cases.causal_attention(pth.dequantize_per_token_head(k_q),
                                      pth.dequantize_per_token_head(v_q), query, case)  # fmt: skip
        raw = cases.causal_attention(key, value, query, case)
        scale = float(ours.abs().max())
        row: dict[str, Any] = {
            "case": case.name, "kv": case.kv_cache_dtype,
            "max_rel_diff_vs_reference_dequant": float((out - ours).abs().max()) / scale,
            "max_rel_quantization_error": float((ours - raw).abs().max()) / scale,
        }  # fmt: skip
        if case.name in golden:
            bits = torch.tensor([int(h, 16) for h in golden[case.name]["output"]])
            gold = bits.to(torch.int32).view(torch.float32).reshape(out.shape).double()
            row["max_rel_diff_vs_golden"] = float((out - gold).abs().max()) / scale
        rows.append(row)
    return rows


def part_reference_on_cuda(tokens: int) -> list[dict[str, Any]]:
    rows = []
    for kv in KINDS:
        for dname, dtype in DTYPES.items():
            key = realistic(tokens, 8, 128, dtype, 5)
            value = realistic(tokens, 8, 128, dtype, 6)
            slots = torch.arange(tokens, dtype=torch.int64)
            blocks = tokens // 16 + 1
            cpu = reference_cache(kv, key, value, slots, blocks, 16)
            gpu = reference_cache(kv, key.cuda(), value.cuda(), slots.cuda(), blocks, 16).cpu()
            g8 = gpu.view(torch.uint8) if gpu.dtype != torch.uint8 else gpu
            c8 = cpu.view(torch.uint8) if cpu.dtype != torch.uint8 else cpu
            rows.append({"kv": kv, "dtype": dname, "differing_bytes": int((g8 != c8).sum())})
    return rows


def part_timing(vllm: Any, src: str) -> list[dict[str, Any]]:
    from kvscale.engine.vllm import cache_write as vcw

    tokens, heads, hs, bs = 16384, 8, 128, 16
    blocks = tokens // bs + 1
    key = realistic(tokens, heads, hs, torch.bfloat16, 1).cuda()
    value = realistic(tokens, heads, hs, torch.bfloat16, 2).cuda()
    slots = torch.randperm(blocks * bs)[:tokens].cuda()

    def median_ms(fn: Any, runs: int = 50) -> float:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(runs):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        return statistics.median(times)

    fp8_fn = vcw.load_vllm_kernel(src=src).function
    kc = torch.zeros(blocks, bs, heads, hs, dtype=torch.uint8, device="cuda")
    vc = torch.zeros_like(kc)
    one = torch.ones(1, device="cuda")
    base = median_ms(lambda: fp8_fn(key, value, kc, vc, slots, "fp8", one, one))
    rows = [{"write": "vllm fp8 per tensor (Triton)", "median_ms": base, "ratio": 1.0}]
    for kv in KINDS:
        cache, _ = vllm.new_cache(kv, blocks, heads, bs, hs, "HND")
        views = vllm.views(kv, cache)
        t = median_ms(lambda views=views: vllm.launch(key, value, views, slots))
        rows.append({"write": f"vllm {kv}", "median_ms": t, "ratio": t / base})
        layout = pth.per_token_head_layout(kv, heads, hs)
        dtype = pth.per_token_head_format(kv).torch_storage_dtype
        ref = torch.zeros(layout.cache_shape(blocks, bs), dtype=dtype, device="cuda")
        t = median_ms(
            lambda kv=kv, ref=ref: pth.reference_reshape_and_cache_per_token_head(
                key, value, ref, slots, kv
            ),
            runs=10,
        )
        rows.append({"write": f"reference {kv} (torch, cuda)", "median_ms": t, "ratio": t / base})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument(
        "--out", type=Path, default=None, help="write gpu_per_token_head_check.json here"
    )
    ap.add_argument("--interpret", action="store_true", help="CPU dry run (see the docstring)")
    ap.add_argument("--tokens", type=int, default=None, help="tokens per random case (GPU 4096)")
    args = ap.parse_args(argv)
    src = os.environ.get("KVSCALE_VLLM_SRC")
    if not src:
        print("set KVSCALE_VLLM_SRC to the directory holding vllm/ (the 0.33.0 wheel extracted)")
        return 3
    gpu = not args.interpret
    if gpu and not torch.cuda.is_available():
        print("no CUDA device: use --interpret for a CPU dry run")
        return 3
    oracle = _load("kvscale_vllm_per_token_head_oracle", PARITY / "vllm_per_token_head_oracle.py")
    vllm = oracle.VllmPerTokenHead(src, "cuda" if gpu else "cpu")
    import triton

    env: dict[str, Any] = {"torch": torch.__version__, "triton": triton.__version__,
                           "python": platform.python_version(), "vllm": vllm.tree.version(),
                           "vllm_sources_sha256": vllm.tree.used}  # fmt: skip
    if gpu:
        env["device"] = torch.cuda.get_device_name()
        env["capability"] = list(torch.cuda.get_device_capability())
        env["hadacore"] = bool(vllm.ns_int4["_hadacore_available"]())
    golden = json.loads((PARITY / "vllm_per_token_head_expected.json").read_text())
    env["rht_signs_match_golden"] = all(
        "".join("+" if s > 0 else "-" for s in vllm.rht_signs(int(b)).tolist()) == text
        for b, text in golden["rht_signs"].items()
    )
    print("env:", json.dumps(env))
    doc: dict[str, Any] = {"schema": "kvscale.gpu-per-token-head-check/1", "env": env}
    t0 = time.time()
    tokens = args.tokens or (4096 if gpu else 8)
    parts: list[tuple[str, Any]] = [
        ("golden", lambda: part_golden(vllm)),
        ("random", lambda: part_random(vllm, tokens, [64, 96, 128, 256] if gpu else [64])),
        ("ties", lambda: part_ties(vllm, 256 if gpu else 4)),
        ("nan_inf", lambda: part_nan_inf(vllm)),
        ("attention", lambda: part_attention(vllm, oracle, gpu)),
    ]
    if gpu:
        parts.append(("reference_on_cuda", lambda: part_reference_on_cuda(1024)))
        parts.append(("timing", lambda: part_timing(vllm, src)))
    ok = True
    for name, run in parts:
        try:
            rows = run()
        except Exception as exc:  # report and continue: every part is a separate measurement
            ok = False
            rows = [{"error": f"{type(exc).__name__}: {exc}"}]
        doc[name] = rows
        for row in rows:
            print(f"{name}:", json.dumps(row))
        print(f"{name}: {len(rows)} rows, {time.time() - t0:.1f}s")
    checks = {
        "completed": ok,
        "reference_on_cuda_identical": all(
            r.get("differing_bytes") == 0 for r in doc.get("reference_on_cuda", [])
        ),
        "reference_is_golden": all(r.get("reference_is_golden") for r in doc["golden"]),
    }
    doc["checks"] = checks
    print("checks:", json.dumps(checks))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "gpu_per_token_head_check.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
