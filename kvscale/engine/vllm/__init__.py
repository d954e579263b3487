"""vLLM 0.33.0: how it reads KV-cache scales from a checkpoint.

* ``quant_config``: quant method detection, ``auto`` KV-cache dtype, model dtype, refusals;
* ``kv_cache_dtypes``: the ``--kv-cache-dtype`` values and the cache format each stores;
* ``skip_layers``: ``--kv-cache-dtype-skip-layers``, boundary layers, sliding windows;
* ``backends``: which attention backend runs which dtype (GPU, head size, MLA), from
  ``backend_table`` (generated) and ``backend_types``;
* ``names``: the cache-scale name mapper;
* ``architectures`` (generated): per-architecture loader facts (stacked renames, custom
  loaders, prefixes);
* ``arch_classes`` (generated) and ``loaders``: every registered architecture's KV-scale
  holders, loaders and name mappers, as data;

The generated modules are rendered from the parity oracles' evidence by
``tests/parity/render_tables.py`` (``tests/parity/README.md``, "Generated tables").
* ``placement``: where those loaders send a scale tensor (MLA models, hybrids, hand-written
  loaders), in vLLM's own words where it refuses one;
* ``mla``: MLA models: latent layers, their KV-cache dtype, what the MLA backends do with k;
* ``rules``: ``BaseKVCacheMethod`` and ``CompressedTensorsKVCacheMethod`` after loading.

The ``Engine`` itself (``engine.py``) is found through ``kvscale.engine.registry``.
"""
