"""NVFP4 global-scale conventions: what a checkpoint's ``k_scale`` / ``v_scale`` mean for an NVFP4
KV cache, what each engine computes from them, and where that puts the block scales.
Engine-neutral and torch-free (``inspect`` imports it).

An NVFP4 cache stores, per 16 values, e2m1 codes and an e4m3 block scale
``sf = e4m3(max|x| / (6 * g))``, where ``g`` is the layer's global dequantization scale (vLLM
0.33.0: the checkpoint value unchanged, ``reshape_and_cache_nvfp4_kernel``; SGLang 0.5.23: the
value times 6 on SM100/SM103, ``NVFP4KVCacheMethod.load_scales_from_model``). Producers disagree
on what the value holds (``kv-dtypes.md`` §4.5):

* ModelOpt before 0.42: ``amax / (6 * 448) = amax / 2688``; with ``g`` = that value the largest
  block scale is 448, e4m3's largest.
* ModelOpt 0.42 and later (PR #790): ``amax / 448``, the FP8 value, "so the same checkpoint can be
  used for both"; with ``g`` = that value the largest block scale is 448 / 6 = 74.7.

kvscale takes ``g = amax / 448`` as what engines expect (the largest block scale at 74.7: 6x
headroom over the calibration's amax): it is what current producers write for vLLM, and what
SGLang computes for trtllm-gen on SM100 from a pre-0.42 checkpoint (its comment at
``fp4_kv_cache_quant_method.py:557``: trtllm-gen expects ``amax / 448``). A global scale above
``amax / 448`` pushes every block scale down (more blocks round to a zero block scale: SGLang's
x6 on an ``amax / 448`` checkpoint puts the largest at 12.4); one below ``amax / 2688`` makes the
largest blocks saturate at 448.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from kvscale.floats import to_float32

E4M3_MAX = 448.0
E2M1_MAX = 6.0
E4M3_ZERO_BELOW = 2.0**-10
"""A block scale at or below half of e4m3's smallest subnormal (2^-9) rounds to zero (ties to
even): the block is stored as zeros."""

CONVENTION_MARK = "kvscale.nvfp4_convention"
"""Safetensors metadata key kvscale writes beside NVFP4 global scales (calibrate, normalize):
the convention of the values, so that ``inspect`` knows it."""


class GlobalScaleConvention(str, Enum):
    """What an NVFP4 checkpoint value holds, as a fraction of the tensor's amax."""

    AMAX_OVER_2688 = "amax/2688"
    AMAX_OVER_448 = "amax/448"

    @property
    def divisor(self) -> float:
        return 2688.0 if self is GlobalScaleConvention.AMAX_OVER_2688 else 448.0

    @property
    def meaning(self) -> str:
        if self is GlobalScaleConvention.AMAX_OVER_2688:
            return "amax / (6 x 448): ModelOpt before 0.42"
        return "amax / 448: ModelOpt 0.42 and later, the FP8 value"


def parse_convention(value: str) -> GlobalScaleConvention:
    """``amax/448`` or ``amax/2688`` (spaces and ``6*448`` accepted)."""
    text = value.replace(" ", "").lower().replace("(6*448)", "2688").replace("6*448", "2688")
    for c in GlobalScaleConvention:
        if text == c.value:
            return c
    raise ValueError(f"unknown NVFP4 convention {value!r}: one of amax/448, amax/2688")


ENGINE_TARGET_DIVISOR = 448.0
"""The effective global scale kvscale takes every engine to expect: ``amax / 448`` (module doc)."""


@dataclass(frozen=True)
class ConventionEvidence:
    """What a checkpoint says about its NVFP4 values' convention."""

    convention: GlobalScaleConvention | None
    """None: it cannot be known from the checkpoint."""
    why: str


_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)")


def convention_of(
    quantization_config: Mapping[str, object] | None, kvscale_mark: str | None = None
) -> ConventionEvidence:
    """The convention of a checkpoint's NVFP4 k/v values, from kvscale's own mark or the
    producer and version in its quantization config (ModelOpt writes ``producer: {name,
    version}`` in hf_quant_config.json and config.json)."""
    if kvscale_mark is not None:
        try:
            return ConventionEvidence(
                parse_convention(kvscale_mark), "kvscale wrote them (shard metadata)"
            )
        except ValueError:
            pass
    producer = quantization_config.get("producer") if quantization_config else None
    if isinstance(producer, Mapping) and producer.get("name") == "modelopt":
        version = producer.get("version")
        match = _VERSION.match(str(version)) if version is not None else None
        if match is not None:
            major, minor = int(match.group(1)), int(match.group(2))
            old = (major, minor) < (0, 42)
            convention = (
                GlobalScaleConvention.AMAX_OVER_2688 if old else GlobalScaleConvention.AMAX_OVER_448
            )
            return ConventionEvidence(convention, f"ModelOpt {version}")
        return ConventionEvidence(None, "ModelOpt without a version: before or after 0.42")
    name = producer.get("name") if isinstance(producer, Mapping) else None
    return ConventionEvidence(
        None, f"producer {name}" if name else "no producer or version in the quantization config"
    )


@dataclass(frozen=True)
class EngineGlobalScale:
    """The global scale an engine computes from a checkpoint value on some GPUs."""

    gpus: str
    """``all``, or the GPU generations this applies to (``sm100/sm103``)."""
    value: float
    how: str
    """What the engine does (``unchanged``, ``x6``)."""

    @property
    def factor(self) -> float:
        return 6.0 if self.how == "x6" else 1.0


@dataclass(frozen=True)
class Reading:
    """One reading of a layer's value: a convention (what amax it implies) and an engine's
    global scale on some GPUs, with the block-scale range that results."""

    convention: GlobalScaleConvention
    gpus: str
    engine_scale: float
    implied_amax: float
    largest_block_scale: float
    """``implied_amax / (6 * engine_scale)``: the block scale of the tensor's largest block."""
    zero_block_below: float
    """Blocks whose max |x| is at most this store zeros (block scale rounds to 0)."""
    state: str
    """``in-range``, ``saturates`` (largest block scale above 448) or ``below-range`` (the
    engine's global scale above ``amax / 448``: block scales pushed toward zero)."""

    def to_json(self) -> dict[str, object]:
        return {
            "convention": self.convention.value,
            "gpus": self.gpus,
            "engine_scale": self.engine_scale,
            "implied_amax": self.implied_amax,
            "largest_block_scale": self.largest_block_scale,
            "zero_block_below": self.zero_block_below,
            "state": self.state,
        }


_TOLERANCE = 1e-6


def reading(convention: GlobalScaleConvention, value: float, scale: EngineGlobalScale) -> Reading:
    amax = value * convention.divisor
    g = scale.value
    top = amax / (E2M1_MAX * g) if g > 0 and math.isfinite(g) else math.inf
    if top > E4M3_MAX * (1 + _TOLERANCE):
        state = "saturates"
    elif top < E4M3_MAX / E2M1_MAX * (1 - _TOLERANCE):
        state = "below-range"
    else:
        state = "in-range"
    return Reading(convention, scale.gpus, g, amax, top, E2M1_MAX * g * E4M3_ZERO_BELOW, state)


def readings(
    value: float, evidence: ConventionEvidence, scales: Sequence[EngineGlobalScale]
) -> tuple[Reading, ...]:
    """Every reading of one value: under its known convention, or under both when it cannot be
    known; per GPU group the engine treats differently."""
    conventions = (evidence.convention,) if evidence.convention else tuple(GlobalScaleConvention)
    return tuple(reading(c, value, s) for c in conventions for s in scales)


@dataclass(frozen=True)
class LayerReadings:
    """One NVFP4 layer's checkpoint values and their readings (k, then v)."""

    name: str
    k_value: float
    v_value: float
    k: tuple[Reading, ...]
    v: tuple[Reading, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "k_value": self.k_value,
            "v_value": self.v_value,
            "k": [r.to_json() for r in self.k],
            "v": [r.to_json() for r in self.v],
        }


@dataclass(frozen=True)
class Nvfp4Report:
    """What a checkpoint's NVFP4 global scales mean and do (``nvfp4`` in inspect's JSON): the
    convention's evidence, per layer whose values come from the checkpoint its readings, and
    the engine's global scale per GPU group."""

    evidence: ConventionEvidence
    gpu_arch: str | None
    layers: tuple[LayerReadings, ...]

    def out_of_range(self) -> tuple[tuple[str, str, Reading], ...]:
        """(layer, kind, reading) of every reading outside the block scales' range, where the
        convention is known; where it is not, only for GPU groups where every reading is."""
        out: list[tuple[str, str, Reading]] = []
        for layer in self.layers:
            for kind, rs in (("k", layer.k), ("v", layer.v)):
                groups: dict[str, list[Reading]] = {}
                for r in rs:
                    groups.setdefault(r.gpus, []).append(r)
                for group in groups.values():
                    bad = [r for r in group if r.state != "in-range"]
                    if bad and len(bad) == len(group):
                        out.extend((layer.name, kind, r) for r in bad)
        return tuple(out)

    def to_json(self) -> dict[str, object]:
        return {
            "convention": self.evidence.convention.value if self.evidence.convention else None,
            "evidence": self.evidence.why,
            "gpu_arch": self.gpu_arch,
            "layers": [layer.to_json() for layer in self.layers],
        }


def expected_convention(scale: EngineGlobalScale) -> GlobalScaleConvention:
    """The convention whose values the engine turns into ``amax / 448`` on those GPUs."""
    return (
        GlobalScaleConvention.AMAX_OVER_2688
        if scale.factor == 6.0
        else GlobalScaleConvention.AMAX_OVER_448
    )


def convert(value: float, source: GlobalScaleConvention, target: GlobalScaleConvention) -> float:
    """The float32 value a checkpoint holds under ``target`` for a value under ``source``: one
    float32 multiply by 6 or divide by 6 (exact inverse of each other only up to rounding)."""
    if source is target:
        return value
    if target is GlobalScaleConvention.AMAX_OVER_448:
        return to_float32(value * 6.0)
    return to_float32(value / 6.0)


def calibrated_value(amax: float, target: GlobalScaleConvention) -> float:
    """The float32 value a checkpoint should hold for a tensor of this amax under ``target``:
    ``f32(f32(amax) / divisor)``."""
    a = to_float32(float(amax))
    if not math.isfinite(a) or a < 0.0:
        raise ValueError(f"amax must be a finite non-negative number, got {amax!r}")
    return to_float32(a / target.divisor)


__all__ = [
    "CONVENTION_MARK",
    "ConventionEvidence",
    "GlobalScaleConvention",
    "LayerReadings",
    "Nvfp4Report",
    "EngineGlobalScale",
    "Reading",
    "calibrated_value",
    "convention_of",
    "convert",
    "expected_convention",
    "parse_convention",
    "readings",
]
