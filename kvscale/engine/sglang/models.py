"""SGLang 0.5.23's models beyond the recorded loader table (``architectures.py``): which
architectures give their attention a KV-cache quant method, where each model's attention
modules sit relative to the checkpoint's names, and the loaders kvscale mirrors by hand.

Every rule here was executed by the SGLang parity oracle's model cases
(``tests/parity/sglang_model_cases.py``: each model built by its own ``__init__`` and loaded by
its own ``load_weights``); paths are under ``sglang/srt/models/`` in the 0.5.23 wheel.

* KV method: a RadixAttention holds ``k_scale`` / ``v_scale`` only when its model passes
  ``quant_config=`` to it (``layers/radix_attention.py:94-107``); without, every scale name is
  dropped and every backend reads 1.0 (``architectures.NO_KV_METHOD``, ``KV_METHOD_UNKNOWN``).
* Layouts: the module SGLang names a checkpoint's attention (``module_prefix``), and the name
  its ``load_weights`` looks up (``loader_prefix``): NemotronH's ``backbone.`` -> ``model.``,
  the multimodal wrappers' ``language_model.model.``, Falcon-H1's decoder-level ``attn``,
  Mistral-Large-3's ``layers.N.attention``.
* Loaders: DeepSeek's (``deepseek_common/deepseek_weight_loader.py``), MiniCPM3's, Falcon-H1's,
  Mistral-Large-3's remap table and Llama-4's multimodal one, which the recorded table does not
  cover (not probed, or names outside its probe tails); and, for MLA models whose probe put
  the parameters on ``attn`` instead of ``attn_mqa``, the correction of the recorded outcomes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from kvscale.engine.sglang import architectures, names
from kvscale.model_config import ModelShape


class KvMethod(str, Enum):
    """Whether an architecture's RadixAttention gets a KV-cache quant method."""

    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


def kv_method(arch: str | None) -> tuple[KvMethod, str]:
    """(the verdict, its evidence) for a registered architecture; an unregistered one falls
    back to SGLang's Transformers backend, whose attention kvscale does not model (yes)."""
    if arch is None:
        return KvMethod.YES, ""
    if arch in architectures.NO_KV_METHOD:
        return KvMethod.NO, architectures.NO_KV_METHOD[arch]
    if arch in architectures.KV_METHOD_UNKNOWN:
        return KvMethod.UNKNOWN, architectures.KV_METHOD_UNKNOWN[arch]
    return KvMethod.YES, ""


@dataclass(frozen=True)
class Outcome:
    """What a loader does with one checkpoint name."""

    kind: str
    """``load`` / ``drop`` / ``raise``."""
    target: str | None
    """``load``: the parameter; otherwise the name the loader looked up (or None)."""
    message: str | None
    """What SGLang logs (``drop``) or raises (``raise``); None: nothing (a silent drop)."""
    template: str | None = None
    """The message with ``<prefix>`` / ``<name>`` for the tensor's parts (one problem per
    cause); None: the message itself."""
    why: str | None = None
    """Why, where the message does not say it (a silent drop)."""


Params = Callable[[str], bool]
"""Whether a name is a parameter of the model (``params_dict``)."""


def _lookup(name: str, params: Params, missing: str) -> Outcome:
    """A loader's final ``params_dict`` lookup: ``missing`` is what it does without the name
    (``raises``: an unchecked ``params_dict[name]``; ``warns``; ``silent``)."""
    if params(name):
        return Outcome("load", name, None)
    if missing == "raises":
        return Outcome("raise", name, f"KeyError: '{name}'")
    if missing == "warns":
        return Outcome("drop", name, f"Parameter {name} not found in params_dict")
    return Outcome("drop", name, None)


def deepseek(name: str, params: Params, q_lora_rank: int | None) -> Outcome:
    """``DeepseekV2WeightLoaderMixin.do_load_weights`` (deepseek_weight_loader.py) on a scale
    name: with ``q_lora_rank`` set, a name holding ``q_a_proj`` / ``kv_a_proj_with_mqa`` waits
    for its partner to be fused into ``fused_qkv_a_proj_with_mqa`` (:438-455) and a lone scale
    never loads; otherwise a ``k_scale`` / ``v_scale`` name that is no parameter gets its
    first ``k_proj`` / ``v_proj`` replaced by ``attn_mqa`` (k tested first, :516-524); still
    absent: "<name> not found in params_dict." and dropped (:532)."""
    if q_lora_rank is not None and ("q_a_proj" in name or "kv_a_proj_with_mqa" in name):
        why = (
            "with q_lora_rank set it waits to be fused with its q_a_proj / kv_a_proj_with_mqa "
            "partner into fused_qkv_a_proj_with_mqa and, alone, never loads"
        )
        return Outcome("drop", name, None, why=why)
    if ("k_scale" in name or "v_scale" in name) and not params(name):
        for scale in ("k_scale", "v_scale"):
            if scale in name:
                name = name.replace(f"{scale[0]}_proj", "attn_mqa")
                break
    if params(name):
        return Outcome("load", name, None)
    return Outcome("drop", name, f"{name} not found in params_dict.")


def minicpm3(name: str, params: Params) -> Outcome:
    """``MiniCPM3ForCausalLM.load_weights`` (minicpm3.py:446-504): no remap at all; a scale
    name reaches ``params_dict[name]`` unchecked, so only the parameter's own name
    (``self_attn.attn.k_scale``) loads and any other raises KeyError."""
    return _lookup(name, params, "raises")


_FALCON_H1_STACKED = (("q_proj", "qkv_proj"), ("k_proj", "qkv_proj"), ("v_proj", "qkv_proj"))


def falcon_h1(name: str, params: Params) -> Outcome:
    """``FalconH1ForCausalLM.load_weights`` (falcon_h1.py:504-556): ``.self_attn`` is removed
    from the name (:522-523), then every stacked rename applies in turn while the result is no
    parameter (:528-544: ``continue``, not ``break``, so ``k_proj`` -> ``qkv_proj`` and its
    ``v_proj`` -> ``qkv_proj`` again: ``qkqkv_proj``), and the last lookup is unchecked
    (:552): a scale name raises KeyError (the attention has no KV method, so no scale is a
    parameter)."""
    if ".self_attn." in name:
        name = name.replace(".self_attn", "")
    for weight, param in _FALCON_H1_STACKED:
        if weight in name:
            name = name.replace(weight, param)
            if params(name):
                return Outcome("load", name, None)
    out = _lookup(name, params, "raises")
    why = "its attention has no KV method, so no scale name is a parameter: remove them"
    return Outcome(out.kind, out.target, out.message, why=why)


def mllama4(name: str, params: Params) -> Outcome:
    """``Llama4ForConditionalGeneration.load_weights`` (mllama4.py:640-704) on a language
    model name: ``language_model.`` is prefixed unless present (:714-721); a name holding
    "scale" goes through ``maybe_remap_kv_scale_name`` and, when the remap changes it (a
    drop included), is taken as handled without loading (:724-729: Quark's output_scale
    names vanish silently); q/k/v_proj names then go to ``qkv_proj`` and the default path,
    both with an unchecked ``params_dict[...]`` (:740-746, :967)."""
    if not name.startswith("language_model."):
        name = f"language_model.{name}"
    if "scale" in name and "expert" not in name:
        remapped = names.maybe_remap(name, params)
        if remapped.dropped is not None:
            return Outcome("drop", remapped.name, remapped.dropped)
        if remapped.name != name:
            return Outcome("drop", remapped.name, None)
    for weight in (".self_attn.q_proj", ".self_attn.k_proj", ".self_attn.v_proj"):
        if weight in name:
            return _lookup(name.replace(weight, ".self_attn.qkv_proj"), params, "raises")
    return _lookup(name, params, "raises")


_MISTRAL_LARGE_3_ATTENTION = (
    # MistralLarge3ForCausalLM.remapping (mistral_large_3.py:14-25), the attention entries; a
    # name matches one fully or is skipped with "Unrecognized weight" (:55-63).
    (r"layers\.(\d+)\.attention\.wq\.(\w+)", r"model.layers.\1.self_attn.q_proj.\2"),
    (r"layers\.(\d+)\.attention\.wq_a\.(\w+)", r"model.layers.\1.self_attn.q_a_proj.\2"),
    (r"layers\.(\d+)\.attention\.wq_b\.(\w+)", r"model.layers.\1.self_attn.q_b_proj.\2"),
    (
        r"layers\.(\d+)\.attention\.wkv_a_with_mqa\.(\w+)",
        r"model.layers.\1.self_attn.kv_a_proj_with_mqa.\2",
    ),
    (r"layers\.(\d+)\.attention\.wkv_b\.(\w+)", r"model.layers.\1.self_attn.kv_b_proj.\2"),
    (r"layers\.(\d+)\.attention\.wo\.(\w+)", r"model.layers.\1.self_attn.o_proj.\2"),
    (
        r"layers\.(\d+)\.attention\.k_fake_quantizer\.qscale_act",
        r"model.layers.\1.self_attn.mla_attn.mla_attn.k_scale",
    ),
    (
        r"layers\.(\d+)\.attention\.q_fake_quantizer\.qscale_act",
        r"model.layers.\1.self_attn.mla_attn.mla_attn.q_scale",
    ),
    (
        r"layers\.(\d+)\.attention\.v_fake_quantizer\.qscale_act",
        r"model.layers.\1.self_attn.mla_attn.mla_attn.v_scale",
    ),
)


def mistral_large_3(name: str, params: Params, q_lora_rank: int | None) -> Outcome:
    """``MistralLarge3ForCausalLM._iterable_remap_mistral_to_ds`` (mistral_large_3.py:49-76),
    then DeepSeek's loader: its FP8 scales become vLLM's ``mla_attn.mla_attn.*_scale``, which
    no SGLang module has; any name outside the table is skipped."""
    for pattern, repl in _MISTRAL_LARGE_3_ATTENTION:
        if re.fullmatch(pattern, name):
            return deepseek(re.sub(pattern, repl, name), params, q_lora_rank)
    return Outcome("drop", name, f"Unrecognized weight: {name}. Skipping.")


def mla_recorded(name: str, radix: str, cls: names.LoaderClass, params: Params) -> Outcome:
    """An MLA model whose probe recorded its loader with the parameters on ``attn``
    (``architectures.MLA_RADIX`` says ``attn_mqa``): its real parameters are
    ``<prefix>.attn_mqa.k_scale`` / ``v_scale``, which no remap targets. A loader that never
    remaps (family ``no-remap``) loads exactly the parameter's own name; the others run
    ``maybe_remap_kv_scale_name`` (a target under ``.attn``: never a parameter, so dropped
    with its warning) and then look the name up (the family's ``missing``); the stacked
    q/k/v -> qkv_proj rename is absent on MLA (KimiVL: ``if not config.use_mla``)."""
    if cls.family == "no-remap":
        return _lookup(name, params, cls.missing)
    remapped = names.maybe_remap(name, params)
    if remapped.dropped is not None:
        return Outcome("drop", remapped.name, remapped.dropped)
    return _lookup(remapped.name, params, cls.missing)


@dataclass(frozen=True)
class Layout:
    """How one architecture's SGLang model names its attention and what its loader does to
    checkpoint names before looking them up."""

    prefix: re.Pattern[str]
    """The checkpoint attention prefixes this model's names use (``prefix`` group)."""
    modules: tuple[tuple[str, str], ...] = ()
    """Regex renames (first match) of a checkpoint attention prefix to SGLang's module: the
    same decoder layer, whether or not the loader maps the names there."""
    loader_renames: tuple[tuple[str, str], ...] = ()
    """Regex renames (first match) the model's ``load_weights`` applies to a name's prefix
    before its lookup."""
    loader: str = "recorded"
    """``recorded`` (the architecture's recorded class), or a hand-mirrored loader:
    ``deepseek``, ``minicpm3``, ``falcon_h1``, ``mllama4``, ``mistral_large_3``."""
    recorded_for: tuple[tuple[str, str], ...] = ()
    """(substring, architecture): names holding the substring go to that architecture's
    recorded loader (Gemma-3's multimodal loader hands ``language_model`` names to
    ``Gemma3ForCausalLM.load_weights``, gemma3_mm.py:485-491)."""
    extra_scales: re.Pattern[str] | None = None
    """KV-scale tensor names of this model's own format that no producer convention covers."""
    site: str = ""
    """file:line (under ``srt/models/``) of the ``load_weights`` of a model the probe could
    not run (the recorded table gives the others')."""

    def module_prefix(self, prefix: str) -> str:
        return _rename(prefix, self.modules)

    def loader_prefix(self, prefix: str) -> str:
        return _rename(prefix, self.loader_renames)


def _rename(prefix: str, renames: tuple[tuple[str, str], ...]) -> str:
    for pattern, repl in renames:
        if re.match(pattern, prefix):
            return re.sub(pattern, repl, prefix, count=1)
    return prefix


_MODEL_LAYERS = re.compile(r"^(?P<prefix>model\.layers\.\d+\.self_attn)\.(?P<tail>.+)$")
_LANGUAGE_MODEL = (
    # The same decoder layer N of the language model, however the checkpoint spells it: the
    # RadixAttention is language_model.model.layers.N.self_attn.attn
    # (gemma3_mm.py / mllama4.py: self.language_model = ...ForCausalLM(prefix="language_model")).
    (r"^model\.language_model\.", "language_model.model."),
    (r"^model\.layers\.", "language_model.model.layers."),
)
_DEEPSEEK = Layout(_MODEL_LAYERS, loader="deepseek")

LAYOUTS: dict[str, Layout] = {
    # nemotron_h.py:929 remap_prefix {"backbone": "model"} (:1257); the attention is the
    # mixer's RadixAttention, model.layers.N.mixer.attn (:737).
    "NemotronHForCausalLM": Layout(
        re.compile(r"^(?P<prefix>(?:backbone|model)\.layers\.\d+\.mixer)\.(?P<tail>.+)$"),
        modules=((r"^backbone\.", "model."), (r"^(model\.layers\.\d+)\.self_attn$", r"\1.mixer")),
        loader_renames=((r"^backbone\.", "model."),),
    ),
    "NemotronHPuzzleForCausalLM": Layout(
        re.compile(r"^(?P<prefix>(?:backbone|model)\.layers\.\d+\.mixer)\.(?P<tail>.+)$"),
        modules=((r"^backbone\.", "model."), (r"^(model\.layers\.\d+)\.self_attn$", r"\1.mixer")),
        loader_renames=((r"^backbone\.", "model."),),
    ),
    # falcon_h1.py:172: the decoder layer itself holds the RadixAttention (model.layers.N.attn).
    "FalconH1ForCausalLM": Layout(
        re.compile(r"^(?P<prefix>model\.layers\.\d+(?:\.self_attn)?)\.(?P<tail>.+)$"),
        modules=((r"^(.*\.layers\.\d+)\.self_attn$", r"\1"),),
        loader="falcon_h1",
        site="falcon_h1.py:504",
    ),
    "Gemma3ForConditionalGeneration": Layout(
        re.compile(
            r"^(?P<prefix>(?:language_model\.model|model\.language_model|model)"
            r"\.layers\.\d+\.self_attn)\.(?P<tail>.+)$"
        ),
        modules=_LANGUAGE_MODEL,
        recorded_for=(("language_model", "Gemma3ForCausalLM"),),
    ),
    "Llama4ForConditionalGeneration": Layout(
        re.compile(
            r"^(?P<prefix>(?:language_model\.model|model\.language_model|model)"
            r"\.layers\.\d+\.self_attn)\.(?P<tail>.+)$"
        ),
        modules=_LANGUAGE_MODEL,
        loader="mllama4",
        site="mllama4.py:640",
    ),
    # kimi_vl.py: self.language_model = DeepseekV2ForCausalLM(prefix="language_model").
    "KimiVLForConditionalGeneration": Layout(
        re.compile(r"^(?P<prefix>language_model\.model\.layers\.\d+\.self_attn)\.(?P<tail>.+)$"),
        modules=_LANGUAGE_MODEL,
    ),
    "MiniCPM3ForCausalLM": Layout(_MODEL_LAYERS, loader="minicpm3", site="minicpm3.py:446"),
    # mistral_large_3.py:12: a DeepseekV3ForCausalLM over Mistral-format names.
    "MistralLarge3ForCausalLM": Layout(
        re.compile(r"^(?P<prefix>layers\.\d+\.attention)\.(?P<tail>.+)$"),
        modules=((r"^layers\.(\d+)\.attention$", r"model.layers.\1.self_attn"),),
        loader="mistral_large_3",
        extra_scales=re.compile(r"\.[kqv]_fake_quantizer\.qscale_act$"),
        site="mistral_large_3.py:46",
    ),
}
"""Hand-mirrored layouts, by architecture; the DeepSeek loader group (``DEEPSEEK_LOADER``)
gets ``_DEEPSEEK``."""

DEEPSEEK_LOADER = frozenset(
    arch
    for arch, entry in architectures.ARCHITECTURES.items()
    if architectures.LOADER_CLASSES[entry.loader].family == "attn-mqa"
)
"""Architectures whose recorded loader is DeepSeek's (family ``attn-mqa``): every scale name
goes through ``deepseek`` (the recorded table covers its probe tails only; the parity tests
check that ``deepseek`` gives every recorded outcome)."""


def layout(arch: str | None) -> Layout | None:
    if arch is None:
        return None
    if arch in LAYOUTS:
        return LAYOUTS[arch]
    if arch in DEEPSEEK_LOADER:
        return _DEEPSEEK
    return None


NVFP4_SEARCHED = re.compile(
    r"(?:^|\.)layers\.\d+\.(?:self_attn\.attn|self_attn\.attn_mqa|attn|attention\.attn)$"
)
"""Where ``NVFP4KVCacheMethod.load_scales_from_model`` looks for each decoder layer's
RadixAttention (fp4_kv_cache_quant_method.py:498-507): ``self_attn.attn``, else
``self_attn.attn_mqa``, else ``attn``, else ``attention.attn``; any other (NemotronH's
``mixer.attn``) keeps the 1.0 it was created with."""


def kv_shared_source(shape: ModelShape, index: int) -> int | None:
    """The layer whose KV cache layer ``index`` reads (its RadixAttention's ``layer_id``), or
    None when it writes its own. The last ``num_kv_shared_layers`` share: Gemma-4 reads the
    last earlier layer of its own type (``gemma4_causal.py:397-415``; executed), Gemma-3n the
    last sliding (``first - 2``) or full (``first - 1``) one (``gemma3n_causal.py:373-385``;
    code reading). ``config.layer_types`` is what both read."""
    shared = shape.num_kv_shared_layers
    types = shape.hf_layer_types
    model = shape.model_type or ""
    if not shared or not shape.num_hidden_layers or types is None:
        return None
    first = shape.num_hidden_layers - shared
    if index < first or index >= len(types) or first <= 0:
        return None
    if model.startswith("gemma4"):
        earlier = list(types[:first])
        if types[index] not in earlier:
            return None  # SGLang raises ValueError building the model (gemma4_causal.py:407)
        return len(earlier) - 1 - earlier[::-1].index(types[index])
    if model.startswith("gemma3n"):
        return first - 2 if types[index] == "sliding_attention" else first - 1
    return None
