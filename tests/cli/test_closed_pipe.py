"""The reader of stdout going away ends the run with exit 141, as documented, also when it goes
away in the middle of a large JSON document (issue 25: ``| head -c 10`` on a 250 KB document
exited 0; Python's buffered writer took the kernel's short write as done and dropped the rest)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COPIES = 40
"""``inspect --json`` of 40 checkpoints: a list of about 200 KB, far beyond the pipe."""


def _read_a_little_then_close(args: list[str]) -> tuple[int, bytes, str]:
    read, write = os.pipe()
    fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, 4096)  # the smallest pipe: every write blocks early
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    with subprocess.Popen(
        [sys.executable, "-m", "kvscale", *args],
        cwd=ROOT,
        env=env,
        stdout=write,
        stderr=subprocess.PIPE,
    ) as proc:
        os.close(write)
        first = os.read(read, 10)
        os.close(read)
        _, err = proc.communicate(timeout=120)
    return proc.returncode, first, err.decode()


def test_reader_gone_mid_document_exits_141_quietly() -> None:
    args = ["inspect", *["examples/llm-compressor-fp8"] * COPIES, "--json", "--no-policy"]
    code, first, err = _read_a_little_then_close(args)
    assert first[:1] == b"["
    assert code == 141, err
    assert err == ""
