"""Where vLLM 0.33.0's weight loaders send one KV-scale-like checkpoint tensor, for the
architecture a checkpoint names (its facts: ``kvscale/engine/vllm/arch_classes.py``).

A name goes the way vLLM's loaders take it:

1. a multimodal wrapper's ``AutoWeightsLoader`` (its mapper, the quant method's cache-scale
   mapper) hands ``language_model.*`` to the text architecture;
2. the architecture's top loader: an ``AutoWeightsLoader`` (``mapper=`` the model's own, the
   cache-scale mapper when it finds a quant config) that hands ``model.*`` to the module built
   as ``self.model``, or a hand-written loader (BailingMoeV3);
3. that module's loader: another ``AutoWeightsLoader``, or a hand-written one that applies
   ``maybe_remap_kv_scale_name`` and looks the name up in ``params_dict``;
4. the module tree: a KV-scale parameter (``Attention`` at ``<prefix>.attn``, DeepSeek's
   ``MLAAttention`` at ``<prefix>.mla_attn.mla_attn``, V3.2's at ``<prefix>`` itself) exists only
   where the quant method gives the layer a KV method.

The outcome is a ``Placement``: loaded into a kind, dropped (vLLM's warning, or silently), or
refused with vLLM's own exception text. Every step mirrors the function named in its comment;
tests/parity/test_vllm_arch_parity.py holds the outcome of vLLM's own code for 555 checkpoints.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kvscale.conventions import layer_index
from kvscale.engine.base import QuantConfig
from kvscale.engine.vllm.loaders import EMPTY, ArchClass, Loader, WeightsMapper
from kvscale.engine.vllm.names import cache_scale_mapper
from kvscale.layers import is_kv_cache_layer
from kvscale.model_config import ModelShape

KV_KINDS = ("k_scale", "v_scale", "q_scale", "prob_scale")
BUFFERS = ("_k_scale", "_v_scale", "_q_scale", "_prob_scale")
"""``set_default_quant_scales(register_buffer=True)``: persistent buffers of every holder,
which ``AutoWeightsLoader`` fills directly (``_add_loadable_non_param_tensors``)."""

IGNORABLE_SUFFIXES = (
    ".q_scale",
    ".k_scale",
    ".v_scale",
    ".q_zero_point",
    ".k_zero_point",
    ".v_zero_point",
    ".bias",
)
"""``QuantizationConfig._ignore_unexpected_suffixes`` (base_config.py) plus the ``.bias``
``AutoWeightsLoader.load_weights`` always adds: an unexpected name ending so is skipped by a
loader that found the quant config."""

_REMAP_PATTERNS = (
    (r"\.self_attn\.([kv])_proj\.([kv])_scale$", r".self_attn.{attn}.\2_scale"),
    (r"\.self_attn\.qkv_proj\.([kv])_scale$", r".self_attn.attn.\1_scale"),
    (r"\.self_attn\.qkqkv_proj\.([kv])_scale$", r".self_attn.attn.\1_scale"),
    (r"\.mixer\.[kv]_proj\.([kv])_scale$", r".mixer.attn.\1_scale"),
    (r"\.self_attn\.q\.scale$", r".self_attn.attn.q_scale"),
    (r"\.self_attn\.([kv])_cache\.scale$", r".self_attn.attn.\1_scale"),
    (r"\.([qkv])_scale$", r".attn.\1_scale"),
    (r"\.([qkv])_zero_point$", r".attn.\1_zero_point"),
)
"""``maybe_remap_kv_scale_name``'s patterns (model_loader/weight_utils.py), in order; only the
ModelOpt one uses ``attn_str`` (``mla_attn.mla_attn`` when a parameter name holds ``mla_attn``)."""

_REMAP_SUFFIXES = (
    ".k_scale",
    ".v_scale",
    ".q_scale",
    ".k_zero_point",
    ".v_zero_point",
    ".q_zero_point",
    ".q.scale",
    ".k_cache.scale",
    ".v_cache.scale",
)

_ATTENTION_CHILDREN = frozenset(["attn", "qkv_proj", "o_proj", "rotary_emb", "q_norm", "k_norm"])
"""Submodules of an ``Attention``-holding block whose names KV-scale tensors can take (q/k/v
projections are stacked into ``qkv_proj`` by every such model's mapper or loader)."""

_MLA_CHILDREN = frozenset(
    [
        "mla_attn",
        "fused_qkv_a_proj",
        "q_a_proj",
        "q_a_layernorm",
        "q_b_proj",
        "q_proj",
        "kv_a_proj_with_mqa",
        "kv_a_layernorm",
        "kv_b_proj",
        "o_proj",
        "rotary_emb",
        "indexer",
    ]
)
"""Submodules of DeepSeek's MLA attention block (``DeepseekV2MLAAttention``): the latent
projections and ``mla_attn`` (``MultiHeadLatentAttentionWrapper``, holding ``MLAAttention`` as
its own ``mla_attn``); there is no ``attn`` and no ``k_proj``/``v_proj``."""

_GUARDED_SKIPS = frozenset(["BailingMoeV3ForCausalLM.load_weights"])
"""Hand-written loaders the static evidence sees indexing ``params_dict`` that still skip a name
they cannot place: BailingMoeV3's ``load_param`` returns False for a name not in
``params_dict`` (bailing_moe_v3.py). A loader that indexes it nowhere visible skips too
(GptOssModel's ``_load_weights_other`` ends in ``if name not in params_dict: continue``); the
others raise KeyError (DeepseekV2Model, LongCat's FlashModel, MiniCPMModel): all executed,
tests/parity/vllm_arch_expected.json."""

_PREFIX = re.compile(
    r"^(?P<p>(?:.*\.)?layers\.\d+\.(?:self_attn|attention|mixer|attn)(?:\.\d+)?)(?=\.)"
)
"""A checkpoint tensor's attention block: ``...layers.N.<self_attn|attention|mixer|attn>``
(LongCat-Flash: ``self_attn.0``)."""


@dataclass(frozen=True)
class Placement:
    """What vLLM's loaders do with one tensor."""

    engine_name: str
    """The name at the step that decided (after every rename before it)."""
    kind: str | None = None
    """The KV-scale parameter (or ``_k_scale``-like buffer) it is loaded into."""
    error: str | None = None
    """vLLM's exception, as it prints it: the model does not load."""
    dropped: str | None = None
    """Why it reaches no parameter (vLLM's warning, or how it is skipped silently)."""


@dataclass(frozen=True)
class Model:
    """The loading chain of one checkpoint: resolved once, from config.json and the quant
    config."""

    arch: str
    facts: ArchClass
    wrapper: ArchClass | None
    """The multimodal wrapper in front of ``facts`` (its top loader runs first)."""
    shape: ModelShape
    mla: bool
    """The attention layers are ``MLAAttention`` (DeepSeek's latent cache)."""
    mla_at_prefix: bool
    """V3.2-style ``DeepseekV32Attention``: the MLA layer is the attention block itself."""
    stacked_qkv: bool
    """Hand-written loaders rename ``q/k/v_proj`` to ``qkv_proj`` (``stacked_params_mapping``)
    and index ``params_dict`` with the result: attention blocks of plain ``Attention``."""
    params: frozenset[str] = field(default_factory=frozenset)
    """The KV-scale parameters of each attention layer (empty: no KV method)."""
    quant_method: str | None = None
    has_quant_config: bool = False

    @property
    def holder_suffix(self) -> str:
        """Where the KV-scale parameters hang below the attention block."""
        if self.mla and not self.mla_at_prefix:
            return ".mla_attn.mla_attn"
        if self.mla:
            return ""
        return ".attn"

    @property
    def cache_mapper(self) -> WeightsMapper | None:
        """The quant method's cache-scale mapper (None without a quant config)."""
        return cache_scale_mapper(self.quant_method) if self.has_quant_config else None

    def is_kv_layer(self, name: str) -> bool:
        index = layer_index(name)
        return index is None or is_kv_cache_layer(self.shape, index)


def attention_prefix_of(tensor: str) -> str | None:
    """The checkpoint attention block a tensor name sits under, if any."""
    match = _PREFIX.match(tensor)
    return match["p"] if match else None


# --- which architecture, which holders -----------------------------------------------------

_DEEPSEEK_MLA_TYPES = frozenset(
    [
        "axk1",
        "deepseek_v2",
        "deepseek_v3",
        "deepseek_v32",
        "deepseek_v4",
        "deepseek_v41",
        "dots3_note",
        "deepseek_mtp",
        "k3_dspark",
        "glm5_next",
        "glm5_next_text",
        "glm_moe_dsa",
        "glm4_moe_lite",
        "glm4_moe_lite_mtp",
        "kimi_k2",
        "kimi_linear",
        "longcat_flash",
        "pangu_ultra_moe",
        "pangu_ultra_moe_mtp",
        "bailing_hybrid",
        "bailing_hybrid_mtp",
        "bailing_hybrid_v3_mtp",
        "hy_v4",
        "hy_v4_mtp",
    ]
)
"""``ModelArchConfigConvertorBase.is_deepseek_mla``'s model types
(transformers_utils/model_arch_config_convertor.py)."""


def mla_disabled() -> bool:
    """vLLM's ``VLLM_MLA_DISABLE`` (envs.py: ``bool(int(os.getenv(..., "0")))``): kvscale reads
    the same variable, so a deployment that sets it can set it for kvscale too."""
    import os

    value = os.environ.get("VLLM_MLA_DISABLE", "0").strip() or "0"
    try:
        return bool(int(value))
    except ValueError:
        return False


def use_mla(shape: ModelShape) -> bool:
    """``ModelConfig.use_mla`` (config/model.py): not disabled, causal, and
    ``is_deepseek_mla``: ``hf_text_config.model_type`` in the list with a ``kv_lora_rank``."""
    if mla_disabled():
        return False
    return shape.text_model_type in _DEEPSEEK_MLA_TYPES and shape.kv_lora_rank is not None


def _uses_mha(shape: ModelShape) -> bool:
    """``DeepseekV2DecoderLayer``: ``model_type == "deepseek"`` or both q/k head dims 0 build
    plain multi-head attention (deepseek_v2.py)."""
    return shape.text_model_type == "deepseek" or (
        not shape.qk_nope_head_dim and not shape.qk_rope_head_dim
    )


def resolve_architecture(shape: ModelShape) -> tuple[str, ArchClass, ArchClass | None] | None:
    """(text architecture, its facts, the wrapper's facts) for the first architecture of
    config.json that vLLM's registry holds; None when none is registered."""
    from kvscale.engine.vllm.arch_classes import ARCH_CLASSES

    for arch in shape.architectures:
        facts = ARCH_CLASSES.get(arch)
        if facts is None:
            continue
        if facts.kind != "multimodal-wrapper":
            return arch, facts, None
        text = facts.language_model or next(iter(shape.text_architectures), None)
        if text is None and shape.text_model_type:
            # No architectures in text_config: vLLM builds transformers' causal-LM class for
            # the text model_type, which is registered under the same name.
            camel = "".join(part.capitalize() for part in shape.text_model_type.split("_"))
            text = f"{camel}ForCausalLM"
        inner = ARCH_CLASSES.get(text or "")
        if inner is None or text is None:
            return None
        return text, inner, facts
    return None


def holds_mla(facts: ArchClass, shape: ModelShape) -> bool:
    """The attention layers are ``MLAAttention``: an architecture that builds only MLA holders
    always (Sarvam-MLA, BailingMoeV3, LongCat-Flash); DeepSeek's decoder layer chooses by
    config (``DeepseekV2DecoderLayer``: MHA, else MLA when ``use_mla``, else
    ``DeepseekV2Attention``). MiniCPM3 has a ``kv_lora_rank`` and plain ``Attention``."""
    if "MLAAttention" not in facts.holders:
        return False
    if "Attention" not in facts.holders:
        return True
    return use_mla(shape) and not _uses_mha(shape)


MLA_KV_METHODS = frozenset(["modelopt", "modelopt_fp4", "modelopt_mxfp8"])
"""Raw quant methods whose config gives ``MLAAttention`` a KV method:
``ModelOptQuantConfigBase.get_quant_method`` tests ``(Attention, MLAAttention)``
(quantization/modelopt.py); mixed precision (``ModelOptMixedPrecisionConfig``), fp8,
compressed-tensors and Quark test ``Attention`` only."""


def kv_params(
    has_quant_config: bool,
    quant_method: str | None,
    raw_method: str | None,
    *,
    mla: bool,
    without_quant_config: bool,
) -> frozenset[str]:
    """The KV-scale parameters a layer's quant method creates (``create_weights`` of
    ``BaseKVCacheMethod`` / ``CompressedTensorsKVCacheMethod``); empty without a KV method."""
    if not has_quant_config or without_quant_config:
        return frozenset()
    if mla:
        return frozenset(KV_KINDS) if raw_method in MLA_KV_METHODS else frozenset()
    if quant_method == "compressed-tensors":
        return frozenset(["k_scale", "v_scale", "q_scale"]) | {f"{k}_zero_point" for k in "kvq"}
    if quant_method in ("fp8", "modelopt", "quark"):
        return frozenset(KV_KINDS)
    return frozenset()


def modelopt_method(raw: Mapping[str, Any] | None) -> str | None:
    """The ModelOpt config class vLLM picks (``ModelConfig._verify_quantization``: the
    ``override_quantization_method`` of modelopt, modelopt_fp4, modelopt_mxfp8 and
    modelopt_mixed, in that order, on ``_extract_modelopt_quant_algo``: ``quantization.quant_algo``
    or a top-level ``quant_algo``); None for other configs."""
    if raw is None or not str(raw.get("quant_method") or "").lower().startswith("modelopt"):
        return None
    inner = raw.get("quantization")
    if "quantization" in raw:
        algo = str(inner.get("quant_algo", "")).upper() if isinstance(inner, Mapping) else None
    else:
        algo = str(raw.get("quant_algo", "")).upper()
    if algo is None:
        return None
    if algo == "FP8":
        return "modelopt"
    if "NVFP4" in algo or "FP4" in algo:
        return "modelopt_fp4"
    if "MXFP8" in algo:
        return "modelopt_mxfp8"
    if algo == "MIXED_PRECISION":
        return "modelopt_mixed"
    return None


def model_of(quant: QuantConfig, shape: ModelShape) -> Model | None:
    """The loading chain of this checkpoint; None when its architecture is not in vLLM's
    registry (kvscale then applies Llama's rules). Asked once per tensor with the same two
    objects: the last answer is kept for them (hashing a ModelShape per tensor would cost more
    than the routing)."""
    disabled = mla_disabled()
    last = _LAST[0]
    if last is not None and last[0] is quant and last[1] is shape and last[2] == disabled:
        return last[3]
    method = modelopt_method(quant.raw) or quant.raw_method
    model = _model_of(shape, quant.raw is not None, quant.quant_method, method, disabled)
    _LAST[0] = (quant, shape, disabled, model)
    return model


_LAST: list[tuple[QuantConfig, ModelShape, bool, Model | None] | None] = [None]


@lru_cache(maxsize=64)
def _model_of(
    shape: ModelShape,
    has_quant_config: bool,
    quant_method: str | None,
    raw_method: str | None,
    disabled: bool,
) -> Model | None:
    """``model_of`` on hashable inputs (``disabled``: ``VLLM_MLA_DISABLE``, read by
    ``holds_mla``, is part of the key)."""
    found = resolve_architecture(shape)
    if found is None:
        return None
    arch, facts, wrapper = found
    mla = holds_mla(facts, shape)
    deepseek = "MLAAttention" in facts.holders and "Attention" in facts.holders
    return Model(
        arch=arch,
        facts=facts,
        wrapper=wrapper,
        shape=shape,
        mla=mla,
        mla_at_prefix=mla and shape.index_topk is not None,
        stacked_qkv=not mla and (not deepseek or _uses_mha(shape)),
        params=kv_params(
            has_quant_config,
            quant_method,
            raw_method,
            mla=mla,
            # custom MLA layers (Kimi-Linear), fixed-scale layers and models without holders
            # get no KV method from any quant config
            without_quant_config=facts.kind == "attention-without-quant_config"
            or not facts.holders & {"Attention", "MLAAttention"},
        ),
        quant_method=quant_method,
        has_quant_config=has_quant_config,
    )


# --- the walk -------------------------------------------------------------------------------


def engine_prefix(prefix: str, model: Model) -> str:
    """The module path of a checkpoint attention block in vLLM: the wrapper's and the
    architecture's name mappers applied to it (without their suffix rules, which rename
    tensors, not modules)."""
    name = prefix + ".attn"
    if model.wrapper is not None and model.wrapper.top is not None:
        name = _modules_only(model.wrapper.top.mapper).map(name) or name
        if name.startswith("language_model."):
            rest = name[len("language_model.") :]
            top = model.facts.top
            rest = _modules_only(top.mapper if top else None).map(rest) or rest
            name = "language_model." + rest
    elif model.facts.top is not None:
        name = _modules_only(model.facts.top.mapper).map(name) or name
    return name.removesuffix(".attn")


def _modules_only(mapper: WeightsMapper | None) -> WeightsMapper:
    if mapper is None:
        return EMPTY
    return WeightsMapper(regex=mapper.regex, substr=mapper.substr, prefix=mapper.prefix)


def _merged(loader: Loader, model: Model) -> WeightsMapper:
    """``AutoWeightsLoader.load_weights``: ``mapper or WeightsMapper()``, then ``|=`` the
    cache-scale mapper when the loader finds a quant config."""
    base = loader.mapper or EMPTY
    cache = model.cache_mapper if loader.quant_visible else None
    return base | cache if cache is not None else base


def place(tensor: str, model: Model) -> Placement:
    """Follow one checkpoint tensor through vLLM's loaders for this model."""
    name = tensor
    wrapper = model.wrapper.top if model.wrapper is not None else None
    if wrapper is not None:
        mapped = _merged(wrapper, model).map(name)
        if mapped is None:
            return Placement(name, dropped=f"{wrapper.owner}'s name mapper drops it")
        if not mapped.startswith("language_model."):
            return _top_level_refusal(mapped, wrapper.owner)
        name = mapped[len("language_model.") :]
    top = model.facts.top
    if top is None:
        return Placement(name, dropped="the architecture's loader is not resolvable statically")
    if not top.auto:
        return _hand_written(name, top, model)
    mapped = _merged(top, model).map(name)
    if mapped is None:
        return Placement(name, dropped=f"{top.owner}'s name mapper drops it")
    if not mapped.startswith("model."):
        return _top_level_refusal(mapped, top.owner)
    inner = model.facts.model
    if inner is None:
        return _auto_place(mapped, model, top)
    rel = mapped[len("model.") :]
    if not inner.auto:
        return _hand_written(rel, inner, model)
    named = _merged(inner, model).map(rel)
    if named is None:
        return Placement(rel, dropped=f"{inner.owner}'s name mapper drops it")
    return _auto_place(named, model, inner)


def _top_level_refusal(name: str, owner: str) -> Placement:
    """``AutoWeightsLoader._load_module`` at the top: a first component that is no child of
    the model (``model``, ``lm_head``, a wrapper's towers) raises, naming that component."""
    first = name.split(".", 1)[0]
    return Placement(
        name, error=f"ValueError: There is no module or parameter named {first!r} in {owner}."
    )


def _block_of(name: str) -> str | None:
    """The attention block (module path) a mapped name sits under: ``...layers.N.<attention
    module>``, or the decoder layer itself where the model's mapper folds the block into it
    (Jamba: ``.self_attn.`` -> ``.``)."""
    match = _PREFIX.match(name)
    if match is not None:
        return match["p"]
    layer = re.match(r"^((?:.*\.)?layers\.\d+)\.", name)
    return layer.group(1) if layer else None


def _auto_place(name: str, model: Model, loader: Loader) -> Placement:
    """``AutoWeightsLoader._load_module``: walk the module tree one component at a time; a
    parameter or persistent buffer of the holder loads, a missing module or parameter raises
    ``There is no module or parameter named <path so far> in <loader's module class>`` unless
    the path ends with a suffix the loader may ignore."""
    block = _block_of(name)
    if block is None:
        return _missing(name, name, loader, model)
    params = model.params if model.is_kv_layer(block) else frozenset()
    children = _MLA_CHILDREN if model.mla and not model.mla_at_prefix else _ATTENTION_CHILDREN
    holder = [p for p in model.holder_suffix.split(".") if p]
    path, parts = block, name[len(block) + 1 :].split(".")
    depth = 0  # how far down the holder's path (attn, mla_attn.mla_attn) the walk is
    for i, part in enumerate(parts):
        here = f"{path}.{part}"
        if i == len(parts) - 1:
            if depth == len(holder) and (part in params or part in BUFFERS):
                return Placement(name, kind=part)
            return _missing(name, here, loader, model)
        if depth < len(holder) and part == holder[depth]:
            depth += 1
        elif i == 0 and part in children:
            depth = len(holder) + 1  # a projection: no KV-scale parameter below it
        else:
            return _missing(name, here, loader, model)
        path = here
    return _missing(name, name, loader, model)


def _missing(name: str, path: str, loader: Loader, model: Model) -> Placement:
    """``_can_ignore_unexpected(prefix + ".")`` or ``(prefix)``, else the ValueError."""
    ignorable = (
        loader.quant_visible and model.has_quant_config and path.endswith(IGNORABLE_SUFFIXES)
    )
    if ignorable:
        return Placement(
            name,
            dropped=f"{loader.owner}'s AutoWeightsLoader skips {path!r}: the quant config lets "
            "it ignore an unexpected scale",
        )
    return Placement(
        name,
        error=f"ValueError: There is no module or parameter named {path!r} in {loader.owner}.",
    )


def _param_names(name: str, model: Model) -> frozenset[str]:
    """``params_dict`` entries (as the loader names them) of the layer ``name`` belongs to."""
    block = _block_of(name)
    if block is None or not model.is_kv_layer(block):
        return frozenset()
    return frozenset(f"{block}{model.holder_suffix}.{kind}" for kind in model.params)


def _remap(name: str, params: frozenset[str]) -> tuple[str | None, str | None]:
    """``maybe_remap_kv_scale_name``: (the name to load, or None) and vLLM's warning when it
    drops the name."""
    if name in params:
        return name, None
    if name.endswith(".kv_scale"):
        remapped = name.replace(".kv_scale", ".attn.k_scale")
        if remapped not in params:
            return None, (
                f"Found kv_scale in the checkpoint (e.g. {name}), but not found the expected "
                f"name in the model (e.g. {remapped}). kv_scale is not loaded."
            )
        return remapped, None
    attn = "mla_attn.mla_attn" if any("mla_attn" in p for p in params) else "attn"
    if name.endswith(_REMAP_SUFFIXES):
        for pattern, replacement in _REMAP_PATTERNS:
            if re.search(pattern, name):
                remapped = re.sub(pattern, replacement.replace("{attn}", attn), name)
                if remapped not in params:
                    kind = name.rsplit(".", 1)[-1]
                    return None, (
                        f"Found {kind} in the checkpoint (e.g. {name}), but not found the "
                        f"expected name in the model (e.g. {remapped}). {kind} is not loaded."
                    )
                return remapped, None
    return name, None


def _hand_written(name: str, loader: Loader, model: Model) -> Placement:
    """A hand-written ``load_weights``: its own name mapper (BailingMoeV3), then
    ``maybe_remap_kv_scale_name`` if it calls it, then the stacked q/k/v -> qkv_proj rename of
    attention blocks, then ``params_dict[name]`` (KeyError) or a silent skip."""
    if loader.mapper is not None:
        mapped = loader.mapper.map(name)
        if mapped is None:
            return Placement(name, dropped=f"{loader.owner}'s name mapper drops it")
        name = mapped
    params = _param_names(name, model)
    method = loader.defined_in.rsplit("(", 1)[-1].rstrip(")")
    skips = not loader.indexes_params or method in _GUARDED_SKIPS
    if loader.remap:
        remapped, warning = _remap(name, params)
        if remapped is None:
            return Placement(name, dropped=f"vLLM warns: {warning}")
        name = remapped
    if name in params:
        return Placement(name, kind=name.rsplit(".", 1)[-1])
    if model.stacked_qkv:
        stacked = re.sub(r"\.[qkv]_proj\.", ".qkv_proj.", name)
        if stacked != name:
            # The stacked branch indexes params_dict[name] (GptOssModel, MiniCPMModel,
            # DeepSeek's MHA layers).
            return Placement(stacked, error=f"KeyError: {stacked!r}")
    if skips:
        return Placement(name, dropped=f"{method} skips a name that is no parameter")
    return Placement(name, error=f"KeyError: {name!r}")
