"""Run vLLM 0.33.0's own loading code (tests/parity/vllm_oracle.py) on a directory kvscale wrote.

``oracle()`` loads the oracle once per process (None without KVSCALE_VLLM_SRC); ``load_layers``
runs it on an existing checkpoint directory and returns, per attention layer, the four values
vLLM holds and whether it refuses the layer.
"""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from support.checkpoints import write_safetensors_file
from support.modules import load_module

PARITY = Path(__file__).resolve().parent.parent / "parity"
KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")


@cache
def oracle() -> Any:
    """vLLM's code as the parity suite runs it, or None when KVSCALE_VLLM_SRC is not set."""
    src = os.environ.get("KVSCALE_VLLM_SRC")
    if not src:
        return None
    return load_module("kvscale_vllm_oracle", PARITY / "vllm_oracle.py").Oracle(src)


def load_layers(
    engine: Any, case: dict[str, Any], directory: Path, work: Path
) -> tuple[list[tuple[str, str, bool]], str | None]:
    """vLLM's view of ``directory`` under ``case['options']`` (kv_cache_dtype, platform,
    model_dtype): (name, json of the four values, refused) per layer, and the engine error."""
    variant = copy.deepcopy(case)
    cases_mod = engine.cases_mod
    original = cases_mod.write_case
    cases_mod.write_case = lambda _case, _dir: directory  # run on the existing directory
    try:
        result = engine.run_case(variant, work)
    finally:
        cases_mod.write_case = original
    rows = [
        (layer["name"], json.dumps([layer[k] for k in KINDS]), layer["error"] is not None)
        for layer in result["layers"]
    ]
    return rows, result["engine_error"]


def kv_tensors_only(directory: Path, into: Path) -> Path:
    """A copy of ``directory`` holding only its KV-scale tensors (and its JSON files): the
    oracle's model has placeholder linear layers, so real weights cannot load into it."""
    from safetensors.torch import load_file

    from kvscale.conventions import looks_like_kv_scale

    into.mkdir(parents=True)
    for path in directory.iterdir():
        if path.name.endswith(".json") and not path.name.endswith(".index.json"):
            (into / path.name).write_bytes(path.read_bytes())
    for shard in sorted(directory.glob("*.safetensors")):
        kept = {n: t for n, t in load_file(str(shard)).items() if looks_like_kv_scale(n)}
        if kept:
            write_safetensors_file(into / shard.name, kept, {"format": "pt"})
    return into
