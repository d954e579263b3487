"""``kvscale.scales/1``: the scale files kvscale writes (normalize, calibrate) and reads (verify,
diff), in one place: names, the type, the writer and the one strict, size-bounded reader.

A scales output directory holds

* ``kv_scales.json``: per layer the host float of every kind (per head: the max over heads, as
  engines keep it, plus the per-head list), the rule and the source tensors, and the settings the
  values were resolved for;
* ``kv_scales.safetensors``: the device tensors, float32, ``<layer>.<kind>``, shape ``[]`` or
  ``[num_kv_heads]``.

Every host float equals its device tensor exactly; ``check_agreement`` proves it bit for bit.
"""

from __future__ import annotations

import json
import math
import os
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar

from kvscale.engine.base import KINDS, ScaleValue
from kvscale.errors import ConfigError, InputError
from kvscale.floats import decode_values, encode_json_value, max_nan
from kvscale.io.safetensors import (
    json_error_text,
    parse_json_bytes,
    quote,
    read_header,
    read_small_file,
    read_tensor_bytes,
)
from kvscale.io.safetensors_write import NewTensor, f32_tensor, plan_layout
from kvscale.limits import MAX_DOCUMENT_BYTES

SCHEMA = "kvscale.scales/1"
JSON_NAME = "kv_scales.json"
TENSORS_NAME = "kv_scales.safetensors"
CHECKPOINT_DIR = "checkpoint"
"""The checkpoint copy inside an output directory (``normalize``/``calibrate --checkpoint``)."""


@dataclass(frozen=True)
class LayerEntry:
    """One layer of a scales file."""

    name: str
    rule: str
    values: Mapping[str, ScaleValue]
    """Device values per kind (a float, or per-head tuple); empty for a skipped layer."""
    sources: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Provenance per kind (``ScaleSource.to_json``)."""
    extra: Mapping[str, object] = field(default_factory=dict)
    """Further keys of the layer's JSON entry (``skipped``, ``shadowed``, ...), written as is."""

    def host(self, kind: str) -> float | None:
        """The host float: the value itself, or the max over heads (NaN if any head is NaN)."""
        value = self.values.get(kind)
        if value is None:
            return None
        return max_nan(value) if isinstance(value, tuple) else value

    @property
    def skipped(self) -> str | None:
        reason = self.extra.get("skipped")
        return reason if isinstance(reason, str) else None


@dataclass(frozen=True)
class ScalesSettings:
    """What the values of a scales file were resolved for and with, beyond the four keys every
    document has: the top-level keys of ``kv_scales.json`` after ``engine_path``, in this order.

    The first group is written by every command (null when unknown); ``kv_cache_dtype_requested``
    and ``source_fingerprint`` only by ``normalize``, ``engine_platform`` and ``calibration``
    only by ``calibrate`` (omitted when None)."""

    engine: Mapping[str, str] | None = None
    """``{"name", "version"}`` of the engine whose rules gave the values."""
    quant_method: str | None = None
    model_dtype: str | None = None
    kv_cache_dtype_requested: str | None = None
    kv_cache_dtype_effective: str | None = None
    engine_platform: str | None = None
    kvscale_version: str | None = None
    num_kv_heads: int | None = None
    """The attention shape, so that ``verify`` sizes its samples like the model's K/V."""
    head_size: int | None = None
    source_fingerprint: Mapping[str, object] | None = None
    warnings: tuple[Mapping[str, object], ...] = ()
    calibration: Mapping[str, object] | None = None
    other: Mapping[str, object] = field(default_factory=dict)
    """Keys this version does not know (a newer kvscale's), kept as read."""

    ALWAYS: ClassVar[frozenset[str]] = frozenset(
        [
            "engine",
            "quant_method",
            "model_dtype",
            "kv_cache_dtype_effective",
            "kvscale_version",
            "num_kv_heads",
            "head_size",
            "warnings",
        ]
    )

    def document(self) -> dict[str, Any]:
        doc: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "other":
                continue
            value = getattr(self, f.name)
            if f.name in self.ALWAYS or value is not None:
                doc[f.name] = [dict(w) for w in value] if f.name == "warnings" else value
        doc.update(self.other)
        return doc

    @classmethod
    def parse(cls, path: Path, doc: Mapping[str, Any]) -> ScalesSettings:
        """The settings of a decoded document; a known key of the wrong type is refused."""
        known = {f.name for f in fields(cls)} - {"other"}
        values: dict[str, Any] = {}
        for name in known & set(doc):
            value = doc[name]
            if value is None:
                continue
            if name in ("engine", "source_fingerprint", "calibration"):
                if not isinstance(value, Mapping):
                    raise ConfigError(path, f"{name} must be an object")
                if name == "engine":
                    value = {str(k): str(v) for k, v in value.items()}
            elif name in ("num_kv_heads", "head_size"):
                if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                    raise ConfigError(path, f"{name} must be a positive integer")
            elif name == "warnings":
                if not isinstance(value, list) or not all(isinstance(w, Mapping) for w in value):
                    raise ConfigError(path, "warnings must be a list of objects")
                value = tuple(value)
            elif not isinstance(value, str):
                raise ConfigError(path, f"{name} must be a string")
            values[name] = value
        skip = known | {"schema", "checkpoint", "kv_cache_dtype", "platform", "engine_path"}
        skip |= {"device_scales", "layers"}
        return cls(**values, other={k: v for k, v in doc.items() if k not in skip})


@dataclass(frozen=True)
class ScalesFile:
    """A ``kvscale.scales/1`` document: the settings the values hold for, and every layer."""

    checkpoint: str
    kv_cache_dtype: str
    platform: str
    engine_path: str
    layers: tuple[LayerEntry, ...]
    settings: ScalesSettings = field(default_factory=ScalesSettings)
    path: str | None = None
    """Where it was read from (None for a document being written)."""


# --- writing ------------------------------------------------------------------------------------


def _layer_json(entry: LayerEntry) -> dict[str, Any]:
    doc: dict[str, Any] = {kind: encode_json_value(entry.host(kind)) for kind in KINDS}
    doc["rule"] = entry.rule
    per_head = {
        kind: encode_json_value(value)
        for kind in KINDS
        if isinstance(value := entry.values.get(kind), tuple)
    }
    if per_head:
        doc["per_head"] = per_head
    doc.update(entry.extra)
    doc["sources"] = {kind: dict(src) for kind, src in entry.sources.items()}
    return doc


def document(scales: ScalesFile) -> dict[str, Any]:
    """The JSON document (key order as written; a sort happens in the encoder)."""
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "checkpoint": scales.checkpoint,
        "kv_cache_dtype": scales.kv_cache_dtype,
        "platform": scales.platform,
        "engine_path": scales.engine_path,
    }
    doc.update(scales.settings.document())
    doc["device_scales"] = {"file": TENSORS_NAME, "dtype": "float32"}
    doc["layers"] = {entry.name: _layer_json(entry) for entry in scales.layers}
    return doc


def json_bytes(scales: ScalesFile) -> bytes:
    text = json.dumps(document(scales), indent=2, ensure_ascii=True, allow_nan=False)
    return (text + "\n").encode()


def device_tensors(scales: ScalesFile) -> list[NewTensor]:
    out: list[NewTensor] = []
    for entry in scales.layers:
        for kind in KINDS:
            value = entry.values.get(kind)
            if value is None:
                continue
            name = f"{entry.name}.{kind}"
            if isinstance(value, tuple):
                out.append(f32_tensor(name, value, (len(value),)))
            else:
                out.append(f32_tensor(name, (value,), ()))
    return out


def safetensors_bytes(scales: ScalesFile) -> bytes:
    metadata = {
        "format": "pt",
        "kvscale.schema": SCHEMA,
        "kv_cache_dtype": scales.kv_cache_dtype,
        "platform": scales.platform,
    }
    layout = plan_layout((), device_tensors(scales), metadata)
    return layout.header + b"".join(p.data or b"" for p in layout.pieces)


# --- reading ------------------------------------------------------------------------------------


def json_path_of(path: str | os.PathLike[str]) -> Path | None:
    """The ``kv_scales.json`` a path names: the file itself, or the one in an output directory;
    None when the path is neither (e.g. a checkpoint)."""
    p = Path(path)
    if p.is_dir():
        candidate = p / JSON_NAME
        return candidate if os.path.lexists(candidate) else None
    if p.name.endswith(".json") and not p.name.endswith(".safetensors.index.json"):
        return p
    return None


def read_json_document(path: Path) -> Any:
    """A kvscale JSON document (scales, inspect): bounded, strict JSON (no duplicate keys)."""
    if not os.path.lexists(path):
        raise InputError(path, "no such file")
    raw = read_small_file(path, MAX_DOCUMENT_BYTES, path.name)
    try:
        return parse_json_bytes(raw)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(path, json_error_text(exc)) from None


def scale_value(path: Path, where: str, raw: object) -> ScaleValue | None:
    """A value as kvscale writes it: a number, "NaN"/"Infinity"/"-Infinity", a flat list of
    those (per head), or null."""
    if raw is None:
        return None
    if isinstance(raw, list):
        if not raw:
            raise ConfigError(path, f"{where} is an empty list")
        items = [scale_value(path, where, item) for item in raw]
        if any(not isinstance(item, float) for item in items):
            raise ConfigError(path, f"{where} must be a number or a flat list of numbers")
        return tuple(item for item in items if isinstance(item, float))
    if isinstance(raw, bool):
        raise ConfigError(path, f"{where} must be a number, got {raw!r}")
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str):
        special = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
        if raw in special:
            return special[raw]
    raise ConfigError(path, f"{where} must be a number, got {str(raw)[:40]!r}")


def _layer(path: Path, name: str, entry: object) -> LayerEntry:
    where = name[:120]
    if not isinstance(entry, Mapping):
        raise ConfigError(path, f"layer {where!r} is not an object")
    rule = entry.get("rule")
    if not isinstance(rule, str):
        raise ConfigError(path, f"layer {where!r} has no rule")
    per_head = entry.get("per_head", {})
    if not isinstance(per_head, Mapping):
        raise ConfigError(path, f"layer {where}: per_head must be an object")
    values: dict[str, ScaleValue] = {}
    for kind in KINDS:
        host = scale_value(path, f"{where}.{kind}", entry.get(kind))
        listed = scale_value(path, f"{where}.per_head.{kind}", per_head.get(kind))
        if listed is not None:
            if not isinstance(listed, tuple):
                raise ConfigError(path, f"layer {where}: per_head.{kind} must be a list")
            if not isinstance(host, float) or not same_bits(max_nan(listed), host):
                raise ConfigError(
                    path,
                    f"layer {where}: {kind} {host!r} is not the max of its per-head values",
                )
            values[kind] = listed
        elif host is not None:
            values[kind] = host
    sources = entry.get("sources", {})
    if not isinstance(sources, Mapping) or not all(
        isinstance(v, Mapping) for v in sources.values()
    ):
        raise ConfigError(path, f"layer {where}: sources must be an object of objects")
    known = {*KINDS, "rule", "per_head", "sources"}
    extra = {k: v for k, v in entry.items() if k not in known}
    return LayerEntry(name, rule, values, dict(sources), extra)


def parse_scales(path: Path, doc: object) -> ScalesFile:
    """Validate a decoded ``kvscale.scales/1`` document."""
    if not isinstance(doc, Mapping):
        raise ConfigError(path, "is not a JSON object")
    schema = doc.get("schema")
    if schema != SCHEMA:
        shown = quote(schema, 60) if schema is not None else "no schema"
        raise ConfigError(
            path,
            f"not a {SCHEMA} document ({shown})",
            hint="pass a kv_scales.json written by kvscale normalize or calibrate",
        )
    raw_layers = doc.get("layers")
    if not isinstance(raw_layers, Mapping):
        raise ConfigError(path, "layers must be an object keyed by layer name")
    layers = tuple(_layer(path, str(name), entry) for name, entry in raw_layers.items())
    for key in ("checkpoint", "kv_cache_dtype", "platform", "engine_path"):
        if not isinstance(doc.get(key), str):
            raise ConfigError(path, f"{key} must be a string")
    return ScalesFile(
        checkpoint=doc["checkpoint"],
        kv_cache_dtype=doc["kv_cache_dtype"],
        platform=doc["platform"],
        engine_path=doc["engine_path"],
        layers=layers,
        settings=ScalesSettings.parse(path, doc),
        path=str(path),
    )


def read_scales(path: str | os.PathLike[str]) -> ScalesFile:
    """Read and validate ``kv_scales.json`` (the file, or an output directory holding it)."""
    json_path = json_path_of(path) or Path(path) / JSON_NAME
    return parse_scales(json_path, read_json_document(json_path))


def read_device_scales(directory: str | os.PathLike[str]) -> dict[str, tuple[float, ...]]:
    """``kv_scales.safetensors`` of an output directory: tensor name -> float32 values."""
    path = Path(directory) / TENSORS_NAME
    if not os.path.lexists(path):
        raise InputError(path, f"missing: a scales output holds {TENSORS_NAME} beside {JSON_NAME}")
    header = read_header(path)
    out: dict[str, tuple[float, ...]] = {}
    for name, info in header.tensors.items():
        if info.dtype != "F32":
            raise InputError(
                path, f"tensor {quote(name)} is {info.dtype}; device scales are float32"
            )
        if len(info.shape) > 1:
            raise InputError(
                path, f"tensor {quote(name)} has shape {list(info.shape)}; expected [] or [heads]"
            )
        out[name] = tuple(decode_values("F32", read_tensor_bytes(path, info)))
    return out


def same_bits(a: float, b: float) -> bool:
    """Equal as float32 bit patterns (all NaNs equal)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return struct.pack("<f", a) == struct.pack("<f", b)


def check_agreement(
    scales: ScalesFile, device: Mapping[str, tuple[float, ...]]
) -> dict[str, list[str]]:
    """Every difference between the host floats (JSON) and the device tensors, per layer: a
    kind whose value differs in any head by any bit (per-head lists element by element, a lone
    host float against the max over the device's heads), a tensor missing on the device for
    any kind the JSON holds, a device tensor the JSON lacks."""
    out: dict[str, list[str]] = {}
    expected: set[str] = set()
    for entry in scales.layers:
        problems: list[str] = []
        for kind in KINDS:
            value = entry.values.get(kind)
            name = f"{entry.name}.{kind}"
            if value is None:
                continue
            expected.add(name)
            held = device.get(name)
            if held is None:
                if not entry.skipped:
                    problems.append(f"{kind} is in {JSON_NAME} but not in {TENSORS_NAME}")
                continue
            listed = value if isinstance(value, tuple) else (value,)
            if not isinstance(value, tuple) and len(held) > 1:
                if not same_bits(value, max_nan(held)):
                    problems.append(
                        f"{kind} host {value!r} != device max over heads {max_nan(held)!r}"
                    )
                continue
            if len(held) != len(listed):
                problems.append(
                    f"{kind}: {len(listed)} value(s) in {JSON_NAME}, {len(held)} on the device"
                )
                continue
            for i, (a, b) in enumerate(zip(listed, held, strict=True)):
                if not same_bits(a, b):
                    head = f"[{i}]" if len(listed) > 1 else ""
                    problems.append(f"{kind}{head} host {a!r} != device {b!r}")
        if problems:
            out[entry.name] = problems
    for name in sorted(set(device) - expected):
        layer, _, kind = name.rpartition(".")
        out.setdefault(layer or name, []).append(
            f"{kind or name} is in {TENSORS_NAME} but not in {JSON_NAME}"
        )
    return out


__all__: Sequence[str] = [
    "JSON_NAME",
    "SCHEMA",
    "TENSORS_NAME",
    "LayerEntry",
    "CHECKPOINT_DIR",
    "ScalesFile",
    "ScalesSettings",
    "check_agreement",
    "document",
    "json_bytes",
    "json_path_of",
    "parse_scales",
    "read_device_scales",
    "read_json_document",
    "read_scales",
    "safetensors_bytes",
    "scale_value",
]
