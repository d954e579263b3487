"""Load a local Hugging Face model for calibration and map its KV-cache attention layers.

``load_model`` loads MODEL with ``AutoModelForCausalLM.from_pretrained`` as transformers does by
default (its default attention implementation; no remote code; local files only), then runs a
*probe*: two forward passes over a few tokens, one with a ``RecordingCache`` and one without a
cache, both through ``attention_hook``. The probe decides, from what the model actually does:

* which layers have a KV cache: those whose ``cache.update(k, v, layer_idx)`` is called
  (linear-attention, convolution and Mamba layers of hybrid models never call it);
* that each of them goes through transformers' attention interface: an attention module with
  the same ``layer_idx`` calls the attention function, once per forward pass, with the K/V
  that ``update`` stored (a layer that updates the cache but computes attention its own way is
  refused, never calibrated from the wrong tensor);
* each layer's KV heads and head size (from the tensors) and sliding window (the
  ``sliding_window`` argument the model passes to the attention function, as Mistral, Qwen2
  and Gemma2 do at v5.17.0; None when it passes none).

MLA layers (DeepSeek-V2/V3 style: the attention module's config has ``kv_lora_rank``) cache one
latent row per token, ``[kv_c | k_pe]`` (vLLM 0.33.0 ``concat_and_cache_mla``): the RMS-normed
compressed KV (``kv_lora_rank`` wide) and the post-RoPE shared key part (``qk_rope_head_dim``
wide). transformers >= 5.15 hands exactly those two tensors to ``cache.update`` as ``[1, 1, S,
kv_lora_rank]`` and ``[1, 1, S, qk_rope_head_dim]`` (e.g. 5.24.0
``models/deepseek_v3/modeling_deepseek_v3.py`` line 460; the same call in ``deepseek_v2``,
``deepseek_v32``, ``glm4_moe_lite``, ``longcat_flash``, ``minicpm3``, ``mistral4``, ...) and only
then expands them to per-head K/V for the attention function. The probe records such a layer as
latent (``AttentionLayer.latent``): calibrate and verify observe it at the cache update, never at
the attention function. Refused, one line each (exit 2): an MLA config without a positive
``kv_lora_rank`` and ``qk_rope_head_dim``; an update of another width than the config's (the
engine sizes its cache rows from the config); and transformers releases that cache the expanded
per-head K/V instead (5.0-5.14), whose cache holds no tensor the engine caches.

Each calibrated module's checkpoint prefix (the name under which ``k_scale`` will be written) is
found from the module tree and the checkpoint's actual tensor names: the module's own
parameters (``k_proj.weight`` ...) must exist under it. When transformers renamed keys on load
(``conversion_mapping``, base-model prefix added or stripped), the checkpoint names are mapped
forward with transformers' own ``rename_source_key``, as ``convert_and_load_state_dict_in_model``
does at v5.17.0, and the result is checked against the module's parameters.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kvscale.errors import EnvironmentMissingError, InputError, UsageError
from kvscale.model.hook import (
    HookError,
    RecordingCache,
    attention_hook,
    cache_kwarg_name,
    quiet_transformers,
    transformers_module,
)

__all__ = [
    "DEVICES",
    "DTYPES",
    "PROBE_TOKENS",
    "AttentionLayer",
    "LatentRow",
    "LoadedModel",
    "ModelLoadError",
    "SkippedLayer",
    "UnsupportedModelError",
    "checkpoint_tensor_names",
    "load_model",
    "map_attention_layers",
    "mla_widths",
    "short_error",
]

DTYPES: dict[str, torch.dtype] = {
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
    "float32": torch.float32,
}
DEVICES = ("cpu", "cuda", "auto")
PROBE_TOKENS = 6
"""Tokens of the probe forward passes (any length works; short keeps it instant)."""

MLA_CONFIG_KEY = "kv_lora_rank"
"""The config attribute that means a latent (MLA) KV cache: every transformers 5.24 config class
with it (DeepseekV2/V3/V32Config, Glm4MoeLiteConfig, LongcatFlashConfig, MiniCPM3Config, ...)
belongs to an attention module that caches ``[kv_c | k_pe]``; DeepseekV4Config, whose attention
is another design, has ``qk_rope_head_dim`` but no ``kv_lora_rank``."""
MLA_WIDTH_KEYS = ("kv_lora_rank", "qk_rope_head_dim")
LATENT_CACHE_SINCE = "5.15.0"
"""The first transformers release whose MLA attention caches the latent: 5.15.0
``models/deepseek_v3/modeling_deepseek_v3.py`` line 461 ``past_key_values.update(kv_nope, k_rot,
...)``; 5.14.0 line 449 caches ``key_states, value_states`` after ``kv_b_proj`` (the expanded
per-head K/V), as 5.0.0, 5.10.0, 5.12.0 and 5.13.0 do. The probe, run under the 5.14.0 wheel,
refuses the tiny DeepSeek-V3 of the tests with the expanded-K/V message; under 5.15.0 it records
latent layers and the capture equals the update oracle to the bit."""


class ModelLoadError(InputError):
    """transformers cannot load the model (missing or mismatched weights, broken config)."""


class UnsupportedModelError(InputError):
    """The model loads, but kvscale cannot observe its KV cache correctly: refused (exit 2)."""


@dataclass(frozen=True)
class LatentRow:
    """An MLA layer's cache row per token: ``[kv_c | k_pe]``, ``kv_lora_rank + rope_dim`` wide,
    one scale for the whole row (vLLM 0.33.0 ``concat_and_cache_mla`` divides every element by
    ``*scale``, the layer's k scale)."""

    kv_lora_rank: int
    rope_dim: int

    @property
    def width(self) -> int:
        return self.kv_lora_rank + self.rope_dim


@dataclass(frozen=True)
class AttentionLayer:
    """One calibrated attention layer: where it lives in transformers, the checkpoint, vLLM."""

    layer_idx: int
    """``module.layer_idx``: the index transformers' cache uses."""
    module_path: str
    """Module path in the loaded model (``model.layers.3.self_attn``)."""
    checkpoint_prefix: str
    """Attention prefix as the checkpoint's tensor names spell it (``k_scale`` goes under it)."""
    engine_name: str
    """vLLM's attention layer name, ``<checkpoint_prefix>.attn`` (as ``inspect`` names layers)."""
    layer_type: str
    """``config.layer_types[layer_idx]`` (``full_attention``, ``sliding_attention``, ...)."""
    sliding_window: int | None
    num_kv_heads: int
    head_size: int
    v_head_size: int
    device: str
    latent: LatentRow | None = None
    """MLA: the cached row (then ``num_kv_heads`` is 1, ``head_size`` the row's width and
    ``v_head_size`` 0: the latent has no V of its own); None for a K/V cache."""


@dataclass(frozen=True)
class SkippedLayer:
    """A decoder layer (or attention module) with no KV cache of its own: not calibrated."""

    layer_idx: int | None
    module_path: str | None
    layer_type: str | None
    reason: str


@dataclass(frozen=True)
class LoadedModel:
    path: str
    architecture: str
    model_type: str
    dtype: str
    """bfloat16 | float16 | float32: the dtype the model runs (and its K/V are) in."""
    device: str
    """``cpu``, ``cuda:0``, or ``auto`` (accelerate's ``device_map="auto"``)."""
    device_map: Mapping[str, str] | None
    attn_implementation: str
    vocab_size: int
    layers: tuple[AttentionLayer, ...]
    skipped: tuple[SkippedLayer, ...]
    transformers_version: str
    model: Any = field(repr=False, compare=False)
    tokenizer: Any = field(default=None, repr=False, compare=False)

    @property
    def has_tokenizer(self) -> bool:
        return self.tokenizer is not None

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Token ids of ``text`` (``TextEncoder`` for ``load_calibration_data``)."""
        if self.tokenizer is None:
            raise InputError(self.path, "the model has no tokenizer")
        ids = self.tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]
        return [int(t) for t in ids]

    @property
    def input_device(self) -> torch.device:
        return input_device(self.model)


def input_device(model: Any) -> torch.device:
    """Where input ids go: the embedding's device (accelerate moves them on from there)."""
    weight = model.get_input_embeddings().weight
    return torch.device("cpu") if weight.device.type == "meta" else weight.device


# --- checkpoint files ---------------------------------------------------------------------------


def checkpoint_tensor_names(path: Path) -> frozenset[str]:
    """Every tensor name of a safetensors model directory (index or single/multiple files).

    Reads headers only. Raises ModelLoadError when there are no safetensors weights or the index
    names a shard that is missing.
    """
    from safetensors import safe_open

    index = path / "model.safetensors.index.json"
    files: list[Path]
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
            shards = sorted(set(weight_map.values()))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelLoadError(index, f"unreadable safetensors index ({exc})") from None
        files = [path / str(s) for s in shards]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise ModelLoadError(
                path,
                f"missing weights: the index names {len(missing)} absent shard(s), "
                f"first {missing[0]}",
            )
    else:
        files = sorted(path.glob("*.safetensors"))
    if not files:
        extra = ""
        if any(path.glob("*.bin")) or any(path.glob("*.gguf")):
            extra = " (only .bin/.gguf files; kvscale loads safetensors weights)"
        raise ModelLoadError(path, f"missing weights: no *.safetensors file{extra}")
    names: set[str] = set()
    for f in files:
        try:
            with safe_open(str(f), framework="pt") as handle:
                names.update(handle.keys())
        except Exception as exc:  # safetensors raises its own error types
            raise ModelLoadError(f, f"unreadable safetensors file ({exc})") from None
    return frozenset(names)


# --- loading ------------------------------------------------------------------------------------


def short_error(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first[:300]}" if first else type(exc).__name__


def _load_config(path: Path) -> Any:
    AutoConfig = transformers_module("transformers").AutoConfig  # noqa: N806

    try:
        with quiet_transformers():
            return AutoConfig.from_pretrained(str(path), local_files_only=True)
    except ValueError as exc:
        msg = str(exc)
        if "trust_remote_code" in msg:
            raise UnsupportedModelError(
                path,
                "the model needs trust_remote_code (custom modeling code), which kvscale never "
                "runs",
            ) from None
        if "Unrecognized model" in msg or "does not recognize this architecture" in msg:
            raise UnsupportedModelError(
                path,
                "unknown architecture: transformers does not recognize this model_type",
                hint="upgrade transformers, or calibrate a supported decoder",
            ) from None
        raise ModelLoadError(path, f"unreadable config.json ({short_error(exc)})") from None
    except (OSError, KeyError, TypeError) as exc:
        raise ModelLoadError(path, f"unreadable config.json ({short_error(exc)})") from None


def _drop_kv_only_quantization(config: Any) -> None:
    """A quantization_config that quantizes only the KV cache (compressed-tensors with a
    ``kv_cache_scheme`` and no weight ``config_groups``, what ``kvscale calibrate --checkpoint``
    and llm-compressor's KV-only recipes write) changes no weight; transformers would still
    route loading through the compressed-tensors integration (and require that package).
    kvscale emulates the cache itself, so the model is loaded as the unquantized model it is."""
    for cfg in {id(c): c for c in (config, _text_config(config))}.values():
        qc = getattr(cfg, "quantization_config", None)
        if not isinstance(qc, Mapping):
            qc = getattr(qc, "to_dict", lambda: None)()
        if (
            isinstance(qc, Mapping)
            and qc.get("quant_method") == "compressed-tensors"
            and qc.get("kv_cache_scheme") is not None
            and not qc.get("config_groups")
        ):
            delattr(cfg, "quantization_config")


def _text_config(config: Any) -> Any:
    get = getattr(config, "get_text_config", None)
    return get(decoder=True) if callable(get) else config


def mla_widths(path: Path | str, config: Any) -> LatentRow | None:
    """The latent row an MLA config declares, None for a config without ``kv_lora_rank``.

    Raises UnsupportedModelError when the config has ``kv_lora_rank`` but it or
    ``qk_rope_head_dim`` is not a positive integer: the engine sizes its cache rows from them.
    """
    if not hasattr(config, MLA_CONFIG_KEY):
        return None
    widths: list[int] = []
    for key in MLA_WIDTH_KEYS:
        value = getattr(config, key, None)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise UnsupportedModelError(
                path,
                f"{type(config).__name__} is an MLA config without a usable {key} "
                f"({value!r}); the engine's latent cache row is kv_lora_rank + qk_rope_head_dim "
                "wide",
            )
        widths.append(value)
    return LatentRow(*widths)


def _check_raw_mla_config(path: Path) -> None:
    """config.json itself, before transformers builds a config from it: an MLA config (one with
    ``kv_lora_rank``) whose ``kv_lora_rank`` or ``qk_rope_head_dim`` is given but not a positive
    integer (``null``, ``0``, a string) is refused here in one line; transformers' config
    classes would fail on it with an arithmetic TypeError, or build a model without a latent.
    An absent key is transformers' default, as in the engine, which reads the same class."""
    try:
        raw = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # _load_config reports an unreadable config
    if not isinstance(raw, Mapping):
        return
    sections = [raw, *(raw[k] for k in ("text_config",) if isinstance(raw.get(k), Mapping))]
    for section in sections:
        if MLA_CONFIG_KEY not in section:
            continue
        for key in MLA_WIDTH_KEYS:
            value = section.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise UnsupportedModelError(
                    path,
                    f"config.json is an MLA config without a usable {key} "
                    f"({json.dumps(value)}); the engine's latent cache row is kv_lora_rank + "
                    "qk_rope_head_dim wide",
                )


def _check_mla_config(path: Path, config: Any) -> None:
    for cfg in {id(c): c for c in (config, _text_config(config))}.values():
        mla_widths(path, cfg)


def _resolve_dtype(path: Path, config: Any, requested: str) -> str:
    if requested != "auto":
        if requested not in DTYPES:
            raise UsageError(f"--dtype {requested!r} is not one of auto, {', '.join(DTYPES)}")
        return requested
    value = getattr(_text_config(config), "dtype", None) or getattr(config, "dtype", None)
    if value is None:
        return "float32"  # transformers' own default for a config without a dtype
    name = str(value).removeprefix("torch.")
    if name not in DTYPES:
        raise UsageError(
            f"{path}: the config's dtype {name!r} is not one kvscale runs",
            hint=f"pass --dtype {' or '.join(DTYPES)}",
        )
    return name


def _device_map(
    device: str, max_memory: Mapping[Any, Any] | None, offload_folder: str | None = None
) -> tuple[str, Any, dict[str, Any]]:
    if device not in DEVICES:
        raise UsageError(f"--device {device!r} is not one of {', '.join(DEVICES)}")
    extra: dict[str, Any] = {}
    if max_memory is not None and device != "auto":
        raise UsageError("max_memory only applies to --device auto")
    if device == "auto" and max_memory is not None and offload_folder is not None:
        # accelerate places what does not fit max_memory on the next device, then on "disk"
        # (offloaded to offload_folder, brought in per layer by its hooks): the same split
        # machinery with or without GPUs.
        extra["max_memory"] = dict(max_memory)
        extra["offload_folder"] = offload_folder
        return "auto", "auto", extra
    if device == "cuda":
        if not torch.cuda.is_available():
            raise EnvironmentMissingError(
                "--device cuda: no CUDA device is available", hint="use --device cpu"
            )
        return "cuda:0", {"": "cuda:0"}, extra
    if device == "auto" and torch.cuda.is_available():
        if max_memory is not None:
            extra["max_memory"] = dict(max_memory)
        return "auto", "auto", extra
    return "cpu", None, extra


def _load_tokenizer(path: Path, mode: str) -> Any:
    if mode == "none":
        return None
    present = any(
        (path / name).is_file()
        for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")
    )
    if not present:
        if mode == "required":
            raise InputError(path, "the model directory has no tokenizer files")
        return None
    AutoTokenizer = transformers_module("transformers").AutoTokenizer  # noqa: N806

    try:
        with quiet_transformers():
            return AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    except Exception as exc:  # tokenizers raise many types; any failure means "no tokenizer"
        if mode == "required":
            raise InputError(path, f"cannot load the tokenizer ({short_error(exc)})") from None
        return None


def load_model(
    path: Path | str,
    *,
    dtype: str = "auto",
    device: str = "cpu",
    max_memory: Mapping[Any, Any] | None = None,
    tokenizer: str = "auto",
    attn_implementation: str | None = None,
    offload_folder: str | None = None,
) -> LoadedModel:
    """Load MODEL for calibration and map its KV-cache attention layers (see the module doc).

    ``dtype``: ``auto`` (the config's dtype; float32 when it names none) or one of ``DTYPES``.
    ``device``: ``cpu``; ``cuda`` (one GPU, ``cuda:0``); ``auto`` (accelerate's
    ``device_map="auto"`` over the visible GPUs, with ``max_memory`` if given; CPU without
    CUDA; with ``max_memory`` and ``offload_folder`` what fits no device is offloaded to that
    folder, on CPU-only hosts too). ``tokenizer``: ``auto`` (load it if the directory has
    one), ``required``, ``none``.
    ``attn_implementation``: None (the model's default, what the contract prescribes) or a name
    transformers knows, for parity runs only: llm-compressor 0.14 calibrates under forced eager
    attention (``llmcompressor/utils/helpers.py`` ``calibration_forward_context``), whose bf16
    rounding differs from sdpa's by an ulp from a few layers in.

    Raises ModelLoadError / UnsupportedModelError (InputError: exit 2) for missing weights, a
    model transformers cannot load, an MLA model whose cache transformers does not hold as the
    engine does (see the module doc), unknown architectures, models whose attention bypasses
    transformers' attention interface; EnvironmentMissingError for ``cuda`` without CUDA.
    """
    transformers = transformers_module("transformers")
    AutoModelForCausalLM = transformers.AutoModelForCausalLM  # noqa: N806
    MODEL_FOR_CAUSAL_LM_MAPPING = transformers_module(  # noqa: N806
        "transformers.models.auto.modeling_auto"
    ).MODEL_FOR_CAUSAL_LM_MAPPING

    path = Path(path)
    if tokenizer not in ("auto", "required", "none"):
        raise UsageError(f"tokenizer={tokenizer!r} is not auto, required or none")
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a directory"
        raise InputError(path, f"model {what} (give a local Hugging Face model directory)")
    if not (path / "config.json").is_file():
        raise ModelLoadError(path, "no config.json: not a Hugging Face model directory")
    names = checkpoint_tensor_names(path)
    _check_raw_mla_config(path)
    config = _load_config(path)
    _check_mla_config(path, config)
    _drop_kv_only_quantization(config)
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise UnsupportedModelError(
            path,
            f"unknown architecture: transformers has no causal-LM class for model_type "
            f"{getattr(config, 'model_type', '?')!r}",
        )
    dtype_name = _resolve_dtype(path, config, dtype)
    device_name, device_map, extra = _device_map(device, max_memory, offload_folder)
    try:
        with quiet_transformers():
            model, info = AutoModelForCausalLM.from_pretrained(
                str(path),
                config=config,
                dtype=DTYPES[dtype_name],
                device_map=device_map,
                local_files_only=True,
                output_loading_info=True,
                **extra,
                **({"attn_implementation": attn_implementation} if attn_implementation else {}),
            )
    except (OSError, ValueError, RuntimeError, KeyError, TypeError, ImportError) as exc:
        raise ModelLoadError(
            path, f"transformers cannot load the model ({short_error(exc)})"
        ) from None
    missing = sorted(info.get("missing_keys") or ())
    mismatched = sorted(
        str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys") or ()
    )
    if missing:
        raise ModelLoadError(
            path,
            f"missing weights: {len(missing)} parameter(s) absent from the checkpoint, first "
            f"{missing[0]} (transformers would initialize them randomly)",
        )
    if mismatched:
        raise ModelLoadError(
            path, f"{len(mismatched)} weight(s) have the wrong shape, first {mismatched[0]}"
        )
    model.eval()
    model.requires_grad_(False)
    layers, skipped = map_attention_layers(model, names, path=path)
    tok = _load_tokenizer(path, tokenizer)
    text_config = _text_config(model.config)
    return LoadedModel(
        path=str(path),
        architecture=type(model).__name__,
        model_type=str(getattr(model.config, "model_type", "")),
        dtype=dtype_name,
        device=device_name,
        device_map=dict(getattr(model, "hf_device_map", None) or {}) or None,
        attn_implementation=str(model.config._attn_implementation),
        vocab_size=int(
            getattr(text_config, "vocab_size", None) or model.get_input_embeddings().num_embeddings
        ),
        layers=layers,
        skipped=skipped,
        transformers_version=transformers.__version__,
        model=model,
        tokenizer=tok,
    )


# --- the probe ----------------------------------------------------------------------------------


@dataclass
class _Seen:
    module: Any
    key: torch.Tensor
    value: torch.Tensor
    sliding_window: int | None
    calls: int = 1


def _record_attention(seen: dict[int, _Seen]) -> Any:
    def callback(
        module: Any, key: torch.Tensor, value: torch.Tensor, kwargs: dict[str, Any]
    ) -> None:
        entry = seen.get(id(module))
        if entry is None:
            window = kwargs.get("sliding_window")
            if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
                window = None
            seen[id(module)] = _Seen(module, key.detach().clone(), value.detach().clone(), window)
        else:
            entry.calls += 1
        return None

    return callback


def _layer_types(model: Any) -> list[str] | None:
    types = getattr(_text_config(model.config), "layer_types", None)
    return [str(t) for t in types] if isinstance(types, (list, tuple)) else None


def _rename_map(model: Any, names: frozenset[str]) -> dict[str, str]:
    """model key -> checkpoint key, mapping every checkpoint name forward the way transformers
    renames on load (``core_model_loading.convert_and_load_state_dict_in_model`` at v5.17.0:
    renamings, then at most one converter, then the base-model prefix added or stripped)."""
    try:
        loading = transformers_module("transformers.core_model_loading")
        WeightConverter = loading.WeightConverter  # noqa: N806
        WeightRenaming = loading.WeightRenaming  # noqa: N806
        rename_source_key = loading.rename_source_key
    except (ImportError, AttributeError):
        return {}
    mapping = list(getattr(model, "_weight_conversions", None) or [])
    renamings = [m for m in mapping if isinstance(m, WeightRenaming)]
    converters = [m for m in mapping if isinstance(m, WeightConverter)]
    meta = dict.fromkeys(model.state_dict().keys(), True)
    prefix = getattr(model, "base_model_prefix", None) or None
    out: dict[str, str] = {}
    for name in sorted(names):
        try:
            renamed, _ = rename_source_key(name, renamings, converters, prefix, meta)
            if renamed not in meta and name in meta:
                renamed, _ = rename_source_key(
                    name, [], [], base_model_prefix=prefix, meta_state_dict=meta
                )
        except Exception:  # an internal API; any failure means "no mapping", then refusal
            continue
        out.setdefault(renamed, name)
    return out


def _checkpoint_prefix(
    model: Any,
    module_path: str,
    module: Any,
    names: frozenset[str],
    path: Path,
    renamed: dict[str, str] | None,
) -> tuple[str, dict[str, str] | None]:
    params = [n for n, _ in module.named_parameters()]
    if not params:
        raise UnsupportedModelError(path, f"attention module {module_path} has no parameters")
    if all(f"{module_path}.{p}" in names for p in params):
        return module_path, renamed
    if renamed is None:
        renamed = _rename_map(model, names)
    prefixes = set()
    for p in params:
        original = renamed.get(f"{module_path}.{p}")
        if original is None:
            continue
        depth = p.count(".") + 1
        parts = original.split(".")
        if len(parts) <= depth:
            continue
        prefixes.add(".".join(parts[:-depth]))
    if len(prefixes) == 1:
        return prefixes.pop(), renamed
    raise UnsupportedModelError(
        path,
        f"cannot find attention module {module_path} among the checkpoint's tensor names "
        f"(no {module_path}.{params[0]}"
        + (f"; candidates {sorted(prefixes)[:3]}" if prefixes else "")
        + ")",
    )


def _forward(model: Any, ids: torch.Tensor, **kwargs: Any) -> None:
    with torch.inference_mode(), quiet_transformers():
        model(input_ids=ids, **kwargs)


def map_attention_layers(
    model: Any, checkpoint_names: frozenset[str], *, path: Path | str = "model"
) -> tuple[tuple[AttentionLayer, ...], tuple[SkippedLayer, ...]]:
    """Probe ``model`` (see the module doc) and map each KV-cache attention layer.

    Raises UnsupportedModelError when a layer with a KV cache bypasses the attention interface,
    the interface sees K/V other than what the cache stores, no layer has a KV cache, or a module
    cannot be tied to the checkpoint's names.
    """
    path = Path(path)
    vocab = int(model.get_input_embeddings().num_embeddings)
    ids = (torch.arange(PROBE_TOKENS, dtype=torch.long) % max(1, vocab - 1) + 1) % vocab
    ids = ids.reshape(1, -1).to(input_device(model))
    updates: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}

    def record(layer_idx: int, key: Any, value: Any) -> None:
        updates.setdefault(int(layer_idx), []).append(
            (key.detach().clone(), value.detach().clone())
        )

    with_cache: dict[int, _Seen] = {}
    without: dict[int, _Seen] = {}
    try:
        with attention_hook(model, _record_attention(with_cache)):
            cache = RecordingCache(model.config, record)
            _forward(model, ids, use_cache=True, **{cache_kwarg_name(model): cache})
        with attention_hook(model, _record_attention(without)):
            _forward(model, ids, use_cache=False)
    except HookError as exc:
        raise UnsupportedModelError(path, str(exc)) from None
    except (RuntimeError, ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise UnsupportedModelError(
            path, f"the probe forward pass failed ({short_error(exc)})"
        ) from None

    paths = {id(m): n for n, m in model.named_modules()}
    layer_types = _layer_types(model)
    by_idx: dict[int, _Seen] = {}
    skipped: list[SkippedLayer] = []
    for key_id, seen in without.items():
        module_path = paths.get(key_id, type(seen.module).__name__)
        layer_idx = getattr(seen.module, "layer_idx", None)
        if key_id not in with_cache:
            raise UnsupportedModelError(
                path,
                f"{module_path} calls attention only without a cache; cannot tell its KV cache",
            )
        if not isinstance(layer_idx, int):
            raise UnsupportedModelError(
                path,
                f"{module_path} ({type(seen.module).__name__}) has no layer_idx; cannot tie it "
                "to a KV-cache layer",
            )
        if seen.calls != 1 or with_cache[key_id].calls != 1:
            raise UnsupportedModelError(
                path,
                f"{module_path} calls the attention function {seen.calls} times per forward pass",
            )
        if layer_idx not in updates:
            kind = (
                layer_types[layer_idx]
                if layer_types and 0 <= layer_idx < len(layer_types)
                else None
            )
            skipped.append(
                SkippedLayer(
                    layer_idx,
                    module_path,
                    kind,
                    "attention without a KV-cache update of its own (reads another layer's cache)",
                )
            )
            continue
        if layer_idx in by_idx:
            raise UnsupportedModelError(
                path,
                f"two attention modules share layer_idx {layer_idx} "
                f"({paths.get(id(by_idx[layer_idx].module))}, {module_path})",
            )
        by_idx[layer_idx] = seen
    for layer_idx in sorted(updates):
        if layer_idx not in by_idx:
            raise UnsupportedModelError(
                path,
                f"layer {layer_idx} writes its KV cache but does not call transformers' attention "
                "interface; its attention cannot be observed where the engine caches",
            )
        if len(updates[layer_idx]) != 1:
            raise UnsupportedModelError(
                path,
                f"layer {layer_idx} updates its KV cache {len(updates[layer_idx])} times per pass",
            )
    if not by_idx:
        raise UnsupportedModelError(path, "no attention layer with a KV cache was found")

    renamed: dict[str, str] | None = None
    layers: list[AttentionLayer] = []
    text_config = _text_config(model.config)
    for layer_idx in sorted(by_idx):
        seen = by_idx[layer_idx]
        module_path = paths[id(seen.module)]
        k_upd, v_upd = updates[layer_idx][0]
        k, v = seen.key, seen.value
        row = mla_widths(path, getattr(seen.module, "config", None) or text_config)
        if row is not None:
            _check_latent(path, module_path, row, (k_upd, v_upd), (k, v))
            prefix, renamed = _checkpoint_prefix(
                model, module_path, seen.module, checkpoint_names, path, renamed
            )
            layers.append(
                AttentionLayer(
                    layer_idx=layer_idx,
                    module_path=module_path,
                    checkpoint_prefix=prefix,
                    engine_name=f"{prefix}.attn",
                    layer_type=_layer_type(layer_types, layer_idx) or "full_attention",
                    sliding_window=None,
                    num_kv_heads=1,
                    head_size=row.width,
                    v_head_size=0,
                    device=str(k_upd.device),
                    latent=row,
                )
            )
            continue
        if k.dim() != 4 or v.dim() != 4 or k.shape[0] != 1 or k.shape[2] != PROBE_TOKENS:
            raise UnsupportedModelError(
                path,
                f"{module_path}: unexpected K shape {tuple(k.shape)} at the attention "
                f"function (expected [1, kv_heads, {PROBE_TOKENS}, head_dim])",
            )
        if k.shape != k_upd.shape or v.shape != v_upd.shape or k.shape[1] != v.shape[1]:
            raise UnsupportedModelError(
                path,
                f"{module_path}: the attention function gets K {tuple(k.shape)} / V "
                f"{tuple(v.shape)}, the cache stores {tuple(k_upd.shape)} / {tuple(v_upd.shape)}",
            )
        if not (_close(k, k_upd) and _close(v, v_upd)):
            raise UnsupportedModelError(
                path,
                f"{module_path}: the attention function gets other K/V values than the "
                "cache stores; kvscale cannot tell which the engine caches",
            )
        prefix, renamed = _checkpoint_prefix(
            model, module_path, seen.module, checkpoint_names, path, renamed
        )
        kind = _layer_type(layer_types, layer_idx)
        window = seen.sliding_window
        if kind is None:
            kind = "sliding_attention" if window else "full_attention"
        layers.append(
            AttentionLayer(
                layer_idx=layer_idx,
                module_path=module_path,
                checkpoint_prefix=prefix,
                engine_name=f"{prefix}.attn",
                layer_type=kind,
                sliding_window=window,
                num_kv_heads=int(k.shape[1]),
                head_size=int(k.shape[3]),
                v_head_size=int(v.shape[3]),
                device=str(k.device),
            )
        )
    num_layers = getattr(_text_config(model.config), "num_hidden_layers", None)
    known = set(by_idx) | {s.layer_idx for s in skipped}
    if isinstance(num_layers, int):
        for idx in range(num_layers):
            if idx not in known:
                kind = layer_types[idx] if layer_types and idx < len(layer_types) else None
                skipped.append(
                    SkippedLayer(idx, None, kind, "no KV cache (not an attention layer)")
                )
    skipped.sort(key=lambda s: s.layer_idx if s.layer_idx is not None else -1)
    return tuple(layers), tuple(skipped)


def _layer_type(layer_types: list[str] | None, layer_idx: int) -> str | None:
    return layer_types[layer_idx] if layer_types and 0 <= layer_idx < len(layer_types) else None


def _check_latent(
    path: Path,
    module_path: str,
    row: LatentRow,
    cached: tuple[torch.Tensor, torch.Tensor],
    attended: tuple[torch.Tensor, torch.Tensor],
) -> None:
    """An MLA layer must hand ``cache.update`` the latent ``[1, 1, S, kv_lora_rank]`` and the RoPE
    part ``[1, 1, S, qk_rope_head_dim]``; anything else is refused, never calibrated."""
    kv_c, k_pe = cached
    want = ((1, 1, PROBE_TOKENS, row.kv_lora_rank), (1, 1, PROBE_TOKENS, row.rope_dim))
    got = (tuple(kv_c.shape), tuple(k_pe.shape))
    if got == want:
        return
    if got == (tuple(attended[0].shape), tuple(attended[1].shape)):
        version = transformers_module("transformers").__version__
        raise UnsupportedModelError(
            path,
            f"{module_path}: transformers {version} caches this MLA layer's decompressed "
            f"per-head K/V {list(got[0])} / {list(got[1])}, not the latent [kv_c | k_pe] the "
            f"engine caches; transformers >= {LATENT_CACHE_SINCE} caches the latent (pip install "
            f"'transformers>={LATENT_CACHE_SINCE}')",
        )
    raise UnsupportedModelError(
        path,
        f"{module_path}: a latent of the wrong width: cache.update gets {list(got[0])} / "
        f"{list(got[1])}, the config's kv_lora_rank {row.kv_lora_rank} and qk_rope_head_dim "
        f"{row.rope_dim} mean {list(want[0])} / {list(want[1])}",
    )


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal up to float noise between two forward passes (bit-equal on CPU; a GPU may pick
    different kernels with and without a cache)."""
    if torch.equal(a, b):
        return True
    af, bf = a.float(), b.float()
    # NaN/inf in the activations is not this check's business (capture reports the layer):
    # compare the finite values, and require the non-finite ones to sit in the same places.
    finite = torch.isfinite(bf)
    if not torch.equal(finite, torch.isfinite(af)):
        return False
    if not bool(finite.any()):
        return True
    af, bf = af[finite], bf[finite]
    scale = float(bf.abs().max())
    return bool(torch.allclose(af, bf, rtol=1e-2, atol=1e-3 * max(scale, 1e-30)))
