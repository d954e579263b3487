"""kvscale/engine/vllm/arch_classes.py is the rendering of tests/parity/vllm_arch_classes.json
(tests/parity/render_vllm_arch_classes.py): re-rendered and compared in every default run,
without an engine tree."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

from kvscale.engine.vllm.arch_classes import ARCH_CLASSES, VLLM_VERSION
from kvscale.engine.vllm.loaders import WeightsMapper

PARITY = Path(__file__).resolve().parent


def _renderer() -> ModuleType:
    name = "kvscale_parity_render_vllm_arch_classes"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, PARITY / "render_vllm_arch_classes.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


def test_module_is_the_rendering_of_the_evidence() -> None:
    """The table the evidence renders to is the committed one (compared as data, so that the
    check needs neither ruff nor an engine tree; ``ruff format --check`` keeps its layout)."""
    render = _renderer()
    rendered: dict[str, object] = {}
    exec(
        compile(render.render(json.loads(render.EVIDENCE.read_text())), "<render>", "exec"),
        rendered,
    )
    assert rendered["VLLM_VERSION"] == VLLM_VERSION
    stale = sorted(
        arch
        for arch in set(ARCH_CLASSES) | set(rendered["ARCH_CLASSES"])  # type: ignore[arg-type]
        if ARCH_CLASSES.get(arch) != rendered["ARCH_CLASSES"].get(arch)  # type: ignore[attr-defined]
    )
    assert not stale, (
        f"kvscale/engine/vllm/arch_classes.py is stale for {stale[:10]}: run "
        "python tests/parity/render_vllm_arch_classes.py"
    )


def test_table_covers_the_registry() -> None:
    doc = json.loads((PARITY / "vllm_arch_classes.json").read_text())
    assert VLLM_VERSION == doc["vllm_version"] == "0.33.0"
    assert set(ARCH_CLASSES) == set(doc["architectures"])
    counts: dict[str, int] = {}
    for facts in ARCH_CLASSES.values():
        counts[facts.kind] = counts.get(facts.kind, 0) + 1
    assert counts == doc["counts"]


def test_rendered_facts_of_executed_architectures() -> None:
    deepseek = ARCH_CLASSES["DeepseekV3ForCausalLM"]
    assert deepseek.kind == "mla" and deepseek.holders == {"Attention", "MLAAttention"}
    assert deepseek.top is not None and deepseek.top.auto and deepseek.top.quant_visible
    assert deepseek.model is not None and deepseek.model.owner == "DeepseekV2Model"
    assert deepseek.model.remap and not deepseek.model.auto
    bailing = ARCH_CLASSES["BailingMoeV3ForCausalLM"]
    assert bailing.top is not None and not bailing.top.auto and bailing.top.remap
    assert bailing.top.mapper == WeightsMapper(
        substr=((".attention.", ".self_attn."),), prefix=(("attention.", "self_attn."),)
    )
    jamba = ARCH_CLASSES["JambaForCausalLM"]
    assert jamba.kind == "attention-without-quant_config" and jamba.top is not None
    assert not jamba.top.quant_visible and jamba.model is None
    assert ARCH_CLASSES["MistralForCausalLM"].model is not None
    assert ARCH_CLASSES["MistralForCausalLM"].model.owner == "MistralModel"  # type: ignore[union-attr]
    assert ARCH_CLASSES["KimiK25ForConditionalGeneration"].language_model == "DeepseekV2ForCausalLM"
    assert ARCH_CLASSES["MiniCPM3ForCausalLM"].holders == {"Attention"}
    assert ARCH_CLASSES["KimiLinearForCausalLM"].holders == {"custom-mla"}
    assert ARCH_CLASSES["DeepseekV4ForCausalLM"].kind == "no-kv-holder"
    assert sum(f.executed for f in ARCH_CLASSES.values()) == 20


def test_weights_mapper_applies_vllms_order() -> None:
    """WeightsMapper._map_name_with_shard: every regex, substring, stacked, prefix and suffix
    rule in turn, each on the name the previous ones produced; a None target drops it."""
    mapper = WeightsMapper(
        regex=((r"\.kv_scale$", ".attn.k_scale"),),
        substr=((".self_attn.", ".attn."),),
        stacked=((".k_proj", ".qkv_proj"),),
        prefix=(("model.", "language_model.model."), ("language_model.model.x", None)),
        suffix=((".output_scale", ".attn.k_scale"),),
    )
    assert mapper.map("model.layers.0.self_attn.kv_scale") == (
        "language_model.model.layers.0.attn.attn.k_scale"
    )
    assert mapper.map("model.layers.0.self_attn.k_proj.output_scale") == (
        "language_model.model.layers.0.attn.qkv_proj.attn.k_scale"
    )
    assert mapper.map("model.x") is None
    merged = WeightsMapper(substr=(("a", "b"),)) | WeightsMapper(substr=(("a", "c"), ("d", "e")))
    assert merged.substr == (("a", "c"), ("d", "e"))
