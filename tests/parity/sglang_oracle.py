#!/usr/bin/env python3
"""Oracle: run SGLang 0.5.23's own KV-scale loading code on the parity catalogue.

    python tests/parity/sglang_oracle.py --sglang-src /work/scratch/sglang/src \
        --out tests/parity/sglang_expected.json

SGLang is not installed and not imported. Its source tree (the `sglang/` package extracted
from the wheel, given by path at run time) is parsed with `ast`; the functions, classes and
statements that decide the values are taken out by name, compiled with their real file names
and line numbers, and executed in small namespaces that provide stubs for what they reference
(logger, platform, tensor-parallel rank 0 / world size 1, environment flags, model skeleton
modules). Nothing of SGLang is copied into this repository. tests/parity/SGLANG.md lists
exactly what is verbatim and what is stubbed.

Cases: every case of tests/parity/cases.py that SGLang can express (Llama architecture, a
kv-cache dtype SGLang accepts; vLLM's `fp8` becomes SGLang's `fp8_e4m3`), then
tests/parity/sglang_cases.py (its `sgl-arch` cases run other architectures' own load_weights,
executed by tests/parity/sglang_architectures.py's World on the same model tree).

Must run without `python -O`: SGLang's `assert` statements are part of its behaviour.
"""

from __future__ import annotations
import __future__

import argparse
import ast
import collections
import concurrent.futures
import contextlib
import copy
import dataclasses
import enum
import fnmatch
import functools
import glob
import hashlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import platform as _pyplatform
import re
import sys
import tempfile
import types
import typing
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SCHEMA = "kvscale.sglang-parity/2"
_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.")

# The module name SGLang's definitions are executed under. dataclasses (and pydantic) look
# the defining module up in sys.modules, so it has to exist there (it holds nothing).
EXEC_MODULE = "kvscale_sglang_oracle_exec"
sys.modules.setdefault(EXEC_MODULE, types.ModuleType(EXEC_MODULE))

# vLLM kv-cache dtype strings of cases.py -> the nearest `--kv-cache-dtype` SGLang accepts
# (srt/arg_groups/fields/model.py: choices auto, fp8_e5m2, fp8_e4m3, mxfp8, bf16, bfloat16,
# nvfp4, fp4_mx_block16). Others (float16, *_per_token_head) have no SGLang equivalent.
VLLM_TO_SGLANG_KV = {
    "auto": "auto",
    "fp8": "fp8_e4m3",
    "fp8_e4m3": "fp8_e4m3",
    "fp8_e5m2": "fp8_e5m2",
    "bfloat16": "bfloat16",
}


def _load_module(name: str, file: str) -> types.ModuleType:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


_stub_modules = _load_module("kvscale_parity_stubs", "stubs.py").stub_modules


# ======================================================================================
# Reading SGLang's source
# ======================================================================================


class SglTree:
    """The extracted `sglang` package; hands out AST nodes of named definitions."""

    def __init__(self, src: str | os.PathLike[str]) -> None:
        p = Path(src).resolve()
        if (p / "sglang" / "__init__.py").is_file():
            p = p / "sglang"
        if not (p / "srt" / "layers" / "quantization" / "kv_cache.py").is_file():
            raise SystemExit(f"{src}: not an extracted SGLang source tree (no srt/layers)")
        self.pkg = p
        self._trees: dict[str, ast.Module] = {}
        self._future: dict[str, int] = {}
        self.used: dict[str, str] = {}

    def version(self) -> str:
        for node in self.tree("_version.py").body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if "__version__" in names and isinstance(node.value.value, str):
                    return node.value.value
        raise SystemExit(f"cannot read the SGLang version from {self.pkg / '_version.py'}")

    def path(self, rel: str) -> Path:
        return self.pkg / rel

    def tree(self, rel: str) -> ast.Module:
        if rel not in self._trees:
            data = self.path(rel).read_bytes()
            self.used[rel] = hashlib.sha256(data).hexdigest()
            mod = ast.parse(data.decode("utf-8"), filename=str(self.path(rel)))
            self._trees[rel] = mod
            # compile like the real module: `from __future__ import annotations` there
            # means annotations are never evaluated
            flags = 0
            for node in mod.body:
                if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                    if any(a.name == "annotations" for a in node.names):
                        flags |= __future__.annotations.compiler_flag
            self._future[rel] = flags
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
                raise LookupError(f"SGLang source changed: {qualname!r} not found in {rel}")
            found = matches[-1]  # the binding that wins at import time
            body = getattr(found, "body", [])
        assert found is not None
        return found

    def has(self, rel: str, qualname: str) -> bool:
        try:
            self.node(rel, qualname)
        except LookupError:
            return False
        return True

    def statements(
        self, rel: str, func_qualname: str, predicate: Callable[[ast.stmt], bool], expect: int
    ) -> list[ast.stmt]:
        func = self.node(rel, func_qualname)
        assert isinstance(func, ast.FunctionDef)
        picked = [s for s in func.body if predicate(s)]
        if len(picked) != expect:
            raise LookupError(
                f"SGLang source changed: expected {expect} statement(s) in "
                f"{rel}:{func_qualname}, found {len(picked)}"
            )
        return picked

    def module_statements(
        self, rel: str, predicate: Callable[[ast.stmt], bool], expect: int
    ) -> list[ast.stmt]:
        picked = [s for s in self.tree(rel).body if predicate(s)]
        if len(picked) != expect:
            raise LookupError(
                f"SGLang source changed: expected {expect} module statement(s) in {rel}, "
                f"found {len(picked)}"
            )
        return picked

    def compile(self, rel: str, nodes: Sequence[ast.stmt]) -> types.CodeType:
        self.tree(rel)
        module = ast.Module(body=[copy.deepcopy(n) for n in nodes], type_ignores=[])
        # dont_inherit: this file's own `from __future__` must not leak into SGLang's code;
        # the source file's own future flags are applied instead.
        return compile(
            module, str(self.path(rel)), "exec", flags=self._future[rel], dont_inherit=True
        )

    def exec(self, rel: str, qualnames: Sequence[str], ns: dict[str, Any]) -> None:
        exec(self.compile(rel, [self.node(rel, q) for q in qualnames]), ns)

    def make_class(
        self, rel: str, name: str, bases: Sequence[str], members: Sequence[str], ns: dict[str, Any]
    ) -> type:
        """A class named `name` whose body is the listed verbatim members (methods with
        their decorators, class attributes) of SGLang classes in `rel`."""
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
        self.tree(rel)
        module = ast.Module(body=[cls], type_ignores=[])
        exec(
            compile(
                module, str(self.path(rel)), "exec", flags=self._future[rel], dont_inherit=True
            ),
            ns,
        )
        return ns[name]

    def class_defines(self, rel: str, cls: str, member: str) -> bool:
        node = self.node(rel, cls)
        assert isinstance(node, ast.ClassDef)
        return any(self._defines(n, member) for n in node.body)


# ======================================================================================
# Stubs
# ======================================================================================


class RecordingLogger:
    """Stands in for every SGLang module logger (`logging.getLogger(__name__)`).

    warning/error are recorded. `warning_once` / `info_once` are the methods transformers
    5.19.0 (the version SGLang 0.5.23 pins) adds to logging.Logger
    (transformers/utils/logging.py: `functools.lru_cache`d on (logger, message)); here the
    once-memory is per layer run (cleared by `take`), so results do not depend on case
    order."""

    def __init__(self) -> None:
        self.records: list[str] = []
        self._once: set[str] = set()

    @staticmethod
    def _fmt(msg: Any, args: tuple[Any, ...]) -> str:
        try:
            return str(msg) % args if args else str(msg)
        except Exception:  # pragma: no cover - defensive
            return f"{msg} {args}"

    def warning(self, msg: Any, *args: Any, **kw: Any) -> None:
        self.records.append(self._fmt(msg, args))

    error = warning
    warn = warning

    def warning_once(self, msg: Any, *args: Any, **kw: Any) -> None:
        text = self._fmt(msg, args)
        if text not in self._once:
            self._once.add(text)
            self.records.append(text)

    def info(self, *a: Any, **k: Any) -> None:
        pass

    info_once = debug = info

    def log(self, level: int, msg: Any, *args: Any, **kw: Any) -> None:
        if level >= 30:  # logging.WARNING
            self.records.append(self._fmt(msg, args))

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging.Logger's name)
        return True

    def take(self) -> list[str]:
        out, self.records = self.records, []
        return out

    def reset(self) -> None:
        self.records = []
        self._once = set()


@dataclasses.dataclass(frozen=True)
class Platform:
    """What the oracle models of the machine: an NVIDIA sm90 GPU ("ocp") or an AMD MI300
    (gfx942, "fnuz")."""

    name: str

    @property
    def hip(self) -> bool:
        return self.name == "fnuz"

    @property
    def capability(self) -> tuple[int, int]:
        return (9, 4) if self.hip else (9, 0)

    @property
    def gcn_arch(self) -> str:
        return "gfx942:sramecc+:xnack-" if self.hip else ""


class FakeCurrentPlatform:
    """sglang.srt.platforms.current_platform (only the queries reached here)."""

    def __init__(self, plat: Platform) -> None:
        self.plat = plat

    def is_cpu(self) -> bool:
        return False

    def is_out_of_tree(self) -> bool:
        return False

    def is_cuda_alike(self) -> bool:
        return True


class _EnvFlag:
    def __init__(self, value: Any) -> None:
        self.value = value

    def get(self) -> Any:
        return self.value

    def is_set(self) -> bool:
        return False


class FakeEnvs:
    """sglang.srt.environ.envs: the defaults of srt/environ.py for the flags reached here
    (only SGLANG_ENABLE_WEIGHT_LOADER_V2 is varied, by the case option weight_loader)."""

    def __init__(self, weight_loader_v2: bool = False) -> None:
        self.SGLANG_ENABLE_WEIGHT_LOADER_V2 = _EnvFlag(weight_loader_v2)
        self.SGLANG_SORT_WEIGHT_FILES = _EnvFlag(0)
        self.SGLANG_FP8_IGNORED_LAYERS = _EnvFlag("")
        self.SGLANG_DSV4_FP4_DEQUANT = _EnvFlag(False)
        self.SGLANG_USE_MODELSCOPE = _EnvFlag(False)
        self.SGLANG_EMBEDDINGS_SPARSE_HEAD = _EnvFlag(None)


class _Unused:
    """A name SGLang's code references on a path these cases never take."""

    def __init__(self, *a: Any, **k: Any) -> None:
        raise RuntimeError("oracle stub reached: this path is not modelled")


def _unused_fn(*a: Any, **k: Any) -> Any:
    raise RuntimeError("oracle stub reached: this path is not modelled")


class _AnnotationOnly:
    """A name that appears only in annotations SGLang evaluates at definition time."""


class PretrainedConfig(SimpleNamespace):
    """transformers.PretrainedConfig as far as used: attributes from config.json,
    `to_dict()`, and a class attribute `model_type` (LlamaConfig.model_type)."""

    model_type = ""

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(vars(self))


def make_hf_config(config_dict: dict[str, Any]) -> PretrainedConfig:
    cls = type("HFConfig", (PretrainedConfig,), {"model_type": config_dict.get("model_type", "")})
    return cls(**copy.deepcopy(config_dict))


# Layer-type stubs (isinstance checks in SGLang's code).
class LinearBase(nn.Module):
    pass


class FusedMoE(nn.Module):
    pass


class BaseLayerWithLoRA(nn.Module):
    pass


def _param(*shape: int, dtype: torch.dtype | None = None) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape, dtype=dtype), requires_grad=False)


def _stacked_loader_stub(param: Any, loaded: Any, shard_id: Any = None) -> None:
    raise RuntimeError("oracle stub reached: stacked linear weight_loader is not modelled")


class _FakeLinear(LinearBase):
    """Placeholder for SGLang's parallel linear layers (FP8 static: weight + scales). None of
    the catalogued tensors targets these; what matters is which names exist."""

    def __init__(self, *a: Any, **k: Any) -> None:
        super().__init__()
        self.weight = _param(1)
        self.weight_scale = _param(1, dtype=torch.float32)
        self.input_scale = _param(1, dtype=torch.float32)
        for p in (self.weight, self.weight_scale, self.input_scale):
            p.weight_loader = _stacked_loader_stub  # type: ignore[attr-defined]


class QKVParallelLinear(_FakeLinear):
    pass


class RowParallelLinear(_FakeLinear):
    pass


class MergedColumnParallelLinear(_FakeLinear):
    pass


class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = _param(hidden)


class VocabParallelEmbedding(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, **k: Any) -> None:
        super().__init__()
        self.weight = _param(num_embeddings, embedding_dim)


class ParallelLMHead(VocabParallelEmbedding):
    pass


class _Rope(nn.Module):
    pass


def get_rope(*a: Any, **k: Any) -> nn.Module:
    return _Rope()


class _FakeTqdm:
    """tqdm.auto.tqdm as used by the weight iterators (no output)."""

    def __init__(self, iterable: Iterable[Any] | None = None, *a: Any, **k: Any) -> None:
        self.iterable = iterable

    def __iter__(self) -> Iterator[Any]:
        return iter(self.iterable or [])

    def __enter__(self) -> _FakeTqdm:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def update(self, n: int = 1) -> None:
        pass

    @staticmethod
    def _get_free_pos() -> int:
        return 0


# ======================================================================================
# Assembling SGLang's code
# ======================================================================================

F_BASE = "srt/layers/quantization/base_config.py"
F_KVC = "srt/layers/quantization/kv_cache.py"
F_FP8 = "srt/layers/quantization/fp8.py"
F_MODELOPT = "srt/layers/quantization/modelopt_quant.py"
F_CT = "srt/layers/quantization/compressed_tensors/compressed_tensors.py"
F_QUARK = "srt/layers/quantization/quark/quark.py"
F_QUARK_UTILS = "srt/layers/quantization/quark/utils.py"
F_QINIT = "srt/layers/quantization/__init__.py"
F_AWQ = "srt/layers/quantization/awq/awq.py"
F_GPTQ = "srt/layers/quantization/gptq/gptq.py"
F_HUMMING = "srt/layers/quantization/humming.py"
F_WNA16 = "srt/layers/quantization/moe_wna16.py"
F_PETIT = "srt/layers/quantization/petit.py"
F_MO_UTILS = "srt/layers/modelopt_utils.py"
F_FP8K = "kernels/ops/quantization/fp8_kernel.py"
F_RADIX = "srt/layers/radix_attention.py"
F_WU = "srt/model_loader/weight_utils.py"
F_LOADER = "srt/model_loader/loader.py"
F_CKPT_Q = "srt/model_loader/checkpoint_quantization.py"
F_AUTO = "srt/model_loader/auto_loader.py"
F_MCFG = "srt/configs/model_config.py"
F_LLAMA = "srt/models/llama.py"
F_MUTILS = "srt/models/utils.py"
F_KVDT = "srt/mem_cache/kv_cache_dtype.py"
F_LMU = "srt/model_executor/model_runner_components/load_model_utils.py"
F_COMMON = "srt/utils/common.py"
F_LCOMMON = "srt/layers/utils/common.py"

# Registered quantization classes whose class (not a base) defines
# override_quantization_method, with the members that method reaches. Every other
# registered class is checked by `_check_no_override` to inherit the base one (None).
_OVERRIDE_DEFINERS: dict[str, tuple[str, list[str]]] = {
    "AWQMarlinConfig": (
        F_AWQ,
        ["get_name", "override_quantization_method", "is_awq_marlin_compatible"],
    ),
    "GPTQMarlinConfig": (
        F_GPTQ,
        ["get_name", "override_quantization_method", "is_gptq_marlin_compatible"],
    ),
    "HummingConfig": (F_HUMMING, ["override_quantization_method"]),
    "MoeWNA16Config": (
        F_WNA16,
        ["get_name", "override_quantization_method", "is_moe_wna16_compatible"],
    ),
    "PetitNvFp4Config": (
        F_PETIT,
        ["get_name", "override_quantization_method", "is_petit_nvfp4_compatible"],
    ),
    "ModelOptFp4Config": (F_MODELOPT, ["get_name", "override_quantization_method"]),
    "ModelOptMixedPrecisionConfig": (F_MODELOPT, ["get_name", "override_quantization_method"]),
}


class SglangCode:
    """SGLang's verbatim definitions, executed against stubs, for one platform."""

    def __init__(self, tree: SglTree, plat: Platform) -> None:
        self.tree = tree
        self.plat = plat
        self.logger = RecordingLogger()
        self.current_platform = FakeCurrentPlatform(plat)
        self.envs = FakeEnvs()
        t = tree
        hip = plat.hip

        def base_ns(**extra: Any) -> dict[str, Any]:
            ns: dict[str, Any] = {
                "__builtins__": __builtins__,
                "__name__": EXEC_MODULE,
                "torch": torch,
                "nn": nn,
                "logger": self.logger,
                "re": re,
                "os": os,
                "json": json,
                "glob": glob,
                "fnmatch": fnmatch,
                "functools": functools,
                "itertools": itertools,
                "collections": collections,
                "concurrent": concurrent,
                "inspect": inspect,
                "ABC": ABC,
                "abstractmethod": abstractmethod,
                "Any": Any,
                "Dict": dict,
                "List": list,
                "Tuple": tuple,
                "Set": set,
                "Type": type,
                "Optional": typing.Optional,
                "Union": typing.Union,
                "Literal": typing.Literal,
                "TypeAlias": typing.TypeAlias,
                "cast": typing.cast,
                "Iterable": Iterable,
                "Mapping": Mapping,
                "Callable": Callable,
                "Generator": typing.Generator,
                "TYPE_CHECKING": False,
                "MappingProxyType": MappingProxyType,
                "dataclass": dataclasses.dataclass,
                "field": dataclasses.field,
                "deepcopy": copy.deepcopy,
                "lru_cache": functools.lru_cache,
                "envs": self.envs,
                "current_platform": self.current_platform,
                "is_hip": lambda: hip,
                "is_cuda": lambda: not hip,
                "is_npu": lambda: False,
                "is_xpu": lambda: False,
                "is_cpu": lambda: False,
                "is_mps": lambda: False,
                "_is_hip": hip,
                "_is_cuda": not hip,
                "_is_npu": False,
                "_is_xpu": False,
                "_is_cpu": False,
                "LinearBase": LinearBase,
                "FusedMoE": FusedMoE,
                "ParallelLMHead": ParallelLMHead,
                "VocabParallelEmbedding": VocabParallelEmbedding,
                "log_info_on_rank0": lambda lg, msg: None,
            }
            ns.update(extra)
            return ns

        self.base_ns = base_ns

        # --- utils/common.py: print_warning_once (lru_cache'd on the message) -----------
        ns_common = base_ns()
        t.exec(F_COMMON, ["print_warning_once", "add_prefix"], ns_common)
        self.print_warning_once = ns_common["print_warning_once"]
        add_prefix = ns_common["add_prefix"]
        ns_lcommon = base_ns()
        t.exec(F_LCOMMON, ["get_layer_id"], ns_lcommon)
        get_layer_id = ns_lcommon["get_layer_id"]

        # --- kernels/ops/quantization/fp8_kernel.py: is_fp8_fnuz, fp8_dtype --------------
        fake_cuda = SimpleNamespace(
            get_device_properties=lambda i: SimpleNamespace(gcnArchName=plat.gcn_arch)
        )
        ns_fp8k = base_ns(
            torch=SimpleNamespace(
                cuda=fake_cuda,
                **{k: getattr(torch, k) for k in ("float8_e4m3fnuz", "float8_e4m3fn", "finfo")},
            )
        )
        t.exec(F_FP8K, ["is_fp8_fnuz"], ns_fp8k)
        exec(
            t.compile(
                F_FP8K,
                t.module_statements(
                    F_FP8K,
                    lambda s: isinstance(s, ast.If) and ast.unparse(s.test) == "is_fp8_fnuz()",
                    expect=1,
                ),
            ),
            ns_fp8k,
        )
        self.is_fp8_fnuz = ns_fp8k["is_fp8_fnuz"]
        fp8_dtype = ns_fp8k["fp8_dtype"]

        # --- base_config.py -------------------------------------------------------------
        ns_mou = base_ns()
        t.exec(
            F_MO_UTILS,
            [
                "ModelOptQuantMethod",
                "_MODELOPT_QUANT_ALGO_TO_METHOD",
                "canonicalize_modelopt_quant_algo",
            ],
            ns_mou,
        )
        ns_bc = base_ns(canonicalize_modelopt_quant_algo=ns_mou["canonicalize_modelopt_quant_algo"])
        t.exec(
            F_BASE,
            ["QuantizeMethodBase", "LinearMethodBase", "FusedMoEMethodBase", "QuantizationConfig"],
            ns_bc,
        )
        QuantizationConfig = ns_bc["QuantizationConfig"]
        QuantizeMethodBase = ns_bc["QuantizeMethodBase"]
        self.QuantizeMethodBase = QuantizeMethodBase

        # --- kv_cache.py ----------------------------------------------------------------
        ns_kc = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            is_fp8_fnuz=self.is_fp8_fnuz,
        )
        t.exec(F_KVC, ["BaseKVCacheMethod"], ns_kc)
        BaseKVCacheMethod = ns_kc["BaseKVCacheMethod"]
        self.BaseKVCacheMethod = BaseKVCacheMethod

        # --- radix_attention.py -----------------------------------------------------------
        ns_ra = base_ns(Enum=enum.Enum, _NnModule=nn.Module)
        t.exec(F_RADIX, ["AttentionType"], ns_ra)
        RadixAttention = t.make_class(
            F_RADIX, "RadixAttention", ["_NnModule"], ["RadixAttention.__init__"], ns_ra
        )
        self.RadixAttention = RadixAttention
        self.AttentionType = ns_ra["AttentionType"]

        # --- fp8.py -----------------------------------------------------------------------
        ns_fp8 = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            BaseKVCacheMethod=BaseKVCacheMethod,
            UnquantizedLinearMethod=_Unused,
            UnquantizedFusedMoEMethod=_Unused,
            Fp8LinearMethod=_Unused,
            Fp8MoEMethod=_Unused,
            is_layer_skipped=_unused_fn,
            _is_musa=False,
            _is_gfx95_supported=False,
            _mxfp8_to_block_fp8_required=False,
            WeightsMapper=_AnnotationOnly,
        )
        t.exec(F_FP8, ["ACTIVATION_SCHEMES"], ns_fp8)
        Fp8Config = t.make_class(
            F_FP8,
            "Fp8Config",
            ["QuantizationConfig"],
            [
                "Fp8Config.__init__",
                "Fp8Config.get_name",
                "Fp8Config.get_supported_act_dtypes",
                "Fp8Config.get_min_capability",
                "Fp8Config.get_config_filenames",
                "Fp8Config.from_config",
                "Fp8Config.get_quant_method",
                "Fp8Config.get_scaled_act_names",
                "Fp8Config.apply_weight_name_mapper",
            ],
            ns_fp8,
        )
        t.exec(F_FP8, ["Fp8KVCacheMethod"], ns_fp8)
        self.Fp8Config = Fp8Config

        # --- modelopt_quant.py ------------------------------------------------------------
        ns_mo = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            LinearMethodBase=ns_bc["LinearMethodBase"],
            FusedMoEMethodBase=ns_bc["FusedMoEMethodBase"],
            BaseKVCacheMethod=BaseKVCacheMethod,
            RadixAttention=RadixAttention,
            UnquantizedLinearMethod=_Unused,
            ModelOptFp8LinearMethod=_Unused,
            ModelOptFp8MoEMethod=_Unused,
            is_layer_skipped=_unused_fn,
            Fp8Config=Fp8Config,
        )
        t.exec(F_MODELOPT, ["_compile_exclusion_pattern"], ns_mo)
        t.make_class(  # ModelOptQuantConfig, the base of ModelOptFp8Config (in ns_mo)
            F_MODELOPT,
            "ModelOptQuantConfig",
            ["QuantizationConfig"],
            [
                "ModelOptQuantConfig.__init__",
                "ModelOptQuantConfig._get_quant_method",
                "ModelOptQuantConfig.get_config_filenames",
                "ModelOptQuantConfig.get_scaled_act_names",
                "ModelOptQuantConfig.apply_weight_name_mapper",
                "ModelOptQuantConfig.is_layer_excluded",
            ],
            ns_mo,
        )
        ModelOptFp8Config = t.make_class(
            F_MODELOPT,
            "ModelOptFp8Config",
            ["ModelOptQuantConfig"],
            [
                "ModelOptFp8Config.__init__",
                "ModelOptFp8Config.override_quantization_method",
                "ModelOptFp8Config.get_name",
                "ModelOptFp8Config.get_supported_act_dtypes",
                "ModelOptFp8Config.get_min_capability",
                "ModelOptFp8Config.from_config",
                "ModelOptFp8Config.get_quant_method",
            ],
            ns_mo,
        )
        t.exec(F_MODELOPT, ["ModelOptFp8KVCacheMethod"], ns_mo)

        # --- compressed_tensors.py --------------------------------------------------------
        ns_ct = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            BaseKVCacheMethod=BaseKVCacheMethod,
            UnquantizedLinearMethod=_Unused,
            UnquantizedFusedMoEMethod=_Unused,
            Fp8LinearMethod=_Unused,
            CompressedTensorsLinearMethod=_Unused,
            CompressedTensorsFusedMoEMethod=_Unused,
            SparsityCompressionConfig=_Unused,
            SPARSITY_CONFIG_NAME="sparsity_config",  # compressed_tensors.config constant
            WeightsMapper=_AnnotationOnly,
        )

        def _scheme_map_stub(cls: type, config: dict[str, Any]) -> dict[str, Any]:
            return {}  # linear-layer schemes: not modelled (no linear layer is built)

        CTConfig = t.make_class(
            F_CT,
            "CompressedTensorsConfig",
            ["QuantizationConfig"],
            [
                "CompressedTensorsConfig.__init__",
                "CompressedTensorsConfig.kv_cache_quant_algo",
                "CompressedTensorsConfig.get_supported_act_dtypes",
                "CompressedTensorsConfig.get_min_capability",
                "CompressedTensorsConfig.get_name",
                "CompressedTensorsConfig.get_scaled_act_names",
                "CompressedTensorsConfig.apply_weight_name_mapper",
                "CompressedTensorsConfig.get_quant_method",
                "CompressedTensorsConfig.from_config",
                "CompressedTensorsConfig._parse_sparsity_config",
                "CompressedTensorsConfig.get_config_filenames",
            ],
            ns_ct,
        )
        CTConfig._quantization_scheme_map_from_config = classmethod(_scheme_map_stub)
        t.exec(F_CT, ["CompressedTensorsKVCacheMethod"], ns_ct)

        # --- quark ------------------------------------------------------------------------
        ns_qu = base_ns()
        t.exec(
            F_QUARK_UTILS,
            [
                "deep_compare",
                "should_ignore_layer",
                "check_equal_or_regex_match",
                "_is_equal_or_regex_match",
            ],
            ns_qu,
        )
        ns_qk = base_ns(
            QuantizationConfig=QuantizationConfig,
            QuantizeMethodBase=QuantizeMethodBase,
            BaseKVCacheMethod=BaseKVCacheMethod,
            RadixAttention=RadixAttention,
            Fp8Config=Fp8Config,
            Fp8LinearMethod=_Unused,
            Fp8MoEMethod=_Unused,
            UnquantizedLinearMethod=_Unused,
            QuarkLinearMethod=_Unused,
            QuarkFusedMoEMethod=_Unused,
            deep_compare=ns_qu["deep_compare"],
            should_ignore_layer=ns_qu["should_ignore_layer"],
        )
        QuarkConfig = t.make_class(
            F_QUARK,
            "QuarkConfig",
            ["QuantizationConfig"],
            [
                "QuarkConfig.__init__",
                "QuarkConfig.get_supported_act_dtypes",
                "QuarkConfig.get_min_capability",
                "QuarkConfig.get_name",
                "QuarkConfig.apply_weight_name_mapper",
                "QuarkConfig._get_block_fp8_config",
                "QuarkConfig.get_quant_method",
                "QuarkConfig.from_config",
                "QuarkConfig.get_config_filenames",
                "QuarkConfig._is_mx_fp4",
                "QuarkConfig._find_matched_config",
                "QuarkConfig.shared_expert_online_mxfp4_for_layer",
                "QuarkConfig.get_scaled_act_names",
            ],
            ns_qk,
        )
        t.exec(F_QUARK, ["QuarkKVCacheMethod"], ns_qk)

        self.config_classes = {
            "Fp8Config": Fp8Config,
            "ModelOptFp8Config": ModelOptFp8Config,
            "CompressedTensorsConfig": CTConfig,
            "QuarkConfig": QuarkConfig,
        }

        # --- quantization/__init__.py: the registry (QUANTIZATION_METHODS) ------------------
        registry_ns = base_ns(
            QuantizationConfig=QuantizationConfig,
            cpu_has_amx_support=lambda: False,
            is_gfx95_supported=lambda: False,
        )
        self._build_registry_classes(registry_ns, QuantizationConfig, ns_bc)
        reg_stmts = t.module_statements(
            F_QINIT,
            lambda s: (
                (
                    isinstance(s, (ast.Assign, ast.AnnAssign))
                    and (
                        ast.unparse(s.targets[0] if isinstance(s, ast.Assign) else s.target)
                        in (
                            "BASE_QUANTIZATION_METHODS",
                            "CPU_QUANTIZATION_METHODS",
                            "QUANTIZATION_METHODS",
                            "_is_gfx95_supported",
                        )
                    )
                )
                or isinstance(s, ast.If)
            ),
            expect=9,
        )
        exec(t.compile(F_QINIT, reg_stmts), registry_ns)
        t.exec(F_QINIT, ["get_quantization_config"], registry_ns)
        self.QUANTIZATION_METHODS = registry_ns["QUANTIZATION_METHODS"]
        self._check_registry()
        get_quantization_config = registry_ns["get_quantization_config"]

        # --- checkpoint_quantization.py -----------------------------------------------------
        ns_cq = base_ns(
            PretrainedConfig=PretrainedConfig, ConfigMapping=Any, QuantMetadataSource=str
        )
        t.exec(
            F_CKPT_Q,
            [
                "CheckpointQuantSpec",
                "_as_config_mapping",
                "_select_hf_quant_metadata",
                "resolve_checkpoint_quant_spec",
            ],
            ns_cq,
        )

        # --- weight_utils.py --------------------------------------------------------------
        import safetensors
        import safetensors.torch
        from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator

        ns_wu = base_ns(
            safetensors=safetensors,
            tqdm=_FakeTqdm,
            BAR_FORMAT="",
            _drop_file_cache_after_load=_unused_fn,
            _prefetch_all_checkpoints=_unused_fn,
            print_warning_once=self.print_warning_once,
            BaseModel=BaseModel,
            ConfigDict=ConfigDict,
            ValidationInfo=ValidationInfo,
            model_validator=model_validator,
            QuantizationConfig=QuantizationConfig,
            ModelConfig=_AnnotationOnly,
            LoadConfig=_AnnotationOnly,
            get_quantization_config=get_quantization_config,
            resolve_checkpoint_quant_spec=ns_cq["resolve_checkpoint_quant_spec"],
            REQUANTIZATION_METHODS=None,  # set below from model_config.py
            Fp8Config=Fp8Config,
            ModelOptFp8Config=ModelOptFp8Config,
            ModelOptFp4Config=self.registry_classes["ModelOptFp4Config"],
            is_qwen3_5_mtp_draft=lambda cfg: False,
            get_lock=_unused_fn,
            snapshot_download=_unused_fn,
            huggingface_hub=SimpleNamespace(constants=SimpleNamespace(HF_HUB_OFFLINE=True)),
            DisabledTqdm=_FakeTqdm,
            replace_prefix=_unused_fn,
        )
        t.exec(
            F_WU,
            [
                "default_weight_loader",
                "maybe_remap_kv_scale_name",
                "filter_duplicate_safetensors_files",
                "buffered_multi_thread_safetensors_weights_iterator",
                "KVCacheQuantSchema",
                "QuantParamSchema",
                "kv_cache_scales_loader",
                "_resolve_explicit_draft_quant_config",
                "_quark_draft_online_quant_config",
                "_modelopt_quant_section",
                "get_quant_config",
            ],
            ns_wu,
        )
        self.ns_wu = ns_wu
        self.default_weight_loader = ns_wu["default_weight_loader"]

        # --- configs/model_config.py: quant method detection ------------------------------
        ns_mc = base_ns(
            QUANTIZATION_METHODS=self.QUANTIZATION_METHODS,
            Path=Path,
            get_platform=lambda: SimpleNamespace(is_sm100=False),
            is_qwen3_5_mtp_draft=lambda cfg: False,
            retry=_unused_fn,
        )
        t.exec(
            F_MCFG,
            [
                "_quant_config_to_dict",
                "unwrap_modelopt_quantization_config",
                "REQUANTIZATION_METHODS",
            ],
            ns_mc,
        )
        ns_wu["REQUANTIZATION_METHODS"] = ns_mc["REQUANTIZATION_METHODS"]

        class _ModelConfigShell:
            def __init__(self, hf_config: Any, model_path: str, model_dtype: torch.dtype) -> None:
                # the ModelConfig fields these methods and get_quant_config read; all
                # defaults of a target (not draft) model started without --quantization
                self.hf_config = hf_config
                self.model_path = model_path
                self.revision = None
                self.quantization = None
                self.is_draft_model = False
                self.is_draft_quantization_explicit = False
                self.dtype = model_dtype
                self.is_fp4_experts = False
                self.nvfp4_moe_meta = None

        ns_mc["_ModelConfigShell"] = _ModelConfigShell
        self.ModelConfig = t.make_class(
            F_MCFG,
            "ModelConfig",
            ["_ModelConfigShell"],
            [
                "ModelConfig._parse_quant_hf_config",
                "ModelConfig._find_quant_modelslim_config",
                "ModelConfig._parse_modelopt_quant_config",
                "ModelConfig._verify_quantization",
            ],
            ns_mc,
        )

        # --- mem_cache/kv_cache_dtype.py --------------------------------------------------
        ns_kvdt = base_ns(fp8_dtype=fp8_dtype)
        t.exec(F_KVDT, ["TORCH_DTYPE_TO_KV_CACHE_STR", "configure_kv_cache_dtype"], ns_kvdt)
        self.configure_kv_cache_dtype = ns_kvdt["configure_kv_cache_dtype"]

        # --- load_model_utils.py: load_kv_cache_scales (the JSON path) --------------------
        self.model_args = SimpleNamespace(quantization_param_path=None, kv_cache_dtype="auto")
        ns_lmu = base_ns(get_model=lambda: self.model_args)
        t.exec(F_LMU, ["load_kv_cache_scales"], ns_lmu)
        self.load_kv_cache_scales = ns_lmu["load_kv_cache_scales"]

        # --- models/utils.py + auto_loader.py (weight loader v2) --------------------------
        self.load_tracker = LoadTracker()
        tracked_loader = self.load_tracker.wrap_loader(self.default_weight_loader)
        ns_mu = base_ns(default_weight_loader=tracked_loader)
        t.exec(F_MUTILS, ["WeightsMapping", "WeightsMapper", "AutoWeightsLoader"], ns_mu)

        class _StackedParamsDispatchShell:
            # auto_loader.StackedParamsDispatch is a frozen msgspec.Struct with one field;
            # this shell holds the field, the method is SGLang's
            def __init__(self, mappings: tuple[Any, ...] = ()) -> None:
                self.mappings = mappings

        ns_al = base_ns(
            _StackedParamsDispatchShell=_StackedParamsDispatchShell,
            Parameter=nn.Parameter,
            AutoWeightsLoader=ns_mu["AutoWeightsLoader"],
            WeightsMapper=ns_mu["WeightsMapper"],
            get_layer_id=get_layer_id,
        )
        t.make_class(
            F_AUTO,
            "StackedParamsDispatch",
            ["_StackedParamsDispatchShell"],
            ["StackedParamsDispatch.try_load"],
            ns_al,
        )
        t.exec(
            F_AUTO,
            [
                "STANDARD_QKV_MAPPING",
                "STANDARD_GATE_UP_MAPPING",
                "filter_pp_weights",
                "_REMAP_REGISTRY",
                "register_weight_remap",
                "get_weight_remap",
                "_llama_remap",
            ],
            ns_al,
        )

        # --- models/llama.py --------------------------------------------------------------
        self.models = build_llama(
            self,
            ns_common=base_ns,
            add_prefix=add_prefix,
            get_layer_id=get_layer_id,
            tracked_loader=tracked_loader,
            ns_al=ns_al,
        )

        # --- loader.py: quant config, file order, post-processing -------------------------
        ns_ld = base_ns(
            get_model_architecture=lambda mc: (self.models["LlamaForCausalLM"], "LlamaForCausalLM"),
            get_quant_config=ns_wu["get_quant_config"],
            get_device_capability=lambda: plat.capability,
            QuantizedRLModelLoader=SimpleNamespace(is_reload_scenario=lambda model: False),
            device_loading_context=lambda module, device: contextlib.nullcontext(),
            ModelConfig=_AnnotationOnly,
            LoadConfig=_AnnotationOnly,
            QuantizationConfig=QuantizationConfig,
            get_parallel=lambda: SimpleNamespace(tp_size=1, tp_rank=0),
        )
        t.exec(F_LOADER, ["_get_quantization_config", "_modules_with_quant_method"], ns_ld)
        self._get_quantization_config = ns_ld["_get_quantization_config"]
        self.num_threads = ast.literal_eval(
            t.node(F_LOADER, "DefaultModelLoader.DEFAULT_NUM_THREADS").value  # type: ignore[attr-defined]
        )
        self.code_sort_files = t.compile(
            F_LOADER,
            t.statements(
                F_LOADER,
                "DefaultModelLoader._prepare_weights",
                lambda s: (
                    (isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "k")
                    or (isinstance(s, ast.If) and ast.unparse(s.test) == "k >= 0")
                ),
                expect=2,
            ),
        )
        self.ns_ld = ns_ld
        ns_ld["_DefaultModelLoaderShell"] = object
        self.DefaultModelLoader = t.make_class(
            F_LOADER,
            "DefaultModelLoader",
            ["_DefaultModelLoaderShell"],
            ["DefaultModelLoader.postprocess_weights"],
            ns_ld,
        )

        # --- modules for the local imports inside SGLang's functions ----------------------
        self.stub_modules = {
            "sglang.srt.layers.linear": {"LinearBase": LinearBase},
            "sglang.srt.layers.moe.fused_moe_triton": {"FusedMoE": FusedMoE},
            "sglang.srt.layers.moe.fused_moe_triton.layer": {"FusedMoE": FusedMoE},
            "sglang.srt.layers.radix_attention": {"RadixAttention": RadixAttention},
            "sglang.srt.layers.vocab_parallel_embedding": {"ParallelLMHead": ParallelLMHead},
            "sglang.srt.configs.model_config": {
                "REQUANTIZATION_METHODS": ns_mc["REQUANTIZATION_METHODS"],
                "is_deepseek_v4": lambda cfg: False,
            },
            "sglang.srt.environ": {"envs": self.envs},
            "sglang.srt.utils": {"is_cpu": lambda: False},
            "sglang.srt.lora.layers": {"BaseLayerWithLoRA": BaseLayerWithLoRA},
            "sglang.srt.model_loader.auto_loader": {
                k: ns_al[k]
                for k in (
                    "AutoWeightsLoader",
                    "filter_pp_weights",
                    "get_weight_remap",
                    "STANDARD_QKV_MAPPING",
                    "STANDARD_GATE_UP_MAPPING",
                )
            },
            "sglang.srt.layers.quantization.fp8": {"Fp8Config": Fp8Config},
            "sglang.srt.layers.quantization.quark.quark": {"QuarkConfig": QuarkConfig},
        }

    # ----------------------------------------------------------------------------------
    def _build_registry_classes(
        self, ns: dict[str, Any], QuantizationConfig: type, ns_bc: dict[str, Any]
    ) -> None:
        """Classes for every name `quantization/__init__.py` imports: the four real configs;
        for the classes that define `override_quantization_method`, a class made of that
        verbatim method and what it reaches; every other class inherits
        QuantizationConfig.override_quantization_method (checked)."""
        t = self.tree
        plat = self.plat
        imported: dict[str, str] = {}
        for node in t.tree(F_QINIT).body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "sglang.srt.layers.quantization"
            ):
                for a in node.names:
                    if a.name.endswith("Config") and a.name != "QuantizationConfig":
                        imported[a.name] = node.module or ""
        self.registry_classes: dict[str, type] = {}
        self._plain_registry: dict[str, tuple[str, type]] = {}
        for name in imported:
            if name in self.config_classes:
                cls = self.config_classes[name]
            elif name in _OVERRIDE_DEFINERS:
                rel, members = _OVERRIDE_DEFINERS[name]
                ns_x = self.base_ns(
                    QuantizationConfig=QuantizationConfig,
                    check_marlin_format=None,
                    check_marlin_supported=_unused_fn,
                    get_device_capability=lambda: plat.capability,
                    AWQConfig=SimpleNamespace(get_min_capability=lambda: 75),
                )
                if rel == F_GPTQ:
                    t.exec(F_GPTQ, ["check_marlin_format"], ns_x)
                cls = t.make_class(
                    rel, name, ["QuantizationConfig"], [f"{name}.{m}" for m in members], ns_x
                )
            else:
                cls = type(name, (QuantizationConfig,), {})
                self._plain_registry[name] = (imported[name], cls)
            self.registry_classes[name] = cls
            ns[name] = cls

    def _check_registry(self) -> None:
        registered = {id(c) for c in self.QUANTIZATION_METHODS.values()}
        for name, (module, cls) in self._plain_registry.items():
            if id(cls) in registered:
                self._check_no_override(module, name)

    def _check_no_override(self, module: str, name: str) -> None:
        """Assert that `name` (and its bases found in the quantization package) do not define
        override_quantization_method, so the base implementation (None) applies."""
        t = self.tree
        rel = module.removeprefix("sglang.").replace(".", "/")
        rel = rel + ".py" if (t.pkg / (rel + ".py")).is_file() else rel + "/__init__.py"
        seen: set[str] = set()
        todo = [(rel, name)]
        while todo:
            r, cname = todo.pop()
            if cname in seen or cname in ("QuantizationConfig", "ABC", "object"):
                continue
            seen.add(cname)
            try:
                node = t.node(r, cname)
            except LookupError:
                # re-exported: find the defining file in the quantization package
                hits = [
                    str(p.relative_to(t.pkg))
                    for p in (t.pkg / "srt/layers/quantization").rglob("*.py")
                    if f"class {cname}(" in p.read_text()
                ]
                if len(hits) != 1:
                    raise LookupError(f"cannot locate class {cname} (from {module})") from None
                r = hits[0]
                node = t.node(r, cname)
            assert isinstance(node, ast.ClassDef)
            if t.class_defines(r, cname, "override_quantization_method"):
                raise LookupError(
                    f"SGLang source changed: {cname} ({r}) defines override_quantization_method;"
                    " add it to _OVERRIDE_DEFINERS"
                )
            for b in node.bases:
                if isinstance(b, ast.Name):
                    todo.append((r, b.id))


class LoadTracker:
    """Observes the weight loading: which checkpoint tensor went into which parameter, and
    what was logged while it was processed. It wraps the weights iterator and
    default_weight_loader; neither decides anything."""

    def __init__(self) -> None:
        self.param_names: dict[int, str] = {}
        self.events: list[dict[str, Any]] = []
        self._current: dict[str, Any] | None = None
        self.logger: RecordingLogger | None = None

    def start(self, model: nn.Module, logger: RecordingLogger) -> None:
        self.param_names = {id(p): n for n, p in model.named_parameters()}
        self.events = []
        self._current = None
        self.logger = logger

    def wrap_loader(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def tracked_default_weight_loader(param: torch.Tensor, loaded: torch.Tensor) -> None:
            if self._current is not None:
                self._current["loaded_as"] = self.param_names.get(id(param), "?")
            return fn(param, loaded)

        return tracked_default_weight_loader

    def _close(self) -> None:
        if self._current is not None and self.logger is not None:
            self._current["messages"] = self.logger.take()
            self.events.append(self._current)
        self._current = None

    def wrap(self, it: Iterable[tuple[str, torch.Tensor]]) -> Iterator[tuple[str, torch.Tensor]]:
        for name, tensor in it:
            self._close()
            self._current = {"name": name, "loaded_as": None}
            yield name, tensor
        self._close()

    def finish(self) -> None:
        self._close()


# ======================================================================================
# Model skeleton (module tree of SGLang's Llama; the attention parts are SGLang's own)
# ======================================================================================


def build_llama(
    code: SglangCode,
    *,
    ns_common: Callable[..., dict[str, Any]],
    add_prefix: Callable[[str, str], str],
    get_layer_id: Callable[[str], int | None],
    tracked_loader: Callable[..., Any],
    ns_al: dict[str, Any],
) -> dict[str, type]:
    t = code.tree
    ns = ns_common(
        QKVParallelLinear=QKVParallelLinear,
        RowParallelLinear=RowParallelLinear,
        RadixAttention=code.RadixAttention,
        get_rope=get_rope,
        get_parallel=lambda: SimpleNamespace(tp_size=1, pp_group=None),
        add_prefix=add_prefix,
        get_layer_id=get_layer_id,
        default_weight_loader=tracked_loader,
        maybe_remap_kv_scale_name=code.ns_wu["maybe_remap_kv_scale_name"],
        kv_cache_scales_loader=code.ns_wu["kv_cache_scales_loader"],
        LlamaConfig=_AnnotationOnly,
        QuantizationConfig=_AnnotationOnly,
        ForwardBatch=_AnnotationOnly,
        PPProxyTensors=_AnnotationOnly,
        _NnModule=nn.Module,
    )
    LlamaAttention = t.make_class(
        F_LLAMA,
        "LlamaAttention",
        ["_NnModule"],
        ["LlamaAttention.__init__", "LlamaAttention.load_weights"],
        ns,
    )

    class _LlamaMLPShell(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.gate_up_proj = MergedColumnParallelLinear()
            self.down_proj = RowParallelLinear()

    ns["_LlamaMLPShell"] = _LlamaMLPShell
    LlamaMLP = t.make_class(F_LLAMA, "LlamaMLP", ["_LlamaMLPShell"], ["LlamaMLP.load_weights"], ns)

    class LlamaDecoderLayer(nn.Module):
        # llama.py LlamaDecoderLayer.__init__: the LlamaAttention call with the same
        # arguments (prefix add_prefix("self_attn", prefix)); stage boundaries omitted
        def __init__(self, config: Any, quant_config: Any, layer_id: int, prefix: str) -> None:
            super().__init__()
            self.self_attn = LlamaAttention(
                config=config,
                hidden_size=config.hidden_size,
                num_heads=config.num_attention_heads,
                num_kv_heads=config.num_key_value_heads,
                layer_id=layer_id,
                start_layer=0,
                rope_theta=getattr(config, "rope_theta", 10000),
                rope_scaling=getattr(config, "rope_scaling", None),
                rope_is_neox_style=True,
                max_position_embeddings=getattr(config, "max_position_embeddings", 8192),
                quant_config=quant_config,
                prefix=add_prefix("self_attn", prefix),
                bias=False,
                reduce_results=False,
            )
            self.mlp = LlamaMLP()
            self.input_layernorm = RMSNorm(config.hidden_size)
            self.post_attention_layernorm = RMSNorm(config.hidden_size)

    class _LlamaModelShell(nn.Module):
        def __init__(self, config: Any, quant_config: Any = None, prefix: str = "") -> None:
            super().__init__()
            self.config = config
            self.embed_tokens = VocabParallelEmbedding(config.vocab_size, config.hidden_size)
            # make_pp_layers(..., prefix="model.layers"): layer i gets "model.layers.i"
            self.layers = nn.ModuleList(
                LlamaDecoderLayer(config, quant_config, i, add_prefix(str(i), "model.layers"))
                for i in range(config.num_hidden_layers)
            )
            self.start_layer, self.end_layer = 0, config.num_hidden_layers
            self.norm = RMSNorm(config.hidden_size)
            self._kv_cache_parallel_layout = (0, 1)  # (tp_rank, tp_size)

    ns["_LlamaModelShell"] = _LlamaModelShell
    LlamaModel = t.make_class(
        F_LLAMA, "LlamaModel", ["_LlamaModelShell"], ["LlamaModel.load_kv_cache_scales"], ns
    )

    class _LlamaForCausalLMShell(nn.Module):
        def __init__(self, config: Any, quant_config: Any = None, prefix: str = "") -> None:
            super().__init__()
            self.config = config
            self.quant_config = quant_config
            self.model = LlamaModel(
                config, quant_config=quant_config, prefix=add_prefix("model", prefix)
            )
            self.lm_head = ParallelLMHead(config.vocab_size, config.hidden_size)

    ns["_LlamaForCausalLMShell"] = _LlamaForCausalLMShell
    LlamaForCausalLM = t.make_class(
        F_LLAMA,
        "LlamaForCausalLM",
        ["_LlamaForCausalLMShell"],
        [
            "LlamaForCausalLM.load_weights",
            "LlamaForCausalLM._legacy_load_weights",
            "LlamaForCausalLM._load_weights_v2",
            "LlamaForCausalLM.load_kv_cache_scales",
        ],
        ns,
    )
    return {"LlamaForCausalLM": LlamaForCausalLM}


# ======================================================================================
# Running one case
# ======================================================================================

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


VALUE_FIELDS = ("k_scale", "v_scale", "k_scale_float", "v_scale_float", "k_scale_kind")


def enc_float(x: float) -> float | str:
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return float(x)


def enc_value(x: Any) -> Any:
    """A device Parameter (float32 tensor), a host Python float, or None."""
    if x is None:
        return None
    if isinstance(x, torch.Tensor):
        if x.dtype != torch.float32:
            raise AssertionError(f"engine tensor has dtype {x.dtype}, expected float32")
        vals = [enc_float(v) for v in x.detach().to("cpu").reshape(-1).tolist()]
        return vals[0] if len(vals) == 1 else vals
    if isinstance(x, (int, float)):
        return enc_float(float(x))
    return repr(x)


SHOW_TRACEBACKS = False


def fmt_exc(e: BaseException) -> str:
    if SHOW_TRACEBACKS:
        import traceback

        traceback.print_exception(e)
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _layer_index(name: str) -> int | None:
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


def applicable(case: dict[str, Any]) -> tuple[dict[str, str] | None, str | None]:
    """SGLang options for a case of cases.py, or (None, reason)."""
    arch = (case["config"].get("architectures") or ["LlamaForCausalLM"])[0]
    if arch != "LlamaForCausalLM":
        return None, f"architecture {arch} is not modelled for SGLang"
    o = case["options"]
    kv = VLLM_TO_SGLANG_KV.get(o["kv_cache_dtype"])
    if kv is None:
        return None, f"--kv-cache-dtype {o['kv_cache_dtype']} has no SGLang equivalent"
    out = {
        "platform": o["platform"],
        "kv_cache_dtype": kv,
        "model_dtype": o["model_dtype"],
        "weight_loader": "legacy",
    }
    if kv != o["kv_cache_dtype"]:
        out["vllm_kv_cache_dtype"] = o["kv_cache_dtype"]
    return out, None


# Architectures whose SGLang model the Llama skeleton is (the rest run their own load_weights
# through tests/parity/sglang_architectures.py).
_LLAMA_SKELETON_ARCHS = frozenset(["LlamaForCausalLM"])


class Oracle:
    def __init__(self, sglang_src: str) -> None:
        self.src = sglang_src
        self.tree = SglTree(sglang_src)
        self._codes: dict[str, SglangCode] = {}
        self.cases_mod = _load_module("kvscale_parity_cases", "cases.py")
        self.sgl_cases_mod = _load_module("kvscale_parity_sglang_cases", "sglang_cases.py")
        self.model_cases_mod = _load_module(
            "kvscale_parity_sglang_model_cases", "sglang_model_cases.py"
        )

    def code(self, platform: str) -> SglangCode:
        if platform not in self._codes:
            self._codes[platform] = SglangCode(self.tree, Platform(platform))
        return self._codes[platform]

    # -- other architectures: built by their own __init__, loaded by their load_weights ---
    def _builder(self, code: SglangCode) -> Any:
        """A World that builds architectures with their own ``__init__``
        (``sglang_architectures.Harness(construct=True)``), wired to this platform's verbatim
        ``default_weight_loader`` (through the load tracker), remap, logger and
        ``RadixAttention``: whether a layer gets a KV method is what the model's own code
        passes it. Weight loads run in line, not in a thread pool, so the load tracker
        attributes each parameter write to its tensor (the values are the same)."""
        if getattr(code, "builder", None) is None:
            sa = _load_module("kvscale_sglang_architectures", "sglang_architectures.py")
            tracked = code.load_tracker.wrap_loader(code.default_weight_loader)
            common = {"print_warning_once": code.print_warning_once}
            code.builder = sa.Harness(
                self.src,
                overrides={
                    "sglang.srt.model_loader.weight_utils": {
                        "default_weight_loader": tracked,
                        "maybe_remap_kv_scale_name": code.ns_wu["maybe_remap_kv_scale_name"],
                    },
                    "sglang.srt.utils": common,
                    "sglang.srt.utils.common": common,
                    "sglang.srt.model_loader.utils": {"should_async_load": lambda w: False},
                    "sglang.srt.layers.radix_attention": {
                        "RadixAttention": code.RadixAttention,
                        "AttentionType": code.AttentionType,
                    },
                },
                make_logger=lambda name: code.logger,
                construct=True,
            )
        return code.builder

    def _model_config(self, builder: Any, config: dict[str, Any]) -> Any:
        """config.json as the model code sees it: SGLang's own config class for its
        model_type where SGLang has one, else the fields as attributes."""
        sa = _load_module("kvscale_sglang_architectures", "sglang_architectures.py")
        cls = builder.config_class(config.get("model_type"))
        if cls is None:
            return sa.ConfigView(copy.deepcopy(config))
        with builder.world.active():
            return cls(**copy.deepcopy(config))

    def _used(self) -> dict[str, str]:
        """sha256 of every SGLang file read: the oracle's, and the model files executed."""
        used = dict(self.tree.used)
        for code in self._codes.values():
            builder = getattr(code, "builder", None)
            if builder is not None:
                used.update(builder.tree.used)
                used.update(builder.world.used)
        return used

    # -- engine start: config, quant method, quant config ------------------------------
    def _configure(
        self, code: SglangCode, d: Path, model_dtype: torch.dtype, out: dict[str, Any]
    ) -> tuple[Any, Any]:
        config_dict = json.loads((d / "config.json").read_text())
        hf_config = make_hf_config(config_dict)
        model_config = code.ModelConfig(hf_config, str(d), model_dtype)
        model_config._verify_quantization()
        out["quant_method"] = model_config.quantization
        load_config = SimpleNamespace(
            model_loader_extra_config={}, download_dir=None, load_format="auto"
        )
        quant_config = code._get_quantization_config(model_config, load_config)
        out["quant_config"] = type(quant_config).__name__ if quant_config is not None else None
        return model_config, quant_config

    def _weight_files(self, code: SglangCode, d: Path) -> list[str]:
        # DefaultModelLoader._prepare_weights for a local directory, load_format auto:
        # glob "*.safetensors" (found first), filter by the index, then SGLang's own sort
        files = glob.glob(os.path.join(str(d), "*.safetensors"))
        files = code.ns_wu["filter_duplicate_safetensors_files"](
            files, str(d), "model.safetensors.index.json"
        )
        local = {
            "hf_weights_files": files,
            "envs": code.envs,
            "get_parallel": code.ns_ld["get_parallel"],
        }
        exec(code.code_sort_files, {"__builtins__": __builtins__}, local)
        return list(local["hf_weights_files"])

    def _write_json(self, case: dict[str, Any], d: Path) -> str | None:
        qp = case.get("quant_param_json")
        if qp is None:
            return None
        path = d / "kv_cache_scales.json"
        if isinstance(qp, dict) and qp.get("__missing__"):
            return str(d / "does_not_exist.json")
        if isinstance(qp, dict) and "__raw__" in qp:
            path.write_text(qp["__raw__"])
        else:
            path.write_text(json.dumps(qp, indent=1) + "\n")
        return str(path)

    def run_case(
        self, case: dict[str, Any], options: dict[str, str], workdir: Path
    ) -> dict[str, Any]:
        code = self.code(options["platform"])
        d = self.cases_mod.write_case(case, workdir / case["name"])
        qp_path = self._write_json(case, d)
        code.envs.SGLANG_ENABLE_WEIGHT_LOADER_V2.value = options["weight_loader"] == "v2"
        code.model_args.quantization_param_path = qp_path
        code.model_args.kv_cache_dtype = options["kv_cache_dtype"]
        arch = (case["config"].get("architectures") or ["LlamaForCausalLM"])[0]
        built = arch not in _LLAMA_SKELETON_ARCHS
        if built and options["weight_loader"] != "legacy":
            # their modules read srt/environ.py's real defaults (the legacy loaders)
            raise SystemExit(f"{case['name']}: only the legacy loader is modelled for {arch}")
        model_dtype = _DTYPES[options["model_dtype"]]
        if built:
            builder = self._builder(code)
            cls = builder.arch_class(arch)
            # the module tree does not depend on the quant config: its attention modules
            # name the layers even when the engine start fails
            with _stub_modules(code.stub_modules):
                layers = self._attention_layers(
                    code, builder.build(cls, self._model_config(builder, case["config"]), None)
                )
        else:
            layers = [(n, []) for n in self.cases_mod.engine_layer_names(case["config"])]
        layer_names = [n for n, _ in layers]
        code.logger.reset()
        code.print_warning_once.cache_clear()
        out: dict[str, Any] = {
            "group": case["group"],
            "description": case["description"],
            "options": dict(options),
            "architecture": arch,
            "quant_method": None,
            "quant_config": None,
            "kv_cache_dtype": None,
            "kv_cache_torch_dtype": None,
            "engine_error": None,
            "engine_warnings": [],
            "layers": [],
        }
        if qp_path is not None:
            out["quantization_param_path"] = Path(qp_path).name

        def all_error(msg: str) -> dict[str, Any]:
            out["engine_error"] = msg
            out["layers"] = [
                {
                    "name": n,
                    "error": msg,
                    **dict.fromkeys(VALUE_FIELDS),
                    "kv_method": None,
                    "loaded": {},
                    "dropped": [],
                    "load_warnings": [],
                    "warnings": [],
                }
                for n in layer_names
            ]
            out["engine_warnings"] = code.logger.take()
            return _normalise_paths(out, str(d))

        with _stub_modules(code.stub_modules):
            old = torch.get_default_dtype()
            try:
                torch.set_default_dtype(model_dtype)
                try:
                    model_config, quant_config = self._configure(code, d, model_dtype, out)
                except Exception as e:
                    return all_error(fmt_exc(e))

                def fresh_model() -> nn.Module:
                    if built:
                        config = self._model_config(builder, case["config"])
                        return builder.build(cls, config, quant_config)  # type: ignore[no-any-return]
                    return code.models["LlamaForCausalLM"](  # type: ignore[no-any-return]
                        config=model_config.hf_config, quant_config=quant_config
                    )

                try:
                    model = fresh_model()
                except Exception as e:
                    return all_error(fmt_exc(e))
                if self._attention_layers(code, model) != layers:
                    raise AssertionError(f"{case['name']}: attention modules differ per build")
                out["engine_warnings"] = code.logger.take()
                # ModelRunner.configure_kv_cache_dtype (it runs after loading; it reads only
                # model.quant_config, so it is evaluated once per case)
                resolved, torch_dtype = code.configure_kv_cache_dtype(
                    server_args_kv_cache_dtype=options["kv_cache_dtype"],
                    model=model,
                    model_dtype=model_dtype,
                    is_draft_worker=False,
                    is_dflash=False,
                    speculative_draft_attention_backend=None,
                )
                # ModelRunner.kv_cache_dtype_str: the resolved string, else the server arg
                out["kv_cache_dtype"] = (
                    resolved if resolved is not None else options["kv_cache_dtype"]
                )
                out["kv_cache_torch_dtype"] = str(torch_dtype).removeprefix("torch.")
                out["engine_warnings"] += code.logger.take()
                files = self._weight_files(code, d)
                for lname, companions in layers:
                    out["layers"].append(
                        self._run_layer(code, fresh_model, files, lname, options, out, companions)
                    )
                    if built:
                        out["layers"][-1]["attention"] = self._attention_facts(model, lname)
            finally:
                torch.set_default_dtype(old)
        return _normalise_paths(out, str(d))

    def _run_layer(
        self,
        code: SglangCode,
        fresh_model: Callable[[], nn.Module],
        files: list[str],
        lname: str,
        options: dict[str, str],
        out: dict[str, Any],
        companions: Sequence[str] = (),
    ) -> dict[str, Any]:
        """``companions``: the layer's other RadixAttention modules (DeepSeek MLA's
        attn_mha beside attn_mqa), recorded apart (information only)."""
        idx = _layer_index(lname)
        rec: dict[str, Any] = {"name": lname, "error": None}
        code.print_warning_once.cache_clear()
        model = fresh_model()
        code.logger.reset()
        attn = dict(model.named_modules())[lname]
        tracker = code.load_tracker
        tracker.start(model, code.logger)
        iterator = code.ns_wu["buffered_multi_thread_safetensors_weights_iterator"]

        def weights() -> Iterator[tuple[str, torch.Tensor]]:
            for name, tensor in iterator(files, max_workers=code.num_threads):
                ti = _layer_index(name)
                if ti is None or ti == idx:
                    yield name, tensor

        stage = "load"
        post_warnings: list[str] = []
        try:
            # DefaultModelLoader.load_weights_and_postprocess, then ModelRunner.load_model's
            # load_kv_cache_scales, then ModelRunner.configure_kv_cache_dtype
            with _root_log_records(self.tree.pkg, code.logger):
                model.load_weights(tracker.wrap(weights()))
            tracker.finish()
            stage = "postprocess"
            code.DefaultModelLoader.postprocess_weights(model, torch.device("cpu"))
            stage = "kv_cache_scales"
            code.load_kv_cache_scales(model=model, kv_cache_dtype=options["kv_cache_dtype"])
            post_warnings = code.logger.take()
        except Exception as e:
            tracker.finish()
            rec["error"] = fmt_exc(e)
            rec["error_stage"] = stage
        values = self._layer_values(attn)
        if rec["error"] is None:
            rec.update(values)
        else:
            # the engine does not start; what the layer held when it stopped is kept apart
            rec.update(dict.fromkeys(VALUE_FIELDS))
            rec["kv_method"] = values["kv_method"]
            rec["state_at_error"] = {k: values[k] for k in VALUE_FIELDS}
        rec.update(self._load_report(tracker, idx))
        rec["warnings"] = post_warnings + code.logger.take()
        if companions:
            modules = dict(model.named_modules())
            rec["companions"] = {c: self._layer_values(modules[c]) for c in companions}
        return rec

    @staticmethod
    def _attention_layers(code: SglangCode, model: nn.Module) -> list[tuple[str, list[str]]]:
        """The model's RadixAttention modules, one layer per parent module: the first is
        the layer, the others (DeepSeek MLA's attn_mha beside attn_mqa) its companions."""
        out: list[tuple[str, list[str]]] = []
        parents: dict[str, int] = {}
        for name, module in model.named_modules():
            if not isinstance(module, code.RadixAttention):
                continue
            parent = name.rpartition(".")[0]
            if parent in parents:
                out[parents[parent]][1].append(name)
            else:
                parents[parent] = len(out)
                out.append((name, []))
        return out

    @staticmethod
    def _attention_facts(model: nn.Module, lname: str) -> dict[str, Any]:
        """What the model's code gave the RadixAttention (information): the KV-cache slot
        it reads and writes (``layer_id``: a KV-sharing layer names the layer it shares),
        its sliding window, head sizes (MLA: the latent)."""
        attn = dict(model.named_modules())[lname]
        return {
            "layer_id": attn.layer_id,
            "sliding_window_size": attn.sliding_window_size,
            "head_dim": attn.head_dim,
            "v_head_dim": attn.v_head_dim,
            "num_kv_heads": attn.tp_k_head_num,
        }

    @staticmethod
    def _layer_values(attn: nn.Module) -> dict[str, Any]:
        return {
            "k_scale": enc_value(getattr(attn, "k_scale", None)),
            "v_scale": enc_value(getattr(attn, "v_scale", None)),
            "k_scale_float": enc_value(getattr(attn, "k_scale_float", None)),
            "v_scale_float": enc_value(getattr(attn, "v_scale_float", None)),
            "k_scale_kind": _kind(getattr(attn, "k_scale", None)),
            "kv_method": (
                type(attn.quant_method).__name__ if getattr(attn, "quant_method", None) else None
            ),
        }

    @staticmethod
    def _load_report(tracker: LoadTracker, idx: int | None) -> dict[str, Any]:
        """Per checkpoint tensor of this layer (and any other tensor that was dropped or
        logged): the parameter it was loaded into, or that it was dropped, with what the
        loader logged while processing it (None: dropped silently)."""
        dropped = []
        loaded: dict[str, str] = {}
        load_warnings = []
        for ev in tracker.events:
            own = _layer_index(ev["name"]) == idx
            message = " | ".join(ev["messages"]) or None
            if ev["loaded_as"] is not None:
                if own:
                    loaded[ev["name"]] = ev["loaded_as"]
                if message is not None:
                    load_warnings.append({"name": ev["name"], "message": message})
            elif own or message is not None:
                dropped.append({"name": ev["name"], "message": message})
        return {"loaded": loaded, "dropped": dropped, "load_warnings": load_warnings}

    def run(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        todo: list[tuple[dict[str, Any], dict[str, str]]] = []
        skipped: dict[str, str] = {}
        for c in self.cases_mod.CASES:
            opts, why = applicable(c)
            if opts is None:
                skipped[c["name"]] = str(why)
            else:
                todo.append((c, opts))
        for c in [*self.sgl_cases_mod.CASES, *self.model_cases_mod.CASES]:
            todo.append((c, dict(c["options"])))
        if names:
            known = {c["name"] for c, _ in todo} | set(skipped)
            unknown = set(names) - known
            if unknown:
                raise SystemExit(f"unknown case(s): {sorted(unknown)}")
            todo = [(c, o) for c, o in todo if c["name"] in names]
            skipped = {k: v for k, v in skipped.items() if k in names}
        results: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="kvscale-sglang-oracle-") as tmp:
            for c, o in todo:
                results[c["name"]] = self.run_case(c, o, Path(tmp))
            facts = EngineFacts(self).run(Path(tmp))
        return {
            "schema": SCHEMA,
            "provenance": {
                "engine": "sglang",
                "sglang_version": self.tree.version(),
                "sglang_sources_sha256": dict(sorted(self._used().items())),
                "torch_version": torch.__version__,
                "python_version": _pyplatform.python_version(),
                "generator": "tests/parity/sglang_oracle.py",
            },
            "skipped": skipped,
            "cases": results,
            "facts": facts,
        }


# ======================================================================================
# Facts besides the cases: KV-cache dtypes, NVFP4 global scales, cited code
# ======================================================================================

F_MODEL_FIELDS = "srt/arg_groups/fields/model.py"
F_FP4_KV = "srt/layers/quantization/fp4_kv_cache_quant_method.py"
F_KVFP4 = "srt/layers/quantization/kvfp4_tensor.py"
F_RUNTIME_CTX = "srt/runtime_context.py"

DEVICES = (
    # (what, device capability major * 10 + minor): the GPUs the platform probes tell apart
    ("H100 / H200", 90),
    ("B200 / GB200", 100),
    ("B300 / GB300", 103),
    ("Jetson Thor", 110),
    ("RTX 50 / RTX PRO 6000", 120),
    ("DGX Spark GB10", 121),
)
NVFP4_SCENARIOS: dict[str, tuple[float | None, float | None]] = {
    # (k_scale, v_scale) the layer holds after loading; None = no KV method on the layer
    "calibrated": (0.0234375, 0.015625),
    "k_only_calibrated": (0.0234375, 1.0),
    "defaults": (1.0, 1.0),
    "no_kv_method": (None, None),
}
PRODUCER_CONFIGS: dict[str, dict[str, Any] | None] = {
    # quantization_config of config.json per producer (tests/parity/cases.py builders)
    "none": None,
    "fp8": {"quant_method": "fp8", "activation_scheme": "static", "kv_cache_scheme": "static"},
    "modelopt_kv_fp8": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "FP8",
    },
    # (FP8 weights: ModelOptFp4Config.from_config, for NVFP4 weights, is not modelled)
    "modelopt_kv_nvfp4": {
        "quant_method": "modelopt",
        "quant_algo": "FP8",
        "kv_cache_quant_algo": "NVFP4",
    },
    "modelopt_kv_scheme_fp8": None,  # filled from cases.MODELOPT_QC (kv_cache_scheme dict)
    "compressed_tensors_tensor": None,  # cases.ct_qc("tensor")
    "compressed_tensors_attn_head": None,  # cases.ct_qc("attn_head")
    "quark": None,  # cases.quark_qc()
}


class EngineFacts:
    """The golden file's ``facts``: executed (``kv_cache_dtypes``, ``nvfp4_global_scale``)
    and cited (``code_facts``: sglang_code_facts.py, every citation checked here)."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self.tree = oracle.tree
        cases = oracle.cases_mod
        self.producers = dict(PRODUCER_CONFIGS)
        self.producers["modelopt_kv_scheme_fp8"] = cases.MODELOPT_QC
        self.producers["compressed_tensors_tensor"] = cases.ct_qc("tensor")
        self.producers["compressed_tensors_attn_head"] = cases.ct_qc("attn_head")
        self.producers["quark"] = cases.quark_qc()

    def run(self, workdir: Path) -> dict[str, Any]:
        return {
            "kv_cache_dtypes": {
                "choices": self.kv_cache_dtype_choices(),
                "resolution": self.resolution(workdir),
            },
            "nvfp4_global_scale": self.nvfp4_global_scale(),
            "code_facts": self.code_facts(),
        }

    # -- --kv-cache-dtype ----------------------------------------------------------------
    def kv_cache_dtype_choices(self) -> dict[str, Any]:
        """The ``choices`` of the server argument (the field's literal list)."""
        cls = self.tree.node(F_MODEL_FIELDS, "Model")
        assert isinstance(cls, ast.ClassDef)
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and ast.unparse(stmt.target) == "kv_cache_dtype":
                for call in ast.walk(stmt.annotation):
                    if isinstance(call, ast.Call):
                        for kw in call.keywords:
                            if kw.arg == "choices":
                                return {
                                    "values": ast.literal_eval(kw.value),
                                    "site": f"{F_MODEL_FIELDS}:{kw.value.lineno}",
                                }
        raise LookupError(f"SGLang source changed: no kv_cache_dtype choices in {F_MODEL_FIELDS}")

    def resolution(self, workdir: Path) -> dict[str, Any]:
        """``configure_kv_cache_dtype`` (what ModelRunner runs after loading) for every
        producer's config, every accepted ``--kv-cache-dtype``, on CUDA and ROCm gfx942."""
        out: dict[str, Any] = {}
        choices = self.kv_cache_dtype_choices()["values"]
        for platform in ("ocp", "fnuz"):
            code = self.oracle.code(platform)
            per_producer: dict[str, Any] = {}
            for producer, qc in self.producers.items():
                case = {
                    "name": f"facts_{platform}_{producer}",
                    "config": self.oracle.cases_mod.llama_config(qc),
                    "hf_quant_config": None,
                    "shards": [{"file": "model.safetensors", "tensors": {}}],
                    "index": None,
                }
                d = self.oracle.cases_mod.write_case(case, workdir / case["name"])
                info: dict[str, Any] = {}
                with _stub_modules(code.stub_modules):
                    try:
                        _, quant_config = self.oracle._configure(code, d, torch.bfloat16, info)
                    except Exception as e:
                        per_producer[producer] = {"engine_error": fmt_exc(e)}
                        continue
                    code.logger.take()
                    model = SimpleNamespace(quant_config=quant_config)
                    dtypes: dict[str, Any] = {}
                    for choice in choices:
                        try:
                            resolved, torch_dtype = code.configure_kv_cache_dtype(
                                server_args_kv_cache_dtype=choice,
                                model=model,
                                model_dtype=torch.bfloat16,
                                is_draft_worker=False,
                                is_dflash=False,
                                speculative_draft_attention_backend=None,
                            )
                            dtypes[choice] = {
                                "kv_cache_dtype": resolved if resolved is not None else choice,
                                "torch_dtype": str(torch_dtype).removeprefix("torch."),
                                "warnings": code.logger.take(),
                            }
                        except Exception as e:
                            dtypes[choice] = {"error": fmt_exc(e)}
                per_producer[producer] = {
                    "quant_method": info.get("quant_method"),
                    "quant_config": info.get("quant_config"),
                    "kv_cache_quant_algo": _plain(
                        getattr(quant_config, "kv_cache_quant_algo", None)
                    ),
                    "dtypes": dtypes,
                }
            out[platform] = per_producer
        return out

    # -- NVFP4's global scale ------------------------------------------------------------
    def nvfp4_global_scale(self) -> dict[str, Any]:
        """NVFP4KVCacheMethod (``__init__``, ``load_scales_from_model``, ``get_bmm_scales``,
        verbatim) on a two-layer model whose RadixAttention modules hold each scenario's
        scales, for each device capability; the platform probes are SGLang's own
        (``_check_cuda_device_version`` and the ``is_sm*_supported`` it builds, with CUDA
        12.9), as ``get_platform()`` answers them (runtime_context._PLATFORM_PROBES)."""
        t = self.tree
        ns_kv: dict[str, Any] = {}
        t.exec(F_KVFP4, ["E2M1_MAX"], ns_kv)
        probes = self._platform_probe_names()
        out: dict[str, Any] = {"E2M1_MAX": ns_kv["E2M1_MAX"], "devices": {}}
        for what, sm in DEVICES:
            platform = self._platform(sm, probes)
            ns = {
                "torch": torch,
                "Tensor": torch.Tensor,
                "Optional": typing.Optional,
                "E2M1_MAX": ns_kv["E2M1_MAX"],
                "get_platform": lambda platform=platform: platform,
                "_Base": object,
            }
            method_cls = t.make_class(
                F_FP4_KV,
                "NVFP4KVCacheMethod",
                ["_Base"],
                [
                    "NVFP4KVCacheMethod.__init__",
                    "NVFP4KVCacheMethod.load_scales_from_model",
                    "NVFP4KVCacheMethod.get_bmm_scales",
                ],
                ns,
            )
            scenarios: dict[str, Any] = {}
            for scenario, (k, v) in NVFP4_SCENARIOS.items():
                method = method_cls(num_layers=2, device="cpu")
                layers = [
                    SimpleNamespace(self_attn=SimpleNamespace(attn=_radix_with(i, k, v)))
                    for i in range(2)
                ]
                # (the model has .layers: resolve_language_model is not reached)
                fake = {"sglang.srt.model_loader.utils": {"resolve_language_model": None}}
                with _stub_modules(fake):
                    method.load_scales_from_model(SimpleNamespace(layers=layers))
                scenarios[scenario] = {
                    "layer_k_scale": k,
                    "layer_v_scale": v,
                    "k_scales_float": [enc_float(x) for x in method.k_scales_float],
                    "v_scales_float": [enc_float(x) for x in method.v_scales_float],
                    "k_scales_gpu": enc_value(method.k_scales_gpu),
                    "get_bmm_scales_layer0": [enc_float(x) for x in method.get_bmm_scales(0)],
                }
            out["devices"][f"sm{sm}"] = {
                "gpus": what,
                "platform": dict(vars(platform)),
                "scenarios": scenarios,
            }
        return out

    def _platform_probe_names(self) -> dict[str, str]:
        """runtime_context._PLATFORM_PROBES: get_platform().<attr> -> utils function."""
        node = self.tree.node(F_RUNTIME_CTX, "_PLATFORM_PROBES")
        assert isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
        probes = ast.literal_eval(node.value)
        return {k: probes[k] for k in ("is_sm90", "is_sm100", "is_sm120")}

    def _platform(self, sm: int, probes: dict[str, str]) -> SimpleNamespace:
        ns: dict[str, Any] = {
            "lru_cache": functools.lru_cache,
            "partial": functools.partial,
            "List": list,
            "Tuple": tuple,
            "is_cuda": lambda: True,
            "get_device_sm": lambda: sm,
            "torch": SimpleNamespace(version=SimpleNamespace(cuda="12.9")),
        }
        self.tree.exec(F_COMMON, ["_check_cuda_device_version", *probes.values()], ns)
        return SimpleNamespace(**{attr: bool(ns[fn]()) for attr, fn in probes.items()})

    # -- cited code ------------------------------------------------------------------------
    def code_facts(self) -> dict[str, Any]:
        facts = _load_module("kvscale_parity_sglang_code_facts", "sglang_code_facts.py").FACTS
        out: dict[str, Any] = {}
        for f in facts:
            sites = []
            for rel, line, anchor in f["cites"]:
                self.tree.tree(rel)  # read through the tree: its sha256 is recorded
                text = self.tree.path(rel).read_text().split("\n")[line - 1]
                if anchor not in text:
                    raise SystemExit(
                        f"sglang_code_facts.py {f['id']}: {rel}:{line} no longer reads "
                        f"{anchor!r} (it reads {text.strip()!r})"
                    )
                sites.append({"site": f"{rel}:{line}", "code": text.strip()})
            out[f["id"]] = {"topic": f["topic"], "statement": f["statement"], "sites": sites}
        return out


def _radix_with(layer_id: int, k: float | None, v: float | None) -> SimpleNamespace:
    def param(x: float | None) -> torch.Tensor | None:
        return (
            None
            if x is None
            else nn.Parameter(torch.tensor(x, dtype=torch.float32), requires_grad=False)
        )

    return SimpleNamespace(layer_id=layer_id, k_scale=param(k), v_scale=param(v))


def _plain(x: Any) -> Any:
    return x if x is None or isinstance(x, (str, int, float, bool)) else repr(x)


@contextlib.contextmanager
def _root_log_records(pkg: Path, logger: RecordingLogger) -> Iterator[None]:
    """Warnings that SGLang's files log through the root logger (``logging.warning(...)``,
    e.g. models/mistral_large_3.py) go to ``logger`` like its module loggers' do."""
    import logging

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING and record.pathname.startswith(str(pkg)):
                logger.records.append(record.getMessage())

    handler = Handler()
    root = logging.getLogger()
    root.addHandler(handler)  # (with a handler there, logging.warning adds no stderr one)
    try:
        yield
    finally:
        root.removeHandler(handler)


def _normalise_paths(obj: Any, case_dir: str) -> Any:
    """Messages name files of the temporary checkpoint; write them as <checkpoint>/..."""
    if isinstance(obj, str):
        return obj.replace(case_dir, "<checkpoint>")
    if isinstance(obj, list):
        return [_normalise_paths(x, case_dir) for x in obj]
    if isinstance(obj, dict):
        return {k: _normalise_paths(v, case_dir) for k, v in obj.items()}
    return obj


def _kind(x: Any) -> str | None:
    if x is None:
        return None
    if isinstance(x, nn.Parameter):
        return f"Parameter[{str(x.dtype).removeprefix('torch.')}, {list(x.shape)}]"
    return type(x).__name__


# Fields of "provenance" that describe the machine, not the inputs.
VOLATILE_PROVENANCE = ("torch_version", "python_version")


def summarize(doc: dict[str, Any]) -> str:
    lines = [
        f"SGLang {doc['provenance']['sglang_version']}: {len(doc['cases'])} cases "
        f"({len(doc['skipped'])} of cases.py skipped)"
    ]
    by_group: dict[str, list[int]] = {}
    for c in doc["cases"].values():
        g = by_group.setdefault(c["group"], [0, 0, 0])
        g[0] += 1
        g[1] += len(c["layers"])
        g[2] += sum(1 for layer in c["layers"] if layer["error"])
    for g, (n, nl, ne) in by_group.items():
        lines.append(f"  {g:24s} {n:4d} cases {nl:4d} layers {ne:4d} refused")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    if not __debug__:
        print(
            "sglang_oracle.py must run without -O: SGLang's asserts are behaviour", file=sys.stderr
        )
        return 2
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument(
        "--sglang-src",
        required=True,
        help="extracted SGLang source: the directory holding sglang/ (or sglang/)",
    )
    ap.add_argument("--out", required=True, help="golden JSON file to write ('-' for stdout)")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument(
        "--tracebacks",
        action="store_true",
        help="print the traceback of every recorded exception to stderr",
    )
    args = ap.parse_args(argv)
    global SHOW_TRACEBACKS
    SHOW_TRACEBACKS = args.tracebacks
    oracle = Oracle(args.sglang_src)
    doc = oracle.run(args.case)
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        Path(args.out).write_text(text)
        if not args.quiet:
            print(summarize(doc))
            print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
