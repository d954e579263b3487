#!/usr/bin/env python3
"""Oracle: run vLLM 0.33.0's own per-token-head KV-cache writes on the parity cases.

    python tests/parity/vllm_per_token_head_oracle.py --vllm-src /tmp/vllm_dl/src \
        --out tests/parity/vllm_per_token_head_expected.json

vLLM is not installed and not imported. ``VllmTree`` (vllm_oracle.py) takes the definitions out
of the extracted source tree by name and compiles them with their real file names and line
numbers; Triton's ``@triton.jit`` reads each kernel's source from that file, and on the CPU the
kernels run in Triton's interpreter (``TRITON_INTERPRET=1``, set here before they are defined).
What runs verbatim (``vllm/`` relative paths):

* ``v1/attention/ops/triton_reshape_and_cache_flash.py``: ``FP8_MIN, FP8_MAX = get_fp8_min_max()``,
  ``_reshape_cache_per_token_head``, ``_PER_TOKEN_HEAD_QUANT_PARAMS``,
  ``triton_reshape_and_cache_flash_per_token_head_quant`` (the launcher: dtype dispatch, grid,
  strides, the int4 hand-off);
* ``v1/attention/ops/int4_per_token_head.py`` (with its ``from __future__ import annotations``):
  ``_INT4_PACKING_FACTOR``, ``pack_int4_nibbles``, ``_reshape_cache_int4_kernel``,
  ``_run_reshape_kernel``, ``reshape_and_cache_int4``, the whole Hadamard section
  (``_hadacore_available``, ``_get_hadamard_matrix``, ``_hadamard_mma_kernel``,
  ``_triton_hadamard_transform``, ``fast_hadamard_transform``, ``_get_rht_signs``, ``single_rht``);
* ``v1/attention/backends/triton_attn.py``: ``TritonAttentionBackend.customize_spec`` (the cell
  size), ``TritonAttentionImpl._ensure_scale_caches`` and ``_pth_key_value_caches`` (the views the
  write goes through, scales initialised to 1.0);
* the read side, for the attention cases: ``v1/attention/ops/triton_unified_attention.py`` (every
  top-level definition and assignment: ``unified_attention``, ``kernel_unified_attention``, ...),
  ``v1/attention/ops/triton_attention_helpers.py`` (every function) and, from the int4 file,
  ``unpack_int4_nibbles``, ``_attn_packed``, ``_launch_packed_attn``, ``unified_attention_int4``,
  called as ``TritonAttentionImpl.forward`` calls ``unified_attention`` for these dtypes;
* ``v1/kv_cache_interface.py``: ``KVQuantMode``, ``get_kv_quant_mode``; ``config/cache.py``:
  ``get_kv_cache_dtype_handler``; ``utils/torch_utils.py``: ``STR_DTYPE_TO_TORCH_DTYPE``,
  ``get_dtype_size``; ``utils/math_utils.py``: ``largest_power_of_2_divisor``;
  ``model_executor/layers/quantization/utils/quant_utils.py``: ``get_fp8_min_max``, ``FP8_DTYPE``.

Stubbed: a logger that drops debug messages, ``vllm.envs.VLLM_BATCH_INVARIANT`` False,
``current_platform`` (CUDA semantics: e4m3fn, not fnuz, not ROCm/XPU; ``is_cuda()`` and
the capability are the device's, so on the CPU the Hadamard transform takes vLLM's torch
butterfly), ``vllm.triton_utils`` (the installed Triton), no registered custom kv-cache dtype
handlers, and the spec: a frozen dataclass with the five fields ``customize_spec`` reads.
The cache is allocated by this harness as vLLM lays it out, logically ``[num_blocks,
num_kv_heads, block_size, content]`` in the cache dtype, HND or NHD in memory, filled with a
poison byte before vLLM's code initialises its scale cells.

Interpreter arithmetic: numpy float32, one rounding per operation, IEEE division; the GPU
divides with ``div.full.f32`` and may fuse multiply-adds (see kvscale/kernel/per_token_head.py).
Its float32 -> e4m3 store conversion is not round-to-nearest-even; the fp8 cases only hold
quotients where it agrees (per_token_head_cases.py), and every conversion the interpreter
performs is checked against torch's round-to-nearest-even cast: a disagreement aborts the run.
NaN/inf inputs are not part of the golden file (the kernels leave them to the platform). The
attention outputs are float32 computed by the interpreter (numpy); CI compares them with
attention over kvscale's dequantized cache within float32 rounding, not bit for bit. Two harness
adjustments to the interpreter, neither touching a value: a one-element array may serve as a loop
bound (``one_element_loop_bounds``), and NumPy's warnings about the padded query rows' NaN
softmax are silenced.

``--device cuda`` runs the same code compiled for the GPU (benchmarks/gpu_per_token_head_check.py
uses ``VllmPerTokenHead`` that way). Must run without ``python -O`` (vLLM's asserts).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import enum
import hashlib
import importlib.util
import json
import os
import platform as _pyplatform
import sys
import types
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import torch

HERE = Path(__file__).resolve().parent
SCHEMA = "kvscale.vllm-per-token-head/1"
POISON = 0xA5
VOLATILE_PROVENANCE = ("torch_version", "triton_version", "python_version", "device")


def _load_sibling(name: str, file: str) -> types.ModuleType:
    """A file of tests/parity loaded by path, once per process."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    spec = importlib.util.spec_from_file_location(name, HERE / file)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


cases_mod = _load_sibling("kvscale_parity_per_token_head_cases", "per_token_head_cases.py")
_stubs = _load_sibling("kvscale_parity_stubs", "stubs.py")
VllmTree = _load_sibling("kvscale_vllm_oracle", "vllm_oracle.py").VllmTree

F_RESHAPE = "v1/attention/ops/triton_reshape_and_cache_flash.py"
F_INT4 = "v1/attention/ops/int4_per_token_head.py"
F_TRITON_ATTN = "v1/attention/backends/triton_attn.py"
F_KVI = "v1/kv_cache_interface.py"
F_CACHE_CFG = "config/cache.py"
F_TORCH_UTILS = "utils/torch_utils.py"
F_MATH_UTILS = "utils/math_utils.py"
F_QUANT_UTILS = "model_executor/layers/quantization/utils/quant_utils.py"
F_HELPERS = "v1/attention/ops/triton_attention_helpers.py"
F_UNIFIED = "v1/attention/ops/triton_unified_attention.py"

INT4_READ_PATH = [
    "float8_info",
    "unpack_int4_nibbles",
    "_attn_packed",
    "_launch_packed_attn",
    "unified_attention_int4",
]
INT4_WRITE_PATH = [
    "_INT4_PACKING_FACTOR",
    "pack_int4_nibbles",
    "_reshape_cache_int4_kernel",
    "_run_reshape_kernel",
    "reshape_and_cache_int4",
    "_HADACORE_AVAILABLE",
    "_hadacore_available",
    "_HADAMARD_MATRIX_CACHE",
    "_get_hadamard_matrix",
    "_hadamard_mma_kernel",
    "_TRITON_HADAMARD_MIN_D",
    "_TRITON_HADAMARD_MAX_D",
    "_triton_hadamard_transform",
    "fast_hadamard_transform",
    "_RHT_SIGNS_CACHE",
    "_get_rht_signs",
    "single_rht",
]


class Platform:
    """The part of vLLM's ``current_platform`` these files read, for an NVIDIA GPU (CUDA
    semantics) or the CPU."""

    def __init__(self, device: str) -> None:
        self.device = device

    def fp8_dtype(self) -> torch.dtype:
        return torch.float8_e4m3fn

    def is_fp8_fnuz(self) -> bool:
        return False

    def is_rocm(self) -> bool:
        return False

    def is_xpu(self) -> bool:
        return False

    def is_cuda(self) -> bool:
        return self.device == "cuda"

    def is_device_capability_family(self, capability: int, device_id: int = 0) -> bool:
        if self.device != "cuda":
            return False
        major, minor = torch.cuda.get_device_capability(device_id)
        return (major * 10 + minor) // 10 == capability // 10

    def has_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        if self.device != "cuda":
            return False
        major, minor = torch.cuda.get_device_capability(device_id)
        if isinstance(capability, tuple):
            return (major, minor) >= capability
        return major * 10 + minor >= int(capability)


class QuietLogger:
    """vLLM's logger in the attention files: only debug messages, dropped."""

    def debug_once(self, *args: Any, **kwargs: Any) -> None:
        pass

    debug = info = info_once = warning = warning_once = debug_once


@dataclasses.dataclass(frozen=True)
class Spec:
    """The fields of vLLM's ``AttentionSpec`` that ``customize_spec`` reads and replaces."""

    kv_quant_mode: Any
    head_size: int
    head_size_v: int
    dtype: torch.dtype
    state_content_bytes: int | None = None


def _top_statement(tree: Any, rel: str, predicate: Any) -> ast.stmt:
    found = [n for n in tree.tree(rel).body if predicate(n)]
    if len(found) != 1:
        raise LookupError(f"vLLM source changed: expected one matching statement in {rel}")
    return found[0]


def _assigns_tuple(*names: str) -> Any:
    def match(node: ast.stmt) -> bool:
        return (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Tuple)
            and [getattr(e, "id", None) for e in node.targets[0].elts] == list(names)
        )

    return match


def _is_future_import(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and node.module == "__future__"


class VllmPerTokenHead:
    """vLLM's per-token-head write path, executed from a source tree on ``device``."""

    def __init__(self, vllm_src: str | os.PathLike[str], device: str = "cpu") -> None:
        if device == "cpu":
            # Before any @triton.jit runs: Triton decides per definition whether to interpret.
            os.environ["TRITON_INTERPRET"] = "1"
        import triton
        import triton.language as tl

        self.triton = triton
        self.device = device
        self.tree = t = VllmTree(vllm_src)
        self.platform = Platform(device)

        def ns(**extra: Any) -> dict[str, Any]:
            base: dict[str, Any] = {
                "__builtins__": __builtins__,
                "__name__": "vllm_per_token_head_exec",
                "torch": torch,
                "triton": triton,
                "tl": tl,
                "Any": Any,
                "current_platform": self.platform,
            }
            base.update(extra)
            return base

        ns_cache = ns(_KV_CACHE_DTYPE_HANDLERS={}, KVCacheDTypeHandler=object)
        t.exec(F_CACHE_CFG, ["get_kv_cache_dtype_handler"], ns_cache)
        self.ns_kvi = ns(IntEnum=enum.IntEnum)
        t.exec(F_KVI, ["KVQuantMode", "get_kv_quant_mode"], self.ns_kvi)
        self.ns_torch_utils = ns()
        t.exec(F_TORCH_UTILS, ["STR_DTYPE_TO_TORCH_DTYPE", "get_dtype_size"], self.ns_torch_utils)
        ns_math = ns()
        t.exec(F_MATH_UTILS, ["largest_power_of_2_divisor"], ns_math)
        ns_quant = ns()
        t.exec(F_QUANT_UTILS, ["get_fp8_min_max", "FP8_DTYPE"], ns_quant)

        self.ns_int4 = ns(largest_power_of_2_divisor=ns_math["largest_power_of_2_divisor"])
        future = _top_statement(t, F_INT4, _is_future_import)
        nodes = [future] + [t.node(F_INT4, name) for name in INT4_WRITE_PATH]
        exec(t.compile(F_INT4, nodes), self.ns_int4)

        KVQuantMode = self.ns_kvi["KVQuantMode"]
        self.ns_reshape = ns(
            KVQuantMode=KVQuantMode,
            FP8_DTYPE=ns_quant["FP8_DTYPE"],
            get_fp8_min_max=ns_quant["get_fp8_min_max"],
        )
        fp8_min_max = _top_statement(t, F_RESHAPE, _assigns_tuple("FP8_MIN", "FP8_MAX"))
        nodes = [fp8_min_max] + [
            t.node(F_RESHAPE, name)
            for name in (
                "_reshape_cache_per_token_head",
                "_PER_TOKEN_HEAD_QUANT_PARAMS",
                "triton_reshape_and_cache_flash_per_token_head_quant",
            )
        ]
        exec(t.compile(F_RESHAPE, nodes), self.ns_reshape)

        ns_attn = ns(
            KVQuantMode=KVQuantMode,
            get_dtype_size=self.ns_torch_utils["get_dtype_size"],
            replace=dataclasses.replace,
        )
        self.Backend = t.make_class(
            F_TRITON_ATTN,
            "TritonAttentionBackend",
            [],
            ["TritonAttentionBackend.customize_spec"],
            ns_attn,
        )
        self.Impl = t.make_class(
            F_TRITON_ATTN,
            "TritonAttentionImpl",
            [],
            [
                "TritonAttentionImpl._k_scale_cache",
                "TritonAttentionImpl._v_scale_cache",
                "TritonAttentionImpl._ensure_scale_caches",
                "TritonAttentionImpl._pth_key_value_caches",
            ],
            ns_attn,
        )
        self._ns = ns
        self.ns_unified: dict[str, Any] | None = None
        # The local imports inside vLLM's functions.
        handler = ns_cache["get_kv_cache_dtype_handler"]
        self.stub_modules = {
            "vllm.config.cache": {"get_kv_cache_dtype_handler": handler},
            "vllm.utils.torch_utils": {"get_dtype_size": self.ns_torch_utils["get_dtype_size"]},
            "vllm.v1.attention.ops.int4_per_token_head": {
                "reshape_and_cache_int4": self.ns_int4["reshape_and_cache_int4"]
            },
        }

    def load_attention(self) -> dict[str, Any]:
        """The read side: ``unified_attention`` (triton_unified_attention.py, every top-level
        definition and assignment), the helpers it imports (triton_attention_helpers.py, every
        function) and int4's ``unified_attention_int4`` with ``_attn_packed``. Loaded once."""
        if self.ns_unified is not None:
            return self.ns_unified
        t, ns = self.tree, self._ns
        ns_helpers = ns()
        future = _top_statement(t, F_HELPERS, _is_future_import)
        funcs = [n for n in t.tree(F_HELPERS).body if isinstance(n, ast.FunctionDef)]
        exec(t.compile(F_HELPERS, [future, *funcs]), ns_helpers)
        helpers = {n.name: ns_helpers[n.name] for n in funcs}
        envs = types.SimpleNamespace(VLLM_BATCH_INVARIANT=False)
        ns_unified = ns(
            envs=envs,
            init_logger=lambda name: QuietLogger(),
            KVQuantMode=self.ns_kvi["KVQuantMode"],
            **helpers,
        )
        body = [
            n
            for n in t.tree(F_UNIFIED).body
            if isinstance(n, (ast.FunctionDef, ast.Assign, ast.AnnAssign))
        ]
        exec(t.compile(F_UNIFIED, body), ns_unified)
        self.ns_int4.update(helpers, reduce_segments=ns_unified["reduce_segments"])
        future = _top_statement(t, F_INT4, _is_future_import)
        nodes = [future] + [t.node(F_INT4, name) for name in INT4_READ_PATH]
        exec(t.compile(F_INT4, nodes), self.ns_int4)
        self.stub_modules["vllm.envs"] = {"VLLM_BATCH_INVARIANT": False}
        self.stub_modules["vllm.v1.attention.ops.triton_unified_attention"] = {
            "_get_tile_size": ns_unified["_get_tile_size"]
        }
        self.stub_modules["vllm.v1.attention.ops.int4_per_token_head"]["unified_attention_int4"] = (
            self.ns_int4["unified_attention_int4"]
        )
        self.ns_unified = ns_unified
        return ns_unified

    def attention(
        self,
        views: tuple[Any, ...],
        query: torch.Tensor,
        block_table: torch.Tensor,
        seq_len: int,
        softmax_scale: float,
    ) -> torch.Tensor:
        """``TritonAttentionImpl.forward``'s per-token-head call of ``unified_attention`` for one
        causal sequence whose last ``len(query)`` tokens are the queries (2D kernel: no split-K
        scratch, no alibi, sinks, softcap, window or output quantization)."""
        ns_unified = self.load_attention()
        key_cache, value_cache, k_scales, v_scales, mode = views
        dev = self.device
        q = query.to(dev)
        out = torch.empty_like(q)
        with _stubs.stub_modules(self.stub_modules):
            ns_unified["unified_attention"](
                q=q,
                k=key_cache,
                v=value_cache,
                out=out,
                cu_seqlens_q=torch.tensor([0, q.shape[0]], dtype=torch.int32, device=dev),
                max_seqlen_q=q.shape[0],
                seqused_k=torch.tensor([seq_len], dtype=torch.int32, device=dev),
                max_seqlen_k=seq_len,
                softmax_scale=softmax_scale,
                causal=True,
                window_size=(-1, -1),
                block_table=block_table.to(dev),
                softcap=0,
                q_descale=None,
                k_descale=None,
                v_descale=None,
                kv_quant_mode=mode,
                k_scale_cache=k_scales,
                v_scale_cache=v_scales,
            )
        return out

    # --- vLLM's pieces ---------------------------------------------------------------------

    def quant_mode(self, kv_cache_dtype: str) -> Any:
        with _stubs.stub_modules(self.stub_modules):
            return self.ns_kvi["get_kv_quant_mode"](kv_cache_dtype)

    def content_bytes(self, kv_cache_dtype: str, head_size: int) -> int:
        mode = self.quant_mode(kv_cache_dtype)
        dtype = self.ns_torch_utils["STR_DTYPE_TO_TORCH_DTYPE"][kv_cache_dtype]
        spec = self.Backend.customize_spec(Spec(mode, head_size, head_size, dtype))
        return int(spec.state_content_bytes)

    def cache_dtype(self, kv_cache_dtype: str) -> torch.dtype:
        dtype: torch.dtype = self.ns_torch_utils["STR_DTYPE_TO_TORCH_DTYPE"][kv_cache_dtype]
        return dtype

    def single_rht(self, x: torch.Tensor) -> torch.Tensor:
        """vLLM's rotation of K/V before the int4 write: ``single_rht(x.float()).to(x.dtype)``."""
        out: torch.Tensor = self.ns_int4["single_rht"](x.float()).to(x.dtype)
        return out

    def rht_signs(self, block: int) -> torch.Tensor:
        signs: torch.Tensor = self.ns_int4["_get_rht_signs"](block, 0, torch.device("cpu"))
        return signs

    def new_cache(
        self,
        kv_cache_dtype: str,
        num_blocks: int,
        num_kv_heads: int,
        block_size: int,
        head_size: int,
        physical: str,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(logical [B, H, N, C] cache, its byte storage), poisoned, on the device."""
        dtype = self.cache_dtype(kv_cache_dtype)
        content = self.content_bytes(kv_cache_dtype, head_size) // dtype.itemsize
        if physical == "HND":
            shape = (num_blocks, num_kv_heads, block_size, content)
        elif physical == "NHD":
            shape = (num_blocks, block_size, num_kv_heads, content)
        else:
            raise ValueError(f"physical layout must be HND or NHD, got {physical!r}")
        buf = torch.full(shape, POISON, dtype=torch.uint8).view(dtype).to(self.device)
        cache = buf if physical == "HND" else buf.permute(0, 2, 1, 3)
        return cache, buf

    def views(self, kv_cache_dtype: str, kv_cache: torch.Tensor) -> tuple[Any, ...]:
        """What ``do_kv_cache_update`` hands the launcher, from a fresh impl: (key_cache,
        value_cache, k_scale_cache, v_scale_cache, kv_quant_mode); the scale views are
        initialised to 1.0 by ``_ensure_scale_caches``."""
        impl = self.Impl()
        impl._kv_quant_mode = self.quant_mode(kv_cache_dtype)
        impl.fp8_dtype = self.platform.fp8_dtype()
        with _stubs.stub_modules(self.stub_modules):
            key_cache, value_cache = impl._pth_key_value_caches(kv_cache)
        return key_cache, value_cache, impl._k_scale_cache, impl._v_scale_cache, impl._kv_quant_mode

    def launch(self, key: torch.Tensor, value: torch.Tensor, views: tuple[Any, ...],
               slot_mapping: torch.Tensor) -> None:  # fmt: skip
        """``triton_reshape_and_cache_flash_per_token_head_quant`` on prepared views."""
        key_cache, value_cache, k_scales, v_scales, mode = views
        with _stubs.stub_modules(self.stub_modules):
            self.ns_reshape["triton_reshape_and_cache_flash_per_token_head_quant"](
                key, value, key_cache, value_cache, k_scales, v_scales, slot_mapping,
                kv_quant_mode=mode,
            )  # fmt: skip

    def write(
        self,
        kv_cache_dtype: str,
        key: torch.Tensor,
        value: torch.Tensor,
        kv_cache: torch.Tensor,
        slot_mapping: torch.Tensor,
    ) -> tuple[Any, ...]:
        """``TritonAttentionImpl.do_kv_cache_update``'s per-token-head branch on a fresh impl:
        the views, then the launcher. Returns the views (attention reads through them)."""
        views = self.views(kv_cache_dtype, kv_cache)
        self.launch(key, value, views, slot_mapping)
        return views


# --- the interpreter's fp8 store, watched ----------------------------------------------------


@contextlib.contextmanager
def checked_fp8_conversions() -> Iterator[list[int]]:
    """Compare every float32 -> e4m3 conversion the interpreter performs with torch's
    round-to-nearest-even cast; yields a list [checked, differing] filled in while it runs."""
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original = builder.create_fp_to_fp
    counts = [0, 0]

    def create_fp_to_fp(self: Any, src: Any, dst_type: Any, rounding_mode: Any) -> Any:
        out = original(self, src, dst_type, rounding_mode)
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.float8e4nv:
            values = torch.from_numpy(np.ascontiguousarray(src.data, dtype=np.float32))
            expected = values.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
            counts[0] += expected.size
            counts[1] += int((expected != out.data.reshape(expected.shape)).sum())
        return out

    builder.create_fp_to_fp = create_fp_to_fp
    try:
        yield counts
    finally:
        builder.create_fp_to_fp = original


@contextlib.contextmanager
def one_element_loop_bounds() -> Iterator[None]:
    """Let the interpreter use a one-element array as a Python integer.

    Triton 3.6's interpreter converts a tensor used as a ``range`` bound with ``int(ndarray)``,
    which NumPy 2 refuses for one-element 1-D arrays; vLLM's attention loop bounds are such
    arrays in the interpreter (scalars on a GPU). The element is used instead; nothing else about
    the interpreter changes."""
    from triton.runtime import interpreter

    original = interpreter._patch_lang_tensor

    def index(self: Any) -> int:
        data = self.handle.data
        return int(data.reshape(-1)[0]) if data.size == 1 else int(data)

    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", index)

    interpreter._patch_lang_tensor = patch_lang_tensor
    try:
        yield
    finally:
        interpreter._patch_lang_tensor = original


def check_the_checker() -> None:
    """The fp8 watch must see the interpreter's known defect: 17.0 is a tie between the e4m3
    codes for 16 and 18, which round-to-nearest-even stores as 16 and the interpreter as 18."""
    import triton
    import triton.language as tl

    @triton.jit
    def store(src, dst):
        tl.store(dst, tl.load(src))

    src = torch.tensor([17.0, 1.0])
    dst = torch.zeros(2, dtype=torch.float8_e4m3fn)
    with checked_fp8_conversions() as counts:
        store[(1,)](src, dst)  # one element per launch: the kernel is scalar
        store[(1,)](src[1:], dst[1:])
    if counts != [2, 1]:
        raise AssertionError(f"the fp8 conversion check does not work here: {counts}")


# --- the golden file ---------------------------------------------------------------------------


def _sha256(*tensors: torch.Tensor) -> str:
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def storage_bytes(t: torch.Tensor) -> torch.Tensor:
    """Every byte of the tensor's storage, as a uint8 copy on the CPU."""
    return torch.empty(0, dtype=torch.uint8).set_(t.untyped_storage().cpu()).clone()


def _hex32(x: torch.Tensor) -> str:
    return f"{int(x.view(torch.int32)) & 0xFFFFFFFF:08x}"


def _signs_text(signs: torch.Tensor) -> str:
    return "".join("+" if float(s) > 0 else "-" for s in signs.tolist())


def case_record(case: Any) -> dict[str, Any]:
    return {
        "kv_cache_dtype": case.kv_cache_dtype,
        "input_dtype": case.input_dtype,
        "num_tokens": case.num_tokens,
        "num_kv_heads": case.num_kv_heads,
        "head_size": case.head_size,
        "block_size": case.block_size,
        "num_blocks": case.blocks,
        "physical": case.physical,
        "kind": case.kind,
        "description": case.description,
    }


class Oracle:
    def __init__(self, vllm_src: str, device: str = "cpu") -> None:
        self.vllm = VllmPerTokenHead(vllm_src, device)

    def run_case(self, case: Any) -> dict[str, Any]:
        v = self.vllm
        key, value, slots = cases_mod.build_inputs(case)
        out = case_record(case)
        out["slots"] = slots.tolist()
        out["input_sha256"] = _sha256(key, value, slots)
        if case.kv_cache_dtype == "int4_per_token_head":
            rotated_k, rotated_v = v.single_rht(key), v.single_rht(value)
            out["rotated_sha256"] = _sha256(rotated_k, rotated_v)
            if case.kind == "int4-designed":
                self._check_designed_rotation(case, rotated_k, rotated_v)
        kv_cache, buf = v.new_cache(
            case.kv_cache_dtype,
            case.blocks,
            case.num_kv_heads,
            case.block_size,
            case.head_size,
            case.physical,
        )
        out["content_bytes"] = kv_cache.shape[3] * kv_cache.element_size()
        dev = v.device
        with checked_fp8_conversions() as fp8:
            views = v.write(
                case.kv_cache_dtype, key.to(dev), value.to(dev), kv_cache, slots.to(dev)
            )
        k_scales, v_scales = views[2], views[3]
        if fp8[1]:
            raise AssertionError(
                f"{case.name}: the interpreter converted {fp8[1]} of {fp8[0]} values to fp8 "
                "differently from round-to-nearest-even; choose interpreter-safe inputs"
            )
        out["fp8_conversions_checked"] = fp8[0]
        out["cache_sha256"] = _sha256(storage_bytes(buf))
        scales: dict[str, list[list[str] | None]] = {"k": [], "v": []}
        first_cell: dict[str, Any] | None = None
        raw = kv_cache.view(torch.uint8) if kv_cache.dtype != torch.uint8 else kv_cache
        for tok, slot in enumerate(slots.tolist()):
            if slot < 0:
                scales["k"].append(None)
                scales["v"].append(None)
                continue
            blk, off = divmod(slot, case.block_size)
            scales["k"].append([_hex32(s) for s in k_scales[blk, off].cpu()])
            scales["v"].append([_hex32(s) for s in v_scales[blk, off].cpu()])
            if first_cell is None:
                cell = raw[blk, 0, off].cpu().numpy().tobytes()
                first_cell = {"token": tok, "head": 0, "bytes": cell.hex()}
        out["scales"] = scales
        out["first_cell"] = first_cell
        return out

    def _check_designed_rotation(
        self, case: Any, rotated_k: torch.Tensor, rotated_v: torch.Tensor
    ) -> None:
        # The designed inputs only mean something if vLLM's rotation lands exactly on the rows.
        rows = cases_mod.INT4_DESIGNED_ROWS
        b = case.head_size
        want = cases_mod._tile(case, [(r * b)[:b] for r in rows])
        target = torch.tensor(want, dtype=torch.float64)
        for name, got in (("K", rotated_k), ("V", rotated_v)):
            if not torch.equal(got.double(), target):
                raise AssertionError(f"{case.name}: vLLM's rotation of {name} is not the design")

    def run_attention_case(self, case: Any) -> dict[str, Any]:
        v = self.vllm
        key, value, query, slots, block_table = cases_mod.build_attention_inputs(case)
        out: dict[str, Any] = {
            "kv_cache_dtype": case.kv_cache_dtype,
            "input_dtype": case.input_dtype,
            "num_kv_heads": case.num_kv_heads,
            "head_size": case.head_size,
            "seq_len": case.seq_len,
            "query_len": case.query_len,
            "queries_per_kv": case.queries_per_kv,
            "block_size": case.block_size,
            "kind": case.kind,
            "input_sha256": _sha256(key, value, query, slots, block_table),
        }
        kv_cache, _ = v.new_cache(
            case.kv_cache_dtype,
            case.blocks,
            case.num_kv_heads,
            case.block_size,
            case.head_size,
            "HND",
        )
        dev = v.device
        with checked_fp8_conversions() as fp8:
            views = v.write(
                case.kv_cache_dtype, key.to(dev), value.to(dev), kv_cache, slots.to(dev)
            )
        if fp8[1]:
            raise AssertionError(f"{case.name}: {fp8[1]} fp8 conversions not interpreter-safe")
        import numpy as np

        # The softmax of the kernel's padded query rows (beyond query_len) is NaN, as on a GPU,
        # and never stored; NumPy would warn about it.
        with one_element_loop_bounds(), np.errstate(invalid="ignore", divide="ignore"):
            result = v.attention(views, query, block_table, case.seq_len, case.softmax_scale)
        result = result.cpu()
        out["output_sha256"] = _sha256(result)
        out["output"] = [_hex32(x) for x in result.reshape(-1)]
        return out

    def run(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        selected = [c for c in cases_mod.CASES if not names or c.name in names]
        if self.vllm.device == "cpu":
            check_the_checker()
        doc_cases = {c.name: self.run_case(c) for c in selected}
        attention = {
            c.name: self.run_attention_case(c)
            for c in cases_mod.ATTENTION_CASES
            if not names or c.name in names
        }
        blocks = sorted(
            {
                c.head_size & -c.head_size
                for c in selected
                if c.kv_cache_dtype == "int4_per_token_head"
            }
        )
        signs = {str(b): _signs_text(self.vllm.rht_signs(b)) for b in blocks}
        import triton

        return {
            "schema": SCHEMA,
            "provenance": {
                "vllm_version": self.vllm.tree.version(),
                "vllm_sources_sha256": dict(sorted(self.vllm.tree.used.items())),
                "torch_version": torch.__version__,
                "triton_version": triton.__version__,
                "python_version": _pyplatform.python_version(),
                "device": self.vllm.device,
                "interpreted": self.vllm.device == "cpu",
                "poison_byte": POISON,
            },
            "rht_signs": signs,
            "cases": doc_cases,
            "attention": attention,
        }


def summarize(doc: dict[str, Any]) -> str:
    lines = [f"vLLM {doc['provenance']['vllm_version']}: {len(doc['cases'])} cases"]
    for name, c in doc["cases"].items():
        written = sum(1 for s in c["slots"] if s >= 0)
        lines.append(
            f"  {name:28s} {c['kv_cache_dtype']:20s} {written:3d} tokens x {c['num_kv_heads']} "
            f"heads, {c['content_bytes']} B/cell, fp8 checked {c['fp8_conversions_checked']}"
        )
    for name, a in doc["attention"].items():
        lines.append(
            f"  {name:28s} {a['kv_cache_dtype']:20s} attention: {a['query_len']} queries over "
            f"{a['seq_len']} tokens, {a['num_kv_heads'] * a['queries_per_kv']} query heads"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    if not __debug__:
        print("must run without -O: vLLM's asserts are behaviour", file=sys.stderr)
        return 2
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--vllm-src", required=True, help="the directory holding vllm/ (or vllm/)")
    ap.add_argument("--out", required=True, help="golden JSON file to write ('-' for stdout)")
    ap.add_argument("--case", action="append", help="run only this case (repeatable)")
    ap.add_argument("--device", default="cpu", help="cpu (interpreter, the golden) or cuda")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    doc = Oracle(args.vllm_src, args.device).run(args.case)
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
