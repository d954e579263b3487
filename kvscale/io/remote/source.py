"""A remote checkpoint as a ``Checkpoint`` source (``RemoteSource``, or the Hugging Face cache when
it holds the files), and ``open_remote``, which resolves the revision and reads the headers; the
package docstring says what is read and how.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote as url_quote
from urllib.parse import urljoin

from kvscale.errors import (
    CheckpointNotFoundError,
    ConfigError,
    InputError,
    KVScaleError,
    LimitExceededError,
    UsageError,
    require,
)
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
    MAX_INDEX_BYTES,
    MAX_SCALE_ELEMENTS,
    Limit,
)
from kvscale.progress import ProgressEvent, ProgressFn

if TYPE_CHECKING:
    from concurrent.futures import Future, ThreadPoolExecutor


from kvscale.io.remote.headers import (
    HEADER_PREFIX,
    MIN_GAP,
    HeaderSizer,
    format_error,
    header_length,
    kv_scale_candidate,
    spans,
)
from kvscale.io.remote.http import (
    HttpClient,
    RemoteHTTPError,
    RemoteOptions,
    TooLong,
    is_offline,
    offline_error,
)
from kvscale.io.remote.urls import (
    SHA,
    RemoteSpec,
    check_revision,
    hub_endpoint,
    remote_spec,
    short_url,
)

HF_QUANT_CONFIG = "hf_quant_config.json"
_JSON_FILES = ("config.json", HF_QUANT_CONFIG)
_MAX_LISTING = 1_000_000
"""Most siblings accepted from the Hub's revision answer."""


# --- inputs ---------------------------------------------------------------------------------


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


# --- transport ------------------------------------------------------------------------------


# --- reading --------------------------------------------------------------------------------


class RemoteSource:
    """A checkpoint directory on the Hub (at one commit) or behind a URL; a ``CheckpointSource``.

    ``listing``: the file names of the directory (the Hub's siblings; None for a plain URL,
    whose directory cannot be listed). ``url_of``: the URL of a file of the directory.
    """

    def __init__(
        self,
        spec: RemoteSpec,
        *,
        http: HttpClient,
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
        sizer = HeaderSizer(self._index)
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
        except TooLong as exc:
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
                short_url(served_by),
                f"the file size changed between two reads ({known:,} then {total:,} bytes)",
                status=206,
            )
        return body

    def _read_shard(self, name: str, sizer: HeaderSizer) -> SafetensorsHeader:
        path = self.root / name
        want = sizer.guess(name)
        data = self._range(name, 0, want - 1)
        with self._lock:
            file_size = self._sizes[name]
        n = header_length(path, data, file_size)
        if len(data) < HEADER_PREFIX + n:
            data += self._range(name, len(data), HEADER_PREFIX + n - 1)
            if len(data) != HEADER_PREFIX + n:
                raise format_error(path, "file shrank while its header was read")
        header = parse_header(path, data[HEADER_PREFIX : HEADER_PREFIX + n], file_size)
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
            gap = max(MIN_GAP, self._header_sizes.get(file, 0))
        for span in spans(rest, gap):
            body = self._range(file, span.start, span.end - 1)
            if len(body) != span.end - span.start:
                raise format_error(
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
        revision = check_revision(revision, spec)
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


def _hub_token(what: str) -> str | None:
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
    if is_offline():
        cached = _cached_snapshot(spec, revision, None)
        if cached is None:
            if spec.given == spec.repo:
                raise _neither(
                    spec,
                    "offline mode (HF_HUB_OFFLINE is set) and not in the local Hugging Face cache",
                    "unset HF_HUB_OFFLINE, or download it first",
                )
            raise offline_error(spec.display())
        stats = RemoteStats(spec.repo, revision, _sha_of(cached), 0, 0, 0, 0, str(cached))
        return _open_cached(spec, cached, stats, progress)
    if SHA.fullmatch(revision):
        cached = _cached_snapshot(spec, revision, None)
        if cached is not None:  # a commit never changes: no need to ask the Hub
            stats = RemoteStats(spec.repo, revision, revision, 0, 0, 0, 0, str(cached))
            return _open_cached(spec, cached, stats, progress)
    http = HttpClient(options, token=_hub_token(spec.display()), endpoint=endpoint)
    api = f"{endpoint}/api/models/{spec.repo}/revision/{url_quote(revision, safe='')}"
    try:
        raw = http.fetch_document(api, MAX_INDEX_BYTES.value(), missing_ok=False)
    except TooLong:
        raise LimitExceededError(
            short_url(api), "the repository listing is too large", hint=MAX_INDEX_BYTES.describe()
        ) from None
    except RemoteHTTPError as exc:
        if spec.given != spec.repo:
            raise
        # A bare ORG/NAME that is no local path and that the Hub did not answer for: whatever
        # went wrong (not found, no connection, a deadline), say both readings.
        raise _neither(spec, f"{exc.reason} ({exc.url})", exc.hint) from None
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


def _neither(spec: RemoteSpec, why: str, hint: str | None) -> CheckpointNotFoundError:
    """A bare ``ORG/NAME``: no such local path (nor ``ORG``), and the Hub repository failed."""
    org = spec.given.split("/", 1)[0]
    return CheckpointNotFoundError(
        spec.given,
        f"no local file or directory of that name (nor {org!r}), and the Hub repository "
        f"{spec.repo} could not be read: {why}",
        hint=(f"{hint}; " if hint else "") + "if you meant a local path, check its spelling",
    )


def _wanted(options: RemoteOptions) -> Callable[[TensorInfo], bool] | None:
    return kv_scale_candidate if options.prefetch_scales else None


def _open_url(spec: RemoteSpec, progress: ProgressFn | None, options: RemoteOptions) -> Checkpoint:
    assert spec.url is not None and spec.file is not None
    if is_offline():
        raise offline_error(short_url(spec.url))
    http = HttpClient(options, token=None, endpoint=hub_endpoint())
    named = spec.url

    def url_of(name: str) -> str:
        return named if name == spec.file else urljoin(named, url_quote(name, safe=""))

    directory = short_url(named).rsplit("/", 1)[0]
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
        if part.parent.name == "snapshots" and SHA.fullmatch(part.name):
            return part.name
    return None


def _parse_revision_answer(url: str, raw: bytes, revision: str) -> tuple[str, list[str]]:
    where = short_url(url)
    try:
        doc = parse_json_bytes(raw)
    except (ValueError, RecursionError) as exc:
        raise InputError(where, f"the Hub's answer {json_error_text(exc)}") from None
    if not isinstance(doc, dict):
        raise InputError(where, "the Hub's answer is not a JSON object")
    sha = doc.get("sha")
    if not isinstance(sha, str) or not SHA.fullmatch(sha):
        raise InputError(where, f"the Hub's answer has no commit sha (sha: {quote(sha, 60)})")
    if SHA.fullmatch(revision) and sha != revision:
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
