"""Edited scales outputs (issue 17, item 10): ``verify`` finds every disagreement between the
JSON's host values and the device tensors (one ulp, a non-max head, a layer on one side only),
accepts what ``normalize --force`` writes, fails activations with nothing to verify; ``diff``
refuses a layer listed twice."""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from pathlib import Path

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
    edit_device,
    edit_json,
    invoke,
    normalized,
    one_line_error,
    per_head,
    verify_json,
)

from kvscale import scales_file


def ulp_up(value: float) -> float:
    """The next float32 above ``value``."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return float(struct.unpack("<f", struct.pack("<I", bits + 1))[0])


def small_fp8(
    root: Path, name: str = "fp8", *, extra: dict[str, torch.Tensor] | None = None
) -> Path:
    """A 2-layer fp8 checkpoint with k, v, q and prob scales (head size 16: verify is quick)."""
    t = attention_weights(2)
    for i in range(2):
        t[f"{P.format(i)}.k_scale"] = tensor(0.5)
        t[f"{P.format(i)}.v_scale"] = tensor(0.25)
        t[f"{P.format(i)}.q_scale"] = tensor(0.125)
        t[f"{P.format(i)}.prob_output_scale"] = tensor(0.0625)
    t.update(extra or {})
    return write_checkpoint(root / name, t, llama_config(2, quant=quant_config("fp8"), head_dim=16))


@pytest.mark.parametrize("kind", ["k_scale", "v_scale", "q_scale", "prob_scale"])
def test_one_ulp_on_the_device_fails(tmp_path: Path, kind: str) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    name = f"{L0}.{kind}"
    edit_device(out, lambda d: d.__setitem__(name, torch.tensor(ulp_up(float(d[name])))))
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False and doc["ok"] is False
    assert [layer["pass"] for layer in doc["layers"]] == [False, True]


@pytest.mark.parametrize("side", ["device", "json"])
def test_one_ulp_in_a_non_max_head_fails(tmp_path: Path, side: str) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    # k heads [0.01, 0.02]: head 0 is not the max, so the host float (the max) is unchanged.
    low = float(torch.tensor(0.01, dtype=torch.float32))
    if side == "device":
        edit_device(
            out, lambda d: d.__setitem__(f"{L0}.k_scale", torch.tensor([ulp_up(low), 0.02]))
        )
    else:
        edit_json(
            out / scales_file.JSON_NAME,
            lambda doc: doc["layers"][L0]["per_head"]["k_scale"].__setitem__(0, ulp_up(low)),
        )
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_layer_only_in_the_safetensors_fails(tmp_path: Path) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    ghost = "model.layers.7.self_attn.attn"
    edit_device(
        out,
        lambda d: d.update(
            {f"{ghost}.k_scale": torch.tensor(0.5), f"{ghost}.v_scale": torch.tensor(0.5)}
        ),
    )
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False
    assert ghost in {layer["name"] for layer in doc["layers"] if not layer["pass"]}
    # Dropping the layer from the JSON is the same disagreement.
    out2 = normalized(small_fp8(tmp_path, "again"), tmp_path / "out2", "--kv-cache-dtype", "fp8")
    edit_json(out2 / scales_file.JSON_NAME, lambda doc: doc["layers"].pop(L0))
    code, doc, err = verify_json(out2)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_host_q_without_a_device_tensor_fails(tmp_path: Path) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    edit_device(out, lambda d: d.pop(f"{L0}.q_scale"))
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_untouched_outputs_verify(tmp_path: Path) -> None:
    """The baseline of the disagreement tests below: the same outputs, unedited, pass."""
    for out in (
        normalized(small_fp8(tmp_path), tmp_path / "fp8-out", "--kv-cache-dtype", "fp8"),
        normalized(per_head(tmp_path), tmp_path / "heads-out"),
    ):
        code, doc, err = verify_json(out)
        assert code == 0, err
        assert doc is not None and doc["host_device_agree"] is True


def test_verify_accepts_normalize_force_output(tmp_path: Path) -> None:
    t = attention_weights(2)
    t[f"{P.format(0)}.k_scale"] = tensor(0.5)
    t[f"{P.format(0)}.v_scale"] = tensor(0.25)
    t[f"{P.format(1)}.k_scale"] = tensor(0.0)  # not writable: skipped under --force
    t[f"{P.format(1)}.v_scale"] = tensor(0.25)
    src = write_checkpoint(
        tmp_path / "ckpt", t, llama_config(2, quant=quant_config("compressed-tensors"), head_dim=16)
    )
    assert invoke("normalize", src, "--out", tmp_path / "no").exit_code == 1
    out = normalized(src, tmp_path / "out", "--force", "--checkpoint")
    code, doc, err = verify_json(out)
    assert code == 0, err
    assert doc is not None and doc["host_device_agree"] is True
    assert [layer["name"] for layer in doc["layers"]] == [L0]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: torch.full((64, 2, 16), float("nan")), id="all-nan"),
        pytest.param(lambda: torch.full((64, 2, 16), float("inf")), id="all-inf"),
        pytest.param(lambda: torch.zeros((0, 2, 16)), id="zero-tokens"),
    ],
)
def test_activations_with_nothing_to_verify_fail(
    tmp_path: Path, make: Callable[[], torch.Tensor]
) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    path = activations_file(tmp_path / "acts.safetensors", make(), make())
    code, doc, err = verify_json(out, "--activations", str(path))
    assert code == 1, err
    assert doc is not None and doc["ok"] is False
    assert [layer["pass"] for layer in doc["layers"]] == [False]


def test_diff_refuses_a_duplicate_layer(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    report = tmp_path / "report.json"
    result = invoke("inspect", src, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    doc["layers"].append(dict(doc["layers"][0], k_scale=0.75))
    report.write_text(json.dumps(doc))
    err = one_line_error(invoke("diff", src, report), str(report), "appears twice")
    assert L0 in err
    out = normalized(src, tmp_path / "out")
    text = (out / scales_file.JSON_NAME).read_text()
    entry = json.dumps(json.loads(text)["layers"][L0])
    doubled = text.replace('"layers": {', '"layers": {' + json.dumps(L0) + ": " + entry + ",", 1)
    (out / scales_file.JSON_NAME).write_text(doubled)
    one_line_error(invoke("diff", src, out), str(out / scales_file.JSON_NAME), "duplicate key")
    one_line_error(invoke("verify", out), str(out / scales_file.JSON_NAME), "duplicate key")
