"""CPU reference for vLLM's MLA latent-cache write, ``concat_and_cache_mla``, bit for bit.

Mirrors vLLM 0.33.0 ``ops.concat_and_cache_mla(kv_c, k_pe, kv_cache, slot_mapping,
kv_cache_dtype, scale, skip_scale)`` (``vllm/_custom_ops.py``; CUDA body
``csrc/libtorch_stable/cache_kernels.cu`` ``concat_and_cache_mla_kernel``, read at 00eb0c87 and
checked against the SASS of the 0.33.0 wheel's ``_C_stable_libtorch.abi3.so`` for sm_90):

* token ``t < len(slot_mapping)`` with ``slot >= 0`` writes one cache row
  ``kv_cache[slot // block_size, slot % block_size] = [kv_c[t] | k_pe[t]]``; a negative slot is
  padding and leaves the row's bytes as they were; rows of kv_c/k_pe past ``len(slot_mapping)``
  (CUDA-graph padding) are not read;
* fp8 dtypes: each element is ``fp8(float32(x) / scale[0])`` (``div.rn.f32``, then
  ``cvt.rn.satfinite``: round to nearest even, saturate to the finite max, inf included; every
  NaN becomes the format's one NaN byte), the same conversion as ``reshape_and_cache_flash``
  (:func:`kvscale.kernel.reference.quantize_to_bits`);
* ``skip_scale=True`` (the kernel's second template variant) converts x without a division and
  never reads ``scale``; vLLM passes it when the dtype is fp8 and ``_k_scale_float == 1.0``
  (``vllm/model_executor/layers/attention/mla_attention.py`` ``MLAAttention.update_kv_cache``),
  where it changes no byte: IEEE ``x / 1.0`` is ``x`` for every float32, zeros, infinities and
  NaN included (:func:`vllm_mla_skip_scale`);
* ``auto``/``bfloat16``/``float16``: a plain copy in the inputs' dtype, scale unread.

The argument checks are shared with the Triton kernel (``kvscale/kernel/triton_mla.py``) so
that both refuse the same inputs with the same typed errors. vLLM's host code checks only the
cache width; it dispatches on kv_c's dtype and reinterprets k_pe and the cache, and it assumes
stride 1 inside a row. Inputs on which that would read or write the wrong bytes (k_pe or cache
of another dtype, strided rows, slots past the cache, a vector scale whose first element alone
would be used) are refused here instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kvscale.kernel.formats import FP8Format, KVCacheDtype, resolve_kv_cache_dtype
from kvscale.kernel.reference import CacheWriteArgumentError, dequantize, quantize_to_bits

__all__ = [
    "MLA_KV_CACHE_DTYPES",
    "MLALatentRows",
    "MLAWriteLayout",
    "dequantize_mla",
    "reference_concat_and_cache_mla",
    "validate_mla_write_args",
    "vllm_mla_skip_scale",
]

_INPUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

# The kv_cache_dtype strings concat_and_cache_mla writes in this layout. vLLM's CUDA dispatch
# (DISPATCH_BY_KV_CACHE_DTYPE over get_fp8_kv_cache_data_type, csrc/quantization/w8a8/fp8/
# nvidia/quant_utils.cuh) maps auto/float16/bfloat16 to a copy and fp8/fp8_e4m3/fp8_e5m2 to
# e4m3fn/e5m2; any other string ("half", "float32", ...) fails there. fp8_e4m3fnuz is kvscale's
# name for what "fp8"/"fp8_e4m3" write on ROCm gfx94x (the HIP build's fp8_type is
# __hip_fp8_e4m3_fnuz there, csrc/quantization/w8a8/fp8/amd/quant_utils.cuh).
MLA_KV_CACHE_DTYPES = (
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_e4m3fnuz",
)
# Same op, other kernels with their own layout and per-tile scales (concat_and_cache_ds_mla_kernel,
# launch_concat_and_cache_nvfp4_ds_mla): not this write.
_SPARSE_MLA_DTYPES = ("fp8_ds_mla", "nvfp4_ds_mla")
# mla_attention.py MLAAttention.update_kv_cache: skip_scale only for these strings.
_SKIP_SCALE_DTYPES = ("fp8", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz")


@dataclass(frozen=True)
class MLAWriteLayout:
    """The facts about one call that the kernels specialize on (validated once per layout)."""

    kv: KVCacheDtype
    kv_lora_rank: int
    rope_dim: int
    block_size: int
    num_slots: int


@dataclass(frozen=True)
class MLALatentRows:
    """Cache rows read back as float32: row ``i`` belongs to token ``tokens[i]`` of the write
    (the index into slot_mapping; padding entries have no row)."""

    tokens: torch.Tensor  # int64 [n_live]
    kv_c: torch.Tensor  # float32 [n_live, kv_lora_rank]
    k_pe: torch.Tensor  # float32 [n_live, rope_dim]


def _fail(msg: str) -> CacheWriteArgumentError:
    return CacheWriteArgumentError(msg)


def vllm_mla_skip_scale(kv_cache_dtype: str, k_scale: float) -> bool:
    """The ``skip_scale`` vLLM 0.33.0 passes for a layer: an fp8 cache and a scale of exactly 1.0
    (``MLAAttention.update_kv_cache``: ``kv_cache_dtype in ("fp8", "fp8_e4m3", "fp8_e5m2") and
    self._k_scale_float == 1.0``). ``fp8_e4m3fnuz`` counts as ``fp8``: it is what that string
    means on ROCm gfx94x."""
    return kv_cache_dtype in _SKIP_SCALE_DTYPES and float(k_scale) == 1.0


def _resolve_mla_dtype(kv_cache_dtype: str) -> KVCacheDtype:
    if kv_cache_dtype in _SPARSE_MLA_DTYPES:
        raise _fail(
            f"kv_cache_dtype {kv_cache_dtype!r} is a sparse DeepSeek cache format with per-tile "
            "scales stored in the cache (concat_and_cache_ds_mla_kernel); the checkpoint scale is "
            "not used there and kvscale does not model that layout"
        )
    kv = resolve_kv_cache_dtype(kv_cache_dtype)  # UnknownKVCacheDtypeError for unknown strings
    if kv.name not in MLA_KV_CACHE_DTYPES:
        raise _fail(
            f"concat_and_cache_mla does not accept kv_cache_dtype {kv.name!r} (vLLM's kernel "
            f"dispatch fails on it); expected one of: {', '.join(MLA_KV_CACHE_DTYPES)}"
        )
    return kv


def _rows_contiguous(t: torch.Tensor) -> bool:
    return t.shape[-1] <= 1 or t.stride(-1) == 1


def _check_slot_mapping(slot_mapping: torch.Tensor) -> None:
    if not isinstance(slot_mapping, torch.Tensor):
        raise _fail(f"slot_mapping must be a tensor, got {type(slot_mapping).__name__}")
    if slot_mapping.dim() != 1 or slot_mapping.dtype != torch.int64:
        raise _fail(
            f"slot_mapping must be a 1-D int64 tensor, got {tuple(slot_mapping.shape)} "
            f"{slot_mapping.dtype}"
        )


def _check_cache_tensor(kv_cache: torch.Tensor, kv: KVCacheDtype) -> None:
    if not isinstance(kv_cache, torch.Tensor):
        raise _fail(f"kv_cache must be a tensor, got {type(kv_cache).__name__}")
    if kv_cache.dim() != 3:
        raise _fail(
            "kv_cache must be [num_blocks, block_size, kv_lora_rank + rope_dim], got "
            f"{tuple(kv_cache.shape)}"
        )
    if not _rows_contiguous(kv_cache):
        raise _fail(
            f"kv_cache's rows must be contiguous (stride 1 along the latent), got strides "
            f"{kv_cache.stride()}"
        )
    if kv.fp8 is not None:
        allowed = (torch.uint8, getattr(torch, kv.fp8.torch_dtype))
        if kv_cache.dtype not in allowed:
            raise _fail(
                f"kv_cache_dtype {kv.name!r} needs a uint8 or {allowed[1]} kv_cache, got "
                f"{kv_cache.dtype}"
            )


def validate_mla_write_args(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool = False,
) -> MLAWriteLayout:
    """Check every argument of an MLA cache write; raise on the first problem.

    Raises UnknownKVCacheDtypeError (a string kvscale does not know) and
    CacheWriteArgumentError (everything else: a dtype string this op does not write, ranks,
    dtypes, strides, the cache width, slot_mapping, scale, devices).
    """
    kv = _resolve_mla_dtype(kv_cache_dtype)
    if not isinstance(skip_scale, bool):
        raise _fail(f"skip_scale must be a bool, got {type(skip_scale).__name__}")
    for name, t, what in (
        ("kv_c", kv_c, "[num_tokens, kv_lora_rank]"),
        ("k_pe", k_pe, "[num_tokens, rope_dim]"),
    ):
        if not isinstance(t, torch.Tensor):
            raise _fail(f"{name} must be a tensor, got {type(t).__name__}")
        if t.dim() != 2:
            raise _fail(f"{name} must be {what}, got {tuple(t.shape)}")
        if t.dtype not in _INPUT_DTYPES:
            raise _fail(f"{name} must be bfloat16, float16 or float32, got {t.dtype}")
        if t.shape[1] < 1:
            raise _fail(f"{name} has an empty row: {tuple(t.shape)}")
        if not _rows_contiguous(t):
            raise _fail(
                f"{name}'s rows must be contiguous (stride 1 along the row), got strides "
                f"{t.stride()}"
            )
    if k_pe.dtype != kv_c.dtype:
        # The CUDA kernel is dispatched on kv_c's dtype and reads k_pe's bytes as that type.
        raise _fail(f"k_pe must have kv_c's dtype {kv_c.dtype}, got {k_pe.dtype}")
    kv_lora_rank, rope_dim = kv_c.shape[1], k_pe.shape[1]
    _check_cache_tensor(kv_cache, kv)
    if kv_cache.shape[2] != kv_lora_rank + rope_dim:
        raise _fail(
            f"a latent of the wrong width: kv_cache rows hold {kv_cache.shape[2]} values, but "
            f"kv_lora_rank + rope_dim = {kv_lora_rank} + {rope_dim} = {kv_lora_rank + rope_dim}"
        )
    if kv.fp8 is None:
        # The copy stores kv_c's element type (the kernel writes cache_t = scalar_t); a cache of
        # another float type would be a second rounding with its own NaN rules.
        if kv_cache.dtype != kv_c.dtype:
            raise _fail(
                f"kv_cache_dtype {kv.name!r} is a plain copy: kv_cache must have kv_c's dtype "
                f"{kv_c.dtype}, got {kv_cache.dtype}"
            )
        if kv.torch_dtype is not None and kv_cache.dtype != getattr(torch, kv.torch_dtype):
            raise _fail(
                f"kv_cache_dtype {kv.name!r} needs a {kv.torch_dtype} kv_cache, got "
                f"{kv_cache.dtype}"
            )
    _check_slot_mapping(slot_mapping)
    n = slot_mapping.shape[0]
    if n > kv_c.shape[0] or n > k_pe.shape[0]:
        raise _fail(
            f"slot_mapping has {n} entries but kv_c/k_pe have {kv_c.shape[0]}/{k_pe.shape[0]} "
            "tokens"
        )
    if not isinstance(scale, torch.Tensor):
        raise _fail(f"scale must be a float32 tensor, got {type(scale).__name__}")
    if scale.dtype != torch.float32 or scale.numel() != 1:
        # The kernel reads *scale: one value for the whole latent row (kv_c and k_pe alike).
        raise _fail(
            f"scale must be a float32 tensor with 1 element, got {tuple(scale.shape)} {scale.dtype}"
        )
    # The scale too, even where it is not read (a copy, skip_scale): the GPU kernel is handed
    # its pointer either way.
    devices = {t.device for t in (kv_c, k_pe, kv_cache, slot_mapping, scale)}
    if len(devices) != 1:
        raise _fail(f"all tensors must be on one device, got {sorted(map(str, devices))}")
    return MLAWriteLayout(
        kv=kv,
        kv_lora_rank=kv_lora_rank,
        rope_dim=rope_dim,
        block_size=kv_cache.shape[1],
        num_slots=kv_cache.shape[0] * kv_cache.shape[1],
    )


_ONE = torch.ones((), dtype=torch.float32)


def _encode(
    rows: torch.Tensor, scale: torch.Tensor, fmt: FP8Format, skip_scale: bool
) -> torch.Tensor:
    """fp8 bits (uint8) of ``[n, width]`` latent rows."""
    if skip_scale:
        # The skip variant converts x as it is; x / 1.0 is x exactly, so this is its bytes.
        return quantize_to_bits(rows, _ONE, fmt)
    if fmt.name == "e4m3fnuz" and rows.dtype == torch.float16:
        # The HIP build divides fp16 inputs in fp16: scaled_vec_conversion<uint8_t, uint16_t>
        # does `tmp.data /= scale` on a _Float16 (quotient rounded to fp16) and converts that
        # half to fp8 (csrc/quantization/w8a8/fp8/amd/quant_utils.cuh). bf16 and fp32 inputs
        # divide in fp32 as on NVIDIA.
        s = scale.to(device=rows.device, dtype=torch.float32).reshape(())
        half_quotient = (rows.to(torch.float32) / s).to(torch.float16)
        return quantize_to_bits(half_quotient, _ONE, fmt)
    return quantize_to_bits(rows, scale, fmt)


def _live_rows(
    slot_mapping: torch.Tensor, num_slots: int, block_size: int, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(token indices, block indices, in-block offsets) of the non-padding entries."""
    slots = slot_mapping.to(device)
    tokens = torch.nonzero(slots >= 0).flatten()
    live = slots[tokens]
    if live.numel() and int(live.max()) >= num_slots:
        raise _fail(f"slot {int(live.max())} is past the cache's {num_slots} slots")
    blocks = torch.div(live, block_size, rounding_mode="floor")
    return tokens, blocks, live - blocks * block_size


def reference_concat_and_cache_mla(
    kv_c: torch.Tensor,
    k_pe: torch.Tensor,
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    skip_scale: bool = False,
) -> None:
    """Write ``[kv_c | k_pe]`` rows into the MLA cache in place, exactly as vLLM's kernel does.

    Shapes: kv_c ``[num_tokens, kv_lora_rank]`` and k_pe ``[num_tokens, rope_dim]`` of one
    dtype (bf16/fp16/fp32, any row stride, stride 1 within a row: k_pe may be a slice of a fused
    projection output); kv_cache ``[num_blocks, block_size, kv_lora_rank + rope_dim]`` (uint8 or
    the torch float8 dtype for fp8 dtypes, kv_c's dtype otherwise; any block and entry strides);
    slot_mapping int64 ``[n]``, ``n <= num_tokens``, negative = padding; scale float32 with one
    element. Supports ``fp8_e4m3fnuz`` (ROCm gfx94x; no NVIDIA kernel writes it).

    Raises UnknownKVCacheDtypeError and CacheWriteArgumentError (see
    :func:`validate_mla_write_args`; also a live slot past the cache or the same slot twice, whose
    result on the GPU would depend on thread order).
    """
    layout = validate_mla_write_args(
        kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale
    )
    n = slot_mapping.shape[0]
    tokens, blocks, offsets = _live_rows(
        slot_mapping, layout.num_slots, layout.block_size, kv_cache.device
    )
    if tokens.numel() == 0:
        return
    if torch.unique(blocks * layout.block_size + offsets).numel() != tokens.numel():
        raise _fail("slot_mapping maps two tokens to the same cache slot")
    src_index = tokens.to(kv_c.device)
    rows = torch.cat(
        [kv_c[:n].index_select(0, src_index), k_pe[:n].index_select(0, src_index)], dim=1
    )
    fmt = layout.kv.fp8
    if fmt is None:
        encoded = rows  # plain copy: same dtype (checked), scale unread
    else:
        bits = _encode(rows, scale, fmt, skip_scale)
        encoded = bits if kv_cache.dtype == torch.uint8 else bits.view(kv_cache.dtype)
    # Advanced-index assignment writes through a strided view in place.
    kv_cache[blocks, offsets] = encoded.to(kv_cache.device)


def dequantize_mla(
    kv_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    kv_lora_rank: int,
) -> MLALatentRows:
    """Read the rows a write put at ``slot_mapping`` back as float32: ``fp8 * scale[0]``, as
    vLLM's MLA readers do with ``_k_scale`` (``gather_and_maybe_dequant_cache``, the decode
    backends' descale); unquantized dtypes are returned as float32, scale unread.

    Raises UnknownKVCacheDtypeError and CacheWriteArgumentError (cache rank, dtype or row
    stride, slot_mapping, a kv_lora_rank that leaves no room for k_pe, a slot past the cache,
    a scale that is not one float32 value).
    """
    kv = _resolve_mla_dtype(kv_cache_dtype)
    _check_cache_tensor(kv_cache, kv)
    _check_slot_mapping(slot_mapping)
    width = kv_cache.shape[2]
    if not 0 < kv_lora_rank < width:
        raise _fail(
            f"kv_lora_rank {kv_lora_rank} leaves no kv_c or no k_pe in rows of {width} values"
        )
    if not isinstance(scale, torch.Tensor) or scale.dtype != torch.float32 or scale.numel() != 1:
        raise _fail("scale must be a float32 tensor with 1 element")
    block_size = kv_cache.shape[1]
    tokens, blocks, offsets = _live_rows(
        slot_mapping, kv_cache.shape[0] * block_size, block_size, kv_cache.device
    )
    values = dequantize(kv_cache[blocks, offsets], scale, kv.name)
    return MLALatentRows(
        tokens=tokens, kv_c=values[:, :kv_lora_rank], k_pe=values[:, kv_lora_rank:]
    )
