"""kvscale.io.remote.headers: which byte spans of a shard hold the scales."""

from __future__ import annotations

from kvscale.io.remote.headers import spans as scale_spans
from kvscale.io.safetensors import TensorInfo


def test_spans_never_assume_an_order() -> None:
    a = TensorInfo("a", "F32", (), 100, 104)
    b = TensorInfo("b", "F32", (), 8, 12)
    c = TensorInfo("c", "F32", (), 10_000, 10_004)
    spans = scale_spans([a, c, b], gap=4096)
    assert [(s.start, s.end, [i.name for i in s.infos]) for s in spans] == [
        (8, 104, ["b", "a"]),
        (10_000, 10_004, ["c"]),
    ]
