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
import types
from collections.abc import Callable
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
