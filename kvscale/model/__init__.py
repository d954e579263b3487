"""The model runtime ``calibrate``, ``verify --data`` and ``plan`` share: load a transformers model
and map its KV-cache layers (``load``), observe K/V where the engine caches them (``hook``,
``capture``), run it with its cache quantized (``evaluate``, ``cache_codecs``), read calibration
data (``data``), the scale arithmetic (``scales``) and the bundled SmolLM2 (``smollm2``). Needs
the ``calibrate`` extra (torch, transformers); nothing here is imported by ``inspect``."""
