"""kvscale: inspect, normalize and GPU-verify the FP8 KV-cache scales of safetensors checkpoints."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kvscale")
except PackageNotFoundError:  # running from a source tree (PYTHONPATH=.) without installing
    __version__ = "0.1.0+source"

__all__ = ["__version__"]
