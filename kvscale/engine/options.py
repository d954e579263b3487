"""Engine options: what the user asks the engine to do, validated once, merged once.

Every command that resolves scales takes one :class:`EngineOptions`. A field left ``None`` means
"not chosen": the policy file may fill it, and otherwise the engine's default applies
(``auto`` KV-cache dtype, the ``ocp`` platform, the config's model dtype). The one merge is
:meth:`EngineOptions.over`: command line over policy file over defaults; nothing else in
kvscale decides which value wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from enum import Enum
from typing import TYPE_CHECKING

from kvscale.engine.registry import (
    DEFAULT_ENGINE,
    ENGINES,
    EngineName,
    all_kv_cache_dtypes,
    get_engine,
    kv_cache_dtypes,
    parse_engine,
)
from kvscale.errors import UsageError
from kvscale.model_config import normalize_model_dtype

if TYPE_CHECKING:
    from kvscale.engine.base import Engine


class Platform(str, Enum):
    """Where the FP8 cache runs: NVIDIA / OCP e4m3fn, or ROCm MI300 (e4m3fnuz)."""

    OCP = "ocp"
    FNUZ = "fnuz"


DEFAULT_KV_CACHE_DTYPE = "auto"
DEFAULT_PLATFORM = Platform.OCP


def parse_platform(value: str | Platform) -> Platform:
    if isinstance(value, Platform):
        return value
    try:
        return Platform(str(value).strip().lower())
    except ValueError:
        raise UsageError(f"unknown platform {value!r}", hint="use ocp or fnuz") from None


GPU_ARCHS = ("sm80", "sm86", "sm89", "sm90", "sm100", "sm103", "sm110", "sm120", "sm121")
"""``--gpu-arch`` values: NVIDIA compute capabilities whose FP8/FP4 KV-cache paths differ."""


def parse_skip_layers(value: Sequence[str] | str) -> tuple[str, ...]:
    """Entries as vLLM holds them: strings, compared with ``str(layer_index)`` or an attention
    type name, so ``"01"`` or ``" 1"`` match nothing, as in vLLM. An entry holding commas is
    kvscale's list syntax (``0,31``: one flag for several entries, which vLLM spells
    space-separated); its parts are trimmed and empty ones dropped."""
    items = [value] if isinstance(value, str) else list(value)
    out: list[str] = []
    for item in items:
        text = str(item)
        if "," in text:
            out.extend(part.strip() for part in text.split(",") if part.strip())
        else:
            out.append(text)
    return tuple(out)


def parse_gpu_arch(value: str) -> str:
    arch = str(value).strip().lower().replace("_", "").replace(".", "")
    if arch.isdigit():
        arch = "sm" + arch
    if arch not in GPU_ARCHS:
        raise UsageError(
            f"unknown GPU architecture {value!r}", hint="one of: " + ", ".join(GPU_ARCHS)
        )
    return arch


@dataclass(frozen=True)
class EngineOptions:
    """The engine and its settings as chosen by the user (``None``: not chosen)."""

    engine: EngineName | None = None
    kv_cache_dtype: str | None = None
    platform: Platform | None = None
    model_dtype: str | None = None
    """``bfloat16``, ``float16`` or ``float32`` (normalized); None: the config's dtype."""
    attention_backend: str | None = None
    """The engine's attention backend, when it matters (which copy of the scales is read)."""
    kv_cache_dtype_skip_layers: tuple[str, ...] | None = None
    """vLLM's ``--kv-cache-dtype-skip-layers``: layer indices (``"0"``) or attention types
    (``"sliding_window"``) whose KV cache stays unquantized; None: not chosen."""
    gpu_arch: str | None = None
    """The GPU generation served on (``sm90``, ``sm100``, ...), where it changes what the engine
    computes from the scales; None: not chosen."""

    def __post_init__(self) -> None:
        # Validated here, once, whatever the origin (command line, policy file, Python API).
        if self.engine is not None and not isinstance(self.engine, EngineName):
            object.__setattr__(self, "engine", parse_engine(self.engine))
        if self.platform is not None and not isinstance(self.platform, Platform):
            object.__setattr__(self, "platform", parse_platform(self.platform))
        if self.model_dtype is not None:
            object.__setattr__(self, "model_dtype", normalize_model_dtype(self.model_dtype))
        if self.kv_cache_dtype is not None:
            # Without an engine yet (a command line merged later with a policy file's engine),
            # any engine's dtype is acceptable here; the engine checks its own list again.
            dtypes = kv_cache_dtypes(self.engine) if self.engine else all_kv_cache_dtypes()
            if self.kv_cache_dtype not in dtypes:
                raise UsageError(
                    f"unknown KV-cache dtype {self.kv_cache_dtype!r}"
                    + (f" for {self.engine.value}" if self.engine else ""),
                    hint="one of: " + ", ".join(dtypes),
                )
        if self.kv_cache_dtype_skip_layers is not None:
            object.__setattr__(
                self,
                "kv_cache_dtype_skip_layers",
                parse_skip_layers(self.kv_cache_dtype_skip_layers),
            )
        if self.gpu_arch is not None:
            object.__setattr__(self, "gpu_arch", parse_gpu_arch(self.gpu_arch))
        if self.attention_backend is not None:
            # vLLM upper-cases the name (AttentionConfig.validate_backend_before); kvscale's
            # backend names are lower case, for every engine.
            object.__setattr__(self, "attention_backend", self.attention_backend.lower())
        self._check_backend()

    def _check_backend(self) -> None:
        if self.attention_backend is None:
            return
        engines = [self.rules] if self.engine else [get_engine(e) for e in ENGINES]
        known = sorted({b for engine in engines for b in engine.attention_backends})
        if self.attention_backend not in known:
            raise UsageError(
                f"unknown attention backend {self.attention_backend!r}"
                + (f" for {self.engine.value}" if self.engine else ""),
                hint="one of: " + ", ".join(known),
            )

    def over(self, fallback: EngineOptions) -> EngineOptions:
        """These options, with the fields left ``None`` taken from ``fallback``."""
        chosen = {f.name: getattr(self, f.name) for f in fields(self)}
        return replace(
            fallback, **{name: value for name, value in chosen.items() if value is not None}
        )

    @property
    def engine_name(self) -> EngineName:
        return self.engine or DEFAULT_ENGINE

    @property
    def rules(self) -> Engine:
        """The engine whose rules these options select."""
        return get_engine(self.engine_name)

    @property
    def requested_kv_cache_dtype(self) -> str:
        return self.kv_cache_dtype or DEFAULT_KV_CACHE_DTYPE

    @property
    def platform_name(self) -> str:
        return (self.platform or DEFAULT_PLATFORM).value

    def chosen(self) -> dict[str, str]:
        """The fields the user set, as strings (for reports: which options were applied)."""
        out: dict[str, str] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if isinstance(value, tuple):
                out[f.name] = ",".join(value)
            else:
                out[f.name] = value.value if isinstance(value, Enum) else str(value)
        return out
