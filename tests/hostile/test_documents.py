"""Hostile documents (issue 17, item 9): deeply nested or huge-number JSON and TOML, scales
outputs and checkpoints whose per-head lists disagree in length, activations whose K and V
disagree: each is one ``kvscale: error:`` line naming the file, or a refusal, never a crash."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from support.checkpoints import (
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
)
from support.hardening import (
    L0,
    P,
    activations_file,
    checkpoint,
    deadline,
    edit_device,
    edit_json,
    invoke,
    normalized,
    one_line_error,
    per_head,
)

from kvscale import scales_file

NESTED = [
    pytest.param('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply", id="lists"),
    pytest.param(
        '{"a": ' + '{"b": ' * 5_000 + "1" + "}" * 5_001, "nested too deeply", id="objects"
    ),
    pytest.param('{"num_hidden_layers": 1' + "0" * 5_000 + "}", "5,001 digits", id="huge-int"),
    pytest.param('{"num_hidden_layers": 1e999}', "", id="huge-float"),
]


@pytest.mark.parametrize("text, words", NESTED)
@pytest.mark.parametrize(
    "name", ["config.json", "hf_quant_config.json", "model.safetensors.index.json"]
)
def test_hostile_json_in_the_checkpoint(tmp_path: Path, name: str, text: str, words: str) -> None:
    src = checkpoint(tmp_path)
    (src / name).write_text(text)
    with deadline(10):
        result = invoke("inspect", src)
    if name == "config.json" and words == "":
        # A float where an integer is needed: a config error, not a parse error.
        one_line_error(result, str(src / name), "num_hidden_layers")
        return
    if name == "model.safetensors.index.json" and words == "":
        one_line_error(result, str(src / name), "weight_map")
        return
    if name == "hf_quant_config.json" and words == "":
        assert result.exit_code in (0, 1), result.stderr
        return
    one_line_error(result, str(src / name), words)


@pytest.mark.parametrize(
    "text, words",
    [
        pytest.param("a = " + "[" * 5_000 + "]" * 5_000 + "\n", "nested too deeply", id="arrays"),
        pytest.param(
            "a = " + "{b = " * 3_000 + "1" + "}" * 3_000 + "\n", "nested too deeply", id="tables"
        ),
        pytest.param("strict = 1" + "0" * 5_000 + "\n", "invalid TOML", id="huge-int-literal"),
        pytest.param("max_rel_change = 1e999\n", "max_rel_change", id="huge-float"),
        pytest.param(
            "max_rel_change = 1" + "0" * 400 + "\n",
            "max_rel_change",
            id="huge-int-value",
        ),
        pytest.param("[a.b.c.d]\n" * 1 + "x." * 2_000 + "y = 1\n", "", id="dotted-key"),
    ],
)
def test_hostile_toml_policy(tmp_path: Path, text: str, words: str) -> None:
    src = checkpoint(tmp_path)
    policy = tmp_path / "kvscale.toml"
    policy.write_text(text)
    with deadline(10):
        result = invoke("inspect", src, "--policy", policy)
    one_line_error(result, str(policy), words)


@pytest.mark.parametrize(
    "text, words",
    [
        pytest.param(
            '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply", id="nested"
        ),
        pytest.param(
            '{"schema": "kvscale.scales/1", "x": 1' + "0" * 5_000 + "}", "digits", id="huge-int"
        ),
    ],
)
def test_hostile_scales_json(tmp_path: Path, text: str, words: str) -> None:
    src = checkpoint(tmp_path)
    out = normalized(src, tmp_path / "out")
    other = normalized(src, tmp_path / "other")
    (out / scales_file.JSON_NAME).write_text(text)
    for command in (["verify", out], ["diff", other, out], ["diff", other, out / "kv_scales.json"]):
        with deadline(10):
            one_line_error(invoke(*command), str(out / scales_file.JSON_NAME), words)


def test_per_head_tensors_of_the_wrong_length_in_a_checkpoint(tmp_path: Path) -> None:
    """The engine's loader keeps the first num_kv_heads values (a warning); a q of the wrong
    length it refuses (exit 1). Neither is a crash."""
    t = attention_weights(1)
    t[f"{P.format(0)}.k_scale"] = tensor([0.1, 0.2, 0.3], shape=(3, 1, 1))
    t[f"{P.format(0)}.v_scale"] = tensor([0.1, 0.2], shape=(2, 1, 1))
    src = write_checkpoint(
        tmp_path / "long", t, llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    )
    result = invoke("inspect", src, "--json")
    assert result.exit_code == 0, result.stderr
    assert [p["code"] for p in json.loads(result.stdout)["problems"]] == ["per-head-truncated"]
    t[f"{P.format(0)}.k_scale"] = tensor([0.1, 0.2], shape=(2, 1, 1))
    t[f"{P.format(0)}.q_scale"] = tensor([0.1, 0.2, 0.3], shape=(3, 1, 1))
    src = write_checkpoint(
        tmp_path / "q", t, llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    )
    result = invoke("inspect", src)
    assert result.exit_code == 1, result.stderr
    assert "layer-refused" in result.stdout


def test_per_head_lists_of_different_lengths_in_a_scales_output(tmp_path: Path) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    v3 = [0.01, 0.02, 0.03]
    top = struct.unpack("<f", struct.pack("<f", 0.03))[0]

    def longer_v(doc: dict[str, Any]) -> None:
        doc["layers"][L0]["per_head"]["v_scale"] = v3
        doc["layers"][L0]["v_scale"] = top

    edit_json(out / scales_file.JSON_NAME, longer_v)
    edit_device(out, lambda d: d.__setitem__(f"{L0}.v_scale", torch.tensor(v3)))
    one_line_error(invoke("verify", out), str(out))


@pytest.mark.parametrize(
    "k, v, words",
    [
        pytest.param((64, 2, 16), (64, 2, 8), "share the kv heads and head size", id="head-size"),
        pytest.param((64, 2, 16), (64, 3, 16), "share the kv heads and head size", id="kv-heads"),
        pytest.param((64, 32), (64, 32), "[tokens, num_kv_heads, head_size]", id="2-d"),
        pytest.param(
            (64, 3, 16),
            (64, 3, 16),
            "",
            id="heads-vs-per-head-scales",
        ),
        pytest.param(
            (64, 2, 16, "f16"),
            (64, 2, 16, "bf16"),
            "",
            id="k-v-dtypes",
        ),
        pytest.param(
            (64, 2, 16),
            None,
            "",
            id="k-only",
        ),
    ],
)
def test_activations_whose_k_and_v_disagree(
    tmp_path: Path, k: tuple[Any, ...], v: tuple[Any, ...] | None, words: str
) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}

    def make(spec: tuple[Any, ...] | None) -> torch.Tensor | None:
        if spec is None:
            return None
        dims = [d for d in spec if isinstance(d, int)]
        dtype = dtypes[spec[-1]] if isinstance(spec[-1], str) else torch.float32
        return (torch.randn(*dims) * 0.01).to(dtype)

    path = activations_file(tmp_path / "acts.safetensors", make(k), make(v))
    with deadline(20):
        one_line_error(invoke("verify", out, "--activations", path), str(path), words)
