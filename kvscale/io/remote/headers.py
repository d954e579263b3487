"""How much to read of a remote shard: the header's size guessed from what is already known (the
index's tensor names, the headers already read), and the coalesced byte spans of its KV-scale
tensors.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kvscale.conventions import looks_like_kv_scale
from kvscale.errors import (
    LimitExceededError,
    SafetensorsFormatError,
)
from kvscale.floats import DECODABLE_DTYPES
from kvscale.io.safetensors import (
    TensorInfo,
)
from kvscale.limits import (
    MAX_HEADER_BYTES,
    MAX_SCALE_ELEMENTS,
)

if TYPE_CHECKING:
    pass


HEADER_PREFIX = 8


MIN_GAP = 4096
"""Scale tensors closer than max(this, the shard's header size) are read in one range."""


_FIRST_PER_TENSOR = 128
"""Header bytes per tensor beyond its name, assumed before any header has been seen (a compact
``{"dtype":"F8_E4M3","shape":[53248,16384],"data_offsets":[0,872415232]}`` entry is ~70)."""


_UNKNOWN_HEADER_READ = 64 * 1024
"""First read of a shard when nothing predicts its header size (huggingface_hub reads 100,000)."""


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    """Exclusive."""
    infos: tuple[TensorInfo, ...]


def spans(infos: Sequence[TensorInfo], gap: int) -> list[_Span]:
    """Tensors grouped into byte ranges, sorted by their validated offsets; a gap of up to
    ``gap`` bytes between two tensors is read through rather than split into two requests."""
    out: list[_Span] = []
    for info in sorted(infos, key=lambda i: (i.start, i.end)):
        if out and info.start - out[-1].end <= gap:
            last = out[-1]
            out[-1] = _Span(last.start, max(last.end, info.end), (*last.infos, info))
        else:
            out.append(_Span(info.start, info.end, (info,)))
    return out


def _json_length(name: str) -> int:
    return len(json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass"))


class HeaderSizer:
    """How many bytes to ask for in a shard's first read, so that it holds the whole header.

    With an index, a header is its tensor names (known) plus a per-tensor overhead: assumed
    generous before any header is seen, then the largest overhead measured so far plus a margin.
    Without one, the largest header seen plus a quarter, or ``_UNKNOWN_HEADER_READ`` at first.
    """

    def __init__(self, index: Any) -> None:
        self._known: dict[str, tuple[int, int]] = {}
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if isinstance(weight_map, dict):
            counts: dict[str, list[int]] = {}
            for tensor, shard in weight_map.items():
                if isinstance(shard, str) and isinstance(tensor, str):
                    entry = counts.setdefault(shard, [0, 0])
                    entry[0] += 1
                    entry[1] += _json_length(tensor)
            self._known = {shard: (c, n) for shard, (c, n) in counts.items()}
        self._lock = threading.Lock()
        self._per_tensor = 0.0
        self._largest = 0

    def guess(self, shard: str) -> int:
        with self._lock:
            per_tensor, largest = self._per_tensor, self._largest
        known = self._known.get(shard)
        if known is not None and known[0] > 0:
            count, names = known
            if per_tensor:
                size = names + count * (per_tensor * 1.05 + 8) + 64
            else:
                size = names + count * _FIRST_PER_TENSOR + 512
        elif largest:
            size = largest * 1.25 + 1024
        else:
            size = _UNKNOWN_HEADER_READ
        return min(HEADER_PREFIX + int(size), HEADER_PREFIX + MAX_HEADER_BYTES.value())

    def observe(self, shard: str, header_size: int) -> None:
        known = self._known.get(shard)
        with self._lock:
            self._largest = max(self._largest, header_size)
            if known is not None and known[0] > 0:
                overhead = (header_size - known[1]) / known[0]
                self._per_tensor = max(self._per_tensor, overhead)


def format_error(path: Path, what: str) -> SafetensorsFormatError:
    return SafetensorsFormatError(path, f"not a valid safetensors file: {what}")


def header_length(path: Path, data: bytes, file_size: int) -> int:
    """The 8-byte header length, checked as ``kvscale.io.safetensors.read_header`` checks a
    local file (same order, same messages)."""
    if file_size == 0:
        raise format_error(path, "file is empty (0 bytes)")
    if file_size < HEADER_PREFIX:
        raise format_error(
            path, f"file is {file_size} bytes, shorter than the 8-byte header length"
        )
    if len(data) < HEADER_PREFIX:
        raise format_error(path, "could not read the 8-byte header length")
    n = int.from_bytes(data[:HEADER_PREFIX], "little")
    if HEADER_PREFIX + n > file_size:
        raise format_error(
            path, f"header length {n:,} runs past the end of the file ({file_size:,} bytes)"
        )
    if n > MAX_HEADER_BYTES.value():
        raise LimitExceededError(
            path, f"safetensors header of {n:,} bytes refused", hint=MAX_HEADER_BYTES.describe()
        )
    return n


def kv_scale_candidate(info: TensorInfo) -> bool:
    """A tensor inspect will most likely ask for: a small decodable KV/attention scale."""
    return (
        looks_like_kv_scale(info.name)
        and info.dtype in DECODABLE_DTYPES
        and 0 < info.numel <= MAX_SCALE_ELEMENTS.value()
    )
