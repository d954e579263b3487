"""``kvscale calibrate`` on an MLA model (tiny random DeepSeek-V3), end to end: one scale per layer
(k = v), written under the names the chosen engine loads; where the engine loads none, the scales
files are still written and the run warns; ``--strategy head`` is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install 'kvscale[calibrate]'")
torch = pytest.importorskip("torch")

from safetensors import safe_open  # noqa: E402
from support.cli import CliRunner  # noqa: E402
from support.models import random_samples  # noqa: E402

from kvscale.cli import app  # noqa: E402
from kvscale.engine.vllm.engine import VllmEngine  # noqa: E402

SAMPLES = (24, 17, 31)
LAYERS = [f"model.layers.{i}.self_attn.attn" for i in range(3)]


def run(*args: object) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def model(mla_model_dir: Callable[[str], Path]) -> Path:
    return mla_model_dir("deepseek_v3")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("d") / "calib.jsonl"
    path.write_text(
        "".join(json.dumps({"input_ids": list(s)}) + "\n" for s in random_samples(SAMPLES))
    )
    return path


def test_sglang_copy_loads_the_latent_scale_under_k_proj(
    tmp_path: Path, model: Path, data: Path
) -> None:
    out = tmp_path / "out"
    result = run(
        "calibrate", model, "--data", data, "--out", out, "--engine", "sglang", "--checkpoint",
        "--device", "cpu",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads((out / "kv_scales.json").read_text())
    assert (doc["num_kv_heads"], doc["head_size"]) == (1, 48)
    for name in LAYERS:
        entry, calib = doc["layers"][name], doc["calibration"]["layers"][name]
        assert calib["kv_lora_rank"] == 32 and calib["rope_dim"] == 16
        amax = max(calib["kv_c_amax"], calib["k_pe_amax"])
        assert calib["k_amax"] == calib["v_amax"] == amax
        want = float(torch.tensor(amax, dtype=torch.float32) / 448)
        assert entry["k_scale"] == entry["v_scale"] == want
        prefix = name.removesuffix(".attn")
        assert entry["checkpoint_tensors"] == {
            "k_scale": f"{prefix}.k_proj.k_scale",
            "v_scale": f"{prefix}.v_proj.v_scale",
        }
    inspected = run(
        "inspect", out / "checkpoint", "--engine", "sglang", "--kv-cache-dtype", "fp8_e4m3",
        "--json",
    )  # fmt: skip
    assert inspected.exit_code == 0, inspected.stdout
    for layer in json.loads(inspected.stdout)["layers"]:
        assert layer["rule"] == "separate"
        assert layer["k_scale"] == doc["layers"][layer["name"]]["k_scale"]


def test_an_engine_that_loads_no_name_gets_the_files_and_a_warning(
    tmp_path: Path, model: Path, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vLLM 0.33.0's DeepSeek loaders take no checkpoint name for MLA scales (the engine's rules
    say so through ``checkpoint_name``; here it is made to say so)."""
    monkeypatch.setattr(VllmEngine, "checkpoint_name", lambda self, prefix, kind, context: None)
    out = tmp_path / "out"
    result = run(
        "calibrate", model, "--data", data, "--out", out, "--engine", "vllm", "--checkpoint",
        "--device", "cpu", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    warnings = json.loads(result.stdout)["warnings"]
    assert [w["code"] for w in warnings] == [
        "fewer-tokens-than-asked",
        "calibrated-scales-not-loaded",
    ]
    assert warnings[1]["message"] == (
        "vllm 0.33.0 loads no checkpoint name for the k/v scales of 3 layer(s) "
        f"({', '.join(LAYERS)}): it runs them at its default 1.0 whatever a checkpoint holds; "
        "kv_scales.json holds the calibrated values; the copy carries no scale for them"
    )
    doc = json.loads((out / "kv_scales.json").read_text())
    for name in LAYERS:
        entry = doc["layers"][name]
        assert entry["rule"] == "default"
        assert entry["engine_holds"] == {"k_scale": 1.0, "v_scale": 1.0}
        assert entry["k_scale"] == entry["v_scale"] > 0
        assert "checkpoint_tensors" not in entry
    with safe_open(str(out / "checkpoint" / "model.safetensors"), framework="pt") as f:
        assert not [k for k in f.keys() if k.endswith(("k_scale", "v_scale"))]


def test_head_strategy_is_refused_before_loading(tmp_path: Path, model: Path, data: Path) -> None:
    out = tmp_path / "out"
    result = run(
        "calibrate", model, "--data", data, "--out", out, "--strategy", "head", "--device", "cpu"
    )
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kvscale: error: --strategy head: {model} is an MLA model (kv_lora_rank 32): its cache "
        "holds one latent row per token ([kv_c | k_pe], one head) written with one k scale (use "
        "--strategy tensor)"
    ]
    assert not out.exists()
