"""The serving engines' own FP8 cache writes against kvscale's, byte for byte, on a GPU.

Part 1, vLLM 0.33.0: the same K/V (bf16/fp16/fp32; random and adversarial values from
``make_stress_values``; per-tensor and per-head scales; ``fp8`` and ``fp8_e5m2``) written into one
poisoned fused ``[blocks, 2, block, heads, head]`` cache by kvscale's Triton kernel, by kvscale's
CPU reference, and by vLLM's own ``triton_reshape_and_cache_flash`` (``kvscale.engine.vllm.
cache_write``: an installed vllm, or ``$KVSCALE_VLLM_SRC``); whole storages compared. vLLM's
kernel is also compared with a reference written the way it behaves: e4m3 bytes whatever the
dtype string, element 0 of the scale for every head.

Part 2, SGLang 0.5.23: ``x.div_(s)`` with a 0-d float32 CUDA tensor and ``.to(float8_*)`` with the
installed torch, against ``kvscale.engine.sglang.cache_write`` computed on the CPU for the
installed torch's cast semantics (must be equal), for the pinned torch 2.14.1 (may differ only
where torch <= 2.11 writes NaN), and against vLLM-style bytes (``fp8(float32(x) / s)``,
saturating). Plus a probe of hand-picked values.

    PYTHONPATH=. KVSCALE_VLLM_SRC=.device python3 benchmarks/engine_kernel_check.py --out DIR
    PYTHONPATH=. python3 benchmarks/engine_kernel_check.py --interpret   # CPU dry run

``--interpret`` runs kvscale's kernel in Triton's interpreter (whose fp8 rounding is not the
GPU's: mismatches expected) and the SGLang emulation on the CPU; vLLM's kernel needs CUDA.
Exit status 0 only when every expectation holds (table "checks"). vLLM's divide with Triton's
`/` (div.full.f32, approximate): its expectation is that finding, measured, not 0 differing
bytes (``vllm_checks``; tests/benchmarks/test_engine_kernel_check.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

from kvscale.engine.sglang.cache_write import (
    TORCH_2_11,
    TORCH_2_14_1,
    sglang_cache_write,
    sglang_divide,
    torch_cast_for,
)
from kvscale.kernel.formats import FP8_FORMATS, resolve_kv_cache_dtype
from kvscale.kernel.reference import (
    make_stress_values,
    quantize_to_bits,
    reference_reshape_and_cache_flash,
)

SCHEMA = "kvscale.engine-kernel-check/1"
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
HEADS, HEAD_SIZE, BLOCK = 8, 128, 16
# Per-tensor: a power of two (exact in every dtype), a calibrated-looking value, and 0.3, which
# bf16 rounds to 0.30078125 (SGLang's divisor). Per head: 8 different scales.
VLLM_SCALES: dict[str, list[float]] = {
    "pow2": [0.5],
    "plain": [0.0173],
    "0.3": [0.3],
    "per-head": [0.0173, 2.0, 0.5, 3.7, 1e-3, 128.0, 0.0625, 7.0],
}
SGLANG_SCALES = {"pow2": 0.5, "plain": 0.0173, "0.3": 0.3}
KINDS = ("random", "adversarial")
PROBE = [448.0, 460.0, 464.0, 465.0, 470.0, 480.0, 1e4, float("inf"), -float("inf"), float("nan"),
         -float("nan"), -0.0, 500.0, -500.0, 57344.0, 61440.0, 240.0, 247.0, 248.0, 2.0**-10,
         3 * 2.0**-10]  # fmt: skip


def _storage(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _diff(a: torch.Tensor, b: torch.Tensor) -> int:
    return int((a.cpu() != b.cpu()).sum())


def _neighbours(a: torch.Tensor, b: torch.Tensor) -> int:
    """Differing bytes that are adjacent codes of the same sign (a rounding-boundary flip)."""
    a, b = a.cpu().to(torch.int16), b.cpu().to(torch.int16)
    d = a != b
    same_sign = (a & 0x80) == (b & 0x80)
    return int((d & same_sign & ((a - b).abs() == 1)).sum())


def _fp8_nan(bits: torch.Tensor, fmt_name: str) -> torch.Tensor:
    low = bits & 0x7F
    if fmt_name == "e4m3fn":
        return low == 0x7F
    if fmt_name == "e5m2":
        return low > 0x7C
    return bits == 0x80


def _fp8_inf(bits: torch.Tensor, fmt_name: str) -> torch.Tensor:
    if fmt_name == "e5m2":
        return (bits & 0x7F) == 0x7C
    return torch.zeros_like(bits, dtype=torch.bool)


def _same_values(a: torch.Tensor, b: torch.Tensor) -> tuple[int, int]:
    """(elements whose values differ, NaN == NaN; elements with equal values but other bits)."""
    a, b = a.cpu(), b.cpu()
    both_nan = torch.isnan(a) & torch.isnan(b)
    differ = ~((a == b) | both_nan)
    ints = {2: torch.int16, 4: torch.int32}[a.element_size()]
    bit_diff = a.view(ints) != b.view(ints)
    return int(differ.sum()), int((bit_diff & ~differ).sum())


# --- part 1: vLLM's Triton kernel ----------------------------------------------------------------


# The finding these checks encode (benchmarks/RESULTS.md, "Engine cache writes"): vLLM's Triton
# kernel divides with Triton's `/`, which compiles to div.full.f32, an approximate division (at
# most 2 ulp from the exact quotient), where kvscale and vLLM's CUDA kernel divide exactly. On an
# H200 at scale 0.3, 177,543 bytes (2.0%) differed from the IEEE reference, each one code away.
# So the expectation is not "0 differing bytes" but: (1) the engine's bytes equal the reference
# written from the quotients Triton's `/` gives on this GPU (measured in isolation by the probe
# kernel below: nothing else may differ); (2) against the IEEE reference every differing byte is
# one code away, and (3) lies where a 2-ulp division error can change the e4m3 code, a set
# computed on the CPU from the IEEE quotient alone; (4) a power-of-two scale, whose quotient
# div.full.f32 computes exactly, differs nowhere.

_RISK_STEPS = 4
"""float32 steps each side of the IEEE quotient: 2 ulp of div.full.f32, doubled for a quotient
just above a power of two (the grid below it is twice as fine)."""


def _quotient_band(x: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The lowest and highest quotient a division within 2 ulp can give (IEEE on the CPU);
    a zero stays exactly zero (any division scheme keeps 0 / s = +-0)."""
    y = x.cpu().to(torch.float32) / scale.cpu().reshape(())
    lo, hi = y, y
    for _ in range(_RISK_STEPS):
        lo = torch.nextafter(lo, torch.tensor(-float("inf")))
        hi = torch.nextafter(hi, torch.tensor(float("inf")))
    zero = y == 0
    return torch.where(zero, y, lo), torch.where(zero, y, hi)


_DIVIDE: Any = None


def triton_quotients(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """``x / scale`` (float32) as Triton divides in vLLM's kernel: ``x`` loaded in its own dtype,
    the scale as a float32 scalar loaded from memory, Triton's `/` (div.full.f32 on NVIDIA GPUs;
    the interpreter's numpy division is exact). Computed on ``x``'s device, returned on the CPU."""
    global _DIVIDE
    import triton
    import triton.language as tl

    if _DIVIDE is None:

        @triton.jit
        def divide(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            value = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(out_ptr + offs, value / tl.load(s_ptr), mask=mask)

        _DIVIDE = divide
    flat = x.contiguous().reshape(-1)
    out = torch.empty(flat.shape, dtype=torch.float32, device=flat.device)
    s = scale.reshape(-1)[:1].to(device=flat.device, dtype=torch.float32).contiguous()
    block = 1024
    _DIVIDE[(triton.cdiv(flat.numel(), block),)](flat, s, out, flat.numel(), BLOCK=block)
    return out.reshape(x.shape).cpu()


def vllm_case(
    dtype_name: str,
    kv: str,
    scale_name: str,
    kind: str,
    seed: int,
    tokens: int,
    device: str,
    vllm_write: Any,
) -> dict[str, Any]:
    from kvscale.kernel import triton_cache as tc

    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dtype_name]
    fmt = resolve_kv_cache_dtype(kv).fp8
    assert fmt is not None
    values = VLLM_SCALES[scale_name]
    k_scale = torch.tensor(values, dtype=torch.float32)
    v_scale = torch.tensor([v * 1.5 for v in values], dtype=torch.float32)
    shape = (tokens, HEADS, HEAD_SIZE)
    key = make_stress_values(shape, kind=kind, dtype=dtype, scale=k_scale, fmt=fmt, generator=g)
    value = make_stress_values(shape, kind=kind, dtype=dtype, scale=v_scale, fmt=fmt, generator=g)
    blocks = tokens // BLOCK + 4
    slots = torch.randperm(blocks * BLOCK, generator=g)[:tokens].to(torch.int64)
    slots[torch.rand(tokens, generator=g) < 0.1] = -1
    poison = torch.randint(0, 256, (blocks, 2, BLOCK, HEADS, HEAD_SIZE), generator=g,
                           dtype=torch.uint8)  # fmt: skip

    def reference(kv_name: str, ks: torch.Tensor, vs: torch.Tensor) -> torch.Tensor:
        cache = poison.clone()
        reference_reshape_and_cache_flash(key, value, cache[:, 0], cache[:, 1], slots, kv_name,
                                          ks, vs)  # fmt: skip
        return cache

    def on_device(write: Any) -> torch.Tensor:
        dev = torch.device(device)
        cache = poison.to(dev)
        write(key.to(dev), value.to(dev), cache[:, 0], cache[:, 1], slots.to(dev), kv,
              k_scale.to(dev), v_scale.to(dev))  # fmt: skip
        if device == "cuda":
            torch.cuda.synchronize()
        return cache.cpu()

    def from_quotients(qk: torch.Tensor, qv: torch.Tensor) -> torch.Tensor:
        """The reference's e4m3 bytes of given float32 quotients (divided by 1: exact)."""
        cache = poison.clone()
        one = torch.ones(1)
        reference_reshape_and_cache_flash(qk, qv, cache[:, 0], cache[:, 1], slots, "fp8", one,
                                          one)  # fmt: skip
        return cache

    ref = reference(kv, k_scale, v_scale)
    # What vLLM's Triton kernel does by its code: e4m3 bytes for every quantized dtype string,
    # element 0 of the scale tensor for every head.
    model = reference("fp8", k_scale[:1], v_scale[:1])
    ours = on_device(tc.reshape_and_cache_flash)
    row: dict[str, Any] = {
        "dtype": dtype_name, "kv": kv, "scale": scale_name, "kind": kind, "tokens": tokens,
        "cache_bytes": poison.numel(),
        "kvscale_vs_ref": _diff(ours, ref),
    }  # fmt: skip
    if vllm_write is not None:
        theirs = on_device(vllm_write)
        # (1) Triton's division measured alone, on the same inputs and device.
        dev = torch.device(device)
        divided = from_quotients(
            triton_quotients(key.to(dev), k_scale[:1]), triton_quotients(value.to(dev), v_scale[:1])
        )
        # (3) The bytes a 2-ulp division error can move: the two ends of each quotient's band
        # written through the reference, compared (the cache's unwritten bytes never differ).
        k_lo, k_hi = _quotient_band(key, k_scale[:1])
        v_lo, v_hi = _quotient_band(value, v_scale[:1])
        at_risk = from_quotients(k_lo, v_lo) != from_quotients(k_hi, v_hi)
        differ = theirs != model
        row["vllm_vs_ref"] = _diff(theirs, ref)
        row["vllm_vs_model"] = int(differ.sum())
        row["vllm_vs_model_neighbours"] = _neighbours(theirs, model)
        row["vllm_vs_model_outside_risk"] = int((differ & ~at_risk).sum())
        row["vllm_vs_divided_model"] = _diff(theirs, divided)
        row["divided_vs_model"] = _diff(divided, model)
        row["model_vs_ref"] = _diff(model, ref)
        row["div_full_at_risk"] = int(at_risk.sum())
        bad = differ.flatten().nonzero().flatten()[:4].tolist()
        row["examples"] = [
            {"byte": i, "vllm": int(theirs.flatten()[i]), "model": int(model.flatten()[i]),
             "ref": int(ref.flatten()[i]), "divided": int(divided.flatten()[i])}
            for i in bad
        ]  # fmt: skip
    return row


# --- part 2: SGLang's write ----------------------------------------------------------------------


def sglang_case(
    dtype_name: str, fmt_name: str, scale_name: str, kind: str, seed: int, tokens: int, gpu: bool
) -> dict[str, Any]:
    g = torch.Generator().manual_seed(seed)
    dtype = DTYPES[dtype_name]
    fmt = FP8_FORMATS[fmt_name]
    s = SGLANG_SCALES[scale_name]
    s_t = torch.tensor(s, dtype=torch.float32)  # 0-d float32, as SGLang's layer.k_scale
    x = make_stress_values((tokens, HEADS, HEAD_SIZE), kind=kind, dtype=dtype,
                           scale=s_t.reshape(1), fmt=fmt, generator=g)  # fmt: skip
    installed = torch_cast_for(torch.__version__)
    emu = {
        "installed": sglang_cache_write(x, s_t, fmt, torch_cast=installed),
        "2.11": sglang_cache_write(x, s_t, fmt, torch_cast=TORCH_2_11),
        "2.14.1": sglang_cache_write(x, s_t, fmt, torch_cast=TORCH_2_14_1),
    }
    pinned, old = emu["2.14.1"].bits, emu["2.11"].bits
    old_nan = _fp8_nan(old, fmt_name) & ~torch.isnan(x)
    vllm_style = quantize_to_bits(x, s_t.reshape(1), fmt)
    row: dict[str, Any] = {
        "dtype": dtype_name, "pool": fmt_name, "scale": scale_name, "kind": kind,
        "elements": x.numel(),
        "became_nan_2_11": emu["2.11"].became_nan,
        "became_nan_2_14_1": emu["2.14.1"].became_nan,
        "became_inf": emu["2.14.1"].became_inf,
        "saturated_2_14_1": emu["2.14.1"].saturated,
        "emu_2_14_1_vs_2_11": _diff(pinned, old),
        "emu_2_14_1_vs_2_11_outside_nan": int(((pinned != old) & ~old_nan).sum()),
        "emu_2_14_1_vs_vllm_style": _diff(pinned, vllm_style),
        "emu_2_11_vs_vllm_style": _diff(old, vllm_style),
        "nan_bytes_2_14_1": int(_fp8_nan(pinned, fmt_name).sum()),
        "nan_bytes_vllm_style": int(_fp8_nan(vllm_style, fmt_name).sum()),
    }  # fmt: skip
    if not gpu:
        return row
    xg, sg = x.cuda(), s_t.cuda()
    native = xg.clone()
    native.div_(sg)  # SGLang's memory_pool.py:2927-2928, same operands
    row["div_vs_emu"], row["div_vs_emu_nan_payload"] = _same_values(
        native, emu["installed"].divided
    )
    # The other hypothesis: the float32 scale itself as the divisor.
    row["div_vs_float32_divisor"] = _same_values(native, (xg.float() / sg).to(dtype))[0]
    host = xg.clone()
    host.div_(s)  # a Python float: CUDA's CPU-scalar path
    row["host_div_vs_emu"] = _same_values(host, sglang_divide(x, s))[0]
    try:
        nbits = native.to(getattr(torch, fmt.torch_dtype)).view(torch.uint8).cpu()
    except (RuntimeError, TypeError) as exc:
        row["native_error"] = f"{type(exc).__name__}: {exc}"
        return row
    mism = nbits != emu["installed"].bits
    row["native_vs_emu_installed"] = int(mism.sum())
    row["native_vs_emu_installed_at_nan_input"] = int((mism & torch.isnan(x)).sum())
    row["native_vs_emu_2_14_1"] = _diff(nbits, pinned)
    row["native_vs_emu_2_14_1_outside_2_11_nan"] = int(((nbits != pinned) & ~old_nan).sum())
    row["native_vs_vllm_style"] = _diff(nbits, vllm_style)
    row["nan_bytes_native"] = int(_fp8_nan(nbits, fmt_name).sum())
    row["inf_bytes_native"] = int(_fp8_inf(nbits, fmt_name).sum())
    on_gpu = sglang_cache_write(xg, sg, fmt, torch_cast=TORCH_2_14_1)
    row["emu_gpu_vs_emu_cpu"] = _diff(on_gpu.bits, pinned)
    bad = mism.flatten().nonzero().flatten()[:4].tolist()
    flat = x.flatten()
    row["examples"] = [
        {"x": repr(float(flat[i])), "native": int(nbits.flatten()[i]),
         "emu": int(emu["installed"].bits.flatten()[i])}
        for i in bad
    ]  # fmt: skip
    return row


def sglang_probe(gpu: bool) -> list[dict[str, Any]]:
    """Hand-picked bf16 values through SGLang's write, scale 1.0 and no scale."""
    rows = []
    x = torch.tensor(PROBE, dtype=torch.float32).to(torch.bfloat16)
    installed = torch_cast_for(torch.__version__)
    for fmt_name in ("e4m3fn", "e5m2", "e4m3fnuz"):
        fmt = FP8_FORMATS[fmt_name]
        for scale in (torch.tensor(1.0), None):
            e_inst = sglang_cache_write(x, scale, fmt, torch_cast=installed).bits
            e_211 = sglang_cache_write(x, scale, fmt, torch_cast=TORCH_2_11).bits
            e_pin = sglang_cache_write(x, scale, fmt, torch_cast=TORCH_2_14_1).bits
            native = None
            if gpu:
                xg = x.cuda()
                if scale is not None:
                    xg.div_(scale.cuda())
                try:
                    native = xg.to(getattr(torch, fmt.torch_dtype)).view(torch.uint8).cpu()
                except (RuntimeError, TypeError):
                    native = None
            for i, v in enumerate(PROBE):
                rows.append({
                    "pool": fmt_name, "scale": "1.0" if scale is not None else "none",
                    "x": repr(v),
                    "bf16_bits": f"0x{int(x.view(torch.int16)[i]) & 0xFFFF:04x}",
                    "native": None if native is None else f"0x{int(native[i]):02x}",
                    "emu_installed": f"0x{int(e_inst[i]):02x}",
                    "emu_2_11": f"0x{int(e_211[i]):02x}", "emu_2_14_1": f"0x{int(e_pin[i]):02x}",
                })  # fmt: skip
    return rows


# --- the run -------------------------------------------------------------------------------------


def _check(name: str, expected: str, observed: Any, ok: bool | None) -> dict[str, Any]:
    return {"name": name, "expected": expected, "observed": observed, "ok": ok}


def _sum(rows: list[dict[str, Any]], key: str, **where: Any) -> int:
    return sum(int(r.get(key, 0)) for r in rows if all(r.get(k) in v for k, v in where.items()))


def checks_of(
    vrows: list[dict[str, Any]], srows: list[dict[str, Any]], gpu: bool, vllm_ok: bool
) -> list[dict[str, Any]]:
    out = [
        _check("kvscale Triton == CPU reference", "0 bytes", _sum(vrows, "kvscale_vs_ref"),
               _sum(vrows, "kvscale_vs_ref") == 0 if gpu else None),
        _check("SGLang emulation 2.14.1 differs from 2.11 only where 2.11 writes NaN",
               "0 bytes outside", _sum(srows, "emu_2_14_1_vs_2_11_outside_nan"),
               _sum(srows, "emu_2_14_1_vs_2_11_outside_nan") == 0),
    ]  # fmt: skip
    if gpu and vllm_ok:
        out += vllm_checks(vrows)
    elif gpu:
        out.append(_check("vLLM Triton kernel available", "loaded", "unavailable", False))
    if gpu:
        out += sglang_checks(srows)
    return out


def vllm_checks(vrows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The vLLM expectations (bf16/fp16 inputs; fp32 is reported): the findings (per-head
    scales collapse to head 0's, fp8_e5m2 stores e4m3 bytes) and the division finding as
    (1)-(4) above."""
    half = {"dtype": ("bf16", "fp16")}
    ph = {"scale": ("per-head",)}
    n_ph = sum(1 for r in vrows if r["scale"] == "per-head" and r["dtype"] in half["dtype"])
    ph_differ = sum(
        1 for r in vrows
        if r["scale"] == "per-head" and r["dtype"] in half["dtype"] and r["vllm_vs_ref"] > 0
    )  # fmt: skip
    n_e5 = sum(1 for r in vrows if r["kv"] == "fp8_e5m2" and r["dtype"] in half["dtype"])
    e5_differ = sum(
        1 for r in vrows
        if r["kv"] == "fp8_e5m2" and r["dtype"] in half["dtype"] and r["vllm_vs_ref"] > 0
    )  # fmt: skip
    differ = _sum(vrows, "vllm_vs_model", **half)
    neighbours = _sum(vrows, "vllm_vs_model_neighbours", **half)
    outside = _sum(vrows, "vllm_vs_model_outside_risk", **half)
    divided = _sum(vrows, "vllm_vs_divided_model", **half)
    pow2 = _sum(vrows, "vllm_vs_model", scale=("pow2",), **half)
    by_scale = ", ".join(
        f"{name} {_sum(vrows, 'vllm_vs_model', scale=(name,), **half):,}" for name in VLLM_SCALES
    )
    return [
        _check("vLLM == the e4m3 reference of Triton's own quotients (div.full.f32, measured "
               "alone), head 0's scale for every head, for fp8 and fp8_e5m2 (bf16/fp16)",
               "0 bytes", divided, divided == 0),
        _check("vLLM vs the IEEE e4m3 reference (head 0's scale): every differing byte is one "
               "code away", f"{differ:,} of {differ:,}", f"{neighbours:,} of {differ:,}",
               neighbours == differ),
        _check("... and lies where a 2-ulp division error can change the code (computed on the "
               "CPU)", "0 bytes outside", outside, outside == 0),
        _check("... and none for a power-of-two scale (an exact quotient)", "0 bytes", pow2,
               pow2 == 0),
        _check("vLLM vs the IEEE e4m3 reference, bytes by scale (the div.full.f32 finding; "
               "H200: 0.3 -> 177,543)", "reported", by_scale, None),
        _check("vLLM per-head != per-head reference (the finding)",
               f"all {n_ph} cases differ", f"{ph_differ} cases, "
               f"{_sum(vrows, 'vllm_vs_ref', kv=('fp8',), **half, **ph)} bytes",
               ph_differ == n_ph and n_ph > 0),
        _check("vLLM fp8_e5m2 != e5m2 reference (the finding)", f"all {n_e5} cases differ",
               f"{e5_differ} cases", e5_differ == n_e5 and n_e5 > 0),
        _check("vLLM vs its model, fp32 inputs", "reported",
               f"{_sum(vrows, 'vllm_vs_model', dtype=('fp32',))} bytes vs IEEE, "
               f"{_sum(vrows, 'vllm_vs_model_neighbours', dtype=('fp32',))} adjacent codes, "
               f"{_sum(vrows, 'vllm_vs_divided_model', dtype=('fp32',))} vs Triton's quotients",
               None),
    ]  # fmt: skip


def sglang_checks(srows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        _check("SGLang div_: divisor is model_dtype(s) (native == emulation)", "0 elements",
               _sum(srows, "div_vs_emu"), _sum(srows, "div_vs_emu") == 0),
        _check("SGLang div_ by a Python float (CPU scalar: x * fp32(1/s))", "0 elements",
               _sum(srows, "host_div_vs_emu"), _sum(srows, "host_div_vs_emu") == 0),
        _check(f"SGLang native (torch {torch.__version__}) == emulation for it", "0 bytes",
               _sum(srows, "native_vs_emu_installed"),
               _sum(srows, "native_vs_emu_installed") == 0),
        _check("SGLang native vs 2.14.1 emulation: only where 2.11 writes NaN",
               "0 bytes outside", _sum(srows, "native_vs_emu_2_14_1_outside_2_11_nan"),
               _sum(srows, "native_vs_emu_2_14_1_outside_2_11_nan") == 0),
        _check("SGLang emulation on GPU == on CPU", "0 bytes",
               _sum(srows, "emu_gpu_vs_emu_cpu"), _sum(srows, "emu_gpu_vs_emu_cpu") == 0),
        _check("SGLang native vs float32-scale divisor (shows bf16(s) matters)", "reported",
               _sum(srows, "div_vs_float32_divisor"), None),
        _check("SGLang div_ NaN payloads (same value, other bits)", "reported",
               _sum(srows, "div_vs_emu_nan_payload"), None),
        _check("SGLang native cast errors (pool dtype unsupported on this device)", "none",
               sorted({f"{r['dtype']}/{r['pool']}: {r['native_error']}" for r in srows
                       if "native_error" in r}) or "none", None),
    ]  # fmt: skip


def _table(rows: list[dict[str, Any]], group: tuple[str, ...], cols: list[str]) -> list[str]:
    agg: dict[tuple[Any, ...], dict[str, int]] = {}
    for r in rows:
        k = tuple(r[g] for g in group)
        a = agg.setdefault(k, dict.fromkeys(cols, 0))
        for c in cols:
            v = r.get(c)
            a[c] += int(v) if isinstance(v, (int, bool)) else 0
    head = [*group, *cols]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for k, a in agg.items():
        lines.append(" | ".join([*map(str, k), *(f"{a[c]:,}" for c in cols)]))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="write engine_kernel_check.json here")
    ap.add_argument("--tokens", type=int, default=None, help="tokens per vLLM case (GPU: 1024)")
    ap.add_argument(
        "--sglang-tokens", type=int, default=None, help="tokens per SGLang case (GPU: 256)"
    )
    ap.add_argument("--interpret", action="store_true", help="CPU dry run (see the docstring)")
    args = ap.parse_args(argv)
    t0 = time.time()
    gpu = not args.interpret
    if args.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    elif not torch.cuda.is_available():
        print("no CUDA device: use --interpret for a CPU dry run")
        return 3
    tokens = args.tokens or (1024 if gpu else 24)
    sglang_tokens = args.sglang_tokens or (256 if gpu else 24)
    device = "cuda" if gpu else "cpu"
    env: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version()}
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if gpu:
        env["device"] = torch.cuda.get_device_name()
        env["capability"] = list(torch.cuda.get_device_capability())
    print("env:", json.dumps(env))

    vllm_write = None
    vllm_info: dict[str, Any] = {}
    from kvscale.engine.vllm import cache_write as vcw

    try:
        kernel = vcw.load_vllm_kernel()
        vllm_info = {"origin": kernel.origin, "path": kernel.path, "version": kernel.version,
                     "sha256": kernel.sha256, "is_0_33_0": kernel.is_pinned}  # fmt: skip
        if gpu:
            vllm_write = vcw.reshape_and_cache_flash
    except vcw.VllmKernelUnavailableError as exc:
        vllm_info = {"error": exc.one_line()}
    print("vllm kernel:", json.dumps(vllm_info))

    vrows: list[dict[str, Any]] = []
    seed = 0
    dtypes = list(DTYPES) if gpu else ["bf16", "fp32"]
    for dtype_name in dtypes:
        for kv in ("fp8", "fp8_e5m2"):
            for scale_name in VLLM_SCALES:
                for kind in KINDS:
                    seed += 1
                    vrows.append(vllm_case(dtype_name, kv, scale_name, kind, seed, tokens,
                                           device, vllm_write))  # fmt: skip
    t1 = time.time()
    print(f"part 1 (vLLM / kvscale): {len(vrows)} cases in {t1 - t0:.1f}s")

    srows: list[dict[str, Any]] = []
    for dtype_name in DTYPES:
        for fmt_name in ("e4m3fn", "e5m2", "e4m3fnuz"):
            for scale_name in SGLANG_SCALES:
                for kind in (*KINDS, "heavy"):
                    seed += 1
                    srows.append(sglang_case(dtype_name, fmt_name, scale_name, kind, seed,
                                             sglang_tokens, gpu))  # fmt: skip
    probe = sglang_probe(gpu)
    print(f"part 2 (SGLang): {len(srows)} cases in {time.time() - t1:.1f}s")

    checks = checks_of(vrows, srows, gpu, vllm_write is not None)
    vcols = ["cache_bytes", "kvscale_vs_ref"]
    if vllm_write is not None:
        vcols += ["vllm_vs_ref", "vllm_vs_model", "vllm_vs_model_neighbours",
                  "vllm_vs_model_outside_risk", "vllm_vs_divided_model", "divided_vs_model",
                  "div_full_at_risk"]  # fmt: skip
    scols = ["elements", "became_nan_2_11", "saturated_2_14_1", "became_inf",
             "emu_2_14_1_vs_vllm_style"]  # fmt: skip
    if gpu:
        scols += ["div_vs_emu", "div_vs_float32_divisor", "native_vs_emu_installed",
                  "native_vs_emu_2_14_1", "native_vs_emu_2_14_1_outside_2_11_nan",
                  "nan_bytes_native", "native_vs_vllm_style"]  # fmt: skip
    print("\nvLLM 0.33.0 Triton kernel / kvscale (cache bytes differing; model = e4m3 bytes, "
          "scale element 0):")  # fmt: skip
    print("\n".join(_table(vrows, ("dtype", "kv", "scale"), vcols)))
    print(f"\nSGLang 0.5.23 write (installed torch {torch.__version__}; emulation on the CPU):")
    print("\n".join(_table(srows, ("dtype", "pool", "scale"), scols)))
    changed = [
        r for r in probe
        if len({v for v in (r["native"], r["emu_installed"], r["emu_2_14_1"]) if v}) > 1
    ]  # fmt: skip
    print(f"\nSGLang probe, bf16 values (rows where native / emulations differ: {len(changed)}):")
    pcols = ["pool", "scale", "x", "bf16_bits", "native", "emu_installed", "emu_2_11", "emu_2_14_1"]
    if changed:
        print(" | ".join(pcols))
        print(" | ".join("---" for _ in pcols))
    for r in changed:
        print(" | ".join(str(r[c]) for c in pcols))
    print("\nchecks:")
    for c in checks:
        mark = {True: "ok  ", False: "FAIL", None: "info"}[c["ok"]]
        print(f"  {mark} {c['name']}: expected {c['expected']}, observed {c['observed']}")
    elapsed = time.time() - t0
    print(f"\nelapsed {elapsed:.1f}s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        doc = {"schema": SCHEMA, "env": env, "vllm_kernel": vllm_info, "tokens": tokens,
               "sglang_tokens": sglang_tokens,
               "heads": HEADS, "head_size": HEAD_SIZE, "block_size": BLOCK,
               "interpret": args.interpret, "elapsed_s": round(elapsed, 1), "checks": checks,
               "vllm_cases": vrows, "sglang_cases": srows, "sglang_probe": probe}  # fmt: skip
        (args.out / "engine_kernel_check.json").write_text(json.dumps(doc, indent=1) + "\n")
    return 0 if all(c["ok"] is not False for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
