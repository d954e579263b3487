"""SGLang 0.5.23's rules behind the ``Engine`` interface (``kvscale.engine.base``): which
tensor reaches which KV-scale parameter, what the layer holds after loading, and this engine's
own problems. The package docstring lists the modules it draws on.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.conventions import (
    attention_prefix,
    convention_of,
    is_kv_scheme_extra,
    layer_index,
    looks_like_kv_scale,
)
from kvscale.engine.base import (
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
    Rule,
    ScaleSource,
    UnmappedTensor,
)
from kvscale.engine.options import EngineOptions
from kvscale.engine.registry import ENGINES, EngineName
from kvscale.engine.sglang import (
    architectures,
    backends,
    models,
    names,
    quant_config,
    rules,
)
from kvscale.engine.sglang import (
    kv_cache_dtypes as kv_dtypes,
)
from kvscale.errors import UsageError
from kvscale.layers import is_kv_cache_layer
from kvscale.model_config import ModelShape, RawQuantConfig
from kvscale.nvfp4_conventions import EngineGlobalScale
from kvscale.problems import Problem, Severity, problem

_TARGET = re.compile(r"^(?P<layer>.+\.attn)\.(?P<kind>[kv]_scale)$")
_LAYER_PREFIX = re.compile(r"^(.*\.layers\.\d+)\.")
_LAYER_OCCURRENCE = re.compile(r"\.layers\.\d+(?=\.)")
"""Where a name has a ``_LAYER_PREFIX``: each match's end is one (``.layers.N`` then a dot)."""
LLAMA = "LlamaForCausalLM"
MAX_NAMED = 3


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _checkpoint_prefixes(context: NameContext) -> frozenset[str]:
    """The checkpoint's attention prefixes: from the weights, else one per KV-cache layer of
    config.json's ``num_hidden_layers`` (named ``model.layers.N.self_attn``). No copy: this runs
    once per scale-like tensor, and a copy of thousands of layers' prefixes each time made many
    unmapped names x many layers quadratic."""
    return context.attention_prefixes or _config_prefixes(context.shape)


@functools.lru_cache(maxsize=8)
def _config_prefixes(shape: ModelShape) -> frozenset[str]:
    """config.json's attention prefixes, when no projection weight names them."""
    return frozenset(
        f"model.layers.{i}.self_attn"
        for i in range(shape.num_hidden_layers or 0)
        if is_kv_cache_layer(shape, i)
    )


def _param_check(context: NameContext, arch: str | None) -> Callable[[str], bool]:
    """Whether ``<prefix>.attn.k_scale`` (or v) is a parameter of the model for Llama's rules:
    an attention layer (from the weights, else config.json's layers) whose quant config gives
    it a KV method, in an architecture that passes it ``quant_config``."""
    no_method = models.kv_method(arch)[0] is models.KvMethod.NO
    if context.quant.engine_path is EnginePath.NONE or no_method:
        return lambda name: False
    prefixes = _checkpoint_prefixes(context)

    def is_param(name: str) -> bool:
        match = _TARGET.match(name)
        return match is not None and attention_prefix(match["layer"]) in prefixes

    return is_param


def _drop_reason(tensor: str, remapped: names.Remapped, context: NameContext) -> str:
    """Why SGLang drops a scale tensor, in words shared by every tensor of the same cause (one
    problem per cause); the engine's own log line names the tensor."""
    kind = remapped.name.rsplit(".", 1)[-1]
    if context.quant.engine_path is EnginePath.NONE:
        return (
            "this checkpoint gets no KV-cache quant method in SGLang, so there is no scale "
            "parameter to load it into (the loader logs that it is not loaded)"
        )
    if kind in ("q_scale", "prob_scale") or tensor.endswith(("q_scale", "prob_output_scale")):
        return "SGLang has no q or prob scale parameter (its loader logs 'Parameter ... not found')"
    if tensor.endswith((".k_scale", ".v_scale", ".kv_scale")):
        return (
            "SGLang's remap (maybe_remap_kv_scale_name) sends it to a name that is no parameter, "
            "e.g. vLLM's canonical attn.k_scale becomes attn.attn.k_scale (it logs 'Found "
            ".k_scale in the checkpoint ... is not loaded.'); write <prefix>.k_scale / v_scale"
        )
    return "no SGLang parameter takes it (its loader logs 'Parameter ... not found in params_dict')"


def _noted(reason: str, loader: _Loader) -> str:
    return f"{reason} ({loader.note})" if loader.note else reason


def _kv_kind(tensor: str) -> str | None:
    """``k_scale`` / ``v_scale``: the scale a tensor holds in its producer's convention (a
    legacy ``kv_scale`` counts as k); None for q, prob and other names."""
    if re.search(r"(?:^|[._])(?:k_scale|kv_scale|k_proj\.output_scale|k_cache\.scale)$", tensor):
        return "k_scale"
    if re.search(r"(?:^|[._])(?:v_scale|v_proj\.output_scale|v_cache\.scale)$", tensor):
        return "v_scale"
    if re.search(r"\.([kv])_fake_quantizer\.qscale_act$", tensor):
        return f"{tensor.rsplit('.', 2)[-2][0]}_scale"
    return None


def _candidates(kind: str, radix: Sequence[str]) -> list[str]:
    """Names a normalized checkpoint could use for ``kind``, in kvscale's preference."""
    out = [kind, f"attn.{kind}", f"{kind[0]}_proj.{kind}"]
    out += [f"{r}.{kind}" for r in radix if r != "attn"]
    return out


@dataclass(frozen=True)
class _Loader:
    """The ``load_weights`` SGLang runs for this checkpoint."""

    arch: str | None
    """The registered architecture SGLang resolves (None: none is registered)."""
    loader: names.LoaderClass | None
    """Its recorded loader class; None: Llama's rules (``names.remap``) apply."""
    radix: tuple[str, ...] = ("attn",)
    """The RadixAttention attributes with KV-scale parameters, under the attention module."""
    note: str = ""
    """Why Llama's rules stand in (an architecture kvscale has no record for), or ""."""
    site: str = ""
    """file:line (under srt/models/) of its load_weights."""
    layout: models.Layout | None = None
    """Where its modules sit and which hand-mirrored loader applies (``models.LAYOUTS``)."""


@functools.cache
def _loader(architectures_: tuple[str, ...]) -> _Loader:
    """``ModelRegistry.resolve_model_cls`` (srt/models/registry.py): the first architecture of
    config.json that is registered (else SGLang falls back to its Transformers backend)."""
    for arch in architectures_:
        layout = models.layout(arch)
        found = architectures.ARCHITECTURES.get(arch)
        radix: tuple[str, ...] = found.radix if found is not None else ("attn",)
        mla = architectures.MLA_RADIX.get(arch)
        if mla is not None and mla not in radix:
            radix = (mla,)
        if found is not None:
            cls = architectures.LOADER_CLASSES[found.loader]
            if found.loader == LLAMA and layout is None:
                return _Loader(arch, None, radix, site=found.site)
            return _Loader(arch, cls, radix, site=found.site, layout=layout)
        if layout is not None:
            return _Loader(arch, None, radix, site=layout.site, layout=layout)
        if arch in architectures.NOT_PROBED:
            return _Loader(
                arch,
                None,
                note=f"kvscale has no record of {arch}'s SGLang loader; LlamaForCausalLM's "
                "rules are assumed",
            )
    shown = ", ".join(architectures_) or "none"
    return _Loader(
        None,
        None,
        note=f"config.json's architectures ({shown}) are not registered in SGLang "
        f"{architectures.SGLANG_VERSION} (it would try its Transformers backend); "
        "LlamaForCausalLM's rules are assumed",
    )


def _split(tensor: str, layout: models.Layout | None) -> tuple[str, str] | None:
    """``(checkpoint attention prefix, tail)``: under ``model.layers.N.self_attn`` with a
    probed tail (where the recorded outcomes apply), or any name under the prefixes of a
    hand-mirrored layout."""
    if layout is not None:
        match = layout.prefix.match(tensor)
        return (match["prefix"], match["tail"]) if match else None
    match = _RECORDED.match(tensor)
    if match and match["tail"] in architectures.PROBE_TAILS:
        return match["prefix"], match["tail"]
    return None


_RECORDED = re.compile(r"^(?P<prefix>model\.layers\.\d+\.self_attn)\.(?P<tail>.+)$")
"""The prefix the recorded outcomes were probed under (a loader may treat other prefixes,
e.g. a multimodal model's ``model.language_model.``, otherwise: those need a layout)."""


@dataclass(frozen=True)
class _Routing:
    """Where a loader sends one checkpoint tensor, in the checkpoint's terms."""

    outcome: models.Outcome
    prefix: str
    """The tensor's checkpoint attention prefix."""


class SglangEngine(Engine):
    name = EngineName.SGLANG.value
    version = ENGINES[EngineName.SGLANG].release
    kv_cache_dtypes = kv_dtypes.KV_CACHE_DTYPES
    attention_backends = backends.ATTENTION_BACKENDS
    fp8_kv_cache_dtype = "fp8_e4m3"

    def quant_config(self, raw: RawQuantConfig | None) -> QuantConfig:
        return quant_config.parse_quant_config(raw)

    def file_order(self, files: Sequence[str]) -> list[str]:
        # DefaultModelLoader._prepare_weights: a plain sort() (SGLANG_SORT_WEIGHT_FILES unset),
        # not vLLM's natural sort: model-10 is read before model-2, and the later file wins.
        return sorted(files)

    def settings(
        self,
        quant: QuantConfig,
        shape: ModelShape,
        options: EngineOptions,
        weight_dtypes: frozenset[str],
    ) -> tuple[EngineSettings, str]:
        if options.kv_cache_dtype_skip_layers:
            raise UsageError(
                "--kv-cache-dtype-skip-layers is vLLM's: SGLang 0.5.23 has no per-layer "
                "KV-cache dtype (no such field in srt/arg_groups/fields)",
                hint="drop the option, or use --engine vllm",
            )
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
            ct_strategy=quant.ct_strategy,
            refusal=quant_config.start_refusal(quant, model_dtype, options.platform_name),
            uses_kv_scales=kv_dtype in kv_dtypes.FP8_KV_CACHE_DTYPES,
            scale_dtype="float32",
            attention_backend=options.attention_backend,
            gpu_arch=options.gpu_arch,
            architecture=_loader(shape.architectures).arch,
        )
        return settings, how

    def nvfp4_global_scales(
        self, value: float, gpu_arch: str | None
    ) -> tuple[EngineGlobalScale, ...]:
        """``NVFP4KVCacheMethod.load_scales_from_model`` (``kv_cache_dtypes.nvfp4_global_scale``):
        times 6 on SM100/SM103 when the value is not 1.0, unchanged on the other GPUs; one group
        per reading when ``gpu_arch`` is not given."""
        if gpu_arch is not None:
            scale = kv_dtypes.nvfp4_global_scale(value, gpu_arch)
            return (EngineGlobalScale(gpu_arch, scale, "x6" if scale != value else "unchanged"),)
        if value == 1.0:
            return (EngineGlobalScale("all", value, "unchanged"),)
        sm100 = "/".join(sorted(kv_dtypes.E2M1_SCALED_ARCHS))
        return (
            EngineGlobalScale(sm100, kv_dtypes.nvfp4_global_scale(value, "sm100"), "x6"),
            EngineGlobalScale("other GPUs", value, "unchanged"),
        )

    def cache_format(
        self, kv_cache_dtype: str, platform: str, *, latent: bool = False
    ) -> CacheFormat:
        return kv_dtypes.cache_format(kv_cache_dtype, platform, latent=latent)

    def serve_command(
        self,
        checkpoint: str,
        kv_cache_dtype: str,
        *,
        skip_layers: Sequence[str] = (),
        attention_backend: str | None = None,
    ) -> tuple[str, ...]:
        """``python -m sglang.launch_server`` (srt/server_args.py); SGLang 0.5.23 has no
        per-layer KV-cache dtype."""
        if skip_layers:
            raise UsageError("SGLang 0.5.23 cannot keep single layers unquantized")
        out = ["python", "-m", "sglang.launch_server", "--model-path", checkpoint]
        out += ["--kv-cache-dtype", kv_cache_dtype]
        if attention_backend is not None:
            out += ["--attention-backend", attention_backend]
        return tuple(out)

    def layer_cache(self, name: str, settings: EngineSettings, shape: ModelShape) -> LayerCache:
        """The pool's format (``kv_dtypes.cache_format``), MLA's latent row, and KV sharing:
        the layer whose cache a sharing layer reads (``models.kv_shared_source``)."""
        latent = shape.latent_width is not None
        index = layer_index(name)
        source = None if index is None else models.kv_shared_source(shape, index)
        return LayerCache(
            settings.kv_cache_dtype,
            kv_dtypes.cache_format(settings.kv_cache_dtype, settings.platform, latent=latent),
            latent,
            shared_from=None if source is None else _with_index(name, source),
            # triton multiplies V, the latent again, by v_scale_float (triton_backend.py:2370);
            # the other MLA backends never read it.
            reads_v_scale=latent and settings.attention_backend in (None, "triton"),
        )

    def layer_name(self, prefix: str, shape: ModelShape) -> str:
        """SGLang's module for the checkpoint's attention prefix (``models.LAYOUTS``: NemotronH
        ``backbone.`` -> ``model.``, the multimodal wrappers' ``language_model.model.``,
        Falcon-H1's decoder layer); kvscale calls its RadixAttention ``attn`` whatever SGLang
        names it (DeepSeek's ``attn_mqa``), as for every engine."""
        layout = _loader(shape.architectures).layout
        return f"{layout.module_prefix(prefix) if layout else prefix}.attn"

    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        loader = _loader(context.shape.architectures)
        if not context.as_intended and (loader.loader is not None or loader.layout is not None):
            extra = is_kv_scheme_extra(tensor)
            own = loader.layout is not None and loader.layout.extra_scales is not None
            if own and loader.layout and loader.layout.extra_scales:
                own = bool(loader.layout.extra_scales.search(tensor))
            if not (extra or own or looks_like_kv_scale(tensor)):
                return Routed()
            routing = self._routing(tensor, context, loader)
            if routing is not None:
                return self._routed(tensor, file, context, loader, routing, extra)
            loader = dataclasses.replace(
                loader,
                note=f"kvscale has no record of what {loader.arch}'s SGLang loader does with "
                "this name; LlamaForCausalLM's rules are assumed",
            )
        # LlamaForCausalLM._legacy_load_weights (srt/models/llama.py:708-779), also the
        # producers' intent (normalize --checkpoint) and the stand-in for loaders kvscale has
        # no record of.
        if is_kv_scheme_extra(tensor):
            # models/llama.py load_weights: after the stacked rename to qkv_proj the name is not
            # in params_dict: "Parameter ...qkv_proj.k_bias not found in params_dict".
            engine_name = re.sub(r"\.[kv]_proj\.", ".qkv_proj.", tensor)
            reason = "SGLang 0.5.23 skips names no parameter takes (an affine KV-cache bias)"
            return Routed(
                unmapped=UnmappedTensor(
                    tensor, file, engine_name, _noted(reason, loader), False, "ignored-kv-tensor"
                )
            )
        if not looks_like_kv_scale(tensor):
            return Routed()
        remapped = names.remap(tensor, _param_check(context, loader.arch))
        if remapped.dropped is not None:
            lost = self._no_kv_method(tensor, context, loader)
            if lost is not None:
                return Routed(unmapped=dataclasses.replace(lost, file=file))
            reason = _noted(_drop_reason(tensor, remapped, context), loader)
            return Routed(unmapped=UnmappedTensor(tensor, file, remapped.name, reason, False))
        match = _TARGET.match(remapped.name)
        assert match is not None  # is_param accepted it
        return Routed(
            mapped=MappedName(
                tensor, remapped.name, match["layer"], match["kind"], convention_of(tensor)
            )
        )

    def layer_shape(self, shape: ModelShape) -> ModelShape:
        """SGLang's Kimi-Linear config types its layers by ``linear_attn_config.kda_layers``
        (``configs/kimi_linear.py:158``, ``is_kda_layer``) and never reads config.json's
        ``layer_types``; without that field every layer is an MLA layer."""
        if shape.model_type == "kimi_linear":
            return dataclasses.replace(shape, layer_types=None)
        return shape

    def _params(
        self, context: NameContext, loader: _Loader, *, assume_kv_method: bool = False
    ) -> Callable[[str], bool]:
        """The model's KV-scale parameters (its ``params_dict`` scale entries): the
        RadixAttention's ``k_scale`` / ``v_scale`` on every attention module, when the quant
        config gives it a KV method (``assume_kv_method``: as if it did) and the architecture
        passes it ``quant_config`` (``models.kv_method``)."""
        # Routing asks this once per tensor and per candidate name; rebuilding the set of every
        # layer's parameters each time made inspect quadratic in the layer count (110,592 names
        # over 4,096 layers ran past 300 s). The context and loader live for one resolve.
        memo = self._params_memo
        if (
            memo is not None
            and memo[0] is context
            and memo[1] is loader
            and memo[2] is assume_kv_method
        ):
            return memo[3]
        found = self._params_uncached(context, loader, assume_kv_method)
        self._params_memo = (context, loader, assume_kv_method, found)
        return found

    _params_memo: tuple[NameContext, _Loader, bool, Callable[[str], bool]] | None = None

    def _params_uncached(
        self, context: NameContext, loader: _Loader, assume_kv_method: bool
    ) -> Callable[[str], bool]:
        verdict, _ = models.kv_method(loader.arch)
        method = assume_kv_method or context.quant.engine_path is not EnginePath.NONE
        if not method or verdict is models.KvMethod.NO:
            return lambda name: False
        layout = loader.layout
        shape = self.layer_shape(context.shape)
        prefixes = _checkpoint_prefixes(dataclasses.replace(context, shape=shape))
        modules = {layout.module_prefix(p) if layout else p for p in prefixes}
        radix = loader.radix
        if layout is not None and layout.loader in ("deepseek", "mistral_large_3"):
            # DeepseekV2AttentionMLA builds attn_mqa and attn_mha, both with quant_config
            # (deepseek_v2.py:2183, 2206).
            radix = ("attn_mqa", "attn_mha")
        wanted = {f"{m}.{r}.{k}" for m in modules for r in radix for k in ("k_scale", "v_scale")}
        return wanted.__contains__

    def _routing(
        self,
        tensor: str,
        context: NameContext,
        loader: _Loader,
        *,
        assume_kv_method: bool = False,
    ) -> _Routing | None:
        """What the architecture's own ``load_weights`` does with the tensor: a hand-mirrored
        loader (``models``) or its recorded outcome (``architectures.py``); None: kvscale has
        no record of it (Llama's rules stand in)."""
        layout = loader.layout
        split = _split(tensor, layout)
        if split is None:
            return None
        prefix, tail = split
        params = self._params(context, loader, assume_kv_method=assume_kv_method)
        q_lora = context.shape.q_lora_rank
        hand = layout.loader if layout is not None else "recorded"
        if hand == "deepseek":
            return _Routing(models.deepseek(tensor, params, q_lora), prefix)
        if hand == "minicpm3":
            return _Routing(models.minicpm3(tensor, params), prefix)
        if hand == "falcon_h1":
            return _Routing(models.falcon_h1(tensor, params), prefix)
        if hand == "mllama4":
            return _Routing(models.mllama4(tensor, params), prefix)
        if hand == "mistral_large_3":
            return _Routing(models.mistral_large_3(tensor, params, q_lora), prefix)
        cls = loader.loader
        for substring, arch in layout.recorded_for if layout is not None else ():
            if substring in tensor:
                cls = architectures.LOADER_CLASSES[architectures.ARCHITECTURES[arch].loader]
                break
        if cls is None:
            return None
        lprefix = layout.loader_prefix(prefix) if layout is not None else prefix
        looked = f"{lprefix}.{tail}"
        recorded = architectures.ARCHITECTURES.get(loader.arch or "")
        mla = architectures.MLA_RADIX.get(loader.arch or "")
        if mla is not None and recorded is not None and mla not in recorded.radix:
            return _Routing(models.mla_recorded(looked, mla, cls, params), prefix)
        has_params = params(f"{lprefix}.{loader.radix[0]}.k_scale")
        got = names.route_recorded(cls, architectures.MESSAGES, tail, lprefix, looked, has_params)
        if got is None:
            return None
        outcome = models.Outcome(got.kind, got.target, got.message, got.message_template)
        return _Routing(outcome, prefix)

    def _loads_into(self, routing: _Routing, loader: _Loader, kind: str | None = None) -> bool:
        """The tensor loads into the layer's cache scale (its KV RadixAttention's k or v)."""
        out = routing.outcome
        if out.kind != "load" or out.target is None:
            return False
        module, radix, loaded = out.target.rsplit(".", 2)
        layout = loader.layout
        own = layout.module_prefix(routing.prefix) if layout is not None else routing.prefix
        return (
            module == own
            and radix == loader.radix[0]
            and loaded in ("k_scale", "v_scale")
            and (kind is None or loaded == kind)
        )

    def _kept(
        self, prefix: str, tail: str, kind: str, context: NameContext, loader: _Loader
    ) -> str:
        """``; the name this loader keeps is <prefix>.<candidate>``: the first name of the same
        kind that the loader loads into the layer (``_candidates`` order)."""
        for candidate in _candidates(kind, loader.radix):
            routing = self._routing(f"{prefix}.{candidate}", context, loader)
            if routing is not None and self._loads_into(routing, loader, kind):
                return (
                    ""
                    if candidate == tail
                    else f"; the name this loader keeps is <prefix>.{candidate}"
                )
        return "; this loader keeps no name of this kind"

    def _where(self, loader: _Loader) -> str:
        site = f", srt/models/{loader.site}" if loader.site else ""
        return f"{loader.arch}'s load_weights (SGLang {self.version}{site})"

    def _no_kv_method(
        self, tensor: str, context: NameContext, loader: _Loader
    ) -> UnmappedTensor | None:
        """A k/v scale tensor dropped because the architecture builds its RadixAttention
        without ``quant_config`` (``models.kv_method``): the layer holds no scale whatever
        the name, so the checkpoint's calibration is lost (``scales-not-loaded``)."""
        verdict, evidence = models.kv_method(loader.arch)
        if (
            verdict is not models.KvMethod.NO
            or _kv_kind(tensor) is None
            or context.quant.engine_path is EnginePath.NONE
        ):
            return None
        reason = (
            f"{loader.arch} builds its RadixAttention without quant_config ({evidence}): its "
            f"layers get no KV-cache quant method and hold no k/v scale, so {self._where(loader)} "
            "drops every k/v "
            "scale name and the cache runs at 1.0"
        )
        return UnmappedTensor(
            tensor, "", tensor, _noted(reason, loader), False, "scales-not-loaded", Severity.ERROR
        )

    def _routed(
        self,
        tensor: str,
        file: str,
        context: NameContext,
        loader: _Loader,
        routing: _Routing,
        extra: bool,
    ) -> Routed:
        out = routing.outcome
        prefix = routing.prefix
        if self._loads_into(routing, loader):
            assert out.target is not None
            return Routed(
                mapped=MappedName(
                    tensor,
                    out.target,
                    f"{prefix}.attn",
                    out.target.rsplit(".", 1)[-1],
                    convention_of(tensor),
                )
            )
        where = self._where(loader)
        engine_name = out.target or tensor
        template = out.template or (_generic(out.message) if out.message else None)
        if out.kind == "load":
            # e.g. DeepSeek's self_attn.attn_mha.k_scale: the MHA prefill attention's parameter.
            assert out.target is not None
            reason = (
                f"{where} loads it into {_generic(out.target)}, not into the layer's KV cache "
                f"scale ({loader.radix[0]}.k_scale / v_scale)"
            )
            return Routed(unmapped=UnmappedTensor(tensor, file, engine_name, reason, False))
        kind = _kv_kind(tensor)
        split_tail = tensor[len(prefix) + 1 :]
        keeps = self._kept(prefix, split_tail, kind, context, loader) if kind else ""
        if out.why:
            keeps = f" ({out.why}){keeps}"
        if out.kind == "raise":
            reason = (
                f"{where} raises {template} while loading it, so the model does not load{keeps}"
            )
            renamed = "qkv_proj." in (out.message or "") and "qkv_proj." not in tensor
            code = "dropped-by-architecture" if renamed else "unmapped-scale-name"
            if extra:
                code = "unloadable-kv-tensor"
            return Routed(unmapped=UnmappedTensor(tensor, file, engine_name, reason, True, code))
        said = (
            "drops it silently (no log line)"
            if template is None
            else f"drops it and logs '{template}'"
        )
        lost = None if extra else self._no_kv_method(tensor, context, loader)
        if lost is not None:
            return Routed(unmapped=dataclasses.replace(lost, file=file, engine_name=engine_name))
        layout = loader.layout
        module = layout.module_prefix(prefix) if layout is not None else prefix
        lprefix = layout.loader_prefix(prefix) if layout is not None else prefix
        if not self._params(context, loader)(f"{module}.{loader.radix[0]}.k_scale"):
            said += "; this layer has no KV-cache scale parameters (no KV method)"
        elif lprefix != module and layout is not None and layout.loader == "recorded":
            said += (
                f"; the loader looks it up under <{_generic(lprefix)}>, where SGLang has no "
                f"module (the layer is {_generic(module)}.{loader.radix[0]})"
            )
        reason = f"{where} {said}{keeps}"
        code = "ignored-kv-tensor" if extra else "unmapped-scale-name"
        return Routed(unmapped=UnmappedTensor(tensor, file, engine_name, reason, False, code))

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

    def engine_problems(
        self,
        layers: Sequence[ResolvedLayer],
        settings: EngineSettings,
        quant: QuantConfig,
    ) -> list[Problem]:
        out: list[Problem] = []
        if quant.ignored_scheme is not None:
            out.append(
                problem(
                    "kv-scheme-ignored",
                    f"SGLang logs '{quant.ignored_scheme}' and creates no KV-cache quant method: "
                    "the checkpoint's k/v scales are dropped and every layer runs at 1.0",
                )
            )
        zero = [
            layer.name
            for layer in layers
            if layer.rule is Rule.DEFAULT
            and any(
                src.values and src.values[0] == 0.0
                for kind, src in layer.sources.items()
                if kind in ("k_scale", "v_scale")
            )
        ]
        if zero:
            out.append(
                problem(
                    "zero-scale-replaced",
                    f"{len(zero)} layers have a zero k/v scale that SGLang treats as absent and "
                    f"silently replaces with 1.0 ({_names(zero)}); vLLM refuses such a layer",
                    layers=tuple(zero),
                )
            )
        per_head = [
            layer.name
            for layer in layers
            if layer.rule is Rule.ERROR and "Attempted to load weight" in (layer.error or "")
        ]
        if per_head:
            out.append(
                problem(
                    "per-head-refused",
                    f"SGLang loads one value per k/v scale and refuses per-head tensors in "
                    f"{len(per_head)} layers ({_names(per_head)})",
                    layers=tuple(per_head),
                )
            )
        overflow = [layer.name for layer in layers if rules.host_overflow(layer)]
        if overflow:
            out.append(
                problem(
                    "host-device-disagree",
                    f"on fnuz the doubled scale exceeds float32 in {len(overflow)} layers "
                    f"({_names(overflow)}): the device tensor holds inf while k_scale_float "
                    "stays finite, so backends disagree",
                    layers=tuple(overflow),
                )
            )
        if settings.engine_path is EnginePath.BASE and settings.refusal is None:
            # MHA pools only: a latent cache has its own paths (_mla_backend_problems), and an
            # FP4 / MXFP8 pool its own writer (_nvfp4_problems, scales-in-cache).
            scaled = [
                layer
                for layer in layers
                if layer.rule is not Rule.ERROR
                and layer.used_from_checkpoint
                and layer.cache is not None
                and not layer.cache.latent
                and layer.cache.scale_use in (ScaleUse.DIVISOR, ScaleUse.NONE)
            ]
            found = backends.backend_problem(
                settings.attention_backend, settings.kv_cache_dtype, settings.uses_kv_scales
            )
            if found is not None and scaled:
                code, message = found
                out.append(problem(code, message))
        mla = any(layer.cache is not None and layer.cache.latent for layer in layers)
        refused = backends.model_kind_refusal(settings.attention_backend, mla)
        if refused is not None and layers:
            out.append(
                problem(
                    "backend-unsupported-dtype",
                    f"--attention-backend {settings.attention_backend} cannot run this "
                    f"{'MLA' if mla else 'non-MLA'} model: SGLang refuses to start, '{refused}'",
                    layers=tuple(layer.name for layer in layers),
                )
            )
        out.extend(_kv_method_problems(layers, settings))
        out.extend(_mla_backend_problems(layers, settings))
        out.extend(_shared_cache_problems(layers))
        out.extend(_nvfp4_problems(layers, settings))
        if settings.kv_cache_dtype == "fp8_e4m3" and quant.engine_path is EnginePath.BASE:
            loaded = sum(1 for layer in layers if layer.used_from_checkpoint)
            if loaded:
                out.append(
                    problem(
                        "misleading-engine-log",
                        "SGLang logs 'Using FP8 KV cache but no scaling factors provided. "
                        "Defaulting to scaling factors of 1.0.' for --kv-cache-dtype fp8_e4m3 "
                        "without --quantization-param-path, although "
                        f"{loaded} layers load checkpoint scales: the message is wrong",
                    )
                )
        return out

    def unmapped_refusals(
        self, layer_names: Sequence[str], unmapped: Sequence[UnmappedTensor]
    ) -> dict[str, tuple[UnmappedTensor, str]]:
        """Tensors the architecture's ``load_weights`` raises on (``params_dict[name]``
        without a check, e.g. Gemma2 after its k_proj -> qkv_proj rename): SGLang stops
        loading the model. As in the parity oracle, the failure belongs to the attention
        layer with the tensor's ``layers.N`` prefix; a name outside every layer fails them
        all."""
        out: dict[str, tuple[UnmappedTensor, str]] = {}
        # The layers under each "<...>.layers.N" prefix, once (a layer is under every such
        # prefix of its name): each tensor then finds its owners in one lookup, not one scan of
        # every layer (thousands of refused names x thousands of layers took minutes).
        under: dict[str, list[str]] = {}
        for name in layer_names:
            for m in _LAYER_OCCURRENCE.finditer(name):
                under.setdefault(name[: m.end()], []).append(name)
        for item in unmapped:
            if not item.fails:
                continue
            why = f"{item.reason} ({item.tensor!r})"
            match = _LAYER_PREFIX.match(item.tensor)
            owners = under.get(match.group(1), []) if match else []
            for owner in owners or layer_names:
                out.setdefault(owner, (item, why))
            if not owners:
                break  # every layer has its culprit: the later tensors change nothing
        return out

    def cache_write(self, kv_cache_dtype: str, attention_backend: str | None) -> CacheWrite | None:
        """``MHATokenToKVPool.set_kv_buffer`` (``srt/mem_cache/memory_pool.py``): an in-place
        division in the model dtype by the model-dtype value of the scale, then torch's cast
        (``cache_write.py``; the pinned torch 2.14.1 saturates e4m3fn)."""

        # verify names the fnuz pool fp8_e4m3fnuz: on gfx94x both of SGLang's fp8 dtypes
        # allocate it (kv_cache_dtype.py:60-71).
        fnuz = kv_cache_dtype == "fp8_e4m3fnuz"
        pool_dtype = "fp8_e4m3" if fnuz else kv_cache_dtype

        def write(x: Any, scale: Any) -> Any:
            from kvscale.engine.sglang.cache_write import sglang_cache_write, sglang_pool_format

            pool = sglang_pool_format(pool_dtype, rocm_fnuz=fnuz)
            return sglang_cache_write(x, scale.reshape(-1)[:1], pool).bits

        stored = kv_cache_dtype if kv_cache_dtype in ("fp8_e5m2", "fp8_e4m3fnuz") else "fp8_e4m3"
        return CacheWrite(
            "SGLang 0.5.23 set_kv_buffer",
            stored,
            write,
            "model-dtype division by the model-dtype scale, torch 2.14.1's cast",
        )

    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        """The first of ``<prefix>.k_scale``, ``<prefix>.attn.k_scale``,
        ``<prefix>.k_proj.k_scale``, ``<prefix>.<radix>.k_scale`` (v likewise) that the
        architecture's loader loads into the layer's parameter, as if the quant config gave
        the layer a KV method: ``<prefix>.k_scale`` for Llama (branch 2 of the remap sends it
        to ``<prefix>.attn.k_scale``; vLLM's canonical ``<prefix>.attn.k_scale`` would be
        dropped there), the parameter's own name ``<prefix>.attn.k_scale`` for loaders that
        never remap (Qwen2), ``k_proj.k_scale`` for DeepSeek. None where no name loads: SGLang
        has no q or prob parameter, and an architecture without a KV method
        (``models.kv_method``) none at all."""
        if kind not in ("k_scale", "v_scale"):
            return None
        loader = _loader(context.shape.architectures)
        if models.kv_method(loader.arch)[0] is models.KvMethod.NO:
            return None
        if loader.loader is None and loader.layout is None:
            return f"{prefix}.{kind}"
        recorded = False
        # the prefix is an attention layer of the checkpoint, whatever showed it
        context = dataclasses.replace(
            context, attention_prefixes=context.attention_prefixes | {prefix}
        )
        for tail in _candidates(kind, loader.radix):
            routing = self._routing(f"{prefix}.{tail}", context, loader, assume_kv_method=True)
            if routing is None:
                continue
            recorded = True
            if self._loads_into(routing, loader, kind):
                return f"{prefix}.{tail}"
        return None if recorded else f"{prefix}.{kind}"


def _kv_method_problems(layers: Sequence[ResolvedLayer], settings: EngineSettings) -> list[Problem]:
    """Layers that load checkpoint scales in an architecture kvscale cannot tell gets a KV
    method (``architectures.KV_METHOD_UNKNOWN``): the values are what it holds if it does."""
    verdict, why = models.kv_method(settings.architecture)
    loaded = [layer.name for layer in layers if layer.used_from_checkpoint]
    if verdict is not models.KvMethod.UNKNOWN or not loaded:
        return []
    return [
        problem(
            "scales-not-loaded",
            f"kvscale cannot tell whether SGLang's {settings.architecture} builds its "
            f"RadixAttention with quant_config ({why}): the values shown for {len(loaded)} "
            f"layers ({_names(loaded)}) are what they hold if it does; if it does not, the "
            "layers have no KV-cache quant method, every scale name is dropped and the cache "
            "runs at 1.0",
            severity=Severity.WARNING,
            layers=tuple(loaded),
        )
    ]


def _scalar(value: object) -> float:
    return value if isinstance(value, float) else 1.0


def _mla_backend_problems(
    layers: Sequence[ResolvedLayer], settings: EngineSettings
) -> list[Problem]:
    """What each attention backend does with an MLA layer's checkpoint scales
    (``backends.mla_path``): for the backend named with --attention-backend, else every
    path where it matters."""
    latent = [
        layer
        for layer in layers
        if layer.cache is not None
        and layer.cache.latent
        and layer.rule is not Rule.ERROR
        and layer.used_from_checkpoint
        and layer.cache.scale_use is not ScaleUse.IN_CACHE
    ]
    if not latent or settings.refusal is not None:
        return []
    dtype = latent[0].cache.kv_cache_dtype if latent[0].cache else settings.kv_cache_dtype
    chosen = settings.attention_backend
    names_ = [chosen] if chosen is not None else list(backends.ATTENTION_BACKENDS)
    found: dict[str, tuple[backends.MlaPath, list[str]]] = {}
    for backend in names_:
        for layer in latent:
            path = backends.mla_path(backend, dtype, _scalar(layer.k_scale), _scalar(layer.v_scale))
            if path is None or path.severity is None:
                continue
            found.setdefault(backend, (path, []))[1].append(layer.name)
    if chosen is not None:
        return [
            problem(
                path.code,
                f"{len(members)} MLA layers ({_names(members)}): {path.text}",
                severity=path.severity,
                layers=tuple(members),
            )
            for path, members in found.values()
        ]
    if not found:
        return []
    example = latent[0]
    parts = [
        path.text + (f" ({len(members)} layers)" if len(members) != len(latent) else "")
        for path, members in found.values()
    ]
    return [
        problem(
            "scales-ignored-by-backend",
            f"{len(latent)} MLA layers load checkpoint scales (e.g. {example.name}: k "
            f"{_scalar(example.k_scale)!r}, v {_scalar(example.v_scale)!r}) that SGLang's MLA "
            "backends apply differently; pass --attention-backend for the one you serve with: "
            + "; ".join(parts),
            layers=tuple(layer.name for layer in latent),
        )
    ]


def _shared_cache_problems(layers: Sequence[ResolvedLayer]) -> list[Problem]:
    """KV sharing (``LayerCache.shared_from``): a sharing layer's RadixAttention reads its
    source's cache with its own scales (its own KV method loads its own names), while the
    cache was written with the source's (gemma4_causal.py:427-440: layer_id = the source's,
    save_kv_cache=False at :540). An NVFP4 pool has one global scale per cache slot, which
    load_scales_from_model sets from the last decoder layer holding that layer_id
    (fp4_kv_cache_quant_method.py:532-562): the source's own scale is replaced."""
    by_name = {layer.name: layer for layer in layers}
    fp8: list[str] = []
    fp4: list[str] = []
    details: list[str] = []
    for layer in layers:
        cache = layer.cache
        source = by_name.get(cache.shared_from) if cache and cache.shared_from else None
        if cache is None or source is None or Rule.ERROR in (layer.rule, source.rule):
            continue
        theirs = (_scalar(source.k_scale), _scalar(source.v_scale))
        ours = (_scalar(layer.k_scale), _scalar(layer.v_scale))
        if ours == theirs:
            continue
        if cache.scale_use is ScaleUse.DIVISOR:
            fp8.append(layer.name)
            details.append(
                f"{layer.name} reads {source.name}'s cache, written with k {theirs[0]!r} / v "
                f"{theirs[1]!r}, with its own k {ours[0]!r} / v {ours[1]!r}"
            )
        elif cache.scale_use is ScaleUse.GLOBAL_SCALE:
            fp4.append(source.name)
    out: list[Problem] = []
    if fp8:
        out.append(
            problem(
                "shared-cache-scale-mismatch",
                f"{len(fp8)} KV-sharing layers dequantize another layer's cache with their own "
                f"scales: {'; '.join(details[:MAX_NAMED])}"
                + (f" and {len(details) - MAX_NAMED} more" if len(details) > MAX_NAMED else "")
                + ": attention is off by the ratio",
                layers=tuple(fp8),
            )
        )
    if fp4:
        out.append(
            problem(
                "shared-cache-scale-mismatch",
                f"the NVFP4 cache slots of {_names(fp4)} get the global scale of the last layer "
                "that shares them (load_scales_from_model goes by layer_id), not their own "
                "calibrated one",
                severity=Severity.WARNING,
                layers=tuple(fp4),
            )
        )
    return out


def _nvfp4_problems(layers: Sequence[ResolvedLayer], settings: EngineSettings) -> list[Problem]:
    """NVFP4 on MHA layers: the layers load_scales_from_model never finds (the global scale
    SGLang derives per GPU is ``SglangEngine.nvfp4_global_scales``, which inspect's NVFP4
    readings report: ``kvscale.nvfp4_conventions``)."""
    nvfp4 = [
        layer
        for layer in layers
        if layer.cache is not None
        and layer.cache.format.name == "nvfp4"
        and layer.rule is not Rule.ERROR
    ]
    if not nvfp4 or settings.refusal is not None:
        return []
    out: list[Problem] = []
    missed = [
        layer.name
        for layer in nvfp4
        if layer.used_from_checkpoint and not models.NVFP4_SEARCHED.search(layer.name)
    ]
    if missed:
        out.append(
            problem(
                "scales-not-loaded",
                "NVFP4KVCacheMethod.load_scales_from_model looks for each decoder layer's "
                "RadixAttention at self_attn.attn, self_attn.attn_mqa, attn or attention.attn "
                "(fp4_kv_cache_quant_method.py:498-507); "
                f"{len(missed)} layers ({_names(missed)}) sit elsewhere, so their NVFP4 global "
                "scales stay 1.0 although the layers hold checkpoint k/v scales",
                layers=tuple(missed),
            )
        )
    return out


def _with_index(name: str, index: int) -> str:
    """``name`` with its ``.layers.N.`` set to ``index``."""
    return re.sub(r"(?<=\.layers\.)\d+(?=\.)", str(index), name, count=1)


def _generic(text: str) -> str:
    """A message or name with its layer index written ``N`` (one problem per cause)."""
    return re.sub(r"(?<=layers\.)\d+(?=\.)", "N", text)


SGLANG = SglangEngine()

__all__ = ["SGLANG", "SglangEngine"]
