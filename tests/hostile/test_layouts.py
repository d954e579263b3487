"""Broken and hostile checkpoint layouts: directories, indexes, symlinks, HF caches, limits.

Each ``CATALOGUE`` entry runs through ``kvscale inspect PATH [--json]`` in process here, and as a
``python -m kvscale`` subprocess in ``test_safetensors.py::test_catalogue_subprocess``."""

from __future__ import annotations

import builtins
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from support.checkpoints import hf_cache as hf_cache_layout
from support.cli import CliRunner

from kvscale.cli import app

INDEX = "model.safetensors.index.json"

SHARD1 = "model-00001-of-00002.safetensors"

SHARD2 = "model-00002-of-00002.safetensors"

K0 = "model.layers.0.self_attn.k_proj.k_scale"


class Case(NamedTuple):
    id: str
    build: Callable[[SimpleNamespace], Path]
    code: int
    expect: str
    env: dict[str, str] | None = None
    args: tuple[str, ...] = ()


def sharded(kit: SimpleNamespace, **kw: Any) -> Path:
    return kit.make("ckpt", shards=2, **kw)


def edit_index(
    mutate: Callable[[dict[str, Any]], Any], *, raw: bytes | None = None
) -> Callable[[SimpleNamespace], Path]:
    """A two-shard checkpoint whose index is rewritten by ``mutate`` (or replaced by ``raw``)."""

    def build(kit: SimpleNamespace) -> Path:
        directory = sharded(kit)
        index_path = directory / INDEX
        if raw is not None:
            index_path.write_bytes(raw)
        else:
            doc = json.loads(index_path.read_text())
            result = mutate(doc)
            index_path.write_text(json.dumps(doc if result is None else result))
        return directory

    return build


def point_weight_map(target: str | int | None) -> Callable[[SimpleNamespace], Path]:
    def mutate(doc: dict[str, Any]) -> None:
        doc["weight_map"][K0] = target

    return edit_index(mutate)


def empty_dir(kit: SimpleNamespace) -> Path:
    directory = kit.tmp / "empty"
    directory.mkdir()
    return directory


def only_other_files(kit: SimpleNamespace) -> Path:
    directory = kit.tmp / "other"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(kit.ct_config()))
    (directory / "pytorch_model.bin").write_bytes(b"\0" * 16)
    (directory / ".hidden.safetensors").write_bytes(b"\0" * 16)  # vLLM's glob skips it too
    return directory


def missing_path(kit: SimpleNamespace) -> Path:
    return kit.tmp / "does-not-exist"


def dangling_given(kit: SimpleNamespace) -> Path:
    link = kit.tmp / "link.safetensors"
    link.symlink_to(kit.tmp / "gone.safetensors")
    return link


def not_safetensors_file(kit: SimpleNamespace) -> Path:
    path = kit.tmp / "model.bin"
    path.write_bytes(b"\0" * 64)
    return path


def missing_shard(kit: SimpleNamespace) -> Path:
    directory = sharded(kit)
    (directory / SHARD2).unlink()
    return directory


def index_names_wrong_shard(kit: SimpleNamespace) -> Path:
    directory = sharded(kit)
    doc = json.loads((directory / INDEX).read_text())
    holder = doc["weight_map"][K0]
    doc["weight_map"][K0] = SHARD2 if holder == SHARD1 else SHARD1
    (directory / INDEX).write_text(json.dumps(doc))
    return directory


def index_names_ghost_tensor(kit: SimpleNamespace) -> Path:
    directory = sharded(kit)
    doc = json.loads((directory / INDEX).read_text())
    doc["weight_map"]["model.layers.9.self_attn.k_proj.k_scale"] = SHARD1
    (directory / INDEX).write_text(json.dumps(doc))
    return directory


def _two_shards(
    kit: SimpleNamespace, first: dict[str, Any], second: dict[str, Any], index: bool
) -> Path:
    directory = kit.tmp / "dup"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps(kit.ct_config(1)))
    kit.write(directory / SHARD1, first)
    kit.write(directory / SHARD2, second)
    if index:
        weight_map = dict.fromkeys(first, SHARD1) | dict.fromkeys(second, SHARD2)
        (directory / INDEX).write_text(json.dumps({"weight_map": weight_map}))
    return directory


def duplicate_scale_differs(kit: SimpleNamespace) -> Path:
    import torch

    base = kit.llama_tensors(1)
    other = {K0: torch.tensor(0.125)}
    return _two_shards(kit, base, other, index=True)


def duplicate_weight(kit: SimpleNamespace) -> Path:
    import torch

    base = kit.llama_tensors(1)
    other = {"model.layers.0.self_attn.q_proj.weight": torch.ones(4, 4, dtype=torch.bfloat16)}
    return _two_shards(kit, base, other, index=False)


def unindexed_tensor(kit: SimpleNamespace) -> Path:
    directory = sharded(kit)
    doc = json.loads((directory / INDEX).read_text())
    del doc["weight_map"]["model.layers.0.self_attn.q_proj.weight"]
    (directory / INDEX).write_text(json.dumps(doc))
    return directory


def shard_self_loop(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    (directory / "loop.safetensors").symlink_to("loop.safetensors")
    return directory


def shard_two_loop(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    (directory / "a.safetensors").symlink_to("b.safetensors")
    (directory / "b.safetensors").symlink_to("a.safetensors")
    return directory


def directory_loop(kit: SimpleNamespace) -> Path:
    link = kit.tmp / "loop"
    link.symlink_to("loop")
    return link


def directory_loop_inside(kit: SimpleNamespace) -> Path:
    """A directory symlink loop inside the checkpoint; its name is a shard name."""
    directory = kit.make()
    (directory / "sub.safetensors").symlink_to(".")  # a directory, through a link
    return directory


def config_loop(kit: SimpleNamespace) -> Path:
    directory = kit.make(config=None)
    (directory / "config.json").symlink_to("config.json")
    return directory


def dangling_shard(kit: SimpleNamespace) -> Path:
    directory = kit.make()
    (directory / "zz.safetensors").symlink_to("../blobs/0123abcd")
    return directory


def dangling_config(kit: SimpleNamespace) -> Path:
    directory = kit.make(config=None)
    (directory / "config.json").symlink_to("../blobs/c0ffee")
    return directory


def hf_cache(
    kit: SimpleNamespace,
    *,
    ref: bytes | None = b"abc123",
    revisions: tuple[str, ...] = ("abc123",),
    drop_blob: bool = False,
) -> Path:
    """``models--org--name`` with blobs, snapshots of relative symlinks, and refs/main
    (``ref=None``: no refs directory)."""
    return hf_cache_layout(
        kit.make("source"),
        kit.tmp / "models--org--name",
        revisions=revisions,
        ref=ref,
        refs=ref is not None,
        drop_blob=drop_blob,
    )


def hf_fifo_ref(kit: SimpleNamespace) -> Path:
    repo = hf_cache(kit, ref=None)
    (repo / "refs").mkdir()
    os.mkfifo(repo / "refs" / "main")
    return repo


def with_env_shards(kit: SimpleNamespace) -> Path:
    return kit.make("ckpt", shards=3)


def big_config(kit: SimpleNamespace) -> Path:
    return kit.make(config=kit.ct_config(2, padding="x" * 500))


CATALOGUE: list[Case] = [
    # --- what is given
    Case("missing-path", missing_path, 2, r"does-not-exist: no such file or directory"),
    Case("dangling-symlink-given", dangling_given, 2, r"link\.safetensors: dangling symlink"),
    Case("not-a-safetensors-file", not_safetensors_file, 2, r"model\.bin: not a \.safetensors"),
    Case("empty-directory", empty_dir, 2, r"/empty: no \.safetensors files found"),
    Case("no-safetensors-at-all", only_other_files, 2, r"/other: no \.safetensors files found"),
    # --- the index
    Case(
        "index-names-missing-shard",
        missing_shard,
        2,
        rf"/ckpt/{INDEX}: index names shard '{SHARD2}', which is missing",
    ),
    Case(
        "weight-map-parent-traversal",
        point_weight_map("../../etc/passwd"),
        2,
        rf"/{INDEX}: weight_map points outside the checkpoint directory: '\.\./\.\./etc/passwd' "
        r"\(shard names in the index must be plain file names; the file was not opened\)",
    ),
    Case(
        "weight-map-absolute",
        point_weight_map("/etc/passwd"),
        2,
        r"weight_map points outside the checkpoint directory: '/etc/passwd'",
    ),
    Case(
        "weight-map-absolute-device",
        point_weight_map("/dev/zero"),
        2,
        r"weight_map points outside the checkpoint directory: '/dev/zero'",
    ),
    Case(
        "weight-map-subdirectory",
        point_weight_map("sub/model.safetensors"),
        2,
        r"weight_map names 'sub/model\.safetensors', a path, not a file of the checkpoint "
        r"directory",
    ),
    Case(
        "weight-map-dotdot",
        point_weight_map(".."),
        2,
        r"weight_map points outside the checkpoint directory: '\.\.'",
    ),
    Case(
        "weight-map-backslash",
        point_weight_map("..\\..\\x.safetensors"),
        2,
        r"weight_map points outside the checkpoint directory: '\.\.\\\\\.\.\\\\x\.safetensors'",
    ),
    Case(
        "weight-map-nul",
        point_weight_map("model.safetensors\x00../x"),
        2,
        r"weight_map points outside the checkpoint directory: 'model\.safetensors\\x00\.\./x'",
    ),
    Case(
        "weight-map-empty-name",
        point_weight_map(""),
        2,
        r"weight_map points outside the checkpoint directory: ''",
    ),
    Case(
        "weight-map-not-a-string",
        point_weight_map(5),
        2,
        rf"weight_map entry for tensor '{K0}' is not a file name: 5",
    ),
    Case(
        "weight-map-null",
        point_weight_map(None),
        2,
        rf"weight_map entry for tensor '{K0}' is not a file name: None",
    ),
    Case(
        "index-not-json",
        edit_index(lambda d: d, raw=b"{weight_map"),
        2,
        rf"/{INDEX}: index is not valid JSON",
    ),
    Case(
        "index-not-utf8",
        edit_index(lambda d: d, raw=b'{"weight_map": "\xff"}'),
        2,
        rf"/{INDEX}: index is not UTF-8",
    ),
    Case(
        "index-duplicate-keys",
        edit_index(lambda d: d, raw=b'{"weight_map": {}, "weight_map": {}}'),
        2,
        rf"/{INDEX}: index has a duplicate key 'weight_map'",
    ),
    Case("index-array", edit_index(lambda d: [d]), 2, rf"/{INDEX}: index is not a JSON object"),
    Case(
        "index-without-weight-map",
        edit_index(lambda d: {"metadata": {}}),
        2,
        rf"/{INDEX}: index has no weight_map object",
    ),
    Case(
        "index-weight-map-list",
        edit_index(lambda d: {"weight_map": list(d["weight_map"])}),
        2,
        rf"/{INDEX}: index has no weight_map object",
    ),
    Case(
        "index-lists-tensor-in-wrong-shard",
        index_names_wrong_shard,
        2,
        rf"/{INDEX}: index lists tensor '{K0}' in '.*', but it is in '.*' \(the index and "
        r"the files disagree; regenerate the index\)",
    ),
    Case(
        "index-lists-tensor-no-shard-has",
        index_names_ghost_tensor,
        2,
        rf"/{INDEX}: index lists tensor 'model\.layers\.9\.self_attn\.k_proj\.k_scale' in "
        rf"'{SHARD1}', but no shard has it",
    ),
    # --- tensors in two shards: what the engine does (last loaded wins) decides the code
    Case(
        "scale-in-two-shards-values-differ",
        duplicate_scale_differs,
        1,
        "duplicate-scale-source: both feed k_scale; the engine keeps .* their values differ",
    ),
    Case("weight-in-two-shards", duplicate_weight, 0, "duplicate-tensor: occur in more than one"),
    Case(
        "weight-in-two-shards-strict",
        duplicate_weight,
        1,
        "duplicate-tensor: occur in more than one",
        args=("--strict",),
    ),
    Case(
        "tensor-missing-from-index-strict",
        unindexed_tensor,
        1,
        "index-missing-tensor: 1 tensors are in shards but not in the index",
        args=("--strict",),
    ),
    # --- symlinks
    Case(
        "shard-symlink-self-loop",
        shard_self_loop,
        2,
        r"/loop\.safetensors: cannot read: symlink loop",
    ),
    Case(
        "shard-symlink-two-loop", shard_two_loop, 2, r"/a\.safetensors: cannot read: symlink loop"
    ),
    Case("directory-symlink-loop", directory_loop, 2, r"/loop: cannot read: symlink loop"),
    Case(
        "directory-link-named-shard",
        directory_loop_inside,
        2,
        r"/sub\.safetensors: cannot read: a directory, not a regular file",
    ),
    Case("config-symlink-loop", config_loop, 2, r"/config\.json: cannot read: symlink loop"),
    Case(
        "dangling-shard-symlink",
        dangling_shard,
        2,
        r"/zz\.safetensors: cannot read: dangling symlink \(its target '\.\./blobs/0123abcd' "
        r"does not exist\)",
    ),
    Case(
        "dangling-config-symlink",
        dangling_config,
        2,
        r"/config\.json: cannot read: dangling symlink",
    ),
    # --- Hugging Face cache
    Case(
        "hf-cache-dangling-ref",
        lambda kit: hf_cache(kit, ref=b"deadbeef\n"),
        2,
        r"models--org--name/refs/main: dangling ref: refs/main points to revision deadbeef but "
        r"snapshots/deadbeef does not exist \(re-download the model",
    ),
    Case(
        "hf-cache-ref-traversal",
        lambda kit: hf_cache(kit, ref=b"../../../etc"),
        2,
        r"refs/main: refs/main holds an invalid revision '\.\./\.\./\.\./etc'",
    ),
    Case(
        "hf-cache-ref-binary",
        lambda kit: hf_cache(kit, ref=b"\xff\xfe\x00"),
        2,
        r"refs/main: refs/main is not UTF-8 text",
    ),
    Case(
        "hf-cache-ref-huge",
        lambda kit: hf_cache(kit, ref=b"a" * 100_000),
        2,
        r"refs/main: refs/main is larger than 4,096 bytes",
    ),
    Case("hf-cache-ref-fifo", hf_fifo_ref, 2, r"refs/main: cannot read: a FIFO"),
    Case(
        "hf-cache-missing-blob",
        lambda kit: hf_cache(kit, drop_blob=True),
        2,
        r"snapshots/abc123/model\.safetensors: cannot read: dangling symlink",
    ),
    Case(
        "hf-cache-no-ref-two-snapshots",
        lambda kit: hf_cache(kit, ref=None, revisions=("r1", "r2")),
        2,
        r"models--org--name: Hugging Face cache without refs/main and 2 snapshots",
    ),
    Case(
        "hf-cache-no-ref-no-snapshot",
        lambda kit: hf_cache(kit, ref=None, revisions=()),
        2,
        r"models--org--name: Hugging Face cache without refs/main and 0 snapshots",
    ),
    # --- limits (each names itself and the variable that raises it)
    Case(
        "limit-max-shards",
        with_env_shards,
        2,
        r"/ckpt: 3 shards \(limit max-shards = 2 safetensors files in one checkpoint; set "
        r"KVSCALE_MAX_SHARDS to raise it\)",
        {"KVSCALE_MAX_SHARDS": "2"},
    ),
    Case(
        "limit-max-config-bytes",
        big_config,
        2,
        r"/config\.json: config\.json is \d{3},?\d* bytes \(limit max-config-bytes = 200 bytes "
        r"of config\.json or hf_quant_config\.json; set KVSCALE_MAX_CONFIG_BYTES to raise it\)",
        {"KVSCALE_MAX_CONFIG_BYTES": "200"},
    ),
    Case(
        "limit-max-index-bytes",
        lambda kit: kit.make("ckpt", shards=2),
        2,
        rf"/{INDEX}: index is \d+ bytes \(limit max-index-bytes = 100 bytes of "
        r"model\.safetensors\.index\.json; set KVSCALE_MAX_INDEX_BYTES to raise it\)",
        {"KVSCALE_MAX_INDEX_BYTES": "100"},
    ),
    Case(
        "limit-env-not-a-number",
        lambda kit: kit.make(),
        2,
        r"KVSCALE_MAX_SHARDS must be a positive integer, got 'lots' \(unset it to use the "
        r"default 10,000\)",
        {"KVSCALE_MAX_SHARDS": "lots"},
    ),
    Case(
        "limit-env-zero",
        lambda kit: kit.make(),
        2,
        r"KVSCALE_MAX_HEADER_BYTES must be a positive integer, got '0'",
        {"KVSCALE_MAX_HEADER_BYTES": "0"},
    ),
]


@pytest.mark.parametrize("json_mode", [False, True], ids=["table", "json"])
@pytest.mark.parametrize("case", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_catalogue(hostile: Any, case: Case, json_mode: bool) -> None:
    hostile.cli(case, json_mode=json_mode)


@pytest.mark.parametrize(
    "target", ["outside_fifo_abs", "../outside.safetensors", "../../outside.safetensors"]
)
def test_weight_map_outside_is_never_opened(
    ckpt_kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    """Record every os.open / open() during the run: nothing outside the checkpoint is touched.

    The targets exist and would be readable (one is a FIFO, whose blocking open would hang the
    run), so only the name check stands between the index and them.
    """
    outside = ckpt_kit.tmp / "outside.safetensors"
    outside.write_bytes(b"\0" * 8)
    fifo = ckpt_kit.tmp / "outside.fifo"
    os.mkfifo(fifo)
    directory = ckpt_kit.make("deep/ckpt", shards=2)
    name = str(fifo) if target == "outside_fifo_abs" else target
    doc = json.loads((directory / INDEX).read_text())
    doc["weight_map"][K0] = name
    (directory / INDEX).write_text(json.dumps(doc))

    opened: list[str] = []
    real_os_open, real_open, real_io_open = os.open, builtins.open, io.open

    def record_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.path.abspath(os.fspath(path)))
        return real_os_open(path, *args, **kwargs)

    def record_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(file, (str, bytes, os.PathLike)):
            opened.append(os.path.abspath(os.fsdecode(file)))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(os, "open", record_os_open)
    monkeypatch.setattr(builtins, "open", record_open)
    monkeypatch.setattr(io, "open", record_open)
    assert real_io_open is not None
    result = CliRunner().invoke(app, ["inspect", str(directory), "--json"])
    assert result.exit_code == 2, result.stderr
    assert "weight_map points outside the checkpoint directory" in result.stderr
    assert "the file was not opened" in result.stderr
    forbidden = {str(outside), str(fifo)}
    assert not forbidden & set(opened), opened
    assert all(p.startswith(str(directory)) for p in opened if p.startswith(str(ckpt_kit.tmp)))


def test_unreadable_shard_real_permissions(ckpt_kit: SimpleNamespace) -> None:
    if os.geteuid() == 0:
        pytest.skip("running as root: chmod 000 does not stop reads (simulated in the next test)")
    directory = ckpt_kit.make()
    shard = directory / "model.safetensors"
    shard.chmod(0)
    try:
        result = CliRunner().invoke(app, ["inspect", str(directory)])
    finally:
        shard.chmod(0o644)
    assert result.exit_code == 2
    assert result.stderr == f"kvscale: error: {shard}: cannot read: permission denied\n"


@pytest.mark.parametrize("victim", ["model.safetensors", "config.json", INDEX])
def test_unreadable_files_simulated(
    ckpt_kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, victim: str
) -> None:
    """EACCES from the kernel, whoever runs the tests: os.open fails for one file."""
    directory = ckpt_kit.make("ckpt", shards=2 if victim == INDEX else 1)
    if victim == "model.safetensors" and not (directory / victim).exists():
        victim = SHARD1
    target = str(directory / victim)
    real = os.open

    def deny(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == target:
            raise PermissionError(13, "Permission denied", target)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    for extra in ([], ["--json"]):
        result = CliRunner().invoke(app, ["inspect", str(directory), *extra])
        assert result.exit_code == 2, result.stderr
        assert result.stdout == ""
        assert result.stderr == f"kvscale: error: {target}: cannot read: permission denied\n"


def test_unreadable_directory_simulated(
    ckpt_kit: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = ckpt_kit.make()
    real = os.scandir

    def deny(path: Any = ".") -> Any:
        if os.fspath(path) == str(directory):
            raise PermissionError(13, "Permission denied", str(directory))
        return real(path)

    monkeypatch.setattr(os, "scandir", deny)
    result = CliRunner().invoke(app, ["inspect", str(directory)])
    assert result.exit_code == 2
    assert result.stderr == f"kvscale: error: {directory}: cannot read: permission denied\n"
