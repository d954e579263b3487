"""Hostile strings and their terminal-safety check; the hostile-input catalogue runner
(in-process, CLI, subprocess) and its checks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import types
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# --- hostile strings -----------------------------------------------------------------------------

HOSTILE = "\x1b[31m[k_scale][bold]x[/]\r\u202e\x07\x9b2J\x00\u2028"
"""ESC + SGR, rich markup (a tag, a name in brackets, a closing tag), CR, a bidi override, BEL,
a C1 CSI, NUL and a Unicode line separator."""
RAW_DANGER = ["\x1b", "\r", "\u202e", "\x07", "\x9b", "\x00", "\u2028"]


def assert_terminal_safe(text: str) -> None:
    """Nothing that moves the cursor, rings, recolours or reorders: only \\n and printables."""
    for ch in text:
        if ch == "\n":
            continue
        category = unicodedata.category(ch)
        assert category not in ("Cc", "Cf", "Zl", "Zp", "Cs"), f"raw {ch!r} in output"


# --- hostile files shared by the catalogue and the reader's own tests ---------------------------

K = "model.layers.0.self_attn.k_scale"
V = "model.layers.0.self_attn.v_scale"
Q_WEIGHT = "model.layers.0.self_attn.q_proj.weight"
GIGA = 10**9  # elements of the sparse 4 GB scale of ``giga_scale``


def giga_scale(config: str, strategy: str = "tensor") -> Callable[[types.SimpleNamespace], Path]:
    """A k_scale of 10**9 float32 elements in a sparse 4 GB file: refused, never read."""

    def build(kit: types.SimpleNamespace) -> Path:
        directory = kit.tmp / "giga"
        directory.mkdir()
        cfg = kit.ct_config(1, strategy) if config == "ct" else kit.fp8_config(1)
        (directory / "config.json").write_text(json.dumps(cfg))
        header = {
            Q_WEIGHT: {"dtype": "BF16", "shape": [0], "data_offsets": [0, 0]},
            K: {"dtype": "F32", "shape": [GIGA], "data_offsets": [0, 4 * GIGA]},
        }
        path = kit.raw(directory / "model.safetensors", header)
        os.truncate(path, path.stat().st_size + 4 * GIGA)
        return directory

    return build


def fifo_file(kit: types.SimpleNamespace) -> Path:
    path = kit.tmp / "pipe.safetensors"
    os.mkfifo(path)
    return path


# --- hostile-input catalogue runner -------------------------------------------------------------
#
# A catalogue entry is any object with ``id``, ``build`` (kit -> path to inspect), ``code`` (the
# exact exit code), ``expect`` (exit 2: a regex searched in the one stderr line; exit 0/1: a
# problem code, optionally ``"code: regex"`` on its message) and ``env`` (extra environment).

SUBPROCESS_TIMEOUT_S = 10.0
_ANSI = "\x1b"


def tree_state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Everything observable about a tree without following links or opening FIFOs."""
    import hashlib
    import stat

    state: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            key = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                state[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256()
                with open(path, "rb") as f:
                    digest.update(f.read(1 << 20))
                    if st.st_size > 1 << 20:  # sparse giants: ends only
                        f.seek(max(st.st_size - (1 << 16), 0))
                        digest.update(f.read())
                state[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest.hexdigest())
            else:
                state[key] = ("other", st.st_mode, st.st_mtime_ns)
    return state


def check_outcome(
    case: Any, path: Path, code: int, stdout: str, stderr: str, json_mode: bool
) -> None:
    """The catalogue contract: exact exit code, one clean stderr line naming the file."""

    shown = f"{case.id}: exit {code}\nstdout: {stdout[-2000:]!r}\nstderr: {stderr[-2000:]!r}"
    assert code == case.code, shown
    assert "Traceback" not in stdout + stderr, shown
    assert "internal error" not in stderr, shown
    assert _ANSI not in stderr, shown
    if case.code == 2:
        if json_mode:  # --json: the document says what happened (kvscale.error/1)
            doc = json.loads(stdout)
            assert (doc["schema"], doc["ok"], doc["error"]["exit_code"]) == (
                "kvscale.error/1",
                False,
                2,
            ), shown
        else:
            assert stdout == "", shown
        assert stderr.endswith("\n") and stderr.count("\n") == 1, shown
        assert stderr.startswith("kvscale: error: "), shown
        # names the file at fault (all of them live next to the given path), or the variable
        assert str(path.parent) in stderr or "KVSCALE_" in stderr, shown
        assert re.search(case.expect, stderr), f"{shown}\nexpected: {case.expect}"
        return
    assert stderr.count("\n") <= 1, shown
    problem_code, _, message = case.expect.partition(": ")
    if not json_mode:
        assert problem_code in stdout, shown
        return
    doc = json.loads(stdout)
    assert doc["ok"] is (case.code == 0), shown
    found = [p for p in doc["problems"] if p["code"] == problem_code]
    assert found, f"{shown}\nno problem {problem_code}"
    if message:
        assert any(re.search(message, p["message"]) for p in found), shown
    if case.code == 1:
        assert any(p["fails"] for p in found), shown


class HostileRunner:
    """Runs catalogue entries through the real CLI, in process and as ``python -m kvscale``."""

    def __init__(self, kit: types.types.SimpleNamespace) -> None:
        self.kit = kit

    def cli(self, case: Any, *, json_mode: bool, extra: tuple[str, ...] = ()) -> None:
        import time

        from support.cli import CliRunner

        from kvscale.cli import app

        path = case.build(self.kit)
        before = tree_state(self.kit.tmp)
        args = ["inspect", str(path), *getattr(case, "args", ()), *extra]
        if json_mode:
            args.append("--json")
        start = time.monotonic()
        # A developer's own KVSCALE_* settings (KVSCALE_DEBUG=1, raised limits) must not leak in.
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KVSCALE_")}
        env.update(case.env or {})
        result = CliRunner().invoke(app, args, env=env)
        elapsed = time.monotonic() - start
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{case.id}: {result.exception!r}"
        )
        check_outcome(case, path, result.exit_code, result.stdout, result.stderr, json_mode)
        assert elapsed < SUBPROCESS_TIMEOUT_S, f"{case.id} took {elapsed:.1f} s"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"

    def other_command(self, case: Any, command: str) -> None:
        """``normalize CKPT --out DIR`` / ``verify CKPT`` on an entry that ``inspect`` refuses.

        Unreadable input (exit 2) must give every command the same one-line message; a layer
        the engine refuses or a non-positive/non-finite value makes ``normalize`` exit 1. In
        both cases nothing is written: ``--out`` must not exist afterwards.
        """

        from support.cli import CliRunner

        from kvscale.cli import app

        path = case.build(self.kit)
        out = self.kit.tmp / "_normalized"
        before = tree_state(self.kit.tmp)
        args = {
            "normalize": ["normalize", str(path), "--out", str(out), *case.args],
            "verify": ["verify", str(path)],
        }[command]
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KVSCALE_")}
        env.update(case.env or {})
        result = CliRunner().invoke(app, args, env=env)
        shown = f"{command} {case.id}: exit {result.exit_code}\nstderr: {result.stderr[-1500:]!r}"
        assert "Traceback" not in result.stdout + result.stderr, shown
        assert "internal error" not in result.stderr, shown
        if case.code == 2:
            check_outcome(case, path, result.exit_code, result.stdout, result.stderr, False)
        else:
            # exit 1: normalize lists the problems it cannot fix (several lines, by design)
            assert result.exit_code == case.code, shown
        assert not out.exists(), f"{shown}\n{command} wrote {out}"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"

    def subprocess(self, case: Any, *, json_mode: bool = True) -> None:

        cwd = self.kit.tmp / "_empty_cwd"
        cwd.mkdir()
        path = case.build(self.kit)
        before = tree_state(self.kit.tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KVSCALE_") or k == "PATH"}
        # Anything kvscale might write (caches, configs, temp files) would land in cwd.
        env.update(HOME=str(cwd), TMPDIR=str(cwd), XDG_CACHE_HOME=str(cwd), **(case.env or {}))
        args = [sys.executable, "-m", "kvscale", "inspect", str(path)]
        args += [*getattr(case, "args", ()), *(["--json"] if json_mode else [])]
        try:
            proc = subprocess.run(
                args,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SUBPROCESS_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{case.id}: no answer within {SUBPROCESS_TIMEOUT_S} s")
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        check_outcome(case, path, proc.returncode, stdout, stderr, json_mode)
        assert list(cwd.iterdir()) == [], f"{case.id}: wrote {list(cwd.iterdir())}"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"


def default_sigint() -> None:
    """``preexec_fn`` for a child that a test interrupts with SIGINT: the default disposition, as
    a terminal's foreground job has. A suite started as a background job of a non-interactive
    shell (``nohup pytest &``) passes SIGINT on ignored, and Python then never raises
    KeyboardInterrupt (tests/cli/test_interrupt.py checks that kvscale keeps it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
