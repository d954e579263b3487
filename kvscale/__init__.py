"""kvscale: the FP8 KV-cache scales of safetensors checkpoints, exactly as the engine holds them.

The Python API does what the commands do and returns their typed results (frozen dataclasses);
errors are ``kvscale.errors.KVScaleError`` subclasses (``UsageError``, ``InputError``, ...)::

    import kvscale

    report = kvscale.inspect("examples/llm-compressor-fp8", kv_cache_dtype="fp8")
    for layer in report.layers:
        print(layer.name, layer.rule.value, layer.k_scale, layer.v_scale)
    print([p.code for p in report.problems], report.ok)

    kvscale.normalize("ckpt", "out", checkpoint=True)          # NormalizeResult
    kvscale.diff("release-1.0", "release-1.1").ok              # DiffResult
    kvscale.verify("out").layers[0].k.saturated                # VerifyResult (needs torch)
    kvscale.calibrate("model", "calib.jsonl", "scales")        # CalibrationResult (transformers)

Engine options are keyword arguments (``engine``, ``kv_cache_dtype``, ``platform``,
``model_dtype``, ``attention_backend``, ``kv_cache_dtype_skip_layers``, ``gpu_arch``), as on the
command line; no policy file is read. Each
function imports what it needs when called: ``import kvscale`` stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kvscale._version import __version__

if TYPE_CHECKING:
    from kvscale.core.calibrate import CalibrationResult
    from kvscale.core.diff import DiffResult
    from kvscale.core.inspect import ScaleReport
    from kvscale.core.normalize import NormalizeResult
    from kvscale.core.verify.run import VerifyResult
    from kvscale.engine.options import EngineOptions

__all__ = ["__version__", "calibrate", "diff", "inspect", "normalize", "verify"]

PathLike = str | os.PathLike[str]


def _options(
    engine: str | None,
    kv_cache_dtype: str | None,
    platform: str | None,
    model_dtype: str | None,
    attention_backend: str | None,
    kv_cache_dtype_skip_layers: Sequence[str] | str | None = None,
    gpu_arch: str | None = None,
) -> EngineOptions:
    from kvscale.engine.options import EngineOptions, parse_skip_layers

    # Validated by EngineOptions, as the command line's options are (no policy file is read).
    return EngineOptions(
        engine=engine,  # type: ignore[arg-type]
        kv_cache_dtype=kv_cache_dtype,
        platform=platform,  # type: ignore[arg-type]
        model_dtype=model_dtype,
        attention_backend=attention_backend,
        kv_cache_dtype_skip_layers=None
        if kv_cache_dtype_skip_layers is None
        else parse_skip_layers(kv_cache_dtype_skip_layers),
        gpu_arch=gpu_arch,
    )


def inspect(
    checkpoint: PathLike,
    *,
    engine: str | None = None,
    kv_cache_dtype: str | None = None,
    platform: str | None = None,
    model_dtype: str | None = None,
    attention_backend: str | None = None,
    kv_cache_dtype_skip_layers: Sequence[str] | str | None = None,
    gpu_arch: str | None = None,
    revision: str | None = None,
) -> ScaleReport:
    """What the engine holds for every attention layer of ``checkpoint`` (a local path,
    ``hf://ORG/NAME[@REV]`` or an https URL), with the problems found; reads no weights."""
    from kvscale.core.inspect import inspect_checkpoint

    options = _options(
        engine,
        kv_cache_dtype,
        platform,
        model_dtype,
        attention_backend,
        kv_cache_dtype_skip_layers,
        gpu_arch,
    )
    return inspect_checkpoint(checkpoint, options, revision=revision)


def normalize(
    checkpoint: PathLike,
    out: PathLike,
    *,
    checkpoint_copy: bool = False,
    force: bool = False,
    engine: str | None = None,
    kv_cache_dtype: str | None = None,
    platform: str | None = None,
    model_dtype: str | None = None,
    kv_cache_dtype_skip_layers: Sequence[str] | str | None = None,
    revision: str | None = None,
) -> NormalizeResult:
    """Write the scales the engine uses explicitly into ``out`` (``kv_scales.json`` and
    ``kv_scales.safetensors``; with ``checkpoint_copy`` also ``out/checkpoint``), atomically.
    Raises ``RefusedError`` when a layer cannot be normalized (unless ``force``)."""
    from kvscale.core.normalize import NormalizeOptions, normalize_checkpoint

    options = NormalizeOptions(
        engine=_options(
            engine, kv_cache_dtype, platform, model_dtype, None, kv_cache_dtype_skip_layers
        ),
        checkpoint=checkpoint_copy,
        force=force,
        revision=revision,
    )
    return normalize_checkpoint(checkpoint, out, options)


def diff(
    a: PathLike,
    b: PathLike,
    *,
    max_rel_change: float | None = None,
    engine: str | None = None,
    kv_cache_dtype: str | None = None,
    platform: str | None = None,
    kv_cache_dtype_skip_layers: Sequence[str] | str | None = None,
) -> DiffResult:
    """Layer-by-layer changes from ``a`` to ``b`` (checkpoints, kv_scales.json or saved inspect
    JSON); ``result.ok`` is the gate (``max_rel_change``: symmetric, max(a/b, b/a) - 1)."""
    from kvscale.core.diff import diff_paths

    options = _options(engine, kv_cache_dtype, platform, None, None, kv_cache_dtype_skip_layers)
    return diff_paths(a, b, options, max_rel_change)


def verify(
    target: PathLike,
    *,
    gpu: bool = False,
    activations: PathLike | None = None,
    tokens: int = 4096,
    seed: int = 0,
    engine: str | None = None,
    kv_cache_dtype: str | None = None,
    platform: str | None = None,
    kv_cache_dtype_skip_layers: Sequence[str] | str | None = None,
    strict: bool = False,
    **model: Any,
) -> VerifyResult:
    """Write every layer's K/V through the FP8 cache write (the Triton kernel with ``gpu``,
    else the CPU reference) and measure it. ``model``: the ``ModelOptions`` fields
    (``data=...``, ``model=...``, ``samples``, ``seq_len``, ``max_ppl_increase``, ``max_kl``,
    ``activations_out``) to run a model on real text, down to perplexity."""
    from pathlib import Path

    from kvscale.core.verify.model_run import ModelOptions
    from kvscale.core.verify.run import VerifyOptions, verify_target

    options = VerifyOptions(
        gpu=gpu,
        activations=Path(activations) if activations is not None else None,
        tokens=tokens,
        seed=seed,
        engine=_options(engine, kv_cache_dtype, platform, None, None, kv_cache_dtype_skip_layers),
        model=ModelOptions.for_data(**model),
        strict=strict,
    )
    return verify_target(target, options)


def calibrate(model: PathLike, data: PathLike, out: PathLike, **options: Any) -> CalibrationResult:
    """Run ``model`` over ``data``, compute per-layer k/v scales and write them into ``out``.
    ``options``: the ``kvscale.core.calibrate.CalibrateOptions`` fields (``samples``,
    ``seq_len``, ``strategy``, ``checkpoint``, ``target``, ...)."""
    from kvscale.core.calibrate import CalibrateOptions
    from kvscale.core.calibrate import calibrate as run

    return run(model, data, out, CalibrateOptions(**options))
