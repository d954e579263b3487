"""MLA latent-cache write (vLLM ``concat_and_cache_mla``) in Triton, and its launcher.

Same signature, checks and bytes as :func:`kvscale.kernel.mla.reference_concat_and_cache_mla`
(semantics and upstream citations there). vLLM's CUDA kernel gives each token one block of up to
512 threads, one element per thread and loop step, 2-byte loads and 1-byte stores
(``concat_and_cache_mla_kernel``; ``LDG.E.U16``/``STG.E.U8`` in the 0.33.0 SASS). This one is
built for bandwidth, as ``triton_cache.py`` is:

* one program writes ``block_t`` whole tokens: a ``[block_t, kv_lora_rank]`` tile and a
  ``[block_t, rope_dim]`` tile, contiguous along the row, so loads and stores vectorise (16-byte
  accesses where the strides allow); the two parts land at offsets 0 and ``kv_lora_rank`` of the
  same cache row;
* every stride and the row geometry are compile-time constants (one compile per cache layout),
  so row offsets are provably 16-byte multiples for the usual 512 + 64 layout;
* the kv_c/k_pe loads do not wait on the slot load; padding is masked at the store;
* ``tl.math.div_rn`` (IEEE ``div.rn.f32``) rather than ``/`` (``div.full.f32``, approximate);
  with ``skip_scale`` there is no division and the scale is not read, as in vLLM;
* the launch goes straight to the compiled kernel's C launcher with integer pointers (Triton's
  generic ``kernel[grid]`` path costs tens of microseconds per call; see ``triton_cache.py``).

Triton is imported here only, and only if installed; ``import kvscale.kernel`` works without
it. CPU tensors run in Triton's interpreter when ``TRITON_INTERPRET=1`` (tests only: its
fp8 cast is not the GPU's).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

import torch

from kvscale.kernel.formats import UnsupportedOnDeviceError
from kvscale.kernel.jit import LazyKernel, TritonUnavailableError, require_triton
from kvscale.kernel.mla import MLAWriteLayout, validate_mla_write_args
from kvscale.kernel.reference import CacheWriteArgumentError
from kvscale.kernel.triton_cache import _current_device, _current_stream, _next_pow2

try:  # pragma: no cover - exercised by the environment, not by logic
    import triton.language as tl  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover
    tl = None

__all__ = [
    "MLAKernelConfig",
    "TritonUnavailableError",
    "concat_and_cache_mla",
    "default_mla_config",
]

_MODE_COPY = 0
_MODE_E4M3 = 1
_MODE_E5M2 = 2
_FORMAT_MODE = {"e4m3fn": _MODE_E4M3, "e5m2": _MODE_E5M2}


def _mla_write_kernel(
    kv_c_ptr,
    k_pe_ptr,
    cache_ptr,
    slot_ptr,
    scale_ptr,
    n_tokens,
    KVC_T: tl.constexpr,  # kv_c stride over tokens (elements)
    KPE_T: tl.constexpr,  # k_pe stride over tokens
    C_B: tl.constexpr,  # kv_cache stride over blocks
    C_P: tl.constexpr,  # kv_cache stride over slots within a block
    LORA: tl.constexpr,  # kv_lora_rank
    ROPE: tl.constexpr,  # rope_dim
    BLOCK_SIZE: tl.constexpr,  # slots per cache block
    MODE: tl.constexpr,  # 0 plain copy, 1 e4m3fn, 2 e5m2
    SKIP_SCALE: tl.constexpr,  # convert without dividing (vLLM's skip_scale)
    BLOCK_T: tl.constexpr,  # tokens per program
    BLOCK_L: tl.constexpr,  # next power of two >= LORA
    BLOCK_R: tl.constexpr,  # next power of two >= ROPE
):
    tok = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    tok_ok = tok < n_tokens
    # Issued before, and independent of, the row loads so that all loads of the tile are in
    # flight together; padding (slot < 0) is masked at the store.
    slot = tl.load(slot_ptr + tok, mask=tok_ok, other=-1)
    t2 = tok.to(tl.int64)[:, None]
    li = tl.arange(0, BLOCK_L)[None, :]
    ri = tl.arange(0, BLOCK_R)[None, :]
    live = (slot >= 0)[:, None]
    if LORA == BLOCK_L:
        c_ld = tok_ok[:, None]
        c_st = live
    else:
        c_ld = tok_ok[:, None] & (li < LORA)
        c_st = live & (li < LORA)
    if ROPE == BLOCK_R:
        p_ld = tok_ok[:, None]
        p_st = live
    else:
        p_ld = tok_ok[:, None] & (ri < ROPE)
        p_st = live & (ri < ROPE)
    c = tl.load(kv_c_ptr + t2 * KVC_T + li, mask=c_ld)
    p = tl.load(k_pe_ptr + t2 * KPE_T + ri, mask=p_ld)

    # vLLM: block = slot // block_size, offset = slot % block_size; with contiguous blocks
    # (C_B == BLOCK_SIZE * C_P, the usual case) the two collapse to slot * C_P.
    if C_B == BLOCK_SIZE * C_P:
        row = slot * C_P
    else:
        row = (slot // BLOCK_SIZE) * C_B + (slot % BLOCK_SIZE) * C_P
    row_ptr = cache_ptr + row[:, None]

    if MODE == 0:
        cq = c
        pq = p
    else:
        cf = c.to(tl.float32)
        pf = p.to(tl.float32)
        if not SKIP_SCALE:
            s = tl.load(scale_ptr)
            # The IEEE quotient (div.rn.f32), as the CUDA kernel's scaled_convert computes it.
            cf = tl.math.div_rn(cf, s)
            pf = tl.math.div_rn(pf, s)
        # fp32 -> fp8 lowers to cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+: round to nearest
        # even, saturate to the finite max (inf too), NaN -> NaN. The cache is uint8 storage.
        if MODE == 1:
            cq = cf.to(tl.float8e4nv).to(tl.uint8, bitcast=True)
            pq = pf.to(tl.float8e4nv).to(tl.uint8, bitcast=True)
        else:
            cq = cf.to(tl.float8e5).to(tl.uint8, bitcast=True)
            pq = pf.to(tl.float8e5).to(tl.uint8, bitcast=True)
    tl.store(row_ptr + li, cq, mask=c_st)
    tl.store(row_ptr + LORA + ri, pq, mask=p_st)


_JIT_OPTIONS: dict[str, Any] = {
    # n_tokens changes every call; specializing on it (==1, %16) would recompile.
    "do_not_specialize": ["n_tokens"],
    # Scalar/gathered loads only: their alignment buys nothing and would split the plan key.
    "do_not_specialize_on_alignment": ["slot_ptr", "scale_ptr"],
}
_KERNEL = LazyKernel(_mla_write_kernel, "the GPU MLA cache-write kernel", **_JIT_OPTIONS)


@dataclass(frozen=True)
class MLAKernelConfig:
    """Tile of one compiled variant: a program writes ``block_t`` whole latent rows with
    ``num_warps`` warps."""

    block_t: int
    num_warps: int


# 16 kv_c elements per thread (two 16-byte bf16 loads, one 16-byte fp8 store), tiles of about
# 1024 kv_c elements: the shape that measured best for reshape_and_cache_flash on the H200
# (benchmarks/KERNEL_NOTES.md). benchmarks/bench_mla_kernel.py --sweep times the alternatives.
_ELEMS_PER_THREAD = 16
_TILE = 1024


def default_mla_config(kv_lora_rank: int, rope_dim: int) -> MLAKernelConfig:
    """The tile for rows of ``kv_lora_rank + rope_dim`` values (2 tokens x 2 warps at 512 + 64)."""
    del rope_dim  # the k_pe part rides along with the kv_c tile's tokens
    block_l = _next_pow2(kv_lora_rank)
    block_t = max(1, _TILE // block_l)
    num_warps = max(1, min(16, (block_t * block_l) // (32 * _ELEMS_PER_THREAD)))
    return MLAKernelConfig(block_t=block_t, num_warps=num_warps)


def _constexprs(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    cache: torch.Tensor,
    mode: int,
    skip_scale: bool,
    config: MLAKernelConfig,
) -> dict[str, Any]:
    # Order = the kernel's constexpr parameters, in signature order (the raw launcher is
    # positional).
    return {
        "KVC_T": kv_c.stride(0),
        "KPE_T": k_pe.stride(0),
        "C_B": cache.stride(0),
        "C_P": cache.stride(1),
        "LORA": kv_c.shape[1],
        "ROPE": k_pe.shape[1],
        "BLOCK_SIZE": cache.shape[1],
        "MODE": mode,
        "SKIP_SCALE": bool(skip_scale) and mode != _MODE_COPY,
        "BLOCK_T": config.block_t,
        "BLOCK_L": _next_pow2(kv_c.shape[1]),
        "BLOCK_R": _next_pow2(k_pe.shape[1]),
    }


def _as_storage(cache: torch.Tensor, mode: int) -> torch.Tensor:
    # The kernel stores fp8 bits through a uint8 pointer; a torch float8 cache is the same bytes.
    if mode != _MODE_COPY and cache.dtype != torch.uint8:
        return cache.view(torch.uint8)
    return cache


def _kernel_mode(layout: MLAWriteLayout, kv_cache_dtype: str) -> int:
    fmt = layout.kv.fp8
    if fmt is None:
        return _MODE_COPY
    if not fmt.gpu_writable:
        raise UnsupportedOnDeviceError(
            f"an NVIDIA GPU cannot write e4m3fnuz (kv_cache_dtype {kv_cache_dtype!r}): it is the "
            "ROCm gfx94x format and Triton's NVIDIA backend has no store for it. Compute its bits "
            "with kvscale.kernel.reference_concat_and_cache_mla on the CPU, or use fp8_e4m3."
        )
    return _FORMAT_MODE[fmt.name]


# Benchmarks and tests set this to force one tile (None: default_mla_config).
_config_override: MLAKernelConfig | None = None


def _prepare(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool,
) -> tuple[MLAWriteLayout, int, MLAKernelConfig]:
    layout = validate_mla_write_args(
        kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale
    )
    mode = _kernel_mode(layout, kv_cache_dtype)
    config = _config_override or default_mla_config(layout.kv_lora_rank, layout.rope_dim)
    return layout, mode, config


class _Plan:
    """One compiled specialization (layout, dtypes, format, skip_scale, pointer alignment) and
    everything needed to start it through the compiled kernel's own C launcher (the calling
    convention is documented in ``triton_cache._Plan.launch``)."""

    __slots__ = ("block_t", "_raw", "_function", "_coop", "_pdl", "_packed", "_tail", "_runner")

    def __init__(
        self,
        mode: int,
        skip_scale: bool,
        config: MLAKernelConfig,
        kv_c: torch.Tensor,
        k_pe: torch.Tensor,
        kv_cache: torch.Tensor,
        slot_mapping: torch.Tensor,
        scale: torch.Tensor,
    ) -> None:
        self.block_t = config.block_t
        cache = _as_storage(kv_cache, mode)
        consts = _constexprs(kv_c, k_pe, cache, mode, skip_scale, config)
        # Compiled once through Triton's generic path (warmup: compile, no launch) so that
        # Triton derives the signature and pointer-alignment specialization from real tensors.
        compiled = _KERNEL.get(interpret=False).warmup(
            kv_c, k_pe, cache, slot_mapping, scale, 2,
            grid=(1, 1, 1), num_warps=config.num_warps, num_stages=1, **consts,
        )  # fmt: skip
        if hasattr(compiled, "result"):  # a future under Triton's async compile mode
            compiled = compiled.result()
        runner = compiled.run  # loads the module on this device
        self._function = compiled.function
        self._packed = compiled.packed_metadata
        self._tail = tuple(consts.values())
        md = compiled.metadata
        scratch = getattr(md, "global_scratch_size", 0) or getattr(md, "profile_scratch_size", 0)
        raw = getattr(runner, "launch", None)
        self._raw: Any = None
        self._runner: Any = None
        if raw is not None and not scratch and hasattr(runner, "launch_pdl"):
            self._raw = raw
            self._coop = runner.launch_cooperative_grid
            self._pdl = runner.launch_pdl
        else:  # another Triton version's launcher: CompiledKernel.run's argument order
            self._runner = runner

    def launch(self, n: int, stream: int, cp: int, pp: int, kp: int, sp: int, scp: int) -> None:
        gx = (n + self.block_t - 1) // self.block_t
        if self._raw is not None:
            self._raw(gx, 1, 1, stream, self._function, self._coop, self._pdl, None, None,
                      self._packed, None, None, None, cp, pp, kp, sp, scp, n,
                      *self._tail)  # fmt: skip
        else:
            self._runner(gx, 1, 1, stream, self._function, self._packed, None, None, None,
                         cp, pp, kp, sp, scp, n, *self._tail)  # fmt: skip


_plans: dict[tuple[Any, ...], _Plan] = {}
_plans_lock = threading.Lock()


def _interpret(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool,
) -> None:
    """Run the same kernel under Triton's CPU interpreter (tests only)."""
    _, mode, cfg = _prepare(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale)
    n = slot_mapping.shape[0]
    if n == 0:
        return
    cache = _as_storage(kv_cache, mode)
    consts = _constexprs(kv_c, k_pe, cache, mode, skip_scale, cfg)
    kernel = _KERNEL.get(interpret=True)
    kernel[(-(-n // cfg.block_t), 1, 1)](kv_c, k_pe, cache, slot_mapping, scale, n, **consts)


def _new_plan(
    pkey: tuple[Any, ...],
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool,
) -> _Plan:
    _, mode, config = _prepare(
        kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale
    )
    if kv_c.get_device() < 0:
        raise CacheWriteArgumentError(
            "concat_and_cache_mla runs on CUDA tensors; use reference_concat_and_cache_mla on "
            "the CPU (or set TRITON_INTERPRET=1 to run the kernel in Triton's interpreter)"
        )
    require_triton("the GPU MLA cache-write kernel")
    if mode != _MODE_COPY and torch.cuda.get_device_capability(kv_c.device) < (8, 9):
        raise UnsupportedOnDeviceError(
            f"writing {kv_cache_dtype} needs native FP8 conversion (compute capability 8.9+); "
            f"this GPU is {torch.cuda.get_device_capability(kv_c.device)}"
        )
    with _plans_lock, torch.cuda.device(kv_c.get_device()):
        plan = _plans.get(pkey)
        if plan is None:
            plan = _Plan(mode, skip_scale, config, kv_c, k_pe, kv_cache, slot_mapping, scale)
            _plans[pkey] = plan
    return plan


def concat_and_cache_mla(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool = False,
) -> None:
    """Write ``[kv_c | k_pe]`` rows into an MLA cache on the GPU (vLLM ``concat_and_cache_mla``).

    Arguments as :func:`kvscale.kernel.mla.reference_concat_and_cache_mla` (kv_c
    ``[num_tokens, kv_lora_rank]``, k_pe ``[num_tokens, rope_dim]`` of the same dtype, rows
    stride 1; kv_cache ``[num_blocks, block_size, kv_lora_rank + rope_dim]``; slot_mapping int64
    ``[n]``; scale float32, one element; ``fp8``/``fp8_e4m3``/``fp8_e5m2`` or a plain copy for
    ``auto``/``bfloat16``/``float16``). Asynchronous on the current stream, like any CUDA op;
    bit-identical to the reference.

    Raises UnknownKVCacheDtypeError, CacheWriteArgumentError, UnsupportedOnDeviceError
    (``fp8_e4m3fnuz``; GPUs before sm_89), TritonUnavailableError. As in vLLM, slots past the
    end of the cache (and repeated slots) are not checked on the GPU.
    """
    try:
        cp = kv_c.data_ptr()
        pp = k_pe.data_ptr()
        kp = kv_cache.data_ptr()
        dev = kv_c.get_device()
        # Everything the compiled code or the argument checks depend on, except the token count:
        # dtypes, strides, the non-token dims, devices, skip_scale (and its type: 1 == True), and
        # the 16-byte alignment of the three pointers Triton specialized the compiled code on.
        pkey = (
            kv_cache_dtype, skip_scale, type(skip_scale), kv_c.dtype, k_pe.dtype, kv_cache.dtype,
            slot_mapping.dtype, scale.dtype, kv_c.stride(), k_pe.stride(), kv_cache.stride(),
            kv_c.shape[1:], k_pe.shape[1:], kv_cache.shape[1:], scale.shape,
            slot_mapping.stride(), (cp & 15) | (pp & 15) << 4 | (kp & 15) << 8, dev,
            k_pe.get_device(), kv_cache.get_device(), slot_mapping.get_device(),
            scale.get_device(), _config_override,
        )  # fmt: skip
        plan = _plans.get(pkey)
    except (AttributeError, TypeError):  # not tensors: the shared checks say which and why
        validate_mla_write_args(
            kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale
        )
        raise
    if plan is None:
        if dev < 0 and os.environ.get("TRITON_INTERPRET") == "1":
            _interpret(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale)
            return
        plan = _new_plan(
            pkey, kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale
        )
    n = slot_mapping.shape[0]
    if n > kv_c.shape[0] or n > k_pe.shape[0]:
        raise CacheWriteArgumentError(
            f"slot_mapping has {n} entries but kv_c/k_pe have {kv_c.shape[0]}/{k_pe.shape[0]} "
            "tokens"
        )
    if n == 0:
        return
    if dev == _current_device():
        plan.launch(n, _current_stream(dev), cp, pp, kp, slot_mapping.data_ptr(),
                    scale.data_ptr())  # fmt: skip
    else:
        with torch.cuda.device(dev):
            plan.launch(n, _current_stream(dev), cp, pp, kp, slot_mapping.data_ptr(),
                        scale.data_ptr())  # fmt: skip
