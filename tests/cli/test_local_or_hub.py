"""A bare ORG/NAME: a local path or a Hub repository, and what the error says for each.

The rule (README, "Remote checkpoints"): a local path when it exists or when ORG exists in the
current directory (a mistyped path never becomes a Hub request); otherwise a Hub repository,
and when the Hub cannot answer, the error names both readings.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
from support.hub_server import HubServer
from typer.testing import CliRunner

from kvscale.cli import app
from kvscale.io.remote import source as remote_source
from kvscale.io.remote.http import RemoteOptions

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _one_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    err: str = result.stderr
    assert err.count("\n") == 1 and err.startswith("kvscale: error: "), err
    return err


def test_a_mistyped_local_path_is_reported_as_one_without_a_request(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my" / "llama2").mkdir(parents=True)
    hub.add_repo("my/llama2x", ROOT / "examples" / "modelopt-fp8")  # the Hub would have it
    err = _one_line(runner.invoke(app, ["inspect", "my/llama2x"]))
    assert err == (
        "kvscale: error: my/llama2x: no such file or directory; did you mean my/llama2? (read "
        "as a local path because 'my' exists here; for the Hub repository my/llama2x, write "
        "hf://my/llama2x)\n"
    )
    assert hub.stats.requests == 0


def test_hf_scheme_asks_the_hub_whatever_exists_here(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my" / "llama2").mkdir(parents=True)
    hub.add_repo("my/llama2x", ROOT / "examples" / "modelopt-fp8")
    result = runner.invoke(app, ["inspect", "hf://my/llama2x", "--json"])
    assert result.exit_code == 0, result.output
    assert hub.stats.requests > 0


def test_a_name_the_hub_does_not_have_names_both_readings(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    err = _one_line(runner.invoke(app, ["inspect", "typo/model"]))
    assert err.startswith(
        "kvscale: error: typo/model: no local file or directory of that name (nor 'typo'), and "
        "the Hub repository typo/model could not be read: repository not found, or private and "
        f"not visible to you (HTTP 401) ({hub.url}/api/models/typo/model/revision/main) ("
    )
    assert err.endswith("; if you meant a local path, check its spelling)\n")


def test_no_connection_names_both_readings(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The report in the issue: 'connection failed' and nothing about the local path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard: nothing listens
    # (Refused connections are retried with backoff, seconds by default: one quick retry here.)
    fast = functools.partial(RemoteOptions, retries=1, backoff=0.01)
    monkeypatch.setattr(remote_source, "RemoteOptions", fast)
    err = _one_line(runner.invoke(app, ["inspect", "typo/model"]))
    assert err.startswith(
        "kvscale: error: typo/model: no local file or directory of that name (nor 'typo'), and "
        "the Hub repository typo/model could not be read: connection failed: "
    )
    assert "(http://127.0.0.1:9/api/models/typo/model/revision/main)" in err
    assert err.endswith("(if you meant a local path, check its spelling)\n")


def test_offline_names_both_readings(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    err = _one_line(runner.invoke(app, ["inspect", "typo/model"]))
    assert err == (
        "kvscale: error: typo/model: no local file or directory of that name (nor 'typo'), and "
        "the Hub repository typo/model could not be read: offline mode (HF_HUB_OFFLINE is set) "
        "and not in the local Hugging Face cache (unset HF_HUB_OFFLINE, or download it first; "
        "if you meant a local path, check its spelling)\n"
    )
