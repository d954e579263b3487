"""SGLang 0.5.23's ``--quantization-param-path`` JSON: the other way it loads KV scales.

``kv_cache_scales_loader`` (``srt/model_loader/weight_utils.py``) validates the file against
``QuantParamSchema``: ``model_type`` equal to the model's, ``kv_cache.dtype ==
"float8_e4m3fn"``, ``scaling_factor`` with one map per TP rank (exactly ``tp_size`` of them),
each holding every one of ``num_hidden_layers`` layer indices; ``load_kv_cache_scales``
(``srt/models/llama.py`` and 12 other model files) then sets ``k_scale = v_scale`` to that one
float per layer. Any failure is logged and every layer runs at 1.0, so what is written here
must pass every check, and one value serves K and V: the larger of the two, so neither
saturates (the other loses up to that ratio in resolution, reported).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

FILE_NAME = "kv_cache_scales.json"
"""Where ``normalize --format sglang-json`` writes it (beside kv_scales.json)."""


@dataclass(frozen=True)
class ParamJson:
    data: bytes
    disagree: tuple[tuple[str, float, float], ...]
    """(layer, k, v) of layers whose k and v differ: the file holds max(k, v) for both."""


def quantization_param_json(
    model_type: str | None,
    num_hidden_layers: int,
    layers: Sequence[tuple[int, str, float, float]],
    tp_size: int = 1,
) -> ParamJson:
    """The file for ``--quantization-param-path`` from per-layer (index, name, k, v) host
    scales. Raises ValueError when a hidden layer has no scale (SGLang would refuse the file
    and run every layer at 1.0)."""
    by_index = {index: (name, k, v) for index, name, k, v in layers}
    missing = [i for i in range(num_hidden_layers) if i not in by_index]
    if missing:
        raise ValueError(
            f"the JSON path needs a scale for each of the {num_hidden_layers} hidden layers; "
            f"none for layer {missing[0]}"
            + (f" and {len(missing) - 1} more" if missing[1:] else "")
        )
    factors = {str(i): max(by_index[i][1], by_index[i][2]) for i in range(num_hidden_layers)}
    document = {
        "model_type": model_type,
        "kv_cache": {
            "dtype": "float8_e4m3fn",
            "scaling_factor": {str(rank): factors for rank in range(tp_size)},
        },
    }
    disagree = tuple((name, k, v) for _, (name, k, v) in sorted(by_index.items()) if k != v)
    data = (json.dumps(document, indent=2, allow_nan=False) + "\n").encode()
    return ParamJson(data, disagree)
