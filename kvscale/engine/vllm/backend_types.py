"""vLLM 0.33.0's attention backends as data: one backend (``Backend``) and one static refusal
of its ``supports_combination`` (``Refusal``).

``kvscale/engine/vllm/backend_table.py`` holds a ``Backend`` for every backend class of vLLM's
registry, rendered from the oracle's evidence in ``tests/parity/vllm_backends.json``;
``kvscale/engine/vllm/backends.py`` answers which backends run a dtype with them. Torch-free
(``inspect`` imports it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Refusal:
    """One static refusal of a backend's ``supports_combination``."""

    kv_cache_dtype: str
    head_size: int | None
    """The head size it refuses (None: an MLA backend's, asked at the latent row only)."""
    capabilities: tuple[str, ...]
    reason: str
    """vLLM's own words."""


@dataclass(frozen=True)
class Backend:
    """One ``AttentionBackendEnum`` member with a backend class."""

    name: str
    vendor: str
    """``cuda``, ``rocm``, ``cpu`` or ``xpu``: the platform whose backend list holds it."""
    mla: bool = False
    sparse: bool = False
    capabilities: tuple[str, ...] | None = None
    """Compute capabilities ``supports_compute_capability`` accepts (None: every one)."""
    kv_cache_dtypes: tuple[str, ...] = ()
    """Dtypes ``supports_kv_cache_dtype`` accepts on every capability it runs on."""
    limited: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Dtypes it accepts on these capabilities only."""
    head_sizes: tuple[int, ...] = ()
    """Of the probed head sizes (``backend_table.PROBED_HEAD_SIZES``), those
    ``supports_head_size`` accepts."""
    refusals: tuple[Refusal, ...] = ()

    def accepts(self, kv_cache_dtype: str) -> bool:
        """The dtype runs on this backend on some capability."""
        return kv_cache_dtype in self.kv_cache_dtypes or kv_cache_dtype in self.limited
