"""TensorRT-LLM's PyTorch backend (``trtllm-serve --backend pytorch``, the LLM API): what it does
with a checkpoint's FP8 KV-cache scales. For ``kvscale inspect`` (and ``diff``) only.

Read from NVIDIA/TensorRT-LLM's main branch (the stored snapshot at
``00bbf71e796406ea8593a77cbfb828356182db16``; see ``shared/reference/sglang.md`` section 9):

* ``_torch/modules/linear.py::FP8QDQLinearMethod.load_kv_scales`` reads ``k_scale`` / ``v_scale``
  from the q/k/v projection weights, i.e. only ModelOpt's ``*.k_proj.k_scale`` and
  ``*.v_proj.v_scale`` names, each ``reshape([])`` (a per-head tensor raises);
  ``process_weights_after_loading_fused_qkv_linear`` (``TRTLLM_LOAD_KV_SCALES`` "1") asserts
  "k_scale and v_scale must be loaded together" and keeps ``[1.0, max(k), max(v)]``;
* ``_torch/modules/attention.py`` passes those scales to the attention backend only when the KV
  cache is FP4 (``has_fp4_kv_cache()``), and ``_torch/attention_backend/trtllm.py`` falls back to
  ``torch.ones(1)``: an FP8 KV cache always runs at 1.0, whatever the checkpoint holds, silently.

The ``Engine`` itself (``engine.py``) is found through ``kvscale.engine.registry``.
"""
