"""kvscale.core.inspect: ``inspect_checkpoint`` reads headers and scale bytes, never weights."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from support.checkpoints import llama_config as config
from support.checkpoints import quant_config, tensor, write_checkpoint

from kvscale.core.inspect import inspect_checkpoint
from kvscale.engine.options import EngineOptions

P = "model.layers.{}.self_attn"


def test_core_api_reads_only_headers_and_scale_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = torch.zeros(1024, 1024)  # 4 MiB of weights that must never be read
    tensors = {
        f"{P.format(0)}.q_proj.weight": big,
        f"{P.format(0)}.k_scale": tensor(0.5),
        f"{P.format(0)}.v_scale": tensor(0.25),
    }
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("compressed-tensors")))
    read: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, n: int, offset: int) -> bytes:
        data = real_pread(fd, n, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counting_pread)
    report = inspect_checkpoint(tmp_path, EngineOptions())
    assert report.layers[0].k_scale == 0.5
    assert sum(read) < 4096, read
