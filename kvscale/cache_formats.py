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
from math import ceil


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
    OUT_OF_TREE = "out-of-tree"
    """No backend in the engine's own code writes this format (vLLM's ``fp8_inc``: Intel
    Gaudi's vllm-gaudi plugin does): what the write does with the scales is not in the
    engine's code, so kvscale cannot say."""

    @property
    def reads_checkpoint(self) -> bool:
        return self in (ScaleUse.DIVISOR, ScaleUse.GLOBAL_SCALE)


@dataclass(frozen=True)
class TurboQuantSlot:
    """vLLM's TurboQuant slot: one packed K+V record per token and KV head
    (``TurboQuantConfig``, model_executor/layers/quantization/turboquant/config.py)."""

    key_bits: int
    """8: FP8 keys (one byte per element); 3 or 4: Lloyd-Max codes plus an fp16 norm."""
    value_bits: int
    """Uniform value codes, plus an fp16 scale and an fp16 zero point."""

    def bytes_per_kv_head(self, head_size: int, rope_dim: int | None = None) -> int:
        # key_packed_size: head_dim bytes for FP8 keys, else ceil(head_dim * bits / 8) + 2;
        # value_packed_size: ceil(head_dim * bits / 8) + 4; slot_size_aligned rounds the sum
        # up to an even number (effective_head_size = slot // 2 must be integral).
        key = head_size if self.key_bits == 8 else ceil(head_size * self.key_bits / 8) + 2
        value = ceil(head_size * self.value_bits / 8) + 4
        slot = key + value
        return slot + slot % 2


@dataclass(frozen=True)
class OctaveSlot:
    """vLLM's Octave slot (ROCm): ``[k_rope codes][k_nope codes][v codes][fp16 scales][pad]``
    per token and KV head (``OctaveFormat.slot_bytes``, v1/attention/ops/rocm_octave.py)."""

    value_bits: int
    compact: bool
    """Compact K: 3-bit codes for every dimension and one K scale (padded to 4 bytes)."""

    def bytes_per_kv_head(self, head_size: int, rope_dim: int | None = None) -> int:
        # K: 4-bit codes over the rotary dims and 3-bit over the rest (compact: 3-bit over all);
        # V: value_bits codes; one fp16 scale per 64-dim K block (compact: one), one for V;
        # padded to 8 bytes (compact: 4). The rotary dim is head_size * partial_rotary_factor
        # (rope_dim_from_hf_config).
        rope = head_size if rope_dim is None else rope_dim
        wide = 0 if self.compact else rope
        k_scales = 1 if self.compact else head_size // 64
        raw = (
            wide * 4 // 8
            + (head_size - wide) * 3 // 8
            + head_size * self.value_bits // 8
            + 2 * (k_scales + 1)
        )
        align = 4 if self.compact else 8
        return (raw + align - 1) // align * align


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
    slot: TurboQuantSlot | OctaveSlot | None = None
    """A packed K+V record per token and KV head whose size is not per element (rounding,
    alignment, the rotary dim)."""
    reference: str | None = None
    """The module of kvscale's reference writer (None: kvscale cannot measure this format)."""

    def bytes_per_token(
        self,
        *,
        num_kv_heads: int,
        head_size: int,
        model_dtype_bytes: int,
        latent_width: int | None = None,
        rope_dim: int | None = None,
    ) -> float | None:
        """Cache bytes one token costs in one layer (K and V; an MLA latent row when
        ``latent_width`` is given), or None when the layout is not modelled. ``rope_dim``: the
        rotary dims of a head (Octave), default all of them."""
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
        if self.slot is not None:
            return float(num_kv_heads * self.slot.bytes_per_kv_head(head_size, rope_dim))
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


FP8_INC = CacheFormat(
    "fp8_inc",
    "FP8 e4m3 for Intel Gaudi (vllm-gaudi plugin's INC); no in-tree vLLM backend writes it",
    ScaleUse.OUT_OF_TREE,
    element_bits=8,
)


def _turboquant(name: str, key_bits: int, value_bits: int, keys: str) -> CacheFormat:
    return CacheFormat(
        name,
        f"TurboQuant {name.removeprefix('turboquant_')}: {keys}, {value_bits}-bit values with "
        "an fp16 scale and zero point per vector, packed in one slot",
        ScaleUse.IN_CACHE,
        slot=TurboQuantSlot(key_bits, value_bits),
    )


_LLOYD_MAX = "keys as {}-bit Lloyd-Max codes after a Hadamard rotation, with an fp16 norm"
TURBOQUANT = {
    f.name: f
    for f in (
        _turboquant("turboquant_k8v4", 8, 4, "FP8 keys (no scale)"),
        _turboquant("turboquant_4bit_nc", 4, 4, _LLOYD_MAX.format(4)),
        _turboquant("turboquant_k3v4_nc", 3, 4, _LLOYD_MAX.format(3)),
        _turboquant("turboquant_3bit_nc", 3, 3, _LLOYD_MAX.format(3)),
    )
}


def _octave(name: str, value_bits: int, compact: bool) -> CacheFormat:
    keys = (
        "3-bit keys with one fp16 scale"
        if compact
        else "4-bit rotary and 3-bit other key dims with an fp16 scale per 64"
    )
    return CacheFormat(
        name,
        f"Octave {name.removeprefix('octave_')} (ROCm): Hadamard-rotated {keys}, "
        f"{value_bits}-bit values with an fp16 scale",
        ScaleUse.IN_CACHE,
        slot=OctaveSlot(value_bits, compact),
    )


OCTAVE = {
    f.name: f
    for f in (
        _octave("octave_k3v4", 4, False),
        _octave("octave_k3v3", 3, False),
        _octave("octave_k3v3_compact", 3, True),
    )
}
ULTRAQUANT_4BIT = CacheFormat(
    "ultraquant_4bit",
    "UltraQuant 4-bit (ROCm): e2m1 values, a UE8M0 scale per 32, Hadamard-rotated keys",
    ScaleUse.IN_CACHE,
    # ultraquant/format.slot_size: D/2 code bytes and D/32 scale bytes per side.
    element_bits=4 + 8 / 32,
)

FORMATS: dict[str, CacheFormat] = {
    f.name: f
    for f in (
        MODEL_DTYPE,
        FP8_E4M3,
        FP8_E5M2,
        FP8_E4M3FNUZ,
        FP8_INC,
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
