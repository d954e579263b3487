"""Parity with vLLM 0.33.0 beyond Llama: kvscale's rules against the engine's own loaders.

tests/parity/vllm_arch_oracle.py executes vLLM's loading code (MLA, hybrids, MoE, multimodal
wrappers, KV sharing, sinks) on every checkpoint of tests/parity/arch_cases.py and records,
per attention layer, the four device values or the refusal, the KV-cache dtype, which
checkpoint tensor reached which parameter, and vLLM's warnings
(tests/parity/vllm_arch_expected.json). For every case this test writes the same checkpoint
(once per session), resolves it with ``resolve_checkpoint`` under the case's options, and
requires, per layer:

* the layer names and their order (vLLM's forward-context names, e.g. DeepSeek's
  ``model.layers.0.self_attn.attn``, Jamba's ``model.layers.1.attn``);
* a refusal exactly where vLLM refuses, kvscale's message starting with vLLM's own exception;
  otherwise the four values exactly (their JSON encoding);
* the layer's KV-cache dtype (MLA keeps ``auto`` under compressed-tensors; V3.2's sparse
  backends serve ``fp8_ds_mla``);
* each tensor vLLM loads is a source of that kind; each it drops or refuses is reported
  unplaced, under the name vLLM's warning quotes, with vLLM's exception for the refusing one.

The rest pins facts the rules are written against (the report of the oracle cites these
cases), and, with KVSCALE_VLLM_SRC set (slow), re-runs the oracle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.modules import load_module

from kvscale.core.inspect import ScaleReport, resolve_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.io.inputs import open_input
from kvscale.problems import Severity

PARITY = Path(__file__).resolve().parent
GOLDEN = PARITY / "vllm_arch_expected.json"
CLASSES = PARITY / "vllm_arch_classes.json"
ORACLE = PARITY / "vllm_arch_oracle.py"
VALUE_FIELDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
VOLATILE_PROVENANCE = ("torch_version", "python_version", "device", "regex_module")


CASES = load_module("kvscale_parity_arch_cases", PARITY / "arch_cases.py")
WRITER = sys.modules["kvscale_parity_cases"]
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
CLASSES_DOC: dict[str, Any] = json.loads(CLASSES.read_text())
NAMES = [c["name"] for c in CASES.CASES]


def _enc(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _layer(case: str, index: int = 0) -> dict[str, Any]:
    layers: list[dict[str, Any]] = DOC["cases"][case]["layers"]
    return layers[index]


def options_for(case: dict[str, Any]) -> EngineOptions:
    """The case's engine options as kvscale's: the oracle fixes the MLA backend (FLASHMLA,
    or FLASHMLA_SPARSE for V3.2-style sparse models; ROCm's model takes its own) and the
    device family (SM90 unless the case says SM10x)."""
    opts = case["options"]
    config = case["config"]
    text = config.get("text_config") or {}
    mla = "kv_lora_rank" in config or "kv_lora_rank" in text
    backend = None
    if mla and opts["platform"] == "ocp":
        sparse = "index_topk" in config or "index_topk" in text
        backend = (
            opts.get("mla_sparse_backend", "FLASHMLA_SPARSE")
            if sparse
            else opts.get("mla_backend", "FLASHMLA")
        ).lower()
    return EngineOptions(
        kv_cache_dtype=opts["kv_cache_dtype"],
        platform=opts["platform"],
        model_dtype=opts["model_dtype"],
        attention_backend=backend,
        gpu_arch=f"sm{opts.get('device_family', '90')}",
    )


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every case's checkpoint, written once."""
    root = tmp_path_factory.mktemp("arch-cases")
    for case in CASES.CASES:
        WRITER.write_case(case, root / case["name"])
    return root


@pytest.fixture
def mla_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv("VLLM_MLA_DISABLE", raising=False)
    yield monkeypatch


def resolve(written: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ScaleReport:
    case = CASES.CASES_BY_NAME[name]
    if case["options"].get("mla_disable"):
        monkeypatch.setenv("VLLM_MLA_DISABLE", case["options"]["mla_disable"])
    return resolve_checkpoint(open_input(str(written / name)), options_for(case))


# --- kvscale against vLLM, case by case ---------------------------------------------------


GROUPS = sorted({c["group"] for c in CASES.CASES})


@pytest.mark.parametrize("group", GROUPS)
def test_kvscale_matches_vllm(group: str, written: Path, mla_env: pytest.MonkeyPatch) -> None:
    """Every case of one group of the catalogue (one test per group keeps the 555 cases at a
    few seconds; the message names each case that differs, and how)."""
    failures: list[str] = []
    for case in CASES.CASES:
        if case["group"] != group:
            continue
        mla_env.delenv("VLLM_MLA_DISABLE", raising=False)
        mismatches = compare(case["name"], resolve(written, case["name"], mla_env))
        if mismatches:
            failures.append(f"{case['name']}: {case['description']}\n  " + "\n  ".join(mismatches))
    assert not failures, "\n".join(failures)


def compare(name: str, report: ScaleReport) -> list[str]:
    """How kvscale's report differs from what vLLM's loaders did (empty: nothing)."""
    gold = DOC["cases"][name]
    if gold["engine_error"] is not None:
        # vLLM refuses the model at start: every layer kvscale reports is refused with it.
        if report.layers and all(
            (lay.error or "").startswith(gold["engine_error"]) for lay in report.layers
        ):
            return []
        return [f"vLLM refuses the model: {gold['engine_error']}"]
    mismatches: list[str] = []
    names = [lay.name for lay in report.layers]
    gold_names = [g["name"] for g in gold["layers"]]
    if names != gold_names:
        return [f"layers: kvscale {names} != vLLM {gold_names}"]
    unmapped = {u.tensor: u for u in report.unmapped}
    for lay, g in zip(report.layers, gold["layers"], strict=True):
        where = g["name"]
        cache_dtype = lay.cache.kv_cache_dtype if lay.cache else None
        if cache_dtype != g["kv_cache_dtype"]:
            mismatches.append(f"{where}: kv dtype {cache_dtype} != vLLM {g['kv_cache_dtype']}")
        if g["error"] is not None:
            if not (lay.error or "").startswith(g["error"]):
                mismatches.append(f"{where}: vLLM refuses: {g['error']}; kvscale: {lay.error!r}")
        elif lay.error is not None:
            mismatches.append(f"{where}: vLLM loads; kvscale refuses: {lay.error}")
        else:
            for f in VALUE_FIELDS:
                if _enc(lay.value(f)) != _enc(g[f]):
                    mismatches.append(f"{where}.{f}: {_enc(lay.value(f))} != vLLM {_enc(g[f])}")
        sources = {s.tensor: s.kind for s in [*lay.sources.values(), *lay.shadowed]}
        for t in g["tensors"]:
            tensor = t["name"]
            if t["loaded_into"]:
                kind = t["loaded_into"][0].rsplit(".", 1)[-1]
                if sources.get(tensor) != kind:
                    mismatches.append(f"{tensor}: vLLM loads it as {kind}, kvscale does not")
                continue
            item = unmapped.get(tensor)
            if item is None:
                mismatches.append(f"{tensor}: vLLM does not load it; kvscale reports nothing")
            elif item.fails and not (g["error"] and tensor == g["tensors"][-1]["name"]):
                # vLLM went past it: only the last tensor fed before a refusal raised
                mismatches.append(f"{tensor}: vLLM drops it; kvscale says the loader raises")
        # The names maybe_remap_kv_scale_name received and dropped (vLLM warns "... is not
        # loaded"): kvscale reports the tensor dropped under that very name (the loader order).
        fed = {t["name"] for t in g["tensors"]}
        dropped_as = {u.engine_name for u in report.unmapped if u.tensor in fed}
        for step, received, result in g["renames"]:
            if step == "maybe_remap_kv_scale_name" and result is None:
                if received not in dropped_as:
                    mismatches.append(f"vLLM drops {received}; kvscale: {sorted(dropped_as)}")
        if g["error"] is not None:
            failing = g["tensors"][-1]["name"]
            item = unmapped.get(failing)
            if item is None or not item.fails or item.error != g["error"]:
                mismatches.append(f"{failing}: vLLM raises {g['error']}; kvscale: {item}")
    return mismatches


# --- the golden itself --------------------------------------------------------------------


def test_golden_covers_the_catalogue() -> None:
    assert DOC["schema"] == "kvscale.vllm-arch-parity/1"
    assert DOC["provenance"]["vllm_version"] == "0.33.0"
    assert len(NAMES) == len(set(NAMES))
    assert sorted(DOC["cases"]) == sorted(NAMES), "regenerate vllm_arch_expected.json"
    for c in CASES.CASES:
        gold = DOC["cases"][c["name"]]
        assert gold["options"] == c["options"], c["name"]
        assert gold["architecture"] == c["config"]["architectures"][0], c["name"]


def test_classes_cover_the_registry_and_the_executed_architectures() -> None:
    assert CLASSES_DOC["schema"] == "kvscale.vllm-arch-classes/1"
    archs = CLASSES_DOC["architectures"]
    assert sum(CLASSES_DOC["counts"].values()) == len(archs)
    assert set(CLASSES_DOC["counts"]) <= set(CLASSES_DOC["classes"])
    executed = {c["config"]["architectures"][0] for c in CASES.CASES}
    for arch in executed:
        assert "executed_by_oracle" in archs[arch], arch


# --- the facts the rules are written against (the oracle's report cites these cases) ------


def test_deepseek_family_drops_every_qkv_scale_name_under_modelopt() -> None:
    # AutoWeightsLoader's cache-scale mapper renames before maybe_remap_kv_scale_name
    for producer in ("ct", "modelopt", "vllm_mla", "attn", "kv_scale", "kv_a_proj", "sglang_mla"):
        layer = _layer(f"dsv3_modelopt_{producer}")
        assert layer["kv_method"] == "ModelOptKVCacheMethod"
        assert (layer["k_scale"], layer["v_scale"], layer["q_scale"]) == (1.0, 1.0, 1.0)
        qkv = [t for t in layer["tensors"] if not t["name"].endswith("prob_scale")]
        assert qkv and all(t["loaded_into"] == [] for t in qkv), producer
    warning = _layer("dsv3_modelopt_modelopt")["warnings"][0]
    assert warning == (
        "Found k_scale in the checkpoint (e.g. layers.0.self_attn.attn.k_scale), but not "
        "found the expected name in the model (e.g. layers.0.self_attn.attn.attn.k_scale). "
        "k_scale is not loaded."
    )


def test_deepseek_prob_scale_under_its_vllm_name_loads() -> None:
    # the mapper's rules cover [qkv]_scale only: mla_attn.mla_attn.prob_scale passes
    assert _layer("dsv3_modelopt_vllm_mla")["prob_scale"] == 0.0625
    assert _layer("dsv3_fnuz_modelopt_vllm_mla")["prob_scale"] == 0.125
    # ... and without a KV method it is an unknown parameter: the load fails
    assert _layer("dsv3_fp8_vllm_mla")["error"] == (
        "KeyError: 'layers.0.self_attn.mla_attn.mla_attn.prob_scale'"
    )


def test_bailing_v3_loads_modelopt_and_vllm_names() -> None:
    assert _layer("bailing_v3_modelopt_modelopt")["k_scale"] == 0.0234375
    assert _layer("bailing_v3_modelopt_vllm_mla")["q_scale"] == 0.125
    assert _layer("bailing_v3_fnuz_modelopt_modelopt")["k_scale"] == 0.046875
    assert _layer("bailing_v3_modelopt_ct")["k_scale"] == 1.0


def test_jamba_refuses_every_kv_scale_name() -> None:
    for name, case in DOC["cases"].items():
        if case["architecture"] == "JambaForCausalLM":
            assert [layer["error"] is not None for layer in case["layers"]] == [True], name
    assert _layer("jamba_fp8_ct")["error"] == (
        "ValueError: There is no module or parameter named 'model.layers.1.k_scale' in "
        "JambaForCausalLM."
    )


def test_mla_disabled_loads_like_llama() -> None:
    assert _layer("dsv3_mladisable_modelopt_modelopt")["k_scale"] == 0.0234375
    assert _layer("llama_modelopt_modelopt")["k_scale"] == 0.0234375


# --- what kvscale reports about them --------------------------------------------------------


def _problems(report: ScaleReport, code: str) -> list[Any]:
    return [p for p in report.problems if p.code == code]


def test_deepseek_scales_are_reported_not_loaded(written: Path, mla_env: Any) -> None:
    """The false pass this is about: the checkpoint's k/v reach no MLA layer (loader order
    under ModelOpt, no KV method under fp8), one error naming every layer."""
    for name, why in (
        ("dsv3_modelopt_modelopt", "applies maybe_remap_kv_scale_name to the name"),
        ("dsv3_fp8_ct", "quant_method fp8 creates no KV-scale parameter on MLA attention"),
        ("dsv3_mixed_ct", "quant_method modelopt_mixed creates no KV-scale parameter"),
        ("kimi_k25_modelopt_ct", "applies maybe_remap_kv_scale_name"),
    ):
        report = resolve(written, name, mla_env)
        (problem,) = _problems(report, "scales-not-loaded")
        assert problem.severity is Severity.ERROR and why in problem.message, name
        assert problem.layers == tuple(lay.name for lay in report.layers), name
        assert not report.ok and all(lay.error is None for lay in report.layers), name
    unmapped = resolve(written, "dsv3_modelopt_modelopt", mla_env).unmapped
    assert [u.engine_name for u in unmapped] == [
        "layers.0.self_attn.attn.k_scale",
        "layers.0.self_attn.attn.v_scale",
        "layers.1.self_attn.attn.k_scale",
        "layers.1.self_attn.attn.v_scale",
    ]


def test_sparse_cache_format_makes_dropped_scales_moot(written: Path, mla_env: Any) -> None:
    """V3.2 on FLASHMLA_SPARSE caches fp8_ds_mla, whose scales are computed at write: the
    dropped k/v are an info (scales-in-cache), not an error."""
    report = resolve(written, "dsv32_modelopt_modelopt", mla_env)
    assert {lay.cache.kv_cache_dtype for lay in report.layers if lay.cache} == {"fp8_ds_mla"}
    assert not _problems(report, "scales-not-loaded") and report.ok
    (info,) = _problems(report, "scales-in-cache")
    assert info.severity is Severity.INFO and len(info.layers) == 2
    # FLASHINFER_MLA_SPARSE keeps the plain fp8 cache: the scales are again not loaded
    dense = resolve(written, "dsv32_densebackend_modelopt_modelopt", mla_env)
    assert _problems(dense, "scales-not-loaded") and not dense.ok


def test_bailing_reports_the_names_that_load(written: Path, mla_env: Any) -> None:
    report = resolve(written, "bailing_v3_modelopt_ct", mla_env)
    unmapped = {
        p.message.split(" (")[0]: p for p in _problems(report, "unmapped-scale-name") if p.layer
    }
    layer1 = [p for p in _problems(report, "unmapped-scale-name") if "layers.1" in p.message]
    assert {p.message.rsplit("is ", 1)[-1] for p in layer1} == {
        "<attention prefix>.k_proj.k_scale",
        "<attention prefix>.v_proj.v_scale",
        "<attention prefix>.mla_attn.mla_attn.q_scale",
    }
    assert unmapped and not _problems(report, "scales-not-loaded")
    # layer 0 is Kimi delta attention: no KV cache, its scales land nowhere (a warning)
    (kda,) = [p for p in _problems(report, "unmapped-scale-name") if "layers.0" in p.message]
    assert "caches no K/V" in kda.message
    loaded = resolve(written, "bailing_v3_modelopt_modelopt", mla_env)
    (v_unused,) = _problems(loaded, "v-scale-unused")
    assert v_unused.layers == ("model.layers.1.self_attn.attn",)


def test_refusals_quote_vllm(written: Path, mla_env: Any) -> None:
    for name, error in (
        ("jamba_fp8_ct", "'model.layers.1.k_scale' in JambaForCausalLM."),
        ("lfm2_none_modelopt", "'layers.1.self_attn.qkv_proj.k_scale' in Lfm2Model."),
        ("sarvam_modelopt_ct", "'layers.0.self_attn.attn' in SarvamMLAModel."),
        ("longcat_fp8_ct", "KeyError: 'layers.0.self_attn.0.attn.k_scale'"),
        ("mistral_large3_native_fp8_mistral_native", "'layers' in MistralLarge3ForCausalLM."),
        ("llama_ct_output_scale", "'layers.0.self_attn.qkv_proj.output_scale' in LlamaModel."),
    ):
        report = resolve(written, name, mla_env)
        assert report.layers[0].error is not None and error in report.layers[0].error, name
    (problem,) = _problems(resolve(written, "jamba_fp8_ct", mla_env), "scales-not-loaded")
    assert problem.severity is Severity.ERROR
    assert "builds its attention without quant_config" in problem.message
    assert "rename" not in problem.message  # no name loads: removing them is the fix


def test_architecture_facts_decide_mla(written: Path, mla_env: Any) -> None:
    """MiniCPM3 has a kv_lora_rank and plain Attention; Sarvam-MLA builds MLA whatever its
    model_type; DeepSeek's model_type deepseek and VLLM_MLA_DISABLE give attention."""
    latent = {
        name: {lay.cache.latent for lay in resolve(written, name, mla_env).layers if lay.cache}
        for name in ("minicpm3_fp8_ct", "sarvam_fp8_ct", "deepseek_mha_fp8_ct", "dsv3_fp8_ct")
    }
    assert latent == {
        "minicpm3_fp8_ct": {False},
        "sarvam_fp8_ct": {True},
        "deepseek_mha_fp8_ct": {False},
        "dsv3_fp8_ct": {True},
    }
    assert {
        lay.cache.latent
        for lay in resolve(written, "dsv3_mladisable_fp8_ct", mla_env).layers
        if lay.cache
    } == {False}


def test_mla_backends(written: Path, mla_env: Any) -> None:
    path = str(written / "bailing_v3_modelopt_vllm_mla")

    def run(backend: str) -> ScaleReport:
        return resolve_checkpoint(
            open_input(path), EngineOptions(kv_cache_dtype="fp8", attention_backend=backend)
        )

    (refuses,) = _problems(run("cutlass_mla"), "backend-refuses-scale")
    assert refuses.layers == ("model.layers.1.self_attn.attn",)
    assert "does not support scaling for q and kv_latent" in refuses.message
    (ignores,) = _problems(run("flashinfer_mla_sparse_sm90"), "scales-ignored-by-backend")
    assert "kpe_scale=1.0" in ignores.message
    (no_fp8,) = _problems(run("flash_attn_mla"), "backend-unsupported-dtype")
    assert no_fp8.layers == ("model.layers.1.self_attn.attn",)
    assert not _problems(run("flash_attn_mla"), "backend-refuses-scale")
    for reads in ("flashmla", "triton_mla", "flashinfer_mla"):
        report = run(reads)
        assert not [p for p in report.problems if p.code.startswith("backend-")], reads
        assert not _problems(report, "scales-ignored-by-backend"), reads


@pytest.mark.slow
def test_goldens_are_up_to_date(tmp_path: Path) -> None:
    src = os.environ.get("KVSCALE_VLLM_SRC")
    if not src:
        pytest.skip("set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 tree to re-run")
    out, classes = tmp_path / "arch.json", tmp_path / "classes.json"
    subprocess.run(
        [
            sys.executable,
            str(ORACLE),
            "--vllm-src",
            src,
            "--out",
            str(out),
            "--classes-out",
            str(classes),
            "--quiet",
        ],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    fresh = json.loads(out.read_text())
    for key in VOLATILE_PROVENANCE:
        fresh["provenance"].pop(key, None)
    committed = json.loads(GOLDEN.read_text())
    for key in VOLATILE_PROVENANCE:
        committed["provenance"].pop(key, None)
    assert fresh == committed, "regenerate tests/parity/vllm_arch_expected.json"
    assert json.loads(classes.read_text()) == CLASSES_DOC, "regenerate vllm_arch_classes.json"
