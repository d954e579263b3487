"""NVFP4 KV-cache write (vLLM 0.33.0 ``reshape_and_cache_nvfp4``) in Triton, for any CUDA GPU.

Writes the bytes :func:`kvscale.kernel.nvfp4.reference_reshape_and_cache_nvfp4` computes (same
arguments, same page layout), with vLLM's own arithmetic rather than a model of it:

* ``1.0f / k_scale`` is ``div.rn.f32`` (``tl.math.div_rn``), the IEEE division of the shipped
  kernel; ``rcp.approx.ftz.f32`` is the same PTX instruction (inline assembly), so the 1-ulp
  freedom of the hardware reciprocal is the GPU's own, as in vLLM; ``rcp.approx(6.0f)`` is the
  constant 0x3E2AAAAB that ptxas folded it to in vLLM's binary, ``rcp.approx(4.0f)`` is 0.25.
* Every product and fused multiply-add is written out as in the compiled CUDA (``tl.fma`` where
  the SASS has FFMA, plain products elsewhere), so fp-contraction cannot change a rounding, and the
  4over6 error is summed pair by pair in the kernel's order.
* Hopper has no ``cvt.rn.satfinite.e2m1x2.f32`` (sm_100+ only): the e2m1 code is emulated exactly
  from the round-to-nearest-even boundaries (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5; clip at 6),
  with the same special cases as the reference (NaN -> +6, sign of zero kept). The e4m3 block
  scale uses the native ``cvt.rn.satfinite.e4m3x2.f32`` (sm_89+).

One program quantizes ``block_g`` groups of 16 elements of K and the same of V; groups are
numbered token-major, so a program reads whole rows of each token. Everything that fixes the
layout (strides, heads, head size, block size, variant) is a compile-time constant.

Under ``TRITON_INTERPRET=1`` (tests) the reciprocal is an IEEE division, since the interpreter
cannot run PTX; Triton is imported here only, and only if installed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch

from kvscale.kernel.jit import LazyKernel
from kvscale.kernel.nvfp4 import (
    NVFP4ArgumentError,
    NVFP4PageLayout,
    validate_nvfp4_write_args,
)

try:  # pragma: no cover - exercised by the environment, not by logic
    import triton  # type: ignore[import-untyped,unused-ignore]
    import triton.language as tl  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover
    triton = None
    tl = None

__all__ = ["NVFP4KernelConfig", "reshape_and_cache_nvfp4", "rcp_approx_ftz"]


def _nvfp4_write_kernel(
    key_ptr,
    value_ptr,
    cache_ptr,
    slot_ptr,
    k_scale_ptr,
    v_scale_ptr,
    n_groups,
    KEY_T: tl.constexpr,  # key stride over tokens (elements)
    VAL_T: tl.constexpr,
    PAGE: tl.constexpr,  # kv_cache stride over blocks (bytes)
    NUM_HEADS: tl.constexpr,
    HEAD_SIZE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    FOUR_OVER_SIX: tl.constexpr,
    APPROX_RCP: tl.constexpr,  # rcp.approx.ftz.f32 (GPU) or an IEEE division (interpreter)
    BLOCK_G: tl.constexpr,  # groups of 16 per program (power of two)
):
    G: tl.constexpr = HEAD_SIZE // 16  # block scales per head
    DATA: tl.constexpr = HEAD_SIZE // 2
    SIDE: tl.constexpr = NUM_HEADS * BLOCK_SIZE * (DATA + G)  # bytes of K (or V) in a page
    SCALES: tl.constexpr = NUM_HEADS * BLOCK_SIZE * DATA  # where a side's scales start
    PER_ROW: tl.constexpr = G // 4  # V-scale swizzle: groups per swizzled row
    q = tl.program_id(0).to(tl.int64) * BLOCK_G + tl.arange(0, BLOCK_G)
    ok = q < n_groups
    tok = q // (NUM_HEADS * G)
    hg = q % (NUM_HEADS * G)  # head * G + group: the group's place in the token's row
    head = hg // G
    grp = hg % G
    slot = tl.load(slot_ptr + tok, mask=ok, other=-1)
    live = ok & (slot >= 0)
    blk = slot // BLOCK_SIZE
    t = slot % BLOCK_SIZE
    page = cache_ptr + blk * PAGE
    col = tl.arange(0, 16)
    byte = tl.arange(0, 8)
    data_off = (head * BLOCK_SIZE + t) * DATA + grp * 8
    one = tl.full([BLOCK_G], 1.0, tl.float32)
    for SIDE_I in tl.static_range(2):
        if SIDE_I == 0:
            src = key_ptr + tok[:, None] * KEY_T + hg[:, None] * 16 + col[None, :]
            scale = tl.load(k_scale_ptr)
        else:
            src = value_ptr + tok[:, None] * VAL_T + hg[:, None] * 16 + col[None, :]
            scale = tl.load(v_scale_ptr)
        x = tl.load(src, mask=ok[:, None], other=0.0).to(tl.float32)
        g = tl.math.div_rn(one, scale)  # vLLM: 1.0f / *k_scale_ptr, IEEE
        if APPROX_RCP:
            rcp_g = tl.inline_asm_elementwise(
                "rcp.approx.ftz.f32 $0, $1;", "=f,f", [g], dtype=tl.float32, is_pure=True, pack=1
            )
        else:
            rcp_g = 1.0 / g
        # m = max |x| over the group (__hmax2 skips NaN; so does tl.maximum on the GPU).
        a = tl.abs(x)
        a0, a1 = tl.split(tl.reshape(a, (BLOCK_G, 8, 2)))
        a = tl.maximum(a0, a1)
        a0, a1 = tl.split(tl.reshape(a, (BLOCK_G, 4, 2)))
        a = tl.maximum(a0, a1)
        a0, a1 = tl.split(tl.reshape(a, (BLOCK_G, 2, 2)))
        a = tl.maximum(a0, a1)
        a0, a1 = tl.split(a)
        m = tl.maximum(a0, a1)
        if FOUR_OVER_SIX:
            # Both candidates at once: column 0 divides by 6, column 1 by 4.
            rcp_d = tl.where(tl.arange(0, 2) == 0, 0.16666667163372039795, 0.25)
            sf_fp8 = ((m[:, None] * rcp_d[None, :]) * g[:, None]).to(tl.float8e4nv)
            sf = sf_fp8.to(tl.float32)
            prod = sf * rcp_g[:, None]
            if APPROX_RCP:
                r = tl.inline_asm_elementwise(
                    "rcp.approx.ftz.f32 $0, $1;", "=f,f", [prod], dtype=tl.float32,
                    is_pure=True, pack=1,
                )  # fmt: skip
            else:
                r = 1.0 / prod
            os2 = tl.where(sf != 0.0, r, 0.0)
            if APPROX_RCP:
                r = tl.inline_asm_elementwise(
                    "rcp.approx.ftz.f32 $0, $1;", "=f,f", [os2], dtype=tl.float32,
                    is_pure=True, pack=1,
                )  # fmt: skip
            else:
                r = 1.0 / os2
            dq2 = tl.where(os2 != 0.0, r, 0.0)
            # nvfp4_reconstruction_error: R(x * os) by round_to_nearest_e2m1's thresholds, sign
            # of x * os; d = fma(R, dq, -x) (d = x when os == 0); pairs fma(dx, dx, dy * dy).
            x3 = x[:, None, :]
            y = x3 * os2[:, :, None]
            ay = tl.abs(y)
            mag = (
                (ay > 0.25).to(tl.int32) + (ay >= 0.75).to(tl.int32)
                + (ay > 1.25).to(tl.int32) + (ay >= 1.75).to(tl.int32)
                + (ay > 2.5).to(tl.int32) + (ay >= 3.5).to(tl.int32) + (ay > 5.0).to(tl.int32)
            )  # fmt: skip
            mag = tl.where(y != y, 7, mag)
            rounded = tl.where(mag < 4, mag.to(tl.float32) * 0.5,
                               tl.where(mag == 7, 6.0, mag.to(tl.float32) - 2.0))  # fmt: skip
            sign = y.to(tl.int32, bitcast=True) & -2147483648
            rounded = (rounded.to(tl.int32, bitcast=True) | sign).to(tl.float32, bitcast=True)
            d = tl.fma(rounded, dq2[:, :, None], -x3)
            d = tl.where((os2 == 0.0)[:, :, None], x3, d)
            dx, dy = tl.split(tl.reshape(d, (BLOCK_G, 2, 8, 2)))
            p = tl.fma(dx, dx, dy * dy)
            # err = ((0 + p0) + p1) + ... + p7, in this order: columns picked out by splits.
            pe, po = tl.split(tl.reshape(p, (BLOCK_G, 2, 4, 2)))  # (0,2,4,6), (1,3,5,7)
            p04, p26 = tl.split(tl.reshape(pe, (BLOCK_G, 2, 2, 2)))
            p15, p37 = tl.split(tl.reshape(po, (BLOCK_G, 2, 2, 2)))
            p0, p4 = tl.split(p04)
            p2, p6 = tl.split(p26)
            p1, p5 = tl.split(p15)
            p3, p7 = tl.split(p37)
            err = tl.full([BLOCK_G, 2], 0.0, tl.float32) + p0
            err = err + p1
            err = err + p2
            err = err + p3
            err = err + p4
            err = err + p5
            err = err + p6
            err = err + p7
            err6, err4 = tl.split(err)
            use4 = err4 < err6  # ties and NaN keep 6
            sf_bits6, sf_bits4 = tl.split(sf_fp8.to(tl.uint8, bitcast=True))
            os6, os4 = tl.split(os2)
            sf_bits = tl.where(use4, sf_bits4, sf_bits6)
            os = tl.where(use4, os4, os6)
        else:
            sf_fp8 = ((m * 0.16666667163372039795) * g).to(tl.float8e4nv)
            sf = sf_fp8.to(tl.float32)
            prod = sf * rcp_g
            if APPROX_RCP:
                r = tl.inline_asm_elementwise(
                    "rcp.approx.ftz.f32 $0, $1;", "=f,f", [prod], dtype=tl.float32,
                    is_pure=True, pack=1,
                )  # fmt: skip
            else:
                r = 1.0 / prod
            os = tl.where(sf != 0.0, r, 0.0)
            sf_bits = sf_fp8.to(tl.uint8, bitcast=True)
        # cvt.rn.satfinite.e2m1x2.f32, emulated: nearest e2m1 code, ties to even, clip at 6,
        # NaN -> +6 (0x7), sign kept for zeros.
        y = x * os[:, None]
        ay = tl.abs(y)
        mag = (
            (ay > 0.25).to(tl.int32) + (ay >= 0.75).to(tl.int32)
            + (ay > 1.25).to(tl.int32) + (ay >= 1.75).to(tl.int32)
            + (ay > 2.5).to(tl.int32) + (ay >= 3.5).to(tl.int32) + (ay > 5.0).to(tl.int32)
        )  # fmt: skip
        nan = y != y
        negative = (y.to(tl.int32, bitcast=True) < 0) & ~nan
        code = tl.where(nan, 7, mag) | tl.where(negative, 8, 0)
        lo, hi = tl.split(tl.reshape(code, (BLOCK_G, 8, 2)))  # element 2k low nibble
        packed = (lo | (hi << 4)).to(tl.uint8)
        side = page + SIDE_I * SIDE
        tl.store(side[:, None] + data_off[:, None] + byte[None, :], packed, mask=live[:, None])
        if SIDE_I == 0:
            scale_off = (head * BLOCK_SIZE + t) * G + grp
        else:
            # swizzle_scale_offset (trtllm-gen V scales).
            row = (t // 4) * 4 + grp // PER_ROW
            scale_off = (head * BLOCK_SIZE + row) * G + (grp % PER_ROW) * 4 + t % 4
        tl.store(side + SCALES + scale_off, sf_bits, mask=live)


def _rcp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = i < n
    x = tl.load(x_ptr + i, mask=ok, other=1.0)
    y = tl.inline_asm_elementwise(
        "rcp.approx.ftz.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1
    )
    tl.store(y_ptr + i, y, mask=ok)


_JIT_OPTIONS: dict[str, Any] = {
    "do_not_specialize": ["n_groups"],
    "do_not_specialize_on_alignment": ["slot_ptr", "k_scale_ptr", "v_scale_ptr"],
}
_KERNEL = LazyKernel(_nvfp4_write_kernel, "the GPU NVFP4 cache-write kernel", **_JIT_OPTIONS)
_RCP_KERNEL = LazyKernel(_rcp_kernel, "rcp_approx_ftz")


def rcp_approx_ftz(x: torch.Tensor) -> torch.Tensor:
    """``rcp.approx.ftz.f32`` of every element of a float32 CUDA tensor, computed by its GPU: the
    instruction behind vLLM's ``reciprocal_approximate_ftz``. For checking the reference's
    reciprocal model (``benchmarks/gpu_nvfp4_check.py``)."""
    if x.dtype != torch.float32 or x.device.type != "cuda":
        raise NVFP4ArgumentError(
            f"rcp_approx_ftz takes a float32 CUDA tensor, got {x.dtype} on {x.device}"
        )
    kernel = _RCP_KERNEL.get(interpret=False)
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    block = 1024
    with torch.cuda.device(x.device):
        kernel[(triton.cdiv(flat.numel(), block),)](flat, out, flat.numel(), BLOCK=block)
    return out.view(x.shape)


@dataclass(frozen=True)
class NVFP4KernelConfig:
    """Groups of 16 elements per program (a power of two) and warps per program."""

    block_g: int = 64
    num_warps: int = 4


# Benchmarks set this to try another tile.
_config_override: NVFP4KernelConfig | None = None


def _constexprs(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache: torch.Tensor,
    layout: NVFP4PageLayout,
    kv_cache_dtype: str,
    approx_rcp: bool,
    config: NVFP4KernelConfig,
) -> dict[str, Any]:
    return {
        "KEY_T": key.stride(0),
        "VAL_T": value.stride(0),
        "PAGE": kv_cache.stride(0),
        "NUM_HEADS": layout.num_kv_heads,
        "HEAD_SIZE": layout.head_size,
        "BLOCK_SIZE": layout.block_size,
        "FOUR_OVER_SIX": kv_cache_dtype == "nvfp4_4over6",
        "APPROX_RCP": approx_rcp,
        "BLOCK_G": config.block_g,
    }


def reshape_and_cache_nvfp4(
    key: torch.Tensor,
    value: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    """Write key/value into one layer's NVFP4 cache on the GPU, as vLLM 0.33.0 does on SM100.

    Arguments as :func:`kvscale.kernel.nvfp4.reference_reshape_and_cache_nvfp4` (same checks,
    same typed errors): key/value ``[num_tokens, num_kv_heads, head_size]`` bf16/fp16, kv_cache
    uint8 ``[num_blocks, 2 * num_kv_heads, block_size, head_size * 9 / 16]`` head-major pages,
    slot_mapping int64 (negative = padding), k_scale/v_scale float32 with one element. Runs
    asynchronously on the current stream; slots past the cache are not checked (as in vLLM).
    CPU tensors run in Triton's interpreter when ``TRITON_INTERPRET=1``.

    Raises NVFP4ArgumentError (and its subclasses), TritonUnavailableError.
    """
    layout = validate_nvfp4_write_args(
        key, value, kv_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    interpret = key.device.type == "cpu"
    if interpret and os.environ.get("TRITON_INTERPRET") != "1":
        raise NVFP4ArgumentError(
            "reshape_and_cache_nvfp4 runs on CUDA tensors; use reference_reshape_and_cache_nvfp4 "
            "on the CPU (or set TRITON_INTERPRET=1 to run the kernel in Triton's interpreter)"
        )
    kernel = _KERNEL.get(interpret)
    n = slot_mapping.shape[0]
    if n == 0:
        return
    config = _config_override or NVFP4KernelConfig()
    n_groups = n * layout.num_kv_heads * layout.scale_dim
    consts = _constexprs(key, value, kv_cache, layout, kv_cache_dtype, not interpret, config)
    grid = (triton.cdiv(n_groups, config.block_g),)
    if interpret:
        kernel[grid](key, value, kv_cache, slot_mapping, k_scale, v_scale, n_groups, **consts)
        return
    with torch.cuda.device(key.device):
        kernel[grid](
            key, value, kv_cache, slot_mapping, k_scale, v_scale, n_groups,
            num_warps=config.num_warps, num_stages=1, **consts,
        )  # fmt: skip
