"""FP8 KV-cache write kernel (vLLM ``reshape_and_cache_flash``) in Triton, and its launcher.

Semantics mirror vLLM 0.33.0 ``vllm/v1/attention/ops/triton_reshape_and_cache_flash.py``
(``reshape_and_cache_kernel_flash``, NHD layout) and the CUDA kernel in
``csrc/libtorch_stable/cache_kernels.cu``; the bits must equal
:func:`kvscale.kernel.reference.reference_reshape_and_cache_flash`. Differences from the engine's
Triton kernel, and why:

* ``tl.math.div_rn`` instead of ``/``: Triton lowers an fp32 ``/`` to ``div.full.f32``, an
  approximate divide (2 ulp), which can move a value across an fp8 rounding boundary. ``div_rn``
  is ``div.rn.f32``, the IEEE division the CUDA kernel and the reference use.
* A tile of whole tokens x whole heads, 1024 elements and 16 per thread (2 warps): the engine
  kernel gives 16 warps a 1024-element row (2 elements per thread, 4-byte loads), which is most of
  its gap to copy bandwidth. K/V loads do not wait on the slot load: padding is masked at the store.
* Every stride, the head geometry and the format are compile-time constants. A deployment has one
  cache layout, so this costs one compile per layout and buys constant-folded addressing plus
  provable 16-byte alignment (vector loads/stores).
* The launch goes straight to the compiled kernel's C launcher with plain integer pointers:
  Triton's generic ``kernel[grid](...)`` path re-binds and re-specializes every argument on every
  call (tens of microseconds) and its pointer lookup calls ``cuPointerGetAttribute`` per tensor.

Triton is imported here only, and only if installed: ``import kvscale.kernel`` works without it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from kvscale.kernel.formats import UnsupportedOnDeviceError
from kvscale.kernel.jit import LazyKernel, TritonUnavailableError, require_triton
from kvscale.kernel.reference import (
    CacheWriteArgumentError,
    CacheWriteLayout,
    validate_cache_write_args,
)

try:  # pragma: no cover - exercised by the environment, not by logic
    import triton  # type: ignore[import-untyped,unused-ignore]
    import triton.language as tl  # type: ignore[import-untyped,unused-ignore]
except ImportError:  # pragma: no cover
    triton = None
    tl = None

__all__ = [
    "KernelConfig",
    "TritonUnavailableError",
    "reshape_and_cache_flash",
]

_MODE_COPY = 0
_MODE_E4M3 = 1
_MODE_E5M2 = 2
_FORMAT_MODE = {"e4m3fn": _MODE_E4M3, "e5m2": _MODE_E5M2}


def _cache_write_kernel(
    key_ptr,
    value_ptr,
    key_cache_ptr,
    value_cache_ptr,
    slot_ptr,
    k_scale_ptr,
    v_scale_ptr,
    n_tokens,
    KEY_T: tl.constexpr,  # key stride over tokens (elements)
    KEY_H: tl.constexpr,  # key stride over heads
    VAL_T: tl.constexpr,
    VAL_H: tl.constexpr,
    KC_B: tl.constexpr,  # key_cache stride over blocks
    KC_P: tl.constexpr,  # key_cache stride over slots within a block
    KC_H: tl.constexpr,  # key_cache stride over heads
    VC_B: tl.constexpr,
    VC_P: tl.constexpr,
    VC_H: tl.constexpr,
    NUM_HEADS: tl.constexpr,
    HEAD_SIZE: tl.constexpr,
    BLOCK_SIZE: tl.constexpr,
    MODE: tl.constexpr,  # 0 plain copy, 1 e4m3fn, 2 e5m2
    K_PER_HEAD: tl.constexpr,
    V_PER_HEAD: tl.constexpr,
    BLOCK_T: tl.constexpr,  # tokens per program
    BLOCK_H: tl.constexpr,  # heads per program (power of two)
    BLOCK_D: tl.constexpr,  # next power of two >= HEAD_SIZE
    STREAMING: tl.constexpr,  # evict-first hints (measured 7% slower on the H200: off)
):
    EVEN: tl.constexpr = (NUM_HEADS % BLOCK_H == 0) and (HEAD_SIZE == BLOCK_D)
    tok = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    hh = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    h3 = hh[None, :, None]
    d3 = tl.arange(0, BLOCK_D)[None, None, :]
    tok_ok = tok < n_tokens
    # Issued before, and independent of, the K/V loads so that all loads of the tile are in
    # flight together; the engine's kernel returns early on a padding slot, which serialises
    # slot -> K/V. Padding is masked at the store instead.
    slot = tl.load(slot_ptr + tok, mask=tok_ok, other=-1)
    tok3 = tok.to(tl.int64)[:, None, None]
    if EVEN:
        ld_mask = tok_ok[:, None, None]
        st_mask = (slot >= 0)[:, None, None]
    else:
        hd_ok = (h3 < NUM_HEADS) & (d3 < HEAD_SIZE)
        ld_mask = tok_ok[:, None, None] & hd_ok
        st_mask = (slot >= 0)[:, None, None] & hd_ok
    k_ptrs = key_ptr + tok3 * KEY_T + h3 * KEY_H + d3
    v_ptrs = value_ptr + tok3 * VAL_T + h3 * VAL_H + d3
    if STREAMING:
        k = tl.load(k_ptrs, mask=ld_mask, eviction_policy="evict_first")
        v = tl.load(v_ptrs, mask=ld_mask, eviction_policy="evict_first")
    else:
        k = tl.load(k_ptrs, mask=ld_mask)
        v = tl.load(v_ptrs, mask=ld_mask)

    # vLLM: block = slot // block_size, offset = slot % block_size. A padding slot's values are
    # never used (masked). With a contiguous block (KC_B == BLOCK_SIZE * KC_P, the usual case)
    # the two collapse to slot * KC_P.
    blk = slot // BLOCK_SIZE
    off = slot % BLOCK_SIZE
    if KC_B == BLOCK_SIZE * KC_P:
        kc_row = slot * KC_P
    else:
        kc_row = blk * KC_B + off * KC_P
    if VC_B == BLOCK_SIZE * VC_P:
        vc_row = slot * VC_P
    else:
        vc_row = blk * VC_B + off * VC_P
    kc_ptrs = key_cache_ptr + kc_row[:, None, None] + h3 * KC_H + d3
    vc_ptrs = value_cache_ptr + vc_row[:, None, None] + h3 * VC_H + d3

    if MODE == 0:
        kq = k
        vq = v
    else:
        if K_PER_HEAD:
            ks = tl.load(k_scale_ptr + hh, mask=hh < NUM_HEADS, other=1.0)[None, :, None]
        else:
            ks = tl.load(k_scale_ptr)
        if V_PER_HEAD:
            vs = tl.load(v_scale_ptr + hh, mask=hh < NUM_HEADS, other=1.0)[None, :, None]
        else:
            vs = tl.load(v_scale_ptr)
        kf = k.to(tl.float32)
        vf = v.to(tl.float32)
        # y = x / scale must be the IEEE quotient (div.rn.f32); Triton's '/' is div.full.f32,
        # an approximation. div.rn measured as fast as a reciprocal-and-correct scheme on the
        # H200 at every size (the kernel is bound by memory; benchmarks/KERNEL_NOTES.md).
        ky = tl.math.div_rn(kf, ks)
        vy = tl.math.div_rn(vf, vs)
        # fp32 -> fp8 lowers to cvt.rn.satfinite.{e4m3,e5m2}x2.f32 on sm_89+: round to nearest
        # even, saturate to the finite max (inf too), NaN stays NaN. The caches are uint8 storage.
        if MODE == 1:
            kq = ky.to(tl.float8e4nv).to(tl.uint8, bitcast=True)
            vq = vy.to(tl.float8e4nv).to(tl.uint8, bitcast=True)
        else:
            kq = ky.to(tl.float8e5).to(tl.uint8, bitcast=True)
            vq = vy.to(tl.float8e5).to(tl.uint8, bitcast=True)

    if STREAMING:
        tl.store(kc_ptrs, kq, mask=st_mask, eviction_policy="evict_first")
        tl.store(vc_ptrs, vq, mask=st_mask, eviction_policy="evict_first")
    else:
        tl.store(kc_ptrs, kq, mask=st_mask)
        tl.store(vc_ptrs, vq, mask=st_mask)


_JIT_OPTIONS: dict[str, Any] = {
    # n_tokens changes every call; specializing on it (==1, %16) would recompile.
    "do_not_specialize": ["n_tokens"],
    # Scalar/gathered loads only: their alignment buys nothing and would split the plan key.
    "do_not_specialize_on_alignment": ["slot_ptr", "k_scale_ptr", "v_scale_ptr"],
}
_KERNEL = LazyKernel(_cache_write_kernel, "the GPU cache-write kernel", **_JIT_OPTIONS)


@dataclass(frozen=True)
class KernelConfig:
    """Tile shape and launch parameters of one compiled variant: a program writes ``block_t``
    tokens x ``block_h`` heads x head_size elements with ``num_warps`` warps."""

    block_t: int
    block_h: int
    num_warps: int
    streaming: bool = False


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


# 16 elements per thread: two 16-byte bf16 loads per tensor (four in flight) and one 16-byte fp8
# store per cache. 1024-element tiles (2 warps) measured best on the H200 at every size tried,
# 128 to 262,144 tokens (benchmarks/KERNEL_NOTES.md), so one config serves every batch size.
_ELEMS_PER_THREAD = 16
_TILE = 1024


def default_config(num_heads: int, head_size: int) -> KernelConfig:
    """The tile for tokens of ``num_heads`` x ``head_size`` (whole heads, whole tokens)."""
    block_d = _next_pow2(head_size)
    block_h = min(_next_pow2(num_heads), max(1, _TILE // block_d))
    block_t = max(1, _TILE // (block_h * block_d))
    num_warps = max(1, min(16, (block_t * block_h * block_d) // (32 * _ELEMS_PER_THREAD)))
    return KernelConfig(block_t=block_t, block_h=block_h, num_warps=num_warps)


def _constexprs(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    mode: int,
    per_head_k: bool,
    per_head_v: bool,
    config: KernelConfig,
) -> dict[str, Any]:
    # Order = the kernel's constexpr parameters, in signature order (the raw launcher is
    # positional).
    return {
        "KEY_T": key.stride(0),
        "KEY_H": key.stride(1),
        "VAL_T": value.stride(0),
        "VAL_H": value.stride(1),
        "KC_B": key_cache.stride(0),
        "KC_P": key_cache.stride(1),
        "KC_H": key_cache.stride(2),
        "VC_B": value_cache.stride(0),
        "VC_P": value_cache.stride(1),
        "VC_H": value_cache.stride(2),
        "NUM_HEADS": key.shape[1],
        "HEAD_SIZE": key.shape[2],
        "BLOCK_SIZE": key_cache.shape[1],
        "MODE": mode,
        "K_PER_HEAD": per_head_k,
        "V_PER_HEAD": per_head_v,
        "BLOCK_T": config.block_t,
        "BLOCK_H": config.block_h,
        "BLOCK_D": _next_pow2(key.shape[2]),
        "STREAMING": config.streaming,
    }


def _as_storage(cache: torch.Tensor, mode: int) -> torch.Tensor:
    # The kernel stores fp8 bits through a uint8 pointer; a torch float8 cache is the same bytes.
    if mode != _MODE_COPY and cache.dtype != torch.uint8:
        return cache.view(torch.uint8)
    return cache


def _kernel_mode(layout: CacheWriteLayout, kv_cache_dtype: str) -> int:
    fmt = layout.kv.fp8
    if fmt is None:
        return _MODE_COPY
    if not fmt.gpu_writable:
        raise UnsupportedOnDeviceError(
            f"an NVIDIA GPU cannot write e4m3fnuz (kv_cache_dtype {kv_cache_dtype!r}): it is the "
            "ROCm gfx94x format and Triton's NVIDIA backend has no store for it. Compute its bits "
            "with kvscale.kernel.reference_reshape_and_cache_flash on the CPU, or use fp8_e4m3."
        )
    return _FORMAT_MODE[fmt.name]


class _Plan:
    """One compiled specialization (layout, dtypes, format, scale kinds, pointer alignment) and
    everything needed to start it through the compiled kernel's own C launcher."""

    __slots__ = ("device", "block_t", "grid_h", "_raw", "_function", "_coop", "_pdl",
                 "_packed", "_tail", "_runner")  # fmt: skip

    def __init__(
        self,
        layout: CacheWriteLayout,
        mode: int,
        config: KernelConfig,
        key: torch.Tensor,
        value: torch.Tensor,
        key_cache: torch.Tensor,
        value_cache: torch.Tensor,
        slot_mapping: torch.Tensor,
        k_scale: torch.Tensor,
        v_scale: torch.Tensor,
    ) -> None:
        self.device = key.get_device()
        self.block_t = config.block_t
        self.grid_h = -(-layout.num_heads // config.block_h)
        kc = _as_storage(key_cache, mode)
        vc = _as_storage(value_cache, mode)
        consts = _constexprs(key, value, kc, vc, mode, layout.per_head_k, layout.per_head_v, config)
        # Compiled once through Triton's generic path (warmup: compile, no launch) so that
        # Triton derives the signature and the pointer-alignment specialization from the real
        # tensors; the plan key pins both for every later call that reuses this plan.
        compiled = _KERNEL.get(interpret=False).warmup(
            key, value, kc, vc, slot_mapping, k_scale, v_scale, 2,
            grid=(1, self.grid_h, 1), num_warps=config.num_warps, num_stages=1, **consts,
        )  # fmt: skip
        if hasattr(compiled, "result"):  # a future under Triton's async compile mode
            compiled = compiled.result()
        runner = compiled.run  # loads the module on this device; a CudaLauncher on NVIDIA
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

    def launch(self, n: int, stream: int, kp: int, vp: int, kcp: int, vcp: int, sp: int,
               ksp: int, vsp: int) -> None:  # fmt: skip
        gx = (n + self.block_t - 1) // self.block_t
        if self._raw is not None:
            # The generated C entry point: grid, stream, function, cooperative/PDL flags, the two
            # scratch buffers (none), kernel metadata, launch metadata and the enter/exit hooks
            # (None: profiler hooks are not called on this path), then every kernel argument,
            # constexprs included (parsed and ignored). Integer pointers skip Triton's
            # per-tensor data_ptr() + cuPointerGetAttribute.
            self._raw(gx, self.grid_h, 1, stream, self._function, self._coop, self._pdl, None,
                      None, self._packed, None, None, None, kp, vp, kcp, vcp, sp, ksp, vsp, n,
                      *self._tail)  # fmt: skip
        else:
            self._runner(gx, self.grid_h, 1, stream, self._function, self._packed, None, None,
                         None, kp, vp, kcp, vcp, sp, ksp, vsp, n, *self._tail)  # fmt: skip


_plans: dict[tuple[Any, ...], _Plan] = {}
_plans_lock = threading.Lock()
# Benchmarks and tests set this to force one tile (None: default_config).
_config_override: KernelConfig | None = None


def _prepare(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> tuple[CacheWriteLayout, int, KernelConfig]:
    layout = validate_cache_write_args(
        key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    mode = _kernel_mode(layout, kv_cache_dtype)
    config = _config_override or default_config(layout.num_heads, layout.head_size)
    return layout, mode, config


def _interpret(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    """Run the same kernel under Triton's CPU interpreter (tests only: its fp8 cast is not the
    GPU's, kv-scale-rules section 7)."""
    layout, mode, cfg = _prepare(
        key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    n = slot_mapping.shape[0]
    if n == 0:
        return
    kc = _as_storage(key_cache, mode)
    vc = _as_storage(value_cache, mode)
    consts = _constexprs(key, value, kc, vc, mode, layout.per_head_k, layout.per_head_v, cfg)
    grid = (-(-n // cfg.block_t), -(-layout.num_heads // cfg.block_h), 1)
    kernel = _KERNEL.get(interpret=True)
    kernel[grid](key, value, kc, vc, slot_mapping, k_scale, v_scale, n, **consts)


def _new_plan(
    pkey: tuple[Any, ...],
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> _Plan:
    layout, mode, config = _prepare(
        key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
    if key.get_device() < 0:
        raise CacheWriteArgumentError(
            "reshape_and_cache_flash runs on CUDA tensors; use reference_reshape_and_cache_flash "
            "on the CPU (or set TRITON_INTERPRET=1 to run the kernel in Triton's interpreter)"
        )
    require_triton("the GPU cache-write kernel")
    if mode != _MODE_COPY and torch.cuda.get_device_capability(key.device) < (8, 9):
        raise UnsupportedOnDeviceError(
            f"writing {kv_cache_dtype} needs native FP8 conversion (compute capability 8.9+); "
            f"this GPU is {torch.cuda.get_device_capability(key.device)}"
        )
    with _plans_lock, torch.cuda.device(key.get_device()):
        plan = _plans.get(pkey)
        if plan is None:
            plan = _Plan(
                layout, mode, config, key, value, key_cache, value_cache, slot_mapping, k_scale,
                v_scale,
            )  # fmt: skip
            _plans[pkey] = plan
    return plan


def reshape_and_cache_flash(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    """Write key/value into paged KV caches on the GPU (vLLM ``reshape_and_cache_flash``).

    key/value ``[num_tokens, num_kv_heads, head_size]`` bf16/fp16/fp32; caches
    ``[num_blocks, block_size, num_kv_heads, head_size]`` (uint8 or torch float8 storage for
    ``fp8``/``fp8_e4m3``/``fp8_e5m2``; key's own dtype for ``auto``/``bfloat16``/``float16``/
    ``float32``), any strides on the first three dims, head dim contiguous; ``slot_mapping`` int64
    ``[n]``, ``n <= num_tokens``, negative = padding (nothing written); scales float32, 1 element
    or ``[num_kv_heads]``. Asynchronous on the current stream, like any CUDA op; bit-identical to
    :func:`kvscale.kernel.reference.reference_reshape_and_cache_flash`.

    Raises UnknownKVCacheDtypeError, UnsupportedOnDeviceError (``fp8_e4m3fnuz``; GPUs before
    sm_89), CacheWriteArgumentError, TritonUnavailableError. As in vLLM, slots past the end of the
    cache are not checked. CPU tensors run in Triton's interpreter when ``TRITON_INTERPRET=1``.
    """
    kp = key.data_ptr()
    vp = value.data_ptr()
    kcp = key_cache.data_ptr()
    vcp = value_cache.data_ptr()
    dev = key.get_device()
    # Everything the compiled code or the argument checks depend on, except the token count:
    # dtypes, strides, the non-token dims, devices, and the 16-byte alignment of the four
    # pointers that Triton specialized the compiled code on.
    pkey = (
        kv_cache_dtype, key.dtype, value.dtype, key_cache.dtype, value_cache.dtype,
        slot_mapping.dtype, k_scale.dtype, v_scale.dtype,
        key.stride(), value.stride(), key_cache.stride(), value_cache.stride(),
        key.shape[1:], value.shape[1:], key_cache.shape[1:], value_cache.shape[1:],
        k_scale.shape, v_scale.shape, k_scale.stride(), v_scale.stride(), slot_mapping.stride(),
        (kp & 15) | (vp & 15) << 4 | (kcp & 15) << 8 | (vcp & 15) << 12,
        dev, value.get_device(), key_cache.get_device(), value_cache.get_device(),
        slot_mapping.get_device(), k_scale.get_device(), v_scale.get_device(), _config_override,
    )  # fmt: skip
    plan = _plans.get(pkey)
    if plan is None:
        if dev < 0 and os.environ.get("TRITON_INTERPRET") == "1":
            _interpret(
                key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
            )
            return
        plan = _new_plan(
            pkey, key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
            v_scale,
        )  # fmt: skip
    n = slot_mapping.shape[0]
    if n > key.shape[0] or n > value.shape[0]:
        raise CacheWriteArgumentError(
            f"slot_mapping has {n} entries but key/value have {key.shape[0]}/{value.shape[0]} "
            "tokens"
        )
    if n == 0:
        return
    if dev == _current_device():
        plan.launch(n, _current_stream(dev), kp, vp, kcp, vcp, slot_mapping.data_ptr(),
                    k_scale.data_ptr(), v_scale.data_ptr())  # fmt: skip
    else:
        with torch.cuda.device(dev):
            plan.launch(n, _current_stream(dev), kp, vp, kcp, vcp, slot_mapping.data_ptr(),
                        k_scale.data_ptr(), v_scale.data_ptr())  # fmt: skip


# torch.cuda.current_device() runs lazy-init checks on every call; the raw getters do not (the
# plan's creation has initialized CUDA). Fallbacks keep other torch builds working.
_current_device: Callable[[], int] = getattr(torch._C, "_cuda_getDevice", torch.cuda.current_device)
_current_stream: Callable[[int], int] = getattr(
    torch._C,
    "_cuda_getCurrentRawStream",
    lambda device: torch.cuda.current_stream(device).cuda_stream,
)
