"""``kvscale calibrate`` on an llm-compressor (compressed-tensors) checkpoint without the
compressed-tensors package: exit 3 naming the calibrate extra, not exit 2 from transformers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kvscale.cli import app

pytest.importorskip("transformers")

runner = CliRunner()

FP8_WEIGHTS = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}


def test_a_compressed_tensors_model_without_its_package_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.models import random_samples, save_tiny

    model = save_tiny("llama", tmp_path / "model")
    config = json.loads((model / "config.json").read_text())
    config["quantization_config"] = {  # llm-compressor's FP8 weights (weights only, no KV)
        "quant_method": "compressed-tensors",
        "format": "float-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": FP8_WEIGHTS}},
        "ignore": ["lm_head"],
    }
    (model / "config.json").write_text(json.dumps(config))
    data = tmp_path / "calib.jsonl"
    data.write_text("".join(json.dumps({"input_ids": s}) + "\n" for s in random_samples((8,))))
    monkeypatch.setitem(sys.modules, "compressed_tensors", None)  # installed or not: hidden
    result = runner.invoke(
        app, ["calibrate", str(model), "--data", str(data), "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 3, result.output
    assert result.stderr == (
        f"kvscale: error: loading {model} (a compressed-tensors quantized model) needs the "
        "compressed_tensors package, which is not installed (pip install 'kvscale[calibrate]')\n"
    )
    assert not (tmp_path / "out").exists()


def test_the_calibrate_extra_brings_compressed_tensors() -> None:
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert "compressed-tensors>=0.15" in extras["calibrate"]
