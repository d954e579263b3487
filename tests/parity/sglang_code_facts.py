"""What SGLang 0.5.23's code does with KV-cache scales where the parity oracle cannot execute it
(attention backends, KV pools, kernels): statements, each tied to the lines that show it.

`tests/parity/sglang_oracle.py` checks every citation against the SGLang source tree (the
line must hold its anchor text) and records the facts, with the cited lines as they read, in
`sglang_expected.json` (``code_facts``); a stale citation stops the oracle. Paths are under
``sglang/``. The statements are code reading, not runs: the GPU kernels they name are not in
the wheel's Python.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FACTS"]

FACTS: list[dict[str, Any]] = []

A = "srt/layers/attention/"
P = "srt/mem_cache/memory_pool.py"
Q = "srt/layers/quantization/"


def fact(fid: str, topic: str, statement: str, *cites: tuple[str, int, str]) -> None:
    """``cites``: (file, line, text that line holds)."""
    FACTS.append({"id": fid, "topic": topic, "statement": statement, "cites": list(cites)})


# ---- MLA: loading -------------------------------------------------------------------------
fact(
    "mla.load.rename",
    "mla_loading",
    "DeepSeek's loader: a name holding k_scale / v_scale that is not a parameter gets its "
    "first 'k_proj' / 'v_proj' replaced by 'attn_mqa' (k_scale tested first, so a "
    "'...kv_scale' name, which holds 'v_scale', looks for 'v_proj'); still absent: "
    "'<name> not found in params_dict.' and dropped. attn_mha's scales are never loaded.",
    ("srt/models/deepseek_common/deepseek_weight_loader.py", 516, '"k_scale" in name'),
    ("srt/models/deepseek_common/deepseek_weight_loader.py", 522, 'f"{scale[0]}_proj", "attn_mqa"'),
    ("srt/models/deepseek_common/deepseek_weight_loader.py", 532, "not found in params_dict."),
)
fact(
    "mla.load.fused_a_proj",
    "mla_loading",
    "With q_lora_rank set, every name holding 'q_a_proj' or 'kv_a_proj_with_mqa' is cached "
    "until its q_a / kv_a partner arrives and is then loaded into fused_qkv_a_proj_with_mqa: "
    "a lone 'kv_a_proj_with_mqa.k_scale' waits forever, silently unloaded.",
    ("srt/models/deepseek_common/deepseek_weight_loader.py", 280, "fuse_qkv_a_proj = hasattr"),
    ("srt/models/deepseek_common/deepseek_weight_loader.py", 438, "if fuse_qkv_a_proj and ("),
)
fact(
    "mla.radix.modules",
    "mla_loading",
    "DeepseekV2AttentionMLA builds attn_mqa (latent MQA: one KV head, head_dim kv_lora_rank + "
    "qk_rope_head_dim, v_head_dim kv_lora_rank) and attn_mha (per-head MHA) with the same "
    "layer_id, both with the model's quant config (both get KV-scale parameters).",
    ("srt/models/deepseek_v2.py", 2183, "self.attn_mqa = RadixAttention("),
    ("srt/models/deepseek_v2.py", 2189, "v_head_dim=self.kv_lora_rank,"),
    ("srt/models/deepseek_v2.py", 2206, "self.attn_mha = RadixAttention("),
)
fact(
    "mla.load.mistral_large_3",
    "mla_loading",
    "Mistral-Large-3 (Mistral-format checkpoints): k/v_fake_quantizer.qscale_act are renamed "
    "to vLLM's self_attn.mla_attn.mla_attn.{k,v}_scale, which no SGLang module has: "
    "DeepSeek's loader drops them (not found in params_dict); any name outside the remap "
    "table is skipped with 'Unrecognized weight'.",
    ("srt/models/mistral_large_3.py", 25, "mla_attn.mla_attn.k_scale"),
    ("srt/models/mistral_large_3.py", 62, 'logging.warning(f"Unrecognized weight: {name}.'),
)

# ---- MLA: the cache write and the backends --------------------------------------------------
fact(
    "mla.write.pool",
    "mla_backends",
    "MLATokenToKVPool writes the latent row [kv_c | k_pe] without any scale argument: a dtype "
    "cast (torch .to, not saturating) when the pool dtype differs.",
    (P, 4942, "def set_kv_buffer("),
    (P, 4971, "cache_k = cache_k.to(self.dtype)"),
    (P, 4980, "def _write_mla_kv_buffer("),
)
fact(
    "mla.backend.flashinfer_mla",
    "mla_backends",
    "flashinfer (MLA): writes through set_mla_kv_buffer / set_kv_buffer (no scale); plans "
    "the kernels with the model dtype; reads no k_scale: a checkpoint scale is ignored.",
    (A + "flashinfer_mla_backend.py", 102, "self.data_type = model_runner.dtype"),
    (A + "flashinfer_mla_backend.py", 725, "self.token_to_kv_pool.set_mla_kv_buffer("),
)
fact(
    "mla.backend.flashmla",
    "mla_backends",
    "flashmla (FP8 cache): writes unscaled (set_kv_buffer); on decode quantizes the query with "
    "attn_mqa.k_scale and passes descale_q = descale_k = attn_mqa.k_scale: a scale != 1.0 "
    "descales a cache that was never divided by it (write and read disagree).",
    (A + "flashmla_backend.py", 447, "self.token_to_kv_pool.set_kv_buffer("),
    (A + "flashmla_backend.py", 462, "q_scale = layer.k_scale"),
    (A + "flashmla_backend.py", 463, "descale_q = layer.k_scale.reshape(1)"),
    (A + "flashmla_backend.py", 464, "descale_k = layer.k_scale.reshape(1)"),
    (A + "flashmla_backend.py", 476, "scaled_fp8_quant(reshape_q_2d, q_scale)"),
)
fact(
    "mla.backend.trtllm_mla",
    "mla_backends",
    "trtllm_mla (SM100/SM12x; also the base of cutedsl_mla): decode writes the latent with a "
    "plain FP8 cast (mla_quantize_without_rope_for_fp8) and sets bmm1 = k_scale_float * "
    "softmax scale when the cache is float8_e4m3fn (1.0 and a warning otherwise); no bmm2 "
    "(V) scale is passed. Ragged prefill quantizes K/V of attn_mha with attn_mha's own "
    "scales (1.0: never loaded). A scale != 1.0 rescales scores of an unscaled cache.",
    (A + "trtllm_mla_backend.py", 1262, "mla_quantize_without_rope_for_fp8("),
    (A + "trtllm_mla_backend.py", 959, "if self.data_type == torch.float8_e4m3fn:"),
    (A + "trtllm_mla_backend.py", 974, "return q_scale * k_scale * layer.scaling"),
    (A + "trtllm_mla_backend.py", 1052, "bmm1_scale=bmm1_scale,"),
    (A + "trtllm_mla_backend.py", 1081, "_quantize_fp8_qkv(q, k, v, layer)"),
)
fact(
    "mla.backend.cutedsl_mla",
    "mla_backends",
    "cutedsl_mla subclasses trtllm_mla: the same bmm1 = k_scale_float * softmax scale over an "
    "unscaled set_mla_kv_buffer write.",
    (A + "cutedsl_mla_backend.py", 59, "class CuteDslMLABackend(TRTLLMMLABackend):"),
    (A + "cutedsl_mla_backend.py", 119, "bmm1_scale = self._compute_decode_bmm1_scale(layer)"),
    (A + "cutedsl_mla_backend.py", 217, "self.token_to_kv_pool.set_mla_kv_buffer("),
)
fact(
    "mla.backend.trtllm_mla.dtypes",
    "mla_backends",
    "Only trtllm_mla (prefill or decode backend) is limited to --kv-cache-dtype fp8_e4m3, "
    "bf16 or auto ('bfloat16' is refused); cutedsl_mla is not checked there.",
    ("srt/arg_groups/overrides.py", 1207, 'view.attention_backend == "trtllm_mla"'),
    (
        "srt/arg_groups/overrides.py",
        1214,
        'if view.kv_cache_dtype not in ["fp8_e4m3", "bf16", "auto"]:',
    ),
)
fact(
    "mla.backend.triton",
    "mla_backends",
    "triton (MLA decode): divides the latent by attn_mqa.k_scale in place, in the model dtype "
    "(k.div_), before the unscaled MLA pool write; reads with k_descale = k_scale_float and "
    "v_descale = v_scale_float (V is the latent: written /k, read *v).",
    (A + "triton_backend.py", 2325, "if self.use_mla:"),
    (A + "triton_backend.py", 2329, "k.div_(layer.k_scale)"),
    (A + "triton_backend.py", 2369, "k_descale = layer.k_scale_float"),
    (A + "triton_backend.py", 2370, "v_descale = layer.v_scale_float"),
)
fact(
    "mla.backend.fa3",
    "mla_backends",
    "fa3: descales only when head_dim <= 256; the MLA latent head (576 for DeepSeek) never "
    "is: the scale is ignored.",
    (A + "flashattention_backend.py", 1428, "and layer.head_dim <= 256"),
    (A + "flashattention_backend.py", 1434, "k_descale = layer.k_scale.expand(descale_shape)"),
)
fact(
    "mla.backend.aiter",
    "mla_backends",
    "aiter (ROCm): the fused rope + cache write gets attn_mqa.k_scale (kernel semantics not "
    "in the wheel).",
    (
        "srt/models/deepseek_common/attention_forward_methods/forward_mla_rocm.py",
        418,
        "attn.attn_mqa.k_scale,",
    ),
    (
        "srt/models/deepseek_common/attention_forward_methods/forward_mla_rocm.py",
        486,
        "k_scale=attn.attn_mqa.k_scale,",
    ),
)

# ---- KV-cache dtypes ------------------------------------------------------------------------
fact(
    "kvdtype.auto",
    "kv_cache_dtypes",
    "--kv-cache-dtype auto picks FP8 (e4m3fn; the platform's fp8 on HIP) only when the quant "
    "config's kv_cache_quant_algo is the string 'FP8' (any case); otherwise the model dtype. "
    "'NVFP4' never selects an FP4 cache.",
    ("srt/mem_cache/kv_cache_dtype.py", 49, 'if server_args_kv_cache_dtype == "auto":'),
    ("srt/mem_cache/kv_cache_dtype.py", 54, 'and kv_cache_quant_algo.upper() == "FP8"'),
)
fact(
    "kvdtype.mha_write",
    "kv_cache_dtypes",
    "MHATokenToKVPool.set_kv_buffer: an FP4 pool hands the write to the quant method "
    "(_set_quantized_kv_buffer); any other pool divides by the k/v scale it is given, in the "
    "model dtype, then casts with torch (.to, not saturating).",
    (P, 2912, "if self.is_quantized_kv_cache:"),
    (P, 2927, "if k_scale is not None:"),
    (P, 2928, "cache_k.div_(k_scale)"),
    (P, 2931, "cache_k = cache_k.to(self.dtype)"),
)
fact(
    "kvdtype.nvfp4.load",
    "kv_cache_dtypes",
    "nvfp4 (MHA): after loading, NVFP4KVCacheMethod.load_scales_from_model reads float(k_scale) "
    "/ float(v_scale) of each layer's RadixAttention (self_attn.attn, else self_attn.attn_mqa, "
    "else attn, else attention.attn; 1.0 without a KV method) and, on SM100 only (device "
    "capability major 10) and only for a value != 1.0, multiplies it by E2M1_MAX = 6. The "
    "result fills k_scales_gpu / k_scales_float per layer_id.",
    (
        Q + "fp4_kv_cache_quant_method.py",
        490,
        "def load_scales_from_model(self, model_runner) -> None:",
    ),
    (Q + "fp4_kv_cache_quant_method.py", 557, "if get_platform().is_sm100 and k_scale != 1.0:"),
    (Q + "fp4_kv_cache_quant_method.py", 558, "k_scale *= E2M1_MAX"),
    (Q + "kvfp4_tensor.py", 19, "E2M1_MAX = 6.0"),
    (
        "srt/mem_cache/kv_cache_configurator.py",
        449,
        "quant_method.load_scales_from_model(self.model)",
    ),
)
fact(
    "kvdtype.nvfp4.quantizer",
    "kv_cache_dtypes",
    "nvfp4 write: flashinfer / trtllm_mha pass no scale when the method needs a global scale, "
    "so the pool uses k_scales_gpu[layer_id] (the x6 value) as the quantizer's global scale; "
    "a backend that passes layer.k_scale instead bypasses the x6. SM100/SM120 call "
    "flashinfer nvfp4_kv_quantize(x, global_scale), SM90 fp4_quantize(x, 1 / global_scale).",
    (A + "flashinfer_backend.py", 998, "if self.kv_cache_quant_method.needs_global_scale():"),
    (P, 3037, 'if k_scale is None and hasattr(self.quant_method, "k_scales_gpu"):'),
    (Q + "kvfp4_tensor.py", 197, "fp4_2d, scales_2d = nvfp4_kv_quantize(tensor_2d, global_scale)"),
    (Q + "kvfp4_tensor.py", 202, "global_scale_inv = 1.0 / global_scale"),
)
fact(
    "kvdtype.nvfp4.bmm",
    "kv_cache_dtypes",
    "nvfp4 read (trtllm_mha): bmm1 = q_scale * k_scale * softmax scale and bmm2 = v_scale, "
    "with (k_scale, v_scale) = get_bmm_scales(layer_id) = k_scales_float / v_scales_float (the "
    "same x6 values the quantizer got).",
    (
        Q + "fp4_kv_cache_quant_method.py",
        570,
        "return self.k_scales_float[layer_id], self.v_scales_float[layer_id]",
    ),
    (A + "trtllm_mha_backend.py", 1658, "k_scale, v_scale = self._get_nvfp4_bmm_scales(layer)"),
    (A + "trtllm_mha_backend.py", 1659, "bmm1_scale = q_scale * k_scale * layer.scaling"),
    (A + "trtllm_mha_backend.py", 1660, "bmm2_scale = v_scale"),
)
fact(
    "kvdtype.mla_fp4",
    "kv_cache_dtypes",
    "MLA model with nvfp4 or fp4_mx_block16: the configurator builds MLATokenToKVPoolFP4 "
    "(no quant method, so load_scales_from_model never runs); its write quantizes the latent "
    "with FP4MXBlock16KVQuantizeUtil.batched_quantize (per-16 block exponents, no global "
    "scale) and takes no scale argument: checkpoint k/v scales are unused.",
    (
        "srt/mem_cache/kv_cache_configurator.py",
        1874,
        "if is_float4_e2m1fn_x2(self.kv_cache_dtype):",
    ),
    (
        "srt/mem_cache/kv_cache_configurator.py",
        1875,
        "token_to_kv_pool = self._build_mla_fp4_kv_pool(",
    ),
    ("srt/mem_cache/kv_cache_configurator.py", 2457, "token_to_kv_pool = MLATokenToKVPoolFP4("),
    (P, 5209, "FP4MXBlock16KVQuantizeUtil.batched_quantize("),
)
fact(
    "kvdtype.fp4_mx_block16",
    "kv_cache_dtypes",
    "fp4_mx_block16 (MHA): FP4MXBlock16KVCacheMethod keeps the base class's no-op "
    "load_scales_from_model, and its quantize_and_store ignores the k_scale / v_scale it is "
    "handed: FP4MXBlock16KVQuantizeUtil.batched_quantize (per-16 block exponents, no global "
    "scale). Checkpoint scales are unused.",
    (Q + "fp4_kv_cache_quant_method.py", 342, "def load_scales_from_model(self, model_runner)"),
    (Q + "fp4_kv_cache_quant_method.py", 771, "class FP4MXBlock16KVCacheMethod("),
    (
        Q + "fp4_kv_cache_quant_method.py",
        860,
        "FP4MXBlock16KVQuantizeUtil.batched_quantize(cache_k)",
    ),
)
