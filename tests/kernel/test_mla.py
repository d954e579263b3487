"""The CPU reference of vLLM's MLA latent-cache write: exact bytes, layouts, padding, errors."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

from kvscale.kernel import (
    CacheWriteArgumentError,
    UnknownKVCacheDtypeError,
    dequantize_mla,
    make_stress_values,
    reference_concat_and_cache_mla,
    vllm_mla_skip_scale,
)
from kvscale.kernel.formats import E4M3FN, E5M2
from kvscale.kernel.mla import MLA_KV_CACHE_DTYPES, validate_mla_write_args

NAN = float("nan")
INF = float("inf")
POISON = 0xC3


def write_one_row(
    kv_c_vals: list[float],
    k_pe_vals: list[float],
    kv_cache_dtype: str = "fp8",
    scale: float = 1.0,
    dtype: torch.dtype = torch.float32,
    skip_scale: bool = False,
) -> list[int]:
    """Write one token to slot 5 of a poisoned 2 x 4 cache; return that row's bytes."""
    kv_c = torch.tensor([kv_c_vals], dtype=torch.float32).to(dtype)
    k_pe = torch.tensor([k_pe_vals], dtype=torch.float32).to(dtype)
    cache = torch.full((2, 4, kv_c.shape[1] + k_pe.shape[1]), POISON, dtype=torch.uint8)
    before = cache.clone()
    reference_concat_and_cache_mla(
        kv_c, k_pe, cache, torch.tensor([5]), kv_cache_dtype, torch.tensor([scale]), skip_scale
    )
    others = torch.ones(2, 4, dtype=torch.bool)
    others[1, 1] = False
    assert torch.equal(cache[others], before[others]), "only slot 5 may change"
    return [int(b) for b in cache[1, 1].tolist()]


# --- exact bytes -------------------------------------------------------------------------------


def test_e4m3_row_bytes_ties_subnormals_saturation_zeros_nan() -> None:
    # kv_c: ties (17 -> 16 even, 19 -> 20 even), a clip-bound tie (464 -> 448), saturation and
    # inf, signed zeros, NaN of both signs. k_pe (offset 8): subnormals and their ties.
    kv_c = [17.0, 19.0, 464.0, -500.0, INF, -INF, -0.0, NAN]
    k_pe = [2.0**-9, 2.0**-10, 3 * 2.0**-10, -(2.0**-12), -NAN, 0.0]
    row = write_one_row(kv_c, k_pe)
    assert row[:8] == [0x58, 0x5A, 0x7E, 0xFE, 0x7E, 0xFE, 0x80, 0x7F]
    assert row[8:] == [0x01, 0x00, 0x02, 0x80, 0x7F, 0x00]


def test_one_scale_divides_both_parts() -> None:
    # 34 / 2 = 17 (tie -> 0x58) in kv_c and in k_pe: the one scale covers the whole row.
    row = write_one_row([34.0, 4.0], [34.0, -1000.0], scale=2.0)
    assert row == [0x58, 0x40, 0x58, 0xFE]


def test_true_division_not_reciprocal() -> None:
    # bf16 x = 0.00439453125, s = float32(0.3): x / s = 0.01464843656... lies just below the
    # midpoint 15 * 2^-10 of 0x07 and 0x08, so 0x07; x * (1/s) lands on it and ties to 0x08.
    row = write_one_row([0.00439453125], [0.00439453125], scale=0.3, dtype=torch.bfloat16)
    assert row == [0x07, 0x07]


def test_e5m2_row_bytes() -> None:
    row = write_one_row([61440.0, 1e6, -INF, NAN], [2.0**-16, 3 * 2.0**-17], "fp8_e5m2")
    assert row == [0x7B, 0x7B, 0xFB, 0x7F, 0x01, 0x02]


def test_fnuz_bytes_and_the_fp16_double_rounding() -> None:
    assert write_one_row([500.0, -0.0, NAN], [-NAN, INF], "fp8_e4m3fnuz") == [
        0x7F, 0x00, 0x80, 0x80, 0x7F,
    ]  # fmt: skip
    # x = 1.0, s = float32(1 / 1.0626): x / s = 1.0626000..., above the e4m3 midpoint 1.0625
    # between 1.0 and 1.125. ROCm divides fp16 inputs in fp16: 1.0626 -> 1.0625, a tie -> 1.0
    # (0x40 in fnuz); bf16 and fp32 inputs keep the fp32 quotient -> 1.125 (0x41). NVIDIA
    # (e4m3fn) divides every input dtype in fp32 -> 1.125 (0x39).
    s = float(torch.tensor(1 / 1.0626, dtype=torch.float32))
    assert write_one_row([1.0], [1.0], "fp8_e4m3fnuz", s, torch.float16) == [0x40, 0x40]
    assert write_one_row([1.0], [1.0], "fp8_e4m3fnuz", s, torch.bfloat16) == [0x41, 0x41]
    assert write_one_row([1.0], [1.0], "fp8_e4m3fnuz", s, torch.float32) == [0x41, 0x41]
    assert write_one_row([1.0], [1.0], "fp8", s, torch.float16) == [0x39, 0x39]


@pytest.mark.parametrize("kv_cache_dtype", ["auto", "bfloat16", "float16"])
def test_plain_copy_keeps_every_bit(kv_cache_dtype: str) -> None:
    dtype = torch.float16 if kv_cache_dtype == "float16" else torch.bfloat16
    raw = [0x7FC1, 0xFF81, 0x0001, 0x8000, 0x7F80, 0x3F80]
    bits = torch.tensor([b - 0x10000 if b >= 0x8000 else b for b in raw], dtype=torch.int16)
    kv_c = bits[:4].view(dtype).reshape(1, 4)  # NaN payloads, a subnormal, -0.0
    k_pe = bits[4:].view(dtype).reshape(1, 2)
    cache = torch.zeros(2, 4, 6, dtype=dtype)
    reference_concat_and_cache_mla(
        kv_c, k_pe, cache, torch.tensor([6]), kv_cache_dtype, torch.tensor([float("nan")])
    )
    assert cache[1, 2].view(torch.int16).tolist() == bits.tolist()
    assert int(cache.view(torch.int16).count_nonzero()) == 6


# --- skip_scale --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize("kv_cache_dtype", ["fp8", "fp8_e5m2", "fp8_e4m3fnuz"])
def test_skip_scale_at_one_is_bit_identical_to_dividing_by_one(
    kv_cache_dtype: str, dtype: torch.dtype
) -> None:
    fmt = E5M2 if kv_cache_dtype == "fp8_e5m2" else E4M3FN
    g = torch.Generator().manual_seed(3)
    one = torch.tensor([1.0])
    x = torch.cat(
        [
            make_stress_values((300, 1, 80), kind=k, dtype=dtype, scale=one, fmt=fmt, generator=g)
            for k in ("random", "heavy", "adversarial")
        ]
    ).reshape(900, 80)
    kv_c, k_pe = x[:, :64], x[:, 64:]
    slots = torch.randperm(1024, generator=g)[:900]
    caches = [torch.full((64, 16, 80), POISON, dtype=torch.uint8) for _ in range(3)]
    reference_concat_and_cache_mla(kv_c, k_pe, caches[0], slots, kv_cache_dtype, one, False)
    reference_concat_and_cache_mla(kv_c, k_pe, caches[1], slots, kv_cache_dtype, one, True)
    # skip_scale never reads the scale: any value gives the same bytes.
    reference_concat_and_cache_mla(
        kv_c, k_pe, caches[2], slots, kv_cache_dtype, torch.tensor([0.3]), True
    )
    assert torch.equal(caches[0], caches[1]) and torch.equal(caches[0], caches[2])
    assert int((caches[0] != POISON).sum()) > 900 * 70  # written (poison is a valid fp8 byte)


def test_vllm_skip_scale_rule() -> None:
    # mla_attention.py MLAAttention.update_kv_cache
    assert vllm_mla_skip_scale("fp8", 1.0)
    assert vllm_mla_skip_scale("fp8_e4m3", 1.0)
    assert vllm_mla_skip_scale("fp8_e5m2", 1.0)
    assert vllm_mla_skip_scale("fp8_e4m3fnuz", 1.0)
    assert not vllm_mla_skip_scale("fp8", 0.5)
    assert not vllm_mla_skip_scale("fp8", 1.0000001)
    assert not vllm_mla_skip_scale("auto", 1.0)
    assert not vllm_mla_skip_scale("bfloat16", 1.0)


# --- layouts and padding -----------------------------------------------------------------------


def test_padding_slots_and_extra_rows_untouched_on_strided_views() -> None:
    g = torch.Generator().manual_seed(11)
    tokens, lora, rope, q_lora = 12, 32, 8, 24
    # k_pe and kv_c as vLLM slices them out of the fused q_a/kv_a projection output.
    fused = torch.randint(-8, 9, (tokens, q_lora + lora + rope), generator=g).to(torch.bfloat16)
    kv_c = fused[:, q_lora : q_lora + lora]
    k_pe = fused[:, q_lora + lora :]
    # A cache whose rows are padded (entry stride 48 > 40) and whose blocks are not adjacent.
    base = torch.full((5, 4, 48), POISON, dtype=torch.uint8)
    cache = base[1:, :, : lora + rope]
    slots = torch.tensor([3, -1, 0, 15, -7, 8, 9, 1, 12, 2])  # 10 of 12 rows; two padding
    reference_concat_and_cache_mla(kv_c, k_pe, cache, slots, "fp8", torch.tensor([0.25]))
    assert bool((base[0] == POISON).all()) and bool((base[..., lora + rope :] == POISON).all())
    flat = cache.reshape(16, lora + rope)
    for t, slot in enumerate(slots.tolist()):
        if slot >= 0:
            want = (fused[t, q_lora:].float() / 0.25).to(torch.float8_e4m3fn).view(torch.uint8)
            assert torch.equal(flat[slot], want)
    written = {s for s in slots.tolist() if s >= 0}
    for slot in set(range(16)) - written:
        assert bool((flat[slot] == POISON).all()), slot


def test_float8_typed_cache_and_dequantize_round_trip() -> None:
    kv_c = torch.tensor([[1.0, -2.0, 3.0, 17.0], [0.5, 6.0, -8.0, 0.0]])
    k_pe = torch.tensor([[12.0, -0.25], [448.0, 500.0]])
    scale = torch.tensor([0.5])
    cache = torch.zeros(2, 2, 6, dtype=torch.float8_e4m3fn)
    slots = torch.tensor([3, -1])
    reference_concat_and_cache_mla(kv_c, k_pe, cache, slots, "fp8_e4m3", scale)
    rows = dequantize_mla(cache.view(torch.uint8), slots, "fp8_e4m3", scale, 4)
    assert rows.tokens.tolist() == [0]
    assert rows.kv_c.tolist() == [[1.0, -2.0, 3.0, 16.0]]  # 34 -> 32 (tie to even) * 0.5
    assert rows.k_pe.tolist() == [[12.0, -0.25]]
    copy = torch.zeros(2, 2, 6)
    reference_concat_and_cache_mla(kv_c, k_pe, copy, torch.tensor([0, 1]), "auto", scale)
    back = dequantize_mla(copy, torch.tensor([1, 0]), "auto", torch.tensor([9.0]), 4)
    assert back.kv_c.tolist() == [kv_c[1].tolist(), kv_c[0].tolist()]
    assert back.k_pe.tolist() == [k_pe[1].tolist(), k_pe[0].tolist()]


def test_nothing_to_write() -> None:
    cache = torch.full((1, 4, 6), POISON, dtype=torch.uint8)
    x, p, one = torch.ones(3, 4), torch.ones(3, 2), torch.ones(1)
    reference_concat_and_cache_mla(x, p, cache, torch.empty(0, dtype=torch.int64), "fp8", one)
    reference_concat_and_cache_mla(x, p, cache, torch.tensor([-1, -1]), "fp8", one)
    assert bool((cache == POISON).all())


# --- argument errors ---------------------------------------------------------------------------


def _args(**over: object) -> dict[str, object]:
    args: dict[str, object] = {
        "kv_c": torch.zeros(4, 8, dtype=torch.bfloat16),
        "k_pe": torch.zeros(4, 2, dtype=torch.bfloat16),
        "kv_cache": torch.zeros(2, 4, 10, dtype=torch.uint8),
        "slot_mapping": torch.arange(4),
        "kv_cache_dtype": "fp8",
        "scale": torch.ones(1),
        "skip_scale": False,
    }
    args.update(over)
    return args


BF = torch.bfloat16
ERRORS = [
    ({"kv_cache_dtype": "fp8_ds_mla"}, "sparse DeepSeek cache format"),
    ({"kv_cache_dtype": "float32"}, "does not accept kv_cache_dtype 'float32'"),
    ({"kv_cache_dtype": "half"}, "does not accept kv_cache_dtype 'half'"),
    ({"skip_scale": 1}, "skip_scale must be a bool"),
    ({"kv_c": torch.zeros(4, 1, 8, dtype=BF)}, r"kv_c must be \[num_tokens, kv_lora_rank\]"),
    ({"k_pe": torch.zeros(4, 1, 2, dtype=BF)}, r"k_pe must be \[num_tokens, rope_dim\]"),
    ({"kv_c": [[0.0] * 8] * 4}, "kv_c must be a tensor"),
    ({"kv_c": torch.zeros(4, 8, dtype=torch.float64)}, "kv_c must be bfloat16"),
    ({"k_pe": torch.zeros(4, 2, dtype=torch.int8)}, "k_pe must be bfloat16"),
    ({"k_pe": torch.zeros(4, 2, dtype=torch.float16)}, "k_pe must have kv_c's dtype"),
    ({"kv_c": torch.zeros(4, 16, dtype=BF)[:, ::2]}, "kv_c's rows must be contiguous"),
    ({"k_pe": torch.zeros(4, 2, 3, dtype=BF)[..., 0]}, "k_pe's rows must be contiguous"),
    ({"k_pe": torch.zeros(4, 0, dtype=BF)}, "k_pe has an empty row"),
    ({"kv_cache": torch.zeros(8, 10, dtype=torch.uint8)}, r"kv_cache must be \[num_blocks"),
    ({"kv_cache": torch.zeros(2, 4, 9, dtype=torch.uint8)}, "a latent of the wrong width"),
    ({"kv_cache": torch.zeros(2, 4, 20, dtype=torch.uint8)[..., ::2]}, "rows must be contiguous"),
    ({"kv_cache": torch.zeros(2, 4, 10, dtype=BF)}, "needs a uint8 or torch.float8_e4m3fn"),
    (
        {
            "kv_cache": torch.zeros(2, 4, 10, dtype=torch.float8_e4m3fn),
            "kv_cache_dtype": "fp8_e5m2",
        },
        "needs a uint8 or torch.float8_e5m2",
    ),
    ({"kv_cache_dtype": "auto"}, "is a plain copy: kv_cache must have kv_c's dtype"),
    (
        {
            "kv_cache_dtype": "bfloat16",
            "kv_c": torch.zeros(4, 8, dtype=torch.float16),
            "k_pe": torch.zeros(4, 2, dtype=torch.float16),
            "kv_cache": torch.zeros(2, 4, 10, dtype=torch.float16),
        },
        "needs a bfloat16 kv_cache",
    ),
    ({"slot_mapping": torch.arange(4, dtype=torch.int32)}, "slot_mapping must be a 1-D int64"),
    ({"slot_mapping": torch.arange(4).reshape(2, 2)}, "slot_mapping must be a 1-D int64"),
    ({"slot_mapping": torch.arange(5)}, "slot_mapping has 5 entries but kv_c/k_pe have 4/4"),
    ({"k_pe": torch.zeros(3, 2, dtype=BF)}, "slot_mapping has 4 entries but kv_c/k_pe have 4/3"),
    ({"scale": 1.0}, "scale must be a float32 tensor"),
    ({"scale": torch.ones(1, dtype=torch.float64)}, "scale must be a float32 tensor with 1 el"),
    ({"scale": torch.ones(2)}, "scale must be a float32 tensor with 1 element"),
    ({"scale": torch.ones(1, device="meta")}, "all tensors must be on one device"),
    ({"slot_mapping": torch.arange(4, device="meta")}, "all tensors must be on one device"),
]


@pytest.mark.parametrize("over,match", ERRORS, ids=[m[:40] for _, m in ERRORS])
def test_argument_errors(over: dict[str, object], match: str) -> None:
    args = _args(**over)
    with pytest.raises(CacheWriteArgumentError, match=match):
        reference_concat_and_cache_mla(**args)  # type: ignore[arg-type]
    with pytest.raises(CacheWriteArgumentError, match=match):
        validate_mla_write_args(**args)  # type: ignore[arg-type]


def test_unknown_dtype_is_typed() -> None:
    with pytest.raises(UnknownKVCacheDtypeError, match="fp9"):
        reference_concat_and_cache_mla(**_args(kv_cache_dtype="fp9"))  # type: ignore[arg-type]


def test_slot_errors_found_by_the_reference() -> None:
    with pytest.raises(CacheWriteArgumentError, match="slot 8 is past the cache's 8 slots"):
        reference_concat_and_cache_mla(**_args(slot_mapping=torch.tensor([0, 8, -1, 1])))  # type: ignore[arg-type]
    with pytest.raises(CacheWriteArgumentError, match="two tokens to the same cache slot"):
        reference_concat_and_cache_mla(**_args(slot_mapping=torch.tensor([2, 5, -1, 2])))  # type: ignore[arg-type]


def test_dequantize_mla_errors() -> None:
    cache = torch.zeros(2, 4, 10, dtype=torch.uint8)
    slots = torch.arange(3)
    with pytest.raises(CacheWriteArgumentError, match="kv_lora_rank 10 leaves no kv_c or no k_pe"):
        dequantize_mla(cache, slots, "fp8", torch.ones(1), 10)
    with pytest.raises(CacheWriteArgumentError, match="scale must be a float32 tensor"):
        dequantize_mla(cache, slots, "fp8", torch.ones(2), 8)
    with pytest.raises(CacheWriteArgumentError, match="a latent of the wrong width|must be"):
        dequantize_mla(cache[0], slots, "fp8", torch.ones(1), 8)
    with pytest.raises(CacheWriteArgumentError, match="slot 9 is past"):
        dequantize_mla(cache, torch.tensor([9]), "fp8", torch.ones(1), 8)
    with pytest.raises(CacheWriteArgumentError, match="sparse DeepSeek"):
        dequantize_mla(cache, slots, "nvfp4_ds_mla", torch.ones(1), 8)


def test_accepted_dtype_strings() -> None:
    assert MLA_KV_CACHE_DTYPES == (
        "auto", "float16", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz",
    )  # fmt: skip


@pytest.mark.slow  # a fresh interpreter that imports torch: two seconds
def test_triton_kernel_module_imports_without_triton() -> None:
    code = (
        "import os, sys; sys.modules['triton'] = None; os.environ['TRITON_INTERPRET'] = '1'\n"
        "import torch\n"
        "import kvscale.kernel as k\n"
        "try:\n"
        "    k.concat_and_cache_mla(torch.ones(2, 8), torch.ones(2, 2),\n"
        "        torch.zeros(1, 4, 10, dtype=torch.uint8), torch.arange(2), 'fp8', torch.ones(1))\n"
        "except k.TritonUnavailableError as e:\n"
        "    print('unavailable:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "unavailable: the GPU MLA cache-write kernel needs Triton" in out.stdout
