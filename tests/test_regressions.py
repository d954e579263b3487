"""Regression tests for the defects of issue 10: each one failed on the main it was filed against.

The test names say which defect they guard (``dN``); the docstrings say what used to happen.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import save_file
from support.checkpoints import (
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
    write_scalar_checkpoint,
)
from support.cli import CliRunner

from kvscale.cli import app

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
ACTIVATIONS = EXAMPLES / "activations" / "tiny-llama-kv.safetensors"
runner = CliRunner()


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=env)


def doc_of(*args: str) -> tuple[int, dict[str, Any]]:
    result = run(*args, "--json")
    return result.exit_code, json.loads(result.stdout)


# --- d1: verify resolves with inspect's options and policy file ----------------------------------


@pytest.mark.parametrize(
    ("example", "k0", "v0"),
    [("quark-fp8", 0.02099609375, 0.0048217773), ("autofp8-legacy", 0.02099609375, None)],
)
def test_d1_verify_kv_cache_dtype_reaches_resolution(example: str, k0: float, v0: Any) -> None:
    """``verify --kv-cache-dtype fp8`` verified every layer at 1.0 while inspect resolved 0.021."""
    code, inspected = doc_of("inspect", EXAMPLES / example, "--kv-cache-dtype", "fp8")
    code_v, verified = doc_of("verify", EXAMPLES / example, "--kv-cache-dtype", "fp8")
    assert code == code_v == 0
    first = inspected["layers"][0]
    assert first["k_scale"] == k0 == verified["layers"][0]["k"]["scale"]
    assert verified["layers"][0]["v"]["scale"] == first["v_scale"]
    if v0 is not None:
        assert first["v_scale"] == pytest.approx(v0, rel=1e-6)
    assert verified["options"] == {"kv_cache_dtype": "fp8"}
    # Without the option both resolve to the default for these examples.
    _, plain = doc_of("verify", EXAMPLES / example, "--tokens", "64")
    assert plain["options"] == {}


def test_d1_verify_reads_the_policy_file_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "kvscale.toml"
    policy.write_text('kv_cache_dtype = "fp8"\n')
    monkeypatch.chdir(tmp_path)
    code, doc = doc_of("verify", EXAMPLES / "quark-fp8", "--tokens", "64")
    assert code == 0
    assert doc["layers"][0]["k"]["scale"] == 0.02099609375
    assert doc["policy_file"] == str(policy) and doc["options"] == {"kv_cache_dtype": "fp8"}
    human = run("verify", EXAMPLES / "quark-fp8", "--tokens", "64")
    assert (
        "scales resolved as kvscale inspect resolves them: vllm 0.33.0, kv cache fp8, platform "
        f"ocp; options set: kv_cache_dtype=fp8; policy file: {policy}"
    ) in human.stdout.replace("\n", " ")
    off = run("verify", EXAMPLES / "quark-fp8", "--tokens", "64", "--no-policy", "--json")
    assert json.loads(off.stdout)["layers"][0]["k"]["scale"] == 1.0


# --- d2: activations that feed no layer ----------------------------------------------------------


def test_d2_activations_without_attn_suffix_are_an_input_error(tmp_path: Path) -> None:
    """Names like ``model.layers.N.self_attn.k`` silently fell back to synthetic data, exit 0."""
    path = tmp_path / "acts.safetensors"
    save_file(
        {
            f"model.layers.{i}.self_attn.{kind}": torch.zeros(8, 2, 16)
            for i in range(4)
            for kind in "kv"
        },
        str(path),
    )
    result = run("verify", EXAMPLES / "wrong-scale", "--activations", path)
    assert result.exit_code == 2 and result.stdout == ""
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1
    assert "no K/V for any layer of" in line
    assert "expected names like 'model.layers.0.self_attn.attn.k'" in line
    assert "closest found: 'model.layers.0.self_attn.k'" in line


def test_d2_file_without_kv_is_an_input_error() -> None:
    result = run(
        "verify",
        EXAMPLES / "wrong-scale",
        "--activations",
        EXAMPLES / "wrong-scale" / "model.safetensors",
    )
    assert result.exit_code == 2 and "no K/V for any layer" in result.stderr


def test_d2_partial_coverage_names_the_synthetic_layers(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    full = load_file(str(ACTIVATIONS))
    part = {name: t for name, t in full.items() if ".layers.0." in name}
    path = tmp_path / "layer0.safetensors"
    save_file(part, str(path))
    code, doc = doc_of("verify", EXAMPLES / "llm-compressor-fp8", "--activations", path)
    assert code == 0
    assert [layer["data"] for layer in doc["layers"]] == [
        "activations",
        "synthetic",
        "synthetic",
        "synthetic",
    ]
    assert doc["synthetic_layers"] == [f"model.layers.{i}.self_attn.attn" for i in (1, 2, 3)]
    human = run("verify", EXAMPLES / "llm-compressor-fp8", "--activations", path).stdout
    assert "activations + synthetic data" in human


# --- d3: diff drift is symmetric -----------------------------------------------------------------


def _scalar(tmp: Path, name: str, k: float) -> Path:
    return write_scalar_checkpoint(
        tmp / name,
        {"model.layers.0.self_attn.k_scale": k, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )


@pytest.mark.parametrize(("a", "b"), [(1.28, 0.01), (0.01, 1.28)])
def test_d3_a_128x_shrink_trips_the_gate_like_a_128x_growth(
    tmp_path: Path, a: float, b: float
) -> None:
    """A 128x shrink reported 0.992 and passed ``--max-rel-change 1``; the growth reported 127."""
    first, second = _scalar(tmp_path, "a", a), _scalar(tmp_path, "b", b)
    result = run("diff", first, second, "--max-rel-change", "1", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    (layer,) = doc["layers"]
    assert layer["max_kind"] == "k_scale" and layer["status"] == "changed"
    assert layer["max_rel_change"] == layer["scales"]["k_scale"]["rel_change"] == 127.0


# --- d4: workflow commands in normalize/verify stdout --------------------------------------------

HOSTILE_PREFIX = "model.##[error]boom.layers.0"


def _hostile(tmp: Path) -> Path:
    prefix = f"{HOSTILE_PREFIX}.self_attn"
    tensors = {
        **attention_weights(1, prefix),
        f"{prefix}.k_scale": tensor(0.5),
        f"{prefix}.v_scale": tensor(0.25),
    }
    return write_checkpoint(tmp / "hostile", tensors, llama_config(1, quant=quant_config("fp8")))


@pytest.mark.parametrize("command", ["inspect", "normalize", "verify"])
def test_d4_no_raw_workflow_marker_on_stdout(tmp_path: Path, command: str) -> None:
    ckpt = _hostile(tmp_path)
    args: list[Any] = [command, ckpt]
    if command == "normalize":
        args += ["--out", tmp_path / "out", "--kv-cache-dtype", "fp8"]
    if command == "verify":
        args += ["--tokens", "16", "--kv-cache-dtype", "fp8"]
    result = run(*args)
    assert result.exit_code in (0, 1), result.stderr
    assert "boom" in result.stdout
    assert "##[" not in result.stdout and "##[" not in result.stderr
    assert "\\x23#[error]boom" in result.stdout


# --- d5: every message true and leading somewhere ------------------------------------------------


def _gemma2_quark(tmp: Path) -> Path:
    tensors = attention_weights(4)
    for i in range(4):
        tensors[f"model.layers.{i}.self_attn.k_proj.output_scale"] = tensor(0.02)
        tensors[f"model.layers.{i}.self_attn.v_proj.output_scale"] = tensor(0.005)
    cfg = llama_config(
        4, quant=quant_config("quark"), architectures=["Gemma2ForCausalLM"], model_type="gemma2"
    )
    return write_checkpoint(tmp / "gemma2-quark", tensors, cfg)


def test_d5_inspect_advice_for_a_dropped_name_is_what_normalize_does(tmp_path: Path) -> None:
    """inspect said "rename it (kvscale normalize does this)" and normalize then refused."""
    ckpt = _gemma2_quark(tmp_path)
    code, doc = doc_of("inspect", ckpt, "--kv-cache-dtype", "fp8")
    assert code == 1
    assert {p["code"] for p in doc["problems"] if p["severity"] == "error"} == {
        "dropped-by-architecture"
    }
    out = tmp_path / "fixed"
    result = run("normalize", ckpt, "--out", out, "--checkpoint", "--kv-cache-dtype", "fp8")
    assert result.exit_code == 0, result.stderr
    assert "name-repaired" in result.stderr
    code, fixed = doc_of("inspect", out / "checkpoint", "--kv-cache-dtype", "fp8")
    assert code == 0
    assert [(layer["k_scale"], layer["v_scale"]) for layer in fixed["layers"]] == [
        (float(torch.tensor(0.02).bfloat16()), float(torch.tensor(0.005).bfloat16()))
    ] * 4
    # Without --checkpoint nothing is written, and the message says what will.
    scales_only = run("normalize", ckpt, "--out", tmp_path / "s", "--kv-cache-dtype", "fp8")
    assert scales_only.exit_code == 1
    assert "normalize --checkpoint rewrites these names" in scales_only.stderr
    assert not (tmp_path / "s").exists()


def test_d5_normalize_title_says_nothing_was_written(tmp_path: Path) -> None:
    result = run("normalize", _gemma2_quark(tmp_path), "--out", tmp_path / "s")
    assert result.exit_code == 1
    assert "KV-cache scales written" not in result.stdout
    assert "KV-cache scales normalize would write" in result.stdout
    assert "nothing written" in result.stdout


def test_d5_zero_scale_gets_one_message(tmp_path: Path) -> None:
    """A zero scale was reported both "too small" and "too large"."""
    ckpt = write_scalar_checkpoint(
        tmp_path / "zero",
        {"model.layers.0.self_attn.k_scale": 0.0, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )
    code, doc = doc_of("verify", ckpt, "--tokens", "64")
    assert code == 1
    layer = doc["layers"][0]
    failures = [
        *(layer["k"] or {}).get("failures", []),
        *(layer["error"] and [layer["error"]] or []),
    ]
    text = " ".join(failures)
    assert not ("too small" in text and "too large" in text), text
    assert len(failures) == 1, failures


def test_d5_strict_without_gpu_says_fail_and_how_to_fix() -> None:
    result = run("verify", EXAMPLES / "llm-compressor-fp8", "--strict", "--tokens", "64")
    assert result.exit_code == 1
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("FAIL: 4/4 layers pass")
    assert (
        "--strict needs the kernel to run: pass --gpu on a CUDA machine"
        in result.stdout.replace("\n", " ")
    )
    assert not any(line.startswith("OK") for line in result.stdout.splitlines())


# --- d6: normal rounding is no precision-lost ----------------------------------------------------


def test_d6_float32_modelopt_scales_under_bf16_pass_strict(tmp_path: Path) -> None:
    """float32 ModelOpt scales under a bf16 model were precision-lost and failed --strict."""
    ckpt = write_scalar_checkpoint(
        tmp_path / "modelopt",
        {
            "model.layers.0.self_attn.k_proj.k_scale": 0.3,
            "model.layers.0.self_attn.v_proj.v_scale": 0.1,
        },
        1,
        quant_config("modelopt"),
    )
    code, doc = doc_of("inspect", ckpt, "--strict")
    assert code == 0 and doc["problems"] == []
    assert doc["rounding"] == {
        "dtype": "bfloat16",
        "values": 2,
        "max_rel_change": abs(0.30078125 - float(torch.tensor(0.3))) / float(torch.tensor(0.3)),
    }
    assert doc["layers"][0]["k_scale"] == 0.30078125
    human = run("inspect", ckpt, "--strict").stdout
    assert (
        "note: the engine rounds 2 checkpoint scale value(s) to bfloat16 (largest relative change "
        "2.60e-03, within normal rounding)"
    ) in human


def test_d6_subnormal_rounding_is_still_flagged(tmp_path: Path) -> None:
    ckpt = write_scalar_checkpoint(
        tmp_path / "tiny",
        {
            "model.layers.0.self_attn.k_proj.k_scale": 1e-6,
            "model.layers.0.self_attn.v_proj.v_scale": 0.25,
        },
        1,
        quant_config("modelopt"),
    )
    config = json.loads((ckpt / "config.json").read_text())
    config["torch_dtype"] = "float16"
    (ckpt / "config.json").write_text(json.dumps(config))
    code, doc = doc_of("inspect", ckpt)
    lost = [p for p in doc["problems"] if p["code"] == "precision-lost"]
    assert len(lost) == 1 and "subnormal in float16" in lost[0]["message"]


# --- d7: a file that is not a model --------------------------------------------------------------


def test_d7_no_attention_layer_is_an_error() -> None:
    """inspect of the activations file said "OK: 0 attention layers", exit 0."""
    code, doc = doc_of("inspect", ACTIVATIONS)
    assert code == 1
    assert [p["code"] for p in doc["problems"] if p["severity"] == "error"] == [
        "no-attention-layers"
    ]
    result = run("inspect", ACTIVATIONS)
    assert "OK" not in result.stdout and result.stdout.strip().splitlines()[-1].startswith("FAIL")


# --- d8: KV-scheme tensors no engine parameter takes ---------------------------------------------


def _affine(tmp: Path) -> Path:
    tensors: dict[str, float] = {}
    for i in range(2):
        prefix = f"model.layers.{i}.self_attn"
        tensors |= {
            f"{prefix}.k_proj.k_scale": 0.5,
            f"{prefix}.v_proj.v_scale": 0.25,
            f"{prefix}.k_proj.k_bias": 0.125,
            f"{prefix}.v_proj.v_bias": 0.0,
        }
    return write_scalar_checkpoint(tmp / "affine", tensors, 2, quant_config("modelopt"))


def test_d8_affine_kv_bias_is_refused_by_vllm(tmp_path: Path) -> None:
    code, doc = doc_of("inspect", _affine(tmp_path))
    assert code == 1
    (bias,) = [p for p in doc["problems"] if p["code"] == "unloadable-kv-tensor"]
    assert bias["severity"] == "error"
    assert bias["layers"] == ["model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"]
    assert "vLLM 0.33 has no parameter for an affine KV-cache bias" in bias["message"]
    assert [layer["rule"] for layer in doc["layers"]] == ["error", "error"]
    assert "qkv_proj.k_bias" in doc["layers"][0]["error"]


def test_d8_affine_kv_bias_is_dropped_by_sglang(tmp_path: Path) -> None:
    code, doc = doc_of("inspect", _affine(tmp_path), "--engine", "sglang")
    assert code == 0
    (bias,) = [p for p in doc["problems"] if p["code"] == "ignored-kv-tensor"]
    assert bias["severity"] == "warning"
    assert [(layer["k_scale"], layer["v_scale"]) for layer in doc["layers"]] == [(0.5, 0.25)] * 2


# --- d9: messages state the value held and the real cause ----------------------------------------


def test_d9_fnuz_precision_lost_quotes_the_doubled_value(tmp_path: Path) -> None:
    ckpt = write_scalar_checkpoint(
        tmp_path / "tiny",
        {
            "model.layers.0.self_attn.k_proj.k_scale": 1e-6,
            "model.layers.0.self_attn.v_proj.v_scale": 0.25,
        },
        1,
        quant_config("modelopt"),
    )
    config = json.loads((ckpt / "config.json").read_text())
    config["torch_dtype"] = "float16"
    (ckpt / "config.json").write_text(json.dumps(config))
    _, ocp = doc_of("inspect", ckpt)
    _, fnuz = doc_of("inspect", ckpt, "--platform", "fnuz")
    held_ocp = ocp["layers"][0]["k_scale"]
    held_fnuz = fnuz["layers"][0]["k_scale"]
    assert held_fnuz == 2 * held_ocp
    (lost,) = [p for p in fnuz["problems"] if p["code"] == "precision-lost"]
    assert f"{held_fnuz:.6g}" in lost["message"] or repr(held_fnuz) in lost["message"]


def test_d9_gemma2_quark_is_one_cause_and_counts_the_tensors(tmp_path: Path) -> None:
    """Twelve errors for four layers, and "no KV-scale tensor was found" although eight were."""
    _, doc = doc_of("inspect", _gemma2_quark(tmp_path), "--kv-cache-dtype", "fp8")
    errors = [p for p in doc["problems"] if p["severity"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "dropped-by-architecture"
    assert len(errors[0]["layers"]) == 4
    (declared,) = [p for p in doc["problems"] if p["code"] == "declared-scheme-no-scales"]
    assert "none of the 8 KV-scale tensors found reaches a layer" in declared["message"]


def test_d9_quark_custom_fp8_and_normalized_copies_are_attributed_right(tmp_path: Path) -> None:
    tensors = attention_weights(1)
    tensors["model.layers.0.self_attn.k_proj.output_scale"] = tensor(0.02)
    tensors["model.layers.0.self_attn.v_proj.output_scale"] = tensor(0.005)
    ckpt = write_checkpoint(
        tmp_path / "quark", tensors, llama_config(1, quant=quant_config("quark"))
    )
    _, doc = doc_of("inspect", ckpt, "--kv-cache-dtype", "fp8")
    assert doc["layers"][0]["checkpoint"]["k_scale"]["producer"] == "AMD Quark"
    out = tmp_path / "n"
    assert (
        run("normalize", ckpt, "--out", out, "--checkpoint", "--kv-cache-dtype", "fp8").exit_code
        == 0
    )
    _, copy = doc_of("inspect", out / "checkpoint", "--kv-cache-dtype", "fp8")
    assert copy["layers"][0]["checkpoint"]["k_scale"]["producer"].startswith("kvscale")


def test_d9_quark_custom_mode_fp8_names_are_attributed_to_quark(tmp_path: Path) -> None:
    """Quark's custom_mode="fp8" export: llm-compressor-style names under quant_method quark."""
    ckpt = write_checkpoint(
        tmp_path / "quark-custom",
        {
            **attention_weights(1),
            "model.layers.0.self_attn.k_scale": tensor(0.02),
            "model.layers.0.self_attn.v_scale": tensor(0.005),
        },
        # What Quark 0.13 writes for custom_mode="fp8" (tests/fixtures/producers/
        # quark-fp8-custom-fp8): quant_method fp8, like AutoFP8, plus Quark's export block.
        llama_config(
            1,
            quant={
                "quant_method": "fp8",
                "activation_scheme": "static",
                "kv_cache_scheme": "static",
                "export": {"kv_cache_group": ["*k_proj", "*v_proj"], "min_kv_scale": 0.0},
            },
        ),
    )
    _, doc = doc_of("inspect", ckpt, "--kv-cache-dtype", "fp8")
    source = doc["layers"][0]["checkpoint"]["k_scale"]
    assert source["convention"] == "llm-compressor"
    assert source["producer"] == 'AMD Quark (custom_mode="fp8" export)'


def test_d9_engine_once_warnings_are_grouped() -> None:
    _, doc = doc_of("inspect", EXAMPLES / "modelopt-fp8", "--kv-cache-dtype", "fp8")
    q = [p for p in doc["problems"] if p["code"] == "uncalibrated-q-prob"]
    assert len(q) == 1 and len(q[0]["layers"]) == 4 and q[0]["layer"] is None


def test_no_scratch_left(tmp_path: Path) -> None:
    """The hostile checkpoint builder leaves only its own directory."""
    _hostile(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hostile"]
    shutil.rmtree(tmp_path / "hostile")
