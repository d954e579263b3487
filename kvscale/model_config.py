"""Engine-neutral facts from config.json: the model's shape, its dtype, its quantization_config.

What an engine *does* with these facts (which quant method, which KV-cache dtype, which loading
path) lives with the engine (``kvscale/engine/<name>/``). This module only reads and type-checks
config.json (falling back to ``text_config`` for multimodal models) and finds the
quantization_config dict, so that every engine sees the same validated input and a wrongly typed
value is refused once, with the file's name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kvscale.errors import ConfigError, LimitExceededError, UsageError
from kvscale.globs import GlobSet
from kvscale.limits import MAX_HEADS, MAX_LAYERS, Limit

_DTYPE_ALIASES = {
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float16": "float16",
    "half": "float16",
    "fp16": "float16",
    "float32": "float32",
    "float": "float32",
    "fp32": "float32",
}


def dtype_alias(value: str) -> str | None:
    """``bfloat16``/``float16``/``float32`` for a dtype spelling (``torch.bfloat16``, ``bf16``,
    ``half``, ...), or None."""
    return _DTYPE_ALIASES.get(value.strip().lower().removeprefix("torch."))


def normalize_model_dtype(value: str) -> str:
    key = value.strip().lower().removeprefix("torch.")
    if key not in _DTYPE_ALIASES:
        raise UsageError(f"unknown model dtype {value!r}", hint="use bfloat16, float16 or float32")
    return _DTYPE_ALIASES[key]


@dataclass(frozen=True)
class ModelShape:
    """The architecture facts kvscale needs from config.json."""

    architectures: tuple[str, ...] = ()
    model_type: str | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    config_dtype: str | None = None
    layer_types: tuple[str, ...] | None = None
    hybrid_override_pattern: str | None = None
    head_size: int | None = None
    """``head_dim``, else ``hidden_size // num_attention_heads`` (only verify's samples use it)."""
    head_size_from: str | None = None
    """The config.json values ``head_size`` comes from (``head_dim=128``, or ``hidden_size=4096 /
    num_attention_heads=32``), for verify's messages."""
    kv_lora_rank: int | None = None
    """MLA (DeepSeek-V2/V3 style): the width of the compressed latent ``kv_c`` the cache holds."""
    qk_rope_head_dim: int | None = None
    """MLA: the width of the RoPE part ``k_pe`` cached beside the latent."""
    q_lora_rank: int | None = None
    """MLA: the rank of the query's low-rank projection (``q_a_proj``); None when the query is
    projected directly (DeepSeek-V2-Lite), where the engine's loader fuses nothing."""
    num_kv_shared_layers: int | None = None
    """KV sharing (Gemma-3n/Gemma-4): how many last layers read an earlier layer's KV cache
    instead of writing their own."""
    sliding_window: int | None = None
    """The model's sliding window as its Hugging Face config class holds it (config.json's
    ``sliding_window``; None when 0, null, or turned off by ``use_sliding_window``)."""
    hf_layer_types: tuple[str, ...] | None = None
    """``layer_types`` as the Hugging Face config class holds them: config.json's, else what
    the class derives from the config's pattern fields (:func:`derived_layer_types`)."""
    text_model_type: str | None = None
    """The text model's ``model_type`` (``text_config``'s when there is one: what vLLM's
    ``hf_text_config`` holds, e.g. ``kimi_k2`` under Kimi-K2.5's ``kimi_k25``)."""
    text_architectures: tuple[str, ...] = ()
    """``text_config.architectures``: the text model a multimodal wrapper builds, when named."""
    qk_nope_head_dim: int | None = None
    """MLA: the non-RoPE part of each query/key head (0 in both head dims turns DeepSeek's
    attention into plain MHA)."""
    index_topk: int | None = None
    """DeepSeek-V3.2-style sparse attention (DSA): the indexer's top-k; None for dense MLA."""
    kv_layer_pattern: tuple[bool, ...] | None = None
    """Which decoder layers cache K/V where config.json encodes it in model-specific fields
    (Jamba's ``attn_layer_period``/``attn_layer_offset``, BailingMoeV3's KDA groups); None:
    ``layer_types`` or ``hybrid_override_pattern`` decide."""
    attention_modules: tuple[str, ...] = ()
    """The attention modules under one decoder layer when there are several (LongCat-Flash:
    ``self_attn.0`` and ``self_attn.1``); empty: one, found from the names."""

    @property
    def kv_heads(self) -> int | None:
        return self.num_key_value_heads or self.num_attention_heads

    @property
    def latent_width(self) -> int | None:
        """MLA: the cached row's width, ``kv_lora_rank + qk_rope_head_dim``; None otherwise."""
        if self.kv_lora_rank is None:
            return None
        return self.kv_lora_rank + (self.qk_rope_head_dim or 0)


def show_value(value: Any) -> str:
    """A config value for an error message: its JSON type and a short repr (never a 16 MB line)."""
    kinds = {bool: "boolean", int: "number", float: "number", str: "string"}
    kind = kinds.get(type(value)) or (
        "null"
        if value is None
        else "list"
        if isinstance(value, (list, tuple))
        else "object"
        if isinstance(value, Mapping)
        else type(value).__name__
    )
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{kind} {text}"


def _opt_int(
    config: Mapping[str, Any], key: str, where: str, limit: Limit | None = None
) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(where, f"{key} must be a non-negative integer, got {show_value(value)}")
    if limit is not None and value > limit.value():
        # Layer lists and per-head scale lists are sized from these numbers: refuse before
        # anything is allocated from them.
        raise LimitExceededError(where, f"{key} is {value:,}", hint=limit.describe())
    return value


def _text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    text = config.get("text_config")
    return text if isinstance(text, Mapping) else {}


def parse_model_shape(config: Mapping[str, Any] | None, where: str = "config.json") -> ModelShape:
    """Architecture facts from config.json (falling back to ``text_config`` for VLMs)."""
    if config is None:
        return ModelShape()
    text = _text_config(config)

    def pick(key: str) -> Any:
        return config.get(key) if config.get(key) is not None else text.get(key)

    text_raw = config.get("text_config")
    if text_raw is not None and not isinstance(text_raw, Mapping):
        raise ConfigError(where, f"text_config must be an object, got {show_value(text_raw)}")
    archs = config.get("architectures") or ()
    if not isinstance(archs, (list, tuple)) or not all(isinstance(a, str) for a in archs):
        raise ConfigError(
            where, f"architectures must be a list of strings, got {show_value(archs)}"
        )
    model_type = pick("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise ConfigError(where, f"model_type must be a string, got {show_value(model_type)}")
    dtype_key = "dtype" if pick("dtype") is not None else "torch_dtype"
    dtype = pick(dtype_key)
    if dtype is not None and not isinstance(dtype, str):
        raise ConfigError(where, f"{dtype_key} must be a string, got {show_value(dtype)}")
    layer_types = pick("layer_types")
    if layer_types is not None:
        if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
            raise ConfigError(
                where, f"layer_types must be a list of strings, got {show_value(layer_types)}"
            )
        layer_types = tuple(layer_types)
    pattern = pick("hybrid_override_pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise ConfigError(
            where, f"hybrid_override_pattern must be a string, got {show_value(pattern)}"
        )
    source = config if config.get("num_hidden_layers") is not None else text
    heads_source = config if config.get("num_attention_heads") is not None else text
    heads = _opt_int(heads_source, "num_attention_heads", where, MAX_HEADS)
    head_size = pick("head_dim")
    head_size_from = f"head_dim={head_size}"
    if not (isinstance(head_size, int) and not isinstance(head_size, bool) and head_size > 0):
        hidden = pick("hidden_size")
        valid_hidden = isinstance(hidden, int) and not isinstance(hidden, bool) and hidden > 0
        head_size = hidden // heads if valid_hidden and heads else None
        head_size_from = f"hidden_size={hidden} / num_attention_heads={heads}"
    layers = _opt_int(source, "num_hidden_layers", where, MAX_LAYERS)
    window = _sliding_window(config, text, where)
    return ModelShape(
        architectures=tuple(archs),
        model_type=model_type,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=_opt_int(heads_source, "num_key_value_heads", where, MAX_HEADS),
        config_dtype=dtype,
        layer_types=layer_types,
        hybrid_override_pattern=pattern,
        # Kept whatever its size: verify, the one user, bounds its work by max-verify-elements
        # and its memory by chunks, and its refusals name head_size_from (a silently dropped
        # head_dim would verify another shape).
        head_size=head_size or None,
        head_size_from=head_size_from if head_size else None,
        kv_lora_rank=_optional_positive(config, text, "kv_lora_rank", where),
        qk_rope_head_dim=_optional_positive(config, text, "qk_rope_head_dim", where),
        q_lora_rank=_optional_positive(config, text, "q_lora_rank", where),
        num_kv_shared_layers=_optional_positive(config, text, "num_kv_shared_layers", where),
        sliding_window=window,
        hf_layer_types=layer_types
        if layer_types is not None
        else derived_layer_types(text.get("model_type") or model_type, layers, window, pick),
        text_model_type=text["model_type"]
        if isinstance(text.get("model_type"), str)
        else model_type,
        text_architectures=_text_architectures(text),
        qk_nope_head_dim=_opt_int(
            config if config.get("qk_nope_head_dim") is not None else text,
            "qk_nope_head_dim",
            where,
        ),
        index_topk=_optional_positive(config, text, "index_topk", where),
        kv_layer_pattern=_kv_layer_pattern(model_type, pick),
        attention_modules=_ATTENTION_MODULES.get(model_type or "", ()),
    )


def _text_architectures(text: Mapping[str, Any]) -> tuple[str, ...]:
    archs = text.get("architectures")
    if isinstance(archs, list) and all(isinstance(a, str) for a in archs):
        return tuple(archs)
    return ()


_ATTENTION_MODULES = {
    # LongcatFlashDecoderLayer builds `self_attn` as a ModuleList of two MLA attentions
    # (vLLM model_executor/models/longcat_flash.py; transformers' LongcatFlash the same).
    "longcat_flash": ("self_attn.0", "self_attn.1"),
}


def _kv_layer_pattern(model_type: str | None, pick: Any) -> tuple[bool, ...] | None:
    """Decoder layers that cache K/V, for the hybrids whose config encodes them in its own
    fields rather than ``layer_types``."""
    n = pick("num_hidden_layers")
    if not isinstance(n, int) or isinstance(n, bool) or not 0 < n <= MAX_LAYERS.value():
        return None
    if model_type == "jamba":
        # JambaConfig.layers_block_type (transformers) = vLLM's JambaModel layer choice:
        # attention where i % attn_layer_period == attn_layer_offset, Mamba elsewhere.
        period, offset = pick("attn_layer_period"), pick("attn_layer_offset")
        if not (isinstance(period, int) and isinstance(offset, int) and period > 0):
            return None
        return tuple(i % period == offset for i in range(n))
    if model_type == "bailing_hybrid":
        # BailingMoeV3 _is_kda_layer (vLLM model_executor/models/bailing_moe_v3.py): every
        # layer_group_size-th layer, and the layers past the last whole group, are MLA; the
        # others are Kimi delta attention (a recurrent state, no KV cache).
        group = pick("layer_group_size")
        if not isinstance(group, int) or isinstance(group, bool) or group <= 0:
            return None
        whole = n // group * group
        return tuple((i + 1) % group == 0 or i >= whole for i in range(n))
    return None


def _optional_positive(
    config: Mapping[str, Any], text: Mapping[str, Any], key: str, where: str
) -> int | None:
    source = config if config.get(key) is not None else text
    value = _opt_int(source, key, where)
    return value or None


_WINDOW_NEEDS_SWITCH = frozenset(["qwen2", "qwen3", "qwen2_moe", "qwen3_moe"])
"""Model types whose config class keeps ``sliding_window`` only with ``use_sliding_window``
true, which defaults to false (transformers ``Qwen2Config.__post_init__`` and its kin)."""


def _sliding_window(config: Mapping[str, Any], text: Mapping[str, Any], where: str) -> int | None:
    """config.json's ``sliding_window`` unless ``use_sliding_window`` is false (Qwen2 keeps the
    number but turns the window off; its config class defaults the switch to false). 0 is no
    window: vLLM's ``ModelConfig.__post_init__`` sets it to None (config/model.py)."""
    source = config if config.get("sliding_window") is not None else text
    model_type = text.get("model_type") or config.get("model_type")
    switch = source.get("use_sliding_window")
    if switch is False or (switch is None and model_type in _WINDOW_NEEDS_SWITCH):
        return None
    return _opt_int(source, "sliding_window", where) or None


def _every(pattern: int, index: int) -> str:
    """Gemma-style patterns: every ``pattern``-th layer (1-based) is full attention."""
    return "sliding_attention" if (index + 1) % pattern else "full_attention"


def _config_int(pick: Callable[[str], Any], key: str, default: int, least: int) -> int:
    """An integer config field as the class uses it, or its class default."""
    value = pick(key)
    valid = isinstance(value, int) and not isinstance(value, bool) and value >= least
    return value if valid else default


def derived_layer_types(
    model_type: str | None,
    num_hidden_layers: int | None,
    sliding_window: int | None,
    pick: Callable[[str], Any],
) -> tuple[str, ...] | None:
    """The ``layer_types`` a Hugging Face config class (transformers 5.x) derives in its
    ``__post_init__`` when config.json has none, for the model types with sliding-window
    layers; None for the others (their class keeps None). vLLM reads ``hf_text_config
    .layer_types`` after the class ran, for which layers slide and whether the model-level
    window applies (engine/arg_utils.py ``create_engine_config``)."""
    n = num_hidden_layers or 0
    if model_type == "gemma2" or model_type == "gpt_oss":
        # Gemma2Config, GptOssConfig: every second layer is full attention.
        return tuple(_every(2, i) for i in range(n))
    if model_type in ("gemma3", "gemma3_text"):
        # Gemma3TextConfig: the legacy int sliding_window_pattern, default 6.
        pattern = _config_int(pick, "sliding_window_pattern", 6, 1)
        return tuple(_every(pattern, i) for i in range(n))
    if model_type == "cohere2":
        pattern = _config_int(pick, "sliding_window_pattern", 4, 1)
        return tuple(_every(pattern, i) for i in range(n))
    if model_type in ("qwen2", "qwen3"):
        # Qwen2Config/Qwen3Config: layers from max_window_layers on slide, if a window is on.
        first = _config_int(pick, "max_window_layers", 28, 0)
        return tuple(
            "sliding_attention" if sliding_window is not None and i >= first else "full_attention"
            for i in range(n)
        )
    if model_type == "qwen2_moe":
        first = _config_int(pick, "max_window_layers", 28, 0)
        return tuple(
            "sliding_attention"
            if (i + 1) % 2 and i < first and sliding_window is not None
            else "full_attention"
            for i in range(n)
        )
    return None


@dataclass(frozen=True)
class RawQuantConfig:
    """The quantization_config dict and where it was found."""

    config: Mapping[str, Any]
    source: str
    """``config.json`` or ``hf_quant_config.json``."""
    where: str
    """The file, for messages (its full path when known)."""
    key: str
    """The entry that held it, for messages (``quantization_config``, ...)."""


def find_quant_config(
    config: Mapping[str, Any] | None,
    hf_quant_config: Mapping[str, Any] | None,
    where: str = "config.json",
    *,
    hf_where: str = "hf_quant_config.json",
) -> RawQuantConfig | None:
    """config.json ``quantization_config`` (or ``text_config.quantization_config``, or the older
    compressed-tensors ``compression_config``), else ModelOpt's legacy ``hf_quant_config.json``.

    vLLM 0.33.0 ``transformers_utils/config.py`` (``get_config``) looks in this order
    (SGLang 0.5.23 reads the same keys: see ``kvscale/engine/sglang``.)
    """
    qc: Any = None
    key = "quantization_config"
    if config is not None:
        qc = config.get("quantization_config")
        if qc is None:
            qc, key = (
                _text_config(config).get("quantization_config"),
                "text_config.quantization_config",
            )
        if qc is None:
            qc, key = config.get("compression_config"), "compression_config"
    source = "config.json"
    if qc is None and hf_quant_config is not None:
        qc, source, where, key = hf_quant_config, "hf_quant_config.json", hf_where, "the file"
    if qc is None:
        return None
    if not isinstance(qc, Mapping):
        raise ConfigError(where, f"{key} must be an object, got {show_value(qc)}")
    method = qc.get("quant_method")
    if method is not None and not isinstance(method, str):
        raise ConfigError(where, f"quant_method must be a string, got {show_value(method)}")
    return RawQuantConfig(qc, source, where, key)


# --- writing a KV-cache scheme (calibrate --checkpoint) ------------------------------------------

CT_STRATEGY = {"tensor": "tensor", "head": "attn_head"}
"""calibrate's ``--strategy`` -> compressed-tensors ``kv_cache_scheme.strategy``."""


def ct_kv_cache_scheme(strategy: str) -> dict[str, Any]:
    """A static, symmetric FP8 (e4m3) ``kv_cache_scheme``, per tensor or per KV head, as
    compressed-tensors' ``QuantizationArgs`` serialises it (the keys engines read)."""
    return {
        "num_bits": 8,
        "type": "float",
        "strategy": CT_STRATEGY[strategy],
        "dynamic": False,
        "symmetric": True,
    }


def kv_only_quantization_config(strategy: str) -> dict[str, Any]:
    """The quantization_config of a checkpoint whose only quantization is its KV cache: the
    compressed-tensors form llm-compressor writes for a KV-only recipe (no weight groups).

    ``config_groups`` is present although empty: vLLM 0.33's compressed-tensors loader sizes
    per-head scales from the model's head counts only when it is there (``kvscale.engine.vllm``)."""
    return {
        "quant_method": "compressed-tensors",
        "format": "dense",
        "quantization_status": "compressed",
        "config_groups": {},
        "ignore": [],
        "kv_cache_scheme": ct_kv_cache_scheme(strategy),
    }


def brief_json(value: Any) -> str:
    """A config value quoted in a declaration or refusal: compact JSON, at most 100 characters."""
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 100 else text[:97] + "..."


# --- Quark's export config and layer-name globs -----------------------------------------------


def quark_kv_cache_group(qc: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """(declaration, refusal) of a Quark quantization_config's KV cache: ``QuarkConfig.from_config``
    and ``QuarkKVCacheMethod.validate_kv_cache_config``. One function for both engines: SGLang
    0.5.23's ``srt/layers/quantization/quark/quark.py`` ports vLLM 0.33.0's
    ``model_executor/layers/quantization/quark/quark.py`` with the same checks, in the same order,
    and the same messages (each parity oracle runs its engine's own copy against this)."""
    export = qc.get("export")
    if not isinstance(export, Mapping):
        return None, (
            "ValueError: The export key should be included in the configurations of Quark "
            "quantized model"
        )
    group = export.get("kv_cache_group")
    if group is None:
        # QuarkConfig.from_config calls len(kv_cache_group) on whatever the export holds.
        return (
            None,
            "TypeError: object of type 'NoneType' has no len() (Quark export.kv_cache_group)",
        )
    if not group:
        return None, None
    if not isinstance(group, list) or not all(isinstance(p, str) for p in group):
        return None, "TypeError: Quark export.kv_cache_group must be a list of patterns"
    layer_cfg = qc.get("layer_quant_config")
    if not isinstance(layer_cfg, Mapping):
        return f"Quark kv_cache_group {group}", (
            "AttributeError: Quark quantization_config has no layer_quant_config object"
        )
    # Each name is matched once against every pattern together (kvscale.globs: the engines'
    # fnmatch per pair is minutes for a 400-layer MoE's names and hundreds of patterns).
    globs = GlobSet(group)
    matched = [cfg for name, cfg in layer_cfg.items() if globs.matches(name)]
    declared = f"Quark kv_cache_group {group}"
    if not (set(group).issubset(layer_cfg.keys()) or matched):
        return declared, (
            "ValueError: The Quark quantized model has the kv_cache_group parameter setting, "
            "but no kv_cache quantization settings were found in the quantization configuration."
        )
    outputs = [cfg.get("output_tensors") if isinstance(cfg, Mapping) else None for cfg in matched]
    if any(o != outputs[0] for o in outputs):
        return declared, (
            "ValueError: The quantization method used for kv_cache should be the same, but the "
            "quantization method for the kv_cache layer in the config is different."
        )
    kv = outputs[0] if outputs else None
    if kv is None:
        return declared, "ValueError: The kv_cache quantization configuration is empty."
    if not isinstance(kv, Mapping):
        return declared, "AttributeError: Quark kv_cache output_tensors must be an object"
    declared = f"Quark kv_cache_group {group} output_tensors {brief_json(kv)}"
    if kv.get("dtype") != "fp8_e4m3":
        return declared, (
            "NotImplementedError: Currently supported kv cache quantization is dtype=fp8_e4m3, "
            f"however received {kv.get('dtype')}"
        )
    if kv.get("qscheme") != "per_tensor":
        return declared, (
            "NotImplementedError: Only support per-tensor scaling factor for quark KV cache. "
            f"Expected qscheme: per_tensor, found qscheme: {kv.get('qscheme')}"
        )
    return declared, None
