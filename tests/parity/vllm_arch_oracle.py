#!/usr/bin/env python3
"""Oracle, architectures: run vLLM 0.33.0's own loading code for architectures beyond Llama.

    python tests/parity/vllm_arch_oracle.py --vllm-src /tmp/vllm_dl/src \
        --out tests/parity/vllm_arch_expected.json \
        --classes-out tests/parity/vllm_arch_classes.json

Builds on tests/parity/vllm_oracle.py (same `VllmTree`, same verbatim quant configs, KV-cache
methods, `AutoWeightsLoader`, `WeightsMapper`, `Attention` pieces) and adds, verbatim from
vLLM: `MLAAttention` (its KV-quant part of `__init__` and of
`process_weights_after_loading`), `MultiHeadLatentAttentionWrapper.__init__`, the attention
modules' and models' `__init__` of the architectures below (their layer leaves are
placeholders), their `load_weights` chains, `maybe_remap_kv_scale_name`, ModelOpt NVFP4 /
MXFP8 / mixed-precision configs with vLLM's quant-method override order, and the expert
mapping helpers. Every case is a synthetic checkpoint of tests/parity/arch_cases.py. The
second output classifies every architecture of vLLM's registry by static analysis (file:line
evidence). tests/parity/README.md ("Architectures") lists what is verbatim and what is stubbed.

Must run without `python -O`: vLLM's `assert` statements are part of its behaviour.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import dataclasses
import importlib.util
import inspect
import json
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

import torch
from torch import nn

HERE = Path(__file__).resolve().parent
SCHEMA = "kvscale.vllm-arch-parity/1"
CLASSES_SCHEMA = "kvscale.vllm-arch-classes/1"


def _load_sibling(name: str, file: str) -> types.ModuleType:
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


vo = _load_sibling("kvscale_parity_vllm_oracle", "vllm_oracle.py")
_re = vo._re
VllmTree = vo.VllmTree


class OracleGap(RuntimeError):
    """A path of vLLM's code that this oracle does not model was reached: a harness bug,
    never a behaviour of vLLM (the run stops instead of recording it as a refusal)."""


def _unreached(what: str) -> Any:
    def fn(*a: Any, **k: Any) -> Any:
        raise OracleGap(f"oracle stub reached: {what}")

    fn.__name__ = what.replace(".", "_")
    return fn


def _annotation(name: str) -> type:
    """A name vLLM only uses in annotations (evaluated at definition time)."""
    return type(name, (), {})


# ======================================================================================
# Source helpers
# ======================================================================================

F_MLA_ATTN = "model_executor/layers/attention/mla_attention.py"
F_MLA_WRAP = "model_executor/layers/mla.py"
F_QUTILS = "model_executor/layers/quantization/utils/quant_utils.py"
F_B12X = "utils/b12x.py"
F_ROUTED = "model_executor/layers/fused_moe/routed_experts.py"
F_FMOE_LAYER = "model_executor/layers/fused_moe/layer.py"
F_EPLB = "distributed/eplb/eplb_state.py"
F_DSV2 = "model_executor/models/deepseek_v2.py"
F_DSV32_ATTN = "models/deepseek_v32/attention.py"
F_DSV32_NV = "models/deepseek_v32/nvidia/model.py"
F_DSV32_AMD = "models/deepseek_v32/amd/model.py"
F_DSV32_ROCM = "models/deepseek_v32/amd/rocm.py"
F_DSV32_INIT = "models/deepseek_v32/__init__.py"
F_GLM4_LITE = "model_executor/models/glm4_moe_lite.py"
F_MISTRAL_L3 = "model_executor/models/mistral_large_3.py"
F_KIMI_K25 = "model_executor/models/kimi_k25.py"
F_BAILING_V3 = "model_executor/models/bailing_moe_v3.py"
F_MINICPM3 = "model_executor/models/minicpm3.py"
F_MINICPM = "model_executor/models/minicpm.py"
F_JAMBA = "model_executor/models/jamba.py"
F_LLAMA = "model_executor/models/llama.py"
F_CONVERTOR = "transformers_utils/model_arch_config_convertor.py"
F_MODEL_CFG = "config/model.py"
F_REGISTRY = "model_executor/models/registry.py"


def _free_names(node: ast.AST) -> set[str]:
    """Global names a function/class body reads (approximation: every loaded name that the
    body never binds)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if n is not node:
                bound.add(n.name)
        elif isinstance(n, ast.alias):
            bound.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
    import builtins

    return {x for x in loaded - bound if not hasattr(builtins, x)}


def _require(
    ns: Mapping[str, Any], nodes: Iterable[ast.AST], where: str, also: Iterable[str] = ()
) -> None:
    nodes = list(nodes)
    defined = {
        getattr(n, "name", None)
        or next(
            (
                t.id
                for t in getattr(n, "targets", [getattr(n, "target", None)])
                if isinstance(t, ast.Name)
            ),
            None,
        )
        for n in nodes
    }
    missing = sorted(set().union(*(_free_names(n) for n in nodes)) - set(ns) - defined - set(also))
    if missing:
        raise OracleGap(f"{where}: names not provided to vLLM's code: {missing}")


def make_class_from(
    tree: VllmTree,
    rel: str,
    name: str,
    bases: Sequence[str],
    members: Sequence[str | ast.stmt],
    ns: dict[str, Any],
) -> type:
    """Like VllmTree.make_class, but members may also be (synthetic) AST nodes of `rel`, and
    the names they read are checked against `ns` before anything runs."""
    body = [copy.deepcopy(m if isinstance(m, ast.stmt) else tree.node(rel, m)) for m in members]
    _require(ns, body, f"{rel}:{name}", also=[name])
    kw: dict[str, Any] = {"type_params": []} if "type_params" in ast.ClassDef._fields else {}
    cls = ast.ClassDef(
        name=name,
        bases=[ast.parse(b, mode="eval").body for b in bases],
        keywords=[],
        body=body or [ast.Pass()],
        decorator_list=[],
        **kw,
    )
    ast.copy_location(cls, body[0] if body else ast.Pass(lineno=1, col_offset=0))
    ast.fix_missing_locations(cls)
    exec(
        compile(
            ast.Module(body=[cls], type_ignores=[]), str(tree.path(rel)), "exec", dont_inherit=True
        ),
        ns,
    )
    return ns[name]


def method_subset(
    tree: VllmTree, rel: str, qualname: str, keep: Callable[[int, ast.stmt], bool], new_name: str
) -> ast.FunctionDef:
    """A copy of a vLLM method whose body keeps only the statements `keep` selects (same
    signature, same file and line numbers)."""
    fn = tree.node(rel, qualname)
    assert isinstance(fn, ast.FunctionDef)
    out = copy.deepcopy(fn)
    out.name = new_name
    out.decorator_list = []
    out.body = [s for i, s in enumerate(out.body) if keep(i, s)]
    if not out.body:
        raise LookupError(f"vLLM source changed: nothing selected from {rel}:{qualname}")
    return out


def exec_defs(tree: VllmTree, rel: str, qualnames: Sequence[str], ns: dict[str, Any]) -> None:
    nodes = [tree.node(rel, q) for q in qualnames]
    _require(ns, nodes, rel)
    exec(tree.compile(rel, nodes), ns)


# ======================================================================================
# Placeholder layers (the leaves of the module trees; none decides a KV-scale value)
# ======================================================================================


def _param(*shape: int, dtype: torch.dtype | None = None) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape, dtype=dtype), requires_grad=False)


class LoadTrace:
    """Which checkpoint tensor (by identity) reached which parameter's weight_loader."""

    def __init__(self) -> None:
        self.hits: dict[int, list[str]] = {}

    def record(self, tensor: torch.Tensor, qualname: str) -> None:
        self.hits.setdefault(id(tensor), []).append(qualname)


TRACE = LoadTrace()


def _placeholder_loader(param: nn.Parameter, loaded_weight: torch.Tensor, *a: Any, **k: Any) -> Any:
    """weight_loader of placeholder parameters: records the hit, loads nothing (the shapes
    of linear weights are not modelled; no KV-scale value is decided here)."""
    TRACE.record(loaded_weight, getattr(param, "_oracle_qualname", "?"))
    return True if k.get("return_success") else None


def _leaf_param(*shape: int, dtype: torch.dtype | None = None) -> nn.Parameter:
    p = _param(*shape, dtype=dtype)
    p.weight_loader = _placeholder_loader  # type: ignore[attr-defined]
    return p


class Linear(vo.LinearBase):
    """Any of vLLM's parallel linear layers: FP8-static-like placeholder parameters
    (`weight`, `weight_scale`, `input_scale`); none is named like a KV scale. Keeps
    `quant_config` as LinearBase.__init__ does (AutoWeightsLoader looks for it on the
    model's direct children)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.quant_config = kwargs.get("quant_config")
        self.weight = _leaf_param(1)
        self.weight_scale = _leaf_param(1, dtype=torch.float32)
        self.input_scale = _leaf_param(1, dtype=torch.float32)


class Norm(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.weight = _leaf_param(1)


class Embedding(vo.VocabParallelEmbedding):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        self.weight = _leaf_param(1)


def _lm_head_signature(
    num_embeddings: int,
    embedding_dim: int,
    bias: bool = False,
    params_dtype: Any = None,
    org_num_embeddings: Any = None,
    padding_size: int = 64,
    quant_config: Any = None,
    prefix: str = "",
    **kwargs: Any,
) -> Any:
    return quant_config


class LMHead(vo.ParallelLMHead):
    """ParallelLMHead: keeps `quant_config` (vocab_parallel_embedding.py,
    ParallelLMHead.__init__), which AutoWeightsLoader may pick up as the model's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        self.quant_config = _lm_head_signature(*args, **kwargs)
        self.weight = _leaf_param(1)

    def tie_weights(self, embed_tokens: nn.Module) -> nn.Module:
        # UnquantizedEmbeddingMethod.tie_weights: share the embedding's weight
        self.weight = embed_tokens.weight
        return self


class Rotary(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def enabled(self) -> bool:
        return True


def get_rope(*args: Any, **kwargs: Any) -> nn.Module:
    return Rotary()


class Experts(vo.RoutedExperts):
    def __init__(self) -> None:
        super().__init__()
        self.w13_weight = _leaf_param(1)
        self.w2_weight = _leaf_param(1)


class MoEBlock(nn.Module):
    """A mixture-of-experts block: `gate`, `experts.{w13,w2}_weight`, `shared_experts`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.gate = Linear()
        self.experts = Experts()
        self.shared_experts = MLPBlock()
        # expert-parallel bookkeeping read by the models' __init__ (MixtureOfExperts)
        self.n_logical_experts = self.n_physical_experts = self.num_experts = 4
        self.n_local_physical_experts = self.n_routed_experts = 4
        self.n_shared_experts = 1
        self.n_redundant_experts = 0


class MLPBlock(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.gate_up_proj = Linear()
        self.down_proj = Linear()


class LogitsProcessor(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


class PluggableLayer(nn.Module):
    """vllm.model_executor.custom_op.PluggableLayer: registry decorator only."""

    @classmethod
    def register(cls, name: str) -> Callable[[type], type]:
        return lambda c: c


class _Backend:
    """The attention backend `get_attn_backend` would pick on the GPU (a case option)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def get_name(self) -> str:
        return self.name

    def is_mla(self) -> bool:
        return True


class _Impl:
    supports_quant_query_input = True
    is_sparse = False
    dcp_world_size = 1

    def process_weights_after_loading(self, act_dtype: torch.dtype) -> None:
        pass


_LEAF_NAMES = (
    "Linear",
    "Norm",
    "Embedding",
    "LMHead",
    "Rotary",
    "Experts",
    "MoEBlock",
    "MLPBlock",
    "LogitsProcessor",
    "Tower",
    "_MambaLeaf",
    "_IdentityLeaf",
    "_KDALeaf",
    "_IndexerLeaf",
    "_DecoderLeaf",
    "_GptOssMLPLeaf",
)


def _stamp_qualnames(model: nn.Module) -> None:
    for name, p in model.named_parameters(remove_duplicate=False):
        if not hasattr(p, "_oracle_qualname"):
            p._oracle_qualname = name  # type: ignore[attr-defined]


# ======================================================================================
# vLLM's code: the parity oracle's pieces plus MLA, more quant configs, model files
# ======================================================================================


class TracingLogger(vo.RecordingLogger):
    """vllm.logger with every warning (as the parity oracle) and, apart, every debug line
    (AutoWeightsLoader says there why it skipped a tensor)."""

    def __init__(self) -> None:
        super().__init__()
        self.debug_records: list[str] = []

    def debug(self, msg: Any, *args: Any, **kw: Any) -> None:
        self.debug_records.append(self._fmt(msg, args))

    debug_once = debug

    def take_debug(self) -> list[str]:
        out, self.debug_records = self.debug_records, []
        return out


class ArchCode:
    """vLLM's verbatim definitions for the architecture oracle (on top of vo.VllmCode)."""

    def __init__(self, tree: VllmTree) -> None:
        self.tree = tree
        self.base = base = vo.VllmCode(tree)
        # one logger for every namespace: swap the recording methods in place
        self.logger = base.logger
        self.logger.__class__ = TracingLogger
        self.logger.debug_records = []  # type: ignore[attr-defined]
        self.platform = base.platform
        # Platform questions asked on the paths executed here. CUDA for OCP FP8, ROCm for
        # FNUZ FP8 (MI300): the case's `platform` picks both.
        self.platform.is_cuda = lambda: not self.platform.fnuz  # type: ignore[attr-defined]
        self.platform.is_xpu = lambda: False  # type: ignore[attr-defined]
        self.platform.device_type = "cpu"  # type: ignore[attr-defined]
        self.device_family = 90  # Hopper unless the case names another (option)
        self.platform.is_device_capability_family = (  # type: ignore[attr-defined]
            lambda family: self.platform.is_cuda() and family == self.device_family
        )
        self.ns = base.namespaces
        t = tree
        self.Attention = base.Attention

        # --- weight_utils.maybe_remap_kv_scale_name ----------------------------------
        ns_wu = self.ns[vo.F_WUTILS]
        exec_defs(t, vo.F_WUTILS, ["maybe_remap_kv_scale_name"], ns_wu)
        self.maybe_remap_kv_scale_name = ns_wu["maybe_remap_kv_scale_name"]

        # --- models/utils.py helpers used by the loaders ---------------------------------
        ns_mu = self.ns[vo.F_MUTILS]
        ns_mu.setdefault("_model_to_pp_missing_layer_names", {})
        ns_mu.setdefault("PreTrainedConfig", _annotation("PreTrainedConfig"))
        exec_defs(
            t,
            vo.F_MUTILS,
            [
                "_model_to_pp_missing_layer_names",
                "get_pp_missing_layer_names",
                "is_pp_missing_parameter",
                "get_spec_layer_idx_from_weight_name",
                "extract_layer_index",
            ],
            ns_mu,
        )

        # --- expert mapping (fused_moe) -----------------------------------------------
        ns_eplb = self._ns(Sequence=Sequence)
        EplbState = make_class_from(
            t,
            F_EPLB,
            "EplbState",
            ["object"],
            ["EplbState.build_initial_global_physical_to_logical_map"],
            ns_eplb,
        )
        ns_routed = self._ns(EplbState=EplbState)
        RoutedExpertsMapping = make_class_from(
            t,
            F_ROUTED,
            "RoutedExperts",
            ["object"],
            [
                "RoutedExperts.make_expert_params_mapping",
                "RoutedExperts.build_expert_params_mapping",
            ],
            ns_routed,
        )
        ns_fl = self._ns(RoutedExperts=RoutedExpertsMapping)
        exec_defs(t, F_FMOE_LAYER, ["fused_moe_make_expert_params_mapping"], ns_fl)
        self.fused_moe_make_expert_params_mapping = ns_fl["fused_moe_make_expert_params_mapping"]

        self._build_quant_configs()
        self._build_mla()
        self._build_use_mla()
        self._build_attention_layer()

    # -- namespaces ---------------------------------------------------------------------
    def _ns(self, **extra: Any) -> dict[str, Any]:
        ns: dict[str, Any] = {
            "__builtins__": __builtins__,
            "__name__": __name__,  # a module in sys.modules (dataclasses look it up)
            "torch": torch,
            "nn": nn,
            "logger": self.logger,
            "re": _re,
            "regex": _re,
            "typing": typing,
            "Any": Any,
            "cast": typing.cast,
            "ClassVar": typing.ClassVar,
            "Literal": typing.Literal,
            "TYPE_CHECKING": False,
            "Callable": Callable,
            "Iterable": Iterable,
            "Iterator": Iterator,
            "Mapping": Mapping,
            "Sequence": Sequence,
            "dataclass": dataclasses.dataclass,
            "field": dataclasses.field,
            "current_platform": self.platform,
        }
        ns.update(extra)
        return ns

    # -- quant configs: ModelOpt NVFP4 / MXFP8 / mixed, and vLLM's override order --------
    def _build_quant_configs(self) -> None:
        t = self.tree
        ns_mo = self.ns[vo.F_MODELOPT]
        ns_b12 = self._ns()
        exec_defs(t, F_B12X, ["B12X_BLOCK_CODECS"], ns_b12)
        ns_qu = self._ns(MappingProxyType=MappingProxyType)
        exec_defs(t, F_QUTILS, ["is_layer_skipped"], ns_qu)
        ns_mo.update(
            B12X_BLOCK_CODECS=ns_b12["B12X_BLOCK_CODECS"],
            is_layer_skipped=ns_qu["is_layer_skipped"],
            QuantizationConfigArgs=_annotation("QuantizationConfigArgs"),
            Fp8Config=self.base.quant_classes["fp8"],
            Fp8MoEMethod=vo._Unused,
            ModelOptFp8MoEMethod=vo._Unused,
            ModelOptNvFp4FusedMoE=vo._Unused,
            ModelOptMxFp8FusedMoE=vo._Unused,
            LinearBase=vo.LinearBase,
            ParallelLMHead=vo.ParallelLMHead,
            UnquantizedLinearMethod=vo.UnquantizedLinearMethod,
            cast=typing.cast,
        )
        exec_defs(t, vo.F_MODELOPT, ["_BLOCK_FP8_MOE_ALGOS"], ns_mo)
        # ModelOptQuantConfigBase is the parity oracle's (vllm_oracle.py); the mixed
        # config's get_quant_method also reaches is_layer_excluded for MLAAttention.
        ModelOptNvFp4Config = make_class_from(
            t,
            vo.F_MODELOPT,
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
        ModelOptMxFp8Config = make_class_from(
            t,
            vo.F_MODELOPT,
            "ModelOptMxFp8Config",
            ["ModelOptQuantConfigBase"],
            [
                "ModelOptMxFp8Config.__init__",
                "ModelOptMxFp8Config.get_name",
                "ModelOptMxFp8Config.get_supported_act_dtypes",
                "ModelOptMxFp8Config.get_min_capability",
                "ModelOptMxFp8Config.override_quantization_method",
                "ModelOptMxFp8Config.from_config",
                "ModelOptMxFp8Config._from_config",
            ],
            ns_mo,
        )
        ModelOptMixedPrecisionConfig = make_class_from(
            t,
            vo.F_MODELOPT,
            "ModelOptMixedPrecisionConfig",
            ["ModelOptQuantConfigBase"],
            [
                "ModelOptMixedPrecisionConfig.__init__",
                "ModelOptMixedPrecisionConfig.get_name",
                "ModelOptMixedPrecisionConfig.get_supported_act_dtypes",
                "ModelOptMixedPrecisionConfig.get_min_capability",
                "ModelOptMixedPrecisionConfig.override_quantization_method",
                "ModelOptMixedPrecisionConfig._from_config",
                "ModelOptMixedPrecisionConfig._resolve_quant_algo",
                "ModelOptMixedPrecisionConfig._quantized_layer_prefix_candidates",
                "ModelOptMixedPrecisionConfig.get_quant_method",
            ],
            ns_mo,
        )
        ModelOptFp8Config = self.base.quant_classes["modelopt"]
        ModelOptFp8Config.override_quantization_method = classmethod(
            _fn_from(t, vo.F_MODELOPT, "ModelOptFp8Config.override_quantization_method", ns_mo)
        )
        # module statements `ModelOpt*Config.KVCacheMethodCls = ModelOptKVCacheMethod`
        stmts = [
            s
            for s in t.tree(vo.F_MODELOPT).body
            if isinstance(s, ast.Assign)
            and ast.unparse(s.targets[0])
            in ("ModelOptNvFp4Config.KVCacheMethodCls", "ModelOptMxFp8Config.KVCacheMethodCls")
        ]
        if len(stmts) != 2:
            raise LookupError("vLLM source changed: ModelOpt KVCacheMethodCls assignments")
        exec(t.compile(vo.F_MODELOPT, stmts), ns_mo)
        self.quant_classes: dict[str, type] = dict(self.base.quant_classes)
        self.quant_classes.update(
            modelopt_fp4=ModelOptNvFp4Config,
            modelopt_mxfp8=ModelOptMxFp8Config,
            modelopt_mixed=ModelOptMixedPrecisionConfig,
        )
        # ModelConfig._verify_quantization (config/model.py): the override list, in vLLM's
        # order; the entries before "modelopt" (gptq/awq/inc/moe_wna16) and after
        # "modelopt_mixed" (mxfp4, ...) are not executed: they do not claim ModelOpt,
        # fp8, compressed-tensors or Quark configs (their override_quantization_method
        # test their own quant_method strings).
        self.overrides = self._override_order()

    def _override_order(self) -> list[str]:
        fn = self.tree.node(F_MODEL_CFG, "ModelConfig._verify_quantization")
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Assign)
                and ast.unparse(node.targets[0]) == "overrides"
                and isinstance(node.value, ast.List)
            ):
                return [ast.literal_eval(e) for e in node.value.elts]
        raise LookupError("vLLM source changed: ModelConfig._verify_quantization overrides")

    def resolve_quant_method(self, quant_cfg: dict[str, Any], normalized: str) -> str:
        """What ModelConfig._verify_quantization makes of the normalised quant_method: the
        first modelled override that claims the config, else the config's own name."""
        for name in self.overrides:
            cls = self.quant_classes.get(name)
            if cls is None or not name.startswith("modelopt"):
                continue
            got = cls.override_quantization_method(quant_cfg, None, hf_config=None)
            if got is not None:
                return got
        return normalized

    # -- MLA: MLAAttention's KV-quant statements, MultiHeadLatentAttentionWrapper ------
    def _build_mla(self) -> None:
        t = self.tree
        ns_at = self.ns[vo.F_ATTN]
        ns_kvi = self.ns[vo.F_KVI]
        ns_mla = self._ns(
            resolve_quant_method=ns_at["resolve_quant_method"],
            should_load_quant_weights=ns_at["should_load_quant_weights"],
            set_default_quant_scales=ns_at["set_default_quant_scales"],
            _init_kv_cache_quant=ns_at["_init_kv_cache_quant"],
            is_quantized_kv_cache=ns_kvi["is_quantized_kv_cache"],
            AttentionBackend=_annotation("AttentionBackend"),
            CacheDType=str,
            envs=SimpleNamespace(VLLM_BATCH_INVARIANT=False),
            ColumnParallelLinear=Linear,
            CacheConfig=_annotation("CacheConfig"),
            QuantizationConfig=_annotation("QuantizationConfig"),
            MLAPrefillBackend=_annotation("MLAPrefillBackend"),
            _MLAShellBase=_MLAShellBase,
            replace_parameter=_unreached("replace_parameter (AMX MLA on CPU)"),
        )
        exec_defs(t, F_MLA_ATTN, ["_canonicalize_sparse_mla_kv_cache_dtype"], ns_mla)
        # MLAAttention.__init__: the statements that set the KV-cache dtype and create the
        # KV scales -- from `self.num_heads = num_heads` to `_init_kv_cache_quant(...)`,
        # without `super().__init__()` and the backend lookup `get_attn_backend(...)`
        # (the shell sets self.attn_backend from the case's backend before they run).
        init = t.node(F_MLA_ATTN, "MLAAttention.__init__")
        assert isinstance(init, ast.FunctionDef)
        last = next(
            i
            for i, s in enumerate(init.body)
            if isinstance(s, ast.Expr) and ast.unparse(s).startswith("_init_kv_cache_quant(")
        )

        def keep_init(i: int, s: ast.stmt) -> bool:
            text = ast.unparse(s)
            if i > last or text == "super().__init__()":
                return False
            return not (isinstance(s, ast.If) and text.startswith("if attn_backend is not None"))

        kv_part = method_subset(
            t, F_MLA_ATTN, "MLAAttention.__init__", keep_init, "_vllm_kv_quant_init"
        )
        # process_weights_after_loading: the backend impl hook, the AMX early return and
        # the scale reset at the end; the kv_b_proj absorption in between (W_UK/W_UV,
        # aiter BMM paths, DCP) touches weights only.
        pw = t.node(F_MLA_ATTN, "MLAAttention.process_weights_after_loading")
        assert isinstance(pw, ast.FunctionDef)
        n = len(pw.body)

        def keep_pw(i: int, s: ast.stmt) -> bool:
            text = ast.unparse(s)
            return (
                text == "self.impl.process_weights_after_loading(act_dtype)"
                or text.startswith("if self.is_amx_bmm_enabled")
                or i >= n - 2
            )

        pw_part = method_subset(
            t,
            F_MLA_ATTN,
            "MLAAttention.process_weights_after_loading",
            keep_pw,
            "process_weights_after_loading",
        )
        tail = [ast.unparse(s).split("\n")[0] for s in pw_part.body[-2:]]
        if not (tail[0].startswith("quant_method = ") and "should_load_quant_weights" in tail[1]):
            raise LookupError(
                f"vLLM source changed: MLAAttention.process_weights_after_loading {tail}"
            )
        self.MLAAttention = make_class_from(
            t,
            F_MLA_ATTN,
            "MLAAttention",
            ["_MLAShellBase"],
            [
                "MLAAttention.supports_dense_mha_prefill",
                "MLAAttention.supports_pcp_dcp",
                kv_part,
                pw_part,
            ],
            ns_mla,
        )
        self.mla_statements = {
            "__init__": [f"{s.lineno}" for s in kv_part.body],
            "process_weights_after_loading": [f"{s.lineno}" for s in pw_part.body],
        }

        ns_wrap = self._ns(
            MLAAttention=self.MLAAttention,
            PluggableLayer=PluggableLayer,
            CacheConfig=_annotation("CacheConfig"),
            QuantizationConfig=_annotation("QuantizationConfig"),
            fused_q_kv_rmsnorm=_unreached("fused_q_kv_rmsnorm"),
        )
        exec_defs(t, F_MLA_WRAP, ["MLAModules"], ns_wrap)
        self.MLAModules = ns_wrap["MLAModules"]
        self.MultiHeadLatentAttentionWrapper = make_class_from(
            t,
            F_MLA_WRAP,
            "MultiHeadLatentAttentionWrapper",
            ["PluggableLayer"],
            ["MultiHeadLatentAttentionWrapper.__init__"],
            ns_wrap,
        )

    # -- ModelConfig.use_mla (config/model.py) and is_deepseek_mla (convertor) ----------
    def _build_use_mla(self) -> None:
        t = self.tree
        ns_dv4 = self._ns()
        exec_defs(t, "transformers_utils/deepseek_v4_utils.py", ["get_compress_ratios"], ns_dv4)
        ns_conv = self._ns(get_compress_ratios=ns_dv4["get_compress_ratios"])
        Conv = make_class_from(
            t,
            F_CONVERTOR,
            "ModelArchConfigConvertorBase",
            ["object"],
            ["ModelArchConfigConvertorBase.is_deepseek_mla"],
            ns_conv,
        )
        use_mla = t.node(F_MODEL_CFG, "ModelConfig.use_mla")
        assert isinstance(use_mla, ast.FunctionDef)
        plain = copy.deepcopy(use_mla)
        plain.decorator_list = []
        ns_mc = self._ns(envs=None)
        self._use_mla_code = t.compile(F_MODEL_CFG, [plain])
        self._use_mla_ns = ns_mc
        self._Convertor = Conv

    def config_hook(self, arch: str) -> Any:
        """models/config.py: MODELS_CONFIG_MAP[arch] (VllmConfig.try_verify_and_update_config
        runs its verify_and_update_config after the kv-cache dtype was resolved), or None."""
        if not hasattr(self, "_config_hooks"):
            t = self.tree
            rel = "model_executor/models/config.py"
            table = t.node(rel, "MODELS_CONFIG_MAP")
            assert isinstance(table, (ast.Assign, ast.AnnAssign)) and isinstance(
                table.value, ast.Dict
            )
            self._config_hook_names = {
                ast.literal_eval(k): ast.unparse(v)
                for k, v in zip(table.value.keys, table.value.values, strict=True)
                if k is not None
            }
            self._config_hooks: dict[str, Any] = {}
            self._config_hook_ns = self._ns(
                VerifyAndUpdateConfig=object,
                json=json,
                round_up=lambda x, y: ((x + y - 1) // y) * y,
            )
        name = self._config_hook_names.get(arch)
        if name is None:
            return None
        fn = self.tree.node("model_executor/models/config.py", f"{name}.verify_and_update_config")
        if "cache_dtype" not in ast.unparse(fn):
            # only the hooks that change the kv-cache dtype are executed; the others
            # adjust scheduling, parsers, mamba/block sizes (recorded, not run)
            return None
        if name not in self._config_hooks:
            self._config_hooks[name] = make_class_from(
                self.tree,
                "model_executor/models/config.py",
                name,
                ["VerifyAndUpdateConfig"],
                [f"{name}.verify_and_update_config"],
                self._config_hook_ns,
            )
        return self._config_hooks[name]

    def use_mla(self, hf_text_config: Any, *, mla_disable: bool = False) -> bool:
        conv = self._Convertor()
        conv.hf_text_config = hf_text_config
        is_mla = conv.is_deepseek_mla()
        ns = dict(self._use_mla_ns)
        ns["envs"] = SimpleNamespace(VLLM_MLA_DISABLE=mla_disable)
        exec(self._use_mla_code, ns)
        model_config = SimpleNamespace(
            hf_text_config=hf_text_config,
            is_deepseek_mla=is_mla,
            using_transformers_backend=lambda: False,
        )
        return bool(ns["use_mla"](model_config))

    # -- Attention with vLLM's full constructor signature ------------------------------
    def _build_attention_layer(self) -> None:
        base_attention = self.base.Attention

        class Attention(base_attention):  # type: ignore[misc, valid-type]
            """vLLM's Attention (the parity oracle's: kv_cache_dtype promotion,
            _init_kv_cache_quant, process_weights_after_loading, all verbatim) behind the
            constructor signature the model files call."""

            def __init__(
                self,
                num_heads: int,
                head_size: int,
                scale: float,
                num_kv_heads: int | None = None,
                alibi_slopes: Any = None,
                use_alibi_sqrt: Any = None,
                cache_config: Any = None,
                quant_config: Any = None,
                logits_soft_cap: Any = None,
                per_layer_sliding_window: int | None = None,
                prefix: str = "",
                attn_type: str = "decoder",
                kv_sharing_target_layer_name: str | None = None,
                mm_prefix_clamp_sliding_window: bool = False,
                attn_backend: Any = None,
                head_size_v: int | None = None,
                **extra_impl_args: Any,
            ) -> None:
                super().__init__(
                    num_heads,
                    head_size,
                    scale,
                    num_kv_heads=num_kv_heads,
                    cache_config=cache_config,
                    quant_config=quant_config,
                    prefix=prefix,
                )
                if per_layer_sliding_window is not None:
                    self.sliding_window = per_layer_sliding_window
                elif cache_config is not None:
                    self.sliding_window = getattr(cache_config, "sliding_window", None)
                else:
                    self.sliding_window = None
                self.attn_type = attn_type
                self.kv_sharing_target_layer_name = kv_sharing_target_layer_name
                self.has_sink = extra_impl_args.get("sinks") is not None

        self.AttentionLayer = Attention


def _fn_from(tree: VllmTree, rel: str, qualname: str, ns: dict[str, Any]) -> Callable[..., Any]:
    """One vLLM function or method, decorators removed, compiled in `ns`."""
    fn = copy.deepcopy(tree.node(rel, qualname))
    assert isinstance(fn, ast.FunctionDef)
    fn.decorator_list = []
    _require(ns, [fn], f"{rel}:{qualname}")
    local: dict[str, Any] = {}
    exec(tree.compile(rel, [fn]), ns, local)
    return typing.cast(Callable[..., Any], local[fn.name])


class _MLAShellBase(vo.MLAAttention):
    """The harness half of MLAAttention.__init__: nn.Module init, the backend the case
    names, a backend impl stub; then vLLM's own KV-quant statements run."""

    backend_name = "FLASHMLA"
    sparse_backend_name = "FLASHMLA_SPARSE"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        sig = inspect.signature(self._vllm_kv_quant_init)  # type: ignore[attr-defined]
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        use_sparse = bound.arguments.get("use_sparse", False)
        backend = bound.arguments.get("attn_backend")
        if backend is None:
            backend = _Backend(self.sparse_backend_name if use_sparse else self.backend_name)
        self.attn_backend = backend
        self._vllm_kv_quant_init(*args, **kwargs)  # type: ignore[attr-defined]
        self.impl = _Impl()
        self.is_amx_bmm_enabled = False
        self.use_pcp = False
        self.use_sparse = use_sparse


# ======================================================================================
# Model files: vLLM's __init__ and load_weights of the architectures, in namespaces that
# mirror each file's imports; layer leaves are the placeholders above
# ======================================================================================


class _PPGroup:
    """get_pp_group(): one pipeline stage."""

    is_first_rank = True
    is_last_rank = True
    rank_in_group = 0
    world_size = 1


class _RocmAiterOps:
    """vllm._aiter_ops.rocm_aiter_ops with every AITER feature off (vLLM's default)."""

    @staticmethod
    def is_fused_moe_enabled() -> bool:
        return False

    @staticmethod
    def is_fusion_moe_shared_experts_enabled() -> bool:
        return False

    @staticmethod
    def is_enabled() -> bool:
        return False


class _Envs:
    """vllm.envs: the variables read on the executed paths, at their defaults."""

    VLLM_DCP_Q_REPLICATE = False
    VLLM_BATCH_INVARIANT = False
    VLLM_MLA_DISABLE = False
    VLLM_USE_DEEP_GEMM_E8M0 = True

    @staticmethod
    def is_set(name: str) -> bool:
        return False


def _identity_decorator(*a: Any, **k: Any) -> Any:
    """@support_torch_compile and friends, bare or called with arguments."""
    if len(a) == 1 and not k and (inspect.isclass(a[0]) or callable(a[0])):
        return a[0]
    return lambda c: c


def tracing_default_weight_loader(vllm_default: Callable[..., None]) -> Callable[..., None]:
    def default_weight_loader(param: torch.Tensor, loaded_weight: torch.Tensor) -> None:
        TRACE.record(loaded_weight, getattr(param, "_oracle_qualname", "?"))
        vllm_default(param, loaded_weight)

    return default_weight_loader


class ModelFiles:
    """Builds vLLM's model classes, file by file, on top of ArchCode."""

    def __init__(self, code: ArchCode) -> None:
        self.code = code
        self.tree = code.tree
        t = self.tree
        ns_mu = code.ns[vo.F_MUTILS]
        ns_wu = code.ns[vo.F_WUTILS]
        self.default_weight_loader = tracing_default_weight_loader(ns_wu["default_weight_loader"])
        ns_mu["default_weight_loader"] = self.default_weight_loader
        # make_layers (models/utils.py) with one pipeline stage and no offloading
        ns_mu.update(
            LayerFn=_annotation("LayerFn"),
            IntermediateTensors=_annotation("IntermediateTensors"),
        )
        exec_defs(t, vo.F_MUTILS, ["make_layers", "make_empty_intermediate_tensors_factory"], ns_mu)
        self.stub_modules = {
            "vllm.distributed.parallel_state": {"get_pp_group": lambda: _PPGroup()},
            "vllm.distributed.utils": {"get_pp_indices": lambda n, rank, world: (0, n)},
            "vllm.model_executor.offloader": {
                "get_offloader": lambda: SimpleNamespace(wrap_modules=lambda it: list(it))
            },
            "vllm.platforms": {"current_platform": code.platform},
            "vllm.compilation.backends": {"set_model_tag": lambda tag: contextlib.nullcontext()},
        }
        A = code.AttentionLayer
        self.attention_classes = {
            name: type(name, (A,), {"_vllm_class": name})
            for name in (
                "EncoderOnlyAttention",
                "RSWAAttention",
                "ChunkedLocalAttention",
                "StaticSinkAttention",
                "PrefillPrefixLMAttention",
            )
        }
        self.common: dict[str, Any] = {
            # layers
            "Attention": A,
            **self.attention_classes,
            "MLAAttention": code.MLAAttention,
            "MultiHeadLatentAttentionWrapper": code.MultiHeadLatentAttentionWrapper,
            "MLAModules": code.MLAModules,
            "AttentionType": SimpleNamespace(
                DECODER="decoder",
                ENCODER="encoder",
                ENCODER_ONLY="encoder_only",
                ENCODER_DECODER="encoder_decoder",
            ),
            "ColumnParallelLinear": Linear,
            "DCPGroupColumnParallelLinear": Linear,
            "MergedColumnParallelLinear": Linear,
            "QKVParallelLinear": Linear,
            "ReplicatedLinear": Linear,
            "RowParallelLinear": Linear,
            "GateLinear": Linear,
            "RMSNorm": Norm,
            "LayerNorm": Norm,
            "GemmaRMSNorm": Norm,
            "VocabParallelEmbedding": Embedding,
            "ParallelLMHead": LMHead,
            "LogitsProcessor": LogitsProcessor,
            "get_rope": get_rope,
            "SiluAndMul": Rotary,
            "PPMissingLayer": ns_mu["PPMissingLayer"],
            "PluggableLayer": PluggableLayer,
            # models/utils.py, weight_utils.py (verbatim)
            "AutoWeightsLoader": code.base.AutoWeightsLoader,
            "WeightsMapper": code.base.WeightsMapper,
            "maybe_prefix": ns_mu["maybe_prefix"],
            "make_layers": ns_mu["make_layers"],
            "make_empty_intermediate_tensors_factory": ns_mu[
                "make_empty_intermediate_tensors_factory"
            ],
            "is_pp_missing_parameter": ns_mu["is_pp_missing_parameter"],
            "get_pp_missing_layer_names": ns_mu["get_pp_missing_layer_names"],
            "get_spec_layer_idx_from_weight_name": ns_mu["get_spec_layer_idx_from_weight_name"],
            "extract_layer_index": ns_mu["extract_layer_index"],
            "default_weight_loader": self.default_weight_loader,
            "maybe_remap_kv_scale_name": code.maybe_remap_kv_scale_name,
            "fused_moe_make_expert_params_mapping": code.fused_moe_make_expert_params_mapping,
            # distributed: one rank
            "get_pp_group": lambda: _PPGroup(),
            "get_tensor_model_parallel_world_size": lambda: 1,
            "get_tensor_model_parallel_rank": lambda: 0,
            "envs": _Envs,
            "rocm_aiter_ops": _RocmAiterOps,
            "support_torch_compile": _identity_decorator,
            # annotation-only names
            **{
                n: _annotation(n)
                for n in (
                    "VllmConfig",
                    "CacheConfig",
                    "QuantizationConfig",
                    "ModelConfig",
                    "ParallelConfig",
                    "PreTrainedConfig",
                    "IntermediateTensors",
                    "SparseMLAIndexGroupBuilder",
                    "AttentionBackend",
                )
            },
        }

    def ns(self, **extra: Any) -> dict[str, Any]:
        return self.code._ns(**{**self.common, **extra})

    def subclass_pass(self, rel: str, name: str, base: type) -> type:
        """`class Name(Base): pass` of vLLM, checked to be exactly that."""
        node = self.tree.node(rel, name)
        assert isinstance(node, ast.ClassDef)
        if not all(
            isinstance(s, ast.Pass)
            or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
            for s in node.body
        ):
            raise LookupError(f"vLLM source changed: {rel}:{name} is not a bare subclass")
        return type(name, (base,), {"__module__": "vllm_arch_oracle_exec"})


class _CausalLMShell(nn.Module):
    """Base of the executed *ForCausalLM classes in place of their mixins (SupportsPP,
    MixtureOfExperts, SupportsLoRA, ...): interfaces, no state. `set_moe_parameters` /
    `extract_moe_parameters` (expert-parallel bookkeeping over the MoE layers) are no-ops
    here."""

    def set_moe_parameters(self) -> None:
        pass

    def extract_moe_parameters(self, example_moe: Any) -> None:
        pass


class _SupportsQuantShell(_CausalLMShell):
    """SupportsQuant.__new__ (models/interfaces.py) attaches vllm_config.quant_config to the
    instance before __init__ runs."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = super().__new__(cls)
        quant_config = kwargs["vllm_config"].quant_config
        nn.Module.__init__(instance)
        instance.quant_config = quant_config
        return instance


def build_deepseek_v2(mf: ModelFiles) -> dict[str, type]:
    t = mf.tree
    rel = F_DSV2
    ns = mf.ns(
        DeepseekV2Config=_annotation("DeepseekV2Config"),
        DeepseekV3Config=_annotation("DeepseekV3Config"),
        DeepSeekV2FusedQkvAProjLinear=Linear,
        DeepseekV2MLP=MLPBlock,
        DeepseekV2MoE=MoEBlock,
        Indexer=_unreached("deepseek_v2.Indexer (DeepSeek-V3.2 off CUDA/ROCm)"),
        yarn_get_mscale=_unreached("yarn_get_mscale (deepseek_yarn rope)"),
        is_model_fused_shared_expert_compatible=lambda *a, **k: False,
        get_sparse_mla_index_group_max_rows=_unreached("get_sparse_mla_index_group_max_rows"),
        GroupShape=_unreached("GroupShape"),
        scaled_dequantize=_unreached("scaled_dequantize"),
        _CausalLMShell=_CausalLMShell,
    )
    exec_defs(t, rel, ["_try_load_fp8_indexer_wk"], ns)
    for name in (
        "DeepseekAttention",
        "DeepseekV2Attention",
        "DeepseekV2MLAAttention",
        "DeepseekV2DecoderLayer",
    ):
        make_class_from(t, rel, name, ["nn.Module"], [f"{name}.__init__"], ns)
    model = make_class_from(
        t,
        rel,
        "DeepseekV2Model",
        ["nn.Module"],
        [
            "DeepseekV2Model.fall_back_to_pt_during_load",
            "DeepseekV2Model.__init__",
            "DeepseekV2Model.load_weights",
        ],
        ns,
    )
    causal = make_class_from(
        t,
        rel,
        "DeepseekV2ForCausalLM",
        ["_CausalLMShell"],
        [
            "DeepseekV2ForCausalLM.packed_modules_mapping",
            "DeepseekV2ForCausalLM.model_cls",
            "DeepseekV2ForCausalLM.__init__",
            "DeepseekV2ForCausalLM.load_weights",
        ],
        ns,
    )
    mf.deepseek_ns = ns
    out = {"DeepseekV2ForCausalLM": causal, "_DeepseekV2Model": model}
    for name in ("DeepseekForCausalLM", "DeepseekV3ForCausalLM", "GlmMoeDsaForCausalLM"):
        out[name] = mf.subclass_pass(rel, name, causal)
    return out


def build_deepseek_v32(mf: ModelFiles, dsv2: Mapping[str, type], *, amd: bool) -> type:
    """vllm/models/deepseek_v32: the CUDA (nvidia/) or ROCm (amd/) package the registry
    entry resolves to on that platform (models/deepseek_v32/__init__.py)."""
    t = mf.tree
    # the package picks nvidia/ on CUDA, amd/ on ROCm (the oracle's ocp / fnuz platforms)
    dispatch = ast.unparse(t.tree(F_DSV32_INIT))
    for needed in (
        "is_cuda()",
        "from .nvidia.model import DeepseekV32ForCausalLM",
        "is_rocm()",
        "from .amd.model import DeepseekV32ForCausalLM",
    ):
        if needed not in dispatch:
            raise LookupError(f"vLLM source changed: {F_DSV32_INIT} lacks {needed!r}")
    is_quantized_kv_cache = mf.code.ns[vo.F_KVI]["is_quantized_kv_cache"]
    ns_attn = mf.ns(
        DeepseekV2Config=_annotation("DeepseekV2Config"),
        DeepseekV3Config=_annotation("DeepseekV3Config"),
        DeepSeekV2FusedQkvAProjLinear=Linear,
        DeepseekV32Indexer=_IndexerLeaf,
        is_quantized_kv_cache=is_quantized_kv_cache,
        yarn_get_mscale=_unreached("yarn_get_mscale (deepseek_yarn rope)"),
    )
    attn = make_class_from(
        t,
        F_DSV32_ATTN,
        "DeepseekV32Attention",
        ["MLAAttention"],
        [
            "DeepseekV32Attention.indexer_cls",
            "DeepseekV32Attention.supports_pcp_dcp",
            "DeepseekV32Attention.__init__",
        ],
        ns_attn,
    )
    common: dict[str, Any] = {
        "DeepseekV2MLP": MLPBlock,
        "DeepseekV2MoE": MoEBlock,
        "DeepseekV2ForCausalLM": dsv2["DeepseekV2ForCausalLM"],
        "_try_load_fp8_indexer_wk": mf.deepseek_ns["_try_load_fp8_indexer_wk"],
    }
    if not amd:
        ns = mf.ns(
            DeepseekV32Attention=attn,
            make_input_embedding=lambda *a, **k: Embedding(),
            has_full_vocab_on_rank=lambda *a, **k: True,
            get_sparse_mla_index_group_max_rows=lambda *a, **k: 1,
            SparseMLAIndexGroupBuilder=_SparseIndexGroupBuilder,
            enable_glm52_low_latency_gemm=lambda *a, **k: None,
            **common,
        )
        rel = F_DSV32_NV
        causal_members = ["DeepseekV32ForCausalLM.model_cls", "DeepseekV32ForCausalLM.__init__"]
    else:
        ns_rocm = mf.ns(
            DeepseekV32Attention=attn,
            DeepseekV32ROCmIndexer=_IndexerLeaf,
            ROCMAiterMLASparseBackend=_Backend("ROCM_AITER_MLA_SPARSE"),
            SparseAttnIndexer=_SparseIndexGroupBuilder,
            is_quantized_kv_cache=is_quantized_kv_cache,
        )
        rocm_attn = make_class_from(
            t,
            F_DSV32_ROCM,
            "DeepseekV32MLAAttention",
            ["DeepseekV32Attention"],
            ["DeepseekV32MLAAttention.indexer_cls", "DeepseekV32MLAAttention.__init__"],
            ns_rocm,
        )
        ns = mf.ns(
            DeepseekV32MLAAttention=rocm_attn,
            is_model_fused_shared_expert_compatible=lambda *a, **k: False,
            **common,
        )
        rel = F_DSV32_AMD
        causal_members = ["DeepseekV32ForCausalLM.model_cls"]
    make_class_from(
        t, rel, "DeepseekV32DecoderLayer", ["nn.Module"], ["DeepseekV32DecoderLayer.__init__"], ns
    )
    make_class_from(
        t,
        rel,
        "DeepseekV32Model",
        ["nn.Module"],
        [
            "DeepseekV32Model.fall_back_to_pt_during_load",
            "DeepseekV32Model.__init__",
            "DeepseekV32Model.load_weights",
        ],
        ns,
    )
    return make_class_from(
        t, rel, "DeepseekV32ForCausalLM", ["DeepseekV2ForCausalLM"], causal_members, ns
    )


class _SparseIndexGroupBuilder:
    """v1/attention/backends/mla/index_group.py: runtime top-k bookkeeping."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


class _IndexerLeaf(nn.Module):
    """DeepSeek-V3.2's lightning indexer: its own weights (wq_b, wk_weights_proj, k_norm)
    and its own K cache, no KV scale of the main latent cache."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.wq_b = Linear()
        self.wk_weights_proj = Linear()
        self.k_norm = Norm()
        # read by the ROCm attention to build its SparseAttnIndexer op (runtime only)
        self.k_cache = None
        self.quant_block_size = self.scale_fmt = self.topk_tokens = None
        self.head_dim = self.max_model_len = self.max_total_seq_len = None


# ======================================================================================
# Running one case
# ======================================================================================

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_TEXT_SUBCONFIGS = ("text_config", "vision_config", "audio_config")


def _config_namespace(d: Mapping[str, Any]) -> SimpleNamespace:
    """config.json as vLLM's model code sees it (attribute access; sub-configs of
    multimodal models as objects too; dict-valued fields such as rope_parameters or
    quantization_config stay dicts, as in transformers)."""
    out = SimpleNamespace(**copy.deepcopy(dict(d)))
    for key in _TEXT_SUBCONFIGS:
        sub = getattr(out, key, None)
        if isinstance(sub, dict):
            setattr(out, key, _config_namespace(sub))
    return out


# Properties of transformers' config classes that vLLM's model code reads and config.json
# does not hold (transformers 5.x, models/<type>/configuration_<type>.py); the oracle adds
# them the way transformers computes them.
def _jamba_properties(cfg: SimpleNamespace) -> None:
    # JambaConfig.layers_block_type / layers_num_experts
    n = cfg.num_hidden_layers
    cfg.layers_block_type = [
        "attention" if i % cfg.attn_layer_period == cfg.attn_layer_offset else "mamba"
        for i in range(n)
    ]
    cfg.layers_num_experts = [
        cfg.num_experts if i % cfg.expert_layer_period == cfg.expert_layer_offset else 1
        for i in range(n)
    ]


_CONFIG_PROPERTIES: dict[str, Callable[[SimpleNamespace], None]] = {
    "jamba": _jamba_properties,
}


def _add_config_properties(cfg: SimpleNamespace) -> SimpleNamespace:
    for c in (cfg, getattr(cfg, "text_config", None)):
        if c is not None and getattr(c, "model_type", None) in _CONFIG_PROPERTIES:
            _CONFIG_PROPERTIES[c.model_type](c)
    return cfg


def _text_config(cfg: SimpleNamespace) -> SimpleNamespace:
    # transformers' PreTrainedConfig.get_text_config(): the text sub-config when present
    sub = getattr(cfg, "text_config", None)
    return sub if sub is not None else cfg


class KVHolder(typing.NamedTuple):
    path: str  # module path (where the k_scale parameters live)
    module: nn.Module


class ArchOracle:
    def __init__(self, vllm_src: str) -> None:
        self.tree = VllmTree(vllm_src)
        self.code = ArchCode(self.tree)
        self.models = ModelFiles(self.code)
        self.arch_cases = _load_sibling("kvscale_parity_arch_cases", "arch_cases.py")
        self.cases_mod = _load_sibling("kvscale_parity_cases", "cases.py")
        self._classes: dict[tuple[str, str], type] = {}
        self._install_tracing()

    # -- tracing: renames and maybe_remap_kv_scale_name results -------------------------
    def _install_tracing(self) -> None:
        self.renames: list[list[Any]] = []
        WM = self.code.base.WeightsMapper
        orig_apply = WM.apply
        renames = self.renames

        def apply(self_: Any, weights: Iterable[tuple[str, torch.Tensor]]) -> Any:
            # vLLM's own apply, one tensor at a time (it keeps no state between tensors)
            for name, data in weights:
                produced = False
                for out_name, out_data in orig_apply(self_, [(name, data)]):
                    produced = True
                    if out_name != name:
                        renames.append(["mapper", name, out_name])
                    yield out_name, out_data
                if not produced:
                    renames.append(["mapper", name, None])

        WM.apply = apply
        remap = self.code.maybe_remap_kv_scale_name

        def maybe_remap_kv_scale_name(name: str, params_dict: dict[str, Any]) -> str | None:
            out = remap(name, params_dict)
            if out != name:
                renames.append(["maybe_remap_kv_scale_name", name, out])
            return out

        self.models.common["maybe_remap_kv_scale_name"] = maybe_remap_kv_scale_name

    # -- model classes --------------------------------------------------------------------
    def model_class(self, arch: str, platform: str) -> type:
        key = (arch, platform)
        if key not in self._classes:
            builder = ARCHITECTURES.get(arch)
            if builder is None:
                raise NotImplementedError(f"architecture {arch} is not modelled")
            self._classes[key] = builder(self, platform)
        return self._classes[key]

    def family(self, name: str, build: Callable[[], Any]) -> Any:
        key = ("__family__", name)
        if key not in self._classes:
            self._classes[key] = build()
        return self._classes[key]

    # -- engine start ---------------------------------------------------------------------
    def _configure(
        self, d: Path, options: Mapping[str, str], out: dict[str, Any]
    ) -> dict[str, Any]:
        code, base = self.code, self.code.base
        config_dict = json.loads((d / "config.json").read_text())
        hf_config = _add_config_properties(_config_namespace(config_dict))
        hf_config.__dict__.pop("quantization_config", None)

        def file_or_path_exists(model: str, name: str, revision: Any) -> bool:
            return (Path(model) / name).is_file()

        def get_hf_file_to_dict(name: str, model: str, revision: Any) -> Any:
            return json.loads((Path(model) / name).read_text())

        ns = {
            "__builtins__": __builtins__,
            "config_dict": config_dict,
            "config": hf_config,
            "model": str(d),
            "revision": None,
            "file_or_path_exists": file_or_path_exists,
            "get_hf_file_to_dict": get_hf_file_to_dict,
            "envs": SimpleNamespace(is_set=lambda name: True, VLLM_USE_DEEP_GEMM_E8M0=True),
            "os": __import__("os"),
            "logger": code.logger,
        }
        exec(base.code_read_quant_config, ns)
        conv = base.Convertor()
        quant_cfg = conv._normalize_quantization_config(hf_config)
        normalized = (quant_cfg or {}).get("quant_method") or None
        quant_method = (
            code.resolve_quant_method(quant_cfg, normalized) if normalized is not None else None
        )
        out["quant_method"] = quant_method
        resolved = base.resolve_kv_cache_dtype_string(
            options["kv_cache_dtype"], SimpleNamespace(hf_config=hf_config)
        )
        cache_config = SimpleNamespace(
            cache_dtype=resolved,
            kv_cache_dtype_skip_layers=None,
            enable_prefix_caching=False,
            sliding_window=None,
            block_size=16,
            mamba_cache_dtype="auto",
            mamba_ssm_cache_dtype="auto",
            kv_sharing_fast_prefill=False,
        )
        quant_config = None
        if quant_method is not None:
            if quant_method not in code.quant_classes:
                raise NotImplementedError(f"quant_method {quant_method!r} is not modelled")
            hf_quant_config = getattr(hf_config, "quantization_config", None)
            conv.hf_config = conv.hf_text_config = _text_config(hf_config)
            model_config = SimpleNamespace(
                model_arch_config=SimpleNamespace(
                    total_num_attention_heads=conv.get_total_num_attention_heads(),
                    total_num_kv_heads=conv.get_total_num_kv_heads(),
                )
            )
            exec(
                base.code_heads_piping,
                {"__builtins__": __builtins__},
                {"hf_quant_config": hf_quant_config, "model_config": model_config},
            )
            cfg = hf_quant_config
            if quant_method.startswith("modelopt"):  # make_checkpoint_config (ModelOpt)
                cfg = {**cfg, "_online_quantization_args": None}
            quant_config = code.quant_classes[quant_method].from_config(cfg)
        text = _text_config(hf_config)
        use_mla = code.use_mla(text, mla_disable=options.get("mla_disable") == "1")
        out["use_mla"] = use_mla
        hook = code.config_hook(hf_config.architectures[0])
        if hook is not None:
            out["config_hook"] = hook.__name__
            hook.verify_and_update_config(
                SimpleNamespace(
                    model_config=SimpleNamespace(hf_config=hf_config, hf_text_config=text),
                    cache_config=cache_config,
                    speculative_config=None,
                    parallel_config=SimpleNamespace(set_dcp_defaults=lambda **k: None),
                )
            )
        return {
            "hf_config": hf_config,
            "quant_config": quant_config,
            "cache_config": cache_config,
            "use_mla": use_mla,
        }

    def _vllm_config(self, setup: Mapping[str, Any], model_dtype: torch.dtype) -> Any:
        hf_config = setup["hf_config"]
        vc = SimpleNamespace(
            model_config=SimpleNamespace(
                hf_config=hf_config,
                hf_text_config=_text_config(hf_config),
                use_mla=setup["use_mla"],
                dtype=model_dtype,
                is_mm_prefix_lm=False,
                max_model_len=256,
                multimodal_config=None,
            ),
            cache_config=copy.copy(setup["cache_config"]),
            quant_config=setup["quant_config"],
            parallel_config=SimpleNamespace(
                use_sequence_parallel_moe=False,
                pipeline_parallel_size=1,
                tensor_parallel_size=1,
                dcp_q_replicate=False,
                decode_context_parallel_size=1,
                prefill_context_parallel_size=1,
                pcp_shard_decode_requests=False,
                enable_expert_parallel=False,
                enable_eplb=False,
                eplb_config=SimpleNamespace(num_redundant_experts=0),
            ),
            scheduler_config=SimpleNamespace(max_num_batched_tokens=16, max_num_seqs=4),
            speculative_config=None,
            lora_config=None,
            compilation_config=SimpleNamespace(static_forward_context={}),
        )
        return vc

    @contextlib.contextmanager
    def _engine_context(self, model_dtype: torch.dtype) -> Iterator[None]:
        old = torch.get_default_dtype()
        torch.set_default_dtype(model_dtype)
        try:
            with vo._stub_modules({**self.code.base.stub_modules, **self.models.stub_modules}):
                yield
        finally:
            torch.set_default_dtype(old)

    def kv_holders(self, model: nn.Module) -> list[KVHolder]:
        kinds = (self.code.base.Attention, self.code.MLAAttention)
        return [KVHolder(n, m) for n, m in model.named_modules() if isinstance(m, kinds)]

    def run_case(self, case: Mapping[str, Any], workdir: Path) -> dict[str, Any]:
        code = self.code
        d = self.cases_mod.write_case(case, workdir / case["name"])
        options = case["options"]
        arch = case["config"]["architectures"][0]
        code.platform.fnuz = options["platform"] == "fnuz"
        code.device_family = int(options.get("device_family", "90"))
        _MLAShellBase.backend_name = options.get("mla_backend", "FLASHMLA")
        _MLAShellBase.sparse_backend_name = options.get("mla_sparse_backend", "FLASHMLA_SPARSE")
        model_dtype = _DTYPES[options["model_dtype"]]
        code.logger.take()
        code.logger.take_debug()  # type: ignore[attr-defined]
        out: dict[str, Any] = {
            "group": case["group"],
            "description": case["description"],
            "options": dict(options),
            "architecture": arch,
            "quant_method": None,
            "use_mla": None,
            "kv_cache_dtype": options["kv_cache_dtype"],
            "engine_error": None,
            "engine_warnings": [],
            "layers": [],
        }

        def engine_error(msg: str) -> dict[str, Any]:
            out["engine_error"] = msg
            out["engine_warnings"] = code.logger.take()
            return out

        with self._engine_context(model_dtype):
            try:
                setup = self._configure(d, options, out)
            except OracleGap:
                raise
            except Exception as e:
                return engine_error(vo.fmt_exc(e))
            cls = self.model_class(arch, options["platform"])

            def fresh_model() -> tuple[nn.Module, Any]:
                vc = self._vllm_config(setup, model_dtype)
                model = cls(vllm_config=vc, prefix="")
                _stamp_qualnames(model)
                return model, vc

            try:
                model, vc = fresh_model()
            except (OracleGap, AttributeError, NameError, KeyError):
                raise  # a member, name or config field the oracle did not provide
            except Exception as e:
                return engine_error(vo.fmt_exc(e))
            out["kv_cache_dtype"] = vc.cache_config.cache_dtype
            out["engine_warnings"] = code.logger.take()
            code.logger.take_debug()  # type: ignore[attr-defined]
            files = self.code.base.ns_wu["filter_duplicate_safetensors_files"](
                [str(p) for p in d.glob("*.safetensors")], str(d), "model.safetensors.index.json"
            )
            holders = self.kv_holders(model)
            if not holders:
                out["layers"] = []
            for h in holders:
                out["layers"].append(self._run_layer(fresh_model, files, h, model_dtype))
        return out

    def _run_layer(
        self,
        fresh_model: Callable[[], tuple[nn.Module, Any]],
        files: list[str],
        holder: KVHolder,
        model_dtype: torch.dtype,
    ) -> dict[str, Any]:
        code = self.code
        model, _vc = fresh_model()
        layer = dict(model.named_modules())[holder.path]
        idx = vo._layer_index(holder.path)
        rec: dict[str, Any] = {
            "name": layer.layer_name,
            "module": holder.path,
            "holder": "MLAAttention" if isinstance(layer, code.MLAAttention) else "Attention",
            "kv_method": None,
            "kv_cache_dtype": layer.kv_cache_dtype,
            "error": None,
            "k_scale": None,
            "v_scale": None,
            "q_scale": None,
            "prob_scale": None,
        }
        qm = getattr(layer, "quant_method", None)
        if isinstance(qm, code.base.QuantizeMethodBase):
            rec["kv_method"] = type(qm).__name__
        for extra in ("sliding_window", "kv_sharing_target_layer_name", "has_sink"):
            v = getattr(layer, extra, None)
            if v not in (None, False):
                rec[extra] = v
        code.logger.take()
        code.logger.take_debug()  # type: ignore[attr-defined]
        self.renames.clear()
        TRACE.hits.clear()
        kv_params = {
            f"{holder.path}.{n}": p
            for n, p in layer.named_parameters(recurse=False)
            if n in ("k_scale", "v_scale", "q_scale", "prob_scale")
        }
        for qual, p in kv_params.items():
            # a parameter without weight_loader keeps none (loaders then fall back to
            # default_weight_loader, traced, or fail as in vLLM)
            original = getattr(p, "weight_loader", None)
            if original is None:
                continue

            def traced(
                param: Any, w: torch.Tensor, *a: Any, _q: str = qual, _o: Any = original, **k: Any
            ) -> Any:
                TRACE.record(w, _q)
                return _o(param, w, *a, **k)

            p.weight_loader = traced  # type: ignore[attr-defined]
        fed: list[tuple[str, torch.Tensor]] = []
        iterator = code.base.ns_wu["safetensors_weights_iterator"]

        def weights() -> Iterator[tuple[str, torch.Tensor]]:
            for name, tensor in iterator(files, False):
                ti = vo._layer_index(name)
                if ti is None or ti == idx:
                    fed.append((name, tensor))
                    yield name, tensor

        try:
            model.load_weights(weights())
            # model_loader.utils.process_weights_after_loading for this layer: its quant
            # method first, then the attention layer's own hook (the placeholder leaves
            # have no quant method; the other attention layers are not reported here).
            if isinstance(qm, code.base.QuantizeMethodBase):
                qm.process_weights_after_loading(layer)
            layer.process_weights_after_loading(model_dtype)
        except (OracleGap, NameError):
            raise
        except AttributeError as e:
            # an attribute missing on one of the oracle's placeholder layers is a gap in
            # the harness, not a behaviour of vLLM
            if any(f"'{leaf}' object" in str(e) for leaf in _LEAF_NAMES):
                raise OracleGap(f"{holder.path}: {e}") from e
            rec["error"] = vo.fmt_exc(e)
        except Exception as e:
            rec["error"] = vo.fmt_exc(e)
        if rec["error"] is None:
            for k in ("k_scale", "v_scale", "q_scale", "prob_scale"):
                rec[k] = vo.enc_tensor(getattr(layer, "_" + k))
            rec["host"] = {
                k: vo.enc_host(getattr(layer, "_" + k))
                for k in (
                    "k_scale_float",
                    "v_scale_float",
                    "q_scale_float",
                    "prob_scale_float",
                    "k_scale_cpu",
                    "v_scale_cpu",
                )
            }
        rec["tensors"] = [
            {
                "name": name,
                "loaded_into": TRACE.hits.get(id(t), []),
            }
            for name, t in fed
            if vo._layer_index(name) == idx
        ]
        rec["renames"] = [list(r) for r in self.renames]
        rec["warnings"] = code.logger.take()
        rec["debug"] = [
            line
            for line in code.logger.take_debug()  # type: ignore[attr-defined]
            if line.startswith(("Ignoring", "Skipping"))
        ]
        return rec

    def run(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        return vo.run_catalogue(
            SCHEMA,
            self.tree,
            self.arch_cases.CASES,
            names,
            self.run_case,
            device="cpu",
            generator="tests/parity/vllm_arch_oracle.py",
            tmp_prefix="kvscale-arch-oracle-",
        )


def build_classes(
    mf: ModelFiles,
    rel: str,
    specs: Sequence[tuple[str, Sequence[str], Sequence[str]]],
    ns: dict[str, Any],
) -> dict[str, type]:
    """Build vLLM classes of one model file in order: (name, bases, members); a member
    without a dot is `Name.member`."""
    out: dict[str, type] = {}
    for name, bases, members in specs:
        full = [m if "." in m else f"{name}.{m}" for m in members]
        # plus every class-level constant of the class (vLLM reads them as self.<name>)
        node = mf.tree.node(rel, name)
        assert isinstance(node, ast.ClassDef)
        for stmt in node.body:
            target = (
                stmt.targets[0]
                if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                else stmt.target
                if isinstance(stmt, ast.AnnAssign) and stmt.value is not None
                else None
            )
            if isinstance(target, ast.Name) and f"{name}.{target.id}" not in full:
                full.insert(0, f"{name}.{target.id}")
        out[name] = make_class_from(mf.tree, rel, name, bases, full, ns)
    return out


class _MultiModalShell(_SupportsQuantShell):
    """SupportsMultiModal's context managers that tag tower / language-model children
    (only --mm-encoder-only and --limit-mm-per-prompt act on the tags)."""

    @contextlib.contextmanager
    def _mark_tower_model(self, *a: Any, **k: Any) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def _mark_language_model(self, *a: Any, **k: Any) -> Iterator[None]:
        yield

    @contextlib.contextmanager
    def _mark_composite_model(self, *a: Any, **k: Any) -> Iterator[None]:
        yield


class Tower(nn.Module):
    """A vision / audio encoder or projector: placeholder weights, no KV cache."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.proj = Linear()


def init_vllm_registered_model_for(o: ArchOracle) -> Callable[..., nn.Module]:
    """models/utils.py:init_vllm_registered_model: the inner model is the registered
    architecture (`architectures=` or the sub-config's own), built with the sub-config as
    hf_config (vllm_config.with_hf_config)."""

    def init_vllm_registered_model(
        vllm_config: Any,
        *,
        prefix: str = "",
        hf_config: Any = None,
        architectures: list[str] | None = None,
    ) -> nn.Module:
        if hf_config is None:
            hf_config = vllm_config.model_config.hf_config
        names = architectures or getattr(hf_config, "architectures", None)
        if not names:
            # VllmConfig.with_hf_config: transformers' causal-LM class for the
            # sub-config's model_type (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)
            from transformers.models.auto.modeling_auto import (
                MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
            )

            names = [MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[hf_config.model_type]]
        arch = names[0]
        inner = copy.copy(vllm_config)
        inner.model_config = copy.copy(vllm_config.model_config)
        inner.model_config.hf_config = hf_config
        inner.model_config.hf_text_config = _text_config(hf_config)
        platform = "fnuz" if o.code.platform.fnuz else "ocp"
        return o.model_class(arch, platform)(vllm_config=inner, prefix=prefix)

    return init_vllm_registered_model


def build_glm4_moe_lite(o: ArchOracle) -> type:
    mf = o.models
    dsv2 = _dsv2(o)
    ds = mf.deepseek_ns
    ns = mf.ns(
        DeepseekV2MLAAttention=ds["DeepseekV2MLAAttention"],
        DeepseekV2Attention=ds["DeepseekV2Attention"],
        Glm4MoeLiteMLP=MLPBlock,
        Glm4MoeLite=MoEBlock,
        Glm4MoeLiteConfig=_annotation("Glm4MoeLiteConfig"),
        is_model_fused_shared_expert_compatible=lambda *a, **k: False,
        get_sparse_mla_index_group_max_rows=_unreached("get_sparse_mla_index_group_max_rows"),
        _CausalLMShell=_CausalLMShell,
    )
    del dsv2
    ns["Glm4MoeLiteMLAAttention"] = mf.subclass_pass(
        F_GLM4_LITE, "Glm4MoeLiteMLAAttention", ds["DeepseekV2MLAAttention"]
    )
    ns["Glm4MoeLiteAttention"] = mf.subclass_pass(
        F_GLM4_LITE, "Glm4MoeLiteAttention", ds["DeepseekV2Attention"]
    )
    got = build_classes(
        mf,
        F_GLM4_LITE,
        [
            ("Glm4MoeLiteDecoderLayer", ["nn.Module"], ["__init__"]),
            (
                "Glm4MoeLiteModel",
                ["nn.Module"],
                ["__init__", "make_empty_intermediate_tensors", "load_weights"],
            ),
            (
                "Glm4MoeLiteForCausalLM",
                ["_CausalLMShell"],
                ["packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )
    return got["Glm4MoeLiteForCausalLM"]


def build_mistral_large_3(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(DeepseekV3ForCausalLM=_dsv2(o)["DeepseekV3ForCausalLM"])
    return build_classes(
        mf,
        F_MISTRAL_L3,
        [
            (
                "MistralLarge3ForCausalLM",
                ["DeepseekV3ForCausalLM"],
                ["hf_to_vllm_mapper", "load_weights"],
            ),
        ],
        ns,
    )["MistralLarge3ForCausalLM"]


def build_kimi_k25(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(
        Kimi_K25Config=_annotation("Kimi_K25Config"),
        MoonViT3dPretrainedModel=Tower,
        KimiK25MultiModalProjector=Tower,
        build_mm_input_norm=lambda *a, **k: None,
        is_vit_use_data_parallel=lambda *a, **k: False,
        init_vllm_registered_model=init_vllm_registered_model_for(o),
        compressed_tensors=SimpleNamespace(CompressedTensorsConfig=o.code.base.CTConfig),
        _MultiModalShell=_MultiModalShell,
    )
    o.code.platform.current_device = lambda: "cpu"  # type: ignore[attr-defined]
    return build_classes(
        mf,
        F_KIMI_K25,
        [
            (
                "KimiK25ForConditionalGeneration",
                ["_MultiModalShell"],
                ["hf_to_vllm_mapper", "__init__", "_maybe_ignore_quant_config", "load_weights"],
            ),
        ],
        ns,
    )["KimiK25ForConditionalGeneration"]


class _IdentityLeaf(nn.Module):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


class _KDALeaf(nn.Module):
    """BailingMoeV3KimiDeltaAttention: a linear-attention (Mamba-like) mixer, no KV cache
    scales."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.q_proj = Linear()
        self.k_proj = Linear()
        self.v_proj = Linear()
        self.o_proj = Linear()


def build_bailing_moe_v3(o: ArchOracle) -> type:
    mf = o.models
    t = mf.tree
    rel = F_BAILING_V3
    ns = mf.ns(
        Fp8Config=o.code.base.quant_classes["fp8"],
        TypeGuard=typing.TypeGuard,
        is_layer_skipped=o.code.ns[vo.F_MODELOPT]["is_layer_skipped"],
        get_current_vllm_config_or_none=lambda: None,
        BailingMoeV3MLP=MLPBlock,
        BailingMoeV3MoE=MoEBlock,
        BailingMoeV3KimiDeltaAttention=_KDALeaf,
        _build_mla_rotary_embedding=lambda *a, **k: Rotary(),
        _get_block_fp8_mlp_padded_intermediate_size=_unreached(
            "_get_block_fp8_mlp_padded_intermediate_size (block-FP8 shared experts)"
        ),
        _pad_block_fp8_mlp_checkpoint_tensor=_unreached("_pad_block_fp8_mlp_checkpoint_tensor"),
        _CausalLMShell=_CausalLMShell,
    )
    exec_defs(
        t,
        rel,
        [
            "_is_kda_layer",
            "_is_block_fp8_config",
            "_configure_ling_fp8_quant_config",
            "_LING_MXFP4_WEIGHTS_MAPPER",
            "_maybe_remap_ling_mxfp4_weight_names",
            "_is_fp8_module_excluded",
            "_maybe_pad_block_fp8_shared_expert_checkpoint_tensor",
            "_IdentityProjection",
        ],
        ns,
    )
    return build_classes(
        mf,
        rel,
        [
            ("BailingMoeV3MLAAttention", ["nn.Module"], ["__init__"]),
            ("BailingMoeV3DecoderLayer", ["nn.Module"], ["__init__"]),
            ("BailingMoeV3Model", ["nn.Module"], ["__init__", "get_expert_mapping"]),
            (
                "BailingMoeV3ForCausalLM",
                ["_CausalLMShell"],
                [
                    "hf_to_vllm_mapper",
                    "packed_modules_mapping",
                    "__init__",
                    "get_expert_mapping",
                    "load_weights",
                ],
            ),
        ],
        ns,
    )["BailingMoeV3ForCausalLM"]


def build_longcat_flash(o: ArchOracle) -> type:
    mf = o.models
    rel = "model_executor/models/longcat_flash.py"
    ns = mf.ns(
        DeepseekV2MLAAttention=(_dsv2(o), mf.deepseek_ns["DeepseekV2MLAAttention"])[1],
        FlashMLP=MLPBlock,
        LongcatMoe=MoEBlock,
        LongcatFlashConfig=_annotation("LongcatFlashConfig"),
        _CausalLMShell=_CausalLMShell,
        _scaled_weight_loader=_unreached("_scaled_weight_loader (mla_scale_*_lora)"),
        set_weight_attrs=_unreached("set_weight_attrs (mla_scale_*_lora)"),
    )
    exec_defs(mf.tree, rel, ["scale_mla_lora_norms_on_load"], ns)
    return build_classes(
        mf,
        rel,
        [
            ("FlashDecoderLayer", ["nn.Module"], ["__init__"]),
            ("FlashModel", ["nn.Module"], ["__init__", "get_expert_mapping", "load_weights"]),
            (
                "LongcatFlashForCausalLM",
                ["_CausalLMShell"],
                ["packed_modules_mapping", "__init__", "get_expert_mapping", "load_weights"],
            ),
        ],
        ns,
    )["LongcatFlashForCausalLM"]


def build_sarvam_mla(o: ArchOracle) -> type:
    mf = o.models
    rel = "model_executor/models/sarvam.py"
    ns = mf.ns(
        SarvamMLAMLP=MLPBlock,
        SarvamMLAMoE=MoEBlock,
        yarn_get_mscale=_unreached("yarn_get_mscale (deepseek_yarn rope)"),
        spec_decode_needs_target_embed=lambda *a, **k: False,
        _CausalLMShell=_CausalLMShell,
    )
    exec_defs(
        mf.tree, rel, ["_is_gate_expert_bias_name", "_zero_mean_tensor", "_normalized_weights"], ns
    )
    return build_classes(
        mf,
        rel,
        [
            ("SarvamMLAAttention", ["nn.Module"], ["__init__"]),
            ("SarvamMLABlock", ["nn.Module"], ["__init__"]),
            ("SarvamMLAModel", ["nn.Module"], ["hf_to_vllm_mapper", "__init__", "load_weights"]),
            (
                "SarvamMLAForCausalLM",
                ["_CausalLMShell"],
                ["packed_modules_mapping", "_remap_config", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["SarvamMLAForCausalLM"]


def build_minicpm3(o: ArchOracle) -> type:
    """MiniCPM3: an MLA-shaped config (kv_lora_rank, q_lora_rank, qk_rope_head_dim) served
    with a plain Attention over the expanded per-head K/V (minicpm3.py), not MLAAttention."""
    mf = o.models
    ns = mf.ns(MiniCPMMLP=MLPBlock, MiniCPMMoE=MoEBlock)
    base = build_classes(
        mf,
        F_MINICPM,
        [
            ("MiniCPMDecoderLayer", ["nn.Module"], ["__init__", "_init_ffn_block"]),
            ("MiniCPMModel", ["nn.Module"], ["__init__", "load_weights"]),
            ("MiniCPMForCausalLM", ["_CausalLMShell"], ["__init__", "load_weights"]),
        ],
        {**ns, "_CausalLMShell": _CausalLMShell},
    )
    ns3 = mf.ns(**base)
    got = build_classes(
        mf,
        F_MINICPM3,
        [
            ("MiniCPM3Attention", ["nn.Module"], ["__init__"]),
            ("MiniCPM3DecoderLayer", ["MiniCPMDecoderLayer"], ["_init_attn_block"]),
            ("MiniCPM3Model", ["MiniCPMModel"], ["_init_layers"]),
            (
                "MiniCPM3ForCausalLM",
                ["MiniCPMForCausalLM"],
                ["packed_modules_mapping", "_init_model"],
            ),
        ],
        ns3,
    )
    return got["MiniCPM3ForCausalLM"]


class _MambaLeaf(nn.Module):
    """A Mamba / SSM / linear-attention mixer (MambaMixer, MambaMixer2, GatedDeltaNet,
    ShortConv, KDA...): its own weights, no attention KV cache and no KV scale."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.in_proj = Linear()
        self.out_proj = Linear()
        self.conv1d = Linear()
        self.A = _leaf_param(1)
        self.D = _leaf_param(1)
        self.dt_bias = _leaf_param(1)


def build_jamba(o: ArchOracle) -> type:
    mf = o.models
    rel = F_JAMBA
    ns = mf.ns(
        JambaConfig=_annotation("JambaConfig"),
        JambaMLP=MLPBlock,
        JambaMoE=MoEBlock,
        MambaMixer=_MambaLeaf,
        _CausalLMShell=_CausalLMShell,
    )
    got = build_classes(
        mf,
        rel,
        [
            ("JambaMambaDecoderLayer", ["nn.Module"], ["__init__"]),
            ("JambaAttentionDecoderLayer", ["nn.Module"], ["__init__"]),
        ],
        ns,
    )
    exec_defs(mf.tree, rel, ["ALL_DECODER_LAYER_TYPES"], ns)
    del got
    return build_classes(
        mf,
        rel,
        [
            ("JambaModel", ["nn.Module"], ["__init__"]),
            (
                "JambaForCausalLM",
                ["_CausalLMShell"],
                ["hf_to_vllm_mapper", "packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["JambaForCausalLM"]


def build_mixtral(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(
        MixtralConfig=_annotation("MixtralConfig"),
        MixtralMoE=MoEBlock,
        _CausalLMShell=_CausalLMShell,
    )
    return build_classes(
        mf,
        "model_executor/models/mixtral.py",
        [
            ("MixtralAttention", ["nn.Module"], ["__init__"]),
            ("MixtralDecoderLayer", ["nn.Module"], ["__init__"]),
            ("MixtralModel", ["nn.Module"], ["hf_to_vllm_mapper", "__init__", "load_weights"]),
            (
                "MixtralForCausalLM",
                ["_CausalLMShell"],
                ["packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["MixtralForCausalLM"]


def build_qwen3_moe(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(Qwen3MoeMLP=MLPBlock, Qwen3MoeSparseMoeBlock=MoEBlock, _CausalLMShell=_CausalLMShell)
    return build_classes(
        mf,
        "model_executor/models/qwen3_moe.py",
        [
            ("Qwen3MoeAttention", ["nn.Module"], ["__init__"]),
            ("Qwen3MoeDecoderLayer", ["nn.Module"], ["__init__"]),
            ("Qwen3MoeModel", ["nn.Module"], ["hf_to_vllm_mapper", "__init__", "load_weights"]),
            (
                "Qwen3MoeForCausalLM",
                ["_CausalLMShell"],
                ["packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["Qwen3MoeForCausalLM"]


def build_lfm2(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(
        Lfm2Config=_annotation("Lfm2Config"),
        Lfm2MLP=MLPBlock,
        ShortConv=_MambaLeaf,
        Lfm2BidirectionalShortConv=_MambaLeaf,
        _SupportsQuantShell=_SupportsQuantShell,
    )
    return build_classes(
        mf,
        "model_executor/models/lfm2.py",
        [
            ("Lfm2Attention", ["nn.Module"], ["__init__"]),
            ("Lfm2AttentionDecoderLayer", ["nn.Module"], ["__init__"]),
            ("Lfm2ShortConvDecoderLayer", ["nn.Module"], ["__init__"]),
            ("Lfm2Model", ["nn.Module"], ["hf_to_vllm_mapper", "__init__", "load_weights"]),
            (
                "Lfm2ForCausalLM",
                ["_SupportsQuantShell"],
                ["packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["Lfm2ForCausalLM"]


def build_llama(o: ArchOracle) -> dict[str, type]:
    mf = o.models
    ns = mf.ns(
        LlamaConfig=_annotation("LlamaConfig"),
        LlamaMLP=MLPBlock,
        spec_decode_needs_target_embed=lambda *a, **k: False,
        _SupportsQuantShell=_SupportsQuantShell,
    )
    got = build_classes(
        mf,
        F_LLAMA,
        [
            ("LlamaAttention", ["nn.Module"], ["__init__", "_init_rotary_emb"]),
            ("LlamaDecoderLayer", ["nn.Module"], ["__init__", "get_quant_config"]),
            ("LlamaModel", ["nn.Module"], ["hf_to_vllm_mapper", "__init__", "load_weights"]),
            (
                "LlamaForCausalLM",
                ["_SupportsQuantShell"],
                [
                    "hf_to_vllm_mapper",
                    "packed_modules_mapping",
                    "__init__",
                    "_init_model",
                    "load_weights",
                ],
            ),
        ],
        ns,
    )
    mf.llama_ns = ns
    return got


def build_mistral(o: ArchOracle) -> type:
    mf = o.models
    llama = o.family("llama", lambda: build_llama(o))
    ns = mf.ns(LlamaConfig=_annotation("LlamaConfig"), MistralMLP=MLPBlock, **llama)
    return build_classes(
        mf,
        "model_executor/models/mistral.py",
        [
            ("MistralAttention", ["LlamaAttention"], ["__init__"]),
            ("MistralDecoderLayer", ["LlamaDecoderLayer"], ["__init__"]),
            ("MistralModel", ["LlamaModel"], ["__init__"]),
            (
                "MistralForCausalLM",
                ["LlamaForCausalLM"],
                [
                    "embedding_modules",
                    "mistral_mapping",
                    "__init__",
                    "_init_model",
                    "load_weights",
                    "maybe_remap_mistral",
                ],
            ),
        ],
        ns,
    )["MistralForCausalLM"]


def build_mistral3(o: ArchOracle) -> type:
    mf = o.models
    ns = mf.ns(
        init_vision_tower_for_mistral3=lambda *a, **k: Tower(),
        Mistral3MultiModalProjector=Tower,
        build_mm_input_norm=lambda *a, **k: None,
        init_vllm_registered_model=init_vllm_registered_model_for(o),
        _MultiModalShell=_MultiModalShell,
    )
    return build_classes(
        mf,
        "model_executor/models/mistral3.py",
        [
            (
                "Mistral3ForConditionalGeneration",
                ["_MultiModalShell"],
                ["hf_to_vllm_mapper", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["Mistral3ForConditionalGeneration"]


class _DecoderLeaf(nn.Module):
    """Gemma3n's YOCO self/cross decoders: wrappers over the decoder layers the text
    model owns (registered there first) plus embedding / AltUp projections."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        self.embed_tokens = Embedding()


def build_gemma3n(o: ArchOracle) -> type:
    mf = o.models
    rel = "model_executor/models/gemma3n.py"
    ns = mf.ns(
        Gemma3nTextConfig=SimpleNamespace,
        Gemma3nAltUp=_IdentityLeaf,
        Gemma3nLaurelBlock=_IdentityLeaf,
        Gemma3nMLP=MLPBlock,
        Gemma3nSelfDecoder=_DecoderLeaf,
        Gemma3nCrossDecoder=_DecoderLeaf,
        _ACTIVATION_REGISTRY=__import__("collections").defaultdict(lambda: _IdentityLeaf),
        _SupportsQuantShell=_SupportsQuantShell,
    )
    exec_defs(mf.tree, rel, ["_kv_sharing_weights_mapper"], ns)
    return build_classes(
        mf,
        rel,
        [
            ("Gemma3nAttention", ["nn.Module"], ["__init__"]),
            ("Gemma3nDecoderLayer", ["nn.Module"], ["__init__"]),
            (
                "Gemma3nTextModel",
                ["_SupportsQuantShell"],
                ["hf_to_vllm_mapper", "__init__", "load_weights"],
            ),
            (
                "Gemma3nForCausalLM",
                ["nn.Module"],
                ["hf_to_vllm_mapper", "packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["Gemma3nForCausalLM"]


class _Group:
    """A distributed group of one rank (get_dp_group / get_ep_group / get_pcp_group)."""

    world_size = 1
    rank_in_group = 0
    device_group = None


class _GptOssMLPLeaf(MoEBlock):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()


def build_gpt_oss(o: ArchOracle) -> type:
    mf = o.models
    t = mf.tree
    rel = "model_executor/models/gpt_oss.py"
    ns_wu = o.code.ns[vo.F_WUTILS]
    ns_wu.update(
        load_attention_sink=_unreached("load_attention_sink (sinks in the checkpoint)"),
        Generator=typing.Generator,
    )
    exec_defs(
        t,
        vo.F_WUTILS,
        ["make_attention_sink", "maybe_remap_moe_expert_param_name", "remap_moe_expert_weights"],
        ns_wu,
    )
    ns_cfg = o.code._ns(
        get_tensor_model_parallel_rank=lambda: 0, ParallelConfig=_annotation("ParallelConfig")
    )
    fmpc = make_class_from(
        t,
        "model_executor/layers/fused_moe/config.py",
        "FusedMoEParallelConfig",
        ["object"],
        ["FusedMoEParallelConfig.flatten_tp_across_dp_and_pcp"],
        ns_cfg,
    )
    ns_math = o.code._ns()
    exec_defs(t, "utils/math_utils.py", ["cdiv"], ns_math)
    ns = mf.ns(
        GptOssConfig=_annotation("GptOssConfig"),
        MLPBlock=_GptOssMLPLeaf,
        make_attention_sink=ns_wu["make_attention_sink"],
        remap_moe_expert_weights=ns_wu["remap_moe_expert_weights"],
        FusedMoEParallelConfig=fmpc,
        cdiv=ns_math["cdiv"],
        OCP_MX_BLOCK_SIZE=32,
        get_dp_group=lambda: _Group(),
        get_ep_group=lambda: _Group(),
        get_pcp_group=lambda: _Group(),
        _CausalLMShell=_CausalLMShell,
    )
    exec_defs(t, rel, ["_GPT_OSS_STREAMED_EXPERT_SUFFIX_TO_SHARD", "_get_weight_loader"], ns)
    return build_classes(
        mf,
        rel,
        [
            ("OAIAttention", ["nn.Module"], ["__init__", "_build_attention"]),
            ("TransformerBlock", ["nn.Module"], ["attention_cls", "mlp_cls", "__init__"]),
            (
                "GptOssModel",
                ["nn.Module"],
                [
                    "block_cls",
                    "__init__",
                    "load_weights",
                    "_load_weights_mxfp4",
                    "_load_weights_quark",
                    "_load_weights_other",
                    "_get_streamed_expert_info",
                    "_try_load_streamed_expert",
                ],
            ),
            (
                "GptOssForCausalLM",
                ["_CausalLMShell"],
                ["hf_to_vllm_mapper", "packed_modules_mapping", "__init__", "load_weights"],
            ),
        ],
        ns,
    )["GptOssForCausalLM"]


# ======================================================================================
# The architectures executed: registry name -> builder(oracle, platform) -> class
# ======================================================================================


def _dsv2(o: ArchOracle) -> dict[str, type]:
    return typing.cast(
        dict[str, type], o.family("deepseek_v2", lambda: build_deepseek_v2(o.models))
    )


ARCHITECTURES: dict[str, Callable[[ArchOracle, str], type]] = {
    "DeepseekV2ForCausalLM": lambda o, p: _dsv2(o)["DeepseekV2ForCausalLM"],
    "DeepseekV3ForCausalLM": lambda o, p: _dsv2(o)["DeepseekV3ForCausalLM"],
    "DeepseekForCausalLM": lambda o, p: _dsv2(o)["DeepseekForCausalLM"],
    # registry: ("vllm.models.deepseek_v32", ...): nvidia/ on CUDA, amd/ on ROCm
    "DeepseekV32ForCausalLM": lambda o, p: o.family(
        f"deepseek_v32_{p}", lambda: build_deepseek_v32(o.models, _dsv2(o), amd=p == "fnuz")
    ),
    "GlmMoeDsaForCausalLM": lambda o, p: o.family(
        f"deepseek_v32_{p}", lambda: build_deepseek_v32(o.models, _dsv2(o), amd=p == "fnuz")
    ),
    "Glm4MoeLiteForCausalLM": lambda o, p: o.family(
        "glm4_moe_lite", lambda: build_glm4_moe_lite(o)
    ),
    "MistralLarge3ForCausalLM": lambda o, p: o.family(
        "mistral_large_3", lambda: build_mistral_large_3(o)
    ),
    "KimiK25ForConditionalGeneration": lambda o, p: o.family("kimi_k25", lambda: build_kimi_k25(o)),
    "BailingMoeV3ForCausalLM": lambda o, p: o.family(
        "bailing_moe_v3", lambda: build_bailing_moe_v3(o)
    ),
    "LongcatFlashForCausalLM": lambda o, p: o.family(
        "longcat_flash", lambda: build_longcat_flash(o)
    ),
    "SarvamMLAForCausalLM": lambda o, p: o.family("sarvam_mla", lambda: build_sarvam_mla(o)),
    "MiniCPM3ForCausalLM": lambda o, p: o.family("minicpm3", lambda: build_minicpm3(o)),
    "JambaForCausalLM": lambda o, p: o.family("jamba", lambda: build_jamba(o)),
    "MixtralForCausalLM": lambda o, p: o.family("mixtral", lambda: build_mixtral(o)),
    "Qwen3MoeForCausalLM": lambda o, p: o.family("qwen3_moe", lambda: build_qwen3_moe(o)),
    "Lfm2ForCausalLM": lambda o, p: o.family("lfm2", lambda: build_lfm2(o)),
    "LlamaForCausalLM": lambda o, p: o.family("llama", lambda: build_llama(o))["LlamaForCausalLM"],
    "MistralForCausalLM": lambda o, p: o.family("mistral", lambda: build_mistral(o)),
    "Mistral3ForConditionalGeneration": lambda o, p: o.family(
        "mistral3", lambda: build_mistral3(o)
    ),
    "Gemma3nForCausalLM": lambda o, p: o.family("gemma3n", lambda: build_gemma3n(o)),
    "GptOssForCausalLM": lambda o, p: o.family("gpt_oss", lambda: build_gpt_oss(o)),
}


# ======================================================================================
# CLI
# ======================================================================================


def summarize(doc: Mapping[str, Any]) -> str:
    lines = [f"vLLM {doc['provenance']['vllm_version']}: {len(doc['cases'])} architecture cases"]
    by_group: dict[str, list[int]] = {}
    for c in doc["cases"].values():
        g = by_group.setdefault(c["group"], [0, 0, 0, 0])
        g[0] += 1
        g[1] += len(c["layers"])
        g[2] += sum(1 for layer in c["layers"] if layer["error"]) + (1 if c["engine_error"] else 0)
        g[3] += sum(
            1 for layer in c["layers"] for t in layer.get("tensors", []) if t["loaded_into"]
        )
    for g, (n, nl, ne, nloaded) in by_group.items():
        lines.append(
            f"  {g:28s} {n:4d} cases {nl:4d} layers {ne:4d} refused {nloaded:4d} tensors loaded"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    if not __debug__:
        print(
            "vllm_arch_oracle.py must run without -O: vLLM's asserts are behaviour", file=sys.stderr
        )
        return 2
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--vllm-src",
        required=True,
        help="extracted vLLM source: the directory holding vllm/ (or vllm/ itself)",
    )
    ap.add_argument("--out", help="golden JSON file to write ('-' for stdout)")
    ap.add_argument("--classes-out", help="write the registry classification here")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    if not args.out and not args.classes_out:
        ap.error("give --out and/or --classes-out")
    oracle = ArchOracle(args.vllm_src)
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
    if args.classes_out:
        static = _load_sibling("kvscale_parity_vllm_arch_static", "vllm_arch_static.py")
        with vo._stub_modules(oracle.code.base.stub_modules):
            classes = static.classify_registry(oracle)
        Path(args.classes_out).write_text(json.dumps(classes, indent=1) + "\n")
        if not args.quiet:
            print(f"architectures: {classes['counts']}")
            print(f"wrote {args.classes_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
