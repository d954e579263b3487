"""A Hub that sends its answers a byte at a time: every remote read ends at its deadline.

A read timeout bounds each wait for one byte; a server that sends a byte every 0.2 s never
trips it, and kvscale kept reading a 1 KB config.json for minutes with nothing on stderr. Now
each read has an overall deadline (limit ``remote-read-seconds``, ``KVSCALE_REMOTE_READ_SECONDS``)
and the one-line error names the repository and the file.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from support.hub_server import Hostile, HubServer
from support.many_names import cpu_seconds
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.errors import InputError
from kvscale.io.remote.http import RemoteOptions
from kvscale.io.remote.source import open_remote

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _inspect_trickled(hub: HubServer, hostile: Hostile, monkeypatch: pytest.MonkeyPatch) -> Any:
    hub.add_repo("org/repo", ROOT / "examples" / "modelopt-fp8")
    hub.hostile = hostile
    monkeypatch.setenv("KVSCALE_REMOTE_READ_SECONDS", "1")
    start = time.monotonic()
    with cpu_seconds(30):  # (its wall-clock guard: before, this ran for minutes)
        result = runner.invoke(app, ["inspect", "hf://org/repo"])
    return result, time.monotonic() - start


def test_a_body_sent_a_byte_at_a_time_ends_at_the_deadline(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, elapsed = _inspect_trickled(hub, Hostile(match="config.json", trickle=0.2), monkeypatch)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    err = result.stderr
    assert err.startswith(f"kvscale: error: {hub.url}/org/repo/resolve/") and err.count("\n") == 1
    assert "/config.json: no complete answer within 1 s; " in err
    assert "bytes of the answer came" in err
    assert (
        "(limit remote-read-seconds = 1 seconds for one remote read (its redirects, retries and "
        "whole answer); set KVSCALE_REMOTE_READ_SECONDS to raise it)" in err
    )
    assert elapsed < 8, elapsed


def test_a_status_line_sent_a_byte_at_a_time_ends_at_the_deadline(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No response even starts (the headers trickle): the caller still stops waiting."""
    result, elapsed = _inspect_trickled(hub, Hostile(match="", trickle_head=0.2), monkeypatch)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(
        f"kvscale: error: {hub.url}/api/models/org/repo/revision/main: no complete answer "
        "within 1 s (the server is too slow, or sends its answer a little at a time)"
    )
    assert elapsed < 8, elapsed


def test_a_trickled_shard_header_ends_at_the_callers_deadline(hub: HubServer) -> None:
    """The Python API's own deadline (``RemoteOptions.request_timeout``), for a shard."""
    hub.add_repo("org/repo", ROOT / "examples" / "modelopt-fp8")
    hub.hostile = Hostile(match="model-00002-of-00002.safetensors", trickle=0.1)
    start = time.monotonic()
    with cpu_seconds(30), pytest.raises(InputError) as info:
        open_remote("hf://org/repo", None, None, options=RemoteOptions(request_timeout=1.0))
    line = info.value.one_line()
    assert "/org/repo/resolve/" in line and "/model-00002-of-00002.safetensors: " in line
    assert "no complete answer within 1 s" in line and "a deadline set by the caller" in line
    assert time.monotonic() - start < 6


def test_a_slow_but_steady_answer_within_the_deadline_is_read(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is for the whole read, not a guess about speed: a trickle that ends in
    time is a good answer."""
    hub.add_repo("org/repo", ROOT / "examples" / "modelopt-fp8")
    hub.hostile = Hostile(match="", trickle_head=0.001, times=3)
    result = runner.invoke(app, ["inspect", "hf://org/repo", "--json"])
    assert result.exit_code == 0, result.output
