"""``normalize --checkpoint`` on the architecture catalogue (tests/parity/arch_cases.py):
names vLLM 0.33.0 loads where any exists, one plain error where none does.

* Where no checkpoint name reaches a layer's k or v in any layer (the DeepSeek family's MLA
  layers, Jamba, LFM2, LongCat-Flash, Sarvam-MLA), normalize writes nothing and exits 1 with one
  ``no-loadable-name`` problem, whatever ``--force`` says.
* Elsewhere the copy holds the scales under names the engine loads (``name-repaired`` where the
  source's names do not load: BailingMoeV3's compressed-tensors names become ModelOpt's
  ``k_proj.k_scale``), and inspecting the copy gives the values their producer meant.
* With KVSCALE_VLLM_SRC (slow), vLLM's own loaders (tests/parity/vllm_arch_oracle.py) load
  every copy kvscale writes to the values kvscale says the copy holds.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from support import vllm_oracle

from kvscale.core.inspect import ScaleReport, resolve_checkpoint
from kvscale.core.normalize import NormalizeOptions, NormalizePlan, plan_normalize, write_plan
from kvscale.engine.options import EngineOptions
from kvscale.floats import encode_json_value
from kvscale.io.inputs import open_input

PARITY = Path(__file__).resolve().parent
KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
CASES = vllm_oracle.load_module("kvscale_parity_arch_cases", PARITY / "arch_cases.py")
WRITER = vllm_oracle.load_module("kvscale_parity_cases", PARITY / "cases.py")

BLOCKED = (
    "dsv3_modelopt_modelopt",
    "dsv3_modelopt_vllm_mla",
    "dsv3_fp8_ct",
    "dsv2lite_modelopt_ct",
    "dsv32_modelopt_vllm_dsa",
    "kimi_k25_modelopt_modelopt",
    "jamba_fp8_ct",
    "lfm2_modelopt_modelopt",
    "longcat_modelopt_ct",
    "sarvam_modelopt_modelopt",
)
COPIES_WRITTEN = 240
"""How many catalogue cases normalize writes a copy of (the others: no-loadable-name, or a
layer vLLM refuses)."""
WRITTEN = (
    "bailing_v3_modelopt_ct",
    "bailing_v3_modelopt_modelopt",
    "bailing_v3_attention_modelopt_vllm_mla",
    "gpt_oss_modelopt_output_scale",
    "minicpm3_modelopt_output_scale",
    "mistral3_modelopt_output_scale",
    "dsv3_mladisable_modelopt_vllm_mla",
    "llama_modelopt_prob",
)


def _options(case: dict[str, Any], *, force: bool = False) -> NormalizeOptions:
    opts = case["options"]
    return NormalizeOptions(
        engine=EngineOptions(
            kv_cache_dtype=opts["kv_cache_dtype"],
            platform=opts["platform"],
            model_dtype=opts["model_dtype"],
        ),
        checkpoint=True,
        force=force,
    )


def _plan(name: str, tmp: Path, monkeypatch: pytest.MonkeyPatch, **kw: Any) -> NormalizePlan:
    case = CASES.CASES_BY_NAME[name]
    monkeypatch.setenv("VLLM_MLA_DISABLE", case["options"].get("mla_disable", "0"))
    src = WRITER.write_case(case, tmp / "src")
    return plan_normalize(src, tmp / "out", _options(case, **kw))


def _values(report: ScaleReport) -> list[tuple[str, str, bool]]:
    return [
        (
            layer.name,
            json.dumps([encode_json_value(layer.value(k)) for k in KINDS]),
            layer.error is not None,
        )
        for layer in report.layers
    ]


@pytest.mark.parametrize("name", BLOCKED)
def test_no_loadable_name_is_one_error(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for force in (False, True):
        plan = _plan(name, tmp_path / str(force), monkeypatch, force=force)
        assert not plan.ok
        assert [p.code for p in plan.blocking] == ["no-loadable-name"], name
        (problem,) = plan.blocking
        arch = CASES.CASES_BY_NAME[name]["config"]["architectures"][0]
        assert f"of {arch}'s attention layers" in problem.message
        assert "k_scale, v_scale" in problem.message or "k_scale or v_scale" in problem.message


@pytest.mark.parametrize("name", WRITTEN)
def test_copy_loads_what_the_producer_meant(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = CASES.CASES_BY_NAME[name]
    plan = _plan(name, tmp_path, monkeypatch)
    assert plan.ok, [p.message for p in plan.blocking]
    write_plan(plan)
    engine = _options(case).engine
    meant = resolve_checkpoint(open_input(str(tmp_path / "src")), engine, as_intended=True)
    copy = resolve_checkpoint(open_input(str(tmp_path / "out" / "checkpoint")), engine)
    assert _values(copy) == _values(meant)
    # what stays unplaced is only what no KV-cache layer owns (BailingMoeV3's KDA layers)
    assert all(u.layer is None for u in copy.unmapped), [u.tensor for u in copy.unmapped]


def test_bailing_copy_uses_modelopt_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan = _plan("bailing_v3_modelopt_ct", tmp_path, monkeypatch)
    assert [w.code for w in plan.warnings] == ["name-repaired"]
    (layer,) = [lay for lay in plan.layers if lay.checkpoint_tensors]
    assert [t.name for _, t in layer.checkpoint_tensors] == [
        "model.layers.1.self_attn.k_proj.k_scale",
        "model.layers.1.self_attn.v_proj.v_scale",
        "model.layers.1.self_attn.mla_attn.mla_attn.q_scale",
    ]


@pytest.mark.slow
def test_vllm_loads_every_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = os.environ.get("KVSCALE_VLLM_SRC")
    if not src:
        pytest.skip("set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 tree to run vLLM's code")
    arch = vllm_oracle.load_module(
        "kvscale_parity_vllm_arch_oracle", PARITY / "vllm_arch_oracle.py"
    )
    oracle = arch.ArchOracle(src)
    problems: list[str] = []
    checked = 0
    for case in CASES.CASES:
        name = case["name"]
        work = tmp_path / name
        plan = _plan(name, work, monkeypatch)
        if not plan.ok:
            continue
        write_plan(plan)
        checked += 1
        copy = resolve_checkpoint(
            open_input(str(work / "out" / "checkpoint")), _options(case).engine
        )
        rows, error = vllm_oracle.load_layers(oracle, case, work / "out" / "checkpoint", work / "w")
        ours = [(n, v, e) for n, v, e in _values(copy)]
        if error is not None:
            if not all(e for _, _, e in ours):
                problems.append(f"{name}: vLLM refuses the copy ({error}); kvscale loads it")
            continue
        if rows != ours:
            problems.append(f"{name}: vLLM loads the copy as {rows}; kvscale says {ours}")
    assert not problems, "\n".join(problems)
    assert checked == COPIES_WRITTEN
