"""Malformed and wrongly typed config.json / hf_quant_config.json.

Wrong types are a ConfigError naming the full path of the file (exit 2), never an
AttributeError/TypeError escaping as "internal error". A well-formed config that the *engine*
refuses at start (a compressed-tensors ``kv_cache_scheme`` that is a string, an unknown Quark
layout) is readable: every layer is ``layer-refused`` and the exit code is 1.

Each ``CATALOGUE`` entry also runs as a subprocess in
``test_safetensors.py::test_catalogue_subprocess``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest

from kvscale.engine.vllm.engine import VLLM
from kvscale.errors import ConfigError, KVScaleError, LimitExceededError
from kvscale.model_config import find_quant_config, parse_model_shape

CONFIG = r"/ckpt/config\.json: "
HF_QUANT = r"/ckpt/hf_quant_config\.json: "


class Case(NamedTuple):
    id: str
    build: Callable[[SimpleNamespace], Path]
    code: int
    expect: str
    env: dict[str, str] | None = None
    args: tuple[str, ...] = ()


def with_config(**changes: Any) -> Callable[[SimpleNamespace], Path]:
    """The standard compressed-tensors Llama config with top-level keys replaced."""

    def build(kit: SimpleNamespace) -> Path:
        return kit.make(config=kit.ct_config(2, **changes))

    return build


def with_quant(**changes: Any) -> Callable[[SimpleNamespace], Path]:
    """The standard config with ``quantization_config`` keys replaced."""

    def build(kit: SimpleNamespace) -> Path:
        config = kit.ct_config(2)
        config["quantization_config"].update(changes)
        return kit.make(config=config)

    return build


def raw_config(content: bytes, name: str = "config.json") -> Callable[[SimpleNamespace], Path]:
    def build(kit: SimpleNamespace) -> Path:
        directory = kit.make(config=None)
        (directory / name).write_bytes(content)
        return directory

    return build


def hf_quant(content: Any) -> Callable[[SimpleNamespace], Path]:
    """No quantization_config in config.json, so ModelOpt's legacy hf_quant_config.json counts."""

    def build(kit: SimpleNamespace) -> Path:
        config = kit.ct_config(2)
        del config["quantization_config"]
        directory = kit.make(config=config)
        data = content if isinstance(content, bytes) else json.dumps(content).encode()
        (directory / "hf_quant_config.json").write_bytes(data)
        return directory

    return build


def config_special(kind: str) -> Callable[[SimpleNamespace], Path]:
    def build(kit: SimpleNamespace) -> Path:
        directory = kit.make(config=None)
        target = directory / "config.json"
        if kind == "directory":
            target.mkdir()
        elif kind == "fifo":
            os.mkfifo(target)
        elif kind == "device":
            target.symlink_to("/dev/zero")
        elif kind == "procfs":
            # a regular file whose st_size is 0 but whose content is not
            target.symlink_to("/proc/self/status" if os.path.exists("/proc/self") else "/x")
        return directory

    return build


STRICT_SCHEME = {"num_bits": 8, "type": "float", "strategy": "tensor", "symmetric": True}

CATALOGUE: list[Case] = [
    # --- not JSON, not an object
    Case("config-empty-file", raw_config(b""), 2, CONFIG + "config.json is not valid JSON"),
    Case("config-not-json", raw_config(b"{'a': 1}"), 2, CONFIG + "config.json is not valid JSON"),
    Case(
        "config-truncated-json",
        raw_config(b'{"a": [1, 2'),
        2,
        CONFIG + "config.json is not valid JSON",
    ),
    Case(
        "config-not-utf8",
        raw_config(b'{"model_type": "\xc0\xaf"}'),
        2,
        CONFIG + r"config\.json is not UTF-8 \(invalid start byte at byte 16\)",
    ),
    Case(
        "config-utf16",
        raw_config('{"a": 1}'.encode("utf-16")),
        2,
        CONFIG + "config.json is not UTF-8",
    ),
    Case("config-array", raw_config(b"[1, 2]"), 2, CONFIG + "config.json is not a JSON object"),
    Case(
        "config-null",
        raw_config(b"null"),
        2,
        CONFIG + r"config\.json is not a JSON object \(it is null\)",
    ),
    Case(
        "config-duplicate-key",
        raw_config(b'{"num_hidden_layers": 2, "num_hidden_layers": 32}'),
        2,
        CONFIG + "config.json has a duplicate key 'num_hidden_layers'",
    ),
    Case(
        "config-nan-constant",
        raw_config(b'{"rope_theta": NaN}'),
        2,
        CONFIG + r"config\.json is not valid JSON \(non-standard JSON constant NaN\)",
    ),
    Case(
        "config-nested-too-deeply",
        raw_config(b"[" * 50_000 + b"]" * 50_000),
        2,
        CONFIG + r"config\.json is not valid JSON \(nested too deeply\)",
    ),
    Case(
        "config-giant-integer",
        raw_config(b'{"num_hidden_layers": ' + b"9" * 5000 + b"}"),
        2,
        CONFIG + r"config\.json is not valid JSON \(integer literal with 5,000 digits\)",
    ),
    Case(
        "config-is-directory",
        config_special("directory"),
        2,
        CONFIG + "cannot read: a directory, not a regular file",
    ),
    Case("config-is-fifo", config_special("fifo"), 2, CONFIG + r"cannot read: a FIFO \(named"),
    Case("config-is-device", config_special("device"), 2, CONFIG + "cannot read: a device"),
    Case("config-procfs", config_special("procfs"), 2, CONFIG + "config.json is not valid JSON"),
    # --- wrong types: a ConfigError naming the file and the key
    Case(
        "num-hidden-layers-string",
        with_config(num_hidden_layers="32"),
        2,
        CONFIG + "num_hidden_layers must be a non-negative integer, got string '32'",
    ),
    Case(
        "num-hidden-layers-negative",
        with_config(num_hidden_layers=-1),
        2,
        CONFIG + "num_hidden_layers must be a non-negative integer, got number -1",
    ),
    Case(
        "num-hidden-layers-float",
        with_config(num_hidden_layers=2.0),
        2,
        CONFIG + "num_hidden_layers must be a non-negative integer, got number 2.0",
    ),
    Case(
        "num-hidden-layers-bool",
        with_config(num_hidden_layers=True),
        2,
        CONFIG + "num_hidden_layers must be a non-negative integer, got boolean True",
    ),
    Case(
        "num-attention-heads-list",
        with_config(num_attention_heads=[4]),
        2,
        CONFIG + r"num_attention_heads must be a non-negative integer, got list \[4\]",
    ),
    Case(
        "num-key-value-heads-object",
        with_config(num_key_value_heads={"n": 2}),
        2,
        CONFIG + r"num_key_value_heads must be a non-negative integer, got object",
    ),
    Case(
        "quantization-config-list",
        with_config(quantization_config=[{"quant_method": "fp8"}]),
        2,
        CONFIG + r"quantization_config must be an object, got list \[\{'quant_method': 'fp8'\}\]",
    ),
    Case(
        "quantization-config-string",
        with_config(quantization_config="fp8"),
        2,
        CONFIG + "quantization_config must be an object, got string 'fp8'",
    ),
    Case(
        "compression-config-list",
        with_config(quantization_config=None, compression_config=[1]),
        2,
        CONFIG + r"compression_config must be an object, got list \[1\]",
    ),
    Case(
        "quant-method-number",
        with_quant(quant_method=8),
        2,
        CONFIG + "quant_method must be a string, got number 8",
    ),
    Case(
        "architectures-dict",
        with_config(architectures={"LlamaForCausalLM": True}),
        2,
        CONFIG + "architectures must be a list of strings, got object",
    ),
    Case(
        "architectures-string",
        with_config(architectures="LlamaForCausalLM"),
        2,
        CONFIG + "architectures must be a list of strings, got string 'LlamaForCausalLM'",
    ),
    Case(
        "architectures-numbers",
        with_config(architectures=[1, 2]),
        2,
        CONFIG + r"architectures must be a list of strings, got list \[1, 2\]",
    ),
    Case(
        "model-type-list",
        with_config(model_type=["llama"]),
        2,
        CONFIG + "model_type must be a string, got list",
    ),
    Case(
        "torch-dtype-number",
        with_config(torch_dtype=16),
        2,
        CONFIG + "torch_dtype must be a string, got number 16",
    ),
    Case(
        "dtype-object",
        with_config(dtype={"name": "bfloat16"}),
        2,
        CONFIG + "dtype must be a string, got object",
    ),
    Case(
        "layer-types-string",
        with_config(layer_types="full_attention"),
        2,
        CONFIG + "layer_types must be a list of strings, got string 'full_attention'",
    ),
    Case(
        "hybrid-pattern-number",
        with_config(hybrid_override_pattern=5),
        2,
        CONFIG + "hybrid_override_pattern must be a string, got number 5",
    ),
    Case(
        "text-config-list",
        with_config(text_config=[{"num_hidden_layers": 2}]),
        2,
        CONFIG + "text_config must be an object, got list",
    ),
    Case(
        "long-value-is-cut",
        with_config(architectures={"x" * 10_000: 1}),
        2,
        CONFIG + r"architectures must be a list of strings, got object \{'x{40,60}\.\.\.\n$",
    ),
    # --- sizes from config.json: limits, checked before anything is allocated from them
    Case(
        "num-hidden-layers-huge",
        with_config(num_hidden_layers=10**9),
        2,
        CONFIG + r"num_hidden_layers is 1,000,000,000 \(limit max-layers = 4,096 hidden layers "
        r"declared by config\.json \(num_hidden_layers\); set KVSCALE_MAX_LAYERS to raise it\)",
    ),
    Case(
        "num-attention-heads-huge",
        with_config(num_attention_heads=2**40),
        2,
        CONFIG + r"num_attention_heads is 1,099,511,627,776 \(limit max-heads = 1,024 .* "
        r"set KVSCALE_MAX_HEADS to raise it\)",
    ),
    Case(
        "num-key-value-heads-huge",
        with_config(num_key_value_heads=10**12),
        2,
        CONFIG + r"num_key_value_heads is 1,000,000,000,000 \(limit max-heads",
    ),
    Case(
        "limit-max-layers-env",
        with_config(num_hidden_layers=2),
        2,
        CONFIG + r"num_hidden_layers is 2 \(limit max-layers = 1 hidden layers",
        {"KVSCALE_MAX_LAYERS": "1"},
    ),
    Case(
        "limit-max-heads-env",
        with_config(),
        2,
        CONFIG + r"num_attention_heads is 4 \(limit max-heads = 3 ",
        {"KVSCALE_MAX_HEADS": "3"},
    ),
    # --- hf_quant_config.json (ModelOpt's legacy file)
    Case(
        "hf-quant-array", hf_quant([1]), 2, HF_QUANT + "hf_quant_config.json is not a JSON object"
    ),
    Case(
        "hf-quant-not-json",
        hf_quant(b"{producer"),
        2,
        HF_QUANT + "hf_quant_config.json is not valid JSON",
    ),
    Case(
        "hf-quant-method-number",
        hf_quant({"quant_method": 3}),
        2,
        HF_QUANT + "quant_method must be a string, got number 3",
    ),
    # --- readable configs the engine refuses at start: every layer refused, exit 1
    Case(
        "kv-cache-scheme-string",
        with_quant(kv_cache_scheme="fp8"),
        1,
        "layer-refused: AttributeError: compressed-tensors kv_cache_scheme must be an object, "
        "got str",
    ),
    Case(
        "kv-cache-scheme-list",
        with_quant(kv_cache_scheme=[STRICT_SCHEME]),
        1,
        "layer-refused: kv_cache_scheme must be an object, got list",
    ),
    Case(
        "kv-cache-scheme-num-bits-string",
        with_quant(kv_cache_scheme={**STRICT_SCHEME, "num_bits": "8"}),
        1,
        "layer-refused: NotImplementedError: Currently supported kv cache quantization is "
        "num_bits=8, type=float, however received num_bits=8",
    ),
    Case(
        "kv-cache-scheme-strategy-list",
        with_quant(kv_cache_scheme={**STRICT_SCHEME, "strategy": ["tensor"]}),
        1,
        r"layer-refused: ValueError: \['tensor'\] is not a valid QuantizationStrategy",
    ),
    Case(
        "modelopt-quant-algo-object",
        with_config(
            quantization_config={
                "producer": {"name": "modelopt"},
                "quantization": {"quant_algo": {"x": 1}},
            }
        ),
        1,
        "layer-refused: ValueError: Unknown ModelOpt quant algo",
    ),
    Case(
        "quark-export-list",
        with_config(quantization_config={"quant_method": "quark", "export": [1]}),
        1,
        "layer-refused: ValueError: The export key should be included",
    ),
    Case(
        "quark-kv-cache-group-string",
        with_config(
            quantization_config={"quant_method": "quark", "export": {"kv_cache_group": "k"}}
        ),
        1,
        "layer-refused: TypeError: Quark export.kv_cache_group must be a list of patterns",
    ),
    Case(
        "quark-output-tensors-list",
        with_config(
            quantization_config={
                "quant_method": "quark",
                "export": {"kv_cache_group": ["*k_proj"]},
                "layer_quant_config": {"*k_proj": {"output_tensors": [1]}},
            }
        ),
        1,
        "layer-refused: AttributeError: Quark kv_cache output_tensors must be an object",
    ),
]


@pytest.mark.parametrize("json_mode", [False, True], ids=["table", "json"])
@pytest.mark.parametrize("case", CATALOGUE, ids=[c.id for c in CATALOGUE])
def test_catalogue(hostile: Any, case: Case, json_mode: bool) -> None:
    hostile.cli(case, json_mode=json_mode)


# --- the parsers alone: any JSON value in any slot is a KVScaleError or a result ---------------

JSON_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    float("inf"),
    "",
    "32",
    "\x1b[31m",
    [],
    [1],
    ["a"],
    [None],
    {},
    {"a": 1},
    {"num_bits": 8},
]
KEYS = [
    "architectures",
    "model_type",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "torch_dtype",
    "dtype",
    "layer_types",
    "hybrid_override_pattern",
    "text_config",
    "quantization_config",
    "compression_config",
]
QUANT_KEYS = [
    "quant_method",
    "kv_cache_scheme",
    "config_groups",
    "producer",
    "quantization",
    "kv_cache_quant_algo",
    "export",
    "layer_quant_config",
]


def _parse_all(config: dict[str, Any]) -> None:
    parse_model_shape(config, "/x/config.json")
    VLLM.quant_config(find_quant_config(config, None, "/x/config.json"))


@pytest.mark.parametrize("key", KEYS)
def test_every_top_level_type(ckpt_kit: SimpleNamespace, key: str) -> None:
    for value in JSON_VALUES:
        config = ckpt_kit.ct_config(2)
        config[key] = value
        try:
            _parse_all(config)
        except KVScaleError as exc:
            assert isinstance(exc, (ConfigError, LimitExceededError)), repr(exc)
            assert exc.one_line().startswith("/x/config.json: "), exc.one_line()
            assert "\n" not in exc.one_line() and len(exc.one_line()) < 300


@pytest.mark.parametrize("method", ["compressed-tensors", "fp8", "modelopt", "quark"])
@pytest.mark.parametrize("key", QUANT_KEYS)
def test_every_quantization_config_type(ckpt_kit: SimpleNamespace, method: str, key: str) -> None:
    for value in JSON_VALUES:
        config = ckpt_kit.ct_config(2)
        config["quantization_config"] = {"quant_method": method, key: value}
        for inner in ("quantization", "export"):
            if key != inner:
                config["quantization_config"].setdefault(inner, {key: value})
        try:
            _parse_all(config)
        except KVScaleError as exc:
            assert isinstance(exc, ConfigError), repr(exc)


def test_messages_name_the_full_path(ckpt_kit: SimpleNamespace) -> None:
    """Config types are validated with the real path of config.json."""
    from kvscale.core.inspect import inspect_checkpoint

    directory = ckpt_kit.make(config=ckpt_kit.ct_config(2, num_hidden_layers="2"))
    with pytest.raises(ConfigError) as excinfo:
        inspect_checkpoint(directory)
    assert excinfo.value.path == str(directory / "config.json")


def test_verify_fails_when_the_engine_refuses_every_layer(ckpt_kit: SimpleNamespace) -> None:
    from support.cli import CliRunner

    from kvscale.cli import app

    config = ckpt_kit.ct_config(2)
    config["quantization_config"]["kv_cache_scheme"] = "fp8"
    path = ckpt_kit.make(config=config)
    result = CliRunner().invoke(app, ["verify", str(path)])
    assert result.exit_code == 1
