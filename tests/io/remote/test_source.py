"""Remote checkpoints (kvscale/io/remote/) against a loopback Hub (tests/support/hub_server.py).

Every test runs on 127.0.0.1 only (conftest's ``no_outside_network`` fails anything else).
Results must equal a local inspect of the same files byte for byte in the JSON, apart from the
fields naming the input (``checkpoint``, ``layout``); hostile servers must give one typed error
naming the URL within a bounded time."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from support.checkpoints import (
    layout_safetensors_file,
    llama_config,
    quant_config,
    safetensors_prefix,
)
from support.hub_server import HubServer
from support.paths import ROOT
from support.remote import BIG, document, remote_report

from kvscale.core.inspect import inspect_checkpoint, resolve_checkpoint
from kvscale.engine.options import EngineOptions
from kvscale.errors import (
    ConfigError,
    ExitCode,
    ExtraMissingError,
    InputError,
    KVScaleError,
    LimitExceededError,
    SafetensorsFormatError,
    UsageError,
)
from kvscale.io.remote.headers import spans as scale_spans
from kvscale.io.remote.source import RemotePath, open_remote, remote_stats, source_json
from kvscale.io.safetensors import read_header, read_tensor_bytes
from kvscale.render.inspect import inspect_json

pytest.importorskip("huggingface_hub")


EXAMPLES = sorted(
    p.name for p in (ROOT / "examples").iterdir() if p.is_dir() and any(p.glob("*.safetensors"))
)


def _shard_requests(server: HubServer) -> Counter[str]:
    return Counter(r.path.rsplit("/", 1)[-1] for r in server.log if r.path.endswith(".safetensors"))


def _budget(directory: Path, files: tuple[str, ...]) -> tuple[int, int]:
    """(header bytes with their 8-byte prefixes, k/v scale bytes) of a local checkpoint."""
    headers = scales = 0
    for shard in (directory / name for name in files):
        header = read_header(shard)
        headers += 8 + header.header_size
        scales += sum(
            t.nbytes for t in header.tensors.values() if t.name.endswith(("k_scale", "v_scale"))
        )
    return headers, scales


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_equal_local(hub: HubServer, example: str) -> None:
    directory = ROOT / "examples" / example
    sha = hub.add_repo(f"examples/{example}", directory)
    ckpt, report = remote_report(f"hf://examples/{example}")
    assert document(report) == document(inspect_checkpoint(directory))
    assert ckpt.layout == "remote" and not ckpt.is_local
    assert str(ckpt.root) == f"hf://examples/{example}@{sha}"
    shards = len(ckpt.files)
    listed = {p.name for p in directory.iterdir()}
    documents = len(
        listed & {"config.json", "hf_quant_config.json", "model.safetensors.index.json"}
    )
    assert hub.stats.by_kind["api"] == 1
    assert hub.stats.requests <= 1 + documents + 2 * shards
    assert max(_shard_requests(hub).values()) <= 2
    stats = source_json(ckpt)
    assert inspect_json(report)["source"] == stats
    assert stats == {
        "repo": f"examples/{example}",
        "revision": "main",
        "sha": sha,
        "files": documents + shards,
        "requests": hub.stats.requests,
        "bytes": hub.stats.bytes,
    }
    # Every request: identity encoding, kvscale's user agent, no token (none is set).
    assert {r.accept_encoding for r in hub.log} == {"identity"}
    assert all(r.user_agent and r.user_agent.startswith("kvscale/") for r in hub.log)
    assert all(r.authorization is None for r in hub.log)


@pytest.mark.slow  # 191 shards over loopback HTTP, twice
def test_large_sparse_checkpoint(hub: HubServer, big_checkpoint: Path) -> None:
    sha = hub.add_repo(BIG, big_checkpoint)
    seen: list[tuple[int, int]] = []
    start = time.monotonic()
    ckpt = open_remote(f"hf://{BIG}", None, lambda event: seen.append((event.done, event.total)))
    report = resolve_checkpoint(ckpt, EngineOptions())
    elapsed = time.monotonic() - start
    assert document(report) == document(inspect_checkpoint(big_checkpoint))
    # 191 shard files; the index names 190 of them (the builder's last chunk is empty).
    shards = len(ckpt.files)
    assert len(report.layers) == 126 and shards == 190
    assert seen[-1] == (shards, shards) and len(seen) == shards

    per_shard = _shard_requests(hub)
    assert len(per_shard) == shards and max(per_shard.values()) <= 2
    # One API call, config + index, one header read per shard, at most one scale read per
    # shard that holds k/v scales (none where the first read reached them).
    holders = {r.file for layer in report.layers for r in layer.sources.values()}
    assert hub.stats.by_kind["api"] == 1 and hub.stats.by_kind["json"] == 2
    assert shards < hub.stats.by_kind["shard"] <= shards + len(holders)
    headers, scales = _budget(big_checkpoint, ckpt.files)
    documents = sum(
        (big_checkpoint / n).stat().st_size for n in ("config.json", "model.safetensors.index.json")
    )
    shard_bytes = sum(r.sent for r in hub.log if r.path.endswith(".safetensors"))
    assert shard_bytes <= 1.5 * (headers + scales)
    assert hub.stats.bytes <= 1.5 * (headers + scales + documents)
    stats = remote_stats(ckpt)
    assert stats is not None and stats.sha == sha and stats.files == shards + 2
    assert stats.size == sum((big_checkpoint / name).stat().st_size for name in ckpt.files)
    assert elapsed < 5


def test_cdn_redirects_never_carry_the_token(
    hub_env: Path, monkeypatch: pytest.MonkeyPatch, mid_checkpoint: Path
) -> None:
    server = HubServer(cdn=True, tokens=frozenset(["hf_good"]))
    directory = mid_checkpoint
    with server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf_good")
        server.add_repo("org/gated", directory, access="gated", granted=frozenset(["hf_good"]))
        ckpt, report = remote_report("hf://org/gated")
    assert document(report) == document(inspect_checkpoint(directory))
    hub_side = [r for r in server.log if r.server == "hub"]
    cdn_side = [r for r in server.log if r.server == "cdn"]
    assert cdn_side and all(r.authorization is None for r in cdn_side)
    assert all(r.authorization == "Bearer hf_good" for r in hub_side)
    # The second read of a shard goes straight to the CDN URL the first one was sent to.
    redirects = Counter(r.path for r in hub_side if r.status == 302)
    assert set(redirects.values()) == {1}
    assert any(r.range and not r.range.startswith("bytes=0-") for r in cdn_side)
    assert ckpt.layout == "remote"


def test_header_larger_than_the_first_read(hub: HubServer, tmp_path: Path) -> None:
    # No index: the first read asks for 64 KiB; this header is ~200 KB, so a second read
    # fetches the rest (and nothing more).
    directory = tmp_path / "wide"
    _write_wide_checkpoint(directory, tensors=1500)
    hub.add_repo("org/wide", directory)
    ckpt, report = remote_report("hf://org/wide")
    assert document(report) == document(inspect_checkpoint(directory))
    header = read_header(directory / "model.safetensors")
    assert header.header_size > 64 * 1024
    ranges = [r.range for r in hub.log if r.path.endswith(".safetensors")]
    first = 8 + 64 * 1024
    assert ranges[:2] == [f"bytes=0-{first - 1}", f"bytes={first}-{header.data_start - 1}"]


def test_tensors_not_prefetched_are_read_in_one_range(hub: HubServer, mid_checkpoint: Path) -> None:
    big_checkpoint = mid_checkpoint
    hub.add_repo(BIG, big_checkpoint)
    ckpt = open_remote(f"hf://{BIG}", None, None)
    header = ckpt.headers[ckpt.files[3]]
    wanted = [t for t in header.tensors.values() if t.name.endswith("weight_scale")]
    before = hub.stats.requests
    got = ckpt.read_tensors(ckpt.files[3], wanted)
    assert got == {t.name: read_tensor_bytes(big_checkpoint / ckpt.files[3], t) for t in wanted}
    groups = scale_spans(wanted, max(4096, header.header_size))
    assert hub.stats.requests - before == len(groups)


def test_remote_path_keeps_the_scheme() -> None:
    root = RemotePath("hf://org/name@abc")
    assert str(root / "config.json") == "hf://org/name@abc/config.json"
    assert f"{RemotePath('https://host:8/a') / 'b'}" == "https://host:8/a/b"
    assert os.fspath(root) == "hf://org/name@abc"


def test_plain_urls(hub_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The CDN side of the server is "any other host": plain URLs, no API call, no token.
    server = HubServer(cdn=True)
    with server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", "hf_secret")
        for example, file in (
            ("llm-compressor-fp8", "model.safetensors"),
            ("modelopt-fp8", "model.safetensors.index.json"),
        ):
            directory = ROOT / "examples" / example
            sha = server.add_repo(f"examples/{example}", directory)
            server.reset()
            url = f"{server.cdn_url}/cdn/examples/{example}/{sha}/{file}"
            ckpt, report = remote_report(url)
            assert document(report) == document(inspect_checkpoint(directory))
            assert all(r.server == "cdn" and r.authorization is None for r in server.log)
            assert source_json(ckpt) is not None
            assert source_json(ckpt)["sha"] is None  # type: ignore[index]


def test_hub_file_url_reads_one_file(hub: HubServer) -> None:
    directory = ROOT / "examples" / "modelopt-fp8"
    sha = hub.add_repo("org/two", directory)
    name = "model-00002-of-00002.safetensors"
    ckpt, _ = remote_report(f"{hub.url}/org/two/resolve/{sha}/{name}")
    assert ckpt.files == (name,)
    assert ckpt.index is None


def test_revisions(hub: HubServer) -> None:
    directory = ROOT / "examples" / "quark-fp8"
    sha = hub.add_repo("org/rev", directory, branches=("main", "v2"))
    ckpt, _ = remote_report("hf://org/rev", revision="v2")
    assert source_json(ckpt)["revision"] == "v2"  # type: ignore[index]
    assert source_json(ckpt)["sha"] == sha  # type: ignore[index]
    assert all(sha in r.path for r in hub.log if "/resolve/" in r.path)
    with pytest.raises(UsageError, match="names revision v2, but --revision says main"):
        open_remote("hf://org/rev@v2", "main", None)
    with pytest.raises(UsageError, match="applies to Hub repositories"):
        open_remote("https://example.com/x/model.safetensors", "main", None)
    with pytest.raises(InputError, match="revision not found") as info:
        open_remote("hf://org/rev@nope", None, None)
    assert hub.url in str(info.value)


CACHED = "kvscale/tiny-llama-fp8-kv"

CACHED_SHA = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def cached_repo(hub: HubServer, hub_env: Path) -> Path:
    """examples/hf-cache copied into the test's cache, and served by the Hub at the same sha."""
    source = ROOT / "examples" / "hf-cache" / "models--kvscale--tiny-llama-fp8-kv"
    shutil.copytree(source, hub_env / source.name, symlinks=True)
    hub.add_repo(CACHED, source / "snapshots" / CACHED_SHA, sha=CACHED_SHA)
    return hub_env / source.name / "snapshots" / CACHED_SHA


def test_cache_first(hub: HubServer, cached_repo: Path) -> None:
    ckpt, report = remote_report(f"hf://{CACHED}")
    assert ckpt.layout == "hf-cache" and ckpt.root == cached_repo and ckpt.is_local
    assert hub.stats.requests == 1  # the revision only
    assert document(report) == document(inspect_checkpoint(cached_repo))
    assert source_json(ckpt) == {
        "repo": CACHED,
        "revision": "main",
        "sha": CACHED_SHA,
        "files": 0,
        "requests": 1,
        "bytes": hub.stats.bytes,
    }
    hub.reset()
    ckpt, _ = remote_report(f"hf://{CACHED}@{CACHED_SHA}")  # a commit: not even the API
    assert ckpt.layout == "hf-cache" and hub.stats.requests == 0


def test_incomplete_cache_reads_remotely(hub: HubServer, cached_repo: Path) -> None:
    (cached_repo / "model.safetensors").resolve().unlink()  # the blob is gone: a dangling link
    ckpt, _ = remote_report(f"hf://{CACHED}")
    assert ckpt.layout == "remote"


def test_offline(hub: HubServer, cached_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    ckpt, _ = remote_report(f"hf://{CACHED}")
    assert ckpt.layout == "hf-cache"
    hub.add_repo("org/elsewhere", ROOT / "examples" / "quark-fp8")
    with pytest.raises(InputError, match="offline mode") as info:
        open_remote("hf://org/elsewhere", None, None)
    assert info.value.exit_code == ExitCode.USAGE
    with pytest.raises(InputError, match="offline mode"):
        open_remote("http://127.0.0.1:9/x/model.safetensors", None, None)
    assert hub.stats.requests == 0


@pytest.mark.parametrize(
    ("access", "token", "message"),
    [
        ("missing", None, r"repository not found, or private .*HTTP 401"),
        ("missing", "hf_good", r"repository not found, or private .*HTTP 404"),
        ("private", None, r"repository not found, or private .*HTTP 401"),
        ("gated", None, r"gated repository: no access \(HTTP 401\)"),
        ("gated", "hf_good", r"gated repository: no access \(HTTP 403\)"),
        ("public", "hf_bad", r"the Hub rejected the token"),
    ],
)
def test_access_errors(
    hub: HubServer,
    monkeypatch: pytest.MonkeyPatch,
    access: str,
    token: str | None,
    message: str,
) -> None:
    hub.tokens = frozenset(["hf_good"])
    if access != "missing":
        hub.add_repo("org/repo", ROOT / "examples" / "quark-fp8", access=access)
    if token is not None:
        monkeypatch.setenv("HF_TOKEN", token)
    with pytest.raises(InputError, match=message) as info:
        open_remote("hf://org/repo", None, None)
    assert info.value.exit_code == ExitCode.USAGE
    assert f"{hub.url}/api/models/org/repo/revision/main" in info.value.one_line()
    assert hub.stats.requests == 1


def test_bare_name_that_is_neither(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="repository not found") as info:
        open_remote("typo/model", None, None)
    assert info.value.hint is not None


def test_extra_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ExtraMissingError, match="huggingface_hub") as info:
        open_remote("hf://org/name", None, None)
    assert info.value.exit_code == ExitCode.ENVIRONMENT
    assert "kvscale[hub]" in info.value.one_line()


def test_importing_remote_costs_nothing() -> None:
    # What kvscale.io.remote adds to an import of what the CLI imports anyway: no third-party
    # module (huggingface_hub and its HTTP client load only when a remote input is opened).
    code = (
        "import sys, kvscale.io.checkpoint, kvscale.core.inspect; before = set(sys.modules); "
        "import kvscale.io.remote.source; new = set(sys.modules) - before; "
        "print(sorted(m for m in new if m.split('.')[0].lstrip('_') not in "
        "sys.stdlib_module_names and not m.startswith('_')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == (
        "['kvscale.io.remote', 'kvscale.io.remote.headers', 'kvscale.io.remote.http', "
        "'kvscale.io.remote.source', 'kvscale.io.remote.urls']"
    )


def test_guard_refuses_the_outside(no_outside_network: None) -> None:
    import socket

    with pytest.raises(AssertionError, match="outside network"):
        socket.getaddrinfo("huggingface.co", 443)
    with pytest.raises(AssertionError, match="outside network"):
        socket.create_connection(("192.0.2.1", 443), timeout=0.1)


@pytest.mark.parametrize(
    ("content", "error", "message"),
    [
        (
            safetensors_prefix(b"{}", header_len=2**63),
            SafetensorsFormatError,
            r"header length 9,223,372,036,854,775,808 runs past",
        ),
        (b"", SafetensorsFormatError, r"file is empty \(0 bytes\)"),
        (b"\x01\x02", SafetensorsFormatError, r"file is 2 bytes, shorter than the 8-byte"),
        (
            safetensors_prefix(b'{"a":1', pad=False),
            SafetensorsFormatError,
            r"header is not valid JSON",
        ),
        (safetensors_prefix(b"{}", pad=False) + b"xx", SafetensorsFormatError, r"2 trailing bytes"),
    ],
)
def test_hostile_files_fail_like_local_ones(
    hub: HubServer, tmp_path: Path, content: bytes, error: type[KVScaleError], message: str
) -> None:
    directory = tmp_path / "repo"
    directory.mkdir()
    (directory / "model.safetensors").write_bytes(content)
    hub.add_repo("org/bad", directory)
    with pytest.raises(error, match=message) as remote:
        open_remote("hf://org/bad", None, None)
    with pytest.raises(error) as local:
        inspect_checkpoint(directory)
    assert remote.value.one_line().split(": ", 1)[1] == local.value.one_line().split(": ", 1)[1]
    assert remote.value.one_line().startswith("hf://org/bad@")


def test_header_limit_applies_before_anything_is_read(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "wide"
    _write_wide_checkpoint(directory, tensors=200)
    hub.add_repo("org/wide", directory)
    monkeypatch.setenv("KVSCALE_MAX_HEADER_BYTES", "1000")
    with pytest.raises(LimitExceededError, match="safetensors header of [0-9,]+ bytes refused"):
        open_remote("hf://org/wide", None, None)


def test_hostile_json(hub: HubServer, tmp_path: Path) -> None:
    directory = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "llm-compressor-fp8", directory)
    (directory / "config.json").write_text('{"a": 1, "a": 2}')
    hub.add_repo("org/json", directory)
    with pytest.raises(ConfigError, match="config.json has a duplicate key 'a'") as info:
        open_remote("hf://org/json", None, None)
    assert info.value.one_line().startswith("hf://org/json@")


def test_index_outside_the_checkpoint_is_never_fetched(hub: HubServer, tmp_path: Path) -> None:
    directory = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "modelopt-fp8", directory)
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    first = next(iter(index["weight_map"]))
    index["weight_map"][first] = "../../etc/passwd"
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    hub.add_repo("org/escape", directory)
    with pytest.raises(InputError, match="points outside the checkpoint directory"):
        open_remote("hf://org/escape", None, None)
    assert not [r for r in hub.log if "passwd" in r.path or r.path.endswith(".safetensors")]


def _write_wide_checkpoint(directory: Path, tensors: int) -> None:
    """One shard with many small tensors (a big header, no index) and a Llama config whose
    layer 0 has k/v scales."""
    names = [f"model.layers.0.mlp.experts.{i}.gate_proj.weight_scale" for i in range(tensors)]
    names += ["model.layers.0.self_attn.k_scale", "model.layers.0.self_attn.v_scale"]
    layout_safetensors_file(
        directory / "model.safetensors",
        [(name, "F32", []) for name in sorted(names)],
        lambda name, size: struct.pack("<f", 0.5 if "v_scale" in name else 0.25),
    )
    config = llama_config(1, quant=quant_config("compressed-tensors"), hidden_size=64)
    (directory / "config.json").write_text(json.dumps(config))
