"""kvscale.core.diff: relative changes, value comparison by layout, the gate's rules and
threshold, layers added and lost, ``diff_paths``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.checkpoints import distinct_k as k_of
from support.checkpoints import distinct_scales as scales
from support.checkpoints import write_scalar_checkpoint as write_ckpt
from support.paths import EXAMPLES

from kvscale.core.diff import LayerScales, ScaleSet, compare, compare_values, diff_paths, rel_change
from kvscale.engine.options import EngineOptions

P = "model.layers.{}.self_attn"
L = P + ".attn"


def test_rel_change_exact_rules() -> None:
    # Symmetric: max(a/b, b/a) - 1, so growing and shrinking by the same factor count the same.
    assert rel_change(0.5, 0.75) == 0.5
    assert rel_change(0.75, 0.5) == 0.5
    assert rel_change(0.5, 0.25) == 1.0
    assert rel_change(0.25, 0.5) == 1.0
    assert rel_change(1.0, 1.0 / 128) == 127.0
    assert rel_change(1.0 / 128, 1.0) == 127.0
    assert rel_change(0.5, 0.0) == math.inf
    assert rel_change(0.5, -0.5) == math.inf
    assert rel_change(-0.5, -0.25) == 1.0
    assert rel_change(0.5, 0.5) == 0.0
    assert rel_change(math.nan, math.nan) == 0.0
    assert rel_change(math.inf, math.inf) == 0.0
    assert rel_change(0.0, 0.0) == 0.0
    assert rel_change(0.0, 0.5) == math.inf
    assert rel_change(0.5, math.nan) == math.inf
    assert rel_change(math.nan, 0.5) == math.inf
    assert rel_change(0.5, -math.inf) == math.inf


def test_compare_values_layouts() -> None:
    same = compare_values("k_scale", 0.5, 0.5)
    assert (same.changed, same.rel_change, same.compared, same.head) == (False, 0.0, "value", None)
    per_head = compare_values("k_scale", (0.5, 0.25, 0.125), (0.5, 0.375, 0.125))
    assert (per_head.changed, per_head.rel_change, per_head.compared, per_head.head) == (
        True,
        0.5,
        "per-head",
        1,
    )
    mixed = compare_values("v_scale", (0.5, 0.25), 0.5)
    assert (mixed.changed, mixed.rel_change, mixed.compared) == (True, 0.0, "max-over-heads")
    refused = compare_values("k_scale", 0.5, None)
    assert (refused.changed, refused.rel_change) == (True, None)
    both_none = compare_values("k_scale", None, None)
    assert (both_none.changed, both_none.rel_change) == (False, None)


def _set(layers: dict[str, tuple[str, float | None]]) -> ScaleSet:
    return ScaleSet(
        path="x",
        source="test",
        kv_cache_dtype="fp8",
        platform="ocp",
        engine_path="compressed-tensors",
        model_dtype="bfloat16",
        layers=tuple(
            LayerScales(
                name,
                rule,
                {"k_scale": k, "v_scale": k, "q_scale": 1.0, "prob_scale": 1.0},
            )
            for name, (rule, k) in layers.items()
        ),
    )


@pytest.mark.parametrize(
    ("before", "after", "rules"),
    [
        (("separate", 0.5), ("separate", 0.5), []),
        (("separate", 0.5), ("per_head", 0.5), []),
        (("separate", 0.5), ("duplicated", 0.5), ["rule-regressed"]),
        (("separate", 0.5), ("partial", 0.5), ["rule-regressed"]),
        (("partial", 0.5), ("default", 1.0), ["rule-regressed"]),
        (("separate", 0.5), ("unquantized", 1.0), ["rule-regressed"]),
        (("default", 1.0), ("error", None), ["rule-regressed"]),
        (("default", 1.0), ("separate", 0.5), []),
        (("error", None), ("separate", 0.5), []),
        (("separate", 0.5), ("separate", 0.0), ["value-invalid"]),
        (("separate", 0.5), ("separate", math.nan), ["value-invalid"]),
        (("separate", 0.5), ("separate", -0.5), ["value-invalid"]),
        (("separate", math.nan), ("separate", 0.5), []),
    ],
)
def test_gate_rules_without_threshold(
    before: tuple[str, float | None], after: tuple[str, float | None], rules: list[str]
) -> None:
    result = compare(_set({"a.attn": before}), _set({"a.attn": after}))
    # value-invalid fires once per kind (k and v share the value here).
    assert sorted({f.rule for f in result.failures}) == rules
    assert result.ok == (not rules)


def test_drift_threshold_is_strict() -> None:
    a, b = _set({"a.attn": ("separate", 0.5)}), _set({"a.attn": ("separate", 0.625)})
    assert compare(a, b, 0.25).ok  # rel change exactly 0.25 does not exceed 0.25
    failed = compare(a, b, 0.24)
    assert [(f.rule, f.layer, f.message) for f in failed.failures] == [
        ("drift", "a.attn", "k_scale 0.5 -> 0.625: relative change 0.25 > 0.24")
    ]


def test_lost_and_added_layers() -> None:
    a = _set({"x.0.attn": ("separate", 0.5), "x.1.attn": ("separate", 0.5)})
    b = _set({"x.0.attn": ("separate", 0.5), "x.2.attn": ("separate", 0.5)})
    result = compare(a, b)
    assert [(d.name, d.status) for d in result.layers] == [
        ("x.0.attn", "unchanged"),
        ("x.1.attn", "lost"),
        ("x.2.attn", "added"),
    ]
    assert [(f.rule, f.layer) for f in result.failures] == [("layer-lost", "x.1.attn")]


def test_core_api_returns_dataclasses(tmp_path: Path) -> None:
    a = write_ckpt(tmp_path / "release-1.0", scales(126), 126)
    b = write_ckpt(tmp_path / "release-1.1", scales(126, k77=k_of(77) * 1.25), 126)
    result = diff_paths(a, b, EngineOptions(), 0.2)
    assert [layer.name for layer in result.layers if layer.status == "changed"] == [L.format(77)]
    assert result.largest is not None and result.largest[0].name == L.format(77)
    assert not result.ok


def test_notes_say_what_the_comparison_cannot_tell() -> None:
    a, b = EXAMPLES / "llm-compressor-fp8", EXAMPLES / "wrong-scale"
    # a per-token-head cache never reads k/v: the 127x change is real but served the same
    result = diff_paths(a, b, EngineOptions(kv_cache_dtype="int8_per_token_head"))
    assert result.ok and result.count("changed") == 1
    assert result.notes == (
        "A and B: the KV cache of 4 of 4 layers reads no k/v scales (kv-cache dtype "
        "int8_per_token_head): a change of theirs does not change what the engine serves",
    )
    # both sides refused: nothing compared, and the note says why
    refused = diff_paths(a, b, EngineOptions(kv_cache_dtype="fp8_e5m2"))
    assert refused.count("changed") == 0
    assert refused.notes == (
        "A and B: the engine refuses 4 of 4 layers (ValueError: fp8_e5m2 kv-cache is not "
        "supported with fp8 checkpoints.); their values are not compared",
    )
    assert diff_paths(a, b, EngineOptions(kv_cache_dtype="fp8")).notes == ()
