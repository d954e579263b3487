"""SGLang 0.5.23: how it reads KV-cache scales from a checkpoint.

* ``quant_config``: quant method detection, which configs create a KV method, ``auto``
  KV-cache dtype, model dtype, start-up refusals;
* ``names``: ``maybe_remap_kv_scale_name`` and the Llama loader's lookup; the other
  architectures' recorded outcomes;
* ``architectures``: per registered architecture, its ``load_weights``'s loader class, whether
  its attention gets a KV method and which RadixAttention holds an MLA latent cache (rendered
  by ``tests/parity/render_tables.py`` from the evidence ``tests/parity/sglang_architectures.py``
  records by running every loader);
* ``models``: what the table does not cover: the KV-method verdict, where each model's
  attention modules sit (layouts), the loaders mirrored by hand (DeepSeek's, MiniCPM3's,
  Falcon-H1's, Llama-4's and Mistral-Large-3's), and KV sharing;
* ``rules``: ``BaseKVCacheMethod`` after loading (float32 sentinel, no model-dtype rounding,
  zero is "absent", fnuz doubling for every method);
* ``backends``: which copy each attention backend reads, and what each does with an MLA
  latent cache's scales;
* ``kv_cache_dtypes``: ``--kv-cache-dtype`` and its formats per platform and model kind, and
  NVFP4's global scale per GPU.

Checked bit for bit against SGLang's own code by ``tests/parity/sglang_oracle.py`` (Llama's
loader, and the loaders of Qwen2/3, Gemma2, Mistral, Phi3, Mixtral, Qwen2-MoE, DeepSeek-V2/V3
on the same cases) and ``tests/parity/sglang_architectures.py`` (every registered loader on one
tensor of each naming convention).

The ``Engine`` itself (``engine.py``) is found through ``kvscale.engine.registry``.
"""
