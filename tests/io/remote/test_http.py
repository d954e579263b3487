"""kvscale.io.remote.http against hostile servers (tests/support/hub_server.py's ``Hostile``):
ignored ranges, short and long bodies, inconsistent Content-Range, timeouts, rate limits,
retries, redirect loops, gzip, HTTP errors; each one typed error naming the URL within a bounded
time."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest
from support.hub_server import Hostile, HubServer
from support.paths import ROOT
from support.remote import BIG, document, remote_report

from kvscale.core.inspect import inspect_checkpoint
from kvscale.errors import ExitCode, InputError, KVScaleError
from kvscale.io.remote.http import RemoteOptions

pytest.importorskip("huggingface_hub")


SLOW = pytest.mark.slow


@pytest.mark.parametrize(
    ("hostile", "error", "message"),
    [
        (Hostile(ignore_range=True), InputError, r"ignored the byte range \(HTTP 200"),
        (
            Hostile(ignore_range=True, no_length=True),
            InputError,
            r"ignored the byte range \(HTTP 200 for",
        ),
        (Hostile(short_body=True), InputError, r"connection failed"),
        (Hostile(short_consistent=True), InputError, r"inconsistent Content-Range"),
        (Hostile(long_body=True), InputError, r"longer than the \d[\d,]* bytes asked for"),
        (Hostile(content_range_shift=8), InputError, r"inconsistent Content-Range"),
        (Hostile(content_range_total=10), InputError, r"inconsistent Content-Range"),
        # (the two timeouts wait out theirs: with -m slow)
        pytest.param(
            Hostile(slow=5.0), InputError, r"no answer within 2 s \(timed out\)", marks=SLOW
        ),
        pytest.param(
            Hostile(stall_body=5.0), InputError, r"no answer within 2 s \(timed out\)", marks=SLOW
        ),
        (Hostile(status=429, retry_after="0"), InputError, r"rate limited \(HTTP 429\) after 3"),
        (
            Hostile(status=429, retry_after="120"),
            InputError,
            r"retry after 120 s, longer than kvscale waits",
        ),
        (Hostile(status=503), InputError, r"HTTP 503 after 3 attempts"),
        (Hostile(status=500, match=""), InputError, r"HTTP 500 after 3 attempts"),
        (Hostile(redirect_loop=True), InputError, r"more than 5 redirects"),
        (Hostile(gzip=True), InputError, r"gzip'-encoded body"),
        (Hostile(status=403), InputError, r"access denied \(HTTP 403\)"),
        (Hostile(status=404), InputError, r"not found \(HTTP 404\)"),
        (Hostile(status=401), InputError, r"authentication required \(HTTP 401\)"),
    ],
    ids=[
        "200-not-206",
        "200-no-length",
        "short-body",
        "short-content-length",
        "long-body",
        "content-range-start",
        "content-range-total",
        "slow-server",
        "stalled-body",
        "429-storm",
        "429-retry-after-too-long",
        "503-storm",
        "500-everywhere",
        "redirect-loop",
        "gzip",
        "403",
        "404",
        "401",
    ],
)
def test_hostile_server(
    hub: HubServer,
    big_checkpoint: Path,
    fast: RemoteOptions,
    hostile: Hostile,
    error: type[KVScaleError],
    message: str,
) -> None:
    hub.add_repo(BIG, big_checkpoint)
    hub.hostile = hostile
    start = time.monotonic()
    with pytest.raises(error, match=message) as info:
        remote_report(f"hf://{BIG}", options=fast)
    elapsed = time.monotonic() - start
    assert elapsed < 4.5, elapsed
    line = info.value.one_line()
    assert hub.url in line and "\n" not in line
    assert info.value.exit_code == ExitCode.USAGE


@pytest.mark.slow  # waits the one second the server asks for
def test_retry_after_is_honoured(hub: HubServer) -> None:
    hub.add_repo("org/repo", ROOT / "examples" / "modelopt-fp8")
    hub.hostile = Hostile(status=429, retry_after="1", match="", times=1)
    start = time.monotonic()
    remote_report("hf://org/repo", options=RemoteOptions(backoff=0.01))
    assert time.monotonic() - start >= 0.9
    assert [r.status for r in hub.log][:2] == [429, 200]


def test_transient_errors_are_retried(hub: HubServer, fast: RemoteOptions) -> None:
    directory = ROOT / "examples" / "modelopt-fp8"
    hub.add_repo("org/repo", directory)
    hub.hostile = Hostile(status=503, times=2)
    _, report = remote_report("hf://org/repo", options=fast)
    assert document(report) == document(inspect_checkpoint(directory))
    assert Counter(r.status for r in hub.log)[503] == 2


def test_retry_waits_leave_the_global_random_state_alone(
    hub: HubServer, fast: RemoteOptions
) -> None:
    """The jitter has a generator of its own: a reader thread drawing from the global one
    changed the state under hypothesis in another test of the same worker (a flaky failure)."""
    import random

    hub.add_repo("org/repo", ROOT / "examples" / "modelopt-fp8")
    hub.hostile = Hostile(status=503, times=2)
    before = random.getstate()
    remote_report("hf://org/repo", options=fast)
    assert Counter(r.status for r in hub.log)[503] == 2
    assert random.getstate() == before
