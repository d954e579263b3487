"""benchmarks/bench_plan_parts.py runs, checks that each pair computes the same values, and
prints one line per pair with its ratio."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("torch")

from support.modules import load_module  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_small_run_prints_every_pair(capsys: pytest.CaptureFixture[str]) -> None:
    bench = load_module(
        "kvscale_benchmarks_plan_parts", ROOT / "benchmarks" / "bench_plan_parts.py"
    )
    argv = ["--runs", "1", "--vocab", "1000", "--tokens", "64", "--heads", "2", "--hidden", "64"]
    assert bench.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[1:]] == [
        "log_softmax",
        "kl_chunks",
        "4over6",
        "e2m1",
        "nvfp4_read",
        "4over6_read",
        "round_half",
        "fp8_read",
        "int8_pth_read",
        "fp8_pth_read",
        "int4_pth_read",
        "head_slice",
        "logits_head",
    ]
    assert all(re.search(r"old/new +\d+\.\d\dx$", line) for line in lines[1:])
