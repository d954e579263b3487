"""``verify --data``: run the model on real text with the cache quantized at the target's scales,
at 1.0 and unquantized, and keep its own K/V for the per-layer statistics.

MLA layers (``AttentionLayer.latent``) cache one row ``[kv_c | k_pe]`` per token; their variants
are vLLM 0.33.0's latent cache (``concat_and_cache_mla`` with the layer's k scale, ``skip_scale``
at exactly 1.0, read back as ``fp8 * k_scale``: ``kvscale.kernel.roundtrip.mla_latent_roundtrip``;
the v scale is never read), and the saved activations hold the row as ``<layer>.kv``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kvscale.core.verify.stats import BLOCK_SIZE
from kvscale.core.verify.target import Target
from kvscale.engine.base import CacheWrite
from kvscale.errors import (
    RefusedError,
    UsageError,
)
from kvscale.kernel.formats import FP8Format, resolve_kv_cache_dtype
from kvscale.progress import ProgressFn

if TYPE_CHECKING:
    from kvscale.model.load import LatentRow


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
class ModelEval:
    """What TARGET's scales do to the model end to end (``model_eval`` in the JSON)."""

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
) -> ModelEval:
    """Run the model on the data three times (unquantized, FP8 at the target's scales, FP8 at
    1.0) and save the unquantized K/V to ``activations_file`` for the per-layer statistics."""
    from kvscale.kernel.roundtrip import QuantizeFn, fp8_roundtrip, mla_latent_roundtrip
    from kvscale.model.data import load_calibration_data
    from kvscale.model.evaluate import CacheVariant, LayerCodec, evaluate_model
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
    quantize: QuantizeFn | None = None
    if engine_write is not None:
        # The FP8 cache the model reads is the one the serving engine writes.
        quantize = engine_write.write
        fmt = resolve_kv_cache_dtype(engine_write.stored_kv_cache_dtype).fp8 or fmt
    elif kernel is not None:
        quantize = kernel_quantize(kernel, kv_name)
    one = torch.ones(1, dtype=torch.float32)
    latent = {layer.engine_name: layer.latent for layer in loaded.layers if layer.latent}
    if latent:
        _check_latent_target(target, latent)
    mla_write = None
    if latent and kernel is not None:
        from kvscale.kernel.triton_mla import concat_and_cache_mla

        mla_write = concat_and_cache_mla

    def codec(name: str, k: torch.Tensor, v: torch.Tensor) -> LayerCodec:
        row = latent.get(name)
        if row is not None:
            return LayerCodec(
                mla_latent_roundtrip(k, kv_name, row.kv_lora_rank, mla_write), latent=True
            )
        return LayerCodec(fp8_roundtrip(k, fmt, quantize), fp8_roundtrip(v, fmt, quantize))

    variants = [
        CacheVariant(
            "fp8",
            {
                layer.name: codec(
                    layer.name,
                    torch.tensor(layer.k_device, dtype=torch.float32),
                    torch.tensor(layer.v_device, dtype=torch.float32),
                )
                for layer in target.layers
            },
        ),
        CacheVariant(
            "unit_scales", {layer.name: codec(layer.name, one, one) for layer in target.layers}
        ),
    ]
    names = {layer.engine_name for layer in loaded.layers}
    missing = sorted(names - {layer.name for layer in target.layers})
    if missing:
        raise UsageError(
            f"no scales for {len(missing)} of the model's attention layers, first {missing[0]}"
        )
    evaluation = evaluate_model(
        loaded, data.samples, variants, activations_out=activations_file, progress=progress
    )
    unq, fp8, unit = (evaluation.variant(name) for name in ("unquantized", "fp8", "unit_scales"))
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
    )


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
