"""``kvscale plan``'s serving commands against the engines' own argument parsers.

The golden file ``serve_flags_expected.json`` holds every command plan can answer with
(``serve_flags_cases.py``, from kvscale's own code) and what vLLM 0.33.0 / SGLang 0.5.23 made of
each (``serve_flags_oracle.py``). By default, without an engine tree: the commands kvscale renders
today are the golden file's (a changed flag fails here until the oracle is re-run), and every
command parses to what kvscale means by it (model, KV-cache dtype, layers kept unquantized,
attention backend, no quantization override), while every hand-written control with a mistake
does not. With ``KVSCALE_VLLM_SRC`` and ``KVSCALE_SGLANG_SRC`` set (slow), the oracle is re-run.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.modules import load_module

PARITY = Path(__file__).resolve().parent
GOLDEN = PARITY / "serve_flags_expected.json"
ORACLE = PARITY / "serve_flags_oracle.py"
DOC = json.loads(GOLDEN.read_text())
VOLATILE_PROVENANCE = (
    "python_version",
    "vllm_torch_version",
    "sglang_torch_version",
    "vllm_pydantic_version",
    "sglang_pydantic_version",
    "vllm_msgspec_version",
    "sglang_msgspec_version",
    "vllm_imported_sources",
    "sglang_imported_sources",
)
"""Machine facts: the interpreter, the dependency releases, and which files of the tree the
import chain reached (optional imports differ by machine). The key files' sha256 are kept."""


cases = load_module("kvscale_parity_serve_flags_cases", PARITY / "serve_flags_cases.py")


def _inputs(commands: dict[str, Any]) -> dict[str, Any]:
    return {n: {k: v for k, v in c.items() if k != "engine_result"} for n, c in commands.items()}


def _meaning_differs(case: dict[str, Any]) -> list[str]:
    """How the engine's reading of ``argv`` differs from kvscale's intent (empty: it does
    not). A rejected command differs by its error."""
    result, want = case["engine_result"], case["intent"]
    if result["error"] is not None:
        return [f"{result['stage']}: {result['error']}"]
    got = result["parsed"]
    backend = want["attention_backend"]
    if case["engine"] == "vllm":
        expected = {
            "model": want["checkpoint"],
            "kv_cache_dtype": want["kv_cache_dtype"],
            "kv_cache_dtype_skip_layers": want["skip_layers"],
            "cache_config": {
                "cache_dtype": want["kv_cache_dtype"],
                "kv_cache_dtype_skip_layers": want["skip_layers"],
            },
            # kvscale's backend names are AttentionBackendEnum member names, lower case
            "attention_config_backend": None if backend is None else backend.upper(),
            "quantization": None,
            "quantization_config": None,
        }
    else:
        expected = {
            "model_path": want["checkpoint"],
            "kv_cache_dtype": want["kv_cache_dtype"],
            "attention_backend": backend,
            "decode_attention_backend": None,
            "prefill_attention_backend": None,
            "quantization": None,
            "quantization_param_path": None,
        }
    return [f"{k}: {got.get(k)!r} != {v!r}" for k, v in expected.items() if got.get(k) != v]


def test_the_golden_commands_are_what_kvscale_renders_today() -> None:
    fresh = {n: c.as_json() for n, c in cases.serve_cases().items()}
    golden = _inputs(DOC["cases"])
    assert sorted(fresh) == sorted(golden), "re-run serve_flags_oracle.py (README)"
    changed = [n for n in fresh if fresh[n] != golden[n]]
    assert not changed, f"kvscale renders these differently now: {changed}; re-run the oracle"
    controls = {n: c.as_json() for n, c in cases.CONTROLS.items()}
    assert controls == _inputs(DOC["controls"])


def test_every_command_means_to_the_engine_what_kvscale_means() -> None:
    wrong = {n: d for n, c in DOC["cases"].items() if (d := _meaning_differs(c))}
    assert not wrong, wrong
    engines = {c["engine"] for c in DOC["cases"].values()}
    assert engines == {"vllm", "sglang"}


def test_every_control_is_caught() -> None:
    caught = {n: _meaning_differs(c) for n, c in DOC["controls"].items()}
    assert all(caught.values()), caught
    comma = DOC["controls"]["vllm skip list comma-separated"]["engine_result"]
    # vLLM takes "0,1" as one entry, which matches no layer: nothing is rejected.
    assert comma["error"] is None
    assert comma["parsed"]["kv_cache_dtype_skip_layers"] == ["0,1"]


def test_the_commands_cover_every_candidate_kind() -> None:
    """The configurations the brief of this oracle names: FP8 per tensor from each scale
    source, FP8 per head, the per-token-head dtypes, NVFP4, MLA, skipped layers (indices and
    ``sliding_window``), named attention backends -- per engine."""
    by_engine: dict[str, set[str]] = {"vllm": set(), "sglang": set()}
    for c in DOC["cases"].values():
        by_engine[c["engine"]].update(c["produced_by"])
    fp8 = {f"mha fp8:{s}" for s in ("checkpoint", "calibrated", "unit")}
    per_token_head = {f"mha {d}_per_token_head" for d in ("int4", "int8", "fp8")}
    nvfp4 = {f"mha nvfp4:{s}" for s in ("checkpoint", "calibrated", "unit")}
    assert fp8 | per_token_head | nvfp4 | {"mha fp8-per-head:calibrated"} <= by_engine["vllm"]
    assert {"mla fp8:unit", "mla fp8:calibrated"} <= by_engine["vllm"]
    assert {f"mha fp8_e4m3:{s}" for s in ("checkpoint", "calibrated", "unit")} | {
        "mha nvfp4:calibrated",
        "mla fp8_e4m3:calibrated",
    } <= by_engine["sglang"]
    skips = {tuple(c["intent"]["skip_layers"]) for c in DOC["cases"].values()}
    assert skips == {(), ("0", "1"), ("sliding_window",)}
    backends = {
        (c["engine"], c["intent"]["attention_backend"])
        for c in DOC["cases"].values()
        if c["intent"]["attention_backend"]
    }
    assert ("vllm", "flashinfer") in backends and ("sglang", "triton") in backends


def _deps() -> list[str]:
    return [d for d in os.environ.get("KVSCALE_ORACLE_DEPS", "").split(os.pathsep) if d]


@pytest.mark.slow
def test_golden_is_up_to_date(tmp_path: Path) -> None:
    vllm_src, sglang_src = os.environ.get("KVSCALE_VLLM_SRC"), os.environ.get("KVSCALE_SGLANG_SRC")
    if not (vllm_src and sglang_src):
        pytest.skip(
            "set KVSCALE_VLLM_SRC and KVSCALE_SGLANG_SRC to extracted vLLM 0.33.0 and "
            "SGLang 0.5.23 trees to re-run"
        )
    search = _deps() + sys.path
    for module in ("pydantic", "msgspec"):
        if importlib.machinery.PathFinder.find_spec(module, search) is None:
            pytest.skip(f"set KVSCALE_ORACLE_DEPS to a directory holding {module} to re-run")
    out = tmp_path / "serve_flags.json"
    cmd = [sys.executable, str(ORACLE), "--vllm-src", vllm_src, "--sglang-src", sglang_src]
    for d in _deps():
        cmd += ["--deps", d]
    subprocess.run(
        [*cmd, "--out", str(out)],
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    fresh, committed = json.loads(out.read_text()), json.loads(GOLDEN.read_text())
    for doc in (fresh, committed):
        for key in VOLATILE_PROVENANCE:
            doc["provenance"].pop(key, None)
    assert fresh == committed, "regenerate tests/parity/serve_flags_expected.json"
