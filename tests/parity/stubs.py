"""What both parity oracles (``vllm_oracle.py``, ``sglang_oracle.py``) need to run an engine's
functions outside the engine: fake modules for the imports inside those functions.

Loaded by file path, like ``cases.py``: the oracles run as scripts and as modules loaded by path
from the test suite, never as a package.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any


class StubModule(types.ModuleType):
    pass


@contextlib.contextmanager
def stub_modules(entries: dict[str, dict[str, Any]]) -> Iterator[None]:
    """Install fake modules (``{"vllm.platforms": {"current_platform": ...}}``) for the local
    ``from ENGINE... import ...`` statements inside the engine's functions, with every parent
    package; restore ``sys.modules`` afterwards."""
    names: set[str] = set()
    for full in entries:
        parts = full.split(".")
        for i in range(1, len(parts) + 1):
            names.add(".".join(parts[:i]))
    saved = {n: sys.modules.get(n) for n in names}
    try:
        for n in sorted(names):
            sys.modules[n] = StubModule(n)
        for full, attrs in entries.items():
            for k, v in attrs.items():
                setattr(sys.modules[full], k, v)
        yield
    finally:
        for n, old in saved.items():
            if old is None:
                sys.modules.pop(n, None)
            else:
                sys.modules[n] = old
