"""Issue 17 under real faults: signals, FIFOs swapped in mid-copy, racing processes, PID 1.

Extends ``test_normalize_faults.py`` (SIGKILL at random points, full disks) to the cases of
issue 17. Every test here is ``slow`` and runs ``python -m kvscale`` (or a small harness around
``kvscale.cli.main`` that injects the fault at a seam) as a real process. What must hold every
time: the input is unchanged; ``--out`` is absent, untouched, or complete (never partial); a
failure is exit 2 with one ``kvscale: error:`` line naming the file, an interruption exit 130;
nothing hangs (every wait here is bounded, and a process that outlives its bound is killed and
the test fails); nothing is left next to ``--out`` once a later run has cleaned up."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import big_modelopt_checkpoint, write_scalar_checkpoint
from support.hostile import default_sigint

from kvscale.io.staging import is_own_output

pytestmark = pytest.mark.slow

LAYERS = 6

INTERRUPTED = "kvscale: error: interrupted\n"


def digest_tree(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry below root: link targets, and sha256 of regular files (FIFOs never opened)."""
    out: dict[str, tuple[str, str]] = {}
    for dirpath, dirnames, files in os.walk(root):
        for name in [*dirnames, *files]:
            full = Path(dirpath) / name
            rel = str(full.relative_to(root))
            if full.is_symlink():
                out[rel] = ("link", os.readlink(full))
            elif full.is_dir():
                out[rel] = ("dir", "")
            elif full.is_file():
                h = hashlib.sha256()
                with open(full, "rb") as fh:
                    for chunk in iter(lambda fh=fh: fh.read(1 << 22), b""):
                        h.update(chunk)
                out[rel] = ("file", h.hexdigest())
            else:
                out[rel] = ("other", "")
    return out


def run_cli(*args: object, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kvscale", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """A ~240 MB checkpoint, its digest, and the digest of an uninterrupted normalize
    --checkpoint (whose copy phase takes a few tenths of a second here)."""
    base = tmp_path_factory.mktemp("hardening-big")
    src = big_modelopt_checkpoint(base / "src", 240, layers=LAYERS)
    ref = base / "reference"
    done = run_cli("normalize", src, "--out", ref, "--checkpoint")
    assert done.returncode == 0, done.stderr
    return src, digest_tree(src), digest_tree(ref)


def hidden_next_to(out: Path) -> list[str]:
    """kvscale's staging/old directories left next to ``out``."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def bounded_wait(proc: subprocess.Popen[Any], seconds: float) -> tuple[int | None, str]:
    """Wait at most ``seconds``; a process still running then is killed (by its own pid) and
    reported as ``None``."""
    try:
        _, err = proc.communicate(timeout=seconds)
        return proc.returncode, err or ""
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        return None, err or ""


def wait_for(predicate: Any, seconds: float, proc: subprocess.Popen[Any] | None = None) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        if proc is not None and proc.poll() is not None:
            return bool(predicate())
        time.sleep(0.005)
    return False


# A harness around the real CLI that injects one fault at a seam, then runs kvscale.cli.main()
# with the remaining arguments. Modes:
#   swap-before PATH: once the plan is made, PATH (a file of the input) becomes a FIFO;
#   swap-during PATH: PATH becomes a FIFO when the first bytes of the output are written;
#   block -: every byte copy blocks forever (a hung NFS server, a stuck device);
#   write-into PATH: a file is written into PATH (the --out) when the first bytes are written;
#   sigint SECONDS: SIGINT arrives SECONDS after kvscale starts to be imported (start-up).
# It touches $H7_MARK once the fault is in place (so the test knows when to act).
HARNESS = r"""
import os, sys, threading
mode, arg, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
mark = os.environ.get("H7_MARK")

def marked():
    if mark:
        open(mark, "w").close()

def make_fifo(path):
    os.unlink(path)
    os.mkfifo(path)
    marked()

if mode == "sigint":
    import kvscale  # the package itself: nothing of the CLI yet
    timer = threading.Timer(float(arg), os.kill, (os.getpid(), __import__("signal").SIGINT))
    timer.daemon = True
    timer.start()
    import runpy
    sys.argv = ["kvscale", *argv]
    runpy.run_module("kvscale", run_name="__main__", alter_sys=True)
    sys.exit(0)

import kvscale.core.normalize as normalize
import kvscale.io.safetensors_write as sw

real_write_output = normalize.write_output

def write_output(out, jobs, options, progress=None, **kw):
    if mode == "swap-before":
        make_fifo(arg)
    fired = []

    def on_progress(event):
        if not fired:
            fired.append(1)
            if mode == "swap-during":
                make_fifo(arg)
            elif mode == "write-into":
                with open(os.path.join(arg, "notes.txt"), "w") as fh:
                    fh.write("written by another program\n")
                marked()
        if progress is not None:
            progress(event)

    return real_write_output(out, jobs, options, on_progress, **kw)

normalize.write_output = write_output

if mode == "block":
    def copy_range(*args, **kwargs):
        marked()
        threading.Event().wait()
    sw.copy_range = copy_range
    sw.try_reflink = lambda *args: False

sys.argv = ["kvscale", *argv]
from kvscale.cli import main
main()
"""


def harness(
    mode: str, arg: object, *argv: object, mark: Path | None = None
) -> subprocess.Popen[str]:
    env = dict(os.environ)
    if mark is not None:
        env["H7_MARK"] = str(mark)
    return subprocess.Popen(
        [sys.executable, "-c", HARNESS, mode, str(arg), *map(str, argv)],
        preexec_fn=default_sigint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.parametrize(
    "mode, target",
    [
        pytest.param("swap-before", "model-00004-of-00004.safetensors", id="copied-shard"),
        pytest.param("swap-before", "model-00001-of-00004.safetensors", id="rewritten-shard"),
        pytest.param("swap-before", "config.json", id="config"),
        pytest.param("swap-during", "tokenizer.json", id="other-file-mid-copy"),
    ],
)
def test_fifo_swapped_in_for_an_input_file(tmp_path: Path, mode: str, target: str) -> None:
    src = big_modelopt_checkpoint(tmp_path / "src", 24, layers=LAYERS)
    before = digest_tree(src)
    out = tmp_path / "out"
    proc = harness(mode, src / target, "normalize", src, "--out", out, "--checkpoint")
    code, err = bounded_wait(proc, 10)
    assert code is not None, f"still copying 10 s after {target} became a FIFO: hung"
    assert code == 2, err
    assert err.startswith("kvscale: error: ") and err.count("\n") == 1, err
    assert target in err, err
    assert not out.exists()
    assert hidden_next_to(out) == []
    after = digest_tree(src)
    assert after.pop(target) == ("other", "")
    before.pop(target)
    assert after == before


@pytest.mark.parametrize("stuck", ["blocked-read", "fifo-open"])
def test_first_sigterm_ends_a_blocked_copy(tmp_path: Path, stuck: str) -> None:
    src = big_modelopt_checkpoint(tmp_path / "src", 24, layers=LAYERS)
    out = tmp_path / "out"
    mark = tmp_path / "mark"
    if stuck == "blocked-read":
        proc = harness("block", "-", "normalize", src, "--out", out, "--checkpoint", mark=mark)
    else:
        proc = harness(
            "swap-during",
            src / "tokenizer.json",
            "normalize",
            src,
            "--out",
            out,
            "--checkpoint",
            mark=mark,
        )
    assert wait_for(mark.exists, 60, proc), proc.stderr.read() if proc.stderr else ""
    time.sleep(0.5)  # let every worker reach the stuck call
    if proc.poll() is None:
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code, err = bounded_wait(proc, 5)
        assert code is not None, "one SIGTERM did not end the run within 5 s"
        assert time.monotonic() - sent < 5
        assert code == 130, err
        assert err == INTERRUPTED, err
    else:  # the FIFO was refused before the signal (the fix for the test above)
        err = proc.communicate()[1]  # (reads and closes the pipe)
        code = proc.returncode
        assert code == 2, err
    assert not out.exists()
    assert hidden_next_to(out) == []


def _normalize_proc(source: Path, out: Path, *extra: str, prefix: tuple[str, ...] = ()) -> Any:
    return subprocess.Popen(
        [
            *prefix,
            sys.executable,
            "-m",
            "kvscale",
            "normalize",
            str(source),
            "--out",
            str(out),
            "--checkpoint",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _staging_of(out: Path) -> Any:
    return lambda: any(out.parent.glob(f".{out.name}.kvscale-tmp-*"))


def test_sigterm_during_copies_ends_promptly(big: Any, tmp_path: Path) -> None:
    """SIGTERM while the copy runs: exit 130 within a bound, nothing left, --out absent (or,
    when the signal lands after the final rename, complete)."""
    source, src_digest, ref_digest = big
    rng = random.Random(1717)
    codes = []
    for i in range(6):
        out = tmp_path / f"out{i}"
        proc = _normalize_proc(source, out)
        assert wait_for(_staging_of(out), 60, proc), "the run never started writing"
        time.sleep(0 if i == 0 else rng.uniform(0, 0.4))
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code, err = bounded_wait(proc, 10)
        assert code is not None, f"round {i}: SIGTERM did not end the run within 10 s"
        assert time.monotonic() - sent < 10
        codes.append(code)
        # -SIGTERM: the command had returned (its handler is gone) and the signal ended the
        # interpreter's shutdown; the output is then complete, like for exit 0.
        assert code in (0, 130, -signal.SIGTERM), err
        if code == 130:
            assert err == INTERRUPTED, err
            assert not out.exists() or digest_tree(out) == ref_digest
        else:
            assert digest_tree(out) == ref_digest
        assert hidden_next_to(out) == []
        shutil.rmtree(out, ignore_errors=True)  # a few hundred MB per round
    assert 130 in codes, codes
    assert digest_tree(source) == src_digest


@pytest.mark.parametrize("precreated", [True, False], ids=["empty-dir", "absent"])
def test_two_racing_processes_exactly_one_wins(big: Any, tmp_path: Path, precreated: bool) -> None:
    source, src_digest, ref_digest = big
    for round_ in range(3):
        out = tmp_path / f"out{round_}"
        if precreated:
            out.mkdir()
        procs = [_normalize_proc(source, out) for _ in range(2)]
        results = [bounded_wait(p, 120) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        loser = next(err for code, err in results if code == 2)
        assert loser.startswith("kvscale: error: ") and loser.count("\n") == 1, loser
        assert str(out) in loser, loser
        assert digest_tree(out) == ref_digest, "the winner's output is not complete"
        assert hidden_next_to(out) == []
        shutil.rmtree(out, ignore_errors=True)  # a few hundred MB per round
    assert digest_tree(source) == src_digest


def test_sigkill_into_a_precreated_empty_out(big: Any, tmp_path: Path) -> None:
    """Killed at any moment, a run into an empty pre-created --out leaves it empty or complete;
    the next run finishes the job and cleans up."""
    source, src_digest, ref_digest = big
    rng = random.Random(33)
    outcomes = {"empty": 0, "complete": 0}
    for i in range(6):
        out = tmp_path / f"out{i}"
        out.mkdir()
        proc = _normalize_proc(source, out)
        assert wait_for(_staging_of(out), 60, proc), "the run never started writing"
        time.sleep(0 if i == 0 else rng.uniform(0, 0.4))
        proc.kill()
        proc.communicate()
        assert out.is_dir(), f"round {i}: the pre-created --out vanished"
        now = digest_tree(out)
        if now == {}:
            outcomes["empty"] += 1
            done = run_cli("normalize", source, "--out", out, "--checkpoint")
            assert done.returncode == 0, done.stderr
        else:
            outcomes["complete"] += 1
            assert now == ref_digest, f"round {i}: a partial output in {out}"
            done = run_cli("normalize", source, "--out", out, "--checkpoint", "--force")
            assert done.returncode == 0, done.stderr
        assert digest_tree(out) == ref_digest
        assert hidden_next_to(out) == [], "stale staging left behind"
        shutil.rmtree(out, ignore_errors=True)  # a few hundred MB per round
    assert outcomes["empty"] >= 1, outcomes
    assert digest_tree(source) == src_digest


def test_file_written_into_out_during_force_is_kept(big: Any, tmp_path: Path) -> None:
    """Another program writes into --out while a --force run copies: the run must refuse at
    commit, and the old output plus the new file must be exactly as they were."""
    source, src_digest, _ = big
    out = tmp_path / "out"
    old = run_cli("normalize", source, "--out", out, "--platform", "fnuz")
    assert old.returncode == 0, old.stderr
    proc = harness("write-into", out, "normalize", source, "--out", out, "--checkpoint", "--force")
    code, err = bounded_wait(proc, 120)
    assert code == 2, err
    assert err.startswith("kvscale: error: ") and err.count("\n") == 1 and str(out) in err, err
    assert (out / "notes.txt").read_text() == "written by another program\n"
    assert json.loads((out / "kv_scales.json").read_text())["platform"] == "fnuz"
    assert not (out / "checkpoint").exists()
    assert hidden_next_to(out) == []
    assert digest_tree(source) == src_digest


def test_non_utf8_names_through_a_real_argv(tmp_path: Path) -> None:
    """The shard name and the checkpoint path as raw bytes on the command line (what a shell
    passes), not a decoded string: one line, exit 2, never an internal error."""
    src = write_scalar_checkpoint(
        tmp_path / "ckpt",
        {"model.layers.0.self_attn.k_scale": 0.5, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )
    bad_dir = os.fsencode(tmp_path) + b"/ck\xfe\xff"
    os.rename(src, bad_dir)
    os.rename(bad_dir + b"/model.safetensors", bad_dir + b"/m\xff.safetensors")
    for argv in (
        [b"inspect", bad_dir],
        [b"inspect", bad_dir + b"/m\xff.safetensors"],
        [b"normalize", bad_dir, b"--out", os.fsencode(tmp_path) + b"/out\xfe", b"--checkpoint"],
        [b"verify", bad_dir],
    ):
        proc = subprocess.run(
            [os.fsencode(sys.executable), b"-m", b"kvscale", *argv], capture_output=True, timeout=60
        )
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 2, (argv, err)
        assert err.startswith("kvscale: error: ") and err.count("\n") == 1, (argv, err)
        assert "not valid UTF-8" in err and "internal error" not in err, (argv, err)
        assert proc.stdout == b""
    assert sorted(os.listdir(os.fsencode(tmp_path))) == [b"ck\xfe\xff"]


def _unshare() -> list[str]:
    tool = shutil.which("unshare")
    if tool is None or not (hasattr(os, "geteuid") and os.geteuid() == 0):
        pytest.skip("needs unshare(1) and root for a PID namespace")
    probe = subprocess.run([tool, "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid is not allowed here: {probe.stderr.decode().strip()}")
    return [tool, "--pid", "--fork", "--mount-proc", "--kill-child=SIGKILL"]


def test_killed_pid_1_run_is_cleaned_by_the_next_pid_1_run(big: Any, tmp_path: Path) -> None:
    """Two container runs, each PID 1: the second must remove what the SIGKILLed first left."""
    prefix = _unshare()
    source, src_digest, ref_digest = big
    out = tmp_path / "out"
    args = [
        sys.executable,
        "-m",
        "kvscale",
        "normalize",
        str(source),
        "--out",
        str(out),
        "--checkpoint",
    ]
    first = subprocess.Popen([*prefix, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_for(lambda: any(tmp_path.glob(".out.kvscale-tmp-1-*")), 60, first)
    first.kill()  # unshare dies; --kill-child delivers SIGKILL to the namespace's PID 1
    first.wait()

    def sizes() -> list[int]:
        return [
            sum(f.stat().st_size for f in d.rglob("*") if f.is_file())
            for d in sorted(tmp_path.glob(".out.*"))
        ]

    def settled() -> bool:  # nothing writes there any more: the killed PID 1 is gone
        before = sizes()
        time.sleep(0.3)
        return sizes() == before

    assert wait_for(settled, 10)
    stale = hidden_next_to(out)
    assert stale and all(name.startswith(".out.kvscale-tmp-1-") for name in stale), stale
    assert not out.exists()
    second = subprocess.run([*prefix, *args], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    assert hidden_next_to(out) == [], "the dead PID 1 run's staging survived"
    assert digest_tree(out) == ref_digest
    assert is_own_output(out)
    assert digest_tree(source) == src_digest


def test_sigint_during_start_up_prints_no_traceback(tmp_path: Path) -> None:
    src = write_scalar_checkpoint(
        tmp_path / "ckpt",
        {"model.layers.0.self_attn.k_scale": 0.5, "model.layers.0.self_attn.v_scale": 0.25},
        1,
    )
    seen = []
    for delay in (0.005, 0.02, 0.04, 0.07, 0.1, 0.15, 0.2, 0.3, 0.45):
        proc = harness("sigint", delay, "inspect", src)
        code, err = bounded_wait(proc, 30)
        seen.append((delay, code, err[-300:]))
    for _, code, err in seen:
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, seen
        assert code in (0, 130), seen
        if code == 130:
            assert err in ("", INTERRUPTED), seen
    assert any(code == 130 for _, code, _ in seen), seen
