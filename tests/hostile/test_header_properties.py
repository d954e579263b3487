"""Property-based tests of the safetensors header reader (``read_header`` / ``parse_header``).

Random and mutated files (valid headers with one JSON field, dimension, offset or byte changed;
textual tricks; random bytes) must never raise anything but a ``KVScaleError`` subclass, must
agree with the reference reader (``safetensors.deserialize``, except duplicate keys, which
kvscale refuses on purpose), must answer within a deadline, and must allocate memory bounded by
the input, never by what the header claims.

Bounded for CI (about a minute in all). For longer runs::

    KVSCALE_FUZZ_EXAMPLES=20000 pytest tests/hostile/test_header_properties.py
    python tests/hostile/fuzz_header.py --minutes 30 [--engine atheris]

(see ``docs/limits.md`` and ``tests/hostile/fuzz_header.py``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import tracemalloc
from datetime import timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.checkpoints import safetensors_prefix

from kvscale.errors import KVScaleError, SafetensorsFormatError
from kvscale.io.safetensors import parse_header, read_header


def _load_fuzz_module() -> ModuleType:
    path = Path(__file__).with_name("fuzz_header.py")
    spec = importlib.util.spec_from_file_location("_kvscale_fuzz_header", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fuzz = _load_fuzz_module()

EXAMPLES = int(os.environ.get("KVSCALE_FUZZ_EXAMPLES", "0") or 0)
"""0: the CI budget below. Set it to run every property that many times (a longer fuzz run)."""


def budget(ci: int) -> settings:
    return settings(
        max_examples=EXAMPLES or ci,
        deadline=timedelta(seconds=2),  # a parse of these few-KB inputs takes microseconds
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        database=None,
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("properties") / "fuzz.safetensors"


# --- the oracle over every kind of input --------------------------------------------------------


@budget(ci=1500)
@given(blob=fuzz.files())
@example(blob=b"")
@example(blob=b"\x00" * 8)
@example(blob=safetensors_prefix(b"{}", pad=False))
@example(blob=safetensors_prefix(b"{}", header_len=2**64 - 1, pad=False))
@example(blob=safetensors_prefix(b"null", pad=False))
@pytest.mark.slow
def test_any_file_gets_a_kvscale_error_or_agrees_with_the_reference(
    scratch: Path, blob: bytes
) -> None:
    fuzz.check_file(blob, scratch)


@budget(ci=300)
@pytest.mark.slow  # a long property run (.ci/run runs -m slow)
@given(header=fuzz.valid_headers())
def test_valid_headers_round_trip(scratch: Path, header: tuple[dict[str, Any], bytes]) -> None:
    doc, data = header
    raw = fuzz.encode(doc)
    scratch.write_bytes(fuzz.frame(raw, data))
    parsed = read_header(scratch)
    tensors = {k: v for k, v in doc.items() if k != "__metadata__"}
    assert set(parsed.tensors) == set(tensors)
    assert list(parsed.tensors) == sorted(tensors)  # safe_open's keys() order
    base = parsed.data_start
    for name, entry in tensors.items():
        info = parsed.tensors[name]
        assert (info.dtype, list(info.shape)) == (entry["dtype"], entry["shape"])
        assert (info.start - base, info.end - base) == tuple(entry["data_offsets"])
    assert parsed.metadata == doc.get("__metadata__")


# --- parse_header alone: arbitrary bytes and arbitrary JSON, any claimed file size ----------------


@budget(ci=800)
@pytest.mark.slow  # a long property run (.ci/run runs -m slow)
@given(header_bytes=st.binary(max_size=256), file_size=st.integers(0, 2**64))
def test_random_header_bytes(header_bytes: bytes, file_size: int) -> None:
    try:
        parse_header(Path("random.safetensors"), header_bytes, file_size)
    except KVScaleError:
        pass


@budget(ci=800)
@pytest.mark.slow  # a long property run (.ci/run runs -m slow)
@given(document=fuzz.json_values, file_size=st.integers(0, 2**20))
def test_random_json_documents(document: Any, file_size: int) -> None:
    raw = json.dumps(document).encode("utf-8", "surrogatepass")
    try:
        parse_header(Path("json.safetensors"), raw, file_size)
    except KVScaleError:
        pass


@budget(ci=500)
@pytest.mark.slow  # a long property run (.ci/run runs -m slow)
@given(
    tensors=st.dictionaries(
        st.text(max_size=4),
        st.fixed_dictionaries(
            {
                "dtype": st.sampled_from(sorted(fuzz.DTYPE_BYTES) + fuzz.WEIRD_DTYPES),
                "shape": st.lists(st.integers(-(2**65), 2**65), max_size=4),
                "data_offsets": st.lists(st.integers(-(2**65), 2**65), min_size=2, max_size=2),
            }
        ),
        max_size=4,
    ),
    file_size=st.integers(0, 2**65),
)
def test_arbitrary_numbers_in_well_formed_entries(tensors: dict[str, Any], file_size: int) -> None:
    """Every integer anywhere, including negative and beyond u64: refused or accepted, and
    when accepted the offsets really tile a buffer that ends at the claimed end of file."""
    raw = json.dumps(tensors).encode()
    try:
        header = parse_header(Path("n.safetensors"), raw, file_size)
    except SafetensorsFormatError:
        return
    end = header.data_start
    for info in sorted(header.tensors.values(), key=lambda t: (t.start, t.end)):
        assert info.start == end and info.end >= info.start
        end = info.end
    assert end == file_size


# --- memory: bounded by the input, never by what the header claims ------------------------------

huge = st.sampled_from([2**31, 2**32, 2**40, 2**62, 2**63, 2**64 - 1])


@budget(ci=60)
@given(
    dims=st.lists(huge, min_size=1, max_size=6),
    dtype=st.sampled_from(sorted(fuzz.DTYPE_BYTES)),
    end=huge,
    claimed_size=huge,
    count=st.integers(1, 64),
)
def test_huge_claims_allocate_nothing(
    dims: list[int], dtype: str, end: int, claimed_size: int, count: int
) -> None:
    header = {
        f"t{i}": {"dtype": dtype, "shape": dims, "data_offsets": [0, end]} for i in range(count)
    }
    raw = json.dumps(header).encode()
    tracemalloc.start()
    try:
        try:
            parse_header(Path("claims.safetensors"), raw, claimed_size)
        except SafetensorsFormatError:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * len(raw) + (256 << 10), f"{peak:,} bytes for a {len(raw):,}-byte header"


MEMORY_FACTOR = 50
"""Worst case measured: a header of nested empty lists in an ignored field (Python's json
builds a 56-byte list per 2 input bytes). docs/limits.md documents this bound."""


def _adversarial(kind: str, size: int) -> bytes:
    entry = '"dtype":"U8","shape":[0],"data_offsets":[0,0]'
    if kind == "many-tensors":
        n = size // 50
        return json.dumps(
            {f"t{i}": {"dtype": "U8", "shape": [0], "data_offsets": [0, 0]} for i in range(n)}
        ).encode()
    if kind == "long-shape":
        return (
            '{"a":{"dtype":"U8","shape":[' + "1," * (size // 2) + '0],"data_offsets":[0,0]}}'
        ).encode()
    if kind == "metadata":
        meta = {f"k{i}": "" for i in range(size // 10)}
        return json.dumps({"__metadata__": meta}).encode()
    fill = {
        "empty-lists": "[],",
        "empty-objects": "{},",
        "nested-lists": "[[[[[[[[]]]]]]]],",
        "empty-strings": '"",',
        "floats": "1.5,",
    }[kind]
    return ('{"a":{' + entry + ',"x":[' + fill * (size // len(fill)) + "0]}}").encode()


@pytest.mark.parametrize(
    "kind",
    # Each kind parses a 400 KB header under tracemalloc (about half a second): one in the
    # default run, the rest with -m slow.
    ["many-tensors"]
    + [
        pytest.param(kind, marks=pytest.mark.slow)
        for kind in (
            "long-shape",
            "metadata",
            "empty-lists",
            "empty-objects",
            "nested-lists",
            "empty-strings",
            "floats",
        )
    ],
)
def test_memory_is_proportional_to_the_header(kind: str) -> None:
    raw = _adversarial(kind, 400_000)
    tracemalloc.start()
    try:
        try:
            parse_header(Path("adversarial.safetensors"), raw, 8 + len(raw))
        except SafetensorsFormatError:
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MEMORY_FACTOR * len(raw) + (1 << 20), f"{kind}: {peak / len(raw):.1f}x"


def test_reference_writer_output_is_accepted(scratch: Path) -> None:
    """Files written by safetensors itself, for every dtype torch can write."""
    import torch
    from safetensors.torch import save_file

    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64]
    dtypes += [torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]
    dtypes += [getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, n)]
    for shape in [(), (0,), (3,), (2, 0, 4), (1, 1, 1, 1)]:
        tensors = {f"t.{dt}": torch.zeros(shape, dtype=dt) for dt in dtypes}
        save_file(tensors, str(scratch), metadata={"format": "pt"})
        assert set(read_header(scratch).tensors) == set(tensors)
        assert fuzz.check_file(scratch.read_bytes(), scratch) == "accepted"
