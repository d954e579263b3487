"""``kvscale inspect`` end to end on synthetic checkpoints: conventions, layouts, problems."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from support.checkpoints import (
    attention_weights,
    gemma2_quark_checkpoint,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
    write_scalar_checkpoint,
)
from support.checkpoints import llama_config as config
from support.cli import CliRunner, run_cli, run_cli_json
from support.paths import EXAMPLES, ROOT

from kvscale.cli import app

runner = CliRunner()

P = "model.layers.{}.self_attn"


def run_json(path: Path, *args: str, code: int | None = 0) -> dict[str, Any]:
    result = runner.invoke(app, ["inspect", str(path), "--json", *args])
    if code is not None:
        assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def layer(doc: dict[str, Any], index: int) -> dict[str, Any]:
    return doc["layers"][index]


def codes(doc: dict[str, Any]) -> set[str]:
    return {p["code"] for p in doc["problems"]}


CONVENTIONS = [
    # (quant method, k name, v name, convention)
    ("compressed-tensors", "{p}.k_scale", "{p}.v_scale", "llm-compressor"),
    ("modelopt", "{p}.k_proj.k_scale", "{p}.v_proj.v_scale", "modelopt"),
    ("fp8", "{p}.qkv_proj.k_scale", "{p}.qkv_proj.v_scale", "fused-qkv"),
    ("fp8", "{p}.qkqkv_proj.k_scale", "{p}.qkqkv_proj.v_scale", "fused-qkv"),
    ("quark", "{p}.k_proj.output_scale", "{p}.v_proj.output_scale", "output-scale"),
    ("fp8", "{p}.k_proj.output_scale", "{p}.v_proj.output_scale", "output-scale"),
    ("modelopt", "{p}.k_cache.scale", "{p}.v_cache.scale", "hunyuan-v3"),
    ("compressed-tensors", "{p}.attn.k_scale", "{p}.attn.v_scale", "vllm-canonical"),
]


@pytest.mark.parametrize("method, k_name, v_name, convention", CONVENTIONS)
def test_each_convention_resolves(
    tmp_path: Path, method: str, k_name: str, v_name: str, convention: str
) -> None:
    tensors = attention_weights(2)
    for i in range(2):
        tensors[k_name.format(p=P.format(i))] = tensor(0.5 + i)
        tensors[v_name.format(p=P.format(i))] = tensor(0.25)
    write_checkpoint(tmp_path, tensors, config(quant=quant_config(method)))
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8")
    assert [entry["name"] for entry in doc["layers"]] == [
        "model.layers.0.self_attn.attn",
        "model.layers.1.self_attn.attn",
    ]
    for i in range(2):
        entry = layer(doc, i)
        assert entry["rule"] == "separate"
        assert (entry["k_scale"], entry["v_scale"]) == (0.5 + i, 0.25)
        assert entry["checkpoint"]["k_scale"]["tensor"] == k_name.format(p=P.format(i))
        assert entry["checkpoint"]["k_scale"]["convention"] == convention


def test_nemotron_h_mixer(tmp_path: Path) -> None:
    tensors = {
        "backbone.layers.0.mixer.in_proj.weight": torch.zeros(2, 2),
        "backbone.layers.1.mixer.q_proj.weight": torch.zeros(2, 2),
        "backbone.layers.1.mixer.k_proj.weight": torch.zeros(2, 2),
        "backbone.layers.1.mixer.k_proj.k_scale": tensor(0.125),
        "backbone.layers.1.mixer.v_proj.v_scale": tensor(0.0625),
    }
    cfg = config(layers=2, quant=quant_config("modelopt"), architectures=["NemotronHForCausalLM"])
    cfg["hybrid_override_pattern"] = "M*"
    write_checkpoint(tmp_path, tensors, cfg)
    doc = run_json(tmp_path)
    # The engine renames NemotronH's "backbone." prefix to "model." (its hf_to_vllm_mapper).
    assert [entry["name"] for entry in doc["layers"]] == ["model.layers.1.mixer.attn"]
    assert layer(doc, 0)["checkpoint"]["k_scale"]["convention"] == "nemotron-h"
    assert (layer(doc, 0)["k_scale"], layer(doc, 0)["v_scale"]) == (0.125, 0.0625)


def test_legacy_kv_scale_is_duplicated_and_warned(tmp_path: Path) -> None:
    tensors = {f"{P.format(0)}.kv_scale": tensor(0.3)}
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("fp8")))
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8")
    entry = layer(doc, 0)
    assert entry["rule"] == "duplicated"
    assert entry["k_scale"] == entry["v_scale"] == 0.30078125
    assert "legacy-kv-scale" in codes(doc)
    assert "scale-missing" not in codes(doc)
    # 0.3 -> 0.30078125 is ordinary bfloat16 rounding (2.6e-3 <= 2^-8): summarized, not a problem.
    assert "precision-lost" not in codes(doc)
    assert doc["rounding"] == {
        "dtype": "bfloat16",
        "values": 1,
        "max_rel_change": 0.0026041268267581134,
    }


def test_quark_q_and_prob(tmp_path: Path) -> None:
    p = P.format(0)
    tensors = {
        f"{p}.k_proj.output_scale": tensor(0.5),
        f"{p}.v_proj.output_scale": tensor(0.25),
        f"{p}.q_proj.output_scale": tensor(0.125),
        f"{p}.prob_output_scale": tensor(0.0625),
    }
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("quark")))
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8", "--platform", "fnuz")
    entry = layer(doc, 0)
    assert (entry["k_scale"], entry["v_scale"], entry["q_scale"], entry["prob_scale"]) == (
        1.0,
        0.5,
        0.25,
        0.125,
    )


def test_output_scale_not_mapped_under_compressed_tensors(tmp_path: Path) -> None:
    tensors = {**attention_weights(1), f"{P.format(0)}.k_proj.output_scale": tensor(0.5)}
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("compressed-tensors")))
    doc = run_json(tmp_path, code=1)
    # Llama's loader renames k_proj to qkv_proj and finds no qkv_proj.output_scale: it raises.
    assert layer(doc, 0)["rule"] == "error"
    assert "There is no module or parameter named" in layer(doc, 0)["error"]
    # One cause, one problem: the unplaced tensor is the error, naming the layer it refuses.
    assert "unmapped-scale-name" in codes(doc) and "layer-refused" not in codes(doc)
    (problem,) = [p for p in doc["problems"] if p["code"] == "unmapped-scale-name"]
    assert problem["severity"] == "error" and problem["layer"] == f"{P.format(0)}.attn"
    assert doc["unmapped"][0]["tensor"] == f"{P.format(0)}.k_proj.output_scale"


def test_unmapped_name_only_warns_for_custom_loaders(tmp_path: Path) -> None:
    tensors = {**attention_weights(1), f"{P.format(0)}.k_proj.output_scale": tensor(0.5)}
    cfg = config(
        layers=1,
        quant=quant_config("compressed-tensors"),
        architectures=["DoryForCausalLM"],
    )
    write_checkpoint(tmp_path, tensors, cfg)
    doc = run_json(tmp_path)
    assert layer(doc, 0)["rule"] == "default"
    unmapped = [p for p in doc["problems"] if p["code"] == "unmapped-scale-name"]
    assert unmapped[0]["severity"] == "warning"


def test_architecture_whose_mapper_drops_output_scale(tmp_path: Path) -> None:
    tensors = {
        **attention_weights(1),
        f"{P.format(0)}.k_proj.output_scale": tensor(0.5),
        f"{P.format(0)}.v_proj.output_scale": tensor(0.5),
    }
    cfg = config(layers=1, quant=quant_config("quark"), architectures=["Gemma3ForCausalLM"])
    write_checkpoint(tmp_path, tensors, cfg)
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8", code=1)
    assert "dropped-by-architecture" in codes(doc)
    assert layer(doc, 0)["rule"] == "error"
    llama = config(layers=1, quant=quant_config("quark"))
    write_checkpoint(tmp_path, tensors, llama)
    assert layer(run_json(tmp_path, "--kv-cache-dtype", "fp8"), 0)["rule"] == "separate"


def _sharded(tmp_path: Path, index: bool) -> Path:
    shards = [
        {**attention_weights(1)},
        {f"{P.format(0)}.k_scale": tensor(0.5), f"{P.format(1)}.q_proj.weight": torch.zeros(2, 2)},
        {f"{P.format(0)}.v_scale": tensor(0.25), f"{P.format(1)}.k_scale": tensor(2.0)},
    ]
    return write_checkpoint(
        tmp_path, cfg=config(quant=quant_config("compressed-tensors")), shards=shards, index=index
    )


@pytest.mark.parametrize("index", [True, False])
def test_sharded(tmp_path: Path, index: bool) -> None:
    doc = run_json(_sharded(tmp_path, index))
    assert doc["files"] == [f"model-0000{i}-of-00003.safetensors" for i in (1, 2, 3)]
    assert (layer(doc, 0)["k_scale"], layer(doc, 0)["v_scale"]) == (0.5, 0.25)
    assert layer(doc, 0)["checkpoint"]["v_scale"]["file"] == "model-00003-of-00003.safetensors"
    assert layer(doc, 1)["rule"] == "partial" and layer(doc, 1)["k_scale"] == 2.0


def test_index_filters_files_the_engine_would_not_load(tmp_path: Path) -> None:
    path = _sharded(tmp_path, index=True)
    write_checkpoint(tmp_path / "tmp", {f"{P.format(0)}.k_scale": tensor(99.0)})
    shutil.move(tmp_path / "tmp" / "model.safetensors", path / "consolidated.safetensors")
    doc = run_json(path)
    assert "consolidated.safetensors" not in doc["files"]
    assert layer(doc, 0)["k_scale"] == 0.5


def test_single_file_uses_config_beside_it(tmp_path: Path) -> None:
    write_checkpoint(
        tmp_path,
        {f"{P.format(0)}.k_scale": tensor(0.5)},
        config(layers=1, quant=quant_config("compressed-tensors")),
    )
    doc = run_json(tmp_path / "model.safetensors")
    assert doc["layout"] == "file" and layer(doc, 0)["k_scale"] == 0.5


def test_hugging_face_cache(tmp_path: Path) -> None:
    source = _sharded(tmp_path / "src", index=True)
    repo = tmp_path / "models--org--name"
    rev = "a" * 40
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(rev + "\n")
    (repo / "blobs").mkdir()
    snap = repo / "snapshots" / rev
    snap.mkdir(parents=True)
    for i, file in enumerate(sorted(source.iterdir())):
        blob = repo / "blobs" / f"blob{i}"
        shutil.copy(file, blob)
        os.symlink(f"../../blobs/blob{i}", snap / file.name)
    doc = run_json(repo)
    assert doc["layout"] == "hf-cache"
    assert (layer(doc, 0)["k_scale"], layer(doc, 0)["v_scale"]) == (0.5, 0.25)


def test_same_name_in_two_shards_last_wins(tmp_path: Path) -> None:
    shards = [
        {f"{P.format(0)}.k_scale": tensor(0.5)},
        {f"{P.format(0)}.k_scale": tensor(0.25), f"{P.format(0)}.v_scale": tensor(1.5)},
    ]
    write_checkpoint(
        tmp_path, cfg=config(layers=1, quant=quant_config("compressed-tensors")), shards=shards
    )
    doc = run_json(tmp_path, code=1)
    assert layer(doc, 0)["k_scale"] == 0.25
    dup = [p for p in doc["problems"] if p["code"] == "duplicate-scale-source"]
    assert (
        dup
        and dup[0]["severity"] == "error"
        and "model-00002-of-00002.safetensors" in dup[0]["message"]
    )


@pytest.mark.parametrize(
    "quant, expected",
    [
        (quant_config("compressed-tensors"), "fp8"),
        (quant_config("modelopt"), "fp8_e4m3"),
        (quant_config("modelopt", kv_cache_scheme={"num_bits": 8, "type": "float"}), "auto"),
        (quant_config("fp8"), "auto"),
        (quant_config("quark"), "auto"),
        (None, "auto"),
    ],
)
def test_auto_kv_cache_dtype_promotion(tmp_path: Path, quant: dict | None, expected: str) -> None:
    write_checkpoint(tmp_path, attention_weights(1), config(layers=1, quant=quant))
    assert run_json(tmp_path, code=None)["kv_cache_dtype"] == expected


def test_legacy_hf_quant_config(tmp_path: Path) -> None:
    hf_quant = {
        "producer": {"name": "modelopt"},
        "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": "FP8"},
    }
    tensors = {
        f"{P.format(0)}.k_proj.k_scale": tensor(1.5),
        f"{P.format(0)}.v_proj.v_scale": tensor(2.5),
    }
    write_checkpoint(
        tmp_path, tensors, config(layers=1), extra_json={"hf_quant_config.json": hf_quant}
    )
    doc = run_json(tmp_path)
    assert (doc["quant_method"], doc["engine_path"], doc["kv_cache_dtype"]) == (
        "modelopt",
        "base",
        "fp8_e4m3",
    )


def test_float32_config_served_in_bfloat16(tmp_path: Path) -> None:
    tensors = {f"{P.format(0)}.k_scale": tensor(0.3), f"{P.format(0)}.v_scale": tensor(0.3)}
    write_checkpoint(
        tmp_path, tensors, config(layers=1, torch_dtype="float32", quant=quant_config("fp8"))
    )
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8")
    assert doc["model_dtype"] == "bfloat16" and layer(doc, 0)["k_scale"] == 0.30078125
    doc32 = run_json(tmp_path, "--kv-cache-dtype", "fp8", "--model-dtype", "float32")
    assert layer(doc32, 0)["k_scale"] == 0.30000001192092896


def test_e5m2_is_refused_with_fp8_checkpoints(tmp_path: Path) -> None:
    write_checkpoint(
        tmp_path,
        {f"{P.format(0)}.k_scale": tensor(0.5)},
        config(layers=1, quant=quant_config("fp8")),
    )
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8_e5m2", code=1)
    assert layer(doc, 0)["rule"] == "error"
    assert "fp8_e5m2 kv-cache is not supported" in layer(doc, 0)["error"]


def test_unsupported_ct_scheme_refuses_every_layer(tmp_path: Path) -> None:
    quant = quant_config(
        "compressed-tensors",
        kv_cache_scheme={"num_bits": 4, "type": "int", "strategy": "tensor", "symmetric": True},
    )
    write_checkpoint(tmp_path, attention_weights(2), config(quant=quant))
    doc = run_json(tmp_path, code=1)
    assert all(
        entry["rule"] == "error" and entry["error"].startswith("NotImplementedError")
        for entry in doc["layers"]
    )


def test_zero_scale_used_by_compressed_tensors_fails(tmp_path: Path) -> None:
    tensors = {f"{P.format(0)}.k_scale": tensor(0.0), f"{P.format(0)}.v_scale": tensor(0.5)}
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("compressed-tensors")))
    doc = run_json(tmp_path, code=1)
    zero = [p for p in doc["problems"] if p["code"] == "scale-zero"]
    assert zero[0]["severity"] == "error" and zero[0]["layer"] == "model.layers.0.self_attn.attn"
    assert doc["ok"] is False and layer(doc, 0)["k_scale"] == 0.0


def test_invalid_value_ignored_by_base_path_is_a_warning(tmp_path: Path) -> None:
    tensors = {f"{P.format(0)}.k_scale": tensor(0.5), f"{P.format(0)}.v_scale": tensor(math.nan)}
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("fp8")))
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8")
    nan = [p for p in doc["problems"] if p["code"] == "scale-nan"]
    assert nan[0]["severity"] == "warning" and "uses 0.5" in nan[0]["message"]
    assert layer(doc, 0)["rule"] == "duplicated"
    strict = runner.invoke(app, ["inspect", str(tmp_path), "--kv-cache-dtype", "fp8", "--strict"])
    assert strict.exit_code == 1


def test_nan_and_inf_encoded_as_strings(tmp_path: Path) -> None:
    tensors = {
        f"{P.format(0)}.k_scale": tensor(math.inf),
        f"{P.format(0)}.v_scale": tensor(math.nan),
    }
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("compressed-tensors")))
    doc = run_json(tmp_path, code=1)
    assert (layer(doc, 0)["k_scale"], layer(doc, 0)["v_scale"]) == ("Infinity", "NaN")
    assert {"scale-infinite", "scale-nan"} <= codes(doc)


def test_scales_unused_and_scale_equals_default(tmp_path: Path) -> None:
    tensors = {f"{P.format(0)}.k_scale": tensor(1.0), f"{P.format(0)}.v_scale": tensor(0.5)}
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("fp8")))
    assert "scales-unused" in codes(run_json(tmp_path))
    doc = run_json(tmp_path, "--kv-cache-dtype", "fp8")
    assert "scale-equals-default" in codes(doc) and "scales-unused" not in codes(doc)


def test_coverage_gap_and_allow(tmp_path: Path) -> None:
    tensors = {
        **attention_weights(3),
        f"{P.format(0)}.k_scale": tensor(0.5),
        f"{P.format(0)}.v_scale": tensor(0.5),
    }
    write_checkpoint(tmp_path, tensors, config(layers=3, quant=quant_config("compressed-tensors")))
    doc = run_json(tmp_path)
    gap = [p for p in doc["problems"] if p["code"] == "coverage-gap"]
    assert gap and "model.layers.1.self_attn.attn" in gap[0]["message"]
    assert (
        runner.invoke(app, ["inspect", str(tmp_path), "--fail-on", "coverage-gap"]).exit_code == 1
    )
    allowed = runner.invoke(
        app, ["inspect", str(tmp_path), "--strict", "--allow", "coverage-gap,default-scale-used"]
    )
    assert allowed.exit_code == 0, allowed.output


def test_layers_without_weights_come_from_config(tmp_path: Path) -> None:
    write_checkpoint(
        tmp_path,
        {f"{P.format(1)}.k_scale": tensor(0.5)},
        config(layers=3, quant=quant_config("compressed-tensors")),
    )
    doc = run_json(tmp_path)
    assert [entry["rule"] for entry in doc["layers"]] == ["default", "partial", "default"]


def test_human_table_escapes_markup_and_goes_to_stdout(tmp_path: Path) -> None:
    tensors = {
        f"{P.format(0)}.k_scale": tensor(0.5),
        "model.layers.0.self_attn.[bold]x[/].k_scale": tensor(0.5),
    }
    write_checkpoint(tmp_path, tensors, config(layers=1, quant=quant_config("compressed-tensors")))
    result = runner.invoke(app, ["inspect", str(tmp_path)], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "[bold]x[/]" in result.stdout
    assert "partial" in result.stdout and result.stderr == ""


def test_inspect_never_imports_torch() -> None:
    import subprocess
    import sys

    code = (
        "import sys, kvscale.cli, kvscale.core.inspect, kvscale.core.normalize; "
        "import kvscale.render.inspect; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_inspect_of_a_local_path_imports_only_what_it_runs() -> None:
    """Start-up is a pre-commit hook's cost (benchmarks/bench_startup.py): a local inspect
    loads neither the remote reader nor the copy/staging machinery, nor another engine, and
    typer builds only the command that runs."""
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "sys.argv = ['kvscale', 'inspect', 'examples/llm-compressor-fp8']\n"
        "import typer.main\n"
        "built = []\n"
        "real = typer.main.get_command_from_info\n"
        "def counting(*args, **kw):\n"
        "    info = args[0] if args else kw['command_info']\n"
        "    built.append(info.callback.__name__)\n"
        "    return real(*args, **kw)\n"
        "typer.main.get_command_from_info = counting\n"
        "from kvscale.__main__ import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), exc.code\n"
        "heavy = ['torch', 'numpy', 'httpx', 'huggingface_hub', 'kvscale.io.remote',\n"
        "         'kvscale.io.checkpoint_copy', 'kvscale.io.staging',\n"
        "         'kvscale.engine.sglang.engine', 'kvscale.engine.trtllm.engine',\n"
        "         'kvscale.core.normalize', 'kvscale.core.verify']\n"
        "print(sorted(m for m in heavy if m in sys.modules), built)\n"
    )
    root = ROOT
    env = {k: v for k, v in os.environ.items() if not k.endswith("_COMPLETE")}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root, env=env
    )
    assert out.stdout.strip() == "[] ['inspect']"


ACTIVATIONS = EXAMPLES / "activations" / "tiny-llama-kv.safetensors"


def test_advice_for_a_dropped_name_is_what_normalize_does(tmp_path: Path) -> None:
    """Issue 10, defect 5: inspect said "rename it (kvscale normalize does this)" and normalize
    then refused."""
    ckpt = gemma2_quark_checkpoint(tmp_path)
    code, doc = run_cli_json("inspect", ckpt, "--kv-cache-dtype", "fp8")
    assert code == 1
    assert {p["code"] for p in doc["problems"] if p["severity"] == "error"} == {
        "dropped-by-architecture"
    }
    out = tmp_path / "fixed"
    result = run_cli("normalize", ckpt, "--out", out, "--checkpoint", "--kv-cache-dtype", "fp8")
    assert result.exit_code == 0, result.stderr
    assert "name-repaired" in result.stderr
    code, fixed = run_cli_json("inspect", out / "checkpoint", "--kv-cache-dtype", "fp8")
    assert code == 0
    assert [(layer["k_scale"], layer["v_scale"]) for layer in fixed["layers"]] == [
        (float(torch.tensor(0.02).bfloat16()), float(torch.tensor(0.005).bfloat16()))
    ] * 4
    # Without --checkpoint nothing is written, and the message says what will.
    scales_only = run_cli("normalize", ckpt, "--out", tmp_path / "s", "--kv-cache-dtype", "fp8")
    assert scales_only.exit_code == 1
    assert "normalize --checkpoint rewrites these names" in scales_only.stderr
    assert not (tmp_path / "s").exists()


def test_float32_modelopt_scales_under_bf16_pass_strict(tmp_path: Path) -> None:
    """Issue 10, defect 6: float32 ModelOpt scales under a bf16 model were precision-lost and
    failed --strict (normal rounding is no precision loss)."""
    ckpt = write_scalar_checkpoint(
        tmp_path / "modelopt",
        {
            "model.layers.0.self_attn.k_proj.k_scale": 0.3,
            "model.layers.0.self_attn.v_proj.v_scale": 0.1,
        },
        1,
        quant_config("modelopt"),
    )
    code, doc = run_cli_json("inspect", ckpt, "--strict")
    assert code == 0 and doc["problems"] == []
    assert doc["rounding"] == {
        "dtype": "bfloat16",
        "values": 2,
        "max_rel_change": abs(0.30078125 - float(torch.tensor(0.3))) / float(torch.tensor(0.3)),
    }
    assert doc["layers"][0]["k_scale"] == 0.30078125
    human = run_cli("inspect", ckpt, "--strict").stdout
    assert (
        "note: the engine rounds 2 checkpoint scale value(s) to bfloat16 (largest relative change "
        "2.60e-03, within normal rounding)"
    ) in human


def test_subnormal_rounding_is_flagged(tmp_path: Path) -> None:
    """Rounding into a subnormal is still precision-lost (the other side of issue 10, defect 6)."""
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
    code, doc = run_cli_json("inspect", ckpt)
    lost = [p for p in doc["problems"] if p["code"] == "precision-lost"]
    assert len(lost) == 1 and "subnormal in float16" in lost[0]["message"]


def test_no_attention_layer_is_an_error() -> None:
    """Issue 10, defect 7: inspect of the activations file said "OK: 0 attention layers",
    exit 0."""
    code, doc = run_cli_json("inspect", ACTIVATIONS)
    assert code == 1
    assert [p["code"] for p in doc["problems"] if p["severity"] == "error"] == [
        "no-attention-layers"
    ]
    result = run_cli("inspect", ACTIVATIONS)
    assert "OK" not in result.stdout and result.stdout.strip().splitlines()[-1].startswith("FAIL")


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


def test_affine_kv_bias_is_refused_by_vllm(tmp_path: Path) -> None:
    """KV-scheme tensors no engine parameter takes (issue 10, defect 8)."""
    code, doc = run_cli_json("inspect", _affine(tmp_path))
    assert code == 1
    (bias,) = [p for p in doc["problems"] if p["code"] == "unloadable-kv-tensor"]
    assert bias["severity"] == "error"
    assert bias["layers"] == ["model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"]
    assert "vLLM 0.33 has no parameter for an affine KV-cache bias" in bias["message"]
    assert [layer["rule"] for layer in doc["layers"]] == ["error", "error"]
    assert "qkv_proj.k_bias" in doc["layers"][0]["error"]


def test_affine_kv_bias_is_dropped_by_sglang(tmp_path: Path) -> None:
    code, doc = run_cli_json("inspect", _affine(tmp_path), "--engine", "sglang")
    assert code == 0
    (bias,) = [p for p in doc["problems"] if p["code"] == "ignored-kv-tensor"]
    assert bias["severity"] == "warning"
    assert [(layer["k_scale"], layer["v_scale"]) for layer in doc["layers"]] == [(0.5, 0.25)] * 2


def test_fnuz_precision_lost_quotes_the_doubled_value(tmp_path: Path) -> None:
    """Messages state the value held (issue 10, defect 9)."""
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
    _, ocp = run_cli_json("inspect", ckpt)
    _, fnuz = run_cli_json("inspect", ckpt, "--platform", "fnuz")
    held_ocp = ocp["layers"][0]["k_scale"]
    held_fnuz = fnuz["layers"][0]["k_scale"]
    assert held_fnuz == 2 * held_ocp
    (lost,) = [p for p in fnuz["problems"] if p["code"] == "precision-lost"]
    assert f"{held_fnuz:.6g}" in lost["message"] or repr(held_fnuz) in lost["message"]


def test_gemma2_quark_is_one_cause_and_counts_the_tensors(tmp_path: Path) -> None:
    """Issue 10, defect 9: twelve errors for four layers, and "no KV-scale tensor was found"
    although eight were."""
    _, doc = run_cli_json("inspect", gemma2_quark_checkpoint(tmp_path), "--kv-cache-dtype", "fp8")
    errors = [p for p in doc["problems"] if p["severity"] == "error"]
    assert len(errors) == 1 and errors[0]["code"] == "dropped-by-architecture"
    assert len(errors[0]["layers"]) == 4
    (declared,) = [p for p in doc["problems"] if p["code"] == "declared-scheme-no-scales"]
    assert "none of the 8 KV-scale tensors found reaches a layer" in declared["message"]


def test_quark_custom_fp8_and_normalized_copies_are_attributed_right(tmp_path: Path) -> None:
    tensors = attention_weights(1)
    tensors["model.layers.0.self_attn.k_proj.output_scale"] = tensor(0.02)
    tensors["model.layers.0.self_attn.v_proj.output_scale"] = tensor(0.005)
    ckpt = write_checkpoint(
        tmp_path / "quark", tensors, llama_config(1, quant=quant_config("quark"))
    )
    _, doc = run_cli_json("inspect", ckpt, "--kv-cache-dtype", "fp8")
    assert doc["layers"][0]["checkpoint"]["k_scale"]["producer"] == "AMD Quark"
    out = tmp_path / "n"
    assert (
        run_cli(
            "normalize", ckpt, "--out", out, "--checkpoint", "--kv-cache-dtype", "fp8"
        ).exit_code
        == 0
    )
    _, copy = run_cli_json("inspect", out / "checkpoint", "--kv-cache-dtype", "fp8")
    assert copy["layers"][0]["checkpoint"]["k_scale"]["producer"].startswith("kvscale")


def test_quark_custom_mode_fp8_names_are_attributed_to_quark(tmp_path: Path) -> None:
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
    _, doc = run_cli_json("inspect", ckpt, "--kv-cache-dtype", "fp8")
    source = doc["layers"][0]["checkpoint"]["k_scale"]
    assert source["convention"] == "llm-compressor"
    assert source["producer"] == 'AMD Quark (custom_mode="fp8" export)'


def test_engine_once_warnings_are_grouped() -> None:
    _, doc = run_cli_json("inspect", EXAMPLES / "modelopt-fp8", "--kv-cache-dtype", "fp8")
    q = [p for p in doc["problems"] if p["code"] == "uncalibrated-q-prob"]
    assert len(q) == 1 and len(q[0]["layers"]) == 4 and q[0]["layer"] is None
