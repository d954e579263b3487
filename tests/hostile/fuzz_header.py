#!/usr/bin/env python
"""Fuzz kvscale's safetensors header reader (``read_header`` / ``parse_header``).

Long runs, reproducible from these commands (from the repository root, venv active)::

    python tests/hostile/fuzz_header.py --minutes 30                      # hypothesis (default)
    python tests/hostile/fuzz_header.py --minutes 30 --engine atheris     # coverage-guided
    python tests/hostile/fuzz_header.py --minutes 5 --seed 1234           # a fixed hypothesis seed
    KVSCALE_FUZZ_EXAMPLES=20000 pytest tests/hostile/test_header_properties.py  # CI's, longer

The atheris engine needs ``pip install atheris`` (a wheel exists for CPython 3.11 on Linux
x86-64); libFuzzer options can follow ``--``, e.g. ``-- -jobs=4 -workers=4``. Crashing inputs
are written to ``--artifacts`` (default ``./fuzz-artifacts``) by either engine; replay one with
``python tests/hostile/fuzz_header.py --replay FILE``.

The oracle, for every input (the complete bytes of a file):

1. ``read_header`` returns, or raises a ``KVScaleError`` subclass: anything else is a bug;
2. it agrees with the reference, ``safetensors.deserialize`` (huggingface/safetensors): kvscale
   accepts exactly the files the reference accepts, except duplicate JSON keys, which kvscale
   refuses on purpose;
3. an accepted header is self-consistent: tensors tile the data buffer, which ends at EOF;
4. every error message is one short line naming the file;
5. no input takes more than ``SLOW_SECONDS``.

The hypothesis strategies here (``files()``) are shared with
``tests/hostile/test_header_properties.py``.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

SLOW_SECONDS = 2.0
DTYPE_BYTES = {
    "BOOL": 1,
    "U8": 1,
    "I8": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "F8_E4M3FNUZ": 1,
    "F8_E5M2FNUZ": 1,
    "I16": 2,
    "U16": 2,
    "F16": 2,
    "BF16": 2,
    "I32": 4,
    "U32": 4,
    "F32": 4,
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "C64": 8,
}
WEIRD_DTYPES = ["F4", "F6_E2M3", "F128", "f32", "", "bf16", "F8_E4M3FN", "Q4_K"]


# --- valid files ---------------------------------------------------------------------------------

names = st.one_of(
    st.sampled_from(
        [
            "model.layers.0.self_attn.k_scale",
            "model.layers.0.self_attn.k_proj.k_scale",
            "model.layers.0.self_attn.q_proj.weight",
            "__metadata__x",
            "",
        ]
    ),
    st.text(max_size=12),
)
shapes = st.lists(st.integers(0, 4), max_size=3)


@st.composite
def valid_headers(draw: Any) -> tuple[dict[str, Any], bytes]:
    """A header dict and its data buffer, contiguous from 0 (in a random key order)."""
    specs = draw(
        st.lists(
            st.tuples(names, st.sampled_from(sorted(DTYPE_BYTES)), shapes),
            max_size=5,
            unique_by=lambda t: t[0],
        )
    )
    header: dict[str, Any] = {}
    offset = 0
    for name, dtype, shape in specs:
        if name == "__metadata__":
            continue
        n = 1
        for d in shape:
            n *= d
        size = n * DTYPE_BYTES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    if draw(st.booleans()):
        header["__metadata__"] = draw(
            st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3)
        )
    keys = list(header)
    order = draw(st.permutations(keys)) if keys else []
    data = draw(st.binary(min_size=offset, max_size=offset))
    return {k: header[k] for k in order}, data


def frame(
    header_bytes: bytes, data: bytes, *, pad: bool = True, length: int | None = None
) -> bytes:
    if pad and len(header_bytes) % 8:
        header_bytes += b" " * (8 - len(header_bytes) % 8)
    n = len(header_bytes) if length is None else length
    return struct.pack("<Q", n) + header_bytes + data


def encode(header: Any) -> bytes:
    return json.dumps(header, separators=(",", ":")).encode("utf-8", "surrogatepass")


@st.composite
def valid_files(draw: Any) -> bytes:
    header, data = draw(valid_headers())
    return frame(encode(header), data, pad=draw(st.booleans()))


# --- mutations -----------------------------------------------------------------------------------

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**65), 2**65),
    st.sampled_from([0, -1, 2**32, 2**63, 2**64 - 1, 2**64, 10**30]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(WEIRD_DTYPES + list(DTYPE_BYTES)),
)
json_values = st.recursive(
    json_leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=10,
)
FIELDS = ["dtype", "shape", "data_offsets"]


@st.composite
def json_mutation(draw: Any, header: dict[str, Any]) -> Any:
    """Change the header as JSON: one field, one dimension, one offset, a key, the root."""
    doc: Any = json.loads(json.dumps(header))
    tensors = [k for k in doc if k != "__metadata__"]
    op = draw(
        st.sampled_from(
            [
                "field",
                "drop-field",
                "extra-field",
                "dim",
                "offset",
                "swap-offsets",
                "metadata",
                "root",
                "entry",
                "dtype",
            ]
        )
    )
    if op == "root":
        return draw(json_values)
    if op == "metadata":
        doc["__metadata__"] = draw(json_values)
        return doc
    if not tensors:
        doc[draw(st.text(max_size=4))] = draw(json_values)
        return doc
    name = draw(st.sampled_from(tensors))
    entry = doc[name]
    if op == "entry":
        doc[name] = draw(json_values)
    elif op == "field":
        entry[draw(st.sampled_from(FIELDS))] = draw(json_values)
    elif op == "drop-field":
        entry.pop(draw(st.sampled_from(FIELDS)), None)
    elif op == "extra-field":
        entry[draw(st.text(max_size=5))] = draw(json_values)
    elif op == "dtype":
        entry["dtype"] = draw(st.sampled_from(WEIRD_DTYPES + list(DTYPE_BYTES)))
    elif op == "dim":
        dims = list(entry["shape"])
        value = draw(st.sampled_from([-1, 0, 1, 7, 2**31, 2**32, 2**62, 2**63, 2**64 - 1, 2**64]))
        if dims and draw(st.booleans()):
            dims[draw(st.integers(0, len(dims) - 1))] = value
        else:
            dims.append(value)
        entry["shape"] = dims
    elif op == "offset":
        i = draw(st.integers(0, 1))
        entry["data_offsets"][i] += draw(st.sampled_from([-9, -1, 1, 2, 8, 2**32, 2**64]))
    elif op == "swap-offsets":
        entry["data_offsets"].reverse()
    return doc


@st.composite
def byte_mutation(draw: Any, blob: bytes) -> bytes:
    """Change the file as bytes: the length prefix, one byte, a splice, a cut, a tail."""
    op = draw(st.sampled_from(["length", "flip", "insert", "delete", "truncate", "append"]))
    if op == "length":
        n = struct.unpack("<Q", blob[:8])[0]
        new = draw(
            st.one_of(
                st.integers(0, 2**64 - 1),
                st.sampled_from([0, 1, n - 1, n + 1, n + 8, 100_000_001, 2**63, 2**64 - 1]),
            )
        )
        return struct.pack("<Q", max(0, min(new, 2**64 - 1))) + blob[8:]
    if not blob:
        return draw(st.binary(max_size=16))
    i = draw(st.integers(0, len(blob) - 1))
    if op == "flip":
        return blob[:i] + bytes([blob[i] ^ draw(st.integers(1, 255))]) + blob[i + 1 :]
    if op == "insert":
        return blob[:i] + draw(st.binary(min_size=1, max_size=8)) + blob[i:]
    if op == "delete":
        return blob[:i] + blob[i + draw(st.integers(1, 8)) :]
    if op == "truncate":
        return blob[:i]
    return blob + draw(st.binary(min_size=1, max_size=16))


@st.composite
def files(draw: Any) -> bytes:
    """Any file: valid, JSON-mutated, byte-mutated, textually odd, or random bytes."""
    kind = draw(st.sampled_from(["valid", "json", "json", "bytes", "bytes", "text", "random"]))
    if kind == "random":
        return draw(st.binary(max_size=64))
    header, data = draw(valid_headers())
    if kind == "valid":
        return frame(encode(header), data)
    if kind == "bytes":
        return draw(byte_mutation(frame(encode(header), data)))
    if kind == "text":
        # Textual tricks json.dumps never writes: duplicate keys, escapes, deep nesting, numbers.
        trick = draw(
            st.sampled_from(
                [
                    '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]},"a":{}}',
                    '{"a":{"dtype":"U8","dtype":"U8","shape":[],"data_offsets":[0,1]}}',
                    '{"a\\ud800":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
                    '{"a":{"dtype":"U8","shape":[-0],"data_offsets":[0,1]}}',
                    '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1],"x":1e999}}',
                    '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1],"x":'
                    + "[" * 126
                    + "]" * 126
                    + "}}",
                    '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1],"x":' + "9" * 400 + "}}",
                    '{"a":{"dtype":"U8","shape":[1e0],"data_offsets":[0,1]}}',
                    '{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}   \t\n\r',
                    '\ufeff{"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
                    '{"__metadata__":null,"a":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}',
                    '{"__metadata__":{"k":"v"},"__metadata__":{}}',
                    "[" * 2000 + "]" * 2000,
                ]
            )
        )
        return frame(trick.encode("utf-8"), b"\0" * draw(st.integers(0, 2)), pad=False)
    mutated = draw(json_mutation(header))
    try:
        header_bytes = encode(mutated)
    except (TypeError, ValueError):
        header_bytes = b"{}"
    return frame(header_bytes, data, pad=draw(st.booleans()))


# --- the oracle ----------------------------------------------------------------------------------


class OracleFailure(AssertionError):
    pass


def reference_accepts(blob: bytes) -> bool:
    import safetensors

    try:
        safetensors.deserialize(blob)
    except Exception:  # any refusal of the reference counts as a refusal
        return False
    return True


def check_file(blob: bytes, path: Path, *, differential: bool = True) -> str:
    """Run the oracle on one input; returns "accepted" or the refusal message."""
    from kvscale.errors import KVScaleError
    from kvscale.io.safetensors import read_header

    path.write_bytes(blob)
    start = time.monotonic()
    try:
        header = read_header(path)
        outcome = "accepted"
    except KVScaleError as exc:
        header = None
        outcome = exc.one_line()
        if "\n" in outcome or not outcome.startswith(f"{path}: ") or len(outcome) > 1000:
            raise OracleFailure(f"bad message {outcome!r}") from None
    elapsed = time.monotonic() - start
    if elapsed > SLOW_SECONDS:
        raise OracleFailure(f"took {elapsed:.1f} s")
    if header is not None:
        position = header.data_start
        for info in sorted(header.tensors.values(), key=lambda t: (t.start, t.end)):
            if info.start != position or info.end < info.start:
                raise OracleFailure(f"accepted a header that does not tile: {info}")
            position = info.end
        if position != len(blob):
            raise OracleFailure("accepted a header whose data does not end at EOF")
    if differential:
        ours, theirs = header is not None, reference_accepts(blob)
        if ours != theirs and not (theirs and "duplicate key" in outcome):
            raise OracleFailure(f"kvscale {outcome!r} but the reference accepts={theirs}")
    return outcome


# --- engines -------------------------------------------------------------------------------------


def _save_artifact(directory: Path, blob: bytes) -> Path:
    import hashlib

    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"crash-{hashlib.sha256(blob).hexdigest()[:16]}.safetensors"
    out.write_bytes(blob)
    return out


def run_hypothesis(minutes: float, seed: int | None, artifacts: Path) -> int:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import seed as fixed_seed

    deadline = time.monotonic() + minutes * 60
    examples = 0
    failures = 0
    last_failing = b""
    with tempfile.TemporaryDirectory(prefix="kvscale-fuzz-") as tmp:
        path = Path(tmp) / "fuzz.safetensors"

        @settings(
            max_examples=1_000,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(files())
        def one(blob: bytes) -> None:
            nonlocal examples, last_failing
            examples += 1
            try:
                check_file(blob, path)
            except Exception:
                last_failing = blob  # hypothesis replays the shrunk example last
                raise

        round_no = 0
        while time.monotonic() < deadline:
            runner = fixed_seed(seed + round_no)(one) if seed is not None else one
            try:
                runner()
            except Exception as exc:  # report, keep the input, and keep fuzzing
                failures += 1
                saved = _save_artifact(artifacts, last_failing)
                print(f"round {round_no}: {type(exc).__name__}: {exc}"[:2000])
                print(f"shrunk failing input saved to {saved}")
            round_no += 1
            print(f"{examples:,} inputs, {failures} failing rounds", flush=True)
    return 1 if failures else 0


def run_atheris(minutes: float, artifacts: Path, extra: list[str]) -> int:
    try:
        import atheris  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except ImportError:
        print("atheris is not installed: pip install atheris (or use --engine hypothesis)")
        return 2
    with atheris.instrument_imports():
        import kvscale.io.safetensors  # noqa: F401 - instrumented for coverage feedback

    tmp = Path(tempfile.mkdtemp(prefix="kvscale-fuzz-"))
    path = tmp / "fuzz.safetensors"
    corpus = tmp / "corpus"  # libFuzzer grows it; kept after the run for the next one
    corpus.mkdir()
    print(f"corpus: {corpus}", flush=True)
    for i, blob in enumerate(_seed_corpus()):
        (corpus / f"seed-{i}").write_bytes(blob)

    def test_one_input(data: bytes) -> None:
        check_file(data, path)

    artifacts.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.argv[0],
        str(corpus),
        f"-max_total_time={int(minutes * 60)}",
        f"-artifact_prefix={artifacts}/",
        "-max_len=4096",
        "-timeout=10",
        *extra,
    ]
    atheris.Setup(argv, test_one_input)
    atheris.Fuzz()
    return 0


def _seed_corpus() -> list[bytes]:
    """A few valid and nearly valid files to start coverage-guided fuzzing from."""
    from hypothesis import HealthCheck, given, settings

    seeds: list[bytes] = []

    @settings(max_examples=64, database=None, suppress_health_check=list(HealthCheck))
    @given(files())
    def collect(blob: bytes) -> None:
        seeds.append(blob)

    collect()
    entry = {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}
    seeds.append(frame(encode({"model.layers.0.self_attn.k_scale": entry}), b"\0\0\0?"))
    return seeds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=1.0)
    parser.add_argument("--engine", choices=["hypothesis", "atheris"], default="hypothesis")
    parser.add_argument("--seed", type=int, default=None, help="hypothesis seed (reproducible)")
    parser.add_argument("--artifacts", type=Path, default=Path("fuzz-artifacts"))
    parser.add_argument("--replay", type=Path, help="run the oracle on one saved input")
    args, extra = parser.parse_known_args(argv)
    extra = [a for a in extra if a != "--"]
    if args.replay is not None:
        with tempfile.TemporaryDirectory() as tmp:
            print(check_file(args.replay.read_bytes(), Path(tmp) / "replay.safetensors"))
        return 0
    if args.engine == "atheris":
        return run_atheris(args.minutes, args.artifacts, extra)
    return run_hypothesis(args.minutes, args.seed, args.artifacts)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo, if not installed
    sys.exit(main())
