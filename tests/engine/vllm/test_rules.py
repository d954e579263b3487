"""Each resolution rule of vLLM v0.33.0, with exact expected values (pure, no files)."""

from __future__ import annotations

import math

import pytest

from kvscale.conventions import Convention
from kvscale.engine.base import EnginePath, EngineSettings, Rule, ScaleSource
from kvscale.engine.vllm.rules import resolve_layer

LAYER = "model.layers.0.self_attn.attn"


def src(
    kind: str,
    value: float | list[float],
    shape: tuple[int, ...] = (),
    order: int = 0,
    dtype: str = "F32",
) -> ScaleSource:
    values = tuple(value) if isinstance(value, list) else (value,)
    return ScaleSource(
        tensor=f"model.layers.0.self_attn.{kind}",
        file="model.safetensors",
        dtype=dtype,
        shape=shape,
        kind=kind,
        convention=Convention.LLM_COMPRESSOR,
        load_order=order,
        values=values,
    )


def base(kv: str = "fp8", platform: str = "ocp", dtype: str = "bfloat16") -> EngineSettings:
    return EngineSettings(EnginePath.BASE, kv, platform, dtype, num_heads=8, num_kv_heads=2)


def ct(kv: str = "fp8", strategy: str = "tensor", groups: bool = True) -> EngineSettings:
    return EngineSettings(
        EnginePath.COMPRESSED_TENSORS,
        kv,
        "ocp",
        "bfloat16",
        num_heads=8,
        num_kv_heads=2,
        ct_strategy=strategy,
        ct_has_config_groups=groups,
    )


def values(layer):  # type: ignore[no-untyped-def]
    return (layer.k_scale, layer.v_scale, layer.q_scale, layer.prob_scale)


# --- base path ---------------------------------------------------------------------------------


def test_separate_rounds_to_model_dtype() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.3), src("v_scale", 0.05, order=1)], base())
    assert layer.rule is Rule.SEPARATE
    assert values(layer) == (0.30078125, 0.050048828125, 1.0, 1.0)


def test_separate_float32_model_keeps_float32_value() -> None:
    layer = resolve_layer(
        LAYER, [src("k_scale", 0.3), src("v_scale", 0.05, order=1)], base(dtype="float32")
    )
    assert values(layer)[:2] == (0.30000001192092896, 0.05000000074505806)


def test_fnuz_doubles_loaded_values() -> None:
    layer = resolve_layer(
        LAYER, [src("k_scale", 0.3), src("v_scale", 0.05, order=1)], base(platform="fnuz")
    )
    assert values(layer) == (0.6015625, 0.10009765625, 1.0, 1.0)


def test_default_when_absent_not_doubled_on_fnuz() -> None:
    layer = resolve_layer(LAYER, [], base(platform="fnuz"))
    assert layer.rule is Rule.DEFAULT
    assert values(layer) == (1.0, 1.0, 1.0, 1.0)


def test_both_negative_means_default() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", -2.0), src("v_scale", -0.5, order=1)], base())
    assert layer.rule is Rule.DEFAULT and values(layer)[:2] == (1.0, 1.0)


def test_k_only_is_duplicated() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.25)], base(platform="fnuz"))
    assert layer.rule is Rule.DUPLICATED
    assert values(layer)[:2] == (0.5, 0.5)


def test_zero_v_takes_k() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.25), src("v_scale", 0.0, order=1)], base())
    assert layer.rule is Rule.DUPLICATED and values(layer)[:2] == (0.25, 0.25)


def test_nan_v_never_wins_max() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.25), src("v_scale", math.nan, order=1)], base())
    assert layer.rule is Rule.DUPLICATED and values(layer)[:2] == (0.25, 0.25)


@pytest.mark.parametrize(
    "k, v",
    [(None, 0.25), (0.0, 0.25), (math.nan, 0.25), (0.0, 0.0), (-1.0, 0.0), (0.0, -1.0)],
)
def test_assertion_cases_refuse_the_layer(k: float | None, v: float) -> None:
    sources = [src("v_scale", v, order=1)]
    if k is not None:
        sources.append(src("k_scale", k))
    layer = resolve_layer(LAYER, sources, base())
    assert layer.rule is Rule.ERROR
    assert layer.error is not None and layer.error.startswith("AssertionError")
    assert values(layer) == (None, None, None, None)


def test_inf_is_accepted() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", math.inf), src("v_scale", 0.5, order=1)], base())
    assert layer.rule is Rule.SEPARATE and layer.k_scale == math.inf


def test_non_scalar_is_refused_with_the_engine_message() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", [0.1, 0.2], shape=(2,))], base())
    assert layer.rule is Rule.ERROR
    assert layer.error.startswith(
        "ValueError: KV-cache scale expects a scalar weight, got shape (2,)"
    )


def test_shape_one_and_one_by_one_are_scalars() -> None:
    layer = resolve_layer(
        LAYER,
        [src("k_scale", 0.5, shape=(1,)), src("v_scale", 0.25, shape=(1, 1), order=1)],
        base(),
    )
    assert values(layer)[:2] == (0.5, 0.25)


def test_q_and_prob_on_fnuz_double_in_model_dtype() -> None:
    sources = [src("k_scale", 1.5), src("v_scale", 1.5, order=1), src("q_scale", 40000.0, order=2)]
    layer = resolve_layer(LAYER, sources, base(platform="fnuz", dtype="float16"))
    # k/v double as Python floats (80000 fits float32); q doubles in place in float16 -> inf.
    assert values(layer)[:3] == (3.0, 3.0, math.inf)
    prob = resolve_layer(LAYER, [src("prob_scale", 0.125)], base(platform="fnuz"))
    assert prob.prob_scale == 0.25


def test_q_invalid_falls_back_to_one() -> None:
    for q in (0.0, -1.0, math.nan):
        layer = resolve_layer(LAYER, [src("q_scale", q)], base())
        assert layer.q_scale == 1.0


def test_unquantized_cache_keeps_k_v_at_one_but_loads_q() -> None:
    sources = [src("k_scale", 0.3), src("v_scale", 0.05, order=1), src("q_scale", 0.5, order=2)]
    layer = resolve_layer(LAYER, sources, base(kv="auto"))
    assert layer.rule is Rule.UNQUANTIZED and values(layer) == (1.0, 1.0, 0.5, 1.0)


def test_per_token_head_ignores_everything() -> None:
    sources = [src("k_scale", 0.3), src("q_scale", 0.5, order=2)]
    layer = resolve_layer(LAYER, sources, base(kv="fp8_per_token_head"))
    assert layer.rule is Rule.UNQUANTIZED and values(layer) == (1.0, 1.0, 1.0, 1.0)


def test_float16_underflow_refuses_and_overflow_is_inf() -> None:
    under = resolve_layer(
        LAYER, [src("k_scale", 1e-8), src("v_scale", 0.5, order=1)], base(dtype="float16")
    )
    assert under.rule is Rule.ERROR  # k rounds to 0.0 -> assert k > 0 fails
    over = resolve_layer(
        LAYER, [src("k_scale", 1e5), src("v_scale", 0.5, order=1)], base(dtype="float16")
    )
    assert over.k_scale == math.inf and over.v_scale == 0.5


def test_last_loaded_source_wins() -> None:
    sources = [
        src("k_scale", 0.5, order=0),
        src("k_scale", 0.25, order=5),
        src("v_scale", 0.5, order=1),
    ]
    layer = resolve_layer(LAYER, sources, base())
    assert layer.k_scale == 0.25 and len(layer.shadowed) == 1


def test_model_level_refusal_applies() -> None:
    settings = EngineSettings(
        EnginePath.BASE, "fp8_e5m2", "ocp", "bfloat16", refusal="ValueError: x"
    )
    layer = resolve_layer(LAYER, [src("k_scale", 0.5)], settings)
    assert layer.rule is Rule.ERROR and layer.error == "ValueError: x"


# --- compressed-tensors path -----------------------------------------------------------------


def test_ct_float32_no_rounding_no_sentinel() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.3), src("v_scale", 0.05, order=1)], ct())
    assert layer.rule is Rule.SEPARATE
    assert values(layer) == (0.30000001192092896, 0.05000000074505806, 1.0, 1.0)


def test_ct_partial_and_invalid_values_accepted() -> None:
    layer = resolve_layer(LAYER, [src("v_scale", 0.0)], ct())
    assert layer.rule is Rule.PARTIAL and values(layer)[:2] == (1.0, 0.0)
    neg = resolve_layer(LAYER, [src("k_scale", -0.5), src("v_scale", math.nan, order=1)], ct())
    assert neg.k_scale == -0.5 and math.isnan(neg.v_scale)


def test_ct_f64_rounds_to_float32() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", 0.1, dtype="F64")], ct())
    assert layer.k_scale == 0.10000000149011612


def test_ct_per_head_shape_under_tensor_strategy_is_refused() -> None:
    layer = resolve_layer(LAYER, [src("k_scale", [0.1, 0.2], shape=(2, 1, 1))], ct())
    assert layer.rule is Rule.ERROR and layer.error.startswith(
        "AssertionError: Attempted to load weight"
    )


def test_ct_prob_scale_refused() -> None:
    layer = resolve_layer(LAYER, [src("prob_scale", 0.5)], ct())
    assert layer.rule is Rule.ERROR and "prob_scale" in layer.error


def test_ct_attn_head_gqa_max() -> None:
    q = [0.1, 0.4, 0.3, 0.2, 0.5, 0.6, 0.7, 0.8]
    sources = [
        src("k_scale", [0.25, 0.5], shape=(2, 1, 1)),
        src("v_scale", [0.125, math.nan], shape=(2, 1, 1), order=1),
        src("q_scale", q, shape=(8, 1, 1), order=2),
    ]
    layer = resolve_layer(LAYER, sources, ct(strategy="attn_head"))
    assert layer.rule is Rule.PER_HEAD
    assert layer.k_scale == (0.25, 0.5)
    assert layer.v_scale[0] == 0.125 and math.isnan(layer.v_scale[1])
    assert layer.q_scale == (0.4000000059604645, 0.800000011920929)
    assert layer.prob_scale == 1.0


def test_ct_attn_head_broadcast_and_truncate() -> None:
    single = resolve_layer(LAYER, [src("k_scale", 0.5)], ct(strategy="attn_head"))
    assert single.k_scale == (0.5, 0.5)
    more = resolve_layer(
        LAYER, [src("k_scale", [0.5, 0.25, 0.125], shape=(3, 1, 1))], ct(strategy="attn_head")
    )
    assert more.k_scale == (0.5, 0.25)


def test_ct_attn_head_without_config_groups_is_refused() -> None:
    layer = resolve_layer(
        LAYER,
        [src("k_scale", [0.5, 0.25], shape=(2, 1, 1))],
        ct(strategy="attn_head", groups=False),
    )
    assert layer.rule is Rule.ERROR and layer.error.startswith("AssertionError")
    # no tensors -> nothing is loaded, nothing fails
    empty = resolve_layer(LAYER, [], ct(strategy="attn_head", groups=False))
    assert empty.rule is Rule.PER_HEAD and empty.k_scale == (1.0, 1.0)
