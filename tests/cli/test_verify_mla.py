"""``kvscale verify --data`` on an MLA model (tiny random DeepSeek-V3), end to end through the
CLI: the model runs with vLLM's latent cache at the calibrated scales, at 1.0 and unquantized; the
per-layer statistics are the real latent rows'; the saved rows (``<layer>.kv_c`` /
``<layer>.k_pe``) give the same statistics without the model.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers", reason="pip install 'kvscale[calibrate]'")
torch = pytest.importorskip("torch")

from safetensors.torch import load_file  # noqa: E402
from support.cli import CliRunner  # noqa: E402
from support.models import random_samples  # noqa: E402

from kvscale.cli import app  # noqa: E402

SAMPLES = (40, 33, 64, 50)


def run(*args: object) -> Any:
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def model(mla_model_dir: Callable[[str], Path]) -> Path:
    return mla_model_dir("deepseek_v3")


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("d") / "text.jsonl"
    samples = random_samples(SAMPLES, seed=5)
    path.write_text("".join(json.dumps({"input_ids": list(s)}) + "\n" for s in samples))
    return path


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory: pytest.TempPathFactory, model: Path, data: Path) -> Path:
    out = tmp_path_factory.mktemp("cal") / "scales"
    result = run("calibrate", model, "--data", data, "--out", out, "--device", "cpu")
    assert result.exit_code == 0, result.stderr
    return out


def test_verify_data_runs_the_latent_cache(
    calibrated: Path, model: Path, data: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "kv.safetensors"
    result = run(
        "verify", calibrated, "--model", model, "--data", data, "--seq-len", "64",
        "--activations-out", saved, "--max-kl", "0.01", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout
    doc = json.loads(result.stdout)
    scales = json.loads((calibrated / "kv_scales.json").read_text())
    amax = scales["calibration"]["layers"]
    for layer in doc["layers"]:
        assert layer["pass"] is True and layer["data"] == "model"
        # k and v are the row's statistics: one latent, one scale.
        assert layer["k"] == layer["v"]
        assert layer["k"]["scale"] == scales["layers"][layer["name"]]["k_scale"]
        # Calibrated on these very tokens: nothing saturates, and no live row exceeds the amax.
        assert layer["k"]["saturated"] == 0.0
        assert 0 < layer["k"]["absmax"] <= amax[layer["name"]]["k_amax"]
        assert 0 < layer["k"]["rel_rms_error"] < 0.08
    assert any("MLA layer(s) cache one latent row" in note for note in doc["notes"])
    model_eval = doc["model_eval"]
    assert model_eval["tokens"] == sum(SAMPLES) and model_eval["failures"] == []
    for key in ("ppl_unquantized", "ppl_fp8", "ppl_unit_scales"):
        assert math.isfinite(model_eval[key]) and model_eval[key] > 1
    # Quantized at either scale, the latent changes the predictions, a little.
    assert 0 < model_eval["kl_mean"] < 0.01 and 0 < model_eval["kl_mean_unit_scales"] < 0.01
    assert model_eval["ppl_fp8"] != model_eval["ppl_unquantized"] != model_eval["ppl_unit_scales"]
    rows = load_file(str(saved))
    names = [layer["name"] for layer in doc["layers"]]
    assert {k: tuple(v.shape) for k, v in rows.items()} == {
        f"{n}.{kind}": (sum(SAMPLES), width)
        for n in names
        for kind, width in (("kv_c", 32), ("k_pe", 16))
    }
    # The saved rows, verified without the model, give the same statistics.
    again = run("verify", calibrated, "--activations", saved, "--json")
    assert again.exit_code == 0, again.stdout
    assert [layer["k"] for layer in json.loads(again.stdout)["layers"]] == [
        {**layer["k"], "data": "activations"} for layer in doc["layers"]
    ]


def test_verify_data_on_mla_needs_vllm(model: Path, data: Path) -> None:
    result = run(
        "verify", model, "--data", data, "--seq-len", "64", "--engine", "sglang",
        "--kv-cache-dtype", "fp8_e4m3",
    )  # fmt: skip
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line == (
        "kvscale: error: verify --data on MLA layers (model.layers.0.self_attn.attn, ...) runs "
        "vLLM 0.33.0's latent cache write (concat_and_cache_mla); sglang writes and reads the "
        "latent otherwise (SGLang 0.5.23: MLATokenToKVPool stores it unscaled) (use --engine "
        "vllm)"
    )
