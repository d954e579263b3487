"""vLLM 0.33.0's rules behind the ``Engine`` interface (``kvscale.engine.base``): which
tensor reaches which KV-scale parameter, what the layer holds after loading, and this engine's
own problems. The package docstring lists the modules it draws on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace as dataclass_replace
from functools import cache
from typing import Any

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.conventions import (
    attention_prefix,
    convention_of,
    engine_layer_name,
    is_kv_scheme_extra,
    layer_index,
    looks_like_kv_scale,
)
from kvscale.engine.base import (
    BUFFER_KINDS,
    CacheWrite,
    Engine,
    EnginePath,
    EngineSettings,
    LayerCache,
    MappedName,
    NameContext,
    QuantConfig,
    ResolvedLayer,
    Routed,
    ScaleSource,
    UnmappedTensor,
)
from kvscale.engine.options import EngineOptions
from kvscale.engine.registry import ENGINES, EngineName
from kvscale.engine.vllm import backends, mla, names, placement, quant_config, rules, skip_layers
from kvscale.engine.vllm import kv_cache_dtypes as kv_dtypes
from kvscale.engine.vllm.architectures import (
    CHECKPOINT_PREFIX_RENAMES,
    NOT_AUTO_LOADED,
    OUTPUT_SCALE_DROPPING,
)
from kvscale.model_config import ModelShape, RawQuantConfig
from kvscale.problems import Problem, problem

_PARAMETER_KINDS = frozenset(["k_scale", "v_scale", "q_scale", "prob_scale"]) | {
    f"{k}_zero_point" for k in "kvq"
}
_LAYER_PREFIX = re.compile(r"^(.*\.layers\.\d+)\.")


@cache
def _architecture_facts(
    architectures: tuple[str, ...],
) -> tuple[bool, bool, tuple[tuple[str, str], ...]]:
    """(stacked renames run first, top-level AutoWeightsLoader, prefix renames)."""
    archs = set(architectures)
    renames: tuple[tuple[str, str], ...] = ()
    for arch in architectures:
        renames = renames or CHECKPOINT_PREFIX_RENAMES.get(arch, ())
    return bool(archs & OUTPUT_SCALE_DROPPING), not (archs & NOT_AUTO_LOADED), renames


class VllmEngine(Engine):
    name = EngineName.VLLM.value
    version = ENGINES[EngineName.VLLM].release
    kv_cache_dtypes = kv_dtypes.KV_CACHE_DTYPES
    attention_backends = tuple(name.lower() for name in backends.BACKENDS)

    def quant_config(self, raw: RawQuantConfig | None) -> QuantConfig:
        return quant_config.parse_quant_config(raw)

    def settings(
        self,
        quant: QuantConfig,
        shape: ModelShape,
        options: EngineOptions,
        weight_dtypes: frozenset[str],
    ) -> tuple[EngineSettings, str]:
        kv_dtype = quant_config.effective_kv_cache_dtype(options.requested_kv_cache_dtype, quant)
        model_dtype, how = quant_config.resolve_model_dtype(
            options.model_dtype, shape, weight_dtypes
        )
        settings = EngineSettings(
            engine_path=quant.engine_path,
            kv_cache_dtype=kv_dtype,
            platform=options.platform_name,
            model_dtype=model_dtype,
            num_heads=shape.num_attention_heads,
            num_kv_heads=shape.kv_heads,
            head_size=shape.latent_width or shape.head_size,
            ct_strategy=quant.ct_strategy,
            ct_has_config_groups=quant.ct_has_config_groups,
            # The engine config is validated (the float KV cache against the model dtype)
            # before the quantization config is built.
            refusal=quant_config.float_kv_cache_refusal(
                options.requested_kv_cache_dtype, model_dtype
            )
            or quant.refusal,
            dtype_refusals=quant_config.layer_dtype_refusals(quant),
            uses_kv_scales=kv_dtypes.cache_format(
                kv_dtype, options.platform_name
            ).scale_use.reads_checkpoint,
            # BaseKVCacheMethod builds its parameters under the model dtype; the
            # compressed-tensors path holds float32 ones.
            scale_dtype=model_dtype if quant.engine_path is EnginePath.BASE else "float32",
            attention_backend=options.attention_backend,
            # resolve_kv_cache_dtype_string's result decides the boundary layers (the
            # compressed-tensors promotion of auto to fp8, later, adds none).
            skip_layers=skip_layers.effective_skip_layers(
                options.kv_cache_dtype_skip_layers or (), kv_dtype, shape
            ),
            gpu_arch=options.gpu_arch,
        )
        # MLA layers build their cache dtype their own way (kvscale.engine.vllm.mla).
        return mla.apply_to_settings(settings, quant, shape, options), how

    supports_skip_layers = True
    # CudaPlatform.get_valid_backends (platforms/cuda.py) lists FLASH_ATTN first for MHA.
    default_attention_backend = "flash_attn"

    def cache_format(
        self, kv_cache_dtype: str, platform: str, *, latent: bool = False
    ) -> CacheFormat:
        return kv_dtypes.cache_format(kv_cache_dtype, platform)

    def backends_for(
        self,
        kv_cache_dtype: str,
        *,
        head_size: int | None,
        gpu_arch: str | None,
        latent: bool,
    ) -> tuple[str, ...] | None:
        names = backends.backends_for(
            kv_cache_dtype, mla=latent, head_size=head_size, gpu_arch=gpu_arch
        )
        return tuple(name.lower() for name in names)

    def per_head_backends(self, kv_cache_dtype: str) -> tuple[str, ...]:
        runs = self.backends_for(kv_cache_dtype, head_size=None, gpu_arch=None, latent=False)
        return tuple(b for b in backends.PER_HEAD_BACKENDS if runs and b in runs)

    def backend_to_name(self, runnable: Sequence[str], platform: str) -> str:
        """The first backend of the GPUs the platform means: ROCm's for ``fnuz`` (MI300), else
        CUDA's, then ROCm's (an OCP MI350), then the rest. The backend list holds every vendor's
        (``Backend.vendor``: the platform class whose ``get_attn_backend_cls`` names it), and
        a ROCm-only backend on an NVIDIA GPU fails at start-up."""
        order = ("rocm", "cuda") if platform == "fnuz" else ("cuda", "rocm")

        def rank(name: str) -> int:
            found = backends.BACKENDS.get(name.upper())
            vendor = found.vendor if found is not None else ""
            return order.index(vendor) if vendor in order else len(order)

        return min(runnable, key=rank)

    def serve_command(
        self,
        checkpoint: str,
        kv_cache_dtype: str,
        *,
        skip_layers: Sequence[str] = (),
        attention_backend: str | None = None,
    ) -> tuple[str, ...]:
        """``vllm serve``: ``--kv-cache-dtype-skip-layers`` takes its entries space-separated
        (a ``list[str]`` field: argparse ``nargs="+"``, engine/arg_utils.py); the backend by its
        ``AttentionBackendEnum`` name."""
        out = ["vllm", "serve", checkpoint, "--kv-cache-dtype", kv_cache_dtype]
        if skip_layers:
            out += ["--kv-cache-dtype-skip-layers", *skip_layers]
        if attention_backend is not None:
            out += ["--attention-backend", attention_backend.upper()]
        return tuple(out)

    def layer_cache(self, name: str, settings: EngineSettings, shape: ModelShape) -> LayerCache:
        """``Attention.__init__`` (layers/attention/attention.py) and ``MLAAttention.__init__``
        (layers/attention/mla_attention.py): the skip list turns a layer's dtype into ``auto``
        (``kvscale.engine.vllm.skip_layers``); a sparse MLA backend then canonicalises the
        dtype (``backends.sparse_mla_kv_cache_dtype``)."""
        latent = mla.is_latent(shape)
        why = skip_layers.skipped_by(
            layer_index(name), settings.skip_layers, settings.kv_cache_dtype, shape, latent=latent
        )
        dtype = "auto" if why else settings.kv_cache_dtype
        if latent:
            dtype = backends.sparse_mla_kv_cache_dtype(settings.attention_backend, dtype)
        return LayerCache(dtype, kv_dtypes.cache_format(dtype, settings.platform), latent, why)

    def layer_name(self, prefix: str, shape: ModelShape) -> str:
        """The forward-context name: the module path vLLM's own mappers give the checkpoint's
        attention block (``placement.engine_prefix``), plus ``.attn``."""
        found = placement.resolve_architecture(shape)
        if found is None:
            return engine_layer_name(prefix, _architecture_facts(shape.architectures)[2])
        model = placement.model_of(_NO_QUANT, shape)
        assert model is not None
        return f"{placement.engine_prefix(prefix, model)}.attn"

    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        model = placement.model_of(context.quant, context.shape)
        if model is not None and _walked(model):
            return _walk(tensor, file, context, model)
        routed = self._route(tensor, file, context)
        item = routed.unmapped
        if model is not None and item is not None:
            # The layer it belongs to, and a refusal in vLLM's own words (which module raises,
            # the name it quotes).
            where = placement.place(tensor, model) if item.fails else None
            error = where.error if where is not None else None
            routed = Routed(
                unmapped=dataclass_replace(
                    item, error=error or item.error, layer=_layer_evidence(tensor, model)
                )
            )
        return routed

    def _route(self, tensor: str, file: str, context: NameContext) -> Routed:
        """Llama's rules (and those of every architecture that loads like it): the cache-scale
        mapper of ``AutoWeightsLoader``, then the attention layer's parameters."""
        quant = context.quant
        stacked_first, auto_loaded, _ = _architecture_facts(context.shape.architectures)
        stacked_first = stacked_first and not context.as_intended
        has_quant_config = quant.raw is not None
        method = quant.quant_method
        if context.as_intended and tensor.endswith("output_scale"):
            # What the producer meant: output_scale is a KV scale in Quark's convention (and
            # compressed-tensors' before 2024-09), whatever method reads the checkpoint now.
            method = "quark"
        if has_quant_config:
            mapped = names.map_name(tensor, method, stacked_first)
        else:
            # Without a quantization config the loader applies no cache-scale mapper at all;
            # only the device buffers' own names (attn._k_scale) still reach a module.
            mapped = names.map_name(tensor, None)
            if mapped.kind not in BUFFER_KINDS:
                mapped = MappedName(tensor, tensor, None, None, None)
        if mapped.layer is not None and mapped.kind is not None:
            prefixes = context.attention_prefixes
            if prefixes and attention_prefix(mapped.layer) not in prefixes:
                # e.g. model.layers.0.mlp.k_scale -> model.layers.0.mlp.attn.k_scale: no module.
                reason = (
                    f"maps to {mapped.engine_name}, but {mapped.layer} is not an attention "
                    "layer of this checkpoint"
                )
                return Routed(
                    unmapped=UnmappedTensor(tensor, file, mapped.engine_name, reason, auto_loaded)
                )
            if quant.engine_path is EnginePath.NONE and mapped.kind in _PARAMETER_KINDS:
                # A quant config without a KV method (e.g. GPTQ): the attention layer has no
                # such parameter and `.k_scale`-like names are ignorable unexpected suffixes.
                reason = (
                    f"quant_method {quant.quant_method} creates no KV-scale parameters; ignored"
                )
                return Routed(
                    unmapped=UnmappedTensor(tensor, file, mapped.engine_name, reason, False)
                )
            return Routed(mapped=mapped)
        if is_kv_scheme_extra(tensor):
            # The stacked q/k/v_proj -> qkv_proj rename (the model's WeightsMapper or its
            # stacked_params_mapping loop) runs first; qkv_proj has no k_bias parameter and the
            # name is not an ignorable cache-scale suffix, so AutoWeightsLoader._load_module
            # (model_executor/models/utils.py) raises.
            engine_name = re.sub(r"\.[kv]_proj\.", ".qkv_proj.", tensor)
            reason = "vLLM 0.33 has no parameter for an affine KV-cache bias (ModelOpt)"
            return Routed(
                unmapped=UnmappedTensor(
                    tensor, file, engine_name, reason, True, "unloadable-kv-tensor"
                )
            )
        if not looks_like_kv_scale(tensor):
            return Routed()
        code = "unmapped-scale-name"
        if not has_quant_config:
            reason = "config.json has no quantization_config, so no KV-scale name mapping runs"
        elif tensor.endswith("output_scale") and stacked_first:
            reason = (
                "this architecture's q/k/v_proj -> qkv_proj rename runs before the "
                "output_scale convention"
            )
            if tensor.endswith("_proj.output_scale"):
                code = "dropped-by-architecture"
        elif tensor.endswith("output_scale"):
            reason = (
                "output_scale names are KV scales only under quant_method fp8 or quark, "
                f"not {quant.quant_method}"
            )
        else:
            reason = "no KV-scale convention maps this name to an attention layer"
        return Routed(
            unmapped=UnmappedTensor(tensor, file, mapped.engine_name, reason, auto_loaded, code)
        )

    def resolve_layer(
        self,
        name: str,
        sources: Sequence[ScaleSource],
        settings: EngineSettings,
        *,
        checkpoint_prefix: str,
        refusal: str | None = None,
    ) -> ResolvedLayer:
        return rules.resolve_layer(
            name, sources, settings, checkpoint_prefix=checkpoint_prefix, refusal=refusal
        )

    def unmapped_refusals(
        self, layer_names: Sequence[str], unmapped: Sequence[UnmappedTensor]
    ) -> dict[str, tuple[UnmappedTensor, str]]:
        """``AutoWeightsLoader._load_module`` (models/utils.py) raises for any name it cannot
        route to a module or parameter, unless it ends with one of the quant config's ignorable
        suffixes (``.k_scale`` ...) under an existing module. The failure belongs to the
        attention layer with the same ``layers.N`` prefix; a name outside every attention layer
        fails them all."""
        out: dict[str, tuple[UnmappedTensor, str]] = {}
        # Layers by their "<...>.layers.N" prefix, once: each tensor then finds its owners in
        # one lookup (not one scan of every layer per tensor).
        by_prefix: dict[str, list[str]] = {}
        for name in layer_names:
            m = _LAYER_PREFIX.match(name)
            if m:
                by_prefix.setdefault(m.group(1), []).append(name)
        for item in unmapped:
            if not item.fails:
                continue
            raised = (
                item.error
                or f"ValueError: There is no module or parameter named '{item.engine_name}'"
            )
            why = f"{raised} ({item.tensor!r}: {item.reason})"
            match = _LAYER_PREFIX.match(item.tensor)
            owners = by_prefix.get(match.group(1), []) if match else []
            for owner in owners or layer_names:
                out.setdefault(owner, (item, why))
            if not owners:
                break  # every layer has its culprit: the later tensors change nothing
        return out

    def engine_problems(
        self, layers: Sequence[ResolvedLayer], settings: EngineSettings, quant: QuantConfig
    ) -> list[Problem]:
        out = _backend_dtype_problems(layers, settings)
        out.extend(_backend_problems(layers, settings))
        out.extend(mla.backend_problems(layers, settings))
        # BaseKVCacheMethod.process_weights_after_loading warns "Using uncalibrated q_scale ...
        # with fp8 attention" when the dtype is exactly "fp8" and q (or prob) stayed 1.0. It
        # warns once per process: one problem naming every such layer.
        if settings.engine_path is not EnginePath.BASE or settings.kv_cache_dtype != "fp8":
            return out
        lacking: dict[str, list[str]] = {}
        for layer in layers:
            if layer.rule.value in ("error", "unquantized"):
                continue
            ones = [k for k in ("q_scale", "prob_scale") if layer.value(k) == 1.0]
            if ones:
                lacking.setdefault(" and ".join(ones), []).append(layer.name)
        for kinds, layer_names in lacking.items():
            shown = ", ".join(layer_names[:3]) + (
                f" and {len(layer_names) - 3} more" if len(layer_names) > 3 else ""
            )
            verb = "is" if " and " not in kinds else "are"
            out.append(
                problem(
                    "uncalibrated-q-prob",
                    f"{kinds} {verb} 1.0 (uncalibrated) for fp8 attention backends in "
                    f"{len(layer_names)} of {len(layers)} layers ({shown}); the engine warns once",
                    layers=tuple(layer_names),
                )
            )
        return out

    def cache_write(self, kv_cache_dtype: str, attention_backend: str | None) -> CacheWrite | None:
        """The Triton backend's write (``triton_reshape_and_cache_flash``) divides by element 0
        of the scale tensor for every head and stores the platform's e4m3 type for every
        quantized dtype (``fp8_e5m2`` included); the other backends use the CUDA kernel, which
        kvscale's kernel reproduces."""
        if attention_backend != "triton_attn":
            return None

        def write(x: Any, scale: Any) -> Any:
            from kvscale.kernel.formats import E4M3FN
            from kvscale.kernel.reference import quantize_to_bits

            return quantize_to_bits(x, scale.reshape(-1)[:1], E4M3FN)

        return CacheWrite(
            "vLLM 0.33.0 triton_reshape_and_cache_flash (--attention-backend triton_attn)",
            "fp8_e4m3",
            write,
            "scale element 0 for every head; e4m3 stores for every fp8 dtype",
            lambda scale: scale.reshape(-1)[:1],
        )

    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        model = placement.model_of(context.quant, context.shape)
        if model is not None and _walked(model):
            # The architectures whose loaders kvscale follows: the first candidate their
            # loaders place (None for every k/v of the DeepSeek family, Jamba, LFM2, ...).
            return _loadable_name(prefix, kind, model)
        return self._checkpoint_name(prefix, kind, context)

    def _checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        """The first candidate that the cache-scale mapper sends back to (``<prefix>.attn``,
        kind): ``<prefix>.<kind>`` (prob: ``<prefix>.prob_output_scale``), then the parameter's
        own name ``<prefix>.attn.<kind>``.

        ``prob_output_scale`` reaches the engine only through the Fp8Config/QuarkConfig suffix
        map (``quantization/fp8.py``, ``quark/quark.py``) and only after ``.self_attn``; under
        ModelOpt (and for ``mixer`` prefixes) ``<prefix>.attn.prob_scale`` is the one name that
        loads, because it is the parameter itself.
        """
        method = context.quant.quant_method
        stacked_first = _architecture_facts(context.shape.architectures)[0]
        candidates = []
        if kind == "prob_scale":
            if method in names.OUTPUT_SCALE_METHODS:
                candidates.append(f"{prefix}.prob_output_scale")
        else:
            candidates.append(f"{prefix}.{kind}")
        candidates.append(f"{prefix}.attn.{kind}")
        for candidate in candidates:
            mapped = names.map_name(candidate, method, stacked_first)
            if mapped.layer == f"{prefix}.attn" and mapped.kind == kind:
                return candidate
        return None


_NO_QUANT = QuantConfig()

_WALKED_KINDS = frozenset(
    ["attention-without-quant_config", "no-kv-holder", "mla-custom", "fixed-scales"]
)
_UNWALKED_KINDS = frozenset(["attention-custom-loader", "dynamic", "unresolved"])
_NO_SCALE_KINDS = frozenset(["no-kv-holder", "mla-custom", "fixed-scales"])


def _walked(model: placement.Model) -> bool:
    """Architectures whose loaders differ from Llama's, for which kvscale follows vLLM's loaders
    name by name (``kvscale.engine.vllm.placement``): MLA models, attention built without a
    quant config, models without KV-scale holders, and hand-written loaders below an
    ``AutoWeightsLoader`` (GPT-OSS, MiniCPM3). Hand-written top-level loaders of plain
    attention models are not in vLLM's executed evidence and keep Llama's rules."""
    facts = model.facts
    if facts.kind in _UNWALKED_KINDS:
        return False
    if facts.kind in _NO_SCALE_KINDS:
        return True  # no name is walked: nothing holds a scale
    loaders = [loader for loader in (facts.top, facts.model) if loader is not None]
    if any(loader.mapper_unresolved for loader in loaders):
        return False  # a name mapper the evidence could not evaluate: Llama's rules
    if model.mla or facts.kind in _WALKED_KINDS:
        return True
    inner = facts.model
    return inner is not None and not inner.auto


_INTENDED_KIND = (
    (re.compile(r"prob(?:_output)?_scale$"), "prob_scale"),
    (re.compile(r"(?:^|\.)kv_scale$"), "k_scale"),
    (re.compile(r"(?:^|\.)_?([kvq])_scale$"), None),
    (re.compile(r"\.([kvq])_proj\.output_scale$"), None),
    (re.compile(r"\.([kv])_cache\.scale$"), None),
    (re.compile(r"\.(q)\.scale$"), None),
    (re.compile(r"\.([kv])_fake_quantizer\.qscale_act$"), None),
)

_MISTRAL_NATIVE = re.compile(r"\.[kv]_fake_quantizer\.qscale_act$")
"""Mistral's consolidated checkpoints name the KV-cache scales ``attention.k_fake_quantizer
.qscale_act`` (MistralLarge3ForCausalLM's mapper renames ``.qscale_act`` to ``.input_scale``)."""


def _intended_kind(tensor: str) -> str | None:
    """The scale a tensor's producer meant, whatever the engine does with it."""
    for pattern, kind in _INTENDED_KIND:
        match = pattern.search(tensor)
        if match:
            return kind or f"{match.group(1)}_scale"
    return None


def _loadable_name(prefix: str, kind: str, model: placement.Model) -> str | None:
    """The first of kvscale's candidate names that vLLM's loaders place into ``kind`` of the
    layer under ``prefix`` (``mla.checkpoint_names``); None when none does."""
    for candidate in mla.checkpoint_names(prefix, kind):
        if placement.place(candidate, model).kind == kind:
            return candidate
    return None


def _no_method_reason(model: placement.Model, quant: QuantConfig) -> str:
    facts = model.facts
    if facts.kind == "attention-without-quant_config":
        return (
            f"{model.arch} builds its attention without quant_config ({facts.resolved}): no KV "
            "method, so no scale parameter exists, whatever the quant method"
        )
    if "custom-mla" in facts.holders and "Attention" not in facts.holders:
        return (
            f"{model.arch}'s own MLA layer calls _init_kv_cache_quant, but no quant config gives "
            f"it a KV method ({facts.resolved}): its scales stay 1.0"
        )
    if "Attention" not in facts.holders and "MLAAttention" not in facts.holders:
        return f"{model.arch} builds no layer that holds KV-cache scales ({facts.resolved})"
    if quant.raw is None:
        return "config.json declares no quantization_config: the attention has no KV method"
    if model.mla:
        return (
            f"quant_method {placement.modelopt_method(quant.raw) or quant.raw_method} creates no "
            "KV-scale parameter on MLA attention (vLLM 0.33.0 gives MLAAttention a KV method "
            "under ModelOpt FP8/NVFP4/MXFP8 only: quantization/modelopt.py get_quant_method)"
        )
    return f"quant_method {quant.quant_method} creates no KV-scale parameters"


def _walk(tensor: str, file: str, context: NameContext, model: placement.Model) -> Routed:
    """``route`` for the architectures vLLM's loaders are followed for (``_walked``)."""
    extra = is_kv_scheme_extra(tensor)
    if not (looks_like_kv_scale(tensor) or extra or _MISTRAL_NATIVE.search(tensor)):
        return Routed()
    prefix = placement.attention_prefix_of(tensor)
    layer = _layer_evidence(tensor, model)
    kind = _intended_kind(tensor)
    if context.as_intended and layer is not None and kind is not None:
        # What the producer meant (normalize --checkpoint writes it under a name that loads).
        return Routed(mapped=MappedName(tensor, tensor, layer, kind, convention_of(tensor)))
    if model.facts.kind in _NO_SCALE_KINDS:
        # No layer holds a KV-scale parameter (DeepSeek-V4's own cache, Kimi-Linear's MLA
        # layer); how their hand-written loaders treat the names is not in vLLM's executed
        # evidence, so kvscale claims no refusal: the names reach nothing.
        return Routed(
            unmapped=UnmappedTensor(
                tensor,
                file,
                tensor,
                _no_method_reason(model, context.quant),
                False,
                "scales-not-loaded",
                None,
                layer,
            )
        )
    where = placement.place(tensor, model)
    if where.kind is not None and layer is not None:
        return Routed(
            mapped=MappedName(tensor, where.engine_name, layer, where.kind, convention_of(tensor))
        )
    fails = where.error is not None
    loadable = _loadable_name(prefix, kind, model) if prefix and kind else None
    if extra:
        code, reason = (
            "unloadable-kv-tensor" if fails else "ignored-kv-tensor",
            "vLLM 0.33 has no parameter for an affine KV-cache bias (ModelOpt)",
        )
    elif prefix is not None and not model.is_kv_layer(prefix):
        code = "unmapped-scale-name"
        reason = f"that layer of {model.arch} caches no K/V (config.json's layer pattern)"
    elif not model.params:
        code, reason = "scales-not-loaded", _no_method_reason(model, context.quant)
    else:
        code = "unmapped-scale-name" if loadable else "scales-not-loaded"
        reason = _drop_reason(where, model)
        if loadable and prefix:
            reason += f"; the name that loads is <attention prefix>{loadable[len(prefix) :]}"
        else:
            reason += f"; no checkpoint name reaches this scale of {model.arch}'s layers"
    return Routed(
        unmapped=UnmappedTensor(
            tensor, file, where.engine_name, reason, fails, code, error=where.error, layer=layer
        )
    )


def _layer_evidence(tensor: str, model: placement.Model) -> str | None:
    """``<prefix>.attn`` when the tensor sits under an attention block that the model has as a
    KV-cache layer (vLLM's mappers put it in the decoder stack)."""
    prefix = placement.attention_prefix_of(tensor)
    if prefix is None or not model.is_kv_layer(prefix):
        return None
    if not placement.engine_prefix(prefix, model).startswith(("model.", "language_model.")):
        return None
    return f"{prefix}.attn"


def _drop_reason(where: placement.Placement, model: placement.Model) -> str:
    """Why vLLM's loaders do not place a name the layer has a parameter for under another
    name (group key of the problem: no tensor names in it)."""
    owner = _owner(model)
    mapped_first = model.facts.top is not None and model.facts.top.auto
    if where.error is not None and where.error.startswith("KeyError"):
        return f"{owner} indexes params_dict with the name and finds no such parameter"
    if where.error is not None:
        raiser = where.error.rsplit(" in ", 1)[-1].rstrip(".")
        return f"{raiser}'s AutoWeightsLoader finds no such module or parameter"
    if where.dropped and where.dropped.startswith("vLLM warns"):
        if mapped_first:
            return (
                f"{owner} applies maybe_remap_kv_scale_name to the name AutoWeightsLoader's "
                "cache-scale mapper has already rewritten, finds no such parameter and drops it "
                "(vLLM logs '... is not loaded')"
            )
        return (
            f"{owner}'s maybe_remap_kv_scale_name finds no such parameter and drops it "
            "(vLLM logs '... is not loaded')"
        )
    return f"{owner} skips a name that is no parameter"


def _owner(model: placement.Model) -> str:
    loader = model.facts.model or model.facts.top
    return loader.owner if loader is not None else model.arch


def _backend_dtype_problems(
    layers: Sequence[ResolvedLayer], settings: EngineSettings
) -> list[Problem]:
    """Layers no attention backend runs (``kvscale.engine.vllm.backends``): the one chosen with
    --attention-backend refuses their dtype here (vLLM: "Selected backend ... is not valid for
    this configuration"), or none of the engine's does ("No valid attention backend found")."""
    by_dtype: dict[tuple[str, bool], list[str]] = {}
    for layer in layers:
        if layer.cache is not None and layer.error is None:
            key = (layer.cache.kv_cache_dtype, layer.cache.latent)
            by_dtype.setdefault(key, []).append(layer.name)
    chosen = backends.lookup(settings.attention_backend) if settings.attention_backend else None
    gpu = f" on {settings.gpu_arch}" if settings.gpu_arch else ""
    out: list[Problem] = []
    for (dtype, latent), members in by_dtype.items():
        count = f"{len(members)} of {len(layers)} layers"
        if chosen is not None:
            why = backends.reasons(
                chosen, dtype, mla=latent, head_size=settings.head_size, gpu_arch=settings.gpu_arch
            )
            if why:
                out.append(
                    problem(
                        "backend-unsupported-dtype",
                        f"--attention-backend {chosen.name} cannot run {count} "
                        f"(kv-cache dtype {dtype}{gpu}): vLLM refuses to start, 'Selected backend "
                        f"AttentionBackendEnum.{chosen.name} is not valid for this "
                        f"configuration. Reason: {why}'; backends that run it: "
                        + _backend_names(dtype, latent, settings),
                        layers=tuple(members),
                    )
                )
            continue
        if backends.backends_for(
            dtype, mla=latent, head_size=settings.head_size, gpu_arch=settings.gpu_arch
        ):
            continue
        kind = "an MLA" if latent else "a non-MLA"
        if kv_dtypes.cache_format(dtype, settings.platform).scale_use is ScaleUse.OUT_OF_TREE:
            out.append(
                problem(
                    "no-in-tree-backend",
                    f"no attention backend of vLLM 0.33.0 runs kv-cache dtype {dtype} ({count}): "
                    "it needs a platform plugin (Intel Gaudi's vllm-gaudi for fp8_inc); the "
                    "scales shown are what vLLM's own loading leaves, whatever the plugin's "
                    "write does with them",
                    layers=tuple(members),
                )
            )
            continue
        head = f" with head size {settings.head_size}" if settings.head_size else ""
        out.append(
            problem(
                "backend-unsupported-dtype",
                f"no attention backend of vLLM 0.33.0 runs kv-cache dtype {dtype} on {kind} "
                f"model{head}{gpu} ({count}): the engine fails in backend selection ('No valid "
                "attention backend found')",
                layers=tuple(members),
            )
        )
    return out


def _backend_names(dtype: str, latent: bool, settings: EngineSettings) -> str:
    found = backends.backends_for(
        dtype, mla=latent, head_size=settings.head_size, gpu_arch=settings.gpu_arch
    )
    return ", ".join(name.lower() for name in found) or "none"


def _backend_problems(layers: Sequence[ResolvedLayer], settings: EngineSettings) -> list[Problem]:
    """What vLLM's Triton attention backend does to the cache write
    (``v1/attention/ops/triton_reshape_and_cache_flash.py``): its kernel divides by
    ``tl.load(k_scale)`` (element 0 of the scale tensor, for every head) and stores
    ``current_platform.fp8_dtype()`` (e4m3) for every quantized dtype, e5m2 included. The
    FlashAttention backend's CUDA kernel (``csrc/libtorch_stable/cache_kernels.cu``) indexes
    per-head scales by head and honours the dtype."""
    if settings.attention_backend != "triton_attn" or not settings.uses_kv_scales:
        return []
    out: list[Problem] = []
    per_head = [
        layer.name
        for layer in layers
        if isinstance(layer.k_scale, tuple) or isinstance(layer.v_scale, tuple)
    ]
    if per_head:
        shown = ", ".join(per_head[:3]) + (
            f" and {len(per_head) - 3} more" if len(per_head) > 3 else ""
        )
        out.append(
            problem(
                "per-head-collapsed",
                f"the triton_attn backend's cache write uses head 0's k/v scale for every head "
                f"in {len(per_head)} per-head layers ({shown}), while attention reads each "
                "head's own scale",
                layers=tuple(per_head),
            )
        )
    if settings.kv_cache_dtype == "fp8_e5m2":
        out.append(
            problem(
                "format-overridden-by-backend",
                "the triton_attn backend's cache write stores the platform's e4m3 type for "
                "--kv-cache-dtype fp8_e5m2 (current_platform.fp8_dtype()), so the e5m2 reader "
                "decodes e4m3 bytes",
            )
        )
    return out


VLLM = VllmEngine()

__all__ = ["VLLM", "VllmEngine"]
