"""Issue 17 (lose nothing, leak nothing, hang never): one regression test per item.

Each ``test_i17_<N>_...`` proves item N of the issue on real files: exact exit codes, the one
stderr line (``kvscale: error: <file>: ...``), and that nothing was lost (the input's and the
output's trees, bytes, modes and links before and after). Real bind mounts and PID namespaces are
used where the machine allows (root, ``mount``, ``unshare``) and skipped with the reason
otherwise. The size-and-time tests of item 7 are ``slow``; the fault-injection suite (signals,
FIFOs swapped in mid-copy, racing processes) is ``tests/test_hardening_faults.py``.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import shutil
import signal
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file
from support.checkpoints import (
    FP8_TENSOR,
    attention_weights,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
    write_scalar_checkpoint,
)
from typer.testing import CliRunner

from kvscale import scales_file
from kvscale.cli import app
from kvscale.core.normalize import (
    NormalizeOptions,
    normalize_checkpoint,
    plan_normalize,
    write_plan,
)
from kvscale.engine.options import EngineOptions
from kvscale.errors import KVScaleError
from kvscale.io.staging import MANIFEST_NAME, is_own_output

REPO = Path(__file__).resolve().parents[1]
P = "model.layers.{}.self_attn"
L0 = "model.layers.0.self_attn.attn"
SCALES = {f"{P.format(0)}.k_scale": 0.5, f"{P.format(0)}.v_scale": 0.25}

runner = CliRunner()


# --- helpers --------------------------------------------------------------------------------------


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


def sparse_safetensors(path: Path, tensors: list[tuple[str, str, list[int]]]) -> Path:
    """A valid safetensors file whose data is a hole (claims cost no disk): zeros everywhere."""
    sizes = {"F32": 4, "BF16": 2, "F16": 2, "F8_E4M3": 1}
    header: dict[str, Any] = {}
    offset = 0
    for name, dtype, shape in tensors:
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)) + raw)
        fh.truncate(8 + len(raw) + offset)
    return path


def _can_mount() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("mount") is not None


@contextmanager
def bind_mount(source: Path, target: Path) -> Iterator[Path]:
    """``mount --bind source target`` for the block (skips the test when it cannot mount)."""
    if not _can_mount():
        pytest.skip("bind mounts need root and mount(8)")
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["mount", "--bind", str(source), str(target)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        pytest.skip(f"mount --bind is not allowed here: {proc.stderr.strip()}")
    try:
        yield target
    finally:
        if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)


def ulp_up(value: float) -> float:
    """The next float32 above ``value``."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return float(struct.unpack("<f", struct.pack("<I", bits + 1))[0])


def edit_device(out: Path, edit: Callable[[dict[str, torch.Tensor]], None]) -> None:
    path = out / scales_file.TENSORS_NAME
    tensors = load_file(str(path))
    edit(tensors)
    save_file(tensors, str(path), metadata={"format": "pt"})


def edit_json(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def small_fp8(
    root: Path, name: str = "fp8", *, extra: dict[str, torch.Tensor] | None = None
) -> Path:
    """A 2-layer fp8 checkpoint with k, v, q and prob scales (head size 16: verify is quick)."""
    t = attention_weights(2)
    for i in range(2):
        t[f"{P.format(i)}.k_scale"] = tensor(0.5)
        t[f"{P.format(i)}.v_scale"] = tensor(0.25)
        t[f"{P.format(i)}.q_scale"] = tensor(0.125)
        t[f"{P.format(i)}.prob_output_scale"] = tensor(0.0625)
    t.update(extra or {})
    return write_checkpoint(root / name, t, llama_config(2, quant=quant_config("fp8"), head_dim=16))


def per_head(root: Path, name: str = "heads") -> Path:
    """A compressed-tensors attn_head checkpoint: 2 kv heads, head size 16."""
    t = attention_weights(1)
    t[f"{P.format(0)}.k_scale"] = tensor([0.01, 0.02], shape=(2, 1, 1))
    t[f"{P.format(0)}.v_scale"] = tensor([0.03, 0.01], shape=(2, 1, 1))
    cfg = llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    return write_checkpoint(root / name, t, cfg)


def normalized(src: Path, out: Path, *extra: str) -> Path:
    """A normalize output to test against, written through the library (the set-up is not what
    these tests check, and each CLI invocation rebuilds the typer app). ``extra``: the CLI flags
    --checkpoint, --force, --unsafe-write-unfixed, --kv-cache-dtype X, --platform X."""
    flags = list(extra)
    engine: dict[str, str] = {}
    for option in ("--kv-cache-dtype", "--platform"):
        if option in flags:
            at = flags.index(option)
            engine[option[2:].replace("-", "_")] = flags[at + 1]
            del flags[at : at + 2]
    assert set(flags) <= {"--checkpoint", "--force", "--unsafe-write-unfixed"}, flags
    options = NormalizeOptions(
        engine=EngineOptions(**engine),  # type: ignore[arg-type]
        checkpoint="--checkpoint" in flags,
        force="--force" in flags,
        unsafe_write_unfixed="--unsafe-write-unfixed" in flags,
    )
    normalize_checkpoint(src, out, options)
    return out


def verify_json(target: Path, *extra: str) -> tuple[int, dict[str, Any] | None, str]:
    result = invoke("verify", target, "--tokens", "64", "--json", *extra)
    doc = json.loads(result.stdout) if result.exit_code in (0, 1) else None
    return result.exit_code, doc, result.stderr


# --- 1: --force replaces only what kvscale wrote --------------------------------------------------


def _project_dir(out: Path, src: Path) -> None:
    out.mkdir()
    (out / "kv_scales.json").write_text(json.dumps({"schema": "kvscale.scales/1", "layers": {}}))
    (out / "kv_scales.safetensors").write_bytes(b"mine")
    (out / "train.py").write_text("print('my work')\n")


def _output_plus_file(out: Path, src: Path) -> None:
    normalized(src, out)
    (out / "notes.md").write_text("results of last week\n")


def _output_plus_nested_file(out: Path, src: Path) -> None:
    normalized(src, out, "--checkpoint")
    (out / "checkpoint" / "README.md").write_text("my model card\n")


def _output_plus_empty_dir(out: Path, src: Path) -> None:
    normalized(src, out)
    (out / "runs").mkdir()


def _output_without_manifest(out: Path, src: Path) -> None:
    normalized(src, out)
    (out / MANIFEST_NAME).unlink()  # as written by an older kvscale, or copied by hand


def _output_with_file_replaced_by_dir(out: Path, src: Path) -> None:
    normalized(src, out)
    (out / "kv_scales.json").unlink()
    (out / "kv_scales.json").mkdir()
    (out / "kv_scales.json" / "keep.txt").write_text("x")


@pytest.mark.parametrize(
    "prepare",
    [
        _project_dir,
        _output_plus_file,
        _output_plus_nested_file,
        _output_plus_empty_dir,
        _output_without_manifest,
        _output_with_file_replaced_by_dir,
    ],
    ids=lambda f: f.__name__.strip("_"),
)
def test_i17_1_force_refuses_a_directory_kvscale_did_not_write(
    tmp_path: Path, prepare: Callable[[Path, Path], None]
) -> None:
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    prepare(out, src)
    before, src_before = snapshot(out), snapshot(src)
    result = invoke("normalize", src, "--out", out, "--force", "--checkpoint")
    one_line_error(result, str(out), "refusing to replace it even with --force")
    assert snapshot(out) == before
    assert snapshot(src) == src_before
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


def test_i17_1_force_replaces_an_untouched_output(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    out = normalized(src, tmp_path / "out", "--checkpoint")
    result = invoke("normalize", src, "--out", out, "--force", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["replaced"] is True
    assert sorted(os.listdir(out)) == sorted(
        [MANIFEST_NAME, scales_file.JSON_NAME, scales_file.TENSORS_NAME]
    )
    assert is_own_output(out)
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


# --- 2: the output is never the input, whatever path names it (bind mounts) -----------------------


def test_i17_2_out_is_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        for extra in ((), ("--force",), ("--force", "--checkpoint")):
            result = invoke("normalize", src, "--out", bound, *extra)
            one_line_error(result, f"--out {bound}", "input")
        assert snapshot(src) == before
    assert snapshot(src) == before


def test_i17_2_out_inside_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        result = invoke("normalize", src, "--out", bound / "scales", "--checkpoint")
        one_line_error(result, "is inside the input")
        assert not (src / "scales").exists()
    assert snapshot(src) == before


def test_i17_2_input_named_through_a_bind_mount(tmp_path: Path) -> None:
    """The input given by its bind-mount name, --out by the real name (or the other way)."""
    area = tmp_path / "area"
    src = checkpoint(area)
    before = snapshot(src)
    with bind_mount(area, tmp_path / "bound") as bound:
        for given, out in (
            (bound / "ckpt", src / "out"),
            (src, bound / "ckpt" / "out"),
            (bound / "ckpt", src),
        ):
            result = invoke("normalize", given, "--out", out, "--force")
            one_line_error(result, "input")
        assert snapshot(src) == before
    assert snapshot(src) == before


def test_i17_2_junit_through_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        result = invoke("inspect", src, "--junit", bound / "model.safetensors")
        one_line_error(result, "--junit", "input", stdout=True)
    assert snapshot(src) == before


# --- 3: a pre-existing empty --out; two runs racing for one --out ---------------------------------


def test_i17_3_empty_precreated_out_without_force(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    result = invoke("normalize", src, "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(out)) == sorted(
        [MANIFEST_NAME, scales_file.JSON_NAME, scales_file.TENSORS_NAME]
    )
    assert is_own_output(out)
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


def test_i17_3_file_written_into_the_empty_out_meanwhile_is_kept(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    plan = plan_normalize(src, out, NormalizeOptions())
    (out / "results.csv").write_text("a,b\n1,2\n")  # another program, between check and commit
    with pytest.raises(KVScaleError) as info:
        write_plan(plan)
    assert int(info.value.exit_code) == 2
    assert str(out) in info.value.one_line()
    assert snapshot(out) == {"results.csv": ("file", 0o666 & ~_umask(), 8, b"a,b\n1,2\n")}
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _race(first: Any, second: Any) -> Any:
    """Write ``first``; once its first bytes are down, run ``second`` to completion (the other
    process that checked the same --out meanwhile). Returns what ``first`` raised."""
    fired: list[Any] = []

    def progress(event: Any) -> None:
        if event.phase == "write" and not fired:
            fired.append(write_plan(second))

    with pytest.raises(KVScaleError) as info:
        write_plan(first, progress)
    assert fired, "the second run never ran"
    return info.value


@pytest.mark.parametrize("precreated", [True, False], ids=["empty-dir", "absent"])
def test_i17_3_two_racing_runs_exactly_one_wins(tmp_path: Path, precreated: bool) -> None:
    """Two runs check the same --out; the second finishes while the first is still writing: the
    first must lose (exit 2, naming --out), and the winner's output must stay complete."""
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    if precreated:
        out.mkdir()
    first = plan_normalize(src, out, NormalizeOptions(checkpoint=True))
    second = plan_normalize(src, out, NormalizeOptions())
    error = _race(first, second)
    assert int(error.exit_code) == 2
    assert str(out) in error.one_line()
    # The winner's output is complete and untouched: exactly its files, no checkpoint/.
    assert is_own_output(out)
    assert sorted(os.listdir(out)) == sorted(
        [MANIFEST_NAME, scales_file.JSON_NAME, scales_file.TENSORS_NAME]
    )
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


def test_i17_3_force_race_does_not_replace_the_other_runs_output(tmp_path: Path) -> None:
    """With --force, a run that checked the old output must not replace a newer one that
    another run committed meanwhile (a later, sequential --force run may)."""
    src = checkpoint(tmp_path)
    out = normalized(src, tmp_path / "out", "--platform", "fnuz")
    first = plan_normalize(src, out, NormalizeOptions(force=True, checkpoint=True))
    second = plan_normalize(src, out, NormalizeOptions(force=True))
    error = _race(first, second)
    assert int(error.exit_code) == 2
    assert is_own_output(out)
    assert sorted(os.listdir(out)) == sorted(
        [MANIFEST_NAME, scales_file.JSON_NAME, scales_file.TENSORS_NAME]
    )
    assert json.loads((out / scales_file.JSON_NAME).read_text())["platform"] == "ocp"
    assert leftovers(tmp_path, {"ckpt", "out"}) == []


# --- 4: report files never land on an input -------------------------------------------------------


def _hf_cache(root: Path) -> tuple[Path, Path]:
    """A models--org--tiny cache; returns (repo, snapshot)."""
    src = checkpoint(root, "_src")
    repo = root / "models--org--tiny"
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = repo / "snapshots" / rev
    (repo / "blobs").mkdir(parents=True)
    snap.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        blob = repo / "blobs" / f"blob-{f.name}"
        shutil.copyfile(f, blob)
        os.symlink(os.path.join("..", "..", "blobs", blob.name), snap / f.name)
    shutil.rmtree(src)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(rev)
    return repo, snap


def test_i17_4_junit_onto_a_shard_of_a_directory_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    for target in (src / "model.safetensors", src / "config.json", src / "new.xml"):
        result = invoke("inspect", src, "--junit", target)
        one_line_error(result, f"--junit {target}", "input", stdout=True)
    assert snapshot(src) == before


def test_i17_4_junit_onto_the_single_file_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    shard = src / "model.safetensors"
    os.symlink(shard, tmp_path / "link.safetensors")
    for target in (shard, tmp_path / "link.safetensors"):
        result = invoke("inspect", shard, "--junit", target)
        one_line_error(result, "--junit", "input", stdout=True)
    assert snapshot(src) == before


def test_i17_4_refused_junit_prints_no_report(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    for extra in ((), ("--json",)):
        result = invoke("inspect", src, *extra, "--junit", src / "model.safetensors")
        one_line_error(result, "--junit", stdout=bool(extra))
        if extra:  # --json: the document says what happened (kvscale.error/1), no report
            assert json.loads(result.stdout)["schema"] == "kvscale.error/1"


def test_i17_4_junit_onto_the_config_of_a_single_file_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    result = invoke("inspect", src / "model.safetensors", "--junit", src / "config.json")
    one_line_error(result, "--junit", "config.json", stdout=True)
    assert snapshot(src) == before


@pytest.mark.parametrize("layout", ["hf-snapshot", "symlinked-shard"])
def test_i17_4_junit_onto_the_real_file_of_a_shard(tmp_path: Path, layout: str) -> None:
    if layout == "hf-snapshot":
        repo, given = _hf_cache(tmp_path)
        target = repo / "blobs" / "blob-model.safetensors"
        watched = repo
    else:
        store = checkpoint(tmp_path, "store")
        given = tmp_path / "ckpt"
        given.mkdir()
        os.symlink(store / "model.safetensors", given / "model.safetensors")
        shutil.copyfile(store / "config.json", given / "config.json")
        target = store / "model.safetensors"
        watched = store
    before = snapshot(watched)
    result = invoke("inspect", given, "--junit", target)
    one_line_error(result, "--junit", "input", stdout=True)
    assert snapshot(watched) == before


@pytest.mark.slow  # transformers and a tiny model: seconds
@pytest.mark.parametrize("victim", ["model.safetensors", "config.json", "data"])
def test_i17_4_activations_out_onto_an_input(tmp_path: Path, victim: str) -> None:
    pytest.importorskip("transformers")
    from support.models import random_samples, save_tiny

    model = save_tiny("llama", tmp_path / "llama")
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"input_ids": list(s)}) + "\n" for s in random_samples((16, 16)))
    )
    before, data_before = snapshot(model), data.read_bytes()
    target = data if victim == "data" else model / victim
    result = invoke("verify", model, "--data", data, "--seq-len", "16", "--activations-out", target)
    one_line_error(result, "--activations-out", "input")
    assert snapshot(model) == before
    assert data.read_bytes() == data_before


# --- 5: links: never broken by --force, never followed out of the checkpoint, modes kept ----------


@pytest.mark.parametrize(
    "linked, copy",
    [
        pytest.param("model.safetensors", False, id="shard"),
        pytest.param("config.json", False, id="config"),
        pytest.param(
            "tokenizer.json",
            False,
            id="other-file",
        ),
        pytest.param(
            "tokenizer.json",
            True,
            id="other-file-checkpoint",
        ),
    ],
)
def test_i17_5_force_never_breaks_an_input_link_into_the_old_output(
    tmp_path: Path, linked: str, copy: bool
) -> None:
    src = checkpoint(tmp_path)
    (src / "tokenizer.json").write_text('{"version": "1.0"}')
    out = normalized(src, tmp_path / "out", "--checkpoint")
    # The user keeps one file of the checkpoint as a link to the normalized copy.
    (src / linked).unlink()
    os.symlink(out / "checkpoint" / linked, src / linked)
    before_src, before_out = snapshot(src), snapshot(out)
    content = (src / linked).read_bytes()
    result = invoke("normalize", src, "--out", out, "--force", *(["--checkpoint"] if copy else []))
    one_line_error(result, str(out))
    assert snapshot(src) == before_src
    assert snapshot(out) == before_out
    assert (src / linked).read_bytes() == content


def test_i17_5_links_out_of_the_checkpoint_are_skipped_and_said(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "id_rsa").write_text("-----BEGIN KEY-----\n")
    os.chmod(secret / "id_rsa", 0o600)
    os.symlink(secret / "id_rsa", src / "id_rsa")  # absolute
    os.symlink(os.path.join("..", "secret", "id_rsa"), src / "relative_key")  # relative
    os.symlink(secret, src / "keys")  # a directory
    (src / "sub").mkdir()
    os.symlink(os.path.join("..", "..", "secret", "id_rsa"), src / "sub" / "deep_key")
    (src / "tokenizer.json").write_text("{}")
    os.symlink("tokenizer.json", src / "tokenizer_link.json")  # inside: copied as a file
    result = invoke("normalize", src, "--out", tmp_path / "out", "--checkpoint", "--json")
    assert result.exit_code == 0, result.stderr
    warnings = {w["message"] for w in json.loads(result.stdout)["warnings"]}
    assert warnings >= {
        "id_rsa is not copied: symbolic link to a file outside the checkpoint",
        "relative_key is not copied: symbolic link to a file outside the checkpoint",
        "sub/deep_key is not copied: symbolic link to a file outside the checkpoint",
        "keys is not copied: symbolic link to a directory",
    }, warnings
    for line in (
        "kvscale: warning: file-not-copied: id_rsa is not copied: symbolic link to a file "
        "outside the checkpoint",
    ):
        assert line in result.stderr.splitlines()
    copy = snapshot(tmp_path / "out" / "checkpoint")
    assert not {"id_rsa", "relative_key", "keys", "sub/deep_key"} & set(copy)
    assert all(b"BEGIN KEY" not in v[-1] for v in copy.values() if v[0] == "file")
    assert copy["tokenizer_link.json"][0] == "file"
    assert copy["tokenizer_link.json"][-1] == b"{}"


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o000], ids=["022", "002", "000"])
def test_i17_5_copies_are_never_more_permissive_than_their_source(
    tmp_path: Path, umask: int
) -> None:
    src = write_checkpoint(
        tmp_path / "ckpt",
        {**attention_weights(2), f"{P.format(0)}.k_proj.k_scale": tensor(0.5)},
        llama_config(2, quant=quant_config("fp8")),
        shards=[
            {**attention_weights(1), f"{P.format(0)}.k_proj.k_scale": tensor(0.5)},
            attention_weights(2),
        ],
        index=True,
    )
    (src / "tokenizer.json").write_text("{}")
    (src / "run.sh").write_text("#!/bin/sh\n")
    modes = {
        "config.json": 0o600,
        "model-00001-of-00002.safetensors": 0o640,  # rewritten (its scales change)
        "model-00002-of-00002.safetensors": 0o400,  # copied whole
        "model.safetensors.index.json": 0o604,
        "tokenizer.json": 0o440,
        "run.sh": 0o750,
    }
    for name, mode in modes.items():
        os.chmod(src / name, mode)
    old = os.umask(umask)
    try:
        result = invoke("normalize", src, "--out", tmp_path / "out", "--checkpoint")
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.stderr
    copy = tmp_path / "out" / "checkpoint"
    for name, mode in modes.items():
        got = stat.S_IMODE(os.stat(copy / name).st_mode)
        assert got & ~mode == 0, f"{name}: {oct(got)} is wider than the source's {oct(mode)}"
        assert got & ~(0o777 & ~umask) == 0, f"{name}: {oct(got)} ignores the umask {oct(umask)}"


# --- 6: every read is bounded ---------------------------------------------------------------------


def test_i17_6_policy_file_named_as_fifo_or_device(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    fifo = tmp_path / "policy.toml"
    os.mkfifo(fifo)
    zero = tmp_path / "kvscale.toml"
    os.symlink("/dev/zero", zero)
    with deadline(5):
        one_line_error(invoke("inspect", src, "--policy", fifo), str(fifo), "FIFO")
        one_line_error(invoke("inspect", src, "--policy", zero), str(zero), "device")
        one_line_error(
            invoke("normalize", src, "--out", tmp_path / "o", "--policy", zero), str(zero)
        )


def test_i17_6_policy_file_over_the_limit(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    big = tmp_path / "kvscale.toml"
    big.write_text("strict = true\n" + "# padding\n" * 110_000)  # 1.1 MB of comments
    err = one_line_error(invoke("inspect", src, "--policy", big), str(big))
    assert "max-policy-bytes" in err and "KVSCALE_MAX_POLICY_BYTES" in err
    sparse = tmp_path / "sparse.toml"
    with open(sparse, "wb") as fh:
        fh.truncate(50 << 30)  # claims 50 GB: refused by size, never read
    with deadline(5):
        err = one_line_error(invoke("inspect", src, "--policy", sparse), str(sparse))
    assert "KVSCALE_MAX_POLICY_BYTES" in err


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "dangling"])
def test_i17_6_discovered_policy_file_is_read_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A kvscale.toml in the working directory that is a FIFO or a link to /dev/zero: the run
    must answer at once (it used to block, or to read forever)."""
    src = checkpoint(tmp_path)
    work = tmp_path / "repo"
    work.mkdir()
    (work / ".git").mkdir()
    policy = work / "kvscale.toml"
    if kind == "fifo":
        os.mkfifo(policy)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", policy)
    else:
        os.symlink("missing.toml", policy)
    monkeypatch.chdir(work)
    start = time.monotonic()
    with deadline(5):
        result = invoke("inspect", src)
    assert time.monotonic() - start < 5
    assert result.exit_code in (0, 2), result.stderr
    assert "internal error" not in result.stderr
    if result.exit_code == 2:
        one_line_error(result, "kvscale.toml")


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_i17_6_discovered_policy_file_that_cannot_be_read_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    src = checkpoint(tmp_path)
    work = tmp_path / "repo"
    work.mkdir()
    (work / ".git").mkdir()
    policy = work / "kvscale.toml"
    if kind == "fifo":
        os.mkfifo(policy)
    else:
        os.symlink("/dev/zero", policy)
    monkeypatch.chdir(work)
    with deadline(5):
        one_line_error(invoke("inspect", src), "kvscale.toml")


def test_i17_6_scales_json_is_read_bounded(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    out = normalized(src, tmp_path / "out")
    other = normalized(src, tmp_path / "other")
    doc = out / scales_file.JSON_NAME
    # Lowered limit: the real document is refused, naming the limit and its variable.
    for command in (["verify", out], ["diff", out, other]):
        result = invoke(*command, env={"KVSCALE_MAX_DOCUMENT_BYTES": "100"})
        err = one_line_error(result, str(doc))
        assert "max-document-bytes" in err and "KVSCALE_MAX_DOCUMENT_BYTES" in err
    # A huge (sparse) document is refused by its size, without reading it.
    doc.unlink()
    with open(doc, "wb") as fh:
        fh.truncate(100 << 30)
    with deadline(5):
        for command in (["verify", out], ["diff", other, out]):
            err = one_line_error(invoke(*command), str(doc))
            assert "KVSCALE_MAX_DOCUMENT_BYTES" in err
    doc.unlink()
    os.mkfifo(doc)
    with deadline(5):
        for command in (["verify", out], ["diff", other, out]):
            one_line_error(invoke(*command), str(doc), "FIFO")


def test_i17_6_activations_are_read_bounded(tmp_path: Path) -> None:
    src = per_head(tmp_path)
    out = normalized(src, tmp_path / "out")
    # 2**39 bf16 elements (1 TiB, sparse): refused from the header alone.
    huge = sparse_safetensors(
        tmp_path / "huge.safetensors",
        [(f"{L0}.k", "BF16", [1 << 28, 2, 1024]), (f"{L0}.v", "BF16", [16, 2, 16])],
    )
    with deadline(5):
        err = one_line_error(invoke("verify", out, "--activations", huge), str(huge))
    assert "max-verify-elements" in err and "KVSCALE_MAX_VERIFY_ELEMENTS" in err
    small = tmp_path / "small.safetensors"
    save_file({f"{L0}.k": torch.randn(64, 2, 16), f"{L0}.v": torch.randn(64, 2, 16)}, str(small))
    result = invoke(
        "verify", out, "--activations", small, env={"KVSCALE_MAX_VERIFY_ELEMENTS": "100"}
    )
    one_line_error(result, "KVSCALE_MAX_VERIFY_ELEMENTS")
    fifo = tmp_path / "fifo.safetensors"
    os.mkfifo(fifo)
    with deadline(5):
        one_line_error(invoke("verify", out, "--activations", fifo), str(fifo), "FIFO")


def test_i17_6_special_files_in_the_checkpoint_are_skipped_not_read(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    os.mkfifo(src / "pipe.json")
    os.symlink("/dev/zero", src / "zeros.bin")
    with deadline(10):
        result = invoke("normalize", src, "--out", tmp_path / "out", "--checkpoint", "--json")
    assert result.exit_code == 0, result.stderr
    warnings = {w["message"] for w in json.loads(result.stdout)["warnings"]}
    assert "pipe.json is not copied: not a regular file" in warnings
    assert any(w.startswith("zeros.bin is not copied") for w in warnings), warnings
    assert not {"pipe.json", "zeros.bin"} & set(os.listdir(tmp_path / "out" / "checkpoint"))


@functools.lru_cache(maxsize=1)
def _limits_in_source() -> dict[str, str]:
    """Every ``Limit(name, env, ...)`` constructed anywhere in kvscale/, by name -> variable."""
    found: dict[str, str] = {}
    for path in sorted((REPO / "kvscale").rglob("*.py")):
        text = path.read_text()
        if "Limit(" not in text:
            continue
        tree = ast.parse(text, str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Limit"
                and len(node.args) >= 2
                and all(isinstance(a, ast.Constant) for a in node.args[:2])
            ):
                found[str(node.args[0].value)] = str(node.args[1].value)
    return found


def test_i17_6_the_limits_found_in_the_source() -> None:
    """The inventory the documentation test below checks (a guard on the scan itself)."""
    limits = _limits_in_source()
    assert {
        "max-header-bytes": "KVSCALE_MAX_HEADER_BYTES",
        "max-scale-elements": "KVSCALE_MAX_SCALE_ELEMENTS",
        "max-shards": "KVSCALE_MAX_SHARDS",
        "max-config-bytes": "KVSCALE_MAX_CONFIG_BYTES",
        "max-index-bytes": "KVSCALE_MAX_INDEX_BYTES",
        "max-layers": "KVSCALE_MAX_LAYERS",
        "max-heads": "KVSCALE_MAX_HEADS",
        "max-policy-bytes": "KVSCALE_MAX_POLICY_BYTES",
        "max-document-bytes": "KVSCALE_MAX_DOCUMENT_BYTES",
        "max-verify-elements": "KVSCALE_MAX_VERIFY_ELEMENTS",
    }.items() <= limits.items()


def test_i17_6_docs_list_every_limit_and_its_variable() -> None:
    text = (REPO / "docs" / "limits.md").read_text()
    missing = [
        f"{name} ({env})"
        for name, env in sorted(_limits_in_source().items())
        if f"`{name}`" not in text or f"`{env}`" not in text
    ]
    assert missing == []


# --- 7: no super-linear path (timed limits; the full sizes are slow) ------------------------------


def _quark_checkpoint(root: Path, patterns: int) -> Path:
    """``patterns`` kv_cache_group globs against as many layer_quant_config names."""
    d = root / f"quark-{patterns}"
    group = [f"*layers.{i}.self_attn.k_proj" for i in range(patterns)]
    lqc = {
        f"model.layers.{i}.self_attn.k_proj": {"output_tensors": FP8_TENSOR}
        for i in range(patterns)
    }
    qc = {"quant_method": "quark", "export": {"kv_cache_group": group}, "layer_quant_config": lqc}
    t = attention_weights(2)
    t.update({f"{P.format(i)}.{p}_proj.output_scale": tensor(0.5) for i in range(2) for p in "kv"})
    return write_checkpoint(d, t, llama_config(2, quant=qc))


def _timed(seconds: float, *args: object, guard: float | None = None) -> Any:
    """Run the CLI and require it to take less than ``seconds`` of CPU time: CPU time, not wall
    time, so that other work on a busy CI machine does not decide the outcome. A wall-clock
    ``guard`` (default 4x) stops a run that would go on for minutes."""
    cpu, wall = time.process_time(), time.monotonic()
    with deadline(guard or 4 * seconds):
        result = invoke(*args)
    used = time.process_time() - cpu
    assert used < seconds, f"{used:.2f} s of CPU ({time.monotonic() - wall:.2f} s wall)"
    return result


def test_i17_7_quark_pattern_matching_is_near_linear_small(tmp_path: Path) -> None:
    """3,000 x 3,000 within 1 s of CPU (quadratic: ~2.6 s here; near-linear: ~0.2 s), stopped
    after 1.2 s of wall time: the default run's canary for the slow 12,000 x 12,000 test."""
    d = _quark_checkpoint(tmp_path, 3_000)
    result = _timed(1.0, "inspect", d, "--json", guard=1.2)
    assert result.exit_code == 0, result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_i17_7_quark_12000_patterns_x_12000_layers(tmp_path: Path, engine: str) -> None:
    d = _quark_checkpoint(tmp_path, 12_000)
    result = _timed(5.0, "inspect", d, "--json", "--engine", engine)
    # vLLM loads the scales; SGLang reports them unused on its unquantized default cache
    # (scales-on-unquantized-cache, an error): either way an answer, in time.
    assert result.exit_code == (0 if engine == "vllm" else 1), result.stderr
    assert json.loads(result.stdout)["layers"]


def _unmapped_checkpoint(root: Path, names: int, layers: int) -> Path:
    d = root / f"unmapped-{names}-{layers}"
    d.mkdir()
    (d / "config.json").write_text(json.dumps(llama_config(layers, quant=quant_config("fp8"))))
    tensors = [(f"model.layers.{i % layers}.mlp.x{i}.k_scale", "F32", []) for i in range(names)]
    tensors += [(f"{P.format(i)}.q_proj.weight", "BF16", [4, 4]) for i in range(layers)]
    return sparse_safetensors(d / "model.safetensors", tensors).parent


@pytest.mark.slow
def test_i17_7_inspect_5000_unmapped_names_x_2000_layers(tmp_path: Path) -> None:
    d = _unmapped_checkpoint(tmp_path, 5_000, 2_000)
    result = _timed(5.0, "inspect", d, "--json")
    assert result.exit_code == 1, result.stderr  # every name is an unloadable tensor
    doc = json.loads(result.stdout)
    assert len(doc["layers"]) == 2_000


@pytest.mark.slow
def test_i17_7_inspect_20000_unmapped_names_x_4096_layers(tmp_path: Path) -> None:
    """The same path at the layer limit (max-layers 4,096): near-linear means seconds."""
    d = _unmapped_checkpoint(tmp_path, 20_000, 4_096)
    result = _timed(5.0, "inspect", d, "--json")
    assert result.exit_code == 1, result.stderr


@pytest.mark.slow
def test_i17_7_normalize_checkpoint_50000_tensors_2000_scaleless_layers(tmp_path: Path) -> None:
    d = tmp_path / "wide"
    d.mkdir()
    layers = 2_000
    (d / "config.json").write_text(json.dumps(llama_config(layers, quant=quant_config("fp8"))))
    sparse_safetensors(
        d / "model.safetensors",
        [
            (f"model.layers.{i % layers}.mlp.w{i // layers}.weight", "BF16", [8])
            for i in range(50_000)
        ],
    )
    out = tmp_path / "out"
    result = _timed(10.0, "normalize", d, "--out", out, "--checkpoint", "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["layers"]["written"] == layers
    assert len(doc["checkpoint_changes"]["added"]) == 2 * layers  # explicit k and v per layer


# --- 8: verify's buffers are sized under a limit --------------------------------------------------


@pytest.mark.parametrize(
    "config, args",
    [
        pytest.param(
            {"head_dim": 65536, "num_key_value_heads": 1024, "num_attention_heads": 1024},
            (),
            id="head_dim-65536-x-1024-heads",
        ),
        pytest.param(
            {"hidden_size": 1 << 26, "num_attention_heads": 1024, "num_key_value_heads": 1024},
            (),
            id="hidden_size-2^26",
        ),
        pytest.param(
            {"head_dim": 128, "num_key_value_heads": 1024, "num_attention_heads": 1024},
            ("--tokens", "4194304"),
            id="tokens-max",
        ),
        pytest.param(
            {"head_dim": 1 << 28},
            (),
            id="head_dim-2^28",
        ),
    ],
)
def test_i17_8_verify_refuses_a_terabyte_buffer(
    tmp_path: Path, config: dict[str, int], args: tuple[str, ...]
) -> None:
    t = attention_weights(1)
    t[f"{P.format(0)}.k_scale"] = tensor(0.5)
    t[f"{P.format(0)}.v_scale"] = tensor(0.5)
    cfg = llama_config(1, quant=quant_config("compressed-tensors"))
    cfg.update(config)
    src = write_checkpoint(tmp_path / "ckpt", t, cfg)
    args = args or ("--tokens", "64")
    with deadline(10):
        result = invoke("verify", src, *args)
    err = one_line_error(result, str(src))
    assert "max-verify-elements" in err and "KVSCALE_MAX_VERIFY_ELEMENTS" in err
    # The same check guards a scales output sized from its JSON.
    out = normalized(src, tmp_path / "out")
    with deadline(10):
        one_line_error(invoke("verify", out, *args), "KVSCALE_MAX_VERIFY_ELEMENTS")


def test_i17_8_verify_limit_follows_its_variable(tmp_path: Path) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    code, _, err = verify_json(out)
    assert code == 0, err
    result = invoke("verify", out, "--tokens", "64", env={"KVSCALE_MAX_VERIFY_ELEMENTS": "2047"})
    err = one_line_error(result, "2,048 elements", "KVSCALE_MAX_VERIFY_ELEMENTS")
    result = invoke("verify", out, "--tokens", "64", env={"KVSCALE_MAX_VERIFY_ELEMENTS": "many"})
    one_line_error(result, "KVSCALE_MAX_VERIFY_ELEMENTS must be a positive integer")


# --- 9: crashes become one line naming the file ---------------------------------------------------


def test_i17_9_shard_named_with_a_non_ascii_digit(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    os.rename(src / "model.safetensors", src / "a1²2.safetensors")
    for args in (
        ("inspect", src),
        ("inspect", src / "a1²2.safetensors"),
        ("normalize", src, "--out", tmp_path / "out", "--checkpoint"),
        ("verify", src),
    ):
        one_line_error(invoke(*args), str(src), "a1²2.safetensors")
    (src / "model.safetensors.index.json").write_text(
        json.dumps({"weight_map": dict.fromkeys(SCALES, "a1²2.safetensors")})
    )
    one_line_error(invoke("inspect", src), "a1²2.safetensors")
    assert not (tmp_path / "out").exists()


def test_i17_9_shard_with_a_non_utf8_file_name(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    raw = os.fsencode(src) + b"/model-\xff\xfe.safetensors"
    os.rename(src / "model.safetensors", raw)
    for args in (
        ("inspect", src),
        ("inspect", os.fsdecode(raw)),
        ("normalize", src, "--out", tmp_path / "out", "--checkpoint"),
    ):
        one_line_error(invoke(*args), str(src), "not valid UTF-8")
    assert not (tmp_path / "out").exists()


def _deep_tree(root: Path, depth: int) -> Path:
    """``root/d/d/.../d`` ``depth`` levels deep (made with dir fds: no path gets too long)."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            next_fd = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = next_fd
        leaf = os.open("leaf.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"leaf\n")
        os.close(leaf)
    finally:
        os.close(fd)
    return root


def remove_tree(root: Path) -> None:
    """Delete a tree without recursion and with short paths: every subdirectory is first moved
    up next to ``root``. (shutil.rmtree, and so pytest's own clean-up of tmp_path, overflows the
    stack on 1,100 levels on Python 3.11 and leaves the base temporary directory behind.)"""
    if not os.path.lexists(root):
        return
    if os.path.islink(root) or not os.path.isdir(root):
        os.unlink(root)
        return
    parent = os.open(root.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        pending, moved = [root.name], 0
        while pending:
            name = pending.pop()
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
            try:
                with os.scandir(fd) as entries:
                    found = [(e.name, e.is_dir(follow_symlinks=False)) for e in entries]
                for child, is_dir in found:
                    if is_dir:
                        moved += 1
                        flat = f".{root.name}.rm-{os.getpid()}-{moved}"
                        os.rename(child, flat, src_dir_fd=fd, dst_dir_fd=parent)
                        pending.append(flat)
                    else:
                        os.unlink(child, dir_fd=fd)
            finally:
                os.close(fd)
            os.rmdir(name, dir_fd=parent)
    finally:
        os.close(parent)


DEEP = pytest.mark.slow  # 1,100 mkdirs and their removal: seconds on a busy disk


@DEEP
def test_i17_9_checkpoint_holding_a_1100_level_tree(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    try:
        _deep_tree(src / "deep", 1100)
        before = snapshot(src)
        result = invoke("normalize", src, "--out", out, "--checkpoint")
        assert result.exit_code in (0, 2), result.stderr
        if result.exit_code == 2:
            one_line_error(result, str(src))
            assert not out.exists()
        else:  # copied: every entry, the leaf included
            leaf = "checkpoint/deep/" + "d/" * 1100 + "leaf.txt"
            assert snapshot(out)[leaf][-1] == b"leaf\n"
        assert snapshot(src) == before
        assert leftovers(tmp_path, {"ckpt", "out"}) == []
    finally:
        for path in (src / "deep", out, *tmp_path.glob(".out.*")):
            remove_tree(path)


@DEEP
def test_i17_9_checkpoint_1100_levels_down(tmp_path: Path) -> None:
    deep = tmp_path / "deep"
    try:
        _deep_tree(deep, 1100)
        leaf = Path(os.path.join(deep, *(["d"] * 1100)))
        src = checkpoint(leaf)
        result = invoke("inspect", src)
        assert result.exit_code == 0, result.stderr
        out = tmp_path / "out"
        assert invoke("normalize", src, "--out", out, "--checkpoint").exit_code == 0
        assert is_own_output(out)
        one_line_error(invoke("normalize", src, "--out", src / "out"), "is inside the input")
    finally:
        remove_tree(deep)


NESTED = [
    pytest.param('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply", id="lists"),
    pytest.param(
        '{"a": ' + '{"b": ' * 5_000 + "1" + "}" * 5_001, "nested too deeply", id="objects"
    ),
    pytest.param('{"num_hidden_layers": 1' + "0" * 5_000 + "}", "5,001 digits", id="huge-int"),
    pytest.param('{"num_hidden_layers": 1e999}', "", id="huge-float"),
]


@pytest.mark.parametrize("text, words", NESTED)
@pytest.mark.parametrize(
    "name", ["config.json", "hf_quant_config.json", "model.safetensors.index.json"]
)
def test_i17_9_hostile_json_in_the_checkpoint(
    tmp_path: Path, name: str, text: str, words: str
) -> None:
    src = checkpoint(tmp_path)
    (src / name).write_text(text)
    with deadline(10):
        result = invoke("inspect", src)
    if name == "config.json" and words == "":
        # A float where an integer is needed: a config error, not a parse error.
        one_line_error(result, str(src / name), "num_hidden_layers")
        return
    if name == "model.safetensors.index.json" and words == "":
        one_line_error(result, str(src / name), "weight_map")
        return
    if name == "hf_quant_config.json" and words == "":
        assert result.exit_code in (0, 1), result.stderr
        return
    one_line_error(result, str(src / name), words)


@pytest.mark.parametrize(
    "text, words",
    [
        pytest.param("a = " + "[" * 5_000 + "]" * 5_000 + "\n", "nested too deeply", id="arrays"),
        pytest.param(
            "a = " + "{b = " * 3_000 + "1" + "}" * 3_000 + "\n", "nested too deeply", id="tables"
        ),
        pytest.param("strict = 1" + "0" * 5_000 + "\n", "invalid TOML", id="huge-int-literal"),
        pytest.param("max_rel_change = 1e999\n", "max_rel_change", id="huge-float"),
        pytest.param(
            "max_rel_change = 1" + "0" * 400 + "\n",
            "max_rel_change",
            id="huge-int-value",
        ),
        pytest.param("[a.b.c.d]\n" * 1 + "x." * 2_000 + "y = 1\n", "", id="dotted-key"),
    ],
)
def test_i17_9_hostile_toml_policy(tmp_path: Path, text: str, words: str) -> None:
    src = checkpoint(tmp_path)
    policy = tmp_path / "kvscale.toml"
    policy.write_text(text)
    with deadline(10):
        result = invoke("inspect", src, "--policy", policy)
    one_line_error(result, str(policy), words)


@pytest.mark.parametrize(
    "text, words",
    [
        pytest.param(
            '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply", id="nested"
        ),
        pytest.param(
            '{"schema": "kvscale.scales/1", "x": 1' + "0" * 5_000 + "}", "digits", id="huge-int"
        ),
    ],
)
def test_i17_9_hostile_scales_json(tmp_path: Path, text: str, words: str) -> None:
    src = checkpoint(tmp_path)
    out = normalized(src, tmp_path / "out")
    other = normalized(src, tmp_path / "other")
    (out / scales_file.JSON_NAME).write_text(text)
    for command in (["verify", out], ["diff", other, out], ["diff", other, out / "kv_scales.json"]):
        with deadline(10):
            one_line_error(invoke(*command), str(out / scales_file.JSON_NAME), words)


def test_i17_9_per_head_tensors_of_the_wrong_length_in_a_checkpoint(tmp_path: Path) -> None:
    """The engine's loader keeps the first num_kv_heads values (a warning); a q of the wrong
    length it refuses (exit 1). Neither is a crash."""
    t = attention_weights(1)
    t[f"{P.format(0)}.k_scale"] = tensor([0.1, 0.2, 0.3], shape=(3, 1, 1))
    t[f"{P.format(0)}.v_scale"] = tensor([0.1, 0.2], shape=(2, 1, 1))
    src = write_checkpoint(
        tmp_path / "long", t, llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    )
    result = invoke("inspect", src, "--json")
    assert result.exit_code == 0, result.stderr
    assert [p["code"] for p in json.loads(result.stdout)["problems"]] == ["per-head-truncated"]
    t[f"{P.format(0)}.k_scale"] = tensor([0.1, 0.2], shape=(2, 1, 1))
    t[f"{P.format(0)}.q_scale"] = tensor([0.1, 0.2, 0.3], shape=(3, 1, 1))
    src = write_checkpoint(
        tmp_path / "q", t, llama_config(1, quant=quant_config("ct-head"), head_dim=16)
    )
    result = invoke("inspect", src)
    assert result.exit_code == 1, result.stderr
    assert "layer-refused" in result.stdout


def test_i17_9_per_head_lists_of_different_lengths_in_a_scales_output(tmp_path: Path) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    v3 = [0.01, 0.02, 0.03]
    top = struct.unpack("<f", struct.pack("<f", 0.03))[0]

    def longer_v(doc: dict[str, Any]) -> None:
        doc["layers"][L0]["per_head"]["v_scale"] = v3
        doc["layers"][L0]["v_scale"] = top

    edit_json(out / scales_file.JSON_NAME, longer_v)
    edit_device(out, lambda d: d.__setitem__(f"{L0}.v_scale", torch.tensor(v3)))
    one_line_error(invoke("verify", out), str(out))


def _activations(path: Path, k: torch.Tensor | None, v: torch.Tensor | None) -> Path:
    tensors = {}
    if k is not None:
        tensors[f"{L0}.k"] = k
    if v is not None:
        tensors[f"{L0}.v"] = v
    save_file(tensors, str(path))
    return path


@pytest.mark.parametrize(
    "k, v, words",
    [
        pytest.param((64, 2, 16), (64, 2, 8), "share the kv heads and head size", id="head-size"),
        pytest.param((64, 2, 16), (64, 3, 16), "share the kv heads and head size", id="kv-heads"),
        pytest.param((64, 32), (64, 32), "[tokens, num_kv_heads, head_size]", id="2-d"),
        pytest.param(
            (64, 3, 16),
            (64, 3, 16),
            "",
            id="heads-vs-per-head-scales",
        ),
        pytest.param(
            (64, 2, 16, "f16"),
            (64, 2, 16, "bf16"),
            "",
            id="k-v-dtypes",
        ),
        pytest.param(
            (64, 2, 16),
            None,
            "",
            id="k-only",
        ),
    ],
)
def test_i17_9_activations_whose_k_and_v_disagree(
    tmp_path: Path, k: tuple[Any, ...], v: tuple[Any, ...] | None, words: str
) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}

    def make(spec: tuple[Any, ...] | None) -> torch.Tensor | None:
        if spec is None:
            return None
        dims = [d for d in spec if isinstance(d, int)]
        dtype = dtypes[spec[-1]] if isinstance(spec[-1], str) else torch.float32
        return (torch.randn(*dims) * 0.01).to(dtype)

    path = _activations(tmp_path / "acts.safetensors", make(k), make(v))
    with deadline(20):
        one_line_error(invoke("verify", out, "--activations", path), str(path), words)


# --- 10: verify finds every host/device disagreement; diff keeps every layer ----------------------


@pytest.mark.parametrize("kind", ["k_scale", "v_scale", "q_scale", "prob_scale"])
def test_i17_10_one_ulp_on_the_device_fails(tmp_path: Path, kind: str) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    name = f"{L0}.{kind}"
    edit_device(out, lambda d: d.__setitem__(name, torch.tensor(ulp_up(float(d[name])))))
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False and doc["ok"] is False
    assert [layer["pass"] for layer in doc["layers"]] == [False, True]


@pytest.mark.parametrize("side", ["device", "json"])
def test_i17_10_one_ulp_in_a_non_max_head_fails(tmp_path: Path, side: str) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    # k heads [0.01, 0.02]: head 0 is not the max, so the host float (the max) is unchanged.
    low = float(torch.tensor(0.01, dtype=torch.float32))
    if side == "device":
        edit_device(
            out, lambda d: d.__setitem__(f"{L0}.k_scale", torch.tensor([ulp_up(low), 0.02]))
        )
    else:
        edit_json(
            out / scales_file.JSON_NAME,
            lambda doc: doc["layers"][L0]["per_head"]["k_scale"].__setitem__(0, ulp_up(low)),
        )
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_i17_10_layer_only_in_the_safetensors_fails(tmp_path: Path) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    ghost = "model.layers.7.self_attn.attn"
    edit_device(
        out,
        lambda d: d.update(
            {f"{ghost}.k_scale": torch.tensor(0.5), f"{ghost}.v_scale": torch.tensor(0.5)}
        ),
    )
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False
    assert ghost in {layer["name"] for layer in doc["layers"] if not layer["pass"]}
    # Dropping the layer from the JSON is the same disagreement.
    out2 = normalized(small_fp8(tmp_path, "again"), tmp_path / "out2", "--kv-cache-dtype", "fp8")
    edit_json(out2 / scales_file.JSON_NAME, lambda doc: doc["layers"].pop(L0))
    code, doc, err = verify_json(out2)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_i17_10_host_q_without_a_device_tensor_fails(tmp_path: Path) -> None:
    out = normalized(small_fp8(tmp_path), tmp_path / "out", "--kv-cache-dtype", "fp8")
    edit_device(out, lambda d: d.pop(f"{L0}.q_scale"))
    code, doc, err = verify_json(out)
    assert code == 1, err
    assert doc is not None and doc["host_device_agree"] is False


def test_i17_10_untouched_outputs_verify(tmp_path: Path) -> None:
    """The baseline of the disagreement tests below: the same outputs, unedited, pass."""
    for out in (
        normalized(small_fp8(tmp_path), tmp_path / "fp8-out", "--kv-cache-dtype", "fp8"),
        normalized(per_head(tmp_path), tmp_path / "heads-out"),
    ):
        code, doc, err = verify_json(out)
        assert code == 0, err
        assert doc is not None and doc["host_device_agree"] is True


def test_i17_10_verify_accepts_normalize_force_output(tmp_path: Path) -> None:
    t = attention_weights(2)
    t[f"{P.format(0)}.k_scale"] = tensor(0.5)
    t[f"{P.format(0)}.v_scale"] = tensor(0.25)
    t[f"{P.format(1)}.k_scale"] = tensor(0.0)  # not writable: kept under --unsafe-write-unfixed
    t[f"{P.format(1)}.v_scale"] = tensor(0.25)
    src = write_checkpoint(
        tmp_path / "ckpt", t, llama_config(2, quant=quant_config("compressed-tensors"), head_dim=16)
    )
    assert invoke("normalize", src, "--out", tmp_path / "no").exit_code == 1
    out = normalized(src, tmp_path / "out", "--unsafe-write-unfixed", "--checkpoint")
    code, doc, err = verify_json(out)
    assert code == 0, err
    assert doc is not None and doc["host_device_agree"] is True
    assert [layer["name"] for layer in doc["layers"]] == [L0]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: torch.full((64, 2, 16), float("nan")), id="all-nan"),
        pytest.param(lambda: torch.full((64, 2, 16), float("inf")), id="all-inf"),
        pytest.param(lambda: torch.zeros((0, 2, 16)), id="zero-tokens"),
    ],
)
def test_i17_10_activations_with_nothing_to_verify_fail(
    tmp_path: Path, make: Callable[[], torch.Tensor]
) -> None:
    out = normalized(per_head(tmp_path), tmp_path / "out")
    path = _activations(tmp_path / "acts.safetensors", make(), make())
    code, doc, err = verify_json(out, "--activations", str(path))
    assert code == 1, err
    assert doc is not None and doc["ok"] is False
    assert [layer["pass"] for layer in doc["layers"]] == [False]


def test_i17_10_diff_refuses_a_duplicate_layer(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    report = tmp_path / "report.json"
    result = invoke("inspect", src, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    doc["layers"].append(dict(doc["layers"][0], k_scale=0.75))
    report.write_text(json.dumps(doc))
    err = one_line_error(invoke("diff", src, report), str(report), "appears twice")
    assert L0 in err
    out = normalized(src, tmp_path / "out")
    text = (out / scales_file.JSON_NAME).read_text()
    entry = json.dumps(json.loads(text)["layers"][L0])
    doubled = text.replace('"layers": {', '"layers": {' + json.dumps(L0) + ": " + entry + ",", 1)
    (out / scales_file.JSON_NAME).write_text(doubled)
    one_line_error(invoke("diff", src, out), str(out / scales_file.JSON_NAME), "duplicate key")
    one_line_error(invoke("verify", out), str(out / scales_file.JSON_NAME), "duplicate key")


# --- 11: no workflow command from a checkpoint name, after wrapping -------------------------------

HOSTILE = " ::error title=owned::pwned ##[group]x ::set-output name=a::b "


def _hostile_checkpoint(root: Path) -> Path:
    # A prefix longer than any render width, with '::' words wherever a line may wrap.
    long = "w" * 4_060 + "".join(f" ::e{i}" for i in range(40)) + " ##[x]"
    t = attention_weights(2)
    for prefix in (f"model{HOSTILE}", f"model{long}"):
        t.update(attention_weights(1, prefix=prefix + ".layers.{}.self_attn"))
        t[f"{prefix}.layers.0.self_attn.k_proj.k_scale"] = tensor(0.5)
    t[f"{P.format(0)}.k_scale"] = tensor(0.0)  # skipped under --force: a warning naming it
    t[f"{P.format(0)}.v_scale"] = tensor(0.5)
    src = write_checkpoint(
        root / "ckpt", t, llama_config(2, quant=quant_config("fp8"), head_dim=16)
    )
    os.symlink("/etc/hostname", src / f"notes{HOSTILE}.txt")  # 'file-not-copied' names it
    os.rename(src / "model.safetensors", src / f"m{HOSTILE}.safetensors")
    return src


def _commands(lines: str) -> list[str]:
    return [line for line in lines.splitlines() if line.lstrip().startswith("::") or "##[" in line]


@pytest.mark.parametrize("columns", ["40", "80", "200"])
def test_i17_11_no_workflow_command_from_names(tmp_path: Path, columns: str) -> None:
    src = _hostile_checkpoint(tmp_path)
    env = {"GITHUB_ACTIONS": "true", "COLUMNS": columns}
    out = tmp_path / "out"
    result = invoke(
        "normalize", src, "--out", out, "--checkpoint", "--unsafe-write-unfixed", env=env
    )
    assert result.exit_code == 0, result.stderr
    assert _commands(result.stderr) == []
    assert "notes ::error" in result.stderr  # shown, defused: not dropped
    assert "\\x23#[group]" in result.stderr
    shown = ""
    for args in (("verify", out, "--tokens", "64"), ("verify", out, "--tokens", "64", "--quiet")):
        result = invoke(*args, env=env)
        assert result.exit_code == 0, result.stderr
        assert _commands(result.stdout) == [], _commands(result.stdout)[:3]
        assert _commands(result.stderr) == []
        shown += result.stdout
    assert "pwned" in shown  # the hostile layer is shown, defused


# --- 12: interrupts, PID 1, index messages --------------------------------------------------------


def _unshare() -> list[str]:
    tool = shutil.which("unshare")
    if tool is None or not _can_mount():
        pytest.skip("needs unshare(1) and root for a PID namespace")
    probe = subprocess.run([tool, "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid is not allowed here: {probe.stderr.decode().strip()}")
    return [tool, "--pid", "--fork", "--mount-proc"]


def test_i17_12_stale_staging_of_a_dead_pid_1_is_cleaned(tmp_path: Path) -> None:
    prefix = _unshare()
    src = checkpoint(tmp_path)
    out = tmp_path / "out"
    # What an earlier container run (PID 1, another start time) left when it was killed.
    stale = [tmp_path / ".out.kvscale-tmp-1-17-abc", tmp_path / ".out.kvscale-old-1-17-def"]
    for d in stale:
        (d / "checkpoint").mkdir(parents=True)
        (d / "checkpoint" / "model.safetensors").write_bytes(b"partial")
    other = tmp_path / ".other.kvscale-tmp-1-17-x"  # another --out's: not ours to touch
    other.mkdir()
    script = "import os, sys; assert os.getpid() == 1; from kvscale.cli import main; main()"
    proc = subprocess.run(
        [*prefix, sys.executable, "-c", script, "normalize", str(src), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert not any(d.exists() for d in stale)
    assert other.exists()
    assert is_own_output(out)


@pytest.mark.parametrize(
    "entry, prepare, wrong",
    [
        pytest.param(
            "./a.safetensors",
            "a.safetensors",
            "outside the checkpoint",
            id="dot-slash",
        ),
        pytest.param(
            "sub/a.safetensors",
            "sub/a.safetensors",
            "outside the checkpoint",
            id="subdirectory",
        ),
        pytest.param(
            "config.json",
            None,
            "missing",
            id="existing-non-safetensors",
        ),
        pytest.param(
            ".hidden.safetensors",
            ".hidden.safetensors",
            "missing",
            id="existing-hidden",
        ),
        pytest.param("../a.safetensors", None, "", id="parent"),
        pytest.param("gone.safetensors", None, "", id="really-missing"),
    ],
)
def test_i17_12_index_messages_say_what_is_wrong(
    tmp_path: Path, entry: str, prepare: str | None, wrong: str
) -> None:
    src = checkpoint(tmp_path)
    if prepare is not None:
        target = src / prepare
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / "model.safetensors", target)
    index = src / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": dict.fromkeys(SCALES, entry)}))
    err = one_line_error(invoke("inspect", src), str(index), repr(entry))
    if wrong:
        assert wrong not in err
    if entry == "../a.safetensors":
        assert "outside the checkpoint" in err and "not opened" in err
    if entry == "gone.safetensors":
        assert "missing" in err
