"""``kvscale calibrate`` and ``kvscale verify --model``: the model side.

Modules (import them directly; this package imports nothing, so that ``data`` and ``scales``
stay usable without torch):

* ``data``: calibration data file -> token id samples and the file's sha256 (no torch);
* ``scales``: the calibrated-scale arithmetic, float32 step by step (no torch);
* ``model``: load a local Hugging Face model, probe and map its KV-cache attention layers;
* ``hook``: the observation point (transformers' attention-function interface);
* ``capture``: the running max |K| / |V| statistic, holdout saturation, the cache oracle;
* ``evaluate``: perplexity / KL with the KV cache held in FP8 at given scales, per-layer
  round-trip statistics, captured activations.

``model``, ``hook``, ``capture`` and ``evaluate`` need torch and transformers (>= 5.17).
"""
