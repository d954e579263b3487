"""Every architecture of vLLM 0.33.0's model registry, as kvscale's rules read it: the
KV-scale holders its modules build, the loaders a checkpoint name goes through, and the model's
own name mappers (``kvscale.engine.vllm.loaders`` defines the types).

GENERATED from tests/parity/vllm_arch_classes.json by tests/parity/render_vllm_arch_classes.py;
do not edit (tests/parity/test_vllm_arch_classes.py re-renders it). Static evidence, file and
line per fact, is in the JSON; the architectures marked ``executed=True`` are confirmed by vLLM's
own loaders (tests/parity/vllm_arch_expected.json).
"""

from __future__ import annotations

from kvscale.engine.vllm.loaders import ArchClass, Loader, WeightsMapper

VLLM_VERSION = "0.33.0"

ARCH_CLASSES: dict[str, ArchClass] = {
    "AXK1ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/AXK1.py:1061",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="AXK1ForCausalLM",
            defined_in="vllm/model_executor/models/AXK1.py:1168 (AXK1ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="AXK1Model",
            defined_in="vllm/model_executor/models/AXK1.py:814 (AXK1Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "AfmoeForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/afmoe.py:469",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="AfmoeForCausalLM",
            defined_in="vllm/model_executor/models/afmoe.py:586 (AfmoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
                suffix=((".router.gate.weight", ".gate.weight"),),
            ),
        ),
    ),
    "AliceAIForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/alice_ai.py:579",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="AliceAIForCausalLM",
            defined_in="vllm/model_executor/models/alice_ai.py:709 (AliceAIForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="AliceAIModel",
            defined_in="vllm/model_executor/models/alice_ai.py:567 (AliceAIModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=((".linear_attn.a_log_bias", ".linear_attn.A_log"),),
                stacked=(
                    (".linear_attn.q_proj", ".linear_attn.in_proj_qkvgfab"),
                    (".linear_attn.k_proj", ".linear_attn.in_proj_qkvgfab"),
                    (".linear_attn.v_proj", ".linear_attn.in_proj_qkvgfab"),
                    (".linear_attn.b_proj", ".linear_attn.in_proj_qkvgfab"),
                    (".linear_attn.f_a_proj", ".linear_attn.in_proj_qkvgfab"),
                    (".self_attn.q_proj", ".self_attn.qkv_proj"),
                    (".self_attn.k_proj", ".self_attn.qkv_proj"),
                    (".self_attn.v_proj", ".self_attn.qkv_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                ),
            ),
        ),
    ),
    "Alpamayo2Super": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/alpamayo2_super.py:69",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Alpamayo2SuperForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_vl.py:3227 (Qwen3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "ApertusForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/apertus.py:403",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ApertusForCausalLM",
            defined_in="vllm/model_executor/models/apertus.py:492 (ApertusForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "ArceeForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "AriaForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/aria.py:375",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="AriaForConditionalGeneration",
            defined_in="vllm/model_executor/models/aria.py:529 (AriaForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("language_model.model", "language_model"),
                    ("language_model.lm_head", "lm_head"),
                ),
                suffix=(("router.weight", "router_weight"),),
            ),
        ),
    ),
    "AudioFlamingo3ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/audioflamingo3.py:488",
        top=Loader(
            owner="AudioFlamingo3ForConditionalGeneration",
            defined_in="vllm/model_executor/models/audioflamingo3.py:676 (AudioFlamingo3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "BagelForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/bagel.py:318",
        top=Loader(
            owner="BagelForConditionalGeneration",
            defined_in="vllm/model_executor/models/bagel.py:526 (BagelForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("vit_pos_embed.pos_embed", None),)),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "BailingMoeForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/bailing_moe.py:486",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BailingMoeForCausalLM",
            defined_in="vllm/model_executor/models/bailing_moe.py:563 (BailingMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BailingMoeModel",
            defined_in="vllm/model_executor/models/bailing_moe.py:481 (BailingMoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                )
            ),
        ),
    ),
    "BailingMoeV25MTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/bailing_moe_mtp.py:202",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="BailingMoeV25MTPModel",
            defined_in="vllm/model_executor/models/bailing_moe_mtp.py:254 (BailingMoeV25MTPModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "BailingMoeV2ForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/bailing_moe.py:568",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BailingMoeV2ForCausalLM",
            defined_in="vllm/model_executor/models/bailing_moe.py:563 (BailingMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BailingMoeModel",
            defined_in="vllm/model_executor/models/bailing_moe.py:481 (BailingMoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                )
            ),
        ),
    ),
    "BailingMoeV2_5ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/bailing_moe_linear.py:693",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="BailingMoeV25ForCausalLM",
            defined_in="vllm/model_executor/models/bailing_moe_linear.py:801 (BailingMoeV25ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BailingMoeV25Model",
            defined_in="vllm/model_executor/models/bailing_moe_linear.py:570 (BailingMoeV25Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "BailingMoeV3ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/bailing_moe_v3.py:1414",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="BailingMoeV3ForCausalLM",
            defined_in="vllm/model_executor/models/bailing_moe_v3.py:1498 (BailingMoeV3ForCausalLM.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
            mapper=WeightsMapper(
                substr=((".attention.", ".self_attn."),), prefix=(("attention.", "self_attn."),)
            ),
        ),
        executed=True,
    ),
    "BailingMoeV3MTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/bailing_moe_v3_mtp.py:231",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="BailingMoeV3MTPModel",
            defined_in="vllm/model_executor/models/bailing_moe_v3_mtp.py:310 (BailingMoeV3MTPModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
            mapper=WeightsMapper(
                substr=((".attention.", ".self_attn."),), prefix=(("attention.", "self_attn."),)
            ),
        ),
    ),
    "BailingMoeV3VLForConditionalGeneration": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/bailing_moe_v3_vl.py:287",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="BailingMoeV3VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/bailing_moe_v3_vl.py:513 (BailingMoeV3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=((".attention.", ".self_attn."),),
                prefix=(
                    ("attention.", "self_attn."),
                    ("model.visual", "visual"),
                    ("model.linear_proj", "linear_proj"),
                    ("linear_proj.0", "linear_proj.linear_fc1"),
                    ("linear_proj.2", "linear_proj.linear_fc2"),
                    ("lm_head", "language_model.lm_head"),
                    ("model.", "language_model.model."),
                ),
            ),
        ),
    ),
    "BeamForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/models/beam/nvidia/model.py:340",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BeamForCausalLM",
            defined_in="vllm/models/beam/nvidia/model.py:472 (BeamForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BeamModel",
            defined_in="vllm/models/beam/nvidia/model.py:335 (BeamModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=((".self_attn.gate_proj", ".self_attn.output_gate_proj"),),
                stacked=(
                    (".self_attn.q_proj", ".self_attn.qkv_proj"),
                    (".self_attn.k_proj", ".self_attn.qkv_proj"),
                    (".self_attn.v_proj", ".self_attn.qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                ),
            ),
        ),
    ),
    "BeeForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/bee.py:137",
        top=Loader(
            owner="BeeForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_onevision.py:910 (LlavaOnevisionForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.image_newline", "image_newline"),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "BertForMaskedLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bert.py:930",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BertForMaskedLM",
            defined_in="vllm/model_executor/models/bert.py:987 (BertForMaskedLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("cls.seq_relationship", None),
                    ("cls.predictions.decoder.bias", None),
                    ("cls.predictions.transform.LayerNorm.gamma", "mlm_head.layer_norm.weight"),
                    ("cls.predictions.transform.LayerNorm.beta", "mlm_head.layer_norm.bias"),
                    ("cls.predictions.transform.LayerNorm", "mlm_head.layer_norm"),
                    ("cls.predictions.transform.dense", "mlm_head.dense"),
                    ("cls.predictions.decoder", "mlm_head.decoder"),
                    ("cls.predictions.bias", "mlm_head.decoder.bias"),
                )
            ),
        ),
    ),
    "BertForSequenceClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bert.py:790",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BertForSequenceClassification",
            defined_in="vllm/model_executor/models/bert.py:839 (BertForSequenceClassification.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "BertForTokenClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bert.py:867",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BertForTokenClassification",
            defined_in="vllm/model_executor/models/bert.py:899 (BertForTokenClassification.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "BertModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/bert.py:452",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BertEmbeddingModel",
            defined_in="vllm/model_executor/models/bert.py:508 (BertEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "BertSpladeSparseEmbeddingModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bert.py:684",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BertSpladeSparseEmbeddingModel",
            defined_in="vllm/model_executor/models/bert.py:738 (BertSpladeSparseEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "BgeM3EmbeddingModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/roberta.py:187",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BgeM3EmbeddingModel",
            defined_in="vllm/model_executor/models/roberta.py:153 (RobertaEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "Blip2ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/blip2.py:502",
        top=Loader(
            owner="Blip2ForConditionalGeneration",
            defined_in="vllm/model_executor/models/blip2.py:678 (Blip2ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "BloomForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bloom.py:317",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="BloomForCausalLM",
            defined_in="vllm/model_executor/models/bloom.py:362 (BloomForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "CLIPModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/clip.py:778",
        top=Loader(
            owner="CLIPEmbeddingModel",
            defined_in="vllm/model_executor/models/clip.py:995 (CLIPEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=((".position_ids", None),)),
        ),
    ),
    "ChatGLMForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/chatglm.py:432",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ChatGLMForCausalLM",
            defined_in="vllm/model_executor/models/chatglm.py:427 (ChatGLMBaseModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "ChatGLMModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/chatglm.py:432",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ChatGLMForCausalLM",
            defined_in="vllm/model_executor/models/chatglm.py:427 (ChatGLMBaseModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "ClefFlashForJointSchema": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/clef_flash.py:24",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ClefFlashForJointSchema",
            defined_in="vllm/model_executor/models/qwen3_5.py:604 (Qwen3_5ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("mtp.", None),
                )
            ),
        ),
    ),
    "ClefOmniForJointSchema": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/clef_omni.py:81",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ClefOmniForJointSchema",
            defined_in="vllm/model_executor/models/qwen3_omni_moe_thinker.py:2000 (Qwen3OmniMoeThinkerForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("talker.", None),
                    ("code2wav.", None),
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "Cohere2ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/commandr.py:403",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="CohereForCausalLM",
            defined_in="vllm/model_executor/models/commandr.py:474 (CohereForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("_quantizer.", None),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(("lm_head", None),),
            ),
        ),
    ),
    "Cohere2MoeForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/cohere2_moe.py:695",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Cohere2MoeForCausalLM",
            defined_in="vllm/model_executor/models/cohere2_moe.py:764 (Cohere2MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
                prefix=(("lm_head.", None),),
            ),
        ),
    ),
    "Cohere2VisionForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/cohere2_vision.py:314",
        top=Loader(
            owner="Cohere2VisionForConditionalGeneration",
            defined_in="vllm/model_executor/models/cohere2_vision.py:366 (Cohere2VisionForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "CohereAsrForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/cohere_asr.py:2044",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="CohereAsrForConditionalGeneration",
            defined_in="vllm/model_executor/models/cohere_asr.py:2310 (CohereAsrForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".fc1.", ".mlp.fc1."),
                    (".fc2.", ".mlp.fc2."),
                    ("model.conv.batch_norm.num_batches_tracked", None),
                ),
                prefix=(
                    ("model.preprocessor.featurizer.fb", None),
                    ("model.preprocessor.featurizer.window", None),
                ),
            ),
        ),
        model=Loader(
            owner="CohereASRModel",
            defined_in="vllm/model_executor/models/cohere_asr.py:1813 (CohereASRModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "CohereCompassForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/cohere_compass.py:1301",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="CohereCompassForConditionalGeneration",
            defined_in="vllm/model_executor/models/cohere_compass.py:2077 (CohereCompassForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "CohereForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/commandr.py:403",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="CohereForCausalLM",
            defined_in="vllm/model_executor/models/commandr.py:474 (CohereForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("_quantizer.", None),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(("lm_head", None),),
            ),
        ),
    ),
    "ColBERTJinaRobertaModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colbert.py:314",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColBERTJinaRobertaModel",
            defined_in="vllm/model_executor/models/colbert.py:359 (ColBERTJinaRobertaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("roberta.", "model."),
                    ("model.pooler.", None),
                )
            ),
        ),
        model=Loader(
            owner="JinaRobertaModel",
            defined_in="vllm/model_executor/models/bert_with_rope.py:675 (JinaRobertaModel.load_weights)",
            auto=False,
        ),
    ),
    "ColBERTLfm2Model": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/colbert.py:378",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColBERTLfm2Model",
            defined_in="vllm/model_executor/models/colbert.py:443 (ColBERTLfm2Model.load_weights)",
            auto=False,
        ),
        model=Loader(
            owner="Lfm2Model",
            defined_in="vllm/model_executor/models/lfm2.py:495 (Lfm2Model.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=((".conv.", ".short_conv."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".w1", ".w13"),
                    (".w3", ".w13"),
                ),
            ),
        ),
    ),
    "ColBERTModernBertModel": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/colbert.py:238",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColBERTModernBertModel",
            defined_in="vllm/model_executor/models/colbert.py:285 (ColBERTModernBertModel.load_weights)",
            auto=False,
        ),
        model=Loader(
            owner="ModernBertModel",
            defined_in="vllm/model_executor/models/modernbert.py:281 (ModernBertModel.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.layers.", "encoder_layer.layers."),
                    ("layers.", "encoder_layer.layers."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "ColModernVBertForRetrieval": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/colmodernvbert.py:243",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColModernVBertForRetrieval",
            defined_in="vllm/model_executor/models/colmodernvbert.py:371 (ColModernVBertForRetrieval.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.text_model.layers.", "text_layers."),
                    ("model.text_model.embeddings.", "text_embeddings."),
                    ("model.text_model.final_norm.", "text_final_norm."),
                    ("model.connector.modality_projection.", "connector.proj."),
                    ("model.custom_text_proj.", "custom_text_proj."),
                    ("model.vision_model.vision_model.", "vision_model.vision_model."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "ColPaliForRetrieval": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/colpali.py:77",
        top=Loader(
            owner="ColPaliModel",
            defined_in="vllm/model_executor/models/colpali.py:178 (ColPaliModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("vlm.vision_tower.", "vision_tower."),
                    ("vlm.language_model.", "language_model."),
                    ("vlm.multi_modal_projector.", "multi_modal_projector."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.language_model.", "language_model."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "ColQwen3": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colqwen3.py:115",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColQwen3Model",
            defined_in="vllm/model_executor/models/colqwen3.py:247 (ColQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("vlm.model.visual.", "visual."),
                    ("vlm.lm_head.", "language_model.lm_head."),
                    ("vlm.model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.model.", "language_model.model."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "ColQwen3_5": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colqwen3_5.py:112",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColQwen3_5Model",
            defined_in="vllm/model_executor/models/colqwen3_5.py:219 (ColQwen3_5Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.", "language_model.model."),
                    ("mtp.", None),
                )
            ),
        ),
    ),
    "ColUltraVBertForRetrieval": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colultravbert.py:439",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColUltraVBertForRetrieval",
            defined_in="vllm/model_executor/models/colultravbert.py:521 (ColUltraVBertForRetrieval.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("vision_model.vision_model.", "vision_model.vision_model."),
                    ("vision_model.", "vision_model.vision_model."),
                )
            ),
        ),
    ),
    "Cosmos3EdgeForConditionalGeneration": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/cosmos3_edge.py:573",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Cosmos3EdgeForConditionalGeneration",
            defined_in="vllm/model_executor/models/cosmos3_edge.py:829 (Cosmos3EdgeForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Cosmos3ForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/cosmos3.py:27",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Cosmos3ForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_vl.py:3227 (Qwen3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "CwmForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "D3ForSequenceClassification": ArchClass(
        kind="no-kv-holder", resolved="vllm/model_executor/models/d3.py:65"
    ),
    "DFlash2BeamDraftModel": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/models/beam/nvidia/dflash2.py:542",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlash2BeamForCausalLM",
            defined_in="vllm/models/beam/nvidia/dflash2.py:619 (DFlash2BeamForCausalLM.load_weights)",
            auto=False,
        ),
        model=Loader(
            owner="DFlash2BeamModel",
            defined_in="vllm/models/beam/nvidia/dflash2.py:537 (DFlash2BeamModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "DFlash2DraftModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/qwen3_dflash2.py:395",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlash2Qwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:851 (DFlashQwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DFlash2Qwen3Model",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "DFlashDraftModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/qwen3_dflash.py:736",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlashQwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:851 (DFlashQwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DFlashQwen3Model",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "DFlashLagunaForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/laguna_dflash.py:238",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlashLagunaForCausalLM",
            defined_in="vllm/model_executor/models/laguna_dflash.py:323 (DFlashLagunaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DFlashLagunaModel",
            defined_in="vllm/model_executor/models/laguna_dflash.py:220 (DFlashLagunaModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "DFlashMuseGlimmerAssistantModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/qwen3_dflash.py:736",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlashQwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:851 (DFlashQwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DFlashQwen3Model",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "DFlashQwen3XPressModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_xpress.py:273",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3XPressForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_xpress.py:313 (Qwen3XPressForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3XPressModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "DSparkDraftModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/deepseek_v4/nvidia/dspark.py:348",
        top=Loader(
            owner="DSparkDeepseekV4ForCausalLM",
            defined_in="vllm/models/deepseek_v4/nvidia/dspark.py:444 (DSparkDeepseekV4ForCausalLM.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "DSparkV41DraftModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/deepseek_v41/nvidia/dspark.py:276",
        top=Loader(
            owner="DSparkDeepseekV4ForCausalLM",
            defined_in="vllm/models/deepseek_v41/nvidia/dspark.py:365 (DSparkDeepseekV4ForCausalLM.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "DbrxForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/dbrx.py:426",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DbrxForCausalLM",
            defined_in="vllm/model_executor/models/dbrx.py:472 (DbrxForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "DeciLMForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/nemotron_nas.py:315",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DeciLMForCausalLM",
            defined_in="vllm/model_executor/models/nemotron_nas.py:414 (DeciLMForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "DeepSeekMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_mtp.py:240",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepSeekMTP",
            defined_in="vllm/model_executor/models/deepseek_mtp.py:304 (DeepSeekMTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "DeepSeekV4MTPModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/deepseek_v4/nvidia/mtp.py:303",
        top=Loader(
            owner="DeepSeekV4MTP",
            defined_in="vllm/models/deepseek_v4/nvidia/mtp.py:359 (DeepSeekV4MTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "DeepseekForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_v2.py:2001",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepseekForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1594 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "DeepseekOCR2ForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/deepseek_ocr2.py:234",
        top=Loader(
            owner="DeepseekOCR2ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_ocr2.py:435 (DeepseekOCR2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("model.layers.", "language_model.model.layers."),
                    ("model.norm.", "language_model.model.norm."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "DeepseekOCRForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/deepseek_ocr.py:362",
        top=Loader(
            owner="DeepseekOCRForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_ocr.py:616 (DeepseekOCRForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("model.layers.", "language_model.model.layers."),
                    ("model.norm.", "language_model.model.norm."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "DeepseekV2ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_v2.py:1872",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepseekV2ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1594 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "DeepseekV32ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/models/deepseek_v32/nvidia/model.py:432",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepseekV32ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV32Model",
            defined_in="vllm/models/deepseek_v32/nvidia/model.py:326 (DeepseekV32Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "DeepseekV32MTPModel": ArchClass(
        kind="mla",
        resolved="vllm/models/deepseek_v32/nvidia/mtp.py:274",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="DeepseekV32MTP",
            defined_in="vllm/models/deepseek_v32/nvidia/mtp.py:365 (DeepseekV32MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "DeepseekV3BidirectionalModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_v2.py:2005",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepseekV3ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1594 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "DeepseekV3ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_v2.py:2005",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="DeepseekV3ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1594 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "DeepseekV41ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/deepseek_v41/nvidia/vl_model.py:118",
        top=Loader(
            owner="DeepseekV41ForCausalLM",
            defined_in="vllm/models/deepseek_v41/nvidia/vl_model.py:317 (DeepseekV41ForCausalLM.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "DeepseekV4ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/deepseek_v4/nvidia/model.py:1309",
        top=Loader(
            owner="DeepseekV4ForCausalLM",
            defined_in="vllm/models/deepseek_v4/nvidia/model.py:1402 (DeepseekV4ForCausalLM.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DeepseekV4Model",
            defined_in="vllm/models/deepseek_v4/nvidia/model.py:1054 (DeepseekV4Model.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "DeepseekV4ForConditionalGeneration": ArchClass(
        kind="dynamic",
        resolved="vllm/models/deepseek_v4/common/vl_model.py:105",
        top=Loader(
            owner="DeepseekV4ForConditionalGeneration",
            defined_in="vllm/models/deepseek_v4/common/vl_model.py:347 (DeepseekV4ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        language_model="DeepseekV4ForCausalLM",
    ),
    "DeepseekVLV2ForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/deepseek_vl2.py:345",
        top=Loader(
            owner="DeepseekVLV2ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_vl2.py:830 (DeepseekVLV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("language.", "language_model."),)),
        ),
    ),
    "DiffusionGemmaForBlockDiffusion": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/diffusion_gemma.py:139",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DiffusionGemmaForConditionalGeneration",
            defined_in="vllm/model_executor/models/diffusion_gemma.py:341 (DiffusionGemmaForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.decoder.self_conditioning.", "self_conditioning."),
                    ("model.decoder.", "model."),
                    ("model.encoder.language_model.", "model."),
                    ("model.encoder.vision_tower.", "vision_tower."),
                    ("model.encoder.embed_vision.", "embed_vision."),
                )
            ),
        ),
        model=Loader(
            owner="Gemma4Model",
            defined_in="vllm/model_executor/models/gemma4.py:1397 (Gemma4Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "DomynEdgeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/domyn_edge.py:226",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DomynEdgeForCausalLM",
            defined_in="vllm/model_executor/models/domyn_edge.py:289 (DomynEdgeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DomynEdgeModel",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "DoryForCausalLM": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/dory.py:283",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DoryForCausalLM",
            defined_in="vllm/model_executor/models/dory.py:332 (DoryForCausalLM.load_weights)",
            auto=False,
        ),
    ),
    "Dots3NoteForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/models/dots3_note/nvidia/multimodal.py:65",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="Dots3NoteForCausalLM",
            defined_in="vllm/models/dots3_note/nvidia/multimodal.py:315 (Dots3NoteForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                    ("mtp.", "language_model.mtp."),
                    ("vision_encoder.", "visual."),
                    ("audio_encoder.", "audio_tower."),
                )
            ),
            mapper_unresolved=True,
        ),
    ),
    "Dots3NoteMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/models/dots3_note/nvidia/mtp.py:157",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="Dots3NoteMTP",
            defined_in="vllm/models/deepseek_v32/nvidia/mtp.py:365 (DeepseekV32MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "DotsOCRForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/dots_ocr.py:586",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DotsOCRForCausalLM",
            defined_in="vllm/model_executor/models/dots_ocr.py:760 (DotsOCRForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".attn.qkv_proj.", ".attn.qkv."),
                    (".attn.out_proj.", ".attn.proj."),
                ),
                stacked=(
                    (".fc1.", ".fc13."),
                    (".fc3.", ".fc13."),
                ),
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                ),
            ),
        ),
    ),
    "Eagle2_5_VLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/eagle2_5_vl.py:125",
        top=Loader(
            owner="Eagle2_5_VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/eagle2_5_vl.py:403 (Eagle2_5_VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "Eagle3DeepseekV2ForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/deepseek_eagle3.py:274",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="Eagle3DeepseekV2ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_eagle3.py:370 (Eagle3DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DeepseekV2Eagle3Model",
            defined_in="vllm/model_executor/models/deepseek_eagle3.py:269 (DeepseekV2Eagle3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                    (".q_a_proj", ".fused_qkv_a_proj"),
                    (".kv_a_proj_with_mqa", ".fused_qkv_a_proj"),
                ),
            ),
        ),
    ),
    "Eagle3DeepseekV3ForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/deepseek_eagle3.py:274",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="Eagle3DeepseekV2ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_eagle3.py:370 (Eagle3DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DeepseekV2Eagle3Model",
            defined_in="vllm/model_executor/models/deepseek_eagle3.py:269 (DeepseekV2Eagle3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                    (".q_a_proj", ".fused_qkv_a_proj"),
                    (".kv_a_proj_with_mqa", ".fused_qkv_a_proj"),
                ),
            ),
        ),
    ),
    "Eagle3LlamaForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Eagle3MiniMaxM2ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Eagle3Qwen2_5vlForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Eagle3Qwen3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_eagle3.py:285",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Eagle3Qwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_eagle3.py:398 (Eagle3Qwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="Qwen3Eagle3Model",
            defined_in="vllm/model_executor/models/qwen3_eagle3.py:280 (Qwen3Eagle3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Eagle3Qwen3vlForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "EagleCohereForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/cohere_eagle.py:139",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EagleCohereForCausalLM",
            defined_in="vllm/model_executor/models/cohere_eagle.py:183 (EagleCohereForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("_quantizer.", None),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(("lm_head", None),),
            ),
            mapper_unresolved=True,
        ),
    ),
    "EagleDeepSeekMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/deepseek_eagle.py:194",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="EagleDeepseekV3ForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_eagle.py:248 (EagleDeepseekV3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_eagle.py:100 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "EagleLlama4ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama4_eagle.py:176",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EagleLlama4ForCausalLM",
            defined_in="vllm/model_executor/models/llama4_eagle.py:237 (EagleLlama4ForCausalLM.load_weights)",
            auto=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama4_eagle.py:146 (LlamaModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(("model.", ""),),
            ),
        ),
    ),
    "EagleLlamaForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama_eagle.py:146",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EagleLlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle.py:187 (EagleLlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle.py:141 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "EagleMiniCPMForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/minicpm_eagle.py:305",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EagleMiniCPMForCausalLM",
            defined_in="vllm/model_executor/models/minicpm_eagle.py:399 (EagleMiniCPMForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="EagleMiniCPMModel",
            defined_in="vllm/model_executor/models/minicpm_eagle.py:234 (EagleMiniCPMModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "EagleMistralForCausalLM": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/mistral_eagle.py:132",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EagleMistralForCausalLM",
            defined_in="vllm/model_executor/models/mistral_eagle.py:189 (EagleMistralForCausalLM.load_weights)",
            auto=False,
        ),
    ),
    "EagleMistralLarge3ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/mistral_large_3_eagle.py:129",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="EagleMistralLarge3ForCausalLM",
            defined_in="vllm/model_executor/models/mistral_large_3_eagle.py:186 (EagleMistralLarge3ForCausalLM.load_weights)",
            auto=False,
        ),
    ),
    "EmbeddingGemma2Model": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/embedding_gemma2.py:982",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="EmbeddingGemma2Model",
            defined_in="vllm/model_executor/models/embedding_gemma2.py:1120 (EmbeddingGemma2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Emu3ForConditionalGeneration": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:149",
        top=Loader(
            owner="TransformersMultiModalForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Ernie4_5ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/ernie45.py:42",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Ernie4_5ForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Ernie4_5_MoeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/ernie45_moe.py:510",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Ernie4_5_MoeForCausalLM",
            defined_in="vllm/model_executor/models/ernie45_moe.py:631 (Ernie4_5_MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Ernie4_5_MoeModel",
            defined_in="vllm/model_executor/models/ernie45_moe.py:503 (Ernie4_5_MoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(("mtp", None),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
            ),
        ),
    ),
    "Ernie4_5_VLMoeForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/ernie45_vl.py:1346",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Ernie4_5_VLMoeForConditionalGeneration",
            defined_in="vllm/model_executor/models/ernie45_vl.py:1906 (Ernie4_5_VLMoeForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("spatial_linear.0.", "spatial_linear1."),
                    ("spatial_linear.2.", "spatial_linear2."),
                    ("spatial_linear.3.", "spatial_norm."),
                    ("temporal_linear.0.", "temporal_linear1."),
                    ("temporal_linear.2.", "temporal_linear2."),
                    ("temporal_linear.3.", "temporal_norm."),
                ),
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                    ("language_model.model.resampler_model.", "resampler_model."),
                ),
            ),
        ),
    ),
    "ErnieMTPModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/ernie_mtp.py:143",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ErnieMTP",
            defined_in="vllm/model_executor/models/ernie_mtp.py:207 (ErnieMTP.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "Exaone4ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/exaone4.py:371",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Exaone4ForCausalLM",
            defined_in="vllm/model_executor/models/exaone4.py:448 (Exaone4ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Exaone4_5_ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/exaone4_5.py:326",
        top=Loader(
            owner="Exaone4_5_ForConditionalGeneration",
            defined_in="vllm/model_executor/models/exaone4_5.py:370 (Exaone4_5_ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                    ("mtp.", None),
                )
            ),
        ),
    ),
    "Exaone4_5_MTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/exaone4_5_mtp.py:136",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Exaone4_5_MTP",
            defined_in="vllm/model_executor/models/exaone4_5_mtp.py:187 (Exaone4_5_MTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Exaone4_5MultiTokenPredictor",
            defined_in="vllm/model_executor/models/exaone_moe_mtp.py:129 (ExaoneMoeMultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                )
            ),
        ),
    ),
    "ExaoneForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/exaone.py:370",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ExaoneForCausalLM",
            defined_in="vllm/model_executor/models/exaone.py:448 (ExaoneForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".c_fc_0", ".gate_up_proj"),
                    (".c_fc_1", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "ExaoneMoEForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/exaone_moe.py:462",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ExaoneMoeForCausalLM",
            defined_in="vllm/model_executor/models/exaone_moe.py:551 (ExaoneMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
                prefix=(("mtp.", None),),
            ),
        ),
    ),
    "ExaoneMoeForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/exaone_moe.py:462",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ExaoneMoeForCausalLM",
            defined_in="vllm/model_executor/models/exaone_moe.py:551 (ExaoneMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
                prefix=(("mtp.", None),),
            ),
        ),
    ),
    "ExaoneMoeMTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/exaone_moe_mtp.py:135",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ExaoneMoeMTP",
            defined_in="vllm/model_executor/models/exaone_moe_mtp.py:190 (ExaoneMoeMTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="ExaoneMoeMultiTokenPredictor",
            defined_in="vllm/model_executor/models/exaone_moe_mtp.py:129 (ExaoneMoeMultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                )
            ),
        ),
    ),
    "ExtractHiddenStatesModel": ArchClass(
        kind="fixed-scales",
        resolved="vllm/model_executor/models/extract_hidden_states.py:319",
        holders=frozenset(["fixed"]),
        top=Loader(
            owner="ExtractHiddenStatesModel",
            defined_in="vllm/model_executor/models/extract_hidden_states.py:374 (ExtractHiddenStatesModel.load_weights)",
            auto=False,
        ),
    ),
    "FalconForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/falcon.py:481",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="FalconForCausalLM",
            defined_in="vllm/model_executor/models/falcon.py:538 (FalconForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "FalconH1ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/falcon_h1.py:495",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="FalconH1ForCausalLM",
            defined_in="vllm/model_executor/models/falcon_h1.py:645 (FalconH1ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("A_log", "A"),
                    ("mamba", "mamba.mamba"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "FalconMambaForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/mamba.py:173",
        top=Loader(
            owner="MambaForCausalLM",
            defined_in="vllm/model_executor/models/mamba.py:262 (MambaForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(substr=((".A_log", ".A"),)),
        ),
    ),
    "FireRedASR2ForConditionalGeneration": ArchClass(
        kind="attention-no-quant-visible",
        resolved="vllm/model_executor/models/fireredasr2.py:308",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="FireRedASR2ForConditionalGeneration",
            defined_in="vllm/model_executor/models/fireredasr2.py:475 (FireRedASR2ForConditionalGeneration.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    ("llm.", "model.decoder."),
                    ("encoder.", "model.encoder.audio_encoder."),
                    ("encoder_projector.", "model.encoder_projector."),
                    ("net.0", "pre_layer_norm"),
                    ("net.1", "linear_expand"),
                    ("net.4", "linear_project"),
                ),
                prefix=(("model.encoder.audio_encoder.positional_encoding.pe", None),),
            ),
        ),
    ),
    "FlexOlmoForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:133",
        top=Loader(
            owner="TransformersMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "FlintForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/models/flint/model.py:599",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="FlintForCausalLM",
            defined_in="vllm/models/flint/model.py:675 (FlintForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                )
            ),
        ),
    ),
    "FunASRForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/funasr.py:834",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="FunASRForConditionalGeneration",
            defined_in="vllm/model_executor/models/funasr.py:1003 (FunASRForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("linear_q.", "q_proj."),
                    ("linear_k.", "k_proj."),
                    ("linear_v.", "v_proj."),
                    ("linear_out.", "out_proj."),
                    ("audio_adaptor.", "model.encoder.audio_adaptor."),
                    ("audio_encoder.", "model.encoder.audio_encoder."),
                    ("llm.model.", "model.decoder."),
                    ("llm.lm_head", "lm_head"),
                )
            ),
        ),
    ),
    "FunAudioChatForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/funaudiochat.py:765",
        top=Loader(
            owner="FunAudioChatForConditionalGeneration",
            defined_in="vllm/model_executor/models/funaudiochat.py:976 (FunAudioChatForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("audio_invert_tower.", None),)),
        ),
        language_model="Qwen3ForCausalLM",
    ),
    "GLM4VForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/glm4v.py:505",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GLM4VForCausalLM",
            defined_in="vllm/model_executor/models/chatglm.py:427 (ChatGLMBaseModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "GPT2ForSequenceClassification": ArchClass(
        kind="attention-no-quant-visible",
        resolved="vllm/model_executor/models/gpt2.py:321",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GPT2ForSequenceClassification",
            defined_in="vllm/model_executor/models/gpt2.py:357 (GPT2ForSequenceClassification.load_weights)",
            auto=True,
        ),
    ),
    "GPT2LMHeadModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/gpt2.py:269",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GPT2LMHeadModel",
            defined_in="vllm/model_executor/models/gpt2.py:315 (GPT2LMHeadModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "GPTBigCodeForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "GPTJForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gpt_j.py:241",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GPTJForCausalLM",
            defined_in="vllm/model_executor/models/gpt_j.py:299 (GPTJForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("attn.bias", None),
                    ("attn.masked_bias", None),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
            ),
        ),
    ),
    "GPTNeoXForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Gemma2ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma2.py:316",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma2ForCausalLM",
            defined_in="vllm/model_executor/models/gemma2.py:371 (Gemma2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Gemma2Model": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma2.py:316",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma2ForCausalLM",
            defined_in="vllm/model_executor/models/gemma2.py:371 (Gemma2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Gemma3ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma3.py:367",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma3ForCausalLM",
            defined_in="vllm/model_executor/models/gemma3.py:431 (Gemma3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
        model=Loader(
            owner="Gemma3Model",
            defined_in="vllm/model_executor/models/gemma3.py:362 (Gemma3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Gemma3ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/gemma3_mm.py:500",
        top=Loader(
            owner="Gemma3ForConditionalGeneration",
            defined_in="vllm/model_executor/models/gemma3_mm.py:675 (Gemma3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
        language_model="Gemma3ForCausalLM",
    ),
    "Gemma3TextModel": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma3.py:280",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma3Model",
            defined_in="vllm/model_executor/models/gemma3.py:362 (Gemma3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Gemma3nForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/gemma3n.py:1102",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma3nForCausalLM",
            defined_in="vllm/model_executor/models/gemma3n.py:1166 (Gemma3nForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("embed_audio.", None),
                    ("embed_vision.", None),
                    ("audio_tower.", None),
                    ("vision_tower.", None),
                )
            ),
        ),
        model=Loader(
            owner="Gemma3nTextModel",
            defined_in="vllm/model_executor/models/gemma3n.py:1097 (Gemma3nTextModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(
                    ("embed_tokens.", "self_decoder.embed_tokens."),
                    ("embed_tokens_per_layer.", "self_decoder.embed_tokens_per_layer."),
                    ("per_layer_model_projection.", "self_decoder.per_layer_model_projection."),
                    ("per_layer_projection_norm.", "self_decoder.per_layer_projection_norm."),
                    ("altup_projections.", "self_decoder.altup_projections."),
                ),
            ),
        ),
        executed=True,
    ),
    "Gemma3nForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma3n_mm.py:575",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma3nForConditionalGeneration",
            defined_in="vllm/model_executor/models/gemma3n_mm.py:869 (Gemma3nForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.embed_audio.", "embed_audio."),
                    ("model.embed_vision.", "embed_vision."),
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.audio_tower.", "audio_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model", "language_model.model"),
                )
            ),
        ),
    ),
    "Gemma4DSparkModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/gemma4_dspark.py:283",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma4DSparkForCausalLM",
            defined_in="vllm/model_executor/models/gemma4_dspark.py:308 (Gemma4DSparkForCausalLM.load_weights)",
            auto=False,
        ),
        model=Loader(
            owner="Gemma4DSparkModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Gemma4ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/gemma4.py:1402",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma4ForCausalLM",
            defined_in="vllm/model_executor/models/gemma4.py:1504 (Gemma4ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("audio_tower.", None),
                    ("vision_tower.", None),
                    ("embed_audio.", None),
                    ("embed_vision.", None),
                ),
                prefix=(("model.language_model.", "model."),),
            ),
        ),
        model=Loader(
            owner="Gemma4Model",
            defined_in="vllm/model_executor/models/gemma4.py:1397 (Gemma4Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Gemma4ForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma4_mm.py:1035",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma4ForConditionalGeneration",
            defined_in="vllm/model_executor/models/gemma4_mm.py:2254 (Gemma4ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.vision_tower", "vision_tower"),
                    ("model.embed_vision", "embed_vision"),
                    ("model.audio_tower.", "audio_tower."),
                    ("model.embed_audio.", "embed_audio."),
                    ("model.language_model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model", "language_model.model"),
                )
            ),
        ),
    ),
    "Gemma4MTPModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/gemma4_mtp.py:440",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma4MTP",
            defined_in="vllm/model_executor/models/gemma4_mtp.py:590 (Gemma4MTP.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(
                    ("pre_projection.", "model.pre_projection."),
                    ("post_projection.", "model.post_projection."),
                ),
            ),
        ),
    ),
    "Gemma4UnifiedForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma4_unified.py:225",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Gemma4UnifiedForConditionalGeneration",
            defined_in="vllm/model_executor/models/gemma4_unified.py:516 (Gemma4UnifiedForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.embed_audio.", "embed_audio."),
                    ("model.embed_vision.", "embed_vision."),
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_embedder.", "vision_embedder."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model", "language_model.model"),
                )
            ),
        ),
    ),
    "GemmaForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gemma.py:331",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GemmaForCausalLM",
            defined_in="vllm/model_executor/models/gemma.py:393 (GemmaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Glm4ForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/glm4.py:232",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Glm4ForCausalLM",
            defined_in="vllm/model_executor/models/glm4.py:300 (Glm4ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="Glm4Model",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Glm4MoeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/glm4_moe.py:534",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Glm4MoeForCausalLM",
            defined_in="vllm/model_executor/models/glm4_moe.py:614 (Glm4MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Glm4MoeModel",
            defined_in="vllm/model_executor/models/glm4_moe.py:493 (Glm4MoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                )
            ),
        ),
    ),
    "Glm4MoeLiteForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/glm4_moe_lite.py:543",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="Glm4MoeLiteForCausalLM",
            defined_in="vllm/model_executor/models/glm4_moe_lite.py:654 (Glm4MoeLiteForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Glm4MoeLiteModel",
            defined_in="vllm/model_executor/models/glm4_moe_lite.py:347 (Glm4MoeLiteModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "Glm4MoeLiteMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/glm4_moe_lite_mtp.py:220",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="Glm4MoeLiteMTP",
            defined_in="vllm/model_executor/models/glm4_moe_lite_mtp.py:274 (Glm4MoeLiteMTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "Glm4MoeMTPModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/glm4_moe_mtp.py:194",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Glm4MoeMTP",
            defined_in="vllm/model_executor/models/glm4_moe_mtp.py:248 (Glm4MoeMTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "Glm4vForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/glm4_1v.py:1736",
        top=Loader(
            owner="Glm4vForConditionalGeneration",
            defined_in="vllm/model_executor/models/glm4_1v.py:2352 (Glm4vForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                )
            ),
        ),
    ),
    "Glm4vMoeForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/glm4_1v.py:2381",
        top=Loader(
            owner="Glm4vMoeForConditionalGeneration",
            defined_in="vllm/model_executor/models/glm4_1v.py:2352 (Glm4vForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                )
            ),
        ),
    ),
    "Glm5NextForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/models/glm5next/common/model.py:1047",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="Glm5NextForCausalLM",
            defined_in="vllm/models/glm5next/common/model.py:1135 (Glm5NextForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Glm5NextModel",
            defined_in="vllm/models/glm5next/common/model.py:859 (Glm5NextModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "Glm5NextForConditionalGeneration": ArchClass(
        kind="mla",
        resolved="vllm/models/glm5next/common/model.py:1145",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="Glm5NextForConditionalGeneration",
            defined_in="vllm/model_executor/models/glm4_1v.py:2352 (Glm4vForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                )
            ),
        ),
    ),
    "Glm5NextMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/models/glm5next/common/mtp.py:206",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="Glm5NextMTP",
            defined_in="vllm/models/glm5next/common/mtp.py:290 (Glm5NextMTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "GlmAsrForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/glmasr.py:901",
        top=Loader(
            owner="GlmAsrForConditionalGeneration",
            defined_in="vllm/model_executor/models/glmasr.py:1076 (GlmAsrForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("audio_tower.embed_positions", None),)),
        ),
        language_model="LlamaForCausalLM",
    ),
    "GlmForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "GlmMoeDsaForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/models/deepseek_v32/nvidia/model.py:432",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="GlmMoeDsaForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1996 (DeepseekV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="DeepseekV32Model",
            defined_in="vllm/models/deepseek_v32/nvidia/model.py:326 (DeepseekV32Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "GlmOcrForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/glm_ocr.py:393",
        top=Loader(
            owner="GlmOcrForConditionalGeneration",
            defined_in="vllm/model_executor/models/glm4_1v.py:2352 (Glm4vForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                )
            ),
        ),
    ),
    "GlmOcrMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/glm_ocr_mtp.py:131",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="GlmOcrMTP",
            defined_in="vllm/model_executor/models/glm_ocr_mtp.py:171 (GlmOcrMTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "GptOssForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/gpt_oss.py:1369",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GptOssForCausalLM",
            defined_in="vllm/model_executor/models/gpt_oss.py:1446 (GptOssForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=((".self_attn.", ".attn."),),
                suffix=(
                    (".embed_tokens.weight", ".embedding.weight"),
                    (".gate_up_proj_blocks", ".w13_weight"),
                    (".down_proj_blocks", ".w2_weight"),
                    (".gate_up_proj_scales", ".w13_weight_scale"),
                    (".down_proj_scales", ".w2_weight_scale"),
                    (".gate_up_proj", ".w13_weight"),
                    (".down_proj", ".w2_weight"),
                    (".gate_up_proj_bias", ".w13_bias"),
                    (".down_proj_bias", ".w2_bias"),
                    (".gate_up_proj.weight", ".w13_weight"),
                    (".gate_up_proj.weight_scale", ".w13_weight_scale"),
                    (".gate_up_proj.bias", ".w13_bias"),
                    (".gate_up_proj.input_scale", ".w13_input_scale"),
                    (".down_proj.weight", ".w2_weight"),
                    (".down_proj.weight_scale", ".w2_weight_scale"),
                    (".down_proj.bias", ".w2_bias"),
                    (".down_proj.input_scale", ".w2_input_scale"),
                ),
            ),
        ),
        model=Loader(
            owner="GptOssModel",
            defined_in="vllm/model_executor/models/gpt_oss.py:1311 (GptOssModel.load_weights)",
            auto=False,
        ),
        executed=True,
    ),
    "Granite4VisionForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granite4_vision.py:416",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Granite4VisionForConditionalGeneration",
            defined_in="vllm/model_executor/models/granite4_vision.py:920 (Granite4VisionForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.layerwise_projectors.", "layerwise_projectors."),
                    ("model.spatial_projectors.", "spatial_projectors."),
                    ("model.image_newline", "image_newline"),
                    ("model.vision_tower.", "vision_tower."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "GraniteForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granite.py:411",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteForCausalLM",
            defined_in="vllm/model_executor/models/granite.py:487 (GraniteForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="GraniteModel",
            defined_in="vllm/model_executor/models/granite.py:406 (GraniteModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "GraniteMoeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granitemoe.py:391",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteMoeForCausalLM",
            defined_in="vllm/model_executor/models/granitemoe.py:463 (GraniteMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="GraniteMoeModel",
            defined_in="vllm/model_executor/models/granitemoe.py:386 (GraniteMoeModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                suffix=(
                    ("moe.input_linear.weight", "moe.experts.gate_up_proj"),
                    ("moe.output_linear.weight", "moe.experts.down_proj"),
                    (".router.layer.weight", ".gate.weight"),
                    (".router.weight", ".gate.weight"),
                ),
            ),
        ),
    ),
    "GraniteMoeHybridForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granitemoehybrid.py:582",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteMoeHybridForCausalLM",
            defined_in="vllm/model_executor/models/granitemoehybrid.py:708 (GraniteMoeHybridForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="GraniteMoeHybridModel",
            defined_in="vllm/model_executor/models/granitemoehybrid.py:435 (GraniteMoeHybridModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "GraniteMoeSWAForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granitemoeshared.py:227",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteMoeSharedForCausalLM",
            defined_in="vllm/model_executor/models/granitemoeshared.py:300 (GraniteMoeSharedForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "GraniteMoeSharedForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granitemoeshared.py:227",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteMoeSharedForCausalLM",
            defined_in="vllm/model_executor/models/granitemoeshared.py:300 (GraniteMoeSharedForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "GraniteSWAForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/granite.py:411",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GraniteForCausalLM",
            defined_in="vllm/model_executor/models/granite.py:487 (GraniteForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="GraniteModel",
            defined_in="vllm/model_executor/models/granite.py:406 (GraniteModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "GraniteSpeechForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/granite_speech.py:554",
        top=Loader(
            owner="GraniteSpeechForConditionalGeneration",
            defined_in="vllm/model_executor/models/granite_speech.py:851 (GraniteSpeechForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(("language_model.model.model.", "language_model.model."),)
            ),
        ),
    ),
    "GraniteSpeechPlusForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/granite_speech_plus.py:66",
        top=Loader(
            owner="GraniteSpeechPlusForConditionalGeneration",
            defined_in="vllm/model_executor/models/granite_speech.py:851 (GraniteSpeechForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(("language_model.model.model.", "language_model.model."),)
            ),
        ),
    ),
    "GteModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/bert_with_rope.py:601",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="SnowflakeGteNewModel",
            defined_in="vllm/model_executor/models/bert_with_rope.py:495 (BertWithRope.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(prefix=(("model.", ""),)),
        ),
    ),
    "GteNewForSequenceClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/bert_with_rope.py:681",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GteNewForSequenceClassification",
            defined_in="vllm/model_executor/models/bert_with_rope.py:711 (GteNewForSequenceClassification.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "GteNewModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/bert_with_rope.py:559",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="GteNewModel",
            defined_in="vllm/model_executor/models/bert_with_rope.py:495 (BertWithRope.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(prefix=(("model.", ""),)),
        ),
    ),
    "H2OVLChatModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/h2ovl.py:179",
        top=Loader(
            owner="H2OVLChatModel",
            defined_in="vllm/model_executor/models/internvl.py:894 (InternVLChatModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "HCXVisionV2ForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/hyperclovax_vision_v2.py:364",
        top=Loader(
            owner="HCXVisionV2ForCausalLM",
            defined_in="vllm/model_executor/models/hyperclovax_vision_v2.py:623 (HCXVisionV2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("discrete_vision_model", None),),
                prefix=(
                    ("model.", ""),
                    ("vision_model.", "visual."),
                ),
            ),
        ),
    ),
    "HF_ColBERT": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colbert.py:195",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColBERTModel",
            defined_in="vllm/model_executor/models/colbert.py:221 (ColBERTModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("bert.", "model."),)),
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "HYV3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/hy_v3.py:652",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="HYV3ForCausalLM",
            defined_in="vllm/model_executor/models/hy_v3.py:708 (HYV3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="HYV3Model",
            defined_in="vllm/model_executor/models/hy_v3.py:560 (HYV3Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "HYV3MTPModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/hy_v3_mtp.py:208",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="HYV3MTP",
            defined_in="vllm/model_executor/models/hy_v3_mtp.py:272 (HYV3MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "HYV4ForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/models/hy_v4/nvidia/model.py:600",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="HYV4ForCausalLM",
            defined_in="vllm/models/hy_v4/nvidia/model.py:682 (HYV4ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="HYV4Model",
            defined_in="vllm/models/hy_v4/nvidia/model.py:419 (HYV4Model.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "HYV4MTPModel": ArchClass(
        kind="mla",
        resolved="vllm/models/hy_v4/nvidia/mtp.py:520",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="HYV4MTP",
            defined_in="vllm/models/hy_v4/nvidia/mtp.py:731 (HYV4MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "HfMoondream": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/moondream3.py:1026",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Moondream3ForCausalLM",
            defined_in="vllm/model_executor/models/moondream3.py:1321 (Moondream3ForCausalLM.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "HrmTextForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/hrm_text.py:457",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="HrmTextForCausalLM",
            defined_in="vllm/model_executor/models/hrm_text.py:522 (HrmTextForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=((".attn.", ".self_attn."),)),
        ),
    ),
    "HunYuanDenseV1ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "HunYuanMoEV1ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:133",
        top=Loader(
            owner="TransformersMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "HunYuanVLForConditionalGeneration": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:149",
        top=Loader(
            owner="TransformersMultiModalForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "HyperCLOVAXForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/hyperclovax.py:372",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="HyperCLOVAXForCausalLM",
            defined_in="vllm/model_executor/models/hyperclovax.py:472 (HyperCLOVAXForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "IQuestCoderForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "IQuestLoopCoderForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/iquest_loopcoder.py:536",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="IQuestLoopCoderForCausalLM",
            defined_in="vllm/model_executor/models/iquest_loopcoder.py:582 (IQuestLoopCoderForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="IQuestLoopCoderModel",
            defined_in="vllm/model_executor/models/iquest_loopcoder.py:466 (IQuestLoopCoderModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "Idefics3ForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/idefics3.py:522",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Idefics3ForConditionalGeneration",
            defined_in="vllm/model_executor/models/idefics3.py:822 (Idefics3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "InklingForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/inkling/nvidia/model.py:481",
        top=Loader(
            owner="InklingForCausalLM",
            defined_in="vllm/models/inkling/nvidia/model.py:477 (_TmlForCausalLMBase.load_weights)",
            auto=False,
        ),
    ),
    "InklingForConditionalGeneration": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/inkling/nvidia/model.py:494",
        top=Loader(
            owner="InklingForConditionalGeneration",
            defined_in="vllm/models/inkling/nvidia/model.py:477 (_TmlForCausalLMBase.load_weights)",
            auto=False,
        ),
    ),
    "InklingMTPModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/models/inkling/nvidia/mtp.py:261",
        top=Loader(
            owner="InklingMTP",
            defined_in="vllm/models/inkling/nvidia/mtp.py:357 (InklingMTP.load_weights)",
            auto=False,
        ),
    ),
    "InternLM2ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/internlm2.py:324",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternLM2ForCausalLM",
            defined_in="vllm/model_executor/models/internlm2.py:383 (InternLM2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "InternLM2ForRewardModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/internlm2.py:389",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternLM2ForRewardModel",
            defined_in="vllm/model_executor/models/internlm2.py:383 (InternLM2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "InternLM3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "InternS1ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/interns1.py:549",
        top=Loader(
            owner="InternS1ForConditionalGeneration",
            defined_in="vllm/model_executor/models/interns1.py:852 (InternS1ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                )
            ),
        ),
    ),
    "InternS1ProForConditionalGeneration": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/interns1_pro.py:544",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternS1ProForConditionalGeneration",
            defined_in="vllm/model_executor/models/interns1_pro.py:625 (InternS1ProForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "InternS2MobiusForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/interns2_mobius.py:467",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternS2MobiusForConditionalGeneration",
            defined_in="vllm/model_executor/models/interns2_preview.py:40 (InternS2PreviewForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("mtp.", None),
                    ("model.time_series.", None),
                    ("time_series.", None),
                )
            ),
        ),
    ),
    "InternS2MobiusMTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/interns2_mobius.py:446",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternS2MobiusMTP",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:307 (Qwen3_5MTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3_5MultiTokenPredictor",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:193 (Qwen3_5MultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                )
            ),
        ),
    ),
    "InternS2PreviewForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/interns2_preview.py:32",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="InternS2PreviewForConditionalGeneration",
            defined_in="vllm/model_executor/models/interns2_preview.py:40 (InternS2PreviewForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("mtp.", None),
                    ("model.time_series.", None),
                    ("time_series.", None),
                )
            ),
        ),
    ),
    "InternVLChatModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/internvl.py:551",
        top=Loader(
            owner="InternVLChatModel",
            defined_in="vllm/model_executor/models/internvl.py:894 (InternVLChatModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "InternVLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/interns1.py:549",
        top=Loader(
            owner="InternS1ForConditionalGeneration",
            defined_in="vllm/model_executor/models/interns1.py:852 (InternS1ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                )
            ),
        ),
    ),
    "IsaacForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/isaac.py:782",
        top=Loader(
            owner="IsaacForConditionalGeneration",
            defined_in="vllm/model_executor/models/isaac.py:1008 (IsaacForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.text_model.lm_head.", "language_model.lm_head."),
                    ("model.text_model.", "language_model.model."),
                    ("model.vision_embedding.0", "vision_embedding.transformer"),
                    ("model.vision_embedding.1", "vision_embedding.linear_fc1"),
                    ("model.vision_embedding.2", "vision_embedding.act"),
                    ("model.vision_embedding.3", "vision_embedding.linear_fc2"),
                    ("model.vision_embedding.", "vision_embedding."),
                    ("model.lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen3ForCausalLM",
    ),
    "Jais2ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "JambaForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/jamba.py:376",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="JambaForCausalLM",
            defined_in="vllm/model_executor/models/jamba.py:496 (JambaForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    (".self_attn.", "."),
                    (".A_log", ".A"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".feed_forward.gate_proj", ".feed_forward.gate_up_proj"),
                    (".feed_forward.up_proj", ".feed_forward.gate_up_proj"),
                ),
            ),
        ),
        executed=True,
    ),
    "JambaForSequenceClassification": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/jamba.py:501",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="JambaForSequenceClassification",
            defined_in="vllm/model_executor/models/jamba.py:496 (JambaForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    (".self_attn.", "."),
                    (".A_log", ".A"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".feed_forward.gate_proj", ".feed_forward.gate_up_proj"),
                    (".feed_forward.up_proj", ".feed_forward.gate_up_proj"),
                ),
            ),
        ),
    ),
    "JinaEmbeddingsV5Model": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/jina.py:332",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="JinaEmbeddingsV5Model",
            defined_in="vllm/model_executor/models/jina.py:301 (JinaEmbeddingsV5DecoderModel.load_weights)",
            auto=False,
        ),
        model=Loader(
            owner="Qwen3Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "JinaForRanking": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/jina.py:44",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="JinaForRanking",
            defined_in="vllm/model_executor/models/jina.py:92 (JinaForRanking.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("lm_head.", None),)),
        ),
        model=Loader(
            owner="Qwen3Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "JinaVLForRanking": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/jina_vl.py:104",
        top=Loader(
            owner="JinaVLForSequenceClassification",
            defined_in="vllm/model_executor/models/jina_vl.py:169 (JinaVLForSequenceClassification.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("score.0.", "score.dense."),
                    ("score.2.", "score.out_proj."),
                    ("model.language_model.", "language_model.model."),
                    ("visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "K2HorizonForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/k2_horizon.py:1475",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="K2HorizonForCausalLM",
            defined_in="vllm/model_executor/models/k2_horizon.py:1583 (K2HorizonForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="K2HorizonModel",
            defined_in="vllm/model_executor/models/k2_horizon.py:1190 (K2HorizonModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "K3DSparkModel": ArchClass(
        kind="dynamic",
        resolved="vllm/models/kimi_k3/nvidia/dspark_mla.py:433",
        holders=frozenset(["custom-mla"]),
        top=Loader(
            owner="K3DSparkForCausalLM",
            defined_in="vllm/models/kimi_k3/nvidia/dspark_mla.py:530 (K3DSparkForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("confidence_head", None),
                    ("embed_tokens", None),
                    ("lm_head", None),
                ),
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                    (".q_a_proj", ".fused_qkv_a_proj"),
                    (".kv_a_proj_with_mqa", ".fused_qkv_a_proj"),
                ),
                prefix=(("", "model."),),
            ),
            mapper_unresolved=True,
        ),
    ),
    "KananaVForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/kanana_v.py:585",
        top=Loader(
            owner="KananaVForConditionalGeneration",
            defined_in="vllm/model_executor/models/kanana_v.py:766 (KananaVForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        language_model="LlamaForCausalLM",
    ),
    "KeyeForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/keye.py:1487",
        top=Loader(
            owner="KeyeForConditionalGeneration",
            defined_in="vllm/model_executor/models/keye.py:1458 (BaseKeyeModule.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen3ForCausalLM",
    ),
    "KeyeVL1_5ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/keye_vl1_5.py:507",
        top=Loader(
            owner="KeyeVL1_5ForConditionalGeneration",
            defined_in="vllm/model_executor/models/keye.py:1458 (BaseKeyeModule.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen3ForCausalLM",
    ),
    "KimiK25ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/kimi_k25.py:291",
        top=Loader(
            owner="KimiK25ForConditionalGeneration",
            defined_in="vllm/model_executor/models/kimi_k25.py:699 (KimiK25ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.layers.", "language_model.model.layers."),
                    ("mm_projector.proj.0", "mm_projector.linear_1"),
                    ("mm_projector.proj.2", "mm_projector.linear_2"),
                )
            ),
        ),
        language_model="DeepseekV2ForCausalLM",
        executed=True,
    ),
    "KimiK3ForConditionalGeneration": ArchClass(
        kind="mla-custom",
        resolved="vllm/models/kimi_k3/nvidia/model.py:1568",
        holders=frozenset(["custom-mla"]),
        top=Loader(
            owner="KimiK3ForConditionalGeneration",
            defined_in="vllm/models/kimi_k3/nvidia/model.py:1991 (KimiK3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.layers.", "language_model.model.layers."),
                    ("mm_projector.proj.0", "mm_projector.linear_1"),
                    ("mm_projector.proj.2", "mm_projector.linear_2"),
                )
            ),
        ),
        language_model="KimiLinearForCausalLM",
    ),
    "KimiK3MTPModel": ArchClass(
        kind="mla-custom",
        resolved="vllm/models/kimi_k3/nvidia/mtp.py:214",
        holders=frozenset(["custom-mla"]),
        top=Loader(
            owner="KimiK3MTP",
            defined_in="vllm/models/kimi_k3/nvidia/mtp.py:251 (KimiK3MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "KimiLinearForCausalLM": ArchClass(
        kind="mla-custom",
        resolved="vllm/models/kimi_k3/nvidia/model.py:1402",
        holders=frozenset(["custom-mla"]),
        top=Loader(
            owner="KimiLinearForCausalLM",
            defined_in="vllm/models/kimi_k3/nvidia/model.py:1541 (KimiLinearForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="KimiLinearModel",
            defined_in="vllm/models/kimi_k3/nvidia/model.py:1246 (KimiLinearModel.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "KimiVLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/kimi_vl.py:294",
        top=Loader(
            owner="KimiVLForConditionalGeneration",
            defined_in="vllm/model_executor/models/kimi_vl.py:607 (KimiVLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        language_model="DeepseekV2ForCausalLM",
    ),
    "Kolibri1ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:133",
        top=Loader(
            owner="TransformersMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "LLaMAForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "LagunaForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/laguna.py:697",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LagunaForCausalLM",
            defined_in="vllm/model_executor/models/laguna.py:751 (LagunaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LagunaModel",
            defined_in="vllm/model_executor/models/laguna.py:678 (LagunaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "Lfm2BidirectionalModel": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/lfm2.py:502",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Lfm2BidirectionalModel",
            defined_in="vllm/model_executor/models/lfm2.py:495 (Lfm2Model.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=((".conv.", ".short_conv."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".w1", ".w13"),
                    (".w3", ".w13"),
                ),
            ),
        ),
    ),
    "Lfm2ForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/lfm2.py:520",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Lfm2ForCausalLM",
            defined_in="vllm/model_executor/models/lfm2.py:629 (Lfm2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Lfm2Model",
            defined_in="vllm/model_executor/models/lfm2.py:495 (Lfm2Model.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=((".conv.", ".short_conv."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".w1", ".w13"),
                    (".w3", ".w13"),
                ),
            ),
        ),
        executed=True,
    ),
    "Lfm2MoeForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/lfm2_moe.py:500",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Lfm2MoeForCausalLM",
            defined_in="vllm/model_executor/models/lfm2_moe.py:666 (Lfm2MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Lfm2MoeModel",
            defined_in="vllm/model_executor/models/lfm2_moe.py:495 (Lfm2MoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    (".conv.", ".short_conv."),
                    ("expert_bias", "gate.e_score_correction_bias"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".feed_forward.w1.", ".feed_forward.w13."),
                    (".feed_forward.w3.", ".feed_forward.w13."),
                ),
            ),
        ),
    ),
    "Lfm2VlForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/lfm2_vl.py:616",
        top=Loader(
            owner="Lfm2VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/lfm2_vl.py:1271 (Lfm2VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                )
            ),
        ),
    ),
    "LiLiCorrDraftModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/lilicorr.py:465",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LiLiCorrForCausalLM",
            defined_in="vllm/model_executor/models/lilicorr.py:488 (LiLiCorrForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LiLiCorr",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "LightOnOCRForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/lightonocr.py:134",
        top=Loader(
            owner="LightOnOCRForConditionalGeneration",
            defined_in="vllm/model_executor/models/lightonocr.py:194 (LightOnOCRForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.vision_encoder.", "vision_tower."),
                    ("model.vision_projection.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "Llama4ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama4.py:708",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Llama4ForCausalLM",
            defined_in="vllm/model_executor/models/llama4.py:793 (Llama4ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Llama4Model",
            defined_in="vllm/model_executor/models/llama4.py:539 (Llama4Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "Llama4ForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mllama4.py:728",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Llama4ForConditionalGeneration",
            defined_in="vllm/model_executor/models/mllama4.py:1153 (Llama4ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "LlamaBidirectionalForSequenceClassification": ArchClass(
        kind="no-kv-holder", resolved="vllm/model_executor/models/llama.py:574"
    ),
    "LlamaBidirectionalModel": ArchClass(
        kind="no-kv-holder", resolved="vllm/model_executor/models/llama.py:582"
    ),
    "LlamaForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
        executed=True,
    ),
    "LlamaForCausalLMEagle3": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "LlamaModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "LlamaNemotronVLForSequenceClassification": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/nemotron_vl.py:568",
        top=Loader(
            owner="LlamaNemotronVLForSequenceClassification",
            defined_in="vllm/model_executor/models/nemotron_vl.py:562 (LlamaNemotronVLForEmbedding.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.layers.", "language_model.model.layers."),
                    ("language_model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("language_model.norm.", "language_model.model.norm."),
                    ("vision_model.encoder.", "vision_model.vision_model.encoder."),
                    ("vision_model.embeddings.", "vision_model.vision_model.embeddings."),
                    ("vision_model.post_layernorm.", "vision_model.vision_model.post_layernorm."),
                )
            ),
        ),
    ),
    "LlamaNemotronVLModel": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/nemotron_vl.py:473",
        top=Loader(
            owner="LlamaNemotronVLForEmbedding",
            defined_in="vllm/model_executor/models/nemotron_vl.py:562 (LlamaNemotronVLForEmbedding.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.layers.", "language_model.model.layers."),
                    ("language_model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("language_model.norm.", "language_model.model.norm."),
                    ("vision_model.encoder.", "vision_model.vision_model.encoder."),
                    ("vision_model.embeddings.", "vision_model.vision_model.embeddings."),
                    ("vision_model.post_layernorm.", "vision_model.vision_model.post_layernorm."),
                )
            ),
        ),
    ),
    "Llama_Nemotron_Nano_VL": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/nemotron_vl.py:97",
        top=Loader(
            owner="LlamaNemotronVLChatModel",
            defined_in="vllm/model_executor/models/nemotron_vl.py:391 (LlamaNemotronVLChatModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("norm_mean", None),
                    ("norm_std", None),
                )
            ),
        ),
    ),
    "LlavaForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/llava.py:492",
        top=Loader(
            owner="LlavaForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava.py:721 (LlavaForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "LlavaNextForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/llava_next.py:232",
        top=Loader(
            owner="LlavaNextForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_next.py:600 (LlavaNextForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.image_newline", "image_newline"),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "LlavaNextVideoForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/llava_next_video.py:304",
        top=Loader(
            owner="LlavaNextVideoForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_next_video.py:480 (LlavaNextVideoForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.image_newline", "image_newline"),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "LlavaOnevision2ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/llava_onevision2.py:2012",
        top=Loader(
            owner="LlavaOnevision2ForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_onevision2.py:2306 (LlavaOnevision2ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen3ForCausalLM",
    ),
    "LlavaOnevisionForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/llava_onevision.py:464",
        top=Loader(
            owner="LlavaOnevisionForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_onevision.py:910 (LlavaOnevisionForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.image_newline", "image_newline"),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "LongCatFlashMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/longcat_flash_mtp.py:126",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="LongCatFlashMTP",
            defined_in="vllm/model_executor/models/longcat_flash_mtp.py:175 (LongCatFlashMTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "LongcatFlashForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/longcat_flash.py:551",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="LongcatFlashForCausalLM",
            defined_in="vllm/model_executor/models/longcat_flash.py:619 (LongcatFlashForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="FlashModel",
            defined_in="vllm/model_executor/models/longcat_flash.py:461 (FlashModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
        executed=True,
    ),
    "LongcatFlashNgramForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/longcat_flash_ngram.py:199",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="LongcatFlashNgramForCausalLM",
            defined_in="vllm/model_executor/models/longcat_flash_ngram.py:262 (LongcatFlashNgramForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("model.mtp.", None),)),
        ),
        model=Loader(
            owner="FlashNgramModel",
            defined_in="vllm/model_executor/models/longcat_flash_ngram.py:181 (FlashNgramModel.load_weights)",
            auto=False,
        ),
    ),
    "Mamba2ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/mamba2.py:167",
        top=Loader(
            owner="Mamba2ForCausalLM",
            defined_in="vllm/model_executor/models/mamba2.py:273 (Mamba2ForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(substr=((".A_log", ".A"),)),
        ),
    ),
    "MambaForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/mamba.py:173",
        top=Loader(
            owner="MambaForCausalLM",
            defined_in="vllm/model_executor/models/mamba.py:262 (MambaForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(substr=((".A_log", ".A"),)),
        ),
    ),
    "MellumForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:133",
        top=Loader(
            owner="TransformersMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "MiDashengLMModel": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/midashenglm.py:674",
        top=Loader(
            owner="MiDashengLMModel",
            defined_in="vllm/model_executor/models/midashenglm.py:810 (MiDashengLMModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "MiMoForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mimo.py:91",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoForCausalLM",
            defined_in="vllm/model_executor/models/mimo.py:126 (MiMoForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("model.mtp_layers.", None),)),
        ),
        model=Loader(
            owner="MiMoModel",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "MiMoMTPModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/mimo_mtp.py:153",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoMTP",
            defined_in="vllm/model_executor/models/mimo_mtp.py:213 (MiMoMTP.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "MiMoV2FlashForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mimo_v2.py:1061",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoV2FlashForCausalLM",
            defined_in="vllm/model_executor/models/mimo_v2.py:1120 (MiMoV2FlashForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiMoV2Model",
            defined_in="vllm/model_executor/models/mimo_v2.py:866 (MiMoV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "MiMoV2ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mimo_v2.py:1125",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoV2ForCausalLM",
            defined_in="vllm/model_executor/models/mimo_v2.py:1120 (MiMoV2FlashForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiMoV2Model",
            defined_in="vllm/model_executor/models/mimo_v2.py:866 (MiMoV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "MiMoV2MTPModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/mimo_v2_mtp.py:223",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoV2MTP",
            defined_in="vllm/model_executor/models/mimo_v2_mtp.py:259 (MiMoV2MTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "MiMoV2OmniForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/mimo_v2_omni.py:1229",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoV2OmniForCausalLM",
            defined_in="vllm/model_executor/models/mimo_v2_omni.py:1571 (MiMoV2OmniForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("speech_embeddings.", "audio_encoder.speech_embeddings."),
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                    ("audio_tokenizer.", None),
                )
            ),
        ),
    ),
    "MiMoV2OmniMTPModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/mimo_v2_mtp.py:389",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiMoV2OmniMTP",
            defined_in="vllm/model_executor/models/mimo_v2_mtp.py:259 (MiMoV2MTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "MiniCPM3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/minicpm3.py:224",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPM3ForCausalLM",
            defined_in="vllm/model_executor/models/minicpm.py:652 (MiniCPMForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiniCPM3Model",
            defined_in="vllm/model_executor/models/minicpm.py:488 (MiniCPMModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
        executed=True,
    ),
    "MiniCPMForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/minicpm.py:558",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMForCausalLM",
            defined_in="vllm/model_executor/models/minicpm.py:652 (MiniCPMForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiniCPMModel",
            defined_in="vllm/model_executor/models/minicpm.py:488 (MiniCPMModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "MiniCPMO": ArchClass(
        kind="attention-no-quant-visible",
        resolved="vllm/model_executor/models/minicpmo.py:1004",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMO",
            defined_in="vllm/model_executor/models/minicpmo.py:749 (MiniCPMOBaseModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(prefix=(("tts", None),)),
        ),
    ),
    "MiniCPMOcrForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/minicpm_ocr.py:409",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMOcrForConditionalGeneration",
            defined_in="vllm/model_executor/models/minicpmv4_6.py:1502 (MiniCPMV4_6ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(
                    ("model.vision_tower.vit_merger.", "vit_merger."),
                    ("model.vision_tower.", "vpm."),
                    ("model.vpm.", "vpm."),
                    ("model.vit_merger.", "vit_merger."),
                    ("model.merger.", "merger."),
                    ("model.language_model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                    ("mtp.", None),
                ),
            ),
        ),
    ),
    "MiniCPMV": ArchClass(
        kind="attention-no-quant-visible",
        resolved="vllm/model_executor/models/minicpmv.py:2448",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMV",
            defined_in="vllm/model_executor/models/minicpmv.py:1407 (MiniCPMVBaseModel.load_weights)",
            auto=True,
        ),
    ),
    "MiniCPMV4_6ForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/minicpmv4_6.py:1150",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMV4_6ForConditionalGeneration",
            defined_in="vllm/model_executor/models/minicpmv4_6.py:1502 (MiniCPMV4_6ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(
                    ("model.vision_tower.vit_merger.", "vit_merger."),
                    ("model.vision_tower.", "vpm."),
                    ("model.vpm.", "vpm."),
                    ("model.vit_merger.", "vit_merger."),
                    ("model.merger.", "merger."),
                    ("model.language_model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                    ("mtp.", None),
                ),
            ),
        ),
    ),
    "MiniCPMV4_7ForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/minicpmv4_7.py:124",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniCPMV4_7ForConditionalGeneration",
            defined_in="vllm/model_executor/models/minicpmv4_6.py:1502 (MiniCPMV4_6ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(
                    ("model.vision_tower.vit_merger.", "vit_merger."),
                    ("model.vision_tower.", "vpm."),
                    ("model.vpm.", "vpm."),
                    ("model.vit_merger.", "vit_merger."),
                    ("model.merger.", "merger."),
                    ("model.language_model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                    ("mtp.", None),
                ),
            ),
        ),
    ),
    "MiniMaxM2ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/minimax_m2.py:428",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MiniMaxM2ForCausalLM",
            defined_in="vllm/model_executor/models/minimax_m2.py:486 (MiniMaxM2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiniMaxM2Model",
            defined_in="vllm/model_executor/models/minimax_m2.py:423 (MiniMaxM2Model.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "MiniMaxM3MTP": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/models/minimax_m3/nvidia/mtp.py:146",
        holders=frozenset(["Attention", "fixed"]),
        top=Loader(
            owner="MiniMaxM3MTP",
            defined_in="vllm/models/minimax_m3/nvidia/mtp.py:226 (MiniMaxM3MTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "MiniMaxM3SparseForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/models/minimax_m3/nvidia/model.py:1042",
        holders=frozenset(["Attention", "fixed"]),
        top=Loader(
            owner="MiniMaxM3SparseForCausalLM",
            defined_in="vllm/models/minimax_m3/nvidia/model.py:1095 (MiniMaxM3SparseForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MiniMaxM3Model",
            defined_in="vllm/models/minimax_m3/nvidia/model.py:944 (MiniMaxM3Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "MiniMaxM3SparseForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/models/minimax_m3/nvidia/model.py:1105",
        top=Loader(
            owner="MiniMaxM3SparseForConditionalGeneration",
            defined_in="vllm/models/minimax_m3/nvidia/model.py:1315 (MiniMaxM3SparseForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".mlp.fc1.", ".fc1."),
                    (".mlp.fc2.", ".fc2."),
                ),
                prefix=(
                    ("multi_modal_projector.", "vision_tower.multi_modal_projector."),
                    ("patch_merge_mlp.", "vision_tower.patch_merge_mlp."),
                ),
            ),
        ),
        language_model="MiniMaxM3SparseForCausalLM",
    ),
    "Ministral3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mistral.py:236",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MistralForCausalLM",
            defined_in="vllm/model_executor/models/mistral.py:285 (MistralForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MistralModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Mistral3ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/mistral3.py:418",
        top=Loader(
            owner="Mistral3ForConditionalGeneration",
            defined_in="vllm/model_executor/models/mistral3.py:624 (Mistral3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                ),
                suffix=(
                    (".activation_scale", ".input_scale"),
                    (".weight_scale_inv", ".weight_scale"),
                ),
            ),
        ),
        executed=True,
    ),
    "MistralForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mistral.py:236",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MistralForCausalLM",
            defined_in="vllm/model_executor/models/mistral.py:285 (MistralForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MistralModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "MistralLarge3ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/mistral_large_3.py:12",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="MistralLarge3ForCausalLM",
            defined_in="vllm/model_executor/models/mistral_large_3.py:90 (MistralLarge3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    (
                        "\\Alayers\\.(\\d+)\\.attention_norm\\.weight\\Z",
                        "model.layers.\\1.input_layernorm.weight",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.wq_a\\.(\\w+)\\Z",
                        "model.layers.\\1.self_attn.q_a_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.q_a_norm\\.weight\\Z",
                        "model.layers.\\1.self_attn.q_a_layernorm.weight",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.wq_b\\.(\\w+)\\Z",
                        "model.layers.\\1.self_attn.q_b_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.wkv_a_with_mqa\\.(\\w+)\\Z",
                        "model.layers.\\1.self_attn.kv_a_proj_with_mqa.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.kv_a_norm\\.weight\\Z",
                        "model.layers.\\1.self_attn.kv_a_layernorm.weight",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.wkv_b\\.(\\w+)\\Z",
                        "model.layers.\\1.self_attn.kv_b_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.attention\\.wo\\.(\\w+)\\Z",
                        "model.layers.\\1.self_attn.o_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.ffn_norm\\.weight\\Z",
                        "model.layers.\\1.post_attention_layernorm.weight",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.feed_forward\\.w1\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.gate_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.feed_forward\\.w2\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.down_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.feed_forward\\.w3\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.up_proj.\\2",
                    ),
                    ("\\Alayers\\.(\\d+)\\.gate\\.weight\\Z", "model.layers.\\1.mlp.gate.weight"),
                    (
                        "\\Alayers\\.(\\d+)\\.shared_experts\\.w1\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.shared_experts.gate_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.shared_experts\\.w2\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.shared_experts.down_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.shared_experts\\.w3\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.shared_experts.up_proj.\\2",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.experts\\.(\\d+)\\.w1\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.experts.\\2.gate_proj.\\3",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.experts\\.(\\d+)\\.w2\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.experts.\\2.down_proj.\\3",
                    ),
                    (
                        "\\Alayers\\.(\\d+)\\.experts\\.(\\d+)\\.w3\\.(\\w+)\\Z",
                        "model.layers.\\1.mlp.experts.\\2.up_proj.\\3",
                    ),
                    ("\\Anorm\\.weight\\Z", "model.norm.weight"),
                    ("\\Atok_embeddings\\.weight\\Z", "model.embed_tokens.weight"),
                    ("\\Aoutput\\.weight\\Z", "lm_head.weight"),
                ),
                suffix=(
                    (".qscale_act", ".input_scale"),
                    (".qscale_weight", ".weight_scale"),
                ),
            ),
        ),
        model=Loader(
            owner="DeepseekV2Model",
            defined_in="vllm/model_executor/models/deepseek_v2.py:1594 (DeepseekV2Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
        executed=True,
    ),
    "MistralModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "MixtralForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/mixtral.py:375",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MixtralForCausalLM",
            defined_in="vllm/model_executor/models/mixtral.py:486 (MixtralForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="MixtralModel",
            defined_in="vllm/model_executor/models/mixtral.py:370 (MixtralModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".gate_proj.", ".w1."),
                    (".up_proj.", ".w3."),
                    (".down_proj.", ".w2."),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
            ),
        ),
        executed=True,
    ),
    "ModernBertForSequenceClassification": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/modernbert.py:358",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ModernBertForSequenceClassification",
            defined_in="vllm/model_executor/models/modernbert.py:390 (ModernBertForSequenceClassification.load_weights)",
            auto=False,
            indexes_params=True,
        ),
        model=Loader(
            owner="ModernBertModel",
            defined_in="vllm/model_executor/models/modernbert.py:281 (ModernBertModel.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.layers.", "encoder_layer.layers."),
                    ("layers.", "encoder_layer.layers."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "ModernBertForTokenClassification": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/modernbert.py:448",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ModernBertForTokenClassification",
            defined_in="vllm/model_executor/models/modernbert.py:474 (ModernBertForTokenClassification.load_weights)",
            auto=True,
            mapper=WeightsMapper(prefix=(("drop", None),)),
        ),
        model=Loader(
            owner="ModernBertModel",
            defined_in="vllm/model_executor/models/modernbert.py:281 (ModernBertModel.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.layers.", "encoder_layer.layers."),
                    ("layers.", "encoder_layer.layers."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "ModernBertModel": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/modernbert.py:248",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ModernBertModel",
            defined_in="vllm/model_executor/models/modernbert.py:281 (ModernBertModel.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.layers.", "encoder_layer.layers."),
                    ("layers.", "encoder_layer.layers."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "ModernVBertModel": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/colmodernvbert.py:243",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColModernVBertForRetrieval",
            defined_in="vllm/model_executor/models/colmodernvbert.py:371 (ColModernVBertForRetrieval.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.text_model.layers.", "text_layers."),
                    ("model.text_model.embeddings.", "text_embeddings."),
                    ("model.text_model.final_norm.", "text_final_norm."),
                    ("model.connector.modality_projection.", "connector.proj."),
                    ("model.custom_text_proj.", "custom_text_proj."),
                    ("model.vision_model.vision_model.", "vision_model.vision_model."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "Molmo2ForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/molmo2.py:2318",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Molmo2ForConditionalGeneration",
            defined_in="vllm/model_executor/models/molmo2.py:2653 (Molmo2ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("image_pooling_2d.wq", "image_pooling_2d.q_proj"),
                    ("image_pooling_2d.wk", "image_pooling_2d.k_proj"),
                    ("image_pooling_2d.wv", "image_pooling_2d.v_proj"),
                    ("image_pooling_2d.wo", "image_pooling_2d.o_proj"),
                    ("image_projector.w1", "image_projector.gate_proj"),
                    ("image_projector.w3", "image_projector.up_proj"),
                    ("image_projector.w2", "image_projector.down_proj"),
                    ("att_proj", "qkv_proj"),
                    ("attn_out", "o_proj"),
                    ("q_norm", "q_norm"),
                    ("k_norm", "k_norm"),
                    ("ff_proj", "up_gate_proj"),
                    ("ff_out", "down_proj"),
                    ("attn_norm", "input_layernorm"),
                    ("ff_norm", "post_attention_layernorm"),
                ),
                prefix=(
                    ("model.vision_backbone.", "vision_backbone."),
                    ("model.transformer.blocks.", "model.layers."),
                    ("model.transformer.ln_f.", "model.norm."),
                ),
            ),
        ),
        model=Loader(
            owner="Molmo2TextModel",
            defined_in="vllm/model_executor/models/molmo2.py:1241 (Molmo2TextModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "MolmoForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/molmo.py:1276",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MolmoForCausalLM",
            defined_in="vllm/model_executor/models/molmo.py:1446 (MolmoForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("image_projector.w1.", "image_projector.gate_proj."),
                    ("image_projector.w3.", "image_projector.up_proj."),
                    ("image_projector.w2.", "image_projector.down_proj."),
                    ("att_proj", "self_attn.qkv_proj"),
                    ("attn_out", "self_attn.o_proj"),
                    ("q_norm", "self_attn.q_norm"),
                    ("k_norm", "self_attn.k_norm"),
                    ("ff_proj", "mlp.gate_up_proj"),
                    ("ff_out", "mlp.down_proj"),
                    ("attn_norm", "input_layernorm"),
                    ("ff_norm", "post_attention_layernorm"),
                ),
                prefix=(
                    ("model.vision_backbone.", "vision_backbone."),
                    ("model.transformer.blocks.", "model.layers."),
                    ("model.transformer.ln_f.", "model.norm."),
                    ("model.transformer.mlp.down_proj.", "lm_head."),
                ),
            ),
        ),
        model=Loader(
            owner="MolmoModel",
            defined_in="vllm/model_executor/models/molmo.py:887 (MolmoModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "Moondream3ForCausalLM": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/moondream3.py:1026",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Moondream3ForCausalLM",
            defined_in="vllm/model_executor/models/moondream3.py:1321 (Moondream3ForCausalLM.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "MoonshotKimiaForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/kimi_audio.py:350",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="KimiAudioForConditionalGeneration",
            defined_in="vllm/model_executor/models/kimi_audio.py:577 (KimiAudioForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".fc1.", ".mlp.fc1."),
                    (".fc2.", ".mlp.fc2."),
                ),
                prefix=(
                    ("model.encoder.", "audio_tower."),
                    ("model.vq_adaptor.layers.0.", "multi_modal_projector.vq_adaptor_layers_0."),
                    ("model.vq_adaptor.layers.3.", "multi_modal_projector.vq_adaptor_layers_3."),
                    ("model.vq_adaptor.layers.4.", "multi_modal_projector.vq_adaptor_layers_4."),
                    ("model.layers.", "language_model.model.layers."),
                    ("model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("model.norm.", "language_model.model.norm."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", None),
                    ("mimo_layers.", None),
                    ("mimo_output.", None),
                    ("mimo_norm.", None),
                ),
            ),
        ),
    ),
    "MossAudioModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/moss_audio.py:1470",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MossAudioModel",
            defined_in="vllm/model_executor/models/moss_audio.py:1910 (MossAudioModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(
                    ("lm_head.", "language_model.lm_head."),
                    ("language_model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("language_model.layers.", "language_model.model.layers."),
                    ("language_model.norm.", "language_model.model.norm."),
                    ("audio_encoder.embed_positions", None),
                ),
            ),
        ),
    ),
    "MossTranscribeDiarizeForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/moss_transcribe_diarize.py:575",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MossTranscribeDiarizeForConditionalGeneration",
            defined_in="vllm/model_executor/models/moss_transcribe_diarize.py:856 (MossTranscribeDiarizeForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("language_model.layers.", "language_model.model.layers."),
                    ("language_model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("language_model.norm.", "language_model.model.norm."),
                    ("model.language_model.model.", "language_model.model."),
                    ("model.language_model.lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("model.whisper_encoder.", "whisper_encoder."),
                    ("model.vq_adaptor.", "vq_adaptor."),
                    ("model.", None),
                )
            ),
        ),
    ),
    "MuseGlimmerAssistantModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/qwen3_dflash.py:736",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="DFlashQwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:851 (DFlashQwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="DFlashQwen3Model",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "MuseGlimmerForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/muse_glimmer.py:1142",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MuseGlimmerForCausalLM",
            defined_in="vllm/model_executor/models/muse_glimmer.py:1381 (MuseGlimmerForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (
                        "model.vision_tower.patch_embedder.position_embedding_table.weight",
                        "model.vision_tower.positional_embedding_vlm",
                    ),
                    ("model.vision_tower.layers.", "model.vision_tower.transformer."),
                    (".norm1.", ".ln_1."),
                    (".norm2.", ".ln_2."),
                    (".attn.proj.", ".attn.o_proj."),
                    (".mlp.fc1.", ".mlp.c_fc."),
                    (".mlp.fc2.", ".mlp.c_proj."),
                    (".self_attn.gate_proj", ".self_attn.output_gate_proj"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(
                    ("model.rotary_emb.", None),
                    ("model.language_model.", "model."),
                    ("language_model.", "model."),
                    (
                        "model.vision_tower.patch_embedder.patch_embedding.",
                        "model.vision_tower.conv1_linear.",
                    ),
                    ("model.vision_tower.", "vision_encoder."),
                    ("vision_tower.", "vision_encoder."),
                    ("model.vision_encoder.", "vision_encoder."),
                    ("model.vision_adapter.fc1.", "model.vision_adapter.c_fc."),
                    ("model.vision_adapter.fc2.", "model.vision_adapter.c_proj."),
                    ("model.vision_adapter.", "vision_adapter."),
                    ("model.vision_projection.", "vision_projection."),
                    ("model.perception_emb_norm.", "perception_emb_norm."),
                ),
            ),
        ),
    ),
    "MuseGlimmerForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/muse_glimmer.py:1142",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MuseGlimmerForCausalLM",
            defined_in="vllm/model_executor/models/muse_glimmer.py:1381 (MuseGlimmerForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (
                        "model.vision_tower.patch_embedder.position_embedding_table.weight",
                        "model.vision_tower.positional_embedding_vlm",
                    ),
                    ("model.vision_tower.layers.", "model.vision_tower.transformer."),
                    (".norm1.", ".ln_1."),
                    (".norm2.", ".ln_2."),
                    (".attn.proj.", ".attn.o_proj."),
                    (".mlp.fc1.", ".mlp.c_fc."),
                    (".mlp.fc2.", ".mlp.c_proj."),
                    (".self_attn.gate_proj", ".self_attn.output_gate_proj"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
                prefix=(
                    ("model.rotary_emb.", None),
                    ("model.language_model.", "model."),
                    ("language_model.", "model."),
                    (
                        "model.vision_tower.patch_embedder.patch_embedding.",
                        "model.vision_tower.conv1_linear.",
                    ),
                    ("model.vision_tower.", "vision_encoder."),
                    ("vision_tower.", "vision_encoder."),
                    ("model.vision_encoder.", "vision_encoder."),
                    ("model.vision_adapter.fc1.", "model.vision_adapter.c_fc."),
                    ("model.vision_adapter.fc2.", "model.vision_adapter.c_proj."),
                    ("model.vision_adapter.", "vision_adapter."),
                    ("model.vision_projection.", "vision_projection."),
                    ("model.perception_emb_norm.", "perception_emb_norm."),
                ),
            ),
        ),
    ),
    "MuseSparkDSparkModel": ArchClass(
        kind="dynamic",
        resolved="vllm/models/muse_spark/common/dspark.py:278",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MuseSparkDSparkForCausalLM",
            defined_in="vllm/models/muse_spark/common/dspark.py:349 (MuseSparkDSparkForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="MuseSparkDSparkModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "MuseSparkForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/models/muse_spark/nvidia/multimodal.py:16",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="MuseSparkForConditionalGeneration",
            defined_in="vllm/models/muse_spark/nvidia/model.py:1900 (MuseSpark1xForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "NVLM_D": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/nvlm_d.py:163",
        top=Loader(
            owner="NVLM_D_Model",
            defined_in="vllm/model_executor/models/internvl.py:894 (InternVLChatModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "NanbeigeForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "NemotronForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/nemotron.py:395",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronForCausalLM",
            defined_in="vllm/model_executor/models/nemotron.py:471 (NemotronForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "NemotronHForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/nemotron_h.py:719",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronHForCausalLM",
            defined_in="vllm/model_executor/models/nemotron_h.py:918 (NemotronHForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("A_log", "A"),
                    ("embeddings", "embed_tokens"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(
                    ("backbone", "model"),
                    ("mtp", None),
                ),
            ),
        ),
    ),
    "NemotronHMTPModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nemotron_h_mtp.py:330",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronHMTP",
            defined_in="vllm/model_executor/models/nemotron_h_mtp.py:426 (NemotronHMTP.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "NemotronHPuzzleForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/nemotron_h.py:719",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronHForCausalLM",
            defined_in="vllm/model_executor/models/nemotron_h.py:918 (NemotronHForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("A_log", "A"),
                    ("embeddings", "embed_tokens"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(
                    ("backbone", "model"),
                    ("mtp", None),
                ),
            ),
        ),
    ),
    "NemotronH_Nano_Omni_Reasoning_V3": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nano_nemotron_vl.py:928",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronH_Nano_VL_V2",
            defined_in="vllm/model_executor/models/nano_nemotron_vl.py:1602 (NemotronH_Nano_VL_V2.load_weights)",
            auto=False,
        ),
    ),
    "NemotronH_Nano_VL_V2": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nano_nemotron_vl.py:928",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronH_Nano_VL_V2",
            defined_in="vllm/model_executor/models/nano_nemotron_vl.py:1602 (NemotronH_Nano_VL_V2.load_weights)",
            auto=False,
        ),
    ),
    "NemotronH_Omni_Reasoning_V3": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nano_nemotron_vl.py:928",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronH_Nano_VL_V2",
            defined_in="vllm/model_executor/models/nano_nemotron_vl.py:1602 (NemotronH_Nano_VL_V2.load_weights)",
            auto=False,
        ),
    ),
    "NemotronH_Super_Omni_Reasoning_V3": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nano_nemotron_vl.py:928",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronH_Nano_VL_V2",
            defined_in="vllm/model_executor/models/nano_nemotron_vl.py:1602 (NemotronH_Nano_VL_V2.load_weights)",
            auto=False,
        ),
    ),
    "NemotronParseForConditionalGeneration": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nemotron_parse.py:626",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NemotronParseForConditionalGeneration",
            defined_in="vllm/model_executor/models/nemotron_parse.py:751 (NemotronParseForConditionalGeneration.load_weights)",
            auto=False,
        ),
    ),
    "NomicBertModel": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/bert_with_rope.py:538",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="NomicBertModel",
            defined_in="vllm/model_executor/models/bert_with_rope.py:495 (BertWithRope.load_weights)",
            auto=False,
            indexes_params=True,
            mapper=WeightsMapper(prefix=(("model.", ""),)),
        ),
    ),
    "OPTForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/opt.py:331",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="OPTForCausalLM",
            defined_in="vllm/model_executor/models/opt.py:390 (OPTForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                ),
                prefix=(("decoder.", "model.decoder."),),
            ),
        ),
    ),
    "Olmo2ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Olmo3ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "OlmoForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "OlmoHybridForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/olmo_hybrid.py:382",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="OlmoHybridForCausalLM",
            defined_in="vllm/model_executor/models/olmo_hybrid.py:478 (OlmoHybridForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="OlmoHybridModel",
            defined_in="vllm/model_executor/models/olmo_hybrid.py:377 (OlmoHybridModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".self_attn.q_proj", ".self_attn.qkv_proj"),
                    (".self_attn.k_proj", ".self_attn.qkv_proj"),
                    (".self_attn.v_proj", ".self_attn.qkv_proj"),
                    (".linear_attn.q_proj", ".linear_attn.in_proj_qkvg"),
                    (".linear_attn.k_proj", ".linear_attn.in_proj_qkvg"),
                    (".linear_attn.v_proj", ".linear_attn.in_proj_qkvg"),
                    (".linear_attn.g_proj", ".linear_attn.in_proj_qkvg"),
                    (".q_conv1d", ".conv1d"),
                    (".k_conv1d", ".conv1d"),
                    (".v_conv1d", ".conv1d"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "OlmoeForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/olmoe.py:338",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="OlmoeForCausalLM",
            defined_in="vllm/model_executor/models/olmoe.py:403 (OlmoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "OpenAIPrivacyFilterForTokenClassification": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/openai_privacy_filter.py:81",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="OpenAIPrivacyFilterForTokenClassification",
            defined_in="vllm/model_executor/models/openai_privacy_filter.py:122 (OpenAIPrivacyFilterForTokenClassification.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=((".self_attn.", ".attn."),),
                suffix=(
                    (".embed_tokens.weight", ".embedding.weight"),
                    (".gate_up_proj_blocks", ".w13_weight"),
                    (".down_proj_blocks", ".w2_weight"),
                    (".gate_up_proj_scales", ".w13_weight_scale"),
                    (".down_proj_scales", ".w2_weight_scale"),
                    (".gate_up_proj", ".w13_weight"),
                    (".down_proj", ".w2_weight"),
                    (".gate_up_proj_bias", ".w13_bias"),
                    (".down_proj_bias", ".w2_bias"),
                    (".gate_up_proj.weight", ".w13_weight"),
                    (".gate_up_proj.weight_scale", ".w13_weight_scale"),
                    (".gate_up_proj.bias", ".w13_bias"),
                    (".gate_up_proj.input_scale", ".w13_input_scale"),
                    (".down_proj.weight", ".w2_weight"),
                    (".down_proj.weight_scale", ".w2_weight_scale"),
                    (".down_proj.bias", ".w2_bias"),
                    (".down_proj.input_scale", ".w2_input_scale"),
                ),
            ),
        ),
        model=Loader(
            owner="OpenAIPrivacyFilterModel",
            defined_in="vllm/model_executor/models/gpt_oss.py:1311 (GptOssModel.load_weights)",
            auto=False,
        ),
    ),
    "OpenCUAForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/opencua.py:208",
        top=Loader(
            owner="OpenCUAForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_5_vl.py:2121 (Qwen2_5_VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
    ),
    "OpenPanguMTPModel": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/openpangu_mtp.py:98",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="OpenPanguMTP",
            defined_in="vllm/model_executor/models/openpangu_mtp.py:146 (OpenPanguMTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "OpenPanguVLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/openpangu_vl.py:826",
        top=Loader(
            owner="OpenPanguVLForConditionalGeneration",
            defined_in="vllm/model_executor/models/openpangu_vl.py:1151 (OpenPanguVLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="PanguEmbeddedForCausalLM",
    ),
    "OpenVLAForActionPrediction": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/openvla.py:379",
        top=Loader(
            owner="OpenVLAForActionPrediction",
            defined_in="vllm/model_executor/models/openvla.py:502 (OpenVLAForActionPrediction.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "OpsColQwen3Model": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colqwen3.py:115",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColQwen3Model",
            defined_in="vllm/model_executor/models/colqwen3.py:247 (ColQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("vlm.model.visual.", "visual."),
                    ("vlm.lm_head.", "language_model.lm_head."),
                    ("vlm.model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.model.", "language_model.model."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "OrionForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/orion.py:280",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="OrionForCausalLM",
            defined_in="vllm/model_executor/models/orion.py:336 (OrionForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Ovis": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/ovis.py:409",
        top=Loader(
            owner="Ovis",
            defined_in="vllm/model_executor/models/ovis.py:548 (Ovis.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "Ovis2_5": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/ovis2_5.py:437",
        top=Loader(
            owner="Ovis2_5",
            defined_in="vllm/model_executor/models/ovis2_5.py:653 (Ovis2_5.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "Ovis2_6ForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/ovis2_5.py:437",
        top=Loader(
            owner="Ovis2_5",
            defined_in="vllm/model_executor/models/ovis2_5.py:653 (Ovis2_5.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "Ovis2_6_MoeForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/ovis2_5.py:437",
        top=Loader(
            owner="Ovis2_5",
            defined_in="vllm/model_executor/models/ovis2_5.py:653 (Ovis2_5.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "PEagleDraftModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "PaddleOCRVLForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/paddleocr_vl.py:943",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="PaddleOCRVLForConditionalGeneration",
            defined_in="vllm/model_executor/models/paddleocr_vl.py:1165 (PaddleOCRVLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "PaliGemmaForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/paligemma.py:234",
        top=Loader(
            owner="PaliGemmaForConditionalGeneration",
            defined_in="vllm/model_executor/models/paligemma.py:388 (PaliGemmaForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "PanguEmbeddedForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/openpangu.py:1223",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="PanguEmbeddedForCausalLM",
            defined_in="vllm/model_executor/models/openpangu.py:1164 (OpenPanguModelBase.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="OpenPanguModel",
            defined_in="vllm/model_executor/models/openpangu.py:1063 (OpenPanguModel.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "PanguProMoEV2ForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/openpangu.py:1231",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="PanguProMoEV2ForCausalLM",
            defined_in="vllm/model_executor/models/openpangu.py:1164 (OpenPanguModelBase.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="OpenPanguModel",
            defined_in="vllm/model_executor/models/openpangu.py:1063 (OpenPanguModel.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "PanguUltraMoEForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/openpangu.py:1227",
        holders=frozenset(["Attention", "MLAAttention"]),
        top=Loader(
            owner="PanguUltraMoEForCausalLM",
            defined_in="vllm/model_executor/models/openpangu.py:1164 (OpenPanguModelBase.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="OpenPanguModel",
            defined_in="vllm/model_executor/models/openpangu.py:1063 (OpenPanguModel.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "Param2MoEForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/param2moe.py:600",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Param2MoEForCausalLM",
            defined_in="vllm/model_executor/models/param2moe.py:708 (Param2MoEForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Param2MoEModel",
            defined_in="vllm/model_executor/models/param2moe.py:546 (Param2MoEModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    ("word_embeddings.", "embed_tokens."),
                    (".attention.query_key_value.", ".self_attn.qkv_proj."),
                    (".attention.dense.", ".self_attn.o_proj."),
                    (".attention.query_layernorm.", ".self_attn.q_layernorm."),
                    (".attention.key_layernorm.", ".self_attn.k_layernorm."),
                    (".attention.", ".self_attn."),
                    (".mlp.gate.expert_bias", ".mlp.gate.e_score_correction_bias"),
                ),
                stacked=(
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                ),
            ),
        ),
    ),
    "ParseAuxMTPModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/nemotron_parse3_5_mtp.py:28",
        top=Loader(
            owner="ParseAuxMTPModel",
            defined_in="vllm/model_executor/models/nemotron_parse3_5_mtp.py:72 (ParseAuxMTPModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                prefix=(
                    ("decoder.embed_tokens.", "model.embed_tokens."),
                    ("decoder.extra_heads.0.", "model.extra_head."),
                    ("decoder.extra_proj.0.", "model.extra_proj."),
                )
            ),
        ),
    ),
    "PeagleLlamaForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/llama_eagle3.py:306",
        top=Loader(
            owner="Eagle3LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama_eagle3.py:420 (Eagle3LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama_eagle3.py:301 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "PeagleQwen3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_eagle3.py:285",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Eagle3Qwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_eagle3.py:398 (Eagle3Qwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_hidden", None),)),
        ),
        model=Loader(
            owner="Qwen3Eagle3Model",
            defined_in="vllm/model_executor/models/qwen3_eagle3.py:280 (Qwen3Eagle3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("midlayer.", "layers.0."),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Phi3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/phi3.py:10",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Phi3ForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Phi3VForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/phi3v.py:535",
        top=Loader(
            owner="Phi3VForCausalLM",
            defined_in="vllm/model_executor/models/phi3v.py:684 (Phi3VForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.vision_embed_tokens.wte", "embed_tokens"),
                    ("model.vision_embed_tokens.", "vision_embed_tokens."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="LlamaForCausalLM",
    ),
    "Phi4ForCausalLMV": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/phi4siglip.py:217",
        top=Loader(
            owner="Phi4ForCausalLMV",
            defined_in="vllm/model_executor/models/phi4siglip.py:391 (Phi4ForCausalLMV.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.vision_tower.vision_tower.vision_model.head.", None),
                    ("model.vision_tower.vision_tower.", "vision_tower."),
                    ("model.mm_projector.0.", "multi_modal_projector.linear_1."),
                    ("model.mm_projector.2.", "multi_modal_projector.linear_2."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Phi3ForCausalLM",
    ),
    "Phi4MMForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/phi4mm.py:1035",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Phi4MMForCausalLM",
            defined_in="vllm/model_executor/models/phi4mm.py:1300 (Phi4MMForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("base_layer.", ""),
                    ("lora", None),
                ),
                prefix=(
                    (
                        "model.embed_tokens_extend.audio_embed.audio_projection.vision.",
                        "embed_tokens_extend.audio_projection_for_vision.",
                    ),
                    (
                        "model.embed_tokens_extend.audio_embed.audio_projection.speech.",
                        "embed_tokens_extend.audio_projection.",
                    ),
                    ("model.embed_tokens_extend.audio_embed.", "embed_tokens_extend."),
                    ("model.embed_tokens_extend.image_embed.", "vision_encoder."),
                ),
            ),
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "PhiForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "PhiMoEForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/phimoe.py:514",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="PhiMoEForCausalLM",
            defined_in="vllm/model_executor/models/phimoe.py:583 (PhiMoEForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                )
            ),
        ),
    ),
    "PixtralForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/pixtral.py:349",
        top=Loader(
            owner="PixtralForConditionalGeneration",
            defined_in="vllm/model_executor/models/pixtral.py:515 (PixtralForConditionalGeneration.load_weights)",
            auto=False,
        ),
    ),
    "Plamo3ForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/plamo3.py:395",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Plamo3ForCausalLM",
            defined_in="vllm/model_executor/models/plamo3.py:455 (Plamo3ForCausalLM.load_weights)",
            auto=True,
        ),
    ),
    "QianfanOCRForConditionalGeneration": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/qianfan_ocr.py:85",
        top=Loader(
            owner="QianfanOCRForConditionalGeneration",
            defined_in="vllm/model_executor/models/internvl.py:894 (InternVLChatModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Qwen2AudioForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/qwen2_audio.py:325",
        top=Loader(
            owner="Qwen2AudioForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_audio.py:478 (Qwen2AudioForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "Qwen2ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen2.py:458",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen2ForCausalLM",
            defined_in="vllm/model_executor/models/qwen2.py:519 (Qwen2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen2Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen2ForProcessRewardModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen2_rm.py:106",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen2ForProcessRewardModel",
            defined_in="vllm/model_executor/models/qwen2_rm.py:88 (Qwen2RewardBaseModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen2Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen2ForRewardModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen2_rm.py:94",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen2ForRewardModel",
            defined_in="vllm/model_executor/models/qwen2_rm.py:88 (Qwen2RewardBaseModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen2Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen2Model": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen2.py:458",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen2ForCausalLM",
            defined_in="vllm/model_executor/models/qwen2.py:519 (Qwen2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen2Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen2MoeForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/qwen2_moe.py:423",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen2MoeForCausalLM",
            defined_in="vllm/model_executor/models/qwen2_moe.py:497 (Qwen2MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen2VLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/qwen2_vl.py:1286",
        top=Loader(
            owner="Qwen2VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_vl.py:1852 (Qwen2VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "Qwen2_5OmniForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/qwen2_5_omni_thinker.py:1098",
        top=Loader(
            owner="Qwen2_5OmniThinkerForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_5_omni_thinker.py:1598 (Qwen2_5OmniThinkerForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("talker.", None),
                    ("token2wav.", None),
                )
            ),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "Qwen2_5OmniModel": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/qwen2_5_omni_thinker.py:1098",
        top=Loader(
            owner="Qwen2_5OmniThinkerForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_5_omni_thinker.py:1598 (Qwen2_5OmniThinkerForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("talker.", None),
                    ("token2wav.", None),
                )
            ),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "Qwen2_5_VLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/qwen2_5_vl.py:1294",
        top=Loader(
            owner="Qwen2_5_VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen2_5_vl.py:2121 (Qwen2_5_VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", "language_model.model."),
                )
            ),
        ),
        language_model="Qwen2ForCausalLM",
    ),
    "Qwen3ASRForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_asr.py:393",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3ASRForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_asr.py:604 (Qwen3ASRForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("model.audio_tower.", "audio_tower."),
                    ("model.language_model.", "language_model.model."),
                    ("model.multi_modal_projector.linear_1.", "audio_tower.proj1."),
                    ("model.multi_modal_projector.linear_2.", "audio_tower.proj2."),
                    ("talker.", None),
                    ("code2wav.", None),
                )
            ),
        ),
    ),
    "Qwen3ASRForcedAlignerForTokenClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_asr_forced_aligner.py:30",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3ASRForcedAlignerForTokenClassification",
            defined_in="vllm/model_executor/models/qwen3_asr_forced_aligner.py:118 (Qwen3ASRForcedAlignerForTokenClassification.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "classifier."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("talker.", None),
                    ("code2wav.", None),
                )
            ),
        ),
    ),
    "Qwen3ASRRealtimeGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_asr_realtime.py:176",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3ASRRealtimeGeneration",
            defined_in="vllm/model_executor/models/qwen3_asr.py:604 (Qwen3ASRForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("model.audio_tower.", "audio_tower."),
                    ("model.language_model.", "language_model.model."),
                    ("model.multi_modal_projector.linear_1.", "audio_tower.proj1."),
                    ("model.multi_modal_projector.linear_2.", "audio_tower.proj2."),
                    ("talker.", None),
                    ("code2wav.", None),
                )
            ),
        ),
    ),
    "Qwen3DSparkModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_dspark.py:233",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3DSparkForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dspark.py:312 (Qwen3DSparkForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_embedding", None),)),
        ),
        model=Loader(
            owner="Qwen3DSparkModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Qwen3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3.py:280",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3.py:346 (Qwen3ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen3MoeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_moe.py:543",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3MoeForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_moe.py:657 (Qwen3MoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3MoeModel",
            defined_in="vllm/model_executor/models/qwen3_moe.py:528 (Qwen3MoeModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                )
            ),
        ),
        executed=True,
    ),
    "Qwen3NextForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_next.py:813",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3NextForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_next.py:924 (Qwen3NextForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(prefix=(("mtp.", None),)),
        ),
        model=Loader(
            owner="Qwen3NextModel",
            defined_in="vllm/model_executor/models/qwen3_next.py:756 (Qwen3NextModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen3NextMTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_next_mtp.py:177",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3NextMTP",
            defined_in="vllm/model_executor/models/qwen3_next_mtp.py:235 (Qwen3NextMTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3NextMultiTokenPredictor",
            defined_in="vllm/model_executor/models/qwen3_next_mtp.py:164 (Qwen3NextMultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                )
            ),
        ),
    ),
    "Qwen3OmniDSparkModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_dspark.py:233",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3DSparkForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_dspark.py:312 (Qwen3DSparkForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("mask_embedding", None),)),
        ),
        model=Loader(
            owner="Qwen3DSparkModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Qwen3OmniMoeForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/qwen3_omni_moe_thinker.py:1611",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3OmniMoeThinkerForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_omni_moe_thinker.py:2000 (Qwen3OmniMoeThinkerForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("thinker.lm_head.", "language_model.lm_head."),
                    ("thinker.model.", "language_model.model."),
                    ("thinker.", ""),
                    ("talker.", None),
                    ("code2wav.", None),
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "Qwen3VLForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_vl.py:1938",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_vl.py:3227 (Qwen3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "Qwen3VLMoeForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_vl_moe.py:230",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3VLMoeForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_vl.py:3227 (Qwen3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "Qwen3VLNemotronEmbedModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/colqwen3.py:115",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="ColQwen3Model",
            defined_in="vllm/model_executor/models/colqwen3.py:247 (ColQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("vlm.model.visual.", "visual."),
                    ("vlm.lm_head.", "language_model.lm_head."),
                    ("vlm.model.language_model.", "language_model.model."),
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.model.", "language_model.model."),
                    ("model.language_model.", "language_model.model."),
                )
            ),
        ),
    ),
    "Qwen3XPressModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_xpress.py:273",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3XPressForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_xpress.py:313 (Qwen3XPressForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3XPressModel",
            defined_in="vllm/model_executor/models/qwen3_dflash.py:731 (DFlashQwen3Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                regex=(
                    ("(?<![A-Za-z0-9_])midlayer(?=\\.|\\*|$)", "layers.0"),
                    ("(?<![A-Za-z0-9_])encoder\\.output_norm_enc(?=\\.|\\*|$)", "hidden_norm"),
                    ("(?<![A-Za-z0-9_])encoder\\.fc(?=\\.|\\*|$)", "fc"),
                ),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                ),
            ),
        ),
    ),
    "Qwen3_5ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5.py:451",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5ForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_5.py:438 (Qwen3_5ForCausalLMBase.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "model."),
                    ("mtp.", None),
                )
            ),
        ),
        model=Loader(
            owner="Qwen3_5Model",
            defined_in="vllm/model_executor/models/qwen3_5.py:282 (Qwen3_5Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                )
            ),
        ),
    ),
    "Qwen3_5ForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5.py:473",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5ForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_5.py:604 (Qwen3_5ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("mtp.", None),
                )
            ),
        ),
    ),
    "Qwen3_5MTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5_mtp.py:216",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5MTP",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:307 (Qwen3_5MTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3_5MultiTokenPredictor",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:193 (Qwen3_5MultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                )
            ),
        ),
    ),
    "Qwen3_5MoeForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5.py:455",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5MoeForCausalLM",
            defined_in="vllm/model_executor/models/qwen3_5.py:438 (Qwen3_5ForCausalLMBase.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "model."),
                    ("mtp.", None),
                )
            ),
        ),
        model=Loader(
            owner="Qwen3_5Model",
            defined_in="vllm/model_executor/models/qwen3_5.py:282 (Qwen3_5Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                )
            ),
        ),
    ),
    "Qwen3_5MoeForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5.py:703",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5MoeForConditionalGeneration",
            defined_in="vllm/model_executor/models/qwen3_5.py:604 (Qwen3_5ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.visual.", "visual."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.language_model.", "language_model.model."),
                    ("mtp.", None),
                )
            ),
        ),
    ),
    "Qwen3_5MoeMTP": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/qwen3_5_mtp.py:322",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Qwen3_5MoeMTP",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:307 (Qwen3_5MTP.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3_5MultiTokenPredictor",
            defined_in="vllm/model_executor/models/qwen3_5_mtp.py:193 (Qwen3_5MultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                )
            ),
        ),
    ),
    "Qwen4ExpForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/models/qwen4_exp/nvidia/model.py:686",
        holders=frozenset(["Attention", "fixed"]),
        top=Loader(
            owner="Qwen4ExpForCausalLM",
            defined_in="vllm/models/qwen4_exp/nvidia/model.py:916 (Qwen4ExpForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("mtp.", None),), prefix=(("model.language_model.", "model."),)
            ),
        ),
        model=Loader(
            owner="Qwen4ExpModel",
            defined_in="vllm/models/qwen4_exp/nvidia/model.py:642 (Qwen4ExpModel.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "Qwen4ExpForConditionalGeneration": ArchClass(
        kind="dynamic",
        resolved="vllm/models/qwen4_exp/nvidia/model.py:937",
        holders=frozenset(["Attention", "fixed"]),
        top=Loader(
            owner="Qwen4ExpForConditionalGeneration",
            defined_in="vllm/models/qwen4_exp/nvidia/model.py:1121 (Qwen4ExpForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Qwen4ExpMTP": ArchClass(
        kind="llama-like",
        resolved="vllm/models/qwen4_exp/nvidia/mtp.py:400",
        holders=frozenset(["Attention", "fixed"]),
        top=Loader(
            owner="Qwen4ExpMTP",
            defined_in="vllm/models/qwen4_exp/nvidia/mtp.py:470 (Qwen4ExpMTP.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=(("hyper_connection_mixer.block_inject_weight", None),)),
        ),
        model=Loader(
            owner="Qwen4ExpMultiTokenPredictor",
            defined_in="vllm/models/qwen4_exp/nvidia/mtp.py:382 (Qwen4ExpMultiTokenPredictor.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(("hyper_connection_mixer.block_inject_weight", None),),
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_expert.gate_proj", ".shared_expert.gate_up_proj"),
                    (".shared_expert.up_proj", ".shared_expert.gate_up_proj"),
                    (".in_proj_qkv", ".in_proj_qkvz"),
                    (".in_proj_z", ".in_proj_qkvz"),
                    (".in_proj_b", ".in_proj_ba"),
                    (".in_proj_a", ".in_proj_ba"),
                    (
                        "hyper_connection.input_mix_weight_down.weight",
                        "hyper_connection.input_mix_weight_down_block_inject.weight",
                    ),
                    (
                        "hyper_connection.block_inject_weight.weight",
                        "hyper_connection.input_mix_weight_down_block_inject.weight",
                    ),
                    ("ple.key_proj", "ple.kv_proj"),
                    ("ple.value_proj", "ple.kv_proj"),
                ),
            ),
        ),
    ),
    "RForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/rvl.py:87",
        top=Loader(
            owner="RForConditionalGeneration",
            defined_in="vllm/model_executor/models/llava_onevision.py:910 (LlavaOnevisionForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.language_model.", "language_model.model."),
                    ("model.vision_tower.", "vision_tower."),
                    ("model.multi_modal_projector.", "multi_modal_projector."),
                    ("model.image_newline", "image_newline"),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "RadioMBartPrefixForCausalLM": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/nemotron_parse3_5.py:657",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RadioMBartPrefixForCausalLM",
            defined_in="vllm/model_executor/models/nemotron_parse3_5.py:813 (RadioMBartPrefixForCausalLM.load_weights)",
            auto=False,
        ),
    ),
    "Rnj1ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/rnj1.py:331",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Rnj1ForCausalLM",
            defined_in="vllm/model_executor/models/rnj1.py:397 (Rnj1ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "RobertaForMaskedLM": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/roberta.py:117",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaEmbeddingModel",
            defined_in="vllm/model_executor/models/roberta.py:153 (RobertaEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "RobertaForSequenceClassification": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/roberta.py:271",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaForSequenceClassification",
            defined_in="vllm/model_executor/models/roberta.py:322 (RobertaForSequenceClassification.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("emb_ln", "embeddings.LayerNorm"),
                    ("layers", "layer"),
                    ("mixer.Wqkv", "attention.self.qkv_proj"),
                    ("mixer.out_proj", "attention.output.dense"),
                    ("norm1", "attention.output.LayerNorm"),
                    ("mlp.fc1", "intermediate.dense"),
                    ("mlp.fc2", "output.dense"),
                    ("norm2", "output.LayerNorm"),
                )
            ),
        ),
    ),
    "RobertaForTokenClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/roberta.py:351",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaForTokenClassification",
            defined_in="vllm/model_executor/models/roberta.py:386 (RobertaForTokenClassification.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "RobertaModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/roberta.py:117",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaEmbeddingModel",
            defined_in="vllm/model_executor/models/roberta.py:153 (RobertaEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "SarvamMLAForCausalLM": ArchClass(
        kind="mla",
        resolved="vllm/model_executor/models/sarvam.py:644",
        holders=frozenset(["MLAAttention"]),
        top=Loader(
            owner="SarvamMLAForCausalLM",
            defined_in="vllm/model_executor/models/sarvam.py:743 (SarvamMLAForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="SarvamMLAModel",
            defined_in="vllm/model_executor/models/sarvam.py:593 (SarvamMLAModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                )
            ),
        ),
        executed=True,
    ),
    "SarvamMoEForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/sarvam.py:751",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="SarvamMoEForCausalLM",
            defined_in="vllm/model_executor/models/bailing_moe.py:563 (BailingMoeForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="BailingMoeModel",
            defined_in="vllm/model_executor/models/bailing_moe.py:481 (BailingMoeModel.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                stacked=(
                    (".mlp.gate_proj", ".mlp.gate_up_proj"),
                    (".mlp.up_proj", ".mlp.gate_up_proj"),
                    (".shared_experts.gate_proj", ".shared_experts.gate_up_proj"),
                    (".shared_experts.up_proj", ".shared_experts.gate_up_proj"),
                )
            ),
        ),
    ),
    "SeedOssForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "SiglipModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/siglip.py:896",
        top=Loader(
            owner="SiglipEmbeddingModel",
            defined_in="vllm/model_executor/models/siglip.py:1151 (SiglipEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=((".position_ids", None),)),
        ),
    ),
    "SkyworkR1VChatModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/skyworkr1v.py:130",
        top=Loader(
            owner="SkyworkR1VChatModel",
            defined_in="vllm/model_executor/models/skyworkr1v.py:412 (SkyworkR1VChatModel.load_weights)",
            auto=True,
            mapper_unresolved=True,
        ),
    ),
    "SmolLM3ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "SmolVLMForConditionalGeneration": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/smolvlm.py:31",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="SmolVLMForConditionalGeneration",
            defined_in="vllm/model_executor/models/idefics3.py:822 (Idefics3ForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "SolarForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/solar.py:349",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="SolarForCausalLM",
            defined_in="vllm/model_executor/models/solar.py:423 (SolarForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "StableLmForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/stablelm.py:271",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="StablelmForCausalLM",
            defined_in="vllm/model_executor/models/stablelm.py:327 (StablelmForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Starcoder2ForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "Step1ForCausalLM": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/step1.py:314",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step1ForCausalLM",
            defined_in="vllm/model_executor/models/step1.py:385 (Step1ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Step3TextForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/step3_text.py:521",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step3TextForCausalLM",
            defined_in="vllm/model_executor/models/step3_text.py:569 (Step3TextForCausalLM.load_weights)",
            auto=True,
        ),
        model=Loader(
            owner="Step3TextModel",
            defined_in="vllm/model_executor/models/step3_text.py:385 (Step3TextModel.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "Step3VLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/step3_vl.py:494",
        top=Loader(
            owner="Step3VLForConditionalGeneration",
            defined_in="vllm/model_executor/models/step3_vl.py:986 (Step3VLForConditionalGeneration.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "Step3p5ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/step3p5.py:848",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step3p5ForCausalLM",
            defined_in="vllm/model_executor/models/step3p5.py:943 (Step3p5ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(substr=((".share_expert.", ".moe.share_expert."),)),
        ),
        model=Loader(
            owner="Step3p5Model",
            defined_in="vllm/model_executor/models/step3p5.py:581 (Step3p5Model.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "Step3p5MTP": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/step3p5_mtp.py:158",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step3p5MTP",
            defined_in="vllm/model_executor/models/step3p5_mtp.py:202 (Step3p5MTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "Step3p7ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/step3p7.py:21",
        top=Loader(
            owner="Step3p7ForConditionalGeneration",
            defined_in="vllm/model_executor/models/step3_vl.py:986 (Step3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "Step5ForCausalLM": ArchClass(
        kind="dynamic",
        resolved="vllm/models/step5/nvidia/model.py:2325",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step5ForCausalLM",
            defined_in="vllm/models/step5/nvidia/model.py:2439 (Step5ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="Step5Model",
            defined_in="vllm/models/step5/nvidia/model.py:2154 (Step5Model.load_weights)",
            auto=False,
            remap=True,
            indexes_params=True,
        ),
    ),
    "Step5ForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/models/step5/nvidia/vl.py:12",
        top=Loader(
            owner="Step5ForConditionalGeneration",
            defined_in="vllm/model_executor/models/step3_vl.py:986 (Step3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "Step5MTP": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/models/step5/nvidia/mtp.py:267",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Step5MTP",
            defined_in="vllm/models/step5/nvidia/mtp.py:353 (Step5MTP.load_weights)",
            auto=False,
            indexes_params=True,
        ),
    ),
    "StepVLForConditionalGeneration": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/step_vl.py:482",
        top=Loader(
            owner="StepVLForConditionalGeneration",
            defined_in="vllm/model_executor/models/step3_vl.py:986 (Step3VLForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.", "language_model.model."),
                    ("lm_head.", "language_model.lm_head."),
                )
            ),
        ),
    ),
    "TeleChat2ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/telechat2.py:107",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="TeleChat2ForCausalLM",
            defined_in="vllm/model_executor/models/telechat2.py:129 (TeleChat2ForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".h.", ".layers."),
                    (".self_attention.", ".self_attn."),
                    (".word_embeddings.", ".embed_tokens."),
                    (".dense.", ".o_proj."),
                    (".ln_f.", ".norm."),
                ),
                prefix=(("transformer.", "model."),),
            ),
        ),
        model=Loader(
            owner="TeleChat2Model",
            defined_in="vllm/model_executor/models/telechat2.py:100 (TeleChat2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".query", ".qkv_proj"),
                    (".key", ".qkv_proj"),
                    (".value", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "TeleChat3ForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/llama.py:464",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="LlamaForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "TeleFLMForCausalLM": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/teleflm.py:34",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="TeleFLMForCausalLM",
            defined_in="vllm/model_executor/models/llama.py:559 (LlamaForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="LlamaModel",
            defined_in="vllm/model_executor/models/llama.py:459 (LlamaModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "Terratorch": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/terratorch.py:247",
        top=Loader(
            owner="Terratorch",
            defined_in="vllm/model_executor/models/terratorch.py:294 (Terratorch.load_weights)",
            auto=True,
        ),
    ),
    "TransformersEmbeddingModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:161",
        top=Loader(
            owner="TransformersEmbeddingModel",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersForMTP": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:137",
        top=Loader(
            owner="TransformersForMTP",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersForSequenceClassification": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:176",
        top=Loader(
            owner="TransformersForSequenceClassification",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMoEEmbeddingModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:164",
        top=Loader(
            owner="TransformersMoEEmbeddingModel",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMoEForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:133",
        top=Loader(
            owner="TransformersMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMoEForMTP": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:140",
        top=Loader(
            owner="TransformersMoEForMTP",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMoEForSequenceClassification": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:181",
        top=Loader(
            owner="TransformersMoEForSequenceClassification",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMultiModalEmbeddingModel": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:172",
        top=Loader(
            owner="TransformersMultiModalEmbeddingModel",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMultiModalForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:149",
        top=Loader(
            owner="TransformersMultiModalForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMultiModalForSequenceClassification": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:191",
        top=Loader(
            owner="TransformersMultiModalForSequenceClassification",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "TransformersMultiModalMoEForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:157",
        top=Loader(
            owner="TransformersMultiModalMoEForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "UltravoxModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/ultravox.py:621",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="UltravoxModel",
            defined_in="vllm/model_executor/models/ultravox.py:946 (UltravoxModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("audio_tower.model.encoder.", "audio_tower."),
                    ("audio_tower.model.", None),
                    ("audio_tower.proj_out.", None),
                )
            ),
        ),
    ),
    "UnlimitedOCRForCausalLM": ArchClass(
        kind="multimodal-wrapper",
        resolved="vllm/model_executor/models/unlimited_ocr.py:265",
        top=Loader(
            owner="UnlimitedOCRForCausalLM",
            defined_in="vllm/model_executor/models/deepseek_ocr.py:616 (DeepseekOCRForCausalLM.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                prefix=(
                    ("model.embed_tokens.", "language_model.model.embed_tokens."),
                    ("model.layers.", "language_model.model.layers."),
                    ("model.norm.", "language_model.model.norm."),
                    ("lm_head.", "language_model.lm_head."),
                    ("model.", ""),
                )
            ),
        ),
    ),
    "VaultGemmaForCausalLM": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:130",
        top=Loader(
            owner="TransformersForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "VibeVoiceAsrForConditionalGeneration": ArchClass(
        kind="no-kv-holder",
        resolved="vllm/model_executor/models/transformers/__init__.py:149",
        top=Loader(
            owner="TransformersMultiModalForCausalLM",
            defined_in="vllm/model_executor/models/transformers/base.py:827 (Base.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
    ),
    "VoxtralForConditionalGeneration": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/voxtral.py:301",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="VoxtralForConditionalGeneration",
            defined_in="vllm/model_executor/models/voxtral.py:494 (VoxtralForConditionalGeneration.load_weights)",
            auto=False,
        ),
    ),
    "VoxtralRealtimeGeneration": ArchClass(
        kind="attention-custom-loader",
        resolved="vllm/model_executor/models/voxtral_realtime.py:240",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="VoxtralRealtimeGeneration",
            defined_in="vllm/model_executor/models/voxtral.py:494 (VoxtralForConditionalGeneration.load_weights)",
            auto=False,
        ),
    ),
    "VoyageQwen3BidirectionalEmbedModel": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/voyage.py:19",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="VoyageQwen3BidirectionalEmbedModel",
            defined_in="vllm/model_executor/models/voyage.py:70 (VoyageQwen3BidirectionalEmbedModel.load_weights)",
            auto=True,
            quant_visible=True,
        ),
        model=Loader(
            owner="Qwen3Model",
            defined_in="vllm/model_executor/models/qwen2.py:453 (Qwen2Model.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                stacked=(
                    (".q_proj", ".qkv_proj"),
                    (".k_proj", ".qkv_proj"),
                    (".v_proj", ".qkv_proj"),
                    (".gate_proj", ".gate_up_proj"),
                    (".up_proj", ".gate_up_proj"),
                )
            ),
        ),
    ),
    "WhisperForConditionalGeneration": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/whisper.py:803",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="WhisperForConditionalGeneration",
            defined_in="vllm/model_executor/models/whisper.py:1039 (WhisperForConditionalGeneration.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    (".fc1.", ".mlp.fc1."),
                    (".fc2.", ".mlp.fc2."),
                ),
                stacked=(
                    (".self_attn.q_proj", ".self_attn.qkv_proj"),
                    (".self_attn.k_proj", ".self_attn.qkv_proj"),
                    (".self_attn.v_proj", ".self_attn.qkv_proj"),
                    (".encoder_attn.k_proj", ".encoder_attn.kv_proj"),
                    (".encoder_attn.v_proj", ".encoder_attn.kv_proj"),
                ),
                prefix=(("proj_out.", None),),
            ),
        ),
    ),
    "XLMRobertaForSequenceClassification": ArchClass(
        kind="attention-renamed",
        resolved="vllm/model_executor/models/roberta.py:271",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaForSequenceClassification",
            defined_in="vllm/model_executor/models/roberta.py:322 (RobertaForSequenceClassification.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("emb_ln", "embeddings.LayerNorm"),
                    ("layers", "layer"),
                    ("mixer.Wqkv", "attention.self.qkv_proj"),
                    ("mixer.out_proj", "attention.output.dense"),
                    ("norm1", "attention.output.LayerNorm"),
                    ("mlp.fc1", "intermediate.dense"),
                    ("mlp.fc2", "output.dense"),
                    ("norm2", "output.LayerNorm"),
                )
            ),
        ),
    ),
    "XLMRobertaForTokenClassification": ArchClass(
        kind="llama-like",
        resolved="vllm/model_executor/models/roberta.py:351",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaForTokenClassification",
            defined_in="vllm/model_executor/models/roberta.py:386 (RobertaForTokenClassification.load_weights)",
            auto=True,
            quant_visible=True,
        ),
    ),
    "XLMRobertaModel": ArchClass(
        kind="dynamic",
        resolved="vllm/model_executor/models/roberta.py:117",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="RobertaEmbeddingModel",
            defined_in="vllm/model_executor/models/roberta.py:153 (RobertaEmbeddingModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper_unresolved=True,
        ),
        model=Loader(
            owner="BertModel",
            defined_in="vllm/model_executor/models/bert.py:420 (BertModel.load_weights)",
            auto=True,
            quant_visible=True,
            mapper=WeightsMapper(
                substr=(
                    ("LayerNorm.gamma", "LayerNorm.weight"),
                    ("LayerNorm.beta", "LayerNorm.bias"),
                ),
                stacked=(
                    (".self.query", ".self.qkv_proj"),
                    (".self.key", ".self.qkv_proj"),
                    (".self.value", ".self.qkv_proj"),
                ),
                prefix=(("pooler.", None),),
            ),
        ),
    ),
    "Zamba2ForCausalLM": ArchClass(
        kind="attention-without-quant_config",
        resolved="vllm/model_executor/models/zamba2.py:833",
        holders=frozenset(["Attention"]),
        top=Loader(
            owner="Zamba2ForCausalLM",
            defined_in="vllm/model_executor/models/zamba2.py:994 (Zamba2ForCausalLM.load_weights)",
            auto=True,
            mapper=WeightsMapper(
                substr=(
                    ("A_log", "A"),
                    ("0.weight", "A.weight"),
                    ("1.weight", "B.weight"),
                ),
                stacked=(
                    (".self_attn.q_proj", ".self_attn.qkv_proj"),
                    (".self_attn.k_proj", ".self_attn.qkv_proj"),
                    (".self_attn.v_proj", ".self_attn.qkv_proj"),
                ),
            ),
        ),
    ),
}
"""Registered architecture -> its facts (every entry of vLLM's model registry)."""
