"""KV-cache formats: what the bytes of a layer's cache are, and what they do with the checkpoint's
k/v scales. Engine-neutral and torch-free.

Each engine maps its own ``--kv-cache-dtype`` strings to these formats (per platform and per
layer: ``kvscale/engine/<name>/kv_cache_dtypes.py``); everything else in kvscale (findings,
reports, ``verify``, ``plan``) talks about formats. A format says how the checkpoint's scales
reach the cache (``ScaleUse``), how many bytes a token costs, and whether kvscale has a reference
writer for it (the condition for ``verify`` and ``plan`` to measure it: a format without one is
listed as such, never estimated).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ScaleUse(str, Enum):
    """What a KV-cache format does with the checkpoint's k/v scales."""

    DIVISOR = "divisor"
    """FP8 per tensor (or per head): the write stores ``fp8(x / scale)``, attention reads
    ``fp8 * scale``; a wrong scale saturates or underflows."""
    GLOBAL_SCALE = "global-scale"
    """NVFP4: the scale is the global dequantization scale of the per-16 e4m3 block scales; a
    wrong one sends block scales out of e4m3's range."""
    IN_CACHE = "in-cache"
    """Self-scaled formats: scales are computed at write time and stored in the cache (per token
    and head, per tile, per block); the checkpoint's scales are not read."""
    NONE = "none"
    """Unquantized (the model dtype, or a layer kept out of quantization): no scale is read."""

    @property
    def reads_checkpoint(self) -> bool:
        return self in (ScaleUse.DIVISOR, ScaleUse.GLOBAL_SCALE)


@dataclass(frozen=True)
class CacheFormat:
    """One KV-cache format, as bytes in the cache."""

    name: str
    title: str
    scale_use: ScaleUse
    fp8: str | None = None
    """The FP8 encoding of a divisor format (``e4m3fn``, ``e5m2``, ``e4m3fnuz``), for the
    kernels (``kvscale.kernel.formats.FP8_FORMATS``)."""
    element_bits: float | None = None
    """Stored bits per K or V element of an MHA cache, block scales included; None where it
    is the model dtype's or not modelled."""
    head_bytes: int = 0
    """Side data per token and KV head (a per-token-head fp32 scale), for K and for V each."""
    latent_row_bytes: int | None = None
    """Bytes of one MLA latent row per token, for the DeepSeek sparse formats whose row has a
    fixed layout (kv_lora_rank 512, rope 64)."""
    reference: str | None = None
    """The module of kvscale's reference writer (None: kvscale cannot measure this format)."""

    def bytes_per_token(
        self,
        *,
        num_kv_heads: int,
        head_size: int,
        model_dtype_bytes: int,
        latent_width: int | None = None,
    ) -> float | None:
        """Cache bytes one token costs in one layer (K and V; an MLA latent row when
        ``latent_width`` is given), or None when the layout is not modelled."""
        if latent_width is not None:
            if self.latent_row_bytes is not None:
                return float(self.latent_row_bytes)
            if self.scale_use is ScaleUse.NONE:
                return float(latent_width * model_dtype_bytes)
            if self.fp8 is not None:
                return float(latent_width)
            return None
        if self.scale_use is ScaleUse.NONE:
            return float(2 * num_kv_heads * head_size * model_dtype_bytes)
        if self.element_bits is None:
            return None
        return 2 * num_kv_heads * (head_size * self.element_bits / 8 + self.head_bytes)


MODEL_DTYPE = CacheFormat("model-dtype", "unquantized (the model dtype)", ScaleUse.NONE)
FP8_E4M3 = CacheFormat(
    "fp8_e4m3",
    "FP8 e4m3, scale per tensor (or per head)",
    ScaleUse.DIVISOR,
    fp8="e4m3fn",
    element_bits=8,
    reference="kvscale.kernel.reference",
)
FP8_E5M2 = CacheFormat(
    "fp8_e5m2",
    "FP8 e5m2, scale per tensor (or per head)",
    ScaleUse.DIVISOR,
    fp8="e5m2",
    element_bits=8,
    reference="kvscale.kernel.reference",
)
FP8_E4M3FNUZ = CacheFormat(
    "fp8_e4m3fnuz",
    "FP8 e4m3fnuz (ROCm MI300), scale per tensor",
    ScaleUse.DIVISOR,
    fp8="e4m3fnuz",
    element_bits=8,
    reference="kvscale.kernel.reference",
)
NVFP4 = CacheFormat(
    "nvfp4",
    "NVFP4: e2m1 values, an e4m3 scale per 16, the checkpoint scale as global scale",
    ScaleUse.GLOBAL_SCALE,
    element_bits=4 + 8 / 16,
    reference="kvscale.kernel.nvfp4",
)
NVFP4_4OVER6 = CacheFormat(
    "nvfp4_4over6",
    "NVFP4 with the 4-over-6 block scale choice",
    ScaleUse.GLOBAL_SCALE,
    element_bits=4 + 8 / 16,
    reference="kvscale.kernel.nvfp4",
)
FP8_DS_MLA = CacheFormat(
    "fp8_ds_mla",
    "DeepSeek sparse MLA FP8: e4m3 latent, an fp32 scale per 128 values, bf16 RoPE",
    ScaleUse.IN_CACHE,
    latent_row_bytes=656,
)
NVFP4_DS_MLA = CacheFormat(
    "nvfp4_ds_mla",
    "DeepSeek sparse MLA NVFP4: e2m1 latent, e4m3 scale per 16, e4m3 RoPE",
    ScaleUse.IN_CACHE,
    latent_row_bytes=352,
)
INT8_PER_TOKEN_HEAD = CacheFormat(
    "int8_per_token_head",
    "INT8 with an fp32 scale per token and head, computed at write time",
    ScaleUse.IN_CACHE,
    element_bits=8,
    head_bytes=4,
    reference="kvscale.kernel.per_token_head",
)
FP8_PER_TOKEN_HEAD = CacheFormat(
    "fp8_per_token_head",
    "FP8 e4m3 with an fp32 scale per token and head, computed at write time",
    ScaleUse.IN_CACHE,
    element_bits=8,
    head_bytes=4,
    reference="kvscale.kernel.per_token_head",
)
INT4_PER_TOKEN_HEAD = CacheFormat(
    "int4_per_token_head",
    "INT4 after a Hadamard rotation, an fp32 scale and zero point per token and head",
    ScaleUse.IN_CACHE,
    element_bits=4,
    head_bytes=4,
    reference="kvscale.kernel.per_token_head",
)
MXFP8 = CacheFormat(
    "mxfp8",
    "MXFP8: e4m3 values, a UE8M0 scale per 32",
    ScaleUse.IN_CACHE,
    element_bits=8 + 8 / 32,
)
FP4_MX_BLOCK16 = CacheFormat(
    "fp4_mx_block16",
    "FP4 e2m1 values, a UE8M0 scale per 16",
    ScaleUse.IN_CACHE,
    element_bits=4 + 8 / 16,
)


def _self_scaled(name: str, title: str) -> CacheFormat:
    """A packed self-scaled format whose layout kvscale does not model (no bytes, no writer)."""
    return CacheFormat(name, title, ScaleUse.IN_CACHE)


TURBOQUANT = {
    name: _self_scaled(
        name,
        f"TurboQuant {name.removeprefix('turboquant_')}: rotated, norm-scaled codes with "
        "per-vector scales in the slot",
    )
    for name in (
        "turboquant_k8v4",
        "turboquant_4bit_nc",
        "turboquant_k3v4_nc",
        "turboquant_3bit_nc",
    )
}
OCTAVE = {
    name: _self_scaled(
        name,
        f"Octave {name.removeprefix('octave_')} (ROCm): codes with an fp16 scale per 64-element "
        "block in the slot",
    )
    for name in ("octave_k3v4", "octave_k3v3", "octave_k3v3_compact")
}
ULTRAQUANT_4BIT = _self_scaled(
    "ultraquant_4bit", "UltraQuant 4-bit: e2m1 values, a UE8M0 scale per 32, rotated keys"
)

FORMATS: dict[str, CacheFormat] = {
    f.name: f
    for f in (
        MODEL_DTYPE,
        FP8_E4M3,
        FP8_E5M2,
        FP8_E4M3FNUZ,
        NVFP4,
        NVFP4_4OVER6,
        INT8_PER_TOKEN_HEAD,
        FP8_PER_TOKEN_HEAD,
        INT4_PER_TOKEN_HEAD,
        FP8_DS_MLA,
        NVFP4_DS_MLA,
        MXFP8,
        FP4_MX_BLOCK16,
        *TURBOQUANT.values(),
        *OCTAVE.values(),
        ULTRAQUANT_4BIT,
    )
}
