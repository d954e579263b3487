"""The observation point: post-RoPE K/V as transformers hands them to the attention function.

transformers 5 attention modules (e.g. ``models/llama/modeling_llama.py`` ``LlamaAttention.forward``
at v5.17.0) project, apply RoPE, call ``cache.update(k, v, layer_idx)`` when a cache is
passed, then call ``ALL_ATTENTION_FUNCTIONS.get_interface(config._attn_implementation,
eager_attention_forward)(module, q, k, v, mask, ...)``. K and V there are
``[batch, num_kv_heads, seq, head_dim]``, before GQA repetition (``repeat_kv`` runs inside
eager/sdpa). With ``use_cache=False`` they are exactly the new tokens, once each, sliding-window
layers included; with a cache they would include the past tokens, so every kvscale forward pass
runs without one.

``attention_hook`` registers a wrapper under a fresh name in ``AttentionInterface`` *and* in
``masking_utils.ALL_MASK_ATTENTION_FUNCTIONS`` (the mask builder dispatches on the same name:
without a mask function registered it builds no mask, and padded batches then attend to
padding), switches the model to it with ``set_attn_implementation``, and delegates every call to
the implementation the model had (``sdpa``, ``eager``: the model file's own
``eager_attention_forward``, which e.g. Gemma2 specializes for soft-capping; ...).

``RecordingCache`` is the other observation point, a ``DynamicCache`` whose ``update`` inputs
are recorded (and, for MLA layers, replaced): the layer probe uses it to find which layers have a
KV cache and what each caches. For MLA attention (DeepSeek-V2/V3 style) it is *the* observation
point: since transformers 5.15 ``DeepseekV3Attention.forward`` calls ``cache.update(kv_nope,
k_rot, layer_idx)`` with the compressed latent (``[batch, 1, seq, kv_lora_rank]``, the
RMS-normed ``kv_c``) and the post-RoPE shared key part (``[batch, 1, seq, qk_rope_head_dim]``),
exactly what vLLM's ``concat_and_cache_mla`` writes, and only then expands them to per-head K/V
for the attention function (``expand_kv``; transformers 5.24.0
``models/deepseek_v3/modeling_deepseek_v3.py`` lines 446-463).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import itertools
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

__all__ = [
    "CacheCallback",
    "HookError",
    "KVCallback",
    "RecordingCache",
    "attention_hook",
    "cache_kwarg_name",
    "quiet_transformers",
    "transformers_module",
]

KVCallback = Callable[
    [Any, torch.Tensor, torch.Tensor, "dict[str, Any]"], "tuple[torch.Tensor, torch.Tensor] | None"
]
"""``callback(attention_module, key, value, kwargs)``; return ``(key, value)`` to replace them.
``kwargs`` are the keyword arguments the model passes to the attention function
(``scaling``, ``sliding_window``, ``softcap``, ...), for reading only."""

_names = itertools.count()


def transformers_module(name: str) -> Any:
    """A transformers module, typed ``Any``: its API moves between releases (5.17 -> 5.24 renamed
    the cache argument), kvscale checks what it relies on at run time (the layer probe), and
    mypy runs without transformers installed."""
    return importlib.import_module(name)


class HookError(RuntimeError):
    """The model cannot be hooked (it ignores ``set_attn_implementation``, no eager function)."""


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """No output from transformers (log lines, progress bars, warnings) while inside.

    Core modules never print; the CLI owns stderr. Restores the previous settings on exit.
    """
    hf_logging = transformers_module("transformers.utils.logging")

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    # accelerate and huggingface_hub log through the standard library.
    others = [logging.getLogger(n) for n in ("accelerate", "huggingface_hub")]
    levels = [lg.level for lg in others]
    for lg in others:
        lg.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
        for lg, level in zip(others, levels, strict=True):
            lg.setLevel(level)


def _eager_function(module: Any) -> Callable[..., Any]:
    """The eager attention the module would call: its modeling file's ``eager_attention_forward``
    (the default argument of ``get_interface`` in every transformers 5 attention forward)."""
    owner = sys.modules.get(type(module).__module__)
    fn: Callable[..., Any] | None = getattr(owner, "eager_attention_forward", None)
    if fn is None or not callable(fn):
        raise HookError(
            f"{type(module).__name__} runs eager attention, but its module "
            f"{type(module).__module__} defines no eager_attention_forward to delegate to"
        )
    return fn


def _configs(model: Any) -> list[Any]:
    PretrainedConfig = transformers_module("transformers").PretrainedConfig  # noqa: N806

    seen: dict[int, Any] = {}
    for module in model.modules():
        cfg = getattr(module, "config", None)
        if isinstance(cfg, PretrainedConfig):
            seen.setdefault(id(cfg), cfg)
            for key in getattr(cfg, "sub_configs", {}) or {}:
                sub = getattr(cfg, key, None)
                if isinstance(sub, PretrainedConfig):
                    seen.setdefault(id(sub), sub)
    return list(seen.values())


@contextlib.contextmanager
def attention_hook(model: Any, callback: KVCallback) -> Iterator[str]:
    """Route every attention-function call of ``model`` through ``callback`` while inside.

    Yields the registered implementation name. Raises HookError when the model does not switch
    to it (transformers only logs a warning when a model cannot change its implementation,
    ``PreTrainedModel.set_attn_implementation`` at v5.17.0). Not re-entrant on one model.
    """
    AttentionInterface = transformers_module("transformers").AttentionInterface  # noqa: N806
    ALL_MASK_ATTENTION_FUNCTIONS = transformers_module(  # noqa: N806
        "transformers.masking_utils"
    ).ALL_MASK_ATTENTION_FUNCTIONS
    ALL_ATTENTION_FUNCTIONS = transformers_module(  # noqa: N806
        "transformers.modeling_utils"
    ).ALL_ATTENTION_FUNCTIONS

    original = model.config._attn_implementation
    configs = _configs(model)
    # Each config's own implementation: attention modules read ``self.config``, which for a
    # composite model is a sub-config that may differ from the top one.
    before = {id(c): getattr(c, "_attn_implementation", original) for c in configs}
    resolved: dict[int, Callable[..., Any]] = {}

    def base_for(module: Any) -> Callable[..., Any]:
        fn = resolved.get(id(module))
        if fn is None:
            cfg = getattr(module, "config", None)
            impl = before.get(id(cfg), original) if cfg is not None else original
            if impl in (None, "eager"):
                fn = _eager_function(module)
            else:
                fn = ALL_ATTENTION_FUNCTIONS[impl]
            resolved[id(module)] = fn
        return fn

    def hooked(
        module: Any,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        attention_mask: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        replaced = callback(module, key, value, kwargs)
        if replaced is not None:
            key, value = replaced
        return base_for(module)(module, query, key, value, attention_mask, *args, **kwargs)

    name = f"kvscale_hook_{next(_names)}"
    AttentionInterface.register(name, hooked)
    masked = original in ALL_MASK_ATTENTION_FUNCTIONS
    if masked:
        ALL_MASK_ATTENTION_FUNCTIONS.register(name, ALL_MASK_ATTENTION_FUNCTIONS[original])
    try:
        with quiet_transformers():
            model.set_attn_implementation(name)
        if model.config._attn_implementation != name:
            raise HookError(
                f"{type(model).__name__} does not let transformers switch its attention "
                "implementation (its attention does not go through AttentionInterface)"
            )
        yield name
    finally:
        with quiet_transformers():
            model.set_attn_implementation(original)
        # set_attn_implementation dispatches one name to every sub-model; put back any
        # sub-config that had its own.
        for cfg in configs:
            impl = before[id(cfg)]
            if getattr(cfg, "_attn_implementation", impl) != impl:
                cfg._attn_implementation_internal = impl
        AttentionInterface._global_mapping.pop(name, None)
        if masked:
            type(ALL_MASK_ATTENTION_FUNCTIONS)._global_mapping.pop(name, None)


def cache_kwarg_name(model: Any) -> str:
    """What ``model.forward`` calls its cache argument: ``past_key_values`` up to transformers
    5.2x, ``cache`` since (``@deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")``
    on ``LlamaForCausalLM.forward`` at v5.24.0; passing the old name warns)."""
    import inspect

    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


CacheCallback = Callable[
    [int, torch.Tensor, torch.Tensor], "tuple[torch.Tensor, torch.Tensor] | None"
]
"""``callback(layer_idx, key, value)`` with what ``cache.update`` receives; return ``(key,
value)`` to store (and hand back to the layer) instead."""


@functools.cache
def _recording_cache_class() -> type[Any]:
    DynamicCache = transformers_module("transformers").DynamicCache  # noqa: N806

    class _RecordingCache(DynamicCache):  # type: ignore[misc, valid-type]  # Any base
        """A DynamicCache that records what each ``update`` receives (the cached new tokens)."""

        def __init__(self, *args: Any, record: CacheCallback, **kwargs: Any):
            super().__init__(*args, **kwargs)
            self._record = record

        def update(
            self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any
        ) -> Any:
            replaced = self._record(layer_idx, key_states, value_states)
            if replaced is not None:
                key_states, value_states = replaced
            return super().update(key_states, value_states, layer_idx, *args, **kwargs)

    return _RecordingCache


def RecordingCache(config: Any, record: CacheCallback) -> Any:  # noqa: N802
    """A fresh ``DynamicCache(config=config)`` that calls ``record(layer_idx, key, value)`` with
    every ``update`` input (``[batch, num_kv_heads, new_tokens, head_dim]``; for MLA layers the
    latent ``[batch, 1, new_tokens, kv_lora_rank]`` and the RoPE part ``[batch, 1, new_tokens,
    qk_rope_head_dim]``) before storing it, and stores what ``record`` returns instead when it
    returns a pair. A fresh cache holds no past tokens, so the layer gets back exactly what was
    stored (``DynamicLayer.update`` concatenates onto an empty cache)."""
    return _recording_cache_class()(config=config, record=record)
