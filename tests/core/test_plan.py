"""``kvscale plan`` (kvscale.core.plan): the candidates come from the engine's rules, every
measured number is the model's own run, the choice follows the budget and the byte counts, and
skipped layers are confirmed by a run of exactly that configuration."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
torch = pytest.importorskip("torch")

from support.models import random_samples, save_tiny  # noqa: E402

from kvscale.cache_formats import FP8_E4M3, INT8_PER_TOKEN_HEAD  # noqa: E402
from kvscale.core.inspect import inspect_checkpoint  # noqa: E402
from kvscale.core.plan import (  # noqa: E402
    Candidate,
    CandidateResult,
    LayerShare,
    PlanOptions,
    _choose,
    candidates_for,
    plan_model,
)
from kvscale.engine.options import EngineOptions  # noqa: E402
from kvscale.errors import UsageError  # noqa: E402
from kvscale.model.capture import capture_kv_amax  # noqa: E402
from kvscale.model.evaluate import CacheVariant, evaluate_model  # noqa: E402
from kvscale.model.load import load_model  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny("llama", tmp_path_factory.mktemp("plan") / "llama")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("data") / "ids.jsonl"
    with open(path, "w") as f:
        for sample in random_samples((24, 24, 24), 5):
            f.write(json.dumps({"input_ids": list(sample)}) + "\n")
    return path


# --- candidates ------------------------------------------------------------------------------


def test_vllm_candidates_come_from_its_dtypes_and_backends(tiny: Path) -> None:
    report = inspect_checkpoint(tiny, EngineOptions(engine="vllm"))
    got = {c.name: c for c in candidates_for(report, EngineOptions(engine="vllm"), 16, 2)}
    defaults = sorted(n for n, c in got.items() if c.default and c.format.reference)
    assert defaults == [
        "fp8-per-head:calibrated",
        "fp8:calibrated",
        "fp8:unit",
        "fp8_per_token_head",
        "int4_per_token_head",
        "int8_per_token_head",
        "nvfp4:calibrated",
        "nvfp4_4over6:calibrated",
    ]
    # Dominated at the same bytes, evaluated only when named.
    assert not got["fp8_e5m2:calibrated"].default and not got["nvfp4:unit"].default
    # The model has no KV scales: no checkpoint-scale candidate.
    assert not any(c.scales == "checkpoint" for c in got.values())
    assert got["int8_per_token_head"].backends == ("triton_attn",)
    assert got["fp8-per-head:calibrated"].backends == ("flash_attn",)


def test_gpu_arch_and_head_size_decide_nvfp4(tiny: Path) -> None:
    report = inspect_checkpoint(tiny, EngineOptions(engine="vllm"))
    sm90 = {c.name: c for c in candidates_for(report, EngineOptions(gpu_arch="sm90"), 64, 2)}
    # FlashInfer's SM80/90/120 NVFP4 path refuses head size 64; the 4-over-6 search is SM100's.
    assert sm90["nvfp4:calibrated"].backends == ()
    assert sm90["nvfp4_4over6:calibrated"].backends == ()
    sm100 = {c.name: c for c in candidates_for(report, EngineOptions(gpu_arch="sm100"), 64, 2)}
    assert sm100["nvfp4_4over6:calibrated"].backends == ("flashinfer",)


def test_sglang_candidates(tiny: Path) -> None:
    options = EngineOptions(engine="sglang")
    names = sorted(
        c.name for c in candidates_for(inspect_checkpoint(tiny, options), options, 16, 2)
    )
    assert "fp8_e4m3:calibrated" in names and "fp8_e4m3:unit" in names
    assert not any("per_token_head" in n for n in names)


# --- the run ---------------------------------------------------------------------------------


def test_plan_measures_each_candidate_as_the_model_runs_it(tiny: Path, data: Path) -> None:
    options = PlanOptions(
        data=data, samples=3, seq_len=24, candidates=("fp8:calibrated", "int8_per_token_head")
    )
    result = plan_model(tiny, options)
    # One unquantized pass (the capture, whose hidden states give the reference), one each.
    assert result.ok and result.forward_passes == 1 + 2
    by_name = {r.name: r for r in result.results}
    assert set(by_name) == {"fp8:calibrated", "int8_per_token_head"}
    # int8 per token and head is the more precise; FP8 is cheaper: 2 layers x 2 (k, v) x 2 heads
    # x 16 x 1 byte vs (16 + 4) bytes per head and token.
    assert by_name["fp8:calibrated"].bytes_per_token == 2 * 2 * 2 * 16
    assert by_name["int8_per_token_head"].bytes_per_token == 2 * 2 * 2 * (16 + 4)
    assert result.chosen is by_name["fp8:calibrated"]
    assert result.flags == ("vllm", "serve", str(tiny), "--kv-cache-dtype", "fp8")
    assert result.checkpoint_needed and result.notes  # calibrated scales, no --out
    # The numbers are evaluate_model's on the same samples: run it independently.
    loaded = load_model(tiny)
    samples = [tuple(json.loads(line)["input_ids"]) for line in data.read_text().splitlines()]
    from kvscale.kernel.roundtrip import per_token_head_roundtrip
    from kvscale.model.evaluate import LayerCodec

    rt = per_token_head_roundtrip("int8_per_token_head")
    variant = CacheVariant(
        "int8", {layer.engine_name: LayerCodec(rt, rt) for layer in loaded.layers}
    )
    independent = evaluate_model(loaded, samples, [variant]).variant("int8")
    assert by_name["int8_per_token_head"].kl_mean == independent.kl_mean
    assert by_name["int8_per_token_head"].ppl == independent.ppl
    shares = by_name["int8_per_token_head"].layers
    assert [s.name for s in shares] == [layer.engine_name for layer in loaded.layers]
    assert math.isclose(sum(s.share for s in shares), 1.0)


def test_a_budget_nothing_meets_fails_and_names_the_closest(tiny: Path, data: Path) -> None:
    options = PlanOptions(
        data=data, samples=3, seq_len=24, max_kl=0.0, candidates=("fp8:unit", "int8_per_token_head")
    )
    result = plan_model(tiny, options)
    assert not result.ok and result.chosen is None and result.flags == ()
    assert result.closest is not None
    assert result.closest.kl_mean == min(r.kl_mean for r in result.results if r.kl_mean is not None)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_kl": 0.1, "max_ppl_increase": 0.1}, "exclude each other"),
        ({"max_kl": -1.0}, "--max-kl must be a finite number >= 0"),
        ({"max_ppl_increase": math.nan}, "--max-ppl-increase must be a finite number >= 0"),
        ({"samples": 0}, "--samples 0 must be at least 1"),
        ({"seq_len": 1}, "--seq-len 1 must be at least 2"),
        ({"gpu_memory": 0}, "--gpu-memory 0 must be a positive number of bytes"),
    ],
)
def test_bad_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        PlanOptions(data=Path("x"), **kwargs)


def test_an_unknown_candidate_lists_the_known_ones(tiny: Path, data: Path) -> None:
    with pytest.raises(UsageError, match="unknown candidate 'fp9'") as info:
        plan_model(tiny, PlanOptions(data=data, samples=1, seq_len=8, candidates=("fp9",)))
    assert "fp8:calibrated" in (info.value.hint or "")


# --- the choice ------------------------------------------------------------------------------


def _result(name: str, size: float, kl: float, shares: tuple[float, ...] = ()) -> CandidateResult:
    fmt = INT8_PER_TOKEN_HEAD if name.startswith("int") else FP8_E4M3
    candidate = Candidate(name, fmt, None if name.startswith("int") else "calibrated")
    layers = tuple(
        LayerShare(f"model.layers.{i}.self_attn.attn", 0.0, 0.0, share)
        for i, share in enumerate(shares)
    )
    return CandidateResult(candidate, "measured", None, size, None, 10.0, kl, kl, layers)


def test_skipped_layers_are_confirmed_and_the_confirmation_decides() -> None:
    # fp4-like: 60 B, KL 0.04, layer 2 holds 75% of it; fp8: 100 B, KL 0.005.
    cheap = _result("int4_per_token_head", 60.0, 0.04, (0.05, 0.2, 0.75))
    fp8 = _result("fp8", 100.0, 0.005)
    sizes = {(): 60.0, ("2",): 80.0, ("1", "2"): 90.0, ("0", "1", "2"): 120.0}
    tried: list[tuple[str, ...]] = []

    def confirm(c: Candidate) -> tuple[CandidateResult, int]:
        tried.append(c.skip_layers)
        kl = {("2",): 0.012, ("1", "2"): 0.008}[c.skip_layers]
        run = CandidateResult(
            c, "measured", None, sizes[c.skip_layers], None, 10.0, kl, kl, (), True
        )
        return run, {("2",): 1, ("1", "2"): 2}[c.skip_layers]

    chosen, closest, runs, passes = _choose(
        [cheap, fp8],
        ("kl", 0.01),
        10.0,
        True,
        lambda c: sizes[c.skip_layers],
        confirm,
    )
    # The estimate says skipping layer 2 leaves 0.04 x 0.25 = 0.01 <= 0.01; its run measured
    # 0.012, so the next layer by share joins (1 and 2: 0.008, 90 B < fp8's 100 B).
    assert tried == [("2",), ("1", "2")] and passes == 1 + 2
    assert chosen is runs[1] and chosen.candidate.skip_layers == ("1", "2")
    assert closest is None


def test_skipping_that_costs_more_than_the_next_candidate_is_not_tried() -> None:
    cheap = _result("int4_per_token_head", 60.0, 0.04, (0.5, 0.5))
    fp8 = _result("fp8", 100.0, 0.005)

    def confirm(c: Candidate) -> tuple[CandidateResult, int]:
        raise AssertionError("no confirmation run expected")

    chosen, _, runs, passes = _choose(
        [cheap, fp8], ("kl", 0.01), 10.0, True, lambda c: 150.0, confirm
    )
    assert chosen is fp8 and runs == [] and passes == 0


def test_equal_bytes_prefer_what_needs_no_new_scales() -> None:
    calibrated = _result("fp8", 100.0, 0.001)
    unit = CandidateResult(
        Candidate("fp8", FP8_E4M3, "unit"), "measured", None, 100.0, None, 10.0, 0.004, 0.004
    )
    chosen, _, _, _ = _choose(
        [calibrated, unit], ("kl", 0.01), 10.0, False, lambda c: None, lambda c: unit
    )
    assert chosen is unit


# --- verify --data reproduces the chosen configuration ---------------------------------------


def _cli(*args: object) -> Any:
    from typer.testing import CliRunner

    from kvscale.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.slow
@pytest.mark.parametrize(
    "candidate",
    [
        "fp8:calibrated",
        "fp8:unit",
        "int8_per_token_head",
        "nvfp4:calibrated",
        "nvfp4_4over6:calibrated",
    ],
)
def test_verify_data_reproduces_the_plans_numbers_exactly(
    tiny: Path, data: Path, tmp_path: Path, candidate: str
) -> None:
    """The plan's ``reproduce`` command (``kvscale verify`` on the checkpoint to serve, under the
    serving flags, the same data) gives the plan's perplexity and KL to the bit: the same codecs
    (kvscale.model.cache_codecs) at the values the engine holds from the written checkpoint.
    Slow: about 20 s each (plan, then verify, on the tiny model)."""
    out = tmp_path / "plan"
    result = _cli(
        "plan", tiny, "--data", data, "--samples", "3", "--seq-len", "24", "--max-kl", "10",
        "--candidates", candidate, "--out", out, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    plan = json.loads(result.stdout)
    assert plan["chosen"] == candidate
    (chosen,) = [c for c in plan["candidates"] if c["name"] == candidate]
    command = plan["verify_command"]
    assert command[:3] == ["kvscale", "verify", plan["checkpoint"]]
    assert (plan["checkpoint"] == str(out / "checkpoint")) == candidate.endswith(":calibrated")
    verify = _cli(*command[1:], "--json")
    assert verify.exit_code == 0, verify.stderr
    model_eval = json.loads(verify.stdout)["model_eval"]
    assert model_eval["ppl_unquantized"] == plan["ppl_unquantized"]
    assert (model_eval["ppl_fp8"], model_eval["kl_mean"], model_eval["kl_max"]) == (
        chosen["ppl"],
        chosen["kl_mean"],
        chosen["kl_max"],
    )


@pytest.mark.slow
def test_verify_data_reproduces_a_confirmation_run_with_skipped_layers(
    tiny: Path, data: Path
) -> None:
    """A configuration with skipped layers, confirmed the way the plan confirms it, equals
    ``kvscale verify --kv-cache-dtype-skip-layers`` of the same configuration, and keeping layer
    0 unquantized lowers the KL of the int4 cache."""
    from kvscale.cache_formats import INT4_PER_TOKEN_HEAD
    from kvscale.core.plan import _confirm

    loaded = load_model(tiny)
    samples = [tuple(json.loads(line)["input_ids"]) for line in data.read_text().splitlines()]
    # The reference from the capture pass's hidden states, as the plan confirms.
    capture = capture_kv_amax(loaded, samples, keep_final_hidden=True)
    runs = {}
    for skip in ((), ("0",)):
        candidate = Candidate("int4_per_token_head", INT4_PER_TOKEN_HEAD, None, skip_layers=skip)
        runs[skip], passes = _confirm(
            candidate, loaded, samples, {}, 2, EngineOptions(), None, capture, None
        )
        assert passes == 1
        flags = ["--kv-cache-dtype-skip-layers", ",".join(skip)] if skip else []
        verify = _cli(
            "verify", tiny, "--kv-cache-dtype", "int4_per_token_head", *flags, "--data", data,
            "--samples", "3", "--seq-len", "24", "--json",
        )  # fmt: skip
        assert verify.exit_code == 0, verify.stderr
        model_eval = json.loads(verify.stdout)["model_eval"]
        assert (model_eval["ppl_fp8"], model_eval["kl_mean"], model_eval["kl_max"]) == (
            runs[skip].ppl,
            runs[skip].kl_mean,
            runs[skip].kl_max,
        )
    assert runs[("0",)].kl_mean < runs[()].kl_mean  # type: ignore[operator]


def test_the_error_meter_sums_squares_of_the_finite_values() -> None:
    """Per-layer attribution rests on these sums: float64 sums of the squared round-trip error
    and of the squared input; NaN / inf values are left out, and squares past float32's range
    are summed in float64 rather than becoming inf."""
    from kvscale.core.plan import _ErrorMeter

    meter = _ErrorMeter()
    halve = meter.wrap("l", "k", lambda x: x.to(torch.float32) * 0.5)
    x = torch.tensor([[1.0, -2.0, 4.0]], dtype=torch.bfloat16)
    assert torch.equal(halve(x), torch.tensor([[0.5, -1.0, 2.0]]))
    assert meter.sums[("l", "k")] == [0.25 + 1.0 + 4.0, 1.0 + 4.0 + 16.0]
    special = torch.tensor([3.0, math.nan, math.inf, 2.0**100])
    halve(special)
    # 2**100 halved: an error of 2**99, whose square (2**198) is past float32's range.
    assert meter.sums[("l", "k")] == [
        5.25 + 1.5**2 + float(2.0**99) ** 2,
        21.0 + 9.0 + float(2.0**100) ** 2,
    ]
    shares = meter.shares(["l", "m"])
    assert shares[1].k_error == 0.0 and shares[0].share == 1.0
    # The squares are taken in place only in the meter's own tensors: a float32 input (whose
    # float32 view is itself) and an unquantized round trip (which returns it) stay as given.
    same = meter.wrap("l", "v", lambda x: x.to(torch.float32))
    given = torch.tensor([[3.0, -0.5]])
    assert same(given) is given and given.tolist() == [[3.0, -0.5]]
    assert meter.sums[("l", "v")] == [0.0, 9.25]
