"""A loopback stand-in for the Hugging Face Hub: the endpoints kvscale reads, with Range support.

    server = HubServer(rtt=0.02)            # 127.0.0.1, an ephemeral port, a thread per connection
    sha = server.add_repo("org/name", some_directory)
    with server:
        os.environ["HF_ENDPOINT"] = server.url
        ...

Endpoints (what the Hub serves, as huggingface_hub 2.4.0 calls them):

* ``GET /api/models/{org}/{name}/revision/{rev}`` -> ``{"id", "sha", "siblings": [{"rfilename"}]}``
  (``HfApi.model_info``); ``rev`` is a branch of the repo or its sha.
* ``GET|HEAD /{org}/{name}/resolve/{rev}/{path}``: the file, with ``Range: bytes=a-b`` / ``a-`` /
  ``-n`` answered by 206 and ``Content-Range``, 416 past the end; ``X-Repo-Commit``, ``ETag``
  and ``Accept-Ranges`` as the Hub sends them. With ``cdn=True`` the ``*.safetensors`` files are
  redirected (302) to a second server on another port, as the Hub redirects LFS files to its CDN,
  so the redirect leaves the Hub's origin (and the token must not follow it).

Repositories are directories (``add_repo``); files are read with ``os.pread``, so sparse
checkpoints of hundreds of GB cost nothing. Access rules: a repo may be ``gated`` or
``private``; a token is valid when it is in ``tokens``. Responses mirror the Hub's codes:
missing repo 401 (no token) or 404 with ``X-Error-Code: RepoNotFound``, gated 401/403 with
``GatedRepo``, an unknown token 401 with ``X-Error-Message: Invalid credentials in Authorization
header``.

``rtt``: a simulated round trip, slept before every response; ``window``: when set, the body is
sent ``window`` bytes per round trip (the bandwidth-delay product of one TCP connection: a
64 KiB window over 20 ms is 3.2 MB/s), so that large responses cost more round trips, as on a
real link; ``mbit``: when set, all bodies share one link of that many Mbit/s. ``stats`` counts
requests and body bytes (both servers together); ``log`` keeps one ``Request`` per request.

``hostile`` (a ``Hostile``, mutable while the server runs) breaks the answers for files whose
path ends with ``hostile.match``: 200 instead of 206, short or overlong bodies, a wrong
Content-Range, a stalled server, 429 storms with Retry-After, a status for every request, a
redirect loop, a gzip-encoded body. ``hostile.times`` limits how many answers are broken.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import quote, unquote, urlsplit

_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
BAD_TOKEN_MESSAGE = "Invalid credentials in Authorization header"


@dataclass
class Hostile:
    """How the server misbehaves (all off by default). Applies to resolve requests whose path
    ends with ``match`` (``""``: every request, the API included)."""

    match: str = ".safetensors"
    times: int | None = None
    """Break only this many answers, then behave (None: every answer)."""
    ignore_range: bool = False
    """200 with the whole file instead of 206."""
    short_body: bool = False
    """206, honest headers, but half the body and then the connection closes."""
    short_consistent: bool = False
    """206 whose Content-Length matches a body shorter than its Content-Range says."""
    long_body: bool = False
    """206 with 4096 bytes more than the range (Content-Length says so too)."""
    content_range_shift: int = 0
    """Content-Range claims a start this many bytes off (the body is the right one)."""
    content_range_total: int | None = None
    """Content-Range claims this total file size."""
    slow: float = 0.0
    """Seconds to wait before answering (a stalled server)."""
    stall_body: float = 0.0
    """Seconds to wait after the headers, before the body."""
    status: int | None = None
    """Answer every request with this status (e.g. 503, 401, 403, 404)."""
    retry_after: str | None = None
    """Retry-After header sent with ``status`` (e.g. ``"1"``)."""
    redirect_loop: bool = False
    """302 to the same URL, forever."""
    gzip: bool = False
    """``Content-Encoding: gzip`` on a plain body."""
    no_length: bool = False
    """No Content-Length: the body ends when the connection closes."""
    trickle: float = 0.0
    """Seconds between bytes: the body (the API's JSON too, with ``match=""``) goes out one byte
    at a time, never stalling as long as a read timeout."""
    trickle_head: float = 0.0
    """The same for the status line and headers: no response even starts."""


@dataclass
class Repo:
    directory: Path
    sha: str
    refs: dict[str, str]
    access: str = "public"
    """``public``, ``gated`` (needs a granted token) or ``private`` (looks missing without one)."""
    granted: frozenset[str] = frozenset()


@dataclass
class Request:
    method: str
    path: str
    server: str
    """``hub`` or ``cdn``."""
    range: str | None
    authorization: str | None
    accept_encoding: str | None
    user_agent: str | None
    status: int = 0
    sent: int = 0
    """Body bytes sent. Counters and ``status`` are updated before the bytes go out, so that a
    client that has its answer never sees them behind."""


@dataclass
class Stats:
    requests: int = 0
    bytes: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


class HubServer:
    def __init__(
        self,
        *,
        rtt: float = 0.0,
        window: int = 0,
        mbit: float = 0.0,
        cdn: bool = False,
        tokens: frozenset[str] = frozenset(),
    ) -> None:
        self.rtt = rtt
        self.window = window
        self.rate = mbit * 1e6 / 8
        self._link_free = 0.0
        self.tokens = tokens
        self.repos: dict[str, Repo] = {}
        self.hostile = Hostile()
        self.stats = Stats()
        self.log: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._hub = self._make_server("hub")
        self._cdn = self._make_server("cdn") if cdn else None
        self._threads: list[threading.Thread] = []

    # --- setup ------------------------------------------------------------------------------

    def add_repo(
        self,
        repo_id: str,
        directory: Path,
        *,
        sha: str | None = None,
        branches: tuple[str, ...] = ("main",),
        access: str = "public",
        granted: frozenset[str] = frozenset(),
    ) -> str:
        """Serve ``directory`` as ``repo_id``; returns its commit sha (made up from the name)."""
        sha = sha or hashlib.sha1(f"{repo_id}\0{directory}".encode()).hexdigest()
        self.repos[repo_id] = Repo(
            Path(directory), sha, dict.fromkeys(branches, sha), access, frozenset(granted)
        )
        return sha

    @property
    def url(self) -> str:
        host, port = self._hub.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def cdn_url(self) -> str | None:
        if self._cdn is None:
            return None
        host, port = self._cdn.server_address[:2]
        return f"http://{host}:{port}"

    def reset(self) -> None:
        """Clear the counters, the log and the hostile mode."""
        with self._lock:
            self.stats = Stats()
            self.log = []
            self.hostile = Hostile()

    # --- life cycle -------------------------------------------------------------------------

    def start(self) -> HubServer:
        for server in (self._hub, self._cdn):
            if server is None:
                continue
            thread = threading.Thread(
                target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        for server in (self._hub, self._cdn):
            if server is not None:
                server.shutdown()
                server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- internals --------------------------------------------------------------------------

    def _make_server(self, kind: str) -> ThreadingHTTPServer:
        owner = self

        class Handler(_Handler):
            hub = owner
            server_kind = kind

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        return server

    def _record(self, request: Request) -> None:
        with self._lock:
            self.stats.requests += 1
            kind = request.server if request.server == "cdn" else _kind(request.path)
            self.stats.by_kind[kind] = self.stats.by_kind.get(kind, 0) + 1
            self.log.append(request)

    def _count_bytes(self, request: Request, n: int) -> None:
        with self._lock:
            request.sent += n
            self.stats.bytes += n

    def _take_hostile(self, path: str) -> Hostile | None:
        with self._lock:
            hostile = self.hostile
            if hostile == Hostile() or not path.endswith(hostile.match):
                return None
            if hostile.times is not None:
                if hostile.times <= 0:
                    return None
                hostile.times -= 1
            return hostile

    def _transmit(self, n: int) -> None:
        """Wait until the shared link has carried ``n`` more bytes."""
        with self._lock:
            now = time.monotonic()
            self._link_free = max(now, self._link_free) + n / self.rate
            done = self._link_free
        self._wait(done - now)

    def _wait(self, seconds: float) -> None:
        if seconds > 0:
            self._stop.wait(seconds)


def _kind(path: str) -> str:
    if path.startswith("/api/"):
        return "api"
    name = path.rsplit("/", 1)[-1]
    if name.endswith(".safetensors"):
        return "shard"
    return "json" if name.endswith(".json") else "other"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes; with Nagle on, the second waits for the client's delayed
    # ACK (40 ms on Linux) and every request would look like a long round trip.
    disable_nagle_algorithm = True
    hub: HubServer
    server_kind: str

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def handle(self) -> None:
        # A client that gives up (a timeout, a rejected answer) resets its connection: that is
        # what the hostile tests provoke, not a server error worth a traceback.
        try:
            super().handle()
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._serve(head=False)

    def do_HEAD(self) -> None:
        self._serve(head=True)

    # --- dispatch ---------------------------------------------------------------------------

    def _serve(self, *, head: bool) -> None:
        hub = self.hub
        path = urlsplit(self.path).path
        if path.startswith("/_hub/"):
            self._control(path)
            return
        hub._wait(hub.rtt)
        self._sent = 0
        self._entry = Request(
            self.command,
            path,
            self.server_kind,
            self.headers.get("Range"),
            self.headers.get("Authorization"),
            self.headers.get("Accept-Encoding"),
            self.headers.get("User-Agent"),
        )
        hub._record(self._entry)
        try:
            hostile = hub._take_hostile(path)
            if hostile is not None and hostile.slow:
                hub._wait(hostile.slow)
            if hostile is not None and hostile.status is not None:
                extra = {"Retry-After": hostile.retry_after} if hostile.retry_after else {}
                self._error(hostile.status, "hostile", extra)
            elif hostile is not None and hostile.redirect_loop:
                self._send(302, {"Location": self.path}, b"", head)
            elif self.server_kind == "cdn":
                self._cdn(path, head, hostile)
            elif path.startswith("/api/models/"):
                self._api(path, head, hostile)
            elif "/resolve/" in path:
                self._resolve(path, head, hostile)
            else:
                self._error(404, "not found")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _control(self, path: str) -> None:
        """``/_hub/stats`` (counters as JSON) and ``/_hub/reset``: for a server in another
        process (the benchmark); neither is counted nor delayed."""
        hub = self.hub
        if path == "/_hub/reset":
            hub.reset()
        with hub._lock:
            doc = {"requests": hub.stats.requests, "bytes": hub.stats.bytes}
            doc["by_kind"] = dict(hub.stats.by_kind)
        body = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _api(self, path: str, head: bool, hostile: Hostile | None) -> None:
        match = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/(.+)", path)
        if not match:
            self._error(404, "not found")
            return
        repo = self._repo(match.group(1))
        if repo is None:
            return
        revision = unquote(match.group(2))
        sha = repo.refs.get(revision) or (revision if revision == repo.sha else None)
        if sha is None:
            self._error(404, "revision not found", {"X-Error-Code": "RevisionNotFound"})
            return
        files = sorted(
            p.relative_to(repo.directory).as_posix()
            for p in repo.directory.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )
        doc = {
            "_id": hashlib.md5(match.group(1).encode()).hexdigest()[:24],
            "id": match.group(1),
            "sha": sha,
            "private": repo.access == "private",
            "gated": "manual" if repo.access == "gated" else False,
            "siblings": [{"rfilename": f} for f in files],
        }
        body = json.dumps(doc).encode()
        self._send(200, {"Content-Type": "application/json"}, body, head, hostile=hostile)

    def _resolve(self, path: str, head: bool, hostile: Hostile | None) -> None:
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if not match:
            self._error(404, "not found")
            return
        repo = self._repo(match.group(1))
        if repo is None:
            return
        revision = unquote(match.group(2))
        sha = repo.refs.get(revision) or (revision if revision == repo.sha else None)
        if sha is None:
            self._error(404, "revision not found", {"X-Error-Code": "RevisionNotFound"})
            return
        relative = unquote(match.group(3))
        file = self._file(repo, relative)
        if file is None:
            self._error(404, "entry not found", {"X-Error-Code": "EntryNotFound"})
            return
        size = file.stat().st_size
        etag = '"' + hashlib.sha1(f"{relative}\0{size}".encode()).hexdigest() + '"'
        common = {"X-Repo-Commit": sha, "ETag": etag, "Accept-Ranges": "bytes"}
        cdn = self.hub.cdn_url
        if cdn is not None and relative.endswith(".safetensors"):
            location = f"{cdn}/cdn/{match.group(1)}/{sha}/{quote(relative)}?signature=abc123"
            headers = {**common, "Location": location, "X-Linked-Size": str(size)}
            headers["X-Linked-Etag"] = etag
            self._send(302, headers, b"", head)
            return
        self._file_body(file, size, common, head, hostile)

    def _cdn(self, path: str, head: bool, hostile: Hostile | None) -> None:
        match = re.fullmatch(r"/cdn/([^/]+/[^/]+)/([0-9a-f]{40})/(.+)", path)
        repo = self.hub.repos.get(match.group(1)) if match else None
        file = self._file(repo, unquote(match.group(3))) if repo and match else None
        if file is None:
            self._error(404, "not found")
            return
        self._file_body(file, file.stat().st_size, {"Accept-Ranges": "bytes"}, head, hostile)

    # --- helpers ----------------------------------------------------------------------------

    def _repo(self, repo_id: str) -> Repo | None:
        """The repo if this request may see it; otherwise the Hub's error is sent."""
        auth = self.headers.get("Authorization")
        token = auth.removeprefix("Bearer ").strip() if auth else None
        if token is not None and token not in self.hub.tokens:
            self._error(401, "bad token", {"X-Error-Message": BAD_TOKEN_MESSAGE})
            return None
        repo = self.hub.repos.get(repo_id)
        if repo is None or (repo.access == "private" and token not in repo.granted):
            self._error(
                401 if token is None else 404,
                "repository not found",
                {"X-Error-Code": "RepoNotFound"},
            )
            return None
        if repo.access == "gated" and token not in repo.granted:
            self._error(
                401 if token is None else 403,
                "gated repository",
                {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model is restricted"},
            )
            return None
        return repo

    @staticmethod
    def _file(repo: Repo | None, relative: str) -> Path | None:
        if repo is None or ".." in relative.split("/") or relative.startswith("/"):
            return None
        file = repo.directory / relative
        return file if file.is_file() else None

    def _file_body(
        self, file: Path, size: int, headers: dict[str, str], head: bool, hostile: Hostile | None
    ) -> None:
        h = hostile or Hostile()
        wanted = self.headers.get("Range")
        span: tuple[int, int] | None = None
        if wanted is not None and not h.ignore_range:
            match = _RANGE.fullmatch(wanted.strip())
            if match is None:
                self._error(400, "unsupported Range")
                return
            first, last = match.group(1), match.group(2)
            if first == "":
                start, end = max(0, size - int(last or 0)), size - 1
            else:
                start = int(first)
                end = min(int(last), size - 1) if last else size - 1
            if start >= size or end < start:
                self._send(416, {**headers, "Content-Range": f"bytes */{size}"}, b"", head)
                return
            span = (start, end)
        start, end = span if span is not None else (0, size - 1)
        length = end - start + 1 if size else 0
        out = dict(headers)
        if h.gzip:
            out["Content-Encoding"] = "gzip"
        status = 200
        if span is not None:
            status = 206
            total = size if h.content_range_total is None else h.content_range_total
            shift = h.content_range_shift
            out["Content-Range"] = f"bytes {start + shift}-{end + shift}/{total}"
        declared = length
        sent = length
        extra = 0
        if h.long_body:
            extra = 4096
            declared += extra
        if h.short_consistent:
            declared = sent = length // 2
        truncate = None
        if h.short_body:
            sent = length // 2
            truncate = sent
        chunks = _file_chunks(file, start, sent, extra)
        length_header: int | None = declared
        if h.no_length:
            length_header, truncate = None, sent
        self._send(
            status,
            out,
            chunks,
            head,
            length=length_header,
            truncate=truncate,
            stall=h.stall_body,
            hostile=hostile,
        )

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        head = self.command == "HEAD"
        self._send(status, {"Content-Type": "application/json", **(headers or {})}, body, head)

    def _send(
        self,
        status: int,
        headers: dict[str, str],
        body: bytes | Iterator[bytes],
        head: bool,
        *,
        length: int | None = -1,
        truncate: int | None = None,
        stall: float = 0.0,
        hostile: Hostile | None = None,
    ) -> None:
        """Headers, then the body (bytes or chunks; ``length``: the Content-Length to claim,
        -1 for the length of a bytes body, None for none); ``truncate``: close the connection
        after this many body bytes, whatever was claimed; ``hostile``: its trickles."""
        if isinstance(body, bytes):
            length = len(body) if length == -1 else length
            body = iter([body])
        self._entry.status = status
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        if length is not None:
            self.send_header("Content-Length", str(max(length, 0)))
        else:
            self.send_header("Connection", "close")
        hub = self.hub
        if hostile is not None and hostile.trickle_head:
            head_bytes = b"".join(self._headers_buffer) + b"\r\n"
            self._headers_buffer = []
            self._trickle(head_bytes, hostile.trickle_head, body=False)
        else:
            self.end_headers()
        if head:
            return
        if stall:
            self.wfile.flush()
            hub._wait(stall)
        for chunk in body:
            if hostile is not None and hostile.trickle:
                self._trickle(chunk, hostile.trickle)
            else:
                self._write_paced(chunk)
            if hub._stop.is_set():
                break
        if truncate is not None:
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _trickle(self, data: bytes, seconds: float, *, body: bool = True) -> None:
        """``data`` one byte at a time, ``seconds`` apart (until the server stops)."""
        hub = self.hub
        for i in range(len(data)):
            if hub._stop.is_set():
                return
            if body:
                hub._count_bytes(self._entry, 1)
                self._sent += 1
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            hub._wait(seconds)

    def _write_paced(self, chunk: bytes) -> None:
        """Write one chunk; with a window, one window per round trip (the first one free, as
        it travels with the headers); with a link rate, no faster than the shared link."""
        hub = self.hub
        window = hub.window
        if not window and not hub.rate:
            hub._count_bytes(self._entry, len(chunk))
            self._sent += len(chunk)
            self.wfile.write(chunk)
            return
        step = window or 1 << 16
        offset = 0
        while offset < len(chunk):
            if window and self._sent and self._sent % window == 0:
                self.wfile.flush()
                hub._wait(hub.rtt)
            room = step - self._sent % step if window else step
            piece = chunk[offset : offset + room]
            if hub.rate:
                hub._transmit(len(piece))
            hub._count_bytes(self._entry, len(piece))
            self._sent += len(piece)
            self.wfile.write(piece)
            offset += len(piece)


def _file_chunks(file: Path, start: int, length: int, extra: int) -> Iterator[bytes]:
    """``length`` bytes of ``file`` from ``start``, 1 MiB at a time, then ``extra`` zero bytes."""
    with open(file, "rb") as f:
        position, left = start, length
        while left > 0:
            data = os.pread(f.fileno(), min(left, 1 << 20), position)
            if not data:
                break
            yield data
            position += len(data)
            left -= len(data)
    if extra:
        yield b"\0" * extra


def main(argv: list[str] | None = None) -> None:
    """Serve repositories from another process: ``python hub_server.py --rtt 0.02 ORG/NAME=DIR``.

    Prints the URL on one line, then serves until stdin closes.
    """
    import argparse
    import sys

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("repos", nargs="+", metavar="ORG/NAME=DIR")
    parser.add_argument("--rtt", type=float, default=0.0, help="simulated round trip, seconds")
    parser.add_argument("--window", type=int, default=0, help="body bytes per round trip")
    parser.add_argument("--mbit", type=float, default=0.0, help="shared link rate, Mbit/s")
    parser.add_argument("--cdn", action="store_true", help="redirect shards to a second port")
    args = parser.parse_args(argv)
    server = HubServer(rtt=args.rtt, window=args.window, mbit=args.mbit, cdn=args.cdn)
    for item in args.repos:
        repo, _, directory = item.partition("=")
        server.add_repo(repo, Path(directory))
    with server:
        print(server.url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
