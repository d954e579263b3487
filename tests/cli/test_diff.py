"""`kvscale diff`: relative changes, layers added/lost, rule changes, the gate, scale files."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import distinct_k as k_of
from support.checkpoints import distinct_scales as scales
from support.checkpoints import distinct_v as v_of
from support.checkpoints import write_scalar_checkpoint
from support.checkpoints import write_scalar_checkpoint as write_ckpt
from support.cli import CliRunner, run_cli

from kvscale.cli import app

runner = CliRunner()


P = "model.layers.{}.self_attn"


L = P + ".attn"


FP8_QC = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}


def next_float32(x: float) -> float:
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    return float(struct.unpack("<f", struct.pack("<I", bits + 1))[0])


def invoke(*args: str) -> Any:
    return runner.invoke(app, [*args, "--no-policy"], env={"GITHUB_ACTIONS": "", "COLUMNS": "120"})


@pytest.fixture
def pair_126(tmp_path: Path) -> tuple[Path, Path]:
    a = write_ckpt(tmp_path / "release-1.0", scales(126), 126)
    b = write_ckpt(tmp_path / "release-1.1", scales(126, k77=k_of(77) * 1.25), 126)
    return a, b


def test_finds_the_one_changed_layer_among_126(pair_126: tuple[Path, Path]) -> None:
    a, b = pair_126
    result = invoke("diff", str(a), str(b), "--json")
    assert result.exit_code == 0  # no threshold: a value change alone does not fail
    assert result.stderr == ""
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvscale.diff/1"
    assert len(doc["layers"]) == 126
    changed = [layer for layer in doc["layers"] if layer["status"] != "unchanged"]
    assert changed == [
        {
            "name": "model.layers.77.self_attn.attn",
            "status": "changed",
            "rule_a": "separate",
            "rule_b": "separate",
            "rule_changed": False,
            "max_rel_change": 0.25,
            "max_kind": "k_scale",
            "scales": {
                "k_scale": {
                    "a": 0.076171875,
                    "b": 0.09521484375,
                    "changed": True,
                    "rel_change": 0.25,
                    "compared": "value",
                    "head": None,
                },
                "v_scale": {
                    "a": 0.0380859375,
                    "b": 0.0380859375,
                    "changed": False,
                    "rel_change": 0.0,
                    "compared": "value",
                    "head": None,
                },
                "q_scale": {
                    "a": 1.0,
                    "b": 1.0,
                    "changed": False,
                    "rel_change": 0.0,
                    "compared": "value",
                    "head": None,
                },
                "prob_scale": {
                    "a": 1.0,
                    "b": 1.0,
                    "changed": False,
                    "rel_change": 0.0,
                    "compared": "value",
                    "head": None,
                },
            },
            "failures": [],
        }
    ]
    assert doc["summary"] == {
        "layers_a": 126,
        "layers_b": 126,
        "unchanged": 125,
        "changed": 1,
        "added": 0,
        "lost": 0,
        "rule_changes": 0,
        "largest": {
            "layer": "model.layers.77.self_attn.attn",
            "kind": "k_scale",
            "a": 0.076171875,
            "b": 0.09521484375,
            "rel_change": 0.25,
            "head": None,
        },
    }
    assert doc["failures"] == [] and doc["ok"] is True
    assert doc["a"] == {
        "path": str(a),
        "source": "checkpoint",
        "kv_cache_dtype": "fp8",
        "platform": "ocp",
        "engine_path": "compressed-tensors",
        "model_dtype": "bfloat16",
        "layers": 126,
    }


def test_126_gate_passes_below_and_fails_above(pair_126: tuple[Path, Path]) -> None:
    a, b = pair_126
    assert invoke("diff", str(a), str(b), "--max-rel-change", "0.25").exit_code == 0
    failed = invoke("diff", str(a), str(b), "--max-rel-change", "0.2", "--json")
    assert failed.exit_code == 1
    doc = json.loads(failed.stdout)
    assert doc["failures"] == [
        {
            "rule": "drift",
            "layer": "model.layers.77.self_attn.attn",
            "message": "k_scale 0.076171875 -> 0.09521484375: relative change 0.25 > 0.2",
        }
    ]
    assert doc["ok"] is False and doc["max_rel_change"] == 0.2


def test_126_table_shows_only_the_changed_layer(pair_126: tuple[Path, Path]) -> None:
    a, b = pair_126
    result = invoke("diff", str(a), str(b), "--max-rel-change", "0.2")
    assert result.exit_code == 1
    rows = [line for line in result.stdout.splitlines() if line.startswith("│")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("│").split("│")]
    assert cells[:4] == ["77", "changed", "separate", "0.0761719 -> 0.0952148"]
    assert cells[-1] == "0.25"
    assert "fail drift" in result.stdout
    assert (
        "model.layers.77.self_attn: k_scale 0.076171875 -> 0.09521484375: "
        "relative change 0.25 > 0.2" in result.stdout
    )
    flat = " ".join(result.stdout.split())
    assert (
        "FAIL: 1 of 126 layers changed (largest relative change 0.25: "
        "model.layers.77.self_attn.attn k_scale 0.0761719 -> 0.0952148); 0 added, 0 lost, "
        "0 rule changes; gate --max-rel-change 0.2; 1 gate failure" in flat
    )
    every = invoke("diff", str(a), str(b), "--all")
    assert len([line for line in every.stdout.splitlines() if line.startswith("│")]) == 126


def test_one_ulp_change_is_found_and_gated_by_zero(tmp_path: Path) -> None:
    a = write_ckpt(tmp_path / "a", scales(126), 126)
    b = write_ckpt(tmp_path / "b", scales(126, v5=next_float32(v_of(5))), 126)
    doc = json.loads(invoke("diff", str(a), str(b), "--json").stdout)
    changed = [layer["name"] for layer in doc["layers"] if layer["status"] == "changed"]
    assert changed == ["model.layers.5.self_attn.attn"]
    (layer,) = (x for x in doc["layers"] if x["status"] == "changed")
    assert layer["scales"]["v_scale"]["b"] == next_float32(v_of(5))
    assert layer["max_rel_change"] == (next_float32(v_of(5)) - v_of(5)) / v_of(5)
    assert invoke("diff", str(a), str(b), "--max-rel-change", "0").exit_code == 1
    assert invoke("diff", str(a), str(a), "--max-rel-change", "0").exit_code == 0


def test_lost_layer_and_dropped_scale_fail_without_threshold(tmp_path: Path) -> None:
    a = write_ckpt(tmp_path / "a", scales(4), 4)
    b = write_ckpt(tmp_path / "b", scales(3, v1=None, k2=None, v2=None), 3)
    result = invoke("diff", str(a), str(b), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [(f["rule"], f["layer"], f["message"]) for f in doc["failures"]] == [
        ("rule-regressed", L.format(1), "rule separate -> partial"),
        ("rule-regressed", L.format(2), "rule separate -> default"),
        ("layer-lost", L.format(3), "in A (rule separate) but not in B"),
    ]
    assert [(x["name"], x["status"]) for x in doc["layers"]] == [
        (L.format(0), "unchanged"),
        (L.format(1), "changed"),
        (L.format(2), "changed"),
        (L.format(3), "lost"),
    ]
    assert doc["summary"]["rule_changes"] == 2 and doc["summary"]["lost"] == 1
    # The other direction only adds layers and gains scales: not a failure.
    assert invoke("diff", str(b), str(a)).exit_code == 0


def test_value_becoming_nan_fails_and_is_encoded(tmp_path: Path) -> None:
    a = write_ckpt(tmp_path / "a", scales(2), 2)
    b = write_ckpt(tmp_path / "b", scales(2, k1=math.nan), 2)
    result = invoke("diff", str(a), str(b), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    k = doc["layers"][1]["scales"]["k_scale"]
    assert (k["a"], k["b"], k["rel_change"]) == (k_of(1), "NaN", "Infinity")
    assert [f["rule"] for f in doc["failures"]] == ["value-invalid"]
    assert doc["failures"][0]["message"] == "k_scale 0.001953125 -> NaN"


def scales_json(path: Path, layers: dict[str, dict[str, Any]], **top: Any) -> Path:
    """A kvscale.scales/1 document as in the contract (normalize's kv_scales.json)."""
    document = {
        "schema": "kvscale.scales/1",
        "checkpoint": "whatever",
        "kv_cache_dtype": "fp8",
        "platform": "ocp",
        "engine_path": "compressed-tensors",
        "layers": layers,
        **top,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def layer_entry(k: Any, v: Any, rule: str = "separate") -> dict[str, Any]:
    return {
        "k_scale": k,
        "v_scale": v,
        "q_scale": 1.0,
        "prob_scale": 1.0,
        "rule": rule,
        "sources": {"k_scale": {"tensor": "t", "file": "f"}},
    }


def test_checkpoint_against_kv_scales_json(tmp_path: Path) -> None:
    ckpt = write_ckpt(tmp_path / "ckpt", scales(3), 3)
    doc = scales_json(
        tmp_path / "out" / "kv_scales.json",
        {L.format(i): layer_entry(k_of(i), v_of(i)) for i in range(3)},
    )
    same = invoke("diff", str(doc), str(ckpt), "--max-rel-change", "0", "--json")
    assert same.exit_code == 0
    parsed = json.loads(same.stdout)
    assert parsed["a"]["source"] == "kvscale.scales/1"
    assert parsed["summary"]["unchanged"] == 3
    # A normalize output directory stands for its kv_scales.json.
    assert invoke("diff", str(doc.parent), str(ckpt), "--max-rel-change", "0").exit_code == 0


def test_kv_scales_json_prefix_names_per_head_and_non_finite(tmp_path: Path) -> None:
    ckpt = write_ckpt(tmp_path / "ckpt", scales(3), 3)
    doc = scales_json(
        tmp_path / "kv_scales.json",
        {
            P.format(0): layer_entry(k_of(0), v_of(0)),  # prefix name, no ".attn"
            L.format(1): layer_entry([k_of(1), 0.0], v_of(1), rule="per_head"),
            L.format(2): layer_entry("NaN", "Infinity"),
        },
    )
    result = invoke("diff", str(doc), str(ckpt), "--json")
    parsed = json.loads(result.stdout)
    assert [(x["name"], x["status"]) for x in parsed["layers"]] == [
        (P.format(0), "unchanged"),
        (L.format(1), "changed"),
        (L.format(2), "changed"),
    ]
    k1 = parsed["layers"][1]["scales"]["k_scale"]
    assert (k1["a"], k1["b"], k1["compared"], k1["rel_change"]) == (
        [k_of(1), 0.0],
        k_of(1),
        "max-over-heads",
        0.0,
    )
    k2 = parsed["layers"][2]["scales"]["k_scale"]
    assert (k2["a"], k2["b"], k2["rel_change"]) == ("NaN", k_of(2), "Infinity")
    # NaN -> finite is a fix, not a failure; per_head -> separate keeps the rank.
    assert result.exit_code == 0 and parsed["failures"] == []


def test_checkpoint_side_follows_the_platform_of_the_scales_file(tmp_path: Path) -> None:
    # The base path doubles k/v on fnuz: a kv_scales.json written for fnuz holds 2x.
    ckpt = write_ckpt(
        tmp_path / "ckpt",
        {f"{P.format(0)}.k_scale": 0.25, f"{P.format(0)}.v_scale": 0.125},
        1,
        FP8_QC,
    )
    doc = scales_json(
        tmp_path / "kv_scales.json",
        {L.format(0): layer_entry(0.5, 0.25)},
        platform="fnuz",
        engine_path="base",
    )
    aligned = json.loads(invoke("diff", str(doc), str(ckpt), "--json").stdout)
    assert aligned["b"]["platform"] == "fnuz"
    assert aligned["layers"][0]["status"] == "unchanged"
    assert aligned["settings_differ"] == []
    forced = invoke("diff", str(doc), str(ckpt), "--json", "--platform", "ocp")
    parsed = json.loads(forced.stdout)
    assert parsed["settings_differ"] == ["platform"]
    assert parsed["layers"][0]["scales"]["k_scale"]["rel_change"] == 1.0  # 0.5 vs 0.25: 2x
    human = invoke("diff", str(doc), str(ckpt), "--platform", "ocp")
    assert "platform differs: A fnuz, B ocp" in human.stdout


def test_saved_inspect_json_as_baseline(tmp_path: Path) -> None:
    ckpt = write_ckpt(tmp_path / "ckpt", scales(4), 4)
    saved = tmp_path / "baseline.json"
    inspected = invoke("inspect", str(ckpt), "--json")
    saved.write_text(inspected.stdout)
    result = invoke("diff", str(saved), str(ckpt), "--max-rel-change", "0", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["a"]["source"] == "kvscale.inspect/1"
    drifted = write_ckpt(tmp_path / "drifted", scales(4, k2=k_of(2) * 2), 4)
    assert invoke("diff", str(saved), str(drifted), "--max-rel-change", "0.5").exit_code == 1


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('{"schema": "something/9"}', "not a kvscale scales document ('something/9')"),
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not a JSON object"),
        ('{"schema": "kvscale.scales/1", "layers": []}', "layers must be an object"),
        (
            '{"schema": "kvscale.scales/1", "layers": {"a.attn": {"rule": "separate", '
            '"k_scale": "big"}}}',
            "a.attn.k_scale must be a number, got 'big'",
        ),
        (
            '{"schema": "kvscale.scales/1", "layers": {"a.attn": {"k_scale": 1.0}}}',
            "layer 'a.attn' has no rule",
        ),
        (
            '{"schema": "kvscale.scales/1", "layers": {"a.attn": {"rule": "x", "k_scale": true}}}',
            "a.attn.k_scale must be a number, got True",
        ),
    ],
)
def test_bad_scale_documents_exit_2_naming_the_file(
    tmp_path: Path, content: str, needle: str
) -> None:
    ckpt = write_ckpt(tmp_path / "ckpt", scales(1), 1)
    bad = tmp_path / "kv_scales.json"
    bad.write_text(content)
    result = invoke("diff", str(bad), str(ckpt))
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"kvscale: error: {bad}") and needle in line


def test_missing_side_exit_2(tmp_path: Path) -> None:
    ckpt = write_ckpt(tmp_path / "ckpt", scales(1), 1)
    for missing in (tmp_path / "nope", tmp_path / "nope.json"):
        result = invoke("diff", str(ckpt), str(missing))
        assert result.exit_code == 2 and "nope" in result.stderr and result.stdout == ""


def test_policy_file_max_rel_change_default(
    pair_126: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = pair_126
    (tmp_path / ".git").mkdir()
    (tmp_path / "kvscale.toml").write_text("max_rel_change = 0.1\n")
    monkeypatch.chdir(tmp_path)
    run = runner.invoke(app, ["diff", str(a), str(b)], env={"GITHUB_ACTIONS": ""})
    assert run.exit_code == 1
    overridden = runner.invoke(
        app, ["diff", str(a), str(b), "--max-rel-change", "0.3"], env={"GITHUB_ACTIONS": ""}
    )
    assert overridden.exit_code == 0


def test_diff_annotations_under_github_actions(pair_126: tuple[Path, Path]) -> None:
    a, b = pair_126
    result = runner.invoke(
        app,
        ["diff", str(a), str(b), "--max-rel-change", "0.2", "--json", "--no-policy"],
        env={"GITHUB_ACTIONS": "true"},
    )
    assert result.exit_code == 1
    json.loads(result.stdout)
    assert result.stderr.splitlines() == [
        "::error title=kvscale diff drift::model.layers.77.self_attn: k_scale 0.076171875 -> "
        "0.09521484375: relative change 0.25 > 0.2"
    ]


def test_negative_threshold_is_a_usage_error(pair_126: tuple[Path, Path]) -> None:
    a, b = pair_126
    result = invoke("diff", str(a), str(b), "--max-rel-change", "-1")
    assert result.exit_code == 2


def _scalar(tmp: Path, name: str, k: float) -> Path:
    return write_scalar_checkpoint(
        tmp / name,
        {"model.layers.0.self_attn.k_scale": k, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )


@pytest.mark.parametrize(("a", "b"), [(1.28, 0.01), (0.01, 1.28)])
def test_a_128x_shrink_trips_the_gate_like_a_128x_growth(
    tmp_path: Path, a: float, b: float
) -> None:
    """Issue 10, defect 3: a 128x shrink reported 0.992 and passed ``--max-rel-change 1``; the
    growth reported 127."""
    first, second = _scalar(tmp_path, "a", a), _scalar(tmp_path, "b", b)
    result = run_cli("diff", first, second, "--max-rel-change", "1", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    (layer,) = doc["layers"]
    assert layer["max_kind"] == "k_scale" and layer["status"] == "changed"
    assert layer["max_rel_change"] == layer["scales"]["k_scale"]["rel_change"] == 127.0
