"""The HTTP client remote reads go through: ranged GETs checked against ``Content-Range``,
redirects followed by kvscale (the token only to the Hub's own origin), retries of 429 and 5xx
with backoff honouring ``Retry-After``, timeouts, and one-line errors naming the URL.

Every read has an overall deadline (limit ``remote-read-seconds``): httpx's timeouts bound each
wait for a byte, never a whole answer (a server that sends one byte every few seconds, status
line and headers included, passes them all). A read runs in a thread of its own, and the caller
stops waiting at the deadline whatever that thread is blocked in; the thread, told it was given
up, ends at its next byte.
"""

from __future__ import annotations

import os
import random
import re
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from kvscale.errors import (
    EnvironmentMissingError,
    InputError,
)
from kvscale.io.remote.urls import origin, short_url
from kvscale.io.safetensors import quote
from kvscale.limits import REMOTE_READ_SECONDS

_JITTER = random.Random()
"""The retry waits' jitter, from a generator of its own: a library's reader threads must not
move the process's global random state (a program seeding ``random`` for its own draws, or
hypothesis, which fails a test whose global state changes while it draws examples)."""

_REDIRECTS = frozenset([301, 302, 303, 307, 308])


_RETRY_STATUS = frozenset([429, 500, 502, 503, 504])
"""What huggingface_hub's ``http_backoff`` retries (``utils/_http.py``), minus 408."""


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


_UNSATISFIED_RANGE = re.compile(r"bytes \*/(\d+)")


@dataclass(frozen=True)
class RemoteOptions:
    """Transport bounds; the defaults suit the Hub, tests pass small ones."""

    concurrency: int = 16
    connect_timeout: float = 10.0
    read_timeout: float | None = None
    """Longest wait for any byte (None: huggingface_hub's ``HF_HUB_DOWNLOAD_TIMEOUT``, 10 s)."""
    request_timeout: float | None = None
    """Longest time for one read: its redirects, retries and whole answer (None: the limit
    ``remote-read-seconds``, ``KVSCALE_REMOTE_READ_SECONDS``)."""
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


class _Read:
    """One read in flight: its deadline, and what the caller and its thread tell each other."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.finished = threading.Event()
        self.given_up = threading.Event()
        """Set by the caller at the deadline (or when the run stops): the thread stops."""
        self.received = 0
        """Body bytes received so far (for the deadline's message)."""


class TooLong(Exception):
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


class HttpClient:
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
        given = options.request_timeout
        self.deadline = float(REMOTE_READ_SECONDS.value()) if given is None else given
        """Seconds one read may take, all of it."""
        self._deadline_hint = (
            REMOTE_READ_SECONDS.describe() if given is None else "a deadline set by the caller"
        )
        self._timeout = httpx2.Timeout(
            connect=options.connect_timeout, read=read, write=read, pool=self.deadline
        )
        self._token = token
        self._hub_origin = origin(endpoint)
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
        if self._token is not None and origin(url) == self._hub_origin:
            headers["Authorization"] = f"Bearer {self._token}"
        return headers

    def get(self, url: str, *, byte_range: tuple[int, int] | None, cap: int) -> _Reply:
        """One logical GET: redirects followed, 429/5xx and dropped connections retried, all
        within ``deadline`` seconds.

        Returns 2xx and 416 answers; raises ``RemoteHTTPError`` for the others and at the
        deadline, ``TooLong`` when the body would pass ``cap`` bytes (nothing past ``cap`` is
        read).
        """
        read = _Read(time.monotonic() + self.deadline)
        outcome: list[_Reply | BaseException] = []

        def run() -> None:
            try:
                outcome.append(self._get(url, byte_range, cap, read))
            except BaseException as exc:  # handed to the caller, which raises it
                outcome.append(exc)
            finally:
                read.finished.set()

        threading.Thread(target=run, name="kvscale-http-read", daemon=True).start()
        while not read.finished.wait(min(0.1, max(0.0, read.deadline - time.monotonic()))):
            if self.stop.is_set():
                read.given_up.set()
                raise _Cancelled()
            if time.monotonic() >= read.deadline:
                read.given_up.set()
                n = read.received
                got = f"; {n:,} byte{'s' if n != 1 else ''} of the answer came" if n else ""
                raise RemoteHTTPError(
                    short_url(url),
                    f"no complete answer within {self.deadline:g} s{got} (the server is too "
                    "slow, or sends its answer a little at a time)",
                    hint=self._deadline_hint,
                )
        result = outcome[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def _get(self, url: str, byte_range: tuple[int, int] | None, cap: int, read: _Read) -> _Reply:
        current = url
        hops = attempt = 0
        waited = 0.0
        httpx = self._httpx
        while True:
            if self.stop.is_set() or read.given_up.is_set():
                raise _Cancelled()
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
                        wait = self._retry_wait(
                            url, status, response.headers, attempt, waited, read.deadline
                        )
                    else:
                        if status >= 400 and status != 416:
                            raise _status_error(url, status, response.headers)
                        return self._read(current, response, status, cap, read)
            except httpx.TimeoutException:
                raise RemoteHTTPError(
                    short_url(url),
                    f"no answer within {self.read_timeout:g} s (timed out)",
                    hint="the server is slow or unreachable; try again later",
                ) from None
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
                reason = " ".join(str(exc).split())[:160] or type(exc).__name__
                if attempt >= self.options.retries:
                    raise RemoteHTTPError(short_url(url), f"connection failed: {reason}") from None
                wait = min(self.options.backoff * 2**attempt, self.options.max_retry_wait)
            except httpx.HTTPError as exc:
                reason = " ".join(str(exc).split())[:160] or type(exc).__name__
                raise RemoteHTTPError(short_url(url), f"request failed: {reason}") from None
            except self._offline_error:
                raise offline_error(url) from None
            assert wait is not None
            attempt += 1
            waited += wait
            if self.stop.wait(wait * _JITTER.uniform(0.9, 1.1)) or read.given_up.is_set():
                raise _Cancelled()

    def _redirect(
        self, url: str, current: str, headers: Mapping[str, str], hops: int, status: int
    ) -> str:
        location = headers.get("location")
        if not location:
            raise RemoteHTTPError(
                short_url(url), f"HTTP {status} redirect without a Location", status=status
            )
        target = urljoin(current, location)
        if urlsplit(target).scheme.lower() not in ("http", "https"):
            raise RemoteHTTPError(
                short_url(url), f"redirect to a non-HTTP URL {quote(target, 80)}", status=status
            )
        if hops > self.options.max_redirects:
            raise RemoteHTTPError(
                short_url(url),
                f"more than {self.options.max_redirects} redirects (the last to "
                f"{short_url(target, 100)})",
                status=status,
                hint="the server redirects in a loop",
            )
        return target

    def _retry_wait(
        self,
        url: str,
        status: int,
        headers: Mapping[str, str],
        attempt: int,
        waited: float,
        deadline: float,
    ) -> float:
        options = self.options
        asked = _retry_after(headers.get("retry-after"))
        wait = asked if asked is not None else options.backoff * 2**attempt
        what = "rate limited (HTTP 429)" if status == 429 else f"HTTP {status}"
        if asked is not None and time.monotonic() + min(asked, options.max_retry_wait) > deadline:
            raise RemoteHTTPError(
                short_url(url),
                f"{what}; the server asks to retry after {asked:g} s, past this read's "
                f"deadline ({self.deadline:g} s)",
                status=status,
                hint="try again later; " + self._deadline_hint,
            )
        if asked is not None and asked > options.max_retry_wait:
            raise RemoteHTTPError(
                short_url(url),
                f"{what}; the server asks to retry after {asked:g} s, longer than kvscale "
                f"waits ({options.max_retry_wait:g} s)",
                status=status,
                hint="try again later",
            )
        if attempt >= options.retries or waited + wait > options.retry_budget:
            raise RemoteHTTPError(
                short_url(url),
                f"{what} after {attempt + 1} attempts over {waited:.1f} s",
                status=status,
                hint="the server is overloaded or rate-limits you; try again later",
            )
        return min(wait, options.max_retry_wait)

    def _read(self, url: str, response: Any, status: int, cap: int, read: _Read) -> _Reply:
        encoding = response.headers.get("content-encoding")
        if encoding and encoding.strip().lower() != "identity":
            raise RemoteHTTPError(
                short_url(url),
                f"the server sent a {quote(encoding, 30)}-encoded body although kvscale asked "
                "for identity; offsets into an encoded body are not file offsets",
                status=status,
            )
        length = response.headers.get("content-length")
        declared: int | None = None
        if length is not None:
            if not length.strip().isdigit() or len(length) > 20:
                raise RemoteHTTPError(
                    short_url(url), f"invalid Content-Length {quote(length, 30)}", status=status
                )
            declared = int(length)
            if declared > cap:
                raise TooLong(status, declared)
        chunks: list[bytes] = []
        received = 0
        # Each piece as it arrives (no chunk size: httpx would wait for 64 KiB), so that a
        # given-up read ends at its next byte.
        for chunk in response.iter_raw():
            received += len(chunk)
            read.received = received
            self._count(nbytes=len(chunk))
            if received > cap:
                raise TooLong(status, declared)
            chunks.append(chunk)
            if self.stop.is_set() or read.given_up.is_set():
                raise _Cancelled()
        body = b"".join(chunks)
        if declared is not None and len(body) != declared:
            raise RemoteHTTPError(
                short_url(url),
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
        except TooLong as exc:
            size = f" ({exc.declared:,} bytes)" if exc.declared is not None else ""
            if exc.status == 200:
                raise RemoteHTTPError(
                    short_url(url),
                    f"the server ignored the byte range (HTTP 200{size} for bytes={start}-{end}, "
                    f"more than the {asked:,} bytes asked for)",
                    status=200,
                    hint="kvscale needs a server that answers Range requests",
                ) from None
            raise RemoteHTTPError(
                short_url(url),
                f"HTTP {exc.status} body{size} longer than the {asked:,} bytes asked for "
                f"(bytes={start}-{end})",
                status=exc.status,
            ) from None
        where = short_url(reply.url)
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
        """A whole (small) file (None on 404 when ``missing_ok``); ``TooLong`` past ``cap``."""
        try:
            reply = self.get(url, byte_range=None, cap=cap)
        except RemoteHTTPError as exc:
            if exc.status == 404 and missing_ok:
                return None
            raise
        if reply.status != 200:
            raise RemoteHTTPError(
                short_url(reply.url), f"HTTP {reply.status} (expected 200)", status=reply.status
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
    where = short_url(url)
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


def is_offline() -> bool:
    from huggingface_hub import constants

    # constants reads HF_HUB_OFFLINE once, at import; the environment as it is now counts too,
    # so that offline is never missed (huggingface_hub's session refuses requests on the former).
    env = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return bool(constants.HF_HUB_OFFLINE) or env.strip().upper() in ("1", "ON", "YES", "TRUE")
