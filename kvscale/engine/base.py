"""What every engine's rules work on and produce, and the interface each engine implements.

An engine (``kvscale/engine/vllm``, ``kvscale/engine/sglang``) mirrors one release of a serving
engine: how it reads the quantization config, which KV-cache dtype ``auto`` becomes, how it maps
checkpoint tensor names to its KV-scale parameters, and what its parameters hold after loading.
Everything else in kvscale (reading checkpoints, enumerating layers, judging values, rendering)
is engine-neutral and talks to an engine only through :class:`Engine`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.conventions import Convention, Producer
from kvscale.floats import encode_json_value
from kvscale.nvfp4_conventions import EngineGlobalScale
from kvscale.problems import Severity

if TYPE_CHECKING:
    from kvscale.engine.options import EngineOptions
    from kvscale.model_config import ModelShape, RawQuantConfig
    from kvscale.problems import Problem

ScaleValue = float | tuple[float, ...]
KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
"""The four per-layer scale parameters of an attention layer, in report order."""


class EnginePath(str, Enum):
    """Which KV-scale loading path a checkpoint takes in the engine."""

    BASE = "base"
    """A ``BaseKVCacheMethod``: a -1 sentinel, duplication of k to v, fnuz doubling."""
    COMPRESSED_TENSORS = "compressed-tensors"
    """vLLM's separate ``CompressedTensorsKVCacheMethod``: float32 ones, no sentinel."""
    NONE = "none"
    """No quant method that creates KV-scale parameters: every scale stays 1.0."""


class Rule(str, Enum):
    """How the engine arrived at a layer's k/v scales."""

    SEPARATE = "separate"
    DUPLICATED = "duplicated"
    DEFAULT = "default"
    PARTIAL = "partial"
    PER_HEAD = "per_head"
    UNQUANTIZED = "unquantized"
    ERROR = "error"


@dataclass(frozen=True)
class QuantConfig:
    """The checkpoint's quantization config, as one engine reads it."""

    quant_method: str | None = None
    """Normalized family: compressed-tensors, fp8, modelopt, quark, another method, or None."""
    raw_method: str | None = None
    source: str | None = None
    """``config.json`` or ``hf_quant_config.json``."""
    raw: Mapping[str, Any] | None = None
    engine_path: EnginePath = EnginePath.NONE
    kv_cache_scheme: Any = None
    """compressed-tensors ``kv_cache_scheme`` (validated at start by the engine)."""
    ct_has_config_groups: bool = False
    kv_declaration: str | None = None
    """Human description of the KV-cache quantization the config declares, if any."""
    auto_kv_cache_dtype: str = "auto"
    """What ``--kv-cache-dtype auto`` becomes for this checkpoint."""
    refusal: str | None = None
    """Why the engine refuses every attention layer of this model at start, if it does."""
    ignored_scheme: str | None = None
    """A declared KV-cache scheme the engine ignores (no KV method, scales dropped), and why."""

    @property
    def ct_strategy(self) -> str | None:
        if isinstance(self.kv_cache_scheme, Mapping):
            strategy = self.kv_cache_scheme.get("strategy")
            return strategy if isinstance(strategy, str) else None
        return None


@dataclass(frozen=True)
class ScaleSource:
    """One checkpoint tensor that feeds a scale parameter of an attention layer."""

    tensor: str
    file: str
    dtype: str
    shape: tuple[int, ...]
    kind: str
    convention: Convention
    load_order: int
    values: tuple[float, ...] | None
    """Exact on-disk values; None when not read (over the ``max-scale-elements`` limit)."""
    path: Path | None = None
    producer: Producer | None = None
    """Who wrote it (``conventions.producer_of``); None: the convention's producer."""

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def made_by(self) -> Producer:
        return self.producer or Producer(self.convention.value, self.convention.producer)

    def to_json(self) -> dict[str, object]:
        """Provenance of one value, as kv_scales.json and inspect --json record it."""
        return {
            "tensor": self.tensor,
            "file": self.file,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "value": encode_json_value(self.raw_value),
            "convention": self.convention.value,
        }

    @property
    def raw_value(self) -> ScaleValue | None:
        """The on-disk value for reports: a float for one element, a tuple otherwise."""
        if self.values is None:
            return None
        if self.numel == 1 and self.values:
            return self.values[0]
        return tuple(self.values)


@dataclass(frozen=True)
class EngineSettings:
    """Everything besides the tensors that decides a layer's scales (per checkpoint)."""

    engine_path: EnginePath
    kv_cache_dtype: str
    platform: str
    model_dtype: str
    num_heads: int | None = None
    num_kv_heads: int | None = None
    head_size: int | None = None
    """The size of what each KV head caches (MLA: the latent row), where the engine's backend
    choice depends on it."""
    ct_strategy: str | None = None
    ct_has_config_groups: bool = True
    refusal: str | None = None
    """A model-level refusal (bad scheme, a float KV cache against the model dtype, ...) that
    applies to every layer."""
    dtype_refusals: Mapping[str, str] = field(default_factory=dict)
    """Layer KV-cache dtype -> the engine's refusal of a layer that gets it with this
    checkpoint (vLLM: ``fp8_e5m2`` with FP8 scales; a layer the skip list keeps at ``auto``
    escapes it)."""
    uses_kv_scales: bool = True
    """The effective KV-cache dtype is quantized per tensor, so k/v scales are used."""
    scale_dtype: str = "float32"
    """The dtype the engine's scale parameters hold a loaded value in (vLLM's base path: the
    model dtype)."""
    attention_backend: str | None = None
    """The attention backend the user serves with, when given (which scale copy is read)."""
    skip_layers: tuple[str, ...] = ()
    """Entries that keep layers out of KV-cache quantization (vLLM's
    ``--kv-cache-dtype-skip-layers``, plus the boundary layers a format adds), as the engine
    holds them."""
    gpu_arch: str | None = None
    """The GPU generation served on (``--gpu-arch``), where it changes what the engine computes
    from the scales (SGLang's NVFP4 global scale on SM100)."""
    architecture: str | None = None
    """The registered architecture whose model code loads the checkpoint, where the engine's
    own problems depend on it (SGLang: whether its attention gets a KV method)."""

    @property
    def fnuz(self) -> bool:
        return self.platform == "fnuz"

    def for_layer(self, cache: LayerCache) -> EngineSettings:
        """These settings as one layer sees them: its own KV-cache dtype, and the refusal that
        dtype meets."""
        refusal = self.refusal or self.dtype_refusals.get(cache.kv_cache_dtype)
        if cache.kv_cache_dtype == self.kv_cache_dtype and refusal == self.refusal:
            return self
        return replace(
            self,
            kv_cache_dtype=cache.kv_cache_dtype,
            uses_kv_scales=cache.format.scale_use.reads_checkpoint,
            refusal=refusal,
        )


@dataclass(frozen=True)
class LayerCache:
    """The KV cache one layer writes: the engine's dtype for it, its format, and what it does
    with the checkpoint's k/v scales."""

    kv_cache_dtype: str
    """The engine's ``--kv-cache-dtype`` as this layer applies it (``auto`` when skipped)."""
    format: CacheFormat
    latent: bool = False
    """MLA: one ``[kv_c | k_pe]`` row per token, written with the k scale only; ``v_scale`` is
    resolved but never read."""
    skipped_by: str | None = None
    """Why the layer is kept unquantized: the ``--kv-cache-dtype-skip-layers`` entry, or the
    boundary layers a format adds."""
    shared_from: str | None = None
    """KV sharing (Gemma-4's last ``num_kv_shared_layers``): the layer whose cache this layer
    reads instead of writing its own."""
    reads_v_scale: bool = False
    """MLA: an attention backend that may serve the layer reads V (the latent again) with
    ``v_scale`` (SGLang's triton), so the v scale is not unused."""

    @property
    def scale_use(self) -> ScaleUse:
        return self.format.scale_use

    def to_json(self) -> dict[str, object]:
        doc: dict[str, object] = {
            "kv_cache_dtype": self.kv_cache_dtype,
            "format": self.format.name,
            "scales": self.format.scale_use.value,
            "latent": self.latent,
            "skipped_by": self.skipped_by,
        }
        if self.shared_from is not None:
            doc["shared_from"] = self.shared_from
        if self.reads_v_scale:
            doc["reads_v_scale"] = True
        return doc


@dataclass(frozen=True)
class ResolvedLayer:
    """One attention layer after loading: the four device values and how they came about."""

    name: str
    rule: Rule
    k_scale: ScaleValue | None
    v_scale: ScaleValue | None
    q_scale: ScaleValue | None
    prob_scale: ScaleValue | None
    error: str | None = None
    sources: Mapping[str, ScaleSource] = field(default_factory=dict)
    """The source each kind was loaded from last (the one that counts), by kind."""
    shadowed: tuple[ScaleSource, ...] = ()
    """Sources overwritten by a later tensor feeding the same parameter."""
    loaded: Mapping[str, ScaleValue] = field(default_factory=dict)
    """Parameter values after loading, before post-processing (model dtype on the base path)."""
    used_from_checkpoint: frozenset[str] = frozenset()
    """Kinds whose final device value comes from the checkpoint (not a default/duplicate)."""
    checkpoint_prefix: str = ""
    """The attention module prefix as the checkpoint spells it (``model.layers.0.self_attn``);
    differs from ``name`` minus ``.attn`` where the model renames prefixes (NemotronH)."""
    cache: LayerCache | None = None
    """The layer's KV cache (set by the resolution for every layer)."""

    def value(self, kind: str) -> ScaleValue | None:
        kind = BUFFER_KINDS.get(kind, kind)
        return {
            "k_scale": self.k_scale,
            "v_scale": self.v_scale,
            "q_scale": self.q_scale,
            "prob_scale": self.prob_scale,
        }[kind]


BUFFER_KINDS = {
    "_k_scale": "k_scale",
    "_v_scale": "v_scale",
    "_q_scale": "q_scale",
    "_prob_scale": "prob_scale",
}
"""vLLM's device buffers (``set_default_quant_scales``, float32 ``[]``) -> the kind they hold.
A checkpoint tensor named ``<layer>.attn._k_scale`` is loaded into the buffer directly."""


@dataclass(frozen=True)
class MappedName:
    """Where an engine sends one checkpoint tensor."""

    tensor: str
    engine_name: str
    layer: str | None
    """Engine attention layer (``<prefix>.attn``) when the name is a KV-scale parameter."""
    kind: str | None
    """``k_scale``/``v_scale``/``q_scale``/``prob_scale`` or a ``*_zero_point``."""
    convention: Convention | None


@dataclass(frozen=True)
class UnmappedTensor:
    """A tensor named like a KV scale that reaches no KV-scale parameter."""

    tensor: str
    file: str
    engine_name: str
    reason: str
    fails: bool = False
    """The engine's loader raises on it (vLLM: ``There is no module or parameter named ...``)."""
    code: str = "unmapped-scale-name"
    """The problem code it is reported under."""
    severity: Severity | None = None
    """The problem's severity where the code's meaning sets it (calibrated scales lost:
    ``scales-not-loaded``); None: an error when the loader raises, else a warning."""
    error: str | None = None
    """The engine's own exception when its loader raises on the tensor (vLLM's
    ``KeyError: '...'`` or ``ValueError: There is no module or parameter named ...``)."""
    layer: str | None = None
    """The attention layer (``<checkpoint prefix>.attn``) the tensor belongs to where the
    engine's model has one there: the layer exists even when nothing reaches it."""


@dataclass(frozen=True)
class Routed:
    """Where one checkpoint tensor goes: a layer's scale parameter, nowhere (reported), or it is
    not a KV-scale tensor at all (both None)."""

    mapped: MappedName | None = None
    unmapped: UnmappedTensor | None = None


@dataclass(frozen=True)
class NameContext:
    """What an engine's name mapping depends on besides the name itself."""

    quant: QuantConfig
    shape: ModelShape
    attention_prefixes: frozenset[str]
    """Attention module prefixes evidenced by the projection weights (may be empty)."""
    as_intended: bool = False
    """Route names as their producer meant them: without the architecture's own renames that run
    first (vLLM: the stacked q/k/v_proj -> qkv_proj mapper), and with every producer's
    convention whatever the quant method maps (Quark's ``k_proj.output_scale`` under
    compressed-tensors). ``kvscale normalize --checkpoint`` resolves with it to write such
    scales under names the engine loads."""


@dataclass(frozen=True)
class CacheWrite:
    """An engine's own FP8 cache write, for ``verify`` (imports torch only when called)."""

    name: str
    """What it reproduces, for the output (e.g. ``SGLang 0.5.23 set_kv_buffer``)."""
    stored_kv_cache_dtype: str
    """The KV-cache dtype whose format the bytes are in (to dequantize them)."""
    write: Any
    """``write(x [tokens, heads, head_size], scale float32 [1] | [heads]) -> uint8 bits``."""
    note: str = ""
    """What differs from kvscale's kernel, and why (cited from the engine's code)."""
    scale_read: Any = None
    """``scale_read(scale) -> scale`` the engine divides and multiplies by (None: as given)."""


class Engine(ABC):
    """One serving engine's KV-scale rules (one subclass per engine, per mirrored release)."""

    name: str
    version: str
    kv_cache_dtypes: tuple[str, ...]
    """Every value of the engine's own ``--kv-cache-dtype``."""
    attention_backends: tuple[str, ...] = ()
    """Attention backends whose scale handling is modelled (``--attention-backend``)."""
    fp8_kv_cache_dtype: str = "fp8"
    """The engine's spelling of the per-tensor FP8 (e4m3) KV-cache dtype."""
    commands: frozenset[str] = frozenset(
        ["inspect", "diff", "normalize", "verify", "calibrate", "plan"]
    )
    """The kvscale commands whose questions this engine's rules answer."""
    default_attention_backend: str | None = None
    """The backend the engine picks for a model when none is named, where that is fixed (vLLM on
    NVIDIA GPUs: FLASH_ATTN for an MHA model); a plan names a backend only when it needs
    another."""
    supports_skip_layers: bool = False
    """The engine can keep chosen layers' KV cache unquantized (vLLM's
    ``--kv-cache-dtype-skip-layers``)."""

    def require(self, command: str) -> None:
        """A usage error unless ``command`` is supported for this engine."""
        if command not in self.commands:
            from kvscale.engine.registry import ENGINES, get_engine
            from kvscale.errors import UsageError

            able = [e.value for e in ENGINES if command in get_engine(e).commands]
            raise UsageError(
                f"--engine {self.name} is supported by {', '.join(sorted(self.commands))} only, "
                f"not by {command}",
                hint="use --engine " + " or ".join(able),
            )

    def file_order(self, files: Sequence[str]) -> list[str]:
        """The order the engine loads the shards in (the later one wins a duplicate name);
        ``files`` come in vLLM's natural sort order."""
        return list(files)

    def describe(self) -> dict[str, str]:
        """``{"name", "version"}``: the ``engine`` object of every JSON document."""
        return {"name": self.name, "version": self.version}

    def cache_write(self, kv_cache_dtype: str, attention_backend: str | None) -> CacheWrite | None:
        """How this engine writes K/V into an FP8 cache where it differs from vLLM's CUDA
        ``reshape_and_cache_flash`` (kvscale's kernel and reference); None: it does not."""
        return None

    @abstractmethod
    def quant_config(self, raw: RawQuantConfig | None) -> QuantConfig:
        """The quant method, KV-cache declaration and start-up refusals, as the engine reads the
        checkpoint's quantization config."""

    @abstractmethod
    def settings(
        self,
        quant: QuantConfig,
        shape: ModelShape,
        options: EngineOptions,
        weight_dtypes: frozenset[str],
    ) -> tuple[EngineSettings, str]:
        """The per-checkpoint settings, and how the model dtype was decided."""

    @abstractmethod
    def route(self, tensor: str, file: str, context: NameContext) -> Routed:
        """Where the engine's loader sends one checkpoint tensor."""

    @abstractmethod
    def resolve_layer(
        self,
        name: str,
        sources: Sequence[ScaleSource],
        settings: EngineSettings,
        *,
        checkpoint_prefix: str,
        refusal: str | None = None,
    ) -> ResolvedLayer:
        """What the layer's parameters hold after loading (``refusal``: loading its tensors
        fails before any value is processed)."""

    def layer_name(self, prefix: str, shape: ModelShape) -> str:
        """The engine's attention layer name for a checkpoint attention prefix."""
        return f"{prefix}.attn"

    def layer_shape(self, shape: ModelShape) -> ModelShape:
        """The model shape whose layer typing (which layers cache K/V) the engine's model code
        follows; by default config.json's as read."""
        return shape

    @abstractmethod
    def cache_format(
        self, kv_cache_dtype: str, platform: str, *, latent: bool = False
    ) -> CacheFormat:
        """The format one of the engine's dtype strings stores (on this platform, for an MLA
        latent cache or a per-head one)."""

    def backends_for(
        self,
        kv_cache_dtype: str,
        *,
        head_size: int | None,
        gpu_arch: str | None,
        latent: bool,
    ) -> tuple[str, ...] | None:
        """The attention backends (``--attention-backend`` names) that run this dtype for such a
        model; None when the engine's backends are not modelled."""
        return None

    def per_head_backends(self, kv_cache_dtype: str) -> tuple[str, ...]:
        """The backends that honour per-head k/v scales with this dtype (none by default)."""
        return ()

    def backend_to_name(self, runnable: Sequence[str], platform: str) -> str:
        """Which of ``runnable`` (each runs the configuration) a serving command names when the
        engine's default backend is not among them. Default: the first."""
        return runnable[0]

    def nvfp4_global_scales(
        self, value: float, gpu_arch: str | None
    ) -> tuple[EngineGlobalScale, ...]:
        """The global dequantization scale the engine's NVFP4 cache takes from a layer's
        resolved k or v value, per group of GPUs it treats alike (one group when ``gpu_arch``
        is given). Default: the value unchanged everywhere (vLLM 0.33.0: ``ModelOptKVCacheMethod``
        adds nothing, model_executor/layers/quantization/modelopt.py)."""
        return (EngineGlobalScale(gpu_arch or "all", value, "unchanged"),)

    def serve_command(
        self,
        checkpoint: str,
        kv_cache_dtype: str,
        *,
        skip_layers: Sequence[str] = (),
        attention_backend: str | None = None,
    ) -> tuple[str, ...]:
        """The engine's own command line serving ``checkpoint`` with this KV cache."""
        raise NotImplementedError(f"{self.name} has no serving command modelled")

    @abstractmethod
    def layer_cache(self, name: str, settings: EngineSettings, shape: ModelShape) -> LayerCache:
        """The KV cache the engine gives one attention layer (its dtype after skip rules, the
        format, MLA's latent row)."""

    def unmapped_refusals(
        self, layer_names: Sequence[str], unmapped: Sequence[UnmappedTensor]
    ) -> dict[str, tuple[UnmappedTensor, str]]:
        """Layers whose loading fails because of a tensor that reaches no parameter: layer ->
        (that tensor, the engine's error)."""
        return {}

    def engine_problems(
        self, layers: Sequence[ResolvedLayer], settings: EngineSettings, quant: QuantConfig
    ) -> list[Problem]:
        """Problems only this engine has (its own warnings, its own refusals)."""
        return []

    @abstractmethod
    def checkpoint_name(self, prefix: str, kind: str, context: NameContext) -> str | None:
        """The tensor name a normalized checkpoint uses for one scale under the attention
        ``prefix``: one the engine's mapping sends back to that layer and kind, or None."""
