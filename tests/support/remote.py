"""Helpers of the remote-checkpoint tests (a loopback Hub: support/hub_server.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from support.paths import ROOT

from kvscale.core.inspect import resolve_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.io.remote.source import open_remote
from kvscale.render.inspect import inspect_json

BIG = "bench/llama-405b-fp8"
"""The repository name the Hub serves the benchmark's sparse Llama-405B under."""


def bench_checkpoint(directory: Path, layers: int | None = None, shards: int | None = None) -> Path:
    """benchmarks/bench_inspect.py's sparse Llama checkpoint (default: 405B, 126 layers in 191
    shards, ~400 GB apparent, a few hundred KB on disk), written into ``directory``."""
    spec = importlib.util.spec_from_file_location(
        "bench_inspect", ROOT / "benchmarks" / "bench_inspect.py"
    )
    assert spec is not None and spec.loader is not None
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    if layers is not None:
        builder.LAYERS = layers
    if shards is not None:
        builder.SHARDS = shards
    builder.build(directory)
    return directory


def document(report: Any) -> str:
    """The inspect JSON without the fields naming the input (checkpoint, layout, source)."""
    doc = inspect_json(report)
    return json.dumps({k: v for k, v in doc.items() if k not in ("checkpoint", "layout", "source")})


def remote_report(spec: str, **kwargs: Any) -> tuple[Any, Any]:
    """``open_remote(spec)`` and its resolution under default options; ``revision=`` and the
    transport ``options=`` pass through."""
    ckpt = open_remote(spec, kwargs.pop("revision", None), None, **kwargs)
    return ckpt, resolve_checkpoint(ckpt, EngineOptions())
