"""SGLang 0.5.23: how each registered architecture's ``load_weights`` treats KV-scale
tensor names (generated: do not edit).

Written by ``tests/parity/sglang_architectures.py --write``, which runs every
architecture's own loader (from the SGLang source tree) on one tensor of each naming
convention (``PROBE_TAILS``, under ``model.layers.0.self_attn``) in a model with
KV-cache scale parameters (``kv``: a KV-cache quant method exists) and without, and
records what happened: loaded into which parameter, dropped (with what SGLang logged,
or silently), or the exception that stops the model from loading. Architectures with
the same record share a loader class, named after one of them.
``tests/test_sglang_parity.py -k architectures_up_to_date`` re-derives this file from
the source tree (``KVSCALE_SGLANG_SRC``).

Outcomes are ``(kind, target, message)``: kind ``load`` / ``drop`` / ``raise``; target
the parameter (``{prefix}`` = the checkpoint's attention prefix, ``{layer}`` = its
decoder layer); message an index into ``MESSAGES`` (``{name}``: the tensor's name).
Comments give, per architecture, the file:line of its ``load_weights`` (under
``sglang/srt/models/``) and of each behaviour mirrored (under ``sglang/``): the remap
call, the parameter load, the log line, the raise.
"""

from __future__ import annotations

from kvscale.engine.sglang.names import Arch, LoaderClass

SGLANG_VERSION = "0.5.23"
SOURCES_SHA256 = "130da1b6234c0082b08ff13e79f236331d8c5fe715ad378720eab011a588a20b"
"""sha256 over the sha256 of every SGLang source file executed to derive this table."""

PROBE_TAILS: tuple[str, ...] = (
    "k_scale",
    "v_scale",
    "q_scale",
    "kv_scale",
    "prob_scale",
    "k_proj.k_scale",
    "v_proj.v_scale",
    "q_proj.output_scale",
    "k_proj.output_scale",
    "v_proj.output_scale",
    "prob_output_scale",
    "attn.k_scale",
    "attn.v_scale",
    "attn.q_scale",
    "attn.prob_scale",
    "attn._k_scale",
    "attn._v_scale",
    "attn_mqa.k_scale",
    "attn_mqa.v_scale",
    "qkv_proj.k_scale",
    "qkv_proj.v_scale",
    "k_proj.k_bias",
    "v_proj.v_bias",
    "k_cache.scale",
    "v_cache.scale",
    "q.scale",
    "k_zero_point",
    "v_zero_point",
    "q_zero_point",
    "kvscale_unknown_scale",
)

MESSAGES: tuple[str, ...] = (
    # 0
    "Parameter {name} not found in model.",
    # 1
    (
        "DEPRECATED. Found kv_scale in the checkpoint. This format is deprecated in favor of "
        "separate k_scale and v_scale tensors and will be removed in a future release. "
        "Functionally, we will remap kv_scale to k_scale and duplicate k_scale to v_scale"
    ),
    # 2
    "Parameter {prefix}.attn.q_scale not found in model.",
    # 3
    "Parameter {layer}..attn.prob_scale not found in model.",
    # 4
    (
        "Found .k_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.attn.k_scale). .k_scale is not loaded."
    ),
    # 5
    (
        "Found .v_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.attn.v_scale). .v_scale is not loaded."
    ),
    # 6
    (
        "Found .k_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn_mqa.attn.k_scale). .k_scale is not loaded."
    ),
    # 7
    (
        "Found .v_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn_mqa.attn.v_scale). .v_scale is not loaded."
    ),
    # 8
    (
        "Found .k_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.qkv_proj.attn.k_scale). .k_scale is not loaded."
    ),
    # 9
    (
        "Found .v_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.qkv_proj.attn.v_scale). .v_scale is not loaded."
    ),
    # 10
    "Parameter {prefix}.qkv_proj.k_bias not found in model.",
    # 11
    "Parameter {prefix}.qkv_proj.v_bias not found in model.",
    # 12
    (
        "Found .k_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.k_scale). .k_scale is not loaded."
    ),
    # 13
    (
        "Found .v_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.v_scale). .v_scale is not loaded."
    ),
    # 14
    (
        "DEPRECATED. Found kv_scale in the checkpoint. This format is deprecated in favor of "
        "separate k_scale and v_scale tensors and will be removed in a future release. "
        "Functionally, we will remap kv_scale to k_scale and duplicate k_scale to v_scale | "
        "Found kv_scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.k_scale). kv_scale is not loaded."
    ),
    # 15
    "Parameter {prefix}.attn.k_scale not found in model.",
    # 16
    "Parameter {prefix}.attn.v_scale not found in model.",
    # 17
    "KeyError: '{name}'",
    # 18
    "KeyError: '{prefix}.attn.q_scale'",
    # 19
    "KeyError: '{layer}..attn.prob_scale'",
    # 20
    "KeyError: '{prefix}.attn.k_scale'",
    # 21
    "KeyError: '{prefix}.attn.v_scale'",
    # 22
    "{name} not found in params_dict.",
    # 23
    "{prefix}.qkattn_mqa.v_scale not found in params_dict.",
    # 24
    "{prefix}.attn_mqa.k_scale not found in params_dict.",
    # 25
    "{prefix}.attn_mqa.v_scale not found in params_dict.",
    # 26
    "{prefix}.self_attn.k_scale not found in params_dict.",
    # 27
    "{prefix}.self_attn.v_scale not found in params_dict.",
    # 28
    "{prefix}.self_attn.q_scale not found in params_dict.",
    # 29
    "{prefix}.self_attn.prob_scale not found in params_dict.",
    # 30
    "{prefix}.self_attn._k_scale not found in params_dict.",
    # 31
    "{prefix}.self_attn._v_scale not found in params_dict.",
    # 32
    "{prefix}.k_cache.weight_scale_inv not found in params_dict.",
    # 33
    "{prefix}.v_cache.weight_scale_inv not found in params_dict.",
    # 34
    "{prefix}.q.weight_scale_inv not found in params_dict.",
    # 35
    "KeyError: \"Parameter '{name}' not found in model.\"",
    # 36
    "KeyError: '{prefix}.qkv_proj.k_scale'",
    # 37
    "KeyError: '{prefix}.qkv_proj.v_scale'",
    # 38
    "KeyError: '{prefix}.qkv_proj.output_scale'",
    # 39
    "KeyError: '{prefix}.qkv_proj.k_bias'",
    # 40
    "KeyError: '{prefix}.qkv_proj.v_bias'",
    # 41
    "Skipping parameter {name} - not found in model",
    # 42
    "KeyError: '{prefix}.qkqkv_proj.k_scale'",
    # 43
    "KeyError: '{prefix}.qkqkv_proj.v_scale'",
    # 44
    (
        "Found .k_scale in the checkpoint (e.g. {prefix}.qkv_proj.k_scale), but not found the "
        "expected name in the model (e.g. {prefix}.qkv_proj.attn.k_scale). .k_scale is not "
        "loaded."
    ),
    # 45
    (
        "Found .v_scale in the checkpoint (e.g. {prefix}.qkv_proj.v_scale), but not found the "
        "expected name in the model (e.g. {prefix}.qkv_proj.attn.v_scale). .v_scale is not "
        "loaded."
    ),
    # 46
    "Parameter {name} not found in params_dict",
    # 47
    "Parameter {prefix}.qkv_proj.k_scale not found in params_dict",
    # 48
    "Parameter {prefix}.qkv_proj.v_scale not found in params_dict",
    # 49
    "Parameter {prefix}.qkv_proj.output_scale not found in params_dict",
    # 50
    "Parameter {prefix}.qkv_proj.k_bias not found in params_dict",
    # 51
    "Parameter {prefix}.qkv_proj.v_bias not found in params_dict",
    # 52
    "IndexError: tuple index out of range",
    # 53
    "ValueError: Unexpected IQuest Q1 weight: {name}",
    # 54
    "Parameter {prefix}.attn.q_scale not found in params_dict",
    # 55
    "Parameter {layer}..attn.prob_scale not found in params_dict",
    # 56
    "Parameter {prefix}.attn.k_scale not found in params_dict",
    # 57
    "Parameter {prefix}.attn.v_scale not found in params_dict",
    # 58
    "Muse Glimmer: unexpected checkpoint weight {name}",
    # 59
    (
        "Found .v_scale in the checkpoint (e.g. {prefix}.qkattn.v_scale), but not found the "
        "expected name in the model (e.g. {prefix}.qkattn.attn.v_scale). .v_scale is not "
        "loaded."
    ),
    # 60
    "Parameter {prefix}.qkqkv_proj.k_bias not found in params_dict",
    # 61
    (
        "Found .k_scale in the checkpoint (e.g. {prefix}.attn.k_scale), but not found the "
        "expected name in the model (e.g. {prefix}.attn.attn.k_scale). .k_scale is not loaded."
    ),
    # 62
    (
        "Found .v_scale in the checkpoint (e.g. {prefix}.attn.v_scale), but not found the "
        "expected name in the model (e.g. {prefix}.attn.attn.v_scale). .v_scale is not loaded."
    ),
    # 63
    (
        "Found kv scale in the checkpoint (e.g. {name}), but not found the expected name in "
        "the model (e.g. {prefix}.attn.kv_scale). kv-scale is not loaded."
    ),
    # 64
    "KeyError: '{prefix}.qkqkv_proj.output_scale'",
    # 65
    "KeyError: '{prefix}.qkqkv_proj.k_bias'",
    # 66
    "Warning: weight {name} not found in model.",
    # 67
    "Parameter {prefix}.qkqkv_proj.k_scale not found in params_dict",
    # 68
    "Parameter {prefix}.qkqkv_proj.output_scale not found in params_dict",
    # 69
    "Parameter {prefix}.qkqkv_proj.v_scale not found in params_dict",
    # 70
    "Loaded weight with name='{name}' not found in params_dict",
    # 71
    "Loaded weight with name='{prefix}.qkv_proj.output_scale' not found in params_dict",
    # 72
    "WARNING: checkpoint key {name} has no matching parameter; skipping",
)

LOADER_CLASSES: dict[str, LoaderClass] = {
    # 2 architectures: ArceeForCausalLM, Cosmos3EdgeForConditionalGeneration
    "ArceeForCausalLM": LoaderClass(
        family="remap-first",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 0),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, 0),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, 2),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("drop", None, 3),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, 0),
            "attn.prob_scale": ("drop", None, 0),
            "attn._k_scale": ("drop", None, 0),
            "attn._v_scale": ("drop", None, 0),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, 10),
            "v_proj.v_bias": ("drop", None, 11),
            "k_cache.scale": ("drop", None, 0),
            "v_cache.scale": ("drop", None, 0),
            "q.scale": ("drop", None, 0),
            "k_zero_point": ("drop", None, 0),
            "v_zero_point": ("drop", None, 0),
            "q_zero_point": ("drop", None, 0),
            "kvscale_unknown_scale": ("drop", None, 0),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("drop", None, 15),
            "v_proj.output_scale": ("drop", None, 16),
        },
    ),
    # 11 architectures: BaichuanForCausalLM, ChatGLMModel, GPTBigCodeForCausalLM,
    # InternLM2ForCausalLM, InternLM2ForRewardModel, JetNemotronForCausalLM,
    # JetVLMForConditionalGeneration, MuseSparkForConditionalGeneration,
    # NVILAForConditionalGeneration, NVILALiteForConditionalGeneration, Phi3SmallForCausalLM
    "BaichuanForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 17),
            "v_scale": ("raise", None, 17),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("raise", None, 17),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 17),
            "v_proj.v_scale": ("raise", None, 17),
            "q_proj.output_scale": ("raise", None, 17),
            "k_proj.output_scale": ("raise", None, 17),
            "v_proj.output_scale": ("raise", None, 17),
            "prob_output_scale": ("raise", None, 17),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("raise", None, 17),
            "attn_mqa.v_scale": ("raise", None, 17),
            "qkv_proj.k_scale": ("raise", None, 17),
            "qkv_proj.v_scale": ("raise", None, 17),
            "k_proj.k_bias": ("raise", None, 17),
            "v_proj.v_bias": ("raise", None, 17),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 17),
            "attn.v_scale": ("raise", None, 17),
        },
    ),
    # 2 architectures: DbrxForCausalLM, KimiLinearForCausalLM
    "DbrxForCausalLM": LoaderClass(
        family="remap-first",
        missing="raises",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("raise", None, 18),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("raise", None, 17),
            "v_proj.v_bias": ("raise", None, 17),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("raise", None, 20),
            "v_proj.output_scale": ("raise", None, 21),
        },
    ),
    # 4 architectures: DeepseekV2ForCausalLM, DeepseekV32ForCausalLM, DeepseekV3ForCausalLM,
    # GlmMoeDsaForCausalLM
    "DeepseekV3ForCausalLM": LoaderClass(
        family="attn-mqa",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("drop", None, 22),
            "v_scale": ("drop", None, 22),
            "q_scale": ("drop", None, 22),
            "kv_scale": ("drop", None, 22),
            "prob_scale": ("drop", None, 22),
            "k_proj.k_scale": ("load", "{prefix}.attn_mqa.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn_mqa.v_scale", None),
            "q_proj.output_scale": ("drop", None, 22),
            "k_proj.output_scale": ("drop", None, 22),
            "v_proj.output_scale": ("drop", None, 22),
            "prob_output_scale": ("drop", None, 22),
            "attn.k_scale": ("drop", None, 22),
            "attn.v_scale": ("drop", None, 22),
            "attn.q_scale": ("drop", None, 22),
            "attn.prob_scale": ("drop", None, 22),
            "attn._k_scale": ("drop", None, 22),
            "attn._v_scale": ("drop", None, 22),
            "attn_mqa.k_scale": ("load", "{prefix}.attn_mqa.k_scale", None),
            "attn_mqa.v_scale": ("load", "{prefix}.attn_mqa.v_scale", None),
            "qkv_proj.k_scale": ("drop", None, 22),
            "qkv_proj.v_scale": ("drop", None, 23),
            "k_proj.k_bias": ("drop", None, 22),
            "v_proj.v_bias": ("drop", None, 22),
            "k_cache.scale": ("drop", None, 22),
            "v_cache.scale": ("drop", None, 22),
            "q.scale": ("drop", None, 22),
            "k_zero_point": ("drop", None, 22),
            "v_zero_point": ("drop", None, 22),
            "q_zero_point": ("drop", None, 22),
            "kvscale_unknown_scale": ("drop", None, 22),
        },
        nokv_differs={
            "k_proj.k_scale": ("drop", None, 24),
            "v_proj.v_scale": ("drop", None, 25),
            "attn_mqa.k_scale": ("drop", None, 22),
            "attn_mqa.v_scale": ("drop", None, 22),
        },
    ),
    # 1 architectures: DeepseekV4ForCausalLM
    "DeepseekV4ForCausalLM": LoaderClass(
        family="attn-mqa",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("drop", None, 22),
            "v_scale": ("drop", None, 22),
            "q_scale": ("drop", None, 22),
            "kv_scale": ("drop", None, 22),
            "prob_scale": ("drop", None, 22),
            "k_proj.k_scale": ("load", "{prefix}.attn_mqa.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn_mqa.v_scale", None),
            "q_proj.output_scale": ("drop", None, 22),
            "k_proj.output_scale": ("drop", None, 22),
            "v_proj.output_scale": ("drop", None, 22),
            "prob_output_scale": ("drop", None, 22),
            "attn.k_scale": ("drop", None, 26),
            "attn.v_scale": ("drop", None, 27),
            "attn.q_scale": ("drop", None, 28),
            "attn.prob_scale": ("drop", None, 29),
            "attn._k_scale": ("drop", None, 30),
            "attn._v_scale": ("drop", None, 31),
            "attn_mqa.k_scale": ("load", "{prefix}.attn_mqa.k_scale", None),
            "attn_mqa.v_scale": ("load", "{prefix}.attn_mqa.v_scale", None),
            "qkv_proj.k_scale": ("drop", None, 22),
            "qkv_proj.v_scale": ("drop", None, 23),
            "k_proj.k_bias": ("drop", None, 22),
            "v_proj.v_bias": ("drop", None, 22),
            "k_cache.scale": ("drop", None, 32),
            "v_cache.scale": ("drop", None, 33),
            "q.scale": ("drop", None, 34),
            "k_zero_point": ("drop", None, 22),
            "v_zero_point": ("drop", None, 22),
            "q_zero_point": ("drop", None, 22),
            "kvscale_unknown_scale": ("drop", None, 22),
        },
        nokv_differs={
            "k_proj.k_scale": ("drop", None, 24),
            "v_proj.v_scale": ("drop", None, 25),
            "attn_mqa.k_scale": ("drop", None, 22),
            "attn_mqa.v_scale": ("drop", None, 22),
        },
    ),
    # 3 architectures: Ernie4_5_ForCausalLM, Ernie4_5_MoeForCausalLM,
    # PaddleOCRVLForConditionalGeneration
    "Ernie4_5_ForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 35),
            "v_scale": ("raise", None, 35),
            "q_scale": ("raise", None, 35),
            "kv_scale": ("raise", None, 35),
            "prob_scale": ("raise", None, 35),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 35),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 35),
            "attn.prob_scale": ("raise", None, 35),
            "attn._k_scale": ("raise", None, 35),
            "attn._v_scale": ("raise", None, 35),
            "attn_mqa.k_scale": ("raise", None, 35),
            "attn_mqa.v_scale": ("raise", None, 35),
            "qkv_proj.k_scale": ("raise", None, 35),
            "qkv_proj.v_scale": ("raise", None, 35),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 35),
            "v_cache.scale": ("raise", None, 35),
            "q.scale": ("raise", None, 35),
            "k_zero_point": ("raise", None, 35),
            "v_zero_point": ("raise", None, 35),
            "q_zero_point": ("raise", None, 35),
            "kvscale_unknown_scale": ("raise", None, 35),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 35),
            "attn.v_scale": ("raise", None, 35),
        },
    ),
    # 3 architectures: FalconMambaForCausalLM, Mamba2ForCausalLM, MambaForCausalLM
    "FalconMambaForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 41),
            "v_scale": ("drop", None, 41),
            "q_scale": ("drop", None, 41),
            "kv_scale": ("drop", None, 41),
            "prob_scale": ("drop", None, 41),
            "k_proj.k_scale": ("drop", None, 41),
            "v_proj.v_scale": ("drop", None, 41),
            "q_proj.output_scale": ("drop", None, 41),
            "k_proj.output_scale": ("drop", None, 41),
            "v_proj.output_scale": ("drop", None, 41),
            "prob_output_scale": ("drop", None, 41),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 41),
            "attn.prob_scale": ("drop", None, 41),
            "attn._k_scale": ("drop", None, 41),
            "attn._v_scale": ("drop", None, 41),
            "attn_mqa.k_scale": ("drop", None, 41),
            "attn_mqa.v_scale": ("drop", None, 41),
            "qkv_proj.k_scale": ("drop", None, 41),
            "qkv_proj.v_scale": ("drop", None, 41),
            "k_proj.k_bias": ("drop", None, 41),
            "v_proj.v_bias": ("drop", None, 41),
            "k_cache.scale": ("drop", None, 41),
            "v_cache.scale": ("drop", None, 41),
            "q.scale": ("drop", None, 41),
            "k_zero_point": ("drop", None, 41),
            "v_zero_point": ("drop", None, 41),
            "q_zero_point": ("drop", None, 41),
            "kvscale_unknown_scale": ("drop", None, 41),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 41),
            "attn.v_scale": ("drop", None, 41),
        },
    ),
    # 6 architectures: Cohere2ForCausalLM, CohereForCausalLM, GPTJForCausalLM, Gemma2ForCausalLM,
    # Gemma2ForSequenceClassification, PhiMoEForCausalLM
    "Gemma2ForCausalLM": LoaderClass(
        family="remap-after-stacked",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("raise", None, 42),
            "qkv_proj.v_scale": ("raise", None, 43),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 1 architectures: Gemma3ForCausalLM
    "Gemma3ForCausalLM": LoaderClass(
        family="remap-first",
        missing="raises",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("raise", None, 18),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("raise", None, 20),
            "v_proj.output_scale": ("raise", None, 21),
        },
    ),
    # 1 architectures: Gemma3ForConditionalGeneration
    "Gemma3ForConditionalGeneration": LoaderClass(
        family="remap-after-stacked",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 1 architectures: Gemma3nForCausalLM
    "Gemma3nForCausalLM": LoaderClass(
        family="remap-after-stacked",
        missing="silent",
        k_proj="drop",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("drop", None, 44),
            "v_proj.v_scale": ("drop", None, 45),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 5 architectures: DiffusionGemmaForBlockDiffusion, Gemma4AssistantForCausalLM,
    # Gemma4ForCausalLM, Gemma4UnifiedAssistantForCausalLM, KimiK3LinearForCausalLM
    "Gemma4ForCausalLM": LoaderClass(
        family="remap-first",
        missing="silent",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
        },
    ),
    # 19 architectures: CLIPModel, DeepseekForCausalLM, ExaoneForCausalLM, GemmaForCausalLM,
    # GlmAsrForConditionalGeneration, InternS1ForConditionalGeneration, MiMoForCausalLM,
    # MiMoV2ASRForCausalLM, MiniCPMForCausalLM, MiniCPMO, MiniCPMSALAForCausalLM, Olmo2ForCausalLM,
    # OlmoForCausalLM, POINTSV15ChatModel, Qwen2AudioForConditionalGeneration,
    # Qwen2VLForConditionalGeneration, StableLmForCausalLM, XverseForCausalLM, XverseMoeForCausalLM
    "GemmaForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 17),
            "v_scale": ("raise", None, 17),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("raise", None, 17),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 17),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("raise", None, 17),
            "attn_mqa.v_scale": ("raise", None, 17),
            "qkv_proj.k_scale": ("raise", None, 42),
            "qkv_proj.v_scale": ("raise", None, 43),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 17),
            "attn.v_scale": ("raise", None, 17),
        },
    ),
    # 3 architectures: GigaChat35ForCausalLM, HYV4ForCausalLM, LongcatFlashForCausalLM
    "GigaChat35ForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 22),
            "v_scale": ("drop", None, 22),
            "q_scale": ("drop", None, 22),
            "kv_scale": ("drop", None, 22),
            "prob_scale": ("drop", None, 22),
            "k_proj.k_scale": ("drop", None, 24),
            "v_proj.v_scale": ("drop", None, 25),
            "q_proj.output_scale": ("drop", None, 22),
            "k_proj.output_scale": ("drop", None, 22),
            "v_proj.output_scale": ("drop", None, 22),
            "prob_output_scale": ("drop", None, 22),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 22),
            "attn.prob_scale": ("drop", None, 22),
            "attn._k_scale": ("drop", None, 22),
            "attn._v_scale": ("drop", None, 22),
            "attn_mqa.k_scale": ("drop", None, 22),
            "attn_mqa.v_scale": ("drop", None, 22),
            "qkv_proj.k_scale": ("drop", None, 22),
            "qkv_proj.v_scale": ("drop", None, 23),
            "k_proj.k_bias": ("drop", None, 22),
            "v_proj.v_bias": ("drop", None, 22),
            "k_cache.scale": ("drop", None, 22),
            "v_cache.scale": ("drop", None, 22),
            "q.scale": ("drop", None, 22),
            "k_zero_point": ("drop", None, 22),
            "v_zero_point": ("drop", None, 22),
            "q_zero_point": ("drop", None, 22),
            "kvscale_unknown_scale": ("drop", None, 22),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 22),
            "attn.v_scale": ("drop", None, 22),
        },
    ),
    # 3 architectures: Glm4ForCausalLM, NanbeigeForCausalLM, NanbeigeForSequenceClassification
    "Glm4ForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 46),
            "v_scale": ("drop", None, 46),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, 46),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("drop", None, 47),
            "v_proj.v_scale": ("drop", None, 48),
            "q_proj.output_scale": ("drop", None, 49),
            "k_proj.output_scale": ("drop", None, 49),
            "v_proj.output_scale": ("drop", None, 49),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 46),
            "attn_mqa.v_scale": ("drop", None, 46),
            "qkv_proj.k_scale": ("drop", None, 46),
            "qkv_proj.v_scale": ("drop", None, 46),
            "k_proj.k_bias": ("drop", None, 50),
            "v_proj.v_bias": ("drop", None, 51),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 46),
            "attn.v_scale": ("drop", None, 46),
        },
    ),
    # 2 architectures: GraniteForCausalLM, GraniteSWAForCausalLM
    "GraniteForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 17),
            "v_scale": ("raise", None, 17),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 17),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("raise", None, 17),
            "attn_mqa.v_scale": ("raise", None, 17),
            "qkv_proj.k_scale": ("raise", None, 17),
            "qkv_proj.v_scale": ("raise", None, 17),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 17),
            "attn.v_scale": ("raise", None, 17),
        },
    ),
    # 4 architectures: GraniteMoeHybridForCausalLM, MllamaForConditionalGeneration,
    # MultiModalityCausalLM, Step3VLForConditionalGeneration
    "GraniteMoeHybridForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 17),
            "v_scale": ("raise", None, 17),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("raise", None, 17),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 17),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("raise", None, 17),
            "attn_mqa.v_scale": ("raise", None, 17),
            "qkv_proj.k_scale": ("raise", None, 17),
            "qkv_proj.v_scale": ("raise", None, 17),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 17),
            "attn.v_scale": ("raise", None, 17),
        },
    ),
    # 1 architectures: HrmTextForCausalLM
    "HrmTextForCausalLM": LoaderClass(
        family="no-remap",
        missing="silent",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("drop", None, None),
            "v_proj.v_scale": ("drop", None, None),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={},
    ),
    # 2 architectures: HunYuanDenseV1ForCausalLM, HunYuanMoEV1ForCausalLM
    "HunYuanDenseV1ForCausalLM": LoaderClass(
        family="remap-after-stacked",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("raise", None, 52),
            "qkv_proj.v_scale": ("raise", None, 52),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 1 architectures: IQuestQ1ForCausalLM
    "IQuestQ1ForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 53),
            "v_scale": ("raise", None, 53),
            "q_scale": ("raise", None, 53),
            "kv_scale": ("raise", None, 53),
            "prob_scale": ("raise", None, 53),
            "k_proj.k_scale": ("raise", None, 53),
            "v_proj.v_scale": ("raise", None, 53),
            "q_proj.output_scale": ("raise", None, 53),
            "k_proj.output_scale": ("raise", None, 53),
            "v_proj.output_scale": ("raise", None, 53),
            "prob_output_scale": ("raise", None, 53),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 53),
            "attn.prob_scale": ("raise", None, 53),
            "attn._k_scale": ("raise", None, 53),
            "attn._v_scale": ("raise", None, 53),
            "attn_mqa.k_scale": ("raise", None, 53),
            "attn_mqa.v_scale": ("raise", None, 53),
            "qkv_proj.k_scale": ("raise", None, 53),
            "qkv_proj.v_scale": ("raise", None, 53),
            "k_proj.k_bias": ("raise", None, 53),
            "v_proj.v_bias": ("raise", None, 53),
            "k_cache.scale": ("raise", None, 53),
            "v_cache.scale": ("raise", None, 53),
            "q.scale": ("raise", None, 53),
            "k_zero_point": ("raise", None, 53),
            "v_zero_point": ("raise", None, 53),
            "q_zero_point": ("raise", None, 53),
            "kvscale_unknown_scale": ("raise", None, 53),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 53),
            "attn.v_scale": ("raise", None, 53),
        },
    ),
    # 2 architectures: InternS1ProForConditionalGeneration, Qwen3VLMoeForConditionalGeneration
    "InternS1ProForConditionalGeneration": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, 46),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("drop", None, None),
            "v_proj.v_scale": ("drop", None, None),
            "q_proj.output_scale": ("drop", None, 49),
            "k_proj.output_scale": ("drop", None, 49),
            "v_proj.output_scale": ("drop", None, 49),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
        },
    ),
    # 1 architectures: KimiVLForConditionalGeneration
    "KimiVLForConditionalGeneration": LoaderClass(
        family="remap-after-stacked",
        missing="raises",
        k_proj="drop",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("drop", None, 44),
            "v_proj.v_scale": ("drop", None, 45),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 19),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 3 architectures: LagunaForCausalLM, LocateAnythingForConditionalGeneration,
    # Spark2_5ForCausalLM
    "LagunaForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 46),
            "v_scale": ("drop", None, 46),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, 46),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("drop", None, 46),
            "v_proj.v_scale": ("drop", None, 46),
            "q_proj.output_scale": ("drop", None, 46),
            "k_proj.output_scale": ("drop", None, 46),
            "v_proj.output_scale": ("drop", None, 46),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 46),
            "attn_mqa.v_scale": ("drop", None, 46),
            "qkv_proj.k_scale": ("drop", None, 46),
            "qkv_proj.v_scale": ("drop", None, 46),
            "k_proj.k_bias": ("drop", None, 46),
            "v_proj.v_bias": ("drop", None, 46),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 46),
            "attn.v_scale": ("drop", None, 46),
        },
    ),
    # 15 architectures: ApertusForCausalLM, DeciLMForCausalLM, Exaone4ForCausalLM,
    # IQuestCoderForCausalLM, InternLM3ForCausalLM, Llama4ForCausalLM, LlamaForCausalLM,
    # LlamaForClassification, LlamaForSequenceClassification,
    # LlamaForSequenceClassificationWithNormal_Weights, Ministral3ForCausalLM, MistralForCausalLM,
    # MistralForCausalLMEagle, Phi3ForCausalLM, TeleFLMForCausalLM
    "LlamaForCausalLM": LoaderClass(
        family="remap-first",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, 54),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("drop", None, 55),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, 50),
            "v_proj.v_bias": ("drop", None, 51),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("drop", None, 56),
            "v_proj.output_scale": ("drop", None, 57),
        },
    ),
    # 2 architectures: MiMoV2FlashForCausalLM, MiMoV2ForCausalLM
    "MiMoV2FlashForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="raise",
        kv={
            "k_scale": ("drop", None, 46),
            "v_scale": ("drop", None, 46),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, 46),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 46),
            "attn_mqa.v_scale": ("drop", None, 46),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 46),
            "attn.v_scale": ("drop", None, 46),
        },
    ),
    # 1 architectures: MiniMaxM2ForCausalLM
    "MiniMaxM2ForCausalLM": LoaderClass(
        family="remap-first",
        missing="silent",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
        },
    ),
    # 1 architectures: MiniMaxM3SparseForCausalLM
    "MiniMaxM3SparseForCausalLM": LoaderClass(
        family="remap-after-stacked",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("drop", None, 44),
            "v_proj.v_scale": ("drop", None, 45),
            "q_proj.output_scale": ("drop", None, 49),
            "k_proj.output_scale": ("drop", None, 49),
            "v_proj.output_scale": ("drop", None, 49),
            "prob_output_scale": ("drop", None, 55),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, 50),
            "v_proj.v_bias": ("drop", None, 51),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
        },
    ),
    # 4 architectures: GraniteMoeForCausalLM, GraniteMoeSWAForCausalLM,
    # GraniteMoeSharedForCausalLM, MixtralForCausalLM
    "MixtralForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="raise",
        kv={
            "k_scale": ("drop", None, 46),
            "v_scale": ("drop", None, 46),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 46),
            "attn_mqa.v_scale": ("drop", None, 46),
            "qkv_proj.k_scale": ("raise", None, 42),
            "qkv_proj.v_scale": ("raise", None, 43),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 46),
            "attn.v_scale": ("drop", None, 46),
        },
    ),
    # 2 architectures: MuseGlimmerForCausalLM, MuseGlimmerForConditionalGeneration
    "MuseGlimmerForCausalLM": LoaderClass(
        family="remap-first",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 58),
            "kv_scale": ("drop", None, 58),
            "prob_scale": ("drop", None, 58),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, 58),
            "k_proj.output_scale": ("drop", None, 58),
            "v_proj.output_scale": ("drop", None, 58),
            "prob_output_scale": ("drop", None, 58),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, 58),
            "attn.prob_scale": ("drop", None, 58),
            "attn._k_scale": ("drop", None, 58),
            "attn._v_scale": ("drop", None, 58),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("drop", None, 58),
            "v_proj.v_bias": ("drop", None, 58),
            "k_cache.scale": ("drop", None, 58),
            "v_cache.scale": ("drop", None, 58),
            "q.scale": ("drop", None, 58),
            "k_zero_point": ("drop", None, 58),
            "v_zero_point": ("drop", None, 58),
            "q_zero_point": ("drop", None, 58),
            "kvscale_unknown_scale": ("drop", None, 58),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
        },
    ),
    # 2 architectures: NemotronHForCausalLM, NemotronHPuzzleForCausalLM
    "NemotronHForCausalLM": LoaderClass(
        family="remap-first",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, 54),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("drop", None, 55),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 59),
            "k_proj.k_bias": ("drop", None, 60),
            "v_proj.v_bias": ("drop", None, 51),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 61),
            "v_proj.v_scale": ("drop", None, 62),
            "k_proj.output_scale": ("drop", None, 56),
            "v_proj.output_scale": ("drop", None, 57),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
        },
    ),
    # 1 architectures: OlmoeForCausalLM
    "OlmoeForCausalLM": LoaderClass(
        family="no-remap",
        missing="raises",
        k_proj="raise",
        kv={
            "k_scale": ("raise", None, 17),
            "v_scale": ("raise", None, 17),
            "q_scale": ("raise", None, 17),
            "kv_scale": ("drop", None, 63),
            "prob_scale": ("raise", None, 17),
            "k_proj.k_scale": ("raise", None, 42),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 64),
            "k_proj.output_scale": ("raise", None, 64),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("raise", None, 17),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("raise", None, 17),
            "attn.prob_scale": ("raise", None, 17),
            "attn._k_scale": ("raise", None, 17),
            "attn._v_scale": ("raise", None, 17),
            "attn_mqa.k_scale": ("raise", None, 17),
            "attn_mqa.v_scale": ("raise", None, 17),
            "qkv_proj.k_scale": ("raise", None, 42),
            "qkv_proj.v_scale": ("raise", None, 43),
            "k_proj.k_bias": ("raise", None, 65),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("raise", None, 17),
            "v_cache.scale": ("raise", None, 17),
            "q.scale": ("raise", None, 17),
            "k_zero_point": ("raise", None, 17),
            "v_zero_point": ("raise", None, 17),
            "q_zero_point": ("raise", None, 17),
            "kvscale_unknown_scale": ("raise", None, 17),
        },
        nokv_differs={
            "attn.k_scale": ("raise", None, 17),
            "attn.v_scale": ("raise", None, 17),
        },
    ),
    # 1 architectures: PersimmonForCausalLM
    "PersimmonForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 66),
            "v_scale": ("drop", None, 66),
            "q_scale": ("drop", None, 66),
            "kv_scale": ("drop", None, 66),
            "prob_scale": ("drop", None, 66),
            "k_proj.k_scale": ("drop", None, 66),
            "v_proj.v_scale": ("drop", None, 66),
            "q_proj.output_scale": ("drop", None, 66),
            "k_proj.output_scale": ("drop", None, 66),
            "v_proj.output_scale": ("drop", None, 66),
            "prob_output_scale": ("drop", None, 66),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 66),
            "attn.prob_scale": ("drop", None, 66),
            "attn._k_scale": ("drop", None, 66),
            "attn._v_scale": ("drop", None, 66),
            "attn_mqa.k_scale": ("drop", None, 66),
            "attn_mqa.v_scale": ("drop", None, 66),
            "qkv_proj.k_scale": ("drop", None, 66),
            "qkv_proj.v_scale": ("drop", None, 66),
            "k_proj.k_bias": ("drop", None, 66),
            "v_proj.v_bias": ("drop", None, 66),
            "k_cache.scale": ("drop", None, 66),
            "v_cache.scale": ("drop", None, 66),
            "q.scale": ("drop", None, 66),
            "k_zero_point": ("drop", None, 66),
            "v_zero_point": ("drop", None, 66),
            "q_zero_point": ("drop", None, 66),
            "kvscale_unknown_scale": ("drop", None, 66),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 66),
            "attn.v_scale": ("drop", None, 66),
        },
    ),
    # 5 architectures: Qwen2ForCausalLM, Qwen2ForRewardModel, Qwen2ForSequenceClassification,
    # Qwen3ForRewardModel, Qwen3ForSequenceClassification
    "Qwen2ForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 46),
            "v_scale": ("drop", None, 46),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("drop", None, 46),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("drop", None, 67),
            "v_proj.v_scale": ("drop", None, 48),
            "q_proj.output_scale": ("drop", None, 68),
            "k_proj.output_scale": ("drop", None, 68),
            "v_proj.output_scale": ("drop", None, 49),
            "prob_output_scale": ("drop", None, 46),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 46),
            "attn_mqa.v_scale": ("drop", None, 46),
            "qkv_proj.k_scale": ("drop", None, 67),
            "qkv_proj.v_scale": ("drop", None, 69),
            "k_proj.k_bias": ("drop", None, 60),
            "v_proj.v_bias": ("drop", None, 51),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 46),
            "attn.v_scale": ("drop", None, 46),
        },
    ),
    # 55 architectures: AfmoeForCausalLM, BailingMoEForCausalLM, BailingMoeForCausalLM,
    # BailingMoeV2ForCausalLM, Cohere2MoeForCausalLM, Cosmos3ForConditionalGeneration,
    # DFlash2BeamDraftModel, DFlash2DraftModel, DFlashDraftModel, DFlashLagunaForCausalLM,
    # DSparkDraftModel, EmbeddingGemma2Model, ExaoneMoEForCausalLM, ExaoneMoeForCausalLM,
    # Glm4MoeForCausalLM, Glm4MoeLiteForCausalLM, Glm4vForConditionalGeneration,
    # Glm4vMoeForConditionalGeneration, Glm5NextForConditionalGeneration,
    # GlmImageForConditionalGeneration, GlmOcrForConditionalGeneration, GptOssForCausalLM,
    # Grok1ForCausalLM, Grok1ModelForCausalLM, HYV3ForCausalLM, IQuestLoopCoderForCausalLM,
    # K2HorizonForCausalLM, LLaDA2MoeModelLM, Lfm2BidirectionalModel, Lfm2DSparkDraftModel,
    # Lfm2ForCausalLM, Lfm2MoeForCausalLM, LiLiCorrDraftModel, LingDSparkModel,
    # LlamaForCausalLMEagle3, MellumForCausalLM, MiDashengLMModel, MiniMaxDFlash2DraftModel,
    # MiniMaxM3SparseForConditionalGeneration, MossVLForConditionalGeneration,
    # MuseGlimmerAssistantModel, OrionForCausalLM, PhiForCausalLM, PixtralVisionModel,
    # QWenLMHeadModel, QuantMixtralForCausalLM, Qwen2MoeForCausalLM,
    # Qwen3ASRForConditionalGeneration, Qwen3DSparkModel, Qwen3MoeForCausalLM,
    # Qwen3VLForConditionalGeneration, Sarashina2VisionForCausalLM, SarvamMoEForCausalLM,
    # SolarForCausalLM, XllmForCausalLM
    "Qwen2MoeForCausalLM": LoaderClass(
        family="no-remap",
        missing="silent",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("drop", None, None),
            "v_proj.v_scale": ("drop", None, None),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
        },
    ),
    # 1 architectures: Qwen2_5_VLForConditionalGeneration
    "Qwen2_5_VLForConditionalGeneration": LoaderClass(
        family="no-remap",
        missing="silent",
        k_proj="raise",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
        },
    ),
    # 3 architectures: Qwen3ForCausalLM, Qwen3Model, SDARForCausalLM
    "Qwen3ForCausalLM": LoaderClass(
        family="remap-first",
        missing="warns",
        k_proj="load",
        kv={
            "k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_scale": ("drop", None, 46),
            "kv_scale": ("load", "{prefix}.attn.k_scale", 1),
            "prob_scale": ("drop", None, 46),
            "k_proj.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "q_proj.output_scale": ("drop", None, 54),
            "k_proj.output_scale": ("load", "{prefix}.attn.k_scale", None),
            "v_proj.output_scale": ("load", "{prefix}.attn.v_scale", None),
            "prob_output_scale": ("drop", None, 55),
            "attn.k_scale": ("drop", None, 4),
            "attn.v_scale": ("drop", None, 5),
            "attn.q_scale": ("drop", None, 46),
            "attn.prob_scale": ("drop", None, 46),
            "attn._k_scale": ("drop", None, 46),
            "attn._v_scale": ("drop", None, 46),
            "attn_mqa.k_scale": ("drop", None, 6),
            "attn_mqa.v_scale": ("drop", None, 7),
            "qkv_proj.k_scale": ("drop", None, 8),
            "qkv_proj.v_scale": ("drop", None, 9),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("drop", None, 46),
            "v_cache.scale": ("drop", None, 46),
            "q.scale": ("drop", None, 46),
            "k_zero_point": ("drop", None, 46),
            "v_zero_point": ("drop", None, 46),
            "q_zero_point": ("drop", None, 46),
            "kvscale_unknown_scale": ("drop", None, 46),
        },
        nokv_differs={
            "k_scale": ("drop", None, 12),
            "v_scale": ("drop", None, 13),
            "kv_scale": ("drop", None, 14),
            "k_proj.k_scale": ("drop", None, 12),
            "v_proj.v_scale": ("drop", None, 13),
            "k_proj.output_scale": ("drop", None, 56),
            "v_proj.output_scale": ("drop", None, 57),
        },
    ),
    # 1 architectures: Qwen3OmniMoeForConditionalGeneration
    "Qwen3OmniMoeForConditionalGeneration": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, 70),
            "kv_scale": ("drop", None, 70),
            "prob_scale": ("drop", None, 70),
            "k_proj.k_scale": ("drop", None, None),
            "v_proj.v_scale": ("drop", None, None),
            "q_proj.output_scale": ("drop", None, 71),
            "k_proj.output_scale": ("drop", None, 71),
            "v_proj.output_scale": ("drop", None, 71),
            "prob_output_scale": ("drop", None, 70),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 70),
            "attn.prob_scale": ("drop", None, 70),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, 70),
            "v_cache.scale": ("drop", None, 70),
            "q.scale": ("drop", None, 70),
            "k_zero_point": ("drop", None, 70),
            "v_zero_point": ("drop", None, 70),
            "q_zero_point": ("drop", None, 70),
            "kvscale_unknown_scale": ("drop", None, 70),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
        },
    ),
    # 1 architectures: SarvamMLAForCausalLM
    "SarvamMLAForCausalLM": LoaderClass(
        family="no-remap",
        missing="silent",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("drop", None, None),
            "v_proj.v_scale": ("drop", None, None),
            "q_proj.output_scale": ("drop", None, None),
            "k_proj.output_scale": ("drop", None, None),
            "v_proj.output_scale": ("drop", None, None),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("load", "{prefix}.attn_mqa.k_scale", None),
            "attn_mqa.v_scale": ("load", "{prefix}.attn_mqa.v_scale", None),
            "qkv_proj.k_scale": ("drop", None, None),
            "qkv_proj.v_scale": ("drop", None, None),
            "k_proj.k_bias": ("drop", None, None),
            "v_proj.v_bias": ("drop", None, None),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
        },
    ),
    # 2 architectures: OPTForCausalLM, Starcoder2ForCausalLM
    "Starcoder2ForCausalLM": LoaderClass(
        family="no-remap",
        missing="silent",
        k_proj="raise",
        kv={
            "k_scale": ("drop", None, None),
            "v_scale": ("drop", None, None),
            "q_scale": ("drop", None, None),
            "kv_scale": ("drop", None, None),
            "prob_scale": ("drop", None, None),
            "k_proj.k_scale": ("raise", None, 36),
            "v_proj.v_scale": ("raise", None, 37),
            "q_proj.output_scale": ("raise", None, 38),
            "k_proj.output_scale": ("raise", None, 38),
            "v_proj.output_scale": ("raise", None, 38),
            "prob_output_scale": ("drop", None, None),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, None),
            "attn.prob_scale": ("drop", None, None),
            "attn._k_scale": ("drop", None, None),
            "attn._v_scale": ("drop", None, None),
            "attn_mqa.k_scale": ("drop", None, None),
            "attn_mqa.v_scale": ("drop", None, None),
            "qkv_proj.k_scale": ("raise", None, 42),
            "qkv_proj.v_scale": ("raise", None, 43),
            "k_proj.k_bias": ("raise", None, 39),
            "v_proj.v_bias": ("raise", None, 40),
            "k_cache.scale": ("drop", None, None),
            "v_cache.scale": ("drop", None, None),
            "q.scale": ("drop", None, None),
            "k_zero_point": ("drop", None, None),
            "v_zero_point": ("drop", None, None),
            "q_zero_point": ("drop", None, None),
            "kvscale_unknown_scale": ("drop", None, None),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, None),
            "attn.v_scale": ("drop", None, None),
        },
    ),
    # 1 architectures: ZayaForCausalLM
    "ZayaForCausalLM": LoaderClass(
        family="no-remap",
        missing="warns",
        k_proj="drop",
        kv={
            "k_scale": ("drop", None, 72),
            "v_scale": ("drop", None, 72),
            "q_scale": ("drop", None, 72),
            "kv_scale": ("drop", None, 72),
            "prob_scale": ("drop", None, 72),
            "k_proj.k_scale": ("drop", None, 72),
            "v_proj.v_scale": ("drop", None, 72),
            "q_proj.output_scale": ("drop", None, 72),
            "k_proj.output_scale": ("drop", None, 72),
            "v_proj.output_scale": ("drop", None, 72),
            "prob_output_scale": ("drop", None, 72),
            "attn.k_scale": ("load", "{prefix}.attn.k_scale", None),
            "attn.v_scale": ("load", "{prefix}.attn.v_scale", None),
            "attn.q_scale": ("drop", None, 72),
            "attn.prob_scale": ("drop", None, 72),
            "attn._k_scale": ("drop", None, 72),
            "attn._v_scale": ("drop", None, 72),
            "attn_mqa.k_scale": ("drop", None, 72),
            "attn_mqa.v_scale": ("drop", None, 72),
            "qkv_proj.k_scale": ("drop", None, 72),
            "qkv_proj.v_scale": ("drop", None, 72),
            "k_proj.k_bias": ("drop", None, 72),
            "v_proj.v_bias": ("drop", None, 72),
            "k_cache.scale": ("drop", None, 72),
            "v_cache.scale": ("drop", None, 72),
            "q.scale": ("drop", None, 72),
            "k_zero_point": ("drop", None, 72),
            "v_zero_point": ("drop", None, 72),
            "q_zero_point": ("drop", None, 72),
            "kvscale_unknown_scale": ("drop", None, 72),
        },
        nokv_differs={
            "attn.k_scale": ("drop", None, 72),
            "attn.v_scale": ("drop", None, 72),
        },
    ),
}

ARCHITECTURES: dict[str, Arch] = {
    # afmoe.py:594 load_weights; load srt/models/afmoe.py:642
    "AfmoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "afmoe.py:594"),
    # apertus.py:576 load_weights; remap srt/models/apertus.py:613; load srt/models/apertus.py:642;
    # log srt/models/apertus.py:613, srt/models/apertus.py:644
    "ApertusForCausalLM": Arch("LlamaForCausalLM", ("attn",), "apertus.py:576"),
    # arcee.py:488 load_weights; remap srt/models/arcee.py:509; load srt/models/arcee.py:534; log
    # srt/models/arcee.py:509, srt/models/arcee.py:536
    "ArceeForCausalLM": Arch("ArceeForCausalLM", ("attn",), "arcee.py:488"),
    # baichuan.py:393 load_weights; load srt/models/baichuan.py:431; raise
    # srt/models/baichuan.py:429
    "BaichuanForCausalLM": Arch("BaichuanForCausalLM", ("attn",), "baichuan.py:393"),
    # bailing_moe.py:945 load_weights; load srt/models/bailing_moe.py:1079
    "BailingMoEForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "bailing_moe.py:945"),
    # bailing_moe.py:945 load_weights; load srt/models/bailing_moe.py:1079
    "BailingMoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "bailing_moe.py:945"),
    # bailing_moe.py:945 load_weights; load srt/models/bailing_moe.py:1079
    "BailingMoeV2ForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "bailing_moe.py:945"),
    # clip.py:596 load_weights; load srt/models/clip.py:620; raise srt/models/clip.py:613,
    # srt/models/clip.py:618
    "CLIPModel": Arch("GemmaForCausalLM", ("attn",), "clip.py:596"),
    # chatglm.py:408 load_weights; load srt/models/chatglm.py:420; raise srt/models/chatglm.py:418
    "ChatGLMModel": Arch("BaichuanForCausalLM", ("attn",), "chatglm.py:408"),
    # commandr.py:387 load_weights; remap srt/models/commandr.py:419; load
    # srt/models/commandr.py:425; log srt/models/commandr.py:419; raise srt/models/commandr.py:406,
    # srt/models/commandr.py:423
    "Cohere2ForCausalLM": Arch("Gemma2ForCausalLM", ("attn",), "commandr.py:387"),
    # cohere2_moe.py:553 load_weights; load srt/models/cohere2_moe.py:638
    "Cohere2MoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "cohere2_moe.py:553"),
    # commandr.py:387 load_weights; remap srt/models/commandr.py:419; load
    # srt/models/commandr.py:425; log srt/models/commandr.py:419; raise srt/models/commandr.py:406,
    # srt/models/commandr.py:423
    "CohereForCausalLM": Arch("Gemma2ForCausalLM", ("attn",), "commandr.py:387"),
    # cosmos3_edge.py:492 load_weights; remap srt/models/arcee.py:509; load
    # srt/models/arcee.py:534; log srt/models/arcee.py:509, srt/models/arcee.py:536
    # (answered by the harness's stub: self.language_model_only, self.visual)
    "Cosmos3EdgeForConditionalGeneration": Arch(
        "ArceeForCausalLM", ("attn",), "cosmos3_edge.py:492"
    ),
    # cosmos3.py:112 load_weights; load srt/models/qwen3_vl.py:1772
    "Cosmos3ForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "cosmos3.py:112"),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "DFlash2BeamDraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "DFlash2DraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "DFlashDraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "DFlashLagunaForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # dspark.py:627 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.confidence_head, self.is_nemotron_35_draft,
    # self.projector_type)
    "DSparkDraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dspark.py:627"),
    # dbrx.py:440 load_weights; remap srt/models/dbrx.py:460; load srt/models/dbrx.py:466; log
    # srt/models/dbrx.py:460; raise srt/models/dbrx.py:464
    "DbrxForCausalLM": Arch("DbrxForCausalLM", ("attn",), "dbrx.py:440"),
    # nemotron_nas.py:394 load_weights; remap srt/models/nemotron_nas.py:427; load
    # srt/models/nemotron_nas.py:453; log srt/models/nemotron_nas.py:427,
    # srt/models/nemotron_nas.py:455
    "DeciLMForCausalLM": Arch("LlamaForCausalLM", ("attn",), "nemotron_nas.py:394"),
    # deepseek.py:476 load_weights; load srt/models/deepseek.py:517; raise
    # srt/models/deepseek.py:502, srt/models/deepseek.py:515
    "DeepseekForCausalLM": Arch("GemmaForCausalLM", ("attn",), "deepseek.py:476"),
    # deepseek_v2.py:3436 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "DeepseekV2ForCausalLM": Arch(
        "DeepseekV3ForCausalLM", ("attn_mqa", "attn_mha"), "deepseek_v2.py:3436"
    ),
    # deepseek_v2.py:3436 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "DeepseekV32ForCausalLM": Arch(
        "DeepseekV3ForCausalLM", ("attn_mqa", "attn_mha"), "deepseek_v2.py:3436"
    ),
    # deepseek_v2.py:3436 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "DeepseekV3ForCausalLM": Arch(
        "DeepseekV3ForCausalLM", ("attn_mqa", "attn_mha"), "deepseek_v2.py:3436"
    ),
    # deepseek_v4.py:5251 load_weights; load srt/models/deepseek_v4.py:5588; log
    # srt/models/deepseek_v4.py:5581
    # (answered by the harness's stub: self.wo_a_fp8)
    "DeepseekV4ForCausalLM": Arch("DeepseekV4ForCausalLM", ("attn_mqa",), "deepseek_v4.py:5251"),
    # gemma4_diffusion.py:604 load_weights; remap srt/models/gemma4_diffusion.py:730; load
    # srt/models/gemma4_diffusion.py:737; log srt/models/gemma4_diffusion.py:730
    # (answered by the harness's stub: self.text_config)
    "DiffusionGemmaForBlockDiffusion": Arch(
        "Gemma4ForCausalLM", ("attn", "attn_bidir"), "gemma4_diffusion.py:604"
    ),
    # embedding_gemma2.py:834 load_weights; load srt/models/embedding_gemma2.py:895
    # (answered by the harness's stub: self.language_model)
    "EmbeddingGemma2Model": Arch("Qwen2MoeForCausalLM", ("attn",), "embedding_gemma2.py:834"),
    # ernie4.py:343 load_weights; load srt/models/ernie4.py:362; raise srt/models/ernie4.py:352,
    # srt/models/ernie4.py:364
    "Ernie4_5_ForCausalLM": Arch("Ernie4_5_ForCausalLM", ("attn",), "ernie4.py:343"),
    # ernie4.py:371 load_weights; load srt/models/ernie4.py:429; raise srt/models/ernie4.py:398,
    # srt/models/ernie4.py:431
    # (answered by the harness's stub: config.moe_num_experts)
    "Ernie4_5_MoeForCausalLM": Arch("Ernie4_5_ForCausalLM", ("attn",), "ernie4.py:371"),
    # exaone4.py:551 load_weights; remap srt/models/exaone4.py:595; load srt/models/exaone4.py:624;
    # log srt/models/exaone4.py:595, srt/models/exaone4.py:626
    "Exaone4ForCausalLM": Arch("LlamaForCausalLM", ("attn",), "exaone4.py:551"),
    # exaone.py:334 load_weights; load srt/models/exaone.py:373; raise srt/models/exaone.py:363,
    # srt/models/exaone.py:371
    "ExaoneForCausalLM": Arch("GemmaForCausalLM", ("attn",), "exaone.py:334"),
    # exaone_moe.py:756 load_weights; load srt/models/exaone_moe.py:854
    "ExaoneMoEForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "exaone_moe.py:756"),
    # exaone_moe.py:756 load_weights; load srt/models/exaone_moe.py:854
    "ExaoneMoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "exaone_moe.py:756"),
    # falcon_mamba.py:218 load_weights; load srt/models/falcon_mamba.py:239; log
    # srt/models/falcon_mamba.py:234
    "FalconMambaForCausalLM": Arch("FalconMambaForCausalLM", ("attn",), "falcon_mamba.py:218"),
    # gpt_bigcode.py:283 load_weights; load srt/models/gpt_bigcode.py:300; raise
    # srt/models/gpt_bigcode.py:292
    "GPTBigCodeForCausalLM": Arch("BaichuanForCausalLM", ("attn",), "gpt_bigcode.py:283"),
    # gpt_j.py:277 load_weights; remap srt/models/gpt_j.py:313; load srt/models/gpt_j.py:321; log
    # srt/models/gpt_j.py:313; raise srt/models/gpt_j.py:308, srt/models/gpt_j.py:319
    "GPTJForCausalLM": Arch("Gemma2ForCausalLM", ("attn",), "gpt_j.py:277"),
    # gemma2.py:460 load_weights; remap srt/models/gemma2.py:492; load srt/models/gemma2.py:498;
    # log srt/models/gemma2.py:492; raise srt/models/gemma2.py:479, srt/models/gemma2.py:496
    "Gemma2ForCausalLM": Arch("Gemma2ForCausalLM", ("attn",), "gemma2.py:460"),
    # gemma2_reward.py:71 load_weights; remap srt/models/gemma2.py:492; load
    # srt/models/gemma2.py:498; log srt/models/gemma2.py:492; raise srt/models/gemma2.py:479,
    # srt/models/gemma2.py:496
    "Gemma2ForSequenceClassification": Arch("Gemma2ForCausalLM", ("attn",), "gemma2_reward.py:71"),
    # gemma3_causal.py:858 load_weights; remap srt/models/gemma3_causal.py:870; load
    # srt/models/gemma3_causal.py:876; log srt/models/gemma3_causal.py:870; raise
    # srt/models/gemma3_causal.py:874, srt/models/gemma3_causal.py:889,
    # srt/models/gemma3_causal.py:906
    "Gemma3ForCausalLM": Arch("Gemma3ForCausalLM", ("attn",), "gemma3_causal.py:858"),
    # gemma3_mm.py:471 load_weights; remap srt/models/gemma3_mm.py:512; load
    # srt/models/gemma3_mm.py:519; log srt/models/gemma3_mm.py:512; raise
    # srt/models/gemma3_mm.py:500, srt/models/gemma3_mm.py:515
    "Gemma3ForConditionalGeneration": Arch(
        "Gemma3ForConditionalGeneration", ("attn",), "gemma3_mm.py:471"
    ),
    # gemma3n_causal.py:965 load_weights; remap srt/models/gemma3n_causal.py:1001; load
    # srt/models/gemma3n_causal.py:1010; log srt/models/gemma3n_causal.py:1001
    "Gemma3nForCausalLM": Arch("Gemma3nForCausalLM", ("attn",), "gemma3n_causal.py:965"),
    # gemma4_mtp.py:372 load_weights; remap srt/models/gemma4_causal.py:1419; load
    # srt/models/gemma4_causal.py:1428; log srt/models/gemma4_causal.py:1419
    # (answered by the harness's stub: self.use_ordered_embeddings)
    "Gemma4AssistantForCausalLM": Arch("Gemma4ForCausalLM", ("attn",), "gemma4_mtp.py:372"),
    # gemma4_causal.py:1258 load_weights; remap srt/models/gemma4_causal.py:1419; load
    # srt/models/gemma4_causal.py:1428; log srt/models/gemma4_causal.py:1419
    "Gemma4ForCausalLM": Arch("Gemma4ForCausalLM", ("attn",), "gemma4_causal.py:1258"),
    # gemma4_mtp.py:372 load_weights; remap srt/models/gemma4_causal.py:1419; load
    # srt/models/gemma4_causal.py:1428; log srt/models/gemma4_causal.py:1419
    # (answered by the harness's stub: self.use_ordered_embeddings)
    "Gemma4UnifiedAssistantForCausalLM": Arch("Gemma4ForCausalLM", ("attn",), "gemma4_mtp.py:372"),
    # gemma.py:372 load_weights; load srt/models/gemma.py:409; raise srt/models/gemma.py:391,
    # srt/models/gemma.py:407
    "GemmaForCausalLM": Arch("GemmaForCausalLM", ("attn",), "gemma.py:372"),
    # gigachat35.py:658 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "GigaChat35ForCausalLM": Arch("GigaChat35ForCausalLM", ("attn",), "gigachat35.py:658"),
    # glm4.py:576 load_weights; load srt/models/glm4.py:635; log srt/models/glm4.py:637
    "Glm4ForCausalLM": Arch("Glm4ForCausalLM", ("attn",), "glm4.py:576"),
    # glm4_moe.py:1071 load_weights; load srt/models/glm4_moe.py:1246
    "Glm4MoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "glm4_moe.py:1071"),
    # glm4_moe_lite.py:834 load_weights; load srt/models/glm4_moe_lite.py:1070
    "Glm4MoeLiteForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "glm4_moe_lite.py:834"),
    # glm4v.py:755 load_weights; load srt/models/glm4v.py:823
    "Glm4vForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "glm4v.py:755"),
    # glm4v_moe.py:110 load_weights; load srt/models/glm4v_moe.py:271
    "Glm4vMoeForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "glm4v_moe.py:110"),
    # glm5_next.py:1680 load_weights; load srt/models/glm5_next.py:1917
    # (answered by the harness's stub: self.encoder_only, self.fuse_qkv_a_proj, self.language_only)
    "Glm5NextForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "glm5_next.py:1680"),
    # glmasr.py:168 load_weights; load srt/models/glmasr.py:209; raise srt/models/glmasr.py:194,
    # srt/models/glmasr.py:203
    # (answered by the harness's stub: config.text_config)
    "GlmAsrForConditionalGeneration": Arch("GemmaForCausalLM", ("attn",), "glmasr.py:168"),
    # glm_image_vl.py:1162 load_weights; load srt/models/glm_image_vl.py:1214
    "GlmImageForConditionalGeneration": Arch(
        "Qwen2MoeForCausalLM", ("attn",), "glm_image_vl.py:1162"
    ),
    # deepseek_v2.py:3436 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "GlmMoeDsaForCausalLM": Arch(
        "DeepseekV3ForCausalLM", ("attn_mqa", "attn_mha"), "deepseek_v2.py:3436"
    ),
    # glm_ocr.py:331 load_weights; load srt/models/glm_ocr.py:452
    "GlmOcrForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "glm_ocr.py:331"),
    # gpt_oss.py:898 load_weights; load srt/models/gpt_oss.py:1319
    "GptOssForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "gpt_oss.py:898"),
    # granite.py:424 load_weights; load srt/models/granite.py:474; raise srt/models/granite.py:458,
    # srt/models/granite.py:472
    "GraniteForCausalLM": Arch("GraniteForCausalLM", ("attn",), "granite.py:424"),
    # granitemoe.py:507 load_weights; load srt/models/mixtral.py:477; log
    # srt/models/mixtral.py:479; raise srt/models/mixtral.py:435
    "GraniteMoeForCausalLM": Arch("MixtralForCausalLM", ("attn",), "granitemoe.py:507"),
    # granitemoehybrid.py:590 load_weights; load srt/models/granitemoehybrid.py:604; raise
    # srt/models/granitemoehybrid.py:602, srt/models/granitemoehybrid.py:609
    "GraniteMoeHybridForCausalLM": Arch(
        "GraniteMoeHybridForCausalLM", ("attn",), "granitemoehybrid.py:590"
    ),
    # granitemoe.py:507 load_weights; load srt/models/mixtral.py:477; log
    # srt/models/mixtral.py:479; raise srt/models/mixtral.py:435
    "GraniteMoeSWAForCausalLM": Arch("MixtralForCausalLM", ("attn",), "granitemoe.py:507"),
    # granitemoe.py:507 load_weights; load srt/models/mixtral.py:477; log
    # srt/models/mixtral.py:479; raise srt/models/mixtral.py:435
    "GraniteMoeSharedForCausalLM": Arch("MixtralForCausalLM", ("attn",), "granitemoe.py:507"),
    # granite.py:424 load_weights; load srt/models/granite.py:474; raise srt/models/granite.py:458,
    # srt/models/granite.py:472
    "GraniteSWAForCausalLM": Arch("GraniteForCausalLM", ("attn",), "granite.py:424"),
    # grok.py:780 load_weights; load srt/models/grok.py:837
    # (answered by the harness's stub: config.output_multiplier_scale)
    "Grok1ForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "grok.py:780"),
    # grok.py:780 load_weights; load srt/models/grok.py:837
    # (answered by the harness's stub: config.output_multiplier_scale)
    "Grok1ModelForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "grok.py:780"),
    # hunyuan_v3.py:542 load_weights; load srt/models/hunyuan_v3.py:623
    "HYV3ForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "hunyuan_v3.py:542"),
    # hunyuan_v4.py:787 load_weights; load
    # srt/models/deepseek_common/deepseek_weight_loader.py:538; log
    # srt/models/deepseek_common/deepseek_weight_loader.py:532
    "HYV4ForCausalLM": Arch("GigaChat35ForCausalLM", ("attn",), "hunyuan_v4.py:787"),
    # hrm_text.py:462 load_weights
    "HrmTextForCausalLM": Arch("HrmTextForCausalLM", ("attn",), "hrm_text.py:462"),
    # hunyuan.py:628 load_weights; remap srt/models/hunyuan.py:758; load srt/models/hunyuan.py:769;
    # log srt/models/hunyuan.py:758; raise srt/models/hunyuan.py:702, srt/models/hunyuan.py:719,
    # srt/models/hunyuan.py:765
    "HunYuanDenseV1ForCausalLM": Arch("HunYuanDenseV1ForCausalLM", ("attn",), "hunyuan.py:628"),
    # hunyuan.py:628 load_weights; remap srt/models/hunyuan.py:758; load srt/models/hunyuan.py:769;
    # log srt/models/hunyuan.py:758; raise srt/models/hunyuan.py:702, srt/models/hunyuan.py:719,
    # srt/models/hunyuan.py:765
    "HunYuanMoEV1ForCausalLM": Arch("HunYuanDenseV1ForCausalLM", ("attn",), "hunyuan.py:628"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "IQuestCoderForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # iquest_loopcoder.py:441 load_weights; load srt/models/iquest_loopcoder.py:494
    "IQuestLoopCoderForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "iquest_loopcoder.py:441"),
    # iquest_q1.py:792 load_weights; load srt/models/iquest_q1.py:734; raise
    # srt/models/iquest_q1.py:732
    "IQuestQ1ForCausalLM": Arch("IQuestQ1ForCausalLM", ("attn",), "iquest_q1.py:792"),
    # internlm2.py:311 load_weights; load srt/models/internlm2.py:356; raise
    # srt/models/internlm2.py:336
    "InternLM2ForCausalLM": Arch("BaichuanForCausalLM", ("attn",), "internlm2.py:311"),
    # internlm2_reward.py:65 load_weights; load srt/models/internlm2.py:356; raise
    # srt/models/internlm2.py:336
    "InternLM2ForRewardModel": Arch("BaichuanForCausalLM", ("attn",), "internlm2_reward.py:65"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "InternLM3ForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # interns1.py:200 load_weights; load srt/models/interns1.py:272; raise
    # srt/models/interns1.py:244, srt/models/interns1.py:268
    # (answered by the harness's stub: config.text_config)
    "InternS1ForConditionalGeneration": Arch("GemmaForCausalLM", ("attn",), "interns1.py:200"),
    # interns1pro.py:234 load_weights; load srt/models/qwen3_vl_moe.py:390; log
    # srt/models/qwen3_vl_moe.py:392
    # (answered by the harness's stub: self._cached_params_dict, config.encoder_only,
    # config.language_only)
    "InternS1ProForConditionalGeneration": Arch(
        "InternS1ProForConditionalGeneration", ("attn",), "interns1pro.py:234"
    ),
    # jet_nemotron.py:587 load_weights; load srt/models/jet_nemotron.py:632; raise
    # srt/models/jet_nemotron.py:630
    "JetNemotronForCausalLM": Arch("BaichuanForCausalLM", ("attn",), "jet_nemotron.py:587"),
    # jet_vlm.py:124 load_weights; load srt/models/jet_vlm.py:135; raise srt/models/jet_vlm.py:131
    "JetVLMForConditionalGeneration": Arch("BaichuanForCausalLM", ("attn",), "jet_vlm.py:124"),
    # xllm.py:1724 load_weights; load srt/models/xllm.py:1842
    # (answered by the harness's stub: self.expert_params_mapping, self.stacked_params_mapping)
    "K2HorizonForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "xllm.py:1724"),
    # kimi_k3.py:3128 load_weights; remap srt/models/kimi_k3.py:3305; load
    # srt/models/kimi_k3.py:3319; log srt/models/kimi_k3.py:3305
    # (answered by the harness's stub: config.is_kda_layer, config.is_moe,
    # config.linear_attn_config)
    "KimiK3LinearForCausalLM": Arch("Gemma4ForCausalLM", ("attn",), "kimi_k3.py:3128"),
    # kimi_linear.py:882 load_weights; remap srt/models/kimi_linear.py:988; load
    # srt/models/kimi_linear.py:995; log srt/models/kimi_linear.py:988; raise
    # srt/models/kimi_linear.py:991
    # (answered by the harness's stub: config.is_kda_layer, config.is_moe)
    "KimiLinearForCausalLM": Arch("DbrxForCausalLM", ("attn",), "kimi_linear.py:882"),
    # kimi_vl.py:231 load_weights; remap srt/models/kimi_vl.py:350; load srt/models/kimi_vl.py:359;
    # log srt/models/kimi_vl.py:350; raise srt/models/kimi_vl.py:357
    # (answered by the harness's stub: config.encoder_only, config.language_only,
    # config.text_config)
    "KimiVLForConditionalGeneration": Arch(
        "KimiVLForConditionalGeneration", ("attn",), "kimi_vl.py:231"
    ),
    # llada2.py:1395 load_weights; load srt/models/llada2.py:1482
    # (answered by the harness's stub: self.routed_experts_weights_of_layer)
    "LLaDA2MoeModelLM": Arch("Qwen2MoeForCausalLM", ("attn",), "llada2.py:1395"),
    # laguna.py:699 load_weights; load srt/models/laguna.py:802; log srt/models/laguna.py:798
    # (answered by the harness's stub: config.mlp_layer_types)
    "LagunaForCausalLM": Arch("LagunaForCausalLM", ("attn",), "laguna.py:699"),
    # lfm2.py:630 load_weights; load srt/models/lfm2.py:675
    "Lfm2BidirectionalModel": Arch("Qwen2MoeForCausalLM", ("attn",), "lfm2.py:630"),
    # dspark.py:627 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.confidence_head, self.is_nemotron_35_draft,
    # self.projector_type)
    "Lfm2DSparkDraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dspark.py:627"),
    # lfm2.py:751 load_weights; load srt/models/lfm2.py:800
    "Lfm2ForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "lfm2.py:751"),
    # lfm2_moe.py:664 load_weights; load srt/models/lfm2_moe.py:840
    "Lfm2MoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "lfm2_moe.py:664"),
    # lilicorr.py:553 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.lilicorr, self.projector_type)
    "LiLiCorrDraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "lilicorr.py:553"),
    # dspark.py:627 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.confidence_head, self.is_nemotron_35_draft,
    # self.projector_type)
    "LingDSparkModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dspark.py:627"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "Llama4ForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "LlamaForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # llama_eagle3.py:325 load_weights; load srt/models/llama_eagle3.py:378
    "LlamaForCausalLMEagle3": Arch("Qwen2MoeForCausalLM", ("attn",), "llama_eagle3.py:325"),
    # llama_classification.py:75 load_weights; remap srt/models/llama.py:748; load
    # srt/models/llama.py:777; log srt/models/llama.py:748, srt/models/llama.py:779
    "LlamaForClassification": Arch("LlamaForCausalLM", ("attn",), "llama_classification.py:75"),
    # llama_reward.py:76 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777;
    # log srt/models/llama.py:748, srt/models/llama.py:779
    "LlamaForSequenceClassification": Arch("LlamaForCausalLM", ("attn",), "llama_reward.py:76"),
    # llama_reward.py:139 load_weights; remap srt/models/llama.py:748; load
    # srt/models/llama.py:777; log srt/models/llama.py:748, srt/models/llama.py:779
    "LlamaForSequenceClassificationWithNormal_Weights": Arch(
        "LlamaForCausalLM", ("attn",), "llama_reward.py:139"
    ),
    # locate_anything.py:157 load_weights; load srt/models/locate_anything.py:240; log
    # srt/models/locate_anything.py:236
    # (answered by the harness's stub: config.text_config)
    "LocateAnythingForConditionalGeneration": Arch(
        "LagunaForCausalLM", ("attn",), "locate_anything.py:157"
    ),
    # longcat_flash.py:915 load_weights; load srt/models/longcat_flash.py:1080; log
    # srt/models/longcat_flash.py:1074
    # (answered by the harness's stub: self.use_ngram_embedding)
    "LongcatFlashForCausalLM": Arch("GigaChat35ForCausalLM", ("attn",), "longcat_flash.py:915"),
    # mamba2.py:226 load_weights; load srt/models/mamba2.py:250; log srt/models/mamba2.py:245
    "Mamba2ForCausalLM": Arch("FalconMambaForCausalLM", ("attn",), "mamba2.py:226"),
    # falcon_mamba.py:218 load_weights; load srt/models/falcon_mamba.py:239; log
    # srt/models/falcon_mamba.py:234
    "MambaForCausalLM": Arch("FalconMambaForCausalLM", ("attn",), "falcon_mamba.py:218"),
    # qwen3_moe.py:1157 load_weights; load srt/models/qwen3_moe.py:1274
    # (answered by the harness's stub: self.routed_experts_weights_of_layer)
    "MellumForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen3_moe.py:1157"),
    # midashenglm.py:608 load_weights; load srt/models/midashenglm.py:647
    "MiDashengLMModel": Arch("Qwen2MoeForCausalLM", ("attn",), "midashenglm.py:608"),
    # mimo.py:99 load_weights; load srt/models/mimo.py:143; raise srt/models/mimo.py:133,
    # srt/models/mimo.py:141
    "MiMoForCausalLM": Arch("GemmaForCausalLM", ("attn",), "mimo.py:99"),
    # mimo_v2_asr.py:99 load_weights; load srt/models/mimo.py:143; raise srt/models/mimo.py:133,
    # srt/models/mimo.py:141
    "MiMoV2ASRForCausalLM": Arch("GemmaForCausalLM", ("attn",), "mimo_v2_asr.py:99"),
    # mimo_v2.py:1515 load_weights; load srt/models/mimo_v2.py:1751; log
    # srt/models/mimo_v2.py:1753; raise srt/models/mimo_v2.py:1705
    # (answered by the harness's stub: self._is_multimodal, config.encoder_only)
    "MiMoV2FlashForCausalLM": Arch("MiMoV2FlashForCausalLM", ("attn",), "mimo_v2.py:1515"),
    # mimo_v2.py:1515 load_weights; load srt/models/mimo_v2.py:1751; log
    # srt/models/mimo_v2.py:1753; raise srt/models/mimo_v2.py:1705
    # (answered by the harness's stub: self._is_multimodal, config.encoder_only)
    "MiMoV2ForCausalLM": Arch("MiMoV2FlashForCausalLM", ("attn",), "mimo_v2.py:1515"),
    # minicpm.py:563 load_weights; load srt/models/minicpm.py:623; raise srt/models/minicpm.py:600,
    # srt/models/minicpm.py:619
    # (answered by the harness's stub: self.num_experts)
    "MiniCPMForCausalLM": Arch("GemmaForCausalLM", ("attn",), "minicpm.py:563"),
    # minicpmo.py:1871 load_weights; load srt/models/minicpmo.py:1947; raise
    # srt/models/minicpmo.py:1937, srt/models/minicpmo.py:1945
    # (answered by the harness's stub: config.init_audio, config.init_tts, config.init_vision)
    "MiniCPMO": Arch("GemmaForCausalLM", ("attn",), "minicpmo.py:1871"),
    # minicpm.py:563 load_weights; load srt/models/minicpm.py:623; raise srt/models/minicpm.py:600,
    # srt/models/minicpm.py:619
    # (answered by the harness's stub: self.num_experts)
    "MiniCPMSALAForCausalLM": Arch("GemmaForCausalLM", ("attn",), "minicpm.py:563"),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "MiniMaxDFlash2DraftModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # minimax_m2.py:1113 load_weights; remap srt/models/minimax_m2.py:1212; load
    # srt/models/minimax_m2.py:1222; log srt/models/minimax_m2.py:1212
    "MiniMaxM2ForCausalLM": Arch("MiniMaxM2ForCausalLM", ("attn",), "minimax_m2.py:1113"),
    # minimax_m3.py:2123 load_weights; remap srt/models/minimax_m3.py:2226; load
    # srt/models/minimax_m3.py:2236; log srt/models/minimax_m3.py:2226,
    # srt/models/minimax_m3.py:2241
    "MiniMaxM3SparseForCausalLM": Arch(
        "MiniMaxM3SparseForCausalLM", ("attn",), "minimax_m3.py:2123"
    ),
    # minimax_m3_vl.py:333 load_weights; load srt/models/minimax_vl_common.py:926
    # (answered by the harness's stub: config.text_config)
    "MiniMaxM3SparseForConditionalGeneration": Arch(
        "Qwen2MoeForCausalLM", ("attn",), "minimax_m3_vl.py:333"
    ),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "Ministral3ForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "MistralForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # mistral_eagle.py:181 load_weights; remap srt/models/llama.py:748; load
    # srt/models/llama.py:777; log srt/models/llama.py:748, srt/models/llama.py:779
    "MistralForCausalLMEagle": Arch("LlamaForCausalLM", ("attn",), "mistral_eagle.py:181"),
    # mixtral.py:392 load_weights; load srt/models/mixtral.py:477; log srt/models/mixtral.py:479;
    # raise srt/models/mixtral.py:435
    "MixtralForCausalLM": Arch("MixtralForCausalLM", ("attn",), "mixtral.py:392"),
    # mllama.py:1050 load_weights; load srt/models/mllama.py:1082; raise srt/models/mllama.py:1071,
    # srt/models/mllama.py:1080
    "MllamaForConditionalGeneration": Arch(
        "GraniteMoeHybridForCausalLM", ("attn",), "mllama.py:1050"
    ),
    # moss_vl.py:1664 load_weights; load srt/models/moss_vl.py:1720
    "MossVLForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "moss_vl.py:1664"),
    # deepseek_janus_pro.py:2008 load_weights; load srt/models/deepseek_janus_pro.py:2058; raise
    # srt/models/deepseek_janus_pro.py:2047, srt/models/deepseek_janus_pro.py:2056
    "MultiModalityCausalLM": Arch(
        "GraniteMoeHybridForCausalLM", ("attn",), "deepseek_janus_pro.py:2008"
    ),
    # dflash.py:886 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.projector_type)
    "MuseGlimmerAssistantModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dflash.py:886"),
    # muse_glimmer.py:881 load_weights; remap srt/models/muse_glimmer.py:913; load
    # srt/models/muse_glimmer.py:938; log srt/models/muse_glimmer.py:913,
    # srt/models/muse_glimmer.py:932
    # (answered by the harness's stub: self.checkpoint_norms_are_absolute)
    "MuseGlimmerForCausalLM": Arch("MuseGlimmerForCausalLM", ("attn",), "muse_glimmer.py:881"),
    # muse_glimmer.py:881 load_weights; remap srt/models/muse_glimmer.py:913; load
    # srt/models/muse_glimmer.py:938; log srt/models/muse_glimmer.py:913,
    # srt/models/muse_glimmer.py:932
    # (answered by the harness's stub: self.checkpoint_norms_are_absolute)
    "MuseGlimmerForConditionalGeneration": Arch(
        "MuseGlimmerForCausalLM", ("attn",), "muse_glimmer.py:881"
    ),
    # muse_spark_omni.py:418 load_weights; load srt/models/muse_spark_omni.py:457; raise
    # srt/models/muse_spark_omni.py:456, srt/models/muse_spark_omni.py:461
    # (answered by the harness's stub: self.encoder_only, self.int4_checkpoint, self.language_only,
    # self.nvfp4_checkpoint)
    "MuseSparkForConditionalGeneration": Arch(
        "BaichuanForCausalLM", ("attn",), "muse_spark_omni.py:418"
    ),
    # nvila.py:205 load_weights; load srt/models/nvila.py:220; raise srt/models/nvila.py:216
    "NVILAForConditionalGeneration": Arch("BaichuanForCausalLM", ("attn",), "nvila.py:205"),
    # nvila_lite.py:165 load_weights; load srt/models/nvila_lite.py:180; raise
    # srt/models/nvila_lite.py:176
    "NVILALiteForConditionalGeneration": Arch(
        "BaichuanForCausalLM", ("attn",), "nvila_lite.py:165"
    ),
    # nanbeige.py:502 load_weights; load srt/models/nanbeige.py:561; log srt/models/nanbeige.py:563
    "NanbeigeForCausalLM": Arch("Glm4ForCausalLM", ("attn",), "nanbeige.py:502"),
    # nanbeige.py:627 load_weights; load srt/models/nanbeige.py:561; log srt/models/nanbeige.py:563
    "NanbeigeForSequenceClassification": Arch("Glm4ForCausalLM", ("attn",), "nanbeige.py:627"),
    # nemotron_h.py:1236 load_weights; remap srt/models/nemotron_h.py:1285; load
    # srt/models/nemotron_h.py:1352; log srt/models/nemotron_h.py:1285,
    # srt/models/nemotron_h.py:1354
    # (answered by the harness's stub: config.max_n_routed_experts)
    "NemotronHForCausalLM": Arch("NemotronHForCausalLM", ("attn",), "nemotron_h.py:1236"),
    # nemotron_h.py:1236 load_weights; remap srt/models/nemotron_h.py:1285; load
    # srt/models/nemotron_h.py:1352; log srt/models/nemotron_h.py:1285,
    # srt/models/nemotron_h.py:1354
    # (answered by the harness's stub: config.max_n_routed_experts)
    "NemotronHPuzzleForCausalLM": Arch("NemotronHForCausalLM", ("attn",), "nemotron_h.py:1236"),
    # opt.py:449 load_weights; load srt/models/opt.py:497; raise srt/models/opt.py:480
    "OPTForCausalLM": Arch("Starcoder2ForCausalLM", ("attn",), "opt.py:449"),
    # olmo2.py:443 load_weights; load srt/models/olmo2.py:482; raise srt/models/olmo2.py:472,
    # srt/models/olmo2.py:480
    "Olmo2ForCausalLM": Arch("GemmaForCausalLM", ("attn",), "olmo2.py:443"),
    # olmo.py:342 load_weights; load srt/models/olmo.py:378; raise srt/models/olmo.py:368,
    # srt/models/olmo.py:376
    "OlmoForCausalLM": Arch("GemmaForCausalLM", ("attn",), "olmo.py:342"),
    # olmoe.py:346 load_weights; load srt/models/olmoe.py:433; log srt/models/olmoe.py:418; raise
    # srt/models/olmoe.py:429
    "OlmoeForCausalLM": Arch("OlmoeForCausalLM", ("attn",), "olmoe.py:346"),
    # orion.py:324 load_weights; load srt/models/orion.py:363
    "OrionForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "orion.py:324"),
    # points_v15_chat.py:140 load_weights; load srt/models/points_v15_chat.py:183; raise
    # srt/models/points_v15_chat.py:164, srt/models/points_v15_chat.py:177
    "POINTSV15ChatModel": Arch("GemmaForCausalLM", ("attn",), "points_v15_chat.py:140"),
    # paddleocr_vl.py:657 load_weights; load srt/models/paddleocr_vl.py:692; raise
    # srt/models/paddleocr_vl.py:679, srt/models/paddleocr_vl.py:694
    "PaddleOCRVLForConditionalGeneration": Arch(
        "Ernie4_5_ForCausalLM", ("attn",), "paddleocr_vl.py:657"
    ),
    # persimmon.py:296 load_weights; load srt/models/persimmon.py:320; log
    # srt/models/persimmon.py:304
    "PersimmonForCausalLM": Arch("PersimmonForCausalLM", ("attn",), "persimmon.py:296"),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "Phi3ForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # phi3_small.py:454 load_weights; load srt/models/phi3_small.py:470; raise
    # srt/models/phi3_small.py:468
    "Phi3SmallForCausalLM": Arch("BaichuanForCausalLM", ("attn",), "phi3_small.py:454"),
    # phi.py:277 load_weights; load srt/models/phi.py:315
    "PhiForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "phi.py:277"),
    # phimoe.py:500 load_weights; remap srt/models/phimoe.py:547; load srt/models/phimoe.py:555;
    # log srt/models/phimoe.py:547; raise srt/models/phimoe.py:523, srt/models/phimoe.py:551
    "PhiMoEForCausalLM": Arch("Gemma2ForCausalLM", ("attn",), "phimoe.py:500"),
    # pixtral.py:1015 load_weights; load srt/models/pixtral.py:1051
    "PixtralVisionModel": Arch("Qwen2MoeForCausalLM", ("attn",), "pixtral.py:1015"),
    # qwen.py:326 load_weights; load srt/models/qwen.py:359
    "QWenLMHeadModel": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen.py:326"),
    # mixtral_quant.py:392 load_weights; load srt/models/mixtral_quant.py:428
    "QuantMixtralForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "mixtral_quant.py:392"),
    # qwen2_audio.py:141 load_weights; load srt/models/qwen2_audio.py:186; raise
    # srt/models/qwen2_audio.py:171, srt/models/qwen2_audio.py:180
    # (answered by the harness's stub: config.text_config)
    "Qwen2AudioForConditionalGeneration": Arch("GemmaForCausalLM", ("attn",), "qwen2_audio.py:141"),
    # qwen2.py:643 load_weights; load srt/models/qwen2.py:717; log srt/models/qwen2.py:719
    "Qwen2ForCausalLM": Arch("Qwen2ForCausalLM", ("attn",), "qwen2.py:643"),
    # qwen2_rm.py:82 load_weights; load srt/models/qwen2.py:717; log srt/models/qwen2.py:719
    "Qwen2ForRewardModel": Arch("Qwen2ForCausalLM", ("attn",), "qwen2_rm.py:82"),
    # qwen2_classification.py:69 load_weights; load srt/models/qwen2.py:717; log
    # srt/models/qwen2.py:719
    "Qwen2ForSequenceClassification": Arch(
        "Qwen2ForCausalLM", ("attn",), "qwen2_classification.py:69"
    ),
    # qwen2_moe.py:1324 load_weights; load srt/models/qwen2_moe.py:1406
    "Qwen2MoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen2_moe.py:1324"),
    # qwen2_vl.py:583 load_weights; load srt/models/qwen2_vl.py:626; raise
    # srt/models/qwen2_vl.py:607, srt/models/qwen2_vl.py:620
    "Qwen2VLForConditionalGeneration": Arch("GemmaForCausalLM", ("attn",), "qwen2_vl.py:583"),
    # qwen2_5_vl.py:906 load_weights; load srt/models/qwen2_5_vl.py:985; raise
    # srt/models/qwen2_5_vl.py:962
    # (answered by the harness's stub: config.encoder_only, config.language_only)
    "Qwen2_5_VLForConditionalGeneration": Arch(
        "Qwen2_5_VLForConditionalGeneration", ("attn",), "qwen2_5_vl.py:906"
    ),
    # qwen3_asr.py:129 load_weights; load srt/models/qwen3_asr.py:196
    # (answered by the harness's stub: config.thinker_config)
    "Qwen3ASRForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen3_asr.py:129"),
    # dspark.py:627 load_weights; load srt/models/dflash.py:984
    # (answered by the harness's stub: self.confidence_head, self.is_nemotron_35_draft,
    # self.projector_type)
    "Qwen3DSparkModel": Arch("Qwen2MoeForCausalLM", ("attn",), "dspark.py:627"),
    # qwen3.py:685 load_weights; remap srt/models/qwen3.py:734; load srt/models/qwen3.py:758; log
    # srt/models/qwen3.py:734, srt/models/qwen3.py:760; raise srt/models/qwen3.py:744
    "Qwen3ForCausalLM": Arch("Qwen3ForCausalLM", ("attn",), "qwen3.py:685"),
    # qwen3_classification.py:77 load_weights; load srt/models/qwen3_classification.py:123; log
    # srt/models/qwen3_classification.py:125
    "Qwen3ForRewardModel": Arch("Qwen2ForCausalLM", ("attn",), "qwen3_classification.py:77"),
    # qwen3_classification.py:77 load_weights; load srt/models/qwen3_classification.py:123; log
    # srt/models/qwen3_classification.py:125
    "Qwen3ForSequenceClassification": Arch(
        "Qwen2ForCausalLM", ("attn",), "qwen3_classification.py:77"
    ),
    # qwen3_embedding.py:62 load_weights; remap srt/models/qwen3_embedding.py:96; load
    # srt/models/qwen3_embedding.py:119; log srt/models/qwen3_embedding.py:96,
    # srt/models/qwen3_embedding.py:121; raise srt/models/qwen3_embedding.py:106
    "Qwen3Model": Arch("Qwen3ForCausalLM", ("attn",), "qwen3_embedding.py:62"),
    # qwen3_moe.py:1157 load_weights; load srt/models/qwen3_moe.py:1274
    # (answered by the harness's stub: self.routed_experts_weights_of_layer)
    "Qwen3MoeForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen3_moe.py:1157"),
    # qwen3_omni_moe.py:558 load_weights; load srt/models/qwen3_omni_moe.py:725; log
    # srt/models/qwen3_omni_moe.py:727
    "Qwen3OmniMoeForConditionalGeneration": Arch(
        "Qwen3OmniMoeForConditionalGeneration", ("attn",), "qwen3_omni_moe.py:558"
    ),
    # qwen3_vl.py:1690 load_weights; load srt/models/qwen3_vl.py:1772
    "Qwen3VLForConditionalGeneration": Arch("Qwen2MoeForCausalLM", ("attn",), "qwen3_vl.py:1690"),
    # qwen3_vl_moe.py:214 load_weights; load srt/models/qwen3_vl_moe.py:390; log
    # srt/models/qwen3_vl_moe.py:392
    # (answered by the harness's stub: config.encoder_only, config.language_only)
    "Qwen3VLMoeForConditionalGeneration": Arch(
        "InternS1ProForConditionalGeneration", ("attn",), "qwen3_vl_moe.py:214"
    ),
    # sdar.py:501 load_weights; remap srt/models/sdar.py:547; load srt/models/sdar.py:571; log
    # srt/models/sdar.py:547, srt/models/sdar.py:573; raise srt/models/sdar.py:557
    "SDARForCausalLM": Arch("Qwen3ForCausalLM", ("attn",), "sdar.py:501"),
    # sarashina2_vision.py:175 load_weights; load srt/models/sarashina2_vision.py:232
    "Sarashina2VisionForCausalLM": Arch(
        "Qwen2MoeForCausalLM", ("attn",), "sarashina2_vision.py:175"
    ),
    # sarvam_moe.py:1274 load_weights; load srt/models/sarvam_moe.py:1351
    # (answered by the harness's stub: self.routed_experts_weights_of_layer)
    "SarvamMLAForCausalLM": Arch(
        "SarvamMLAForCausalLM", ("attn_mqa", "attn_mha"), "sarvam_moe.py:1274"
    ),
    # bailing_moe.py:945 load_weights; load srt/models/bailing_moe.py:1079
    "SarvamMoEForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "bailing_moe.py:945"),
    # solar.py:496 load_weights; load srt/models/solar.py:523
    "SolarForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "solar.py:496"),
    # spark2_5.py:487 load_weights; load srt/models/spark2_5.py:539; log srt/models/spark2_5.py:543
    "Spark2_5ForCausalLM": Arch("LagunaForCausalLM", ("attn",), "spark2_5.py:487"),
    # stablelm.py:313 load_weights; load srt/models/stablelm.py:347; raise
    # srt/models/stablelm.py:337, srt/models/stablelm.py:345
    "StableLmForCausalLM": Arch("GemmaForCausalLM", ("attn",), "stablelm.py:313"),
    # starcoder2.py:318 load_weights; load srt/models/starcoder2.py:350; raise
    # srt/models/starcoder2.py:335
    "Starcoder2ForCausalLM": Arch("Starcoder2ForCausalLM", ("attn",), "starcoder2.py:318"),
    # step3_vl.py:913 load_weights; load srt/models/step3_vl.py:993; raise
    # srt/models/step3_vl.py:982, srt/models/step3_vl.py:989
    # (answered by the harness's stub: config.text_config)
    "Step3VLForConditionalGeneration": Arch(
        "GraniteMoeHybridForCausalLM", ("attn",), "step3_vl.py:913"
    ),
    # llama.py:701 load_weights; remap srt/models/llama.py:748; load srt/models/llama.py:777; log
    # srt/models/llama.py:748, srt/models/llama.py:779
    "TeleFLMForCausalLM": Arch("LlamaForCausalLM", ("attn",), "llama.py:701"),
    # xllm.py:1724 load_weights; load srt/models/xllm.py:1842
    # (answered by the harness's stub: self.expert_params_mapping, self.stacked_params_mapping)
    "XllmForCausalLM": Arch("Qwen2MoeForCausalLM", ("attn",), "xllm.py:1724"),
    # xverse.py:333 load_weights; load srt/models/xverse.py:374; raise srt/models/xverse.py:362,
    # srt/models/xverse.py:372
    "XverseForCausalLM": Arch("GemmaForCausalLM", ("attn",), "xverse.py:333"),
    # xverse_moe.py:433 load_weights; load srt/models/xverse_moe.py:474; raise
    # srt/models/xverse_moe.py:459, srt/models/xverse_moe.py:472
    "XverseMoeForCausalLM": Arch("GemmaForCausalLM", ("attn",), "xverse_moe.py:433"),
    # zaya.py:1590 load_weights; load srt/models/zaya.py:1695; log srt/models/zaya.py:1687
    # (answered by the harness's stub: self.w13_weight)
    "ZayaForCausalLM": Arch("ZayaForCausalLM", ("attn",), "zaya.py:1590"),
}

NOT_PROBED: dict[str, str] = {
    # the harness could not run these loaders on a standard decoder layout (other checkpoint names,
    # a sub-model built in __init__, a draft model); kvscale applies LlamaForCausalLM's rules to
    # them and says so
    "BailingMM2NativeForConditionalGeneration": (
        "bailing_mm.py: background checkpoint: raise: AttributeError: 'Skeleton' object has no "
        "attribute 'load_weights' at srt/models/bailing_mm.py:235"
    ),
    "BailingMMNativeForConditionalGeneration": (
        "bailing_mm.py: background checkpoint: raise: AttributeError: 'Skeleton' object has no "
        "attribute 'load_weights' at srt/models/bailing_mm.py:235"
    ),
    "BailingMoeForCausalLMNextN": (
        "bailing_moe_nextn.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight; stubs called: "
        "self.base_load_weights_func"
    ),
    "BailingMoeV2_5ForCausalLM": (
        "bailing_moe_linear.py: background checkpoint: raise: AttributeError: 'Skeleton' "
        "object has no attribute 'layer_group_size' at srt/models/bailing_moe_linear.py:1564"
    ),
    "BailingMoeV3ForCausalLM": (
        "bailing_moe_v3.py: background checkpoint: raise: AttributeError: 'Module' object has "
        "no attribute 'attention' at srt/models/bailing_moe_v3.py:1911"
    ),
    "BailingMoeV3VLForConditionalGeneration": (
        "bailing_mm_v3.py: background checkpoint: raise: AttributeError: 'Skeleton' object has "
        "no attribute 'load_weights' at srt/models/bailing_mm_v3.py:299"
    ),
    "BeamForCausalLM": (
        "beam.py: background checkpoint: raise: AttributeError: 'Skeleton' object has no "
        "attribute 'pp_group' at srt/models/beam.py:1414"
    ),
    "BertForSequenceClassification": (
        "bert.py: background checkpoint: model.layers.0.input_layernorm.weight does not load "
        "into model.layers.0.input_layernorm.weight; stubs called: bert.load_weights"
    ),
    "BertModel": (
        "bert.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn_attn.o_proj.weight' at srt/models/bert.py:418"
    ),
    "Cohere2VisionForConditionalGeneration": (
        "cohere2_vision.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, multi_modal_projector.named_parameters, "
        "named_parameters__.keys, vision_tower.named_parameters"
    ),
    "Contriever": (
        "bert.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn_attn.o_proj.weight' at srt/models/bert.py:418"
    ),
    "DSparkMiniMaxDraftModel": (
        "dspark_minimax.py: background checkpoint: raise: ValueError: Missing DSpark "
        "checkpoint tensors: ['lm_head.weight', 'model.embed_tokens.weight', "
        "'model.layers.0.input_layernorm.weight', 'model.layers.0.mlp.down_proj.input_scale', "
        "'model.layers.0.mlp.down_proj.weight', 'model.layers.0.mlp.down_proj.weight_scale', "
        "'model.layers.0.mlp.gate_up_proj.input_scale', "
        "'model.layers.0.mlp.gate_up_proj.weight', "
        "'model.layers.0.mlp.gate_up_proj.weight_scale', "
        "'model.layers.0.post_attention_layernorm.weight', "
        "'model.layers.0.self_attn.attn.k_scale', 'model.layers.0.self_attn.attn.v_scale', "
        "'model.layers.0.self_attn.o_proj.input_scale', "
        "'model.layers.0.self_attn.o_proj.weight', "
        "'model.layers.0.self_attn.o_proj.weight_scale', "
        "'model.layers.0.self_attn.qkv_proj.input_scale', "
        "'model.layers.0.self_attn.qkv_proj.weight', "
        "'model.layers.0.self_attn.qkv_proj.weight_scale', "
        "'model.layers.1.input_layernorm.weight', 'model.layers.1.mlp.down_proj.input_scale', "
        "'model.layers.1.mlp.down_proj.weight', 'model.layers.1.mlp.down_proj.weight_scale', "
        "'model.layers.1.mlp.gate_up_proj.input_scale', "
        "'model.layers.1.mlp.gate_up_proj.weight', "
        "'model.layers.1.mlp.gate_up_proj.weight_scale', "
        "'model.layers.1.post_attention_layernorm.weight', "
        "'model.layers.1.self_attn.attn.k_scale', 'model.layers.1.self_attn.attn.v_scale', "
        "'model.layers.1.self_attn.o_proj.input_scale', "
        "'model.layers.1.self_attn.o_proj.weight', "
        "'model.layers.1.self_attn.o_proj.weight_scale', "
        "'model.layers.1.self_attn.qkv_proj.input_scale', "
        "'model.layers.1.self_attn.qkv_proj.weight', "
        "'model.layers.1.self_attn.qkv_proj.weight_scale', 'model.norm.weight'] at "
        "srt/models/dspark_minimax.py:322"
    ),
    "DeepseekOCRForCausalLM": (
        "deepseek_ocr.py: background checkpoint: raise: KeyError: "
        "'model.model.layers.0.self_attn.o_proj.weight' at srt/models/deepseek_ocr.py:1885"
    ),
    "DeepseekV3ForCausalLMNextN": (
        "deepseek_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn layer "
        "is supported at srt/models/deepseek_common/deepseek_weight_loader.py:567"
    ),
    "DeepseekV4ForCausalLMDSpark": (
        "deepseek_v4_dspark.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight"
    ),
    "DeepseekV4ForCausalLMNextN": (
        "deepseek_v4_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn "
        "layer is supported at srt/models/deepseek_v4.py:5258"
    ),
    "DeepseekVL2ForCausalLM": (
        "deepseek_vl2.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.q_proj.weight' at srt/models/deepseek_vl2.py:275"
    ),
    "Dots3NoteForCausalLM": (
        "dots3.py: background checkpoint: model.layers.0.input_layernorm.weight does not load "
        "into model.layers.0.input_layernorm.weight; stubs called: "
        "audio_tower.load_converted_state, language_model.load_weights, "
        "visual.load_converted_state"
    ),
    "Dots3NoteForCausalLMNextN": (
        "dots3_nextn.py: background checkpoint: raise: AssertionError: Dots3 requires "
        "q_lora_rank to enable fused_qkv_a_g_proj_with_mqa loading. at "
        "srt/models/dots3_common/modeling.py:1946"
    ),
    "DotsOCRForCausalLM": (
        "dots_ocr.py: background checkpoint: raise: AttributeError: 'Skeleton' object has no "
        "attribute 'load_weights' at srt/models/dots_ocr.py:165"
    ),
    "DotsVLMForCausalLM": (
        "dots_vlm.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights"
    ),
    "Eagle3DeepseekV2ForCausalLM": (
        "kimi_k25_eagle3.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; logged 'Eagle3 MLA: skipping "
        "unexpected weight model.layers.0.input_layernorm.weight' at "
        "srt/models/kimi_k25_eagle3.py:495"
    ),
    "EmbeddingGemmaModel": (
        "gemma3_causal.py: background checkpoint: raise: JSONDecodeError: Expecting value: "
        "line 1 column 1 (char 0) at srt/models/gemma3_causal.py:1064; stubs called: "
        "sglang.srt.utils.hf_transformers.common._resolve_local_or_cached_file"
    ),
    "Ernie4_5_MoeForCausalLMMTP": (
        "ernie4_eagle.py: background checkpoint: raise: KeyError: \"MTP layers 'mtp_*.<stub "
        "mtp_layer_id>.*' not found in weights.\" at srt/models/ernie4_eagle.py:184"
    ),
    "Ernie4_5_VLMoeForConditionalGeneration": (
        "ernie45_vl.py: background checkpoint: raise: ValueError: max() arg is an empty "
        "sequence at srt/models/ernie45_vl.py:756"
    ),
    "ExaoneMoEForCausalLMMTP": (
        "exaone_moe_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "FalconH1ForCausalLM": (
        "falcon_h1.py: background checkpoint: raise: KeyError: 'model.layers.0.o_proj.weight' "
        "at srt/models/falcon_h1.py:552"
    ),
    "GPT2LMHeadModel": (
        "gpt2.py: background checkpoint: raise: KeyError: "
        "'transformer.model.layers.0.self_attn.o_proj.weight' at srt/models/gpt2.py:270"
    ),
    "Gemma3nForConditionalGeneration": (
        "gemma3n_mm.py: background checkpoint: raise: KeyError: "
        "'layers.0.self_attn.o_proj.weight' at srt/models/gemma3n_mm.py:488"
    ),
    "Gemma4ForConditionalGeneration": (
        "gemma4_mm.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "Gemma4UnifiedForConditionalGeneration": (
        "gemma4_unified.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "GigaChat35ForCausalLMNextN": (
        "gigachat35_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "Glm4MoeForCausalLMNextN": (
        "glm4_moe_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn layer "
        "is supported at srt/models/glm4_moe.py:1080"
    ),
    "Glm4MoeLiteForCausalLMNextN": (
        "glm4_moe_lite_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn "
        "layer is supported at srt/models/glm4_moe_lite.py:843"
    ),
    "Glm5NextForConditionalGenerationNextN": (
        "glm5_next_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn layer "
        "is supported at srt/models/glm5_next.py:1684"
    ),
    "GlmMoeDsaForCausalLMNextN": (
        "glm4_moe.py: background checkpoint: raise: AssertionError: Only 1 nextn layer is "
        "supported at srt/models/deepseek_common/deepseek_weight_loader.py:567"
    ),
    "GlmOcrForConditionalGenerationNextN": (
        "glm_ocr_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn layer is "
        "supported at srt/models/glm_ocr.py:335"
    ),
    "HYV3ForCausalLMNextN": (
        "hunyuan_v3_nextn.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight"
    ),
    "HYV4ForCausalLMNextN": (
        "hunyuan_v4_nextn.py: background checkpoint: raise: AssertionError: Only 1 nextn layer "
        "is supported at srt/models/deepseek_common/deepseek_weight_loader.py:567"
    ),
    "IQuestQ1MTP": (
        "iquest_q1_mtp.py: background checkpoint: raise: ValueError: Unexpected MTP weight: "
        "model.embed_tokens.weight at srt/models/iquest_q1_mtp.py:199"
    ),
    "InklingForConditionalGeneration": (
        "inkling.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "InklingForConditionalGenerationMTP": (
        "inkling.py: background checkpoint: raise: RuntimeError: MTP draft (idx <stub "
        "draft_model_idx>): 34 unloaded weights (loaded 1/35); an unloaded RMSNorm stays "
        "all-ones and silently miscalibrates the draft. First 20: "
        "['model.embed_tokens.weight', 'model.layers.0.input_layernorm.weight', "
        "'model.layers.0.mlp.down_proj.input_scale', 'model.layers.0.mlp.down_proj.weight', "
        "'model.layers.0.mlp.down_proj.weight_scale', "
        "'model.layers.0.mlp.gate_up_proj.input_scale', "
        "'model.layers.0.mlp.gate_up_proj.weight', "
        "'model.layers.0.mlp.gate_up_proj.weight_scale', "
        "'model.layers.0.post_attention_layernorm.weight', "
        "'model.layers.0.self_attn.attn.k_scale', 'model.layers.0.self_attn.attn.v_scale', "
        "'model.layers.0.self_attn.o_proj.input_scale', "
        "'model.layers.0.self_attn.o_proj.weight', "
        "'model.layers.0.self_attn.o_proj.weight_scale', "
        "'model.layers.0.self_attn.qkv_proj.input_scale', "
        "'model.layers.0.self_attn.qkv_proj.weight', "
        "'model.layers.0.self_attn.qkv_proj.weight_scale', "
        "'model.layers.1.input_layernorm.weight', 'model.layers.1.mlp.down_proj.input_scale', "
        "'model.layers.1.mlp.down_proj.weight'] at srt/models/inkling.py:1987"
    ),
    "InternS2MobiusForConditionalGeneration": (
        "interns2_mobius.py: background checkpoint: raise: KeyError: 'Mobius destination is "
        "missing: model.layers.0.o_proj.weight (from model.layers.0.self_attn.o_proj.weight)' "
        "at srt/models/interns2_mobius.py:287"
    ),
    "InternS2PreviewForConditionalGeneration": (
        "interns2preview.py: background checkpoint: model.layers.0.self_attn.o_proj.weight "
        "does not load into model.layers.0.self_attn.o_proj.weight; stubs called: "
        "sglang.srt.utils.LazyValue"
    ),
    "InternVLChatModel": (
        "internvl.py: background checkpoint: raise: UnboundLocalError: cannot access local "
        "variable 'stacked_params_mapping' where it is not associated with a value at "
        "srt/models/internvl.py:737"
    ),
    "KimiK25ForConditionalGeneration": (
        "kimi_k25.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "KimiK3ForConditionalGeneration": (
        "kimi_k3.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "Lfm2VlForConditionalGeneration": (
        "lfm2_vl.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, vision_tower.load_weights"
    ),
    "LightOnOCRForConditionalGeneration": (
        "lightonocr.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, named_parameters__.keys, patch_merger.named_parameters, "
        "vision_encoder.named_parameters, vision_language_adapter.named_parameters, "
        "vision_projection_norm.named_parameters"
    ),
    "Llama4ForConditionalGeneration": (
        "mllama4.py: background checkpoint: raise: RuntimeError: shape '[0, 0, 2, 0]' is "
        "invalid for input of size 1 at srt/models/mllama4.py:617"
    ),
    "LlamaEmbeddingModel": (
        "llama_embedding.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.o_proj.weight' at srt/models/llama_embedding.py:78"
    ),
    "LlamaForCausalLMEagle": (
        "llama_eagle.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; logged 'Parameter "
        "model.model.layers.0.input_layernorm.weight not found in params_dict' at "
        "srt/models/llama.py:779"
    ),
    "LlavaForConditionalGeneration": (
        "llava.py: background checkpoint: raise: ValueError: Unexpected select feature: <stub "
        "vision_feature_select_strategy> at srt/models/llava.py:878"
    ),
    "LlavaLlamaForCausalLM": (
        "llava.py: background checkpoint: raise: TypeError: '_StubMeta' object is not an "
        "iterator at srt/models/llava.py:475; stubs called: language_model.parameters"
    ),
    "LlavaMistralForCausalLM": (
        "llava.py: background checkpoint: raise: TypeError: '_StubMeta' object is not an "
        "iterator at srt/models/llava.py:475; stubs called: language_model.parameters"
    ),
    "LlavaQwenForCausalLM": (
        "llava.py: background checkpoint: raise: TypeError: '_StubMeta' object is not an "
        "iterator at srt/models/llava.py:475; stubs called: language_model.parameters"
    ),
    "LlavaVidForCausalLM": (
        "llavavid.py: background checkpoint: raise: TypeError: '_StubMeta' object is not an "
        "iterator at srt/models/llavavid.py:231; stubs called: language_model.parameters"
    ),
    "LongcatFlashForCausalLMNextN": (
        "longcat_flash_nextn.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight"
    ),
    "MiMoMTP": (
        "mimo_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "MiMoV2MTP": (
        "mimo_v2_nextn.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "MindSporeForCausalLM": (
        "mindspore.py: background checkpoint: raise: AttributeError: 'Skeleton' object has no "
        "attribute 'load_weights' at srt/models/mindspore.py:215"
    ),
    "MiniCPM3ForCausalLM": (
        "minicpm3.py: background checkpoint: raise: AttributeError: 'Module' object has no "
        "attribute 'kv_b_proj' at srt/models/minicpm3.py:507"
    ),
    "MiniCPMV": (
        "minicpmv.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.o_proj.weight' at srt/models/minicpmv.py:1832; stubs "
        "called: minicpmv.named_parameters, named_parameters__.keys"
    ),
    "MiniCPMV4_6ForConditionalGeneration": (
        "minicpmv.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.o_proj.weight' at srt/models/minicpmv.py:1832; stubs "
        "called: minicpmv.named_parameters, named_parameters__.keys"
    ),
    "MiniCPMV4_7ForConditionalGeneration": (
        "minicpmv.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.o_proj.weight' at srt/models/minicpmv.py:1832; stubs "
        "called: minicpmv.named_parameters, named_parameters__.keys"
    ),
    "Mistral3ForConditionalGeneration": (
        "mistral.py: background checkpoint: raise: ValueError: Unexpected select feature: "
        "<stub vision_feature_select_strategy> at srt/models/llava.py:878"
    ),
    "MistralLarge3ForCausalLM": (
        "mistral_large_3.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; logged 'Unrecognized weight: "
        "model.layers.0.input_layernorm.weight. Skipping.' at "
        "srt/models/mistral_large_3.py:62; stubs called: regex.fullmatch"
    ),
    "MistralLarge3ForCausalLMEagle": (
        "mistral_large_3_eagle.py: background checkpoint: "
        "model.layers.0.input_layernorm.weight does not load into "
        "model.layers.0.input_layernorm.weight; logged 'Unrecognized weight: "
        "model.layers.0.input_layernorm.weight. Skipping.' at "
        "srt/models/mistral_large_3.py:62; stubs called: regex.fullmatch"
    ),
    "MistralModel": (
        "llama_embedding.py: background checkpoint: raise: KeyError: "
        "'model.layers.0.self_attn.o_proj.weight' at srt/models/llama_embedding.py:78"
    ),
    "NemotronHForCausalLMMTP": (
        "nemotron_h_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "NemotronH_Nano_Omni_Reasoning_V3": (
        "nano_nemotron_vl.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, mlp1.named_parameters, named_parameters__.keys"
    ),
    "NemotronH_Nano_VL_V2": (
        "nano_nemotron_vl.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, mlp1.named_parameters, named_parameters__.keys"
    ),
    "NemotronH_Omni_Reasoning_V3": (
        "nano_nemotron_vl.py: background checkpoint: raise: ValueError: Unexpected Nemotron-H "
        "Omni weight: model.embed_tokens.weight at srt/models/nano_nemotron_vl.py:464; stubs "
        "called: language_model.load_weights, mlp1.named_parameters, named_parameters__.keys"
    ),
    "Phi4MMForCausalLM": (
        "phi4mm.py: background checkpoint: model.layers.0.input_layernorm.weight does not load "
        "into model.layers.0.input_layernorm.weight; logged 'Warning: "
        "language_model.model.layers.0.input_layernorm.weight not found in model parameters' "
        "at srt/models/phi4mm.py:536"
    ),
    "PixtralForConditionalGeneration": (
        "pixtral.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights, named_parameters__.keys, "
        "vision_encoder.named_parameters, vision_language_adapter.named_parameters"
    ),
    "Qwen2ForCausalLMEagle": (
        "qwen2_eagle.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; logged 'Parameter "
        "model.model.layers.0.input_layernorm.weight not found in params_dict' at "
        "srt/models/qwen2.py:719"
    ),
    "Qwen3MoeForCausalLMMTP": (
        "qwen3_moe_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "Qwen3NextForCausalLM": (
        "qwen3_next.py: background checkpoint: raise: AssertionError: Expected 1.0, got 0.0 in "
        "skipped model.layers.0.q_proj.weight_scale at srt/models/qwen3_next.py:1266"
    ),
    "Qwen3NextForCausalLMMTP": (
        "qwen3_next_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "Qwen3_5ForCausalLM": (
        "qwen3_5_text.py: background checkpoint: raise: AttributeError: 'Skeleton' object has "
        "no attribute 'load_weights' at srt/models/qwen3_5_text.py:271"
    ),
    "Qwen3_5ForCausalLMMTP": (
        "qwen3_5_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "Qwen3_5ForConditionalGeneration": (
        "qwen3_5.py: background checkpoint: model.layers.0.self_attn.o_proj.weight does not "
        "load into model.layers.0.self_attn.o_proj.weight"
    ),
    "Qwen3_5MoeForCausalLM": (
        "qwen3_5_text.py: background checkpoint: raise: AttributeError: 'Skeleton' object has "
        "no attribute 'load_weights' at srt/models/qwen3_5_text.py:271"
    ),
    "Qwen3_5MoeForConditionalGeneration": (
        "qwen3_5.py: background checkpoint: model.layers.0.self_attn.o_proj.weight does not "
        "load into model.layers.0.self_attn.o_proj.weight; stubs called: "
        "sglang.srt.utils.LazyValue"
    ),
    "Qwen4ExpForCausalLMMTP": (
        "qwen4_exp_mtp.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight"
    ),
    "Qwen4ExpForConditionalGeneration": (
        "qwen4_exp.py: background checkpoint: raise: AssertionError: Expected 1.0, got 0.0 in "
        "skipped model.layers.0.q_proj.weight_scale at srt/models/qwen4_exp.py:2643"
    ),
    "SDARMoeForCausalLM": (
        "sdar_moe.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight"
    ),
    "Step3p5ForCausalLM": (
        "step3p5.py: background checkpoint: raise: AssertionError: Some parameters are not "
        "loaded: {'model.layers.0.self_attn.attn.k_scale', "
        "'model.layers.0.self_attn.attn.v_scale', 'model.layers.1.self_attn.attn.k_scale', "
        "'model.layers.1.self_attn.attn.v_scale'} at srt/models/step3p5.py:938"
    ),
    "Step3p5MTP": (
        "step3p5_mtp.py: background checkpoint: raise: AssertionError at "
        "srt/models/step3p5_mtp.py:279"
    ),
    "Step3p7ForConditionalGeneration": (
        "step3p7.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights"
    ),
    "StepVLForConditionalGeneration": (
        "step3_vl_10b.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: "
        "language_model.load_weights"
    ),
    "TorchNativeLlamaForCausalLM": (
        "torch_native_llama.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight"
    ),
    "TorchNativePhi3ForCausalLM": (
        "torch_native_llama.py: background checkpoint: model.layers.0.input_layernorm.weight "
        "does not load into model.layers.0.input_layernorm.weight"
    ),
    "TransformersEmbeddingModel": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersForCausalLM": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersForSequenceClassification": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMoEEmbeddingModel": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMoEForCausalLM": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMoEForSequenceClassification": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalEmbeddingModel": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalForCausalLM": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalForSequenceClassification": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalMoEEmbeddingModel": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalMoEForCausalLM": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "TransformersMultiModalMoEForSequenceClassification": (
        "transformers.py: background checkpoint: model.layers.0.input_layernorm.weight does "
        "not load into model.layers.0.input_layernorm.weight; stubs called: weight_mapper.apply"
    ),
    "UnlimitedOCRForCausalLM": (
        "unlimited_ocr.py: background checkpoint: raise: KeyError: "
        "'model.model.layers.0.self_attn.o_proj.weight' at srt/models/unlimited_ocr.py:396"
    ),
    "VoxtralForConditionalGeneration": (
        "voxtral.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: "
        "audio_tower.named_parameters, language_model.load_weights, "
        "multi_modal_projector.named_parameters, named_parameters__.keys"
    ),
    "WhisperForConditionalGeneration": (
        "whisper.py: background checkpoint: raise: KeyError: "
        "'model.decoder.embed_tokens.weight' at srt/models/whisper.py:397"
    ),
    "XLMRobertaForSequenceClassification": (
        "roberta.py: background checkpoint: model.layers.0.input_layernorm.weight does not "
        "load into model.layers.0.input_layernorm.weight; stubs called: roberta.load_weights"
    ),
    "XLMRobertaModel": (
        "roberta.py: background checkpoint: raise: TypeError: expected str, bytes or "
        "os.PathLike object, not _StubMeta at srt/models/roberta.py:277; stubs called: "
        "roberta.load_weights, sglang.srt.utils.hf_transformers_utils.download_from_hf"
    ),
    "YiVLForCausalLM": (
        "yivl.py: background checkpoint: raise: TypeError: '_StubMeta' object is not an "
        "iterator at srt/models/yivl.py:43; stubs called: language_model.parameters"
    ),
}
