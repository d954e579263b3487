"""vLLM 0.33.0's resolution rules: what a layer's device tensors hold after loading.

Two paths:

* ``BaseKVCacheMethod`` (``model_executor/layers/quantization/kv_cache.py``), used by the fp8,
  modelopt and quark quant methods;
* ``CompressedTensorsKVCacheMethod``
  (``model_executor/layers/quantization/compressed_tensors/compressed_tensors.py``).

Both start from ``set_default_quant_scales`` (``layers/attention/attention.py``): float32 device
buffers ``_k_scale``/``_v_scale``/``_q_scale``/``_prob_scale`` all 1.0. Everything here is pure
Python on exact floats (see ``kvscale.floats``); the functions take the scale sources of one layer
and return a ``ResolvedLayer``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from kvscale.engine.base import (
    BUFFER_KINDS,
    EnginePath,
    EngineSettings,
    ResolvedLayer,
    Rule,
    ScaleSource,
    ScaleValue,
)
from kvscale.engine.vllm.kv_cache_dtypes import is_quantized_kv_cache, uses_per_token_head_scales
from kvscale.errors import LimitExceededError
from kvscale.floats import (
    DECODABLE_DTYPES,
    FLOAT32_MAX,
    max_nan,
    round_to_dtype,
    to_float32,
)
from kvscale.limits import MAX_SCALE_ELEMENTS


class _Refused(Exception):
    """The engine raises while loading or post-processing this layer."""


def _refused(
    name: str, why: str, sources: dict[str, ScaleSource], shadowed: list[ScaleSource]
) -> ResolvedLayer:
    return ResolvedLayer(
        name,
        Rule.ERROR,
        None,
        None,
        None,
        None,
        error=why,
        sources=dict(sources),
        shadowed=tuple(shadowed),
    )


def _load_buffers(ordered: Sequence[ScaleSource]) -> dict[str, float]:
    """Values the loader writes straight into the device buffers (``default_weight_loader``)."""
    buffers: dict[str, float] = {}
    for src in ordered:
        if src.kind not in BUFFER_KINDS:
            continue
        if src.numel != 1:
            raise _Refused(
                f"AssertionError: Attempted to load weight ({_torch_size(src.shape)}) into "
                f"parameter (torch.Size([])) for {src.tensor!r}"
            )
        buffers[BUFFER_KINDS[src.kind]] = to_float32(_values(src)[0])
    return buffers


def _shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _torch_size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


def resolve_layer(
    name: str,
    sources: Sequence[ScaleSource],
    settings: EngineSettings,
    *,
    checkpoint_prefix: str | None = None,
    refusal: str | None = None,
) -> ResolvedLayer:
    """Resolve one attention layer from the scale sources that target it, in load order.

    ``refusal``: why loading this layer's tensors fails before any scale is processed (e.g. a
    scale-like tensor of the layer that the loader cannot place).
    """
    layer = _resolve_layer(name, sources, settings, refusal)
    prefix = checkpoint_prefix if checkpoint_prefix is not None else name.removesuffix(".attn")
    return replace(layer, checkpoint_prefix=prefix)


def _resolve_layer(
    name: str, sources: Sequence[ScaleSource], settings: EngineSettings, refusal: str | None
) -> ResolvedLayer:
    ordered = sorted(sources, key=lambda s: s.load_order)
    winners: dict[str, ScaleSource] = {}
    shadowed: list[ScaleSource] = []
    for src in ordered:
        if src.kind in winners:
            shadowed.append(winners[src.kind])
        winners[src.kind] = src
    if settings.refusal is not None:
        return _refused(name, settings.refusal, winners, shadowed)
    if refusal is not None:
        return _refused(name, refusal, winners, shadowed)
    try:
        buffers = _load_buffers(ordered)
        if settings.engine_path is EnginePath.COMPRESSED_TENSORS:
            return _resolve_compressed_tensors(name, ordered, winners, shadowed, settings, buffers)
        if settings.engine_path is EnginePath.BASE:
            return _resolve_base(name, ordered, winners, shadowed, settings, buffers)
        return _resolve_none(name, winners, shadowed, buffers)
    except _Refused as exc:
        return _refused(name, str(exc), winners, shadowed)


def _buffer_kinds(buffers: Mapping[str, float], kinds: Sequence[str]) -> set[str]:
    """Source kinds (``_k_scale`` ...) whose buffer value survives into the final result."""
    return {f"_{kind}" for kind in kinds if kind in buffers}


def _resolve_none(
    name: str,
    winners: dict[str, ScaleSource],
    shadowed: list[ScaleSource],
    buffers: Mapping[str, float],
) -> ResolvedLayer:
    # No KV-cache quant method: no scale parameters and no post-processing; the device buffers
    # keep set_default_quant_scales' 1.0 unless the checkpoint filled them directly.
    return ResolvedLayer(
        name,
        Rule.UNQUANTIZED,
        buffers.get("k_scale", 1.0),
        buffers.get("v_scale", 1.0),
        buffers.get("q_scale", 1.0),
        buffers.get("prob_scale", 1.0),
        sources=dict(winners),
        shadowed=tuple(shadowed),
        used_from_checkpoint=frozenset(_buffer_kinds(buffers, list(buffers)) & set(winners)),
    )


# --- BaseKVCacheMethod -----------------------------------------------------------------------

_BASE_PARAM_KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")


def _resolve_base(
    name: str,
    ordered: Sequence[ScaleSource],
    winners: dict[str, ScaleSource],
    shadowed: list[ScaleSource],
    settings: EngineSettings,
    buffers: Mapping[str, float],
) -> ResolvedLayer:
    dtype = settings.model_dtype
    # create_weights: KVCacheScaleParameter() is torch.tensor(-1.0) built under the model dtype.
    params = dict.fromkeys(_BASE_PARAM_KINDS, -1.0)
    for src in ordered:
        if src.kind not in params:
            continue  # buffers (loaded above) and zero points (ignored as unexpected suffixes)
        if src.numel != 1:
            raise _Refused(
                f"ValueError: KV-cache scale expects a scalar weight, got shape "
                f"{_shape_text(src.shape)} (tensor {src.tensor!r} feeds {src.kind}; the "
                f"{settings.engine_path.value} path loads exactly one value per scale: store a "
                "float32 [] tensor, e.g. the max over heads)"
            )
        values = _values(src)
        if len(values) != 1:
            raise _Refused(f"tensor {src.tensor!r} could not be decoded")
        # KVCacheScaleParameter.weight_loader: param.data.copy_(w.reshape(())) -> model dtype.
        params[src.kind] = round_to_dtype(values[0], dtype)
    loaded = dict(params)
    used: set[str] = set()

    k = v = 1.0  # set_default_quant_scales
    q = prob = 1.0
    rule = Rule.UNQUANTIZED
    if uses_per_token_head_scales(settings.kv_cache_dtype):
        # process_weights_after_loading returns early after `_k_scale.copy_(1.0)` and
        # `_v_scale.copy_(1.0)`: the q/prob buffers keep whatever the loader put there.
        return ResolvedLayer(
            name,
            Rule.UNQUANTIZED,
            1.0,
            1.0,
            buffers.get("q_scale", 1.0),
            buffers.get("prob_scale", 1.0),
            sources=dict(winners),
            shadowed=tuple(shadowed),
            loaded=loaded,
            used_from_checkpoint=frozenset(
                _buffer_kinds(buffers, ("q_scale", "prob_scale")) & set(winners)
            ),
        )
    if is_quantized_kv_cache(settings.kv_cache_dtype):
        pk, pv = params["k_scale"], params["v_scale"]
        if pk > 0.0 and pv > 0.0:
            rule = Rule.SEPARATE
            k, v = pk, pv
            used |= {"k_scale", "v_scale"}
            if settings.fnuz:
                # `k_scale *= 2` on the Python floats from .tolist(): exact in double precision.
                k, v = k * 2, v * 2
        elif pk < 0.0 and pv < 0.0:
            rule = Rule.DEFAULT  # not doubled on fnuz: the 1.0 default is a plain constant
        else:
            if not pk > 0.0:
                raise _Refused(
                    "AssertionError: `assert layer.k_scale > 0.0` in BaseKVCacheMethod."
                    f"process_weights_after_loading (k_scale={_num(pk)}, v_scale={_num(pv)}): "
                    "when only one scale is valid it must be k_scale, which the engine then "
                    "duplicates; write a positive k_scale, or remove both to get the 1.0 default"
                )
            rule = Rule.DUPLICATED
            # Python's max(k, v) on 0-d tensors: v only if v > k (a NaN v never wins).
            chosen, chosen_kind = (pv, "v_scale") if pv > pk else (pk, "k_scale")
            used.add(chosen_kind)
            k = v = chosen * 2 if settings.fnuz else chosen
        for label, value in (("k_scale", k), ("v_scale", v)):
            if math.isfinite(value) and abs(value) > FLOAT32_MAX:
                # `_k_scale_cpu.fill_(k_scale)` refuses a finite double beyond float32 (a huge
                # bf16 scale doubled on fnuz).
                raise _Refused(
                    "RuntimeError: value cannot be converted to type float without overflow "
                    f"({label} {value!r} after fnuz doubling exceeds float32)"
                )
        # _k_scale.copy_(python float): float32 rounding of the double.
        k, v = to_float32(k), to_float32(v)
    else:
        # Unquantized cache: k/v are never post-processed; their buffers keep 1.0 or a value the
        # checkpoint loaded into them directly.
        k, v = buffers.get("k_scale", 1.0), buffers.get("v_scale", 1.0)
        used |= _buffer_kinds(buffers, ("k_scale", "v_scale"))

    pq = params["q_scale"]
    if pq > 0.0:
        # `q_scale *= 2` runs in place on the model-dtype parameter on fnuz.
        q = round_to_dtype(pq * 2, dtype) if settings.fnuz else pq
        q = to_float32(q)
        used.add("q_scale")
    pp = params["prob_scale"]
    if pp > 0.0:
        prob = to_float32(round_to_dtype(pp * 2, dtype) if settings.fnuz else pp)
        used.add("prob_scale")
    return ResolvedLayer(
        name,
        rule,
        k,
        v,
        q,
        prob,
        sources=dict(winners),
        shadowed=tuple(shadowed),
        loaded=loaded,
        used_from_checkpoint=frozenset(used & set(winners)),
    )


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if value == -1.0:
        return "absent"
    return repr(value)


# --- CompressedTensorsKVCacheMethod ----------------------------------------------------------


def _resolve_compressed_tensors(
    name: str,
    ordered: Sequence[ScaleSource],
    winners: dict[str, ScaleSource],
    shadowed: list[ScaleSource],
    settings: EngineSettings,
    buffers: Mapping[str, float],
) -> ResolvedLayer:
    per_head = settings.ct_strategy == "attn_head"
    n = settings.num_kv_heads if per_head else 1
    if per_head and not n:
        raise _Refused(
            "compressed-tensors attn_head scales need num_key_value_heads (or "
            "num_attention_heads) in config.json"
        )
    assert n is not None
    # create_weights: float32 ones([n]) for k, v, q; no sentinel, no prob_scale parameter.
    params: dict[str, list[float]] = {kind: [1.0] * n for kind in ("k_scale", "v_scale", "q_scale")}
    for src in ordered:
        if src.kind == "prob_scale":
            raise _Refused(
                f"ValueError: There is no module or parameter named '{name}.prob_scale': the "
                "compressed-tensors path has no prob_scale parameter, so the loader refuses "
                f"{src.tensor!r}; remove it from the checkpoint"
            )
        if src.kind in BUFFER_KINDS:
            continue  # loaded into the buffers above; k/v/q buffers are replaced below
        if src.kind.endswith("_zero_point"):
            if not per_head and src.numel != 1:
                raise _Refused(
                    f"AssertionError: Attempted to load weight ({_torch_size(src.shape)}) into "
                    f"parameter (torch.Size([1])) for {src.tensor!r}: zero points must match the "
                    "scale layout"
                )
            continue  # per-head loader returns early for zero points; values unused either way
        if per_head:
            params[src.kind] = _load_attn_head(src, n, settings)
        else:
            if src.numel != 1:
                raise _Refused(
                    f"AssertionError: Attempted to load weight ({_torch_size(src.shape)}) into "
                    f"parameter (torch.Size([1])) for {src.tensor!r}: the kv_cache_scheme strategy "
                    "is 'tensor', so each scale must hold one value (use strategy attn_head for "
                    "per-head scales)"
                )
            params[src.kind] = [to_float32(_values(src)[0])]

    loaded: dict[str, ScaleValue] = {
        kind: (tuple(vals) if per_head else vals[0]) for kind, vals in params.items()
    }
    present = {kind for kind in ("k_scale", "v_scale") if kind in winners}
    if not is_quantized_kv_cache(settings.kv_cache_dtype):
        rule = Rule.UNQUANTIZED
    elif per_head:
        rule = Rule.PER_HEAD
    elif len(present) == 2:
        rule = Rule.SEPARATE
    elif present:
        rule = Rule.PARTIAL
    else:
        rule = Rule.DEFAULT
    used: set[str] = {kind for kind in ("k_scale", "v_scale", "q_scale") if kind in winners}
    used |= _buffer_kinds(buffers, ("prob_scale",)) & set(winners)
    return ResolvedLayer(
        name,
        rule,
        loaded["k_scale"],
        loaded["v_scale"],
        loaded["q_scale"],
        # process_weights_after_loading re-registers _k/_v/_q_scale from the parameters; the
        # _prob_scale buffer keeps its 1.0 (or a value loaded into it directly).
        buffers.get("prob_scale", 1.0),
        sources=dict(winners),
        shadowed=tuple(shadowed),
        loaded=loaded,
        used_from_checkpoint=frozenset(used),
    )


def _values(src: ScaleSource) -> tuple[float, ...]:
    if src.values is None and src.dtype not in DECODABLE_DTYPES:
        raise _Refused(
            f"TypeError: {src.tensor!r} is stored as {src.dtype}, which cannot be loaded into a "
            "float32 scale; store scales as float32"
        )
    if src.values is None:
        raise LimitExceededError(
            src.path or src.file,
            f"scale tensor {src.tensor!r} has {src.numel:,} elements; not read",
            hint=MAX_SCALE_ELEMENTS.describe(),
        )
    return src.values


def _load_attn_head(src: ScaleSource, n: int, settings: EngineSettings) -> list[float]:
    """``_tp_aware_loader`` (tp_size 1) for one per-head scale tensor."""
    flat = list(_values(src))
    total_heads = settings.num_heads if settings.ct_has_config_groups else None
    total_kv = settings.num_kv_heads if settings.ct_has_config_groups else None
    if src.kind == "q_scale":
        # q [num_heads,1,1] -> amax over each GQA group of num_heads // num_kv_heads heads.
        if total_heads is None or total_kv is None:
            raise _Refused(
                "TypeError: unsupported operand type(s) for //: 'NoneType' and 'NoneType' "
                "(vLLM passes total_num_heads to compressed-tensors only when the "
                "quantization_config has config_groups; add config_groups to the config)"
            )
        group = total_heads // total_kv
        if group == 0 or len(flat) % group:
            raise _Refused(
                f"RuntimeError: shape '[-1, {group}]' is invalid for input of size {len(flat)} "
                f"(q_scale {src.tensor!r} must hold num_attention_heads={total_heads} values)"
            )
        flat = [max_nan(flat[i : i + group]) for i in range(0, len(flat), group)]
    if total_kv is None or n != total_kv:
        # `layer.num_kv_heads * tp_size == total_num_kv_heads` fails without config_groups.
        if n != 1:
            raise _Refused(
                "AssertionError: `assert layer.num_kv_heads == 1` in the attn_head loader: "
                "vLLM passes total_num_kv_heads to compressed-tensors only when the "
                "quantization_config has config_groups; add config_groups to the config"
            )
        raise _Refused(
            "TypeError: unsupported operand type(s) for //: 'int' and 'NoneType' (attn_head "
            "loader without total_num_kv_heads; add config_groups to the quantization_config)"
        )
    sliced = flat[:n]
    if len(sliced) == n:
        return [to_float32(x) for x in sliced]
    if len(sliced) == 1:
        # param.data.copy_ broadcasts a single value to every head.
        return [to_float32(sliced[0])] * n
    raise _Refused(
        f"RuntimeError: The size of tensor a ({n}) must match the size of tensor b ({len(sliced)}) "
        f"at non-singleton dimension 0 ({src.kind} {src.tensor!r} holds {len(flat)} per-head "
        f"values for {n} kv heads)"
    )
