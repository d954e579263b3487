"""How SGLang 0.5.23 reads a checkpoint's quantization config and picks the KV-cache dtype.

Paths are inside the 0.5.23 wheel (``sglang/``); the parity oracle
(``tests/parity/sglang_oracle.py``) executes them. Mirrors:

- quant method detection: ``srt/configs/model_config.py`` (``_verify_quantization``,
  ``_parse_modelopt_quant_config``: a ModelOpt config with ``quant_algo: FP8`` becomes
  ``modelopt_fp8``); ``quantization_config`` of config.json, else ``compression_config``, else
  ModelOpt's ``hf_quant_config.json`` (no ``text_config`` fallback, unlike vLLM);
- which configs give every attention layer a KV method (``get_quant_method`` of ``Fp8Config``,
  ``ModelOptFp8Config``, ``CompressedTensorsConfig``, ``QuarkConfig``) and the refusals while
  parsing them (``from_config``);
- the ``auto`` KV-cache dtype: ``srt/mem_cache/kv_cache_dtype.py::configure_kv_cache_dtype``
  (FP8 only when the config's ``kv_cache_quant_algo`` is "FP8"; otherwise the model dtype);
- the activation-dtype check (``model_loader/loader.py::_get_quantization_config``) and the
  ROCm refusal of ``modelopt_fp8`` (``model_config.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvscale.engine.base import EnginePath, QuantConfig
from kvscale.engine.sglang.kv_cache_dtypes import KV_CACHE_DTYPES
from kvscale.errors import UsageError
from kvscale.model_config import (
    ModelShape,
    RawQuantConfig,
    brief_json,
    dtype_alias,
    quark_kv_cache_group,
)

_ACTIVATION_DTYPE_CHECKED = frozenset(["fp8", "modelopt_fp8", "compressed-tensors", "quark"])
"""Quant methods whose ``get_supported_act_dtypes`` lists only bfloat16 and float16."""


def _ct_scheme_supported(scheme: Mapping[str, Any]) -> bool:
    """``CompressedTensorsKVCacheMethod.is_supported_scheme`` (``compressed_tensors.py:1276``):
    static symmetric per-tensor FP8; ``symmetric`` defaults to True, ``dynamic`` to False."""
    return (
        scheme.get("type") == "float"
        and scheme.get("num_bits") == 8
        and scheme.get("strategy") == "tensor"
        and bool(scheme.get("symmetric", True))
        and not scheme.get("dynamic", False)
    )


def _modelopt(qc: Mapping[str, Any]) -> tuple[str | None, Any, str | None]:
    """(quant_method, kv_cache_quant_algo, refusal) of a ModelOpt config.

    ``_parse_modelopt_quant_config`` upgrades ``quant_algo: FP8`` to ``modelopt_fp8``;
    ``ModelOptFp8Config.from_config`` (``modelopt_quant.py:470-515``) derives the KV algorithm
    from a flat ``kv_cache_scheme`` dict (float, 8 bits: "FP8"; any other dict: none), else from
    ``kv_cache_quant_algo``; the nested (hf_quant_config.json) form reads ``quantization``.
    """
    if "quant_algo" in qc and qc.get("quant_algo") is not None:
        algo = qc.get("quant_algo")
        scheme = qc.get("kv_cache_scheme")
        if isinstance(scheme, Mapping):
            is_fp8 = scheme.get("type") == "float" and scheme.get("num_bits") == 8
            kv_algo = "FP8" if is_fp8 else None
        else:
            kv_algo = qc.get("kv_cache_quant_algo")
    else:
        inner = qc.get("quantization")
        if not isinstance(inner, Mapping):
            return (
                "modelopt",
                None,
                "ValueError: Cannot find 'quant_algo' in the model's quantization config. "
                "Expected either flat format (config.json) or nested format "
                "(hf_quant_config.json).",
            )
        algo = inner.get("quant_algo")
        kv_algo = inner.get("kv_cache_quant_algo")
        if algo is None:
            missing = "ValueError: Cannot find 'quant_algo' in the model's quantization config. "
            return "modelopt", None, missing
    if algo == "FP8":
        return "modelopt_fp8", kv_algo, None
    if isinstance(algo, str) and ("FP4" in algo or "NVFP4" in algo):
        # ModelOptFp4Config defaults its KV algorithm to "auto": a KV method on every layer.
        return "modelopt_fp4", kv_algo if kv_algo is not None else "auto", None
    return (
        "modelopt",
        None,
        f"ValueError: ModelOptFp8Config only supports regular FP8 quantization, but found "
        f"{algo!r}.",
    )


def parse_quant_config(raw: RawQuantConfig | None) -> QuantConfig:
    """The quant method, KV method and refusals, the way SGLang 0.5.23 reads them."""
    if raw is None or raw.key == "text_config.quantization_config":
        # SGLang reads no text_config fallback (model_config.py:1815-1821).
        return QuantConfig()
    qc = raw.config
    method = qc.get("quant_method")
    method = method.lower().replace("compressed_tensors", "compressed-tensors") if method else None
    refusal: str | None = None
    kv_algo: Any = None
    declaration: str | None = None
    kv_method = False
    ignored: str | None = None
    scheme: Any = None
    if method in (None, "modelopt") and (
        qc.get("quant_algo") is not None
        or isinstance(qc.get("quantization"), Mapping)
        or raw.source == "hf_quant_config.json"
        or method == "modelopt"
    ):
        method, kv_algo, refusal = _modelopt(qc)
        kv_method = bool(kv_algo) and refusal is None
        if kv_algo:
            declaration = f"ModelOpt KV cache {brief_json(kv_algo)}"
    elif method == "fp8":
        kv_method = True
        kv_algo = qc.get("kv_cache_quant_algo")
        scheme = qc.get("kv_cache_scheme")
        if scheme is not None:
            declaration = f"fp8 kv_cache_scheme {brief_json(scheme)}"
        activation = qc.get("activation_scheme")
        if "activation_scheme" not in qc:
            refusal = (
                "ValueError: Cannot find any of ['activation_scheme'] in the model's "
                "quantization config."
            )
        elif activation not in ("static", "dynamic"):
            refusal = f"ValueError: Unsupported activation scheme {activation}"
    elif method == "compressed-tensors":
        scheme = qc.get("kv_cache_scheme")
        if isinstance(scheme, Mapping):
            declaration = f"compressed-tensors kv_cache_scheme {brief_json(scheme)}"
            if _ct_scheme_supported(scheme):
                kv_method, kv_algo = True, "FP8"
            else:
                # compressed_tensors.py:215-224: a warning, no KV method, the scales dropped.
                ignored = (
                    f"Ignoring compressed-tensors kv_cache_scheme {dict(scheme)}: only static "
                    "symmetric per-tensor FP8 scales are supported."
                )
        elif scheme is not None:
            declaration = f"compressed-tensors kv_cache_scheme {brief_json(scheme)}"
            ignored = f"Ignoring compressed-tensors kv_cache_scheme {scheme}"
    elif method == "quark":
        kv_method = True  # quark.py:523-525: every attention layer, even an empty kv_cache_group
        declaration, refusal = quark_kv_cache_group(qc)
    family = method
    if method is not None and method.startswith("modelopt"):
        family = "modelopt"
    return QuantConfig(
        quant_method=family,
        raw_method=method,
        source=raw.source,
        raw=qc,
        engine_path=EnginePath.BASE if kv_method else EnginePath.NONE,
        kv_cache_scheme=scheme,
        kv_declaration=declaration,
        auto_kv_cache_dtype=(
            "fp8_e4m3" if isinstance(kv_algo, str) and kv_algo.upper() == "FP8" else "auto"
        ),
        refusal=refusal,
        ignored_scheme=ignored,
    )


def effective_kv_cache_dtype(requested: str, quant: QuantConfig) -> str:
    if requested not in KV_CACHE_DTYPES:
        raise UsageError(
            f"unknown KV-cache dtype {requested!r} for sglang",
            hint="one of: " + ", ".join(KV_CACHE_DTYPES) + " (SGLang has no 'fp8': use fp8_e4m3)",
        )
    return quant.auto_kv_cache_dtype if requested == "auto" else requested


def resolve_model_dtype(
    requested: str | None, shape: ModelShape, weight_dtypes: frozenset[str]
) -> tuple[str, str]:
    """``--dtype``: as given, else config.json's; a float32 config is served in float16
    (bfloat16 for Gemma models): ``ModelConfig._get_and_verify_dtype``."""
    if requested is not None:
        return requested, "--model-dtype"
    config_dtype = dtype_alias(shape.config_dtype) if shape.config_dtype else None
    how = "config.json torch_dtype"
    if config_dtype is None:
        how = "weights' dtype (config.json has no usable torch_dtype)"
        if "BF16" in weight_dtypes:
            config_dtype = "bfloat16"
        elif "F16" in weight_dtypes:
            config_dtype = "float16"
        else:
            config_dtype, how = "float32", "default float32 (no dtype in config or weights)"
    if config_dtype == "float32":
        gemma = (shape.model_type or "").startswith("gemma")
        return ("bfloat16" if gemma else "float16"), how + ", float32 served as " + (
            "bfloat16 (Gemma)" if gemma else "float16"
        )
    return config_dtype, how


def start_refusal(quant: QuantConfig, model_dtype: str, platform: str) -> str | None:
    """Refusals at engine start that do not depend on the KV-cache dtype."""
    if quant.refusal is not None:
        return quant.refusal
    method = quant.raw_method
    if method == "modelopt_fp8" and platform == "fnuz":
        return "ValueError: modelopt_fp8 quantization is currently not supported in ROCm."
    if method in _ACTIVATION_DTYPE_CHECKED and model_dtype == "float32":
        return (
            f"ValueError: torch.float32 is not supported for quantization method {method}. "
            "Supported dtypes: [torch.bfloat16, torch.float16]"
        )
    return None
