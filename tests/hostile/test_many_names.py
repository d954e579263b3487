"""Many names, many layers, many patterns: every step near-linear (timed in CPU seconds).

Sizes: a 400-layer MoE's module names (400 layers x 128-256 experts x 3 projections, ~150,000 to
~310,000 names) against hundreds to thousands of Quark ``kv_cache_group`` globs, and ~100,000
scale-like tensors that reach no layer, against 400 to 4,096 layers. The default run checks each
core step at a realistic size in well under a second of CPU each (before: 10 s to minutes);
``-m slow`` runs the whole command at the adversarial sizes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support.many_names import (
    cpu_seconds,
    quark_checkpoint,
    quark_quantization_config,
    unmapped_checkpoint,
)
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.engine.base import UnmappedTensor
from kvscale.engine.sglang.architectures import PROBE_TAILS
from kvscale.engine.sglang.engine import SGLANG
from kvscale.engine.vllm.engine import VLLM
from kvscale.findings import unmapped_problems
from kvscale.model_config import brief_json, quark_kv_cache_group

runner = CliRunner()
FP8 = {"dtype": "fp8_e4m3", "qscheme": "per_tensor"}


def invoke(*args: object, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, [os.fspath(a) if isinstance(a, Path) else a for a in args], env=env)


# --- Quark kv_cache_group x layer_quant_config ---------------------------------------------------


def test_quark_group_of_500_globs_against_a_400_layer_moe_in_under_2_s() -> None:
    """155,200 module names x 500 globs of five forms: both engines' fnmatch per pair is
    ~78M regex calls (11.6 s of CPU before); now one automaton for all patterns."""
    qc = quark_quantization_config(layers=400, experts=128, patterns=500)
    with cpu_seconds(20) as used:
        declared, refusal = quark_kv_cache_group(qc)
    assert refusal is None
    assert declared is not None and declared.endswith(f"output_tensors {brief_json(FP8)}")
    assert used[0] < 2.0, f"{used[0]:.2f} s of CPU"


def test_quark_group_refuses_mixed_kv_settings_as_the_engines_do() -> None:
    """One matched module of ~20,000 with other output_tensors: the engines' refusal."""
    qc = quark_quantization_config(layers=400, experts=16, patterns=400)
    # Pattern 396 is "model.layers.396.*.v_proj".
    qc["layer_quant_config"]["model.layers.396.self_attn.v_proj"] = {"output_tensors": None}
    _, refusal = quark_kv_cache_group(qc)
    assert refusal == (
        "ValueError: The quantization method used for kv_cache should be the same, but the "
        "quantization method for the kv_cache layer in the config is different."
    )


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_inspect_quark_400_layers_256_experts_2000_globs(tmp_path: Path, engine: str) -> None:
    d = quark_checkpoint(tmp_path / "quark", layers=400, experts=256, patterns=2_000)
    with cpu_seconds(120) as used:
        # 310,000 module entries make a 22 MB config.json, over the default max-config-bytes.
        result = invoke(
            "inspect", d, "--json", "--engine", engine, env={"KVSCALE_MAX_CONFIG_BYTES": "64000000"}
        )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["engine_path"] == "base"  # the engine accepts the kv_cache_group
    assert len(doc["layers"]) == 400
    assert used[0] < 20.0, f"{used[0]:.2f} s of CPU"


# --- scale names that reach no layer x layers ----------------------------------------------------


def _layer_names(layers: int) -> list[str]:
    return [f"model.layers.{i}.self_attn.attn" for i in range(layers)]


def _refused(names: list[str]) -> list[UnmappedTensor]:
    return [UnmappedTensor(n, "model.safetensors", n, "refused", True) for n in names]


def _expert_and_stray_names(layers: int, experts: int, stray: int) -> list[str]:
    """A k_scale under every expert of every layer (the loader refuses each), then ``stray``
    names under no layer (each refusal fails every layer)."""
    names = [
        f"model.layers.{i}.mlp.experts.{e}.k_scale" for i in range(layers) for e in range(experts)
    ]
    return names + [f"model.mtp.{n}.k_scale" for n in range(stray)]


@pytest.mark.parametrize("engine", [VLLM, SGLANG], ids=["vllm", "sglang"])
def test_refusals_of_30000_names_over_4096_layers_in_under_half_a_second(engine: Any) -> None:
    """Which layer each refused tensor fails: 25,600 names under 400 layers' experts, then
    10,000 under none, over 4,096 layers (before: every layer per stray name, and for SGLang a
    scan of every layer per name: 3 s and a minute)."""
    layers = _layer_names(4_096)
    unmapped = _refused(_expert_and_stray_names(400, 64, 10_000))
    with cpu_seconds(20) as used:
        refusals = engine.unmapped_refusals(layers, unmapped)
    # Layers 0-399 fail on their first expert's name; every other layer on the first stray one.
    assert refusals["model.layers.7.self_attn.attn"][0].tensor == (
        "model.layers.7.mlp.experts.0.k_scale"
    )
    assert refusals["model.layers.4095.self_attn.attn"][0].tensor == "model.mtp.0.k_scale"
    assert len(refusals) == 4_096
    assert used[0] < 0.5, f"{used[0]:.2f} s of CPU"


def test_sglang_owner_is_every_layer_under_the_tensors_layers_prefix() -> None:
    """SGLang's owner rule, kept exactly: a layer is under the tensor's last ``.layers.N``
    prefix when its name starts with it, nested layers included."""
    layers = ["a.layers.1.self_attn.attn", "a.layers.1.b.layers.2.self_attn.attn"]
    unmapped = _refused(["a.layers.1.x.k_scale", "a.layers.1.b.layers.2.y.k_scale"])
    refusals = SGLANG.unmapped_refusals(layers, unmapped)
    assert {k: v[0].tensor for k, v in refusals.items()} == {
        "a.layers.1.self_attn.attn": "a.layers.1.x.k_scale",
        "a.layers.1.b.layers.2.self_attn.attn": "a.layers.1.x.k_scale",
    }
    refusals = SGLANG.unmapped_refusals(layers, unmapped[::-1])
    assert {k: v[0].tensor for k, v in refusals.items()} == {
        "a.layers.1.self_attn.attn": "a.layers.1.x.k_scale",
        "a.layers.1.b.layers.2.self_attn.attn": "a.layers.1.b.layers.2.y.k_scale",
    }


def test_unmapped_problems_of_25600_names_in_under_half_a_second() -> None:
    layers = _layer_names(400)
    unmapped = _refused(_expert_and_stray_names(400, 64, 0))
    refusals = VLLM.unmapped_refusals(layers, unmapped)
    refused_by = {layer: item for layer, (item, _) in refusals.items()}
    with cpu_seconds(20) as used:
        problems = unmapped_problems(unmapped, refused_by)
    assert len(problems) == 1
    assert problems[0].message.startswith("25600 tensors are not used as KV scales")
    assert len(problems[0].layers) == 400
    assert used[0] < 0.5, f"{used[0]:.2f} s of CPU"


@pytest.mark.slow
def test_inspect_vllm_100000_stray_scale_names_over_4096_layers(tmp_path: Path) -> None:
    names = _expert_and_stray_names(0, 0, 100_000)
    d = unmapped_checkpoint(tmp_path / "stray", 4_096, names)
    with cpu_seconds(300) as used:
        result = invoke("inspect", d, "--json", "--engine", "vllm")
    assert result.exit_code == 1, result.stderr  # every layer is refused
    assert len(json.loads(result.stdout)["layers"]) == 4_096
    assert used[0] < 30.0, f"{used[0]:.2f} s of CPU"


@pytest.mark.slow
def test_inspect_sglang_every_recorded_name_of_4096_baichuan_layers(tmp_path: Path) -> None:
    """110,592 names Baichuan's SGLang loader raises on (before: 114 s of CPU)."""
    names = [f"model.layers.{i}.self_attn.{tail}" for i in range(4_096) for tail in PROBE_TAILS]
    d = unmapped_checkpoint(tmp_path / "baichuan", 4_096, names, "BaichuanForCausalLM")
    with cpu_seconds(300) as used:
        result = invoke("inspect", d, "--json", "--engine", "sglang")
    assert result.exit_code == 1, result.stderr
    assert len(json.loads(result.stdout)["layers"]) == 4_096
    assert used[0] < 30.0, f"{used[0]:.2f} s of CPU"
