"""Problems with a checkpoint's KV scales, judged from the resolved layers (engine-neutral).

Each problem has a stable code (``kvscale.problems.CATALOGUE``). A value problem is an error when
the engine uses the value and a warning when it ignores it; what the engine does is already in
the ``ResolvedLayer`` (its rules live with the engine), so nothing here re-derives engine rules.
Problems that only one engine has come from ``Engine.engine_problems``.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kvscale.cache_formats import ScaleUse
from kvscale.conventions import Convention, layer_index, layer_sort_key
from kvscale.engine.base import (
    EnginePath,
    EngineSettings,
    QuantConfig,
    ResolvedLayer,
    Rule,
    UnmappedTensor,
)
from kvscale.floats import FLOAT_DTYPES, is_subnormal, round_to_dtype
from kvscale.nvfp4_conventions import Nvfp4Report, Reading
from kvscale.problems import Problem, Severity, problem

UNIT_ROUNDOFF = {"bfloat16": 2.0**-8, "float16": 2.0**-11, "float32": 2.0**-24}
"""Rounding a scale to the engine's parameter dtype is reported (``precision-lost``) only when
it changes the value by more than the dtype's unit roundoff, the most round-to-nearest can change
a normal number (half an ulp, relatively: 2^-8 for bfloat16's 8 significant bits, so 0.3 ->
0.30078125, 2.6e-3, is normal). Within it, rounding is the engine's normal behaviour (every
float32 ModelOpt scale under a bf16 model) and is only summarized (``Rounding``); past it the
value was subnormal in that dtype and really lost precision."""

MAX_NAMED = 3
"""Layers or tensors named in one grouped message before "and N more"."""


@dataclass(frozen=True)
class Rounding:
    """Checkpoint scales the engine rounds to its parameter dtype within ``UNIT_ROUNDOFF``."""

    dtype: str
    values: int
    max_rel_change: float


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _value_class(value: float) -> str | None:
    if math.isnan(value):
        return "scale-nan"
    if math.isinf(value):
        return "scale-infinite" if value > 0 else "scale-negative"
    if value == 0.0:
        return "scale-zero"
    if value < 0.0:
        return "scale-negative"
    if is_subnormal(value):
        return "scale-subnormal"
    return None


def layer_problems(
    layers: Sequence[ResolvedLayer],
    settings: EngineSettings,
    explained: frozenset[str] = frozenset(),
) -> tuple[list[Problem], Rounding | None]:
    """Per-layer problems, and the summary of the engine's normal rounding.

    ``explained``: refused layers whose refusal another (grouped) problem already reports.
    """
    out: list[Problem] = []
    rounded: list[float] = []
    for layer in layers:
        name = layer.name
        if layer.rule is Rule.ERROR and name not in explained:
            out.append(
                problem("layer-refused", layer.error or "the engine refuses this layer", name)
            )
        for src in [*layer.sources.values(), *layer.shadowed]:
            if src.dtype not in FLOAT_DTYPES and src.kind.endswith("_scale"):
                out.append(
                    problem(
                        "unusual-scale-dtype",
                        f"{src.tensor} is stored as {src.dtype}; the engine converts it on load",
                        name,
                    )
                )
            if src.convention is Convention.LEGACY_KV_SCALE and src in layer.sources.values():
                out.append(
                    problem(
                        "legacy-kv-scale",
                        f"{src.tensor} is a deprecated single kv_scale: the engine loads it as "
                        "k_scale and duplicates it to v; write separate k_scale and v_scale",
                        name,
                    )
                )
        out.extend(_duplicate_problems(layer))
        inert = layer.rule in (Rule.ERROR, Rule.UNQUANTIZED)
        layer_settings = settings.for_layer(layer.cache) if layer.cache else settings
        values, changes = _value_problems(layer, layer_settings, ignored_only=inert)
        out.extend(values)
        rounded.extend(changes)
        if inert or settings.engine_path is EnginePath.NONE or not layer_settings.uses_kv_scales:
            continue
        out.extend(_coverage_problems(layer, layer_settings))
    rounding = None
    if rounded:
        rounding = Rounding(settings.scale_dtype, len(rounded), max(rounded))
    return out, rounding


def _coverage_problems(layer: ResolvedLayer, settings: EngineSettings) -> list[Problem]:
    name = layer.name
    has_k, has_v = "k_scale" in layer.sources, "v_scale" in layer.sources
    base = settings.engine_path is EnginePath.BASE
    if layer.rule is Rule.DEFAULT:
        why = (
            "the checkpoint's k/v scales are not used"
            if has_k or has_v
            else "no k_scale/v_scale reaches this layer"
        )
        return [
            problem(
                "default-scale-used",
                f"{why}; the engine uses 1.0 for both"
                + (" (not doubled on fnuz)" if settings.fnuz and base else ""),
                name,
            )
        ]
    if layer.rule is Rule.PARTIAL:
        missing = "k_scale" if not has_k else "v_scale"
        return [
            problem(
                "scale-missing",
                f"{missing} is missing; the compressed-tensors path leaves it at 1.0",
                name,
            )
        ]
    if layer.rule is Rule.DUPLICATED and not has_v:
        k_src = layer.sources.get("k_scale")
        if k_src is not None and k_src.convention is not Convention.LEGACY_KV_SCALE:
            return [
                problem("scale-missing", "v_scale is missing; the engine uses k_scale for v", name)
            ]
    if layer.rule is Rule.PER_HEAD and not (has_k and has_v):
        missing = "k_scale" if not has_k else "v_scale"
        return [
            problem("scale-missing", f"{missing} is missing; every head of it stays at 1.0", name)
        ]
    return []


def _duplicate_problems(layer: ResolvedLayer) -> list[Problem]:
    out: list[Problem] = []
    for old in layer.shadowed:
        winner = layer.sources[old.kind]
        differ = old.values != winner.values or old.dtype != winner.dtype
        out.append(
            problem(
                "duplicate-scale-source",
                f"{old.tensor} ({old.file}) and {winner.tensor} ({winner.file}) both feed "
                f"{old.kind}; the engine keeps {winner.tensor} from {winner.file} (loaded last)"
                + ("; their values differ" if differ else ""),
                layer.name,
                severity=Severity.ERROR if differ else Severity.WARNING,
            )
        )
    return out


def _value_problems(
    layer: ResolvedLayer, settings: EngineSettings, *, ignored_only: bool
) -> tuple[list[Problem], list[float]]:
    """Value problems, and the relative changes of the engine's normal rounding."""
    out: list[Problem] = []
    rounded: list[float] = []
    target = settings.scale_dtype
    # An MLA layer's cache write and reads use the k scale alone (its v_scale is resolved but
    # never read: v-scale-unused).
    latent = layer.cache is not None and layer.cache.latent
    for kind, src in layer.sources.items():
        if src.values is None or not kind.endswith("_scale"):
            continue
        used = (
            kind in layer.used_from_checkpoint
            and not ignored_only
            and not (latent and kind == "v_scale")
        )
        fallback = _fallback_text(layer, kind)
        for i, raw in enumerate(src.values):
            where = f"{src.tensor}" + (f"[{i}]" if len(src.values) > 1 else "")
            cls = _value_class(raw)
            if cls is not None:
                tail = (
                    " and the engine uses it as is"
                    if used
                    else (f"; the engine ignores it and {fallback}" if fallback else "")
                )
                out.append(
                    problem(
                        cls,
                        f"{kind} is {_fmt(raw)} in {where}{tail}",
                        layer.name,
                        severity=Severity.ERROR if used else Severity.WARNING,
                    )
                )
                continue
            if src.dtype == "F32" and target == "float32":
                loaded = raw
            else:
                loaded = round_to_dtype(raw, target)
            if math.isinf(loaded):
                out.append(
                    problem(
                        "scale-overflow",
                        f"{kind} {_fmt(raw)} in {where} becomes inf in {target}",
                        layer.name,
                        severity=Severity.ERROR if used else Severity.WARNING,
                    )
                )
                continue
            if loaded == 0.0:
                out.append(
                    problem(
                        "scale-underflow",
                        f"{kind} {_fmt(raw)} in {where} rounds to 0 in {target}",
                        layer.name,
                    )
                )
                continue
            if used and loaded != raw:
                rel = abs(loaded - raw) / abs(raw)
                bound = UNIT_ROUNDOFF.get(target, 0.0)
                if rel <= bound:
                    rounded.append(rel)
                else:
                    held = layer.value(kind)
                    held_text = (
                        f"; the engine holds {_fmt(held)}"
                        if isinstance(held, float) and held != loaded
                        else ""
                    )
                    out.append(
                        problem(
                            "precision-lost",
                            f"{kind} {_fmt(raw)} in {where} is loaded as {_fmt(loaded)} "
                            f"({target}; relative change {rel:.2e}, more than the "
                            f"{bound:.2e} of normal rounding: the value is subnormal in "
                            f"{target}){held_text}",
                            layer.name,
                        )
                    )
            if used and raw == 1.0:
                out.append(
                    problem(
                        "scale-equals-default",
                        f"{kind} is exactly 1.0 in {where}, indistinguishable from the "
                        "uncalibrated default",
                        layer.name,
                    )
                )
        device = layer.value(kind)
        if used and isinstance(device, tuple) and settings.ct_strategy == "attn_head":
            n = settings.num_kv_heads or 0
            count = len(src.values)
            if kind == "q_scale" and settings.num_heads and settings.num_kv_heads:
                count = count // max(1, settings.num_heads // settings.num_kv_heads)
            if count > n:
                out.append(
                    problem(
                        "per-head-truncated",
                        f"{src.tensor} holds {count} per-head values for {n} kv heads; the engine "
                        f"keeps the first {n}",
                        layer.name,
                    )
                )
            elif count == 1 and n > 1:
                out.append(
                    problem(
                        "per-head-broadcast",
                        f"{src.tensor} holds one value; the engine copies it to all {n} heads",
                        layer.name,
                    )
                )
    return out, rounded


def _fallback_text(layer: ResolvedLayer, kind: str) -> str:
    value = layer.value(kind)
    if value is None:
        return ""
    shown = _fmt(value) if isinstance(value, float) else "per-head values"
    if layer.rule is Rule.DUPLICATED and kind in ("k_scale", "v_scale"):
        return f"uses {shown} (the other scale) instead"
    return f"uses {shown} instead"


_OWNER = re.compile(r"^(.*?\.(?:self_attn|mixer))\.")


def owner_layer(tensor: str) -> str | None:
    """The attention layer a tensor name sits under (``<...self_attn>.attn``), if any."""
    match = _OWNER.match(tensor)
    return f"{match.group(1)}.attn" if match else None


# Codes of KV-scheme tensors that are not scales: renaming them to k_scale/v_scale is no fix.
_SCHEME_EXTRA_CODES = frozenset({"unloadable-kv-tensor", "ignored-kv-tensor"})


def unmapped_problems(
    unmapped: Sequence[UnmappedTensor], refused_by: Mapping[str, UnmappedTensor]
) -> list[Problem]:
    """One problem per code and reason, naming its tensors and the layers it makes fail.

    ``refused_by``: layer -> the tensor whose loading fails that layer.
    """
    groups: dict[tuple[str, str, bool], list[UnmappedTensor]] = defaultdict(list)
    for item in unmapped:
        groups[(item.code, item.reason, item.fails)].append(item)
    severities = {(u.code, u.reason, u.fails): u.severity for u in unmapped if u.severity}
    refused_layers: dict[int, list[str]] = defaultdict(list)
    for name, culprit in refused_by.items():
        refused_layers[id(culprit)].append(name)
    out: list[Problem] = []
    for (code, reason, fails), items in groups.items():
        tensors = [f"{u.tensor} ({u.file})" for u in items]
        if fails:
            owners = {name for u in items for name in refused_layers.get(id(u), ())}
        else:
            owners = {owner for u in items if (owner := owner_layer(u.tensor)) is not None}
        layers = tuple(sorted(owners, key=layer_sort_key))
        scheme_extra = code in _SCHEME_EXTRA_CODES
        what = "loaded" if scheme_extra else "used as a KV scale"
        if len(items) == 1:
            head = f"{tensors[0]} is not {what}: {reason}"
        else:
            what = "loaded" if scheme_extra else "used as KV scales"
            head = f"{len(items)} tensors are not {what} ({_names(tensors)}): {reason}"
        # Renaming helps where another name loads; the engine's reason says so when it knows
        # the name (or that none exists: scales-not-loaded).
        renamable = code in _RENAMABLE_CODES and "the name that loads" not in reason
        if fails and not renamable:
            head += f"; the engine's loader raises on {'it' if len(items) == 1 else 'them'}" + (
                f", so {len(layers)} layer{'s fail' if len(layers) != 1 else ' fails'} to load"
                if layers
                else ""
            )
        elif fails:
            head += (
                "; the engine's loader refuses "
                + ("it" if len(items) == 1 else "them")
                + (
                    f", so {len(layers)} layer{'s fail' if len(layers) != 1 else ' fails'} to load"
                    if layers
                    else ""
                )
                + "; rename to <attention prefix>.k_scale / v_scale, the names every quant "
                "method maps (kvscale normalize --checkpoint does this), or remove"
            )
        out.append(
            problem(
                code,
                head,
                layers[0] if len(layers) == 1 else None,
                severity=severities.get(
                    (code, reason, fails),
                    Severity.ERROR if fails or code in _ERROR_CODES else Severity.WARNING,
                ),
                layers=layers,
            )
        )
    return out


_RENAMABLE_CODES = frozenset(["unmapped-scale-name", "dropped-by-architecture"])
_ERROR_CODES = frozenset(["scales-not-loaded"])
"""Unplaced tensors that are an error whether or not the loader raises: the layer runs at 1.0
although the checkpoint was calibrated, and no name would change that."""


def model_problems(
    layers: Sequence[ResolvedLayer],
    settings: EngineSettings,
    quant: QuantConfig,
    unmapped: Sequence[UnmappedTensor],
    refused_by: Mapping[str, UnmappedTensor],
    scale_like_count: int,
    fp8_name: str = "fp8",
) -> list[Problem]:
    """``fp8_name``: the engine's spelling of an FP8 KV-cache dtype, for hints."""
    """Problems of the model as a whole: coverage, declarations, unused or unplaced scales."""
    out: list[Problem] = []
    # Tensors the loader never places on a layer whose cache reads no checkpoint scale anyway
    # (a self-scaled format, an unquantized cache): what the cache does says it all.
    unread = {
        f"{lay.checkpoint_prefix}.attn"
        for lay in layers
        if lay.cache is not None and not lay.cache.scale_use.reads_checkpoint
    }
    moot = [u for u in unmapped if u.code in _ERROR_CODES and not u.fails and u.layer in unread]
    unmapped = [u for u in unmapped if u not in moot]
    kv_kinds = ("k_scale", "v_scale")
    scaled = [layer for layer in layers if any(k in layer.sources for k in kv_kinds)]
    unscaled = [
        layer
        for layer in layers
        if layer.rule is not Rule.ERROR and not any(k in layer.sources for k in kv_kinds)
    ]
    any_sources = any(layer.sources for layer in layers) or bool(moot)
    if scaled and unscaled:
        out.append(
            problem(
                "coverage-gap",
                f"{len(scaled)} of {len(layers)} attention layers have k/v scales; none for "
                f"{_names([layer.name for layer in unscaled])}",
            )
        )
    # An engine that ignores the declared scheme (SGLang and attn_head: kv-scheme-ignored, from
    # the engine's own problems) is the one cause: the consequences are not reported again.
    ignored = quant.ignored_scheme is not None
    if quant.kv_declaration and not any_sources and layers and not ignored:
        if scale_like_count:
            see = (
                "scales-without-quant-config"
                if settings.engine_path is EnginePath.NONE
                else ", ".join(sorted({u.code for u in unmapped}))
            )
            found = (
                f"none of the {scale_like_count} KV-scale tensors found reaches a layer (see {see})"
            )
        else:
            found = "no KV-scale tensor was found"
        out.append(
            problem(
                "declared-scheme-no-scales",
                f"the config declares {quant.kv_declaration} but {found}; every layer the engine "
                "loads uses 1.0",
            )
        )
    out.extend(_cache_problems(layers, settings, any_sources))
    model_use = next(
        (lay.cache.scale_use for lay in layers if lay.cache and not lay.cache.skipped_by), None
    )
    if (
        any_sources
        and not settings.uses_kv_scales
        # the layers the dtype applies to keep an unquantized cache (not a format that reads
        # no scales, nor every layer kept out by the skip list: layers-kept-unquantized)
        and model_use is ScaleUse.NONE
        and settings.refusal is None
        and settings.engine_path is not EnginePath.NONE
    ):
        hint = (
            f" ({quant.quant_method} checkpoints default to an unquantized cache: serve with "
            f"--kv-cache-dtype {fp8_name})"
            if settings.kv_cache_dtype == "auto"
            else ""
        )
        out.append(
            problem(
                "scales-unused",
                f"KV scales are present but the KV cache dtype is {settings.kv_cache_dtype}, "
                f"which does not use them{hint}",
            )
        )
    if settings.engine_path is EnginePath.NONE:
        if quant.raw is not None and quant.quant_method is None:
            out.append(
                problem(
                    "unknown-quant-method",
                    "quantization_config has no quant_method; the engine cannot use it",
                )
            )
        if scale_like_count and not ignored:
            first = unmapped[0].tensor if unmapped else ""
            fails = any(item.fails for item in unmapped)
            out.append(
                problem(
                    "scales-without-quant-config",
                    f"{scale_like_count} KV-scale tensors (e.g. {first}) but "
                    + (
                        f"quant_method {quant.quant_method} creates no KV-scale parameters"
                        if quant.quant_method
                        else "config.json declares no quantization_config, so the loader "
                        + ("cannot place them and refuses the model" if fails else "drops them")
                    ),
                    severity=Severity.ERROR if fails else Severity.WARNING,
                    layers=tuple(sorted(refused_by, key=layer_sort_key)),
                )
            )
    else:
        out.extend(unmapped_problems(unmapped, refused_by))
    if not layers:
        out.append(
            problem(
                "no-attention-layers",
                "no attention layer found in config.json or the weight names: this does not "
                "look like a model checkpoint",
            )
        )
    return out


def _cache_problems(
    layers: Sequence[ResolvedLayer], settings: EngineSettings, any_sources: bool
) -> list[Problem]:
    """What each layer's KV cache does with the checkpoint's scales, where it is not the plain
    per-tensor divide: layers kept unquantized, self-scaled formats, MLA's unread v_scale, and
    skip entries that match nothing."""
    out: list[Problem] = []
    # A skipped layer a sparse MLA backend serves as fp8_ds_mla after all is not kept
    # unquantized (its format says so).
    kept = [
        lay
        for lay in layers
        if lay.cache is not None
        and lay.cache.skipped_by
        and lay.cache.scale_use is ScaleUse.NONE
        and lay.rule is not Rule.ERROR
    ]
    if kept:
        reasons = sorted(
            {lay.cache.skipped_by for lay in kept if lay.cache and lay.cache.skipped_by}
        )
        scaled = [lay.name for lay in kept if any(k in lay.sources for k in ("k_scale", "v_scale"))]
        out.append(
            problem(
                "layers-kept-unquantized",
                f"{len(kept)} of {len(layers)} layers keep a {settings.model_dtype} KV cache "
                f"({_names([lay.name for lay in kept])}; {'; '.join(reasons)})"
                + (f"; the k/v scales of {len(scaled)} of them are not read" if scaled else ""),
                kept[0].name if len(kept) == 1 else None,
                layers=tuple(lay.name for lay in kept),
            )
        )
    in_cache = [
        lay
        for lay in layers
        if lay.cache is not None
        and not lay.cache.skipped_by
        and lay.cache.scale_use is ScaleUse.IN_CACHE
        and lay.rule is not Rule.ERROR
    ]
    if in_cache and any_sources:
        fmt = in_cache[0].cache.format if in_cache[0].cache else None
        out.append(
            problem(
                "scales-in-cache",
                f"--kv-cache-dtype {in_cache[0].cache.kv_cache_dtype if in_cache[0].cache else ''} "
                f"({fmt.title if fmt else ''}) computes its scales when K/V are written; the "
                f"checkpoint's k/v scales of {len(in_cache)} layers are not read",
                layers=tuple(lay.name for lay in in_cache),
            )
        )
    unread_v = [
        lay.name
        for lay in layers
        if lay.cache is not None
        and lay.cache.latent
        and not lay.cache.reads_v_scale
        and lay.cache.scale_use.reads_checkpoint
        and "v_scale" in lay.sources
    ]
    if unread_v:
        out.append(
            problem(
                "v-scale-unused",
                f"{len(unread_v)} MLA layers hold a v_scale ({_names(unread_v)}) that the latent "
                "cache never reads: only k_scale divides the [kv_c | k_pe] row",
                unread_v[0] if len(unread_v) == 1 else None,
                layers=tuple(unread_v),
            )
        )
    indices = {str(i) for lay in layers if (i := layer_index(lay.name)) is not None}
    for entry in settings.skip_layers:
        if entry == "sliding_window":
            if any(
                lay.cache is not None
                and lay.cache.skipped_by
                and "sliding_window" in lay.cache.skipped_by
                for lay in layers
            ):
                continue
            why = (
                "MLA layers ignore it"
                if any(lay.cache is not None and lay.cache.latent for lay in layers)
                else "no layer of this model has a sliding window"
            )
        elif entry in indices:
            continue
        else:
            why = (
                "vLLM compares str(layer index), so a padded or combined entry never matches"
                if entry.strip("0123456789, ") == "" and entry
                else f"no layer has index {entry}"
            )
        out.append(
            problem(
                "skip-entry-matches-nothing",
                f"--kv-cache-dtype-skip-layers entry {entry!r} matches no attention layer ({why})",
            )
        )
    return out


def nvfp4_problems(report: Nvfp4Report, engine: str) -> list[Problem]:
    """The NVFP4 global scales' convention when it cannot be known, and the engine x GPU x
    convention readings that put block scales out of range (``kvscale.nvfp4_conventions``)."""
    out: list[Problem] = []
    if not report.layers:
        return out
    names = [layer.name for layer in report.layers]
    if report.evidence.convention is None:
        tops = {
            (r.convention.value, r.gpus): r.largest_block_scale
            for layer in report.layers[:1]
            for r in layer.k
        }
        shown = "; ".join(
            f"as {conv} on {gpus}: largest k block scale {top:.4g}"
            for (conv, gpus), top in tops.items()
        )
        out.append(
            problem(
                "nvfp4-convention-unknown",
                f"the NVFP4 global scales of {len(names)} layers may be amax/2688 or amax/448 "
                f"({report.evidence.why}); {engine}, first layer {shown}",
                layers=tuple(names),
            )
        )
    groups: dict[tuple[str, str, str], list[tuple[str, str, Reading]]] = defaultdict(list)
    for layer, kind, r in report.out_of_range():
        groups[(r.convention.value, r.gpus, r.state)].append((layer, kind, r))
    total = sum(bool(layer.k) + bool(layer.v) for layer in report.layers)
    for (conv, gpus, state), items in groups.items():
        worst = (
            max(items, key=lambda i: i[2].largest_block_scale)
            if state == "saturates"
            else min(items, key=lambda i: i[2].largest_block_scale)
        )[2]
        what = (
            f"the largest block scale reaches {worst.largest_block_scale:.4g}, above e4m3's 448: "
            "the largest blocks saturate"
            if state == "saturates"
            else f"the largest block scale is {worst.largest_block_scale:.4g}, below the 74.7 "
            f"of an amax/448 global scale: blocks with max |x| <= {worst.zero_block_below:.3g} "
            "store zeros"
        )
        layers_named = sorted({layer for layer, _, _ in items}, key=layer_sort_key)
        source = report.evidence.why if report.evidence.convention else f"read as {conv}"
        out.append(
            problem(
                "nvfp4-block-scales-out-of-range",
                f"{engine} on {gpus}: {len(items)} of {total} NVFP4 k/v global scales "
                f"({conv} values, {source}; {_names(layers_named)}): {what}",
                layers_named[0] if len(layers_named) == 1 else None,
                layers=tuple(layers_named),
            )
        )
    return out
