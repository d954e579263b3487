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
import json
import struct
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

LLAMA_PREFIX = "model.layers.{}.self_attn"


def pytest_configure(config: pytest.Config) -> None:
    # Declared here (not in pyproject) so the marker travels with the tests that use it.
    config.addinivalue_line(
        "markers",
        "hostile_subprocess: runs the hostile-input catalogue through `python -m kvscale` "
        "subprocesses (select with -m hostile_subprocess)",
    )


# --- plain helpers ------------------------------------------------------------------------------


def write_safetensors_file(
    path: Path, tensors: Mapping[str, Any], metadata: Mapping[str, str] | None = None
) -> Path:
    """A valid safetensors file written by the reference writer."""
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(dict(tensors), str(path), metadata=dict(metadata) if metadata else None)
    return path


def raw_safetensors_file(
    path: Path,
    header: Any,
    data: bytes = b"",
    *,
    header_len: int | None = None,
    pad: bool = True,
) -> Path:
    """Exact bytes: 8-byte little-endian length, header, data. Nothing is validated."""
    if isinstance(header, bytes):
        raw = header
    elif isinstance(header, str):
        raw = header.encode("utf-8", "surrogatepass")
    else:
        raw = json.dumps(header, separators=(",", ":")).encode()
    if pad and len(raw) % 8:
        raw += b" " * (8 - len(raw) % 8)  # writers pad with spaces to a multiple of 8
    length = len(raw) if header_len is None else header_len
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", length) + raw + data)
    return path


def tensor_entry(dtype: str, shape: list[int], begin: int, end: int) -> dict[str, Any]:
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def ct_config(layers: int = 2, strategy: str = "tensor", **extra: Any) -> dict[str, Any]:
    """A Llama config with a compressed-tensors FP8 kv_cache_scheme (auto -> fp8)."""
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "torch_dtype": "bfloat16",
        "quantization_config": {
            "quant_method": "compressed-tensors",
            "config_groups": {},
            "kv_cache_scheme": {
                "num_bits": 8,
                "type": "float",
                "strategy": strategy,
                "symmetric": True,
                "dynamic": False,
            },
        },
    }
    config.update(extra)
    return config


def fp8_config(layers: int = 2, **extra: Any) -> dict[str, Any]:
    """A Llama config with quant_method fp8 (the engine's base KV-scale path)."""
    config = ct_config(layers)
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "static"}
    config.update(extra)
    return config


def llama_tensors(
    layers: int = 2,
    scales: Mapping[str, float] | None = None,
    dtype: str = "float32",
) -> dict[str, Any]:
    """q_proj weights plus ``<prefix>.k_proj.k_scale``-style scalars for every layer."""
    import torch

    scales = {"k_scale": 0.5, "v_scale": 0.25} if scales is None else scales
    tensors: dict[str, Any] = {}
    for i in range(layers):
        prefix = LLAMA_PREFIX.format(i)
        tensors[f"{prefix}.q_proj.weight"] = torch.zeros(4, 4, dtype=torch.bfloat16)
        for kind, value in scales.items():
            proj = kind[0]
            tensors[f"{prefix}.{proj}_proj.{kind}"] = torch.tensor(
                value, dtype=getattr(torch, dtype)
            )
    return tensors


def make_checkpoint_dir(
    root: Path,
    name: str = "ckpt",
    *,
    layers: int = 2,
    scales: Mapping[str, float] | None = None,
    config: Mapping[str, Any] | None | bool = True,
    shards: int = 1,
    index: bool = True,
    tensors: Mapping[str, Any] | None = None,
) -> Path:
    """A directory checkpoint; ``config=True`` writes ``ct_config(layers)``, ``None``/False none.

    With ``shards > 1`` tensors are spread round-robin over ``model-0000i-of-0000n.safetensors``
    and, when ``index`` is true, a ``model.safetensors.index.json`` lists them.
    """
    directory = root / name
    directory.mkdir(parents=True, exist_ok=True)
    all_tensors = dict(llama_tensors(layers, scales) if tensors is None else tensors)
    if config is True:
        config = ct_config(layers)
    if config:
        (directory / "config.json").write_text(json.dumps(config))
    if shards == 1:
        write_safetensors_file(directory / "model.safetensors", all_tensors)
        return directory
    names = sorted(all_tensors)
    weight_map: dict[str, str] = {}
    for s in range(shards):
        shard = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: all_tensors[n] for n in names[s::shards]}
        write_safetensors_file(directory / shard, part)
        weight_map.update(dict.fromkeys(part, shard))
    if index:
        (directory / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map})
        )
    return directory


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


# --- hostile-input catalogue runner -------------------------------------------------------------
#
# A catalogue entry is any object with ``id``, ``build`` (kit -> path to inspect), ``code`` (the
# exact exit code), ``expect`` (exit 2: a regex searched in the one stderr line; exit 0/1: a
# problem code, optionally ``"code: regex"`` on its message) and ``env`` (extra environment).

SUBPROCESS_TIMEOUT_S = 10.0
_ANSI = "\x1b"


def tree_state(root: Path) -> dict[str, tuple[Any, ...]]:
    """Everything observable about a tree without following links or opening FIFOs."""
    import hashlib
    import os
    import stat

    state: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            key = os.path.relpath(path, root)
            if stat.S_ISLNK(st.st_mode):
                state[key] = ("link", os.readlink(path))
            elif stat.S_ISREG(st.st_mode):
                digest = hashlib.sha256()
                with open(path, "rb") as f:
                    digest.update(f.read(1 << 20))
                    if st.st_size > 1 << 20:  # sparse giants: ends only
                        f.seek(max(st.st_size - (1 << 16), 0))
                        digest.update(f.read())
                state[key] = ("file", st.st_mode, st.st_size, st.st_mtime_ns, digest.hexdigest())
            else:
                state[key] = ("other", st.st_mode, st.st_mtime_ns)
    return state


def check_outcome(
    case: Any, path: Path, code: int, stdout: str, stderr: str, json_mode: bool
) -> None:
    """The catalogue contract: exact exit code, one clean stderr line naming the file."""
    import re

    shown = f"{case.id}: exit {code}\nstdout: {stdout[-2000:]!r}\nstderr: {stderr[-2000:]!r}"
    assert code == case.code, shown
    assert "Traceback" not in stdout + stderr, shown
    assert "internal error" not in stderr, shown
    assert _ANSI not in stderr, shown
    if case.code == 2:
        assert stdout == "", shown
        assert stderr.endswith("\n") and stderr.count("\n") == 1, shown
        assert stderr.startswith("kvscale: error: "), shown
        # names the file at fault (all of them live next to the given path), or the variable
        assert str(path.parent) in stderr or "KVSCALE_" in stderr, shown
        assert re.search(case.expect, stderr), f"{shown}\nexpected: {case.expect}"
        return
    assert stderr.count("\n") <= 1, shown
    problem_code, _, message = case.expect.partition(": ")
    if not json_mode:
        assert problem_code in stdout, shown
        return
    doc = json.loads(stdout)
    assert doc["ok"] is (case.code == 0), shown
    found = [p for p in doc["problems"] if p["code"] == problem_code]
    assert found, f"{shown}\nno problem {problem_code}"
    if message:
        assert any(re.search(message, p["message"]) for p in found), shown
    if case.code == 1:
        assert any(p["fails"] for p in found), shown


class HostileRunner:
    """Runs catalogue entries through the real CLI, in process and as ``python -m kvscale``."""

    def __init__(self, kit: types.SimpleNamespace) -> None:
        self.kit = kit

    def cli(self, case: Any, *, json_mode: bool, extra: tuple[str, ...] = ()) -> None:
        import os
        import time

        from typer.testing import CliRunner

        from kvscale.cli import app

        path = case.build(self.kit)
        before = tree_state(self.kit.tmp)
        args = ["inspect", str(path), *getattr(case, "args", ()), *extra]
        if json_mode:
            args.append("--json")
        start = time.monotonic()
        # A developer's own KVSCALE_* settings (KVSCALE_DEBUG=1, raised limits) must not leak in.
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KVSCALE_")}
        env.update(case.env or {})
        result = CliRunner().invoke(app, args, env=env)
        elapsed = time.monotonic() - start
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            f"{case.id}: {result.exception!r}"
        )
        check_outcome(case, path, result.exit_code, result.stdout, result.stderr, json_mode)
        assert elapsed < SUBPROCESS_TIMEOUT_S, f"{case.id} took {elapsed:.1f} s"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"

    def other_command(self, case: Any, command: str) -> None:
        """``normalize CKPT --out DIR`` / ``verify CKPT`` on an entry that ``inspect`` refuses.

        Unreadable input (exit 2) must give every command the same one-line message; a layer
        the engine refuses or a non-positive/non-finite value makes ``normalize`` exit 1. In
        both cases nothing is written: ``--out`` must not exist afterwards.
        """
        import os

        from typer.testing import CliRunner

        from kvscale.cli import app

        path = case.build(self.kit)
        out = self.kit.tmp / "_normalized"
        before = tree_state(self.kit.tmp)
        args = {
            "normalize": ["normalize", str(path), "--out", str(out), *case.args],
            "verify": ["verify", str(path)],
        }[command]
        env: dict[str, str | None] = {k: None for k in os.environ if k.startswith("KVSCALE_")}
        env.update(case.env or {})
        result = CliRunner().invoke(app, args, env=env)
        shown = f"{command} {case.id}: exit {result.exit_code}\nstderr: {result.stderr[-1500:]!r}"
        assert "Traceback" not in result.stdout + result.stderr, shown
        assert "internal error" not in result.stderr, shown
        if case.code == 2:
            check_outcome(case, path, result.exit_code, result.stdout, result.stderr, False)
        else:
            # exit 1: normalize lists the problems it cannot fix (several lines, by design)
            assert result.exit_code == case.code, shown
        assert not out.exists(), f"{shown}\n{command} wrote {out}"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"

    def subprocess(self, case: Any, *, json_mode: bool = True) -> None:
        import os
        import subprocess
        import sys

        cwd = self.kit.tmp / "_empty_cwd"
        cwd.mkdir()
        path = case.build(self.kit)
        before = tree_state(self.kit.tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KVSCALE_") or k == "PATH"}
        # Anything kvscale might write (caches, configs, temp files) would land in cwd.
        env.update(HOME=str(cwd), TMPDIR=str(cwd), XDG_CACHE_HOME=str(cwd), **(case.env or {}))
        args = [sys.executable, "-m", "kvscale", "inspect", str(path)]
        args += [*getattr(case, "args", ()), *(["--json"] if json_mode else [])]
        try:
            proc = subprocess.run(
                args,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=SUBPROCESS_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{case.id}: no answer within {SUBPROCESS_TIMEOUT_S} s")
        stdout = proc.stdout.decode("utf-8", "replace")
        stderr = proc.stderr.decode("utf-8", "replace")
        check_outcome(case, path, proc.returncode, stdout, stderr, json_mode)
        assert list(cwd.iterdir()) == [], f"{case.id}: wrote {list(cwd.iterdir())}"
        assert tree_state(self.kit.tmp) == before, f"{case.id}: the input changed"


@pytest.fixture
def hostile(ckpt_kit: types.SimpleNamespace) -> HostileRunner:
    return HostileRunner(ckpt_kit)
