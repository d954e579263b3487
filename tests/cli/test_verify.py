"""``kvscale verify`` on the CPU: targets, host/device agreement, statistics, thresholds and exit
codes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from support.checkpoints import (
    ct_config,
    scales_output,
    write_safetensors_file,
    write_scalar_checkpoint,
)
from support.cli import CliRunner, run_cli, run_cli_json
from support.paths import EXAMPLES

from kvscale.cli import app
from kvscale.core.verify.run import VerifyOptions, verify_target
from kvscale.core.verify.stats import SATURATION_LIMIT

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


def test_host_device_disagreement_fails(tmp_path: Path) -> None:
    out = scales_output(tmp_path / "out", [0.5], 0.5000001)
    result = runner.invoke(app, ["verify", str(out), "--json", "--tokens", "64"])
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["host_device_agree"] is False
    assert "host" in doc["layers"][0]["k"]["failures"][0]


def test_fnuz_target_uses_the_fnuz_format_on_cpu(tmp_path: Path) -> None:
    out = scales_output(tmp_path / "out", [0.5], 0.5)
    doc = json.loads((out / "kv_scales.json").read_text())
    doc["platform"] = "fnuz"
    (out / "kv_scales.json").write_text(json.dumps(doc))
    result = verify_target(out, VerifyOptions(tokens=64))
    assert result.fp8_format == "e4m3fnuz"
    gpu = runner.invoke(app, ["verify", str(out), "--gpu"])
    assert gpu.exit_code == 3 and "e4m3fnuz" in gpu.stderr


def test_bad_activations_shape_is_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "acts.safetensors"
    write_safetensors_file(path, {"model.layers.0.self_attn.attn.k": torch.zeros(4, 8)})
    result = runner.invoke(
        app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--activations", str(path)]
    )
    assert result.exit_code == 2 and "tokens, num_kv_heads, head_size" in result.stderr


def test_tokens_out_of_range() -> None:
    result = runner.invoke(app, ["verify", str(EXAMPLES / "llm-compressor-fp8"), "--tokens", "0"])
    assert result.exit_code == 2


@pytest.mark.parametrize(
    ("example", "k0", "v0"),
    [("quark-fp8", 0.02099609375, 0.0048217773), ("autofp8-legacy", 0.02099609375, None)],
)
def test_kv_cache_dtype_reaches_the_resolution(example: str, k0: float, v0: Any) -> None:
    """Issue 10, defect 1: ``verify --kv-cache-dtype fp8`` verified every layer at 1.0 while
    inspect resolved 0.021."""
    code, inspected = run_cli_json("inspect", EXAMPLES / example, "--kv-cache-dtype", "fp8")
    code_v, verified = run_cli_json("verify", EXAMPLES / example, "--kv-cache-dtype", "fp8")
    assert code == code_v == 0
    first = inspected["layers"][0]
    assert first["k_scale"] == k0 == verified["layers"][0]["k"]["scale"]
    assert verified["layers"][0]["v"]["scale"] == first["v_scale"]
    if v0 is not None:
        assert first["v_scale"] == pytest.approx(v0, rel=1e-6)
    assert verified["options"] == {"kv_cache_dtype": "fp8"}
    # Without the option both resolve to the default for these examples.
    _, plain = run_cli_json("verify", EXAMPLES / example, "--tokens", "64")
    assert plain["options"] == {}


def test_reads_the_policy_file_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """verify resolves with inspect's options and policy file (issue 10, defect 1)."""
    policy = tmp_path / "kvscale.toml"
    policy.write_text('kv_cache_dtype = "fp8"\n')
    monkeypatch.chdir(tmp_path)
    code, doc = run_cli_json("verify", EXAMPLES / "quark-fp8", "--tokens", "64")
    assert code == 0
    assert doc["layers"][0]["k"]["scale"] == 0.02099609375
    assert doc["policy_file"] == str(policy) and doc["options"] == {"kv_cache_dtype": "fp8"}
    human = run_cli("verify", EXAMPLES / "quark-fp8", "--tokens", "64")
    assert (
        "scales resolved as kvscale inspect resolves them: vllm 0.33.0, kv cache fp8, platform "
        f"ocp; options set: kv_cache_dtype=fp8; policy file: {policy}"
    ) in human.stdout.replace("\n", " ")
    off = run_cli("verify", EXAMPLES / "quark-fp8", "--tokens", "64", "--no-policy", "--json")
    assert json.loads(off.stdout)["layers"][0]["k"]["scale"] == 1.0


def test_activations_without_attn_suffix_are_an_input_error(tmp_path: Path) -> None:
    """Issue 10, defect 2: names like ``model.layers.N.self_attn.k`` silently fell back to
    synthetic data, exit 0."""
    path = tmp_path / "acts.safetensors"
    write_safetensors_file(
        path,
        {
            f"model.layers.{i}.self_attn.{kind}": torch.zeros(8, 2, 16)
            for i in range(4)
            for kind in "kv"
        },
    )
    result = run_cli("verify", EXAMPLES / "wrong-scale", "--activations", path)
    assert result.exit_code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "no K/V for any layer of" in line
    assert "expected names like 'model.layers.0.self_attn.attn.k'" in line
    assert "closest found: 'model.layers.0.self_attn.k'" in line


def test_activations_file_without_kv_is_an_input_error() -> None:
    result = run_cli(
        "verify",
        EXAMPLES / "wrong-scale",
        "--activations",
        EXAMPLES / "wrong-scale" / "model.safetensors",
    )
    assert result.exit_code == 2 and "no K/V for any layer" in result.stderr


def test_partial_activations_name_the_synthetic_layers(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    full = load_file(str(ACTIVATIONS))
    part = {name: t for name, t in full.items() if ".layers.0." in name}
    path = tmp_path / "layer0.safetensors"
    write_safetensors_file(path, part)
    code, doc = run_cli_json("verify", EXAMPLES / "llm-compressor-fp8", "--activations", path)
    assert code == 0
    assert [layer["data"] for layer in doc["layers"]] == [
        "activations",
        "synthetic",
        "synthetic",
        "synthetic",
    ]
    assert doc["synthetic_layers"] == [f"model.layers.{i}.self_attn.attn" for i in (1, 2, 3)]
    human = run_cli("verify", EXAMPLES / "llm-compressor-fp8", "--activations", path).stdout
    assert "activations + synthetic data" in human


def test_zero_scale_gets_one_message(tmp_path: Path) -> None:
    """Issue 10, defect 5: a zero scale was reported both "too small" and "too large"."""
    ckpt = write_scalar_checkpoint(
        tmp_path / "zero",
        {"model.layers.0.self_attn.k_scale": 0.0, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )
    code, doc = run_cli_json("verify", ckpt, "--tokens", "64")
    assert code == 1
    layer = doc["layers"][0]
    failures = [
        *(layer["k"] or {}).get("failures", []),
        *(layer["error"] and [layer["error"]] or []),
    ]
    text = " ".join(failures)
    assert not ("too small" in text and "too large" in text), text
    assert len(failures) == 1, failures


def test_strict_without_gpu_says_fail_and_how_to_fix() -> None:
    """Every message true and leading somewhere (issue 10, defect 5)."""
    result = run_cli("verify", EXAMPLES / "llm-compressor-fp8", "--strict", "--tokens", "64")
    assert result.exit_code == 1
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("FAIL: 4/4 layers pass")
    assert (
        "--strict needs the kernel to run: pass --gpu on a CUDA machine"
        in result.stdout.replace("\n", " ")
    )
    assert not any(line.startswith("OK") for line in result.stdout.splitlines())


@pytest.mark.parametrize("dtype", ["turboquant_k8v4", "fp8_inc"])
def test_a_format_verify_cannot_write_is_refused_not_measured_as_fp8(
    dtype: str, make_checkpoint: Callable[..., Path]
) -> None:
    # 6 layers: TurboQuant keeps its 2+2 boundary layers unquantized, layers 2-3 use the format.
    ckpt = make_checkpoint(layers=6, config=ct_config(6, hidden_size=256))
    result = runner.invoke(app, ["verify", str(ckpt), "--kv-cache-dtype", dtype, "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["schema"] == "kvscale.error/1"
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


def test_verify_data_with_too_few_tokens_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Samples of one token predict nothing: refused before the model runs, not a NaN table."""
    pytest.importorskip("transformers")
    from support.models import save_tiny

    def no_pass(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the model ran on data that predicts no token")

    monkeypatch.setattr("kvscale.model.evaluate.evaluate_model", no_pass)
    model = save_tiny("llama", tmp_path / "llama")
    data = tmp_path / "one-token.jsonl"
    data.write_text('{"input_ids": [3]}\n')
    result = run_cli("verify", model, "--data", data)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == (
        "kvscale: error: too few tokens: 1 sample(s) of 1 token predict no next token, so "
        "perplexity and KL cannot be measured (give --data whose samples hold at least 2 "
        "tokens each)\n"
    )
