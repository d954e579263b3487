"""Calibration data (``--data``) -> token id samples, with the file's sha256.

Two formats (``contract.md``, "Additions": calibration data):

* a ``.jsonl`` file (suffix compared case-insensitively): one sample per line, either
  ``{"text": "..."}`` (tokenized with the model's tokenizer, its default special tokens
  included) or ``{"input_ids": [int, ...]}``; other keys are ignored, blank lines skipped;
* any other file: UTF-8 text (a leading BOM is dropped) tokenized without special tokens and cut
  into consecutive samples of ``seq_len`` tokens; the last one may be shorter.

Samples keep file order; each is truncated to ``seq_len``; ``max_samples`` caps their count.
Only what is needed is parsed: lines after the last sample taken are hashed, not validated.

Plain text is tokenized in blocks of about ``TEXT_BLOCK_CHARS`` characters, each cut just
before a line that starts with a non-space character, and tokenizing stops once enough tokens
exist. A 1 GB corpus therefore costs a hash and the tokenization of what the run uses; the
price is that a token is never merged across a block boundary (a line start), which BPE
tokenizers almost never do anyway. Give ``{"input_ids": ...}`` lines when every id must be
yours.

The file is opened like every other kvscale input (``O_NONBLOCK``, then ``fstat``: a FIFO, a
device such as ``/dev/zero`` or a directory is refused at once, never read), and its size is
capped by ``MAX_DATA_BYTES`` (``KVSCALE_MAX_DATA_BYTES``), checked against ``st_size`` before
reading and against the bytes actually read (a file may grow). Reading streams in 1 MiB chunks;
memory stays proportional to what is tokenized.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kvscale.errors import InputError, LimitExceededError, UsageError
from kvscale.io.safetensors import open_regular, os_error
from kvscale.limits import MAX_DATA_BYTES

__all__ = [
    "MAX_DATA_BYTES",
    "TEXT_BLOCK_CHARS",
    "CalibrationData",
    "TextEncoder",
    "load_calibration_data",
]


TEXT_BLOCK_CHARS = 1 << 20
"""Characters of plain text handed to the tokenizer at once (then cut at a line start)."""

_CHUNK_BYTES = 1 << 20


class TextEncoder(Protocol):
    """``encode(text, add_special_tokens) -> token ids``: the model tokenizer's encode."""

    def __call__(self, text: str, add_special_tokens: bool) -> Sequence[int]: ...


@dataclass(frozen=True)
class CalibrationData:
    """Token id samples, in file order, each at most ``seq_len`` long and never empty."""

    path: str
    sha256: str
    """Hex sha256 of every byte of the file (``data_sha256`` in ``kv_scales.json``)."""
    size_bytes: int
    kind: str
    """``jsonl`` or ``text``."""
    seq_len: int
    requested_samples: int
    samples: tuple[tuple[int, ...], ...]
    lines: tuple[int, ...]
    """JSONL: the 1-based line of each sample; plain text: empty."""
    truncated: tuple[int, ...]
    """Indices into ``samples`` of the samples cut to ``seq_len`` (JSONL only: text chunks are
    cut by construction)."""
    skipped_empty: tuple[int, ...]
    """JSONL lines whose sample held no token (``"text": ""`` or ``"input_ids": []``)."""

    @property
    def token_counts(self) -> tuple[int, ...]:
        return tuple(len(s) for s in self.samples)

    @property
    def tokens(self) -> int:
        return sum(len(s) for s in self.samples)

    @property
    def requested_tokens(self) -> int:
        return self.requested_samples * self.seq_len

    @property
    def short(self) -> bool:
        """Fewer samples than asked, or (plain text) fewer tokens: the CLI warns."""
        if len(self.samples) < self.requested_samples:
            return True
        return self.kind == "text" and self.tokens < self.requested_tokens


# --- bounded streaming read ---------------------------------------------------------------------


_WHAT = "calibration data"


class _Reader:
    """Streams a regular file in chunks, hashing every byte, refusing it past the limit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cap = MAX_DATA_BYTES.value()
        self.digest = hashlib.sha256()
        self.size = 0
        self.fd, st = open_regular(path, _WHAT)
        if st.st_size > self.cap:
            os.close(self.fd)
            self._too_big(st.st_size)

    def _too_big(self, size: int) -> None:
        raise LimitExceededError(
            self.path, f"calibration data is {size:,} bytes", hint=MAX_DATA_BYTES.describe()
        )

    def chunks(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = os.read(self.fd, _CHUNK_BYTES)
            except OSError as exc:
                raise os_error(self.path, exc, _WHAT) from None
            if not chunk:
                return
            self.size += len(chunk)
            if self.size > self.cap:
                self._too_big(self.size)
            self.digest.update(chunk)
            yield chunk

    def drain(self, rest: Iterator[bytes]) -> None:
        """Hash what the parser did not need."""
        for _ in rest:
            pass

    def close(self) -> None:
        os.close(self.fd)


def _lines(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Lines (without the ``\\n``) of a byte stream; a final line without newline included.

    Linear in the file size, however long a line is (the parts of a line are joined once)."""
    parts: list[bytes] = []
    for chunk in chunks:
        pieces = chunk.split(b"\n")
        if len(pieces) == 1:
            parts.append(chunk)
            continue
        parts.append(pieces[0])
        yield b"".join(parts)
        yield from pieces[1:-1]
        parts = [pieces[-1]] if pieces[-1] else []
    tail = b"".join(parts)
    if tail:
        yield tail


# --- JSONL --------------------------------------------------------------------------------------


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON")


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _check_ids(
    path: Path, where: str, ids: Sequence[int], vocab_size: int | None, produced: bool
) -> None:
    if vocab_size is None:
        return
    for pos, tok in enumerate(ids):
        if not 0 <= tok < vocab_size:
            who = "the tokenizer produced" if produced else "has"
            raise InputError(
                path,
                f"{where}: {who} token id {tok} at position {pos}, outside the model's "
                f"vocabulary (0 .. {vocab_size - 1})",
            )


def _parse_jsonl_line(
    path: Path,
    lineno: int,
    raw: bytes,
    encode: TextEncoder | None,
    vocab_size: int | None,
) -> list[int] | None:
    """The token ids of one JSONL line, or None for a blank line."""
    where = f"line {lineno}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            path, f"{where}: not valid UTF-8 (byte {exc.start + 1} of the line)"
        ) from None
    if lineno == 1 and text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        return None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"{where}: invalid JSON ({exc.msg} at column {exc.colno})") from None
    except (ValueError, RecursionError) as exc:
        raise InputError(path, f"{where}: invalid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise InputError(
            path,
            f'{where}: expected an object with "text" or "input_ids", got {_json_kind(obj)}',
        )
    has_text, has_ids = "text" in obj, "input_ids" in obj
    if has_text and has_ids:
        raise InputError(path, f'{where}: has both "text" and "input_ids"; give one of them')
    if has_ids:
        ids = obj["input_ids"]
        if not isinstance(ids, list):
            raise InputError(
                path, f'{where}: "input_ids" must be an array of integers, got {_json_kind(ids)}'
            )
        for pos, tok in enumerate(ids):
            # bool is an int subclass in Python; JSON true is not a token id.
            if not isinstance(tok, int) or isinstance(tok, bool):
                raise InputError(
                    path,
                    f'{where}: "input_ids"[{pos}] must be an integer, got {_json_kind(tok)}',
                )
        _check_ids(path, where, ids, vocab_size, produced=False)
        return ids
    if has_text:
        value = obj["text"]
        if not isinstance(value, str):
            raise InputError(path, f'{where}: "text" must be a string, got {_json_kind(value)}')
        if encode is None:
            raise InputError(
                path,
                f'{where}: a "text" sample needs the model\'s tokenizer, and the model has none',
                hint='add the tokenizer files to the model directory, or give {"input_ids": [...]}',
            )
        ids = [int(t) for t in encode(value, True)]
        _check_ids(path, where, ids, vocab_size, produced=True)
        return ids
    raise InputError(path, f'{where}: no "text" or "input_ids" key')


# --- plain text ---------------------------------------------------------------------------------


def _cut_point(text: str) -> int:
    """Where to end a block: just before the last line that starts with a non-space character
    (never inside a run of newlines or indentation); 0 if there is none."""
    pos = len(text)
    while True:
        pos = text.rfind("\n", 0, pos)
        if pos < 0:
            return 0
        if pos + 1 < len(text) and not text[pos + 1].isspace():
            return pos + 1


def _text_tokens(
    path: Path, chunks: Iterator[bytes], encode: TextEncoder, want: int, vocab_size: int | None
) -> list[int]:
    decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="strict")
    ids: list[int] = []
    buffer = ""
    consumed = 0

    def tokenize(block: str) -> None:
        new = [int(t) for t in encode(block, False)]
        _check_ids(path, "text", new, vocab_size, produced=True)
        ids.extend(new)

    def decode(data: bytes, final: bool) -> str:
        try:
            return str(decoder.decode(data, final))
        except UnicodeDecodeError as exc:
            raise InputError(
                path,
                f"not valid UTF-8 text (byte {consumed + exc.start + 1})",
                hint="give UTF-8 text, or a .jsonl file with one sample per line",
            ) from None

    for chunk in chunks:
        buffer += decode(chunk, False)
        consumed += len(chunk)
        while len(buffer) >= TEXT_BLOCK_CHARS:
            cut = _cut_point(buffer[:TEXT_BLOCK_CHARS]) or TEXT_BLOCK_CHARS
            tokenize(buffer[:cut])
            buffer = buffer[cut:]
            if len(ids) >= want:
                return ids
    buffer += decode(b"", True)
    if buffer:
        tokenize(buffer)
    return ids


# --- entry point --------------------------------------------------------------------------------


def load_calibration_data(
    path: Path | str,
    *,
    seq_len: int,
    max_samples: int,
    encode: TextEncoder | None = None,
    vocab_size: int | None = None,
) -> CalibrationData:
    """Read ``path`` into at most ``max_samples`` samples of at most ``seq_len`` tokens.

    ``encode`` is the model tokenizer's ``(text, add_special_tokens) -> ids``
    (``LoadedModel.encode``); None when the model has no tokenizer (then only
    ``{"input_ids"}`` JSONL works). ``vocab_size`` bounds every token id. Raises InputError
    (naming the file and line) for unreadable or malformed data and when no usable sample
    exists, LimitExceededError past ``MAX_DATA_BYTES``, UsageError for bad counts.
    """
    if seq_len < 1:
        raise UsageError(f"--seq-len {seq_len} must be at least 1")
    if max_samples < 1:
        raise UsageError(f"--samples {max_samples} must be at least 1")
    path = Path(path)
    kind = "jsonl" if path.suffix.lower() == ".jsonl" else "text"
    if kind == "text" and encode is None:
        raise InputError(
            path,
            "plain-text calibration data needs the model's tokenizer, and the model has none",
            hint="add the tokenizer files to the model directory, or give a .jsonl file of "
            '{"input_ids": [...]} lines',
        )
    reader = _Reader(path)
    try:
        chunks = reader.chunks()
        samples: list[tuple[int, ...]] = []
        lines: list[int] = []
        truncated: list[int] = []
        skipped: list[int] = []
        if kind == "jsonl":
            lineno = 0
            for raw in _lines(chunks):
                lineno += 1
                ids = _parse_jsonl_line(path, lineno, raw, encode, vocab_size)
                if ids is None:
                    continue
                if not ids:
                    skipped.append(lineno)
                    continue
                if len(ids) > seq_len:
                    truncated.append(len(samples))
                    ids = ids[:seq_len]
                samples.append(tuple(ids))
                lines.append(lineno)
                if len(samples) >= max_samples:
                    break
        else:
            assert encode is not None
            stream = _text_tokens(path, chunks, encode, max_samples * seq_len, vocab_size)
            for start in range(0, min(len(stream), max_samples * seq_len), seq_len):
                samples.append(tuple(stream[start : start + seq_len]))
        reader.drain(chunks)
    finally:
        reader.close()
    if not samples:
        if reader.size == 0:
            why = "the file is empty"
        elif kind == "jsonl" and skipped:
            why = f"every sample is empty ({len(skipped)} line(s) with no token)"
        elif kind == "jsonl":
            why = "every line is blank"
        else:
            why = "the text holds no token"
        raise InputError(path, f"no usable calibration sample: {why}")
    return CalibrationData(
        path=str(path),
        sha256=reader.digest.hexdigest(),
        size_bytes=reader.size,
        kind=kind,
        seq_len=seq_len,
        requested_samples=max_samples,
        samples=tuple(samples),
        lines=tuple(lines),
        truncated=tuple(truncated),
        skipped_empty=tuple(skipped),
    )
