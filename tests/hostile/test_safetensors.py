"""Broken and hostile safetensors files, each with its exact exit code and one-line message.

Every entry of ``CATALOGUE`` runs through the real CLI (``kvscale inspect PATH`` and
``... --json``, in process with typer's CliRunner), and, in ``test_catalogue_subprocess``, as a
real ``python -m kvscale`` process with a 10 s timeout, with its whole input tree hashed before
and after and an empty working directory that must stay empty. That test also runs the
catalogues of ``test_layouts.py`` and ``test_config.py`` (this directory); select it alone with
``pytest -m slow``. Every unreadable entry (exit 2) also goes through ``normalize``
and ``verify``, which must give the same one-line message and write nothing.

The messages mirror the checks of huggingface/safetensors ``Metadata::validate`` and
``SafeTensors::read_metadata`` (see kv-scale-rules.md section 6); see ``docs/limits.md``."""

from __future__ import annotations

import json
import math
import os
import struct
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from support.hostile import Q_WEIGHT, K, V, fifo_file, giga_scale

from tests.hostile.test_config import CATALOGUE as CONFIG_CATALOGUE
from tests.hostile.test_layouts import CATALOGUE as LAYOUT_CATALOGUE

NOT_ST = r"not a valid safetensors file: "


class Case(NamedTuple):
    id: str
    build: Callable[[SimpleNamespace], Path]
    code: int
    expect: str
    env: dict[str, str] | None = None
    args: tuple[str, ...] = ()


def _file(name: str) -> str:
    """The message must name the file: ``.../<name>: ``."""
    return "/" + name.replace(".", r"\.") + ": "


def _f32(begin: int = 0, shape: list[int] | None = None, dtype: str = "F32") -> dict[str, Any]:
    size = {"F32": 4, "F16": 2, "BF16": 2}.get(dtype, 4)
    n = 1
    for d in shape or []:
        n *= d
    return {"dtype": dtype, "shape": shape or [], "data_offsets": [begin, begin + n * size]}


def raw(header: Any, data: bytes = b"", **kw: Any) -> Callable[[SimpleNamespace], Path]:
    """A builder for one crafted file ``bad.safetensors``."""

    def build(kit: SimpleNamespace) -> Path:
        return kit.raw(kit.tmp / "bad.safetensors", header, data, **kw)

    return build


def raw_bytes(content: bytes) -> Callable[[SimpleNamespace], Path]:
    def build(kit: SimpleNamespace) -> Path:
        path = kit.tmp / "bad.safetensors"
        path.write_bytes(content)
        return path

    return build


def _valid_then(mutate: Callable[[bytes], bytes]) -> Callable[[SimpleNamespace], Path]:
    """A valid one-tensor file written by safetensors itself, then mutated."""

    def build(kit: SimpleNamespace) -> Path:
        import torch

        path = kit.write(kit.tmp / "bad.safetensors", {K: torch.tensor([0.5, 0.25])})
        path.write_bytes(mutate(path.read_bytes()))
        return path

    return build


def _sparse_header_len(n: int, file_size: int) -> Callable[[SimpleNamespace], Path]:
    """A header length of ``n`` in a sparse file of ``file_size`` bytes (costs no disk)."""

    def build(kit: SimpleNamespace) -> Path:
        path = kit.raw(kit.tmp / "bad.safetensors", b"{}", header_len=n, pad=False)
        os.truncate(path, file_size)
        return path

    return build


def dir_named_shard(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    (directory / "model-00002-of-00002.safetensors").mkdir()
    return directory


def fifo_shard(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    os.mkfifo(directory / "zz.safetensors")  # opening it for reading would block forever
    return directory


def device_shard(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    (directory / "zz.safetensors").symlink_to("/dev/zero")  # reading it never ends
    return directory


CATALOGUE: list[Case] = [
    # --- framing: the 8-byte length and the header bytes
    Case("empty-file", raw_bytes(b""), 2, _file("bad.safetensors") + NOT_ST + "file is empty"),
    Case(
        "shorter-than-8-bytes",
        raw_bytes(b"\x01\x02\x03"),
        2,
        NOT_ST + "file is 3 bytes, shorter than the 8-byte header length",
    ),
    Case(
        "header-length-past-eof",
        raw(b"{}", header_len=1000),
        2,
        NOT_ST + "header length 1,000 runs past the end of the file",
    ),
    Case(
        "header-length-u64-max",
        raw(b"{}", header_len=2**64 - 1),
        2,
        NOT_ST + "header length 18,446,744,073,709,551,615 runs past the end",
    ),
    Case(
        "header-over-format-limit",
        _sparse_header_len(100_000_001, 100_000_016),
        2,
        r"safetensors header of 100,000,001 bytes refused \(limit max-header-bytes = "
        r"100,000,000 .*cannot be raised\)",
    ),
    Case(
        "header-over-env-limit",
        raw(
            {"__metadata__": {"pad": "x" * 200}, K: _f32()},
            b"\0" * 4,
        ),
        2,
        r"header of \d+ bytes refused \(limit max-header-bytes = 64 bytes of safetensors JSON "
        r"header; set KVSCALE_MAX_HEADER_BYTES to raise it",
        {"KVSCALE_MAX_HEADER_BYTES": "64"},
    ),
    Case("header-length-zero", raw(b"", pad=False), 2, NOT_ST + "header is not valid JSON"),
    Case(
        "header-not-utf8",
        raw(b'{"\xff\xfe": 1}'),
        2,
        NOT_ST + r"header is not UTF-8 \(invalid start byte at byte 2\)",
    ),
    Case(
        "header-lone-surrogate-bytes",
        raw(b'{"\xed\xa0\x80":{}}'),
        2,
        NOT_ST + "header is not UTF-8",
    ),
    Case("header-not-json", raw(b"{not json"), 2, NOT_ST + "header is not valid JSON"),
    Case("header-utf8-bom", raw(b"\xef\xbb\xbf{}"), 2, NOT_ST + "header is not valid JSON"),
    Case(
        "header-nul-padding",
        raw(b"{}" + b"\0" * 6, pad=False),
        2,
        NOT_ST + "header is not valid JSON",
    ),
    Case("header-json-array", raw([1, 2]), 2, NOT_ST + "header JSON is an array, not an object"),
    Case("header-json-string", raw('"x"'), 2, NOT_ST + "header JSON is a string, not an object"),
    Case("header-json-null", raw("null"), 2, NOT_ST + "header JSON is null, not an object"),
    Case(
        "header-nested-too-deeply",
        raw("[" * 100_000 + "]" * 100_000),
        2,
        NOT_ST + r"header is not valid JSON \(nested too deeply\)",
    ),
    Case(
        "header-giant-integer",
        raw('{"a":{"dtype":"F32","shape":[' + "9" * 100_000 + '],"data_offsets":[0,4]}}'),
        2,
        NOT_ST + r"header is not valid JSON \(number out of range: 9{20}\.\.\.\)",
    ),
    # serde_json (the reference's parser) refuses these; Python's json alone would not
    Case(
        "lone-surrogate-in-name",
        raw('{"k\\ud800":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}', b"\0" * 4),
        2,
        NOT_ST + r"header holds a lone surrogate escape in the tensor name 'k\\ud800'",
    ),
    Case(
        "lone-surrogate-in-metadata",
        raw('{"__metadata__":{"format":"\\udc00"}}'),
        2,
        NOT_ST
        + r"header holds a lone surrogate escape in the string '\\udc00' \(in __metadata__\)",
    ),
    Case(
        "nesting-past-serde-limit-in-ignored-field",
        raw(
            f'{{"{K}":{{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":'
            + "[" * 126
            + "]" * 126
            + "}}",
            b"\0" * 4,
        ),
        2,
        NOT_ST + rf"header holds nesting deeper than 127 levels \(tensor '{K}', field 'x'\)",
    ),
    Case(
        "minus-zero-dim",
        raw(f'{{"{K}":{{"dtype":"F32","shape":[-0],"data_offsets":[0,4]}}}}', b"\0" * 4),
        2,
        NOT_ST + f"tensor '{K}' has an invalid dimension -0.0 in its shape",
    ),
    Case(
        "number-out-of-f64-range",
        raw(f'{{"{K}":{{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1e999}}}}', b"\0" * 4),
        2,
        NOT_ST + r"header is not valid JSON \(number out of range: 1e999\.\.\.\)",
    ),
    Case(
        "header-nan-constant",
        raw('{"a":{"dtype":"F32","shape":[NaN],"data_offsets":[0,4]}}'),
        2,
        NOT_ST + r"header is not valid JSON \(non-standard JSON constant NaN\)",
    ),
    Case(
        "duplicate-tensor-keys",
        raw(f'{{"{K}":{json.dumps(_f32())},"{K}":{json.dumps(_f32())}}}', b"\0" * 4),
        2,
        NOT_ST + f"header has a duplicate key '{K}'",
    ),
    Case(
        "duplicate-field-keys",
        raw(f'{{"{K}":{{"dtype":"F32","dtype":"F16","shape":[],"data_offsets":[0,4]}}}}'),
        2,
        NOT_ST + "header has a duplicate key 'dtype'",
    ),
    # --- entries
    Case(
        "entry-not-object",
        raw({K: [1, 2]}),
        2,
        NOT_ST + f"entry for tensor '{K}' is an array, not an object",
    ),
    Case(
        "unknown-dtype",
        raw({K: {"dtype": "F128", "shape": [], "data_offsets": [0, 16]}}, b"\0" * 16),
        2,
        NOT_ST + f"tensor '{K}' has unknown dtype 'F128'",
    ),
    Case(
        "lowercase-dtype",
        raw({K: {"dtype": "f32", "shape": [], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + "tensor '.*' has unknown dtype 'f32'",
    ),
    Case(
        "missing-dtype",
        raw({K: {"shape": [], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + f"tensor '{K}' has no dtype",
    ),
    Case(
        "negative-dim",
        raw({K: {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + f"tensor '{K}' has an invalid dimension -1 in its shape",
    ),
    Case(
        "float-dim",
        raw({K: {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + "tensor '.*' has an invalid dimension 1.0",
    ),
    Case(
        "bool-dim",
        raw({K: {"dtype": "F32", "shape": [True], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + "tensor '.*' has an invalid dimension True",
    ),
    Case(
        "dim-over-u64",
        raw({K: {"dtype": "F32", "shape": [2**64], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + "tensor '.*' has an invalid dimension 18446744073709551616",
    ),
    Case(
        "shape-product-overflows",
        raw({K: {"dtype": "F32", "shape": [2**32, 2**32], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + f"shape of tensor '{K}' overflows 64 bits",
    ),
    Case(
        "byte-size-overflows",
        raw({K: {"dtype": "F64", "shape": [2**62], "data_offsets": [0, 8]}}, b"\0" * 8),
        2,
        NOT_ST + f"byte size of tensor '{K}' overflows 64 bits",
    ),
    Case(
        "huge-shape-small-data",
        raw({K: {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + r"tensor '.*' has 4 data bytes but F32 x \[1099511627776\] needs 4398046511104",
    ),
    Case(
        "many-dims",
        raw({K: {"dtype": "F32", "shape": [1] * 100_000 + [2], "data_offsets": [0, 4]}}),
        2,
        NOT_ST + r"tensor '.*' has 4 data bytes but F32 x \[1, 1, 1, 1, 1, 1, 1, 1, ...\] needs 8",
    ),
    Case(
        "shape-not-list",
        raw({K: {"dtype": "F32", "shape": 4, "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + f"tensor '{K}' has no shape list",
    ),
    Case(
        "sub-byte-misaligned",
        raw({K: {"dtype": "F4", "shape": [3], "data_offsets": [0, 1]}}, b"\0"),
        2,
        NOT_ST + f"tensor '{K}' does not end on a byte boundary",
    ),
    # --- offsets
    Case(
        "offsets-missing",
        raw({K: {"dtype": "F32", "shape": []}}, b"\0" * 4),
        2,
        NOT_ST + r"tensor '.*' has no \[begin, end\] data_offsets",
    ),
    Case(
        "offsets-three-values",
        raw({K: {"dtype": "F32", "shape": [], "data_offsets": [0, 4, 8]}}, b"\0" * 4),
        2,
        NOT_ST + r"tensor '.*' has no \[begin, end\] data_offsets",
    ),
    Case(
        "offsets-negative",
        raw({K: {"dtype": "F32", "shape": [], "data_offsets": [-4, 0]}}, b"\0" * 4),
        2,
        NOT_ST + r"tensor '.*' has invalid data_offsets \[-4, 0\]",
    ),
    Case(
        "offsets-strings",
        raw({K: {"dtype": "F32", "shape": [], "data_offsets": ["0", "4"]}}, b"\0" * 4),
        2,
        NOT_ST + "tensor '.*' has invalid data_offsets",
    ),
    Case(
        "offsets-overlap",
        raw({K: _f32(0), V: {"dtype": "F32", "shape": [], "data_offsets": [2, 6]}}, b"\0" * 8),
        2,
        NOT_ST + f"data_offsets of tensor '{V}' overlap the previous tensor",
    ),
    Case(
        "offsets-identical",
        raw({K: _f32(0), V: _f32(0)}, b"\0" * 4),
        2,
        NOT_ST + r"data_offsets of tensor '.*' overlap the previous tensor \(begin 0 < 4\)",
    ),
    Case(
        "offsets-gap",
        raw({K: _f32(0), V: _f32(8)}, b"\0" * 12),
        2,
        NOT_ST + f"data_offsets of tensor '{V}' leave a gap of 4 bytes",
    ),
    Case(
        "offsets-not-from-zero",
        raw({K: _f32(4)}, b"\0" * 8),
        2,
        NOT_ST + f"data_offsets of tensor '{K}' leave a gap of 4 bytes",
    ),
    Case(
        "offsets-end-before-begin",
        raw({K: {"dtype": "F32", "shape": [], "data_offsets": [4, 0]}}, b"\0" * 4),
        2,
        NOT_ST + r"data_offsets of tensor '.*' end before they begin \(4 > 0\)",
    ),
    Case(
        "offsets-disagree-with-dtype",
        raw({K: {"dtype": "F16", "shape": [], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + f"tensor '{K}' has 4 data bytes but F16 x \\[\\] needs 2",
    ),
    Case(
        "offsets-disagree-with-shape",
        raw({K: {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
        2,
        NOT_ST + r"tensor '.*' has 4 data bytes but F32 x \[2\] needs 8",
    ),
    Case(
        "offsets-past-end",
        raw({K: _f32(0), V: _f32(4)}, b"\0" * 6),
        2,
        NOT_ST + f"truncated: tensor '{V}' ends at byte \\d+ but the file has \\d+ bytes",
    ),
    Case(
        "offsets-far-past-end",
        raw({K: {"dtype": "U8", "shape": [2**40], "data_offsets": [0, 2**40]}}),
        2,
        NOT_ST + "truncated: .*data_offsets run past the end of the file",
    ),
    Case(
        "trailing-bytes",
        raw({K: _f32()}, b"\0" * 8),
        2,
        NOT_ST + "4 trailing bytes after the last tensor's data",
    ),
    Case(
        "trailing-bytes-no-tensors",
        raw({}, b"junk"),
        2,
        NOT_ST + "4 trailing bytes after the last tensor's data",
    ),
    Case(
        "truncated-data",
        _valid_then(lambda b: b[:-3]),
        2,
        NOT_ST + f"truncated: tensor '{K}' ends at byte",
    ),
    Case(
        "truncated-in-header",
        _valid_then(lambda b: b[:20]),
        2,
        NOT_ST + "header length .* runs past the end of the file",
    ),
    # --- __metadata__
    Case(
        "metadata-int-value",
        raw({"__metadata__": {"format": 1}, K: _f32()}, b"\0" * 4),
        2,
        NOT_ST + "__metadata__ is not a map of strings to strings",
    ),
    Case(
        "metadata-list",
        raw({"__metadata__": ["format", "pt"], K: _f32()}, b"\0" * 4),
        2,
        NOT_ST + "__metadata__ is not a map of strings to strings",
    ),
    Case(
        "metadata-string",
        raw({"__metadata__": "pt", K: _f32()}, b"\0" * 4),
        2,
        NOT_ST + "__metadata__ is not a map of strings to strings",
    ),
    Case(
        "metadata-nested",
        raw({"__metadata__": {"a": {"b": "c"}}, K: _f32()}, b"\0" * 4),
        2,
        NOT_ST + "__metadata__ is not a map of strings to strings",
    ),
    # --- not a file
    Case("fifo-given", fifo_file, 2, r"pipe\.safetensors: not a regular file or directory"),
    Case(
        "fifo-shard",
        fifo_shard,
        2,
        r"/zz\.safetensors: cannot read: a FIFO \(named pipe\), not a regular file",
    ),
    Case("device-shard", device_shard, 2, r"/zz\.safetensors: cannot read: a device"),
    Case(
        "directory-named-shard",
        dir_named_shard,
        2,
        r"model-00002-of-00002\.safetensors: cannot read: a directory, not a regular file",
    ),
    # --- a scale tensor of 10**9 elements (sparse 4 GB): refused, never read
    Case(
        "giga-scale-base-path",
        giga_scale("fp8"),
        1,
        "layer-refused: KV-cache scale expects a scalar weight, got shape \\(1000000000,\\)",
    ),
    Case(
        "giga-scale-ct-tensor",
        giga_scale("ct"),
        1,
        r"layer-refused: Attempted to load weight \(torch.Size\(\[1000000000\]\)\)",
    ),
    Case(
        "giga-scale-ct-per-head",
        giga_scale("ct", "attn_head"),
        2,
        r"giga/model\.safetensors: scale tensor '.*k_scale' has 1,000,000,000 elements; not "
        r"read \(limit max-scale-elements = 65,536 .*set KVSCALE_MAX_SCALE_ELEMENTS to raise",
    ),
]

NAN, INF = math.nan, math.inf

FP8 = ("--kv-cache-dtype", "fp8")


def scales_ckpt(
    config: str, k: float = 0.5, v: float = 0.25, dtype: str = "float32", **config_extra: Any
) -> Callable[[SimpleNamespace], Path]:
    def build(kit: SimpleNamespace) -> Path:
        cfg = kit.ct_config(1) if config == "ct" else kit.fp8_config(1)
        cfg.update(config_extra)
        tensors = kit.llama_tensors(1, {"k_scale": k, "v_scale": v}, dtype=dtype)
        return kit.make("values", config=cfg, layers=1, tensors=tensors)

    return build


def raw_scale_ckpt(
    config: str,
    dtype: str,
    shape: list[int],
    data: bytes,
    strategy: str = "tensor",
    **config_extra: Any,
) -> Callable[[SimpleNamespace], Path]:
    def build(kit: SimpleNamespace) -> Path:
        directory = kit.tmp / "values"
        directory.mkdir()
        cfg = kit.ct_config(1, strategy) if config == "ct" else kit.fp8_config(1)
        cfg.update(config_extra)
        (directory / "config.json").write_text(json.dumps(cfg))
        header = {
            Q_WEIGHT: {"dtype": "BF16", "shape": [0], "data_offsets": [0, 0]},
            "model.layers.0.self_attn.k_proj.k_scale": {
                "dtype": dtype,
                "shape": shape,
                "data_offsets": [0, len(data)],
            },
        }
        kit.raw(directory / "model.safetensors", header, data)
        return directory

    return build


VALUE_CATALOGUE: list[Case] = [
    # compressed-tensors path: every value is used as is
    Case("ct-k-zero", scales_ckpt("ct", k=0.0), 1, "scale-zero: k_scale is 0.0 .* uses it as is"),
    Case("ct-v-negative-zero", scales_ckpt("ct", v=-0.0), 1, "scale-zero: v_scale is -0.0"),
    Case("ct-k-negative", scales_ckpt("ct", k=-0.5), 1, "scale-negative: k_scale is -0.5"),
    Case("ct-v-nan", scales_ckpt("ct", v=NAN), 1, "scale-nan: v_scale is NaN"),
    Case("ct-k-inf", scales_ckpt("ct", k=INF), 1, "scale-infinite: k_scale is inf"),
    Case("ct-v-minus-inf", scales_ckpt("ct", v=-INF), 1, "scale-negative: v_scale is -inf"),
    Case("ct-k-subnormal", scales_ckpt("ct", k=1e-40), 1, "scale-subnormal: k_scale is"),
    Case("ct-k-bf16-nan", scales_ckpt("ct", k=NAN, dtype="bfloat16"), 1, "scale-nan"),
    Case(
        "ct-k-fp8-nan-byte",
        raw_scale_ckpt("ct", "F8_E4M3", [], b"\x7f"),
        1,
        "scale-nan: k_scale is NaN",
    ),
    Case("ct-k-one", scales_ckpt("ct", k=1.0), 0, "scale-equals-default: k_scale is exactly 1.0"),
    Case(
        "ct-non-scalar-for-tensor-strategy",
        raw_scale_ckpt("ct", "F32", [2], struct.pack("<2f", 0.5, 0.5)),
        1,
        r"layer-refused: Attempted to load weight \(torch.Size\(\[2\]\)\)",
    ),
    Case(
        "ct-per-head-too-many",
        raw_scale_ckpt("ct", "F32", [3], struct.pack("<3f", 0.5, 0.5, 0.5), "attn_head"),
        0,
        "per-head-truncated: holds 3 per-head values for 2 kv heads; the engine keeps the first 2",
    ),
    Case(
        "ct-per-head-too-few",
        raw_scale_ckpt(
            "ct",
            "F32",
            [3],
            struct.pack("<3f", 0.5, 0.5, 0.5),
            "attn_head",
            num_key_value_heads=4,
        ),
        1,
        r"layer-refused: RuntimeError: The size of tensor a \(4\) must match",
    ),
    # base path (fp8 / modelopt / quark): -1 sentinel, k must be positive if anything is
    Case(
        "base-k-zero",
        scales_ckpt("fp8", k=0.0),
        1,
        r"layer-refused: AssertionError: `assert layer.k_scale > 0.0`",
        args=FP8,
    ),
    Case("base-k-nan", scales_ckpt("fp8", k=NAN), 1, "layer-refused: AssertionError", args=FP8),
    Case(
        "base-k-negative", scales_ckpt("fp8", k=-0.5), 1, "layer-refused: AssertionError", args=FP8
    ),
    Case("base-k-inf", scales_ckpt("fp8", k=INF), 1, "scale-infinite", args=FP8),
    Case(
        "base-k-overflows-bf16",
        scales_ckpt("fp8", k=3.4e38),
        1,
        "scale-overflow: k_scale .* becomes inf in bfloat16",
        args=FP8,
    ),
    Case("base-k-subnormal", scales_ckpt("fp8", k=1e-40), 1, "scale-subnormal", args=FP8),
    Case(
        "base-v-zero-ignored",
        scales_ckpt("fp8", v=0.0),
        0,
        "scale-zero: v_scale is 0.0 .* the engine ignores it",
        args=FP8,
    ),
    Case(
        "base-v-zero-ignored-strict",
        scales_ckpt("fp8", v=0.0),
        1,
        "scale-zero",
        args=(*FP8, "--strict"),
    ),
    Case("base-v-nan-ignored", scales_ckpt("fp8", v=NAN), 0, "scale-nan", args=FP8),
    Case(
        "base-non-scalar",
        raw_scale_ckpt("fp8", "F32", [2], struct.pack("<2f", 0.5, 0.5)),
        1,
        "layer-refused: ValueError: KV-cache scale expects a scalar weight",
        args=FP8,
    ),
    Case(
        "base-fnuz-fp16-overflow",
        scales_ckpt("fp8", k=1e5, torch_dtype="float16"),
        1,
        "scale-overflow: k_scale .* becomes inf in float16",
        args=(*FP8, "--platform", "fnuz"),
    ),
    Case(
        "base-fnuz-fp16-underflow-refused",
        scales_ckpt("fp8", k=1e-40, torch_dtype="float16"),
        1,
        "layer-refused: AssertionError",
        args=(*FP8, "--platform", "fnuz"),
    ),
]


CATALOGUE += VALUE_CATALOGUE


@pytest.mark.parametrize("json_mode", [False, True], ids=["table", "json"])
@pytest.mark.parametrize("case", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_catalogue(hostile: Any, case: Case, json_mode: bool) -> None:
    hostile.cli(case, json_mode=json_mode)


ALL_CASES = [*CATALOGUE, *LAYOUT_CATALOGUE, *CONFIG_CATALOGUE]


@pytest.mark.slow
@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_catalogue_subprocess(hostile: Any, case: Any) -> None:
    """``python -m kvscale inspect PATH --json``: exit code, one line, < 10 s, nothing written."""
    if getattr(case, "in_process_only", False):
        pytest.skip("simulated with monkeypatch; no subprocess equivalent")
    hostile.subprocess(case)


UNREADABLE = [c for c in ALL_CASES if c.code == 2]


# Values and engine refusals that make `normalize` refuse to write (contract: a layer the engine
# refuses, or a value that is not a positive finite number).
NORMALIZE_REFUSES = [
    c
    for c in ALL_CASES
    if c.code == 1
    and "--strict" not in c.args
    and c.expect.split(":")[0]
    in ("layer-refused", "scale-zero", "scale-negative", "scale-nan", "scale-infinite")
]


@pytest.mark.parametrize("command", ["normalize", "verify"])
@pytest.mark.parametrize("case", UNREADABLE, ids=[c.id for c in UNREADABLE])
def test_unreadable_input_every_command(hostile: Any, case: Any, command: str) -> None:
    hostile.other_command(case, command)


@pytest.mark.parametrize("case", NORMALIZE_REFUSES, ids=[c.id for c in NORMALIZE_REFUSES])
def test_normalize_refuses_and_writes_nothing(hostile: Any, case: Any) -> None:
    hostile.other_command(case, "normalize")


def test_giga_scale_is_never_read(
    ckpt_kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 10**9-element scale costs neither time nor memory: no read larger than the header."""
    from kvscale.core.inspect import inspect_checkpoint
    from kvscale.engine.options import EngineOptions

    path = giga_scale("fp8")(ckpt_kit)
    reads: list[int] = []
    real_pread = os.pread

    def recording_pread(fd: int, size: int, offset: int) -> bytes:
        reads.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", recording_pread)
    tracemalloc.start()
    start = time.monotonic()
    try:
        report = inspect_checkpoint(path, EngineOptions(kv_cache_dtype="fp8"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - start < 5
    assert max(reads) <= 1 << 16, reads  # header-sized reads only, never the 4 GB tensor
    assert peak < 16 << 20, f"peak {peak:,} bytes"
    assert report.layers[0].rule.value == "error"


def test_layer_index_with_thousands_of_digits(ckpt_kit: SimpleNamespace) -> None:
    import torch
    from support.cli import CliRunner

    from kvscale.cli import app

    prefix = "model.layers." + "9" * 5000 + ".self_attn"
    tensors = {
        f"{prefix}.q_proj.weight": torch.zeros(2, 2),
        f"{prefix}.k_proj.k_scale": torch.tensor(0.5),
    }
    path = ckpt_kit.make("ckpt", config=ckpt_kit.ct_config(1), tensors=tensors)
    result = CliRunner().invoke(app, ["inspect", str(path), "--json"])
    assert "internal error" not in result.stderr
    assert result.exit_code in (0, 1)


def test_undecodable_scale_dtype_on_compressed_tensors(ckpt_kit: SimpleNamespace) -> None:
    from support.cli import CliRunner

    from kvscale.cli import app

    build = raw_scale_ckpt("ct", "C64", [], b"\0" * 8)
    path = build(ckpt_kit)
    result = CliRunner().invoke(app, ["inspect", str(path)])
    assert result.exit_code in (1, 2)
    assert "max-scale-elements" not in result.stderr
