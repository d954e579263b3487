"""benchmarks/engine_kernel_check.py: the vLLM expectations encode the div.full.f32 finding.

On the H200, vLLM's Triton kernel wrote 177,543 bytes (2.0%) one code away from the IEEE
reference at scale 0.3 (Triton's `/` is div.full.f32), and the script exited 1 on two checks that
expected 0. Now it expects what was measured, and still fails on any other difference: bytes two
codes away, bytes where no 2-ulp division error reaches, bytes that Triton's own quotients do not
explain, or any difference for a power-of-two scale.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from kvscale.kernel.reference import reference_reshape_and_cache_flash

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    name = "kvscale_benchmarks_engine_kernel_check"
    spec = importlib.util.spec_from_file_location(
        name, ROOT / "benchmarks" / "engine_kernel_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check = _load()


# The H200's 177,543 bytes at scale 0.3, over its four bf16/fp16 cases (the split is made up).
SHARES = {("bf16", "random"): 44_386, ("bf16", "adversarial"): 44_386,
          ("fp16", "random"): 44_386, ("fp16", "adversarial"): 44_385}  # fmt: skip


def _h200_rows() -> list[dict[str, Any]]:
    """vLLM rows shaped like the H200 run (benchmarks/RESULTS.md): bf16/fp16 x fp8/fp8_e5m2 x
    4 scales x 2 kinds; the 0.3 rows hold the one-code differences (fp8_e5m2 stores the same
    e4m3 bytes), the per-head and e5m2 rows the two findings against their own references."""
    rows = []
    for dtype in ("bf16", "fp16"):
        for kv in ("fp8", "fp8_e5m2"):
            for scale in ("pow2", "plain", "0.3", "per-head"):
                for kind in ("random", "adversarial"):
                    n = SHARES[dtype, kind] if scale == "0.3" else 0
                    finding = 1_000 if kv == "fp8_e5m2" or scale == "per-head" else 0
                    rows.append({
                        "dtype": dtype, "kv": kv, "scale": scale, "kind": kind,
                        "kvscale_vs_ref": 0, "vllm_vs_ref": n + finding,
                        "vllm_vs_model": n, "vllm_vs_model_neighbours": n,
                        "vllm_vs_model_outside_risk": 0, "vllm_vs_divided_model": 0,
                    })  # fmt: skip
    return rows


def _failed(rows: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in check.checks_of(rows, [], True, True) if c["ok"] is False]


def test_the_h200_measurement_passes() -> None:
    rows = _h200_rows()
    assert sum(r["vllm_vs_model"] for r in rows if r["kv"] == "fp8") == 177_543
    assert _failed(rows) == []


@pytest.mark.parametrize(
    ("change", "failing"),
    [
        ({"vllm_vs_model_neighbours": -1}, "every differing byte is one code away"),
        ({"vllm_vs_model_outside_risk": 1}, "where a 2-ulp division error can change"),
        ({"vllm_vs_divided_model": 1}, "Triton's own quotients"),
    ],
)
def test_any_other_difference_fails(change: dict[str, int], failing: str) -> None:
    rows = copy.deepcopy(_h200_rows())
    row = next(r for r in rows if r["scale"] == "0.3")
    for key, delta in change.items():
        row[key] += delta
    assert [name for name in _failed(rows) if failing in name]


def test_a_difference_at_a_power_of_two_scale_fails() -> None:
    rows = copy.deepcopy(_h200_rows())
    row = next(r for r in rows if r["scale"] == "pow2")
    for key in ("vllm_vs_ref", "vllm_vs_model", "vllm_vs_model_neighbours"):
        row[key] += 1
    assert [name for name in _failed(rows) if "power-of-two" in name]


# --- the measurement itself, on the CPU: an engine that divides like Triton's `/` ---------------


def _reciprocal_division(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """A stand-in for div.full.f32 that the CPU can compute: x * fp32(1/s), rounded twice (within
    1.5 ulp of the exact quotient; it moves a few e4m3 codes at scale 0.3, like the GPU's)."""
    r = torch.tensor(1.0, dtype=torch.float32) / scale.reshape(-1)[:1].float().reshape(())
    return x.cpu().float() * r


def _engine(corrupt: bool = False) -> Any:
    """vLLM's kernel as measured: the approximate quotient, e4m3 bytes, head 0's scale; with
    ``corrupt`` one byte more, moved far (its exponent bits flipped)."""

    def write(
        key: Any, value: Any, kc: Any, vc: Any, slots: Any, kv: str, ks: Any, vs: Any
    ) -> None:
        one = torch.ones(1)
        qk, qv = _reciprocal_division(key, ks), _reciprocal_division(value, vs)
        reference_reshape_and_cache_flash(qk, qv, kc, vc, slots, "fp8", one, one)
        if corrupt:
            live = int(slots[slots >= 0][0])
            block, offset = divmod(live, kc.shape[1])
            kc[block, offset, 0, 0] ^= 0x40

    return write


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    from kvscale.kernel import triton_cache

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(triton_cache, "_config_override", None)


def test_the_probe_kernel_divides_in_the_interpreter_as_ieee(interpreted: None) -> None:
    """Under Triton's interpreter `/` is numpy's (IEEE): the probe's quotients are exact."""
    g = torch.Generator().manual_seed(3)
    x = (torch.randn(4, 8, 16, generator=g) * 3).to(torch.bfloat16)
    scale = torch.tensor([0.3])
    got = check.triton_quotients(x, scale)
    assert torch.equal(got.view(torch.int32), (x.float() / scale.reshape(())).view(torch.int32))


CASES = (("pow2", "fp8"), ("0.3", "fp8"), ("0.3", "fp8_e5m2"), ("per-head", "fp8"))


def _rows(
    monkeypatch: pytest.MonkeyPatch, engine: Any, cases: tuple[tuple[str, str], ...] = CASES
) -> list[dict[str, Any]]:
    from kvscale.kernel import triton_cache

    # The probe measures the stand-in division too (on a GPU it measures Triton's `/`); kvscale's
    # own kernel is not what is tested here: the reference stands in for it.
    monkeypatch.setattr(check, "triton_quotients", _reciprocal_division)
    monkeypatch.setattr(triton_cache, "reshape_and_cache_flash", reference_reshape_and_cache_flash)
    return [
        check.vllm_case("bf16", kv, scale, "adversarial", seed, 32, "cpu", engine)
        for seed, (scale, kv) in enumerate(cases, start=1)
    ]


def test_an_engine_that_divides_approximately_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(monkeypatch, _engine())
    moved = [r["vllm_vs_model"] for r in rows if r["scale"] == "0.3"]
    assert all(n > 0 for n in moved), moved  # the stand-in moves codes at 0.3, as the GPU does
    assert [r["vllm_vs_model"] for r in rows if r["scale"] == "pow2"] == [0]
    assert all(r["vllm_vs_model"] == r["vllm_vs_model_neighbours"] for r in rows)
    assert all(r["vllm_vs_model_outside_risk"] == 0 for r in rows)
    assert all(r["vllm_vs_divided_model"] == 0 for r in rows)
    assert [c["name"] for c in check.vllm_checks(rows) if c["ok"] is False] == []


def test_an_engine_that_moves_any_other_byte_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _rows(monkeypatch, _engine(corrupt=True), (("0.3", "fp8"),))
    failed = [c["name"] for c in check.vllm_checks(rows) if c["ok"] is False]
    assert any("Triton's own quotients" in name for name in failed), failed
    assert any("one code away" in name for name in failed), failed
