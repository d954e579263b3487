"""examples/ci/run_local.py (not a package module) loaded once, for the tests of the CI examples
and of the reusable action: ``from support.run_local import run_local``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

PATH = Path(__file__).resolve().parents[2] / "examples" / "ci" / "run_local.py"
NAME = "kvscale_examples_ci_run_local"


def _load() -> ModuleType:
    if NAME in sys.modules:
        return sys.modules[NAME]
    spec = importlib.util.spec_from_file_location(NAME, PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[NAME] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


run_local = _load()
