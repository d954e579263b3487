"""vLLM 0.33.0 `--kv-cache-dtype` / `--kv-cache-dtype-skip-layers`: the golden files and the rules.

tests/parity/vllm_dtype_expected.json and tests/parity/vllm_backends.json are written by
tests/parity/vllm_dtype_oracle.py, which executes vLLM's own code (tests/parity/README.md,
"kv-cache dtypes"). This file checks:

* that the golden file covers the catalogue of tests/parity/dtype_cases.py exactly;
* that the rules of tests/parity/VLLM_DTYPES.md, written out below as a small reference
  (`predict_layers`), give vLLM's per-layer cache dtype, refusal and k/v scale for every
  case: the rules kvscale implements are the ones proven against vLLM here;
* with KVSCALE_VLLM_SRC set, that the oracle still writes the committed files.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

PARITY = Path(__file__).resolve().parent / "parity"
GOLDEN = PARITY / "vllm_dtype_expected.json"
BACKENDS = PARITY / "vllm_backends.json"
ORACLE = PARITY / "vllm_dtype_oracle.py"
# machine facts, not inputs (transformers: 5.20.2, inside vLLM 0.33.0's pin, and 5.24.0
# write identical files)
VOLATILE_PROVENANCE = ("torch_version", "python_version", "regex_module", "transformers_version")


def _load(name: str, file: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PARITY / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


CASES = _load("kvscale_parity_dtype_cases", "dtype_cases.py")
DOC: dict[str, Any] = json.loads(GOLDEN.read_text())
NAMES = [c["name"] for c in CASES.CASES]


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
    assert DOC["accepted_values"]["cache_dtype_literal"] == CASES.ALL_DTYPES
    assert DOC["accepted_values"]["register_kv_cache_dtype_calls"] == []
    assert list(DOC["dtypes"]) == CASES.ALL_DTYPES
    for producer in CASES.PRODUCERS:
        for dtype in CASES.ALL_DTYPES:
            assert f"dp_{producer}__{dtype}" in DOC["cases"]


def test_backends_table_lists_the_registry() -> None:
    table = json.loads(BACKENDS.read_text())
    assert table["schema"] == "kvscale.vllm-backends/1"
    listed = {
        dt
        for b in table["backends"].values()
        for dt in (b.get("supported_kv_cache_dtypes") or [])
        if isinstance(b.get("supported_kv_cache_dtypes"), list)
    }
    # fp8_inc is the one accepted value no in-tree backend lists
    assert set(CASES.ALL_DTYPES) - listed == {"fp8_inc"}
    assert table["bytes_by_dtype"]["nvfp4"]["128"] == {"144": ["FLASHINFER"]}
    assert table["bytes_by_dtype"]["fp8_ds_mla"]["576"]["656"]
    assert table["bytes_by_dtype"]["nvfp4_ds_mla"]["576"] == {
        "352": ["FLASHMLA_SPARSE", "FLASHMLA_MEGA_ATTN_DSV41"]
    }


# --------------------------------------------------------------------------------------
# the rules (tests/parity/VLLM_DTYPES.md), as a reference the golden file is checked against
# --------------------------------------------------------------------------------------

PER_TOKEN_HEAD = {"int4_per_token_head", "int8_per_token_head", "fp8_per_token_head"}
UNQUANTIZED = {"auto", "float16", "bfloat16"}


def _quant(case: dict[str, Any]) -> dict[str, Any] | None:
    qc = case["config"].get("quantization_config")
    return qc if qc is not None else case["hf_quant_config"]


def _modelopt_auto(qc: dict[str, Any]) -> str | None:
    """resolve_kv_cache_dtype_string for a ModelOpt config (None: not ModelOpt)."""
    inner = qc.get("quantization", qc)
    algo = (
        inner.get("kv_cache_scheme")
        or qc.get("kv_cache_scheme")
        or inner.get("kv_cache_quant_algo")
        or qc.get("kv_cache_quant_algo")
    )
    if isinstance(algo, dict):
        if (
            algo.get("dynamic") is False
            and algo.get("num_bits") == 8
            and algo.get("type") == "float"
        ):
            return "fp8_e4m3"
        if algo.get("num_bits") == 4 and algo.get("type") == "float":
            return "nvfp4"
        return "auto"
    if isinstance(algo, str):
        return {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(algo.lower(), "auto")
    return None


def _kind(case: dict[str, Any]) -> str:
    qc = _quant(case)
    if qc is None:
        return "none"
    if "quantization" in qc or str(qc.get("quant_method", "")).startswith("modelopt"):
        return "modelopt"
    return str(qc["quant_method"])


def _resolve(case: dict[str, Any]) -> str:
    kv = case["options"]["kv_cache_dtype"]
    if kv != "auto":
        return str(kv)
    qc = _quant(case)
    if qc is not None and _kind(case) == "modelopt":
        return _modelopt_auto(qc) or "auto"
    return "auto"


def _layer_types(cfg: dict[str, Any]) -> list[str] | None:
    """config.json layer_types, or what the transformers config class derives."""
    if cfg.get("layer_types") is not None:
        return list(cfg["layer_types"])
    n = cfg["num_hidden_layers"]
    if cfg["model_type"] == "gemma3_text":
        pattern = cfg.get("sliding_window_pattern", 6)
        return ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(n)]
    if cfg["model_type"] == "nemotron_h":
        kinds = {"M": "linear_attention", "*": "full_attention", "-": "mlp"}
        return [kinds[c] for c in cfg["hybrid_override_pattern"]]
    return None


def _windows(cfg: dict[str, Any]) -> dict[int, int | None]:
    """Per attention layer: its sliding window (vLLM: the model's per-layer value, else the
    model-level CacheConfig.sliding_window, set only when every layer slides)."""
    arch = cfg["architectures"][0]
    sw = cfg.get("sliding_window") or None  # 0 -> None (ModelConfig.__post_init__)
    types = _layer_types(cfg)
    model_level = sw if types is None or all(t == "sliding_attention" for t in types) else None
    out: dict[int, int | None] = {}
    for i, _ in CASES._layer_prefixes(cfg):
        if arch == "NemotronHForCausalLM":
            per_layer = sw
        elif types is not None and arch in ("LlamaForCausalLM", "Gemma3ForCausalLM"):
            per_layer = sw if types[i] == "sliding_attention" else None
        else:
            per_layer = None
        out[i] = per_layer if per_layer is not None else model_level
    return out


def _skip_list(case: dict[str, Any], resolved: str) -> list[str]:
    skip = list(case["options"]["skip_layers"])
    if resolved.startswith("turboquant_") or resolved == "ultraquant_4bit":
        cfg = case["config"]
        if cfg["architectures"][0] == "NemotronHForCausalLM":
            boundary: list[str] = []  # hybrid: no boundary protection
        else:
            n_layers = cfg["num_hidden_layers"]
            n = min(2, n_layers // 2)
            boundary = [str(i) for i in sorted(set(range(n)) | set(range(n_layers - n, n_layers)))]
        skip = sorted(set(skip) | set(boundary))
    return skip


def _ckpt(case: dict[str, Any], i: int, side: str) -> Any:
    """The checkpoint's k or v scale of layer i (None: absent), as vLLM loads it."""
    for name, spec in case["shards"][0]["tensors"].items():
        if f"layers.{i}." not in name:
            continue
        if name.endswith(
            (f".{side}_scale", f".{side}_proj.{side}_scale", f".{side}_proj.output_scale")
        ):
            values = spec["values"]
            return values[0] if len(values) == 1 else values
    return None


def predict_layers(case: dict[str, Any]) -> dict[str, Any]:
    """{'engine_error': bool, layers: [(dtype or None if refused, k_scale, v_scale)]}."""
    kind = _kind(case)
    qc = _quant(case)
    resolved = _resolve(case)
    skip = _skip_list(case, resolved)
    windows = _windows(case["config"])
    ct_scheme = qc.get("kv_cache_scheme") if kind == "compressed-tensors" else None
    layers = []
    for i, _ in CASES._layer_prefixes(case["config"]):
        dtype = resolved
        if ct_scheme is not None and dtype == "auto":
            dtype = "fp8"  # Attention.__init__, before the skip check
        if (windows[i] is not None and "sliding_window" in skip) or str(i) in skip:
            dtype = "auto"
        ct_scheme_refused = ct_scheme is not None and (
            ct_scheme.get("num_bits") != 8 or ct_scheme.get("type") != "float"
        )  # CompressedTensorsKVCacheMethod.validate_kv_cache_scheme, every layer
        refused = ct_scheme_refused or (
            dtype == "fp8_e5m2"
            and kind in ("fp8", "modelopt", "quark", "compressed-tensors")
            and (kind != "compressed-tensors" or ct_scheme is not None)
        )
        if refused:
            layers.append((None, None, None))
            continue
        k, v = _ckpt(case, i, "k"), _ckpt(case, i, "v")
        if kind == "compressed-tensors":
            # its own post-processing: the loaded tensors (ones when absent), any dtype
            ks, vs = (1.0 if k is None else k), (1.0 if v is None else v)
        elif kind == "none" or dtype in UNQUANTIZED or dtype in PER_TOKEN_HEAD:
            ks = vs = 1.0
        elif k is None and v is None:
            ks = vs = 1.0
        else:
            double = 2 if case["options"]["platform"] == "fnuz" else 1
            ks, vs = k * double, v * double
        layers.append((dtype, ks, vs))
    return {"layers": layers}


def _checkable(case: dict[str, Any], gold: dict[str, Any]) -> bool:
    """Cases whose engine starts or fails only on a per-layer refusal (the others fail in
    config validation, covered by test_refusals_before_the_model)."""
    return gold["engine_error"] is None or gold["cache_dtype_after_build"] is not None


def test_rules_match_vllm() -> None:
    """Per case and layer: the cache dtype, the refusal, k_scale and v_scale (one test over
    the whole catalogue: per-case test ids would cost seconds of collection)."""
    mismatches = []
    checked = 0
    for name in NAMES:
        case, gold = CASES.CASES_BY_NAME[name], DOC["cases"][name]
        if not _checkable(case, gold):
            continue
        got = predict_layers(case)["layers"]
        want = []
        for layer in gold["layers"]:
            if layer["error"] is not None and "kv_cache_dtype" not in layer:
                want.append((None, None, None))  # the layer's own refusal
            elif gold["engine_error"] is not None:
                want.append((layer["kv_cache_dtype"], None, None))
            else:
                want.append((layer["kv_cache_dtype"], layer["k_scale"], layer["v_scale"]))
        if gold["engine_error"] is not None:  # nothing is loaded when vLLM does not start
            got = [(d, None, None) for d, _, _ in got]
        checked += 1
        if got != want:
            mismatches.append(f"{name}: rules {got} != vLLM {want}")
    assert checked == len(NAMES) - 46  # the 46 refused before the model exists
    assert not mismatches, "\n".join(mismatches[:20])


def test_refusals_before_the_model() -> None:
    """Every refusal raised before the model exists, with vLLM's message."""
    seen: dict[str, str] = {}
    for name, gold in DOC["cases"].items():
        if gold["engine_error"] is not None and gold["cache_dtype_after_build"] is None:
            seen.setdefault(gold["engine_error"].split(":")[0], name)
            case = CASES.CASES_BY_NAME[name]
            kv, model = case["options"]["kv_cache_dtype"], case["options"]["model_dtype"]
            msg = gold["engine_error"]
            if kv not in CASES.ALL_DTYPES:
                assert msg.startswith(f"ValueError: Invalid kv_cache_dtype: {kv!r}."), name
            elif kv in ("float16", "bfloat16") and kv != model:
                assert msg == (
                    f'ValueError: kv_cache_dtype="{kv}" is incompatible with dtype="{model}". '
                    f"Please set `--kv-cache-dtype` to `auto` or `{model}`."
                ), name
            elif case["producer"] == "modelopt_nvfp4_legacy_no_group_size":
                assert "requires the following fields in hf_quant_config.json" in msg, name
            else:
                raise AssertionError(f"{name}: unexpected refusal {msg}")
    assert set(seen) == {"ValueError"}


def test_ct_nvfp4_scheme_refused_for_every_dtype() -> None:
    for dtype in CASES.ALL_DTYPES:
        gold = DOC["cases"][f"dp_ct_nvfp4_kv__{dtype}"]
        if dtype == "float16":
            continue  # refused earlier, by the model-dtype check
        assert gold["engine_error"] == (
            "NotImplementedError: Currently supported kv cache quantization is num_bits=8, "
            "type=float, however received num_bits=4, type=float"
        ), dtype


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
