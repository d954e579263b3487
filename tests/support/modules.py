"""Load a test-side Python file as a module by path, once per process.

The parity case files and oracles are plain files under ``tests/parity`` that the oracle scripts
also load standalone, inside an engine's environment; tests load them under the same module
names so that ``sys.modules`` holds one copy each."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_module(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
