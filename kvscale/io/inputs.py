"""What a command's checkpoint argument names: a local checkpoint or a remote one, opened once.

Every command that reads a checkpoint opens it here, so local paths, ``hf://ORG/NAME[@REV]``,
bare ``ORG/NAME`` and HTTPS URLs behave the same everywhere. A bare ``ORG/NAME`` is a local path
when it exists or when ``ORG`` exists in the current directory (a mistyped path is then reported
as one, with no request to the Hub); otherwise it is a Hub repository, and a failure to read it
names both readings.
"""

from __future__ import annotations

import difflib
import itertools
import os
from collections.abc import Sequence
from pathlib import Path

from kvscale.errors import CheckpointNotFoundError, UsageError
from kvscale.io.checkpoint import Checkpoint, open_checkpoint
from kvscale.progress import ProgressFn


def _may_be_remote(given: str) -> bool:
    """A cheap first look, so that a local path never imports ``kvscale.io.remote`` (its
    import is a noticeable part of a pre-commit hook's start-up): ``remote_spec`` decides."""
    if given.startswith("hf://") or given[:8].lower().startswith(("https://", "http://")):
        return True
    # (kvscale.io.remote.urls.bare_name_is_local: ORG/NAME is local when ORG exists here.)
    return (
        given.count("/") == 1
        and not os.path.lexists(given)
        and not os.path.lexists(given.split("/", 1)[0])
    )


def _missing_bare_name(given: str) -> CheckpointNotFoundError | None:
    """The error for a missing local path spelled like a Hub repository (``my/llama2x`` while
    ``my`` exists here): it says it was read as a path, why, the nearest name that does exist,
    and how to ask the Hub instead. None when ``given`` is not spelled like one."""
    from kvscale.io.remote.urls import is_bare_repo_id

    if os.path.lexists(given) or not is_bare_repo_id(given):
        return None
    parent, name = given.split("/")
    try:
        with os.scandir(parent) as entries:
            # (A suggestion, not a search: a directory of millions of entries is not listed.)
            siblings = [entry.name for entry in itertools.islice(entries, 10_000)]
    except OSError:
        siblings = []
    close = difflib.get_close_matches(name, siblings, n=1)
    guess = f"; did you mean {parent}/{close[0]}?" if close else ""
    return CheckpointNotFoundError(
        given,
        f"no such file or directory{guess}",
        hint=f"read as a local path because {parent!r} exists here; for the Hub repository "
        f"{given}, write hf://{given}",
    )


def is_remote(given: str | os.PathLike[str]) -> bool:
    """``given`` names a Hub repository or a URL (nothing is read)."""
    if not isinstance(given, str) or not _may_be_remote(given):
        return False
    from kvscale.io.remote.urls import remote_spec

    return remote_spec(given) is not None


def open_input(
    given: str | os.PathLike[str],
    *,
    revision: str | None = None,
    progress: ProgressFn | None = None,
    local_only: str | None = None,
) -> Checkpoint:
    """Open a checkpoint wherever it lives: headers and config files only, never the weights.

    ``local_only``: what needs a local copy (e.g. ``"normalize --checkpoint"``); a remote input
    is then a usage error that says how to get one.
    """
    if isinstance(given, str) and _may_be_remote(given):
        from kvscale.io.remote.source import open_remote
        from kvscale.io.remote.urls import remote_spec

        spec = remote_spec(given)
        if spec is not None:
            if local_only is not None:
                raise UsageError(
                    f"{given} is a remote checkpoint: {local_only} needs a local copy",
                    hint="download it first (hf download ORG/NAME --local-dir DIR), then pass DIR",
                )
            return open_remote(given, revision, progress)
    if revision is not None:
        raise UsageError(
            f"--revision applies to Hub repositories (hf://ORG/NAME), not to the local path {given}"
        )
    if isinstance(given, str) and given.count("/") == 1 and not os.path.lexists(given):
        missing = _missing_bare_name(given)
        if missing is not None:
            raise missing
    return open_checkpoint(given, progress)


CHECKPOINT_FILE_SUFFIXES = (".safetensors", ".safetensors.index.json")
CHECKPOINT_FILE_NAMES = ("config.json", "hf_quant_config.json")


def checkpoints_of_files(paths: Sequence[Path]) -> list[Path]:
    """The checkpoint directories that given files belong to, each once, in sorted order.

    A directory stands for itself. A shard, index, config.json or hf_quant_config.json stands
    for its directory when that directory holds a ``.safetensors`` file (so an unrelated
    config.json is ignored). Other files are ignored.
    """
    found: set[Path] = set()
    for path in paths:
        if path.is_dir():
            found.add(path)
            continue
        name = path.name
        if not (name.endswith(CHECKPOINT_FILE_SUFFIXES) or name in CHECKPOINT_FILE_NAMES):
            continue
        directory = path.parent
        try:
            with os.scandir(directory) as entries:
                holds_shards = any(
                    entry.name.endswith(".safetensors") and entry.is_file() for entry in entries
                )
        except OSError:
            holds_shards = False
        if holds_shards:
            found.add(directory)
    return sorted(found, key=lambda p: p.as_posix())
