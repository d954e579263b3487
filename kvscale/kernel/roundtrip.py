"""What a KV cache gives back: ``roundtrip(x)``, the float32 K or V attention reads after the
cache write stored ``x`` in a format, computed by kvscale's reference writers (or a kernel with
the same bytes). ``verify --data`` and ``plan`` run the model with these in place of K/V
(``kvscale.model.evaluate``), and measure them against ``x``.

``x`` is ``[tokens, num_kv_heads, head_size]`` in the model dtype (an MLA cache row: ``[tokens,
kv_lora_rank + rope_dim]``); the result float32 of the same shape on x's device.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.kernel.formats import FP8Format, resolve_kv_cache_dtype
from kvscale.kernel.mla import dequantize_mla, reference_concat_and_cache_mla, vllm_mla_skip_scale
from kvscale.kernel.reference import fp8_read_back

Roundtrip = Callable[[torch.Tensor], torch.Tensor]
MLAWriteFn = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, str, torch.Tensor, bool], None
]
"""``write(kv_c, k_pe, kv_cache, slot_mapping, kv_cache_dtype, scale, skip_scale)``: vLLM's
``concat_and_cache_mla`` (kvscale's reference or its Triton kernel)."""
MLA_BLOCK_SIZE = 16
QuantizeFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
"""``quantize(x, scale float32 [1] | [kv_heads]) -> uint8 fp8 bits``, as a cache write stores
them (kvscale's reference or kernel, or an engine's own write)."""


def _broadcast(scale: torch.Tensor) -> torch.Tensor:
    return scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())


def fp8_roundtrip(
    scale: torch.Tensor, fmt: FP8Format, quantize: QuantizeFn | None = None
) -> Roundtrip:
    """FP8 per tensor (or per head): ``fp8(x / scale) * scale`` in float32, vLLM's attention-side
    dequantization; through ``quantize``'s bytes when given, else the reference's values
    (``fp8_read_back``: what its bytes read back as, without writing them)."""
    if quantize is None:

        def read_back(x: torch.Tensor) -> torch.Tensor:
            return fp8_read_back(x, scale, fmt)

        return read_back
    write = quantize
    fp8_dtype = getattr(torch, fmt.torch_dtype)

    def roundtrip(x: torch.Tensor) -> torch.Tensor:
        s = scale.to(device=x.device, dtype=torch.float32)
        bits = write(x, s)
        if bits.dtype != torch.uint8 or bits.shape != x.shape:
            raise ValueError(
                f"the cache write returned {bits.dtype} {tuple(bits.shape)}, expected uint8 "
                f"{tuple(x.shape)}"
            )
        return bits.view(fp8_dtype).to(torch.float32) * _broadcast(s)

    return roundtrip


def per_token_head_roundtrip(kv_cache_dtype: str) -> Roundtrip:
    """vLLM's per-token-head formats (``kvscale.kernel.per_token_head``): scales computed from
    each token and head at write time; no checkpoint scale."""
    from kvscale.kernel.per_token_head import per_token_head_read_back

    def roundtrip(x: torch.Tensor) -> torch.Tensor:
        return per_token_head_read_back(x, kv_cache_dtype)

    return roundtrip


def unquantized_roundtrip(x: torch.Tensor) -> torch.Tensor:
    """A model-dtype cache stores ``x`` as it is."""
    return x.to(torch.float32)


def nvfp4_roundtrip(global_scale: float, kv_cache_dtype: str = "nvfp4") -> Roundtrip:
    """NVFP4 (``nvfp4``, ``nvfp4_4over6``): e2m1 codes with an e4m3 scale per 16 values, the
    checkpoint scale as the global dequantization scale (``kvscale.kernel.nvfp4``, vLLM's SM100
    write; the hardware reciprocal's 1-ulp ambiguity is not tracked here: statistics only)."""
    from kvscale.kernel.nvfp4 import nvfp4_read_back

    def roundtrip(x: torch.Tensor) -> torch.Tensor:
        # The NVFP4 writes take bf16/fp16 only; a float32 model is served in bf16 (vLLM's
        # _resolve_auto_dtype), so that is what its cache write receives.
        if x.dtype == torch.float32:
            x = x.to(torch.bfloat16)
        return nvfp4_read_back(x, global_scale, kv_cache_dtype).to(x.device)

    return roundtrip


def mla_latent_roundtrip(
    scale: torch.Tensor, kv_cache_dtype: str, kv_lora_rank: int, write: MLAWriteFn | None = None
) -> Roundtrip:
    """What vLLM 0.33.0's MLA cache gives back for rows ``[tokens, kv_lora_rank + rope_dim]``
    (``[kv_c | k_pe]``): the rows written in order by ``concat_and_cache_mla`` with the layer's
    k scale and the ``skip_scale`` vLLM passes (an fp8 dtype and a scale of exactly 1.0:
    ``MLAAttention.update_kv_cache``), read back as ``fp8 * k_scale`` (``dequantize_mla``, the
    readers' descale). ``write`` defaults to kvscale's reference
    (``kvscale.kernel.mla.reference_concat_and_cache_mla``); a kernel with the same bytes may
    replace it. ``scale``: float32, one element (an MLA row has one scale)."""
    if scale.numel() != 1:
        raise ValueError(
            f"an MLA cache row has one scale, got {scale.numel()} (per-head scales do not apply)"
        )
    host = float(scale.reshape(-1)[0])
    skip_scale = vllm_mla_skip_scale(kv_cache_dtype, host)
    stores_bits = resolve_kv_cache_dtype(kv_cache_dtype).fp8 is not None
    cache_write = write or reference_concat_and_cache_mla

    def roundtrip(rows: torch.Tensor) -> torch.Tensor:
        tokens, width = rows.shape
        s = scale.reshape(1).to(device=rows.device, dtype=torch.float32)
        blocks = max(1, -(-tokens // MLA_BLOCK_SIZE))
        cache = torch.zeros(
            (blocks, MLA_BLOCK_SIZE, width),
            dtype=torch.uint8 if stores_bits else rows.dtype,
            device=rows.device,
        )
        slots = torch.arange(tokens, dtype=torch.int64, device=rows.device)
        cache_write(
            rows[:, :kv_lora_rank], rows[:, kv_lora_rank:], cache, slots, kv_cache_dtype, s,
            skip_scale,
        )  # fmt: skip
        read = dequantize_mla(cache, slots, kv_cache_dtype, s, kv_lora_rank)
        return torch.cat([read.kv_c, read.k_pe], dim=1)

    return roundtrip


def format_roundtrip(
    fmt: CacheFormat,
    kv_cache_dtype: str,
    scale: torch.Tensor,
    quantize: QuantizeFn | None = None,
) -> Roundtrip:
    """The round trip of one K or V cache (not a latent row) in ``fmt``: FP8 per tensor or per
    head at ``scale`` (through ``quantize`` when given: an engine's or a kernel's write), NVFP4
    with ``scale`` as the global scale the engine computed, the per-token-head formats (which
    read no scale), or unquantized. A format kvscale has no reference writer for is a
    ValueError (callers list it as not measurable first)."""
    from kvscale.kernel.formats import FP8_FORMATS

    if fmt.scale_use is ScaleUse.NONE:
        return unquantized_roundtrip
    if fmt.reference is None:
        raise ValueError(f"kvscale has no reference writer for {fmt.name}")
    if fmt.scale_use is ScaleUse.IN_CACHE:
        return per_token_head_roundtrip(kv_cache_dtype)
    if fmt.scale_use is ScaleUse.GLOBAL_SCALE:
        if scale.numel() != 1:
            raise ValueError("an NVFP4 cache has one global scale per layer and kind")
        return nvfp4_roundtrip(float(scale.reshape(-1)[0]), kv_cache_dtype)
    if fmt.fp8 is None:
        raise ValueError(f"{fmt.name} is not an FP8 format")
    return fp8_roundtrip(scale, FP8_FORMATS[fmt.fp8], quantize)
