"""kvscale.kernel, the package: importable without Triton (the reference and formats need only
torch); the Triton kernel then says what is missing."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow  # a fresh interpreter that imports torch: two seconds
def test_package_imports_without_triton() -> None:
    code = (
        "import sys; sys.modules['triton'] = None\n"
        "import kvscale.kernel as k\n"
        "assert callable(k.reference_reshape_and_cache_flash)\n"
        "f = k.reshape_and_cache_flash\n"
        "import torch\n"
        "key = torch.zeros(1, 1, 16, device='meta')\n"
        "try:\n"
        "    k.triton_cache.require_triton('the GPU cache-write kernel')\n"
        "except k.TritonUnavailableError as e:\n"
        "    print('unavailable:', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "unavailable: the GPU cache-write kernel needs Triton" in out.stdout
