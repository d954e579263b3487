"""Bytes per token of every KV-cache format, against what vLLM 0.33.0's own code sizes.

tests/parity/vllm_backends.json (``bytes_by_dtype``) holds the page size vLLM computes for one
token and one KV head: ``FullAttentionSpec(block_size=1, num_kv_heads=1, head_size=H, ...)``
through each backend's ``customize_spec`` (TurboQuant's ``slot_size_aligned``, Octave's
``slot_bytes`` with the rotary dim = H, UltraQuant's ``slot_size``, FlashInfer's NVFP4 split,
Triton's per-token-head scales), and ``MLAAttention.get_kv_cache_spec`` for the 576-wide latent
row, executed by tests/parity/vllm_dtype_oracle.py. kvscale derives the same sizes from the
formats' layouts (``kvscale.cache_formats``) for each dtype vLLM maps to them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvscale.cache_formats import FORMATS, OctaveSlot, TurboQuantSlot
from kvscale.engine.vllm.kv_cache_dtypes import KV_CACHE_DTYPES, cache_format

EVIDENCE = Path(__file__).resolve().parent / "parity" / "vllm_backends.json"
BYTES_BY_DTYPE: dict[str, dict[str, dict[str, list[str]]]] = json.loads(EVIDENCE.read_text())[
    "bytes_by_dtype"
]
MLA_LATENT = 576
BF16 = 2


def _sized(dtype: str) -> list[tuple[int, int]]:
    """(head size, bytes per token per KV head) vLLM computed for ``dtype``: one size each."""
    out = []
    for head, sizes in BYTES_BY_DTYPE[dtype].items():
        assert len(sizes) == 1, f"{dtype} H={head}: backends disagree {sizes}"
        out.append((int(head), int(next(iter(sizes)))))
    return out


def test_evidence_sizes_every_dtype_but_the_plugin_one() -> None:
    # fp8_inc has no in-tree backend, so vLLM sizes no page for it
    assert set(KV_CACHE_DTYPES) - set(BYTES_BY_DTYPE) == {"fp8_inc"}


@pytest.mark.parametrize("dtype", [d for d in KV_CACHE_DTYPES if d in BYTES_BY_DTYPE])
def test_bytes_per_token_match_vllm(dtype: str) -> None:
    fmt = cache_format(dtype, "ocp")
    for head, want in _sized(dtype):
        if head == MLA_LATENT:
            got = fmt.bytes_per_token(
                num_kv_heads=1, head_size=head, model_dtype_bytes=BF16, latent_width=head
            )
        else:
            got = fmt.bytes_per_token(num_kv_heads=1, head_size=head, model_dtype_bytes=BF16)
        assert got == want, f"{dtype} ({fmt.name}) at head size {head}"


def test_bytes_scale_with_kv_heads() -> None:
    fmt = FORMATS["turboquant_k8v4"]
    assert fmt.bytes_per_token(num_kv_heads=8, head_size=128, model_dtype_bytes=BF16) == 8 * 196


@pytest.mark.parametrize(
    ("slot", "head", "want"),
    [
        # the slot sizes of the TurboQuant presets at head size 128 (key + value, even)
        (TurboQuantSlot(8, 4), 128, 128 + (64 + 4)),
        (TurboQuantSlot(4, 4), 128, (64 + 2) + (64 + 4)),
        (TurboQuantSlot(3, 4), 128, (48 + 2) + (64 + 4)),
        (TurboQuantSlot(3, 3), 128, (48 + 2) + (48 + 4)),
        # odd sums round up to even: ceil(3*72/8) = 27 -> 29 + 31 = 60; 72 + 40 = 112
        (TurboQuantSlot(3, 3), 72, 60),
        (TurboQuantSlot(8, 4), 72, 112),
        (TurboQuantSlot(3, 4), 80, (30 + 2) + (40 + 4)),
    ],
)
def test_turboquant_slot(slot: TurboQuantSlot, head: int, want: int) -> None:
    assert slot.bytes_per_kv_head(head) == want


@pytest.mark.parametrize(
    ("slot", "head", "rope", "want"),
    [
        # 4-bit rotary K dims, 3-bit others, V bits, fp16 scales per 64 K dims + 1, pad to 8
        (OctaveSlot(4, False), 128, 128, 136),  # 64 + 64 + 6 = 134 -> 136
        (OctaveSlot(3, False), 128, 128, 120),  # 64 + 48 + 6 = 118 -> 120
        (OctaveSlot(3, True), 128, 128, 100),  # 48 + 48 + 4 = 100 (pad to 4)
        # a partial rotary factor of 1/2: 32 + 24 + 64 + 6 = 126 -> 128
        (OctaveSlot(4, False), 128, 64, 128),
        (OctaveSlot(3, True), 256, 128, 196),  # compact ignores the rotary dim
    ],
)
def test_octave_slot(slot: OctaveSlot, head: int, rope: int, want: int) -> None:
    assert slot.bytes_per_kv_head(head, rope) == want


def test_ultraquant_is_fp4_codes_and_a_scale_per_32() -> None:
    fmt = FORMATS["ultraquant_4bit"]
    # format.slot_size: D/2 + D/32 per side; 136 B at D=128, 272 B at D=256
    assert fmt.bytes_per_token(num_kv_heads=1, head_size=128, model_dtype_bytes=BF16) == 136
    assert fmt.bytes_per_token(num_kv_heads=2, head_size=256, model_dtype_bytes=BF16) == 544


def test_unmodelled_layout_is_none() -> None:
    # an MHA layer cannot hold the DeepSeek latent-row formats: no size, never a guess
    fmt = FORMATS["fp8_ds_mla"]
    assert fmt.bytes_per_token(num_kv_heads=1, head_size=128, model_dtype_bytes=BF16) is None
    assert (
        fmt.bytes_per_token(num_kv_heads=1, head_size=576, model_dtype_bytes=BF16, latent_width=576)
        == 656
    )
