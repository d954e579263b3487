"""kvscale.render.annotations: escaping, when annotations appear, one per code with errors first,
levels under the policy, diff annotations."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.checkpoints import broken_checkpoint
from support.checkpoints import write_scalar_checkpoint as write_ckpt

from kvscale.core.inspect import inspect_checkpoint
from kvscale.policy import Policy
from kvscale.problems import CATALOGUE
from kvscale.render.annotations import (
    annotations_enabled,
    command_line,
    diff_annotations,
    escape_data,
    escape_property,
    inspect_annotations,
    workspace_relative,
)

P = "model.layers.{}.self_attn"


@pytest.fixture
def broken(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """cwd = tmp_path; returns the relative checkpoint path ("broken"), as a workflow gives it.
    Layer 1: k_scale 0 (error), no v_scale (warning); layer 2: no scales (warning)."""
    monkeypatch.chdir(tmp_path)
    return broken_checkpoint(tmp_path).name


ZERO_FIX = CATALOGUE["scale-zero"].fix

EXPECTED = [
    "::error file=broken/model.safetensors,title=kvscale scale-zero::model.layers.1.self_attn: "
    "k_scale is 0.0 in model.layers.1.self_attn.k_scale and the engine uses it as is"
    f"%0AFix: {ZERO_FIX}",
    "::warning file=broken/config.json,title=kvscale coverage-gap::2 of 3 attention layers have "
    "k/v scales; none for model.layers.2.self_attn.attn"
    f"%0AFix: {CATALOGUE['coverage-gap'].fix}",
    "::warning file=broken/config.json,title=kvscale default-scale-used::model.layers.2.self_attn: "
    "no k_scale/v_scale reaches this layer; the engine uses 1.0 for both"
    f"%0AFix: {CATALOGUE['default-scale-used'].fix}",
    "::warning file=broken/model.safetensors,title=kvscale scale-missing::"
    "model.layers.1.self_attn: v_scale is missing; the compressed-tensors path leaves it at 1.0"
    f"%0AFix: {CATALOGUE['scale-missing'].fix}",
]


def test_escape_data_and_property() -> None:
    assert escape_data("100% a\r\nb: c, d") == "100%25 a%0D%0Ab: c, d"
    assert escape_property("100% a\r\nb: c, d") == "100%25 a%0D%0Ab%3A c%2C d"
    # % first, so an existing %0A is not decoded by the runner.
    assert escape_data("%0A") == "%250A"


def test_command_line_sanitizes_then_escapes() -> None:
    line = command_line(
        "error",
        "first: 50%\nsecond \x1b[31mred\r",
        title="kvscale x, y: z",
        file="dir,1/a:b.safetensors",
    )
    assert line == (
        "::error file=dir%2C1/a%3Ab.safetensors,title=kvscale x%2C y%3A z::"
        "first: 50%25%0Asecond \\x1b[31mred\\x0d"
    )
    assert "\n" not in line and "\r" not in line
    assert command_line("warning", "plain") == "::warning::plain"


def test_annotations_enabled() -> None:
    assert annotations_enabled("auto", {"GITHUB_ACTIONS": "true"})
    assert annotations_enabled("auto", {"GITHUB_ACTIONS": "TRUE"})
    assert not annotations_enabled("auto", {"GITHUB_ACTIONS": "false"})
    assert not annotations_enabled("auto", {})
    assert annotations_enabled("github", {})
    assert not annotations_enabled("none", {"GITHUB_ACTIONS": "true"})


def test_workspace_relative() -> None:
    env = {"GITHUB_WORKSPACE": "/home/runner/work/repo/repo"}
    assert workspace_relative("/home/runner/work/repo/repo/m/x.safetensors", env) == (
        "m/x.safetensors"
    )
    assert workspace_relative("/elsewhere/x.safetensors", env) == "/elsewhere/x.safetensors"
    assert workspace_relative("./m/config.json", {}) == "m/config.json"


def test_one_annotation_per_code_errors_first(broken: str) -> None:
    report = inspect_checkpoint(broken)
    assert inspect_annotations(report, Policy()) == EXPECTED


def test_strict_turns_warnings_into_errors_and_allow_silences(broken: str) -> None:
    report = inspect_checkpoint(broken)
    strict = inspect_annotations(report, Policy(strict=True))
    assert [line.split("::")[1] for line in strict] == [
        "error file=broken/config.json,title=kvscale coverage-gap (fails under the policy)",
        "error file=broken/config.json,title=kvscale default-scale-used (fails under the policy)",
        "error file=broken/model.safetensors,title=kvscale scale-missing (fails under the policy)",
        "error file=broken/model.safetensors,title=kvscale scale-zero",
    ]
    allowed = inspect_annotations(report, Policy(allow=frozenset({"scale-zero", "coverage-gap"})))
    assert [re.search(r"title=kvscale ([a-z-]+)", line)[1] for line in allowed] == [  # type: ignore[index]
        "default-scale-used",
        "scale-missing",
    ]


def test_many_layers_are_capped_in_one_annotation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    tensors = {f"{P.format(i)}.k_scale": 0.0 for i in range(13)}
    tensors.update({f"{P.format(i)}.v_scale": 0.5 for i in range(13)})
    write_ckpt(tmp_path / "many", tensors, layers=13)
    (line,) = inspect_annotations(inspect_checkpoint("many"), Policy())
    head, data = line.split("::", 2)[1:]
    assert head == "error file=many/model.safetensors,title=kvscale scale-zero in 13 layers"
    messages = data.split("%0A")
    assert len(messages) == 12
    assert messages[9].startswith("model.layers.9.self_attn: k_scale is 0.0")
    assert messages[10] == "... and 3 more (kvscale inspect --json lists all)"
    assert messages[11] == f"Fix: {ZERO_FIX}"


def test_diff_annotations() -> None:
    lines = diff_annotations(
        [
            ("drift", "model.layers.77.self_attn.attn", "k_scale 0.5 -> 1.0: relative change 1"),
            ("layer-lost", "model.layers.3.self_attn.attn", "in A (rule separate) but not in B"),
            ("drift", "model.layers.78.self_attn.attn", "v_scale 0.5 -> 0.25"),
        ]
    )
    assert lines == [
        "::error title=kvscale diff drift in 2 layers::model.layers.77.self_attn: k_scale 0.5 -> "
        "1.0: relative change 1%0Amodel.layers.78.self_attn: v_scale 0.5 -> 0.25",
        "::error title=kvscale diff layer-lost::model.layers.3.self_attn: in A (rule separate) "
        "but not in B",
    ]
