"""``kvscale normalize`` end to end: values, names, layouts, byte identity, idempotence, safety."""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from support.checkpoints import gemma2_quark_checkpoint, llama_config, write_safetensors_file
from support.cli import CliRunner, run_cli
from support.normalize import (
    CASES,
    CASES_BY_NAME,
    Case,
    P,
    qc,
    report,
    same,
    t,
    tensor_bytes,
    tree_bytes,
    values,
    weights,
    write_dir,
)
from support.paths import EXAMPLES

from kvscale.cli import app
from kvscale.conventions import NORMALIZED_MARK
from kvscale.core.normalize import NormalizeOptions, normalize_checkpoint, plan_normalize
from kvscale.engine.base import EnginePath, Rule
from kvscale.engine.vllm.names import map_name
from kvscale.errors import RefusedError, UsageError
from kvscale.io.safetensors import read_header
from kvscale.io.safetensors_write import dtype_alignment
from kvscale.io.staging import MANIFEST_NAME

runner = CliRunner()

KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")


@pytest.fixture(autouse=True)
def _no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check what normalize writes, not that it reaches the disk (the fault tests in
    tests/hostile/ do): their ~1,000 fsyncs were seconds of the default run's wall time."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


def checkpoint_name(prefix: str, kind: str, quant_method: str) -> str | None:
    """vLLM's checkpoint name for one scale under a quant method (no architecture renames)."""
    from kvscale.engine.base import NameContext, QuantConfig
    from kvscale.engine.vllm.engine import VLLM
    from kvscale.model_config import ModelShape

    context = NameContext(QuantConfig(quant_method=quant_method), ModelShape(), frozenset())
    return VLLM.checkpoint_name(prefix, kind, context)


def invoke(*args: str) -> Any:
    return runner.invoke(app, ["normalize", *args])


def normalize_cli(src: Path, out: Path, *extra: str, code: int = 0) -> dict[str, Any]:
    result = invoke(str(src), "--out", str(out), "--json", *extra)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def case_args(case: Case, platform: str) -> list[str]:
    args = ["--checkpoint", "--platform", platform, "--kv-cache-dtype", case.kv_cache_dtype]
    if case.model_dtype:
        args += ["--model-dtype", case.model_dtype]
    return args


@pytest.mark.parametrize("platform", ["ocp", "fnuz"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_roundtrip(tmp_path: Path, case: Case, platform: str) -> None:
    src = case.build(tmp_path / "src")
    before = tree_bytes(tmp_path / "src")
    out = tmp_path / "out"
    summary = normalize_cli(src, out, *case_args(case, platform))
    assert tree_bytes(tmp_path / "src") == before, "the input changed"
    assert summary["written"] is True and summary["ok"] is True

    doc = json.loads((out / "kv_scales.json").read_text())
    assert doc["schema"] == "kvscale.scales/1"
    assert doc["platform"] == platform
    kv_used = doc["kv_cache_dtype"]
    md = case.model_dtype
    src_report = report(src, kv_used, platform, md)
    assert doc["engine_path"] == src_report.engine_path.value

    # kv_scales.safetensors holds the device values; kv_scales.json the host values (max).
    device = load_file(str(out / "kv_scales.safetensors"))
    assert set(device) == {f"{layer.name}.{k}" for layer in src_report.layers for k in KINDS}
    for layer in src_report.layers:
        entry = doc["layers"][layer.name]
        assert entry["rule"] == layer.rule.value
        for kind in KINDS:
            expected = layer.value(kind)
            tensor = device[f"{layer.name}.{kind}"]
            assert tensor.dtype == torch.float32
            if isinstance(expected, tuple):
                assert tuple(tensor.shape) == (len(expected),)
                assert tuple(tensor.tolist()) == expected
                assert entry["per_head"][kind] == list(expected)
                assert entry[kind] == float(tensor.max())
            else:
                assert tuple(tensor.shape) == ()
                assert tensor.item() == expected
                assert entry[kind] == expected

    # The normalized copy: the engine sees the same values, every layer explicit.
    copy = out / "checkpoint"
    base = src_report.engine_path is EnginePath.BASE
    for engine_platform in ("ocp", "fnuz"):
        for kv in {kv_used, case.kv_cache_dtype}:
            a = report(src, kv, engine_platform, md)
            b = report(copy, kv, engine_platform, md)
            assert [x.name for x in a.layers] == [x.name for x in b.layers]
            fp8 = report(src, kv_used, engine_platform, md)
            for la, lb, lf in zip(a.layers, b.layers, fp8.layers, strict=True):
                if kv == kv_used:
                    assert lb.rule in (Rule.SEPARATE, Rule.PER_HEAD), (lb.name, lb.rule)
                if base and lf.rule is Rule.DEFAULT and la.rule is Rule.DEFAULT:
                    if engine_platform != platform:
                        # Documented: the copy is exact on the platform it was written for.
                        expected_kv = 2.0 if engine_platform == "fnuz" else 0.5
                        assert (lb.k_scale, lb.v_scale) == (expected_kv, expected_kv)
                        assert same(values(la)[2:], values(lb)[2:])
                        continue
                assert same(values(la), values(lb)), (engine_platform, kv, la, lb)
    copy_report = report(copy, kv_used, platform, md)
    fixable = {"precision-lost", "legacy-kv-scale", "scale-missing", "duplicate-scale-source"}
    assert not {p.code for p in copy_report.problems} & fixable
    assert not copy_report.errors, copy_report.errors

    # Untouched tensors and files are byte-identical; new names map back to their layer.
    removed = {(r["file"], r["tensor"]) for r in summary["checkpoint_changes"]["removed"]}
    added = {(r["file"], r["tensor"]) for r in summary["checkpoint_changes"]["added"]}
    root = Path(src_report.root)
    for shard in src_report.files:
        old = tensor_bytes(root / shard)
        new = tensor_bytes(copy / shard)
        kept = {n for n in old if (shard, n) not in removed}
        assert set(new) == kept | {n for s, n in added if s == shard}
        for name in kept:
            assert new[name] == old[name], name
        if not any(s == shard for s, _ in removed | added):
            assert (copy / shard).read_bytes() == (root / shard).read_bytes()
        load_file(str(copy / shard))  # the reference reader accepts it
        header = read_header(copy / shard)
        assert header.data_start % 8 == 0
        for info in header.tensors.values():
            assert info.start % dtype_alignment(info.dtype) == 0, info
        original = read_header(root / shard).metadata
        if (copy / shard).read_bytes() == (root / shard).read_bytes():
            assert header.metadata == original
        else:  # a rewritten shard keeps its metadata and carries normalize's mark
            assert header.metadata == {**(original or {}), NORMALIZED_MARK: "1"}
    for _shard, name in added:
        mapped = map_name(name, src_report.quant_method)
        assert mapped.layer is not None and mapped.kind in KINDS
    copied = {
        rel: data
        for rel, data in tree_bytes(copy).items()
        if rel not in src_report.files and rel != "model.safetensors.index.json"
    }
    if src_report.layout == "file":
        expected_other = {"config.json": (root / "config.json").read_bytes()}
    else:
        expected_other = {
            rel: data
            for rel, data in tree_bytes(root).items()
            if rel not in src_report.files and rel != "model.safetensors.index.json"
        }
    assert copied == expected_other


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_idempotent_and_deterministic(tmp_path: Path, case: Case) -> None:
    src = case.build(tmp_path / "src")
    args = case_args(case, "ocp")
    normalize_cli(src, tmp_path / "one", *args)
    normalize_cli(src, tmp_path / "two", *args)
    assert tree_bytes(tmp_path / "one") == tree_bytes(tmp_path / "two")
    normalize_cli(tmp_path / "one" / "checkpoint", tmp_path / "again", *args)
    assert tree_bytes(tmp_path / "again" / "checkpoint") == tree_bytes(
        tmp_path / "one" / "checkpoint"
    )
    assert (tmp_path / "again" / "kv_scales.safetensors").read_bytes() == (
        tmp_path / "one" / "kv_scales.safetensors"
    ).read_bytes()


def test_idempotent_fnuz_copy(tmp_path: Path) -> None:
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    args = ("--checkpoint", "--platform", "fnuz")
    normalize_cli(src, tmp_path / "one", *args)
    normalize_cli(tmp_path / "one" / "checkpoint", tmp_path / "two", *args)
    one, two = tree_bytes(tmp_path / "one"), tree_bytes(tmp_path / "two")
    assert {k: v for k, v in one.items() if k != "kv_scales.json"} == {
        k: v for k, v in two.items() if k != "kv_scales.json"
    }


def _names(path: Path) -> dict[str, tuple[str, tuple[int, ...], bytes]]:
    out: dict[str, tuple[str, tuple[int, ...], bytes]] = {}
    for f in sorted(path.glob("*.safetensors")):
        out.update(tensor_bytes(f))
    return out


def _f32(data: bytes) -> list[float]:
    import struct

    return list(struct.unpack(f"<{len(data) // 4}f", data))


def test_default_layers_ocp_vs_fnuz(tmp_path: Path) -> None:
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    ocp = normalize_cli(src, tmp_path / "ocp", "--checkpoint")
    fnuz = normalize_cli(src, tmp_path / "fnuz", "--checkpoint", "--platform", "fnuz")
    p3 = P.format(3)
    ocp_t = _names(tmp_path / "ocp" / "checkpoint")
    fnuz_t = _names(tmp_path / "fnuz" / "checkpoint")
    assert _f32(ocp_t[f"{p3}.k_scale"][2]) == [1.0]
    assert _f32(fnuz_t[f"{p3}.k_scale"][2]) == [0.5]
    assert _f32(fnuz_t[f"{p3}.v_scale"][2]) == [0.5]
    assert "default-made-explicit" in {w["code"] for w in ocp["warnings"]}
    assert "fnuz-specific-copy" in {w["code"] for w in fnuz["warnings"]}
    # Other layers hold the OCP value in both copies (fnuz doubles it on load).
    p0 = P.format(0)
    assert _f32(ocp_t[f"{p0}.k_scale"][2]) == _f32(fnuz_t[f"{p0}.k_scale"][2]) == [0.30078125]
    # kv_scales hold the platform's device values.
    assert (
        load_file(str(tmp_path / "fnuz" / "kv_scales.safetensors"))[f"{p0}.attn.k_scale"].item()
        == 0.6015625
    )
    assert (
        load_file(str(tmp_path / "fnuz" / "kv_scales.safetensors"))[f"{p3}.attn.k_scale"].item()
        == 1.0
    )


def test_modelopt_prob_keeps_canonical_name(tmp_path: Path) -> None:
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    names = _names(tmp_path / "out" / "checkpoint")
    p0 = P.format(0)
    assert f"{p0}.attn.prob_scale" in names
    assert f"{p0}.prob_output_scale" not in names
    assert f"{p0}.k_proj.k_scale" not in names and f"{p0}.k_scale" in names
    # No q in the source: the engine's default stays a default.
    assert f"{p0}.q_scale" not in names
    assert checkpoint_name(p0, "prob_scale", "modelopt") == f"{p0}.attn.prob_scale"
    assert checkpoint_name(p0, "prob_scale", "quark") == f"{p0}.prob_output_scale"
    assert checkpoint_name(p0, "prob_scale", "fp8") == f"{p0}.prob_output_scale"
    assert checkpoint_name(p0, "q_scale", "compressed-tensors") == f"{p0}.q_scale"
    mixer = "backbone.layers.1.mixer"
    assert checkpoint_name(mixer, "prob_scale", "quark") == f"{mixer}.attn.prob_scale"
    assert checkpoint_name(mixer, "k_scale", "modelopt") == f"{mixer}.k_scale"


def test_quark_names_and_unused_q(tmp_path: Path) -> None:
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    names = _names(tmp_path / "out" / "checkpoint")
    p0, p1 = P.format(0), P.format(1)
    assert _f32(names[f"{p0}.prob_output_scale"][2]) == [0.0625]
    assert _f32(names[f"{p0}.q_scale"][2]) == [0.125]
    assert f"{p1}.q_scale" not in names  # -1.0 in the source: unused, so left to the default
    assert not [n for n in names if n.endswith("output_scale") and "_proj" in n]
    for n, (dtype, shape, _) in names.items():
        if n.endswith(("_scale", "prob_output_scale")):
            assert dtype == "F32" and shape == ()


def test_fp8_zero_q_is_omitted(tmp_path: Path) -> None:
    src = CASES_BY_NAME["fp8-fused-qkv"].build(tmp_path / "src")
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    names = _names(tmp_path / "out" / "checkpoint")
    p0, p1 = P.format(0), P.format(1)
    assert f"{p1}.q_scale" not in names
    assert _f32(names[f"{p0}.q_scale"][2]) == [0.10009765625]  # bf16 value of 0.1
    assert _f32(names[f"{p0}.prob_output_scale"][2]) == [0.02001953125]


def test_compressed_tensors_values_and_zero_points(tmp_path: Path) -> None:
    src = CASES_BY_NAME["ct-tensor"].build(tmp_path / "src")
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    old = tensor_bytes(src / "model.safetensors")
    names = _names(tmp_path / "out" / "checkpoint")
    p0, p1, p2 = P.format(0), P.format(1), P.format(2)
    assert names[f"{p0}.k_scale"][2] == old[f"{p0}.k_scale"][2]  # float32 as is, no rounding
    assert names[f"{p0}.k_zero_point"] == old[f"{p0}.k_zero_point"]  # zero points kept
    assert names[f"{p0}.q_scale"][1] == ()  # [1] in the source, [] in the copy
    assert _f32(names[f"{p1}.v_scale"][2]) == [1.0]  # partial: explicit 1.0
    assert _f32(names[f"{p2}.k_scale"][2]) == [1.0]  # default: explicit 1.0
    assert f"{p2}.q_scale" not in names and f"{p2}.prob_output_scale" not in names


def test_attn_head_layout(tmp_path: Path) -> None:
    src = CASES_BY_NAME["ct-attn-head"].build(tmp_path / "src")
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    names = _names(tmp_path / "out" / "checkpoint")
    p0, p1 = P.format(0), P.format(1)
    assert names[f"{p0}.k_scale"][1] == (2, 1, 1)
    assert names[f"{p0}.q_scale"][1] == (4, 1, 1)
    q = _f32(names[f"{p0}.q_scale"][2])
    f32 = [float(torch.tensor(x, dtype=torch.float32)) for x in (0.04, 0.03)]
    assert q == [f32[0], f32[0], f32[1], f32[1]]  # each GQA group's max on its heads
    assert _f32(names[f"{p1}.v_scale"][2]) == [1.0, 1.0]
    doc = json.loads((tmp_path / "out" / "kv_scales.json").read_text())
    entry = doc["layers"][f"{p0}.attn"]
    assert entry["per_head"]["q_scale"] == f32
    assert entry["q_scale"] == f32[0]
    assert entry["k_scale"] == max(entry["per_head"]["k_scale"])


def test_unquantized_dtype_is_promoted(tmp_path: Path) -> None:
    src = CASES_BY_NAME["fp8-legacy-kv-scale"].build(tmp_path / "src")
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint")
    assert summary["kv_cache_dtype"] == "fp8"
    assert summary["kv_cache_dtype_effective"] == "auto"
    assert "kv-dtype-promoted" in {w["code"] for w in summary["warnings"]}
    doc = json.loads((tmp_path / "out" / "kv_scales.json").read_text())
    assert doc["kv_cache_dtype"] == "fp8"
    entry = doc["layers"][f"{P.format(0)}.attn"]
    assert entry["k_scale"] == entry["v_scale"] == 0.30078125
    assert entry["rule"] == "duplicated"
    names = _names(tmp_path / "out" / "checkpoint")
    assert not [n for n in names if n.endswith("kv_scale")]


def test_no_quant_method_copies_checkpoint_unchanged(tmp_path: Path) -> None:
    src = write_dir(tmp_path / "src", weights(2), llama_config(2, quant=None))
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint")
    assert summary["engine_path"] == "none"
    assert "no-kv-scale-parameters" in {w["code"] for w in summary["warnings"]}
    assert tree_bytes(tmp_path / "out" / "checkpoint") == tree_bytes(src)
    doc = json.loads((tmp_path / "out" / "kv_scales.json").read_text())
    assert all(e["rule"] == "unquantized" and e["k_scale"] == 1.0 for e in doc["layers"].values())
    # A scale name no loader maps makes the engine refuse the layer: exit 1, or --force copies.
    w = weights(2)
    w[f"{P.format(0)}.k_scale"] = t(0.5)
    src2 = write_dir(tmp_path / "src2", w, llama_config(2, quant=None))
    normalize_cli(src2, tmp_path / "out2", "--checkpoint", code=1)
    normalize_cli(src2, tmp_path / "out2", "--checkpoint", "--force")
    assert tree_bytes(tmp_path / "out2" / "checkpoint") == tree_bytes(src2)


def test_sharded_index_and_placement(tmp_path: Path) -> None:
    src = CASES_BY_NAME["sharded-index"].build(tmp_path / "src")
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint")
    copy = tmp_path / "out" / "checkpoint"
    index = json.loads((copy / "model.safetensors.index.json").read_text())
    weight_map = index["weight_map"]
    # Layer 0's scales were in shard 3: the new ones go there; layer 1's in shard 2; layer 2 had
    # none: its attention weights are in shard 1.
    assert weight_map[f"{P.format(0)}.k_scale"] == "model-00003-of-00003.safetensors"
    assert weight_map[f"{P.format(1)}.k_scale"] == "model-00002-of-00003.safetensors"
    assert weight_map[f"{P.format(2)}.v_scale"] == "model-00001-of-00003.safetensors"
    assert f"{P.format(1)}.k_proj.k_scale" not in weight_map
    total = 0
    for shard in sorted(set(weight_map.values())):
        total += sum(info.nbytes for info in read_header(copy / shard).tensors.values())
    assert index["metadata"]["total_size"] == total
    for name, shard in weight_map.items():
        assert name in read_header(copy / shard).tensors
    assert (copy / "unindexed.safetensors").read_bytes() == b"not even a safetensors file"
    assert (copy / "original" / "params.json").read_bytes() == b'{"dim": 8}'
    actions = {f["path"]: f["action"] for f in summary["files"]}
    assert actions["checkpoint/model-00002-of-00003.safetensors"] == "rewritten"
    assert actions["checkpoint/model.safetensors.index.json"] == "generated"
    assert actions["checkpoint/tokenizer.json"] == "copied"
    for f in summary["files"]:
        if f["action"] == "generated":
            assert (
                f["sha256"]
                == hashlib.sha256((tmp_path / "out" / f["path"]).read_bytes()).hexdigest()
            )


def test_digests_and_summary(tmp_path: Path) -> None:
    src = CASES_BY_NAME["sharded-index"].build(tmp_path / "src")
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint", "--digests")
    assert summary["schema"] == "kvscale.normalize/1"
    on_disk = tree_bytes(tmp_path / "out")
    assert {f["path"] for f in summary["files"]} == set(on_disk)
    for f in summary["files"]:
        data = on_disk[f["path"]]
        assert f["bytes"] == len(data)
        assert f["sha256"] == hashlib.sha256(data).hexdigest()
    assert summary["bytes"] == sum(len(d) for d in on_disk.values())


def test_without_checkpoint_writes_only_scales(tmp_path: Path) -> None:
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    result = invoke(str(src), "--out", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path / "out")) == [
        MANIFEST_NAME,
        "kv_scales.json",
        "kv_scales.safetensors",
    ]
    assert "kv_scales.safetensors" in result.stdout


def test_hostile_layer_name(tmp_path: Path) -> None:
    bad = "model.layers.0\x1b[31m.self_attn"
    w = {f"{bad}.k_scale": t(0.5), f"{bad}.v_scale": t(0.5)}
    src = write_dir(tmp_path / "src", w, llama_config(1, quant=qc("compressed-tensors")))
    result = invoke(str(src), "--out", str(tmp_path / "out"), "--checkpoint")
    assert result.exit_code == 1
    assert "\x1b" not in result.stderr + result.stdout
    assert "unsafe-tensor-name" in result.stderr
    assert not (tmp_path / "out").exists()
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint", "--force")
    assert summary["layers"]["skipped"][0]["name"] == bad + ".attn"
    copy = tensor_bytes(tmp_path / "out" / "checkpoint" / "model.safetensors")
    old = tensor_bytes(src / "model.safetensors")
    assert {n: copy[n] for n in w} == old  # left as it was


def _refused_source(tmp_path: Path) -> Path:
    w = weights(2)
    w[f"{P.format(0)}.k_scale"] = t(0.0)  # k = 0 with v > 0: the engine's assert refuses it
    w[f"{P.format(0)}.v_scale"] = t(0.5)
    w[f"{P.format(1)}.k_scale"] = t(0.25)
    w[f"{P.format(1)}.v_scale"] = t(0.5)
    return write_dir(tmp_path / "src", w, llama_config(2, quant=qc("fp8")))


def test_refused_layer_writes_nothing(tmp_path: Path) -> None:
    src = _refused_source(tmp_path)
    before = sorted(os.listdir(tmp_path))
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint", code=1)
    assert summary["written"] is False and summary["ok"] is False
    assert summary["files"] == []
    assert summary["problems"][0]["code"] == "layer-refused"
    assert sorted(os.listdir(tmp_path)) == before  # no output, no staging directory
    result = invoke(str(src), "--out", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "nothing written" in result.stderr
    with pytest.raises(RefusedError, match="AssertionError"):
        normalize_checkpoint(src, tmp_path / "out", NormalizeOptions(checkpoint=True))


def test_force_keeps_refused_layer(tmp_path: Path) -> None:
    src = _refused_source(tmp_path)
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint", "--force")
    assert [s["name"] for s in summary["layers"]["skipped"]] == [f"{P.format(0)}.attn"]
    copy = tensor_bytes(tmp_path / "out" / "checkpoint" / "model.safetensors")
    old = tensor_bytes(src / "model.safetensors")
    assert copy[f"{P.format(0)}.k_scale"] == old[f"{P.format(0)}.k_scale"]
    assert _f32(copy[f"{P.format(1)}.k_scale"][2]) == [0.25]
    doc = json.loads((tmp_path / "out" / "kv_scales.json").read_text())
    assert doc["layers"][f"{P.format(0)}.attn"]["k_scale"] is None
    assert "skipped" in doc["layers"][f"{P.format(0)}.attn"]
    device = load_file(str(tmp_path / "out" / "kv_scales.safetensors"))
    assert f"{P.format(0)}.attn.k_scale" not in device


@pytest.mark.parametrize("bad", [float("nan"), -0.5, 0.0, float("inf")])
def test_invalid_values_compressed_tensors(tmp_path: Path, bad: float) -> None:
    w = weights(1)
    w[f"{P.format(0)}.k_scale"] = t(bad)
    w[f"{P.format(0)}.v_scale"] = t(0.5)
    src = write_dir(tmp_path / "src", w, llama_config(1, quant=qc("compressed-tensors")))
    summary = normalize_cli(src, tmp_path / "out", code=1)
    assert summary["problems"][0]["code"] == "invalid-scale-value"
    assert not (tmp_path / "out").exists()


def test_existing_output_needs_force(tmp_path: Path) -> None:
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    out = tmp_path / "out"
    normalize_cli(src, out)
    result = invoke(str(src), "--out", str(out))
    assert result.exit_code == 2
    assert "already exists" in result.stderr and "--force" in result.stderr
    summary = normalize_cli(src, out, "--checkpoint", "--force")
    assert summary["replaced"] is True
    assert (out / "checkpoint").is_dir()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_force_refuses_an_output_with_a_file_added(tmp_path: Path) -> None:
    """--force replaces only what kvscale wrote: one file more, and nothing is touched."""
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    out = tmp_path / "out"
    normalize_cli(src, out)
    (out / "notes.txt").write_text("mine")
    before = tree_bytes(out)
    result = invoke(str(src), "--out", str(out), "--force")
    assert result.exit_code == 2
    assert "not an untouched kvscale output" in result.stderr
    assert tree_bytes(out) == before


def test_force_refuses_foreign_directory(tmp_path: Path) -> None:
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    home = tmp_path / "precious"
    home.mkdir()
    (home / "thesis.tex").write_text("irreplaceable")
    result = invoke(str(src), "--out", str(home), "--force")
    assert result.exit_code == 2
    assert "not an untouched kvscale output" in result.stderr
    assert (home / "thesis.tex").read_text() == "irreplaceable"


def test_empty_existing_directory_is_used(tmp_path: Path) -> None:
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    (tmp_path / "out").mkdir()
    normalize_cli(src, tmp_path / "out")
    assert (tmp_path / "out" / "kv_scales.json").is_file()


def test_out_inside_input_and_input_inside_out(tmp_path: Path) -> None:
    src = CASES_BY_NAME["sharded-index"].build(tmp_path / "src")
    for out in (src / "normalized", src, src / "original" / "x"):
        result = invoke(str(src), "--out", str(out))
        assert result.exit_code == 2, (out, result.output)
        assert "inside" in result.stderr
    result = invoke(str(src), "--out", str(tmp_path), "--force")
    assert result.exit_code == 2
    # A symlink that leads into the input is resolved.
    (tmp_path / "link").symlink_to(src)
    result = invoke(str(src), "--out", str(tmp_path / "link" / "sub"))
    assert result.exit_code == 2 and "inside" in result.stderr
    # An HF cache: the blobs are protected too.
    repo = CASES_BY_NAME["hf-cache"].build(tmp_path / "hf")
    result = invoke(str(repo), "--out", str(repo / "blobs" / "out"))
    assert result.exit_code == 2
    with pytest.raises(UsageError):
        plan_normalize(src, src / "x")


def test_single_file_output_next_to_it(tmp_path: Path) -> None:
    src = CASES_BY_NAME["single-file"].build(tmp_path / "src")
    normalize_cli(src, src.parent / "normalized", "--checkpoint")
    copy = src.parent / "normalized" / "checkpoint"
    assert sorted(os.listdir(copy)) == ["config.json", "model.safetensors"]
    result = invoke(str(src), "--out", str(src))
    assert result.exit_code == 2


def test_missing_input_and_parent(tmp_path: Path) -> None:
    result = invoke(str(tmp_path / "nope"), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2 and result.stderr.startswith("kvscale: error: ")
    src = CASES_BY_NAME["quark"].build(tmp_path / "src")
    result = invoke(str(src), "--out", str(tmp_path / "no" / "such" / "out"))
    assert result.exit_code == 2 and "parent directory" in result.stderr
    (tmp_path / "file").write_text("x")
    result = invoke(str(src), "--out", str(tmp_path / "file"))
    assert result.exit_code == 2


def test_read_only_input(tmp_path: Path) -> None:
    src = CASES_BY_NAME["sharded-index"].build(tmp_path / "src")
    before = tree_bytes(src)
    modes = {}
    for dirpath, dirs, files in os.walk(src):
        for name in files + dirs:
            p = Path(dirpath) / name
            modes[p] = p.stat().st_mode
    try:
        for p in sorted(modes, key=lambda p: -len(p.parts)):
            p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
        src.chmod(0o555)
        normalize_cli(src, tmp_path / "out", "--checkpoint")
    finally:
        src.chmod(0o755)
        for p, mode in modes.items():
            p.chmod(stat.S_IMODE(mode))
    assert tree_bytes(src) == before
    # Copies are never more permissive than their source: a read-only file stays read-only.
    copy_mode = (tmp_path / "out" / "checkpoint" / "tokenizer.json").stat().st_mode
    assert stat.S_IMODE(copy_mode) == stat.S_IMODE(modes[src / "tokenizer.json"]) & ~0o222


def test_human_output(tmp_path: Path) -> None:
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    result = invoke(str(src), "--out", str(tmp_path / "out"), "--checkpoint")
    assert result.exit_code == 0, result.output
    assert "wrote" in result.stdout and "checkpoint/" in result.stdout
    assert "default-made-explicit" in result.stderr
    assert result.stdout.startswith("KV-cache scales written for ")


def test_help_mentions_exit_codes() -> None:
    result = runner.invoke(app, ["normalize", "--help"])
    assert result.exit_code == 0
    assert "--checkpoint" in result.stdout and "Exit codes" in result.stdout


def test_duplicate_sources_all_removed(tmp_path: Path) -> None:
    src = CASES_BY_NAME["duplicate-across-shards"].build(tmp_path / "src")
    summary = normalize_cli(src, tmp_path / "out", "--checkpoint", "--kv-cache-dtype", "fp8")
    removed = {(r["file"], r["tensor"]) for r in summary["checkpoint_changes"]["removed"]}
    k = f"{P.format(0)}.k_scale"
    assert {("a-extra.safetensors", k), ("z-extra.safetensors", k)} <= removed
    copy = tmp_path / "out" / "checkpoint"
    assert tensor_bytes(copy / "a-extra.safetensors") == {}
    assert _f32(tensor_bytes(copy / "z-extra.safetensors")[k][2]) == [0.5]
    rep = report(copy, "fp8", "ocp")
    assert not [p for p in rep.problems if p.code == "duplicate-scale-source"]


def test_float32_inputs_round_to_model_dtype(tmp_path: Path) -> None:
    """The engine rounds the source's float32 scales to bf16; the copy holds exact values."""
    src = CASES_BY_NAME["modelopt"].build(tmp_path / "src")
    rep = report(src, "auto", "ocp")
    assert rep.rounding is not None and rep.rounding.values > 0
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    rep2 = report(tmp_path / "out" / "checkpoint", "auto", "ocp")
    assert rep2.rounding is None
    assert "precision-lost" not in {p.code for p in rep2.problems}
    for layer in rep2.layers:
        for v in values(layer):
            assert not isinstance(v, float) or math.isfinite(v)


def test_shadowed_only_shard_keeps_metadata(tmp_path: Path) -> None:
    w = weights(1)
    w[f"{P.format(0)}.k_scale"] = t(0.5)
    w[f"{P.format(0)}.v_scale"] = t(0.25)
    src = write_dir(tmp_path / "src", w, llama_config(1, quant=qc("compressed-tensors")))
    write_safetensors_file(
        src / "a.safetensors", {f"{P.format(0)}.k_scale": t(0.125)}, {"who": "me"}
    )
    normalize_cli(src, tmp_path / "out", "--checkpoint")
    header = read_header(tmp_path / "out" / "checkpoint" / "a.safetensors")
    assert header.metadata == {"who": "me", NORMALIZED_MARK: "1"} and not header.tensors


def test_title_says_nothing_was_written(tmp_path: Path) -> None:
    """A refused run's title does not say "written" (issue 10, defect 5)."""
    result = run_cli("normalize", gemma2_quark_checkpoint(tmp_path), "--out", tmp_path / "s")
    assert result.exit_code == 1
    assert "KV-cache scales written" not in result.stdout
    assert "KV-cache scales normalize would write" in result.stdout
    assert "nothing written" in result.stdout


def test_layers_kept_unquantized_keep_their_calibrated_scales(tmp_path: Path) -> None:
    """A skipped layer ignores k/v (vLLM: auto, 1.0): the copy must not overwrite its calibrated
    scales with that 1.0, or serving without the skip list would lose them."""
    src = EXAMPLES / "modelopt-fp8"
    plain = report(src, "fp8_e4m3", "ocp")
    summary = normalize_cli(
        src, tmp_path / "out", "--checkpoint", "--kv-cache-dtype-skip-layers", "0,2"
    )
    warnings = {w["code"]: w["message"] for w in summary["warnings"]}
    assert (
        "2 layers (model.layers.0.self_attn.attn, model.layers.2.self_attn.attn) keep an "
        "unquantized cache" in warnings["kv-dtype-promoted"]
    )
    doc = json.loads((tmp_path / "out" / "kv_scales.json").read_text())
    for layer in plain.layers:
        entry = doc["layers"][layer.name]
        assert (entry["k_scale"], entry["v_scale"]) == (layer.k_scale, layer.v_scale)
        assert layer.k_scale != 1.0
    # served without the skip list, the copy loads to the original's values
    copy = report(tmp_path / "out" / "checkpoint", "fp8_e4m3", "ocp")
    assert [(x.k_scale, x.v_scale) for x in copy.layers] == [
        (x.k_scale, x.v_scale) for x in plain.layers
    ]


def test_self_scaled_dtype_says_normalizing_changes_nothing(tmp_path: Path) -> None:
    src = EXAMPLES / "modelopt-fp8"
    summary = normalize_cli(
        src, tmp_path / "out", "--checkpoint", "--kv-cache-dtype", "int8_per_token_head"
    )
    message = {w["code"]: w["message"] for w in summary["warnings"]}["kv-dtype-promoted"]
    assert message.startswith(
        "--kv-cache-dtype int8_per_token_head (INT8 with an fp32 scale per token and head, "
        "computed at write time) computes its scales when K/V are written and never reads the "
        "checkpoint's k/v, so normalizing changes nothing the engine serves with it; the values "
        "written are those of --kv-cache-dtype fp8"
    )
    assert summary["kv_cache_dtype"] == "fp8"
