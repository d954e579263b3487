"""Read safetensors headers and the bytes of single tensors, validating like the reference.

The checks mirror ``SafeTensors::read_metadata`` and ``Metadata::validate`` in
huggingface/safetensors (``safetensors/src/tensor.rs``): an 8-byte little-endian header
length; at most 100,000,000 header bytes; a UTF-8 JSON object; known dtypes; non-negative
integer shapes and offsets; offsets contiguous from 0 once sorted; ``end - begin == numel *
dtype size`` without overflow; a data buffer that ends exactly at the end of the file.
kvscale is stricter in two places, on purpose: duplicate JSON keys and non-finite JSON
constants are refused instead of silently resolved.

Only the header and the bytes of requested tensors are ever read; weights are never touched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvscale.errors import InputError, LimitExceededError, SafetensorsFormatError
from kvscale.limits import MAX_HEADER_BYTES, MAX_SCALE_ELEMENTS

DTYPE_BITS: dict[str, int] = {
    "BOOL": 8,
    "F4": 4,
    "F6_E2M3": 6,
    "F6_E3M2": 6,
    "U8": 8,
    "I8": 8,
    "F8_E5M2": 8,
    "F8_E4M3": 8,
    "F8_E8M0": 8,
    "F8_E4M3FNUZ": 8,
    "F8_E5M2FNUZ": 8,
    "I16": 16,
    "U16": 16,
    "F16": 16,
    "BF16": 16,
    "I32": 32,
    "U32": 32,
    "F32": 32,
    "C64": 64,
    "F64": 64,
    "I64": 64,
    "U64": 64,
}
"""Every dtype the safetensors format defines (``Dtype`` in ``src/tensor.rs``), in bits."""

_U64_MAX = 2**64 - 1
_HEADER_PREFIX = 8


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's entry in a safetensors header; offsets are absolute file positions."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    start: int
    end: int

    @property
    def nbytes(self) -> int:
        return self.end - self.start

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class SafetensorsHeader:
    """A validated safetensors header: tensors by name (sorted), optional string metadata."""

    path: Path
    file_size: int
    header_size: int
    tensors: Mapping[str, TensorInfo]
    metadata: Mapping[str, str] | None

    @property
    def data_start(self) -> int:
        return _HEADER_PREFIX + self.header_size


def _fail(path: Path, what: str) -> SafetensorsFormatError:
    return SafetensorsFormatError(path, f"not a valid safetensors file: {what}")


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON constant {token}")


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate key {key!r} in JSON object")
            seen.add(key)
    return obj


def parse_json_bytes(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity constants."""
    text = raw.decode("utf-8")  # UnicodeDecodeError is a ValueError
    return json.loads(text, object_pairs_hook=_unique_object, parse_constant=_reject_constant)


def _as_u64(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value < 0 or value > _U64_MAX:
        return None
    return value


def parse_header(path: Path, header_bytes: bytes, file_size: int) -> SafetensorsHeader:
    """Validate a header's JSON against the file it came from."""
    try:
        doc = parse_json_bytes(header_bytes)
    except UnicodeDecodeError as exc:
        raise _fail(path, f"header is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except (ValueError, RecursionError) as exc:
        raise _fail(path, f"header is not valid JSON ({_short(exc)})") from None
    if not isinstance(doc, dict):
        raise _fail(path, f"header JSON is a {type(doc).__name__}, not an object")

    metadata: dict[str, str] | None = None
    entries: list[TensorInfo] = []
    for name, entry in doc.items():
        if name == "__metadata__":
            if entry is None:
                continue
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise _fail(path, "__metadata__ is not a map of strings to strings")
            metadata = entry
            continue
        if not isinstance(entry, dict):
            raise _fail(path, f"entry for tensor {name!r} is not an object")
        dtype = entry.get("dtype")
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
            raise _fail(path, f"tensor {name!r} has unknown dtype {dtype!r}")
        shape_raw = entry.get("shape")
        if not isinstance(shape_raw, list):
            raise _fail(path, f"tensor {name!r} has no shape list")
        shape: list[int] = []
        for dim in shape_raw:
            d = _as_u64(dim)
            if d is None:
                raise _fail(path, f"tensor {name!r} has an invalid dimension {dim!r} in its shape")
            shape.append(d)
        offsets = entry.get("data_offsets")
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise _fail(path, f"tensor {name!r} has no [begin, end] data_offsets")
        begin, end = _as_u64(offsets[0]), _as_u64(offsets[1])
        if begin is None or end is None:
            raise _fail(path, f"tensor {name!r} has invalid data_offsets {offsets!r}")
        entries.append(TensorInfo(name, dtype, tuple(shape), begin, end))

    # Same order of checks as Metadata::validate: sort by offsets, walk contiguously from 0.
    entries.sort(key=lambda t: (t.start, t.end))
    position = 0
    for info in entries:
        if info.start != position or info.end < info.start:
            what = "overlap" if info.start < position else "leave a gap"
            if info.end < info.start:
                what = "end before they begin"
            raise _fail(path, f"data_offsets of tensor {info.name!r} {what} (invalid offset)")
        position = info.end
        numel = 1
        for d in info.shape:
            numel *= d
            if numel > _U64_MAX:
                raise _fail(path, f"shape of tensor {info.name!r} overflows 64 bits")
        nbits = numel * DTYPE_BITS[info.dtype]
        if nbits > _U64_MAX:
            raise _fail(path, f"byte size of tensor {info.name!r} overflows 64 bits")
        if nbits % 8:
            raise _fail(path, f"tensor {info.name!r} does not end on a byte boundary")
        if info.end - info.start != nbits // 8:
            raise _fail(
                path,
                f"tensor {info.name!r} has {info.end - info.start} data bytes but "
                f"{info.dtype} x {list(info.shape)} needs {nbits // 8}",
            )

    header_size = len(header_bytes)
    expected = _HEADER_PREFIX + header_size + position
    if expected != file_size:
        if file_size < expected:
            raise _fail(
                path,
                f"file is truncated: the header needs {expected} bytes, the file has {file_size}",
            )
        raise _fail(
            path,
            f"{file_size - expected} trailing bytes after the last tensor (file not fully covered)",
        )

    base = _HEADER_PREFIX + header_size
    tensors = {
        info.name: TensorInfo(info.name, info.dtype, info.shape, base + info.start, base + info.end)
        for info in sorted(entries, key=lambda t: t.name)
    }
    return SafetensorsHeader(path, file_size, header_size, tensors, metadata)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def os_error(path: Path, exc: OSError) -> InputError:
    """Turn an OSError into a one-line InputError naming the file."""
    reason = exc.strerror or type(exc).__name__
    return InputError(path, f"cannot read: {reason}")


def read_header(path: Path) -> SafetensorsHeader:
    """Read and validate the header of one safetensors file (reads only the header bytes)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise os_error(path, exc) from None
    try:
        file_size = os.fstat(fd).st_size
        if file_size < _HEADER_PREFIX:
            raise _fail(path, f"file is {file_size} bytes, shorter than the 8-byte header length")
        prefix = os.pread(fd, _HEADER_PREFIX, 0)
        if len(prefix) != _HEADER_PREFIX:
            raise _fail(path, "could not read the 8-byte header length")
        n = int.from_bytes(prefix, "little")
        limit = MAX_HEADER_BYTES.value()
        if n > limit:
            if n > _HEADER_PREFIX + file_size:
                raise _fail(path, f"header length {n} is larger than the file ({file_size} bytes)")
            raise LimitExceededError(
                path, f"header of {n:,} bytes refused", hint=MAX_HEADER_BYTES.describe()
            )
        if _HEADER_PREFIX + n > file_size:
            raise _fail(
                path, f"header length {n} runs past the end of the file ({file_size} bytes)"
            )
        header_bytes = _pread_exact(fd, n, _HEADER_PREFIX)
        if len(header_bytes) != n:
            raise _fail(path, "file shrank while its header was read")
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        os.close(fd)
    return parse_header(path, header_bytes, file_size)


def _pread_exact(fd: int, size: int, offset: int) -> bytes:
    chunks: list[bytes] = []
    remaining = size
    while remaining > 0:
        chunk = os.pread(fd, min(remaining, 1 << 24), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_tensor_bytes(path: Path, info: TensorInfo) -> bytes:
    """Read the raw bytes of one (small) tensor; refuses tensors over ``max-scale-elements``."""
    if info.numel > MAX_SCALE_ELEMENTS.value():
        raise LimitExceededError(
            path,
            f"scale tensor {info.name!r} has {info.numel:,} elements; not read",
            hint=MAX_SCALE_ELEMENTS.describe(),
        )
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise os_error(path, exc) from None
    try:
        data = _pread_exact(fd, info.nbytes, info.start)
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        os.close(fd)
    if len(data) != info.nbytes:
        raise _fail(path, f"file ended inside tensor {info.name!r} (was it truncated while read?)")
    return data
