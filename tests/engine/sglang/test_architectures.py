"""kvscale/engine/sglang/architectures.py's KV-method and MLA tables: how the renderer
(tests/parity/render_tables.py) derives them from the evidence, on small synthetic evidence,
and what the committed table says for the architectures the oracle executed."""

from __future__ import annotations

from typing import Any

from parity import render_tables as R

from kvscale.engine.sglang import architectures as A


def _site(site: str, attribute: str = "attn", quant: str | None = "quant_config") -> Any:
    return {"site": site, "attribute": attribute, "quant_config": quant}


def _arch(kind: str, sites: list[Any], file: str = "m.py", mla: bool = False) -> Any:
    return {
        "file": file,
        "loader_site": f"srt/models/{file}:1",
        "attention_sites": sites,
        "kv_method": kind,
        "mla": mla,
    }


def _case(arch: str, config: str, kv: list[str | None], error: str | None = None) -> Any:
    return {
        "architecture": arch,
        "engine_error": error,
        "quant_config": config,
        "layers": [{"kv_method": k} for k in kv],
    }


EVIDENCE = {
    "architectures": {
        "Mixed": _arch("mixed", [_site("a.py:1"), _site("b.py:2", quant=None)]),
        "MixedExecuted": _arch("mixed", [_site("a.py:1"), _site("c.py:3", quant=None)], "x.py"),
        "SameCode": _arch("mixed", [_site("a.py:1"), _site("c.py:3", quant=None)], "x.py"),
        "Static": _arch("none", [_site("d.py:4", quant="None")]),
        "NoSites": _arch("no-sites", [], "n.py"),
        "NoSitesExecuted": _arch("no-sites", []),
        "Passes": _arch("quant_config", [_site("e.py:5")]),
        "Latent": _arch(
            "quant_config", [_site("f.py:6", "attn_mqa"), _site("f.py:7", "attn_mha")], mla=True
        ),
        "LatentAttn": _arch("quant_config", [_site("g.py:8")], mla=True),
        "LatentBoth": _arch(
            "quant_config", [_site("h.py:9"), _site("h.py:10", "attn_mqa")], mla=True
        ),
    }
}
EXECUTED = {
    "cases": {
        # a CT case without a KV method proves nothing (the scheme may be unsupported) ...
        "c1": _case("MixedExecuted", "CompressedTensorsConfig", [None, None]),
        # ... an Fp8Config case does; so does a KV method on any layer
        "c2": _case("MixedExecuted", "Fp8Config", [None, None]),
        "c3": _case("NoSitesExecuted", "CompressedTensorsConfig", [None, "Kv"]),
        "c4": _case("Passes", "QuarkConfig", [None], error="ValueError: start"),  # not counted
    }
}


def test_executed_verdicts() -> None:
    assert R.sglang_executed_kv_methods(EXECUTED) == {
        "MixedExecuted": (False, "c2"),
        "NoSitesExecuted": (True, "c3"),
    }


def test_kv_method_tables() -> None:
    none, unknown = R.sglang_kv_methods(EVIDENCE, EXECUTED)
    assert none == {
        "MixedExecuted": "c.py:3; executed: c2",
        "SameCode": "c.py:3; executed: c2, as MixedExecuted",
        "Static": "d.py:4; static reading of the model code",
    }
    assert unknown == {
        "Mixed": (
            "RadixAttention built with quant_config at a.py:1 and without at b.py:2; which one "
            "this model builds is not recorded"
        ),
        "NoSites": "no RadixAttention construction was found in its model code",
    }


def test_mla_radix() -> None:
    assert R.sglang_mla_radix(EVIDENCE) == {"Latent": "attn_mqa", "LatentAttn": "attn"}


def test_committed_tables() -> None:
    for arch in (
        "Qwen3ForCausalLM",
        "Qwen3MoeForCausalLM",
        "Llama4ForCausalLM",
        "Llama4ForConditionalGeneration",
        "GptOssForCausalLM",
        "FalconH1ForCausalLM",
    ):
        assert "executed: sgl_" in A.NO_KV_METHOD[arch], arch
    assert "NemotronHForCausalLM" not in A.NO_KV_METHOD | A.KV_METHOD_UNKNOWN
    assert set(A.NO_KV_METHOD).isdisjoint(A.KV_METHOD_UNKNOWN)
    assert len(A.NO_KV_METHOD) == 40 and len(A.KV_METHOD_UNKNOWN) == 47
    assert A.MLA_RADIX["KimiLinearForCausalLM"] == "attn_mqa"
    assert A.MLA_RADIX["MiniCPM3ForCausalLM"] == "attn"
    # the probe put Kimi-Linear's parameters on attn: the engine corrects it (models.py)
    assert A.ARCHITECTURES["KimiLinearForCausalLM"].radix == ("attn",)
