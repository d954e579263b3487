"""TensorRT-LLM's PyTorch backend behind the ``Engine`` interface (``kvscale.engine.base``); the
package docstring says what was read and where."""

from __future__ import annotations

import re
from collections.abc import Sequence

from kvscale.cache_formats import FP8_E4M3, MODEL_DTYPE, NVFP4, CacheFormat
from kvscale.conventions import convention_of, looks_like_kv_scale
from kvscale.engine.base import (
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
from kvscale.engine.trtllm.kv_cache_dtypes import KV_CACHE_DTYPES
from kvscale.errors import UsageError
from kvscale.model_config import ModelShape, RawQuantConfig, dtype_alias
from kvscale.problems import Problem, problem

_MODELOPT = re.compile(r"^(?P<prefix>.+)\.(?P<proj>[kv])_proj\.(?P=proj)_scale$")


class TrtllmEngine(Engine):
    name = EngineName.TRTLLM.value
    version = ENGINES[EngineName.TRTLLM].release
    kv_cache_dtypes = KV_CACHE_DTYPES
    commands = frozenset(["inspect", "diff"])

    def quant_config(self, raw: RawQuantConfig | None) -> QuantConfig:
        if raw is None:
            return QuantConfig()
        method = raw.config.get("quant_method")
        return QuantConfig(
            quant_method=method.lower() if isinstance(method, str) else None,
            raw_method=method if isinstance(method, str) else None,
            source=raw.source,
            raw=raw.config,
            engine_path=EnginePath.BASE,
        )

    def settings(
        self,
        quant: QuantConfig,
        shape: ModelShape,
        options: EngineOptions,
        weight_dtypes: frozenset[str],
    ) -> tuple[EngineSettings, str]:
        kv = options.requested_kv_cache_dtype
        if kv not in self.kv_cache_dtypes:
            raise UsageError(
                f"unknown KV-cache dtype {kv!r} for trtllm",
                hint="one of: " + ", ".join(KV_CACHE_DTYPES),
            )
        model = options.model_dtype or dtype_alias(shape.config_dtype or "") or "bfloat16"
        how = "--model-dtype" if options.model_dtype else "config.json torch_dtype"
        return (
            EngineSettings(
                engine_path=EnginePath.BASE,
                kv_cache_dtype=kv,
                platform=options.platform_name,
                model_dtype=model,
                num_heads=shape.num_attention_heads,
                num_kv_heads=shape.kv_heads,
                uses_kv_scales=kv == "fp8",
            ),
            how,
        )

    def cache_format(
        self, kv_cache_dtype: str, platform: str, *, latent: bool = False
    ) -> CacheFormat:
        return {"auto": MODEL_DTYPE, "fp8": FP8_E4M3, "nvfp4": NVFP4}[kv_cache_dtype]

    def layer_cache(self, name: str, settings: EngineSettings, shape: ModelShape) -> LayerCache:
        latent = shape.latent_width is not None
        fmt = self.cache_format(settings.kv_cache_dtype, settings.platform, latent=latent)
        return LayerCache(settings.kv_cache_dtype, fmt, latent)

    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        if not looks_like_kv_scale(tensor):
            return Routed()
        match = _MODELOPT.match(tensor)
        if match is None:
            return Routed(
                unmapped=UnmappedTensor(
                    tensor,
                    file,
                    tensor,
                    "TensorRT-LLM's PyTorch backend reads only ModelOpt's k_proj.k_scale / "
                    "v_proj.v_scale",
                )
            )
        layer = f"{match['prefix']}.attn"
        kind = f"{match['proj']}_scale"
        return Routed(
            mapped=MappedName(tensor, f"{layer}.{kind}", layer, kind, convention_of(tensor))
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
        winners = {src.kind: src for src in sorted(sources, key=lambda s: s.load_order)}
        error = None
        if any(src.numel != 1 for src in winners.values()):
            error = "RuntimeError: shape '[]' is invalid (k_scale.reshape([]) of a per-head tensor)"
        elif "k_scale" in winners and "v_scale" not in winners:
            error = "AssertionError: k_scale and v_scale must be loaded together"
        if error is not None:
            return ResolvedLayer(
                name, Rule.ERROR, None, None, None, None, error=error, sources=winners,
                checkpoint_prefix=checkpoint_prefix,
            )  # fmt: skip
        # The FP8 cache is written and read at 1.0 (the scales reach no FP8 attention path).
        rule = Rule.DEFAULT if settings.uses_kv_scales else Rule.UNQUANTIZED
        return ResolvedLayer(
            name, rule, 1.0, 1.0, 1.0, 1.0, sources=winners, checkpoint_prefix=checkpoint_prefix
        )

    def engine_problems(
        self, layers: Sequence[ResolvedLayer], settings: EngineSettings, quant: QuantConfig
    ) -> list[Problem]:
        scaled = [layer.name for layer in layers if layer.sources and layer.rule is not Rule.ERROR]
        if not scaled or settings.kv_cache_dtype != "fp8":
            return []
        return [
            problem(
                "scales-never-used",
                f"{len(scaled)} layers have k/v scales, but TensorRT-LLM's PyTorch backend "
                "forwards KV scales only for an FP4 KV cache (_torch/modules/attention.py): "
                "the FP8 cache is written and read at 1.0",
                layers=tuple(scaled),
            )
        ]

    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        return None


TRTLLM = TrtllmEngine()
