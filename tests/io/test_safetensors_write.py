"""``kvscale.io.safetensors_write``: deterministic layouts and the byte-copying primitives."""

from __future__ import annotations

import errno
import json
import os
import struct
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file
from support.checkpoints import write_safetensors_file

import kvscale.io.safetensors_write as sw
from kvscale.io.safetensors import read_header


def _src(tmp_path: Path) -> Path:
    tensors = {
        "a.f64": torch.arange(3, dtype=torch.float64),
        "b.bf16": torch.arange(5, dtype=torch.bfloat16),
        "c.u8": torch.arange(3, dtype=torch.uint8),
        "d.f32": torch.arange(7, dtype=torch.float32),
        "e.scale": torch.tensor(0.5, dtype=torch.bfloat16),
        "f.i64": torch.arange(2, dtype=torch.int64),
    }
    path = tmp_path / "src.safetensors"
    write_safetensors_file(path, tensors, {"format": "pt", "x": "y"})
    return path


def test_layout_is_aligned_valid_and_deterministic(tmp_path: Path) -> None:
    src = _src(tmp_path)
    header = read_header(src)
    keep = [i for n, i in header.tensors.items() if n != "e.scale"]
    new = [sw.f32_tensor("z.k_scale", (0.25,), ()), sw.f32_tensor("a.k_scale", (2.0,), ())]
    layout = sw.plan_layout(keep, new, header.metadata)
    dst = tmp_path / "dst.safetensors"
    sw.write_layout(layout, src, dst)
    again = sw.plan_layout(list(reversed(keep)), list(reversed(new)), header.metadata)
    assert again.header == layout.header and again.pieces == layout.pieces

    out = read_header(dst)
    assert out.metadata == {"format": "pt", "x": "y"}
    assert out.data_start % 8 == 0
    for info in out.tensors.values():
        assert info.start % sw.dtype_alignment(info.dtype) == 0, info
    loaded, original = load_file(str(dst)), load_file(str(src))
    for name in original:
        if name != "e.scale":
            assert torch.equal(loaded[name], original[name])
    assert loaded["a.k_scale"].item() == 2.0 and loaded["z.k_scale"].item() == 0.25
    # Rewriting the rewritten file with the same change is the identity.
    layout2 = sw.plan_layout(
        [i for n, i in out.tensors.items() if not n.endswith("k_scale")], new, out.metadata
    )
    dst2 = tmp_path / "dst2.safetensors"
    sw.write_layout(layout2, dst, dst2)
    assert dst2.read_bytes() == dst.read_bytes()


def test_header_format() -> None:
    raw = sw.encode_header([("b", "F32", (), 0, 4), ("a", "F32", (1,), 4, 8)], {"k": "v"})
    (n,) = struct.unpack("<Q", raw[:8])
    assert n == len(raw) - 8 and n % 8 == 0
    text = raw[8:].decode()
    assert text.rstrip(" ") == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))
    assert list(json.loads(text)) == ["__metadata__", "a", "b"]


def test_contiguous_kept_ranges_are_coalesced(tmp_path: Path) -> None:
    src = _src(tmp_path)
    header = read_header(src)
    layout = sw.plan_layout(list(header.tensors.values()), [], header.metadata)
    assert [p.data for p in layout.pieces] == [None]  # one copy call for the whole buffer
    assert layout.copied_bytes == sum(i.nbytes for i in header.tensors.values())


def _copy(tmp_path: Path, data: bytes) -> tuple[Path, str]:
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    dst = tmp_path / "out.bin"
    _, method = sw.copy_file(src, dst, allow_reflink=False)
    assert dst.read_bytes() == data
    return dst, method


def test_copy_fallbacks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    assert _copy(tmp_path, data)[1] == "copy_file_range"
    (tmp_path / "out.bin").unlink()

    def unsupported(*args: Any) -> int:
        raise OSError(errno.EXDEV, "cross-device")

    monkeypatch.setattr(os, "copy_file_range", unsupported)
    assert _copy(tmp_path, data)[1] == "sendfile"
    (tmp_path / "out.bin").unlink()
    monkeypatch.setattr(os, "sendfile", unsupported)
    monkeypatch.setattr(sw, "BUFFER_SIZE", 1 << 20)
    assert _copy(tmp_path, data)[1] == "buffered"


def test_real_errors_are_not_swallowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: Any) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "copy_file_range", full)
    with pytest.raises(OSError) as info:
        _copy(tmp_path, b"x" * 100)
    assert info.value.errno == errno.ENOSPC


def test_truncated_source_is_detected(tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"x" * 1000)
    fd_in, fd_out = os.open(src, os.O_RDONLY), os.open(tmp_path / "o", os.O_WRONLY | os.O_CREAT)
    try:
        with pytest.raises(sw.SourceChangedError):
            sw.copy_range(fd_in, fd_out, 0, 0, 2000)
    finally:
        os.close(fd_in)
        os.close(fd_out)


def test_reflink_when_supported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fcntl

    src = tmp_path / "in.bin"
    src.write_bytes(b"abc" * 1000)
    calls: list[int] = []

    def ioctl(fd: int, request: int, arg: int) -> int:
        calls.append(request)
        os.sendfile(fd, arg, 0, os.fstat(arg).st_size)  # stand-in for shared extents
        return 0

    monkeypatch.setattr(fcntl, "ioctl", ioctl)
    size, method = sw.copy_file(src, tmp_path / "out.bin")
    assert (size, method) == (3000, "reflink") and calls == [sw.FICLONE]
    assert (tmp_path / "out.bin").read_bytes() == src.read_bytes()


def test_reflink_unsupported_falls_back(tmp_path: Path) -> None:
    src = tmp_path / "in.bin"
    src.write_bytes(b"abc" * 1000)
    size, method = sw.copy_file(src, tmp_path / "out.bin")
    assert size == 3000 and method in ("reflink", "copy_file_range")


def test_open_new_never_overwrites_or_follows(tmp_path: Path) -> None:
    (tmp_path / "exists").write_text("keep")
    with pytest.raises(FileExistsError):
        sw.open_new(tmp_path / "exists")
    (tmp_path / "link").symlink_to(tmp_path / "target")
    with pytest.raises(OSError):
        sw.open_new(tmp_path / "link")
    assert not (tmp_path / "target").exists()


def test_new_tensor_size_is_checked() -> None:
    with pytest.raises(ValueError):
        sw.NewTensor("x", "F32", (2,), b"\0\0\0\0")


@pytest.fixture
def xfs(tmp_path: Path) -> Any:
    """A loop-mounted XFS with reflink (root, mkfs.xfs and a loop device needed)."""
    import shutil
    import subprocess

    if os.geteuid() != 0 or not shutil.which("mkfs.xfs"):
        pytest.skip("needs root and mkfs.xfs (xfsprogs) for a reflink-capable filesystem")
    image, mnt = tmp_path / "xfs.img", tmp_path / "mnt"
    with open(image, "wb") as fh:
        fh.truncate(320 << 20)
    mnt.mkdir()
    made = subprocess.run(["mkfs.xfs", "-q", "-m", "reflink=1", str(image)], capture_output=True)
    mounted = (
        made.returncode == 0
        and (
            subprocess.run(["mount", "-o", "loop", str(image), str(mnt)], capture_output=True)
        ).returncode
        == 0
    )
    if not mounted:
        pytest.skip("cannot make or loop-mount an XFS image here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_reflink_on_xfs(xfs: Path) -> None:
    """Shards without scale changes share extents with the source (no bytes copied)."""
    import subprocess

    from support.checkpoints import big_modelopt_checkpoint
    from support.cli import CliRunner

    from kvscale.cli import app

    src = big_modelopt_checkpoint(xfs / "src", 16)  # the last shard holds no scales
    result = CliRunner().invoke(
        app, ["normalize", str(src), "--out", str(xfs / "out"), "--checkpoint", "--json"]
    )
    assert result.exit_code == 0, result.output
    methods = {f["path"]: (f["action"], f["method"]) for f in json.loads(result.stdout)["files"]}
    assert methods["checkpoint/model-00004-of-00004.safetensors"] == ("copied", "reflink")
    assert methods["checkpoint/model-00001-of-00004.safetensors"][0] == "rewritten"
    assert methods["checkpoint/tokenizer.json"] == ("copied", "reflink")
    frag = subprocess.run(
        ["filefrag", "-v", str(xfs / "out" / "checkpoint" / "model-00004-of-00004.safetensors")],
        capture_output=True,
        text=True,
    )
    if frag.returncode == 0:
        assert "shared" in frag.stdout
