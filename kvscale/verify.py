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

import json
import math
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import (
    EnvironmentMissingError,
    InputError,
    UsageError,
)
from kvscale.floats import decode_values, max_nan
from kvscale.kernel.formats import FP8Format, resolve_kv_cache_dtype
from kvscale.kernel.reference import dequantize, reference_reshape_and_cache_flash
from kvscale.safetensors_io import TensorInfo, read_header, read_tensor_bytes

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
class VerifyOptions:
    gpu: bool = False
    activations: Path | None = None
    tokens: int = 4096
    seed: int = 0
    kv_cache_dtype: str | None = None
    """Override the target's KV-cache dtype (an fp8 dtype); default: the target's own."""


@dataclass(frozen=True)
class LayerScales:
    """One layer's scales as a verify target holds them."""

    name: str
    k_host: float
    v_host: float
    k_device: tuple[float, ...]
    v_device: tuple[float, ...]
    rule: str | None = None


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


@dataclass(frozen=True)
class KindStats:
    scale: float
    absmax: float
    saturated: float
    underflow: float
    rel_rms_error: float
    mismatched_bytes: int | None
    data: str
    """``activations`` or ``synthetic``."""
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

    @property
    def ok(self) -> bool:
        return (
            bool(self.layers)
            and self.host_device_agree
            and all(layer.passed for layer in self.layers)
        )


# --- loading a target ----------------------------------------------------------------------------


def _json_float(value: Any, where: str) -> float:
    if isinstance(value, bool):
        raise InputError(where, f"scale value {value!r} is not a number")
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise InputError(where, f"scale value {value!r} is not a number")


def _same_bits(a: float, b: float) -> bool:
    if math.isnan(a) and math.isnan(b):
        return True
    return struct.pack("<f", a) == struct.pack("<f", b) if math.isfinite(a) else a == b


def load_target(path: Path) -> Target:
    """A ``kvscale normalize`` output directory, or a checkpoint resolved with ``inspect``."""
    if path.is_dir() and (path / "kv_scales.json").is_file():
        return _load_normalize_output(path)
    from kvscale.inspect import InspectOptions, inspect_checkpoint

    report = inspect_checkpoint(path, InspectOptions())
    layers: list[LayerScales] = []
    notes: list[str] = []
    refused: list[tuple[str, str]] = []
    for layer in report.layers:
        if layer.rule.value == "error" or layer.k_scale is None or layer.v_scale is None:
            refused.append((layer.name, layer.error or "the engine refuses this layer"))
            continue
        k = layer.k_scale if isinstance(layer.k_scale, tuple) else (layer.k_scale,)
        v = layer.v_scale if isinstance(layer.v_scale, tuple) else (layer.v_scale,)
        layers.append(LayerScales(layer.name, max_nan(k), max_nan(v), k, v, layer.rule.value))
    head_size = report.shape.head_size or DEFAULT_HEAD_SIZE
    return Target(
        path=str(path),
        kind="checkpoint",
        kv_cache_dtype=report.kv_cache_dtype,
        platform=report.platform,
        layers=tuple(layers),
        head_size=head_size,
        kv_heads=report.shape.kv_heads or DEFAULT_KV_HEADS,
        notes=tuple(notes),
        refused=tuple(refused),
    )


def _load_normalize_output(path: Path) -> Target:
    json_path = path / "kv_scales.json"
    st_path = path / "kv_scales.safetensors"
    try:
        doc = json.loads(json_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(json_path, f"cannot read kv_scales.json ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("kvscale.scales/"):
        raise InputError(json_path, "not a kvscale.scales/1 document")
    if not st_path.is_file():
        raise InputError(st_path, "missing: a normalize output holds kv_scales.safetensors too")
    header = read_header(st_path)
    layers_doc = doc.get("layers")
    if not isinstance(layers_doc, dict):
        raise InputError(json_path, "has no layers object")
    layers: list[LayerScales] = []
    head_size = DEFAULT_HEAD_SIZE
    if isinstance(doc.get("head_size"), int) and doc["head_size"] > 0:
        head_size = doc["head_size"]
    for name, entry in layers_doc.items():
        if not isinstance(entry, dict):
            raise InputError(json_path, f"layer {name!r} is not an object")
        device: dict[str, tuple[float, ...]] = {}
        for kind in ("k_scale", "v_scale"):
            info = header.tensors.get(f"{name}.{kind}")
            if info is None:
                raise InputError(st_path, f"has no tensor {name}.{kind}")
            device[kind] = _device_values(st_path, info)
        layers.append(
            LayerScales(
                name,
                _json_float(entry.get("k_scale"), str(json_path)),
                _json_float(entry.get("v_scale"), str(json_path)),
                device["k_scale"],
                device["v_scale"],
                entry.get("rule") if isinstance(entry.get("rule"), str) else None,
            )
        )
    kv = str(doc["kv_cache_dtype"]) if isinstance(doc.get("kv_cache_dtype"), str) else "fp8"
    platform = str(doc["platform"]) if doc.get("platform") in ("ocp", "fnuz") else "ocp"
    kv_heads = doc.get("num_kv_heads")
    if not isinstance(kv_heads, int) or isinstance(kv_heads, bool) or kv_heads < 1:
        kv_heads = DEFAULT_KV_HEADS
    return Target(str(path), "normalize-output", kv, platform, tuple(layers), head_size, kv_heads)


def _device_values(path: Path, info: TensorInfo) -> tuple[float, ...]:
    if info.dtype != "F32":
        raise InputError(path, f"tensor {info.name!r} is {info.dtype}; device scales are float32")
    return tuple(decode_values("F32", read_tensor_bytes(path, info)))


def host_device_agree(layer: LayerScales) -> list[str]:
    """Differences between the host floats and the device tensors of one layer."""
    problems = []
    for kind, host, device in (
        ("k", layer.k_host, layer.k_device),
        ("v", layer.v_host, layer.v_device),
    ):
        if not device:
            problems.append(f"{kind}_scale device tensor is empty")
            continue
        expected = device[0] if len(device) == 1 else max_nan(device)
        if not _same_bits(host, expected):
            problems.append(f"{kind}_scale host {host!r} != device {expected!r}")
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


def _load_activations(path: Path) -> dict[str, Any]:
    """Tensors of a ``--activations`` file, validated by kvscale's own header checks first."""
    read_header(path)
    from safetensors.torch import load_file

    try:
        return dict(load_file(str(path)))
    except Exception as exc:  # safetensors raises its own error types
        raise InputError(path, f"cannot load activations ({exc})") from None


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
    try:
        import triton  # noqa: F401
    except ImportError:
        raise EnvironmentMissingError(
            "--gpu: Triton is not installed", hint="pip install triton (or the [triton] extra)"
        ) from None
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
    path: Path, options: VerifyOptions, progress: ProgressCallback | None = None
) -> VerifyResult:
    if options.tokens < 1 or options.tokens > 1 << 22:
        raise UsageError(f"--tokens {options.tokens} is out of range", hint="use 1 .. 4194304")
    if options.kv_cache_dtype is not None and options.kv_cache_dtype not in (
        "fp8",
        "fp8_e4m3",
        "fp8_e5m2",
    ):
        raise UsageError(
            f"--kv-cache-dtype {options.kv_cache_dtype!r} is not an fp8 cache dtype",
            hint="use fp8, fp8_e4m3 or fp8_e5m2",
        )
    target = load_target(path)
    kv_name = options.kv_cache_dtype or target.kv_cache_dtype
    notes = list(target.notes)
    kv_name, fmt = _fmt_for(kv_name, target.platform)
    if kv_name != (options.kv_cache_dtype or target.kv_cache_dtype):
        notes.append(
            f"the target's KV-cache dtype {target.kv_cache_dtype} is not an fp8 one; verified "
            f"as {kv_name}"
        )
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
    activations = _load_activations(options.activations) if options.activations else {}
    generator = torch.Generator().manual_seed(options.seed)
    results: list[LayerResult] = []
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
                    _check_activation(captured, options.activations, layer.name, kind),
                    "activations",
                )
            else:
                h = heads if heads > 1 else target.kv_heads
                kv_data[kind] = (
                    synthetic_activations(
                        options.tokens, h, target.head_size, scale, fmt, generator
                    ),
                    "synthetic",
                )
        k_stats, v_stats = _run_layer(layer, kv_data, kv_name, fmt, device, kernel, generator)
        if agree:
            k_stats = _with_failure(k_stats, "; ".join(agree))
        results.append(LayerResult(layer.name, k_stats, v_stats, not agree))
        if progress is not None:
            progress(index + 1, len(target.layers), layer.name)
    results.extend(LayerResult(name, None, None, True, why) for name, why in target.refused)
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
) -> tuple[KindStats, KindStats]:
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
    live = slot_mapping >= 0
    blocks = torch.div(slot_mapping[live], BLOCK_SIZE, rounding_mode="floor")
    offsets = slot_mapping[live] - blocks * BLOCK_SIZE
    out = []
    for i, (kind, x, src, scale, host) in enumerate(
        (("k", key, key_src, k_scale, layer.k_host), ("v", value, value_src, v_scale, layer.v_host))
    ):
        stored = ref_cache[:, i][blocks, offsets]
        out.append(
            _stats(
                x[: slot_mapping.shape[0]][live],
                stored,
                scale,
                kv_name,
                fmt,
                host,
                mismatched[kind],
                src,
            )
        )
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
    saturated = float(((y.abs() > fmt.max_finite) & finite).sum()) / count
    deq = dequantize(stored, scale, kv_name)
    nonzero = finite & (xf != 0)
    underflow = float(((deq == 0) & nonzero).sum()) / max(1, int(nonzero.sum()))
    xd, dd = xf[finite].double(), deq[finite].double()
    denom = float(xd.pow(2).sum())
    err = math.sqrt(float((dd - xd).pow(2).sum()) / denom) if denom > 0 else 0.0
    absmax = float(xf[finite].abs().max()) if bool(finite.any()) else 0.0
    failures: list[str] = []
    scales = scale.reshape(-1).tolist()
    if not all(math.isfinite(v) and v > 0 for v in scales):
        failures.append("scale is not a positive finite number")
    if mismatched:
        failures.append(f"{mismatched} cache bytes differ from the reference writer")
    if saturated > SATURATION_LIMIT:
        need = absmax / fmt.max_finite
        failures.append(
            f"{saturated:.2%} of values saturate at +-{fmt.max_finite:g} x scale: the scale "
            f"({host:.6g}) is too small for this data (absmax {absmax:.6g} needs >= {need:.6g}); "
            "recalibrate the KV scales on representative data"
        )
    if underflow > UNDERFLOW_LIMIT:
        failures.append(
            f"{underflow:.2%} of nonzero values are stored as zero: the scale ({host:.6g}) is too "
            "large for this data; recalibrate"
        )
    if err > ERROR_LIMIT[fmt.name] and not (
        saturated > SATURATION_LIMIT or underflow > UNDERFLOW_LIMIT
    ):
        failures.append(
            f"round-trip error {err:.3g} exceeds {ERROR_LIMIT[fmt.name]:g} for {fmt.name}"
        )
    return KindStats(host, absmax, saturated, underflow, err, mismatched, data, tuple(failures))
