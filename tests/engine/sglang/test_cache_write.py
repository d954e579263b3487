"""kvscale.engine.sglang.cache_write: SGLang 0.5.23's FP8 cache write, emulated on the CPU to
the exact byte (the division in the model dtype, the torch cast of each pinned release).

Expected bytes are computed by hand (comments show the arithmetic). The emulation's cast is
also checked against the installed torch's own ``.to(float8_*)`` on every bf16 and fp16 value."""

from __future__ import annotations

import os
import struct

import pytest
import torch

from kvscale.engine.sglang.cache_write import (
    PINNED_TORCH,
    TORCH_2_11,
    TORCH_2_14_1,
    TorchFP8Cast,
    sglang_cache_write,
    sglang_divide,
    sglang_pool_format,
    torch_cast_for,
    torch_fp8_cast_bits,
)
from kvscale.errors import UsageError
from kvscale.kernel import E4M3FN, E4M3FNUZ, E5M2, CacheWriteArgumentError
from kvscale.kernel.reference import quantize_to_bits

os.environ.setdefault("HF_HUB_OFFLINE", "1")


NAN = float("nan")

INF = float("inf")


def _bf16(values: list[float]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.float32).to(torch.bfloat16)


def _hex(t: torch.Tensor) -> list[str]:
    return [f"0x{int(b):02x}" for b in t.reshape(-1).tolist()]


def _f32(v: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", v))[0])


def test_divisor_is_the_model_dtype_scale() -> None:
    # bf16(0.3) = 0.30078125 (77/256). 1.28125 / 0.30078125 = 328/77 = 4.2597..., rounded to bf16
    # (spacing 1/32 in [4, 8)) is 4.25: the e4m3 midpoint of 4.0 and 4.5, so RNE gives 4.0 (0x48).
    # Divided by the float32 0.3 instead: 4.2708 -> bf16 4.28125 -> 0x49.
    x = _bf16([1.28125])
    out = sglang_cache_write(x, torch.tensor(0.3), E4M3FN)
    assert out.divided.item() == 4.25
    assert _hex(out.bits) == ["0x48"]
    # vLLM divides in float32 and rounds once: 1.28125 / 0.3 = 4.2708 -> 0x49.
    assert _hex(quantize_to_bits(x, torch.tensor([0.3]), E4M3FN)) == ["0x49"]
    # Single rounding even with SGLang's own divisor: 4.2597 > 4.25 -> 0x49; the difference is
    # the double rounding through bf16.
    assert _hex(quantize_to_bits(x, torch.tensor([0.30078125]), E4M3FN)) == ["0x49"]


def test_division_fp16_and_fp32_model_dtypes() -> None:
    # fp16(0.3) = 0.300048828125 (1229/4096); 1 / that = 3.33279 -> fp16 (spacing 2^-9 in [2, 4))
    # 1706 * 2^-9 = 3.33203125. By the float32 0.3: 3.33333 -> 1707 * 2^-9 = 3.333984375.
    x16 = torch.tensor([1.0], dtype=torch.float16)
    assert sglang_divide(x16, torch.tensor(0.3)).item() == 3.33203125
    # A float32 model divides by the float32 scale itself.
    x32 = torch.tensor([3.0], dtype=torch.float32)
    assert sglang_divide(x32, torch.tensor(0.3)).item() == _f32(3.0 / _f32(0.3))


def test_python_float_scale_is_a_reciprocal_multiply() -> None:
    # CUDA's CPU-scalar path: x * float32(1 / float32(s)), here differing from x / s by one ulp.
    x = torch.tensor([1.001], dtype=torch.float32)
    xs = _f32(1.001)
    recip = _f32(1.0 / _f32(0.3))
    assert sglang_divide(x, 0.3).item() == _f32(xs * recip) == 3.3366668224334717
    assert sglang_divide(x, torch.tensor(0.3)).item() == _f32(xs / _f32(0.3)) == 3.3366665840148926


def test_no_scale_is_a_plain_cast_and_input_is_not_modified() -> None:
    x = _bf16([3.0, -1.5])
    before = x.clone()
    out = sglang_cache_write(x, None, E4M3FN)
    assert torch.equal(x, before)
    assert torch.equal(out.divided, before)
    assert _hex(out.bits) == ["0x44", "0xbc"]  # 3.0 = 1.5 * 2^1, -1.5 = -(1.5 * 2^0)


def test_nan_after_division_is_positive_canonical() -> None:
    # CUDA's float -> bf16/fp16 conversion writes 0x7FFF for every NaN; torch's CPU one 0xFFFF.
    for dtype, view, canonical in (
        (torch.bfloat16, torch.int16, 0x7FFF),
        (torch.float16, torch.int16, 0x7FFF),
        (torch.float32, torch.int32, 0x7FFFFFFF),
    ):
        x = torch.tensor([-NAN, NAN], dtype=torch.float32).to(dtype)
        out = sglang_cache_write(x, torch.tensor(0.5), E4M3FN)
        assert out.divided.view(view).tolist() == [canonical, canonical]
        assert _hex(out.bits) == ["0x7f", "0x7f"]
        assert out.became_nan == 0


def test_nan_sign_without_division() -> None:
    x = torch.tensor([-NAN], dtype=torch.float32)
    assert _hex(sglang_cache_write(x, None, E4M3FN).bits) == ["0xff"]  # c10 keeps the sign
    assert _hex(sglang_cache_write(x, None, E5M2).bits) == ["0xff"]
    hw = TorchFP8Cast("hw", e4m3fn_saturates=True, nan_sign_kept=False)
    assert _hex(sglang_cache_write(x, None, E4M3FN, torch_cast=hw).bits) == ["0x7f"]


# bf16 values (all exact in bf16), divided by 1.0.
_E4M3_EDGES = [448.0, 464.0, 470.0, 480.0, 9984.0, INF, -INF, -470.0, NAN, -0.0]


def test_e4m3fn_cast_torch_2_14_1_saturates() -> None:
    out = sglang_cache_write(_bf16(_E4M3_EDGES), torch.tensor(1.0), E4M3FN)
    assert out.torch_cast == TORCH_2_14_1 and TORCH_2_14_1.torch_version == PINNED_TORCH
    # 464 is the midpoint of 448 (mantissa 110, even) and 480: ties to 448. Past it: +-448.
    assert _hex(out.bits) == [
        "0x7e", "0x7e", "0x7e", "0x7e", "0x7e", "0x7e", "0xfe", "0xfe", "0x7f", "0x80",
    ]  # fmt: skip
    assert (out.became_nan, out.saturated, out.became_inf) == (0, 6, 0)


def test_e4m3fn_cast_torch_2_11_turns_overflow_into_nan() -> None:
    out = sglang_cache_write(_bf16(_E4M3_EDGES), torch.tensor(1.0), E4M3FN, torch_cast=TORCH_2_11)
    # Everything that rounds past 448 is the NaN pattern, sign bit kept.
    assert _hex(out.bits) == [
        "0x7e", "0x7e", "0x7f", "0x7f", "0x7f", "0x7f", "0xff", "0xff", "0x7f", "0x80",
    ]  # fmt: skip
    assert (out.became_nan, out.saturated, out.became_inf) == (6, 0, 0)


def test_e5m2_cast_overflows_to_inf() -> None:
    # e5m2: max 57344 (0x7B); 60928 rounds down to it; 61440 is the midpoint of 57344 (mantissa 11,
    # odd) and 65536 (the inf pattern), so it ties to inf.
    x = _bf16([57344.0, 60928.0, 61440.0, -1e5, INF, NAN])
    for cast in (TORCH_2_11, TORCH_2_14_1):
        out = sglang_cache_write(x, torch.tensor(1.0), E5M2, torch_cast=cast)
        assert _hex(out.bits) == ["0x7b", "0x7b", "0x7c", "0xfc", "0x7c", "0x7f"]
        assert (out.became_nan, out.became_inf, out.saturated) == (0, 2, 0)


def test_e4m3fnuz_cast() -> None:
    # fnuz: max 240 (0x7F); 247 rounds to it, 248 ties to 256 = overflow: the single NaN 0x80,
    # as are inf and NaN; no negative zero.
    x = _bf16([240.0, 247.0, 248.0, -248.0, -INF, NAN, -0.0, -(2.0**-12)])
    for cast in (TORCH_2_11, TORCH_2_14_1):
        out = sglang_cache_write(x, torch.tensor(1.0), E4M3FNUZ, torch_cast=cast)
        assert _hex(out.bits) == ["0x7f", "0x7f", "0x80", "0x80", "0x80", "0x80", "0x00", "0x00"]
        assert out.became_nan == 3


def test_ties_round_to_even() -> None:
    # 1.0625: midpoint of 1.0 (0x38) and 1.125 (0x39) -> 0x38; 1.1875: of 1.125 and 1.25 (0x3A)
    # -> 0x3A; 2^-10: half the smallest subnormal 2^-9 -> 0; 3 * 2^-10: midpoint of 2^-9 (0x01)
    # and 2^-8 (0x02) -> 0x02; negative ties mirror.
    x = _bf16([1.0625, 1.1875, 2.0**-10, 3 * 2.0**-10, -1.0625, -(2.0**-10)])
    bits = sglang_cache_write(x, torch.tensor(1.0), E4M3FN).bits
    assert _hex(bits) == ["0x38", "0x3a", "0x00", "0x02", "0xb8", "0x80"]
    # e5m2: 1.125 is the midpoint of 1.0 (0x3C) and 1.25 (0x3D) -> 0x3C.
    assert _hex(sglang_cache_write(_bf16([1.125]), None, E5M2).bits) == ["0x3c"]


@pytest.mark.parametrize("fmt", [E4M3FN, E5M2, E4M3FNUZ], ids=lambda f: f.name)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_cast_matches_installed_torch_on_every_value(fmt: object, dtype: torch.dtype) -> None:
    # Every 16-bit pattern through the emulation for the installed torch's semantics, against
    # that torch's own CPU cast (which keeps NaN signs, as c10 does).
    x = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype)
    mine = torch_fp8_cast_bits(x, fmt, torch_cast_for(torch.__version__))  # type: ignore[arg-type]
    theirs = x.to(getattr(torch, fmt.torch_dtype)).view(torch.uint8)  # type: ignore[attr-defined]
    assert torch.equal(mine, theirs)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_2_11_differs_from_saturating_only_where_it_writes_nan(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(20000, generator=g) * 300).to(dtype)
    x[:4] = torch.tensor([INF, -INF, NAN, 464.0]).to(dtype)
    old = sglang_cache_write(x, torch.tensor(0.7), E4M3FN, torch_cast=TORCH_2_11)
    new = sglang_cache_write(x, torch.tensor(0.7), E4M3FN, torch_cast=TORCH_2_14_1)
    differ = old.bits != new.bits
    assert int(differ.sum()) == old.became_nan == new.saturated > 0
    assert set(_hex(old.bits[differ])) <= {"0x7f", "0xff"}
    assert set(_hex(new.bits[differ])) <= {"0x7e", "0xfe"}


def test_fp32_model_matches_vllm_style_bytes() -> None:
    # A float32 model: no rounding of the divisor or quotient, and the pinned cast saturates:
    # SGLang's bytes are vLLM's (reference) bytes, NaN byte included.
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 8, 64, generator=g) * 40
    x.view(-1)[:3] = torch.tensor([NAN, INF, -1e6])
    s = torch.tensor(0.0173)
    ours = sglang_cache_write(x, s, E4M3FN).bits
    assert torch.equal(ours, quantize_to_bits(x, s.reshape(1), E4M3FN))


def test_torch_cast_for_versions() -> None:
    assert torch_cast_for("2.11.0+cu130").e4m3fn_saturates is False
    assert torch_cast_for("2.10.1").e4m3fn_saturates is False
    assert torch_cast_for("2.12.0.dev20260420+cu130").e4m3fn_saturates is True
    assert torch_cast_for("2.14.1").e4m3fn_saturates is True
    assert torch_cast_for("3.0").e4m3fn_saturates is True
    with pytest.raises(UsageError):
        torch_cast_for("nightly")


def test_scale_and_input_checks() -> None:
    x = _bf16([1.0, 2.0])
    with pytest.raises(CacheWriteArgumentError, match="Only support per-tensor scaling factor"):
        sglang_cache_write(x, torch.tensor([1.0, 2.0]), E4M3FN)
    with pytest.raises(CacheWriteArgumentError, match="float32"):
        sglang_cache_write(x, torch.tensor(1.0, dtype=torch.float64), E4M3FN)
    with pytest.raises(CacheWriteArgumentError, match="bfloat16, float16 or float32"):
        sglang_cache_write(x.to(torch.float64), torch.tensor(1.0), E4M3FN)
    with pytest.raises(CacheWriteArgumentError, match="unknown pool format"):
        sglang_cache_write(x, torch.tensor(1.0), "e3m4")
    # A [1] tensor is a per-tensor scale too; the pool may be named.
    assert _hex(sglang_cache_write(x, torch.tensor([2.0]), "e4m3fn").bits) == ["0x30", "0x38"]


def test_pool_formats() -> None:
    assert sglang_pool_format("fp8_e4m3") is E4M3FN
    assert sglang_pool_format("fp8_e5m2") is E5M2
    assert sglang_pool_format("fp8_e5m2", rocm_fnuz=True) is E4M3FNUZ
    with pytest.raises(UsageError):
        sglang_pool_format("auto")


@pytest.mark.parametrize("fmt", [E4M3FN, E5M2, E4M3FNUZ], ids=lambda f: f.name)
def test_cast_matches_installed_torch_on_float32(fmt: object) -> None:
    from kvscale.kernel.reference import make_stress_values

    g = torch.Generator().manual_seed(7)
    parts = [
        make_stress_values((64, 4, 64), kind=kind, dtype=torch.float32, scale=torch.tensor([s]),
                           fmt=fmt, generator=g).reshape(-1)  # type: ignore[arg-type]
        for kind in ("random", "heavy", "adversarial")
        for s in (1.0, 0.37)
    ]  # fmt: skip
    x = torch.cat(parts)
    mine = torch_fp8_cast_bits(x, fmt, torch_cast_for(torch.__version__))  # type: ignore[arg-type]
    theirs = x.to(getattr(torch, fmt.torch_dtype)).view(torch.uint8)  # type: ignore[attr-defined]
    assert torch.equal(mine, theirs)
