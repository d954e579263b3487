"""The Python API (``kvscale/__init__.py``): what the package docstring promises.

Every function without its optional extra raises ``ExtraMissingError`` (exit code 3, naming the
extra), never a bare ``ModuleNotFoundError``; the functions that need no extra work without any;
none imports the command line (typer, rich); the docstring's examples call the functions as
they are.
"""

from __future__ import annotations

import ast
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import kvscale

ROOT = Path(__file__).resolve().parents[1]

# Runs in a fresh interpreter: HIDDEN made unimportable before kvscale is, then every API call.
PROBE = r"""
import json, sys, tempfile
for name in sys.argv[1].split(","):
    sys.modules[name] = None
import kvscale
out = tempfile.mkdtemp()
ckpt = "examples/llm-compressor-fp8"
calls = {
    "inspect": lambda: kvscale.inspect(ckpt),
    "inspect hf://": lambda: kvscale.inspect("hf://org/name"),
    "normalize": lambda: kvscale.normalize(ckpt, out + "/n"),
    "normalize checkpoint_copy": lambda: kvscale.normalize(ckpt, out + "/c", checkpoint_copy=True),
    "diff": lambda: kvscale.diff(ckpt, ckpt),
    "verify": lambda: kvscale.verify(ckpt),
    "verify gpu": lambda: kvscale.verify(ckpt, gpu=True),
    "verify data": lambda: kvscale.verify(ckpt, data="d.txt", model="m"),
    "calibrate": lambda: kvscale.calibrate("m", "d.txt", out + "/cal"),
}
only = sys.argv[2].split(",") if sys.argv[2] else list(calls)
got = {}
for name in only:
    call = calls[name]
    try:
        call()
        got[name] = "ok"
    except Exception as exc:
        got[name] = [type(exc).__name__, getattr(exc, "exit_code", None),
                     getattr(exc, "extra", None), getattr(exc, "missing", None)]
got["imported"] = sorted(m for m in ("typer", "rich", "click") if m in sys.modules)
print(json.dumps(got))
"""


def _probe(hidden: list[str], calls: tuple[str, ...] = ()) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, ",".join(hidden), ",".join(calls)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_without_any_extra() -> None:
    got = _probe(["torch", "transformers", "triton", "huggingface_hub", "safetensors", "numpy"])
    missing = ["ExtraMissingError", 3]
    assert got == {
        "inspect": "ok",
        "inspect hf://": [*missing, "hub", "huggingface_hub"],
        "normalize": "ok",
        "normalize checkpoint_copy": "ok",
        "diff": "ok",
        "verify": [*missing, "verify", "torch"],
        "verify gpu": [*missing, "verify", "torch"],
        "verify data": [*missing, "verify", "torch"],
        "calibrate": [*missing, "calibrate", "torch"],
        "imported": [],
    }


def test_with_the_verify_extra_but_not_the_calibrate_one() -> None:
    got = _probe(["transformers"], ("verify data", "calibrate"))
    assert got == {
        "verify data": ["ExtraMissingError", 3, "calibrate", "transformers"],
        "calibrate": ["ExtraMissingError", 3, "calibrate", "transformers"],
        "imported": [],
    }


def _docstring_calls() -> list[ast.Call]:
    doc = kvscale.__doc__ or ""
    code = "\n".join(
        line.strip() for line in doc.splitlines() if line.strip().startswith(("kvscale.", "report"))
    )
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)]
    return [
        c
        for c in calls
        if isinstance(c.func, ast.Attribute)
        and isinstance(c.func.value, ast.Name)
        and c.func.value.id == "kvscale"
    ]


@pytest.mark.parametrize("call", _docstring_calls(), ids=lambda c: c.func.attr)
def test_every_docstring_example_calls_the_function_as_it_is(call: ast.Call) -> None:
    assert isinstance(call.func, ast.Attribute)
    function = getattr(kvscale, call.func.attr)
    args = [ast.literal_eval(a) for a in call.args]
    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg is not None}
    inspect.signature(function).bind(*args, **kwargs)  # TypeError if the example is wrong


def test_the_docstring_shows_every_function() -> None:
    assert {c.func.attr for c in _docstring_calls()} == set(kvscale.__all__) - {"__version__"}


def test_the_first_example_runs() -> None:
    report = kvscale.inspect(ROOT / "examples" / "llm-compressor-fp8", kv_cache_dtype="fp8")
    assert report.layers and report.ok
