"""SGLang 0.5.23's resolution: what ``BaseKVCacheMethod`` leaves in a layer after loading.

``srt/layers/quantization/kv_cache.py`` (29-83), used for every quant method with a KV method
(fp8, ModelOpt FP8, compressed-tensors static per-tensor FP8, Quark):

* ``create_weights``: ``k_scale``/``v_scale`` = ``Parameter(torch.tensor(-1.0, float32))``:
  always float32, 0-d; no q or prob parameter;
* ``default_weight_loader`` (``model_loader/weight_utils.py:1574-1586``): a one-element tensor is
  loaded with ``param.data.fill_(loaded.item())``: the on-disk value, rounded once to float32
  (no model-dtype rounding; a float64 beyond float32 raises); anything else must match the 0-d
  size (``AssertionError: Attempted to load weight (...) into parameter (torch.Size([]))``);
* ``process_weights_after_loading``: (a) k > 0 and v > 0: both as loaded; (b) k <= 0 and v <= 0
  (absent = the -1 sentinel): both 1.0, nothing logged (zero included, since PR #27131); (c)
  otherwise ``assert k > 0`` and both take ``max(k, v)``; on fnuz (ROCm gfx94x) the loaded values
  are doubled as Python floats (compressed-tensors included); then ``k_scale.copy_(k)`` (float32,
  inf past its range, no error) and ``k_scale_float = k`` (the Python float).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kvscale.engine.base import EnginePath, EngineSettings, ResolvedLayer, Rule, ScaleSource
from kvscale.floats import FLOAT32_MAX, to_float32


class _Refused(Exception):
    pass


def _torch_size(shape: tuple[int, ...]) -> str:
    return f"torch.Size([{', '.join(str(d) for d in shape)}])"


def resolve_layer(
    name: str,
    sources: Sequence[ScaleSource],
    settings: EngineSettings,
    *,
    checkpoint_prefix: str,
    refusal: str | None = None,
) -> ResolvedLayer:
    ordered = sorted(sources, key=lambda s: s.load_order)
    winners: dict[str, ScaleSource] = {}
    shadowed: list[ScaleSource] = []
    for src in ordered:
        if src.kind in winners:
            shadowed.append(winners[src.kind])
        winners[src.kind] = src

    def refused(why: str) -> ResolvedLayer:
        return ResolvedLayer(
            name,
            Rule.ERROR,
            None,
            None,
            None,
            None,
            error=why,
            sources=dict(winners),
            shadowed=tuple(shadowed),
            checkpoint_prefix=checkpoint_prefix,
        )

    if settings.refusal is not None:
        return refused(settings.refusal)
    if refusal is not None:
        return refused(refusal)
    if settings.engine_path is EnginePath.NONE:
        # No KV method: no scale parameters (k_scale is None); every backend reads 1.0.
        rule = Rule.DEFAULT if settings.uses_kv_scales else Rule.UNQUANTIZED
        return ResolvedLayer(
            name,
            rule,
            1.0,
            1.0,
            1.0,
            1.0,
            sources=dict(winners),
            shadowed=tuple(shadowed),
            checkpoint_prefix=checkpoint_prefix,
        )
    try:
        return _resolve_base(name, ordered, winners, shadowed, settings, checkpoint_prefix)
    except _Refused as exc:
        return refused(str(exc))


def _resolve_base(
    name: str,
    ordered: Sequence[ScaleSource],
    winners: dict[str, ScaleSource],
    shadowed: list[ScaleSource],
    settings: EngineSettings,
    prefix: str,
) -> ResolvedLayer:
    params = {"k_scale": -1.0, "v_scale": -1.0}
    for src in ordered:
        if src.kind not in params:
            continue
        if src.numel != 1:
            raise _Refused(
                f"AssertionError: Attempted to load weight ({_torch_size(src.shape)}) into "
                f"parameter (torch.Size([])) for {src.tensor!r}: SGLang loads one value per "
                "scale; write the max over heads as a [] tensor"
            )
        if not src.values:
            raise _Refused(f"TypeError: {src.tensor!r} ({src.dtype}) cannot be loaded as a scale")
        value = src.values[0]
        if math.isfinite(value) and abs(value) > FLOAT32_MAX:
            # fill_(loaded.item()) on a float32 parameter: c10's checked conversion refuses it.
            raise _Refused(
                "RuntimeError: value cannot be converted to type float without overflow "
                f"({src.tensor!r} holds {value!r})"
            )
        params[src.kind] = to_float32(value)
    loaded = dict(params)
    pk, pv = params["k_scale"], params["v_scale"]
    used: set[str] = set()
    if pk > 0.0 and pv > 0.0:
        rule = Rule.SEPARATE
        k, v = pk, pv
        used |= {"k_scale", "v_scale"}
        if settings.fnuz:
            k, v = k * 2, v * 2
    elif pk <= 0.0 and pv <= 0.0:
        rule = Rule.DEFAULT
        k = v = 1.0
    else:
        if not pk > 0.0:
            raise _Refused(
                "AssertionError: `assert layer.k_scale > 0.0` in BaseKVCacheMethod."
                f"process_weights_after_loading (srt/layers/quantization/kv_cache.py:68; "
                f"k_scale={_num(pk)}, v_scale={_num(pv)}): when only one scale is valid it must "
                "be k_scale; write a positive k_scale, or remove both to get the 1.0 default"
            )
        rule = Rule.DUPLICATED
        chosen, kind = (pv, "v_scale") if pv > pk else (pk, "k_scale")
        used.add(kind)
        k = v = chosen * 2 if settings.fnuz else chosen
    # A bf16 pool resolves the values all the same (no KV-dtype gating): the write does not
    # divide by them, but FlashInfer and Triton still apply them on read (backends.py).
    # k_scale.copy_(python float): float32, inf past its range (the host float stays finite).
    return ResolvedLayer(
        name,
        rule,
        to_float32(k),
        to_float32(v),
        1.0,
        1.0,
        sources=dict(winners),
        shadowed=tuple(shadowed),
        loaded=loaded,
        used_from_checkpoint=frozenset(used & set(winners)),
        checkpoint_prefix=prefix,
    )


def host_overflow(layer: ResolvedLayer) -> list[str]:
    """Kinds whose device float32 overflowed to inf while the host float stayed finite (the
    fnuz doubling of a value near the float32 maximum)."""
    out = []
    for kind in ("k_scale", "v_scale"):
        value = layer.value(kind)
        if isinstance(value, float) and math.isinf(value):
            src = layer.sources.get(kind)
            if src is not None and src.values and math.isfinite(src.values[0]):
                out.append(kind)
    return out


def _num(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if value == -1.0:
        return "absent"
    return repr(value)
