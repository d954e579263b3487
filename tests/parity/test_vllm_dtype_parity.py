"""kvscale against vLLM 0.33.0 for every `--kv-cache-dtype` and `--kv-cache-dtype-skip-layers`.

tests/parity/vllm_dtype_expected.json and tests/parity/vllm_backends.json are written by
tests/parity/vllm_dtype_oracle.py, which executes vLLM's own code on the catalogue of
tests/parity/dtype_cases.py (tests/parity/README.md, "kv-cache dtypes"; the rules in words:
tests/parity/VLLM_DTYPES.md). For every case kvscale resolves the same checkpoint with the
case's options (`kvscale.core.inspect.resolve_checkpoint`, what every command runs) and must
give, per attention layer: the cache dtype after the skip rules, the sliding window the skip
rule saw, the refusal (vLLM's message) or the four device values bit for bit, and what the
layer's cache does with the checkpoint's k/v (`LayerCache.format.scale_use`); per case: the
model-level refusal, the effective skip list and the dtype the engine builds with.

With KVSCALE_VLLM_SRC set, `test_golden_files_are_up_to_date` re-runs the oracle.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.modules import load_module

from kvscale.cache_formats import ScaleUse
from kvscale.conventions import layer_index
from kvscale.core.inspect import ScaleReport, resolve_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.engine.vllm.skip_layers import layer_sliding_window
from kvscale.errors import UsageError
from kvscale.io.inputs import open_input

PARITY = Path(__file__).resolve().parent
GOLDEN = PARITY / "vllm_dtype_expected.json"
BACKENDS = PARITY / "vllm_backends.json"
ORACLE = PARITY / "vllm_dtype_oracle.py"
# machine facts, not inputs (transformers: 5.20.2, inside vLLM 0.33.0's pin, and 5.24.0
# write identical files)
VOLATILE_PROVENANCE = ("torch_version", "python_version", "regex_module", "transformers_version")
VALUE_FIELDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
# the oracle's word for what the cache write does with the checkpoint's k/v -> kvscale's
SCALE_USE = {
    "none": ScaleUse.NONE,
    "per_tensor_divisor": ScaleUse.DIVISOR,
    "nvfp4_global_scale": ScaleUse.GLOBAL_SCALE,
    "unused": ScaleUse.IN_CACHE,
    "no_in_tree_backend": ScaleUse.OUT_OF_TREE,
}


CASES = load_module("kvscale_parity_dtype_cases", PARITY / "dtype_cases.py")
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
NAMES = [c["name"] for c in CASES.CASES]


def _enc(value: Any) -> str:
    """Exact text of a value (shortest repr of the float32, lists per head): -0.0 != 0.0."""
    if isinstance(value, tuple):
        value = list(value)
    return json.dumps(value)


def _options(case: dict[str, Any]) -> EngineOptions:
    opts = case["options"]
    return EngineOptions(
        engine="vllm",
        kv_cache_dtype=opts["kv_cache_dtype"],
        platform=opts["platform"],
        model_dtype=opts["model_dtype"],
        kv_cache_dtype_skip_layers=tuple(opts["skip_layers"]),
    )


@pytest.fixture(scope="session")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ScaleReport | UsageError]:
    """Every case resolved by kvscale; each distinct checkpoint is written once (the 658 cases
    share 39)."""
    root = tmp_path_factory.mktemp("dtype-cases")
    opened: dict[str, Any] = {}
    out: dict[str, ScaleReport | UsageError] = {}
    for case in CASES.CASES:
        content = [case["config"], case["hf_quant_config"], case["shards"]]
        key = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:16]
        if key not in opened:
            opened[key] = open_input(CASES.write_case(case, root / key))
        try:
            options = _options(case)
        except UsageError as exc:
            out[case["name"]] = exc
            continue
        out[case["name"]] = resolve_checkpoint(opened[key], options)
    return out


def test_golden_covers_the_catalogue() -> None:
    assert DOC["schema"] == "kvscale.vllm-dtype-parity/1"
    assert DOC["provenance"]["vllm_version"] == "0.33.0"
    golden = DOC["cases"]
    missing = [n for n in NAMES if n not in golden]
    extra = [n for n in golden if n not in CASES.CASES_BY_NAME]
    assert not missing and not extra, f"stale golden file: missing {missing}, extra {extra}"
    for name in NAMES:
        case, gold = CASES.CASES_BY_NAME[name], golden[name]
        assert gold["options"] == case["options"], name
        assert [x["name"] for x in gold["layers"]] == CASES.engine_layer_names(case["config"])


def test_every_accepted_value_meets_every_producer() -> None:
    from kvscale.engine.vllm.kv_cache_dtypes import KV_CACHE_DTYPES

    assert DOC["accepted_values"]["cache_dtype_literal"] == CASES.ALL_DTYPES
    assert list(KV_CACHE_DTYPES) == CASES.ALL_DTYPES
    assert DOC["accepted_values"]["register_kv_cache_dtype_calls"] == []
    assert list(DOC["dtypes"]) == CASES.ALL_DTYPES
    for producer in CASES.PRODUCERS:
        for dtype in CASES.ALL_DTYPES:
            assert f"dp_{producer}__{dtype}" in DOC["cases"]


def _case_mismatches(name: str, report: ScaleReport | UsageError) -> list[str]:
    case, gold = CASES.CASES_BY_NAME[name], DOC["cases"][name]
    engine_error = gold["engine_error"]
    if isinstance(report, UsageError):
        # kvscale refuses a string vLLM does not accept, as a usage error (exit 2)
        kv = case["options"]["kv_cache_dtype"]
        ok = engine_error is not None and engine_error.startswith(
            f"ValueError: Invalid kv_cache_dtype: {kv!r}."
        )
        return [] if ok else [f"kvscale refused the options ({report}); vLLM: {engine_error}"]
    out: list[str] = []
    settings = report.settings
    if gold["cache_dtype_after_build"] is None:
        # refused while the engine config or the quantization config is built: every layer
        if settings.refusal != engine_error:
            out.append(
                f"model-level refusal: kvscale {settings.refusal!r} != vLLM {engine_error!r}"
            )
        for layer in report.layers:
            if layer.error != engine_error:
                out.append(f"{layer.name}: kvscale error {layer.error!r} != vLLM {engine_error!r}")
        return out
    if settings.refusal is not None and settings.refusal != engine_error:
        out.append(f"model-level refusal: kvscale {settings.refusal!r}, vLLM {engine_error!r}")
    if settings.kv_cache_dtype != gold["cache_dtype_after_build"]:
        out.append(
            f"kv_cache_dtype: kvscale {settings.kv_cache_dtype} != vLLM "
            f"{gold['cache_dtype_after_build']}"
        )
    if list(settings.skip_layers) != gold["skip_layers_effective"]:
        out.append(
            f"skip list: kvscale {list(settings.skip_layers)} != vLLM "
            f"{gold['skip_layers_effective']}"
        )
    names = [layer.name for layer in report.layers]
    if names != [g["name"] for g in gold["layers"]]:
        return [*out, f"layers: kvscale {names}"]
    for layer, g in zip(report.layers, gold["layers"], strict=True):
        where = layer.name
        if g["error"] is not None and "kv_cache_dtype" not in g:
            # the layer's own refusal (fp8_e5m2 with FP8 scales, an unsupported scheme)
            if layer.error != g["error"]:
                out.append(f"{where}: kvscale error {layer.error!r} != vLLM {g['error']!r}")
            continue
        if layer.error is not None:
            out.append(f"{where}: kvscale refuses ({layer.error}), vLLM builds it")
            continue
        assert layer.cache is not None
        if layer.cache.kv_cache_dtype != g["kv_cache_dtype"]:
            out.append(f"{where}: dtype {layer.cache.kv_cache_dtype} != vLLM {g['kv_cache_dtype']}")
        index = layer_index(where)
        assert index is not None
        window = layer_sliding_window(report.shape, index)
        if window != g["sliding_window"]:
            out.append(f"{where}: sliding window {window} != vLLM {g['sliding_window']}")
        if bool(layer.cache.skipped_by) != g["skipped"]:
            out.append(
                f"{where}: skipped_by {layer.cache.skipped_by!r}, vLLM skipped {g['skipped']}"
            )
        want_use = SCALE_USE[DOC["dtypes"][g["kv_cache_dtype"]]["cache_write"]["checkpoint_kv"]]
        if layer.cache.scale_use is not want_use:
            out.append(f"{where}: scale use {layer.cache.scale_use.value} != {want_use.value}")
        if engine_error is not None:
            continue  # vLLM never loads a model it refuses: no values to compare
        for field in VALUE_FIELDS:
            ours, theirs = _enc(layer.value(field)), _enc(g[field])
            if ours != theirs:
                out.append(f"{where}.{field}: kvscale {ours} != vLLM {theirs}")
    return out


def test_kvscale_matches_vllm(reports: dict[str, ScaleReport | UsageError]) -> None:
    """All 658 cases in one test (per-case test ids would cost seconds of collection)."""
    mismatches = {name: _case_mismatches(name, reports[name]) for name in NAMES}
    failing = {name: m for name, m in mismatches.items() if m}
    shown = [f"{name}: {'; '.join(m[:4])}" for name, m in list(failing.items())[:15]]
    assert not failing, f"{len(failing)} of {len(NAMES)} cases differ:\n" + "\n".join(shown)
    refused = [n for n in NAMES if DOC["cases"][n]["cache_dtype_after_build"] is None]
    invalid = [n for n in NAMES if isinstance(reports[n], UsageError)]
    # every kind of outcome is exercised: a case that drifted out of its group shows here
    assert (len(NAMES), len(refused), len(invalid)) == (658, 46, 8)


def _strip(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    for key in VOLATILE_PROVENANCE:
        doc.get("provenance", {}).pop(key, None)
    return doc


@pytest.mark.skipif(
    not os.environ.get("KVSCALE_VLLM_SRC"),
    reason="set KVSCALE_VLLM_SRC to an extracted vLLM 0.33.0 source tree to re-run the oracle",
)
def test_golden_files_are_up_to_date(tmp_path: Path) -> None:
    out, backends = tmp_path / "expected.json", tmp_path / "backends.json"
    cmd = [sys.executable, str(ORACLE), "--vllm-src", os.environ["KVSCALE_VLLM_SRC"]]
    if os.environ.get("KVSCALE_TRANSFORMERS_SRC"):
        cmd += ["--transformers-src", os.environ["KVSCALE_TRANSFORMERS_SRC"]]
    cmd += ["--out", str(out), "--backends-out", str(backends), "--quiet"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    new, old = _strip(json.loads(out.read_text())), _strip(DOC)
    assert new["provenance"] == old["provenance"], "vLLM sources differ from the golden file's"
    stale = sorted(
        n
        for n in set(new["cases"]) | set(old["cases"])
        if new["cases"].get(n) != old["cases"].get(n)
    )
    assert not stale, f"stale cases {stale[:20]}: regenerate (tests/parity/README.md)"
    assert {k: v for k, v in new.items() if k != "cases"} == {
        k: v for k, v in old.items() if k != "cases"
    }
    assert _strip(json.loads(backends.read_text())) == _strip(json.loads(BACKENDS.read_text()))
