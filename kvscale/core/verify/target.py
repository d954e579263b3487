"""What ``kvscale verify`` verifies: the layers and scales of a target (a scales output directory,
or a checkpoint resolved exactly as ``inspect`` resolves it), and whether host and device agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import kvscale.scales_file as scales_file
from kvscale.engine.base import LayerCache
from kvscale.engine.options import EngineOptions
from kvscale.engine.registry import ENGINES, get_engine
from kvscale.errors import (
    InputError,
    UsageError,
)
from kvscale.floats import max_nan

DEFAULT_HEAD_SIZE = 128


DEFAULT_KV_HEADS = 8


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
    cache: LayerCache | None = None
    """The layer's KV cache as the engine gives it (its dtype after skip rules, the format)."""


@dataclass(frozen=True)
class ShapeOrigin:
    """Where a target's K/V row shape (kv heads x head size) is declared: what verify's refusals
    name, since a hostile or mistaken file is where a huge number comes from."""

    file: str
    """``config.json`` (a checkpoint) or ``kv_scales.json`` (a scales output)."""
    head_size: str | None = None
    """The declaration, e.g. ``head_dim=128``; None when the file declares none."""
    kv_heads: str | None = None
    """The declaration, e.g. ``num_key_value_heads=8``; None when the file declares none."""

    def describe(self, per_head_scales: int | None = None) -> str:
        """``config.json declares head_dim=4096 x num_key_value_heads=256`` (or the layer's
        per-head scales, where those set the kv heads)."""
        head = self.head_size or f"no head size (verify uses {DEFAULT_HEAD_SIZE})"
        if per_head_scales is not None:
            return (
                f"{self.file} declares {head}, and the layer holds {per_head_scales:,} "
                "per-head scales (one per kv head)"
            )
        heads = self.kv_heads or f"no kv heads (verify uses {DEFAULT_KV_HEADS})"
        return f"{self.file} declares {head} x {heads}"

    @property
    def fix(self) -> str:
        if self.file == scales_file.JSON_NAME:
            return (
                f"{self.file} records the shape of the checkpoint it was written from: correct "
                "that checkpoint's config.json and write the scales again"
            )
        return f"correct the head size and kv heads in {self.file}"


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
    shape_origin: ShapeOrigin = ShapeOrigin("config.json")
    """Where ``head_size`` and ``kv_heads`` are declared."""


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
        layers.append(
            LayerScales(
                layer.name, max_nan(k), max_nan(v), k, v, layer.rule.value, cache=layer.cache
            )
        )
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
        shape_origin=ShapeOrigin(
            "config.json",
            report.shape.head_size_from,
            _declared(
                ("num_key_value_heads", report.shape.num_key_value_heads),
                ("num_attention_heads", report.shape.num_attention_heads),
            ),
        ),
    )


def _declared(*candidates: tuple[str, int | None]) -> str | None:
    """``key=value`` of the first key that is set."""
    return next((f"{key}={value}" for key, value in candidates if value), None)


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
    engine = scales.settings.engine or {}
    if options.engine is not None and engine and engine.get("name") != options.engine.value:
        raise UsageError(
            f"{path} holds scales resolved for {engine.get('name')}; --engine "
            f"{options.engine.value} cannot change them",
            hint="normalize again with that --engine, or drop the option",
        )
    # Every layer of a scales output holds the dtype it was written for (skipped layers are not
    # recorded in it: normalize resolves them, and verify of the checkpoint shows them).
    written_by = (scales.settings.engine or {}).get("name")
    rules = get_engine(written_by) if written_by in {e.value for e in ENGINES} else options.rules
    try:
        fmt = rules.cache_format(scales.kv_cache_dtype, scales.platform)
    except KeyError:
        raise InputError(
            scales.path or path,
            f"kv_cache_dtype {scales.kv_cache_dtype!r} is not one of {rules.name}'s dtypes",
        ) from None
    cache = LayerCache(scales.kv_cache_dtype, fmt)
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
                cache,
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
        scales.settings.head_size or DEFAULT_HEAD_SIZE,
        scales.settings.num_kv_heads or DEFAULT_KV_HEADS,
        notes=tuple(
            f"{scales_file.TENSORS_NAME} holds a layer the JSON lacks: {o}" for o in orphans
        ),
        refused=tuple((o.split(":", 1)[0], o) for o in orphans),
        engine={str(k): str(v) for k, v in engine.items()},
        options={},
        shape_origin=ShapeOrigin(
            scales_file.JSON_NAME,
            _declared(("head_size", scales.settings.head_size)),
            _declared(("num_kv_heads", scales.settings.num_kv_heads)),
        ),
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
