"""kvscale.kernel.formats: the KV-cache dtype table, the FP8 formats' limits, typed errors; the
module stays free of torch and Triton."""

from __future__ import annotations

import ast

import pytest
from support.paths import ROOT

from kvscale.kernel import UnknownKVCacheDtypeError, resolve_kv_cache_dtype
from kvscale.kernel.formats import E4M3FN, E4M3FNUZ, E5M2, known_kv_cache_dtypes


def test_kv_cache_dtype_table() -> None:
    assert resolve_kv_cache_dtype("fp8").fp8 is E4M3FN
    assert resolve_kv_cache_dtype("fp8_e4m3").fp8 is E4M3FN
    assert resolve_kv_cache_dtype("fp8_e5m2").fp8 is E5M2
    assert resolve_kv_cache_dtype("fp8_e4m3fnuz").fp8 is E4M3FNUZ
    for plain in ("auto", "bfloat16", "float16", "float32"):
        kv = resolve_kv_cache_dtype(plain)
        assert kv.fp8 is None and not kv.quantized
    assert (E4M3FN.max_finite, E5M2.max_finite, E4M3FNUZ.max_finite) == (448.0, 57344.0, 240.0)
    assert (E4M3FN.max_byte, E5M2.max_byte, E4M3FNUZ.max_byte) == (0x7E, 0x7B, 0x7F)
    assert "fp8_e5m2" in known_kv_cache_dtypes()


def test_unknown_kv_cache_dtype_is_typed() -> None:
    with pytest.raises(UnknownKVCacheDtypeError, match="fp9") as info:
        resolve_kv_cache_dtype("fp9")
    assert isinstance(info.value, ValueError)
    assert info.value.kv_cache_dtype == "fp9"


def test_formats_are_frozen() -> None:
    with pytest.raises(AttributeError):
        E4M3FN.max_finite = 1.0  # type: ignore[misc]


def test_formats_module_does_not_import_torch() -> None:
    source = (ROOT / "kvscale" / "kernel" / "formats.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert "torch" not in imported and "triton" not in imported
