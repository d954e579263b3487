"""The diff gate's defaults (issue 25): a drift bound that fails a 128x smaller scale unless
turned off, and every input entry accounted for (a layer named twice is refused; what the
engine leaves out of a checkpoint B is a failure when A has not the same problem)."""

from __future__ import annotations

import inspect as pyinspect
import json
import math
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import ct_config, make_checkpoint_dir, tensor

import kvscale
from kvscale.core.diff import (
    DEFAULT_MAX_REL_CHANGE,
    LayerScales,
    ScaleSet,
    compare,
    diff_paths,
)
from kvscale.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
L0 = "model.layers.0.self_attn.attn"


def _side(
    rule: str, k: float | None, loaded: frozenset[str] | None = None, **more: Any
) -> ScaleSet:
    values = {"k_scale": k, "v_scale": 0.5, "q_scale": 1.0, "prob_scale": 1.0, **more}
    return ScaleSet(
        path="x",
        source="test",
        kv_cache_dtype="fp8",
        platform="ocp",
        engine_path="compressed-tensors",
        model_dtype="bfloat16",
        layers=(LayerScales(L0, rule, values, loaded),),
    )


def test_default_bound_fails_the_128x_smaller_scale_of_wrong_scale() -> None:
    result = diff_paths(EXAMPLES / "llm-compressor-fp8", EXAMPLES / "wrong-scale")
    assert result.threshold == DEFAULT_MAX_REL_CHANGE == 0.75
    assert [(f.rule, f.layer, f.message) for f in result.failures] == [
        (
            "drift",
            "model.layers.1.self_attn.attn",
            "k_scale 0.0244140625 -> 0.00019073486328125: relative change 127 > 0.75",
        )
    ]
    assert diff_paths(EXAMPLES / "llm-compressor-fp8", EXAMPLES / "wrong-scale", None, None).ok


def test_python_api_has_the_same_default() -> None:
    default = pyinspect.signature(kvscale.diff).parameters["max_rel_change"].default
    assert default == DEFAULT_MAX_REL_CHANGE
    assert not kvscale.diff(EXAMPLES / "llm-compressor-fp8", EXAMPLES / "wrong-scale").ok
    assert kvscale.diff(
        EXAMPLES / "llm-compressor-fp8", EXAMPLES / "wrong-scale", max_rel_change=None
    ).ok


@pytest.mark.parametrize(
    ("k_b", "fails"),
    [
        (0.25 * 1.5, False),  # calibration noise: two honest runs differ by less (0.56 seen)
        (0.25 * 1.75, False),  # a change of exactly 0.75 is not above the bound
        (0.25 * 1.7501, True),
        (0.25 * 448 / 240, True),  # computed for the other FP8 format's max
        (0.25 * 2, True),  # doubled
        (0.25 / 2, True),  # shrinking counts the same
        (0.25 / 448, True),  # a scale left at amax
    ],
)
def test_default_bound_is_more_than_1_75x_either_way(k_b: float, fails: bool) -> None:
    result = compare(_side("separate", 0.25), _side("separate", k_b))
    assert [f.rule for f in result.failures] == (["drift"] if fails else [])


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (_side("separate", math.nan), _side("separate", 0.25)),  # a fix
        (_side("separate", 0.0), _side("separate", 0.25)),  # a fix
        (_side("default", 1.0), _side("separate", 0.001)),  # calibrated at last
        (_side("partial", 1.0), _side("separate", 0.001)),  # more of it calibrated
        # q was the engine's 1.0 and is now calibrated (what was loaded is known on both sides)
        (
            _side("separate", 0.25, frozenset({"k_scale", "v_scale"})),
            _side("separate", 0.25, frozenset({"k_scale", "v_scale", "q_scale"}), q_scale=0.01),
        ),
    ],
)
def test_no_drift_where_a_side_holds_no_calibrated_value(a: ScaleSet, b: ScaleSet) -> None:
    assert compare(a, b).ok


def test_a_layer_named_twice_in_a_scales_document_is_refused(tmp_path: Path) -> None:
    """Issue 25: B held layer 0 as ...self_attn and ...self_attn.attn, the second with a NaN
    k scale; diff compared one of them and exited 0."""
    out = tmp_path / "a"
    kvscale.normalize(EXAMPLES / "llm-compressor-fp8", out)
    doc = json.loads((out / "kv_scales.json").read_text())
    layers = doc["layers"]
    second = dict(layers[L0], k_scale="NaN")
    doc["layers"] = {**layers, "model.layers.0.self_attn": second}
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as raised:
        diff_paths(out, b)
    assert raised.value.one_line() == (
        f"{b}: layer 'model.layers.0.self_attn' appears twice (also as '{L0}'); which entry "
        "applies is undefined (keep one entry per layer)"
    )


def test_a_layer_named_twice_in_an_inspect_document_is_refused(tmp_path: Path) -> None:
    report = kvscale.inspect(EXAMPLES / "llm-compressor-fp8")
    from kvscale.render.inspect import inspect_json

    doc = inspect_json(report)
    doc["layers"].append(dict(doc["layers"][0], name="model.layers.0.self_attn", k_scale="NaN"))
    b = tmp_path / "b.json"
    b.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="appears twice"):
        diff_paths(EXAMPLES / "llm-compressor-fp8", b)


def test_a_shadowed_nan_in_checkpoint_b_fails_as_a_new_error(tmp_path: Path) -> None:
    """The engine keeps one of two tensors that spell layer 0's k scale; the other (NaN) reaches
    no compared value, and is accounted for by inspect's duplicate-scale-source."""
    weights = {"model.layers.0.self_attn.q_proj.weight": tensor([[0.0] * 4] * 4, "BF16")}
    scales = {
        "model.layers.0.self_attn.k_scale": tensor(0.5),
        "model.layers.0.self_attn.v_scale": tensor(0.25),
    }
    shadowed = {"model.layers.0.self_attn.attn.k_scale": tensor(math.nan)}
    a = make_checkpoint_dir(tmp_path, "a", config=ct_config(1), tensors={**weights, **scales})
    b = make_checkpoint_dir(
        tmp_path, "b", config=ct_config(1), tensors={**weights, **scales, **shadowed}
    )
    assert kvscale.inspect(b).layers[0].k_scale == 0.5  # the engine keeps the finite one
    result = diff_paths(a, b)
    assert [(f.rule, f.layer, f.message.split(":")[0]) for f in result.failures] == [
        ("new-error", L0, "duplicate-scale-source")
    ]
    assert "model.layers.0.self_attn.attn.k_scale" in result.failures[0].message
    # The same problem on both sides is no change.
    shutil.rmtree(a)
    shutil.copytree(b, a)
    assert diff_paths(a, b).ok
