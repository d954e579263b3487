"""Names and trees that crash naive code become one line naming the file (issue 17, items 9 and
12): a shard named with a non-ASCII digit or non-UTF-8 bytes, a checkpoint holding (or lying
under) a 1,100-level tree, index entries that point at the wrong place."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from support.hardening import SCALES, checkpoint, invoke, leftovers, one_line_error, snapshot

from kvscale.io.staging import is_own_output


def test_shard_named_with_a_non_ascii_digit(tmp_path: Path) -> None:
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


def test_shard_with_a_non_utf8_file_name(tmp_path: Path) -> None:
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
def test_checkpoint_holding_a_1100_level_tree(tmp_path: Path) -> None:
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
def test_checkpoint_1100_levels_down(tmp_path: Path) -> None:
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
def test_index_messages_say_what_is_wrong(
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
