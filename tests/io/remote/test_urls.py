"""kvscale.io.remote.urls: what names a remote checkpoint (hf://, ORG/NAME, Hub and plain URLs),
what stays a local path, and the usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvscale.errors import ExitCode, UsageError
from kvscale.io.remote.urls import RemoteSpec, remote_spec


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("hf://org/name", RemoteSpec("hf://org/name", repo="org/name")),
        ("hf://org/name@v1.0", RemoteSpec("hf://org/name@v1.0", repo="org/name", revision="v1.0")),
        (
            "hf://org/name@refs/pr/3",
            RemoteSpec("hf://org/name@refs/pr/3", repo="org/name", revision="refs/pr/3"),
        ),
        (
            "meta-llama/Llama-3.1-8B",
            RemoteSpec("meta-llama/Llama-3.1-8B", repo="meta-llama/Llama-3.1-8B"),
        ),
        (
            "https://huggingface.co/org/name/resolve/main/model.safetensors",
            RemoteSpec(
                "https://huggingface.co/org/name/resolve/main/model.safetensors",
                repo="org/name",
                revision="main",
                file="model.safetensors",
            ),
        ),
        (
            "https://huggingface.co/org/name/blob/refs%2Fpr%2F1/sub/model.safetensors.index.json",
            RemoteSpec(
                "https://huggingface.co/org/name/blob/refs%2Fpr%2F1/sub/model.safetensors.index.json",
                repo="org/name",
                revision="refs/pr/1",
                folder="sub",
                file="model.safetensors.index.json",
            ),
        ),
        (
            "https://huggingface.co/org/name/tree/dev",
            RemoteSpec("https://huggingface.co/org/name/tree/dev", repo="org/name", revision="dev"),
        ),
        ("https://hf.co/org/name", RemoteSpec("https://hf.co/org/name", repo="org/name")),
        (
            "https://example.com/ckpt/model.safetensors?sig=1",
            RemoteSpec(
                "https://example.com/ckpt/model.safetensors?sig=1",
                file="model.safetensors",
                url="https://example.com/ckpt/model.safetensors?sig=1",
            ),
        ),
        (
            "http://10.0.0.1:8000/m/model.safetensors.index.json",
            RemoteSpec(
                "http://10.0.0.1:8000/m/model.safetensors.index.json",
                file="model.safetensors.index.json",
                url="http://10.0.0.1:8000/m/model.safetensors.index.json",
            ),
        ),
        ("./org/name", None),
        ("/abs/org/name", None),
        ("org/name/extra", None),
        ("org--x/name", None),
        ("org/name.", None),
        ("model.safetensors", None),
    ],
)
def test_remote_spec(
    given: str, expected: RemoteSpec | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert remote_spec(given) == expected


def test_local_path_wins_over_a_repo_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org" / "name").mkdir(parents=True)
    assert remote_spec("org/name") is None
    (tmp_path / "org" / "link").symlink_to(tmp_path / "missing")
    assert remote_spec("org/link") is None  # a dangling symlink is a local path too


@pytest.mark.parametrize(
    "given",
    [
        "hf://org",
        "hf://org/name@",
        "hf://org/name@../x",
        "hf://datasets/org/name",
        "hf://org/na me",
        "https://example.com/ckpt/",
        "https://example.com/config.json",
        "https://huggingface.co/datasets/org/name",
        "https://huggingface.co/org/name/resolve/main/config.json",
        "https:///model.safetensors",
    ],
)
def test_bad_remote_inputs(given: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_ENDPOINT", raising=False)
    with pytest.raises(UsageError) as info:
        remote_spec(given)
    assert info.value.exit_code == ExitCode.USAGE
    assert "\n" not in info.value.one_line()
