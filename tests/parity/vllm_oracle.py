#!/usr/bin/env python3
"""Oracle: run vLLM 0.33.0's own KV-scale loading code on the parity catalogue.

    python tests/parity/vllm_oracle.py --vllm-src /tmp/vllm_dl/src \
        --out tests/parity/vllm_expected.json

vLLM is not installed and not imported. Its source tree (the `vllm/` package extracted from
the wheel, given by path at run time) is parsed with `ast`; the functions, classes and
statements that decide the values are taken out by name, compiled with their real file
names and line numbers, and executed in small namespaces that provide stubs for what they
reference (logger, platform, tensor-parallel rank 0 / world size 1, model skeleton modules).
Nothing of vLLM is copied into this repository. See tests/parity/README.md for the exact
list of what is verbatim and what is stubbed.

Must run without `python -O`: vLLM's `assert` statements are part of its behaviour.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import enum
import functools
import hashlib
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
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SCHEMA = "kvscale.vllm-parity/1"

try:  # vLLM itself uses the third-party `regex` module; the patterns it uses behave the
    import regex as _re  # same under the standard library `re` (checked: fixed-width
except ImportError:  # lookbehind and \1 group references only).
    import re as _re

_LAYER_RE = _re.compile(r"(?:^|\.)layers\.(\d+)\.")


def _load_sibling(name: str, file: str) -> types.ModuleType:
    """A file of tests/parity loaded by path (cases.py, stubs.py), once per process."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


_stubs = _load_sibling("kvscale_parity_stubs", "stubs.py")
_stub_modules = _stubs.stub_modules


# ======================================================================================
# Reading vLLM's source
# ======================================================================================


class VllmTree:
    """The extracted `vllm` package; hands out AST nodes of named definitions."""

    def __init__(self, src: str | os.PathLike[str]) -> None:
        p = Path(src).resolve()
        if (p / "vllm" / "__init__.py").is_file():
            p = p / "vllm"
        if not (p / "__init__.py").is_file() or not (p / "model_executor").is_dir():
            raise SystemExit(f"{src}: not an extracted vLLM source tree (no vllm/model_executor)")
        self.pkg = p
        self._trees: dict[str, ast.Module] = {}
        self.used: dict[str, str] = {}

    def version(self) -> str:
        text = (self.pkg / "_version.py").read_text()
        for node in ast.parse(text).body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
                if "__version__" in names or "version" in names:
                    value = node.value
                    if isinstance(value, ast.Constant) and isinstance(value.value, str):
                        return value.value
                    if isinstance(value, ast.Name):
                        continue
        raise SystemExit(f"cannot read the vLLM version from {self.pkg / '_version.py'}")

    def path(self, rel: str) -> Path:
        return self.pkg / rel

    def tree(self, rel: str) -> ast.Module:
        if rel not in self._trees:
            data = self.path(rel).read_bytes()
            self.used[rel] = hashlib.sha256(data).hexdigest()
            self._trees[rel] = ast.parse(data.decode("utf-8"), filename=str(self.path(rel)))
        return self._trees[rel]

    @staticmethod
    def _defines(node: ast.stmt, name: str) -> bool:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return node.name == name
        if isinstance(node, ast.Assign):
            return any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
        if isinstance(node, ast.AnnAssign):
            return isinstance(node.target, ast.Name) and node.target.id == name
        return False

    def node(self, rel: str, qualname: str) -> ast.stmt:
        body: list[ast.stmt] = self.tree(rel).body
        found: ast.stmt | None = None
        for part in qualname.split("."):
            matches = [n for n in body if self._defines(n, part)]
            if not matches:
                raise LookupError(f"vLLM source changed: {qualname!r} not found in {rel}")
            found = matches[-1]  # the binding that wins at import time
            body = getattr(found, "body", [])
        assert found is not None
        return found

    def statements(
        self, rel: str, func_qualname: str, predicate: Callable[[ast.stmt], bool], expect: int
    ) -> list[ast.stmt]:
        func = self.node(rel, func_qualname)
        assert isinstance(func, ast.FunctionDef)
        picked = [s for s in func.body if predicate(s)]
        if len(picked) != expect:
            raise LookupError(
                f"vLLM source changed: expected {expect} statement(s) in {rel}:{func_qualname}, "
                f"found {len(picked)}"
            )
        return picked

    def compile(self, rel: str, nodes: Sequence[ast.stmt]) -> types.CodeType:
        module = ast.Module(body=[copy.deepcopy(n) for n in nodes], type_ignores=[])
        # dont_inherit: this file's `from __future__ import annotations` must not leak
        # into vLLM's code (its annotations are evaluated at definition time).
        return compile(module, str(self.path(rel)), "exec", dont_inherit=True)

    def exec(self, rel: str, qualnames: Sequence[str], ns: dict[str, Any]) -> None:
        exec(self.compile(rel, [self.node(rel, q) for q in qualnames]), ns)

    def make_class(
        self, rel: str, name: str, bases: Sequence[str], members: Sequence[str], ns: dict[str, Any]
    ) -> type:
        """A class named `name` whose body is the listed verbatim members (methods with
        their decorators, class attributes) of vLLM classes in `rel`."""
        body = [copy.deepcopy(self.node(rel, m)) for m in members]
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
        ast.fix_missing_locations(cls)
        module = ast.Module(body=[cls], type_ignores=[])
        exec(compile(module, str(self.path(rel)), "exec", dont_inherit=True), ns)
        return ns[name]


# ======================================================================================
# Stubs
# ======================================================================================


class RecordingLogger:
    """Stands in for vllm.logger; every warning is recorded (no "once" de-duplication,
    so that what a layer logs does not depend on which case ran before)."""

    def __init__(self) -> None:
        self.records: list[str] = []

    def _fmt(self, msg: Any, args: tuple[Any, ...]) -> str:
        try:
            return str(msg) % args if args else str(msg)
        except Exception:  # pragma: no cover - defensive
            return f"{msg} {args}"

    def warning(self, msg: Any, *args: Any, **kw: Any) -> None:
        self.records.append(self._fmt(msg, args))

    warning_once = warning
    warn = warning
    error = warning

    def info(self, *a: Any, **k: Any) -> None:
        pass

    info_once = debug = debug_once = info

    def take(self) -> list[str]:
        out, self.records = self.records, []
        return out


class FakePlatform:
    """vllm.platforms.current_platform: only `is_fp8_fnuz` matters for KV scales."""

    def __init__(self) -> None:
        self.fnuz = False

    def is_fp8_fnuz(self) -> bool:
        return self.fnuz

    def is_rocm(self) -> bool:
        return self.fnuz

    def is_cuda_alike(self) -> bool:
        return True

    def opaque_attention_op(self) -> bool:
        return True

    def get_device_capability(self) -> None:
        return None


class QuantizationStrategy(str, enum.Enum):
    """compressed_tensors.quantization.QuantizationStrategy (compressed-tensors 0.17.0,
    the version vLLM 0.33.0 pins): a str enum."""

    TENSOR = "tensor"
    CHANNEL = "channel"
    GROUP = "group"
    BLOCK = "block"
    TOKEN = "token"
    TENSOR_GROUP = "tensor_group"
    ATTN_HEAD = "attn_head"


class _Unused:
    """A name vLLM's code references on a path these cases never take."""

    def __init__(self, *a: Any, **k: Any) -> None:
        raise RuntimeError("oracle stub reached: this path is not modelled")


def _identity_decorator(fn: Any) -> Any:
    return fn


def _unused_fn(*a: Any, **k: Any) -> Any:
    raise RuntimeError("oracle stub reached: this path is not modelled")


# Layer-type stubs shared by every namespace (isinstance checks in vLLM's code).
class LinearBase(nn.Module):
    pass


class RoutedExperts(nn.Module):
    pass


class MLAAttention(nn.Module):
    pass


class VocabParallelEmbedding(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(num_embeddings, embedding_dim), requires_grad=False)


class ParallelLMHead(VocabParallelEmbedding):
    pass


class UnquantizedLinearMethod:
    pass


class UnquantizedFusedMoEMethod:
    pass


class OnlineLinearBase:
    pass


class OnlineMoEMethodBase:
    pass


class QuantKey:
    pass


# ======================================================================================
# Assembling vLLM's code
# ======================================================================================

F_BASE = "model_executor/layers/quantization/base_config.py"
F_KVC = "model_executor/layers/quantization/kv_cache.py"
F_CT = "model_executor/layers/quantization/compressed_tensors/compressed_tensors.py"
F_FP8 = "model_executor/layers/quantization/fp8.py"
F_QUARK = "model_executor/layers/quantization/quark/quark.py"
F_QUARK_UTILS = "model_executor/layers/quantization/quark/utils.py"
F_CFG_UTILS = "model_executor/layers/quantization/utils/config_utils.py"
F_MODELOPT = "model_executor/layers/quantization/modelopt.py"
F_MUTILS = "model_executor/models/utils.py"
F_WUTILS = "model_executor/model_loader/weight_utils.py"
F_EPFILTER = "model_executor/model_loader/ep_weight_filter.py"
F_ATTN = "model_executor/layers/attention/attention.py"
F_TORCH_UTILS = "utils/torch_utils.py"
F_KVI = "v1/kv_cache_interface.py"
F_CACHE_CFG = "config/cache.py"
F_CFG_UTILS_GETATTR = "config/utils.py"
F_CONVERTOR = "transformers_utils/model_arch_config_convertor.py"
F_HF_CONFIG = "transformers_utils/config.py"
F_LLAMA = "model_executor/models/llama.py"
F_GEMMA3 = "model_executor/models/gemma3.py"
F_NEMOTRON_H = "model_executor/models/nemotron_h.py"


class VllmCode:
    """vLLM's verbatim definitions, executed against stubs."""

    def __init__(self, tree: VllmTree) -> None:
        self.tree = tree
        self.logger = RecordingLogger()
        self.platform = FakePlatform()
        t = tree

        def base_ns(**extra: Any) -> dict[str, Any]:
            ns: dict[str, Any] = {
                "__builtins__": __builtins__,
                "__name__": "vllm_oracle_exec",
                "torch": torch,
                "nn": nn,
                "logger": self.logger,
                "re": _re,
                "Any": Any,
                "Literal": typing.Literal,
                "cast": typing.cast,
                "TYPE_CHECKING": False,
                "Callable": Callable,
                "Iterable": Iterable,
                "Mapping": Mapping,
                "Sequence": Sequence,
                "Generator": Generator,
                "TypeAlias": typing.TypeAlias,
                "Protocol": typing.Protocol,
                "current_platform": self.platform,
                "QuantizationMethods": str,
                "LinearBase": LinearBase,
                "RoutedExperts": RoutedExperts,
                "VocabParallelEmbedding": VocabParallelEmbedding,
                "ParallelLMHead": ParallelLMHead,
                "MLAAttention": MLAAttention,
                "UnquantizedLinearMethod": UnquantizedLinearMethod,
                "UnquantizedFusedMoEMethod": UnquantizedFusedMoEMethod,
                "QuantKey": QuantKey,
            }
            ns.update(extra)
            return ns

        # --- v1/kv_cache_interface.py + config/cache.py ---------------------------------
        ns_cache = base_ns(_KV_CACHE_DTYPE_HANDLERS={}, KVCacheDTypeHandler=object)
        t.exec(F_CACHE_CFG, ["get_kv_cache_dtype_handler"], ns_cache)
        ns_kvi = base_ns(IntEnum=enum.IntEnum, Enum=enum.Enum)
        t.exec(
            F_KVI,
            [
                "KVQuantMode",
                "get_kv_quant_mode",
                "is_quantized_kv_cache",
                "kv_cache_uses_per_token_head_scales",
            ],
            ns_kvi,
        )

        # --- weight_utils.py (loader, iterator, file filter) ----------------------------
        ns_ep = base_ns(parse_expert_id=_unused_fn)
        t.exec(F_EPFILTER, ["should_skip_weight"], ns_ep)
        from safetensors.torch import load as st_load
        from safetensors.torch import safe_open

        def tqdm(iterable: Iterable[Any], *a: Any, **k: Any) -> Iterable[Any]:
            return iterable

        ns_wu = base_ns(
            os=os,
            json=json,
            safe_open=safe_open,
            load=st_load,
            tqdm=tqdm,
            enable_tqdm=lambda use: False,
            should_skip_weight=ns_ep["should_skip_weight"],
            _get_fs_type=lambda files: "ext4",  # local disk: never auto-prefetch
            _get_available_ram_bytes=lambda: 1 << 40,
            _prefetch_all_checkpoints=_unused_fn,
            torchao_version_at_least=_unused_fn,
            DEFAULT_SAFETENSORS_PREFETCH_NUM_THREADS=1,
            DEFAULT_SAFETENSORS_PREFETCH_BLOCK_SIZE=1,
            get_tensor_model_parallel_rank=lambda: 0,
        )
        t.exec(
            F_WUTILS,
            [
                "_BAR_FORMAT",
                "_natural_sort_key",
                "_get_checkpoints_size_bytes",
                "safetensors_weights_iterator",
                "filter_duplicate_safetensors_files",
                "default_weight_loader",
            ],
            ns_wu,
        )
        self.ns_wu = ns_wu
        self.code_heads_piping = t.compile(
            F_WUTILS,
            t.statements(
                F_WUTILS,
                "get_quant_config",
                lambda s: (
                    isinstance(s, ast.If)
                    and "'config_groups' in hf_quant_config" in ast.unparse(s.test)
                ),
                expect=1,
            ),
        )

        # --- models/utils.py (WeightsMapper, AutoWeightsLoader) --------------------------
        ns_mu = base_ns(
            itertools=itertools,
            dataclass=dataclass,
            field=field,
            replace=replace,
            support_quantized_model_reload_from_hp_weights=_identity_decorator,
            default_weight_loader=ns_wu["default_weight_loader"],
        )
        t.exec(
            F_MUTILS,
            [
                "ShardId",
                "ShardIds",
                "WeightsMapper",
                "_get_tied_embedding_params",
                "StageMissingLayer",
                "PPMissingLayer",
                "maybe_prefix",
                "AutoWeightsLoader",
            ],
            ns_mu,
        )
        self.WeightsMapper = ns_mu["WeightsMapper"]
        self.AutoWeightsLoader = ns_mu["AutoWeightsLoader"]

        # --- base_config.py -------------------------------------------------------------
        class PreTrainedConfig:  # annotation only
            pass

        import abc
        import inspect

        ns_bc = base_ns(
            ABC=abc.ABC,
            abstractmethod=abc.abstractmethod,
            inspect=inspect,
            PreTrainedConfig=PreTrainedConfig,
        )
        t.exec(F_BASE, ["QuantizeMethodBase", "QuantizationConfig", "resolve_quant_method"], ns_bc)
        QuantizationConfig = ns_bc["QuantizationConfig"]
        QuantizeMethodBase = ns_bc["QuantizeMethodBase"]
        self.QuantizeMethodBase = QuantizeMethodBase

        # --- kv_cache.py ----------------------------------------------------------------
        ns_kc = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            is_weights_pre_processed=lambda: False,
            is_quantized_kv_cache=ns_kvi["is_quantized_kv_cache"],
            kv_cache_uses_per_token_head_scales=ns_kvi["kv_cache_uses_per_token_head_scales"],
        )
        t.exec(F_KVC, ["KVCacheScaleParameter", "BaseKVCacheMethod"], ns_kc)
        BaseKVCacheMethod = ns_kc["BaseKVCacheMethod"]

        # --- attention.py (module functions + the Attention pieces) ---------------------
        ns_at = base_ns(
            resolve_quant_method=ns_bc["resolve_quant_method"],
            BaseKVCacheMethod=BaseKVCacheMethod,
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
        )
        t.exec(
            F_ATTN,
            ["should_load_quant_weights", "set_default_quant_scales", "_init_kv_cache_quant"],
            ns_at,
        )
        promotion = t.statements(
            F_ATTN,
            "Attention.__init__",
            lambda s: (
                (
                    isinstance(s, ast.Assign)
                    and any(
                        isinstance(x, ast.Name) and x.id == "kv_cache_scheme" for x in s.targets
                    )
                )
                or (
                    isinstance(s, ast.If)
                    and "kv_cache_scheme is not None" in ast.unparse(s.test)
                    and "kv_cache_dtype == 'auto'" in ast.unparse(s.test)
                )
            ),
            expect=2,
        )
        code_promotion = t.compile(F_ATTN, promotion)
        init_kv_cache_quant = ns_at["_init_kv_cache_quant"]

        class _ImplStub:
            def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
                pass

        class _AttentionShell(nn.Module):
            """The parts of Attention.__init__ that matter for KV scales; the kv_cache_dtype
            promotion and _init_kv_cache_quant are vLLM's own code."""

            def __init__(
                self,
                num_heads: int,
                head_size: int,
                scale: float,
                num_kv_heads: int | None = None,
                cache_config: Any = None,
                quant_config: Any = None,
                prefix: str = "",
            ) -> None:
                super().__init__()
                if cache_config is not None:
                    kv_cache_dtype = cache_config.cache_dtype
                else:
                    kv_cache_dtype = "auto"
                local = {
                    "quant_config": quant_config,
                    "kv_cache_dtype": kv_cache_dtype,
                    "cache_config": cache_config,
                }
                exec(code_promotion, {"__builtins__": __builtins__}, local)
                self.kv_cache_dtype = local["kv_cache_dtype"]
                if num_kv_heads is None:
                    num_kv_heads = num_heads
                self.quant_config = quant_config
                self.layer_name = prefix
                self.num_heads = num_heads
                self.head_size = head_size
                self.num_kv_heads = num_kv_heads
                self.impl = _ImplStub()
                init_kv_cache_quant(self, quant_config, prefix)

        ns_at["_AttentionShell"] = _AttentionShell
        Attention = t.make_class(
            F_ATTN,
            "Attention",
            ["_AttentionShell"],
            ["Attention.process_weights_after_loading"],
            ns_at,
        )
        self.Attention = Attention

        # --- compressed_tensors.py ------------------------------------------------------
        ns_ct = base_ns(
            partial=functools.partial,
            QuantizationStrategy=QuantizationStrategy,
            get_tensor_model_parallel_rank=lambda: 0,
            get_tensor_model_parallel_world_size=lambda: 1,
            Attention=Attention,
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            BaseKVCacheMethod=BaseKVCacheMethod,
            LinearMethodBase=_Unused,
            CompressedTensorsLinearMethod=_Unused,
            CompressedTensorsMoEMethod=_Unused,
            CompressedTensorsEmbeddingWNA16Int=_Unused,
            CompressedTensorsLinearTransformMethod=_Unused,
            get_linear_transform_schemes=_unused_fn,
            TransformConfig=_Unused,
            SparsityCompressionConfig=_Unused,
            QuantizationArgs=_Unused,
            QuantizationType=_Unused,
        )
        t.exec(F_CT, ["SPARSITY_CONFIG_NAME"], ns_ct)

        def _scheme_map_stub(cls: type, config: dict[str, Any]) -> dict[str, Any]:
            return {}  # linear-layer schemes: not modelled (no linear layer is built)

        ns_ct["_quantization_scheme_map_stub"] = classmethod(_scheme_map_stub)
        CTConfig = t.make_class(
            F_CT,
            "CompressedTensorsConfig",
            ["QuantizationConfig"],
            [
                "CompressedTensorsConfig.__init__",
                "CompressedTensorsConfig.get_name",
                "CompressedTensorsConfig.get_quant_method",
                "CompressedTensorsConfig.from_config",
                "CompressedTensorsConfig._parse_sparsity_config",
                "CompressedTensorsConfig.get_supported_act_dtypes",
                "CompressedTensorsConfig.get_min_capability",
                "CompressedTensorsConfig.get_config_filenames",
            ],
            ns_ct,
        )
        CTConfig._quantization_scheme_map_from_config = ns_ct["_quantization_scheme_map_stub"]
        CTConfig.get_scheme = _unused_fn
        CTConfig.get_scheme_dict = _unused_fn
        t.exec(F_CT, ["CompressedTensorsKVCacheMethod"], ns_ct)

        # --- fp8.py ---------------------------------------------------------------------
        ns_fp8 = base_ns(
            QuantizationConfig=QuantizationConfig,
            BaseKVCacheMethod=BaseKVCacheMethod,
            Attention=Attention,
            is_layer_skipped=_unused_fn,
            Fp8LinearMethod=_Unused,
            Fp8MoEMethod=_Unused,
            get_marlin_input_dtype=_unused_fn,
        )
        t.exec(F_FP8, ["ACTIVATION_SCHEMES"], ns_fp8)
        Fp8Config = t.make_class(
            F_FP8,
            "Fp8Config",
            ["QuantizationConfig"],
            [
                "Fp8Config.__init__",
                "Fp8Config.get_name",
                "Fp8Config.from_config",
                "Fp8Config.get_quant_method",
                "Fp8Config.get_cache_scale_mapper",
                "Fp8Config.get_supported_act_dtypes",
                "Fp8Config.get_min_capability",
                "Fp8Config.get_config_filenames",
            ],
            ns_fp8,
        )
        t.exec(F_FP8, ["Fp8KVCacheMethod"], ns_fp8)

        # --- quark ----------------------------------------------------------------------
        import fnmatch as fnmatch_module

        ns_cu = base_ns(fnmatch=fnmatch_module.fnmatch, MappingProxyType=MappingProxyType)
        t.exec(F_CFG_UTILS, ["find_matching_patterns", "is_equal_or_regex_match"], ns_cu)
        ns_qu = base_ns(
            MappingProxyType=MappingProxyType,
            find_matching_patterns=ns_cu["find_matching_patterns"],
        )
        t.exec(F_QUARK_UTILS, ["deep_compare", "should_ignore_layer"], ns_qu)
        ns_qk = base_ns(
            fnmatch=fnmatch_module,
            deep_compare=ns_qu["deep_compare"],
            should_ignore_layer=ns_qu["should_ignore_layer"],
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            BaseKVCacheMethod=BaseKVCacheMethod,
            Attention=Attention,
            WeightsMapper=self.WeightsMapper,
            QuarkLinearMethod=_Unused,
            QuarkMoEMethod=_Unused,
            QuarkOCP_MX=_Unused,
        )
        QuarkConfig = t.make_class(
            F_QUARK,
            "QuarkConfig",
            ["QuantizationConfig"],
            [
                "QuarkConfig.__init__",
                "QuarkConfig.get_name",
                "QuarkConfig.from_config",
                "QuarkConfig.get_quant_method",
                "QuarkConfig.get_quant_method_target",
                "QuarkConfig.get_cache_scale_mapper",
                "QuarkConfig.get_supported_act_dtypes",
                "QuarkConfig.get_min_capability",
                "QuarkConfig.get_config_filenames",
            ],
            ns_qk,
        )
        t.exec(F_QUARK, ["QuarkKVCacheMethod"], ns_qk)

        def _no_linear_scheme(self: Any, *a: Any, **k: Any) -> Any:
            return (None, None, None)

        QuarkConfig.get_scheme_cls = _no_linear_scheme

        # --- modelopt.py ----------------------------------------------------------------
        ns_mo = base_ns(
            QuantizationConfig=QuantizationConfig,
            BaseKVCacheMethod=BaseKVCacheMethod,
            Attention=Attention,
            FusedMoEMethodBase=_Unused,
            fnmatch=fnmatch_module.fnmatch,
            is_layer_skipped=_unused_fn,
            build_linear_method=_unused_fn,
            get_marlin_input_dtype=_unused_fn,
        )
        t.exec(
            F_MODELOPT,
            ["LINEAR_ALGOS", "QUANT_ALGOS", "algos_owned_by", "ModelOptKVCacheMethod"],
            ns_mo,
        )
        t.make_class(
            F_MODELOPT,
            "ModelOptQuantConfigBase",
            ["QuantizationConfig"],
            [
                "ModelOptQuantConfigBase.quant_method",
                "ModelOptQuantConfigBase.FusedMoEMethodCls",
                "ModelOptQuantConfigBase.KVCacheMethodCls",
                "ModelOptQuantConfigBase.__init__",
                "ModelOptQuantConfigBase.is_layer_excluded",
                "ModelOptQuantConfigBase.get_quant_method",
                "ModelOptQuantConfigBase._extract_modelopt_quant_algo",
                "ModelOptQuantConfigBase.from_config",
                "ModelOptQuantConfigBase.get_config_filenames",
            ],
            ns_mo,
        )
        ModelOptFp8Config = t.make_class(
            F_MODELOPT,
            "ModelOptFp8Config",
            ["ModelOptQuantConfigBase"],
            [
                "ModelOptFp8Config.__init__",
                "ModelOptFp8Config.get_name",
                "ModelOptFp8Config._from_config",
                "ModelOptFp8Config.get_supported_act_dtypes",
                "ModelOptFp8Config.get_min_capability",
            ],
            ns_mo,
        )
        # module-level `ModelOptFp8Config.KVCacheMethodCls = ModelOptKVCacheMethod`
        exec(
            t.compile(
                F_MODELOPT,
                [
                    s
                    for s in t.tree(F_MODELOPT).body
                    if isinstance(s, ast.Assign)
                    and ast.unparse(s.targets[0]) == "ModelOptFp8Config.KVCacheMethodCls"
                ],
            ),
            ns_mo,
        )

        self.quant_classes: dict[str, type] = {
            "fp8": Fp8Config,
            "modelopt": ModelOptFp8Config,
            "quark": QuarkConfig,
            "compressed-tensors": CTConfig,
        }
        self.CTConfig = CTConfig
        self.CTKVMethod = ns_ct["CompressedTensorsKVCacheMethod"]

        # --- torch_utils.py (kv-cache dtype resolution) ---------------------------------
        ns_tu = base_ns(ModelConfig=object)
        t.exec(
            F_TORCH_UTILS,
            [
                "MODELOPT_TO_VLLM_KV_CACHE_DTYPE_MAP",
                "get_kv_cache_quant_algo_string",
                "resolve_kv_cache_dtype_string",
            ],
            ns_tu,
        )
        self.resolve_kv_cache_dtype_string = ns_tu["resolve_kv_cache_dtype_string"]

        # --- config reading: hf_quant_config.json fallback + quant_method normalisation --
        self.code_read_quant_config = t.compile(
            F_HF_CONFIG,
            t.statements(
                F_HF_CONFIG,
                "get_config",
                lambda s: (
                    (
                        isinstance(s, ast.Assign)
                        and ast.unparse(s.targets[0]) == "quantization_config"
                    )
                    or (
                        isinstance(s, ast.If)
                        and ast.unparse(s.test).startswith("quantization_config is")
                    )
                ),
                expect=3,
            ),
        )
        ns_cu2 = base_ns()
        t.exec(F_CFG_UTILS_GETATTR, ["getattr_iter"], ns_cu2)
        ns_hfc = base_ns()
        t.exec(F_HF_CONFIG, ["CONFIG_FIELD_ALIASES"], ns_hfc)
        ns_conv = base_ns(
            PreTrainedConfig=PreTrainedConfig,
            getattr_iter=ns_cu2["getattr_iter"],
            CONFIG_FIELD_ALIASES=ns_hfc["CONFIG_FIELD_ALIASES"],
        )
        self.Convertor = t.make_class(
            F_CONVERTOR,
            "ModelArchConfigConvertorBase",
            ["object"],
            [
                "ModelArchConfigConvertorBase.get_total_num_attention_heads",
                "ModelArchConfigConvertorBase.get_total_num_kv_heads",
                "ModelArchConfigConvertorBase._normalize_quantization_config",
            ],
            ns_conv,
        )

        # The per-file namespaces, keyed by file, for oracles that execute more of vLLM on top
        # of these (vllm_arch_oracle.py: MLA, more quant configs and architectures;
        # vllm_dtype_oracle.py: ModelOptNvFp4Config next to ModelOptFp8Config, ...).
        self.namespaces: dict[str, dict[str, Any]] = {
            F_CACHE_CFG: ns_cache,
            F_BASE: ns_bc,
            F_KVC: ns_kc,
            F_ATTN: ns_at,
            F_CT: ns_ct,
            F_FP8: ns_fp8,
            F_QUARK: ns_qk,
            F_MODELOPT: ns_mo,
            F_MUTILS: ns_mu,
            F_WUTILS: ns_wu,
            F_KVI: ns_kvi,
            F_TORCH_UTILS: ns_tu,
        }

        # --- model load_weights / hf_to_vllm_mapper -------------------------------------
        self.models = build_model_classes(self)

        # --- modules for the local imports inside vLLM's functions ---------------------
        self.stub_modules = {
            "vllm.model_executor.models.utils": {"WeightsMapper": self.WeightsMapper},
            "vllm.config.cache": {
                "get_kv_cache_dtype_handler": ns_cache["get_kv_cache_dtype_handler"]
            },
            "vllm.model_executor.layers.fused_moe": {"RoutedExperts": RoutedExperts},
            "vllm.model_executor.layers.fused_moe.unquantized_fused_moe_method": {
                "UnquantizedFusedMoEMethod": UnquantizedFusedMoEMethod
            },
            "vllm.model_executor.layers.linear": {
                "LinearBase": LinearBase,
                "UnquantizedLinearMethod": UnquantizedLinearMethod,
            },
            "vllm.model_executor.layers.quantization.online.fp8": {
                "OnlineLinearBase": OnlineLinearBase
            },
            "vllm.model_executor.layers.quantization.online.moe_base": {
                "OnlineMoEMethodBase": OnlineMoEMethodBase
            },
            "vllm.model_executor.layers.quantization.compressed_tensors.compressed_tensors": {
                "CompressedTensorsConfig": CTConfig,
                "CompressedTensorsKVCacheMethod": ns_ct["CompressedTensorsKVCacheMethod"],
            },
        }


# ======================================================================================
# Model skeletons (module tree of vLLM's models; parameters are placeholders)
# ======================================================================================


def _param(*shape: int, dtype: torch.dtype | None = None) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape, dtype=dtype), requires_grad=False)


class _FakeLinear(LinearBase):
    """Placeholder for vLLM's parallel linear layers (FP8 static: weight + scales).
    None of the catalogued tensors targets these parameters; what matters is which names
    exist (no `output_scale`, no `k_scale`)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = _param(1)
        self.weight_scale = _param(1, dtype=torch.float32)
        self.input_scale = _param(1, dtype=torch.float32)


class QKVParallelLinear(_FakeLinear):
    pass


class RowParallelLinear(_FakeLinear):
    pass


class MergedColumnParallelLinear(_FakeLinear):
    pass


class ColumnParallelLinear(_FakeLinear):
    pass


class RMSNorm(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.weight = _param(hidden)


class GemmaRMSNorm(RMSNorm):
    pass


class RotaryEmbedding(nn.Module):
    pass


class LogitsProcessor(nn.Module):
    pass


def build_model_classes(code: VllmCode) -> dict[str, type]:
    t = code.tree
    Attention = code.Attention
    ns_models: dict[str, Any] = {
        "__builtins__": __builtins__,
        "__name__": "vllm_oracle_models",
        "torch": torch,
        "nn": nn,
        "Iterable": Iterable,
        "AutoWeightsLoader": code.AutoWeightsLoader,
        "WeightsMapper": code.WeightsMapper,
    }

    def attn_for(cfg: Any, quant_config: Any, cache_config: Any, prefix: str) -> nn.Module:
        heads = cfg.num_attention_heads
        kv = getattr(cfg, "num_key_value_heads", heads)
        head_dim = getattr(cfg, "head_dim", cfg.hidden_size // heads)
        return Attention(
            heads,
            head_dim,
            head_dim**-0.5,
            num_kv_heads=max(1, kv // 1),
            cache_config=cache_config,
            quant_config=quant_config,
            prefix=prefix,
        )

    # ---- Llama ----
    class LlamaAttention(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str) -> None:
            super().__init__()
            self.qkv_proj = QKVParallelLinear()
            self.o_proj = RowParallelLinear()
            self.rotary_emb = RotaryEmbedding()
            self.attn = attn_for(cfg, qc, cc, f"{prefix}.attn")

    class LlamaMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_up_proj = MergedColumnParallelLinear()
            self.down_proj = RowParallelLinear()

    class LlamaDecoderLayer(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str) -> None:
            super().__init__()
            self.self_attn = LlamaAttention(cfg, qc, cc, f"{prefix}.self_attn")
            self.mlp = LlamaMLP()
            self.input_layernorm = RMSNorm(cfg.hidden_size)
            self.post_attention_layernorm = RMSNorm(cfg.hidden_size)

    class _LlamaModelShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str = "model") -> None:
            super().__init__()
            self.config = cfg
            self.quant_config = qc
            self.embed_tokens = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden_size)
            self.layers = nn.ModuleList(
                LlamaDecoderLayer(cfg, qc, cc, f"{prefix}.layers.{i}")
                for i in range(cfg.num_hidden_layers)
            )
            self.norm = RMSNorm(cfg.hidden_size)

    ns_models["_LlamaModelShell"] = _LlamaModelShell
    LlamaModel = t.make_class(
        F_LLAMA,
        "LlamaModel",
        ["_LlamaModelShell"],
        ["LlamaModel.hf_to_vllm_mapper", "LlamaModel.load_weights"],
        ns_models,
    )

    class _LlamaForCausalLMShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any) -> None:
            super().__init__()
            # LlamaForCausalLM is SupportsQuant: SupportsQuant.__new__ attaches the quant
            # config to the instance (model_executor/models/interfaces.py).
            self.quant_config = qc
            self.config = cfg
            self.model = LlamaModel(cfg, qc, cc, prefix="model")
            self.lm_head = ParallelLMHead(cfg.vocab_size, cfg.hidden_size)
            self.logits_processor = LogitsProcessor()

    ns_models["_LlamaForCausalLMShell"] = _LlamaForCausalLMShell
    LlamaForCausalLM = t.make_class(
        F_LLAMA,
        "LlamaForCausalLM",
        ["_LlamaForCausalLMShell"],
        ["LlamaForCausalLM.hf_to_vllm_mapper", "LlamaForCausalLM.load_weights"],
        ns_models,
    )

    # ---- Gemma3 ----
    class Gemma3Attention(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str) -> None:
            super().__init__()
            self.qkv_proj = QKVParallelLinear()
            self.o_proj = RowParallelLinear()
            self.q_norm = GemmaRMSNorm(getattr(cfg, "head_dim", 8))
            self.k_norm = GemmaRMSNorm(getattr(cfg, "head_dim", 8))
            self.rotary_emb = RotaryEmbedding()
            self.attn = attn_for(cfg, qc, cc, f"{prefix}.attn")

    class Gemma3DecoderLayer(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str) -> None:
            super().__init__()
            self.self_attn = Gemma3Attention(cfg, qc, cc, f"{prefix}.self_attn")
            self.mlp = LlamaMLP()
            self.input_layernorm = GemmaRMSNorm(cfg.hidden_size)
            self.post_attention_layernorm = GemmaRMSNorm(cfg.hidden_size)
            self.pre_feedforward_layernorm = GemmaRMSNorm(cfg.hidden_size)
            self.post_feedforward_layernorm = GemmaRMSNorm(cfg.hidden_size)

    class _Gemma3ModelShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str = "model") -> None:
            super().__init__()
            self.config = cfg
            self.quant_config = qc
            self.embed_tokens = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden_size)
            self.layers = nn.ModuleList(
                Gemma3DecoderLayer(cfg, qc, cc, f"{prefix}.layers.{i}")
                for i in range(cfg.num_hidden_layers)
            )
            self.norm = GemmaRMSNorm(cfg.hidden_size)

    ns_models["_Gemma3ModelShell"] = _Gemma3ModelShell
    Gemma3Model = t.make_class(
        F_GEMMA3,
        "Gemma3Model",
        ["_Gemma3ModelShell"],
        ["Gemma3Model.hf_to_vllm_mapper", "Gemma3Model.load_weights"],
        ns_models,
    )

    class _Gemma3ForCausalLMShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any) -> None:
            super().__init__()
            self.config = cfg
            self.quant_config = qc
            self.model = Gemma3Model(cfg, qc, cc, prefix="model")
            self.lm_head = ParallelLMHead(cfg.vocab_size, cfg.hidden_size)
            self.logits_processor = LogitsProcessor()

    ns_models["_Gemma3ForCausalLMShell"] = _Gemma3ForCausalLMShell
    Gemma3ForCausalLM = t.make_class(
        F_GEMMA3,
        "Gemma3ForCausalLM",
        ["_Gemma3ForCausalLMShell"],
        ["Gemma3ForCausalLM.hf_to_vllm_mapper", "Gemma3ForCausalLM.load_weights"],
        ns_models,
    )

    # ---- NemotronH ----
    class NemotronHAttention(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str) -> None:
            super().__init__()
            self.qkv_proj = QKVParallelLinear()
            self.o_proj = RowParallelLinear()
            self.attn = attn_for(cfg, qc, cc, f"{prefix}.attn")

    class MambaMixer2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.in_proj = MergedColumnParallelLinear()
            self.conv1d = ColumnParallelLinear()
            self.out_proj = RowParallelLinear()
            self.A = _param(1)
            self.D = _param(1)
            self.dt_bias = _param(1)
            self.norm = RMSNorm(1)

    class NemotronHMLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.up_proj = ColumnParallelLinear()
            self.down_proj = RowParallelLinear()

    class _NemotronHLayer(nn.Module):
        def __init__(self, mixer: nn.Module, hidden: int) -> None:
            super().__init__()
            self.mixer = mixer
            self.norm = RMSNorm(hidden)

    class _NemotronHModelShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any, prefix: str = "model") -> None:
            super().__init__()
            self.embed_tokens = VocabParallelEmbedding(cfg.vocab_size, cfg.hidden_size)
            layers = []
            for i, kind in enumerate(cfg.hybrid_override_pattern):
                p = f"{prefix}.layers.{i}"
                if kind == "*":
                    mixer: nn.Module = NemotronHAttention(cfg, qc, cc, f"{p}.mixer")
                elif kind == "M":
                    mixer = MambaMixer2()
                elif kind == "-":
                    mixer = NemotronHMLP()
                else:
                    raise ValueError(f"layer type {kind!r} not modelled")
                layers.append(_NemotronHLayer(mixer, cfg.hidden_size))
            self.layers = nn.ModuleList(layers)
            self.norm_f = RMSNorm(cfg.hidden_size)

    NemotronHModel = type("NemotronHModel", (_NemotronHModelShell,), {})  # no load_weights

    class _NemotronHForCausalLMShell(nn.Module):
        def __init__(self, cfg: Any, qc: Any, cc: Any) -> None:
            self.quant_config = qc  # vLLM sets it before nn.Module.__init__
            super().__init__()
            self.config = cfg
            self.model = NemotronHModel(cfg, qc, cc, prefix="model")
            self.lm_head = ParallelLMHead(cfg.vocab_size, cfg.hidden_size)
            self.logits_processor = LogitsProcessor()

    ns_models["_NemotronHForCausalLMShell"] = _NemotronHForCausalLMShell
    NemotronHForCausalLM = t.make_class(
        F_NEMOTRON_H,
        "NemotronHForCausalLM",
        ["_NemotronHForCausalLMShell"],
        ["NemotronHForCausalLM.hf_to_vllm_mapper", "NemotronHForCausalLM.load_weights"],
        ns_models,
    )

    return {
        "LlamaForCausalLM": LlamaForCausalLM,
        "Gemma3ForCausalLM": Gemma3ForCausalLM,
        "NemotronHForCausalLM": NemotronHForCausalLM,
    }


# ======================================================================================
# Running one case
# ======================================================================================

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def enc_float(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def enc_tensor(t: torch.Tensor) -> Any:
    if t.dtype != torch.float32:
        raise AssertionError(f"engine tensor has dtype {t.dtype}, expected float32")
    vals = [enc_float(v) for v in t.detach().to("cpu").reshape(-1).tolist()]
    return vals[0] if len(vals) == 1 else vals


def enc_host(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        vals = [enc_float(v) for v in x.detach().to("cpu", torch.float64).reshape(-1).tolist()]
        return vals[0] if len(vals) == 1 else vals
    if isinstance(x, (int, float)):
        return enc_float(float(x))
    return repr(x)


def fmt_exc(e: BaseException) -> str:
    msg = str(e)
    # AutoWeightsLoader appends the full parameter list of the model to this message; the
    # skeleton's list is not vLLM's, so only the part naming the tensor is kept.
    cut = msg.find(" The available parameters belonging to ")
    if cut >= 0:
        msg = msg[:cut]
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _layer_index(name: str) -> int | None:
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


class Oracle:
    def __init__(self, vllm_src: str, device: str = "cpu") -> None:
        self.tree = VllmTree(vllm_src)
        self.code = VllmCode(self.tree)
        self.device = torch.device(device)
        self.cases_mod = _load_sibling("kvscale_parity_cases", "cases.py")

    # -- engine start: config, kv dtype, quant config -----------------------------------
    def _configure(self, d: Path, options: dict[str, str], out: dict[str, Any]) -> dict[str, Any]:
        code = self.code
        config_dict = json.loads((d / "config.json").read_text())
        hf_config = SimpleNamespace(**config_dict)
        hf_config.__dict__.pop("quantization_config", None)

        def file_or_path_exists(model: str, name: str, revision: Any) -> bool:
            return (Path(model) / name).is_file()

        def get_hf_file_to_dict(name: str, model: str, revision: Any) -> Any:
            return json.loads((Path(model) / name).read_text())

        envs = SimpleNamespace(is_set=lambda name: True, VLLM_USE_DEEP_GEMM_E8M0=True)
        ns = {
            "__builtins__": __builtins__,
            "config_dict": config_dict,
            "config": hf_config,
            "model": str(d),
            "revision": None,
            "file_or_path_exists": file_or_path_exists,
            "get_hf_file_to_dict": get_hf_file_to_dict,
            "envs": envs,
            "os": os,
            "logger": code.logger,
        }
        exec(code.code_read_quant_config, ns)

        conv = code.Convertor()
        quant_cfg = conv._normalize_quantization_config(hf_config)
        quant_method = (quant_cfg or {}).get("quant_method") or None
        out["quant_method"] = quant_method

        resolved = code.resolve_kv_cache_dtype_string(
            options["kv_cache_dtype"], SimpleNamespace(hf_config=hf_config)
        )
        out["kv_cache_dtype"] = resolved
        cache_config = SimpleNamespace(cache_dtype=resolved, kv_cache_dtype_skip_layers=None)

        quant_config = None
        if quant_method is not None:
            if quant_method not in code.quant_classes:
                raise NotImplementedError(f"quant_method {quant_method!r} is not modelled")
            hf_quant_config = getattr(hf_config, "quantization_config", None)
            conv.hf_config = conv.hf_text_config = hf_config
            model_config = SimpleNamespace(
                model_arch_config=SimpleNamespace(
                    total_num_attention_heads=conv.get_total_num_attention_heads(),
                    total_num_kv_heads=conv.get_total_num_kv_heads(),
                )
            )
            exec(
                code.code_heads_piping,
                {"__builtins__": __builtins__},
                {"hf_quant_config": hf_quant_config, "model_config": model_config},
            )
            quant_cls = code.quant_classes[quant_method]
            cfg = hf_quant_config
            if quant_method == "modelopt":  # make_checkpoint_config for ModelOpt configs
                cfg = {**cfg, "_online_quantization_args": None}
            quant_config = quant_cls.from_config(cfg)
        return {
            "hf_config": hf_config,
            "quant_method": quant_method,
            "quant_config": quant_config,
            "resolved_kv": resolved,
            "cache_config": cache_config,
        }

    @contextlib.contextmanager
    def _engine_context(self, model_dtype: torch.dtype) -> Iterator[None]:
        old = torch.get_default_dtype()
        torch.set_default_dtype(model_dtype)
        try:
            with self.device:
                yield
        finally:
            torch.set_default_dtype(old)

    def _build(self, arch: str, setup: dict[str, Any], cache_config: Any) -> nn.Module:
        cls = self.code.models.get(arch)
        if cls is None:
            raise NotImplementedError(f"architecture {arch} is not modelled")
        return cls(setup["hf_config"], setup["quant_config"], cache_config)

    def _weight_files(self, d: Path) -> list[str]:
        # DefaultModelLoader._prepare_weights for a local directory, load_format auto/hf:
        # glob "*.safetensors", then drop files the index does not name.
        files = [str(p) for p in d.glob("*.safetensors")]
        return self.code.ns_wu["filter_duplicate_safetensors_files"](
            files, str(d), "model.safetensors.index.json"
        )

    def run_case(self, case: dict[str, Any], workdir: Path) -> dict[str, Any]:
        code = self.code
        d = self.cases_mod.write_case(case, workdir / case["name"])
        options = case["options"]
        layer_names = self.cases_mod.engine_layer_names(case["config"])
        arch = (case["config"].get("architectures") or ["LlamaForCausalLM"])[0]
        code.platform.fnuz = options["platform"] == "fnuz"
        model_dtype = _DTYPES[options["model_dtype"]]
        code.logger.take()
        out: dict[str, Any] = {
            "group": case["group"],
            "description": case["description"],
            "options": dict(options),
            "architecture": arch,
            "quant_method": None,
            "kv_cache_dtype": options["kv_cache_dtype"],
            "engine_error": None,
            "engine_warnings": [],
            "layers": [],
        }

        def all_error(msg: str) -> dict[str, Any]:
            out["engine_error"] = msg
            out["layers"] = [
                {
                    "name": n,
                    "error": msg,
                    "k_scale": None,
                    "v_scale": None,
                    "q_scale": None,
                    "prob_scale": None,
                }
                for n in layer_names
            ]
            out["engine_warnings"] = code.logger.take()
            return out

        with _stub_modules(code.stub_modules):
            try:
                with self._engine_context(model_dtype):
                    setup = self._configure(d, options, out)
            except Exception as e:
                return all_error(fmt_exc(e))

            def fresh_model() -> nn.Module:
                cc = copy.copy(setup["cache_config"])
                try:
                    with self._engine_context(model_dtype):
                        return self._build(arch, setup, cc)
                finally:
                    out["kv_cache_dtype"] = cc.cache_dtype  # after Attention's own promotion

            try:
                model = fresh_model()
            except Exception as e:
                return all_error(fmt_exc(e))
            attn_names = [n for n, m in model.named_modules() if isinstance(m, code.Attention)]
            if [
                m.layer_name for m in model.modules() if isinstance(m, code.Attention)
            ] != layer_names:
                raise AssertionError(
                    f"{case['name']}: skeleton layers {attn_names} != {layer_names}"
                )
            out["engine_warnings"] = code.logger.take()

            files = self._weight_files(d)
            for lname in layer_names:
                out["layers"].append(self._run_layer(fresh_model, files, lname, model_dtype))
        return out

    def _run_layer(
        self,
        fresh_model: Callable[[], nn.Module],
        files: list[str],
        lname: str,
        model_dtype: torch.dtype,
    ) -> dict[str, Any]:
        code = self.code
        idx = _layer_index(lname)
        rec: dict[str, Any] = {
            "name": lname,
            "error": None,
            "k_scale": None,
            "v_scale": None,
            "q_scale": None,
            "prob_scale": None,
        }
        model = fresh_model()
        code.logger.take()
        attn = next(
            m for m in model.modules() if isinstance(m, code.Attention) and m.layer_name == lname
        )
        iterator = code.ns_wu["safetensors_weights_iterator"]

        def weights() -> Iterator[tuple[str, torch.Tensor]]:
            for name, tensor in iterator(files, False):
                ti = _layer_index(name)
                if ti is None or ti == idx:
                    yield name, tensor

        try:
            with self._engine_context(model_dtype):
                model.load_weights(weights())
                # model_loader.utils.process_weights_after_loading: quant methods first,
                # then every attention layer's own hook.
                qm = getattr(attn, "quant_method", None)
                if isinstance(qm, code.QuantizeMethodBase):
                    qm.process_weights_after_loading(attn)
                attn.process_weights_after_loading(model_dtype)
        except Exception as e:
            rec["error"] = fmt_exc(e)
            rec["warnings"] = code.logger.take()
            return rec
        rec["k_scale"] = enc_tensor(attn._k_scale)
        rec["v_scale"] = enc_tensor(attn._v_scale)
        rec["q_scale"] = enc_tensor(attn._q_scale)
        rec["prob_scale"] = enc_tensor(attn._prob_scale)
        rec["host"] = {
            k: enc_host(getattr(attn, "_" + k))
            for k in (
                "k_scale_float",
                "v_scale_float",
                "q_scale_float",
                "prob_scale_float",
                "k_scale_cpu",
                "v_scale_cpu",
            )
        }
        rec["warnings"] = code.logger.take()
        return rec

    def run(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        return run_catalogue(
            SCHEMA,
            self.tree,
            self.cases_mod.CASES,
            names,
            self.run_case,
            device=self.device.type,
            generator="tests/parity/vllm_oracle.py",
            tmp_prefix="kvscale-oracle-",
        )


def run_catalogue(
    schema: str,
    tree: VllmTree,
    cases: Sequence[dict[str, Any]],
    names: Sequence[str] | None,
    run_case: Callable[[dict[str, Any], Path], Any],
    *,
    device: str,
    generator: str,
    tmp_prefix: str,
) -> dict[str, Any]:
    """A golden document: each case of the catalogue (``names``: only these) run in one
    temporary directory, under the provenance that says which vLLM sources produced it."""
    if names:
        unknown = set(names) - {c["name"] for c in cases}
        if unknown:
            raise SystemExit(f"unknown case(s): {sorted(unknown)}")
        cases = [c for c in cases if c["name"] in names]
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix=tmp_prefix) as tmp:
        for c in cases:
            results[c["name"]] = run_case(c, Path(tmp))
    return {
        "schema": schema,
        "provenance": {
            "engine": "vllm",
            "vllm_version": tree.version(),
            "vllm_sources_sha256": dict(sorted(tree.used.items())),
            "torch_version": torch.__version__,
            "python_version": _pyplatform.python_version(),
            "device": device,
            "regex_module": _re.__name__,
            "generator": generator,
        },
        "cases": results,
    }


# ======================================================================================
# Secondary: which registered architectures drop Quark-style *_proj.output_scale
# ======================================================================================
#
# AutoWeightsLoader.load_weights (models/utils.py) builds ONE mapper per loader:
#     mapper = <mapper passed by the model> | quant_config.get_cache_scale_mapper() | ...
# and WeightsMapper._map_name_with_shard applies, in this order: renamings, regex, substr,
# STACKED, prefix, SUFFIX. Quark/fp8 map `.k_proj.output_scale` with a suffix rule, so when
# the model's own mapper (passed at the TOP-LEVEL loader, the first one to see checkpoint
# names) carries a stacked `.k_proj -> .qkv_proj` rule, `k_proj.output_scale` is rewritten
# to `qkv_proj.output_scale` before the suffix rule can match, and the KV scale is lost
# (QKVParallelLinear has no `output_scale`, so loading fails). LlamaForCausalLM passes no
# mapper at the top level: its cache-scale pass runs alone, and LlamaModel's stacked mapper
# only sees names that are already `...attn.k_scale`.
#
# The analysis below is static: it resolves, for each architecture in registry.py, the
# class, its effective load_weights (MRO), the `mapper=` expression handed to the top-level
# AutoWeightsLoader, evaluates that expression with vLLM's own WeightsMapper where it is
# built from literals, composes it exactly like AutoWeightsLoader does with Quark's cache
# mapper, and maps sample checkpoint names with vLLM's own _map_name_with_shard.

_SAMPLE_ATTN_PREFIXES = (
    "model.layers.0.self_attn",
    "model.language_model.layers.0.self_attn",
    "language_model.model.layers.0.self_attn",
    "model.layers.0.attn",
)


_ARCH_QUESTION = " ".join(
    """
architectures whose top-level load path applies a stacked .q_proj/.k_proj/.v_proj mapping in
the same WeightsMapper pass as the quant config's cache-scale mapper, so that Quark-style
<attn>.{k,v,q}_proj.output_scale KV scales are renamed to qkv_proj.output_scale and never
reach <attn>.attn.{k,v,q}_scale
""".split()
)

_ARCH_METHOD = " ".join(
    """
Static analysis of vLLM's source (tests/parity/vllm_oracle.py --arch-drop-out): registry.py ->
class -> effective load_weights via the MRO (following super().load_weights) -> the mapper=
handed to the top-level AutoWeightsLoader, evaluated from vLLM's literal definitions with
vLLM's own WeightsMapper, composed as AutoWeightsLoader does (model mapper |
QuarkConfig.get_cache_scale_mapper() | get_checkpoint_weight_mapper() |
REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER) and applied with vLLM's own _map_name_with_shard. A name
counts as dropped when a stacked rule fired on it and it did not end as <attn>.attn.<x>_scale.
""".split()
)

_ARCH_VERDICTS = {
    "drops": "top-level mapper has a stacked q/k/v rule: output_scale KV scales are renamed "
    "away (loading then fails on qkv_proj.output_scale)",
    "keeps": "top-level loader maps output_scale to attn.*_scale (the cache-scale mapper runs "
    "without a stacked q/k/v rule in its pass)",
    "dynamic": "mapper extended at runtime (Transformers backend fusers, config-built mappers); "
    "the static part keeps the names, the runtime part may not",
    "custom_loader": "top-level load_weights does not use AutoWeightsLoader; not analysed",
    "unresolved": "class, load_weights or mapper could not be resolved statically",
}

_ARCH_CONFIDENCE = " ".join(
    """
High for every 'drops' entry: the mapper is evaluated from vLLM's literal definitions with
vLLM's own WeightsMapper and the rename is reproduced with its own _map_name_with_shard;
Gemma3ForCausalLM and NemotronHForCausalLM (drops) and LlamaForCausalLM (keeps) are also
exercised end to end by the parity oracle (cases arch_*). Residual risk: the MRO is an
approximation (depth-first), only the top-level loader is examined (a 'keeps' model could still
lose the scales in a hand-written inner loader), and whether the top-level loader finds a
quant_config (on the model or a direct child) is not checked -- without one no cache-scale
mapper runs at all and output_scale names are not mapped either. 'dynamic', 'custom_loader'
and 'unresolved' entries are not judged; the Transformers-backend classes ('dynamic') add
qualname-keyed stacked q/k/v rules at runtime when their QKV fuser applies
(model_executor/models/transformers/base.py, `self.hf_to_vllm_mapper |=
WeightsMapper(orig_to_new_stacked=...)`), which would drop the scales the same way.
""".split()
)


class _Unresolved(Exception):
    pass


class _SrcIndex:
    def __init__(self, tree: VllmTree) -> None:
        self.t = tree
        self._info: dict[str, dict[str, Any]] = {}

    def rel_for_module(
        self, dotted: str, base_rel: str | None = None, level: int = 0
    ) -> str | None:
        if level:
            assert base_rel is not None
            parts = base_rel.split("/")[:-1]
            if level > 1:
                parts = parts[: len(parts) - (level - 1)]
            path = "/".join(parts + (dotted.split(".") if dotted else []))
        else:
            if not dotted.startswith("vllm."):
                dotted = "vllm.model_executor.models." + dotted
            path = "/".join(dotted.split(".")[1:])
        for cand in (path + ".py", path + "/__init__.py"):
            if (self.t.pkg / cand).is_file():
                return cand
        return None

    def info(self, rel: str) -> dict[str, Any]:
        if rel in self._info:
            return self._info[rel]
        mod = self.t.tree(rel)
        classes: dict[str, ast.ClassDef] = {}
        assigns: dict[str, ast.expr] = {}
        imports: dict[str, tuple[str | None, str]] = {}
        for node in mod.body:
            if isinstance(node, ast.ClassDef):
                classes[node.name] = node
            elif isinstance(node, ast.Assign):
                for tgt in node.targets:
                    if isinstance(tgt, ast.Name):
                        assigns[tgt.id] = node.value
            elif (
                isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value
            ):
                assigns[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                src = (
                    self.rel_for_module(node.module or "", rel, node.level)
                    if node.level
                    else (
                        self.rel_for_module(node.module)
                        if node.module and node.module.startswith("vllm")
                        else None
                    )
                )
                for a in node.names:
                    imports[a.asname or a.name] = (src, a.name)
        out = {"classes": classes, "assigns": assigns, "imports": imports}
        self._info[rel] = out
        return out

    def resolve_class(self, rel: str, name: str, depth: int = 0) -> tuple[str, ast.ClassDef] | None:
        if depth > 8:
            return None
        info = self.info(rel)
        if name in info["classes"]:
            return rel, info["classes"][name]
        if name in info["imports"]:
            src, orig = info["imports"][name]
            if src is not None:
                return self.resolve_class(src, orig, depth + 1)
        if name in info["assigns"] and isinstance(info["assigns"][name], ast.Name):
            return self.resolve_class(rel, info["assigns"][name].id, depth + 1)
        if rel.endswith("/__init__.py") and depth == 0:
            # packages that pick an implementation at import time (e.g. nvidia/ vs amd/):
            # take the single definition, or the nvidia one
            pkg_dir = self.t.pkg / rel[: -len("/__init__.py")]
            hits = []
            for f in sorted(pkg_dir.rglob("*.py")):
                frel = str(f.relative_to(self.t.pkg))
                try:
                    if name in self.info(frel)["classes"]:
                        hits.append(frel)
                except SyntaxError:
                    continue
            if len(hits) > 1:
                hits = [h for h in hits if "/nvidia/" in h] or hits[:1]
            if len(hits) == 1:
                return hits[0], self.info(hits[0])["classes"][name]
        return None

    def mro(self, rel: str, cls: ast.ClassDef) -> tuple[list[tuple[str, ast.ClassDef]], list[str]]:
        """Approximate MRO (depth-first, left to right, de-duplicated) and the names of
        bases that could not be resolved (e.g. nn.Module, interface mixins)."""
        seen: set[tuple[str, str]] = set()
        order: list[tuple[str, ast.ClassDef]] = []
        unresolved: list[str] = []

        def visit(r: str, c: ast.ClassDef) -> None:
            if (r, c.name) in seen:
                return
            seen.add((r, c.name))
            order.append((r, c))
            for b in c.bases:
                bname = (
                    b.id
                    if isinstance(b, ast.Name)
                    else (b.attr if isinstance(b, ast.Attribute) else None)
                )
                if bname is None:
                    continue
                got = self.resolve_class(r, bname)
                if got is None:
                    unresolved.append(bname)
                else:
                    visit(*got)

        visit(rel, cls)
        return order, unresolved


def _class_attr(
    mro: list[tuple[str, ast.ClassDef]], name: str
) -> tuple[str, ast.ClassDef, ast.stmt] | None:
    for r, c in mro:
        for node in c.body:
            if VllmTree._defines(node, name):
                if isinstance(node, ast.AnnAssign) and node.value is None:
                    continue
                return r, c, node
    return None


class _MapperEval:
    def __init__(self, idx: _SrcIndex, WeightsMapper: type) -> None:
        self.idx = idx
        self.WM = WeightsMapper
        self.evidence: list[str] = []

    def loc(self, rel: str, node: ast.AST) -> str:
        return f"vllm/{rel}:{getattr(node, 'lineno', '?')}"

    def class_attr_value(self, rel: str, cls: ast.ClassDef, name: str) -> Any:
        mro, _ = self.idx.mro(rel, cls)
        found = _class_attr(mro, name)
        if found is None:
            raise _Unresolved(f"{cls.name}.{name} not found")
        r, c, node = found
        if isinstance(node, ast.FunctionDef):
            raise _Unresolved(f"{c.name}.{name} is a function")
        value = node.value  # type: ignore[union-attr]
        self.evidence.append(f"{c.name}.{name} = ... ({self.loc(r, node)})")
        return self.eval(value, r, c, {})

    def eval(
        self,
        node: ast.AST,
        rel: str,
        cls: ast.ClassDef | None,
        local: dict[str, ast.expr],
        depth: int = 0,
    ) -> Any:
        if depth > 30:
            raise _Unresolved("too deep")
        ev = lambda n: self.eval(n, rel, cls, local, depth + 1)  # noqa: E731
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=True):
                if k is None:
                    out.update(ev(v))
                else:
                    out[ev(k)] = ev(v)
            return out
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [ev(e) for e in node.elts]
            return vals if isinstance(node, ast.List) else tuple(vals)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return ev(node.left) | ev(node.right)
        if isinstance(node, ast.Name):
            if node.id in local:
                return ev(local[node.id])
            info = self.idx.info(rel)
            if node.id in info["assigns"]:
                return self.eval(info["assigns"][node.id], rel, None, {}, depth + 1)
            if node.id in info["imports"]:
                src, orig = info["imports"][node.id]
                if src is not None:
                    sinfo = self.idx.info(src)
                    if orig in sinfo["assigns"]:
                        return self.eval(sinfo["assigns"][orig], src, None, {}, depth + 1)
            raise _Unresolved(f"name {node.id} ({self.loc(rel, node)})")
        if isinstance(node, ast.Attribute):
            if (
                isinstance(node.value, ast.Name)
                and node.value.id in ("self", "cls")
                and cls is not None
            ):
                return self.class_attr_value(rel, cls, node.attr)
            if isinstance(node.value, ast.Name):
                got = self.idx.resolve_class(rel, node.value.id)
                if got is not None:
                    return self.class_attr_value(got[0], got[1], node.attr)
            raise _Unresolved(f"attribute {ast.unparse(node)} ({self.loc(rel, node)})")
        if isinstance(node, ast.Call):
            fname = ast.unparse(node.func)
            if fname == "WeightsMapper":
                kw = {}
                for k in node.keywords:
                    if k.arg is None:
                        raise _Unresolved("**kwargs")
                    kw[k.arg] = ev(k.value)
                if node.args:
                    raise _Unresolved("positional WeightsMapper args")
                return self.WM(**kw)
            if fname in ("re.compile", "regex.compile"):
                return _re.compile(*[ev(a) for a in node.args])
            raise _Unresolved(f"call {fname}() ({self.loc(rel, node)})")
        raise _Unresolved(f"{type(node).__name__} ({self.loc(rel, node)})")


def _function_locals(func: ast.FunctionDef) -> dict[str, ast.expr]:
    out: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            for tgt in node.targets:
                if isinstance(tgt, ast.Name):
                    out[tgt.id] = node.value
    return out


def _mutates_mapper(mro: list[tuple[str, ast.ClassDef]]) -> list[str]:
    hits = []
    for r, c in mro:
        for node in ast.walk(c):
            tgt = None
            if isinstance(node, ast.Assign):
                tgt = node.targets[0]
            elif isinstance(node, ast.AugAssign):
                tgt = node.target
            if (
                isinstance(tgt, ast.Attribute)
                and tgt.attr == "hf_to_vllm_mapper"
                and isinstance(tgt.value, ast.Name)
                and tgt.value.id == "self"
            ):
                hits.append(f"vllm/{r}:{node.lineno}")
    return hits


def arch_output_scale_drop(tree: VllmTree, code: VllmCode) -> dict[str, Any]:
    idx = _SrcIndex(tree)
    reg_rel = "model_executor/models/registry.py"
    reg = tree.tree(reg_rel)
    ns: dict[str, Any] = {"__builtins__": __builtins__}
    for node in reg.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            tgt = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tgt, ast.Name) and tgt.id.startswith("_") and tgt.id.endswith("_MODELS"):
                try:
                    exec(tree.compile(reg_rel, [node]), ns)
                except Exception:
                    pass
    registry: dict[str, tuple[str, str]] = {}
    for arch, val in (ns.get("_VLLM_MODELS") or {}).items():
        if isinstance(val, tuple) and len(val) >= 2 and all(isinstance(x, str) for x in val[:2]):
            registry[arch] = (val[0], val[1])

    quark_cache = code.quant_classes["quark"].get_cache_scale_mapper()
    base_ckpt = code.quant_classes["quark"].get_checkpoint_weight_mapper()
    rotary = code.AutoWeightsLoader.REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER

    results: dict[str, dict[str, Any]] = {}
    for arch in sorted(registry):
        modname, clsname = registry[arch]
        r: dict[str, Any] = {"module": modname, "class": clsname}
        results[arch] = r
        rel = idx.rel_for_module(modname)
        if rel is None:
            r.update(verdict="unresolved", reason=f"module {modname} not found")
            continue
        got = idx.resolve_class(rel, clsname)
        if got is None:
            assigned = idx.info(rel)["assigns"].get(clsname)
            r.update(
                verdict="unresolved",
                reason=(
                    f"{clsname} is built at import time ({ast.unparse(assigned)[:80]})"
                    if assigned is not None
                    else f"class {clsname} not found in {rel}"
                ),
            )
            continue
        crel, cls = got
        mro, unresolved_bases = idx.mro(crel, cls)
        lw = _class_attr(mro, "load_weights")
        if lw is None or not isinstance(lw[2], ast.FunctionDef):
            r.update(
                verdict="unresolved",
                reason="no load_weights found in the resolvable MRO",
                unresolved_bases=unresolved_bases,
            )
            continue
        lrel, lcls, func = lw
        chain = []
        while True:
            assert isinstance(func, ast.FunctionDef)
            chain.append(f"vllm/{lrel}:{func.lineno} ({lcls.name}.load_weights)")
            local = _function_locals(func)
            loader_calls = []
            prepass = []
            for node in ast.walk(func):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                    continue
                recv = node.func.value
                if node.func.attr == "load_weights":
                    is_auto = (
                        isinstance(recv, ast.Call) and ast.unparse(recv.func) == "AutoWeightsLoader"
                    ) or (
                        isinstance(recv, ast.Name)
                        and recv.id in local
                        and isinstance(local[recv.id], ast.Call)
                        and ast.unparse(local[recv.id].func) == "AutoWeightsLoader"
                    )
                    mapper_kw = next((k.value for k in node.keywords if k.arg == "mapper"), None)
                    loader_calls.append((node, is_auto, mapper_kw, recv))
                elif node.func.attr == "apply" and node.args:
                    prepass.append(node)
            autos = [c for c in loader_calls if c[1]]
            supers = [
                c
                for c in loader_calls
                if isinstance(c[3], ast.Call) and ast.unparse(c[3]) == "super()"
            ]
            if autos or not supers:
                break
            pos = next(i for i, (rr, cc) in enumerate(mro) if cc is lcls)
            nxt = _class_attr(mro[pos + 1 :], "load_weights")
            if nxt is None or not isinstance(nxt[2], ast.FunctionDef):
                break
            lrel, lcls, func = nxt
        r["load_weights"] = chain if len(chain) > 1 else chain[0]
        if not autos:
            delegates = [ast.unparse(c[3]) for c in loader_calls]
            r.update(
                verdict="custom_loader",
                reason=(
                    "top-level load_weights does not use AutoWeightsLoader"
                    + (
                        f" (delegates to {', '.join(delegates)})"
                        if delegates
                        else " (hand-written loop)"
                    )
                    + "; no cache-scale mapper pass at the top level, not analysed further"
                ),
            )
            continue
        call, _, mapper_kw, _ = autos[0]
        r["autoweightsloader_call"] = f"vllm/{lrel}:{call.lineno}"
        ev = _MapperEval(idx, code.WeightsMapper)
        dynamic = _mutates_mapper(mro)
        pre_mappers = []
        for ap in prepass:
            try:
                m = ev.eval(ap.func.value, lrel, lcls, local)
            except _Unresolved:
                continue
            if isinstance(m, code.WeightsMapper):
                pre_mappers.append((ap, m))
        if mapper_kw is None:
            top = code.WeightsMapper()
            r["top_mapper"] = "none"
        else:
            try:
                top = ev.eval(mapper_kw, lrel, lcls, local)
            except _Unresolved as e:
                r.update(
                    verdict="unresolved",
                    reason=f"mapper={ast.unparse(mapper_kw)}: {e}",
                    evidence=ev.evidence,
                )
                continue
            if top is None:  # AutoWeightsLoader: `mapper = mapper or WeightsMapper()`
                top = code.WeightsMapper()
            if not isinstance(top, code.WeightsMapper):
                r.update(
                    verdict="unresolved",
                    reason=f"mapper={ast.unparse(mapper_kw)} is not a WeightsMapper",
                )
                continue
            r["top_mapper"] = ast.unparse(mapper_kw)
        r["evidence"] = ev.evidence
        if dynamic:
            r["mapper_mutated_at_runtime"] = dynamic
        if top.orig_to_new_prefix:
            # the model's own prefix renames (what its layer names become in the engine)
            r["prefix_renames"] = [[k, v] for k, v in top.orig_to_new_prefix.items()]
        merged = top | quark_cache | base_ckpt | rotary
        dropped: dict[str, Any] = {}
        for pfx in _SAMPLE_ATTN_PREFIXES:
            for p in ("k", "v", "q"):
                name = f"{pfx}.{p}_proj.output_scale"
                shard = None
                for _pre_call, pre in pre_mappers:
                    res = pre._map_name_with_shard(name)
                    if res is not None:
                        name, shard = res[0], res[1] if res[1] is not None else shard
                res = merged._map_name_with_shard(name)
                if res is not None and res[1] is not None:
                    shard = res[1]
                # a drop caused by a stacked rule: the name got a shard id and did not
                # end up as <attn>.attn.<p>_scale
                if shard is not None and (res is None or not res[0].endswith(f".attn.{p}_scale")):
                    dropped[f"{pfx}.{p}_proj.output_scale"] = None if res is None else res[0]
        stacked_hits = sorted(
            k
            for k in top.orig_to_new_stacked
            if any(
                k in f"{pfx}.{p}_proj.output_scale" for pfx in _SAMPLE_ATTN_PREFIXES for p in "kvq"
            )
        )
        if dropped:
            first = {
                k: v for k, v in dropped.items() if k.startswith(_SAMPLE_ATTN_PREFIXES[0] + ".")
            }
            r.update(verdict="drops", stacked_keys=stacked_hits, mapped_to=first or dropped)
            if pre_mappers:
                r["prepass"] = [f"vllm/{lrel}:{c.lineno}" for c, _ in pre_mappers]
        elif dynamic:
            r.update(
                verdict="dynamic",
                reason="hf_to_vllm_mapper is extended at runtime; the "
                "static part keeps the output_scale names",
            )
        else:
            r.update(verdict="keeps")
        if r["verdict"] != "drops":
            r.pop("evidence", None)

    drops = {a: r for a, r in results.items() if r["verdict"] == "drops"}
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return {
        "schema": "kvscale.arch-output-scale-drop/2",
        "provenance": {
            "vllm_version": tree.version(),
            "vllm_sources_sha256": dict(sorted(tree.used.items())),
            "generator": "tests/parity/vllm_oracle.py --arch-drop-out",
        },
        "question": _ARCH_QUESTION,
        "method": _ARCH_METHOD + f" Sample names: {list(_SAMPLE_ATTN_PREFIXES)} + "
        ".{k,v,q}_proj.output_scale.",
        "verdicts": _ARCH_VERDICTS,
        "confidence": _ARCH_CONFIDENCE,
        "verified_by_oracle": {
            "Gemma3ForCausalLM": "drops",
            "NemotronHForCausalLM": "drops",
            "LlamaForCausalLM": "keeps",
        },
        "counts": dict(sorted(counts.items())),
        "drops": sorted(drops),
        "architectures": results,
    }


# Fields of "provenance" that describe the machine, not the inputs: ignored when checking
# that the committed golden file is up to date.
VOLATILE_PROVENANCE = ("torch_version", "python_version", "device", "regex_module")


def summarize(doc: dict[str, Any]) -> str:
    lines = [f"vLLM {doc['provenance']['vllm_version']}: {len(doc['cases'])} cases"]
    by_group: dict[str, list[int]] = {}
    for c in doc["cases"].values():
        g = by_group.setdefault(c["group"], [0, 0, 0])
        g[0] += 1
        g[1] += len(c["layers"])
        g[2] += sum(1 for layer in c["layers"] if layer["error"])
    for g, (n, nl, ne) in by_group.items():
        lines.append(f"  {g:24s} {n:4d} cases {nl:4d} layers {ne:4d} refused")
    total_layers = sum(v[1] for v in by_group.values())
    total_err = sum(v[2] for v in by_group.values())
    lines.append(
        f"  {'total':24s} {len(doc['cases']):4d} cases {total_layers:4d} layers {total_err:4d} "
        "refused"
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    if not __debug__:
        print("vllm_oracle.py must run without -O: vLLM's asserts are behaviour", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--vllm-src",
        required=True,
        help="extracted vLLM source: the directory holding vllm/ (or vllm/ itself)",
    )
    ap.add_argument("--out", help="golden JSON file to write ('-' for stdout)")
    ap.add_argument(
        "--arch-drop-out", help="also write the architecture output_scale-drop analysis here"
    )
    ap.add_argument("--device", default="cpu", help="torch device for the model (default cpu)")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.out and not args.arch_drop_out:
        ap.error("give --out and/or --arch-drop-out")
    oracle = Oracle(args.vllm_src, args.device)
    if args.out:
        doc = oracle.run(args.case)
        text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
        if args.out == "-":
            sys.stdout.write(text)
        else:
            Path(args.out).write_text(text)
            if not args.quiet:
                print(summarize(doc))
                print(f"wrote {args.out}")
    if args.arch_drop_out:
        # a fresh tree: the evidence's provenance lists the files the scan read, whether or
        # not the cases ran first
        scan = Oracle(args.vllm_src, args.device) if args.out else oracle
        with _stub_modules(scan.code.stub_modules):
            drop = arch_output_scale_drop(scan.tree, scan.code)
        Path(args.arch_drop_out).write_text(json.dumps(drop, indent=1) + "\n")
        if not args.quiet:
            print(f"architectures: {drop['counts']}; drop list: {len(drop['drops'])}")
            print(f"wrote {args.arch_drop_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
