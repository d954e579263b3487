"""``kvscale inspect``: find every KV-scale tensor, resolve it like the engine, flag problems.

Reads headers and the few scale bytes only (never the weights) and imports no torch.
"""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kvscale.architectures import (
    CHECKPOINT_PREFIX_RENAMES,
    NOT_AUTO_LOADED,
    OUTPUT_SCALE_DROPPING,
)
from kvscale.checkpoint import Checkpoint, ProgressCallback, TensorRef, open_checkpoint
from kvscale.conventions import (
    Convention,
    MappedName,
    attention_prefix,
    attention_prefixes_from_weights,
    engine_layer_name,
    layer_index,
    layer_sort_key,
    looks_like_kv_scale,
    map_name,
)
from kvscale.errors import LimitExceededError, UsageError
from kvscale.floats import (
    DECODABLE_DTYPES,
    FLOAT_DTYPES,
    decode_values,
    is_subnormal,
    round_to_dtype,
)
from kvscale.limits import MAX_LAYERS, MAX_SCALE_ELEMENTS
from kvscale.model_config import (
    EnginePath,
    ModelShape,
    QuantConfig,
    effective_kv_cache_dtype,
    is_quantized_kv_cache,
    kv_dtype_refusal,
    parse_model_shape,
    parse_quant_config,
    resolve_model_dtype,
    uses_per_token_head_scales,
)
from kvscale.problems import Problem, Severity, problem
from kvscale.resolve import (
    BUFFER_KINDS,
    EngineSettings,
    ResolvedLayer,
    Rule,
    ScaleSource,
    resolve_layer,
)
from kvscale.safetensors_io import read_tensor_bytes

_NON_KV_CACHE_PREFIX = re.compile(
    r"(?:^|\.)(?:vision|visual|vision_tower|vision_model|audio|audio_tower|image)"
)


@dataclass(frozen=True)
class InspectOptions:
    kv_cache_dtype: str = "auto"
    platform: str = "ocp"
    model_dtype: str | None = None


@dataclass(frozen=True)
class UnmappedTensor:
    tensor: str
    file: str
    engine_name: str
    reason: str
    fails: bool = False
    """The engine's loader raises on it (``There is no module or parameter named ...``)."""


_PARAMETER_KINDS = frozenset(["k_scale", "v_scale", "q_scale", "prob_scale"]) | {
    f"{k}_zero_point" for k in "kvq"
}


def _unmapped_name(name: str) -> MappedName:
    return MappedName(name, name, None, None, None)


_LAYER_PREFIX = re.compile(r"^(.*\.layers\.\d+)\.")


def _unmapped_refusals(
    layer_names: Sequence[str], unmapped: Sequence[UnmappedTensor], quant_method: str | None
) -> dict[str, str]:
    """Attention layers whose load fails because of a KV-scale-like tensor the loader cannot
    place. ``AutoWeightsLoader._load_module`` (models/utils.py) raises for any name it cannot
    route to a module or parameter, unless it ends with one of the quant config's ignorable
    suffixes (``.k_scale`` ...) under an existing module. The failure belongs to the attention
    layer with the same ``layers.N`` prefix; a name outside every attention layer fails them all."""
    out: dict[str, str] = {}
    for item in unmapped:
        if not item.fails:
            continue
        why = (
            f"ValueError: There is no module or parameter named '{item.engine_name}' "
            f"({item.tensor!r}: {item.reason}; rename it to <attention prefix>.k_scale / "
            "v_scale, e.g. with kvscale normalize --checkpoint, or remove it)"
        )
        match = _LAYER_PREFIX.match(item.tensor)
        owners = [n for n in layer_names if match and n.startswith(match.group(1) + ".")]
        for owner in owners or layer_names:
            out.setdefault(owner, why)
    return out


@dataclass(frozen=True)
class ScaleReport:
    """Everything ``inspect`` found: the data behind the table and the JSON."""

    checkpoint: str
    root: str
    layout: str
    files: tuple[str, ...]
    quant: QuantConfig
    shape: ModelShape
    engine_path: EnginePath
    kv_cache_dtype: str
    kv_cache_dtype_requested: str
    platform: str
    model_dtype: str
    model_dtype_source: str
    layers: tuple[ResolvedLayer, ...]
    problems: tuple[Problem, ...]
    unmapped: tuple[UnmappedTensor, ...] = ()
    settings: EngineSettings | None = None
    fingerprint: Mapping[str, object] = field(default_factory=dict)

    @property
    def quant_method(self) -> str | None:
        return self.quant.quant_method

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity is Severity.WARNING)

    @property
    def ok(self) -> bool:
        return not self.errors


def inspect_checkpoint(
    path: str | os.PathLike[str],
    options: InspectOptions | None = None,
    progress: ProgressCallback | None = None,
) -> ScaleReport:
    """Open a checkpoint, resolve every attention layer's scales, and collect problems."""
    options = options or InspectOptions()
    if options.platform not in ("ocp", "fnuz"):
        raise UsageError(f"unknown --platform {options.platform!r}", hint="use ocp or fnuz")
    ckpt = open_checkpoint(path, progress)
    return inspect_opened(ckpt, options)


def inspect_opened(ckpt: Checkpoint, options: InspectOptions) -> ScaleReport:
    shape = parse_model_shape(ckpt.config)
    quant = parse_quant_config(ckpt.config, ckpt.hf_quant_config)
    kv_dtype = effective_kv_cache_dtype(options.kv_cache_dtype, quant)
    weight_dtypes = frozenset(ref.info.dtype for ref in ckpt.tensors.values())
    model_dtype, dtype_source = resolve_model_dtype(options.model_dtype, shape, weight_dtypes)
    settings = EngineSettings(
        engine_path=quant.engine_path,
        kv_cache_dtype=kv_dtype,
        platform=options.platform,
        model_dtype=model_dtype,
        num_heads=shape.num_attention_heads,
        num_kv_heads=shape.kv_heads,
        ct_strategy=quant.ct_strategy,
        ct_has_config_groups=quant.ct_has_config_groups,
        refusal=quant.refusal or kv_dtype_refusal(kv_dtype, quant),
    )
    problems: list[Problem] = []

    weight_prefixes = {
        p
        for p in attention_prefixes_from_weights(ckpt.tensors)
        if not _NON_KV_CACHE_PREFIX.search(p)
    }
    archs = set(shape.architectures)
    stacked_first = bool(archs & OUTPUT_SCALE_DROPPING)
    auto_loaded = not (archs & NOT_AUTO_LOADED)
    renames: tuple[tuple[str, str], ...] = ()
    for arch in shape.architectures:
        renames = renames or CHECKPOINT_PREFIX_RENAMES.get(arch, ())
    has_quant_config = quant.raw is not None
    by_layer: dict[str, list[ScaleSource]] = defaultdict(list)
    unmapped: list[UnmappedTensor] = []
    scale_like_count = 0
    for ref in _all_occurrences(ckpt):
        name = ref.name
        # Without any quantization config the loader applies no cache-scale mapper at all.
        if has_quant_config:
            mapped = map_name(name, quant.quant_method, stacked_first)
        else:
            mapped = map_name(name, None)
            if mapped.kind not in BUFFER_KINDS:
                mapped = _unmapped_name(name)  # only direct buffer names still reach a module
        targets_layer = mapped.layer is not None and mapped.kind is not None
        if (
            targets_layer
            and weight_prefixes
            and attention_prefix(str(mapped.layer)) not in weight_prefixes
        ):
            # e.g. model.layers.0.mlp.k_scale -> model.layers.0.mlp.attn.k_scale: no such module.
            reason = (
                f"maps to {mapped.engine_name}, but {mapped.layer} is not an attention layer of "
                "this checkpoint"
            )
            unmapped.append(UnmappedTensor(name, ref.file, mapped.engine_name, reason, auto_loaded))
            scale_like_count += 1
            continue
        if not targets_layer:
            if looks_like_kv_scale(name):
                scale_like_count += 1
                reason = _unmapped_reason(name, quant.quant_method, stacked_first, has_quant_config)
                unmapped.append(
                    UnmappedTensor(name, ref.file, mapped.engine_name, reason, auto_loaded)
                )
            continue
        assert (
            mapped.layer is not None and mapped.kind is not None and mapped.convention is not None
        )
        scale_like_count += 1
        if settings.engine_path is EnginePath.NONE and mapped.kind in _PARAMETER_KINDS:
            # A quant config without a KV method (e.g. GPTQ): the attention layer has no such
            # parameter and `.k_scale`-like names are ignorable unexpected suffixes.
            unmapped.append(
                UnmappedTensor(
                    name,
                    ref.file,
                    mapped.engine_name,
                    f"quant_method {quant.quant_method} creates no KV-scale parameters; ignored",
                    False,
                )
            )
            continue
        by_layer[mapped.layer].append(_make_source(ckpt, ref, mapped.kind, mapped.convention))

    layer_names = _enumerate_layers(shape, weight_prefixes, by_layer)
    refusals = _unmapped_refusals(layer_names, unmapped, quant.quant_method)
    layers = tuple(
        resolve_layer(
            engine_layer_name(attention_prefix(name), renames),
            by_layer.get(name, []),
            settings,
            checkpoint_prefix=attention_prefix(name),
            refusal=refusals.get(name),
        )
        for name in layer_names
    )

    problems.extend(_layer_problems(layers, settings, quant))
    problems.extend(
        _model_problems(ckpt, layers, settings, quant, unmapped, stacked_first, scale_like_count)
    )
    if not layers:
        problems.append(
            problem(
                "no-attention-layers", "no attention layer found in config.json or weight names"
            )
        )
    return ScaleReport(
        checkpoint=ckpt.given,
        root=str(ckpt.root),
        layout=ckpt.layout,
        files=ckpt.files,
        quant=quant,
        shape=shape,
        engine_path=settings.engine_path,
        kv_cache_dtype=kv_dtype,
        kv_cache_dtype_requested=options.kv_cache_dtype,
        platform=options.platform,
        model_dtype=model_dtype,
        model_dtype_source=dtype_source,
        layers=layers,
        problems=tuple(problems),
        unmapped=tuple(unmapped),
        settings=settings,
        fingerprint=_fingerprint(ckpt),
    )


def _fingerprint(ckpt: Checkpoint) -> dict[str, object]:
    """A cheap identity of the source checkpoint: file names, sizes and header sizes."""
    import hashlib

    digest = hashlib.sha256()
    total = 0
    for name in ckpt.files:
        header = ckpt.headers[name]
        total += header.file_size
        digest.update(f"{name}\0{header.file_size}\0{header.header_size}\0".encode())
        for tensor in header.tensors.values():
            digest.update(
                f"{tensor.name}\0{tensor.dtype}\0{tensor.shape}\0{tensor.start}\0".encode()
            )
    return {"files": len(ckpt.files), "bytes": total, "headers_sha256": digest.hexdigest()}


def _all_occurrences(ckpt: Checkpoint) -> list[TensorRef]:
    refs: list[TensorRef] = list(ckpt.tensors.values())
    for occurrences in ckpt.duplicates.values():
        refs.extend(occurrences[:-1])  # the last one is already in ckpt.tensors
    refs.sort(key=lambda r: r.load_order)
    return refs


def _make_source(
    ckpt: Checkpoint, ref: TensorRef, kind: str, convention: Convention
) -> ScaleSource:
    info = ref.info
    values: tuple[float, ...] | None = None
    if info.dtype in DECODABLE_DTYPES and info.numel <= MAX_SCALE_ELEMENTS.value():
        raw = read_tensor_bytes(ref.path, info)
        values = tuple(decode_values(info.dtype, raw))
    return ScaleSource(
        tensor=info.name,
        file=ref.file,
        dtype=info.dtype,
        shape=info.shape,
        kind=kind,
        convention=convention,
        load_order=ref.load_order,
        values=values,
        path=ref.path,
    )


def _unmapped_reason(
    name: str, quant_method: str | None, stacked_first: bool, has_quant_config: bool = True
) -> str:
    if not has_quant_config:
        return "config.json has no quantization_config, so no KV-scale name mapping runs"
    if name.endswith("output_scale"):
        if stacked_first:
            return (
                "this architecture's q/k/v_proj -> qkv_proj rename runs before the output_scale "
                "convention"
            )
        return (
            "output_scale names are KV scales only under quant_method fp8 or quark, "
            f"not {quant_method}"
        )
    return "no KV-scale convention maps this name to an attention layer"


def _enumerate_layers(
    shape: ModelShape, weight_prefixes: set[str], by_layer: Mapping[str, list[ScaleSource]]
) -> list[str]:
    layers = {engine_layer_name(p) for p in weight_prefixes}
    layers.update(by_layer)
    template = _layer_template(weight_prefixes | {attention_prefix(n) for n in by_layer})
    n = shape.num_hidden_layers
    typed = shape.layer_types is not None or shape.hybrid_override_pattern is not None
    if n and (not weight_prefixes or typed):
        for i in range(n):
            if _is_attention_layer(shape, i):
                layers.add(engine_layer_name(template.format(i)))
    if typed:
        layers = {name for name in layers if _typed_keep(shape, name)}
    limit = MAX_LAYERS.value()
    if len(layers) > limit:
        # Layers also come from tensor names, which the config's bound does not cover.
        raise LimitExceededError(
            "checkpoint", f"{len(layers):,} attention layers", hint=MAX_LAYERS.describe()
        )
    return sorted(layers, key=layer_sort_key)


def _layer_template(prefixes: Iterable[str]) -> str:
    templates = sorted(
        {re.sub(r"\.layers\.\d+\.", ".layers.{}.", p + ".").removesuffix(".") for p in prefixes}
    )
    for t in templates:
        if "{}" in t:
            return t
    return "model.layers.{}.self_attn"


def _is_attention_layer(shape: ModelShape, index: int) -> bool:
    if shape.hybrid_override_pattern is not None:
        pattern = shape.hybrid_override_pattern
        return index < len(pattern) and pattern[index] == "*"
    if shape.layer_types is not None:
        if index >= len(shape.layer_types):
            return True
        kind = shape.layer_types[index].lower()
        return "attention" in kind and "linear" not in kind
    return True


def _typed_keep(shape: ModelShape, layer: str) -> bool:
    index = layer_index(layer)
    return index is None or _is_attention_layer(shape, index)


# --- problems ---------------------------------------------------------------------------------


def _is_list(value: object) -> bool:
    return isinstance(value, tuple)


def _fmt(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


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


def _layer_problems(
    layers: Sequence[ResolvedLayer], settings: EngineSettings, quant: QuantConfig
) -> list[Problem]:
    out: list[Problem] = []
    quantized = is_quantized_kv_cache(settings.kv_cache_dtype) and not uses_per_token_head_scales(
        settings.kv_cache_dtype
    )
    base = settings.engine_path is EnginePath.BASE
    for layer in layers:
        name = layer.name
        if layer.rule is Rule.ERROR:
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
        out.extend(_value_problems(layer, settings, ignored_only=inert))
        if inert or settings.engine_path is EnginePath.NONE:
            continue
        has_k, has_v = "k_scale" in layer.sources, "v_scale" in layer.sources
        if quantized:
            if layer.rule is Rule.DEFAULT:
                out.append(
                    problem(
                        "default-scale-used",
                        "no k_scale/v_scale reaches this layer; the engine uses 1.0 for both"
                        + (" (not doubled on fnuz)" if settings.fnuz and base else ""),
                        name,
                    )
                )
            elif layer.rule is Rule.PARTIAL:
                missing = "k_scale" if not has_k else "v_scale"
                out.append(
                    problem(
                        "scale-missing",
                        f"{missing} is missing; the compressed-tensors path leaves it at 1.0",
                        name,
                    )
                )
            elif layer.rule is Rule.DUPLICATED and not has_v:
                k_src = layer.sources.get("k_scale")
                if k_src is not None and k_src.convention is not Convention.LEGACY_KV_SCALE:
                    out.append(
                        problem(
                            "scale-missing",
                            "v_scale is missing; the engine uses k_scale for v",
                            name,
                        )
                    )
            elif layer.rule is Rule.PER_HEAD and not (has_k and has_v):
                missing = "k_scale" if not has_k else "v_scale"
                out.append(
                    problem(
                        "scale-missing",
                        f"{missing} is missing; every head of it stays at 1.0",
                        name,
                    )
                )
            # The engine's own warning condition (kv_cache.py): exactly "fp8" and a 1.0 q/prob.
            if base and settings.kv_cache_dtype == "fp8":
                lacking = [k for k in ("q_scale", "prob_scale") if layer.value(k) == 1.0]
                if lacking:
                    out.append(
                        problem(
                            "uncalibrated-q-prob",
                            f"{' and '.join(lacking)} {'is' if len(lacking) == 1 else 'are'} 1.0 "
                            "(uncalibrated) for fp8 attention backends",
                            name,
                        )
                    )
    return out


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
) -> list[Problem]:
    out: list[Problem] = []
    base = settings.engine_path is EnginePath.BASE
    for kind, src in layer.sources.items():
        if src.values is None or not kind.endswith("_scale"):
            continue
        used = kind in layer.used_from_checkpoint and not ignored_only
        device = layer.value(kind)
        fallback = _fallback_text(layer, kind)
        for i, raw in enumerate(src.values):
            where = f"{src.tensor}" + (f"[{i}]" if len(src.values) > 1 else "")
            cls = _value_class(raw)
            if cls is not None:
                sev = Severity.ERROR if used else Severity.WARNING
                tail = (
                    " and the engine uses it as is"
                    if used
                    else (f"; the engine ignores it and {fallback}" if fallback else "")
                )
                out.append(
                    problem(
                        cls, f"{kind} is {_fmt(raw)} in {where}{tail}", layer.name, severity=sev
                    )
                )
                continue
            if src.dtype != "F32" or base:
                # Base path: params live in the model dtype; compressed-tensors: float32.
                loaded = round_to_dtype(raw, settings.model_dtype if base else "float32")
                target = settings.model_dtype if base else "float32"
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
                    out.append(
                        problem(
                            "precision-lost",
                            f"{kind} {_fmt(raw)} in {where} is used as {_fmt(loaded)} "
                            f"({target}; relative change {rel:.2e})",
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
        if used and _is_list(device) and settings.ct_strategy == "attn_head":
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
    return out


def _fallback_text(layer: ResolvedLayer, kind: str) -> str:
    value = layer.value(kind)
    if value is None:
        return ""
    shown = _fmt(value) if isinstance(value, float) else "per-head values"
    if layer.rule is Rule.DUPLICATED and kind in ("k_scale", "v_scale"):
        return f"uses {shown} (the other scale) instead"
    return f"uses {shown} instead"


def _model_problems(
    ckpt: Checkpoint,
    layers: Sequence[ResolvedLayer],
    settings: EngineSettings,
    quant: QuantConfig,
    unmapped: Sequence[UnmappedTensor],
    stacked_first: bool,
    scale_like_count: int,
) -> list[Problem]:
    out: list[Problem] = []
    kv_kinds = ("k_scale", "v_scale")
    scaled = [layer for layer in layers if any(k in layer.sources for k in kv_kinds)]
    unscaled = [
        layer
        for layer in layers
        if layer.rule is not Rule.ERROR and not any(k in layer.sources for k in kv_kinds)
    ]
    any_sources = any(layer.sources for layer in layers)
    if scaled and unscaled:
        names = ", ".join(layer.name for layer in unscaled[:5])
        more = f" and {len(unscaled) - 5} more" if len(unscaled) > 5 else ""
        out.append(
            problem(
                "coverage-gap",
                f"{len(scaled)} of {len(layers)} attention layers have k/v scales; none for "
                f"{names}{more}",
            )
        )
    if quant.kv_declaration and not any_sources and layers:
        out.append(
            problem(
                "declared-scheme-no-scales",
                f"the config declares {quant.kv_declaration} but no KV-scale tensor was found; "
                f"every layer uses 1.0",
            )
        )
    quantized = is_quantized_kv_cache(settings.kv_cache_dtype) and not uses_per_token_head_scales(
        settings.kv_cache_dtype
    )
    if (
        any_sources
        and not quantized
        and settings.refusal is None
        and settings.engine_path is not EnginePath.NONE
    ):
        hint = (
            f" ({quant.quant_method} checkpoints default to an unquantized cache: serve with "
            "--kv-cache-dtype fp8)"
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
        if scale_like_count:
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
                        "cannot place them and refuses the model"
                    ),
                    severity=Severity.ERROR if fails else Severity.WARNING,
                )
            )
    else:
        for item in unmapped:
            code = (
                "dropped-by-architecture"
                if stacked_first and item.tensor.endswith("_proj.output_scale")
                else "unmapped-scale-name"
            )
            out.append(
                problem(
                    code,
                    f"{item.tensor} ({item.file}) is not used as a KV scale: {item.reason}"
                    + ("; the engine's loader refuses it" if item.fails else ""),
                    _layer_of(item.tensor),
                    severity=Severity.ERROR if item.fails else Severity.WARNING,
                )
            )
    if ckpt.unindexed:
        shown = ", ".join(ckpt.unindexed[:3])
        more = f" and {len(ckpt.unindexed) - 3} more" if len(ckpt.unindexed) > 3 else ""
        out.append(
            problem(
                "index-missing-tensor",
                f"{len(ckpt.unindexed)} tensors are in shards but not in the index: {shown}{more}",
            )
        )
    scale_names = {
        src.tensor for layer in layers for src in [*layer.sources.values(), *layer.shadowed]
    }
    plain_dupes = sorted(n for n in ckpt.duplicates if n not in scale_names)
    if plain_dupes:
        where = ", ".join(r.file for r in ckpt.duplicates[plain_dupes[0]])
        out.append(
            problem(
                "duplicate-tensor",
                f"{len(plain_dupes)} tensor names occur in more than one shard, e.g. "
                f"{plain_dupes[0]} in {where}; the engine keeps the last one loaded",
            )
        )
    return out


def _layer_of(tensor: str, renames: tuple[tuple[str, str], ...] = ()) -> str | None:
    match = re.match(r"^(.*?\.(?:self_attn|mixer))\.", tensor)
    return engine_layer_name(match.group(1), renames) if match else None
