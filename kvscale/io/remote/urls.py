"""What names a remote checkpoint: ``hf://ORG/NAME[@REVISION]``, a bare ``ORG/NAME``, a Hub web or
resolve URL, or an ``http(s)://`` URL of a ``.safetensors`` file or index (``remote_spec``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from kvscale.errors import UsageError
from kvscale.io.checkpoint import INDEX_NAME
from kvscale.io.safetensors import quote

DEFAULT_ENDPOINT = "https://huggingface.co"
"""``huggingface_hub.constants._HF_DEFAULT_ENDPOINT``."""


SHA = re.compile(r"[0-9a-f]{40}")


_REPO_PART = re.compile(r"[A-Za-z0-9_.-]{1,96}")


_REVISION = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}")


@dataclass(frozen=True)
class RemoteSpec:
    """A parsed remote input: a Hub repository (``repo``) or a plain URL (``url``)."""

    given: str
    repo: str | None = None
    """``ORG/NAME`` on the Hub."""
    revision: str | None = None
    """As asked (None: ``main``); resolved to a sha before anything else is read."""
    folder: str = ""
    """Directory inside the repository holding the checkpoint (``""``: its root)."""
    file: str | None = None
    """One ``.safetensors`` file or a ``.safetensors.index.json`` in ``folder`` (None: all)."""
    url: str | None = None
    """The URL of ``file`` when the input is not on the Hub."""

    @property
    def is_hub(self) -> bool:
        return self.repo is not None

    @property
    def single_file(self) -> bool:
        return self.file is not None and self.file.endswith(".safetensors")

    @property
    def index_name(self) -> str:
        if self.file is not None and self.file.endswith(".safetensors.index.json"):
            return self.file
        return INDEX_NAME

    def display(self, sha: str | None = None) -> str:
        """``hf://ORG/NAME@REV`` (or the URL): how messages name the input."""
        if self.repo is None:
            return self.url or self.given
        at = sha or self.revision
        text = f"hf://{self.repo}" + (f"@{at}" if at else "")
        return f"{text}/{self.folder}" if self.folder else text


def remote_spec(given: str) -> RemoteSpec | None:
    """The remote input ``given`` names, or None when it is a local path.

    A bare ``ORG/NAME`` is a Hub repository only when nothing named ``ORG`` exists in the
    current directory (``bare_name_is_local``). Raises ``UsageError`` for an ``hf://`` or
    ``http(s)://`` input that names no checkpoint.
    """
    if given.startswith("hf://"):
        return _parse_hf(given)
    lowered = given[:8].lower()
    if lowered.startswith(("https://", "http://")):
        return _parse_url(given)
    if _is_repo_id(given) and not bare_name_is_local(given):
        return RemoteSpec(given, repo=given)
    return None


def bare_name_is_local(given: str) -> bool:
    """Whether a bare ``ORG/NAME`` is read as a local path: when it exists, or when its first
    part (``ORG``) exists here, so that ``my/llama2x`` beside a directory ``my`` is a mistyped
    path, never a request to the Hub (``hf://my/llama2x`` asks the Hub whatever exists here).
    Otherwise no local reading is possible, and it names a Hub repository."""
    return os.path.lexists(given) or os.path.lexists(given.split("/", 1)[0])


def is_bare_repo_id(given: str) -> bool:
    """``ORG/NAME`` as huggingface_hub spells a repository id (whatever exists locally)."""
    return _is_repo_id(given)


def _is_repo_id(text: str) -> bool:
    """``ORG/NAME`` with huggingface_hub's rules (``utils/_validators.py::validate_repo_id``):
    word characters, ``-`` and ``.``, at most 96 each, neither starting nor ending with ``-`` or
    ``.``, no ``--`` or ``..``."""
    parts = text.split("/")
    if len(parts) != 2:
        return False
    for part in parts:
        if not _REPO_PART.fullmatch(part) or part[0] in "-." or part[-1] in "-.":
            return False
        if "--" in part or ".." in part:
            return False
    return True


def check_revision(revision: str, given: str) -> str:
    if not _REVISION.fullmatch(revision) or ".." in revision or revision.endswith("/"):
        raise UsageError(
            f"{given}: invalid revision {quote(revision, 60)}",
            hint="a branch, tag or commit sha, e.g. main or refs/pr/1",
        )
    return revision


def _parse_hf(given: str) -> RemoteSpec:
    body = given[len("hf://") :]
    repo, at, revision = body.partition("@")
    if repo.startswith(("datasets/", "spaces/", "buckets/", "kernels/")):
        raise UsageError(f"{given}: kvscale reads model repositories only")
    if not _is_repo_id(repo):
        raise UsageError(
            f"{quote(given, 80)} is not a Hub repository",
            hint="write hf://ORG/NAME or hf://ORG/NAME@REVISION",
        )
    if at and not revision:
        raise UsageError(f"{given}: empty revision after '@'", hint="e.g. hf://ORG/NAME@main")
    return RemoteSpec(given, repo=repo, revision=check_revision(revision, given) if at else None)


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` or the public Hub, without a trailing slash (read now, not at import)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    default = 443 if scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def _hub_hosts() -> set[tuple[str, str, int]]:
    return {origin(hub_endpoint()), origin("https://huggingface.co"), origin("https://hf.co")}


def _parse_url(given: str) -> RemoteSpec:
    parts = urlsplit(given)
    if not parts.hostname:
        raise UsageError(f"{quote(given, 80)} is not a URL kvscale can read (no host)")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    endpoint_path = [s for s in urlsplit(hub_endpoint()).path.split("/") if s]
    if origin(given) in _hub_hosts() and segments[: len(endpoint_path)] == endpoint_path:
        spec = _parse_hub_url(given, segments[len(endpoint_path) :])
        if spec is not None:
            return spec
    name = segments[-1] if segments else ""
    if not (name.endswith(".safetensors") or name.endswith(".safetensors.index.json")):
        raise UsageError(
            f"{quote(given, 100)}: a URL must name a .safetensors file or a "
            ".safetensors.index.json index",
            hint="or pass a Hub repository as hf://ORG/NAME",
        )
    return RemoteSpec(given, file=name, url=given)


def _parse_hub_url(given: str, segments: list[str]) -> RemoteSpec | None:
    """``/ORG/NAME``, ``/ORG/NAME/tree/REV[/DIR]``, ``/ORG/NAME/{resolve,blob}/REV/PATH``."""
    if segments and segments[0] in ("datasets", "spaces", "buckets"):
        raise UsageError(f"{given}: kvscale reads model repositories only")
    if len(segments) < 2 or not _is_repo_id("/".join(segments[:2])):
        return None
    repo = "/".join(segments[:2])
    rest = segments[2:]
    if not rest:
        return RemoteSpec(given, repo=repo)
    if rest[0] not in ("tree", "resolve", "blob") or len(rest) < 2:
        return None
    # Branch names with "/" are URL-quoted by the Hub (refs%2Fpr%2F1); unquote() undid that.
    revision = check_revision(rest[1], given)
    path = rest[2:]
    if any(p in (".", "..") for p in path):
        raise UsageError(f"{given}: '.' and '..' are not allowed in a repository path")
    if rest[0] == "tree":
        return RemoteSpec(given, repo=repo, revision=revision, folder="/".join(path))
    if not path:
        return None
    name = path[-1]
    if not (name.endswith(".safetensors") or name.endswith(".safetensors.index.json")):
        raise UsageError(
            f"{quote(given, 100)}: a file URL must name a .safetensors file or a "
            ".safetensors.index.json index"
        )
    return RemoteSpec(given, repo=repo, revision=revision, folder="/".join(path[:-1]), file=name)


def short_url(url: str, limit: int = 160) -> str:
    # Signed CDN URLs carry long query strings; messages keep the path.
    text = url.split("?", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."
