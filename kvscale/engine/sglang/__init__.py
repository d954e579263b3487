"""SGLang 0.5.23: how it reads KV-cache scales from a checkpoint.

* ``quant_config``: quant method detection, which configs create a KV method, ``auto``
  KV-cache dtype, model dtype, start-up refusals;
* ``names``: ``maybe_remap_kv_scale_name`` and the Llama loader's lookup;
* ``rules``: ``BaseKVCacheMethod`` after loading (float32 sentinel, no model-dtype rounding,
  zero is "absent", fnuz doubling for every method);
* ``backends``: which copy each attention backend reads.

Checked bit for bit against SGLang's own code by ``tests/parity/sglang_oracle.py`` (Llama's
loader; other architectures' loaders call the same remap in their own loops, not executed).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kvscale.conventions import (
    attention_prefix,
    convention_of,
    is_kv_scheme_extra,
    looks_like_kv_scale,
)
from kvscale.engine.base import (
    Engine,
    EnginePath,
    EngineSettings,
    MappedName,
    NameContext,
    QuantConfig,
    ResolvedLayer,
    Routed,
    Rule,
    ScaleSource,
    UnmappedTensor,
)
from kvscale.engine.config import ModelShape, RawQuantConfig
from kvscale.engine.sglang import backends, names, quant_config, rules
from kvscale.layers import is_kv_cache_layer
from kvscale.options import EngineOptions
from kvscale.problems import Problem, problem

_TARGET = re.compile(r"^(?P<layer>.+\.attn)\.(?P<kind>[kv]_scale)$")
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


class SglangEngine(Engine):
    name = "sglang"
    version = "0.5.23"
    kv_cache_dtypes = quant_config.KV_CACHE_DTYPES
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
            uses_kv_scales=kv_dtype in quant_config.FP8_KV_CACHE_DTYPES,
            scale_dtype="float32",
            attention_backend=options.attention_backend,
        )
        return settings, how

    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        if is_kv_scheme_extra(tensor):
            # models/llama.py load_weights: after the stacked rename to qkv_proj the name is not
            # in params_dict and the loop `continue`s: the bias is dropped without a word.
            engine_name = re.sub(r"\.[kv]_proj\.", ".qkv_proj.", tensor)
            reason = "SGLang 0.5.23 skips names no parameter takes (an affine KV-cache bias)"
            return Routed(
                unmapped=UnmappedTensor(
                    tensor, file, engine_name, reason, False, "ignored-kv-tensor"
                )
            )
        if not looks_like_kv_scale(tensor):
            return Routed()
        remapped = names.remap(tensor, _param_check(context))
        if remapped.dropped is not None:
            return Routed(
                unmapped=UnmappedTensor(
                    tensor, file, remapped.name, _drop_reason(tensor, remapped, context), False
                )
            )
        match = _TARGET.match(remapped.name)
        assert match is not None  # is_param accepted it
        return Routed(
            mapped=MappedName(
                tensor, remapped.name, match["layer"], match["kind"], convention_of(tensor)
            )
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

    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        """``<prefix>.k_scale`` / ``.v_scale`` (branch 2 of the remap sends them to
        ``<prefix>.attn.k_scale``); SGLang has no q or prob parameter, and vLLM's canonical
        ``<prefix>.attn.k_scale`` would be dropped."""
        if kind not in ("k_scale", "v_scale"):
            return None
        return f"{prefix}.{kind}"


SGLANG = SglangEngine()

__all__ = ["SGLANG", "SglangEngine"]
