"""The `--kv-cache-dtype` / `--kv-cache-dtype-skip-layers` catalogue for vLLM 0.33.0 (issue 23).

Plain data, in the format of ``cases.py`` (whose building blocks and ``write_case`` it uses),
with two more options per case::

    "options": {"platform": "ocp" | "fnuz", "kv_cache_dtype": STR, "model_dtype": STR,
                "skip_layers": [STR, ...]}       # --kv-cache-dtype-skip-layers, verbatim

Groups:

* ``dtype-producer``: every value vLLM 0.33.0 accepts (``ALL_DTYPES``, read from
  ``CacheDType`` in config/cache.py; no in-tree ``register_kv_cache_dtype`` call adds one) x
  every checkpoint producer (``PRODUCERS``), on a 2-layer Llama.
* ``invalid``: strings vLLM refuses (case, unknown names) and float16/bfloat16 against the model.
* ``skip``: skip lists (indices, ``sliding_window``, mixtures, strings that must not match) x
  dtypes x models with and without per-layer sliding windows (Llama ``layer_types``, model-level
  ``sliding_window``, Gemma-3 ``sliding_window_pattern``, NemotronH hybrid).
* ``boundary``: TurboQuant / UltraQuant first/last-layer protection by layer count, its union
  with user skip lists (string sort), hybrid models.
* ``fnuz``: the ROCm fp8-fnuz doubling for the non-FP8 dtypes.

Loaded by path (like ``cases.py``) by tests/parity/vllm_dtype_oracle.py and the CI test.
"""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

__all__ = ["ALL_DTYPES", "PRODUCERS", "CASES", "CASES_BY_NAME", "engine_layer_names"]


def _load_cases_module() -> Any:
    name = "kvscale_parity_cases"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("cases.py"))
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return mod


_c = _load_cases_module()
write_case = _c.write_case


def S(value: Any, shape: tuple[int, ...] = ()) -> dict[str, Any]:
    """A scale tensor, stored as BF16: the KV-scale parameters of the fp8 / ModelOpt / Quark
    methods are created in the model dtype (bf16 here) and compressed-tensors' in fp32, so
    neither load narrows and vLLM logs no dtype warning (narrowing from F32 is covered by
    vllm_expected.json). Every value below is exact in bf16."""
    return _c.T(value, "BF16", shape)


# config/cache.py `CacheDType` of vLLM 0.33.0, in its order. The oracle checks this list
# against the Literal it executes, so a different vLLM fails loudly instead of silently
# covering fewer values.
ALL_DTYPES = [
    "auto",
    "float16",
    "bfloat16",
    "fp8",
    "fp8_e4m3",
    "fp8_e5m2",
    "fp8_inc",
    "fp8_ds_mla",
    "nvfp4_ds_mla",
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "octave_k3v4",
    "octave_k3v3",
    "octave_k3v3_compact",
    "ultraquant_4bit",
    "int4_per_token_head",
    "int8_per_token_head",
    "fp8_per_token_head",
    "nvfp4",
    "nvfp4_4over6",
]

# Values exactly representable in bf16, fp16 and fp32, different in every layer i
# (k = K*(i+1), ...) so that a value that lands in the wrong layer shows.
K = 0.0234375  # 3/128
V = 0.015625  # 1/64
Q = 0.125
PROB = 0.0625


def _kvqp(i: int) -> tuple[float, float, float, float]:
    return K * (i + 1), V * (i + 1), Q * (i + 1), PROB * (i + 1)


# --------------------------------------------------------------------------------------
# producers: quantization config (config.json and/or hf_quant_config.json) + tensor names
# --------------------------------------------------------------------------------------

_NVFP4_GROUPS = {
    "group_0": {
        "input_activations": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
        "weights": {"dynamic": False, "num_bits": 4, "type": "float", "group_size": 16},
        "targets": ["Linear"],
    }
}


def _modelopt_nvfp4_qc(kv_cache_scheme: Any) -> dict[str, Any]:
    """config.json `quantization_config` as ModelOpt's `convert_hf_quant_config_format`
    writes it for quant_algo NVFP4 (export/convert_hf_config.py): an FP8 KV cache becomes
    the dict {dynamic: false, num_bits: 8, type: float}, any other `kv_cache_quant_algo`
    is copied as the string ("NVFP4")."""
    qc: dict[str, Any] = {
        "config_groups": copy.deepcopy(_NVFP4_GROUPS),
        "ignore": ["lm_head"],
        "quant_algo": "NVFP4",
        "producer": {"name": "modelopt", "version": "0.43.0"},
        "quant_method": "modelopt",
    }
    if kv_cache_scheme is not None:
        qc["kv_cache_scheme"] = kv_cache_scheme
    return qc


def _legacy_nvfp4(kv_algo: str | None, *, group_size: bool = True) -> dict[str, Any]:
    q: dict[str, Any] = {"quant_algo": "NVFP4", "exclude_modules": ["lm_head"]}
    if group_size:
        q["group_size"] = 16
    if kv_algo is not None:
        q["kv_cache_quant_algo"] = kv_algo
    return {"producer": {"name": "modelopt", "version": "0.41.0"}, "quantization": q}


def _plain_names(prefix: str, i: int, *, prob: bool = True) -> dict[str, dict[str, Any]]:
    k, v, q, p = _kvqp(i)
    out = {f"{prefix}.k_scale": S(k), f"{prefix}.v_scale": S(v), f"{prefix}.q_scale": S(q)}
    if prob:
        out[f"{prefix}.prob_output_scale"] = S(p)
    return out


def _ct_names(prefix: str, i: int) -> dict[str, dict[str, Any]]:
    return _plain_names(prefix, i, prob=False)


def _ct_head_names(prefix: str, i: int) -> dict[str, dict[str, Any]]:
    # 8 heads, 2 kv heads (llama_config defaults): k/v [2,1,1], q [8,1,1]
    k, v, q, _ = _kvqp(i)
    return {
        f"{prefix}.k_scale": S([k, 2 * k], shape=(2, 1, 1)),
        f"{prefix}.v_scale": S([v, 2 * v], shape=(2, 1, 1)),
        f"{prefix}.q_scale": S([q * (j + 1) / 8 for j in range(8)], shape=(8, 1, 1)),
    }


def _modelopt_names(prefix: str, i: int) -> dict[str, dict[str, Any]]:
    k, v, _, _ = _kvqp(i)
    return {f"{prefix}.k_proj.k_scale": S(k), f"{prefix}.v_proj.v_scale": S(v)}


def _quark_names(prefix: str, i: int) -> dict[str, dict[str, Any]]:
    k, v, q, _ = _kvqp(i)
    return {
        f"{prefix}.k_proj.output_scale": S(k),
        f"{prefix}.v_proj.output_scale": S(v),
        f"{prefix}.q_proj.output_scale": S(q),
    }


def _no_names(prefix: str, i: int) -> dict[str, dict[str, Any]]:
    return {}


# name -> (config.json quantization_config | None, hf_quant_config.json | None,
#          tensors of one attention block, description)
PRODUCERS: dict[str, tuple[dict[str, Any] | None, dict[str, Any] | None, Any, str]] = {
    "none": (None, None, _no_names, "no quantization config, no scales"),
    "fp8": (_c.FP8_QC, None, _plain_names, "quant_method fp8, k/v/q_scale + prob_output_scale"),
    "ct_tensor": (_c.ct_qc("tensor"), None, _ct_names, "compressed-tensors kv_cache_scheme tensor"),
    "ct_attn_head": (
        _c.ct_qc("attn_head"),
        None,
        _ct_head_names,
        "compressed-tensors kv_cache_scheme attn_head: k/v [2,1,1], q [8,1,1]",
    ),
    "ct_weight_only": (
        _c.ct_qc(scheme=None),
        None,
        _no_names,
        "compressed-tensors without kv_cache_scheme (weight/activation only)",
    ),
    "ct_nvfp4_kv": (
        _c.ct_qc("tensor", num_bits=4),
        None,
        _ct_names,
        "compressed-tensors kv_cache_scheme {num_bits: 4, type: float} (an NVFP4 KV scheme)",
    ),
    "modelopt_fp8": (_c.MODELOPT_QC, None, _modelopt_names, "ModelOpt FP8, config.json"),
    "modelopt_fp8_legacy": (
        None,
        _c.MODELOPT_LEGACY_HF_QUANT,
        _modelopt_names,
        "ModelOpt FP8, legacy hf_quant_config.json (kv_cache_quant_algo FP8)",
    ),
    "modelopt_nvfp4": (
        _modelopt_nvfp4_qc("NVFP4"),
        None,
        _modelopt_names,
        "ModelOpt NVFP4 weights + NVFP4 KV, config.json (kv_cache_scheme: 'NVFP4', a string)",
    ),
    "modelopt_nvfp4_dict_kv": (
        _modelopt_nvfp4_qc({"dynamic": False, "num_bits": 4, "type": "float"}),
        None,
        _modelopt_names,
        "ModelOpt NVFP4, config.json kv_cache_scheme {num_bits: 4, type: float} (dict)",
    ),
    "modelopt_nvfp4_fp8kv": (
        _modelopt_nvfp4_qc({"dynamic": False, "num_bits": 8, "type": "float"}),
        None,
        _modelopt_names,
        "ModelOpt NVFP4 weights + FP8 KV, config.json",
    ),
    "modelopt_nvfp4_nokv": (
        _modelopt_nvfp4_qc(None),
        None,
        _modelopt_names,
        "ModelOpt NVFP4 weights, no KV scheme, scales present",
    ),
    "modelopt_nvfp4_legacy": (
        None,
        _legacy_nvfp4("NVFP4"),
        _modelopt_names,
        "ModelOpt NVFP4, legacy hf_quant_config.json (kv_cache_quant_algo NVFP4)",
    ),
    "modelopt_nvfp4_legacy_no_group_size": (
        None,
        _legacy_nvfp4("NVFP4", group_size=False),
        _modelopt_names,
        "ModelOpt NVFP4 legacy hf_quant_config.json without group_size",
    ),
    "quark": (_c.quark_qc(), None, _quark_names, "Quark fp8 kv_cache_group, *_proj.output_scale"),
}

# --------------------------------------------------------------------------------------
# models
# --------------------------------------------------------------------------------------


def _llama(qc: dict[str, Any] | None, layers: int, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = _c.llama_config(qc, layers=layers)
    cfg.update(copy.deepcopy(extra))
    return cfg


def _gemma(model_type: str, arch: str, qc: dict[str, Any] | None, layers: int, **extra: Any):
    cfg: dict[str, Any] = _c.llama_config(qc, layers=layers, arch=arch)
    cfg["model_type"] = model_type
    cfg.update(copy.deepcopy(extra))
    return cfg


def _nemotron(qc: dict[str, Any] | None, pattern: str, **extra: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = _c.nemotron_h_config(qc, pattern=pattern)
    cfg.update(copy.deepcopy(extra))
    return cfg


SW = 64
# name -> (builder(qc) -> config.json, description)
MODELS: dict[str, tuple[Any, str]] = {
    "llama2": (lambda qc: _llama(qc, 2), "Llama, 2 layers, no sliding window"),
    "llama4": (lambda qc: _llama(qc, 4), "Llama, 4 layers, no sliding window"),
    "llama4_model_sw": (
        lambda qc: _llama(qc, 4, sliding_window=SW),
        "Llama, 4 layers, config sliding_window 64 and no layer_types: model-level window",
    ),
    "llama4_sw_zero": (
        lambda qc: _llama(qc, 4, sliding_window=0),
        "Llama, sliding_window 0 (vLLM: disabled)",
    ),
    "llama4_layer_types": (
        lambda qc: _llama(
            qc,
            4,
            sliding_window=SW,
            layer_types=["sliding_attention", "full_attention"] * 2,
        ),
        "Llama, layer_types sliding/full alternating, sliding_window 64: per-layer windows",
    ),
    "llama4_layer_types_all_sliding": (
        lambda qc: _llama(qc, 4, sliding_window=SW, layer_types=["sliding_attention"] * 4),
        "Llama, layer_types all sliding: per-layer and model-level windows",
    ),
    "llama4_layer_types_no_window": (
        lambda qc: _llama(
            qc, 4, sliding_window=None, layer_types=["sliding_attention", "full_attention"] * 2
        ),
        "Llama, layer_types sliding/full, sliding_window null",
    ),
    "gemma3_pattern3": (
        lambda qc: _gemma(
            "gemma3_text",
            "Gemma3ForCausalLM",
            qc,
            6,
            sliding_window=128,
            sliding_window_pattern=3,
        ),
        "Gemma-3 text, 6 layers, sliding_window_pattern 3 (layer_types derived by the config "
        "class: layers 2 and 5 full)",
    ),
    "gemma3_default_pattern": (
        lambda qc: _gemma("gemma3_text", "Gemma3ForCausalLM", qc, 7, sliding_window=128),
        "Gemma-3 text, 7 layers, no pattern given (default 6: layer 5 full)",
    ),
    "nemotron_h": (
        lambda qc: _nemotron(qc, "M*-*M*"),
        "NemotronH hybrid M*-*M*: attention at layers 1, 3, 5",
    ),
}


def engine_layer_names(config: dict[str, Any]) -> list[str]:
    return list(_c.engine_layer_names(config))


def _layer_prefixes(config: dict[str, Any]) -> list[tuple[int, str]]:
    """(layer index, checkpoint prefix of the attention block) per attention layer."""
    arch = config["architectures"][0]
    if arch == "NemotronHForCausalLM":
        pattern = config["hybrid_override_pattern"]
        return [(i, f"backbone.layers.{i}.mixer") for i, c in enumerate(pattern) if c == "*"]
    return [(i, f"model.layers.{i}.self_attn") for i in range(config["num_hidden_layers"])]


# --------------------------------------------------------------------------------------
# the catalogue
# --------------------------------------------------------------------------------------

CASES: list[dict[str, Any]] = []


def case(
    name: str,
    group: str,
    description: str,
    *,
    model: str,
    producer: str,
    kv: str,
    skip: list[str] | None = None,
    platform: str = "ocp",
    model_dtype: str = "bfloat16",
) -> None:
    qc, hf_quant, names, pdesc = PRODUCERS[producer]
    build, mdesc = MODELS[model]
    config = build(qc)
    config["torch_dtype"] = model_dtype
    tensors: dict[str, dict[str, Any]] = {}
    for i, prefix in _layer_prefixes(config):
        tensors.update(names(prefix, i))
    if config["architectures"][0] == "NemotronHForCausalLM":
        # NemotronH's loader has no name for prob_output_scale (the load would fail, see
        # vllm_expected.json arch_nemotronh_*); these cases are about the dtype
        tensors = {k: v for k, v in tensors.items() if not k.endswith(".prob_output_scale")}
    CASES.append(
        {
            "name": name,
            "group": group,
            "description": description,
            "producer": producer,
            "producer_description": pdesc,
            "model": model,
            "model_description": mdesc,
            "options": {
                "platform": platform,
                "kv_cache_dtype": kv,
                "model_dtype": model_dtype,
                "skip_layers": list(skip or []),
            },
            "config": config,
            "hf_quant_config": copy.deepcopy(hf_quant),
            "shards": [{"file": "model.safetensors", "tensors": tensors}],
            "index": None,
        }
    )


def _ident(s: str) -> str:
    """A case-name-safe spelling of a string: other characters as xHH."""
    return "".join(ch if ch.isalnum() or ch == "_" else f"x{ord(ch):02x}" for ch in s) or "empty"


# ---- every dtype x every producer ---------------------------------------------------
G = "dtype-producer"
for _producer in PRODUCERS:
    for _kv in ALL_DTYPES:
        case(
            f"dp_{_producer}__{_kv}",
            G,
            f"{PRODUCERS[_producer][3]}; --kv-cache-dtype {_kv}",
            model="llama2",
            producer=_producer,
            kv=_kv,
        )

# ---- strings vLLM refuses -----------------------------------------------------------
G = "invalid"
for _kv in ("FP8", "fp4", "float32", "int8", "half", "NVFP4", "fp8_e4m3fn", ""):
    case(
        f"invalid__{_ident(_kv)}",
        G,
        f"--kv-cache-dtype {_kv!r}: not a CacheDType value",
        model="llama2",
        producer="fp8",
        kv=_kv,
    )
case(
    "invalid__float16_on_bf16_model",
    G,
    "explicit float16 on a bfloat16 model",
    model="llama2",
    producer="fp8",
    kv="float16",
)
case(
    "invalid__bfloat16_on_fp16_model",
    G,
    "explicit bfloat16 on a float16 model",
    model="llama2",
    producer="fp8",
    kv="bfloat16",
    model_dtype="float16",
)
case(
    "valid__float16_on_fp16_model",
    G,
    "explicit float16 on a float16 model",
    model="llama2",
    producer="fp8",
    kv="float16",
    model_dtype="float16",
)

# ---- skip lists ---------------------------------------------------------------------
G = "skip"
SKIP_LISTS: dict[str, list[str]] = {
    "none": [],
    "idx0": ["0"],
    "idx1_3": ["1", "3"],
    "sw": ["sliding_window"],
    "sw_idx0": ["sliding_window", "0"],
    "sw_idx3": ["3", "sliding_window"],
}
SKIP_DTYPES = ["fp8", "fp8_e5m2", "nvfp4", "int8_per_token_head", "turboquant_k8v4"]
SKIP_MODELS = ["llama4", "llama4_model_sw", "llama4_layer_types", "gemma3_pattern3", "nemotron_h"]
# which layers have a window: "sliding_window" alone, on the other window conventions
WINDOW_MODELS = [
    "llama4_sw_zero",
    "llama4_layer_types_all_sliding",
    "llama4_layer_types_no_window",
    "gemma3_default_pattern",
]
for _model in SKIP_MODELS:
    for _sk, _skip in SKIP_LISTS.items():
        for _kv in SKIP_DTYPES:
            case(
                f"skip_{_model}__{_sk}__{_kv}",
                G,
                f"{MODELS[_model][1]}; skip {_skip}; --kv-cache-dtype {_kv}",
                model=_model,
                producer="fp8",
                kv=_kv,
                skip=_skip,
            )
        # compressed-tensors `auto` is promoted to fp8 by Attention.__init__ before the skip
        # check; compressed-tensors loads k/v into every layer, skipped or not.
        case(
            f"skip_{_model}__{_sk}__ct_auto",
            G,
            f"{MODELS[_model][1]}; skip {_skip}; compressed-tensors, --kv-cache-dtype auto",
            model=_model,
            producer="ct_tensor",
            kv="auto",
            skip=_skip,
        )
        # ModelOpt NVFP4 config: auto -> nvfp4 in resolve_kv_cache_dtype_string
        case(
            f"skip_{_model}__{_sk}__modelopt_nvfp4_auto",
            G,
            f"{MODELS[_model][1]}; skip {_skip}; ModelOpt NVFP4 KV, --kv-cache-dtype auto",
            model=_model,
            producer="modelopt_nvfp4",
            kv="auto",
            skip=_skip,
        )

for _model in WINDOW_MODELS:
    case(
        f"skip_{_model}__sw__fp8",
        G,
        f"{MODELS[_model][1]}; skip ['sliding_window']; --kv-cache-dtype fp8",
        model=_model,
        producer="fp8",
        kv="fp8",
        skip=["sliding_window"],
    )

# strings that look like a layer but are not the decimal index (string equality on
# str(int)), and attention-type names other than sliding_window
for _s in (
    "01",
    "+1",
    " 1",
    "1 ",
    "1.0",
    "-1",
    "-0",
    "layers.1",
    "model.layers.1.self_attn.attn",
    "SLIDING_WINDOW",
    "sliding",
    "full_attention",
    "sliding_attention",
    "4",
):
    case(
        f"skip_nomatch__{_ident(_s)}",
        G,
        f"Llama 4 layers; skip [{_s!r}]: must not match any layer",
        model="llama4",
        producer="fp8",
        kv="fp8",
        skip=[_s],
    )
for _s in ("01", "sliding_window"):
    case(
        f"skip_nomatch_sw__{_ident(_s)}",
        G,
        f"Llama 4 layers, model-level window; skip [{_s!r}]",
        model="llama4_model_sw",
        producer="fp8",
        kv="fp8",
        skip=[_s, "02"],
    )

# skipped layers under every other dtype and producer (which scales a skipped layer keeps)
for _producer in ("none", "fp8", "ct_tensor", "ct_attn_head", "modelopt_fp8", "quark"):
    for _kv in ("fp8", "fp8_e5m2", "nvfp4", "fp8_per_token_head", "turboquant_3bit_nc"):
        case(
            f"skip_producer_{_producer}__{_kv}",
            G,
            f"{PRODUCERS[_producer][3]}; --kv-cache-dtype {_kv}; skip ['1']",
            model="llama2",
            producer=_producer,
            kv=_kv,
            skip=["1"],
        )

# ---- TurboQuant / UltraQuant boundary layers ----------------------------------------
G = "boundary"
BOUNDARY_DTYPES = [
    "turboquant_k8v4",
    "turboquant_4bit_nc",
    "turboquant_k3v4_nc",
    "turboquant_3bit_nc",
    "ultraquant_4bit",
]
for _n in (1, 2, 3, 4, 5, 12):
    MODELS[f"llama{_n}"] = (
        lambda qc, n=_n: _llama(qc, n),
        f"Llama, {_n} layer(s)",
    )
    for _kv in BOUNDARY_DTYPES:
        case(
            f"boundary_llama{_n}__{_kv}",
            G,
            f"Llama {_n} layer(s), --kv-cache-dtype {_kv}: first/last min(2, n//2) kept native",
            model=f"llama{_n}",
            producer="fp8",
            kv=_kv,
        )
for _kv in ("turboquant_k8v4", "ultraquant_4bit"):
    case(
        f"boundary_llama12_union__{_kv}",
        G,
        "Llama 12 layers, user skip ['5', 'sliding_window', '10', '5']: union with the "
        "boundary, sorted as strings",
        model="llama12",
        producer="fp8",
        kv=_kv,
        skip=["5", "sliding_window", "10", "5"],
    )
    case(
        f"boundary_nemotron_h__{_kv}",
        G,
        "NemotronH hybrid: no boundary protection",
        model="nemotron_h",
        producer="fp8",
        kv=_kv,
    )
    case(
        f"boundary_nemotron_h_skip3__{_kv}",
        G,
        "NemotronH hybrid, user skip ['3']",
        model="nemotron_h",
        producer="fp8",
        kv=_kv,
        skip=["3"],
    )
    case(
        f"boundary_gemma3__{_kv}",
        G,
        "Gemma-3 6 layers (pattern 3): boundary on a sliding-window model",
        model="gemma3_pattern3",
        producer="fp8",
        kv=_kv,
    )
case(
    "boundary_auto_never",
    G,
    "auto never resolves to a packed dtype: no boundary",
    model="llama4",
    producer="fp8",
    kv="auto",
)

# ---- fnuz doubling ------------------------------------------------------------------
G = "fnuz"
for _kv in ("fp8", "nvfp4", "turboquant_k8v4", "int8_per_token_head", "fp8_ds_mla", "auto"):
    for _producer in ("fp8", "modelopt_nvfp4", "ct_tensor"):
        case(
            f"fnuz_{_producer}__{_kv}",
            G,
            f"fp8-fnuz platform; {PRODUCERS[_producer][3]}; --kv-cache-dtype {_kv}",
            model="llama2",
            producer=_producer,
            kv=_kv,
            platform="fnuz",
            skip=["1"],
        )

CASES_BY_NAME: dict[str, dict[str, Any]] = {c["name"]: c for c in CASES}
if len(CASES_BY_NAME) != len(CASES):
    raise RuntimeError("duplicate case names")
