"""Outputs lose nothing (issue 17, items 1-5 and 12): ``--force`` replaces only what kvscale
wrote; ``--out``, ``--junit`` and ``--activations-out`` never land on an input, whatever path
(bind mount, link, Hugging Face snapshot) names it; two runs racing for one ``--out`` leave
exactly one complete output; links out of a checkpoint are skipped and said, and copies are
never more permissive than their source; a dead PID 1's staging is cleaned.

Each test works on real files: exact exit codes, the one stderr line (``kvscale: error: <file>:
...``), and the input's and output's trees (entries, bytes, modes, links) before and after. Real
bind mounts and PID namespaces are used where the machine allows (root, ``mount``, ``unshare``)
and skipped with the reason otherwise. The rest of issue 17: test_bounded_reads.py,
test_scaling.py, test_names.py, test_documents.py, test_scales_outputs.py (this directory); the
fault-injection suite (signals, FIFOs swapped in mid-copy, racing processes) is
test_process_faults.py."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import (
    attention_weights,
    hf_cache,
    llama_config,
    quant_config,
    tensor,
    write_checkpoint,
)
from support.hardening import P, checkpoint, invoke, leftovers, normalized, one_line_error, snapshot

from kvscale import scales_file
from kvscale.core.normalize import NormalizeOptions, plan_normalize, write_plan
from kvscale.errors import KVScaleError
from kvscale.io.staging import MANIFEST_NAME, is_own_output


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
def test_force_refuses_a_directory_kvscale_did_not_write(
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


def test_force_replaces_an_untouched_output(tmp_path: Path) -> None:
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


def test_out_is_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        for extra in ((), ("--force",), ("--force", "--checkpoint")):
            result = invoke("normalize", src, "--out", bound, *extra)
            one_line_error(result, f"--out {bound}", "input")
        assert snapshot(src) == before
    assert snapshot(src) == before


def test_out_inside_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        result = invoke("normalize", src, "--out", bound / "scales", "--checkpoint")
        one_line_error(result, "is inside the input")
        assert not (src / "scales").exists()
    assert snapshot(src) == before


def test_input_named_through_a_bind_mount(tmp_path: Path) -> None:
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


def test_junit_through_a_bind_mount_of_the_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    with bind_mount(src, tmp_path / "bound") as bound:
        result = invoke("inspect", src, "--junit", bound / "model.safetensors")
        one_line_error(result, "--junit", "input", stdout=True)
    assert snapshot(src) == before


def test_empty_precreated_out_without_force(tmp_path: Path) -> None:
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


def test_file_written_into_the_empty_out_meanwhile_is_kept(tmp_path: Path) -> None:
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
def test_two_racing_runs_exactly_one_wins(tmp_path: Path, precreated: bool) -> None:
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


def test_force_race_does_not_replace_the_other_runs_output(tmp_path: Path) -> None:
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


def _hf_cache(root: Path) -> tuple[Path, Path]:
    """A models--org--tiny cache; returns (repo, snapshot)."""
    repo = hf_cache(checkpoint(root, "_src"), root / "models--org--tiny", move=True)
    return repo, next((repo / "snapshots").iterdir())


def test_junit_onto_a_shard_of_a_directory_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    for target in (src / "model.safetensors", src / "config.json", src / "new.xml"):
        result = invoke("inspect", src, "--junit", target)
        one_line_error(result, f"--junit {target}", "input", stdout=True)
    assert snapshot(src) == before


def test_junit_onto_the_single_file_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    shard = src / "model.safetensors"
    os.symlink(shard, tmp_path / "link.safetensors")
    for target in (shard, tmp_path / "link.safetensors"):
        result = invoke("inspect", shard, "--junit", target)
        one_line_error(result, "--junit", "input", stdout=True)
    assert snapshot(src) == before


def test_refused_junit_prints_no_report(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    for extra in ((), ("--json",)):
        result = invoke("inspect", src, *extra, "--junit", src / "model.safetensors")
        one_line_error(result, "--junit")


def test_junit_onto_the_config_of_a_single_file_input(tmp_path: Path) -> None:
    src = checkpoint(tmp_path)
    before = snapshot(src)
    result = invoke("inspect", src / "model.safetensors", "--junit", src / "config.json")
    one_line_error(result, "--junit", "config.json", stdout=True)
    assert snapshot(src) == before


@pytest.mark.parametrize("layout", ["hf-snapshot", "symlinked-shard"])
def test_junit_onto_the_real_file_of_a_shard(tmp_path: Path, layout: str) -> None:
    if layout == "hf-snapshot":
        repo, given = _hf_cache(tmp_path)
        target = (given / "model.safetensors").resolve()  # the blob the snapshot links to
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
def test_activations_out_onto_an_input(tmp_path: Path, victim: str) -> None:
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
def test_force_never_breaks_an_input_link_into_the_old_output(
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


def test_links_out_of_the_checkpoint_are_skipped_and_said(tmp_path: Path) -> None:
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
def test_copies_are_never_more_permissive_than_their_source(tmp_path: Path, umask: int) -> None:
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


def _unshare() -> list[str]:
    tool = shutil.which("unshare")
    if tool is None or not _can_mount():
        pytest.skip("needs unshare(1) and root for a PID namespace")
    probe = subprocess.run([tool, "--pid", "--fork", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unshare --pid is not allowed here: {probe.stderr.decode().strip()}")
    return [tool, "--pid", "--fork", "--mount-proc"]


def test_stale_staging_of_a_dead_pid_1_is_cleaned(tmp_path: Path) -> None:
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
