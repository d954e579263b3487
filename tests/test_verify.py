"""``kvscale verify`` on the CPU: targets, host/device agreement, statistics, thresholds and exit
codes."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from support.checkpoints import ct_config, quant_config, tensor, write_checkpoint
from support.checkpoints import llama_config as config
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.core.verify.run import VerifyOptions, verify_target
from kvscale.core.verify.stats import SATURATION_LIMIT, synthetic_activations
from kvscale.core.verify.target import LayerScales, host_device_agree
from kvscale.kernel.formats import E4M3FN

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ACTIVATIONS = EXAMPLES / "activations" / "tiny-llama-kv.safetensors"
runner = CliRunner()


def _cuda() -> bool:
    return torch.cuda.is_available()


def test_reference_only_run_passes_on_the_example() -> None:
    result = runner.invoke(
        app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--json", "--tokens", "512"]
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "kvscale.verify/1"
    assert (doc["device"], doc["kernel"], doc["ok"], doc["host_device_agree"]) == (
        "cpu",
        None,
        True,
        True,
    )
    first = doc["layers"][0]
    assert first["name"] == "model.layers.0.self_attn.attn" and first["pass"] is True
    assert first["k"]["scale"] == 0.02099609375 and first["k"]["mismatched_bytes"] is None
    # The synthetic sample overshoots the scale's range by 2%, inside the 448 -> 464 rounding
    # margin of e4m3fn: nothing is clipped.
    assert first["k"]["saturated"] == 0 < SATURATION_LIMIT
    assert 0.01 < first["k"]["rel_rms_error"] < 0.05
    assert any("kernel did not run" in note for note in doc["notes"])


def test_strict_requires_the_kernel() -> None:
    result = runner.invoke(
        app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--strict", "--tokens", "64"]
    )
    assert result.exit_code == 1


@pytest.mark.skipif(
    _cuda(), reason="this machine has CUDA; the no-GPU exit code cannot be observed"
)
def test_gpu_without_cuda_exits_3() -> None:
    result = runner.invoke(app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--gpu"])
    assert result.exit_code == 3
    assert result.stdout == "" and "no CUDA device" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_wrong_scale_fails_with_a_saturation_report() -> None:
    result = runner.invoke(
        app,
        ["verify", str(EXAMPLES / "wrong-scale"), "--activations", str(ACTIVATIONS), "--json"],
    )
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    bad = doc["layers"][1]
    assert bad["pass"] is False and bad["k"]["data"] == "activations"
    assert bad["k"]["saturated"] > 0.5
    assert "too small for this data" in bad["k"]["failures"][0]
    assert "recalibrate" in bad["k"]["failures"][0]
    assert all(layer["pass"] for i, layer in enumerate(doc["layers"]) if i != 1)


def test_good_scales_pass_with_captured_activations() -> None:
    result = runner.invoke(
        app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--activations", str(ACTIVATIONS)]
    )
    assert result.exit_code == 0, result.stdout


def test_per_head_target() -> None:
    result = verify_target(EXAMPLES / "llm-compressor-attn-head", VerifyOptions(tokens=128))
    assert result.ok
    assert result.layers[0].k.scale == 0.02099609375  # host value = max over heads


def _normalize_output(
    directory: Path, k_device: list[float], k_host: float, head_size: int = 16
) -> Path:
    directory.mkdir()
    name = "model.layers.0.self_attn.attn"
    shape = () if len(k_device) == 1 else (len(k_device),)
    save_file(
        {
            f"{name}.k_scale": torch.tensor(k_device, dtype=torch.float32).reshape(shape),
            f"{name}.v_scale": torch.tensor(0.25, dtype=torch.float32),
            # normalize writes a device tensor for every kind the JSON holds
            f"{name}.q_scale": torch.tensor(1.0, dtype=torch.float32),
            f"{name}.prob_scale": torch.tensor(1.0, dtype=torch.float32),
        },
        str(directory / "kv_scales.safetensors"),
    )
    doc = {
        "schema": "kvscale.scales/1",
        "checkpoint": "x",
        "kv_cache_dtype": "fp8",
        "platform": "ocp",
        "engine_path": "base",
        "head_size": head_size,
        "layers": {
            name: {
                "k_scale": k_host,
                "v_scale": 0.25,
                "q_scale": 1.0,
                "prob_scale": 1.0,
                "rule": "separate",
                "sources": {},
            }
        },
    }
    (directory / "kv_scales.json").write_text(json.dumps(doc))
    return directory


def test_normalize_output_target_agrees(tmp_path: Path) -> None:
    out = _normalize_output(tmp_path / "out", [0.5], 0.5)
    result = verify_target(out, VerifyOptions(tokens=64))
    assert result.target_kind == "scales-output" and result.host_device_agree and result.ok


def test_host_device_disagreement_fails(tmp_path: Path) -> None:
    out = _normalize_output(tmp_path / "out", [0.5], 0.5000001)
    result = runner.invoke(app, ["verify", str(out), "--json", "--tokens", "64"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["host_device_agree"] is False
    assert "host" in doc["layers"][0]["k"]["failures"][0]


def test_host_device_bits() -> None:
    same = LayerScales("l", 0.5, math.nan, (0.5,), (math.nan,))
    assert host_device_agree(same) == []
    per_head = LayerScales("l", 0.75, 0.25, (0.5, 0.75), (0.25,))
    assert host_device_agree(per_head) == []
    wrong_max = LayerScales("l", 0.5, 0.25, (0.5, 0.75), (0.25,))
    assert host_device_agree(wrong_max)


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


def test_fnuz_target_uses_the_fnuz_format_on_cpu(tmp_path: Path) -> None:
    out = _normalize_output(tmp_path / "out", [0.5], 0.5)
    doc = json.loads((out / "kv_scales.json").read_text())
    doc["platform"] = "fnuz"
    (out / "kv_scales.json").write_text(json.dumps(doc))
    result = verify_target(out, VerifyOptions(tokens=64))
    assert result.fp8_format == "e4m3fnuz"
    gpu = runner.invoke(app, ["verify", str(out), "--gpu"])
    assert gpu.exit_code == 3 and "e4m3fnuz" in gpu.stderr


def test_synthetic_sample_is_sized_from_the_scale() -> None:
    gen = torch.Generator().manual_seed(0)
    scales = torch.tensor([0.01, 0.1])
    x = synthetic_activations(1024, 2, 64, scales.tolist(), E4M3FN, gen).float()
    beyond = (x.abs() / scales.reshape(1, 2, 1) > 448).float().mean(dim=(0, 2))
    assert bool(((beyond > 0) & (beyond <= SATURATION_LIMIT / 2)).all()), beyond
    amax = x.abs().amax(dim=(0, 2))
    assert torch.allclose(amax, scales * 448 * 1.02, rtol=0.01)
    small = synthetic_activations(8, 1, 4, [0.5], E4M3FN, gen).float()
    assert 0.9 * 0.5 * 448 < float(small.abs().max()) <= 0.5 * 448


def test_bad_activations_shape_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "acts.safetensors"
    save_file({"model.layers.0.self_attn.attn.k": torch.zeros(4, 8)}, str(path))
    result = runner.invoke(
        app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--activations", str(path)]
    )
    assert result.exit_code == 2 and "tokens, num_kv_heads, head_size" in result.stderr


def test_tokens_out_of_range() -> None:
    result = runner.invoke(app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--tokens", "0"])
    assert result.exit_code == 2


@pytest.mark.parametrize("dtype", ["turboquant_k8v4", "fp8_inc"])
def test_a_format_verify_cannot_write_is_refused_not_measured_as_fp8(
    dtype: str, make_checkpoint: Callable[..., Path]
) -> None:
    # 6 layers: TurboQuant keeps its 2+2 boundary layers unquantized, layers 2-3 use the format.
    ckpt = make_checkpoint(layers=6, config=ct_config(6, hidden_size=256))
    result = runner.invoke(app, ["verify", str(ckpt), "--kv-cache-dtype", dtype, "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert f"kvscale has no reference writer for {dtype}: verify cannot measure" in result.stderr
    hint = result.stderr.split("--kv-cache-dtype one of: ")[1].strip().split(", ")
    assert {"auto", "fp8", "fp8_e4m3", "nvfp4", "int8_per_token_head"} <= set(hint)
    assert not any(name.startswith(("turboquant", "fp8_inc")) for name in hint)


def test_turboquant_boundary_layers_alone_are_measured_unquantized() -> None:
    # The 4-layer example: min(2, 4 // 2) = 2 boundary layers at each end cover every layer.
    result = runner.invoke(
        app,
        ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--kv-cache-dtype", "turboquant_k8v4"],
    )
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    ("dtype", "fmt"), [("nvfp4", "nvfp4"), ("int8_per_token_head", "int8_per_token_head")]
)
def test_a_format_verify_can_write_is_measured_in_its_own_format(
    dtype: str, fmt: str, make_checkpoint: Callable[..., Path]
) -> None:
    ckpt = make_checkpoint(layers=2, config=ct_config(2, hidden_size=256))
    result = runner.invoke(app, ["verify", str(ckpt), "--kv-cache-dtype", dtype, "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["options"] == {"kv_cache_dtype": dtype}
    assert len(report["layers"]) == 2 and all(layer["pass"] for layer in report["layers"])
