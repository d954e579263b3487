"""Calibration data parsing (kvscale.model.data): formats, order, truncation, digests, and
every refusal with its exact message. No torch, no tokenizer: a toy encoder stands in."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

from kvscale.errors import InputError, LimitExceededError, UsageError
from kvscale.model import data as data_mod
from kvscale.model.data import MAX_DATA_BYTES, load_calibration_data


class ToyEncoder:
    """One token per character (ord % 1000), plus a BOS of 999 when special tokens are asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []

    def __call__(self, text: str, add_special_tokens: bool) -> list[int]:
        self.calls.append((len(text), add_special_tokens))
        ids = [ord(c) % 1000 for c in text]
        return [999, *ids] if add_special_tokens else ids


def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def jsonl(path: Path, *objs: object) -> Path:
    return write(path, "".join(json.dumps(o) + "\n" for o in objs))


def refused(path: Path, **kwargs: object) -> str:
    kwargs.setdefault("seq_len", 8)
    kwargs.setdefault("max_samples", 10)
    with pytest.raises(InputError) as info:
        load_calibration_data(path, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# --- JSONL ----------------------------------------------------------------------------------


def test_jsonl_ids_and_text_in_file_order(tmp_path: Path) -> None:
    p = jsonl(
        tmp_path / "d.jsonl",
        {"input_ids": [1, 2, 3]},
        {"text": "ab", "meta": {"ignored": True}},
        {"input_ids": [7]},
    )
    enc = ToyEncoder()
    d = load_calibration_data(p, seq_len=8, max_samples=10, encode=enc, vocab_size=1000)
    assert d.samples == ((1, 2, 3), (999, 97, 98), (7,))
    assert d.lines == (1, 2, 3)
    assert d.kind == "jsonl"
    assert d.token_counts == (3, 3, 1)
    assert d.tokens == 7
    assert enc.calls == [(2, True)]  # text gets the tokenizer's default special tokens
    assert d.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()
    assert d.size_bytes == p.stat().st_size
    assert d.short  # 3 of 10 samples
    assert d.truncated == ()


def test_jsonl_truncation_cap_blank_and_empty_lines(tmp_path: Path) -> None:
    p = write(
        tmp_path / "d.JSONL",  # suffix compared case-insensitively
        '{"input_ids": [1,2,3,4,5]}\n\n   \n{"input_ids": []}\n{"text": ""}\n'
        '{"input_ids": [6,7]}\n{"input_ids": [8]}\n',
    )
    d = load_calibration_data(p, seq_len=3, max_samples=2, encode=lambda t, s: [])
    assert d.samples == ((1, 2, 3), (6, 7))
    assert d.lines == (1, 6)
    assert d.truncated == (0,)
    assert d.skipped_empty == (4, 5)
    assert not d.short


def test_lines_after_the_last_sample_are_hashed_not_parsed(tmp_path: Path) -> None:
    p = write(tmp_path / "d.jsonl", '{"input_ids": [1]}\nthis is not json\n')
    d = load_calibration_data(p, seq_len=4, max_samples=1)
    assert d.samples == ((1,),)
    assert d.sha256 == hashlib.sha256(p.read_bytes()).hexdigest()


def test_jsonl_final_line_without_newline_and_crlf(tmp_path: Path) -> None:
    p = write(tmp_path / "d.jsonl", '{"input_ids": [1]}\r\n{"input_ids": [2, 3]}')
    d = load_calibration_data(p, seq_len=4, max_samples=5)
    assert d.samples == ((1,), (2, 3))


def test_jsonl_bom_on_first_line(tmp_path: Path) -> None:
    p = write(tmp_path / "d.jsonl", b'\xef\xbb\xbf{"input_ids": [5]}\n')
    assert load_calibration_data(p, seq_len=4, max_samples=5).samples == ((5,),)


def test_long_line_is_read_in_linear_time(tmp_path: Path) -> None:
    ids = list(range(200_000))
    p = jsonl(tmp_path / "d.jsonl", {"input_ids": ids})
    t0 = time.perf_counter()
    d = load_calibration_data(p, seq_len=10, max_samples=1)
    assert d.samples == (tuple(range(10)),)
    assert time.perf_counter() - t0 < 2.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"input_ids": [1]}\n{"input_ids": [1,}\n',
            "line 2: invalid JSON (Expecting value at column 18)",
        ),
        ('{"input_ids": [NaN]}\n', "line 1: invalid JSON (NaN is not valid JSON)"),
        ("[1, 2]\n", 'line 1: expected an object with "text" or "input_ids", got an array'),
        ('"text"\n', 'line 1: expected an object with "text" or "input_ids", got a string'),
        (
            '{"text": "a", "input_ids": [1]}\n',
            'line 1: has both "text" and "input_ids"; give one of them',
        ),
        ('{"ids": [1]}\n', 'line 1: no "text" or "input_ids" key'),
        ('{"text": 5}\n', 'line 1: "text" must be a string, got a number'),
        (
            '{"input_ids": "1 2"}\n',
            'line 1: "input_ids" must be an array of integers, got a string',
        ),
        ('{"input_ids": [1, 2.5]}\n', 'line 1: "input_ids"[1] must be an integer, got a number'),
        ('{"input_ids": [true]}\n', 'line 1: "input_ids"[0] must be an integer, got a boolean'),
        ('{"input_ids": [null]}\n', 'line 1: "input_ids"[0] must be an integer, got null'),
        (
            '{"input_ids": [3, 1000]}\n',
            "line 1: has token id 1000 at position 1, outside the model's vocabulary (0 .. 999)",
        ),
        (
            '{"input_ids": [-1]}\n',
            "line 1: has token id -1 at position 0, outside the model's vocabulary (0 .. 999)",
        ),
    ],
)
def test_jsonl_refusals(tmp_path: Path, content: str, message: str) -> None:
    p = write(tmp_path / "d.jsonl", content)
    assert refused(p, vocab_size=1000, encode=ToyEncoder()) == f"{p}: {message}"


def test_text_sample_without_tokenizer(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "d.jsonl", {"input_ids": [1]}, {"text": "hi"})
    with pytest.raises(InputError) as info:
        load_calibration_data(p, seq_len=4, max_samples=5)
    assert info.value.message == (
        f'{p}: line 2: a "text" sample needs the model\'s tokenizer, and the model has none'
    )
    assert (
        info.value.hint
        == 'add the tokenizer files to the model directory, or give {"input_ids": [...]}'
    )


def test_tokenizer_output_outside_the_vocabulary(tmp_path: Path) -> None:
    p = jsonl(tmp_path / "d.jsonl", {"text": "z"})  # ord("z") = 122
    assert refused(p, vocab_size=100, encode=ToyEncoder()) == (
        f"{p}: line 1: the tokenizer produced token id 999 at position 0, outside the model's "
        "vocabulary (0 .. 99)"
    )


def test_invalid_utf8_line(tmp_path: Path) -> None:
    p = write(tmp_path / "d.jsonl", b'{"input_ids": [1]}\n{"text": "\xff"}\n')
    assert refused(p, encode=ToyEncoder()) == f"{p}: line 2: not valid UTF-8 (byte 11 of the line)"


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("", "the file is empty"),
        ("\n  \n\n", "every line is blank"),
        ('{"input_ids": []}\n{"text": ""}\n', "every sample is empty (2 line(s) with no token)"),
    ],
)
def test_no_usable_sample(tmp_path: Path, content: str, why: str) -> None:
    p = write(tmp_path / "d.jsonl", content)
    assert refused(p, encode=lambda t, s: []) == f"{p}: no usable calibration sample: {why}"


# --- plain text -----------------------------------------------------------------------------


def test_text_is_cut_into_consecutive_samples(tmp_path: Path) -> None:
    p = write(tmp_path / "corpus.txt", "abcdefghij")
    d = load_calibration_data(p, seq_len=4, max_samples=10, encode=ToyEncoder())
    assert d.kind == "text"
    # No special tokens in the plain-text stream; the last sample is shorter.
    assert d.samples == ((97, 98, 99, 100), (101, 102, 103, 104), (105, 106))
    assert d.lines == ()
    assert d.short  # 10 tokens of 40 asked
    capped = load_calibration_data(p, seq_len=4, max_samples=2, encode=ToyEncoder())
    assert capped.samples == ((97, 98, 99, 100), (101, 102, 103, 104))
    assert not capped.short


def test_text_bom_dropped_and_digest_of_raw_bytes(tmp_path: Path) -> None:
    raw = b"\xef\xbb\xbfab"
    p = write(tmp_path / "t.txt", raw)
    d = load_calibration_data(p, seq_len=8, max_samples=1, encode=ToyEncoder())
    assert d.samples == ((97, 98),)
    assert d.sha256 == hashlib.sha256(raw).hexdigest()


def test_text_blocks_cut_at_line_starts_and_stop_early(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(data_mod, "TEXT_BLOCK_CHARS", 32)
    line = "line one\n\n  indented\nline two\n"  # 30 characters
    text = line * 50
    p = write(tmp_path / "t.txt", text)
    enc = ToyEncoder()
    d = load_calibration_data(p, seq_len=10, max_samples=4, encode=enc)
    # The same tokens as one call over the whole text (the toy encoder is per character) ...
    assert d.samples == tuple(tuple(ord(c) for c in text[i : i + 10]) for i in (0, 10, 20, 30))
    # ... but tokenized in blocks of at most 32 characters ending before a line that starts
    # with a non-space (never inside "\n\n  "), stopping once 40 tokens exist; the whole
    # file is still hashed.
    assert [n for n, _ in enc.calls] == [30, 30]
    assert all(not special for _, special in enc.calls)
    assert d.sha256 == hashlib.sha256(text.encode()).hexdigest()


def test_text_needs_a_tokenizer(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "abc")
    assert refused(p) == (
        f"{p}: plain-text calibration data needs the model's tokenizer, and the model has none"
    )


def test_text_invalid_utf8_names_the_byte(tmp_path: Path) -> None:
    p = write(tmp_path / "t.bin", b"abc\x80def")
    assert refused(p, encode=ToyEncoder()) == f"{p}: not valid UTF-8 text (byte 4)"


def test_text_empty_and_no_token(tmp_path: Path) -> None:
    p = write(tmp_path / "t.txt", "")
    assert (
        refused(p, encode=ToyEncoder()) == f"{p}: no usable calibration sample: the file is empty"
    )
    p = write(tmp_path / "u.txt", "   ")
    assert refused(p, encode=lambda t, s: []) == (
        f"{p}: no usable calibration sample: the text holds no token"
    )


# --- files that are not regular, limits, options --------------------------------------------


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    t0 = time.perf_counter()
    assert (
        refused(fifo)
        == f"{fifo}: cannot read calibration data: a FIFO (named pipe), not a regular file"
    )
    assert time.perf_counter() - t0 < 1.0


def test_devices_and_directories_are_refused(tmp_path: Path) -> None:
    assert refused(Path("/dev/zero"), encode=ToyEncoder()) == (
        "/dev/zero: cannot read calibration data: a device, not a regular file"
    )
    assert refused(tmp_path, encode=ToyEncoder()) == (
        f"{tmp_path}: cannot read calibration data: a directory, not a regular file"
    )
    missing = tmp_path / "nope.jsonl"
    assert refused(missing) == f"{missing}: cannot read calibration data: no such file or directory"


def test_size_limit_and_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = jsonl(tmp_path / "d.jsonl", {"input_ids": [1, 2, 3]})
    monkeypatch.setenv("KVSCALE_MAX_DATA_BYTES", "10")
    with pytest.raises(LimitExceededError) as info:
        load_calibration_data(p, seq_len=4, max_samples=1)
    assert info.value.message == f"{p}: calibration data is {p.stat().st_size:,} bytes"
    assert info.value.hint == (
        "limit max-data-bytes = 10 bytes of calibration data (--data); "
        "set KVSCALE_MAX_DATA_BYTES to raise it"
    )
    monkeypatch.setenv("KVSCALE_MAX_DATA_BYTES", "lots")
    with pytest.raises(UsageError, match="KVSCALE_MAX_DATA_BYTES must be a positive integer"):
        load_calibration_data(p, seq_len=4, max_samples=1)
    monkeypatch.delenv("KVSCALE_MAX_DATA_BYTES")
    assert MAX_DATA_BYTES.value() == 1 << 30


@pytest.mark.parametrize(
    ("seq_len", "samples", "message"),
    [(0, 1, "--seq-len 0 must be at least 1"), (8, 0, "--samples 0 must be at least 1")],
)
def test_bad_counts(tmp_path: Path, seq_len: int, samples: int, message: str) -> None:
    p = jsonl(tmp_path / "d.jsonl", {"input_ids": [1]})
    with pytest.raises(UsageError) as info:
        load_calibration_data(p, seq_len=seq_len, max_samples=samples)
    assert info.value.message == message


def test_modules_import_without_torch() -> None:
    """data and scales are pure Python: the CLI can parse data before importing torch."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import kvscale.model.data, kvscale.model.scales\n"
        "print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok"
