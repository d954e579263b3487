"""kvscale.engine.vllm.architectures matches what the parity oracle recorded from vLLM 0.33.0."""

from __future__ import annotations

import json
from pathlib import Path

from kvscale.engine.vllm.architectures import NOT_AUTO_LOADED, OUTPUT_SCALE_DROPPING

EVIDENCE = Path(__file__).resolve().parent / "parity" / "arch_output_scale_drop.json"


def test_architecture_sets_match_the_recorded_evidence() -> None:
    verdicts = {
        name: entry["verdict"]
        for name, entry in json.loads(EVIDENCE.read_text())["architectures"].items()
    }
    assert OUTPUT_SCALE_DROPPING == {n for n, v in verdicts.items() if v == "drops"}
    assert NOT_AUTO_LOADED == {
        n for n, v in verdicts.items() if v in ("custom_loader", "dynamic", "unresolved")
    }
    assert "LlamaForCausalLM" not in OUTPUT_SCALE_DROPPING | NOT_AUTO_LOADED
    assert {"Gemma3ForCausalLM", "NemotronHForCausalLM"} <= OUTPUT_SCALE_DROPPING
