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
    remapped = maybe_remap(name, is_param)
    if remapped.dropped is not None or is_param(remapped.name):
        return remapped
    return Remapped(remapped.name, f"Parameter {remapped.name} not found in params_dict")


def maybe_remap(name: str, is_param: Callable[[str], bool]) -> Remapped:
    """``maybe_remap_kv_scale_name`` alone: the name a loader looks up next, or the message
    it logs when the remap itself drops the name (its ``None``)."""
    if "scale" not in name:
        return Remapped(name)  # not remapped (e.g. zero points)
    if name.endswith(".kv_scale"):
        target = name.replace(".kv_scale", ".attn.k_scale")
        if not is_param(target):
            return Remapped(
                target,
                f"Found kv_scale in the checkpoint (e.g. {name}), but not found the expected name "
                f"in the model (e.g. {target}). kv_scale is not loaded.",
            )
        return Remapped(target)
    for suffix in (".k_scale", ".v_scale"):
        if name.endswith(suffix):
            return _kv(name, suffix, is_param)
    for suffix, new in _QUARK_SUFFIXES:
        if name.endswith(suffix):
            # No parameter check here: the loader's own lookup decides.
            return Remapped(name.replace(suffix, new))
    return Remapped(name)


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


# ------------------------------------------------------------------------------------------
# Other architectures: their own load_weights (``architectures.py``, generated)
# ------------------------------------------------------------------------------------------

Recorded = tuple[str, str | None, int | None]
"""``(kind, target, message)`` as ``architectures.py`` records one probe: kind ``load`` /
``drop`` / ``raise``; target the parameter (templated); message an index into its
``MESSAGES`` (templated), or None (nothing logged)."""


@dataclass(frozen=True)
class LoaderClass:
    """What one group of architectures' ``load_weights`` does with each naming convention
    (recorded by running SGLang's code; ``tests/parity/sglang_architectures.py``)."""

    family: str
    """``remap-first`` (``maybe_remap_kv_scale_name`` before the stacked q/k/v -> qkv_proj
    rename, like Llama), ``remap-after-stacked`` (the rename runs first, the remap only on
    names it left alone), ``no-remap`` (only a parameter's own name loads) or ``attn-mqa``
    (DeepSeek: ``k_proj`` -> ``attn_mqa`` for k/v scales)."""
    missing: str
    """What a name no parameter takes does: ``warns`` (a log line), ``silent``, ``raises``
    (``params_dict[name]`` without a check: KeyError, the model does not load)."""
    k_proj: str
    """What ModelOpt's ``<prefix>.k_proj.k_scale`` does with KV-scale parameters: ``load``,
    ``drop`` or ``raise`` (the stacked rename to ``qkv_proj`` and an unchecked lookup)."""
    kv: dict[str, Recorded]
    """Per probe tail: the outcome when the layer has KV-scale parameters (a KV method)."""
    nokv_differs: dict[str, Recorded]
    """Per probe tail: the outcome without KV-scale parameters, where it differs."""

    def outcome(self, tail: str, has_params: bool) -> Recorded | None:
        if not has_params and tail in self.nokv_differs:
            return self.nokv_differs[tail]
        return self.kv.get(tail)


@dataclass(frozen=True)
class Arch:
    """One registered architecture: its loader class and its RadixAttention names."""

    loader: str
    radix: tuple[str, ...]
    site: str
    """file:line (under ``srt/models/``) of the ``load_weights`` the class inherits or defines."""


@dataclass(frozen=True)
class Routing:
    """Where an architecture's loader sends one checkpoint name."""

    kind: str
    """``load`` / ``drop`` / ``raise``."""
    target: str | None
    """The parameter (``load``), or the name the loader looked up."""
    message: str | None
    """What SGLang logs (``drop``) or raises (``raise``), for this tensor."""
    message_template: str | None
    """The same with ``<prefix>`` / ``<name>`` for the tensor's parts (shared by tensors of
    the same cause)."""


def substitute(text: str, prefix: str, name: str) -> str:
    """Fill a recorded template: ``{prefix}`` the attention prefix, ``{layer}`` its decoder
    layer, ``{name}`` the tensor's name."""
    layer = prefix.rsplit(".", 1)[0]
    return text.replace("{prefix}", prefix).replace("{layer}", layer).replace("{name}", name)


def generic(text: str) -> str:
    return (
        text.replace("{prefix}", "<prefix>")
        .replace("{layer}", "<layer>")
        .replace("{name}", "<name>")
    )


def route_recorded(
    loader: LoaderClass,
    messages: tuple[str, ...],
    tail: str,
    prefix: str,
    name: str,
    has_params: bool,
) -> Routing | None:
    """A recorded outcome for ``name`` = ``<prefix>.<tail>``; None when ``tail`` is not a
    probed convention."""
    got = loader.outcome(tail, has_params)
    if got is None:
        return None
    kind, target, index = got
    template = None if index is None else messages[index]
    return Routing(
        kind,
        None if target is None else substitute(target, prefix, name),
        None if template is None else substitute(template, prefix, name),
        None if template is None else generic(template),
    )
