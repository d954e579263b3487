"""kvscale.core.verify.run: ``verify_target`` on a checkpoint and on a scales output (the CPU
reference path)."""

from __future__ import annotations

from pathlib import Path

from support.checkpoints import llama_config as config
from support.checkpoints import quant_config, scales_output, tensor, write_checkpoint
from support.paths import EXAMPLES

from kvscale.core.verify.run import VerifyOptions, verify_target


def test_per_head_target() -> None:
    result = verify_target(EXAMPLES / "llm-compressor-attn-head", VerifyOptions(tokens=128))
    assert result.ok
    assert result.layers[0].k.scale == 0.02099609375  # host value = max over heads


def test_normalize_output_target_agrees(tmp_path: Path) -> None:
    out = scales_output(tmp_path / "out", [0.5], 0.5)
    result = verify_target(out, VerifyOptions(tokens=64))
    assert result.target_kind == "scales-output" and result.host_device_agree and result.ok


def test_invalid_scale_fails(tmp_path: Path) -> None:
    p = "model.layers.0.self_attn"
    write_checkpoint(
        tmp_path,
        {f"{p}.k_scale": tensor(-0.5), f"{p}.v_scale": tensor(0.5)},
        config(layers=1, quant=quant_config("compressed-tensors")),
    )
    result = verify_target(tmp_path, VerifyOptions(tokens=64))
    assert not result.ok
    assert "not a positive finite number" in result.layers[0].k.failures[0]
