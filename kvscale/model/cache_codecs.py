"""The KV cache a configuration gives each layer, as ``LayerCodec``s for ``evaluate_model``: one
builder for ``verify --data`` (the target's own configuration, its scales at 1.0, each NVFP4
convention) and ``plan`` (each candidate), so that a plan's chosen configuration, run again by
``verify --data`` under the same flags, quantizes every layer identically.

Per layer: the format its cache stores (``LayerCache.format``: skipped layers are unquantized and
left out of the variant, i.e. the model's own K/V), the k and v values the engine holds, and the
engine's write where it has its own (``Engine.cache_write``: SGLang's model-dtype division).
NVFP4 values go through ``Engine.nvfp4_global_scales`` (SGLang's x6 on SM100), so the
round trip uses the global scale the engine computes on the chosen GPU.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.engine.base import Engine
from kvscale.errors import UsageError
from kvscale.kernel.roundtrip import (
    MLAWriteFn,
    QuantizeFn,
    format_roundtrip,
    mla_latent_roundtrip,
)
from kvscale.model.evaluate import LayerCodec
from kvscale.model.load import LatentRow

ScaleValues = float | Sequence[float]


def engine_global_scale(engine: Engine, value: float, gpu_arch: str | None) -> float:
    """The NVFP4 global scale the engine computes from ``value``; a usage error where it
    depends on a GPU generation that was not given."""
    groups = engine.nvfp4_global_scales(value, gpu_arch)
    if len(groups) != 1:
        raise UsageError(
            f"{engine.name} {engine.version} computes a different NVFP4 global scale per GPU "
            f"({', '.join(f'{g.gpus}: {g.how}' for g in groups)})",
            hint="pass --gpu-arch (e.g. sm100 or sm90)",
        )
    return groups[0].value


def _tensor(value: ScaleValues) -> torch.Tensor:
    values = [float(value)] if isinstance(value, (int, float)) else [float(v) for v in value]
    return torch.tensor(values, dtype=torch.float32)


def layer_codec(
    fmt: CacheFormat,
    kv_cache_dtype: str,
    k: ScaleValues,
    v: ScaleValues,
    *,
    engine: Engine,
    gpu_arch: str | None = None,
    quantize: QuantizeFn | None = None,
    latent: LatentRow | None = None,
    mla_write: MLAWriteFn | None = None,
    wrap: Callable[[str, Callable[[torch.Tensor], torch.Tensor]], Callable[..., torch.Tensor]]
    | None = None,
) -> LayerCodec | None:
    """One layer's codec, or None for an unquantized cache (the model's own K/V).

    ``k``/``v``: what the engine holds (a float, or per KV head); ignored by formats that read
    no scale. ``wrap(kind, roundtrip)`` may wrap each round trip (``plan``'s error meter)."""
    if fmt.scale_use is ScaleUse.NONE:
        return None

    def wrapped(
        kind: str, roundtrip: Callable[[torch.Tensor], torch.Tensor]
    ) -> Callable[[torch.Tensor], torch.Tensor]:
        return roundtrip if wrap is None else wrap(kind, roundtrip)

    if latent is not None:
        if fmt.scale_use is not ScaleUse.DIVISOR:
            raise UsageError(
                f"kvscale has no reference writer for {fmt.name} on an MLA latent cache",
                hint="--kv-cache-dtype fp8 (the latent cache with one k scale)",
            )
        row = mla_latent_roundtrip(_tensor(k), kv_cache_dtype, latent.kv_lora_rank, mla_write)
        return LayerCodec(wrapped("k", row), latent=True)
    if fmt.scale_use is ScaleUse.GLOBAL_SCALE:
        k_scale = _tensor(engine_global_scale(engine, float(_tensor(k).max()), gpu_arch))
        v_scale = _tensor(engine_global_scale(engine, float(_tensor(v).max()), gpu_arch))
    else:
        k_scale, v_scale = _tensor(k), _tensor(v)
    return LayerCodec(
        wrapped("k", format_roundtrip(fmt, kv_cache_dtype, k_scale, quantize)),
        wrapped("v", format_roundtrip(fmt, kv_cache_dtype, v_scale, quantize)),
    )
