"""``kvscale verify --gpu`` end to end on CUDA (skipped without a CUDA device with FP8 support)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from support.cli import CliRunner
from support.paths import EXAMPLES

from kvscale.cli import app

ACTIVATIONS = EXAMPLES / "activations" / "tiny-llama-kv.safetensors"


def _usable_gpu() -> str | None:
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability(0) < (8, 9):
        return "the GPU has no FP8 conversion (compute capability < 8.9)"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not installed"
    return None


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_usable_gpu() is not None, reason=_usable_gpu() or ""),
]
runner = CliRunner()


def _run(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["verify", *args, "--gpu", "--json"])
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize(
    "example", ["llm-compressor-fp8", "llm-compressor-attn-head", "modelopt-fp8"]
)
def test_examples_pass_bit_exact(example: str) -> None:
    code, doc = _run(str(EXAMPLES / example), "--tokens", "2048")
    assert code == 0, doc
    assert doc["kernel"] and doc["device"] != "cpu" and doc["ok"] is True
    for layer in doc["layers"]:
        assert layer["k"]["mismatched_bytes"] == 0 and layer["v"]["mismatched_bytes"] == 0


def test_e5m2_checkpoint_is_refused_as_vllm_refuses_it() -> None:
    """vLLM 0.33 refuses fp8_e5m2 with checkpoint scales (the kernel's e5m2 bytes are checked by
    tests/kernel/test_triton_cache_gpu.py): verify says so per layer instead of writing anything."""
    code, doc = _run(
        str(EXAMPLES / "llm-compressor-fp8"), "--kv-cache-dtype", "fp8_e5m2", "--tokens", "1024"
    )
    assert code == 1 and doc["fp8_format"] == "e5m2"
    assert [layer["error"] for layer in doc["layers"]] == [
        "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."
    ] * 4


def test_wrong_scale_fails_on_the_gpu_too() -> None:
    code, doc = _run(str(EXAMPLES / "wrong-scale"), "--activations", str(ACTIVATIONS))
    assert code == 1
    bad = doc["layers"][1]
    assert bad["k"]["mismatched_bytes"] == 0  # the kernel is right; the scale is wrong
    assert bad["k"]["saturated"] > 0.5 and "too small" in bad["k"]["failures"][0]


def test_normalize_output_verifies(tmp_path: Path) -> None:
    out = tmp_path / "scales"
    normalized = runner.invoke(
        app, ["normalize", str(EXAMPLES / "llm-compressor-fp8"), "--out", str(out)]
    )
    assert normalized.exit_code == 0, normalized.stderr
    code, doc = _run(str(out), "--tokens", "1024")
    assert code == 0 and doc["target_kind"] == "scales-output" and doc["host_device_agree"]
