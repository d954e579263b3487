"""SGLang 0.5.23's KV-scale name handling: ``maybe_remap_kv_scale_name`` and the Llama loader.

``srt/model_loader/weight_utils.py::maybe_remap_kv_scale_name`` (1779-1857) runs on every name
that contains "scale", before the stacked q/k/v -> qkv_proj mapping of
``srt/models/llama.py::LlamaForCausalLM._legacy_load_weights`` (the default loader; 708-779).
The branches, in order:

1. ``.kv_scale`` -> ``.attn.k_scale`` (v is then duplicated by the base method); a warning
   once per process that the format is deprecated; dropped with a warning when the parameter
   does not exist;
2. ``.k_scale`` / ``.v_scale``: the substring ``.self_attn.k_proj.k_scale`` (or ``.mixer.``)
   becomes ``.self_attn.attn.k_scale``; any other name gets every ``.k_scale`` replaced by
   ``.attn.k_scale``; dropped with "Found .k_scale in the checkpoint ... is not loaded." when
   that parameter does not exist (so vLLM's canonical ``...self_attn.attn.k_scale`` becomes
   ``...attn.attn.k_scale`` and is dropped, and ``qkv_proj.k_scale`` too);
3. Quark's ``.{q,k,v}_proj.output_scale`` -> ``.attn.{q,k,v}_scale`` and
   ``self_attn.prob_output_scale`` -> ``.attn.prob_scale`` (a double dot left by the replace),
   with no parameter check; the loader then drops what is not a parameter ("Parameter ... not
   found in params_dict").

Parameters exist only for ``k_scale``/``v_scale`` of attention layers with a KV method: SGLang
has no q or prob scale parameter, so every q/prob name is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

_QUARK_SUFFIXES = (
    (".q_proj.output_scale", ".attn.q_scale"),
    (".k_proj.output_scale", ".attn.k_scale"),
    (".v_proj.output_scale", ".attn.v_scale"),
    ("self_attn.prob_output_scale", ".attn.prob_scale"),
)


@dataclass(frozen=True)
class Remapped:
    """What the loader does with one checkpoint name."""

    name: str
    """The name after the remap (what the loader looks up)."""
    dropped: str | None = None
    """The message the engine logs when it drops the tensor (None: it reaches the lookup)."""


def remap(name: str, is_param: Callable[[str], bool]) -> Remapped:
    """``maybe_remap_kv_scale_name`` + the legacy Llama loader's lookup.

    ``is_param``: whether the model has a parameter of that name that a scale loads into
    (``<prefix>.attn.k_scale`` / ``.v_scale`` of each attention layer with a KV method).
    """
    if "scale" not in name:
        pass  # not remapped (e.g. zero points): only the loader's lookup below
    elif name.endswith(".kv_scale"):
        target = name.replace(".kv_scale", ".attn.k_scale")
        if not is_param(target):
            return Remapped(
                target,
                f"Found kv_scale in the checkpoint (e.g. {name}), but not found the expected name "
                f"in the model (e.g. {target}). kv_scale is not loaded.",
            )
        return Remapped(target)
    else:
        for suffix in (".k_scale", ".v_scale"):
            if name.endswith(suffix):
                return _kv(name, suffix, is_param)
        for suffix, new in _QUARK_SUFFIXES:
            if name.endswith(suffix):
                name = name.replace(suffix, new)
                break
    if is_param(name):
        return Remapped(name)
    return Remapped(name, f"Parameter {name} not found in params_dict")


def _kv(name: str, suffix: str, is_param: Callable[[str], bool]) -> Remapped:
    """Branch 2: ``.k_scale`` / ``.v_scale``."""
    kind = suffix[1]
    target = None
    for container in ("self_attn", "mixer"):
        old = f".{container}.{kind}_proj{suffix}"
        if old in name:
            target = name.replace(old, f".{container}.attn{suffix}")
            break
    if target is None:
        target = name.replace(suffix, f".attn{suffix}")
    if not is_param(target):
        return Remapped(
            target,
            f"Found {suffix} in the checkpoint (e.g. {name}), but not found the expected "
            f"name in the model (e.g. {target}). {suffix} is not loaded.",
        )
    return Remapped(target)
