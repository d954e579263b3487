"""Find and open a checkpoint: one file, a directory of shards, or a Hugging Face cache repo.

The set and order of files follows what vLLM v0.33.0 loads
(``model_loader/default_loader.py::_prepare_weights`` and ``weight_utils.py``): every
``*.safetensors`` in the folder, filtered by ``model.safetensors.index.json`` when present (a file
the index names but that is missing is an error), in natural sort order (``_natural_sort_key``), and
within a file in ``safe_open(...).keys()`` order, which is sorted by name. When a tensor name occurs
twice, the one loaded last is the one the engine keeps.

Hostile layouts are refused before anything is opened: index shard names must be plain file
names (no ``/``, ``..``, absolute paths or NUL), so an index cannot make kvscale read outside the
checkpoint; only regular files are opened, without blocking (a FIFO named ``*.safetensors`` or
``config.json`` cannot hang a run); every JSON file is read through a size cap; a dangling
symlink is reported as one, never mistaken for an absent optional file. What config.json means is
not decided here (``kvscale.model_config`` parses it, with ``Checkpoint.config_path`` in its
messages).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kvscale.errors import (
    CheckpointLayoutError,
    CheckpointNotFoundError,
    ConfigError,
    InputError,
    LimitExceededError,
)
from kvscale.io.safetensors import (
    SafetensorsHeader,
    TensorInfo,
    json_error_text,
    os_error,
    parse_json_bytes,
    quote,
    read_header,
    read_small_file,
    read_tensor_bytes,
)
from kvscale.limits import MAX_CONFIG_BYTES, MAX_INDEX_BYTES, MAX_SHARDS, Limit
from kvscale.progress import ProgressEvent, ProgressFn

INDEX_NAME = "model.safetensors.index.json"


@dataclass(frozen=True)
class TensorRef:
    """Where one tensor lives: its shard (by name relative to the checkpoint) and header entry."""

    file: str
    path: Path
    info: TensorInfo
    load_order: int
    """Position in the engine's load order (files, then names within a file)."""

    @property
    def name(self) -> str:
        return self.info.name


@dataclass(frozen=True)
class Checkpoint:
    given: str
    root: Path
    """The directory holding config.json and the shards (a snapshot for HF caches)."""
    layout: str
    """``file``, ``directory`` or ``hf-cache``."""
    files: tuple[str, ...]
    headers: Mapping[str, SafetensorsHeader]
    config: Mapping[str, Any] | None
    hf_quant_config: Mapping[str, Any] | None
    index: Mapping[str, Any] | None

    tensors: Mapping[str, TensorRef]
    """Every tensor name -> the occurrence the engine keeps (the last one loaded)."""
    duplicates: Mapping[str, tuple[TensorRef, ...]] = field(default_factory=dict)
    """Names that occur in more than one shard -> every occurrence, in load order."""
    unindexed: tuple[str, ...] = ()
    """Tensors present in shards but absent from the index's weight_map."""
    source: CheckpointSource | None = None
    """Where the bytes come from (None: the local files under ``root``)."""

    def read_tensors(self, file: str, infos: Sequence[TensorInfo]) -> dict[str, bytes]:
        """The bytes of a few tensors of one shard (one coalesced read where remote)."""
        source = self.source or LocalSource(self.root)
        return source.read_tensors(file, infos)

    @property
    def is_local(self) -> bool:
        return self.source is None or isinstance(self.source, LocalSource)

    def path_of(self, file: str) -> Path:
        return self.root / file

    @property
    def config_path(self) -> Path:
        return self.root / "config.json"

    @property
    def hf_quant_config_path(self) -> Path:
        return self.root / "hf_quant_config.json"


def natural_sort_key(name: str) -> list[int | str]:
    """vLLM's ``_natural_sort_key`` on the base name (``model_loader/weight_utils.py``).

    vLLM calls ``int(s) if s.isdigit()``, which raises for digits the ``\\d`` split misses
    (``'²'``); such a name is refused before sorting (``check_shard_name``).
    """
    return [int(s) if s.isdecimal() else s for s in re.split(r"(\d+)", os.path.basename(name))]


def check_shard_name(where: object, name: str) -> None:
    """Refuse shard names the engine cannot sort or open: undecodable bytes, digits that are
    not decimal (vLLM's natural sort crashes on them)."""
    if any(0xDC80 <= ord(ch) <= 0xDCFF for ch in name):
        raise CheckpointLayoutError(
            where,
            f"shard name {quote(name)} is not valid UTF-8",
            hint="rename the file; engines cannot load it",
        )
    for part in re.split(r"(\d+)", name):
        if part.isdigit() and not part.isdecimal():
            raise CheckpointLayoutError(
                where,
                f"shard name {quote(name)} holds the digit {quote(part)}, which vLLM's shard "
                "sort cannot read",
                hint="rename the file with ASCII digits",
            )


def read_json_file(
    path: Path, what: str, *, required: bool = False, limit: Limit = MAX_CONFIG_BYTES
) -> Any:
    """Read a small JSON document with kvscale's strict parser; None if absent and optional."""
    if not os.path.lexists(path):
        if required:
            raise CheckpointNotFoundError(path, f"{what} not found")
        return None
    # A dangling symlink (an HF cache whose blob is missing) is a broken checkpoint, not a
    # checkpoint without this file: read_small_file reports it as such.
    raw = read_small_file(path, limit, what)
    try:
        doc = parse_json_bytes(raw)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(path, f"{what} {json_error_text(exc)}") from None
    if doc is None:
        # Returning None would make a file holding `null` look absent.
        raise ConfigError(path, f"{what} is not a JSON object (it is null)")
    return doc


_REF_MAX_BYTES = 4096
"""A ref file holds one revision hash; anything longer is not a ref."""


def _resolve_hf_cache(repo: Path) -> Path:
    """``models--ORG--NAME`` -> the snapshot ``refs/main`` points to."""
    ref = repo / "refs" / "main"
    snapshots = repo / "snapshots"
    if os.path.lexists(ref):
        raw = read_small_file(ref, _REF_MAX_BYTES, "refs/main")
        try:
            revision = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise CheckpointLayoutError(ref, "refs/main is not UTF-8 text") from None
        if not re.fullmatch(r"[0-9A-Za-z._-]{1,128}", revision) or revision in (".", ".."):
            raise CheckpointLayoutError(
                ref, f"refs/main holds an invalid revision {quote(revision, 60)}"
            )
        snapshot = snapshots / revision
        if not snapshot.is_dir():
            what = (
                "is a broken symlink"
                if os.path.islink(snapshot)
                else "is not a directory"
                if os.path.lexists(snapshot)
                else "does not exist"
            )
            raise CheckpointLayoutError(
                ref,
                f"dangling ref: refs/main points to revision {revision} but snapshots/{revision} "
                f"{what}",
                hint="re-download the model or pass the snapshot directory you want",
            )
        return snapshot
    try:
        candidates = sorted(p for p in snapshots.iterdir() if p.is_dir())
    except OSError as exc:
        raise os_error(snapshots, exc) from None
    if len(candidates) == 1:
        return candidates[0]
    raise CheckpointLayoutError(
        repo,
        f"Hugging Face cache without refs/main and {len(candidates)} snapshots",
        hint="pass the snapshots/<revision> directory to inspect",
    )


def _is_hf_cache_repo(path: Path) -> bool:
    return path.name.startswith(("models--", "datasets--")) and (path / "snapshots").is_dir()


def _validate_shard_name(index_path: Path, tensor: Any, name: Any) -> str:
    """A shard name from the index's weight_map: a plain file name in the checkpoint, or refused.

    Checked for every entry before any shard is opened, so ``../../etc/passwd`` or
    ``/dev/zero`` is never touched.
    """
    if not isinstance(name, str):
        raise CheckpointLayoutError(
            index_path,
            f"weight_map entry for tensor {quote(tensor)} is not a file name: {quote(name, 60)}",
            hint="regenerate the index",
        )
    parts = name.replace("\\", "/").split("/")
    if not name or "\x00" in name or os.path.isabs(name) or ".." in parts or name == ".":
        raise CheckpointLayoutError(
            index_path,
            f"weight_map points outside the checkpoint directory: {quote(name)}",
            hint="shard names in the index must be plain file names; the file was not opened",
        )
    if len(parts) > 1:
        # ./a.safetensors or sub/a.safetensors: inside the directory, but the engine matches
        # index entries against the *.safetensors files of the directory itself, by name.
        raise CheckpointLayoutError(
            index_path,
            f"weight_map names {quote(name)}, a path, not a file of the checkpoint directory: "
            "the engine matches index entries to the directory's own *.safetensors names, so "
            "it loads no such shard",
            hint="write plain file names in the index (a.safetensors), with the shards beside it",
        )
    return name


def locate(path_given: str | os.PathLike[str]) -> tuple[Path, str, list[str] | None]:
    """Resolve the given path to (root directory, layout, explicit file list or None)."""
    if not str(path_given):
        raise CheckpointNotFoundError("''", "empty path", hint="pass a checkpoint path")
    given = Path(path_given)
    try:
        st = given.stat()
    except FileNotFoundError:
        if given.is_symlink():
            raise CheckpointNotFoundError(given, "dangling symlink") from None
        raise CheckpointNotFoundError(given, "no such file or directory") from None
    except OSError as exc:
        raise os_error(given, exc) from None
    import stat as stat_mod

    if stat_mod.S_ISREG(st.st_mode):
        if not given.name.endswith(".safetensors"):
            raise CheckpointNotFoundError(
                given,
                "not a .safetensors file",
                hint="pass a .safetensors file, a directory of shards or a models--ORG--NAME cache",
            )
        return given.parent, "file", [given.name]
    if not stat_mod.S_ISDIR(st.st_mode):
        raise CheckpointNotFoundError(given, "not a regular file or directory")
    if _is_hf_cache_repo(given):
        return _resolve_hf_cache(given), "hf-cache", None
    return given, "directory", None


class CheckpointSource(Protocol):
    """Where a checkpoint's bytes come from: the local file system or a remote repository.

    Everything read passes through the same validation whatever the source: the strict JSON
    reader and size caps for small files, ``parse_header`` for safetensors headers.
    """

    root: Path
    """The directory as a path (a placeholder path for remote sources, used in messages)."""

    def safetensors_names(self) -> list[str]:
        """Every ``*.safetensors`` file of the directory (not hidden), sorted."""
        ...

    def read_json(self, name: str, what: str, limit: Limit) -> Any:
        """A small JSON document of the directory, or None when absent."""
        ...

    def read_headers(
        self, names: Sequence[str], progress: ProgressFn | None
    ) -> dict[str, SafetensorsHeader]:
        """The validated header of every named shard."""
        ...

    def read_tensors(self, file: str, infos: Sequence[TensorInfo]) -> dict[str, bytes]:
        """The raw bytes of a few (small) tensors of one shard."""
        ...


class LocalSource:
    """A checkpoint directory on the local file system."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def safetensors_names(self) -> list[str]:
        try:
            return sorted(
                e.name
                for e in os.scandir(self.root)
                if e.name.endswith(".safetensors") and not e.name.startswith(".")
            )
        except OSError as exc:
            raise os_error(self.root, exc) from None

    def read_json(self, name: str, what: str, limit: Limit) -> Any:
        return read_json_file(self.root / name, what, limit=limit)

    def read_headers(
        self, names: Sequence[str], progress: ProgressFn | None
    ) -> dict[str, SafetensorsHeader]:
        headers: dict[str, SafetensorsHeader] = {}
        for number, name in enumerate(names):
            headers[name] = read_header(self.root / name)
            if progress is not None:
                progress(ProgressEvent("headers", number + 1, len(names), name))
        return headers

    def read_tensors(self, file: str, infos: Sequence[TensorInfo]) -> dict[str, bytes]:
        path = self.root / file
        return {info.name: read_tensor_bytes(path, info) for info in infos}


def open_checkpoint(
    path_given: str | os.PathLike[str],
    progress: ProgressFn | None = None,
    *,
    source: CheckpointSource | None = None,
    layout: str | None = None,
) -> Checkpoint:
    """Read every shard header (never the weights) and the config files of a checkpoint.

    ``source``: where the bytes come from (default: the local path ``path_given``).
    """
    explicit: list[str] | None = None
    if source is None:
        root, layout, explicit = locate(path_given)
        source = LocalSource(root)
    root = source.root
    layout = layout or "directory"
    index_path = root / INDEX_NAME
    index = None
    if explicit is None:
        index = source.read_json(INDEX_NAME, "index", MAX_INDEX_BYTES)
        # os.scandir lists dangling links and directories too; the engine's glob would open them.
        names = source.safetensors_names()
        if index is not None:
            weight_map = _index_weight_map(index_path, index)
            indexed = {_validate_shard_name(index_path, t, f) for t, f in weight_map.items()}
            missing = sorted(indexed - set(names))
            if missing and os.path.lexists(root / missing[0]):
                first = missing[0]
                why = (
                    "a hidden file, which the engine's *.safetensors glob does not list"
                    if first.startswith(".")
                    else "not a *.safetensors file"
                    if not first.endswith(".safetensors")
                    else "not a regular safetensors file"
                )
                raise CheckpointLayoutError(
                    index_path,
                    f"index names shard {quote(first)}, which exists but is {why}: the engine "
                    "never loads it",
                    hint="point the index at the checkpoint's own *.safetensors shards",
                )
            if missing:
                raise CheckpointLayoutError(
                    index_path,
                    f"index names shard {quote(missing[0])}, which is missing"
                    + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""),
                    hint="the checkpoint is incomplete; re-download the missing shards",
                )
            # _prepare_weights keeps only the files the index names.
            names = [n for n in names if n in indexed]
        if not names:
            raise CheckpointNotFoundError(
                root,
                "no .safetensors files found",
                hint="kvscale reads safetensors checkpoints only",
            )
    else:
        names = explicit
    limit = MAX_SHARDS.value()
    if len(names) > limit:
        raise LimitExceededError(root, f"{len(names):,} shards", hint=MAX_SHARDS.describe())
    for name in names:
        check_shard_name(root, name)
    files = sorted(names, key=natural_sort_key)

    config = source.read_json("config.json", "config.json", MAX_CONFIG_BYTES)
    if config is not None and not isinstance(config, dict):
        raise ConfigError(root / "config.json", "config.json is not a JSON object")
    hf_quant = source.read_json("hf_quant_config.json", "hf_quant_config.json", MAX_CONFIG_BYTES)
    if hf_quant is not None and not isinstance(hf_quant, dict):
        raise ConfigError(
            root / "hf_quant_config.json", "hf_quant_config.json is not a JSON object"
        )

    headers = source.read_headers(files, progress)
    tensors: dict[str, TensorRef] = {}
    occurrences: dict[str, list[TensorRef]] = {}
    order = 0
    for name in files:
        shard = root / name
        for tensor_name, info in headers[name].tensors.items():
            ref = TensorRef(name, shard, info, order)
            order += 1
            if tensor_name in tensors:
                occurrences.setdefault(tensor_name, [tensors[tensor_name]]).append(ref)
            tensors[tensor_name] = ref

    unindexed: list[str] = []
    if index is not None:
        weight_map = _index_weight_map(index_path, index)
        for tensor_name, shard_name in weight_map.items():
            held = tensors.get(tensor_name)
            if held is None:
                raise CheckpointLayoutError(
                    index_path,
                    f"index lists tensor {quote(tensor_name)} in {quote(shard_name)}, but no "
                    "shard has it",
                    hint="the index and the files disagree; regenerate the index",
                )
            holders = [r.file for r in occurrences.get(tensor_name, [held])]
            if shard_name not in holders:
                raise CheckpointLayoutError(
                    index_path,
                    f"index lists tensor {quote(tensor_name)} in {quote(shard_name)}, but it is "
                    f"in {quote(holders[0])}",
                    hint="the index and the files disagree; regenerate the index",
                )
        unindexed = sorted(set(tensors) - set(weight_map))

    return Checkpoint(
        given=str(path_given),
        root=root,
        layout=layout,
        files=tuple(files),
        headers=headers,
        config=config,
        hf_quant_config=hf_quant,
        index=index,
        tensors=tensors,
        duplicates={k: tuple(v) for k, v in occurrences.items()},
        unindexed=tuple(unindexed),
        source=source,
    )


def _index_weight_map(index_path: Path, index: Any) -> Mapping[str, Any]:
    if not isinstance(index, dict):
        raise CheckpointLayoutError(index_path, "index is not a JSON object")
    weight_map = index.get("weight_map")
    if not isinstance(weight_map, dict):
        raise CheckpointLayoutError(index_path, "index has no weight_map object")
    return weight_map


# What the input consists of: the paths an output must never replace
# (``staging.check_not_input``), and the other files a copy carries along.

SKIPPED_DIRS = frozenset([".git"])
"""Version-control data is not checkpoint content (and can hold a second copy of the weights)."""


def _containment_root(ckpt: Checkpoint) -> Path:
    """Links may point anywhere inside this directory (a Hugging Face repository for a
    snapshot, else the checkpoint directory itself)."""
    root = Path(os.path.realpath(ckpt.root))
    if ckpt.layout == "hf-cache":
        # snapshots/<rev>/ -> the models--ORG--NAME directory that also holds blobs/.
        return root.parent.parent
    return root


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def other_files(
    ckpt: Checkpoint, exclude: set[str]
) -> tuple[list[tuple[str, Path, int]], list[tuple[str, str]]]:
    """Every other file of the checkpoint as (relative path, source, mode), sorted; and what
    is skipped, with why."""
    files: list[tuple[str, Path, int]] = []
    skipped: list[tuple[str, str]] = []
    boundary = _containment_root(ckpt)
    if ckpt.layout == "file":
        for name in ("config.json", "hf_quant_config.json"):
            path = ckpt.root / name
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                files.append((name, path, stat.S_IMODE(st.st_mode)))
        return files, skipped
    root = ckpt.root
    for dirpath, dirnames, filenames in _walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        kept_dirs = []
        for d in sorted(dirnames):
            rel = d if rel_dir == "." else f"{rel_dir}/{d}"
            full = Path(dirpath) / d
            if d in SKIPPED_DIRS:
                skipped.append((rel, "version-control data"))
            elif full.is_symlink():
                skipped.append((rel, "symbolic link to a directory"))
            else:
                kept_dirs.append(d)
        dirnames[:] = kept_dirs
        for f in sorted(filenames):
            rel = f if rel_dir == "." else f"{rel_dir}/{f}"
            if rel in exclude:
                continue
            full = Path(dirpath) / f
            if full.is_symlink() and not _within(Path(os.path.realpath(full)), boundary):
                skipped.append((rel, "symbolic link to a file outside the checkpoint"))
                continue
            try:
                st = os.stat(full)
            except OSError:
                skipped.append((rel, "dangling or looping symbolic link"))
                continue
            if not stat.S_ISREG(st.st_mode):
                skipped.append((rel, "not a regular file"))
                continue
            files.append((rel, full, stat.S_IMODE(st.st_mode)))
    return files, skipped


MAX_DIR_DEPTH = 256
"""Directory nesting inside a checkpoint that a copy follows (real ones have 1-3 levels; a
1,000-level tree would exhaust the interpreter's recursion in os.walk on Python 3.11)."""


def _walk(root: Path) -> list[tuple[str, list[str], list[str]]]:
    """``os.walk(root)`` (top-down, the caller may prune ``dirnames``), without recursion and
    with nesting bounded by ``MAX_DIR_DEPTH``; unreadable directories are an InputError."""
    out: list[tuple[str, list[str], list[str]]] = []
    stack = [(str(root), 0)]
    while stack:
        dirpath, depth = stack.pop()
        if depth > MAX_DIR_DEPTH:
            raise InputError(
                dirpath,
                f"directory nesting deeper than {MAX_DIR_DEPTH} levels inside the checkpoint",
                hint="a checkpoint is a flat directory of shards and config files",
            )
        dirnames: list[str] = []
        filenames: list[str] = []
        try:
            with os.scandir(dirpath) as entries:
                for entry in entries:
                    is_dir = entry.is_dir(follow_symlinks=True)
                    (dirnames if is_dir else filenames).append(entry.name)
        except OSError as exc:
            raise InputError(exc.filename or dirpath, f"cannot read: {exc.strerror}") from None
        out.append((dirpath, dirnames, filenames))
        # Not descended into, as other_files reports them: version control, directory links.
        for name in sorted(dirnames, reverse=True):
            full = os.path.join(dirpath, name)
            if name in SKIPPED_DIRS or os.path.islink(full):
                continue
            stack.append((full, depth + 1))
    return out


def input_paths(ckpt: Checkpoint, *, other: bool = False) -> list[Path]:
    """Every path the input consists of (for ``staging.check_not_input``): the checkpoint as
    given, its directory, every shard and the directory its real file lies in (an HF cache's
    ``blobs/``), the config files; with ``other``, also the real path of every other file of the
    checkpoint, links that point out of it included (a copy reads them, or skips them; neither
    may find its target replaced by the output)."""
    paths: list[Path] = [Path(ckpt.given)]
    if ckpt.layout != "file":
        # (A single file's directory is not the input: outputs may go beside it.)
        paths += [ckpt.root, _containment_root(ckpt)]
    for name in ckpt.files:
        real = Path(os.path.realpath(ckpt.path_of(name)))
        paths.append(ckpt.path_of(name))
        paths.append(real)
        if ckpt.layout != "file":
            paths.append(real.parent)
    for name in ("config.json", "hf_quant_config.json", INDEX_NAME):
        path = ckpt.root / name
        if os.path.lexists(path):
            paths.append(Path(os.path.realpath(path)))
    if other and ckpt.layout != "file":
        files, skipped = other_files(ckpt, set(ckpt.files))
        paths.extend(Path(os.path.realpath(src)) for _, src, _ in files)
        paths.extend(Path(os.path.realpath(ckpt.root / rel)) for rel, _ in skipped)
    return paths


__all__ = [
    "SKIPPED_DIRS",
    "Checkpoint",
    "InputError",
    "TensorRef",
    "input_paths",
    "natural_sort_key",
    "open_checkpoint",
    "other_files",
    "read_json_file",
]
