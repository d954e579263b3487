"""What the hardening tests (tests/hostile/, issue 17) check every run against: the exit-2
contract (one ``kvscale: error:`` line naming the file), trees before and after (entries, links,
modes, bytes), a wall-clock deadline, and the small checkpoints, normalize outputs and
activations they edit."""

from __future__ import annotations

import json
import os
import signal
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file
from support.checkpoints import (
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
    write_safetensors_file,
    write_scalar_checkpoint,
)
from support.cli import runner

from kvscale import scales_file
from kvscale.cli import app
from kvscale.core.normalize import NormalizeOptions, normalize_checkpoint
from kvscale.engine.options import EngineOptions

P = "model.layers.{}.self_attn"
L0 = "model.layers.0.self_attn.attn"
SCALES = {f"{P.format(0)}.k_scale": 0.5, f"{P.format(0)}.v_scale": 0.25}


def invoke(*args: object, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, [a if isinstance(a, str) else os.fspath(a) for a in args], env=env)


def one_line_error(result: Any, *needles: str, stdout: bool = False) -> str:
    """The exit-2 contract: nothing on stdout (unless ``stdout``), exactly one ``kvscale:
    error:`` line on stderr naming what it must, no traceback, no internal error."""
    err = result.stderr
    shown = f"exit {result.exit_code}\nstdout: {result.stdout[-1500:]!r}\nstderr: {err[-1500:]!r}"
    assert result.exit_code == 2, shown
    if not stdout:
        assert result.stdout == "", shown
    assert err.startswith("kvscale: error: ") and err.count("\n") == 1, shown
    assert err.endswith("\n"), shown
    assert "internal error" not in err and "Traceback" not in err, shown
    for needle in needles:
        assert needle in err, f"{shown}\nexpected {needle!r}"
    return err


def snapshot(root: Path) -> dict[str, tuple[Any, ...]]:
    """Everything observable about a tree: entries, link targets, file modes and bytes.

    Iterative (a 1,100-level tree must not overflow the stack) and never follows links or opens
    anything but regular files.
    """
    state: dict[str, tuple[Any, ...]] = {}
    if not os.path.lexists(root):
        return state
    stack = [os.fsencode(root)]
    base = os.fsencode(root)
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                st = entry.stat(follow_symlinks=False)
                rel = os.fsdecode(os.path.relpath(entry.path, base))
                if stat.S_ISLNK(st.st_mode):
                    state[rel] = ("link", os.readlink(entry.path))
                elif stat.S_ISDIR(st.st_mode):
                    state[rel] = ("dir", stat.S_IMODE(st.st_mode))
                    stack.append(entry.path)
                elif stat.S_ISREG(st.st_mode):
                    with open(entry.path, "rb") as fh:
                        data = fh.read(1 << 22)
                    state[rel] = ("file", stat.S_IMODE(st.st_mode), st.st_size, data)
                else:
                    state[rel] = ("other", stat.S_IFMT(st.st_mode))
    return state


def checkpoint(root: Path, name: str = "ckpt", layers: int = 1) -> Path:
    """A compressed-tensors Llama checkpoint with float32 k/v scales for layer 0."""
    return write_scalar_checkpoint(root / name, dict(SCALES), layers)


def leftovers(parent: Path, keep: set[str]) -> list[str]:
    """Entries of ``parent`` other than ``keep``: staging or old directories left behind."""
    return sorted(p.name for p in parent.iterdir() if p.name not in keep)


class Overtime(BaseException):
    """Raised by ``deadline`` (a BaseException, so no ``except Exception`` in kvscale eats it)."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail the test when the block runs longer than ``seconds`` (SIGALRM, main thread)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise Overtime(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def edit_device(out: Path, edit: Callable[[dict[str, torch.Tensor]], None]) -> None:
    path = out / scales_file.TENSORS_NAME
    tensors = load_file(str(path))
    edit(tensors)
    write_safetensors_file(path, tensors, {"format": "pt"})


def edit_json(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def per_head(root: Path, name: str = "heads") -> Path:
    """A compressed-tensors attn_head checkpoint: 2 kv heads, head size 16."""
    t = attention_weights(1)
    t[f"{P.format(0)}.k_scale"] = tensor([0.01, 0.02], shape=(2, 1, 1))
    t[f"{P.format(0)}.v_scale"] = tensor([0.03, 0.01], shape=(2, 1, 1))
    cfg = llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    return write_checkpoint(root / name, t, cfg)


def normalized(src: Path, out: Path, *extra: str) -> Path:
    """A normalize output to test against, written through the library (the set-up is not what
    these tests check). ``extra``: the CLI flags
    --checkpoint, --force, --kv-cache-dtype X, --platform X."""
    flags = list(extra)
    engine: dict[str, str] = {}
    for option in ("--kv-cache-dtype", "--platform"):
        if option in flags:
            at = flags.index(option)
            engine[option[2:].replace("-", "_")] = flags[at + 1]
            del flags[at : at + 2]
    assert set(flags) <= {"--checkpoint", "--force"}, flags
    options = NormalizeOptions(
        engine=EngineOptions(**engine),  # type: ignore[arg-type]
        checkpoint="--checkpoint" in flags,
        force="--force" in flags,
    )
    normalize_checkpoint(src, out, options)
    return out


def verify_json(target: Path, *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    result = invoke("verify", target, "--tokens", "64", "--json", *extra)
    doc = json.loads(result.stdout) if result.exit_code in (0, 1) else None
    return result.exit_code, doc, result.stderr


def activations_file(path: Path, k: torch.Tensor | None, v: torch.Tensor | None) -> Path:
    tensors = {}
    if k is not None:
        tensors[f"{L0}.k"] = k
    if v is not None:
        tensors[f"{L0}.v"] = v
    return write_safetensors_file(path, tensors)
