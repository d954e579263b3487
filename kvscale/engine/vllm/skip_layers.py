"""vLLM 0.33.0's ``--kv-cache-dtype-skip-layers``: which attention layers keep an unquantized
cache, and why. Torch-free (``inspect`` imports it).

* The list the engine holds (``EngineArgs.create_engine_config``, engine/arg_utils.py): the
  user's entries as given; for a resolved ``turboquant_*`` / ``ultraquant_4bit`` dtype, their
  union with the format's boundary layers, sorted as strings (the list is a hash factor).
* Per layer (``Attention.__init__``, layers/attention/attention.py): a layer whose decoder index
  ``str(extract_layer_index(prefix))`` is an entry, or that has a sliding window while
  ``"sliding_window"`` is an entry, gets ``auto``. Entries are compared as strings and never
  validated: ``"01"``, ``" 1"`` or ``"1.0"`` match nothing. ``MLAAttention.__init__``
  (layers/attention/mla_attention.py) honours indices only.
"""

from __future__ import annotations

from collections.abc import Sequence

from kvscale.model_config import ModelShape

BOUNDARY_SKIP_DTYPES = frozenset(
    [
        "turboquant_k8v4",
        "turboquant_4bit_nc",
        "turboquant_k3v4_nc",
        "turboquant_3bit_nc",
        "ultraquant_4bit",
    ]
)
"""Resolved dtypes for which ``create_engine_config`` adds boundary layers (TurboQuant and
UltraQuant keep them at the native dtype)."""

SLIDING_WINDOW_ENTRY = "sliding_window"

_LAYER_TYPES_RULE = frozenset(
    [
        # LlamaAttention (models/llama.py:185-204) and the models built on it
        "LlamaForCausalLM",
        "MistralForCausalLM",
        "ApertusForCausalLM",
        # models/gemma2.py:155, gemma3.py:153, gemma3n.py:350, exaone4.py:172
        "Gemma2ForCausalLM",
        "Gemma3ForCausalLM",
        "Gemma3ForConditionalGeneration",
        "Gemma3nForCausalLM",
        "Gemma3nForConditionalGeneration",
        "Exaone4ForCausalLM",
        # models/commandr.py:242 (Cohere2: window + 1 on its sliding layers)
        "Cohere2ForCausalLM",
    ]
)
"""Architectures whose attention layers take ``sliding_window`` exactly where
``layer_types[i] == "sliding_attention"``."""

_EVERY_LAYER = frozenset(["NemotronHForCausalLM"])
"""models/nemotron_h.py:477: every attention layer takes ``config.sliding_window``."""

_EVEN_LAYERS = frozenset(["GptOssForCausalLM"])
"""models/gpt_oss.py:175: layers with an even index take ``config.sliding_window``."""


def is_hybrid(shape: ModelShape) -> bool:
    """``ModelConfig.is_hybrid`` as far as config.json shows it: layers that cache no K/V
    (Mamba, linear attention) beside attention layers."""
    if shape.hybrid_override_pattern is not None:
        return True
    return shape.layer_types is not None and not all(
        t in ("attention", "full_attention") or ("attention" in t and "linear" not in t)
        for t in shape.layer_types
    )


def boundary_skip_layers(kv_cache_dtype: str, shape: ModelShape) -> tuple[str, ...]:
    """``TurboQuantConfig.get_boundary_skip_layers`` (model_executor/layers/quantization/
    turboquant/config.py): the first and last ``min(2, num_hidden_layers // 2)`` decoder-layer
    indices of a dense model, as strings; none for hybrid models."""
    if kv_cache_dtype not in BOUNDARY_SKIP_DTYPES or is_hybrid(shape):
        return ()
    layers = shape.num_hidden_layers or 0
    n = min(2, layers // 2)
    if n <= 0:
        return ()
    return tuple(str(i) for i in sorted(set(range(n)) | set(range(layers - n, layers))))


def effective_skip_layers(
    requested: Sequence[str], resolved_kv_cache_dtype: str, shape: ModelShape
) -> tuple[str, ...]:
    """The list ``CacheConfig.kv_cache_dtype_skip_layers`` holds: the user's entries, or for a
    packed format their union with its boundary layers, sorted as strings."""
    if resolved_kv_cache_dtype not in BOUNDARY_SKIP_DTYPES:
        return tuple(requested)
    return tuple(sorted(set(requested) | set(boundary_skip_layers(resolved_kv_cache_dtype, shape))))


def layer_sliding_window(shape: ModelShape, index: int) -> int | None:
    """The sliding window ``Attention.__init__`` sees for decoder layer ``index``: the model's
    per-layer value when its code passes one, else ``CacheConfig.sliding_window``, which
    ``create_engine_config`` sets from the config only when ``layer_types`` is absent or all
    ``sliding_attention`` (so an interleaved model's full layers stay full)."""
    window = shape.sliding_window
    if window is None:
        return None
    archs = set(shape.architectures)
    types = shape.hf_layer_types
    per_layer: int | None = None
    if archs & _EVERY_LAYER:
        per_layer = window
    elif archs & _EVEN_LAYERS:
        per_layer = window if index % 2 == 0 else None
    elif archs & _LAYER_TYPES_RULE and types is not None:
        per_layer = window if index < len(types) and types[index] == "sliding_attention" else None
    if per_layer is not None:
        return per_layer
    if types is None or all(t == "sliding_attention" for t in types):
        return window
    return None


def skipped_by(
    index: int | None,
    skip_layers: Sequence[str],
    kv_cache_dtype: str,
    shape: ModelShape,
    *,
    latent: bool,
) -> str | None:
    """Why the engine keeps layer ``index`` unquantized, or None when it does not (worded
    without the index, so that reasons group over layers)."""
    if not skip_layers:
        return None
    if index is not None and str(index) in skip_layers:
        if str(index) in boundary_skip_layers(kv_cache_dtype, shape):
            return f"a {kv_cache_dtype} boundary layer (vLLM keeps the first and last two)"
        return "its index is in --kv-cache-dtype-skip-layers"
    if (
        not latent
        and SLIDING_WINDOW_ENTRY in skip_layers
        and index is not None
        and layer_sliding_window(shape, index) is not None
    ):
        return f"--kv-cache-dtype-skip-layers {SLIDING_WINDOW_ENTRY}"
    return None
