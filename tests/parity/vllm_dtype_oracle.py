#!/usr/bin/env python3
"""Oracle: what vLLM 0.33.0 does with every `--kv-cache-dtype` and `--kv-cache-dtype-skip-layers`.

    python tests/parity/vllm_dtype_oracle.py --vllm-src /tmp/vllm_dl/src \
        --transformers-src /tmp/tf_src \
        --out tests/parity/vllm_dtype_expected.json \
        --backends-out tests/parity/vllm_backends.json

An extension of vllm_oracle.py (whose `VllmTree` / `VllmCode` it uses): vLLM is not installed
or imported; its definitions are taken out of the extracted wheel by name and executed. On top
of the FP8 checkpoint path that vllm_oracle.py executes, this runs, verbatim:

* the value checks: `CacheDType` / `KV_CACHE_DTYPES`, `CacheConfig._validate_cache_dtype`,
  `VllmConfig._reject_mismatched_float_kv_cache`;
* `EngineArgs.create_engine_config`: the model-level sliding window,
  `resolve_kv_cache_dtype_string`, the TurboQuant/UltraQuant boundary union
  (`TurboQuantConfig.get_boundary_skip_layers`);
* `ModelConfig.get_sliding_window` / `is_hybrid` / the `sliding_window == 0` rule; the ModelOpt
  `override_quantization_method` chain in the order of `ModelConfig._verify_quantization`;
* `Attention.__init__` up to backend selection (per-layer vs model-level window, the
  compressed-tensors promotion, the skip-layer rule with `extract_layer_index`, the storage
  dtype) and `_init_kv_cache_quant` (the fp8_e5m2 refusal); the models' own per-layer window
  statements (LlamaAttention, Gemma3Attention, NemotronHAttention);
* `ModelOptNvFp4Config` next to the FP8 configs; every `process_weights_after_loading`;
* for the backend table: `supported_kv_cache_dtypes` and the other class attributes of every
  backend in the registry, their `customize_spec` on `FullAttentionSpec` (bytes per token),
  the dtype/capability/head-size checks with a stub platform, CUDA's backend priorities.

The `transformers` config classes build the HF config from config.json (vLLM does the same via
`AutoConfig`); pass `--transformers-src` to use a release inside vLLM 0.33.0's pin
(>=5.16.1,<5.21), e.g. 5.20.2 extracted from its wheel.

Must run without `python -O`: vLLM's `assert` statements are part of its behaviour.
"""

from __future__ import annotations
import __future__

import argparse
import ast
import builtins
import contextlib
import copy
import functools
import importlib.util
import itertools
import json
import math
import os
import platform as _pyplatform
import sys
import tempfile
import types
import typing
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SCHEMA = "kvscale.vllm-dtype-parity/1"
BACKENDS_SCHEMA = "kvscale.vllm-backends/1"


def _load(name: str, file: str) -> types.ModuleType:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


vo = _load("kvscale_parity_vllm_oracle", "vllm_oracle.py")
VllmTree = vo.VllmTree

F_ATTN = vo.F_ATTN
F_MODELOPT = vo.F_MODELOPT
F_LLAMA = vo.F_LLAMA
F_GEMMA3 = vo.F_GEMMA3
F_NEMOTRON_H = vo.F_NEMOTRON_H
F_MUTILS = vo.F_MUTILS
F_TORCH_UTILS = vo.F_TORCH_UTILS
F_KVI = vo.F_KVI
F_CACHE_CFG = vo.F_CACHE_CFG
F_ARGS = "engine/arg_utils.py"
F_MODEL_CFG = "config/model.py"
F_VLLM_CFG = "config/vllm.py"
F_TQ = "model_executor/layers/quantization/turboquant/config.py"
F_MLA = "model_executor/layers/attention/mla_attention.py"
F_BACKEND = "v1/attention/backend.py"
F_REGISTRY = "v1/attention/backends/registry.py"
F_IFACE = "platforms/interface.py"
F_CUDA = "platforms/cuda.py"
F_ROCM = "platforms/rocm.py"

# ======================================================================================
# compiling vLLM definitions (with the file's own `from __future__ import annotations`)
# ======================================================================================


def _future_flags(tree: Any, rel: str) -> int:
    for node in tree.tree(rel).body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "__future__"
            and any(a.name == "annotations" for a in node.names)
        ):
            return int(__future__.annotations.compiler_flag)
    return 0


def vcompile(tree: Any, rel: str, nodes: Sequence[ast.stmt]) -> types.CodeType:
    """VllmTree.compile, plus the compiler flags of the file the nodes come from (a file with
    `from __future__ import annotations` keeps its annotations as strings)."""
    module = ast.Module(body=[copy.deepcopy(n) for n in nodes], type_ignores=[])
    ast.fix_missing_locations(module)
    return compile(
        module, str(tree.path(rel)), "exec", flags=_future_flags(tree, rel), dont_inherit=True
    )


def vexec(tree: Any, rel: str, qualnames: Sequence[str], ns: dict[str, Any]) -> None:
    exec(vcompile(tree, rel, [tree.node(rel, q) for q in qualnames]), ns)


def vclass(
    tree: Any,
    rel: str,
    name: str,
    bases: Sequence[str],
    members: Sequence[ast.stmt | str],
    ns: dict[str, Any],
) -> type:
    """A class `name` whose body is verbatim members of vLLM classes in `rel` (qualified
    names, or AST nodes already taken out of the file)."""
    body = [copy.deepcopy(tree.node(rel, m) if isinstance(m, str) else m) for m in members]
    kw: dict[str, Any] = {"type_params": []} if "type_params" in ast.ClassDef._fields else {}
    cls = ast.ClassDef(
        name=name,
        bases=[ast.Name(id=b, ctx=ast.Load()) for b in bases],
        keywords=[],
        body=body or [ast.Pass()],
        decorator_list=[],
        **kw,
    )
    ast.copy_location(cls, body[0] if body else ast.Pass(lineno=1, col_offset=0))
    exec(vcompile(tree, rel, [cls]), ns)
    return typing.cast(type, ns[name])


def statements(
    tree: Any, rel: str, func: str, pred: Callable[[ast.stmt], bool], expect: int
) -> list[ast.stmt]:
    return list(tree.statements(rel, func, pred, expect))


def _assigns(s: ast.stmt, *names: str) -> bool:
    if isinstance(s, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id in names for t in s.targets)
    if isinstance(s, ast.AnnAssign):
        return isinstance(s.target, ast.Name) and s.target.id in names
    return False


def _if_test(s: ast.stmt, text: str) -> bool:
    return isinstance(s, ast.If) and text in ast.unparse(s.test)


class _Identity:
    """`@field_validator(...)`, `@model_validator(...)`: pydantic's decorators keep the
    function; the oracle calls the validator directly."""

    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def __call__(self, fn: Any) -> Any:
        return fn


AttentionType = SimpleNamespace(
    DECODER="decoder",
    ENCODER="encoder",
    ENCODER_ONLY="encoder_only",
    ENCODER_DECODER="encoder_decoder",
)


class _ImplStub:
    """The backend impl: only its process_weights_after_loading is called (no in-tree
    backend changes the scale values in it, see tests/parity/README.md)."""

    def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
        pass


# ======================================================================================
# vLLM's dtype code, executed
# ======================================================================================


class DtypeCode:
    """The definitions vllm_oracle.py executes, plus the kv-cache-dtype machinery."""

    def __init__(self, tree: Any) -> None:
        self.tree = t = tree
        self.code = code = vo.VllmCode(tree)
        self.logger = code.logger
        ns = code.namespaces
        ns_kvi, ns_at, ns_mo, ns_mu = (
            ns[vo.F_KVI],
            ns[vo.F_ATTN],
            ns[vo.F_MODELOPT],
            ns[vo.F_MUTILS],
        )
        self.KVQuantMode = ns_kvi["KVQuantMode"]
        self.get_kv_quant_mode = ns_kvi["get_kv_quant_mode"]
        self.is_quantized_kv_cache = ns_kvi["is_quantized_kv_cache"]
        self.kv_cache_uses_per_token_head_scales = ns_kvi["kv_cache_uses_per_token_head_scales"]

        def base(**extra: Any) -> dict[str, Any]:
            d: dict[str, Any] = {
                "__builtins__": builtins,
                # a module in sys.modules: dataclasses resolves string annotations there
                "__name__": __name__,
                "torch": torch,
                "nn": nn,
                "logger": self.logger,
                "Any": Any,
                "Literal": typing.Literal,
                "ClassVar": typing.ClassVar,
                "TYPE_CHECKING": False,
                "cast": typing.cast,
            }
            d.update(extra)
            return d

        # --- torch_utils: storage dtypes, nvfp4 layout ----------------------------------
        ns_tu = base(ModelConfig=object)
        vexec(
            t,
            F_TORCH_UTILS,
            [
                "STR_DTYPE_TO_TORCH_DTYPE",
                "get_dtype_size",
                "kv_cache_dtype_str_to_dtype",
                "nvfp4_kv_cache_full_dim",
            ],
            ns_tu,
        )
        self.STR_DTYPE_TO_TORCH_DTYPE = ns_tu["STR_DTYPE_TO_TORCH_DTYPE"]
        self.get_dtype_size = ns_tu["get_dtype_size"]
        self.nvfp4_kv_cache_full_dim = ns_tu["nvfp4_kv_cache_full_dim"]
        self.kv_cache_dtype_str_to_dtype = ns_tu["kv_cache_dtype_str_to_dtype"]

        # --- config/cache.py: the accepted values and their validation ------------------
        ns_cc = base(
            get_args=typing.get_args,
            Protocol=typing.Protocol,
            runtime_checkable=typing.runtime_checkable,
            STR_DTYPE_TO_TORCH_DTYPE=self.STR_DTYPE_TO_TORCH_DTYPE,
            KVQuantMode=self.KVQuantMode,
            is_quantized_kv_cache=self.is_quantized_kv_cache,
            kv_cache_uses_per_token_head_scales=self.kv_cache_uses_per_token_head_scales,
            field_validator=_Identity,
            model_validator=_Identity,
        )
        vexec(
            t,
            F_CACHE_CFG,
            [
                "CacheDType",
                "KV_CACHE_DTYPES",
                "KVCacheDTypeHandler",
                "_KV_CACHE_DTYPE_HANDLERS",
                "register_kv_cache_dtype",
                "get_kv_cache_dtype_handler",
                "is_known_kv_cache_dtype",
            ],
            ns_cc,
        )
        self.KV_CACHE_DTYPES: list[str] = ns_cc["KV_CACHE_DTYPES"]
        self.get_kv_cache_dtype_handler = ns_cc["get_kv_cache_dtype_handler"]
        self.CacheConfig = vclass(
            t, F_CACHE_CFG, "CacheConfig", ["object"], ["CacheConfig._validate_cache_dtype"], ns_cc
        )

        # --- config/vllm.py: explicit float16/bfloat16 against the model dtype ----------
        ns_vc = base()
        self.VllmConfig = vclass(
            t,
            F_VLLM_CFG,
            "VllmConfig",
            ["object"],
            ["VllmConfig._reject_mismatched_float_kv_cache"],
            ns_vc,
        )

        # --- config/model.py: sliding window, hybrid, quantization override order -------
        ns_mc = base()
        self.ModelConfig = vclass(
            t,
            F_MODEL_CFG,
            "ModelConfig",
            ["object"],
            ["ModelConfig.get_sliding_window", "ModelConfig.is_hybrid"],
            ns_mc,
        )
        self.code_sliding_window_zero = vcompile(
            t,
            F_MODEL_CFG,
            statements(
                t,
                F_MODEL_CFG,
                "ModelConfig.__post_init__",
                lambda s: _if_test(s, "self.get_sliding_window() == 0"),
                expect=1,
            ),
        )
        vq = t.node(F_MODEL_CFG, "ModelConfig._verify_quantization")
        overrides = [
            n
            for n in ast.walk(vq)
            if isinstance(n, ast.Assign)
            and _assigns(n, "overrides")
            and isinstance(n.value, ast.List)
        ]
        if len(overrides) != 1:
            raise LookupError("vLLM source changed: the `overrides` list in _verify_quantization")
        ns_ov: dict[str, Any] = {"__builtins__": builtins}
        exec(vcompile(t, F_MODEL_CFG, overrides), ns_ov)
        self.quantization_overrides: list[str] = ns_ov["overrides"]

        # --- engine/arg_utils.py: EngineArgs.create_engine_config pieces ----------------
        cec = "EngineArgs.create_engine_config"
        self.code_engine_resolve = vcompile(
            t,
            F_ARGS,
            statements(
                t,
                F_ARGS,
                cec,
                lambda s: (
                    _assigns(s, "sliding_window", "layer_types", "resolved_cache_dtype")
                    or _if_test(s, "layer_types is None")
                ),
                expect=4,
            ),
        )
        self.code_engine_boundary = vcompile(
            t,
            F_ARGS,
            statements(
                t,
                F_ARGS,
                cec,
                # the boundary union, and the FlashAttention-2 override (+ warning) that
                # follows it for the packed dtypes
                lambda s: (
                    _assigns(s, "uses_packed_kv_backend") or _if_test(s, "uses_packed_kv_backend")
                ),
                expect=3,
            ),
        )
        self.ns_engine = base(
            resolve_kv_cache_dtype_string=code.namespaces[vo.F_TORCH_UTILS][
                "resolve_kv_cache_dtype_string"
            ]
        )

        # --- turboquant/config.py --------------------------------------------------------
        ns_tq = base(math=math, dataclass=dataclass, logging=None)
        vexec(
            t, F_TQ, ["TQ_PRESETS", "TurboQuantConfig", "_get_full_attention_layer_indices"], ns_tq
        )
        self.TurboQuantConfig = ns_tq["TurboQuantConfig"]

        # --- models/utils.py: extract_layer_index ---------------------------------------
        vexec(t, F_MUTILS, ["extract_layer_index"], ns_mu)
        self.extract_layer_index = ns_mu["extract_layer_index"]

        # --- the models' per-layer sliding-window statements ----------------------------
        self.code_window = {
            "LlamaForCausalLM": vcompile(
                t,
                F_LLAMA,
                statements(
                    t,
                    F_LLAMA,
                    "LlamaAttention.__init__",
                    lambda s: (
                        _assigns(s, "layer_idx", "sliding_window")
                        or (isinstance(s, ast.If) and isinstance(s.test, ast.NamedExpr))
                    ),
                    expect=3,
                ),
            ),
            "Gemma3ForCausalLM": vcompile(
                t,
                F_GEMMA3,
                statements(
                    t,
                    F_GEMMA3,
                    "Gemma3Attention.__init__",
                    lambda s: (
                        _assigns(s, "layer_idx", "layer_type", "sliding_window")
                        or (
                            isinstance(s, ast.Assign)
                            and ast.unparse(s.targets[0]) == "self.is_sliding"
                        )
                    ),
                    expect=4,
                ),
            ),
            "NemotronHForCausalLM": vcompile(
                t,
                F_NEMOTRON_H,
                statements(
                    t,
                    F_NEMOTRON_H,
                    "NemotronHAttention.__init__",
                    lambda s: _assigns(s, "sliding_window"),
                    expect=1,
                ),
            ),
        }
        self.window_sources = {
            "LlamaForCausalLM": "vllm/model_executor/models/llama.py (LlamaAttention.__init__)",
            "Gemma3ForCausalLM": "vllm/model_executor/models/gemma3.py (Gemma3Attention.__init__)",
            "NemotronHForCausalLM": "vllm/model_executor/models/nemotron_h.py "
            "(NemotronHAttention.__init__)",
        }

        # --- Attention.__init__ up to backend selection ---------------------------------
        self.Attention = self._build_attention(ns_at)

        # --- MLAAttention: skip rule, sparse-MLA dtype canonicalisation -----------------
        self.code_mla_skip = vcompile(
            t,
            F_MLA,
            statements(
                t,
                F_MLA,
                "MLAAttention.__init__",
                lambda s: _if_test(s, "kv_cache_dtype_skip_layers"),
                expect=1,
            ),
        )
        ns_mla = base(
            is_quantized_kv_cache=self.is_quantized_kv_cache,
            CacheDType=str,
            AttentionBackend=object,
        )
        vexec(t, F_MLA, ["_canonicalize_sparse_mla_kv_cache_dtype"], ns_mla)
        self.canonicalize_sparse_mla = ns_mla["_canonicalize_sparse_mla_kv_cache_dtype"]

        # --- modelopt.py: the NVFP4 config and the override chain ------------------------
        ns_mo.setdefault("QuantizationConfigArgs", object)
        base_cls = ns_mo["ModelOptQuantConfigBase"]
        assert isinstance(base_cls, type)
        nvfp4 = vclass(
            t,
            F_MODELOPT,
            "ModelOptNvFp4Config",
            ["ModelOptQuantConfigBase"],
            [
                "ModelOptNvFp4Config.__init__",
                "ModelOptNvFp4Config.get_name",
                "ModelOptNvFp4Config.get_supported_act_dtypes",
                "ModelOptNvFp4Config.get_min_capability",
                "ModelOptNvFp4Config.override_quantization_method",
                "ModelOptNvFp4Config._from_config",
            ],
            ns_mo,
        )
        exec(
            vcompile(
                t,
                F_MODELOPT,
                [
                    s
                    for s in t.tree(F_MODELOPT).body
                    if isinstance(s, ast.Assign)
                    and ast.unparse(s.targets[0]) == "ModelOptNvFp4Config.KVCacheMethodCls"
                ],
            ),
            ns_mo,
        )
        fp8 = code.quant_classes["modelopt"]
        # override_quantization_method of ModelOptFp8Config (not in vllm_oracle.py's class)
        ns_mo["_OracleModelOptFp8Base"] = fp8
        fp8_with_override = vclass(
            t,
            F_MODELOPT,
            "ModelOptFp8Config",
            ["_OracleModelOptFp8Base"],
            ["ModelOptFp8Config.override_quantization_method"],
            ns_mo,
        )
        mixed = vclass(
            t,
            F_MODELOPT,
            "ModelOptMixedPrecisionConfig",
            ["ModelOptQuantConfigBase"],
            [
                "ModelOptMixedPrecisionConfig.get_name",
                "ModelOptMixedPrecisionConfig.override_quantization_method",
            ],
            ns_mo,
        )
        self.override_classes: dict[str, Any] = {
            "modelopt": fp8_with_override,
            "modelopt_fp4": nvfp4,
            "modelopt_mixed": mixed,
        }
        self.quant_classes = dict(code.quant_classes)
        self.quant_classes["modelopt"] = fp8_with_override
        self.quant_classes["modelopt_fp4"] = nvfp4

        # --- fake modules for the local imports inside the executed functions ----------
        self.stub_modules: dict[str, dict[str, Any]] = {
            k: dict(v) for k, v in code.stub_modules.items()
        }
        self.stub_modules["vllm.model_executor.models.utils"]["extract_layer_index"] = (
            self.extract_layer_index
        )
        self.stub_modules["vllm.model_executor.layers.quantization.turboquant.config"] = {
            "TurboQuantConfig": self.TurboQuantConfig
        }
        self.current_vllm_config: Any = None
        self.stub_modules["vllm.config"] = {
            "get_current_vllm_config_or_none": lambda: self.current_vllm_config
        }
        self.stub_modules["vllm.v1.kv_cache_interface"] = {
            "is_quantized_kv_cache": self.is_quantized_kv_cache,
            "get_kv_quant_mode": self.get_kv_quant_mode,
        }

    # ----------------------------------------------------------------------------------
    def _build_attention(self, ns_at: dict[str, Any]) -> type:
        """`Attention` with vLLM's own `__init__`, cut before the backend selection
        (`if attn_backend is None:` ... impl construction, compilation registry), followed by
        vLLM's `_init_kv_cache_quant(self, quant_config, prefix)` statement. One harness
        statement is appended: it keeps `__init__`'s locals (the skip decision, the window)
        for the record. `process_weights_after_loading` is vLLM's (vllm_oracle.py)."""
        t = self.tree
        init = t.node(F_ATTN, "Attention.__init__")
        assert isinstance(init, ast.FunctionDef)
        body = init.body
        stop = next(i for i, s in enumerate(body) if _if_test(s, "attn_backend is None"))
        calls = [
            s
            for s in body
            if isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and ast.unparse(s.value.func) == "_init_kv_cache_quant"
        ]
        if len(calls) != 1:
            raise LookupError(
                "vLLM source changed: _init_kv_cache_quant call in Attention.__init__"
            )
        harness = ast.parse("self._oracle_init_locals = dict(locals())").body[0]
        ast.copy_location(harness, calls[0])
        ast.fix_missing_locations(harness)
        func = copy.deepcopy(init)
        func.body = [copy.deepcopy(s) for s in body[:stop]] + [copy.deepcopy(calls[0]), harness]
        code = self.code

        class _AttentionBase(code.Attention):  # type: ignore[misc, name-defined]
            """isinstance(layer, Attention) in the quant configs sees vllm_oracle.py's class."""

            def __init__(self, *a: Any, **k: Any) -> None:
                nn.Module.__init__(self)

        ns = dict(ns_at)
        ns.update(
            {
                "_AttentionBase": _AttentionBase,
                "get_current_vllm_config": lambda: self.current_vllm_config,
                "kv_cache_dtype_str_to_dtype": self.kv_cache_dtype_str_to_dtype,
                "CacheConfig": object,
                "AttentionBackend": object,
                "AttentionType": AttentionType,
                "QuantFP8": None,
                "GroupShape": None,
            }
        )
        return vclass(t, F_ATTN, "Attention", ["_AttentionBase"], [func], ns)


# ======================================================================================
# running one case
# ======================================================================================

# the host-side copies backends read (FlashInfer, AITER, CPU), in this order
HOST_FIELDS = (
    "k_scale_float",
    "v_scale_float",
    "q_scale_float",
    "prob_scale_float",
    "k_scale_cpu",
    "v_scale_cpu",
)
_MODEL_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_NO_SCALES = {"k_scale": None, "v_scale": None, "q_scale": None, "prob_scale": None}


def _hf_config(config_dict: dict[str, Any]) -> Any:
    """config.json -> the transformers config class of its model_type (what vLLM's
    `get_config` gets from `AutoConfig`), without `quantization_config`: vLLM's own
    statements attach that (from config.json, else hf_quant_config.json)."""
    from transformers import CONFIG_MAPPING

    d = {k: v for k, v in config_dict.items() if k != "quantization_config"}
    return CONFIG_MAPPING[d["model_type"]].from_dict(d)


def _arch_is_hybrid(tree: Any, arch: str) -> bool:
    """`_ModelInfo.is_hybrid` of the architecture: its class derives from `IsHybrid`
    (models/interfaces.py), resolved through registry.py and the class bases."""
    idx = vo._SrcIndex(tree)
    reg = tree.tree("model_executor/models/registry.py")
    ns: dict[str, Any] = {"__builtins__": builtins}
    for node in reg.body:
        if isinstance(node, ast.Assign) and _assigns(node, "_TEXT_GENERATION_MODELS"):
            exec(compile(ast.Module(body=[node], type_ignores=[]), "registry", "exec"), ns)
    modname, clsname = ns["_TEXT_GENERATION_MODELS"][arch]
    rel = idx.rel_for_module(modname)
    got = idx.resolve_class(rel, clsname)
    assert got is not None, arch
    mro, unresolved = idx.mro(*got)
    return any(c.name == "IsHybrid" for _, c in mro) or "IsHybrid" in unresolved


def _enc_dtype(d: Any) -> str:
    return str(d).removeprefix("torch.")


class DtypeOracle:
    def __init__(self, vllm_src: str) -> None:
        self.tree = VllmTree(vllm_src)
        self.d = DtypeCode(self.tree)
        self.cases = _load("kvscale_parity_dtype_cases", "dtype_cases.py")
        self._hybrid: dict[str, bool] = {}
        self._window_ctx: tuple[Any, str] | None = None
        self._collect: dict[str, str] | None = None

    # -- the per-layer window, as the model's attention module computes it --------------
    def _per_layer_window(self, attn_prefix: str) -> Any:
        assert self._window_ctx is not None
        hf_config, arch = self._window_ctx
        block_prefix = attn_prefix.removesuffix(".attn")
        local: dict[str, Any] = {
            "config": hf_config,
            "prefix": block_prefix,
            "self": SimpleNamespace(),
        }
        exec(
            self.d.code_window[arch],
            {"__builtins__": builtins, "extract_layer_index": self.d.extract_layer_index},
            local,
        )
        return local["sliding_window"]

    def _attention_factory(self) -> Callable[..., nn.Module]:
        d = self.d

        def make(
            num_heads: int,
            head_size: int,
            scale: float,
            num_kv_heads: int | None = None,
            cache_config: Any = None,
            quant_config: Any = None,
            prefix: str = "",
        ) -> nn.Module:
            window = self._per_layer_window(prefix)
            try:
                layer = d.Attention(
                    num_heads,
                    head_size,
                    scale,
                    num_kv_heads=num_kv_heads,
                    cache_config=cache_config,
                    quant_config=quant_config,
                    per_layer_sliding_window=window,
                    prefix=prefix,
                )
            except Exception as e:
                if self._collect is None:
                    raise
                self._collect[prefix] = vo.fmt_exc(e)
                return nn.Module()
            layer.impl = _ImplStub()
            return typing.cast(nn.Module, layer)

        return make

    @functools.cached_property
    def models(self) -> dict[str, type]:
        code = self.d.code
        real = code.Attention
        code.Attention = self._attention_factory()
        try:
            return typing.cast(dict[str, type], vo.build_model_classes(code))
        finally:
            code.Attention = real

    # -- engine start -------------------------------------------------------------------
    def _configure(self, d: Path, case: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
        dc, code = self.d, self.d.code
        options = case["options"]
        config_dict = json.loads((d / "config.json").read_text())
        hf_config = _hf_config(config_dict)
        arch = config_dict["architectures"][0]

        # transformers_utils/config.py get_config: quantization_config or hf_quant_config.json
        def file_or_path_exists(model: str, name: str, revision: Any) -> bool:
            return (Path(model) / name).is_file()

        def get_hf_file_to_dict(name: str, model: str, revision: Any) -> Any:
            return json.loads((Path(model) / name).read_text())

        exec(
            code.code_read_quant_config,
            {
                "__builtins__": builtins,
                "config_dict": config_dict,
                "config": hf_config,
                "model": str(d),
                "revision": None,
                "file_or_path_exists": file_or_path_exists,
                "get_hf_file_to_dict": get_hf_file_to_dict,
                "envs": SimpleNamespace(is_set=lambda name: True, VLLM_USE_DEEP_GEMM_E8M0=True),
                "os": os,
                "logger": dc.logger,
            },
        )
        conv = code.Convertor()
        quant_cfg = conv._normalize_quantization_config(hf_config)
        quant_method = (quant_cfg or {}).get("quant_method") or None
        out["quant_method"] = quant_method
        # ModelConfig._verify_quantization: the overrides, in its order (only the ModelOpt
        # family is executed; the other methods' overrides do not claim these configs)
        quantization = quant_method
        if quant_cfg is not None:
            for name in dc.quantization_overrides:
                cls = dc.override_classes.get(name)
                if cls is None:
                    continue
                got = cls.override_quantization_method(quant_cfg, None, hf_config=hf_config)
                if got is not None:
                    quantization = got
                    break
        out["quantization"] = quantization

        if arch not in self._hybrid:
            self._hybrid[arch] = _arch_is_hybrid(self.tree, arch)
        model_dtype = _MODEL_DTYPES[options["model_dtype"]]
        model_config = object.__new__(dc.ModelConfig)
        model_config.hf_config = hf_config
        model_config.hf_text_config = hf_config
        model_config.dtype = model_dtype
        model_config.is_mm_prefix_lm = False
        model_config._model_info = SimpleNamespace(is_hybrid=self._hybrid[arch])
        model_config.disable_sliding_window = False
        exec(dc.code_sliding_window_zero, {"__builtins__": builtins}, {"self": model_config})
        out["model_is_hybrid"] = model_config.is_hybrid

        # EngineArgs.create_engine_config: model-level window, resolve the dtype string
        engine_args = SimpleNamespace(kv_cache_dtype=options["kv_cache_dtype"])
        local: dict[str, Any] = {"self": engine_args, "model_config": model_config}
        exec(dc.code_engine_resolve, dc.ns_engine, local)
        resolved = local["resolved_cache_dtype"]
        out["resolved_kv_cache_dtype"] = resolved
        out["model_sliding_window"] = local["sliding_window"]
        # CacheConfig(cache_dtype=resolved): pydantic runs the field validator
        dc.CacheConfig._validate_cache_dtype(resolved)
        cache_config = SimpleNamespace(
            cache_dtype=resolved,
            kv_cache_dtype_skip_layers=list(options["skip_layers"]),
            sliding_window=local["sliding_window"],
            enable_prefix_caching=False,
        )
        local.update(
            cache_config=cache_config,
            attention_config=SimpleNamespace(flash_attn_version=None),
            logger=dc.logger,
        )
        exec(dc.code_engine_boundary, {**dc.ns_engine, "logger": dc.logger}, local)
        out["skip_layers_effective"] = list(cache_config.kv_cache_dtype_skip_layers)
        # VllmConfig.__post_init__
        vllm_config = object.__new__(dc.VllmConfig)
        vllm_config.cache_config = cache_config
        vllm_config.model_config = model_config
        vllm_config._reject_mismatched_float_kv_cache()

        quant_config = None
        if quantization is not None:
            cls = dc.quant_classes.get(quantization)
            if cls is None:
                raise NotImplementedError(f"quantization {quantization!r} is not modelled")
            hf_quant_config = getattr(hf_config, "quantization_config", None)
            conv.hf_config = conv.hf_text_config = hf_config
            mc = SimpleNamespace(
                model_arch_config=SimpleNamespace(
                    total_num_attention_heads=conv.get_total_num_attention_heads(),
                    total_num_kv_heads=conv.get_total_num_kv_heads(),
                )
            )
            exec(
                code.code_heads_piping,
                {"__builtins__": builtins},
                {"hf_quant_config": hf_quant_config, "model_config": mc},
            )
            cfg = hf_quant_config
            if quantization.startswith("modelopt"):  # make_checkpoint_config
                cfg = {**cfg, "_online_quantization_args": None}
            quant_config = cls.from_config(cfg)
        return {
            "hf_config": hf_config,
            "arch": arch,
            "quant_config": quant_config,
            "cache_config": cache_config,
            "model_config": model_config,
            "vllm_config": SimpleNamespace(model_config=model_config, cache_config=cache_config),
            "model_dtype": model_dtype,
        }

    @contextlib.contextmanager
    def _engine(self, setup: dict[str, Any]) -> Iterator[None]:
        old = torch.get_default_dtype()
        torch.set_default_dtype(setup["model_dtype"])
        self.d.current_vllm_config = setup["vllm_config"]
        self._window_ctx = (setup["hf_config"], setup["arch"])
        try:
            yield
        finally:
            torch.set_default_dtype(old)
            self.d.current_vllm_config = None
            self._window_ctx = None

    def _fresh_model(self, setup: dict[str, Any]) -> tuple[nn.Module, Any]:
        cc = copy.copy(setup["cache_config"])
        cc.kv_cache_dtype_skip_layers = list(cc.kv_cache_dtype_skip_layers)
        with self._engine(setup):
            model = self.models[setup["arch"]](setup["hf_config"], setup["quant_config"], cc)
        return model, cc

    def _attn_layers(self, model: nn.Module) -> dict[str, Any]:
        return {m.layer_name: m for m in model.modules() if isinstance(m, self.d.Attention)}

    def run_case(self, case: dict[str, Any], workdir: Path) -> dict[str, Any]:
        dc = self.d
        d = self.cases.write_case(case, workdir / case["name"])
        layer_names = self.cases.engine_layer_names(case["config"])
        dc.code.platform.fnuz = case["options"]["platform"] == "fnuz"
        dc.logger.take()
        out: dict[str, Any] = {
            "group": case["group"],
            "description": case["description"],
            "producer": case["producer"],
            "model": case["model"],
            "options": dict(case["options"]),
            "architecture": case["config"]["architectures"][0],
            "quant_method": None,
            "quantization": None,
            "model_is_hybrid": None,
            "resolved_kv_cache_dtype": None,
            "model_sliding_window": None,
            "skip_layers_effective": None,
            "cache_dtype_after_build": None,
            "engine_error": None,
            "engine_warnings": [],
            "layers": [],
        }

        def refused(msg: str, per_layer: dict[str, str] | None = None) -> dict[str, Any]:
            out["engine_error"] = msg
            out["engine_warnings"] += dc.logger.take()
            if not out["layers"]:
                out["layers"] = [{"name": n, "error": msg, **_NO_SCALES} for n in layer_names]
            return out

        with vo._stub_modules(dc.stub_modules):
            old = torch.get_default_dtype()
            torch.set_default_dtype(_MODEL_DTYPES[case["options"]["model_dtype"]])
            try:
                setup = self._configure(d, case, out)
            except Exception as e:
                return refused(vo.fmt_exc(e))
            finally:
                torch.set_default_dtype(old)

            # build once, recording every layer's own refusal instead of stopping at the
            # first one (vLLM stops at the first: that is the engine error)
            self._collect = {}
            try:
                model, cc = self._fresh_model(setup)
            except Exception as e:
                self._collect = None
                return refused(vo.fmt_exc(e))
            own_errors, self._collect = self._collect, None
            out["cache_dtype_after_build"] = cc.cache_dtype
            out["engine_warnings"] += dc.logger.take()
            built = self._attn_layers(model)
            for name in layer_names:
                out["layers"].append(self._describe(name, built.get(name), own_errors.get(name)))
            first = next((own_errors[n] for n in layer_names if n in own_errors), None)
            if first is not None:
                out["engine_error"] = first
                return out

            files = self._weight_files(d)
            for rec in out["layers"]:
                self._load_layer(setup, files, rec)
        return out

    def _describe(self, name: str, attn: Any, error: str | None) -> dict[str, Any]:
        dc = self.d
        rec: dict[str, Any] = {"name": name, "layer_index": dc.extract_layer_index(name)}
        if attn is None:
            rec.update(error=error, **_NO_SCALES)
            return rec
        loc = attn._oracle_init_locals
        del attn._oracle_init_locals
        kv = attn.kv_cache_dtype
        mode = dc.get_kv_quant_mode(kv)
        rec.update(
            sliding_window=attn.sliding_window,
            skipped=bool(loc.get("skip", False)),
            kv_cache_dtype=kv,
            kv_quant_mode=mode.name,
            storage_dtype=_enc_dtype(attn.kv_cache_torch_dtype),
            use_per_head_quant_scales=loc["use_per_head_quant_scales"],
            kv_method=type(attn.quant_method).__name__ if hasattr(attn, "quant_method") else None,
            error=error,
            **_NO_SCALES,
        )
        return rec

    def _weight_files(self, d: Path) -> list[str]:
        files = [str(p) for p in d.glob("*.safetensors")]
        return list(
            self.d.code.ns_wu["filter_duplicate_safetensors_files"](
                files, str(d), "model.safetensors.index.json"
            )
        )

    def _load_layer(self, setup: dict[str, Any], files: list[str], rec: dict[str, Any]) -> None:
        dc = self.d
        idx = rec["layer_index"]
        model, _ = self._fresh_model(setup)
        dc.logger.take()
        attn = self._attn_layers(model)[rec["name"]]
        del attn._oracle_init_locals
        iterator = dc.code.ns_wu["safetensors_weights_iterator"]

        def weights() -> Iterator[tuple[str, torch.Tensor]]:
            for name, tensor in iterator(files, False):
                ti = vo._layer_index(name)
                if ti is None or ti == idx:
                    yield name, tensor

        try:
            with self._engine(setup):
                model.load_weights(weights())
                qm = getattr(attn, "quant_method", None)
                if isinstance(qm, dc.code.QuantizeMethodBase):
                    qm.process_weights_after_loading(attn)
                attn.process_weights_after_loading(setup["model_dtype"])
        except Exception as e:
            rec["error"] = vo.fmt_exc(e)
            rec["warnings"] = dc.logger.take()
            return
        for k in ("k_scale", "v_scale", "q_scale", "prob_scale"):
            rec[k] = vo.enc_tensor(getattr(attn, "_" + k))
        rec["host"] = [vo.enc_host(getattr(attn, "_" + k)) for k in HOST_FIELDS]
        rec["placeholders_left"] = sorted(
            n for n in ("k_scale", "v_scale", "q_scale", "prob_scale") if hasattr(attn, n)
        )
        rec["warnings"] = dc.logger.take()


# ======================================================================================
# what the cache write does with the layer's k/v scale: code reading (CUDA/HIP kernels are
# not in the wheel), recorded with the call sites; the loaded values above are executed
# ======================================================================================

_FI = "vllm/v1/attention/backends/flashinfer.py"
_FA = "vllm/v1/attention/backends/flash_attn.py"
_TR = "vllm/v1/attention/backends/triton_attn.py"
_MLA = "vllm/model_executor/layers/attention/mla_attention.py"
_UNQUANT = {
    "checkpoint_kv": "none",
    "write": "plain copy into a model-dtype cache; the k/v scale argument is not applied",
    "evidence": [f"{_FA}:1457", f"{_FI}:2847", f"{_TR}:834"],
}
_FP8 = {
    "checkpoint_kv": "per_tensor_divisor",
    "write": "reshape_and_cache_flash(key, value, ..., layer._k_scale, layer._v_scale): "
    "fp8 = cast(x / k_scale); read back as fp8 * k_scale (kv-scale-rules.md)",
    "evidence": [f"{_FA}:1457", f"{_FI}:2847", f"{_TR}:834", f"{_MLA}:857-864 (MLA)"],
}
_PER_TOKEN_HEAD = {
    "checkpoint_kv": "unused",
    "write": "triton_reshape_and_cache_flash_per_token_head_quant(key, value, ..., "
    "k_scale_cache, v_scale_cache): scales computed per (token, head) at write time; "
    "layer._k_scale was forced to 1.0 (BaseKVCacheMethod) and is not passed",
    "evidence": [f"{_TR}:811-823", "vllm/model_executor/layers/quantization/kv_cache.py:102-111"],
}
_TQ = {
    "checkpoint_kv": "unused",
    "write": "triton_turboquant_store(key, value, kv_cache, slot_mapping, PiT, midpoints, ...): "
    "no layer scale argument (keys FP8-cast or Lloyd-Max coded with an fp16 norm, values "
    "with their own scale/zero in the slot)",
    "evidence": ["vllm/v1/attention/backends/turboquant_attn.py:677-718"],
}
_NVFP4 = {
    "checkpoint_kv": "nvfp4_global_scale",
    "write": "SM100: reshape_and_cache_flash(..., cache_dtype nvfp4*, layer._k_scale, "
    "layer._v_scale); SM80/90/120: nvfp4_quantize_append_paged_kv_cache_with_slot_mapping("
    "..., layer._k_scale, layer._v_scale); read: bmm1_scale = scale * q_scale_float * "
    "k_scale_float, bmm2_scale = v_scale_float. The loaded k/v value is the NVFP4 global "
    "(per-tensor) dequantization scale, unchanged (kv-dtypes.md 4.1)",
    "evidence": [f"{_FI}:2822-2856", f"{_FI}:2223-2231"],
}
WRITE_PATHS: dict[str, dict[str, Any]] = {
    "auto": _UNQUANT,
    "float16": _UNQUANT,
    "bfloat16": _UNQUANT,
    "fp8": _FP8,
    "fp8_e4m3": _FP8,
    "fp8_e5m2": {**_FP8, "write": _FP8["write"].replace("fp8 = cast", "e5m2 = cast")},
    "fp8_inc": {
        "checkpoint_kv": "no_in_tree_backend",
        "write": "no backend in vllm/v1/attention/backends lists fp8_inc (Intel Gaudi plugin)",
        "evidence": ["vllm/config/cache.py:242 (docstring: Intel Gaudi (HPU) supports fp8_inc)"],
    },
    "fp8_ds_mla": {
        "checkpoint_kv": "unused",
        "write": "MLA only: update_kv_cache(..., 'fp8_ds_mla', layer._k_scale) -> "
        "concat_and_cache_ds_mla: 656 B/token, fp32 per-128 tile scales in the cache; the "
        "k_scale argument is ignored (mla.md 1.5)",
        "evidence": [f"{_MLA}:857-864", f"{_MLA}:1386"],
    },
    "nvfp4_ds_mla": {
        "checkpoint_kv": "unused",
        "write": "MLA only: concat_and_cache_nvfp4_ds_mla: 352 B/token, e4m3 per-16 scales "
        "in the cache, no k_scale argument (kv-dtypes.md 4.4)",
        "evidence": [f"{_MLA}:857-864", f"{_MLA}:1386"],
    },
    "turboquant_k8v4": _TQ,
    "turboquant_4bit_nc": _TQ,
    "turboquant_k3v4_nc": _TQ,
    "turboquant_3bit_nc": _TQ,
    "octave_k3v4": {
        "checkpoint_kv": "unused",
        "write": "torch.ops._C.octave_cache_store(key, value, kv_cache, slot_mapping, k_signs, "
        "v_signs, kernel_code): no layer scale argument",
        "evidence": ["vllm/v1/attention/backends/rocm_octave_attn.py:350-370"],
    },
    "ultraquant_4bit": {
        "checkpoint_kv": "unused",
        "write": "ultraquant_store(key, value, kv_cache, slot_mapping, PiT=...): no layer "
        "scale argument (UE8M0 per-32 scales in the slot)",
        "evidence": ["vllm/v1/attention/backends/ultraquant_attn.py:216-233"],
    },
    "int4_per_token_head": _PER_TOKEN_HEAD,
    "int8_per_token_head": _PER_TOKEN_HEAD,
    "fp8_per_token_head": _PER_TOKEN_HEAD,
    "nvfp4": _NVFP4,
    "nvfp4_4over6": _NVFP4,
}
WRITE_PATHS["octave_k3v3"] = WRITE_PATHS["octave_k3v4"]
WRITE_PATHS["octave_k3v3_compact"] = WRITE_PATHS["octave_k3v4"]


# ======================================================================================
# per-dtype facts, MLA rules
# ======================================================================================


def _registered_dtype_calls(tree: Any) -> list[str]:
    """Every `register_kv_cache_dtype(...)` call or decorator in the package, other than
    in the function's own module (its definition and docstring example)."""
    hits = []
    for path in sorted(tree.pkg.rglob("*.py")):
        rel = str(path.relative_to(tree.pkg))
        text = path.read_text(encoding="utf-8", errors="replace")
        if "register_kv_cache_dtype" not in text or rel == F_CACHE_CFG:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
                "register_kv_cache_dtype"
            ):
                hits.append(f"vllm/{rel}:{node.lineno}")
    return hits


class DtypeFacts:
    """Per value: storage, mode, flags; MLA skip / canonicalisation rules."""

    def __init__(self, oracle: DtypeOracle) -> None:
        self.o = oracle
        self.d = oracle.d

    def dtypes(self) -> dict[str, Any]:
        d = self.d
        out: dict[str, Any] = {}
        for name in d.KV_CACHE_DTYPES:
            mode = d.get_kv_quant_mode(name)
            out[name] = {
                "storage_dtype": (
                    "model dtype"
                    if name == "auto"
                    else _enc_dtype(d.STR_DTYPE_TO_TORCH_DTYPE[name])
                ),
                "kv_quant_mode": mode.name,
                "kv_quant_mode_value": int(mode),
                "quantized": d.is_quantized_kv_cache(name),
                "per_token_head_scales": d.kv_cache_uses_per_token_head_scales(name),
                "mode_flags": {
                    p: bool(getattr(mode, p))
                    for p in (
                        "is_per_token_head",
                        "is_nvfp4",
                        "is_turboquant",
                        "is_octave",
                        "is_ultraquant",
                        "is_custom_mode",
                    )
                },
                "handler": d.get_kv_cache_dtype_handler(name),
                "boundary_skip_layers": (
                    name.startswith("turboquant_") or name == "ultraquant_4bit"
                ),
                "cache_write": WRITE_PATHS[name],
            }
        return out

    def mla_skip(self) -> list[dict[str, Any]]:
        """MLAAttention.__init__'s skip statement: indices only."""
        d = self.d
        rows = []
        for prefix, skip in itertools.product(
            ("model.layers.0.self_attn.attn", "model.layers.1.self_attn.attn"),
            (["0"], ["sliding_window"], ["01"], ["sliding_window", "1"]),
        ):
            local: dict[str, Any] = {
                "cache_config": SimpleNamespace(kv_cache_dtype_skip_layers=skip),
                "prefix": prefix,
                "kv_cache_dtype": "fp8",
            }
            exec(d.code_mla_skip, {"__builtins__": builtins, "logger": d.logger}, local)
            rows.append(
                {"prefix": prefix, "skip_layers": skip, "kv_cache_dtype": local["kv_cache_dtype"]}
            )
        d.logger.take()
        return rows

    def mla_sparse_canonical(self) -> dict[str, dict[str, str]]:
        """_canonicalize_sparse_mla_kv_cache_dtype per backend name and dtype."""
        d = self.d
        out: dict[str, dict[str, str]] = {}
        for backend in ("FLASHMLA_SPARSE", "FLASHINFER_MLA_SPARSE_SM120", "FLASHINFER_MLA_SPARSE"):
            be = SimpleNamespace(get_name=lambda b=backend: b)
            out[backend] = {n: d.canonicalize_sparse_mla(be, n) for n in d.KV_CACHE_DTYPES}
        return out


# ======================================================================================
# backends: the classes of the registry, loaded from their files and asked
# ======================================================================================
#
# A backend module imports CUDA libraries (flashinfer, flash-attn, the compiled ops); the
# oracle does not import it. `VllmLinker` compiles a backend class from its file with its
# methods and class attributes verbatim (method annotations dropped: they are never
# evaluated by vLLM's own code paths used here) and resolves every global name the methods
# touch lazily: vLLM definitions from their files, `current_platform` from a stub that knows
# only the device capability being asked about. A name that needs the machine (a probe of
# flashinfer/flash-attn, an env var, the ROCm arch) raises `Unmodelled(name)`, which is
# recorded as such instead of a guess.

CAPABILITIES = {
    "cuda": [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)],
    "rocm": [(9, 4), (9, 5), (11, 0), (12, 0)],
    "cpu": [None],
    "xpu": [None],
}
BACKEND_HEAD_SIZES = (64, 80, 96, 128, 192, 256, 512, 576)


class Unmodelled(BaseException):  # noqa: N818 - not an error of the code being run
    """A name whose value depends on the machine (or on code not modelled): the question
    asked of the backend has no machine-independent answer. BaseException, so that vLLM's
    own `except Exception` blocks do not turn it into a silent False."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class _Probe:
    """An object every attribute of which is unmodelled (vllm.envs, flashinfer, ...)."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        raise Unmodelled(f"{self._name}.{attr}")

    def __call__(self, *a: Any, **k: Any) -> Any:
        raise Unmodelled(self._name)


class _TorchProxy:
    """torch, except its machine probes (torch.cuda, torch.cpu, torch.version)."""

    _probes = ("cuda", "cpu", "version", "backends", "xpu", "ops")

    def __getattr__(self, attr: str) -> Any:
        if attr in self._probes:
            return _Probe(f"torch.{attr}")
        return getattr(torch, attr)


_STDLIB = (
    "math",
    "functools",
    "itertools",
    "dataclasses",
    "enum",
    "typing",
    "collections",
    "collections.abc",
    "types",
    "abc",
    "fractions",
)


def _identity(fn: Any) -> Any:
    return fn


_SAFE_NAMES: dict[str, Any] = {
    "dataclass": dataclass,
    "field": field,
    "fields": fields,
    "replace": replace,
    "ClassVar": typing.ClassVar,
    "Any": Any,
    "TYPE_CHECKING": False,
    "cast": typing.cast,
    "Literal": typing.Literal,
    "Generic": typing.Generic,
    "TypeVar": typing.TypeVar,
    "Protocol": typing.Protocol,
    "NamedTuple": typing.NamedTuple,
    "Self": typing.Self if hasattr(typing, "Self") else Any,
    "Fraction": Fraction,
    "partial": functools.partial,
    "cache": functools.cache,
    "lru_cache": functools.lru_cache,
    "cached_property": functools.cached_property,
    "override": _identity,
    "wraps": functools.wraps,
    "abstractmethod": _identity,
    "ABC": object,
    "Enum": __import__("enum").Enum,
    "IntEnum": __import__("enum").IntEnum,
    "math": math,
    "torch": _TorchProxy(),
    "Counter": __import__("collections").Counter,
    "Collection": typing.Collection,
    "Sequence": typing.Sequence,
    "prod": math.prod,
    "CacheDType": str,
}


class _LazyModule(dict):  # type: ignore[type-arg]
    """The globals of one vLLM file: names are compiled from the file when first used."""

    def __init__(self, linker: VllmLinker, rel: str) -> None:
        super().__init__(__builtins__=builtins, __name__=__name__)
        self.linker = linker
        self.rel = rel

    def __missing__(self, name: str) -> Any:
        if hasattr(builtins, name) or name.startswith("__"):
            raise KeyError(name)
        value = self.linker.resolve(self.rel, name)
        self[name] = value
        return value


class _UnmodelledAttr:
    """A class member whose decorator or value needs the machine (or an unmodelled
    library): reading it raises Unmodelled."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        raise Unmodelled(self.name)


class _Overlay(dict):  # type: ignore[type-arg]
    """Scratch names over a _LazyModule (class-body attributes defined earlier)."""

    def __init__(self, base: _LazyModule) -> None:
        super().__init__(__builtins__=builtins)
        self.base = base

    def __missing__(self, name: str) -> Any:
        if hasattr(builtins, name):
            raise KeyError(name)
        return self.base[name]


class _VllmImporter:
    """`from vllm.x import y` inside a method: a module whose attributes come from the
    linker (installed on sys.meta_path only while backends are asked)."""

    def __init__(self, linker: VllmLinker) -> None:
        self.linker = linker

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "vllm" and not fullname.startswith("vllm."):
            return None
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: Any) -> types.ModuleType:
        mod = types.ModuleType(spec.name)
        linker, dotted = self.linker, spec.name

        def getattr_(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            rel = linker.idx.rel_for_module(dotted)
            if rel is None:
                raise Unmodelled(f"{dotted}.{name}")
            return linker.module(rel)[name]

        mod.__getattr__ = getattr_  # type: ignore[method-assign]
        mod.__path__ = []
        return mod

    def exec_module(self, module: types.ModuleType) -> None:
        pass


class VllmLinker:
    def __init__(self, oracle: DtypeOracle) -> None:
        self.tree = oracle.tree
        self.d = oracle.d
        self.idx = vo._SrcIndex(self.tree)
        self._modules: dict[str, _LazyModule] = {}
        self.capability: tuple[int, int] | None = None
        self.vendor = "cuda"
        self.platform = self._platform_class()
        kvi = self.module(F_KVI)
        for k in (
            "KVQuantMode",
            "get_kv_quant_mode",
            "is_quantized_kv_cache",
            "kv_cache_uses_per_token_head_scales",
        ):
            kvi[k] = self.d.code.namespaces[vo.F_KVI][k]

    def module(self, rel: str) -> _LazyModule:
        mod = self._modules.get(rel)
        if mod is None:
            mod = self._modules[rel] = _LazyModule(self, rel)
        return mod

    # -- the platform stub: capability and vendor only ---------------------------------
    def _platform_class(self) -> Any:
        linker = self
        iface = self.module(F_IFACE)
        DeviceCapability = iface["DeviceCapability"]

        class _PlatformMeta(type):
            def __getattr__(cls, attr: str) -> Any:
                raise Unmodelled(f"current_platform.{attr}")

        ns: dict[str, Any] = {"DeviceCapability": DeviceCapability, **_SAFE_NAMES}

        class _PlatformBase(metaclass=_PlatformMeta):
            @classmethod
            def get_device_capability(cls, device_id: int = 0) -> Any:
                cap = linker.capability
                return None if cap is None else DeviceCapability(*cap)

            @classmethod
            def is_cuda(cls) -> bool:
                return linker.vendor == "cuda"

            @classmethod
            def is_rocm(cls) -> bool:
                return linker.vendor == "rocm"

            @classmethod
            def is_cuda_alike(cls) -> bool:
                return linker.vendor in ("cuda", "rocm")

            @classmethod
            def is_xpu(cls) -> bool:
                return linker.vendor == "xpu"

            @classmethod
            def is_cpu(cls) -> bool:
                return linker.vendor == "cpu"

        ns["_PlatformBase"] = _PlatformBase
        return vclass(
            self.tree,
            F_IFACE,
            "Platform",
            ["_PlatformBase"],
            [
                "Platform.has_device_capability",
                "Platform.is_device_capability",
                "Platform.is_device_capability_family",
            ],
            ns,
        )

    # -- name resolution ---------------------------------------------------------------
    def resolve(self, rel: str, name: str) -> Any:
        if name == "current_platform":
            return self.platform
        if name in ("envs", "logger"):
            return _Probe(name) if name == "envs" else self.d.logger
        if name in _SAFE_NAMES:
            return _SAFE_NAMES[name]
        info = self.idx.info(rel)
        tree = self.tree.tree(rel)
        if name in info["classes"]:
            return self.build_class(rel, info["classes"][name])
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                ns = self.module(rel)
                self._preresolve_class_bodies(ns, node)
                exec(vcompile(self.tree, rel, [node]), ns)
                return dict.__getitem__(ns, name)
        if name in info["assigns"]:
            node = next(n for n in tree.body if VllmTree._defines(n, name))
            ns = self.module(rel)
            exec(vcompile(self.tree, rel, [node]), ns)
            return dict.__getitem__(ns, name)
        if name in ("get_current_vllm_config", "get_current_vllm_config_or_none"):
            # the run's VllmConfig (model heads, parallel sizes): not a property of the
            # backend; an answer that reads it depends on the run
            return _Probe("the run's VllmConfig")
        if name in info["imports"]:
            src, orig = info["imports"][name]
            if src is None:
                for node in tree.body:
                    if (
                        isinstance(node, ast.ImportFrom)
                        and node.module in _STDLIB
                        and any((a.asname or a.name) == name for a in node.names)
                    ):
                        return getattr(importlib.import_module(node.module), orig)
            if src is not None:
                if src.endswith("__init__.py"):
                    sub = self.idx.rel_for_module(orig, src, 1)
                    if sub is not None and sub != src:
                        return self.module_object(sub)
                return self.module(src)[orig]
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if (a.asname or a.name.split(".")[0]) == name:
                        if a.name == "torch":
                            return _SAFE_NAMES["torch"]
                        if a.name in _STDLIB:
                            return importlib.import_module(a.name)
                        if a.name == "vllm.envs":
                            return _Probe("envs")
        raise Unmodelled(name)

    def _preresolve_class_bodies(self, ns: _LazyModule, func: ast.AST) -> None:
        """A class statement inside a function (a backend factory) reads module globals
        with a plain dict lookup: resolve the names its body uses first."""
        for inner in ast.walk(func):
            if inner is func or not isinstance(inner, ast.ClassDef):
                continue
            for n in ast.walk(inner):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                    with contextlib.suppress(Exception, Unmodelled):
                        ns[n.id]

    def module_object(self, rel: str) -> types.ModuleType:
        """`from vllm.pkg import submodule`: the submodule, its names from the linker."""
        mod = types.ModuleType(rel)
        lazy = self.module(rel)

        def getattr_(name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return lazy[name]

        mod.__getattr__ = getattr_  # type: ignore[method-assign]
        return mod

    def build_class(self, rel: str, node: ast.ClassDef) -> type:
        """The class with its verbatim methods and the class attributes that evaluate."""
        ns = self.module(rel)
        bases = []
        for b in node.bases:
            if isinstance(b, ast.Subscript):
                # Base[T]: the base itself (type parameters are typing only)
                if ast.unparse(b.value) in ("Generic", "Protocol", "typing.Generic"):
                    continue
                b = b.value
            try:
                val = eval(compile(ast.Expression(body=copy.deepcopy(b)), "<base>", "eval"), ns)
            except Unmodelled:
                continue
            if (isinstance(val, type) and val is not object) or hasattr(val, "__mro_entries__"):
                bases.append(val)  # classes, and typing.NamedTuple
        is_dataclass = any("dataclass" in ast.unparse(dd) for dd in node.decorator_list)
        lazy_annotations = _future_flags(self.tree, rel) != 0
        body: list[ast.stmt] = []
        dropped: list[str] = []
        for stmt in node.body:
            n_before = len(body)
            names = [
                t.id
                for t in (
                    [stmt.target]
                    if isinstance(stmt, ast.AnnAssign)
                    else stmt.targets
                    if isinstance(stmt, ast.Assign)
                    else []
                )
                if isinstance(t, ast.Name)
            ]
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [stmt.name]
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                fn = copy.deepcopy(stmt)
                fn.returns = None
                for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs:
                    a.annotation = None
                for a in (fn.args.vararg, fn.args.kwarg):
                    if a is not None:
                        a.annotation = None
                if self._evaluates(ns, list(fn.decorator_list) + list(fn.args.defaults)):
                    body.append(fn)
            elif isinstance(stmt, ast.Assign):
                if self._evaluates(ns, [stmt.value], body):
                    body.append(stmt)
            elif isinstance(stmt, ast.AnnAssign):
                # fields (dataclass, NamedTuple) keep their annotation; an annotation that
                # does not evaluate here (no `from __future__ import annotations` in the
                # file) is dropped from a plain class attribute
                value = [stmt.value] if stmt.value is not None else []
                annotation = [] if lazy_annotations else [stmt.annotation]
                if self._evaluates(ns, annotation + value, body):
                    body.append(stmt)
                elif not is_dataclass and value and self._evaluates(ns, value, body):
                    body.append(
                        ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)
                    )
            if len(body) == n_before:
                dropped += names
        decorators = [dd for dd in node.decorator_list if self._evaluates(ns, [dd])]
        base_names = [f"__oracle_base_{i}" for i in range(len(bases))]
        for n, b in zip(base_names, bases, strict=True):
            ns[n] = b
        kw: dict[str, Any] = {"type_params": []} if "type_params" in ast.ClassDef._fields else {}
        cls = ast.ClassDef(
            name=node.name,
            bases=[ast.Name(id=n, ctx=ast.Load()) for n in base_names],
            keywords=[],
            body=body or [ast.Pass()],
            decorator_list=decorators,
            **kw,
        )
        ast.copy_location(cls, node)
        exec(vcompile(self.tree, rel, [cls]), ns)
        out = dict.__getitem__(ns, node.name)
        out.__oracle_source__ = f"vllm/{rel}:{node.lineno}"
        for name in dropped:  # reading one of them is an unmodelled dependency, not a miss
            setattr(out, name, _UnmodelledAttr(f"{node.name}.{name}"))
        return typing.cast(type, out)

    def _evaluates(
        self, ns: _LazyModule, exprs: Sequence[ast.AST], class_body: Sequence[ast.stmt] = ()
    ) -> bool:
        """Whether these expressions evaluate in the module (class-level names defined
        earlier in the body count)."""
        # One namespace for globals and locals: a class body (and a separate locals dict)
        # reads globals with a plain dict lookup that skips __missing__, so the names are
        # resolved here, before the class statement runs.
        local = _Overlay(ns)
        for stmt in class_body:
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                try:
                    exec(vcompile(self.tree, ns.rel, [stmt]), local)
                except (Exception, Unmodelled):
                    pass
        for e in exprs:
            try:
                eval(compile(ast.Expression(body=copy.deepcopy(e)), "<x>", "eval"), local)
            except (Exception, Unmodelled):
                return False
        return True

    @contextlib.contextmanager
    def importing(self) -> Iterator[None]:
        saved = {k: v for k, v in sys.modules.items() if k == "vllm" or k.startswith("vllm.")}
        for k in saved:
            del sys.modules[k]
        finder = _VllmImporter(self)
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            sys.meta_path.remove(finder)
            for k in [k for k in sys.modules if k == "vllm" or k.startswith("vllm.")]:
                del sys.modules[k]
            sys.modules.update(saved)


def _ask(fn: Callable[..., Any], *args: Any) -> Any:
    """A backend's answer `fn(*args)`, or what it depends on."""
    try:
        value = fn(*args)
    except Unmodelled as u:
        return {"depends_on": u.name}
    except Exception as e:
        return {"raises": vo.fmt_exc(e)}
    if isinstance(value, torch.dtype):
        return _enc_dtype(value)
    if isinstance(value, (list, tuple)):
        return [_enc_dtype(v) if isinstance(v, torch.dtype) else v for v in value]
    return value


def _where(cls: type, attr: str) -> str | None:
    for c in cls.__mro__:
        if attr in c.__dict__:
            src = c.__dict__.get("__oracle_source__") or f"built at import time ({c.__qualname__})"
            return f"{src} ({c.__name__})"
    return None


def backends_table(oracle: DtypeOracle) -> dict[str, Any]:
    d = oracle.d
    linker = VllmLinker(oracle)
    reg = oracle.tree.tree(F_REGISTRY)
    enum_node = next(
        n for n in reg.body if isinstance(n, ast.ClassDef) and n.name == "AttentionBackendEnum"
    )
    members: dict[str, str | None] = {}
    for stmt in enum_node.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
            members[stmt.targets[0].id] = ast.literal_eval(stmt.value)
    kvi = linker.module(F_KVI)
    backends: dict[str, Any] = {}
    with linker.importing():
        FullAttentionSpec = kvi["FullAttentionSpec"]
        MLAAttentionSpec = kvi["MLAAttentionSpec"]
        for enum_name, path in members.items():
            entry: dict[str, Any] = {"class_path": path}
            backends[enum_name] = entry
            if not path:
                entry["note"] = "no class (placeholder)"
                continue
            modname, clsname = path.rsplit(".", 1)
            rel = linker.idx.rel_for_module(modname)
            if rel is None:
                entry["note"] = f"module {modname} not in the wheel"
                continue
            try:
                cls = linker.module(rel)[clsname]
            except (Exception, Unmodelled) as e:
                entry["note"] = f"not loadable: {e!r}"
                continue
            vendor = (
                "rocm"
                if enum_name.startswith("ROCM") or enum_name in ("ULTRAQUANT",)
                else "cpu"
                if enum_name in ("CPU_ATTN", "CPU_MLA", "AMX_MLA")
                else "xpu"
                if enum_name.startswith("XPU")
                else "cuda"
            )
            linker.vendor = vendor
            entry["source"] = cls.__dict__.get("__oracle_source__") or (
                f"vllm/{rel}: {clsname} = a class built at import time ({cls.__qualname__})"
            )
            entry["vendor_assumed"] = vendor
            entry["is_mla"] = _ask(cls.is_mla)
            entry["is_sparse"] = _ask(cls.is_sparse)
            entry["supported_kv_cache_dtypes"] = _ask(getattr, cls, "supported_kv_cache_dtypes")
            entry["supported_dtypes"] = _ask(getattr, cls, "supported_dtypes")
            entry["defined_in"] = {
                a: _where(cls, a)
                for a in (
                    "supported_kv_cache_dtypes",
                    "supports_kv_cache_dtype",
                    "supports_combination",
                    "supports_compute_capability",
                    "get_supported_head_sizes",
                    "supports_head_size",
                    "customize_spec",
                )
            }
            per_cap: dict[str, Any] = {}
            for cap in CAPABILITIES[vendor]:
                linker.capability = cap
                key = "any" if cap is None else f"{cap[0]}.{cap[1]}"
                devcap = None if cap is None else linker.module(F_IFACE)["DeviceCapability"](*cap)
                row: dict[str, Any] = {
                    "compute_capability": (
                        _ask(cls.supports_compute_capability, devcap)
                        if devcap is not None
                        else None
                    ),
                    "kv_cache_dtypes": {
                        dt: _ask(cls.supports_kv_cache_dtype, dt) for dt in d.KV_CACHE_DTYPES
                    },
                    "head_sizes": {
                        str(hs): _ask(cls.supports_head_size, hs) for hs in BACKEND_HEAD_SIZES
                    },
                }
                # the dtype x head-size checks, where the backend overrides the base's
                combination_src = entry["defined_in"]["supports_combination"] or ""
                if not combination_src.endswith("(AttentionBackend)"):
                    listed = [dt for dt, ok in row["kv_cache_dtypes"].items() if ok is not False]
                    row["combination"] = {
                        dt: {
                            str(hs): reason
                            for hs, reason in (
                                (hs, _combination(cls, hs, dt, entry, devcap))
                                for hs in ((576,) if entry["is_mla"] is True else (64, 128, 256))
                            )
                            if reason is not None
                        }
                        for dt in listed
                    }
                per_cap[key] = row
            linker.capability = None
            entry["by_capability"] = per_cap
            # bytes per token and KV head: the spec the layer builds, packed by the backend.
            # Octave sizes its slot by the rotary dim, registered at model build
            # (rocm_octave.register_rope_dim): full rotary (rope_dim = head_size) here.
            if enum_name == "ROCM_OCTAVE":
                reg = linker.module("v1/attention/ops/rocm_octave.py")["register_rope_dim"]
                for hs in (64, 128, 256):
                    reg(hs, hs)
            entry["bytes_per_token_per_kv_head"] = _spec_bytes(
                d, cls, FullAttentionSpec, MLAAttentionSpec, entry
            )
    return {
        "schema": BACKENDS_SCHEMA,
        "provenance": {
            "vllm_version": oracle.tree.version(),
            "vllm_sources_sha256": dict(sorted(oracle.tree.used.items())),
            "generator": "tests/parity/vllm_dtype_oracle.py --backends-out",
        },
        "method": "Each backend class of v1/attention/backends/registry.py is compiled from its "
        "file (methods and class attributes verbatim, method annotations dropped) and asked "
        "with a stub platform that knows only the device capability (and CUDA / ROCm / CPU / "
        "XPU by backend name). {'depends_on': NAME} marks an answer that needs the machine or "
        "an unmodelled library probe (flash-attn version, FlashInfer/TRT-LLM availability, "
        "env vars, the ROCm arch name); {'raises': ...} is vLLM's own exception. "
        "bytes_per_token_per_kv_head: FullAttentionSpec(block_size=1, num_kv_heads=1, "
        "head_size=H, dtype=storage (bfloat16 for auto), kv_quant_mode=get_kv_quant_mode(dtype)) "
        "passed through the backend's customize_spec, page_size_bytes (K and V together), as "
        "platforms/interface.py _align_heterogeneous_kv_block_size computes it; MLA backends: "
        "MLAAttentionSpec as MLAAttention.get_kv_cache_spec builds it (head 576, "
        "state_content_bytes 656 / 352 for fp8_ds_mla / nvfp4_ds_mla).",
        "capabilities": {
            k: [None if c is None else f"{c[0]}.{c[1]}" for c in v] for k, v in CAPABILITIES.items()
        },
        "cuda_priorities": _cuda_priorities(oracle, linker),
        "bytes_by_dtype": _bytes_by_dtype(backends),
        "backends": backends,
    }


def _bytes_by_dtype(backends: dict[str, Any]) -> dict[str, Any]:
    """dtype -> head size -> bytes -> the backends that pack it so (a summary of the
    per-backend numbers)."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for name, entry in backends.items():
        for dt, row in (entry.get("bytes_per_token_per_kv_head") or {}).items():
            if not isinstance(row, dict):
                continue
            for hs, nbytes in row.items():
                key = json.dumps(nbytes) if not isinstance(nbytes, int) else str(nbytes)
                out.setdefault(dt, {}).setdefault(hs, {}).setdefault(key, []).append(name)
    return out


def _spec_bytes(
    d: DtypeCode, cls: type, FullAttentionSpec: Any, MLAAttentionSpec: Any, entry: dict[str, Any]
) -> Any:
    listed = entry["supported_kv_cache_dtypes"]
    if not isinstance(listed, list):
        return {"depends_on": "supported_kv_cache_dtypes"}
    out: dict[str, Any] = {}
    for dt in listed:
        storage = torch.bfloat16 if dt == "auto" else d.STR_DTYPE_TO_TORCH_DTYPE[dt]
        mode = d.get_kv_quant_mode(dt)
        row: dict[str, Any] = {}
        if entry["is_mla"] is True:
            sizes: tuple[int, ...] = (576,)
        else:
            sizes = (64, 128, 256)
        for hs in sizes:
            if entry["is_mla"] is True:
                spec = MLAAttentionSpec(
                    block_size=1,
                    num_kv_heads=1,
                    max_tp_shards=1,
                    head_size=hs,
                    dtype=storage,
                    cache_dtype_str=dt,
                    kv_quant_mode=mode,
                    state_content_bytes={"fp8_ds_mla": 656, "nvfp4_ds_mla": 352}.get(dt),
                )
            else:
                spec = FullAttentionSpec(
                    block_size=1, num_kv_heads=1, head_size=hs, dtype=storage, kv_quant_mode=mode
                )
            row[str(hs)] = _ask(_page_bytes, cls, spec)
        out[dt] = row
    return out


def _combination(cls: Any, hs: int, dt: str, entry: dict[str, Any], devcap: Any) -> Any:
    """supports_combination for a bf16 model, no sink, no mm prefix, default block size."""
    return _ask(
        cls.supports_combination,
        hs,
        torch.bfloat16,
        dt,
        None,
        entry["is_mla"] is True,
        False,
        entry["is_sparse"] is True,
        False,
        devcap,
    )


def _page_bytes(cls: Any, spec: Any) -> int:
    return int(cls.customize_spec(spec).page_size_bytes)


def _priority_names(fn: Any, use_mla: bool, cap: Any, kv: str) -> list[str]:
    # the function is @cache-decorated; its body, called directly
    return [b.name for b in fn.__wrapped__(use_mla, cap, None, kv)]


def _cuda_priorities(oracle: DtypeOracle, linker: VllmLinker) -> dict[str, Any]:
    """platforms/cuda.py _get_backend_priorities, per capability, MLA or not, quantized or not."""
    fn = linker.module(F_CUDA)["_get_backend_priorities"]
    DeviceCapability = linker.module(F_IFACE)["DeviceCapability"]
    out: dict[str, Any] = {}
    with vo._stub_modules(oracle.d.stub_modules):
        for cap in CAPABILITIES["cuda"]:
            for use_mla in (False, True):
                for kv in ("auto", "fp8", "nvfp4"):
                    got = _ask(_priority_names, fn, use_mla, DeviceCapability(*cap), kv)
                    out[f"{cap[0]}.{cap[1]} {'mla' if use_mla else 'mha'} {kv}"] = got
    return out


# ======================================================================================
# the whole run
# ======================================================================================


def run(oracle: DtypeOracle, names: Sequence[str] | None = None) -> dict[str, Any]:
    d = oracle.d
    cases = oracle.cases.CASES
    if list(d.KV_CACHE_DTYPES) != list(oracle.cases.ALL_DTYPES):
        raise SystemExit(
            f"vLLM's KV_CACHE_DTYPES {d.KV_CACHE_DTYPES} differ from dtype_cases.ALL_DTYPES"
        )
    if names:
        unknown = set(names) - {c["name"] for c in cases}
        if unknown:
            raise SystemExit(f"unknown case(s): {sorted(unknown)}")
        cases = [c for c in cases if c["name"] in names]
    facts = DtypeFacts(oracle)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="kvscale-dtype-oracle-") as tmp:
        for c in cases:
            results[c["name"]] = oracle.run_case(c, Path(tmp))
    import transformers

    with vo._stub_modules(d.stub_modules):
        dtypes = facts.dtypes()
        mla_skip = facts.mla_skip()
        mla_canonical = facts.mla_sparse_canonical()
    return {
        "schema": SCHEMA,
        "provenance": {
            "engine": "vllm",
            "vllm_version": oracle.tree.version(),
            "vllm_sources_sha256": dict(sorted(oracle.tree.used.items())),
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "python_version": _pyplatform.python_version(),
            "regex_module": vo._re.__name__,
            "generator": "tests/parity/vllm_dtype_oracle.py",
        },
        "accepted_values": {
            "cache_dtype_literal": list(d.KV_CACHE_DTYPES),
            "register_kv_cache_dtype_calls": _registered_dtype_calls(oracle.tree),
            "validation": f"vllm/{F_CACHE_CFG} CacheConfig._validate_cache_dtype "
            "(exact, case-sensitive membership in KV_CACHE_DTYPES)",
        },
        "dtypes": dtypes,
        "mla_skip": mla_skip,
        "mla_sparse_canonical_dtype": mla_canonical,
        "cases": results,
    }


VOLATILE_PROVENANCE = ("torch_version", "python_version", "regex_module")


def summarize(doc: dict[str, Any]) -> str:
    lines = [f"vLLM {doc['provenance']['vllm_version']}: {len(doc['cases'])} cases"]
    by_group: dict[str, list[int]] = {}
    for c in doc["cases"].values():
        g = by_group.setdefault(c["group"], [0, 0, 0, 0])
        g[0] += 1
        g[1] += len(c["layers"])
        g[2] += sum(1 for layer in c["layers"] if layer["error"])
        g[3] += c["engine_error"] is not None
    for g, (n, nl, ne, ee) in by_group.items():
        lines.append(f"  {g:16s} {n:4d} cases {nl:5d} layers {ne:5d} refused {ee:4d} engine errors")
    return "\n".join(lines)


def dump(doc: dict[str, Any]) -> str:
    """JSON with one line per layer record (and per row of the long tables), so that a
    change in vLLM's behaviour shows as a few changed lines."""
    compact: dict[str, str] = {}

    def line(obj: Any) -> str:
        token = f"@@{len(compact)}@@"
        compact[token] = json.dumps(obj, allow_nan=False)
        return token

    def mark(obj: Any) -> Any:
        if isinstance(obj, dict):
            out = {}
            for k, v in obj.items():
                if k in _LINE_ITEMS and isinstance(v, list):
                    out[k] = [line(x) for x in v]
                elif k in _LINE_VALUES:
                    out[k] = line(v)
                else:
                    out[k] = mark(v)
            return out
        if isinstance(obj, list):
            return [mark(x) for x in obj]
        return obj

    text = json.dumps(mark(doc), indent=1, allow_nan=False)
    for token, line in compact.items():
        text = text.replace(f'"{token}"', line, 1)
    return text + "\n"


# lists written one item per line, and values written on one line
_LINE_ITEMS = ("layers", "mla_skip")
_LINE_VALUES = (
    "kv_cache_dtypes",
    "head_sizes",
    "combination",
    "defined_in",
    "options",
    "mode_flags",
    "supported_kv_cache_dtypes",
    "supported_dtypes",
    "skip_layers_effective",
    "engine_warnings",
)


def main(argv: Sequence[str] | None = None) -> int:
    if not __debug__:
        print("vllm_dtype_oracle.py must run without -O", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vllm-src", required=True, help="the directory holding vllm/")
    ap.add_argument(
        "--transformers-src",
        help="a directory holding transformers/ to use instead of the installed one",
    )
    ap.add_argument("--out", help="golden JSON ('-' for stdout)")
    ap.add_argument("--backends-out", help="backend table JSON")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.out and not args.backends_out:
        ap.error("give --out and/or --backends-out")
    if args.transformers_src:
        sys.path.insert(0, str(Path(args.transformers_src).resolve()))
    oracle = DtypeOracle(args.vllm_src)
    if args.out:
        doc = run(oracle, args.case)
        if args.out == "-":
            sys.stdout.write(dump(doc))
        else:
            Path(args.out).write_text(dump(doc))
            if not args.quiet:
                print(summarize(doc))
                print(f"wrote {args.out}")
    if args.backends_out:
        # a fresh tree: the provenance lists exactly the files the table was read from
        table = backends_table(DtypeOracle(args.vllm_src))
        Path(args.backends_out).write_text(dump(table))
        if not args.quiet:
            print(f"backends: {len(table['backends'])}; wrote {args.backends_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
