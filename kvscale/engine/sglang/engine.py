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

from kvscale.cache_formats import CacheFormat
from kvscale.conventions import (
    attention_prefix,
    convention_of,
    is_kv_scheme_extra,
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
from kvscale.problems import Problem, problem

_TARGET = re.compile(r"^(?P<layer>.+\.attn)\.(?P<kind>[kv]_scale)$")
_RECORDED_PREFIX = re.compile(r"^model\.layers\.\d+\.self_attn$")
"""Attention prefixes the recorded outcomes apply to: they were recorded under
``model.layers.0.self_attn`` (a loader may treat other prefixes, e.g. a multimodal model's
``model.language_model.``, otherwise)."""
_LAYER_PREFIX = re.compile(r"^(.*\.layers\.\d+)\.")
_TAILS = sorted(architectures.PROBE_TAILS, key=len, reverse=True)
LLAMA = "LlamaForCausalLM"
MAX_NAMED = 3


def _names(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")


def _param_check(context: NameContext) -> Callable[[str], bool]:
    """Whether ``<prefix>.attn.k_scale`` (or v) is a parameter of the model: an attention layer
    (from the weights, else config.json's layers) whose quant config gives it a KV method."""
    if context.quant.engine_path is EnginePath.NONE:
        return lambda name: False
    prefixes = set(context.attention_prefixes)
    shape = context.shape
    if not prefixes and shape.num_hidden_layers:
        prefixes = {
            f"model.layers.{i}.self_attn"
            for i in range(shape.num_hidden_layers)
            if is_kv_cache_layer(shape, i)
        }

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


def _looked_up(got: names.Routing, tensor: str) -> str:
    """The name SGLang looked up for a dropped / refused tensor (from its message)."""
    for pattern in (r"KeyError: '([^']+)'", r"Parameter '?(\S+?)'? not found", r"^(\S+) not found"):
        m = re.search(pattern, got.message or "")
        if m:
            return m.group(1)
    return tensor


def _kept_name(cls: names.LoaderClass, tail: str, loader: _Loader) -> str:
    """``; the name this loader keeps is <prefix>.<candidate>``: the first name of the same
    kind (k or v) that the loader loads into the layer's parameter (``_candidates`` order)."""
    kind = _KIND_OF_TAIL.get(tail)
    if kind is None:
        return ""
    for candidate in _candidates(kind, loader.radix):
        got = cls.outcome(candidate, True)
        if got is not None and got[0] == "load" and got[1] and got[1].endswith("." + kind):
            if candidate == tail:
                return ""
            return f"; the name this loader keeps is <prefix>.{candidate}"
    return "; this loader keeps no name of this kind"


def _candidates(kind: str, radix: tuple[str, ...]) -> list[str]:
    """Names a normalized checkpoint could use for ``kind``, in kvscale's preference."""
    out = [kind, f"attn.{kind}", f"{kind[0]}_proj.{kind}"]
    out += [f"{r}.{kind}" for r in radix if r != "attn"]
    return out


_KIND_OF_TAIL = {
    "k_scale": "k_scale",
    "v_scale": "v_scale",
    "kv_scale": "k_scale",
    "k_proj.k_scale": "k_scale",
    "v_proj.v_scale": "v_scale",
    "k_proj.output_scale": "k_scale",
    "v_proj.output_scale": "v_scale",
    "attn.k_scale": "k_scale",
    "attn.v_scale": "v_scale",
    "attn._k_scale": "k_scale",
    "attn._v_scale": "v_scale",
    "attn_mqa.k_scale": "k_scale",
    "attn_mqa.v_scale": "v_scale",
    "qkv_proj.k_scale": "k_scale",
    "qkv_proj.v_scale": "v_scale",
    "k_cache.scale": "k_scale",
    "v_cache.scale": "v_scale",
}


_SM100_FAMILY = frozenset(["sm100", "sm103"])
"""``is_sm100()`` in SGLang 0.5.23 (srt/utils/common.py): device capability major 10."""


@dataclass(frozen=True)
class _Loader:
    """The ``load_weights`` SGLang runs for this checkpoint."""

    arch: str | None
    """The registered architecture SGLang resolves (None: none is registered)."""
    loader: names.LoaderClass | None
    """Its recorded loader class; None: Llama's rules (``names.remap``) apply."""
    radix: tuple[str, ...] = ("attn",)
    note: str = ""
    """Why Llama's rules stand in (an architecture kvscale has no record for), or ""."""
    site: str = ""
    """file:line of its load_weights under srt/models/."""


@functools.cache
def _loader(architectures_: tuple[str, ...]) -> _Loader:
    """``ModelRegistry.resolve_model_cls`` (srt/models/registry.py): the first architecture of
    config.json that is registered (else SGLang falls back to its Transformers backend)."""
    for arch in architectures_:
        found = architectures.ARCHITECTURES.get(arch)
        if found is not None:
            cls = architectures.LOADER_CLASSES[found.loader]
            if found.loader == LLAMA:
                return _Loader(arch, None, found.radix, site=found.site)
            return _Loader(arch, cls, found.radix, site=found.site)
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


def _split(tensor: str) -> tuple[str, str] | None:
    """``(attention prefix, tail)`` for a tensor named ``<...layers.N.self_attn>.<tail>``
    with a probed tail."""
    for tail in _TAILS:
        if tensor.endswith("." + tail):
            prefix = tensor[: -len(tail) - 1]
            if _RECORDED_PREFIX.match(prefix):
                return prefix, tail
    return None


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
        )
        return settings, how

    def nvfp4_global_scales(
        self, value: float, gpu_arch: str | None
    ) -> tuple[EngineGlobalScale, ...]:
        """``NVFP4KVCacheMethod.load_scales_from_model``
        (srt/layers/quantization/fp4_kv_cache_quant_method.py): ``float(k_scale) * 6`` when
        ``is_sm100()`` (capability major 10: SM100, SM103) and the value is not 1.0; unchanged
        elsewhere (SM90, SM110, SM120, SM121: executed in the parity oracle's facts)."""
        scaled = EngineGlobalScale("sm100/sm103", value * 6.0, "x6")
        if value == 1.0:
            return (EngineGlobalScale(gpu_arch or "all", value, "unchanged"),)
        if gpu_arch in _SM100_FAMILY:
            return (dataclasses.replace(scaled, gpus=gpu_arch),)
        if gpu_arch is not None:
            return (EngineGlobalScale(gpu_arch, value, "unchanged"),)
        return (scaled, EngineGlobalScale("other GPUs", value, "unchanged"))

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
        latent = shape.latent_width is not None
        return LayerCache(
            settings.kv_cache_dtype,
            kv_dtypes.cache_format(settings.kv_cache_dtype, settings.platform, latent=latent),
            latent,
        )

    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        loader = _loader(context.shape.architectures)
        if loader.loader is not None and not context.as_intended:
            recorded = self._route_recorded(tensor, file, context, loader, loader.loader)
            if recorded is not None:
                return recorded
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
        remapped = names.remap(tensor, _param_check(context))
        if remapped.dropped is not None:
            reason = _noted(_drop_reason(tensor, remapped, context), loader)
            return Routed(unmapped=UnmappedTensor(tensor, file, remapped.name, reason, False))
        match = _TARGET.match(remapped.name)
        assert match is not None  # is_param accepted it
        return Routed(
            mapped=MappedName(
                tensor, remapped.name, match["layer"], match["kind"], convention_of(tensor)
            )
        )

    def _route_recorded(
        self,
        tensor: str,
        file: str,
        context: NameContext,
        loader: _Loader,
        cls: names.LoaderClass,
    ) -> Routed | None:
        """What the architecture's own ``load_weights`` does with the tensor, as recorded
        (``architectures.py``); None: not a recorded name (Llama's rules stand in)."""
        extra = is_kv_scheme_extra(tensor)
        if not (extra or looks_like_kv_scale(tensor)):
            return Routed()
        split = _split(tensor)
        if split is None:
            return None
        prefix, tail = split
        has_params = _param_check(context)(f"{prefix}.attn.k_scale")
        got = names.route_recorded(cls, architectures.MESSAGES, tail, prefix, tensor, has_params)
        if got is None:  # pragma: no cover - _split only returns recorded tails
            return None
        where = f"{loader.arch}'s load_weights (SGLang {self.version}, srt/models/{loader.site})"
        if got.kind == "load":
            assert got.target is not None
            kind = got.target.rsplit(".", 1)[-1]
            if kind not in ("k_scale", "v_scale"):  # pragma: no cover - no such record
                return None
            return Routed(
                mapped=MappedName(tensor, got.target, f"{prefix}.attn", kind, convention_of(tensor))
            )
        engine_name = _looked_up(got, tensor)
        keeps = _kept_name(cls, tail, loader)
        if got.kind == "raise":
            reason = (
                f"{where} raises {got.message_template} while loading it, so the model does "
                f"not load{keeps}"
            )
            renamed = ".qkv_proj." in (got.message or "") and ".qkv_proj." not in tensor
            code = "dropped-by-architecture" if renamed else "unmapped-scale-name"
            if extra:
                code = "unloadable-kv-tensor"
            return Routed(unmapped=UnmappedTensor(tensor, file, engine_name, reason, True, code))
        if got.message_template is None:
            said = "drops it silently (no log line)"
        else:
            said = f"drops it and logs '{got.message_template}'"
        if not has_params:
            said += "; this layer has no KV-cache scale parameters (no KV method)"
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
            scaled = [
                layer
                for layer in layers
                if layer.rule is not Rule.ERROR and layer.used_from_checkpoint
            ]
            found = backends.backend_problem(
                settings.attention_backend, settings.kv_cache_dtype, settings.uses_kv_scales
            )
            if found is not None and scaled:
                code, message = found
                out.append(problem(code, message))
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
        for item in unmapped:
            if not item.fails:
                continue
            why = f"{item.reason} ({item.tensor!r})"
            match = _LAYER_PREFIX.match(item.tensor)
            owners = [n for n in layer_names if match and n.startswith(match.group(1) + ".")]
            for owner in owners or layer_names:
                out.setdefault(owner, (item, why))
        return out

    def cache_write(self, kv_cache_dtype: str, attention_backend: str | None) -> CacheWrite | None:
        """``MHATokenToKVPool.set_kv_buffer`` (``srt/mem_cache/memory_pool.py``): an in-place
        division in the model dtype by the model-dtype value of the scale, then torch's cast
        (``cache_write.py``; the pinned torch 2.14.1 saturates e4m3fn)."""

        def write(x: Any, scale: Any) -> Any:
            from kvscale.engine.sglang.cache_write import sglang_cache_write, sglang_pool_format

            pool = sglang_pool_format(kv_cache_dtype)
            return sglang_cache_write(x, scale.reshape(-1)[:1], pool).bits

        stored = "fp8_e5m2" if kv_cache_dtype == "fp8_e5m2" else "fp8_e4m3"
        return CacheWrite(
            "SGLang 0.5.23 set_kv_buffer",
            stored,
            write,
            "model-dtype division by the model-dtype scale, torch 2.14.1's cast",
        )

    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        """The first of ``<prefix>.k_scale``, ``<prefix>.attn.k_scale``,
        ``<prefix>.k_proj.k_scale``, ``<prefix>.<radix>.k_scale`` (v likewise) that the
        architecture's loader loads into the layer's parameter: ``<prefix>.k_scale`` for
        Llama (branch 2 of the remap sends it to ``<prefix>.attn.k_scale``; vLLM's canonical
        ``<prefix>.attn.k_scale`` would be dropped there), the parameter's own name
        ``<prefix>.attn.k_scale`` for loaders that never remap (Qwen2), ``k_proj.k_scale``
        for DeepSeek. SGLang has no q or prob parameter."""
        if kind not in ("k_scale", "v_scale"):
            return None
        loader = _loader(context.shape.architectures)
        if loader.loader is None or not _RECORDED_PREFIX.match(prefix):
            return f"{prefix}.{kind}"
        for tail in _candidates(kind, loader.radix):
            got = loader.loader.outcome(tail, True)
            if got is not None and got[0] == "load" and (got[1] or "").endswith("." + kind):
                return f"{prefix}.{tail}"
        return None


SGLANG = SglangEngine()

__all__ = ["SGLANG", "SglangEngine"]
