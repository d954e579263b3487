"""``kvscale verify``: write every layer's K/V through the FP8 cache-write kernel with the resolved
scales and prove the result bit for bit against the CPU reference writer.

Core module: returns a ``VerifyResult`` and raises typed errors; the CLI renders. torch is
imported here (verify needs it), never by ``inspect``/``normalize``.

Thresholds (documented in the README and ``kvscale verify --help``), per layer and kind:

* every scale finite and positive, host float == device tensor (bit for bit);
* ``mismatched_bytes == 0`` when the kernel ran (padding slots must stay untouched);
* ``saturated <= SATURATION_LIMIT``: the fraction of values whose ``x / scale`` lies beyond the
  format's finite max (clipped to +-max: the scale is too small for the data);
* ``underflow <= UNDERFLOW_LIMIT``: the fraction of nonzero values stored as zero (the scale is
  far too large for the data);
* ``rel_rms_error <= ERROR_LIMIT[format]``: ``||dequant(fp8) - x|| / ||x||`` over finite values,
  the round-trip error a calibrated scale keeps near the format's rounding noise (about 3% for
  e4m3, 6% for e5m2).
"""

from __future__ import annotations

import difflib
import math
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from kvscale import scales_file
from kvscale.engine.options import EngineOptions
from kvscale.errors import (
    EnvironmentMissingError,
    InputError,
    LimitExceededError,
    RefusedError,
    UsageError,
    require,
)
from kvscale.floats import max_nan
from kvscale.io.safetensors import read_header
from kvscale.kernel.formats import FP8Format, resolve_kv_cache_dtype
from kvscale.kernel.reference import clipped, dequantize, reference_reshape_and_cache_flash
from kvscale.limits import MAX_VERIFY_ELEMENTS

if TYPE_CHECKING:
    from kvscale.engine.base import CacheWrite

SATURATION_LIMIT = 1e-3
UNDERFLOW_LIMIT = 1e-2
ERROR_LIMIT = {"e4m3fn": 0.08, "e4m3fnuz": 0.08, "e5m2": 0.16}
POISON_BYTE = 0xA5
"""What the caches hold before the write: any byte the kernel leaves must still be this."""
PADDING_FRACTION = 0.0625
BLOCK_SIZE = 16
DEFAULT_HEAD_SIZE = 128
DEFAULT_KV_HEADS = 8
KERNEL_NAME = "kvscale.kernel.triton_cache.reshape_and_cache_flash (Triton)"

ProgressCallback = Callable[[int, int, str], None]


@dataclass(frozen=True)
class ModelOptions:
    """``verify --model/--data``: run the model on real text, with the cache in FP8."""

    data: Path
    model: Path | None = None
    """The runnable model whose K/V are captured (None: the target itself)."""
    samples: int = 32
    seq_len: int = 1024
    dtype: str = "auto"
    max_ppl_increase: float | None = None
    """Fail when ppl_fp8 / ppl_unquantized - 1 exceeds this (relative)."""
    max_kl: float | None = None
    """Fail when the mean KL(unquantized || fp8) of the next-token distributions exceeds this."""
    activations_out: Path | None = None
    device: str | None = None
    """Where the model runs: ``cpu``, ``cuda``, ``auto`` (accelerate); None: ``cuda`` with
    ``--gpu``, else ``cpu``. The cache write's device follows ``--gpu`` alone."""


@dataclass(frozen=True)
class ModelEval:
    """What TARGET's scales do to the model end to end (``model_eval`` in the JSON)."""

    model: str
    samples: int
    tokens: int
    ppl_unquantized: float
    ppl_fp8: float
    ppl_unit_scales: float
    kl_mean: float
    kl_max: float
    kl_mean_unit_scales: float
    kl_max_unit_scales: float
    dtype: str
    device: str
    activations_out: str | None
    max_ppl_increase: float | None = None
    max_kl: float | None = None

    @property
    def ppl_increase(self) -> float:
        """Relative: ppl_fp8 / ppl_unquantized - 1."""
        return self.ppl_fp8 / self.ppl_unquantized - 1.0

    @property
    def failures(self) -> tuple[str, ...]:
        out = []
        if self.max_ppl_increase is not None and not self.ppl_increase <= self.max_ppl_increase:
            out.append(
                f"perplexity with the FP8 cache is {self.ppl_fp8:.4f} vs "
                f"{self.ppl_unquantized:.4f} unquantized ({self.ppl_increase:+.2%}), more than "
                "--max-ppl-increase "
                f"{self.max_ppl_increase:g}"
            )
        if self.max_kl is not None and not self.kl_mean <= self.max_kl:
            out.append(
                f"mean KL of the next-token distributions is {self.kl_mean:.4g}, more than "
                f"--max-kl {self.max_kl:g}"
            )
        return tuple(out)


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


@dataclass(frozen=True)
class LayerScales:
    """One layer's scales as a verify target holds them."""

    name: str
    k_host: float
    v_host: float
    k_device: tuple[float, ...]
    v_device: tuple[float, ...]
    rule: str | None = None
    q_scale: tuple[float, ...] = ()
    prob_scale: tuple[float, ...] = ()
    disagreements: tuple[str, ...] = ()
    """Host/device differences found when the target was read (scales outputs)."""


@dataclass(frozen=True)
class Target:
    path: str
    kind: str
    """``normalize-output`` or ``checkpoint``."""
    kv_cache_dtype: str
    platform: str
    layers: tuple[LayerScales, ...]
    head_size: int
    kv_heads: int = DEFAULT_KV_HEADS
    notes: tuple[str, ...] = ()
    refused: tuple[tuple[str, str], ...] = ()
    """(layer, why) for layers the engine refuses: nothing to verify, and the run fails."""
    engine: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, str] = field(default_factory=dict)
    """The engine options the scales were resolved with (as the user chose them)."""


@dataclass(frozen=True)
class KindStats:
    scale: float
    absmax: float
    saturated: float
    underflow: float
    rel_rms_error: float
    mismatched_bytes: int | None
    data: str
    """``activations``, ``model`` or ``synthetic``."""
    failures: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures


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

    @property
    def ok(self) -> bool:
        return (
            bool(self.layers)
            and self.host_device_agree
            and all(layer.passed for layer in self.layers)
            and not (self.model_eval is not None and self.model_eval.failures)
        )


# --- loading a target ----------------------------------------------------------------------------


def load_target(
    path: str | os.PathLike[str],
    options: EngineOptions | None = None,
    *,
    revision: str | None = None,
) -> Target:
    """A scales output directory (``kvscale normalize``/``calibrate``), or a checkpoint (local or
    remote) resolved exactly as ``inspect`` resolves it with the same options."""
    options = options or EngineOptions()
    if Path(path).is_dir() and scales_file.json_path_of(path) is not None:
        return _load_scales_output(Path(path), options)
    from kvscale.core.inspect import inspect_checkpoint

    report = inspect_checkpoint(path, options, revision=revision)
    layers: list[LayerScales] = []
    refused: list[tuple[str, str]] = []
    for layer in report.layers:
        if layer.rule.value == "error" or layer.k_scale is None or layer.v_scale is None:
            refused.append((layer.name, layer.error or "the engine refuses this layer"))
            continue
        k = layer.k_scale if isinstance(layer.k_scale, tuple) else (layer.k_scale,)
        v = layer.v_scale if isinstance(layer.v_scale, tuple) else (layer.v_scale,)
        layers.append(LayerScales(layer.name, max_nan(k), max_nan(v), k, v, layer.rule.value))
    return Target(
        path=str(path),
        kind="checkpoint",
        kv_cache_dtype=report.kv_cache_dtype,
        platform=report.platform,
        layers=tuple(layers),
        head_size=report.shape.head_size or DEFAULT_HEAD_SIZE,
        kv_heads=report.shape.kv_heads or DEFAULT_KV_HEADS,
        refused=tuple(refused),
        engine=report.engine,
        options=report.options.chosen(),
    )


def _load_scales_output(path: Path, options: EngineOptions) -> Target:
    scales = scales_file.read_scales(path)
    device = scales_file.read_device_scales(path)
    disagreements = scales_file.check_agreement(scales, device)
    for key, wanted, held in (
        ("kv_cache_dtype", options.kv_cache_dtype, scales.kv_cache_dtype),
        ("platform", options.platform.value if options.platform else None, scales.platform),
    ):
        if wanted is not None and wanted != held:
            raise UsageError(
                f"{path} holds scales resolved for {key.replace('_', '-')} {held}; "
                f"--{key.replace('_', '-')} {wanted} cannot change them",
                hint=f"normalize again with --{key.replace('_', '-')} {wanted}, or drop the option",
            )
    engine = scales.get("engine") if isinstance(scales.get("engine"), Mapping) else {}
    if options.engine is not None and engine and engine.get("name") != options.engine.value:
        raise UsageError(
            f"{path} holds scales resolved for {engine.get('name')}; --engine "
            f"{options.engine.value} cannot change them",
            hint="normalize again with that --engine, or drop the option",
        )
    layers: list[LayerScales] = []
    for entry in scales.layers:
        if entry.skipped:
            continue
        values = {kind: entry.values.get(kind) for kind in ("k_scale", "v_scale")}
        if values["k_scale"] is None or values["v_scale"] is None:
            raise InputError(scales.path or path, f"layer {entry.name!r} has no k/v values")

        def flat(kind: str, entry: scales_file.LayerEntry = entry) -> tuple[float, ...]:
            held = device.get(f"{entry.name}.{kind}")
            if held is not None:
                return held
            value = entry.values.get(kind)
            if value is None:
                return ()
            return value if isinstance(value, tuple) else (value,)

        host_k, host_v = entry.host("k_scale"), entry.host("v_scale")
        assert host_k is not None and host_v is not None
        k_heads, v_heads = len(flat("k_scale")), len(flat("v_scale"))
        if k_heads > 1 and v_heads > 1 and k_heads != v_heads:
            raise InputError(
                path,
                f"{entry.name} holds {k_heads} per-head k scales but {v_heads} per-head v "
                "scales: K and V of a layer share its kv heads",
            )
        layers.append(
            LayerScales(
                entry.name,
                host_k,
                host_v,
                flat("k_scale"),
                flat("v_scale"),
                entry.rule,
                flat("q_scale"),
                flat("prob_scale"),
                tuple(disagreements.get(entry.name, ())),
            )
        )
    known = {entry.name for entry in scales.layers}
    orphans = tuple(
        f"{name}: " + "; ".join(problems)
        for name, problems in disagreements.items()
        if name not in known
    )
    return Target(
        str(path),
        "scales-output",
        scales.kv_cache_dtype,
        scales.platform,
        tuple(layers),
        scales.head_size or DEFAULT_HEAD_SIZE,
        scales.num_kv_heads or DEFAULT_KV_HEADS,
        notes=tuple(
            f"{scales_file.TENSORS_NAME} holds a layer the JSON lacks: {o}" for o in orphans
        ),
        refused=tuple((o.split(":", 1)[0], o) for o in orphans),
        engine={str(k): str(v) for k, v in engine.items()},
        options={},
    )


def host_device_agree(layer: LayerScales) -> list[str]:
    """Differences between the host floats and the device tensors of one layer."""
    problems = list(layer.disagreements)
    for kind, host, device in (
        ("k", layer.k_host, layer.k_device),
        ("v", layer.v_host, layer.v_device),
    ):
        if not device:
            problems.append(f"{kind}_scale device tensor is empty")
            continue
        expected = device[0] if len(device) == 1 else max_nan(device)
        if not scales_file.same_bits(host, expected):
            problem = f"{kind}_scale host {host!r} != device {expected!r}"
            if problem not in problems:
                problems.append(problem)
    return problems


# --- data -------------------------------------------------------------------------------------


def synthetic_activations(
    tokens: int,
    heads: int,
    head_size: int,
    scale: Sequence[float],
    fmt: FP8Format,
    generator: torch.Generator,
) -> torch.Tensor:
    """K or V that looks like real attention activations, sized to the scale.

    Student-t (4 degrees of freedom) per element for heavy tails, times per-channel magnitudes
    with a few outlier channels (as in real K projections), each head scaled so that its
    absolute max is about 1.02 x scale x fp8_max: the bulk exercises precision, the largest few
    values saturation. Samples too small for the saturation budget end just under the limit.
    """
    normal = torch.randn((tokens, heads, head_size), generator=generator, dtype=torch.float32)
    chi2 = torch.randn((tokens, heads, head_size, 4), generator=generator, dtype=torch.float32)
    t = normal / torch.sqrt(chi2.pow(2).sum(-1) / 4)
    channel = torch.ones(head_size)
    outliers = torch.randperm(head_size, generator=generator)[: max(1, head_size // 64)]
    channel[outliers] = 6.0
    x = t * channel
    per_head = torch.tensor(list(scale), dtype=torch.float32).reshape(-1)
    if per_head.numel() == 1:
        per_head = per_head.expand(heads)
    valid = torch.isfinite(per_head) & (per_head > 0)
    per_head = torch.where(valid, per_head, torch.ones_like(per_head))
    amax = x.abs().amax(dim=(0, 2))
    # Calibration sets scale = amax / fp8_max on its own data; new data overshoots a little.
    # Put the max 2% past the limit, so the largest few values saturate, when the sample is
    # large enough for those few to stay well inside the saturation budget.
    overshoot = 1.02 if tokens * head_size * SATURATION_LIMIT >= 4 else 0.98
    factor = per_head * fmt.max_finite * overshoot / amax.clamp_min(1e-30)
    return (x * factor.reshape(1, heads, 1)).to(torch.bfloat16)


def _load_activations(path: Path, target: Target) -> dict[str, Any]:
    """The target's K/V from a ``--activations`` file: validated by kvscale's own header checks
    first, each tensor bounded by ``max-verify-elements``, and only the tensors of the target's
    layers read (never the whole file)."""
    header = read_header(path)
    wanted = {f"{layer.name}.{kind}" for layer in target.layers for kind in ("k", "v")}
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
    path: str | os.PathLike[str], options: VerifyOptions, progress: ProgressCallback | None = None
) -> VerifyResult:
    if options.tokens < 1 or options.tokens > 1 << 22:
        raise UsageError(f"--tokens {options.tokens} is out of range", hint="use 1 .. 4194304")
    options.engine.rules.require("verify")
    target = load_target(path, options.engine, revision=options.revision)
    notes = list(target.notes)
    kv_name, fmt = _fmt_for(target.kv_cache_dtype, target.platform)
    if kv_name != target.kv_cache_dtype:
        notes.append(
            f"the target's KV-cache dtype {target.kv_cache_dtype} is not an fp8 one; verified "
            f"as {kv_name}"
        )
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
        if kernel is None:
            raise UsageError(
                "--engine-kernel compares the engine's own GPU cache write with kvscale's "
                "kernel: it needs --gpu"
            )
        from kvscale.engine.vllm.cache_write import load_vllm_kernel, reshape_and_cache_flash

        if options.engine.engine_name != "vllm":
            raise UsageError("--engine-kernel runs vLLM's own kernel: use it with --engine vllm")
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
        if options.activations is not None:
            raise UsageError(
                "--activations and --data exclude each other (--data captures the K/V by "
                "running the model)"
            )
        with tempfile.TemporaryDirectory(prefix="kvscale-verify-") as scratch:
            saved = options.model.activations_out or Path(scratch) / "activations.safetensors"
            model_eval = _run_model(
                path, target, options, fmt, kv_name, kernel, saved, progress, engine_write
            )
            activations = _load_activations(saved, target)
        data_label = "model"
        activations_path = saved
    elif options.activations is not None:
        activations = _load_activations(options.activations, target)
    generator = torch.Generator().manual_seed(options.seed)
    results: list[LayerResult] = []
    synthetic: list[str] = []
    agree_all = True
    for index, layer in enumerate(target.layers):
        agree = host_device_agree(layer)
        agree_all = agree_all and not agree
        kv_data: dict[str, tuple[torch.Tensor, str]] = {}
        heads = max(len(layer.k_device), len(layer.v_device))
        for kind, scale in (("k", layer.k_device), ("v", layer.v_device)):
            captured = activations.get(f"{layer.name}.{kind}")
            if captured is not None:
                kv_data[kind] = (
                    _check_activation(captured, activations_path, layer.name, kind),
                    data_label,
                )
            else:
                h = heads if heads > 1 else target.kv_heads
                kv_data[kind] = (
                    synthetic_activations(
                        options.tokens, h, target.head_size, scale, fmt, generator
                    ),
                    "synthetic",
                )
        if activations and any(src == "synthetic" for _, src in kv_data.values()):
            synthetic.append(layer.name)
        _check_pair(kv_data, activations_path, layer.name, layer)
        k_stats, v_stats = _run_layer(
            layer, kv_data, kv_name, fmt, device, kernel, generator, engine_write, engine_kernel
        )
        if agree:
            k_stats = _with_failure(k_stats, "; ".join(agree))
        results.append(LayerResult(layer.name, k_stats, v_stats, not agree))
        if progress is not None:
            progress(index + 1, len(target.layers), layer.name)
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
    if not results:
        notes.append("the target has no attention layer with scales to verify")
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
        thresholds={
            "saturated": SATURATION_LIMIT,
            "underflow": UNDERFLOW_LIMIT,
            "rel_rms_error": ERROR_LIMIT[fmt.name],
        },
        engine=target.engine,
        options=target.options,
        synthetic_layers=tuple(synthetic),
        model_eval=model_eval,
    )


def _check_size(tokens: int, target: Target) -> None:
    """Refuse caches larger than ``max-verify-elements`` before allocating anything."""
    limit = MAX_VERIFY_ELEMENTS.value()
    for layer in target.layers:
        heads = max(len(layer.k_device), len(layer.v_device))
        heads = heads if heads > 1 else target.kv_heads
        elements = tokens * heads * target.head_size
        if elements > limit:
            raise LimitExceededError(
                target.path,
                f"verifying {layer.name} needs {tokens:,} tokens x {heads:,} kv heads x "
                f"{target.head_size:,} head size = {elements:,} elements",
                hint=MAX_VERIFY_ELEMENTS.describe() + "; or pass a smaller --tokens",
            )


def _match_activations(path: Path, tensors: Mapping[str, Any], target: Target) -> None:
    """An activations file that feeds no layer is an input error, naming what was expected."""
    expected = [f"{layer.name}.{kind}" for layer in target.layers for kind in ("k", "v")]
    if not expected or any(name in tensors for name in expected):
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


def _check_pair(
    kv_data: Mapping[str, tuple[torch.Tensor, str]],
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
            if len(device) > 1 and x.dim() == 3 and x.shape[1] != len(device):
                raise InputError(
                    path or "activations",
                    f"{layer}.{kind} has {x.shape[1]} kv heads but the target holds "
                    f"{len(device)} per-head {kind} scales",
                )


def _check_activation(t: torch.Tensor, path: Path | None, layer: str, kind: str) -> torch.Tensor:
    if t.dim() != 3 or t.dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise InputError(
            path or "activations",
            f"{layer}.{kind} must be [tokens, num_kv_heads, head_size] in bf16/fp16/fp32, got "
            f"{list(t.shape)} {t.dtype}",
        )
    return t


def _with_failure(stats: KindStats, reason: str) -> KindStats:
    return KindStats(
        stats.scale,
        stats.absmax,
        stats.saturated,
        stats.underflow,
        stats.rel_rms_error,
        stats.mismatched_bytes,
        stats.data,
        (*stats.failures, reason),
    )


def _run_layer(
    layer: LayerScales,
    kv_data: Mapping[str, tuple[torch.Tensor, str]],
    kv_name: str,
    fmt: FP8Format,
    device: torch.device,
    kernel: Callable[..., None] | None,
    generator: torch.Generator,
    engine_write: CacheWrite | None = None,
    engine_kernel: Callable[..., None] | None = None,
) -> tuple[KindStats, KindStats]:
    """Write one layer's K/V through the cache write and measure it.

    ``kernel`` (kvscale's, on the GPU) is compared byte for byte with the reference writer.
    ``engine_write`` (the serving engine's own write where it differs from vLLM's CUDA kernel,
    e.g. SGLang's or vLLM's Triton backend) gives the bytes the statistics describe.
    ``engine_kernel`` (the engine's own GPU function, ``--engine-kernel``) is compared with
    kvscale's kernel: each differing byte is reported as an engine problem."""
    key, key_src = kv_data["k"]
    value, value_src = kv_data["v"]
    if key.shape != value.shape:
        # K and V must share a slot mapping; fall back to the smaller common token count.
        tokens = min(key.shape[0], value.shape[0])
        key, value = key[:tokens], value[:tokens]
    tokens, heads, head_size = key.shape
    k_scale = _scale_tensor(layer.k_device, heads)
    v_scale = _scale_tensor(layer.v_device, heads)
    num_blocks = max(1, -(-int(tokens * (1 + PADDING_FRACTION)) // BLOCK_SIZE) + 1)
    slots = torch.randperm(num_blocks * BLOCK_SIZE, generator=generator)[:tokens]
    padding = torch.rand(tokens, generator=generator) < PADDING_FRACTION
    slot_mapping = torch.where(padding, torch.full_like(slots, -1), slots).to(torch.int64)
    # vLLM's flash layout: one [blocks, 2, block_size, heads, head] tensor; K and V are
    # strided views of it.
    ref_cache = torch.full(
        (num_blocks, 2, BLOCK_SIZE, heads, head_size), POISON_BYTE, dtype=torch.uint8
    )
    reference_reshape_and_cache_flash(
        key, value, ref_cache[:, 0], ref_cache[:, 1], slot_mapping, kv_name, k_scale, v_scale
    )
    mismatched: dict[str, int | None] = {"k": None, "v": None}
    if kernel is not None:
        dev_cache = torch.full_like(ref_cache, POISON_BYTE, device=device)
        kernel(
            key.to(device),
            value.to(device),
            dev_cache[:, 0],
            dev_cache[:, 1],
            slot_mapping.to(device),
            kv_name,
            k_scale.to(device),
            v_scale.to(device),
        )
        torch.cuda.synchronize(device)
        got = dev_cache.cpu()
        for i, kind in enumerate(("k", "v")):
            mismatched[kind] = int((got[:, i] != ref_cache[:, i]).sum())
    engine_differs: dict[str, int] = {"k": 0, "v": 0}
    if engine_kernel is not None and kernel is not None:
        engine_cache = torch.full_like(ref_cache, POISON_BYTE, device=device)
        engine_kernel(
            key.to(device), value.to(device), engine_cache[:, 0], engine_cache[:, 1],
            slot_mapping.to(device), kv_name, k_scale.to(device), v_scale.to(device),
        )  # fmt: skip
        torch.cuda.synchronize(device)
        theirs, ours = engine_cache.cpu(), dev_cache.cpu()
        for i, kind in enumerate(("k", "v")):
            engine_differs[kind] = int((theirs[:, i] != ours[:, i]).sum())
    live = slot_mapping >= 0
    blocks = torch.div(slot_mapping[live], BLOCK_SIZE, rounding_mode="floor")
    offsets = slot_mapping[live] - blocks * BLOCK_SIZE
    out = []
    for i, (kind, x, src, scale, host) in enumerate(
        (("k", key, key_src, k_scale, layer.k_host), ("v", value, value_src, v_scale, layer.v_host))
    ):
        written = x[: slot_mapping.shape[0]][live]
        stored = ref_cache[:, i][blocks, offsets]
        stored_kv = kv_name
        if engine_write is not None:
            stored = engine_write.write(written, scale)
            stored_kv = engine_write.stored_kv_cache_dtype
            if engine_write.scale_read is not None:
                scale = engine_write.scale_read(scale)
        stats = _stats(written, stored, scale, stored_kv, fmt, host, mismatched[kind], src)
        if engine_differs[kind]:
            stats = _with_failure(
                stats,
                f"the engine's own cache write differs from kvscale's kernel in "
                f"{engine_differs[kind]} bytes (engine problem: its cache holds other values "
                "than the scales say)",
            )
        out.append(stats)
    return out[0], out[1]


def _scale_tensor(values: tuple[float, ...], heads: int) -> torch.Tensor:
    t = torch.tensor(values, dtype=torch.float32)
    if t.numel() not in (1, heads):
        raise InputError("scales", f"{t.numel()} per-head scales for {heads} kv heads")
    return t if t.numel() > 1 else t.reshape(1)


def _stats(
    x: torch.Tensor,
    stored: torch.Tensor,
    scale: torch.Tensor,
    kv_name: str,
    fmt: FP8Format,
    host: float,
    mismatched: int | None,
    data: str,
) -> KindStats:
    xf = x.to(torch.float32)
    s = scale.reshape(-1, 1) if scale.numel() > 1 else scale.reshape(())
    finite = torch.isfinite(xf)
    y = xf / s
    count = max(1, int(finite.sum()))
    saturated = float((clipped(y, fmt) & finite).sum()) / count
    deq = dequantize(stored, scale, kv_name)
    nonzero = finite & (xf != 0)
    underflow = float(((deq == 0) & nonzero).sum()) / max(1, int(nonzero.sum()))
    xd, dd = xf[finite].double(), deq[finite].double()
    denom = float(xd.pow(2).sum())
    err = math.sqrt(float((dd - xd).pow(2).sum()) / denom) if denom > 0 else 0.0
    absmax = float(xf[finite].abs().max()) if bool(finite.any()) else 0.0
    failures: list[str] = []
    scales = scale.reshape(-1).tolist()
    valid_scale = all(math.isfinite(v) and v > 0 for v in scales)
    if not valid_scale:
        # A zero, negative or NaN scale: what it does to the data (everything saturates, or
        # nothing survives) follows from that alone; saturation and underflow say nothing more.
        failures.append(
            f"the scale ({host:.6g}) is not a positive finite number; write the calibrated "
            "amax / fp8_max (kvscale calibrate)"
        )
    if x.numel() == 0:
        failures.append("no tokens to verify (the activations hold 0 tokens)")
    elif not bool(finite.any()):
        failures.append("no finite values: the activations are all NaN or infinite")
    if mismatched:
        failures.append(f"{mismatched} cache bytes differ from the reference writer")
    if valid_scale and saturated > SATURATION_LIMIT:
        need = absmax / fmt.max_finite
        failures.append(
            f"{saturated:.2%} of values saturate at +-{fmt.max_finite:g} x scale: the scale "
            f"({host:.6g}) is too small for this data (absmax {absmax:.6g} needs >= {need:.6g}); "
            "recalibrate the KV scales on representative data"
        )
    elif valid_scale and underflow > UNDERFLOW_LIMIT:
        failures.append(
            f"{underflow:.2%} of nonzero values are stored as zero: the scale ({host:.6g}) is too "
            "large for this data; recalibrate"
        )
    if (
        valid_scale
        and err > ERROR_LIMIT[fmt.name]
        and not (saturated > SATURATION_LIMIT or underflow > UNDERFLOW_LIMIT)
    ):
        failures.append(
            f"round-trip error {err:.3g} exceeds {ERROR_LIMIT[fmt.name]:g} for {fmt.name}"
        )
    return KindStats(host, absmax, saturated, underflow, err, mismatched, data, tuple(failures))


# --- verify --model: the model's own K/V, and what the FP8 cache does to its predictions ---------


def _kernel_quantize(kernel: Callable[..., None], kv_name: str) -> Callable[..., torch.Tensor]:
    """``evaluate_model``'s quantize step through the cache-write kernel: the tokens in order
    into a scratch cache (K and V caches both get ``x``), the K cache read back as bits."""

    def quantize(x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        tokens, heads, head_size = x.shape
        blocks = max(1, -(-tokens // BLOCK_SIZE))
        cache = torch.empty(
            (blocks, 2, BLOCK_SIZE, heads, head_size), dtype=torch.uint8, device=x.device
        )
        slots = torch.arange(tokens, dtype=torch.int64, device=x.device)
        s = scale.reshape(-1).to(device=x.device, dtype=torch.float32).contiguous()
        kernel(x.contiguous(), x.contiguous(), cache[:, 0], cache[:, 1], slots, kv_name, s, s)
        return cache[:, 0].reshape(blocks * BLOCK_SIZE, heads, head_size)[:tokens]

    return quantize


def _run_model(
    path: str | os.PathLike[str],
    target: Target,
    options: VerifyOptions,
    fmt: FP8Format,
    kv_name: str,
    kernel: Callable[..., None] | None,
    activations_file: Path,
    progress: ProgressCallback | None,
    engine_write: CacheWrite | None = None,
) -> ModelEval:
    """Run the model on the data three times (unquantized, FP8 at the target's scales, FP8 at
    1.0) and save the unquantized K/V to ``activations_file`` for the per-layer statistics."""
    import functools

    from kvscale.core.calibrate.data import load_calibration_data
    from kvscale.core.calibrate.evaluate import evaluate_model
    from kvscale.core.calibrate.model import load_model
    from kvscale.kernel.reference import quantize_to_bits

    assert options.model is not None
    model_options = options.model
    model_path = model_options.model
    if model_path is None:
        if target.kind != "checkpoint" or not Path(path).is_dir():
            raise UsageError(
                f"{path} is not a runnable model: pass --model DIR (the model whose K/V to "
                "capture; the scales stay the target's)"
            )
        model_path = Path(path)
    if target.refused:
        name, why = target.refused[0]
        raise RefusedError(
            f"the engine refuses {len(target.refused)} layer(s) of {target.path} ({name}: {why}); "
            "the model cannot run with its scales"
        )
    if model_options.activations_out is not None:
        from kvscale.io.staging import check_not_input

        # Never onto the model, the target or the data (nor inside the model's directory).
        check_not_input(
            Path(model_options.activations_out),
            [model_path, Path(path), Path(model_options.data)],
            "--activations-out",
        )
    device = model_options.device or ("cuda" if options.gpu else "cpu")
    loaded = load_model(model_path, dtype=model_options.dtype, device=device)
    data = load_calibration_data(
        model_options.data,
        seq_len=model_options.seq_len,
        max_samples=model_options.samples,
        encode=loaded.encode if loaded.has_tokenizer else None,
        vocab_size=loaded.vocab_size,
    )
    scales = {
        layer.name: (
            layer.k_device if len(layer.k_device) > 1 else layer.k_device[0],
            layer.v_device if len(layer.v_device) > 1 else layer.v_device[0],
        )
        for layer in target.layers
    }
    quantize: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    if engine_write is not None:
        # The FP8 cache the model reads is the one the serving engine writes.
        quantize = engine_write.write
        fmt = resolve_kv_cache_dtype(engine_write.stored_kv_cache_dtype).fp8 or fmt
    elif kernel is not None:
        quantize = _kernel_quantize(kernel, kv_name)
    else:
        quantize = functools.partial(quantize_to_bits, fmt=fmt)
    evaluation = evaluate_model(
        loaded,
        data.samples,
        scales,
        quantize=quantize,
        fp8_dtype=getattr(torch, fmt.torch_dtype),
        activations_out=activations_file,
        progress=(
            None
            if progress is None
            else lambda done, total, tokens: progress(done, total, f"{tokens} tokens")
        ),
    )
    unq, fp8, unit = (evaluation.variant(name) for name in ("unquantized", "fp8", "unit_scales"))
    return ModelEval(
        model=str(model_path),
        samples=evaluation.samples,
        tokens=evaluation.tokens,
        ppl_unquantized=unq.ppl,
        ppl_fp8=fp8.ppl,
        ppl_unit_scales=unit.ppl,
        kl_mean=fp8.kl_mean,
        kl_max=fp8.kl_max,
        kl_mean_unit_scales=unit.kl_mean,
        kl_max_unit_scales=unit.kl_max,
        dtype=loaded.dtype,
        device=loaded.device,
        activations_out=(
            str(model_options.activations_out) if model_options.activations_out else None
        ),
        max_ppl_increase=model_options.max_ppl_increase,
        max_kl=model_options.max_kl,
    )
