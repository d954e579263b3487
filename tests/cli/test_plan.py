"""``kvscale plan`` on the command line: bad input is one line and exit 2 before any model pass
(issue 24: "missing model or data, too few tokens, a budget that is not a number"). Every flag
reaching ``PlanOptions``: tests/cli/test_seams.py; the measuring: tests/core/test_plan.py."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
pytest.importorskip("transformers", reason="pip install transformers (calibrate)")
pytest.importorskip("torch")

from support.cli import run_cli as invoke  # noqa: E402
from support.models import random_samples, save_tiny  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny("llama", tmp_path_factory.mktemp("plan-cli") / "llama")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("plan-data")
    ids = root / "ids.jsonl"
    ids.write_text(
        "".join(json.dumps({"input_ids": list(s)}) + "\n" for s in random_samples((24, 24), 5))
    )
    one_token = root / "one-token.jsonl"
    one_token.write_text('{"input_ids": [1]}\n{"input_ids": [2]}\n')
    text = root / "text.txt"
    text.write_text("some words for a model without a tokenizer\n")
    return {"ids": ids, "one-token": one_token, "text": text}


BAD = {
    "no model": (
        ["/nonexistent-model", "--data", "{ids}"],
        "/nonexistent-model: no such file or directory",
    ),
    "no --data": (["{model}"], "Missing option '--data'"),
    "missing data": (["{model}", "--data", "/nonexistent.jsonl"], "cannot read calibration"),
    "too few tokens": (
        ["{model}", "--data", "{one-token}"],
        "too few tokens: 2 sample(s) of 1 token predict no next token",
    ),
    "text without tokenizer": (["{model}", "--data", "{text}"], "needs the model's tokenizer"),
    "budget not a number": (
        ["{model}", "--data", "{ids}", "--max-kl", "abc"],
        "'abc' is not a valid float",
    ),
    "budget negative": (
        ["{model}", "--data", "{ids}", "--max-ppl-increase", "-0.5"],
        "--max-ppl-increase must be a finite number >= 0, got -0.5",
    ),
    "two budgets": (
        ["{model}", "--data", "{ids}", "--max-kl", "1", "--max-ppl-increase", "1"],
        "exclude each other",
    ),
    "gpu memory": (["{model}", "--data", "{ids}", "--gpu-memory", "4XB"], "'4XB' is not a size"),
    "samples": (["{model}", "--data", "{ids}", "--samples", "0"], "0 is not in the range x>=1"),
    "seq-len": (["{model}", "--data", "{ids}", "--seq-len", "1"], "1 is not in the range x>=2"),
    "device": (["{model}", "--data", "{ids}", "--device", "tpu"], "'tpu' is not one of cpu"),
    "candidate": (
        ["{model}", "--data", "{ids}", "--candidates", "fp9"],
        "unknown candidate 'fp9' for vllm and this model",
    ),
    "attention backend": (
        ["{model}", "--data", "{ids}", "--engine", "sglang", "--attention-backend", "nope"],
        "nope",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_and_exit_2(
    case: str, tiny: Path, inputs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nothing is measured on bad input: a pass of the model would fail this test.
    def no_pass(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a model pass ran on bad input")

    monkeypatch.setattr("kvscale.model.capture.capture_kv_amax", no_pass)
    args, says = BAD[case]
    fill = {"{model}": str(tiny), **{"{" + k + "}": str(v) for k, v in inputs.items()}}
    result = invoke("plan", *(fill.get(a, a) for a in args))
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("kvscale: error: ") and says in lines[0], lines[0]
