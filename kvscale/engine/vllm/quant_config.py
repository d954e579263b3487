"""How vLLM 0.33.0 reads a checkpoint's quantization config and picks the KV-cache dtype.

Mirrors:
- quant method detection: ``transformers_utils/model_arch_config_convertor.py``
  (``_normalize_quantization_config``: ModelOpt producer/legacy detection, lower-casing,
  ``compressed_tensors`` -> ``compressed-tensors``) and ``transformers_utils/config.py`` (legacy
  ``hf_quant_config.json`` when config.json has no ``quantization_config``);
- the effective KV-cache dtype for ``auto``: ``utils/torch_utils.py``
  (``resolve_kv_cache_dtype_string`` / ``get_kv_cache_quant_algo_string``, ModelOpt only) and
  ``layers/attention/attention.py`` (``Attention.__init__`` promotes ``auto`` to ``fp8`` when the
  quant config has a ``kv_cache_scheme`` attribute, which only compressed-tensors has);
- the model dtype: ``config/model.py`` (``_get_and_verify_dtype``/``_resolve_auto_dtype``: a float32
  config is served in bfloat16 on GPUs that support it);
- the scheme checks that refuse a model at start: ``CompressedTensorsKVCacheMethod
  .validate_kv_cache_scheme``, ``QuarkConfig.from_config`` + ``QuarkKVCacheMethod
  .validate_kv_cache_config``, ``ModelOptNvFp4Config._from_config`` (legacy fields),
  ``VllmConfig._reject_mismatched_float_kv_cache`` (float16/bfloat16 against the model), and
  per layer ``_init_kv_cache_quant`` (fp8_e5m2 with FP8 checkpoints).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kvscale.engine.base import EnginePath, QuantConfig
from kvscale.engine.vllm.kv_cache_dtypes import KV_CACHE_DTYPES
from kvscale.errors import UsageError
from kvscale.model_config import (
    ModelShape,
    RawQuantConfig,
    brief_json,
    dtype_alias,
    quark_kv_cache_group,
)

_ENGINE_PATHS = {
    "compressed-tensors": EnginePath.COMPRESSED_TENSORS,
    "fp8": EnginePath.BASE,
    "modelopt": EnginePath.BASE,
    "quark": EnginePath.BASE,
}
"""Quant method family -> loading path (``get_quant_method`` of each config class)."""

_MODELOPT_ALGOS = {
    "FP8": "modelopt",
    "FP8_PER_CHANNEL_PER_TOKEN": "modelopt",
    "FP8_PB_WO": "modelopt",
    "NVFP4": "modelopt_fp4",
    "MIXED_PRECISION": "modelopt_mixed",
}


def parse_quant_config(raw: RawQuantConfig | None) -> QuantConfig:
    """Detect the quant method and KV-cache declaration the way vLLM v0.33.0 does."""
    if raw is None:
        return QuantConfig()
    qc, source = raw.config, raw.source

    producer = qc.get("producer")
    producer_name = producer.get("name") if isinstance(producer, Mapping) else None
    inner = qc.get("quantization", {})
    is_legacy_modelopt = isinstance(inner, Mapping) and "modelopt_quant_config" in inner
    raw_method = qc.get("quant_method")
    method: str | None
    refusal: str | None = None
    if producer_name == "modelopt" or is_legacy_modelopt:
        algo = inner.get("quant_algo") if isinstance(inner, Mapping) else None
        if algo is not None:
            mapped = _MODELOPT_ALGOS.get(str(algo).upper())
            if mapped is None:
                refusal = f"ValueError: Unknown ModelOpt quant algo: {algo}"
                mapped = "modelopt"
            raw_method = mapped
    method = (raw_method or "").lower().replace("compressed_tensors", "compressed-tensors") or None
    family = method
    if method is not None and method.startswith("modelopt"):
        family = "modelopt"

    kv_scheme: Any = None
    declaration: str | None = None
    auto_dtype = "auto"
    has_groups = False
    if family == "compressed-tensors":
        kv_scheme = qc.get("kv_cache_scheme")
        has_groups = "config_groups" in qc
        if kv_scheme is not None:
            declaration = f"compressed-tensors kv_cache_scheme {brief_json(kv_scheme)}"
            auto_dtype = "fp8"  # Attention.__init__: a kv_cache_scheme turns "auto" into "fp8"
            refusal = refusal or _validate_ct_scheme(kv_scheme)
    elif family == "modelopt":
        auto_dtype, declaration = _modelopt_kv_dtype(qc)
        refusal = refusal or _modelopt_nvfp4_fields(qc)
    elif family == "quark":
        declaration, quark_refusal = quark_kv_cache_group(qc)
        refusal = refusal or quark_refusal
    elif family == "fp8":
        scheme = qc.get("kv_cache_scheme")
        if scheme is not None:
            declaration = f"fp8 kv_cache_scheme {brief_json(scheme)}"
        if "activation_scheme" not in qc:
            # Fp8Config.from_config: get_from_keys(config, ["activation_scheme"]) is required.
            refusal = refusal or (
                "ValueError: Cannot find any of ['activation_scheme'] in the model's "
                "quantization config."
            )

    return QuantConfig(
        quant_method=family,
        engine_path=_ENGINE_PATHS.get(family or "", EnginePath.NONE),
        raw_method=method,
        source=source,
        raw=qc,
        kv_cache_scheme=kv_scheme,
        ct_has_config_groups=has_groups,
        kv_declaration=declaration,
        auto_kv_cache_dtype=auto_dtype,
        refusal=refusal,
    )


def _validate_ct_scheme(scheme: Any) -> str | None:
    """``CompressedTensorsKVCacheMethod.validate_kv_cache_scheme``; returns the refusal text."""
    if not isinstance(scheme, Mapping):
        return (
            f"AttributeError: compressed-tensors kv_cache_scheme must be an object, "
            f"got {type(scheme).__name__}"
        )
    type_, num_bits = scheme.get("type"), scheme.get("num_bits")
    if type_ != "float" or num_bits != 8:
        return (
            "NotImplementedError: Currently supported kv cache quantization is num_bits=8, "
            f"type=float, however received num_bits={num_bits}, type={type_}"
        )
    strategy = scheme.get("strategy")
    known = ("tensor", "channel", "group", "block", "token", "tensor_group", "attn_head")
    if strategy not in known:
        return f"ValueError: {strategy!r} is not a valid QuantizationStrategy"
    if strategy not in ("tensor", "attn_head"):
        return (
            "NotImplementedError: Invalid strategy for compressed-tensors KV cache. "
            f"Expected strategies: tensor, attn_head, found strategy: {strategy}"
        )
    if not scheme.get("symmetric"):
        return (
            "NotImplementedError: Only support symmetric scaling factor for compressed-tensors "
            f"KV cache. However found symmetric: {scheme.get('symmetric')}"
        )
    return None


def _modelopt_nvfp4_fields(qc: Mapping[str, Any]) -> str | None:
    """``ModelOptNvFp4Config._from_config`` (quantization/modelopt.py): a legacy
    ``{"quantization": {...}}`` config whose ``quant_algo`` names NVFP4 must carry these
    fields, listed in this order when missing."""
    inner = qc.get("quantization")
    if not isinstance(inner, Mapping) or "NVFP4" not in str(inner.get("quant_algo", "")).upper():
        return None
    missing = [
        key for key in ("group_size", "kv_cache_quant_algo", "exclude_modules") if key not in inner
    ]
    if not missing:
        return None
    return (
        "ValueError: NVFP4 quantization requires the following fields in "
        f"hf_quant_config.json: {missing}"
    )


_MODELOPT_KV_MAP = {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}


def _modelopt_kv_dtype(qc: Mapping[str, Any]) -> tuple[str, str | None]:
    """``get_kv_cache_quant_algo_string`` for ModelOpt configs: (auto dtype, declaration)."""
    inner = qc.get("quantization", qc)
    if not isinstance(inner, Mapping):
        inner = qc
    kv_algo = (
        inner.get("kv_cache_scheme")
        or qc.get("kv_cache_scheme")
        or inner.get("kv_cache_quant_algo")
        or qc.get("kv_cache_quant_algo")
    )
    if kv_algo is None:
        return "auto", None
    declaration = f"ModelOpt KV cache {brief_json(kv_algo)}"
    if isinstance(kv_algo, Mapping):
        # Only an explicitly static (dynamic: false) 8-bit float scheme counts; the dict becomes
        # the string "fp8" (or "nvfp4") and then goes through the same string map below.
        if (
            kv_algo.get("dynamic") is False
            and kv_algo.get("num_bits") == 8
            and kv_algo.get("type") == "float"
        ):
            kv_algo = "fp8"
        elif kv_algo.get("num_bits") == 4 and kv_algo.get("type") == "float":
            kv_algo = "nvfp4"
        else:
            return "auto", declaration
    if isinstance(kv_algo, str):
        return _MODELOPT_KV_MAP.get(kv_algo.lower(), "auto"), declaration
    return "auto", declaration


def effective_kv_cache_dtype(requested: str, quant: QuantConfig) -> str:
    if requested not in KV_CACHE_DTYPES:
        raise UsageError(
            f"unknown --kv-cache-dtype {requested!r}",
            hint="one of: " + ", ".join(KV_CACHE_DTYPES),
        )
    return quant.auto_kv_cache_dtype if requested == "auto" else requested


def layer_dtype_refusals(quant: QuantConfig) -> dict[str, str]:
    """``_init_kv_cache_quant`` (layers/attention/attention.py): a layer whose own KV-cache
    dtype is ``fp8_e5m2`` is refused when its KV method loads FP8 scales: every
    ``BaseKVCacheMethod`` (fp8, ModelOpt of any algo, Quark) and compressed-tensors with a
    ``kv_cache_scheme``. A layer kept at ``auto`` by the skip list is not refused."""
    path = quant.engine_path
    if path is EnginePath.BASE or (
        path is EnginePath.COMPRESSED_TENSORS and quant.kv_cache_scheme is not None
    ):
        return {"fp8_e5m2": "ValueError: fp8_e5m2 kv-cache is not supported with fp8 checkpoints."}
    return {}


def float_kv_cache_refusal(kv_cache_dtype: str, model_dtype: str) -> str | None:
    """``VllmConfig._reject_mismatched_float_kv_cache`` (config/vllm.py): an explicit
    ``float16``/``bfloat16`` KV cache must be the model's dtype."""
    if kv_cache_dtype not in ("float16", "bfloat16") or kv_cache_dtype == model_dtype:
        return None
    allowed = f"`auto` or `{model_dtype}`" if model_dtype in ("float16", "bfloat16") else "`auto`"
    return (
        f'ValueError: kv_cache_dtype="{kv_cache_dtype}" is incompatible with '
        f'dtype="{model_dtype}". Please set `--kv-cache-dtype` to {allowed}.'
    )


def resolve_model_dtype(
    requested: str | None, shape: ModelShape, weight_dtypes: frozenset[str]
) -> tuple[str, str]:
    """The dtype the engine builds the model in: (dtype, how it was decided)."""
    if requested is not None:
        return requested, "--model-dtype"
    config_dtype: str | None = None
    how = "config.json torch_dtype"
    if shape.config_dtype is not None:
        config_dtype = dtype_alias(shape.config_dtype)
    if config_dtype is None:
        # vLLM falls back to the weights' dtypes (common_broadcastable_dtype over the headers).
        how = "weights' dtype (config.json has no usable torch_dtype)"
        if "F32" in weight_dtypes or "F64" in weight_dtypes:
            config_dtype = "float32"
        elif "BF16" in weight_dtypes:
            config_dtype = "bfloat16"
        elif "F16" in weight_dtypes:
            config_dtype = "float16"
        else:
            config_dtype, how = "float32", "default float32 (no dtype in config or weights)"
    if config_dtype == "float32":
        # _resolve_auto_dtype: float32 checkpoints run in the platform's preferred dtype, which is
        # bfloat16 on every GPU that runs FP8 KV caches (CUDA sm80+, ROCm MI300).
        return "bfloat16", how + ", float32 served as bfloat16"
    return config_dtype, how
