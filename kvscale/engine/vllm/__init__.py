"""vLLM 0.33.0: how it reads KV-cache scales from a checkpoint.

* ``quant_config``: quant method detection, ``auto`` KV-cache dtype, model dtype, refusals;
* ``names``: the cache-scale name mapper;
* ``architectures``: per-architecture loader facts (stacked renames, custom loaders, prefixes);
* ``rules``: ``BaseKVCacheMethod`` and ``CompressedTensorsKVCacheMethod`` after loading.

The ``Engine`` itself (``engine.py``) is found through ``kvscale.engine.registry``.
"""
