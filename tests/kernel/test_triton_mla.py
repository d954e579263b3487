"""The Triton MLA cache-write kernel in Triton's CPU interpreter (TRITON_INTERPRET=1).

The interpreter's fp8 cast is not the GPU's (no saturation, its own NaN, other tie rules:
tests/kernel/test_triton_cache.py), so inputs here are values whose quotient is exactly
representable in e4m3 and e5m2 (small integers times powers of two, power-of-two scales). What
is checked is everything else: slot -> block/offset arithmetic, the k_pe part landing at offset
kv_lora_rank, every stride (k_pe and kv_c sliced out of the fused projection output, padded and
non-adjacent cache rows), masks for non-power-of-two widths, padding slots and ignored rows,
skip_scale, the plain copy, forced tiles, and the shared argument checks. Rounding, saturation
and NaN bytes are checked on the GPU (tests/kernel/test_triton_mla_gpu.py).
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton", reason="Triton is not installed (pip install triton)")

from kvscale.kernel import (  # noqa: E402
    CacheWriteArgumentError,
    UnsupportedOnDeviceError,
    reference_concat_and_cache_mla,
    triton_mla,
)

VALUES = torch.tensor([0.0, 1.0, -1.0, 2.0, -3.0, 4.0, 6.0, -8.0, 12.0, 16.0, 0.5, -0.25, 0.75])
POISON = 0xC3


@pytest.fixture(autouse=True)
def _interpret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_mla, "_config_override", None)


def build(
    layout: str,
    tokens: int,
    lora: int,
    rope: int,
    bs: int,
    dtype: torch.dtype,
    cache_dtype: torch.dtype,
    scale: float,
    g: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """kv_c, k_pe, kv_cache (a view) and the cache's base tensor, poisoned."""
    blocks = (tokens + bs - 1) // bs + 2
    width = lora + rope
    if layout == "contig":
        kv_c = torch.empty(tokens, lora, dtype=dtype)
        k_pe = torch.empty(tokens, rope, dtype=dtype)
        base = torch.empty(blocks, bs, width, dtype=cache_dtype)
        cache = base
    elif layout == "fused":
        # vLLM: q_c, kv_lora = fused_qkv_a_proj(x).split([q_lora_rank, lora + rope]); kv_c and
        # k_pe are column slices of the same rows.
        fused = torch.empty(tokens, 24 + width, dtype=dtype)
        kv_c, k_pe = fused[:, 24 : 24 + lora], fused[:, 24 + lora :]
        base = torch.empty(blocks, bs, width, dtype=cache_dtype)
        cache = base
    else:  # padded cache rows, blocks not adjacent, k_pe from a wider buffer
        kv_c = torch.empty(tokens + 2, lora, dtype=dtype)[2:]
        k_pe = torch.empty(tokens, rope + 8, dtype=dtype)[:, 8:]
        base = torch.empty(blocks + 1, bs + 1, width + 16, dtype=cache_dtype)
        cache = base[1:, 1:, :width]
    idx = torch.randint(0, VALUES.numel(), (tokens, width), generator=g)
    x = (VALUES[idx] * scale).to(dtype)
    kv_c.copy_(x[:, :lora])
    k_pe.copy_(x[:, lora:])
    base.view(torch.uint8).fill_(POISON)
    return kv_c, k_pe, cache, base


CASES = [
    # layout, tokens, n, lora, rope, block_size, kv dtype, input dtype, scale, skip_scale
    ("fused", 9, 7, 512, 64, 16, "fp8", torch.bfloat16, 0.5, False),
    ("contig", 40, 37, 64, 16, 16, "fp8_e4m3", torch.float16, 2.0, False),
    ("padded", 21, 17, 48, 24, 12, "fp8_e5m2", torch.float32, 0.25, False),
    ("fused", 30, 30, 96, 8, 8, "fp8", torch.bfloat16, 1.0, True),
    ("padded", 19, 15, 32, 16, 4, "fp8_e5m2", torch.bfloat16, 1.0, True),
    ("fused", 18, 11, 64, 16, 4, "auto", torch.bfloat16, 1.0, False),
    ("padded", 18, 11, 40, 8, 4, "float16", torch.float16, 1.0, False),
    ("contig", 18, 11, 64, 32, 4, "auto", torch.float32, 1.0, False),
]


@pytest.mark.parametrize(
    "case", CASES, ids=lambda c: f"{c[0]}-{c[6]}-{str(c[7])[6:]}-{c[3]}+{c[4]}-skip{int(c[9])}"
)
@pytest.mark.parametrize(
    "tile",
    [
        "default",
        pytest.param("one", marks=pytest.mark.slow),
        pytest.param("wide", marks=pytest.mark.slow),
    ],
)
def test_interpreted_kernel_matches_reference(case: tuple, tile: str) -> None:
    layout, tokens, n, lora, rope, bs, kvd, dtype, scale, skip = case
    g = torch.Generator().manual_seed(sum(map(ord, f"{case[:8]}{tile}")))
    cache_dtype = torch.uint8 if kvd.startswith("fp8") else dtype
    kv_c, k_pe, cache, base = build(layout, tokens, lora, rope, bs, dtype, cache_dtype, scale, g)
    _, _, ref_cache, ref_base = build(layout, tokens, lora, rope, bs, dtype, cache_dtype, 1, g)
    num_slots = cache.shape[0] * cache.shape[1]
    slots = torch.randperm(num_slots, generator=g)[:n]
    slots[torch.rand(n, generator=g) < 0.2] = -1
    slots[0] = -3
    # skip_scale never reads the scale: hand it a value that would change every byte.
    s = torch.tensor([3.0 if skip else scale])
    if tile == "one":
        triton_mla._config_override = triton_mla.MLAKernelConfig(1, 1)
    elif tile == "wide":
        triton_mla._config_override = triton_mla.MLAKernelConfig(8, 4)
    triton_mla.concat_and_cache_mla(kv_c, k_pe, cache, slots, kvd, s, skip)
    reference_concat_and_cache_mla(kv_c, k_pe, ref_cache, slots, kvd, s, skip)
    got, want = base.view(torch.uint8), ref_base.view(torch.uint8)
    assert torch.equal(got, want), f"{int((got != want).sum())} bytes differ"
    # Rows written (both parts), padding and unmapped rows untouched.
    flat = cache.reshape(num_slots, lora + rope).view(torch.uint8)
    live = {int(v) for v in slots if v >= 0}
    assert all(bool((flat[r] == POISON).all()) for r in range(num_slots) if r not in live)
    assert sum(int((flat[r] != POISON).sum()) for r in live) > len(live) * (lora + rope) // 2


def test_the_rope_part_lands_after_the_latent() -> None:
    kv_c = torch.full((3, 16), 2.0)
    k_pe = torch.full((3, 8), -4.0)
    cache = torch.zeros(1, 4, 24, dtype=torch.uint8)
    triton_mla.concat_and_cache_mla(
        kv_c, k_pe, cache, torch.tensor([2, -1, 0]), "fp8", torch.ones(1)
    )
    # e4m3: 2.0 = 0x40, -4.0 = 0xC8
    assert cache[0, 2].tolist() == [0x40] * 16 + [0xC8] * 8
    assert cache[0, 0].tolist() == [0x40] * 16 + [0xC8] * 8
    assert cache[0, 1].tolist() == [0] * 24 and cache[0, 3].tolist() == [0] * 24


def test_float8_typed_cache() -> None:
    g = torch.Generator().manual_seed(5)
    kv_c, k_pe, _, _ = build("fused", 9, 32, 8, 4, torch.bfloat16, torch.uint8, 1.0, g)
    cache = torch.zeros(4, 4, 40, dtype=torch.float8_e4m3fn)
    ref = cache.clone()
    slots = torch.tensor([3, 1, -1, 15, 7, 0, 2, 9, 12])
    triton_mla.concat_and_cache_mla(kv_c, k_pe, cache, slots, "fp8", torch.ones(1), True)
    reference_concat_and_cache_mla(kv_c, k_pe, ref, slots, "fp8", torch.ones(1), True)
    assert torch.equal(cache.view(torch.uint8), ref.view(torch.uint8))


def test_empty_slot_mapping_writes_nothing() -> None:
    cache = torch.full((2, 4, 24), 7, dtype=torch.uint8)
    triton_mla.concat_and_cache_mla(
        torch.ones(3, 16), torch.ones(3, 8), cache, torch.empty(0, dtype=torch.int64), "fp8",
        torch.ones(1),
    )  # fmt: skip
    assert bool((cache == 7).all())


def test_fnuz_is_refused_with_a_typed_error() -> None:
    cache = torch.zeros(2, 4, 24, dtype=torch.uint8)
    with pytest.raises(UnsupportedOnDeviceError, match="cannot write e4m3fnuz"):
        triton_mla.concat_and_cache_mla(
            torch.ones(3, 16), torch.ones(3, 8), cache, torch.arange(3), "fp8_e4m3fnuz",
            torch.ones(1),
        )  # fmt: skip


@pytest.mark.parametrize(
    "kv_cache,k_pe,match",
    [
        (torch.zeros(2, 4, 23, dtype=torch.uint8), torch.ones(3, 8), "a latent of the wrong width"),
        (
            torch.zeros(2, 4, 24, dtype=torch.uint8),
            torch.ones(3, 8).half(),
            "k_pe must have kv_c's",
        ),
        (torch.zeros(2, 4, 24, dtype=torch.uint8), torch.ones(3, 1, 8), r"k_pe must be \[num_tok"),
    ],
)
def test_same_argument_checks_as_the_reference(
    kv_cache: torch.Tensor, k_pe: torch.Tensor, match: str
) -> None:
    args = (torch.ones(3, 16), k_pe, kv_cache, torch.arange(3), "fp8", torch.ones(1))
    with pytest.raises(CacheWriteArgumentError, match=match):
        triton_mla.concat_and_cache_mla(*args)
    with pytest.raises(CacheWriteArgumentError, match=match):
        reference_concat_and_cache_mla(*args)


@pytest.mark.parametrize(
    "over,match",
    [
        ({"kv_c": [[1.0] * 16] * 3}, "kv_c must be a tensor"),
        ({"scale": 1.0}, "scale must be a float32 tensor"),
        ({"skip_scale": 1}, "skip_scale must be a bool"),
        ({"skip_scale": [True]}, "skip_scale must be a bool"),
    ],
)
def test_non_tensor_arguments_get_the_typed_error(over: dict[str, object], match: str) -> None:
    args: dict[str, object] = {
        "kv_c": torch.ones(3, 16),
        "k_pe": torch.ones(3, 8),
        "kv_cache": torch.zeros(2, 4, 24, dtype=torch.uint8),
        "slot_mapping": torch.arange(3),
        "kv_cache_dtype": "fp8",
        "scale": torch.ones(1),
        "skip_scale": True,
    }
    triton_mla.concat_and_cache_mla(**args)  # type: ignore[arg-type]  # a plan for skip=True
    args.update(over)
    with pytest.raises(CacheWriteArgumentError, match=match):
        triton_mla.concat_and_cache_mla(**args)  # type: ignore[arg-type]


def test_cpu_tensors_without_the_interpreter_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET")
    cache = torch.zeros(2, 4, 24, dtype=torch.uint8)
    with pytest.raises(CacheWriteArgumentError, match="runs on CUDA tensors"):
        triton_mla.concat_and_cache_mla(
            torch.ones(3, 16), torch.ones(3, 8), cache, torch.arange(3), "fp8", torch.ones(1)
        )


def test_default_tile() -> None:
    assert triton_mla.default_mla_config(512, 64) == triton_mla.MLAKernelConfig(2, 2)
    assert triton_mla.default_mla_config(48, 24) == triton_mla.MLAKernelConfig(16, 2)
    assert triton_mla.default_mla_config(2048, 64) == triton_mla.MLAKernelConfig(1, 4)
