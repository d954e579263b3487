"""Golden files pinning the `kvscale inspect --json` document (schema `kvscale.inspect/1`).

Each case builds a small synthetic checkpoint in tmp_path, runs `kvscale inspect CKPT --json`
from inside tmp_path (so "checkpoint" is the relative path "ckpt"), replaces the kvscale
version, and compares the whole document with tests/golden/inspect_<case>.json.

A deliberate schema or behaviour change: regenerate with

    KVSCALE_UPDATE_GOLDEN=1 python -m pytest tests/cli/test_inspect_golden.py

and review the diff of tests/golden/ like code. Removing or renaming a contract key needs a new
schema version (see the contract); ``test_contract_keys_are_present`` guards that.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import write_safetensors_file
from support.cli import CliRunner
from support.paths import GOLDEN

from kvscale.cli import app

runner = CliRunner()
UPDATE = os.environ.get("KVSCALE_UPDATE_GOLDEN", "") not in ("", "0", "false", "no")

P = "model.layers.{}.self_attn"


def _config(layers: int, qc: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "torch_dtype": "bfloat16",
    }
    if qc is not None:
        config["quantization_config"] = qc
    config.update(extra)
    return config


def _ct(strategy: str = "tensor") -> dict[str, Any]:
    return {
        "quant_method": "compressed-tensors",
        "config_groups": {},
        "kv_cache_scheme": {
            "num_bits": 8,
            "type": "float",
            "strategy": strategy,
            "symmetric": True,
            "dynamic": False,
        },
    }


FP8 = {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"}


def _write(root: Path, config: dict[str, Any], tensors: dict[str, Any]) -> Path:
    import torch

    ckpt = root / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps(config, indent=1))
    write_safetensors_file(
        ckpt / "model.safetensors",
        {
            name: value if isinstance(value, torch.Tensor) else torch.tensor(value)
            for name, value in tensors.items()
        },
    )
    return ckpt


def ct_good(root: Path) -> list[str]:
    _write(
        root,
        _config(2, _ct()),
        {f"{P.format(i)}.{k}_scale": 0.0234375 / (i + 1) for i in range(2) for k in "kv"},
    )
    return []


def ct_broken(root: Path) -> list[str]:
    _write(
        root,
        _config(3, _ct()),
        {
            f"{P.format(0)}.k_scale": 0.0234375,
            f"{P.format(0)}.v_scale": 0.015625,
            f"{P.format(1)}.k_scale": 0.0,
        },
    )
    return []


def ct_per_head(root: Path) -> list[str]:
    import torch

    tensors: dict[str, Any] = {}
    for i in range(2):
        tensors[f"{P.format(i)}.k_scale"] = torch.tensor([[[0.5]], [[0.25]]])
        tensors[f"{P.format(i)}.v_scale"] = torch.tensor([[[0.125]], [[0.0625]]])
    _write(root, _config(2, _ct("attn_head")), tensors)
    return []


def fp8_base_bf16(root: Path) -> list[str]:
    import torch

    _write(
        root,
        _config(2, FP8),
        {
            f"{P.format(0)}.k_proj.k_scale": 0.3,  # not a bf16 value: precision-lost
            f"{P.format(0)}.v_proj.v_scale": 0.125,
            f"{P.format(1)}.k_proj.k_scale": torch.tensor(0.25, dtype=torch.bfloat16),
        },
    )
    return ["--kv-cache-dtype", "fp8", "--platform", "fnuz"]


def fp8_refused(root: Path) -> list[str]:
    import torch

    _write(
        root,
        _config(2, FP8),
        {
            f"{P.format(0)}.k_scale": torch.tensor([0.5, 0.25]),  # base path: scalar only
            f"{P.format(0)}.v_scale": 0.5,
            f"{P.format(1)}.k_scale": 0.5,
            f"{P.format(1)}.v_scale": 0.5,
        },
    )
    return ["--kv-cache-dtype", "fp8"]


def unquantized(root: Path) -> list[str]:
    _write(root, _config(2, None), {f"{P.format(0)}.q_proj.weight": [[0.0]]})
    return []


CASES: dict[str, tuple[Callable[[Path], list[str]], int]] = {
    "ct_good": (ct_good, 0),
    "ct_broken": (ct_broken, 1),
    "ct_per_head": (ct_per_head, 0),
    "fp8_base_bf16": (fp8_base_bf16, 0),
    "fp8_refused": (fp8_refused, 1),
    "unquantized": (unquantized, 0),
}

CONTRACT_KEYS = {
    "schema",
    "checkpoint",
    "quant_method",
    "engine_path",
    "kv_cache_dtype",
    "platform",
    "model_dtype",
    "layers",
    "problems",
    "ok",
}
LAYER_KEYS = {"name", "rule", "k_scale", "v_scale", "q_scale", "prob_scale", "checkpoint", "error"}
PROBLEM_KEYS = {"severity", "code", "layer", "message"}


def run_case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    build, _ = CASES[name]
    args = build(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(
        app, ["inspect", "ckpt", "--json", "--no-policy", *args], env={"GITHUB_ACTIONS": ""}
    )
    assert result.stderr == ""
    document = json.loads(result.stdout)
    assert isinstance(document.get("kvscale_version"), str)
    document["kvscale_version"] = "<version>"
    return result.exit_code, document


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_inspect(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, document = run_case(name, tmp_path, monkeypatch)
    assert code == CASES[name][1]
    assert document["ok"] == (code == 0)
    path = GOLDEN / f"inspect_{name}.json"
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n")
        return
    if not path.exists():
        pytest.fail(f"{path} missing: run KVSCALE_UPDATE_GOLDEN=1 python -m pytest {__file__}")
    expected = json.loads(path.read_text())
    assert document == expected, (
        f"kvscale.inspect/1 output changed for {name}; if intended, regenerate with "
        "KVSCALE_UPDATE_GOLDEN=1 and review tests/golden/"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_contract_keys_are_present(name: str) -> None:
    """The golden files themselves hold every key the contract promises."""
    path = GOLDEN / f"inspect_{name}.json"
    if not path.exists():
        pytest.fail(f"{path} missing: run KVSCALE_UPDATE_GOLDEN=1 python -m pytest {__file__}")
    document = json.loads(path.read_text())
    assert document["schema"] == "kvscale.inspect/1"
    assert CONTRACT_KEYS <= set(document)
    for layer in document["layers"]:
        assert LAYER_KEYS <= set(layer)
        assert layer["rule"] in {
            "separate",
            "duplicated",
            "default",
            "partial",
            "per_head",
            "unquantized",
            "error",
        }
        if layer["rule"] == "error":
            assert [layer[k] for k in ("k_scale", "v_scale", "q_scale", "prob_scale")] == [None] * 4
            assert isinstance(layer["error"], str)
    for item in document["problems"]:
        assert PROBLEM_KEYS <= set(item)


def test_goldens_cover_every_case_and_nothing_else() -> None:
    on_disk = sorted(p.name for p in GOLDEN.glob("inspect_*.json"))
    assert on_disk == sorted(f"inspect_{name}.json" for name in CASES)
