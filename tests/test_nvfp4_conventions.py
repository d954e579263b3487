"""NVFP4 global-scale conventions (``kvscale/nvfp4_conventions.py``) and where they surface:
inspect's readings and problems, normalize's conversion, the engines' global scale per GPU.

The SGLang x6 is checked against the facts the SGLang parity oracle executed on SGLang 0.5.23's
own ``load_scales_from_model`` for every GPU generation (``tests/parity/sglang_expected.json``).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import ct_config, make_checkpoint_dir
from support.producer_exports import build_checkpoint
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.engine.registry import get_engine
from kvscale.floats import to_float32
from kvscale.nvfp4_conventions import (
    ConventionEvidence,
    EngineGlobalScale,
    GlobalScaleConvention,
    convention_of,
    convert,
    expected_convention,
    parse_convention,
    reading,
    readings,
)

runner = CliRunner()
PARITY = Path(__file__).resolve().parent / "parity"
OLD, NEW = GlobalScaleConvention.AMAX_OVER_2688, GlobalScaleConvention.AMAX_OVER_448


def run(*args: object) -> Any:
    return runner.invoke(app, [str(a) for a in args])


# --- the convention a checkpoint states ----------------------------------------------------------


@pytest.mark.parametrize(
    ("producer", "mark", "expected"),
    [
        ({"name": "modelopt", "version": "0.41.0"}, None, OLD),
        ({"name": "modelopt", "version": "0.42.0"}, None, NEW),
        ({"name": "modelopt", "version": "0.47.0rc1"}, None, NEW),
        ({"name": "modelopt", "version": "v0.39.2"}, None, OLD),
        ({"name": "modelopt", "version": "1.0"}, None, NEW),
        ({"name": "modelopt"}, None, None),
        ({"name": "modelopt", "version": "dev"}, None, None),
        ({"name": "quark", "version": "0.9"}, None, None),
        (None, None, None),
        ({"name": "modelopt", "version": "0.41.0"}, "amax/448", NEW),
        (None, "amax/2688", OLD),
    ],
)
def test_convention_of(
    producer: dict[str, str] | None, mark: str | None, expected: GlobalScaleConvention | None
) -> None:
    qc = {"producer": producer} if producer is not None else {}
    assert convention_of(qc, mark).convention is expected


def test_unknown_convention_says_why() -> None:
    assert convention_of({"producer": {"name": "modelopt"}}).why == (
        "ModelOpt without a version: before or after 0.42"
    )
    assert convention_of(None).why == "no producer or version in the quantization config"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("amax/448", NEW), ("AMAX / 2688", OLD), ("amax/(6*448)", OLD), ("amax/6*448", OLD)],
)
def test_parse_convention(text: str, expected: GlobalScaleConvention) -> None:
    assert parse_convention(text) is expected


def test_parse_convention_refuses_others() -> None:
    with pytest.raises(ValueError, match="amax/448, amax/2688"):
        parse_convention("amax/1000")


# --- readings ------------------------------------------------------------------------------------


def test_reading_block_scale_range() -> None:
    same = EngineGlobalScale("all", 0.5, "unchanged")
    r = reading(NEW, 0.5, same)
    assert (r.implied_amax, r.largest_block_scale, r.state) == (224.0, 224.0 / 3.0, "in-range")
    assert r.zero_block_below == 6 * 0.5 * 2.0**-10
    r = reading(OLD, 0.5, same)
    assert (r.implied_amax, r.largest_block_scale, r.state) == (1344.0, 448.0, "in-range")
    # SGLang's x6 on an amax/448 value: the largest block scale 448 / 36.
    r = reading(NEW, 0.5, EngineGlobalScale("sm100", 3.0, "x6"))
    assert (r.largest_block_scale, r.state) == (224.0 / 18.0, "below-range")
    assert r.zero_block_below == 6 * 3.0 * 2.0**-10
    # A global scale below amax/2688: the largest blocks saturate.
    r = reading(OLD, 0.5, EngineGlobalScale("x", 0.25, "unchanged"))
    assert (r.largest_block_scale, r.state) == (896.0, "saturates")


def test_readings_cover_both_conventions_when_unknown() -> None:
    scales = (EngineGlobalScale("a", 0.5, "unchanged"), EngineGlobalScale("b", 3.0, "x6"))
    known = readings(0.5, ConventionEvidence(NEW, "ModelOpt 0.47.0"), scales)
    assert [(r.convention, r.gpus) for r in known] == [(NEW, "a"), (NEW, "b")]
    unknown = readings(0.5, ConventionEvidence(None, "?"), scales)
    assert [(r.convention, r.gpus) for r in unknown] == [
        (OLD, "a"),
        (OLD, "b"),
        (NEW, "a"),
        (NEW, "b"),
    ]


def test_convert_and_expected_convention() -> None:
    assert convert(0.0234375, OLD, NEW) == 0.140625
    assert convert(0.140625, NEW, OLD) == 0.0234375
    assert convert(0.1, NEW, NEW) == 0.1
    assert convert(0.1, OLD, NEW) == to_float32(0.1 * 6.0)
    assert expected_convention(EngineGlobalScale("sm100", 6.0, "x6")) is OLD
    assert expected_convention(EngineGlobalScale("all", 1.0, "unchanged")) is NEW


# --- the engines' global scale per GPU -----------------------------------------------------------


def _sglang_facts() -> dict[str, Any]:
    doc = json.loads((PARITY / "sglang_expected.json").read_text())
    facts: dict[str, Any] = doc["facts"]["nvfp4_global_scale"]["devices"]
    return facts


@pytest.mark.parametrize("arch", sorted(_sglang_facts()))
def test_sglang_global_scale_is_sglangs_own(arch: str) -> None:
    """For every GPU generation and scenario SGLang's own loader ran on, the engine's global
    scale (``k_scales_float``) equals kvscale's ``nvfp4_global_scales(layer k_scale, arch)``."""
    engine = get_engine("sglang")
    for name, scenario in _sglang_facts()[arch]["scenarios"].items():
        for kind in ("k", "v"):
            value = scenario[f"layer_{kind}_scale"]
            if value is None:
                continue  # no KV method on the layer: the scales stay None (1.0 below)
            (scale,) = engine.nvfp4_global_scales(value, arch)
            assert scale.value == scenario[f"{kind}_scales_float"][0], (arch, name, kind)


def test_sglang_global_scale_without_gpu_arch_gives_both_groups() -> None:
    scales = get_engine("sglang").nvfp4_global_scales(0.0234375, None)
    assert [(s.gpus, s.value, s.how) for s in scales] == [
        ("sm100/sm103", 0.140625, "x6"),
        ("other GPUs", 0.0234375, "unchanged"),
    ]


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_other_engines_use_the_value_unchanged(engine: str) -> None:
    for arch in (None, "sm90", "sm100"):
        (scale,) = get_engine(engine).nvfp4_global_scales(0.0234375, arch)
        assert (scale.value, scale.how) == (0.0234375, "unchanged")


# --- inspect -------------------------------------------------------------------------------------


def _modelopt_nvfp4(root: Path, name: str, version: str | None) -> Path:
    """The ModelOpt FP8 producer export, its KV cache declared NVFP4 (kv_cache_quant_algo), with
    the producer version given or removed."""
    path = build_checkpoint("modelopt-fp8", root / name)
    for file, section in (("hf_quant_config.json", None), ("config.json", "quantization_config")):
        doc = json.loads((path / file).read_text())
        qc = doc if section is None else doc[section]
        if section is None:
            qc["quantization"]["kv_cache_quant_algo"] = "NVFP4"
        else:
            qc["kv_cache_scheme"] = {"dynamic": False, "num_bits": 4, "type": "float"}
        if version is None:
            del qc["producer"]["version"]
        else:
            qc["producer"]["version"] = version
        (path / file).write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(("version", "convention"), [("0.41.0", OLD), ("0.47.0", NEW)])
def test_inspect_reports_the_known_convention(
    tmp_path: Path, version: str, convention: GlobalScaleConvention
) -> None:
    ckpt = _modelopt_nvfp4(tmp_path, "m", version)
    result = run("inspect", ckpt, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["kv_cache_dtype"] == "nvfp4"
    nv = doc["nvfp4"]
    assert (nv["convention"], nv["evidence"]) == (convention.value, f"ModelOpt {version}")
    layer = nv["layers"][0]
    (k,) = layer["k"]
    assert k["engine_scale"] == layer["k_value"]
    assert k["largest_block_scale"] == pytest.approx(2688.0 / 6 if convention is OLD else 448 / 6)
    assert k["state"] == "in-range"
    assert not [p for p in doc["problems"] if p["code"].startswith("nvfp4")]
    human = run("inspect", ckpt)
    assert f"note: NVFP4 global scales are {convention.value} (ModelOpt {version})" in (
        human.stdout
    )


def test_inspect_unknown_convention_is_info_with_both_readings(tmp_path: Path) -> None:
    ckpt = _modelopt_nvfp4(tmp_path, "m", None)
    result = run("inspect", ckpt, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["nvfp4"]["convention"] is None
    tops = [r["largest_block_scale"] for r in doc["nvfp4"]["layers"][0]["k"]]
    assert tops == pytest.approx([448.0, 448.0 / 6])
    (info,) = [p for p in doc["problems"] if p["code"] == "nvfp4-convention-unknown"]
    assert info["severity"] == "info" and not info["fails"]


def _marked(tmp_path: Path, convention: str) -> Path:
    """A compressed-tensors checkpoint whose values kvscale marked with a convention (normalize
    --nvfp4-convention writes the mark)."""
    src = make_checkpoint_dir(tmp_path, "src", layers=2, config=ct_config(2, hidden_size=256))
    out = tmp_path / "out"
    result = run(
        "normalize", src, "--out", out, "--checkpoint", "--kv-cache-dtype", "nvfp4",
        "--nvfp4-convention", convention, "--nvfp4-convention-from", convention,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return out / "checkpoint"


def test_sglang_sm100_x6_on_amax_over_448_is_out_of_range(tmp_path: Path) -> None:
    ckpt = _marked(tmp_path, "amax/448")
    args = ["inspect", ckpt, "--engine", "sglang", "--kv-cache-dtype", "nvfp4", "--json"]
    doc = json.loads(run(*args, "--gpu-arch", "sm100").stdout)
    assert doc["nvfp4"]["convention"] == "amax/448"
    (warning,) = [p for p in doc["problems"] if p["code"] == "nvfp4-block-scales-out-of-range"]
    assert warning["severity"] == "warning"
    assert "sglang 0.5.23 on sm100: 4 of 4 NVFP4 k/v global scales" in warning["message"]
    assert "the largest block scale is 12.44, below the 74.7" in warning["message"]
    # The same checkpoint on SM90 (no x6), and an amax/2688 one on SM100: in range.
    for gpu, conv in (("sm90", "amax/448"), ("sm100", "amax/2688")):
        other = _marked(tmp_path / conv.replace("/", "_") / gpu, conv)
        doc = json.loads(run("inspect", other, *args[2:], "--gpu-arch", gpu).stdout)
        assert not [p for p in doc["problems"] if p["code"].startswith("nvfp4")], (gpu, conv)


# --- normalize --nvfp4-convention ----------------------------------------------------------------


def test_normalize_converts_old_to_new_and_marks_the_copy(tmp_path: Path) -> None:
    src = _modelopt_nvfp4(tmp_path, "old", "0.41.0")
    before = json.loads(run("inspect", src, "--json").stdout)
    out = tmp_path / "out"
    result = run(
        "normalize", src, "--out", out, "--checkpoint", "--nvfp4-convention", "amax/448",
        "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["nvfp4_conversion"] == {
        "from": "amax/2688",
        "from_why": "ModelOpt 0.41.0",
        "to": "amax/448",
        "to_why": "--nvfp4-convention",
        "layers": 2,
    }
    after = json.loads(run("inspect", out / "checkpoint", "--json").stdout)
    assert after["nvfp4"]["convention"] == "amax/448"
    assert after["nvfp4"]["evidence"] == "kvscale wrote them (shard metadata)"
    # The engine holds bf16 values (vLLM rounds them to the model dtype): x6 of the float32
    # source, then that rounding.
    from kvscale.floats import float32_to_bfloat16

    for b, a in zip(before["layers"], after["layers"], strict=True):
        for kind in ("k_scale", "v_scale"):
            source = b["checkpoint"][kind]["value"]
            assert a[kind] == float32_to_bfloat16(to_float32(source * 6.0)), (a["name"], kind)
            assert a[kind] != b[kind]


def test_normalize_to_engine_convention_needs_the_gpu_where_it_matters(tmp_path: Path) -> None:
    src = make_checkpoint_dir(tmp_path, "src", layers=2, config=ct_config(2, hidden_size=256))
    base = ["normalize", src, "--engine", "sglang", "--kv-cache-dtype", "nvfp4"]
    result = run(*base, "--out", tmp_path / "a", "--nvfp4-convention", "engine",
                 "--nvfp4-convention-from", "amax/448")  # fmt: skip
    assert result.exit_code == 2 and not (tmp_path / "a").exists()
    assert "reads NVFP4 global scales differently per GPU (sm100/sm103: x6" in result.stderr
    convert = ["--nvfp4-convention", "engine", "--nvfp4-convention-from", "amax/448"]
    result = run(*base, "--out", tmp_path / "b", *convert, "--gpu-arch", "sm100", "--json")
    assert result.exit_code == 0, result.stderr
    conv = json.loads(result.stdout)["nvfp4_conversion"]
    assert (conv["from"], conv["to"]) == ("amax/448", "amax/2688")
    assert conv["to_why"] == "what sglang 0.5.23 turns into amax/448 on sm100"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--nvfp4-convention", "amax/448"], "cannot be known (no producer or version"),
        (["--nvfp4-convention-from", "amax/448"], "--nvfp4-convention-from needs"),
        (["--nvfp4-convention", "amax/9"], "--nvfp4-convention 'amax/9' is not a convention"),
        (
            ["--nvfp4-convention", "amax/448", "--nvfp4-convention-from", "x"],
            "--nvfp4-convention-from 'x' is not a convention",
        ),
    ],
)
def test_normalize_convention_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    src = make_checkpoint_dir(tmp_path, "src", layers=2, config=ct_config(2, hidden_size=256))
    result = run("normalize", src, "--out", tmp_path / "o", "--kv-cache-dtype", "nvfp4", *args)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_normalize_convention_needs_an_nvfp4_cache(tmp_path: Path) -> None:
    src = make_checkpoint_dir(tmp_path, "src", layers=2, config=ct_config(2, hidden_size=256))
    result = run("normalize", src, "--out", tmp_path / "o", "--nvfp4-convention", "amax/448",
                 "--nvfp4-convention-from", "amax/2688")  # fmt: skip
    assert result.exit_code == 2
    assert "no layer of" in result.stderr and "pass --kv-cache-dtype nvfp4" in result.stderr
    shutil.rmtree(tmp_path / "src")
