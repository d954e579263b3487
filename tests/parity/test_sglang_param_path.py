"""``normalize --format sglang-json``: SGLang 0.5.23's ``--quantization-param-path`` file.

Checked against SGLang's own loader (``kv_cache_scales_loader`` with ``QuantParamSchema``) when
KVSCALE_SGLANG_SRC points at the extracted wheel (it needs pydantic), else by its exact content.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.cli import CliRunner
from support.paths import EXAMPLES

from kvscale.cli import app

runner = CliRunner()


def _normalize(tmp_path: Path, example: str) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["normalize", str(EXAMPLES / example), "--out", str(out), "--engine", "sglang",
         "--format", "sglang-json"],
    )  # fmt: skip
    return result.exit_code, result.stderr, out


def test_one_scale_per_layer_max_of_k_and_v(tmp_path: Path) -> None:
    code, stderr, out = _normalize(tmp_path, "llm-compressor-fp8")
    assert code == 0, stderr
    doc = json.loads((out / "kv_cache_scales.json").read_text())
    scales = json.loads((out / "kv_scales.json").read_text())["layers"]
    want = {
        str(i): max(
            scales[f"model.layers.{i}.self_attn.attn"]["k_scale"],
            scales[f"model.layers.{i}.self_attn.attn"]["v_scale"],
        )
        for i in range(4)
    }
    assert doc == {
        "model_type": "llama",
        "kv_cache": {"dtype": "float8_e4m3fn", "scaling_factor": {"0": want}},
    }
    assert "json-scales-disagree: 4 layer(s) have k != v" in stderr


def test_a_missing_layer_writes_nothing(tmp_path: Path) -> None:
    code, stderr, out = _normalize(tmp_path, "broken")
    assert code == 1
    assert not out.exists()


def test_sglang_loads_it(tmp_path: Path) -> None:
    src = os.environ.get("KVSCALE_SGLANG_SRC")
    if not src:
        pytest.skip("set KVSCALE_SGLANG_SRC to an extracted SGLang 0.5.23 wheel to run its loader")
    pytest.importorskip("pydantic")
    code, stderr, out = _normalize(tmp_path, "llm-compressor-fp8")
    assert code == 0, stderr
    doc = json.loads((out / "kv_cache_scales.json").read_text())
    # weight_utils imports half of SGLang; its two schema classes need pydantic only.
    import ast

    source = Path(src, "sglang/srt/model_loader/weight_utils.py").read_text()
    tree = ast.parse(source)
    wanted = [
        n for n in tree.body
        if isinstance(n, ast.ClassDef) and n.name in ("KVCacheQuantSchema", "QuantParamSchema")
    ]  # fmt: skip
    namespace: dict[str, object] = {}
    exec(  # noqa: S102 - SGLang's own schema classes, executed verbatim
        "from typing import Dict, Optional\n"
        "from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator\n"
        + "\n".join(ast.get_source_segment(source, n) or "" for n in wanted),
        namespace,
    )
    for name in ("KVCacheQuantSchema", "QuantParamSchema"):
        namespace[name].model_rebuild(_types_namespace=namespace)  # type: ignore[attr-defined]
    schema = namespace["QuantParamSchema"]
    context = {"model_type": "llama", "num_hidden_layers": 4, "tp_rank": 0, "tp_size": 1}
    parsed = schema.model_validate(doc, context=context)  # type: ignore[attr-defined]
    assert dict(parsed.kv_cache.scaling_factor[0]) == {
        int(k): v for k, v in doc["kv_cache"]["scaling_factor"]["0"].items()
    }
