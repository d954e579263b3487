"""``verify --data``: run the model on real text with the cache quantized at the target's scales,
at 1.0 and unquantized, and keep its own K/V for the per-layer statistics.

MLA layers (``AttentionLayer.latent``) cache one row ``[kv_c | k_pe]`` per token; their variants
are vLLM 0.33.0's latent cache (``concat_and_cache_mla`` with the layer's k scale, ``skip_scale``
at exactly 1.0, read back as ``fp8 * k_scale``: ``kvscale.kernel.roundtrip.mla_latent_roundtrip``;
the v scale is never read), and the saved activations hold the row as ``<layer>.kv``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.core.verify.stats import BLOCK_SIZE
from kvscale.core.verify.target import LayerScales, Target
from kvscale.engine.base import CacheWrite
from kvscale.engine.options import EngineOptions
from kvscale.errors import (
    RefusedError,
    UsageError,
)
from kvscale.kernel.formats import FP8Format, resolve_kv_cache_dtype
from kvscale.nvfp4_conventions import GlobalScaleConvention
from kvscale.progress import ProgressFn

if TYPE_CHECKING:
    from kvscale.model.evaluate import CacheVariant, LayerCodec
    from kvscale.model.load import LatentRow, LoadedModel


@dataclass(frozen=True)
class ModelOptions:
    """``verify --model/--data``: run the model on real text, with the cache in FP8."""

    data: Path
    model: Path | None = None
    """The runnable model whose K/V are captured (None: the target itself)."""
    samples: int = 32
    seq_len: int = 1024
    dtype: str = "auto"
    max_ppl_increase: float | None = None
    """Fail when ppl_fp8 / ppl_unquantized - 1 exceeds this (relative)."""
    max_kl: float | None = None
    """Fail when the mean KL(unquantized || fp8) of the next-token distributions exceeds this."""
    activations_out: Path | None = None
    device: str | None = None
    """Where the model runs: ``cpu``, ``cuda``, ``auto`` (accelerate); None: ``cuda`` with
    ``--gpu``, else ``cpu``. The cache write's device follows ``--gpu`` alone."""

    @classmethod
    def for_data(
        cls,
        data: Path | str | None = None,
        *,
        model: Path | str | None = None,
        max_ppl_increase: float | None = None,
        max_kl: float | None = None,
        activations_out: Path | str | None = None,
        device: str | None = None,
        **rest: Any,
    ) -> ModelOptions | None:
        """The options of a ``--data`` run, or None without data; the flags that only mean
        something with data are then a usage error (command line and Python API alike)."""
        if data is None:
            given = [
                flag
                for flag, value in (
                    ("--model", model),
                    ("--max-ppl-increase", max_ppl_increase),
                    ("--max-kl", max_kl),
                    ("--activations-out", activations_out),
                    ("--model-device", device),
                )
                if value is not None
            ]
            if given:
                raise UsageError(f"{given[0]} needs --data (the text to run the model on)")
            return None
        return cls(
            data=Path(data),
            model=Path(model) if model is not None else None,
            max_ppl_increase=max_ppl_increase,
            max_kl=max_kl,
            activations_out=Path(activations_out) if activations_out is not None else None,
            device=device,
            **rest,
        )


@dataclass(frozen=True)
class VariantEval:
    """One cache configuration's run (``model_eval.variants`` in the JSON)."""

    name: str
    description: str
    ppl: float
    kl_mean: float
    kl_max: float

    def to_json(self) -> dict[str, object]:
        from kvscale.floats import encode_json_value

        return {
            "name": self.name,
            "description": self.description,
            "ppl": encode_json_value(self.ppl),
            "kl_mean": encode_json_value(self.kl_mean),
            "kl_max": encode_json_value(self.kl_max),
        }


@dataclass(frozen=True)
class ModelEval:
    """What TARGET's scales do to the model end to end (``model_eval`` in the JSON).

    ``ppl_fp8`` / ``kl_mean`` / ``kl_max`` are the target's own configuration: every layer in
    its cache's format (FP8, NVFP4, per-token-head, unquantized where skipped) at the scales the
    engine holds; ``*_unit_scales`` the same formats with every checkpoint scale at 1.0;
    ``variants`` lists every run, these two included (and, for NVFP4, calibrated scales in each
    convention)."""

    model: str
    samples: int
    tokens: int
    ppl_unquantized: float
    ppl_fp8: float
    ppl_unit_scales: float
    kl_mean: float
    kl_max: float
    kl_mean_unit_scales: float
    kl_max_unit_scales: float
    dtype: str
    device: str
    activations_out: str | None
    max_ppl_increase: float | None = None
    max_kl: float | None = None
    variants: tuple[VariantEval, ...] = ()

    @property
    def ppl_increase(self) -> float:
        """Relative: ppl_fp8 / ppl_unquantized - 1."""
        return self.ppl_fp8 / self.ppl_unquantized - 1.0

    @property
    def failures(self) -> tuple[str, ...]:
        out = []
        if self.max_ppl_increase is not None and not self.ppl_increase <= self.max_ppl_increase:
            out.append(
                f"perplexity with the FP8 cache is {self.ppl_fp8:.4f} vs "
                f"{self.ppl_unquantized:.4f} unquantized ({self.ppl_increase:+.2%}), more than "
                "--max-ppl-increase "
                f"{self.max_ppl_increase:g}"
            )
        if self.max_kl is not None and not self.kl_mean <= self.max_kl:
            out.append(
                f"mean KL of the next-token distributions is {self.kl_mean:.4g}, more than "
                f"--max-kl {self.max_kl:g}"
            )
        return tuple(out)


def kernel_quantize(kernel: Callable[..., None], kv_name: str) -> Callable[..., torch.Tensor]:
    """``evaluate_model``'s quantize step through the cache-write kernel: the tokens in order
    into a scratch cache (K and V caches both get ``x``), the K cache read back as bits."""

    def quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        tokens, heads, head_size = x.shape
        blocks = max(1, -(-tokens // BLOCK_SIZE))
        cache = torch.empty(
            (blocks, 2, BLOCK_SIZE, heads, head_size), dtype=torch.uint8, device=x.device
        )
        slots = torch.arange(tokens, dtype=torch.int64, device=x.device)
        s = scale.reshape(-1).to(device=x.device, dtype=torch.float32).contiguous()
        kernel(x.contiguous(), x.contiguous(), cache[:, 0], cache[:, 1], slots, kv_name, s, s)
        return cache[:, 0].reshape(blocks * BLOCK_SIZE, heads, head_size)[:tokens]

    return quantize


def run_model(
    path: str | os.PathLike[str],
    target: Target,
    model_options: ModelOptions,
    gpu: bool,
    fmt: FP8Format,
    kv_name: str,
    kernel: Callable[..., None] | None,
    activations_file: Path,
    progress: ProgressFn | None,
    engine_write: CacheWrite | None = None,
    engine_options: EngineOptions | None = None,
) -> ModelEval:
    """Run the model on the data: unquantized, the target's configuration, its scales at 1.0
    (and for NVFP4 layers calibrated scales in each convention, after one capture pass); save
    the unquantized K/V to ``activations_file`` for the per-layer statistics."""
    from kvscale.kernel.roundtrip import QuantizeFn
    from kvscale.model.cache_codecs import layer_codec
    from kvscale.model.data import load_calibration_data
    from kvscale.model.evaluate import CacheVariant, evaluate_model, require_predicted_tokens
    from kvscale.model.load import load_model

    model_path = model_options.model
    if model_path is None:
        if target.kind != "checkpoint" or not Path(path).is_dir():
            raise UsageError(
                f"{path} is not a runnable model: pass --model DIR (the model whose K/V to "
                "capture; the scales stay the target's)"
            )
        model_path = Path(path)
    if target.refused:
        name, why = target.refused[0]
        raise RefusedError(
            f"the engine refuses {len(target.refused)} layer(s) of {target.path} ({name}: {why}); "
            "the model cannot run with its scales"
        )
    if model_options.activations_out is not None:
        from kvscale.io.staging import check_not_input

        # Never onto the model, the target or the data (nor inside the model's directory).
        check_not_input(
            Path(model_options.activations_out),
            [model_path, Path(path), Path(model_options.data)],
            "--activations-out",
        )
    device = model_options.device or ("cuda" if gpu else "cpu")
    loaded = load_model(model_path, dtype=model_options.dtype, device=device)
    data = load_calibration_data(
        model_options.data,
        seq_len=model_options.seq_len,
        max_samples=model_options.samples,
        encode=loaded.encode if loaded.has_tokenizer else None,
        vocab_size=loaded.vocab_size,
    )
    require_predicted_tokens(data.samples)
    quantize: QuantizeFn | None = None
    if engine_write is not None:
        # The FP8 cache the model reads is the one the serving engine writes.
        quantize = engine_write.write
        fmt = resolve_kv_cache_dtype(engine_write.stored_kv_cache_dtype).fp8 or fmt
    elif kernel is not None:
        quantize = kernel_quantize(kernel, kv_name)
    engine_options = engine_options or EngineOptions()
    engine = engine_options.rules
    latent = {layer.engine_name: layer.latent for layer in loaded.layers if layer.latent}
    if latent:
        _check_latent_target(target, latent)
    mla_write = None
    if latent and kernel is not None:
        from kvscale.kernel.triton_mla import concat_and_cache_mla

        mla_write = concat_and_cache_mla
    names = {layer.engine_name for layer in loaded.layers}
    missing = sorted(names - {layer.name for layer in target.layers})
    if missing:
        raise UsageError(
            f"no scales for {len(missing)} of the model's attention layers, first {missing[0]}"
        )

    def cache_of(layer: LayerScales) -> tuple[CacheFormat, str]:
        if layer.cache is not None:
            return layer.cache.format, layer.cache.kv_cache_dtype
        # A scales file names one dtype for every layer.
        return engine.cache_format(target.kv_cache_dtype, target.platform), kv_name

    def codecs(values: Callable[[LayerScales], tuple[Any, Any]]) -> dict[str, LayerCodec]:
        out: dict[str, LayerCodec] = {}
        for layer in target.layers:
            fmt, dtype = cache_of(layer)
            k, v = values(layer)
            codec = layer_codec(
                fmt,
                dtype,
                k,
                v,
                engine=engine,
                gpu_arch=engine_options.gpu_arch,
                quantize=quantize,
                latent=latent.get(layer.name),
                mla_write=mla_write,
            )
            if codec is not None:
                out[layer.name] = codec
        return out

    variants = [
        CacheVariant("fp8", codecs(lambda layer: (layer.k_device, layer.v_device))),
        CacheVariant("unit_scales", codecs(lambda layer: (1.0, 1.0))),
    ]
    descriptions = {
        "fp8": "the target's configuration at the scales the engine holds",
        "unit_scales": "the same formats with every checkpoint scale at 1.0",
    }
    nvfp4_layers = {
        layer.name
        for layer in target.layers
        if cache_of(layer)[0].scale_use is ScaleUse.GLOBAL_SCALE
    }
    if nvfp4_layers:
        variants.extend(
            _convention_variants(loaded, data.samples, target, nvfp4_layers, codecs, progress)
        )
        for conv in GlobalScaleConvention:
            descriptions[f"nvfp4 {conv.value}"] = (
                f"NVFP4 layers at calibrated {conv.value} values ({conv.meaning}), as the engine "
                "reads them"
            )
    evaluation = evaluate_model(
        loaded, data.samples, variants, activations_out=activations_file, progress=progress
    )
    unq, fp8, unit = (evaluation.variant(name) for name in ("unquantized", "fp8", "unit_scales"))
    runs = tuple(
        VariantEval(
            "target" if v.name == "fp8" else v.name,
            descriptions[v.name],
            evaluation.variant(v.name).ppl,
            evaluation.variant(v.name).kl_mean,
            evaluation.variant(v.name).kl_max,
        )
        for v in variants
    )
    return ModelEval(
        model=str(model_path),
        samples=evaluation.samples,
        tokens=evaluation.tokens,
        ppl_unquantized=unq.ppl,
        ppl_fp8=fp8.ppl,
        ppl_unit_scales=unit.ppl,
        kl_mean=fp8.kl_mean,
        kl_max=fp8.kl_max,
        kl_mean_unit_scales=unit.kl_mean,
        kl_max_unit_scales=unit.kl_max,
        dtype=loaded.dtype,
        device=loaded.device,
        activations_out=(
            str(model_options.activations_out) if model_options.activations_out else None
        ),
        max_ppl_increase=model_options.max_ppl_increase,
        max_kl=model_options.max_kl,
        variants=runs,
    )


def _convention_variants(
    loaded: LoadedModel,
    samples: Sequence[Sequence[int]],
    target: Target,
    nvfp4_layers: set[str],
    codecs: Callable[[Callable[[LayerScales], tuple[Any, Any]]], dict[str, LayerCodec]],
    progress: ProgressFn | None,
) -> list[CacheVariant]:
    """One capture pass for the layers' amax, then per convention the variant whose NVFP4
    layers hold ``f32(amax / divisor)`` (``kvscale calibrate``'s arithmetic) and whose other
    layers are as the target configures them."""
    from kvscale.model.capture import capture_kv_amax
    from kvscale.model.evaluate import CacheVariant
    from kvscale.model.scales import kv_scales

    capture = capture_kv_amax(loaded, samples, strategy="tensor", progress=progress)
    amax = {lc.name: (lc.k_amax, lc.v_amax) for lc in capture.layers}
    out = []
    for conv in GlobalScaleConvention:

        def values(layer: LayerScales, conv: GlobalScaleConvention = conv) -> tuple[Any, Any]:
            if layer.name not in nvfp4_layers:
                return layer.k_device, layer.v_device
            k, v = amax[layer.name]
            return kv_scales(k, divisor=conv.divisor), kv_scales(v, divisor=conv.divisor)

        out.append(CacheVariant(f"nvfp4 {conv.value}", codecs(values)))
    return out


def _check_latent_target(target: Target, latent: Mapping[str, LatentRow]) -> None:
    """The MLA variants model vLLM's latent cache, which reads one k scale per layer."""
    engine = target.engine.get("name")
    if engine != "vllm":
        raise UsageError(
            f"verify --data on MLA layers ({next(iter(latent))}, ...) runs vLLM 0.33.0's latent "
            f"cache write (concat_and_cache_mla); {engine or 'this engine'} writes and reads the "
            "latent otherwise (SGLang 0.5.23: MLATokenToKVPool stores it unscaled)",
            hint="use --engine vllm",
        )
    for layer in target.layers:
        if layer.name in latent and len(layer.k_device) != 1:
            raise UsageError(
                f"{layer.name} is an MLA layer (one latent row per token, one k scale), but the "
                f"target holds {len(layer.k_device)} per-head k scales for it"
            )
