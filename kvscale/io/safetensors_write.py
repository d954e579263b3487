"""Write safetensors files deterministically, and copy tensor bytes without decoding them.

``kvscale normalize`` rewrites only the shards whose scale tensors change. Everything else is
moved by the kernel: a whole-file reflink (``FICLONE``) where the filesystem shares extents
(btrfs, XFS, bcachefs, ...), else ``copy_file_range`` (in-kernel copy, itself a reflink on some
filesystems), else ``sendfile``, else large buffered ``pread``/``pwrite``. Weights never pass
through Python objects, so time and memory do not depend on the checkpoint size.

Layout of a rewritten shard (deterministic, so the same input always gives the same bytes, and
rewriting a rewritten shard changes nothing):

* the header is compact JSON with sorted keys (``__metadata__`` copied unchanged), padded with
  spaces to a multiple of 8 bytes, as the reference writer pads it;
* the data buffer holds the tensors grouped by alignment (8, 4, 2, then 1 byte), so that every
  tensor starts at a multiple of its element size (the data buffer starts at a multiple of 8
  because of the padding); within a group the new tensors come first, sorted by name, then the
  kept tensors in their original order. A shard written by ``safetensors.save_file`` is already
  grouped that way, so its kept bytes are copied in a few long runs.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kvscale.errors import KVScaleError
from kvscale.io.safetensors import DTYPE_BITS, TensorInfo

BytesCallback = Callable[[int], None]
"""Called with the number of bytes just copied or written (for progress)."""

COPY_CHUNK = 64 << 20
"""Bytes per copy system call: long enough for disk speed, short enough for smooth progress."""
BUFFER_SIZE = 8 << 20
"""Buffer of the last-resort user-space copy (bounded memory whatever the file size)."""

# ioctl FICLONE = _IOW(0x94, 9, int) (linux/fs.h): share all extents of one file with another.
FICLONE = 0x40049409

# errno values meaning "this copy method is not available here", never "the copy failed".
_UNSUPPORTED = frozenset(
    e
    for e in (
        getattr(errno, "EXDEV", None),
        getattr(errno, "ENOSYS", None),
        getattr(errno, "EOPNOTSUPP", None),
        getattr(errno, "ENOTSUP", None),
        getattr(errno, "EINVAL", None),
        getattr(errno, "ENOTTY", None),
        getattr(errno, "EBADF", None),
        getattr(errno, "EPERM", None),
    )
    if e is not None
)

FILE_MODE = 0o666  # before the umask, like cp and open()


def dtype_alignment(dtype: str) -> int:
    """The byte alignment a tensor of ``dtype`` wants (its element size, at most 8)."""
    bits = DTYPE_BITS[dtype]
    return max(1, min(8, bits // 8)) if bits % 8 == 0 else 1


@dataclass(frozen=True)
class NewTensor:
    """A small tensor kvscale writes itself (the scales): its raw little-endian bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes

    def __post_init__(self) -> None:
        numel = 1
        for d in self.shape:
            numel *= d
        if numel * DTYPE_BITS[self.dtype] != len(self.data) * 8:
            raise ValueError(f"{self.name}: {len(self.data)} bytes for {self.dtype}{self.shape}")


def f32_tensor(name: str, values: Sequence[float], shape: tuple[int, ...]) -> NewTensor:
    """A float32 tensor from values that are already exact float32 numbers."""
    return NewTensor(name, "F32", shape, struct.pack(f"<{len(values)}f", *values))


@dataclass(frozen=True)
class Piece:
    """One stretch of a new file's data buffer: ``data`` bytes, or a range of the source."""

    length: int
    data: bytes | None = None
    src_offset: int = 0


@dataclass(frozen=True)
class ShardLayout:
    """A planned safetensors file: its header bytes and where each data byte comes from."""

    header: bytes
    """The 8-byte length prefix plus the padded JSON header."""
    pieces: tuple[Piece, ...]
    tensors: tuple[tuple[str, str, tuple[int, ...], int], ...]
    """(name, dtype, shape, nbytes) in data order, for the index and reports."""

    @property
    def size(self) -> int:
        return len(self.header) + sum(p.length for p in self.pieces)

    @property
    def copied_bytes(self) -> int:
        return sum(p.length for p in self.pieces if p.data is None)


def encode_header(
    entries: Iterable[tuple[str, str, tuple[int, ...], int, int]],
    metadata: Mapping[str, str] | None,
) -> bytes:
    """Length prefix + header JSON (sorted keys, compact, space-padded to a multiple of 8)."""
    doc: dict[str, object] = {
        name: {"dtype": dtype, "shape": list(shape), "data_offsets": [begin, end]}
        for name, dtype, shape, begin, end in entries
    }
    if metadata is not None:
        doc["__metadata__"] = dict(metadata)
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw


def plan_layout(
    keep: Sequence[TensorInfo],
    add: Sequence[NewTensor],
    metadata: Mapping[str, str] | None,
) -> ShardLayout:
    """Lay out a shard holding ``keep`` (copied from the source file) and ``add`` (new bytes)."""
    names = [t.name for t in keep] + [t.name for t in add]
    if len(set(names)) != len(names):
        raise ValueError("duplicate tensor names in one shard")
    # (alignment descending, new before kept, new by name, kept by source offset)
    order: list[tuple[tuple[int, int, str, int], TensorInfo | NewTensor]] = []
    for t in add:
        order.append(((-dtype_alignment(t.dtype), 0, t.name, 0), t))
    for info in keep:
        order.append(((-dtype_alignment(info.dtype), 1, "", info.start), info))
    order.sort(key=lambda item: item[0])

    entries: list[tuple[str, str, tuple[int, ...], int, int]] = []
    pieces: list[Piece] = []
    tensors: list[tuple[str, str, tuple[int, ...], int]] = []
    position = 0
    for _, item in order:
        if isinstance(item, NewTensor):
            size = len(item.data)
            pieces.append(Piece(size, data=item.data))
            entries.append((item.name, item.dtype, item.shape, position, position + size))
            tensors.append((item.name, item.dtype, item.shape, size))
        else:
            size = item.nbytes
            last = pieces[-1] if pieces else None
            if (
                last is not None
                and last.data is None
                and last.src_offset + last.length == item.start
            ):
                pieces[-1] = Piece(last.length + size, src_offset=last.src_offset)
            elif size:
                pieces.append(Piece(size, src_offset=item.start))
            entries.append((item.name, item.dtype, item.shape, position, position + size))
            tensors.append((item.name, item.dtype, item.shape, size))
        position += size
    return ShardLayout(encode_header(entries, metadata), tuple(pieces), tuple(tensors))


# --- low-level copying ------------------------------------------------------------------------


def _write_all(fd: int, data: bytes, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        if n <= 0:
            raise OSError(errno.EIO, "short write")
        view = view[n:]
        offset += n


class SourceChangedError(KVScaleError):
    """The source file ended early while it was copied (truncated by someone else): an input
    that cannot be read as it was planned (exit 2)."""


_SYNC_FILE_RANGE_WRITE = 2
_sync_file_range: object = None


def start_writeback(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to start (not wait for) writing a range of ``fd`` to disk (best effort),
    so that the final fsync finds little left to do and the disk works beside the copy."""
    global _sync_file_range
    if length <= 0:
        return
    if _sync_file_range is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            func = libc.sync_file_range
            func.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_uint]
            _sync_file_range = func
        except (OSError, AttributeError):
            _sync_file_range = False
    if _sync_file_range:
        _sync_file_range(fd, offset, length, _SYNC_FILE_RANGE_WRITE)  # type: ignore[operator]


def copy_range(
    src_fd: int,
    dst_fd: int,
    src_offset: int,
    dst_offset: int,
    length: int,
    on_bytes: BytesCallback | None = None,
) -> str:
    """Copy ``length`` bytes between two files at explicit offsets; returns the method used.

    Tries ``copy_file_range``, then ``sendfile``, then a buffered copy; falls back only on errors
    that mean "not supported here" (and only before any byte moved with that method), never on
    ENOSPC/EIO, which propagate as ``OSError``.
    """
    done = 0
    method = "copy_file_range"
    if hasattr(os, "copy_file_range"):
        try:
            while done < length:
                n = os.copy_file_range(
                    src_fd,
                    dst_fd,
                    min(COPY_CHUNK, length - done),
                    src_offset + done,
                    dst_offset + done,
                )
                if n == 0:
                    raise SourceChangedError(f"source ended {length - done} bytes early")
                start_writeback(dst_fd, dst_offset + done, n)
                done += n
                if on_bytes is not None:
                    on_bytes(n)
            return method
        except OSError as exc:
            if done or exc.errno not in _UNSUPPORTED:
                raise
    method = "sendfile"
    if hasattr(os, "sendfile"):
        try:
            os.lseek(dst_fd, dst_offset + done, os.SEEK_SET)
            while done < length:
                n = os.sendfile(dst_fd, src_fd, src_offset + done, min(COPY_CHUNK, length - done))
                if n == 0:
                    raise SourceChangedError(f"source ended {length - done} bytes early")
                done += n
                if on_bytes is not None:
                    on_bytes(n)
            return method
        except OSError as exc:
            if done or exc.errno not in _UNSUPPORTED:
                raise
    buffer = bytearray(min(BUFFER_SIZE, max(1, length - done)))
    view = memoryview(buffer)
    while done < length:
        want = min(len(buffer), length - done)
        n = os.preadv(src_fd, [view[:want]], src_offset + done)
        if n == 0:
            raise SourceChangedError(f"source ended {length - done} bytes early")
        _write_all(dst_fd, bytes(view[:n]), dst_offset + done)
        done += n
        if on_bytes is not None:
            on_bytes(n)
    return "buffered"


def try_reflink(src_fd: int, dst_fd: int) -> bool:
    """Share the whole source file's extents with the (empty) destination, if supported."""
    try:
        import fcntl

        fcntl.ioctl(dst_fd, FICLONE, src_fd)
    except (OSError, ImportError) as exc:
        if isinstance(exc, OSError) and exc.errno not in _UNSUPPORTED:
            raise
        return False
    return True


def open_new(path: Path) -> int:
    """Create a file that must not exist yet (never follows or overwrites anything)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0)
    return os.open(path, flags, FILE_MODE)


def open_source(path: Path) -> int:
    """Open a file to copy from, refusing anything but a regular file before reading a byte.

    ``O_NONBLOCK``: a FIFO swapped in for an input after planning would otherwise block the
    copy in ``open()`` forever (regular files ignore the flag); the type check then refuses it,
    and any device, without a read."""
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise SourceChangedError(f"{path} is no longer a regular file (a FIFO or a device?)")
    return fd


def copy_file(
    src: Path,
    dst: Path,
    on_bytes: BytesCallback | None = None,
    *,
    allow_reflink: bool = True,
    fsync: bool = True,
) -> tuple[int, str]:
    """Copy a whole file to a new path (reflink first); returns (bytes, method). Durable if
    ``fsync``: the data is on disk before this returns."""
    src_fd = open_source(src)
    try:
        size = os.fstat(src_fd).st_size
        dst_fd = open_new(dst)
        try:
            if allow_reflink and size and try_reflink(src_fd, dst_fd):
                method = "reflink"
                if on_bytes is not None:
                    on_bytes(size)
            else:
                method = copy_range(src_fd, dst_fd, 0, 0, size, on_bytes) if size else "empty"
            final = os.fstat(dst_fd).st_size
            if final != size:
                raise SourceChangedError(f"copied {final} bytes of {size}")
            if fsync:
                os.fsync(dst_fd)
        finally:
            os.close(dst_fd)
    finally:
        os.close(src_fd)
    return size, method


def write_layout(
    layout: ShardLayout,
    src: Path | None,
    dst: Path,
    on_bytes: BytesCallback | None = None,
    *,
    fsync: bool = True,
) -> str:
    """Write a planned shard: header, new tensors, and kept ranges copied from ``src``."""
    src_fd = open_source(src) if src is not None else -1
    try:
        dst_fd = open_new(dst)
        try:
            _write_all(dst_fd, layout.header, 0)
            if on_bytes is not None:
                on_bytes(len(layout.header))
            offset = len(layout.header)
            method = "written"
            for piece in layout.pieces:
                if piece.data is not None:
                    _write_all(dst_fd, piece.data, offset)
                    if on_bytes is not None:
                        on_bytes(piece.length)
                else:
                    if src_fd < 0:
                        raise ValueError("layout copies from a source, but none was given")
                    method = copy_range(
                        src_fd, dst_fd, piece.src_offset, offset, piece.length, on_bytes
                    )
                offset += piece.length
            final = os.fstat(dst_fd).st_size
            if final != layout.size:
                raise SourceChangedError(f"wrote {final} bytes, expected {layout.size}")
            if fsync:
                os.fsync(dst_fd)
        finally:
            os.close(dst_fd)
    finally:
        if src_fd >= 0:
            os.close(src_fd)
    return method


def write_bytes(dst: Path, data: bytes, *, fsync: bool = True) -> None:
    """Write a small new file durably."""
    fd = open_new(dst)
    try:
        _write_all(fd, data, 0)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def write_safetensors(
    dst: Path, tensors: Sequence[NewTensor], metadata: Mapping[str, str] | None = None
) -> bytes:
    """A complete small safetensors file from new tensors; returns the bytes written."""
    layout = plan_layout((), tensors, metadata)
    data = layout.header + b"".join(p.data or b"" for p in layout.pieces)
    write_bytes(dst, data)
    return data


def fsync_dir(path: Path) -> None:
    """Make a directory's entries (new names, renames) durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        # Some filesystems refuse fsync on directories; nothing more can be done there.
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.EROFS):
            raise
    finally:
        os.close(fd)


__all__ = [
    "NewTensor",
    "Piece",
    "ShardLayout",
    "SourceChangedError",
    "copy_file",
    "copy_range",
    "dtype_alignment",
    "encode_header",
    "f32_tensor",
    "fsync_dir",
    "plan_layout",
    "try_reflink",
    "write_bytes",
    "write_layout",
    "write_safetensors",
]
