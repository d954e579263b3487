"""The bundled examples are reproducible from their script and show what they claim."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.cli import CliRunner
from support.paths import EXAMPLES

from kvscale.cli import app

runner = CliRunner()


def _files(root: Path) -> dict[str, bytes | str]:
    out: dict[str, bytes | str] = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "->" + str(path.readlink())
        elif path.is_file():
            out[rel] = path.read_bytes()
    return out


def _make_examples() -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import make_examples
    finally:
        sys.path.remove(str(EXAMPLES))
    return make_examples


def test_make_examples_is_deterministic_and_matches_committed_files(tmp_path: Path) -> None:
    """``make_all`` in this process (torch is loaded already); the script's own entry point runs
    in the slow test below."""
    make_examples = _make_examples()
    make_examples.make_all(tmp_path)
    for name in make_examples.NAMES:
        assert _files(tmp_path / name) == _files(EXAMPLES / name), name


@pytest.mark.slow  # a fresh interpreter that imports torch: seconds
def test_make_examples_script_writes_the_committed_files(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(EXAMPLES / "make_examples.py"), "--out", str(tmp_path)],
        check=True,
        capture_output=True,
    )
    for name in _make_examples().NAMES:
        assert _files(tmp_path / name) == _files(EXAMPLES / name), name


EXPECTED = {
    # example: (exit code, quant method, kv cache dtype, rules)
    "llm-compressor-fp8": (0, "compressed-tensors", "fp8", {"separate": 4}),
    "llm-compressor-attn-head": (0, "compressed-tensors", "fp8", {"per_head": 4}),
    "modelopt-fp8": (0, "modelopt", "fp8_e4m3", {"separate": 4}),
    "modelopt-legacy": (0, "modelopt", "fp8_e4m3", {"separate": 4}),
    "quark-fp8": (0, "quark", "auto", {"unquantized": 4}),
    "autofp8-legacy": (0, "fp8", "auto", {"unquantized": 4}),
    "hf-cache/models--kvscale--tiny-llama-fp8-kv": (
        0,
        "compressed-tensors",
        "fp8",
        {"separate": 4},
    ),
    "broken": (
        1,
        "compressed-tensors",
        "fp8",
        {"default": 1, "error": 1, "partial": 1, "separate": 2},
    ),
    "wrong-scale": (0, "compressed-tensors", "fp8", {"separate": 4}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_inspects_as_documented(name: str) -> None:
    code, method, kv, rules = EXPECTED[name]
    result = runner.invoke(app, ["inspect", str(EXAMPLES / name), "--json"])
    assert result.exit_code == code, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["quant_method"], doc["kv_cache_dtype"], doc["summary"]["rules"]) == (
        method,
        kv,
        rules,
    )


def test_good_example_passes_strict() -> None:
    assert (
        runner.invoke(app, ["inspect", str(EXAMPLES / "llm-compressor-fp8"), "--strict"]).exit_code
        == 0
    )


def test_quark_example_with_fp8_cache() -> None:
    result = runner.invoke(
        app, ["inspect", str(EXAMPLES / "quark-fp8"), "--json", "--kv-cache-dtype", "fp8"]
    )
    doc = json.loads(result.stdout)
    first = doc["layers"][0]
    assert first["rule"] == "separate"
    assert first["k_scale"] == 0.02099609375 and first["q_scale"] == 0.015625
