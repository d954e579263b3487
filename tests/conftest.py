"""Shared fixtures: tiny synthetic checkpoints written into ``tmp_path``.

Three helpers, each exposed as a fixture that returns the function (so tests stay free of
imports from this file):

* ``write_safetensors(path, tensors, metadata=None)``: a valid file through
  ``safetensors.torch.save_file`` (``tensors`` maps names to torch tensors).
* ``raw_safetensors(path, header, data=b"", *, header_len=None, pad=True)``: crafted bytes for
  broken files; ``header`` is a JSON-able object, a ``str`` or raw ``bytes``; ``header_len``
  overrides the 8-byte length prefix.
* ``make_checkpoint(name="ckpt", *, layers=2, scales=..., config=..., shards=1, index=...)``:
  a directory checkpoint (config.json plus 1-N shards, with or without an index).

``ckpt_kit`` bundles them (plus ``ct_config``/``fp8_config``/``llama_tensors``/``entry``) with a
``tmp`` directory, for catalogues whose builders are plain functions of one argument.

Keep this file general and small: several test modules share it.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.checkpoints import (
    ct_config,
    fp8_config,
    llama_tensors,
    make_checkpoint_dir,
    raw_safetensors_file,
    tensor_entry,
    write_safetensors_file,
)
from support.hostile import HostileRunner
from support.hub_server import HubServer

# --- one intra-op thread -------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    """The tests' tensors are tiny: a second intra-op thread only adds synchronisation, and
    OpenMP's waiting threads spin. (On the shared 2-core machine the model and calibrate tests
    took 36 s of CPU with torch's default two threads, 6 s with one.)"""
    import torch

    torch.set_num_threads(1)


# --- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def write_safetensors() -> Callable[..., Path]:
    return write_safetensors_file


@pytest.fixture
def raw_safetensors() -> Callable[..., Path]:
    return raw_safetensors_file


@pytest.fixture
def make_checkpoint(tmp_path: Path) -> Callable[..., Path]:
    def make(name: str = "ckpt", **kwargs: Any) -> Path:
        return make_checkpoint_dir(tmp_path, name, **kwargs)

    return make


@pytest.fixture
def ckpt_kit(tmp_path: Path) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        tmp=tmp_path,
        raw=raw_safetensors_file,
        write=write_safetensors_file,
        make=functools.partial(make_checkpoint_dir, tmp_path),
        entry=tensor_entry,
        ct_config=ct_config,
        fp8_config=fp8_config,
        llama_tensors=llama_tensors,
    )


@pytest.fixture
def hostile(ckpt_kit: types.SimpleNamespace) -> HostileRunner:
    return HostileRunner(ckpt_kit)


# --- remote reads: a loopback Hub (tests/support/hub_server.py) -----------------------------------
# hub_env: an online, token-free Hub environment with an empty cache of the test's own and a guard
# that fails any connection or name lookup that is not loopback; hub: a running HubServer with
# HF_ENDPOINT pointing at it; fast: RemoteOptions whose every failure comes within seconds.

_LOOPBACK_NAMES = frozenset(["localhost", "127.0.0.1", "::1"])


def _is_loopback(host: object) -> bool:
    if not isinstance(host, str):
        return False
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@pytest.fixture
def no_outside_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any DNS lookup or connection to a non-loopback address during the test."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _is_loopback(host):
            raise AssertionError(f"test tried to resolve {host!r}: outside network")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_loopback(address[0]):
            raise AssertionError(f"test tried to connect to {address!r}: outside network")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def hub_env(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, no_outside_network: None
) -> Iterator[Path]:
    """An online, token-free Hub environment with an empty cache; yields the cache path."""
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import close_session, constants

    cache = tmp_path / "hf-home" / "hub"
    cache.mkdir(parents=True)
    for name in (
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "HF_OIDC_RESOURCE",
        "HF_ENDPOINT",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "TRANSFORMERS_OFFLINE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_HOME", str(cache.parent))
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    # huggingface_hub read these at import; its own tests patch them the same way.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(constants, "HF_HOME", str(cache.parent))
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "no-token-file"))
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_IMPLICIT_TOKEN", False)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    close_session()  # a session made elsewhere may carry another environment's proxies
    yield cache
    close_session()


@pytest.fixture
def hub(hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """A loopback Hub (no repositories yet: ``hub.add_repo``), ``HF_ENDPOINT`` set to it."""
    server = HubServer()
    with server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.fixture
def fast() -> Any:
    """Transport options for hostile servers: every failure within a few seconds. (The read
    timeout leaves room for a loaded 2-core machine, where a loopback answer has taken 0.5 s.)"""
    from kvscale.io.remote.http import RemoteOptions

    return RemoteOptions(
        connect_timeout=1.0,
        read_timeout=2.0,
        request_timeout=4.0,
        retries=2,
        backoff=0.01,
        max_retry_wait=0.5,
        retry_budget=1.0,
    )


@pytest.fixture(scope="session")
def mla_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """Tiny random MLA models (``support.models.MLA_KINDS``), each saved once per session:
    ``mla_model_dir("deepseek_v3")`` -> its directory. Needs transformers (the caller skips)."""
    built: dict[str, Path] = {}
    root = tmp_path_factory.mktemp("mla-models")

    def get(kind: str) -> Path:
        if kind not in built:
            from support.models import save_tiny

            built[kind] = save_tiny(kind, root / kind)
        return built[kind]

    return get
