"""Read safetensors headers and the bytes of single tensors, validating like the reference.

The checks mirror ``SafeTensors::read_metadata`` and ``Metadata::validate`` in
huggingface/safetensors (``safetensors/src/tensor.rs``): an 8-byte little-endian header
length; at most 100,000,000 header bytes; a UTF-8 JSON object; known dtypes; non-negative
integer shapes and offsets; offsets contiguous from 0 once sorted; ``end - begin == numel *
dtype size`` without overflow; a data buffer that ends exactly at the end of the file.
The header JSON is read with serde_json's rules, not Python's, so that kvscale refuses exactly
the files the engine cannot load: lone surrogate escapes (``"\\ud800"``), nesting deeper than
serde_json's recursion limit (even inside ignored fields), ``-0`` where an integer is needed
(serde reads it as a float), and numbers outside the f64 range are refused. kvscale is
stricter than the reference in one place, on purpose: duplicate JSON keys, which serde resolves
silently (last wins for tensor names and metadata, ignored in unknown fields), are refused, so
that no two readers can see two different files.

Only the header and the bytes of requested tensors are ever read; weights are never touched.
Files are opened without blocking and must be regular files, so a FIFO, a device or a
directory named ``*.safetensors`` is refused instead of hanging the command. Every error is a
``KVScaleError`` subclass whose message names the file; names taken from the file are quoted
with ``repr`` and truncated, so a message always stays one short line.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvscale.errors import InputError, LimitExceededError, SafetensorsFormatError
from kvscale.limits import MAX_HEADER_BYTES, MAX_SCALE_ELEMENTS, Limit

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
_MAX_INT_DIGITS = 40
"""Longest integer literal accepted in any JSON kvscale reads (a u64 has 20 digits)."""
_NAME_CHARS = 120
"""Longest checkpoint-controlled string quoted in an error message."""


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


def quote(value: object, limit: int = _NAME_CHARS) -> str:
    """``repr`` of a checkpoint-controlled value, cut to ``limit`` characters.

    ``repr`` escapes control characters; the cut keeps a 1 MB tensor name from turning an
    error message into a 1 MB line.
    """
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _fail(path: Path, what: str) -> SafetensorsFormatError:
    return SafetensorsFormatError(path, f"not a valid safetensors file: {what}")


class _DuplicateKeyError(ValueError):
    pass


def _reject_constant(token: str) -> Any:
    raise ValueError(f"non-standard JSON constant {token}")


def _parse_int(literal: str) -> int:
    # Checked before int(): CPython refuses > 4300 digits, but converting a few thousand is
    # already slow, and no value kvscale reads needs more than a u64.
    if len(literal) > _MAX_INT_DIGITS:
        raise ValueError(f"integer literal with {len(literal):,} digits")
    return int(literal)


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKeyError(f"duplicate key {quote(key)}")
            seen.add(key)
    return obj


def parse_json_bytes(raw: bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN/Infinity constants, no giant integers.

    Raises ``UnicodeDecodeError``, ``ValueError`` (duplicate keys: a subclass) or
    ``RecursionError`` (nesting deeper than the interpreter allows); callers turn them into
    ``KVScaleError`` with the file name.
    """
    text = raw.decode("utf-8")  # UnicodeDecodeError is a ValueError
    return json.loads(
        text,
        object_pairs_hook=_unique_object,
        parse_constant=_reject_constant,
        parse_int=_parse_int,
    )


def _header_int(literal: str) -> int | float:
    # serde_json reads "-0" as the float -0.0 (an error where a usize is expected), and an
    # integer literal beyond u64 as an f64 (accepted in ignored fields, unless out of range).
    if literal == "-0":
        return -0.0
    if len(literal) > 20:
        return _header_float(literal)
    return int(literal)


def _header_float(literal: str) -> float:
    value = float(literal)  # linear time, unlike int() on a long literal
    if math.isinf(value):
        raise ValueError(f"number out of range: {literal[:20]}...")
    return value


def parse_header_json(raw: bytes) -> Any:
    """The header JSON as serde_json (the reference's parser) reads it; see the module doc."""
    text = raw.decode("utf-8")
    return json.loads(
        text,
        object_pairs_hook=_unique_object,
        parse_constant=_reject_constant,
        parse_int=_header_int,
        parse_float=_header_float,
    )


_SURROGATE = re.compile("[\ud800-\udfff]")
_SERDE_MAX_DEPTH = 127
"""serde_json's recursion limit (128) refuses a 128th nested array/object; the top-level
object is depth 1 and a tensor entry depth 2."""


def _serde_refusal(value: Any, depth: int) -> str | None:
    """Why serde_json would refuse ``value`` (found at container depth ``depth``), if it would.

    Walks one nesting level at a time, holding only references to the containers of the next
    level: no recursion on top of Python's json (which already stops near depth 1000), and no
    per-element bookkeeping that would multiply the memory a header of a million tiny lists
    already takes.
    """
    level = depth
    current: list[Any] = [value]
    while current:
        following: list[Any] = []
        for item in current:
            if isinstance(item, str):
                if _SURROGATE.search(item):
                    return f"a lone surrogate escape in the string {quote(item, 40)}"
                continue
            if not isinstance(item, (list, dict)):
                continue
            if level + 1 > _SERDE_MAX_DEPTH:
                return f"nesting deeper than {_SERDE_MAX_DEPTH} levels"
            children = item.values() if isinstance(item, dict) else item
            if isinstance(item, dict):
                for key in item:
                    if _SURROGATE.search(key):
                        return f"a lone surrogate escape in the string {quote(key, 40)}"
            for child in children:
                if isinstance(child, str):
                    if _SURROGATE.search(child):
                        return f"a lone surrogate escape in the string {quote(child, 40)}"
                elif isinstance(child, (list, dict)):
                    following.append(child)
        current = following
        level += 1
    return None


_KNOWN_FIELDS = frozenset(["dtype", "shape", "data_offsets"])


def json_error_text(exc: BaseException) -> str:
    """One short phrase for why ``parse_json_bytes`` refused a document."""
    if isinstance(exc, UnicodeDecodeError):
        return f"is not UTF-8 ({exc.reason} at byte {exc.start})"
    if isinstance(exc, _DuplicateKeyError):
        return f"has a {exc}"
    if isinstance(exc, RecursionError):
        return "is not valid JSON (nested too deeply)"
    return f"is not valid JSON ({_short(exc)})"


def _as_u64(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    if value < 0 or value > _U64_MAX:
        return None
    return value


def parse_header(path: Path, header_bytes: bytes, file_size: int) -> SafetensorsHeader:
    """Validate a header's JSON against the file it came from."""
    try:
        doc = parse_header_json(header_bytes)
    except (ValueError, RecursionError) as exc:
        raise _fail(path, "header " + json_error_text(exc)) from None
    if not isinstance(doc, dict):
        raise _fail(path, f"header JSON is {_json_kind(doc)}, not an object")

    metadata: dict[str, str] | None = None
    entries: list[TensorInfo] = []
    for name, entry in doc.items():
        if name == "__metadata__":
            if entry is None:
                continue
            if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
                raise _fail(path, "__metadata__ is not a map of strings to strings")
            refusal = _serde_refusal(entry, 1)
            if refusal:
                raise _fail(path, f"header holds {refusal} (in __metadata__)")
            metadata = entry
            continue
        tensor = quote(name)
        if _SURROGATE.search(name):
            raise _fail(path, f"header holds a lone surrogate escape in the tensor name {tensor}")
        if not isinstance(entry, dict):
            raise _fail(path, f"entry for tensor {tensor} is {_json_kind(entry)}, not an object")
        for field, value in entry.items():
            if field not in _KNOWN_FIELDS:
                # Ignored by the reference, but still parsed: its limits apply here too.
                refusal = _serde_refusal(value, 2) or _serde_refusal(field, 2)
                if refusal:
                    raise _fail(
                        path, f"header holds {refusal} (tensor {tensor}, field {quote(field, 40)})"
                    )
        dtype = entry.get("dtype")
        if dtype is None:
            raise _fail(path, f"tensor {tensor} has no dtype")
        if not isinstance(dtype, str) or dtype not in DTYPE_BITS:
            raise _fail(path, f"tensor {tensor} has unknown dtype {quote(dtype, 40)}")
        shape_raw = entry.get("shape")
        if not isinstance(shape_raw, list):
            raise _fail(path, f"tensor {tensor} has no shape list")
        shape: list[int] = []
        for dim in shape_raw:
            d = _as_u64(dim)
            if d is None:
                raise _fail(
                    path,
                    f"tensor {tensor} has an invalid dimension {quote(dim, 40)} in its shape "
                    "(dimensions are integers from 0 to 2**64-1)",
                )
            shape.append(d)
        offsets = entry.get("data_offsets")
        if not isinstance(offsets, list) or len(offsets) != 2:
            raise _fail(path, f"tensor {tensor} has no [begin, end] data_offsets")
        begin, end = _as_u64(offsets[0]), _as_u64(offsets[1])
        if begin is None or end is None:
            raise _fail(path, f"tensor {tensor} has invalid data_offsets {quote(offsets, 60)}")
        entries.append(TensorInfo(name, dtype, tuple(shape), begin, end))

    # Same order of checks as Metadata::validate: sort by offsets, walk contiguously from 0.
    entries.sort(key=lambda t: (t.start, t.end))
    position = 0
    last: TensorInfo | None = None
    for info in entries:
        tensor = quote(info.name)
        if info.start != position or info.end < info.start:
            if info.end < info.start:
                what = f"end before they begin ({info.start} > {info.end})"
            elif info.start < position:
                what = f"overlap the previous tensor (begin {info.start} < {position})"
            else:
                what = f"leave a gap of {info.start - position} bytes before it"
            raise _fail(path, f"data_offsets of tensor {tensor} {what} (invalid offset)")
        position = info.end
        # Python ints cannot overflow; checking against u64 after every factor keeps both the
        # reference's ValidationOverflow and the cost of a 10**6-dimension shape bounded.
        numel = 1
        for d in info.shape:
            numel *= d
            if numel > _U64_MAX:
                raise _fail(path, f"shape of tensor {tensor} overflows 64 bits")
        nbits = numel * DTYPE_BITS[info.dtype]
        if nbits > _U64_MAX:
            raise _fail(path, f"byte size of tensor {tensor} overflows 64 bits")
        if nbits % 8:
            raise _fail(path, f"tensor {tensor} does not end on a byte boundary")
        if info.end - info.start != nbits // 8:
            raise _fail(
                path,
                f"tensor {tensor} has {info.end - info.start} data bytes but "
                f"{info.dtype} x {_shape_text(info.shape)} needs {nbits // 8}",
            )
        last = info

    header_size = len(header_bytes)
    expected = _HEADER_PREFIX + header_size + position
    if expected != file_size:
        if file_size < expected:
            where = f"tensor {quote(last.name)}" if last is not None else "the data buffer"
            raise _fail(
                path,
                f"truncated: {where} ends at byte {expected} but the file has {file_size} bytes "
                "(data_offsets run past the end of the file)",
            )
        raise _fail(
            path,
            f"{file_size - expected} trailing bytes after the last tensor's data "
            "(the file is longer than its header says)",
        )

    base = _HEADER_PREFIX + header_size
    tensors = {
        info.name: TensorInfo(info.name, info.dtype, info.shape, base + info.start, base + info.end)
        for info in sorted(entries, key=lambda t: t.name)
    }
    return SafetensorsHeader(path, file_size, header_size, tensors, metadata)


def _short(exc: BaseException) -> str:
    text = " ".join((str(exc) or type(exc).__name__).split())
    return text if len(text) <= 120 else text[:117] + "..."


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string"}
    return names.get(type(value), "an array" if isinstance(value, list) else "an object")


def _shape_text(shape: tuple[int, ...]) -> str:
    text = "[" + ", ".join(str(d) for d in shape[:8]) + (", ...]" if len(shape) > 8 else "]")
    return text if len(text) <= 120 else text[:116] + "...]"


_ERRNO_TEXT = {
    errno.ENOENT: "no such file or directory",
    errno.ELOOP: "symlink loop (too many levels of symbolic links)",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory, not a file",
    errno.ENOTDIR: "a path component is not a directory",
    errno.ENAMETOOLONG: "file name too long",
    errno.EIO: "input/output error (damaged disk or network file system?)",
}


def os_error(path: Path, exc: OSError, what: str = "") -> InputError:
    """Turn an OSError into a one-line InputError naming the file (``cannot read WHAT: why``)."""
    reason = _ERRNO_TEXT.get(exc.errno or 0) or exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOENT and os.path.islink(path):
        reason = f"dangling symlink (its target {quote(_readlink(path))} does not exist)"
    return InputError(path, f"cannot read{' ' + what if what else ''}: {reason}")


def _readlink(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return "?"


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_CLOEXEC", 0)
    # Opening a FIFO for reading blocks until a writer appears; O_NONBLOCK returns at once,
    # and fstat below then refuses it. It changes nothing for regular files.
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
)


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def open_regular(path: Path, what: str = "") -> tuple[int, os.stat_result]:
    """Open a regular file for reading without ever blocking; anything else is an InputError
    (``cannot read WHAT: ...``).

    The caller owns (and must close) the returned descriptor.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError as exc:
        raise os_error(path, exc, what) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise os_error(path, exc, what) from None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        kind = _file_kind(st.st_mode)
        raise InputError(
            path, f"cannot read{' ' + what if what else ''}: {kind}, not a regular file"
        )
    return fd, st


def read_small_file(path: Path, limit: Limit | int, what: str) -> bytes:
    """The whole content of a small regular file, refusing it past ``limit`` bytes.

    Never reads more than ``limit + 1`` bytes, whatever ``st_size`` says (files in /proc report
    0, and a file may grow while it is read), and never asks for much more than the file holds:
    ``os.pread(fd, n)`` allocates ``n`` bytes up front.
    """
    cap = limit.value() if isinstance(limit, Limit) else limit
    fd, st = open_regular(path)
    chunks: list[bytes] = []
    size = 0
    try:
        if st.st_size > cap:
            size = st.st_size
        else:
            want = st.st_size + 1  # +1: see the end of the file (or that it grew)
            while size <= cap:
                chunk = os.pread(fd, min(want, cap + 1 - size), size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                want = 1 << 16
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        os.close(fd)
    if size > cap:
        if isinstance(limit, Limit):
            raise LimitExceededError(path, f"{what} is {size:,} bytes", hint=limit.describe())
        raise InputError(path, f"{what} is larger than {cap:,} bytes")
    return b"".join(chunks)


LFS_POINTER_PREFIX = b"version https://git-lfs.github.com/spec/"
"""How a Git LFS pointer file starts (git-lfs docs/spec.md): what a checkout without LFS holds
in place of each weight file."""


def read_header(path: Path) -> SafetensorsHeader:
    """Read and validate the header of one safetensors file (reads only the header bytes)."""
    fd, st = open_regular(path)
    try:
        file_size = st.st_size
        if file_size == 0:
            raise _fail(path, "file is empty (0 bytes)")
        if file_size < _HEADER_PREFIX:
            raise _fail(path, f"file is {file_size} bytes, shorter than the 8-byte header length")
        prefix = os.pread(fd, _HEADER_PREFIX, 0)
        if len(prefix) != _HEADER_PREFIX:
            raise _fail(path, "could not read the 8-byte header length")
        n = int.from_bytes(prefix, "little")
        limit = MAX_HEADER_BYTES.value()
        if _HEADER_PREFIX + n > file_size:
            if prefix == LFS_POINTER_PREFIX[:_HEADER_PREFIX] and file_size < 1024:
                head = os.pread(fd, len(LFS_POINTER_PREFIX), 0)
                if head == LFS_POINTER_PREFIX:
                    raise SafetensorsFormatError(
                        path,
                        "a Git LFS pointer file, not a safetensors file (the checkout skipped LFS)",
                        hint="run git lfs pull, or inspect the checkpoint where it is "
                        "published: kvscale inspect hf://ORG/NAME@REV (range reads, no weights)",
                    )
            raise _fail(
                path,
                f"header length {n:,} runs past the end of the file ({file_size:,} bytes)",
            )
        if n > limit:
            raise LimitExceededError(
                path, f"safetensors header of {n:,} bytes refused", hint=MAX_HEADER_BYTES.describe()
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
            f"scale tensor {quote(info.name)} has {info.numel:,} elements; not read",
            hint=MAX_SCALE_ELEMENTS.describe(),
        )
    fd, _ = open_regular(path)
    try:
        data = _pread_exact(fd, info.nbytes, info.start)
    except OSError as exc:
        raise os_error(path, exc) from None
    finally:
        os.close(fd)
    if len(data) != info.nbytes:
        raise _fail(
            path, f"file ended inside tensor {quote(info.name)} (was it truncated while read?)"
        )
    return data
