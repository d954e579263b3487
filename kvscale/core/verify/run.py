"""``kvscale verify``: write every layer's K/V through the cache write with the resolved scales and
prove the result bit for bit against the CPU reference writer (``verify_target``).

Core module: returns a ``VerifyResult`` and raises typed errors; the CLI renders. torch is
imported here (verify needs it), never by ``inspect``/``normalize``.
"""

from __future__ import annotations

import difflib
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kvscale.cache_formats import CacheFormat, ScaleUse
from kvscale.core.verify.chunks import CHUNK_BYTES, HeldSample, Sample, chunk_values, row_fits
from kvscale.core.verify.formats import (
    NVFP4_ERROR_LIMIT,
    nvfp4_kernel_mismatches,
    nvfp4_layer,
    refuse_unverifiable,
    self_scaled_layer,
    synthetic_for,
    unquantized_layer,
    verifiable,
)
from kvscale.core.verify.model_run import ModelEval, ModelOptions, run_model
from kvscale.core.verify.stats import (
    ERROR_LIMIT,
    LATENT_KINDS,
    SATURATION_LIMIT,
    UNDERFLOW_LIMIT,
    KindStats,
    latent_activations,
    run_latent_layer,
    run_layer,
    synthetic_activations,
    with_failure,
)
from kvscale.core.verify.target import LayerScales, Target, host_device_agree, load_target
from kvscale.engine.options import EngineOptions
from kvscale.errors import (
    EnvironmentMissingError,
    InputError,
    LimitExceededError,
    UsageError,
    require,
)
from kvscale.io.safetensors import read_header
from kvscale.kernel.formats import (
    FP8Format,
    resolve_kv_cache_dtype,
)
from kvscale.limits import MAX_VERIFY_ELEMENTS
from kvscale.progress import ProgressEvent, ProgressFn

KERNEL_NAME = "kvscale.kernel.triton_cache.reshape_and_cache_flash (Triton)"


@dataclass(frozen=True)
class VerifyOptions:
    gpu: bool = False
    activations: Path | None = None
    tokens: int = 4096
    seed: int = 0
    engine: EngineOptions = field(default_factory=EngineOptions)
    """The options a checkpoint target is resolved with, exactly as ``inspect`` would; a scales
    output holds values already resolved, and options that contradict it are refused."""
    revision: str | None = None
    """Revision of a Hub checkpoint target (``--revision``)."""
    model: ModelOptions | None = None
    """Capture K/V by running a model on real text (``--data``) instead of synthetic data."""
    engine_kernel: bool = False
    """Also run the engine's own GPU cache write (vLLM's Triton kernel) and compare its bytes."""
    strict: bool = False
    """A run whose kernel did not execute (no ``gpu``) does not count as verified."""

    def __post_init__(self) -> None:
        # The rules between options live here, so the Python API refuses what the CLI refuses.
        if self.tokens < 1 or self.tokens > 1 << 22:
            raise UsageError(f"--tokens {self.tokens} is out of range", hint="use 1 .. 4194304")
        if self.model is not None and self.activations is not None:
            raise UsageError(
                "--activations and --data exclude each other (--data captures the K/V by "
                "running the model)"
            )
        if self.engine_kernel and not self.gpu:
            raise UsageError(
                "--engine-kernel compares the engine's own GPU cache write with kvscale's "
                "kernel: it needs --gpu"
            )
        if self.engine_kernel and self.engine.engine_name != "vllm":
            raise UsageError("--engine-kernel runs vLLM's own kernel: use it with --engine vllm")


@dataclass(frozen=True)
class LayerResult:
    name: str
    k: KindStats | None
    v: KindStats | None
    host_device_agree: bool
    error: str | None = None
    """Why the engine refuses this layer (no scales to write with): the layer fails."""

    @property
    def data(self) -> str | None:
        """Where the layer's K/V came from (``activations``, ``model`` or ``synthetic``)."""
        kinds = {s.data for s in (self.k, self.v) if s is not None}
        return kinds.pop() if len(kinds) == 1 else ("+".join(sorted(kinds)) or None)

    @property
    def passed(self) -> bool:
        if self.error is not None or self.k is None or self.v is None:
            return False
        return self.k.passed and self.v.passed and self.host_device_agree


@dataclass(frozen=True)
class VerifyResult:
    target: str
    target_kind: str
    device: str
    kernel: str | None
    kv_cache_dtype: str
    fp8_format: str
    platform: str
    tokens: int
    host_device_agree: bool
    layers: tuple[LayerResult, ...]
    notes: tuple[str, ...] = ()
    thresholds: Mapping[str, float] = field(default_factory=dict)
    engine: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    synthetic_layers: tuple[str, ...] = ()
    """Layers whose K/V were synthetic although activations were given (the file lacks them)."""
    model_eval: ModelEval | None = None

    strict: bool = False
    """Run under ``--strict``: without the kernel (no ``--gpu``) the run is not verified."""
    checked: tuple[str, ...] = ()
    """What this run checked (the verdict says it: a pass means these held)."""
    not_checked: tuple[str, ...] = ()
    """What it did not, and how to check it."""

    @property
    def unverified(self) -> bool:
        """``--strict`` asked for the kernel and it did not run."""
        return self.strict and self.kernel is None

    @property
    def ok(self) -> bool:
        return (
            bool(self.layers)
            and self.host_device_agree
            and all(layer.passed for layer in self.layers)
            and not (self.model_eval is not None and self.model_eval.failures)
            and not self.unverified
        )


# --- loading a target ----------------------------------------------------------------------------


# --- data -------------------------------------------------------------------------------------


def load_activations(path: Path, target: Target) -> dict[str, Any]:
    """The target's K/V from a ``--activations`` file: validated by kvscale's own header checks
    first, each tensor bounded by ``max-verify-elements``, and only the tensors of the target's
    layers read (never the whole file)."""
    header = read_header(path)
    wanted = {
        f"{layer.name}.{kind}" for layer in target.layers for kind in ("k", "v", *LATENT_KINDS)
    }
    present = [name for name in header.tensors if name in wanted]
    limit = MAX_VERIFY_ELEMENTS.value()
    for name in present:
        info = header.tensors[name]
        if info.numel > limit:
            raise LimitExceededError(
                path,
                f"activation {name!r} has {info.numel:,} elements",
                hint=MAX_VERIFY_ELEMENTS.describe(),
            )
        row = math.prod(info.shape[1:]) if len(info.shape) > 1 else 0
        if not row_fits(row):
            raise LimitExceededError(
                path,
                f"activation {name!r} {list(info.shape)} holds {row:,} values per token, more "
                f"than verify holds at once ({chunk_values():,} values, its "
                f"{CHUNK_BYTES >> 20} MiB chunk)",
                hint="a K or V row is kv heads x head size, under 32,768 values in real models",
            )
    _match_activations(path, header.tensors, target)
    from safetensors import safe_open

    out: dict[str, Any] = {}
    try:
        with safe_open(str(path), framework="pt") as handle:
            for name in present:
                out[name] = handle.get_tensor(name)
    except Exception as exc:  # safetensors raises its own error types
        raise InputError(path, f"cannot load activations ({exc})") from None
    return out


# --- the run ------------------------------------------------------------------------------------


def _gpu_device() -> tuple[Any, str]:
    if not torch.cuda.is_available():
        raise EnvironmentMissingError(
            "--gpu: no CUDA device is available",
            hint="run on a machine with an NVIDIA GPU (compute capability >= 8.9 for FP8), or "
            "drop --gpu to run the CPU reference only",
        )
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    if (major, minor) < (8, 9):
        raise EnvironmentMissingError(
            f"--gpu: {name} (compute capability {major}.{minor}) has no FP8 conversion support",
            hint="FP8 KV caches need compute capability 8.9 or newer (Ada, Hopper, Blackwell)",
        )
    require("triton", "kvscale verify --gpu", "gpu")
    return torch.device("cuda", 0), name


def _fmt_for(kv_cache_dtype: str, platform: str) -> tuple[str, FP8Format]:
    name = kv_cache_dtype
    if name in ("fp8", "fp8_e4m3") and platform == "fnuz":
        name = "fp8_e4m3fnuz"
    try:
        kv = resolve_kv_cache_dtype(name)
    except ValueError:
        kv = resolve_kv_cache_dtype("fp8")
    if kv.fp8 is None:
        kv = resolve_kv_cache_dtype("fp8_e4m3fnuz" if platform == "fnuz" else "fp8")
    assert kv.fp8 is not None
    return kv.name, kv.fp8


def verify_target(
    path: str | os.PathLike[str], options: VerifyOptions, progress: ProgressFn | None = None
) -> VerifyResult:
    options.engine.rules.require("verify")
    target = load_target(path, options.engine, revision=options.revision)
    notes = list(target.notes)
    formats = [layer.cache.format for layer in target.layers if layer.cache is not None]
    refuse_unverifiable(formats, _measurable_dtypes(options, target.platform))
    # FP8 layers are written by the FP8 kernels in the FP8 encoding of the target's dtype; the
    # other formats have their own writers (core/verify/formats.py).
    kv_name, fmt = _fmt_for(target.kv_cache_dtype, target.platform)
    _check_size(options.tokens, target)
    device = torch.device("cpu")
    device_name = "cpu"
    kernel: Callable[..., None] | None = None
    if options.gpu:
        if not fmt.gpu_writable:
            raise EnvironmentMissingError(
                f"--gpu: an NVIDIA GPU cannot write {fmt.name} (ROCm MI300 format)",
                hint="drop --gpu to check the fnuz values with the CPU reference",
            )
        device, device_name = _gpu_device()
        from kvscale.kernel.triton_cache import reshape_and_cache_flash

        kernel = reshape_and_cache_flash
    else:
        notes.append("the kernel did not run (no --gpu): statistics come from the CPU reference")
    engine_write = options.engine.rules.cache_write(kv_name, options.engine.attention_backend)
    if engine_write is not None:
        notes.append(
            f"statistics describe the engine's own write: {engine_write.name} ({engine_write.note})"
        )
    engine_kernel: Callable[..., None] | None = None
    if options.engine_kernel:
        from kvscale.engine.vllm.cache_write import load_vllm_kernel, reshape_and_cache_flash

        loaded = load_vllm_kernel()
        engine_kernel = reshape_and_cache_flash
        notes.append(
            f"engine kernel: vLLM's triton_reshape_and_cache_flash from {loaded.origin} "
            f"{loaded.path} (version {loaded.version}, "
            f"{'the 0.33.0 file' if loaded.is_pinned else 'not the 0.33.0 file'})"
        )
    activations: dict[str, Any] = {}
    data_label = "activations"
    activations_path = options.activations
    model_eval: ModelEval | None = None
    if options.model is not None:
        with tempfile.TemporaryDirectory(prefix="kvscale-verify-") as scratch:
            saved = options.model.activations_out or Path(scratch) / "activations.safetensors"
            model_eval = run_model(
                path,
                target,
                options.model,
                options.gpu,
                fmt,
                kv_name,
                kernel,
                saved,
                progress,
                engine_write,
                options.engine,
            )
            activations = load_activations(saved, target)
        data_label = "model"
        activations_path = saved
    elif options.activations is not None:
        activations = load_activations(options.activations, target)
    generator = torch.Generator().manual_seed(options.seed)
    formats_used: set[str] = set()
    results: list[LayerResult] = []
    synthetic: list[str] = []
    agree_all = True
    latent_layers: list[str] = []
    mla_kernel: Callable[..., None] | None = None
    if kernel is not None:
        from kvscale.kernel.triton_mla import concat_and_cache_mla

        mla_kernel = concat_and_cache_mla
    for index, layer in enumerate(target.layers):
        agree = host_device_agree(layer)
        agree_all = agree_all and not agree
        rows = latent_activations(activations, layer.name, activations_path)
        if rows is not None:
            # MLA: one latent row per token, written with the k scale; v repeats k.
            row_stats = run_latent_layer(
                layer, rows[0], data_label, rows[1], kv_name, fmt, device, mla_kernel, generator
            )
            if agree:
                row_stats = with_failure(row_stats, "; ".join(agree))
            results.append(LayerResult(layer.name, row_stats, row_stats, not agree))
            latent_layers.append(layer.name)
            if progress is not None:
                progress(ProgressEvent("layers", index + 1, len(target.layers), layer.name))
            continue
        kv_data: dict[str, tuple[Sample, str]] = {}
        heads = max(len(layer.k_device), len(layer.v_device))
        layer_fmt = layer.cache.format if layer.cache is not None else None
        fp8_layer = layer_fmt is None or layer_fmt.fp8 is not None
        for kind, scale in (("k", layer.k_device), ("v", layer.v_device)):
            captured = activations.get(f"{layer.name}.{kind}")
            if captured is not None:
                kv_data[kind] = (
                    HeldSample(check_activation(captured, activations_path, layer.name, kind)),
                    data_label,
                )
                continue
            h = heads if heads > 1 else target.kv_heads
            if fp8_layer:
                x = synthetic_activations(
                    options.tokens, h, target.head_size, scale, fmt, generator
                )
            else:
                assert layer_fmt is not None
                x = synthetic_for(layer_fmt, options.tokens, h, target.head_size, scale, generator)
            kv_data[kind] = (x, "synthetic")
        if activations and any(src == "synthetic" for _, src in kv_data.values()):
            synthetic.append(layer.name)
        check_pair(kv_data, activations_path, layer.name, layer)
        if fp8_layer:
            k_stats, v_stats = run_layer(
                layer, kv_data, kv_name, fmt, device, kernel, generator, engine_write, engine_kernel
            )
        else:
            assert layer_fmt is not None and layer.cache is not None
            k_stats, v_stats = _other_format_layer(
                layer, layer_fmt, layer.cache.kv_cache_dtype, kv_data, device, kernel, generator
            )
            formats_used.add(layer_fmt.name)
        if agree:
            k_stats = with_failure(k_stats, "; ".join(agree))
        results.append(LayerResult(layer.name, k_stats, v_stats, not agree))
        if progress is not None:
            progress(ProgressEvent("layers", index + 1, len(target.layers), layer.name))
    results.extend(LayerResult(name, None, None, True, why) for name, why in target.refused)
    if target.refused and target.kind == "scales-output":
        agree_all = False
    if synthetic:
        shown = ", ".join(synthetic[:3]) + (
            f" and {len(synthetic) - 3} more" if len(synthetic) > 3 else ""
        )
        notes.append(
            f"{len(synthetic)} layer(s) ran on synthetic data: the activations file has no K/V "
            f"for {shown}"
        )
    if latent_layers:
        notes.append(
            f"{len(latent_layers)} MLA layer(s) cache one latent row [kv_c | k_pe] per token, "
            "written through concat_and_cache_mla with the k scale: their k and v statistics are "
            "the row's (the v scale is never read)"
        )
    if not results:
        notes.append("the target has no attention layer with scales to verify")
    if formats_used:
        notes.append(
            "layers in " + ", ".join(sorted(formats_used)) + " were written by kvscale's "
            "reference of the engine's write for that format"
            + ("" if kernel is None else " (and the NVFP4 Triton kernel where one exists)")
        )
    checked, not_checked = _coverage(results, kernel is not None)
    return VerifyResult(
        target=str(path),
        target_kind=target.kind,
        device=device_name,
        kernel=KERNEL_NAME if kernel is not None else None,
        kv_cache_dtype=kv_name,
        fp8_format=fmt.name,
        platform=target.platform,
        tokens=options.tokens,
        host_device_agree=agree_all,
        layers=tuple(results),
        notes=tuple(notes),
        thresholds=_thresholds(target, fmt),
        engine=target.engine,
        options=target.options,
        synthetic_layers=tuple(synthetic),
        model_eval=model_eval,
        strict=options.strict,
        checked=checked,
        not_checked=not_checked,
    )


def _measurable_dtypes(options: VerifyOptions, platform: str) -> tuple[str, ...]:
    rules = options.engine.rules
    return tuple(d for d in rules.kv_cache_dtypes if verifiable(rules.cache_format(d, platform)))


def _other_format_layer(
    layer: LayerScales,
    fmt: CacheFormat,
    kv_cache_dtype: str,
    kv_data: Mapping[str, tuple[Sample, str]],
    device: torch.device,
    kernel: Callable[..., None] | None,
    generator: torch.Generator,
) -> tuple[KindStats, KindStats]:
    """A layer whose cache is not FP8 (core/verify/formats.py)."""
    if fmt.scale_use is ScaleUse.NONE:
        return unquantized_layer(kv_data, (layer.k_host, layer.v_host))
    if fmt.scale_use is ScaleUse.IN_CACHE:
        return self_scaled_layer(kv_data, kv_cache_dtype)
    mismatched = None
    if kernel is not None:
        k_bad, v_bad, ambiguous = nvfp4_kernel_mismatches(
            layer, kv_data["k"][0].whole(), kv_data["v"][0].whole(), kv_cache_dtype, device,
            generator,
        )  # fmt: skip
        mismatched = (k_bad, v_bad)
        del ambiguous  # reported by benchmarks/gpu_nvfp4_check.py; not a failure
    return nvfp4_layer(layer, kv_data, kv_cache_dtype, mismatched)


def _thresholds(target: Target, fmt: FP8Format) -> dict[str, float]:
    """The limits the verdict applies: FP8's when a layer is FP8, else NVFP4's; none for
    self-scaled and unquantized caches (their error is reported, not judged)."""
    kinds = {
        layer.cache.format.scale_use if layer.cache is not None else ScaleUse.DIVISOR
        for layer in target.layers
    }
    if ScaleUse.DIVISOR in kinds:
        return {
            "saturated": SATURATION_LIMIT,
            "underflow": UNDERFLOW_LIMIT,
            "rel_rms_error": ERROR_LIMIT[fmt.name],
        }
    if ScaleUse.GLOBAL_SCALE in kinds:
        return {
            "saturated_blocks": SATURATION_LIMIT,
            "zero_blocks": UNDERFLOW_LIMIT,
            "rel_rms_error": NVFP4_ERROR_LIMIT,
        }
    return {}


def _coverage(
    results: Sequence[LayerResult], kernel_ran: bool
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """What a run checked and what it did not (issue: a pass on synthetic data is no evidence
    that the scales fit the model)."""
    checked = ["scales are finite and positive", "host and device scales agree"]
    not_checked = []
    if kernel_ran:
        checked.append("the kernel writes the reference's bytes")
    else:
        not_checked.append("the kernel's bytes (pass --gpu on a CUDA machine)")
    sources = {s.data for layer in results for s in (layer.k, layer.v) if s is not None}
    if sources and sources <= {"model", "activations"}:
        checked.append("the scales fit the real K/V (saturation, underflow, round-trip error)")
    else:
        not_checked.append(
            "whether the scales fit the model's real K/V: synthetic K/V are sized from the "
            "scales themselves (pass --data, or --activations)"
        )
    return tuple(checked), tuple(not_checked)


def _check_size(tokens: int, target: Target) -> None:
    """Refuse, before anything is drawn, a layer whose K or V is more work than
    ``max-verify-elements``, or whose one token row would not fit in a chunk
    (``core/verify/chunks.py``: memory follows the chunk, and a row is the least it can hold).
    Each refusal names where the numbers come from."""
    limit = MAX_VERIFY_ELEMENTS.value()
    origin = target.shape_origin
    for layer in target.layers:
        per_head = max(len(layer.k_device), len(layer.v_device))
        heads = per_head if per_head > 1 else target.kv_heads
        declared = origin.describe(per_head if per_head > 1 else None)
        row = heads * target.head_size
        elements = tokens * row
        if elements > limit:
            raise LimitExceededError(
                target.path,
                f"verifying {layer.name} needs {tokens:,} tokens x {heads:,} kv heads x "
                f"{target.head_size:,} head size = {elements:,} elements ({declared})",
                hint=MAX_VERIFY_ELEMENTS.describe() + "; or pass a smaller --tokens",
            )
        if not row_fits(row):
            raise LimitExceededError(
                target.path,
                f"{declared}: one token's K (and V) row of {layer.name} would be {heads:,} x "
                f"{target.head_size:,} = {row:,} values, more than verify holds at once "
                f"({chunk_values():,} values, its {CHUNK_BYTES >> 20} MiB chunk)",
                hint=f"{origin.fix}; real models stay under 32,768 values per row "
                "(Llama 3.1 405B: 8 x 128)",
            )


def _match_activations(path: Path, tensors: Mapping[str, Any], target: Target) -> None:
    """An activations file that feeds no layer is an input error, naming what was expected."""
    expected = [f"{layer.name}.{kind}" for layer in target.layers for kind in ("k", "v")]
    latent = [f"{layer.name}.{kind}" for layer in target.layers for kind in LATENT_KINDS]
    if not expected or any(name in tensors for name in (*expected, *latent)):
        return
    found = sorted(tensors)
    close = sorted(
        {m for name in expected[:64] for m in difflib.get_close_matches(name, found, n=1)}
    )
    shown_found = ", ".join(repr(n) for n in (close or found)[:3]) or "no tensors at all"
    raise InputError(
        path,
        f"no K/V for any layer of {target.path}: expected names like {expected[0]!r} "
        f"(<layer>.k / <layer>.v, layer names as in kvscale inspect); "
        f"{'closest found' if close else 'found'}: {shown_found}",
        hint="rename the tensors, or capture them with kvscale verify --model --activations-out",
    )


def check_pair(
    kv_data: Mapping[str, tuple[Sample, str]],
    path: Path | None,
    layer: str,
    scales: LayerScales | None = None,
) -> None:
    """K and V of one layer come together, in one dtype and one head layout, matching the
    target's per-head scales: otherwise the file is at fault, and the error names it."""
    (key, key_src), (value, value_src) = kv_data["k"], kv_data["v"]
    if (key_src == "synthetic") != (value_src == "synthetic"):
        have, lack = ("k", "v") if value_src == "synthetic" else ("v", "k")
        raise InputError(
            path or "activations",
            f"holds {layer}.{have} but no {layer}.{lack}: K and V of a layer are captured together",
        )
    if key.dtype != value.dtype:
        raise InputError(
            path or "activations",
            f"{layer}.k is {key.dtype} but {layer}.v is {value.dtype}: K and V of one layer "
            "share the model dtype",
        )
    if key.shape[1:] != value.shape[1:]:
        raise InputError(
            path or "activations",
            f"{layer}.k is [tokens, {key.shape[1]}, {key.shape[2]}] but {layer}.v is "
            f"[tokens, {value.shape[1]}, {value.shape[2]}]: K and V of one layer share the "
            "kv heads and head size",
        )
    if scales is not None:
        for kind, x, device in (("k", key, scales.k_device), ("v", value, scales.v_device)):
            if len(device) > 1 and len(x.shape) == 3 and x.shape[1] != len(device):
                raise InputError(
                    path or "activations",
                    f"{layer}.{kind} has {x.shape[1]} kv heads but the target holds "
                    f"{len(device)} per-head {kind} scales",
                )


def check_activation(t: torch.Tensor, path: Path | None, layer: str, kind: str) -> torch.Tensor:
    if t.dim() != 3 or t.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise InputError(
            path or "activations",
            f"{layer}.{kind} must be [tokens, num_kv_heads, head_size] in bf16/fp16/fp32, got "
            f"{list(t.shape)} {t.dtype}",
        )
    return t


# --- verify --model: the model's own K/V, and what the FP8 cache does to its predictions ---------
