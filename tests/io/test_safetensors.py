"""kvscale.io.safetensors: validated headers and bounded tensor reads."""

from __future__ import annotations

import struct
import time
import tracemalloc
from types import SimpleNamespace
from typing import Any

import pytest
from support.hostile import HOSTILE, K, fifo_file, giga_scale

from kvscale.errors import KVScaleError, LimitExceededError, SafetensorsFormatError
from kvscale.io.safetensors import read_header, read_tensor_bytes


def test_hostile_metadata_is_kept_exactly(ckpt_kit: SimpleNamespace) -> None:
    from kvscale.io.safetensors import read_header

    metadata = {f"key{HOSTILE}": f"[bold]{HOSTILE}", "format": "pt"}
    path = ckpt_kit.write(ckpt_kit.tmp / "m.safetensors", {"a": _zeros()}, metadata)
    assert read_header(path).metadata == metadata


def _zeros() -> Any:
    import torch

    return torch.zeros(1)


def test_giga_scale_refused_by_read_tensor_bytes(ckpt_kit: SimpleNamespace) -> None:
    path = giga_scale("ct", "attn_head")(ckpt_kit) / "model.safetensors"
    info = read_header(path).tensors[K]
    with pytest.raises(LimitExceededError) as excinfo:
        read_tensor_bytes(path, info)
    assert "limit max-scale-elements = 65,536" in excinfo.value.one_line()


def test_scale_elements_limit_env(ckpt_kit: SimpleNamespace, monkeypatch: Any) -> None:
    """max-scale-elements: a 3-element scale with the limit at 2 is refused, at 3 it is read."""
    import torch

    path = ckpt_kit.write(ckpt_kit.tmp / "s.safetensors", {K: torch.ones(3)})
    info = read_header(path).tensors[K]
    monkeypatch.setenv("KVSCALE_MAX_SCALE_ELEMENTS", "2")
    with pytest.raises(LimitExceededError) as excinfo:
        read_tensor_bytes(path, info)
    line = excinfo.value.one_line()
    assert "limit max-scale-elements = 2 elements read from one scale tensor" in line
    assert "set KVSCALE_MAX_SCALE_ELEMENTS to raise it" in line
    monkeypatch.setenv("KVSCALE_MAX_SCALE_ELEMENTS", "3")
    assert len(read_tensor_bytes(path, info)) == 12


@pytest.mark.parametrize(
    "header",
    [
        {K: {"dtype": "F32", "shape": [2**63, 2**63, 2**63], "data_offsets": [0, 4]}},
        {K: {"dtype": "F32", "shape": [2**40] * 4, "data_offsets": [0, 2**64 - 1]}},
        {K: {"dtype": "U8", "shape": [2**64 - 1], "data_offsets": [0, 2**64 - 1]}},
        {f"t{i}": {"dtype": "U8", "shape": [2**32], "data_offsets": [0, 2**32]} for i in range(64)},
    ],
    ids=["overflowing-shape", "huge-dims", "u64-max-tensor", "64-claimed-4gb-tensors"],
)
def test_huge_claims_allocate_nothing(ckpt_kit: SimpleNamespace, header: dict[str, Any]) -> None:
    """Shapes and offsets are numbers in a header: no check turns them into an allocation."""
    path = ckpt_kit.raw(ckpt_kit.tmp / "claims.safetensors", header, b"\0" * 4)
    tracemalloc.start()
    try:
        with pytest.raises(SafetensorsFormatError):
            read_header(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"peak {peak:,} bytes"


def test_fifo_never_blocks(ckpt_kit: SimpleNamespace) -> None:
    """read_header on a FIFO returns at once (O_NONBLOCK + fstat), it does not wait for a writer."""
    path = fifo_file(ckpt_kit)
    start = time.monotonic()
    with pytest.raises(KVScaleError, match="FIFO"):
        read_header(path)
    assert time.monotonic() - start < 1


def test_valid_file_still_reads(ckpt_kit: SimpleNamespace) -> None:
    """The hardening refuses nothing the reference accepts: a real file with every float dtype."""
    import torch

    tensors = {
        f"t.{name}": torch.zeros(2, 3, dtype=getattr(torch, name))
        for name in ("float32", "float16", "bfloat16", "float64", "int8", "uint8", "bool")
    }
    tensors["empty"] = torch.zeros(0, 5)
    tensors["scalar"] = torch.tensor(1.5)
    if hasattr(torch, "float8_e4m3fn"):
        tensors["fp8"] = torch.zeros(4, dtype=torch.float8_e4m3fn)
    path = ckpt_kit.write(ckpt_kit.tmp / "ok.safetensors", tensors, {"format": "pt"})
    header = read_header(path)
    assert set(header.tensors) == set(tensors)
    assert header.metadata == {"format": "pt"}
    assert read_tensor_bytes(path, header.tensors["scalar"]) == struct.pack("<f", 1.5)


def test_messages_truncate_giant_names(ckpt_kit: SimpleNamespace) -> None:
    """A 1 MB tensor name does not make a 1 MB error line."""
    name = "x" * (1 << 20)
    path = ckpt_kit.raw(ckpt_kit.tmp / "long.safetensors", {name: {"dtype": "F128"}})
    with pytest.raises(SafetensorsFormatError) as excinfo:
        read_header(path)
    assert len(excinfo.value.one_line()) < 400
