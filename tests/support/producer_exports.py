"""Checkpoints exported by the real producers, rebuilt from tests/fixtures/producers/.

Each fixture directory holds what one producer (llm-compressor, NVIDIA ModelOpt, AMD Quark)
wrote for a tiny random model (tests/fixtures/producers/make_exports.py made them; its
docstring says how): the JSON files byte for byte, and per safetensors shard a
``<shard>.json`` with the real header bytes and the bytes of its scale-like / KV-scheme
tensors. ``build_checkpoint`` writes a valid checkpoint directory from that: the same header
(hence the same names, dtypes, shapes, offsets and ``__metadata__``), every kept tensor's bytes
exact, every other tensor (the weights) zero-filled.

Standard library only: the rebuilt files are plain bytes, no torch needed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.checkpoints import safetensors_prefix

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "producers"
SHARD_SCHEMA = "kvscale.producer-shard/1"
FIXTURE_SCHEMA = "kvscale.producer-fixture/1"

# The tensors an engine's KV-cache path reads or refuses (what the parity oracles are fed):
# the scale names of every producer, Quark's output scales, zero points, and the affine-KV
# biases ModelOpt writes beside its scales. Linear-layer weights and their input/weight
# scales are left out: the oracles model the attention layers, not the FP8 linear kernels.
_KV_SUFFIXES = (
    ".k_scale",
    ".v_scale",
    ".q_scale",
    ".prob_scale",
    ".kv_scale",
    ".k_proj.output_scale",
    ".v_proj.output_scale",
    ".q_proj.output_scale",
    ".prob_output_scale",
    ".k_bias",
    ".v_bias",
    "_zero_point",
)


def is_kv_tensor(name: str) -> bool:
    """Whether ``name`` belongs to the KV-cache scheme (scales, zero points, affine biases)."""
    return name.endswith(_KV_SUFFIXES)


@dataclass(frozen=True)
class ProducerFixture:
    name: str
    path: Path
    meta: dict[str, Any]

    @property
    def producer(self) -> str:
        return str(self.meta["producer"])

    @property
    def shards(self) -> list[str]:
        return list(self.meta["shards"])

    def shard_record(self, shard: str) -> dict[str, Any]:
        rec: dict[str, Any] = json.loads((self.path / f"{shard}.json").read_text())
        if rec.get("schema") != SHARD_SCHEMA:
            raise ValueError(f"{self.path / shard}.json: not a {SHARD_SCHEMA} record")
        return rec

    def header(self, shard: str) -> dict[str, Any]:
        header: dict[str, Any] = json.loads(self.shard_record(shard)["header"])
        return header

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = json.loads((self.path / "config.json").read_text())
        return config

    def tensor_names(self) -> list[str]:
        return [n for s in self.shards for n in self.header(s) if n != "__metadata__"]


def fixture_names() -> list[str]:
    return sorted(p.parent.name for p in FIXTURES.glob("*/producer.json"))


def load_fixture(name: str) -> ProducerFixture:
    path = FIXTURES / name
    meta = json.loads((path / "producer.json").read_text())
    if meta.get("schema") != FIXTURE_SCHEMA:
        raise ValueError(f"{path}/producer.json: not a {FIXTURE_SCHEMA} record")
    return ProducerFixture(name, path, meta)


def _rebuild_shard(rec: dict[str, Any], keep: Callable[[str], bool] | None) -> bytes:
    raw = rec["header"].encode("utf-8")
    if len(raw) != rec["header_size"]:
        raise ValueError("recorded header does not have its recorded size")
    header = json.loads(raw)
    if keep is not None:
        return _subset_shard(header, rec, keep)
    data = bytearray(rec["data_size"])
    for name, hexbytes in rec["kept"].items():
        begin, end = header[name]["data_offsets"]
        value = bytes.fromhex(hexbytes)
        if len(value) != end - begin:
            raise ValueError(f"{name}: {len(value)} recorded bytes for {end - begin}")
        data[begin:end] = value
    return safetensors_prefix(raw, pad=False) + bytes(data)


def _subset_shard(
    header: dict[str, Any], rec: dict[str, Any], keep: Callable[[str], bool]
) -> bytes:
    # A shard holding only the selected tensors (their recorded bytes, or zeros), in the
    # recorded order of offsets, with the recorded metadata; the header is padded with
    # spaces to a multiple of 8 as safetensors writers do.
    entries = sorted(
        ((n, i) for n, i in header.items() if n != "__metadata__" and keep(n)),
        key=lambda item: item[1]["data_offsets"][0],
    )
    new_header: dict[str, Any] = {}
    if "__metadata__" in header:
        new_header["__metadata__"] = header["__metadata__"]
    data = bytearray()
    for name, info in entries:
        begin, end = info["data_offsets"]
        value = bytes.fromhex(rec["kept"][name]) if name in rec["kept"] else bytes(end - begin)
        new_header[name] = {
            "dtype": info["dtype"],
            "shape": info["shape"],
            "data_offsets": [len(data), len(data) + len(value)],
        }
        data += value
    return safetensors_prefix(new_header) + bytes(data)


def build_checkpoint(name: str, dest: Path, *, keep: Callable[[str], bool] | None = None) -> Path:
    """Write fixture ``name`` as a checkpoint directory ``dest`` (created) and return it.

    Without ``keep``: every shard exactly as the producer laid it out (same header bytes,
    same size), weights zero-filled. With ``keep``: each shard reduced to the tensors for
    which ``keep(name)`` is true (used to feed the parity oracles only the KV-cache tensors);
    the index, when there is one, is rewritten to name only those.
    """
    fx = load_fixture(name)
    dest.mkdir(parents=True, exist_ok=False)
    for fname in fx.meta["json_files"]:
        shutil.copyfile(fx.path / fname, dest / fname)
    for shard in fx.shards:
        (dest / shard).write_bytes(_rebuild_shard(fx.shard_record(shard), keep))
    index = dest / "model.safetensors.index.json"
    if keep is not None and index.is_file():
        doc = json.loads(index.read_text())
        doc["weight_map"] = {k: v for k, v in doc["weight_map"].items() if keep(k)}
        index.write_text(json.dumps(doc, indent=2) + "\n")
    return dest
