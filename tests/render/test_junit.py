"""JUnit XML (`inspect --junit`): one case per layer and check, schema-valid, atomic, escaped."""

from __future__ import annotations

import dataclasses
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import quant_config
from support.checkpoints import write_scalar_checkpoint as write_ckpt
from support.cli import CliRunner

from kvscale.cli import app
from kvscale.core.inspect import inspect_checkpoint
from kvscale.errors import OutputError
from kvscale.io.staging import write_file_atomic
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

runner = CliRunner()

# A minimal schema of the common JUnit XML shape (Ant's junit task, as read by Jenkins, GitLab
# and the GitHub test reporters), written for these tests: testsuites > testsuite > testcase
# with at most one failure / error / skipped, and the attributes those consumers require.
JUNIT_XSD = """<?xml version="1.0" encoding="UTF-8"?>
<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
  <xs:simpleType name="count">
    <xs:restriction base="xs:nonNegativeInteger"/>
  </xs:simpleType>
  <xs:simpleType name="seconds">
    <xs:restriction base="xs:decimal"><xs:minInclusive value="0"/></xs:restriction>
  </xs:simpleType>
  <xs:simpleType name="naiveTimestamp">
    <xs:restriction base="xs:dateTime">
      <xs:pattern value="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"/>
    </xs:restriction>
  </xs:simpleType>
  <xs:complexType name="problem">
    <xs:simpleContent>
      <xs:extension base="xs:string">
        <xs:attribute name="message" type="xs:string"/>
        <xs:attribute name="type" type="xs:string" use="required"/>
      </xs:extension>
    </xs:simpleContent>
  </xs:complexType>
  <xs:complexType name="skip">
    <xs:simpleContent>
      <xs:extension base="xs:string">
        <xs:attribute name="message" type="xs:string"/>
      </xs:extension>
    </xs:simpleContent>
  </xs:complexType>
  <xs:element name="testsuites">
    <xs:complexType>
      <xs:sequence>
        <xs:element ref="testsuite" minOccurs="0" maxOccurs="unbounded"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string"/>
      <xs:attribute name="tests" type="count"/>
      <xs:attribute name="failures" type="count"/>
      <xs:attribute name="errors" type="count"/>
      <xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds"/>
    </xs:complexType>
  </xs:element>
  <xs:element name="testsuite">
    <xs:complexType>
      <xs:sequence>
        <xs:element name="properties" minOccurs="0">
          <xs:complexType>
            <xs:sequence>
              <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
                <xs:complexType>
                  <xs:attribute name="name" type="xs:token" use="required"/>
                  <xs:attribute name="value" type="xs:string" use="required"/>
                </xs:complexType>
              </xs:element>
            </xs:sequence>
          </xs:complexType>
        </xs:element>
        <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
          <xs:complexType>
            <xs:sequence>
              <xs:choice minOccurs="0">
                <xs:element name="skipped" type="skip"/>
                <xs:element name="error" type="problem"/>
                <xs:element name="failure" type="problem"/>
              </xs:choice>
              <xs:element name="system-out" type="xs:string" minOccurs="0"/>
              <xs:element name="system-err" type="xs:string" minOccurs="0"/>
            </xs:sequence>
            <xs:attribute name="name" type="xs:token" use="required"/>
            <xs:attribute name="classname" type="xs:token" use="required"/>
            <xs:attribute name="time" type="seconds" use="required"/>
          </xs:complexType>
        </xs:element>
        <xs:element name="system-out" type="xs:string" minOccurs="0"/>
        <xs:element name="system-err" type="xs:string" minOccurs="0"/>
      </xs:sequence>
      <xs:attribute name="name" type="xs:string" use="required"/>
      <xs:attribute name="tests" type="count" use="required"/>
      <xs:attribute name="failures" type="count" use="required"/>
      <xs:attribute name="errors" type="count" use="required"/>
      <xs:attribute name="skipped" type="count"/>
      <xs:attribute name="time" type="seconds" use="required"/>
      <xs:attribute name="timestamp" type="naiveTimestamp"/>
      <xs:attribute name="hostname" type="xs:token"/>
    </xs:complexType>
  </xs:element>
</xs:schema>
"""

CT_QC = quant_config("compressed-tensors")


P = "model.layers.{}.self_attn"


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """Layer 0 fine; layer 1 k_scale 0 (error) and no v_scale (warning); layer 2 no scales."""
    return write_ckpt(
        tmp_path / "broken",
        {
            f"{P.format(0)}.k_scale": 0.0234375,
            f"{P.format(0)}.v_scale": 0.015625,
            f"{P.format(1)}.k_scale": 0.0,
        },
        layers=3,
    )


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_ckpt(
        tmp_path / "good",
        {f"{P.format(i)}.{k}": 0.03125 for i in range(2) for k in ("k_scale", "v_scale")},
        layers=2,
    )


def validate(data: bytes | Path) -> None:
    xmlschema = pytest.importorskip("xmlschema", reason="pip install xmlschema (test extra)")
    schema = xmlschema.XMLSchema(JUNIT_XSD)
    source = data.read_bytes() if isinstance(data, Path) else data
    schema.validate(source.decode("utf-8"))


def cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    out = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        assert key not in out, f"duplicate test case {key}"
        out[key] = case
    return out


def outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return tag
    return "passed"


def invoke(*args: str) -> Any:
    return runner.invoke(app, [*args, "--no-policy"], env={"GITHUB_ACTIONS": ""})


# --- the check set --------------------------------------------------------------------------


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


# --- the document ---------------------------------------------------------------------------


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


# --- writing --------------------------------------------------------------------------------


def test_write_atomic_replaces_and_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "reports" / "new" / "kvscale.xml"
    write_file_atomic(target, b"one", "report")
    write_file_atomic(target, b"two", "report")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["kvscale.xml"]
    assert (target.stat().st_mode & 0o777) == 0o644


def test_write_atomic_failure_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "kvscale.xml"
    target.write_bytes(b"old")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OutputError, match="kvscale.xml: cannot write report: No space left"):
        write_file_atomic(target, b"new", "report")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["kvscale.xml"]


def test_write_atomic_refuses_a_directory(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"):
        write_file_atomic(tmp_path, b"x", "report")


# --- the CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "failures"),
    [
        ([], 1, 1),
        (["--strict"], 1, 4),
        (["--allow", "scale-zero"], 0, 0),
        (["--allow", "scale-zero", "--fail-on", "coverage-gap"], 1, 1),
    ],
)
def test_cli_junit_failures_match_exit_code(
    broken: Path, tmp_path: Path, args: list[str], code: int, failures: int
) -> None:
    report = tmp_path / "out" / "junit.xml"
    result = invoke("inspect", str(broken), "--junit", str(report), *args)
    assert result.exit_code == code
    validate(report)
    root = ET.parse(report).getroot()
    assert root.get("failures") == str(failures)
    assert (failures > 0) == (code == 1)


def test_cli_junit_keeps_json_stdout_unchanged(broken: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    plain = invoke("inspect", str(broken), "--json")
    with_junit = invoke("inspect", str(broken), "--json", "--junit", str(report))
    assert plain.exit_code == with_junit.exit_code == 1
    assert json.loads(plain.stdout) == json.loads(with_junit.stdout)
    assert with_junit.stderr == ""
    assert report.is_file()


def test_cli_unreadable_checkpoint_writes_an_error_case(tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    result = invoke("inspect", str(tmp_path / "missing"), "--junit", str(report))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "missing" in result.stderr and "no such file" in result.stderr
    validate(report)
    root = ET.parse(report).getroot()
    assert (root.get("tests"), root.get("errors")) == ("1", "1")
    error = root.find("testsuite/testcase/error")
    assert error is not None and error.get("type") == "CheckpointNotFoundError"


def test_cli_junit_to_a_directory_is_exit_2(good: Path, tmp_path: Path) -> None:
    result = invoke("inspect", str(good), "--junit", str(tmp_path))
    assert result.exit_code == 2
    assert "junit" in result.stderr.lower() or "directory" in result.stderr


def test_cli_files_mode_one_suite_per_checkpoint(good: Path, broken: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    result = invoke(
        "inspect",
        "--files",
        str(good / "model.safetensors"),
        str(broken / "config.json"),
        str(tmp_path / "unrelated.txt"),
        "--junit",
        str(report),
    )
    assert result.exit_code == 1
    validate(report)
    root = ET.parse(report).getroot()
    names = [s.get("name") for s in root.iter("testsuite")]
    assert names == [f"kvscale inspect {broken}", f"kvscale inspect {good}"]
    assert (root.get("tests"), root.get("failures")) == ("47", "1")
