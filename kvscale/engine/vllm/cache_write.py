"""vLLM 0.33.0's own Triton cache write, ``triton_reshape_and_cache_flash``, run on CUDA tensors.

Nothing of vLLM is part of kvscale: the function is taken at run time from an installed ``vllm``
(``vllm.v1.attention.ops.triton_reshape_and_cache_flash``), or else from a vLLM source tree (the
directory holding ``vllm/``, e.g. the 0.33.0 wheel extracted) named by ``KVSCALE_VLLM_SRC``. From a
source tree only the kernel file is executed, unmodified, under its own file name; the five names
it imports are provided by stubs for a CUDA platform (``sys.modules`` is restored afterwards):

* ``vllm.platforms.current_platform``: ``fp8_dtype()`` is ``torch.float8_e4m3fn`` and
  ``is_fp8_fnuz()`` False (``vllm/platforms/interface.py:1258-1276``; ``CudaPlatform`` keeps both),
  ``has_device_capability(cap)`` compares ``major * 10 + minor`` of the CUDA device
  (``interface.py:531-551``, ``cuda.py:774-787``), ``is_rocm()``/``is_xpu()`` False;
* ``vllm.triton_utils.triton`` / ``tl``: the installed Triton (``triton_utils/__init__.py``);
* ``quant_utils.get_fp8_min_max()`` = ``finfo(float8_e4m3fn)`` (-448, 448) and ``FP8_DTYPE`` =
  ``float8_e4m3fn`` (``model_executor/layers/quantization/utils/quant_utils.py:21, 99-107``, not
  fnuz);
* ``vllm.v1.kv_cache_interface.is_quantized_kv_cache`` and ``KVQuantMode``
  (``v1/kv_cache_interface.py:40-51, 121-153``): the mode of a dtype string by the same names and
  prefixes (no registered custom handlers, as in a plain install).

What the kernel does (read from the 0.33.0 file; ``benchmarks/engine_kernel_check.py`` measures
it): it divides by ``tl.load(k_scale)``, i.e. element 0 of the scale tensor whatever its length,
so per-head scales collapse to head 0's; it views the cache as ``current_platform.fp8_dtype()``
(e4m3fn on CUDA) for every quantized dtype string, ``fp8_e5m2`` included; its ``/`` is Triton's
float32 division (``div.full.f32``, an approximation).
"""

from __future__ import annotations

import ast
import enum
import hashlib
import importlib
import importlib.util
import os
import sys
import threading
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import EnvironmentMissingError
from kvscale.kernel.reference import CacheWriteArgumentError

__all__ = [
    "ENV_VAR",
    "KERNEL_FILE",
    "KERNEL_SHA256_0_33_0",
    "VLLM_VERSION",
    "VllmKernel",
    "VllmKernelUnavailableError",
    "load_vllm_kernel",
    "reshape_and_cache_flash",
]

VLLM_VERSION = "0.33.0"
ENV_VAR = "KVSCALE_VLLM_SRC"
KERNEL_MODULE = "vllm.v1.attention.ops.triton_reshape_and_cache_flash"
KERNEL_FILE = "vllm/v1/attention/ops/triton_reshape_and_cache_flash.py"
KERNEL_FUNCTION = "triton_reshape_and_cache_flash"
KERNEL_SHA256_0_33_0 = "c04f325a7de8176462d7028dd28dad4fd7a2c3917556439fd245ea3a22621812"
"""sha256 of ``KERNEL_FILE`` in the vllm-0.33.0 wheel: a kernel from elsewhere is reported."""

# The private name the source-tree module is registered under (never ``vllm.*``).
_LOADED_NAME = "_kvscale_vllm_engine.triton_reshape_and_cache_flash"
_HINT = (
    f"pip install vllm=={VLLM_VERSION}, or extract the vllm-{VLLM_VERSION} wheel and set "
    f"{ENV_VAR} to the directory that holds vllm/ (only {KERNEL_FILE} is needed)"
)


class VllmKernelUnavailableError(EnvironmentMissingError):
    """vLLM's Triton cache write cannot run here: no vLLM, no Triton, or no CUDA (exit 3)."""


@dataclass(frozen=True)
class VllmKernel:
    """vLLM's ``triton_reshape_and_cache_flash`` and where it came from."""

    function: Callable[..., None]
    origin: str
    """``installed`` (an importable vllm) or ``source-tree`` (``KVSCALE_VLLM_SRC``)."""
    path: str
    version: str | None
    sha256: str | None

    @property
    def is_pinned(self) -> bool:
        """Whether the kernel file is byte-identical to vLLM 0.33.0's."""
        return self.sha256 == KERNEL_SHA256_0_33_0


# --- stubs for the names the kernel file imports ------------------------------------------------


class _CudaPlatform:
    """The part of vLLM's ``current_platform`` that the kernel file reads, for CUDA."""

    @staticmethod
    def fp8_dtype() -> torch.dtype:
        return torch.float8_e4m3fn

    @staticmethod
    def is_fp8_fnuz() -> bool:
        return False

    @staticmethod
    def is_rocm() -> bool:
        return False

    @staticmethod
    def is_xpu() -> bool:
        return False

    @staticmethod
    def is_cuda() -> bool:
        return True

    @staticmethod
    def has_device_capability(capability: tuple[int, int] | int, device_id: int = 0) -> bool:
        # vLLM answers False when the capability cannot be read (cuda.py:784-787).
        if not torch.cuda.is_available():
            return False
        major, minor = torch.cuda.get_device_capability(device_id)
        if isinstance(capability, tuple):
            return (major, minor) >= capability
        return major * 10 + minor >= capability


class _KVQuantMode(enum.IntEnum):
    # The members the kernel file names, with vLLM's values (kv_cache_interface.py:47-51).
    NONE = 0
    FP8_PER_TENSOR = 1
    INT8_PER_TOKEN_HEAD = 2
    FP8_PER_TOKEN_HEAD = 3
    INT4_PER_TOKEN_HEAD = 4


_QUANTIZED_NAMES = ("int4_per_token_head", "int8_per_token_head", "ultraquant_4bit")
_QUANTIZED_PREFIXES = ("fp8", "nvfp4", "turboquant_", "octave_")


def _is_quantized_kv_cache(kv_cache_dtype: str) -> bool:
    # get_kv_quant_mode (kv_cache_interface.py:121-149) != NONE: these names and prefixes.
    return isinstance(kv_cache_dtype, str) and (
        kv_cache_dtype in _QUANTIZED_NAMES or kv_cache_dtype.startswith(_QUANTIZED_PREFIXES)
    )


def _get_fp8_min_max() -> tuple[float, float]:
    info = torch.finfo(torch.float8_e4m3fn)
    return float(info.min), float(info.max)


def _stub_modules(triton: Any, tl: Any) -> dict[str, types.ModuleType]:
    def module(name: str, **attrs: Any) -> types.ModuleType:
        mod = types.ModuleType(name)
        mod.__dict__.update(attrs)
        mod.__path__ = []  # a package: "from vllm.x import y" resolves through sys.modules
        return mod

    quant_utils = "vllm.model_executor.layers.quantization.utils.quant_utils"
    mods = {
        "vllm": module("vllm"),
        "vllm.platforms": module("vllm.platforms", current_platform=_CudaPlatform()),
        "vllm.triton_utils": module("vllm.triton_utils", triton=triton, tl=tl),
        "vllm.model_executor": module("vllm.model_executor"),
        "vllm.model_executor.layers": module("vllm.model_executor.layers"),
        "vllm.model_executor.layers.quantization": module(
            "vllm.model_executor.layers.quantization"
        ),
        "vllm.model_executor.layers.quantization.utils": module(
            "vllm.model_executor.layers.quantization.utils"
        ),
        quant_utils: module(
            quant_utils, FP8_DTYPE=torch.float8_e4m3fn, get_fp8_min_max=_get_fp8_min_max
        ),
        "vllm.v1": module("vllm.v1"),
        "vllm.v1.kv_cache_interface": module(
            "vllm.v1.kv_cache_interface",
            KVQuantMode=_KVQuantMode,
            is_quantized_kv_cache=_is_quantized_kv_cache,
        ),
    }
    return mods


# --- loading -------------------------------------------------------------------------------------


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _tree_version(root: Path) -> str | None:
    """``__version__`` from ``vllm/_version.py`` of a source tree (parsed, not executed)."""
    try:
        tree = ast.parse((root / "vllm" / "_version.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if "__version__" in names and isinstance(node.value.value, str):
                return node.value.value
    return None


def _import_triton() -> tuple[Any, Any]:
    try:
        import triton  # type: ignore[import-untyped,unused-ignore]
        import triton.language as tl  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise VllmKernelUnavailableError(
            "vLLM's Triton cache write needs Triton, which is not installed",
            hint="pip install 'kvscale[gpu]' (or pip install triton)",
        ) from None
    return triton, tl


def _load_installed() -> VllmKernel:
    module = importlib.import_module(KERNEL_MODULE)
    function = getattr(module, KERNEL_FUNCTION)
    path = Path(getattr(module, "__file__", "") or "")
    version: str | None
    try:
        version = str(importlib.import_module("vllm").__version__)
    except (ImportError, AttributeError):
        version = None
    return VllmKernel(function, "installed", str(path), version, _sha256(path))


def _load_source_tree(src: str) -> VllmKernel:
    root = Path(src).expanduser()
    if root.name == "vllm" and (root / "v1").is_dir():
        root = root.parent  # the vllm/ directory itself was given
    path = root / KERNEL_FILE
    if not path.is_file():
        raise VllmKernelUnavailableError(f"{ENV_VAR}={src}: no {KERNEL_FILE} there", hint=_HINT)
    triton, tl = _import_triton()
    stubs = _stub_modules(triton, tl)
    saved = {name: sys.modules.get(name) for name in stubs}
    spec = importlib.util.spec_from_file_location(_LOADED_NAME, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py path always has a loader
        raise VllmKernelUnavailableError(f"cannot load {path}", hint=_HINT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.update(stubs)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # the file's own import-time code failed
        raise VllmKernelUnavailableError(
            f"{path}: executing vLLM's kernel file failed ({type(exc).__name__}: {exc})",
            hint=f"{ENV_VAR} must hold vLLM {VLLM_VERSION}'s {KERNEL_FILE}",
        ) from exc
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous
    sys.modules[_LOADED_NAME] = module  # found by name (inspect, pickling), never as vllm.*
    function = getattr(module, KERNEL_FUNCTION, None)
    if not callable(function):
        raise VllmKernelUnavailableError(
            f"{path} defines no {KERNEL_FUNCTION}()", hint=f"use vLLM {VLLM_VERSION}'s file"
        )
    return VllmKernel(function, "source-tree", str(path), _tree_version(root), _sha256(path))


_lock = threading.Lock()
_loaded: VllmKernel | None = None


def load_vllm_kernel(*, src: str | None = None) -> VllmKernel:
    """vLLM's ``triton_reshape_and_cache_flash``: from ``src`` if given, else from an installed
    vllm, else from ``$KVSCALE_VLLM_SRC``. Loaded once per process (``src`` bypasses the cache).

    Raises VllmKernelUnavailableError (exit 3) when none of them provides it.
    """
    global _loaded
    if src is not None:
        return _load_source_tree(src)
    with _lock:
        if _loaded is not None:
            return _loaded
        installed_error: str | None = None
        if importlib.util.find_spec("vllm") is not None:
            try:
                _loaded = _load_installed()
                return _loaded
            except Exception as exc:  # an installed vllm that cannot import its kernel
                installed_error = f"the installed vllm failed: {type(exc).__name__}: {exc}"
        env = os.environ.get(ENV_VAR)
        if env:
            _loaded = _load_source_tree(env)
            return _loaded
        raise VllmKernelUnavailableError(
            "vLLM's Triton cache write is not available: "
            + (installed_error or f"vllm is not installed and {ENV_VAR} is not set"),
            hint=_HINT,
        )


def reshape_and_cache_flash(
    key: torch.Tensor,
    value: torch.Tensor,
    key_cache: torch.Tensor,
    value_cache: torch.Tensor,
    slot_mapping: torch.Tensor,
    kv_cache_dtype: str,
    k_scale: torch.Tensor,
    v_scale: torch.Tensor,
) -> None:
    """Write key/value into the paged caches with vLLM's own Triton kernel (in place, async on the
    current stream). Same signature as :func:`kvscale.kernel.triton_cache.reshape_and_cache_flash`;
    the arguments go to vLLM unchecked, so vLLM's own behaviour shows (e.g. it addresses
    value_cache with key_cache's strides, and reads only element 0 of a per-head scale).

    Raises VllmKernelUnavailableError without CUDA, Triton or a vLLM kernel to run, and
    CacheWriteArgumentError for tensors that are not on a CUDA device.
    """
    if not torch.cuda.is_available():
        raise VllmKernelUnavailableError(
            "vLLM's Triton cache write needs a CUDA device, and none is available",
            hint="run on a machine with an NVIDIA GPU (compute capability 8.9+ for fp8)",
        )
    tensors = (key, value, key_cache, value_cache, slot_mapping, k_scale, v_scale)
    if any(t.device.type != "cuda" for t in tensors):
        raise CacheWriteArgumentError(
            "vLLM's Triton cache write runs on CUDA tensors; got "
            + ", ".join(sorted({str(t.device) for t in tensors}))
        )
    kernel = load_vllm_kernel()
    kernel.function(
        key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale, v_scale
    )
