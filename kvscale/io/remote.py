"""Read a checkpoint where it lives: a Hugging Face Hub repository or an HTTPS URL, by byte ranges.

Inputs (``remote_spec``): ``hf://ORG/NAME[@REVISION]``; a bare ``ORG/NAME`` when no local path of
that name exists; a Hub web or resolve URL (``https://huggingface.co/ORG/NAME[/resolve/REV/FILE]``);
any ``http(s)://.../X.safetensors`` or ``.../X.safetensors.index.json`` URL.

What is read, and how (``open_remote``):

1. The revision resolves once to a commit: ``GET {endpoint}/api/models/{repo}/revision/{rev}``
   (``sha`` and ``siblings[].rfilename``, what huggingface_hub's ``HfApi.model_info`` reads);
   every file is then read at that sha, ``GET {endpoint}/{repo}/resolve/{sha}/{file}``, so a
   branch that moves while kvscale reads cannot mix two commits. When the Hugging Face cache
   (``HF_HUB_CACHE``/``HF_HOME``, found through ``huggingface_hub.try_to_load_from_cache``) holds
   every file kvscale needs at that sha, the local copy is opened instead (layout ``hf-cache``);
   in offline mode (``HF_HUB_OFFLINE``) only the cache is used.
2. config.json, hf_quant_config.json and the index are fetched together, and only when the
   repository lists them.
3. Every shard's header is read with one ranged GET sized from what is already known (the
   index's tensor names per shard, and the per-tensor header size of the shards already read),
   and a second GET only when the header is larger than that. At most ``concurrency`` (16)
   requests run at once. The same worker then reads the bytes of the shard's KV-scale tensors
   (``kvscale.conventions.looks_like_kv_scale``) in one coalesced ranged GET computed from the
   validated offsets (none when the first read already holds them; a second one only where the
   scales lie further apart than a header's length, so that weights are never read in bulk).
   ``read_tensors`` then serves inspect from those bytes, and reads whatever else it is asked
   for the same way.

Every header passes ``kvscale.io.safetensors.parse_header`` with the limits local files have
(``max-header-bytes`` checked on the 8-byte length before anything more is asked), every JSON
file the strict reader and its size cap. A range answer must be a 206 whose ``Content-Range``
starts where asked, ends where asked (or at the end of the file) and matches the body and the
file size seen before; a 200 is accepted only as the whole of a file shorter than the range asked
for, and no body is ever read past the bytes asked for. Redirects are followed by kvscale itself
(at most ``max_redirects``; the token is sent only to the Hub's own origin, never to the CDN a
file redirects to); ``Accept-Encoding: identity``; 429 and 5xx are retried with exponential
backoff honouring ``Retry-After`` (one wait at most ``max_retry_wait``, all waits of a request at
most ``retry_budget``); connect, read and whole-response timeouts. The first failure stops every
other request of the run. Failures are one-line ``KVScaleError``s (exit 2) naming the URL, or
for what a file holds the ``hf://ORG/NAME@SHA/FILE`` it came from; a missing huggingface_hub is
an ``ExtraMissingError`` (exit 3).

Hub conventions come from huggingface_hub (an optional extra, ``kvscale[hub]``, imported only
when a remote input is opened): the token it would send implicitly (``HF_TOKEN``, then the token
file; none under ``HF_HUB_DISABLE_IMPLICIT_TOKEN``), offline mode, the cache, its shared HTTP
session (so that a ``set_client_factory`` proxy or certificate setup applies) and its read
timeout (``HF_HUB_DOWNLOAD_TIMEOUT``). The endpoint is ``HF_ENDPOINT`` (default the public Hub,
as in ``huggingface_hub/constants.py``), read when the input is opened. The user agent has
huggingface_hub's shape (``kvscale/V; hf_hub/V; python/V``) but is built here: its
``build_hf_headers`` detects "agent harnesses" from a registry it downloads from the endpoint
once a day (``utils/_detect_agent.py::_fetch_registry`` in 2.4.0), an extra request kvscale does
not want to make.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as url_quote
from urllib.parse import unquote, urljoin, urlsplit

from kvscale.conventions import looks_like_kv_scale
from kvscale.errors import (
    CheckpointNotFoundError,
    ConfigError,
    EnvironmentMissingError,
    InputError,
    KVScaleError,
    LimitExceededError,
    SafetensorsFormatError,
    UsageError,
    require,
)
from kvscale.floats import DECODABLE_DTYPES
from kvscale.io.checkpoint import (
    INDEX_NAME,
    Checkpoint,
    LocalSource,
    open_checkpoint,
    read_json_file,
)
from kvscale.io.safetensors import (
    SafetensorsHeader,
    TensorInfo,
    json_error_text,
    parse_header,
    parse_json_bytes,
    quote,
)
from kvscale.limits import (
    MAX_CONFIG_BYTES,
    MAX_HEADER_BYTES,
    MAX_INDEX_BYTES,
    MAX_SCALE_ELEMENTS,
    Limit,
)
from kvscale.progress import ProgressEvent, ProgressFn

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor


DEFAULT_ENDPOINT = "https://huggingface.co"
"""``huggingface_hub.constants._HF_DEFAULT_ENDPOINT``."""
HF_QUANT_CONFIG = "hf_quant_config.json"
_JSON_FILES = ("config.json", HF_QUANT_CONFIG)
_HEADER_PREFIX = 8
_SHA = re.compile(r"[0-9a-f]{40}")
_REPO_PART = re.compile(r"[A-Za-z0-9_.-]{1,96}")
_REVISION = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_./-]{0,254}")
_REDIRECTS = frozenset([301, 302, 303, 307, 308])
_RETRY_STATUS = frozenset([429, 500, 502, 503, 504])
"""What huggingface_hub's ``http_backoff`` retries (``utils/_http.py``), minus 408."""
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_UNSATISFIED_RANGE = re.compile(r"bytes \*/(\d+)")
_MIN_GAP = 4096
"""Scale tensors closer than max(this, the shard's header size) are read in one range."""
_FIRST_PER_TENSOR = 128
"""Header bytes per tensor beyond its name, assumed before any header has been seen (a compact
``{"dtype":"F8_E4M3","shape":[53248,16384],"data_offsets":[0,872415232]}`` entry is ~70)."""
_UNKNOWN_HEADER_READ = 64 * 1024
"""First read of a shard when nothing predicts its header size (huggingface_hub reads 100,000)."""
_MAX_LISTING = 1_000_000
"""Most siblings accepted from the Hub's revision answer."""


# --- inputs ---------------------------------------------------------------------------------


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

    ``ORG/NAME`` is remote only when no local file, directory or symlink of that name exists.
    Raises ``UsageError`` for an ``hf://`` or ``http(s)://`` input that names no checkpoint.
    """
    if given.startswith("hf://"):
        return _parse_hf(given)
    lowered = given[:8].lower()
    if lowered.startswith(("https://", "http://")):
        return _parse_url(given)
    if _is_repo_id(given) and not os.path.lexists(given):
        return RemoteSpec(given, repo=given)
    return None


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


def _check_revision(revision: str, given: str) -> str:
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
    return RemoteSpec(given, repo=repo, revision=_check_revision(revision, given) if at else None)


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` or the public Hub, without a trailing slash (read now, not at import)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    default = 443 if scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def _hub_hosts() -> set[tuple[str, str, int]]:
    return {_origin(hub_endpoint()), _origin("https://huggingface.co"), _origin("https://hf.co")}


def _parse_url(given: str) -> RemoteSpec:
    parts = urlsplit(given)
    if not parts.hostname:
        raise UsageError(f"{quote(given, 80)} is not a URL kvscale can read (no host)")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    endpoint_path = [s for s in urlsplit(hub_endpoint()).path.split("/") if s]
    if _origin(given) in _hub_hosts() and segments[: len(endpoint_path)] == endpoint_path:
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
    revision = _check_revision(rest[1], given)
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


# --- results --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RemoteStats:
    """What a remote read cost, for ``--json``'s ``source`` and the human summary."""

    repo: str | None
    revision: str | None
    """As asked (``main`` when none was)."""
    sha: str | None
    files: int
    """Files read (JSON files and shards)."""
    requests: int
    """HTTP requests sent (redirect hops and retries included)."""
    bytes: int
    """Body bytes received."""
    size: int
    """Total size of the shards read from (the "of M GB" of "read N KB of M GB")."""
    cache: str | None = None
    """The local Hugging Face cache snapshot used instead of the network, if any."""

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "revision": self.revision,
            "sha": self.sha,
            "files": self.files,
            "requests": self.requests,
            "bytes": self.bytes,
        }


class RemotePath(PosixPath):
    """A placeholder path naming a remote location in messages (``hf://org/name@sha/x``).

    pathlib folds the ``//`` after a scheme into one slash; ``str`` restores it. Nothing ever
    opens this path: every read goes through the ``RemoteSource``.
    """

    def __str__(self) -> str:
        return re.sub(r"^([a-z][a-z0-9+.-]*):/(?!/)", r"\1://", super().__str__(), count=1)

    def __repr__(self) -> str:
        return f"RemotePath({str(self)!r})"


@dataclass(frozen=True)
class RemoteOptions:
    """Transport bounds; the defaults suit the Hub, tests pass small ones."""

    concurrency: int = 16
    connect_timeout: float = 10.0
    read_timeout: float | None = None
    """Longest wait for any byte (None: huggingface_hub's ``HF_HUB_DOWNLOAD_TIMEOUT``, 10 s)."""
    request_timeout: float = 120.0
    """Longest time for one whole response, first byte to last."""
    retries: int = 4
    backoff: float = 0.5
    """First wait after a 429/5xx without Retry-After; doubled each time."""
    max_retry_wait: float = 30.0
    """A Retry-After longer than this fails at once rather than wait."""
    retry_budget: float = 60.0
    """All waits of one request together."""
    max_redirects: int = 5
    prefetch_scales: bool = True
    """Read the KV-scale bytes of each shard right after its header."""


class RemoteHTTPError(InputError):
    """An HTTP answer kvscale cannot use (carries the status, 0 for transport failures)."""

    def __init__(self, url: str, message: str, *, status: int = 0, hint: str | None = None):
        super().__init__(url, message, hint=hint)
        self.url = url
        self.reason = message
        self.status = status


class _Cancelled(Exception):
    """Another request of the run failed; this one stops."""


class _TooLong(Exception):
    def __init__(self, status: int, declared: int | None) -> None:
        super().__init__(status, declared)
        self.status = status
        self.declared = declared


@dataclass(frozen=True)
class _Reply:
    status: int
    body: bytes
    url: str
    content_range: str | None
    content_type: str | None


# --- transport ------------------------------------------------------------------------------


def _short_url(url: str, limit: int = 160) -> str:
    # Signed CDN URLs carry long query strings; messages keep the path.
    text = url.split("?", 1)[0]
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Http:
    """GETs through huggingface_hub's shared session, with kvscale's redirects, retries, caps."""

    def __init__(self, options: RemoteOptions, *, token: str | None, endpoint: str) -> None:
        import importlib

        import huggingface_hub
        from huggingface_hub import constants, get_session

        from kvscale._version import __version__

        self.options = options
        self._session = get_session()
        # huggingface_hub 2.x hands out an httpx2.Client, 1.x an httpx.Client (same API); 0.x
        # a requests.Session, which kvscale does not drive.
        library = type(self._session).__module__.split(".")[0]
        if library not in ("httpx2", "httpx"):
            raise EnvironmentMissingError(
                "reading a checkpoint from the Hub or a URL needs huggingface_hub 1.0 or later "
                f"(found {huggingface_hub.__version__})",
                hint="pip install -U 'kvscale[hub]'",
            )
        httpx2 = importlib.import_module(library)
        self._httpx: Any = httpx2
        self._offline_error: type[BaseException] = _offline_exception()
        read = options.read_timeout
        if read is None:
            read = float(constants.HF_HUB_DOWNLOAD_TIMEOUT)
        self.read_timeout = read
        self._timeout = httpx2.Timeout(
            connect=options.connect_timeout, read=read, write=read, pool=options.request_timeout
        )
        self._token = token
        self._hub_origin = _origin(endpoint)
        python = ".".join(str(v) for v in sys.version_info[:3])
        self.user_agent = (
            f"kvscale/{__version__}; hf_hub/{huggingface_hub.__version__}; python/{python}"
        )
        self.stop = threading.Event()
        self._lock = threading.Lock()
        self.requests = 0
        self.bytes = 0

    def _count(self, requests: int = 0, nbytes: int = 0) -> None:
        with self._lock:
            self.requests += requests
            self.bytes += nbytes

    def _headers(self, url: str, byte_range: tuple[int, int] | None) -> dict[str, str]:
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": "identity"}
        if byte_range is not None:
            headers["Range"] = f"bytes={byte_range[0]}-{byte_range[1]}"
        # The token goes to the Hub only: never to the CDN a file redirects to, nor to any
        # other host (huggingface_hub's _httpx2_follow_hub_redirects_with_backoff stops at a
        # cross-host redirect for the same reason).
        if self._token is not None and _origin(url) == self._hub_origin:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def get(self, url: str, *, byte_range: tuple[int, int] | None, cap: int) -> _Reply:
        """One logical GET: redirects followed, 429/5xx and dropped connections retried.

        Returns 2xx and 416 answers; raises ``RemoteHTTPError`` for the others, ``_TooLong``
        when the body would pass ``cap`` bytes (nothing past ``cap`` is read).
        """
        current = url
        hops = attempt = 0
        waited = 0.0
        httpx = self._httpx
        options = self.options
        # Every attempt of this GET together: the retry budget plus one slow answer.
        deadline = time.monotonic() + options.retry_budget + options.request_timeout
        while True:
            if self.stop.is_set():
                raise _Cancelled()
            if time.monotonic() > deadline:
                raise RemoteHTTPError(
                    _short_url(url),
                    f"gave up after {options.retry_budget + options.request_timeout:g} s "
                    f"({attempt} attempts)",
                )
            wait: float | None = None
            try:
                with self._session.stream(
                    "GET",
                    current,
                    headers=self._headers(current, byte_range),
                    timeout=self._timeout,
                    follow_redirects=False,
                ) as response:
                    self._count(requests=1)
                    status = response.status_code
                    if status in _REDIRECTS:
                        hops += 1
                        current = self._redirect(url, current, response.headers, hops, status)
                        continue
                    if status in _RETRY_STATUS:
                        wait = self._retry_wait(url, status, response.headers, attempt, waited)
                    else:
                        if status >= 400 and status != 416:
                            raise _status_error(url, status, response.headers)
                        return self._read(current, response, status, cap, deadline)
            except httpx.TimeoutException:
                raise RemoteHTTPError(
                    _short_url(url),
                    f"no answer within {self.read_timeout:g} s (timed out)",
                    hint="the server is slow or unreachable; try again later",
                ) from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                reason = " ".join(str(exc).split())[:160] or type(exc).__name__
                if attempt >= self.options.retries:
                    raise RemoteHTTPError(_short_url(url), f"connection failed: {reason}") from None
                wait = min(self.options.backoff * 2**attempt, self.options.max_retry_wait)
            except httpx.HTTPError as exc:
                reason = " ".join(str(exc).split())[:160] or type(exc).__name__
                raise RemoteHTTPError(_short_url(url), f"request failed: {reason}") from None
            except self._offline_error:
                raise offline_error(url) from None
            assert wait is not None
            attempt += 1
            waited += wait
            if self.stop.wait(wait * random.uniform(0.9, 1.1)):
                raise _Cancelled()

    def _redirect(
        self, url: str, current: str, headers: Mapping[str, str], hops: int, status: int
    ) -> str:
        location = headers.get("location")
        if not location:
            raise RemoteHTTPError(
                _short_url(url), f"HTTP {status} redirect without a Location", status=status
            )
        target = urljoin(current, location)
        if urlsplit(target).scheme.lower() not in ("http", "https"):
            raise RemoteHTTPError(
                _short_url(url), f"redirect to a non-HTTP URL {quote(target, 80)}", status=status
            )
        if hops > self.options.max_redirects:
            raise RemoteHTTPError(
                _short_url(url),
                f"more than {self.options.max_redirects} redirects (the last to "
                f"{_short_url(target, 100)})",
                status=status,
                hint="the server redirects in a loop",
            )
        return target

    def _retry_wait(
        self, url: str, status: int, headers: Mapping[str, str], attempt: int, waited: float
    ) -> float:
        options = self.options
        asked = _retry_after(headers.get("retry-after"))
        wait = asked if asked is not None else options.backoff * 2**attempt
        what = "rate limited (HTTP 429)" if status == 429 else f"HTTP {status}"
        if asked is not None and asked > options.max_retry_wait:
            raise RemoteHTTPError(
                _short_url(url),
                f"{what}; the server asks to retry after {asked:g} s, longer than kvscale "
                f"waits ({options.max_retry_wait:g} s)",
                status=status,
                hint="try again later",
            )
        if attempt >= options.retries or waited + wait > options.retry_budget:
            raise RemoteHTTPError(
                _short_url(url),
                f"{what} after {attempt + 1} attempts over {waited:.1f} s",
                status=status,
                hint="the server is overloaded or rate-limits you; try again later",
            )
        return min(wait, options.max_retry_wait)

    def _read(self, url: str, response: Any, status: int, cap: int, deadline: float) -> _Reply:
        encoding = response.headers.get("content-encoding")
        if encoding and encoding.strip().lower() != "identity":
            raise RemoteHTTPError(
                _short_url(url),
                f"the server sent a {quote(encoding, 30)}-encoded body although kvscale asked "
                "for identity; offsets into an encoded body are not file offsets",
                status=status,
            )
        length = response.headers.get("content-length")
        declared: int | None = None
        if length is not None:
            if not length.strip().isdigit() or len(length) > 20:
                raise RemoteHTTPError(
                    _short_url(url), f"invalid Content-Length {quote(length, 30)}", status=status
                )
            declared = int(length)
            if declared > cap:
                raise _TooLong(status, declared)
        finish = min(time.monotonic() + self.options.request_timeout, deadline)
        chunks: list[bytes] = []
        received = 0
        for chunk in response.iter_raw(1 << 16):
            received += len(chunk)
            self._count(nbytes=len(chunk))
            if received > cap:
                raise _TooLong(status, declared)
            chunks.append(chunk)
            if time.monotonic() > finish:
                raise RemoteHTTPError(
                    _short_url(url),
                    f"the response took longer than {self.options.request_timeout:g} s",
                    status=status,
                )
            if self.stop.is_set():
                raise _Cancelled()
        body = b"".join(chunks)
        if declared is not None and len(body) != declared:
            raise RemoteHTTPError(
                _short_url(url),
                f"body of {len(body):,} bytes, but Content-Length says {declared:,}",
                status=status,
            )
        return _Reply(
            status,
            body,
            str(response.url),
            response.headers.get("content-range"),
            response.headers.get("content-type"),
        )

    def fetch_range(self, url: str, start: int, end: int) -> tuple[bytes, int, str]:
        """Bytes ``start..end`` (inclusive) of a file, its total size, and the URL that served
        them (after redirects). A file shorter than ``end`` gives fewer bytes; one shorter than
        ``start`` gives none."""
        asked = end - start + 1
        try:
            reply = self.get(url, byte_range=(start, end), cap=asked)
        except _TooLong as exc:
            size = f" ({exc.declared:,} bytes)" if exc.declared is not None else ""
            if exc.status == 200:
                raise RemoteHTTPError(
                    _short_url(url),
                    f"the server ignored the byte range (HTTP 200{size} for bytes={start}-{end}, "
                    f"more than the {asked:,} bytes asked for)",
                    status=200,
                    hint="kvscale needs a server that answers Range requests",
                ) from None
            raise RemoteHTTPError(
                _short_url(url),
                f"HTTP {exc.status} body{size} longer than the {asked:,} bytes asked for "
                f"(bytes={start}-{end})",
                status=exc.status,
            ) from None
        where = _short_url(reply.url)
        if reply.status == 416:
            match = _UNSATISFIED_RANGE.fullmatch((reply.content_range or "").strip())
            if match is None or int(match.group(1)) > start:
                raise RemoteHTTPError(
                    where,
                    f"HTTP 416 for bytes={start}-{end} with Content-Range "
                    f"{quote(reply.content_range, 60)}",
                    status=416,
                )
            return b"", int(match.group(1)), reply.url
        if reply.status == 200:
            if start != 0:
                raise RemoteHTTPError(
                    where,
                    f"the server ignored the byte range (HTTP 200 for bytes={start}-{end})",
                    status=200,
                    hint="kvscale needs a server that answers Range requests",
                )
            return reply.body, len(reply.body), reply.url  # the whole file, shorter than asked
        if reply.status != 206:
            raise RemoteHTTPError(
                where, f"HTTP {reply.status} for a byte range (expected 206)", status=reply.status
            )
        if (reply.content_type or "").lower().startswith("multipart/"):
            raise RemoteHTTPError(where, "multipart answer to a single byte range", status=206)
        match = _CONTENT_RANGE.fullmatch((reply.content_range or "").strip())
        total = int(match.group(3)) if match and match.group(3) != "*" else None
        first = int(match.group(1)) if match else -1
        last = int(match.group(2)) if match else -1
        if (
            match is None
            or total is None
            or first != start
            or last < first
            or last > end
            or last >= total
            or (last != end and last != total - 1)
            or len(reply.body) != last - first + 1
        ):
            raise RemoteHTTPError(
                where,
                f"inconsistent Content-Range {quote(reply.content_range, 60)} for "
                f"bytes={start}-{end} ({len(reply.body):,} bytes received)",
                status=206,
            )
        return reply.body, total, reply.url

    def fetch_document(self, url: str, cap: int, *, missing_ok: bool) -> bytes | None:
        """A whole (small) file (None on 404 when ``missing_ok``); ``_TooLong`` past ``cap``."""
        try:
            reply = self.get(url, byte_range=None, cap=cap)
        except RemoteHTTPError as exc:
            if exc.status == 404 and missing_ok:
                return None
            raise
        if reply.status != 200:
            raise RemoteHTTPError(
                _short_url(reply.url), f"HTTP {reply.status} (expected 200)", status=reply.status
            )
        return reply.body


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header: delay-seconds or an HTTP-date (RFC 9110 10.2.3)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(int(text[:9]))
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - time.time())


def _status_error(url: str, status: int, headers: Mapping[str, str]) -> RemoteHTTPError:
    """The Hub's error answers in one line (the codes huggingface_hub's ``hf_raise_for_status``
    reads: ``X-Error-Code`` RepoNotFound/GatedRepo/RevisionNotFound/EntryNotFound and
    ``X-Error-Message``)."""
    code = headers.get("x-error-code") or ""
    message = headers.get("x-error-message") or ""
    where = _short_url(url)
    token_hint = "set HF_TOKEN (or run `hf auth login`) with a token that has access"
    if status == 401 and message == "Invalid credentials in Authorization header":
        return RemoteHTTPError(
            where,
            "the Hub rejected the token (HTTP 401: invalid credentials)",
            status=status,
            hint="check HF_TOKEN or the token file; unset it for public repositories",
        )
    if code == "GatedRepo":
        return RemoteHTTPError(
            where,
            f"gated repository: no access (HTTP {status})",
            status=status,
            hint="accept the model's terms on its Hub page, then " + token_hint,
        )
    if code == "RevisionNotFound":
        return RemoteHTTPError(where, "revision not found (HTTP 404)", status=status)
    if code == "EntryNotFound":
        return RemoteHTTPError(where, "file not found in the repository (HTTP 404)", status=404)
    if code == "RepoNotFound" or (status == 401 and "/api/models/" in url):
        return RemoteHTTPError(
            where,
            f"repository not found, or private and not visible to you (HTTP {status})",
            status=status,
            hint="check the name; for a private repository " + token_hint,
        )
    if status == 401:
        return RemoteHTTPError(where, "authentication required (HTTP 401)", status=status)
    if status == 403:
        return RemoteHTTPError(where, "access denied (HTTP 403)", status=status, hint=token_hint)
    if status == 404:
        return RemoteHTTPError(where, "not found (HTTP 404)", status=status)
    return RemoteHTTPError(where, f"HTTP {status}", status=status)


def _offline_exception() -> type[BaseException]:
    from huggingface_hub.errors import OfflineModeIsEnabled

    return OfflineModeIsEnabled


def offline_error(what: str) -> InputError:
    return InputError(
        what,
        "offline mode (HF_HUB_OFFLINE is set) and not in the local Hugging Face cache",
        hint="unset HF_HUB_OFFLINE, or download the checkpoint first",
    )


def _is_offline() -> bool:
    from huggingface_hub import constants

    # constants reads HF_HUB_OFFLINE once, at import; the environment as it is now counts too,
    # so that offline is never missed (huggingface_hub's session refuses requests on the former).
    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return bool(constants.HF_HUB_OFFLINE) or env.strip().upper() in ("1", "ON", "YES", "TRUE")


# --- reading --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    """Exclusive."""
    infos: tuple[TensorInfo, ...]


def _spans(infos: Sequence[TensorInfo], gap: int) -> list[_Span]:
    """Tensors grouped into byte ranges, sorted by their validated offsets; a gap of up to
    ``gap`` bytes between two tensors is read through rather than split into two requests."""
    out: list[_Span] = []
    for info in sorted(infos, key=lambda i: (i.start, i.end)):
        if out and info.start - out[-1].end <= gap:
            last = out[-1]
            out[-1] = _Span(last.start, max(last.end, info.end), (*last.infos, info))
        else:
            out.append(_Span(info.start, info.end, (info,)))
    return out


def _json_length(name: str) -> int:
    return len(json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass"))


class _HeaderSizer:
    """How many bytes to ask for in a shard's first read, so that it holds the whole header.

    With an index, a header is its tensor names (known) plus a per-tensor overhead: assumed
    generous before any header is seen, then the largest overhead measured so far plus a margin.
    Without one, the largest header seen plus a quarter, or ``_UNKNOWN_HEADER_READ`` at first.
    """

    def __init__(self, index: Any) -> None:
        self._known: dict[str, tuple[int, int]] = {}
        weight_map = index.get("weight_map") if isinstance(index, dict) else None
        if isinstance(weight_map, dict):
            counts: dict[str, list[int]] = {}
            for tensor, shard in weight_map.items():
                if isinstance(shard, str) and isinstance(tensor, str):
                    entry = counts.setdefault(shard, [0, 0])
                    entry[0] += 1
                    entry[1] += _json_length(tensor)
            self._known = {shard: (c, n) for shard, (c, n) in counts.items()}
        self._lock = threading.Lock()
        self._per_tensor = 0.0
        self._largest = 0

    def guess(self, shard: str) -> int:
        with self._lock:
            per_tensor, largest = self._per_tensor, self._largest
        known = self._known.get(shard)
        if known is not None and known[0] > 0:
            count, names = known
            if per_tensor:
                size = names + count * (per_tensor * 1.05 + 8) + 64
            else:
                size = names + count * _FIRST_PER_TENSOR + 512
        elif largest:
            size = largest * 1.25 + 1024
        else:
            size = _UNKNOWN_HEADER_READ
        return min(_HEADER_PREFIX + int(size), _HEADER_PREFIX + MAX_HEADER_BYTES.value())

    def observe(self, shard: str, header_size: int) -> None:
        known = self._known.get(shard)
        with self._lock:
            self._largest = max(self._largest, header_size)
            if known is not None and known[0] > 0:
                overhead = (header_size - known[1]) / known[0]
                self._per_tensor = max(self._per_tensor, overhead)


def _format_error(path: Path, what: str) -> SafetensorsFormatError:
    return SafetensorsFormatError(path, f"not a valid safetensors file: {what}")


def _header_length(path: Path, data: bytes, file_size: int) -> int:
    """The 8-byte header length, checked as ``kvscale.io.safetensors.read_header`` checks a
    local file (same order, same messages)."""
    if file_size == 0:
        raise _format_error(path, "file is empty (0 bytes)")
    if file_size < _HEADER_PREFIX:
        raise _format_error(
            path, f"file is {file_size} bytes, shorter than the 8-byte header length"
        )
    if len(data) < _HEADER_PREFIX:
        raise _format_error(path, "could not read the 8-byte header length")
    n = int.from_bytes(data[:_HEADER_PREFIX], "little")
    if _HEADER_PREFIX + n > file_size:
        raise _format_error(
            path, f"header length {n:,} runs past the end of the file ({file_size:,} bytes)"
        )
    if n > MAX_HEADER_BYTES.value():
        raise LimitExceededError(
            path, f"safetensors header of {n:,} bytes refused", hint=MAX_HEADER_BYTES.describe()
        )
    return n


def kv_scale_candidate(info: TensorInfo) -> bool:
    """A tensor inspect will most likely ask for: a small decodable KV/attention scale."""
    return (
        looks_like_kv_scale(info.name)
        and info.dtype in DECODABLE_DTYPES
        and 0 < info.numel <= MAX_SCALE_ELEMENTS.value()
    )


class RemoteSource:
    """A checkpoint directory on the Hub (at one commit) or behind a URL; a ``CheckpointSource``.

    ``listing``: the file names of the directory (the Hub's siblings; None for a plain URL,
    whose directory cannot be listed). ``url_of``: the URL of a file of the directory.
    """

    def __init__(
        self,
        spec: RemoteSpec,
        *,
        http: _Http,
        root: RemotePath,
        url_of: Callable[[str], str],
        listing: frozenset[str] | None,
        sha: str | None,
        wanted: Callable[[TensorInfo], bool] | None = kv_scale_candidate,
    ) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.spec = spec
        self.root: Path = root
        self.sha = sha
        self._http = http
        self._url_of = url_of
        self._listing = listing
        self._wanted = wanted
        self._lock = threading.Lock()
        self._served_by: dict[str, str] = {}
        self._sizes: dict[str, int] = {}
        self._files_read: set[str] = set()
        self._cache: dict[tuple[str, str], tuple[int, int, bytes]] = {}
        self._header_sizes: dict[str, int] = {}
        self._index: Any = None
        self._pool: ThreadPoolExecutor | None = ThreadPoolExecutor(
            max_workers=max(1, http.options.concurrency), thread_name_prefix="kvscale-remote"
        )
        self._documents: dict[str, Future[bytes | None]] = {}
        for name, limit in self._document_plan():
            self._documents[name] = self._pool.submit(self._fetch_document, name, limit)

    # --- CheckpointSource -------------------------------------------------------------------

    def safetensors_names(self) -> list[str]:
        if self.spec.single_file:
            assert self.spec.file is not None
            return [self.spec.file]
        if self._listing is not None:
            return sorted(
                n for n in self._listing if n.endswith(".safetensors") and not n.startswith(".")
            )
        # A plain URL of an index: the directory is what the index names.
        weight_map = self._index.get("weight_map") if isinstance(self._index, dict) else None
        if not isinstance(weight_map, dict):
            return []
        return sorted({f for f in weight_map.values() if isinstance(f, str)})

    def read_json(self, name: str, what: str, limit: Limit) -> Any:
        actual = self.spec.index_name if name == INDEX_NAME else name
        if name == INDEX_NAME and self.spec.single_file:
            return None  # a single file is read without its directory's index, as locally
        if self._listing is not None and actual not in self._listing:
            return None
        pending = self._documents.pop(actual, None)
        raw = pending.result() if pending is not None else self._fetch_document(actual, limit)
        if raw is None:
            return None
        path = self.root / actual
        if len(raw) > limit.value():
            raise LimitExceededError(path, f"{what} is {len(raw):,} bytes", hint=limit.describe())
        try:
            doc = parse_json_bytes(raw)
        except (ValueError, RecursionError) as exc:
            raise ConfigError(path, f"{what} {json_error_text(exc)}") from None
        if doc is None:
            raise ConfigError(path, f"{what} is not a JSON object (it is null)")
        if name == INDEX_NAME:
            self._index = doc
        return doc

    def read_headers(
        self, names: Sequence[str], progress: ProgressFn | None
    ) -> dict[str, SafetensorsHeader]:
        from concurrent.futures import as_completed

        pool = self._pool
        if pool is None:
            raise RuntimeError("RemoteSource.read_headers called twice")
        sizer = _HeaderSizer(self._index)
        futures = {pool.submit(self._read_shard, name, sizer): name for name in names}
        headers: dict[str, SafetensorsHeader] = {}
        failed = True
        try:
            for done, future in enumerate(as_completed(futures), start=1):
                name = futures[future]
                headers[name] = future.result()
                if progress is not None:
                    progress(ProgressEvent("headers", done, len(names), name))
            failed = False
        finally:
            if failed:
                self._http.stop.set()  # every other request of the run stops at its next step
            self.close(wait=not failed)
        return {name: headers[name] for name in names}

    def read_tensors(self, file: str, infos: Sequence[TensorInfo]) -> dict[str, bytes]:
        limit = MAX_SCALE_ELEMENTS.value()
        for info in infos:
            if info.numel > limit:
                raise LimitExceededError(
                    self.root / file,
                    f"scale tensor {quote(info.name)} has {info.numel:,} elements; not read",
                    hint=MAX_SCALE_ELEMENTS.describe(),
                )
        missing = [info for info in infos if self._cached(file, info) is None]
        if missing:
            self._fill(file, missing, b"")
        out: dict[str, bytes] = {}
        for info in infos:
            data = self._cached(file, info)
            assert data is not None
            out[info.name] = data
        return out

    # --- the rest ---------------------------------------------------------------------------

    def stats(self) -> RemoteStats:
        with self._lock:
            files = len(self._files_read)
            size = sum(self._sizes[n] for n in self._header_sizes if n in self._sizes)
        return RemoteStats(
            repo=self.spec.repo,
            revision=(self.spec.revision or "main") if self.spec.is_hub else None,
            sha=self.sha,
            files=files,
            requests=self._http.requests,
            bytes=self._http.bytes,
            size=size,
        )

    def close(self, *, wait: bool = True) -> None:
        """Stop the worker threads (pending work is cancelled)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            if not wait:
                self._http.stop.set()
            pool.shutdown(wait=wait, cancel_futures=True)

    def _document_plan(self) -> Iterator[tuple[str, Limit]]:
        names: list[tuple[str, Limit]] = [(name, MAX_CONFIG_BYTES) for name in _JSON_FILES]
        if not self.spec.single_file:
            names.insert(0, (self.spec.index_name, MAX_INDEX_BYTES))
        for name, limit in names:
            if self._listing is None or name in self._listing:
                yield name, limit

    def _fetch_document(self, name: str, limit: Limit) -> bytes | None:
        cap = limit.value()
        url = self._url_of(name)
        try:
            raw = self._http.fetch_document(url, cap, missing_ok=self._listing is None)
        except _TooLong as exc:
            size = f"{exc.declared:,} bytes" if exc.declared is not None else f"over {cap:,} bytes"
            raise LimitExceededError(
                self.root / name, f"{name} is {size}", hint=limit.describe()
            ) from None
        except RemoteHTTPError as exc:
            if exc.status == 404:
                raise CheckpointNotFoundError(
                    exc.url, "listed by the repository but not found (HTTP 404)"
                ) from None
            raise
        if raw is not None:
            with self._lock:
                self._files_read.add(name)
        return raw

    def _range(self, name: str, start: int, end: int) -> bytes:
        """Bytes ``start..end`` of a file (fewer at its end), checked against its known size."""
        with self._lock:
            url = self._served_by.get(name)
        retry_from_origin = url is not None
        if url is None:
            url = self._url_of(name)
        try:
            body, total, served_by = self._http.fetch_range(url, start, end)
        except RemoteHTTPError as exc:
            # A signed CDN URL may expire between the two reads of a shard: ask the Hub again.
            if not (retry_from_origin and exc.status in (401, 403, 404, 410)):
                raise
            body, total, served_by = self._http.fetch_range(self._url_of(name), start, end)
        with self._lock:
            self._served_by[name] = served_by
            self._files_read.add(name)
            known = self._sizes.setdefault(name, total)
        if known != total:
            raise RemoteHTTPError(
                _short_url(served_by),
                f"the file size changed between two reads ({known:,} then {total:,} bytes)",
                status=206,
            )
        return body

    def _read_shard(self, name: str, sizer: _HeaderSizer) -> SafetensorsHeader:
        path = self.root / name
        want = sizer.guess(name)
        data = self._range(name, 0, want - 1)
        with self._lock:
            file_size = self._sizes[name]
        n = _header_length(path, data, file_size)
        if len(data) < _HEADER_PREFIX + n:
            data += self._range(name, len(data), _HEADER_PREFIX + n - 1)
            if len(data) != _HEADER_PREFIX + n:
                raise _format_error(path, "file shrank while its header was read")
        header = parse_header(path, data[_HEADER_PREFIX : _HEADER_PREFIX + n], file_size)
        sizer.observe(name, n)
        with self._lock:
            self._header_sizes[name] = n
        if self._wanted is not None:
            wanted = [info for info in header.tensors.values() if self._wanted(info)]
            if wanted:
                self._fill(name, wanted, data)
        return header

    def _cached(self, file: str, info: TensorInfo) -> bytes | None:
        with self._lock:
            hit = self._cache.get((file, info.name))
        if hit is None or hit[0] != info.start or hit[1] != info.end:
            return None
        return hit[2]

    def _fill(self, file: str, infos: Sequence[TensorInfo], data: bytes) -> None:
        """Cache the bytes of ``infos``: sliced from ``data`` (a read from offset 0) where it
        holds them, otherwise one ranged read per group of nearby tensors."""
        found: dict[tuple[str, str], tuple[int, int, bytes]] = {}
        rest: list[TensorInfo] = []
        for info in infos:
            if info.end <= len(data):
                found[(file, info.name)] = (info.start, info.end, data[info.start : info.end])
            else:
                rest.append(info)
        with self._lock:
            gap = max(_MIN_GAP, self._header_sizes.get(file, 0))
        for span in _spans(rest, gap):
            body = self._range(file, span.start, span.end - 1)
            if len(body) != span.end - span.start:
                raise _format_error(
                    self.root / file,
                    f"file ended inside tensor {quote(span.infos[-1].name)} (was it truncated?)",
                )
            for info in span.infos:
                piece = body[info.start - span.start : info.end - span.start]
                found[(file, info.name)] = (info.start, info.end, piece)
        with self._lock:
            self._cache.update(found)


class HubCacheSource(LocalSource):
    """A snapshot of the local Hugging Face cache read in place of the Hub (same file choice
    as the ``RemoteSource`` it replaces)."""

    def __init__(self, root: Path, spec: RemoteSpec, stats: RemoteStats) -> None:
        super().__init__(root)
        self.spec = spec
        self.remote = stats

    def safetensors_names(self) -> list[str]:
        if self.spec.single_file:
            assert self.spec.file is not None
            return [self.spec.file]
        return super().safetensors_names()

    def read_json(self, name: str, what: str, limit: Limit) -> Any:
        if name == INDEX_NAME:
            if self.spec.single_file:
                return None
            name = self.spec.index_name
        return super().read_json(name, what, limit)

    def stats(self) -> RemoteStats:
        return self.remote


def source_json(ckpt: Checkpoint) -> dict[str, Any] | None:
    """``--json``'s ``source`` object for a checkpoint opened by ``open_remote`` (None when it
    was opened from a local path)."""
    source = ckpt.source
    if isinstance(source, (RemoteSource, HubCacheSource)):
        return source.stats().to_json()
    return None


def remote_stats(ckpt: Checkpoint) -> RemoteStats | None:
    source = ckpt.source
    if isinstance(source, (RemoteSource, HubCacheSource)):
        return source.stats()
    return None


# --- opening --------------------------------------------------------------------------------


def open_remote(
    spec: str,
    revision: str | None,
    progress: ProgressFn | None,
    *,
    options: RemoteOptions | None = None,
) -> Checkpoint:
    """Open a remote checkpoint (see the module doc); ``revision`` overrides none in ``spec``."""
    parsed = remote_spec(spec)
    if parsed is None:
        raise UsageError(
            f"{quote(spec, 80)} is a local path, not a remote checkpoint",
            hint="write hf://ORG/NAME for a Hub repository",
        )
    if revision is not None:
        if not parsed.is_hub:
            raise UsageError(
                f"{quote(spec, 80)}: --revision applies to Hub repositories, not to URLs"
            )
        revision = _check_revision(revision, spec)
        if parsed.revision is not None and parsed.revision != revision:
            raise UsageError(
                f"{quote(spec, 80)} names revision {parsed.revision}, but --revision says "
                f"{revision}",
                hint="give the revision once",
            )
        parsed = RemoteSpec(
            parsed.given, parsed.repo, revision, parsed.folder, parsed.file, parsed.url
        )
    require("huggingface_hub", "reading a checkpoint from the Hub or a URL", "hub")
    options = options or RemoteOptions()
    if parsed.is_hub:
        return _open_hub(parsed, progress, options)
    return _open_url(parsed, progress, options)


def _token(what: str) -> str | None:
    """The token huggingface_hub would send implicitly (``utils/_headers.py::get_token_to_send``
    with ``token=None``): none under ``HF_HUB_DISABLE_IMPLICIT_TOKEN``, else ``get_token()``
    (``HF_TOKEN``, then the token file)."""
    from huggingface_hub import constants, get_token

    if constants.HF_HUB_DISABLE_IMPLICIT_TOKEN:
        return None
    try:
        return get_token()
    except Exception as exc:  # OIDC exchange or a broken token file: one line, exit 2
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        raise InputError(what, f"cannot get a Hugging Face token: {reason}") from None


def _open_hub(spec: RemoteSpec, progress: ProgressFn | None, options: RemoteOptions) -> Checkpoint:
    assert spec.repo is not None
    revision = spec.revision or "main"
    endpoint = hub_endpoint()
    if _is_offline():
        cached = _cached_snapshot(spec, revision, None)
        if cached is None:
            raise offline_error(spec.display())
        stats = RemoteStats(spec.repo, revision, _sha_of(cached), 0, 0, 0, 0, str(cached))
        return _open_cached(spec, cached, stats, progress)
    if _SHA.fullmatch(revision):
        cached = _cached_snapshot(spec, revision, None)
        if cached is not None:  # a commit never changes: no need to ask the Hub
            stats = RemoteStats(spec.repo, revision, revision, 0, 0, 0, 0, str(cached))
            return _open_cached(spec, cached, stats, progress)
    http = _Http(options, token=_token(spec.display()), endpoint=endpoint)
    api = f"{endpoint}/api/models/{spec.repo}/revision/{url_quote(revision, safe='')}"
    try:
        raw = http.fetch_document(api, MAX_INDEX_BYTES.value(), missing_ok=False)
    except _TooLong:
        raise LimitExceededError(
            _short_url(api), "the repository listing is too large", hint=MAX_INDEX_BYTES.describe()
        ) from None
    except RemoteHTTPError as exc:
        if spec.given != spec.repo or exc.status not in (401, 404):
            raise
        # A bare ORG/NAME that is neither a local path nor a repository: say both.
        hint = f"no local path {spec.given!r} exists either" + (f"; {exc.hint}" if exc.hint else "")
        raise RemoteHTTPError(exc.url, exc.reason, status=exc.status, hint=hint) from None
    assert raw is not None
    sha, siblings = _parse_revision_answer(api, raw, revision)
    folder = spec.folder + "/" if spec.folder else ""
    listing = frozenset(
        name[len(folder) :]
        for name in siblings
        if name.startswith(folder) and "/" not in name[len(folder) :]
    )
    cached = _cached_snapshot(spec, sha, listing)
    if cached is not None:
        stats = RemoteStats(spec.repo, revision, sha, 0, http.requests, http.bytes, 0, str(cached))
        return _open_cached(spec, cached, stats, progress)
    if spec.file is not None and spec.file not in listing:
        raise CheckpointNotFoundError(
            spec.display(sha) + "/" + spec.file, "no such file in the repository"
        )
    base = f"{endpoint}/{spec.repo}/resolve/{sha}/"

    def url_of(name: str) -> str:
        return base + url_quote(folder + name, safe="/")

    root = RemotePath(spec.display(sha))
    source = RemoteSource(
        spec, http=http, root=root, url_of=url_of, listing=listing, sha=sha, wanted=_wanted(options)
    )
    return _open_source(spec, source, progress)


def _wanted(options: RemoteOptions) -> Callable[[TensorInfo], bool] | None:
    return kv_scale_candidate if options.prefetch_scales else None


def _open_url(spec: RemoteSpec, progress: ProgressFn | None, options: RemoteOptions) -> Checkpoint:
    assert spec.url is not None and spec.file is not None
    if _is_offline():
        raise offline_error(_short_url(spec.url))
    http = _Http(options, token=None, endpoint=hub_endpoint())
    named = spec.url

    def url_of(name: str) -> str:
        return named if name == spec.file else urljoin(named, url_quote(name, safe=""))

    directory = _short_url(named).rsplit("/", 1)[0]
    source = RemoteSource(
        spec,
        http=http,
        root=RemotePath(directory),
        url_of=url_of,
        listing=None,
        sha=None,
        wanted=_wanted(options),
    )
    return _open_source(spec, source, progress)


def _open_source(spec: RemoteSpec, source: RemoteSource, progress: ProgressFn | None) -> Checkpoint:
    try:
        return open_checkpoint(spec.given, progress, source=source, layout="remote")
    except BaseException:
        source.close(wait=False)
        raise


def _open_cached(
    spec: RemoteSpec, snapshot: Path, stats: RemoteStats, progress: ProgressFn | None
) -> Checkpoint:
    source = HubCacheSource(snapshot, spec, stats)
    return open_checkpoint(spec.given, progress, source=source, layout="hf-cache")


def _sha_of(snapshot: Path) -> str | None:
    """The commit of a cache snapshot folder (``.../snapshots/<sha>[/folder]``)."""
    for part in (snapshot, *snapshot.parents):
        if part.parent.name == "snapshots" and _SHA.fullmatch(part.name):
            return part.name
    return None


def _parse_revision_answer(url: str, raw: bytes, revision: str) -> tuple[str, list[str]]:
    where = _short_url(url)
    try:
        doc = parse_json_bytes(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(where, f"the Hub's answer {json_error_text(exc)}") from None
    if not isinstance(doc, dict):
        raise InputError(where, "the Hub's answer is not a JSON object")
    sha = doc.get("sha")
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        raise InputError(where, f"the Hub's answer has no commit sha (sha: {quote(sha, 60)})")
    if _SHA.fullmatch(revision) and sha != revision:
        raise InputError(where, f"asked for commit {revision}, the Hub answered {sha}")
    siblings = doc.get("siblings")
    if not isinstance(siblings, list) or len(siblings) > _MAX_LISTING:
        raise InputError(where, "the Hub's answer has no siblings list")
    names: list[str] = []
    for entry in siblings:
        name = entry.get("rfilename") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            raise InputError(where, f"the Hub's answer lists a file without a name: {quote(entry)}")
        parts = name.split("/")
        if name and all(p not in ("", ".", "..") for p in parts) and "\x00" not in name:
            names.append(name)
    return sha, names


def _cached_snapshot(
    spec: RemoteSpec, revision: str, listing: frozenset[str] | None
) -> Path | None:
    """The cache's copy of the checkpoint at ``revision`` when it holds every file kvscale
    reads (the index and all the shards it names, config files the repository lists), else
    None. ``listing`` (the repository's files, when known) decides what "every" is; offline,
    the cached index does, or any cached shard."""
    from huggingface_hub import try_to_load_from_cache

    assert spec.repo is not None
    repo = spec.repo
    prefix = spec.folder + "/" if spec.folder else ""

    def cached(name: str) -> Path | None:
        try:
            found = try_to_load_from_cache(repo, prefix + name, revision=revision)
        except (ValueError, OSError):
            return None
        return Path(found) if isinstance(found, str) else None

    needed: list[str] = []
    if listing is not None:
        needed += [n for n in _JSON_FILES if n in listing]
    if spec.single_file:
        assert spec.file is not None
        needed.append(spec.file)
    else:
        index = cached(spec.index_name)
        if index is not None:
            try:
                doc = read_json_file(index, "index", limit=MAX_INDEX_BYTES)
            except KVScaleError:
                return None
            weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
            if not isinstance(weight_map, dict) or not weight_map:
                return None
            indexed = set(weight_map.values())
            if not all(isinstance(s, str) and "/" not in s for s in indexed):
                return None
            needed += sorted(indexed)
        elif listing is not None:
            listed = sorted(n for n in listing if n.endswith(".safetensors"))
            if spec.index_name in listing or not listed:
                return None  # the index exists but is not cached, or there is nothing to read
            needed += listed
        else:
            needed += ["model.safetensors"]
    if not needed:
        return None
    folder: Path | None = None
    for name in needed:
        found = cached(name)
        if found is None:
            return None
        folder = found.parent
    return folder


__all__ = [
    "HubCacheSource",
    "RemoteHTTPError",
    "RemoteOptions",
    "RemotePath",
    "RemoteSource",
    "RemoteSpec",
    "RemoteStats",
    "hub_endpoint",
    "kv_scale_candidate",
    "open_remote",
    "remote_spec",
    "remote_stats",
    "source_json",
]
