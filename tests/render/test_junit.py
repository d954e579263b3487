"""kvscale.render.junit: one case per layer and check, schema-valid, escaped; the check set covers
every problem code once."""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from support.checkpoints import broken_checkpoint, good_checkpoint
from support.junit import cases, outcome, validate

from kvscale.core.inspect import inspect_checkpoint
from kvscale.policy import Policy
from kvscale.problems import CATALOGUE, Problem, Severity
from kvscale.render.junit import (
    CHECKS,
    CODE_CHECK,
    LAYER_CHECKS,
    MODEL_CHECKS,
    junit_document,
    junit_error_suite,
    junit_suite,
    xml_text,
)

P = "model.layers.{}.self_attn"


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    return broken_checkpoint(tmp_path)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return good_checkpoint(tmp_path)


def test_every_problem_code_belongs_to_exactly_one_check() -> None:
    listed = [code for check in CHECKS for code in check.codes]
    assert sorted(listed) == sorted(CATALOGUE), "CHECKS must cover CATALOGUE exactly once"
    assert set(CODE_CHECK) == set(CATALOGUE)
    assert LAYER_CHECKS == (
        "engine-loads",
        "kv-scales-present",
        "scale-names",
        "values-valid",
        "values-exact",
        "values-calibrated",
        "per-head-layout",
    )
    assert MODEL_CHECKS == (
        "checkpoint-readable",
        "attention-layers-found",
        "coverage",
        "quant-config",
        "files-consistent",
        "engine-behaviour",
    )


def test_broken_checkpoint_one_case_per_layer_and_check(broken: Path) -> None:
    report = inspect_checkpoint(broken)
    data = junit_document(
        [junit_suite(report, Policy(), duration=0.25, timestamp="2026-01-02T03:04:05")]
    )
    validate(data)
    root = ET.fromstring(data)
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("name", "tests", "failures", "errors", "skipped", "time")} == {
        "name": "kvscale",
        "tests": "27",
        "failures": "1",
        "errors": "0",
        "skipped": "7",
        "time": "0.250",
    }
    (suite,) = root.findall("testsuite")
    assert suite.get("name") == f"kvscale inspect {broken}"
    assert suite.get("timestamp") == "2026-01-02T03:04:05"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["kv_cache_dtype"] == "fp8" and props["strict"] == "false"
    all_cases = cases(root)
    layer = [f"{P.format(i)}.attn" for i in range(3)]
    expected_keys = {("checkpoint", c) for c in MODEL_CHECKS} | {
        (name, c) for name in layer for c in LAYER_CHECKS
    }
    assert set(all_cases) == expected_keys
    assert {k: outcome(v) for k, v in all_cases.items() if outcome(v) != "passed"} == {
        (layer[1], "values-valid"): "failure",
        (layer[0], "per-head-layout"): "skipped",
        (layer[1], "per-head-layout"): "skipped",
        (layer[2], "per-head-layout"): "skipped",
        (layer[2], "scale-names"): "skipped",
        (layer[2], "values-valid"): "skipped",
        (layer[2], "values-exact"): "skipped",
        (layer[2], "values-calibrated"): "skipped",
    }
    failure = all_cases[(layer[1], "values-valid")].find("failure")
    assert failure is not None
    assert failure.get("type") == "scale-zero"
    assert failure.get("message") == (
        "scale-zero: k_scale is 0.0 in model.layers.1.self_attn.k_scale "
        "and the engine uses it as is"
    )
    assert failure.text == (
        "error scale-zero (fails the run): model.layers.1.self_attn.attn: k_scale is 0.0 in "
        "model.layers.1.self_attn.k_scale and the engine uses it as is\n"
        f"  fix: {CATALOGUE['scale-zero'].fix}"
    )
    # Warnings that do not fail the run: a passing case with the problem in system-out.
    missing = all_cases[(layer[1], "kv-scales-present")]
    assert outcome(missing) == "passed"
    assert missing.findtext("system-out") == (
        "warning scale-missing (does not fail the run): model.layers.1.self_attn.attn: v_scale "
        "is missing; the compressed-tensors path leaves it at 1.0"
    )
    assert (
        all_cases[("checkpoint", "coverage")]
        .findtext("system-out", "")
        .startswith("warning coverage-gap (does not fail the run): 2 of 3 attention layers")
    )
    skipped = all_cases[(layer[2], "values-valid")].find("skipped")
    assert skipped is not None
    assert skipped.get("message") == "no scale tensor for this layer in the checkpoint"


def test_strict_and_allow_move_cases(broken: Path) -> None:
    report = inspect_checkpoint(broken)
    layer = [f"{P.format(i)}.attn" for i in range(3)]
    strict = ET.fromstring(junit_document([junit_suite(report, Policy(strict=True))]))
    failed = {k for k, v in cases(strict).items() if outcome(v) == "failure"}
    assert failed == {
        ("checkpoint", "coverage"),
        (layer[1], "values-valid"),
        (layer[1], "kv-scales-present"),
        (layer[2], "kv-scales-present"),
    }
    assert strict.get("failures") == "4"
    allowed = ET.fromstring(
        junit_document([junit_suite(report, Policy(allow=frozenset({"scale-zero"})))])
    )
    assert allowed.get("failures") == "0"
    case = cases(allowed)[(layer[1], "values-valid")]
    assert outcome(case) == "passed"
    assert case.findtext("system-out", "").startswith(
        "error scale-zero (allowed by policy): model.layers.1.self_attn.attn: k_scale is 0.0"
    )


def test_good_checkpoint_has_no_failures(good: Path) -> None:
    root = ET.fromstring(junit_document([junit_suite(inspect_checkpoint(good), Policy())]))
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("20", "0", "2")


def test_error_suite_for_unreadable_checkpoint() -> None:
    data = junit_document(
        [junit_error_suite("ckpt", "ckpt: no such file or directory", "CheckpointNotFoundError")]
    )
    validate(data)
    root = ET.fromstring(data)
    assert (root.get("tests"), root.get("errors"), root.get("failures")) == ("1", "1", "0")
    error = root.find("testsuite/testcase/error")
    assert error is not None
    assert error.get("type") == "CheckpointNotFoundError"
    assert error.get("message") == "ckpt: no such file or directory"


def test_hostile_strings_are_escaped_and_valid_xml(broken: Path) -> None:
    report = inspect_checkpoint(broken)
    hostile_layer = "model.layers.9.self_attn\x00\x1b[31m<&\"']]>\u202e\ud800\ufffe.attn"
    hostile = Problem(
        Severity.ERROR,
        "scale-nan",
        hostile_layer,
        'k_scale is NaN in \x07evil\r\n<tag attr="x">&amp;</tag> ]]> \x0b\x0c',
    )
    report = dataclasses.replace(report, checkpoint="ck\x1bpt<&>", problems=(hostile,))
    data = junit_document([junit_suite(report, Policy())])
    validate(data)
    root = ET.fromstring(data)  # well-formed
    (failure,) = root.iter("failure")
    # Not an attention layer of the model: a model-level case under the code's check.
    case = next(c for c in root.iter("testcase") if c.find("failure") is not None)
    assert (case.get("classname"), case.get("name")) == ("checkpoint", "values-valid")
    assert failure.get("message") == (
        'scale-nan: k_scale is NaN in \\x07evil\\x0d\\x0a<tag attr="x">&amp;</tag> ]]> \\x0b\\x0c'
    )
    assert (
        "model.layers.9.self_attn\\x00\\x1b[31m<&\"']]>\\u202e\\ud800\\ufffe.attn" in failure.text
    )
    (suite,) = root.iter("testsuite")
    assert suite.get("name") == "kvscale inspect ck\\x1bpt<&>"
    assert xml_text("ok\tx") == "ok\\x09x"
