#!/usr/bin/env python3
"""How every registered SGLang 0.5.23 architecture loads a checkpoint's KV-scale tensors.

    python tests/parity/sglang_architectures.py --sglang-src /tmp/sgl_dl/src \
        --out tests/parity/sglang_architectures.json      # about a minute
    python tests/parity/render_tables.py                 # -> kvscale/engine/sglang/architectures.py
    python tests/parity/sglang_architectures.py --sglang-src /tmp/sgl_dl/src --check

SGLang's architectures do not share one loader: Llama's ``_legacy_load_weights`` calls
``maybe_remap_kv_scale_name`` before its stacked q/k/v -> qkv_proj rename, Qwen2's never calls
it, Gemma2 renames first and indexes ``params_dict`` without a check, DeepSeek renames
``k_proj`` to ``attn_mqa``... This script finds out which, for every architecture of the model
registry (every ``EntryClass`` of ``srt/models/*.py``), by *running* each one's own
``load_weights`` on KV-scale tensor names, and writes the evidence
(``tests/parity/sglang_architectures.json``: every outcome with its file:line, and the sha256
of every SGLang file read); ``tests/parity/render_tables.py`` renders
``kvscale/engine/sglang/architectures.py`` from it. ``--check`` (also
``tests/parity/test_tables.py`` with ``KVSCALE_SGLANG_SRC`` set) re-derives the evidence and
compares. The parity oracle (``sglang_oracle.py``) uses the same World to *build* the
architectures of its cases with their own ``__init__`` (``Harness(construct=True)``, ``build``)
and SGLang's real RadixAttention and quant configs, then runs their loaders.

How the code is run (nothing of SGLang is installed or copied; it is read from the extracted
wheel at run time):

* Every ``srt/models/`` module is executed whole, from its own file (real module name, file
  name and line numbers), with an ``__import__`` of its own (``World``): other
  ``sglang.srt.models.*`` modules and ``srt/configs/*`` are executed the same way (base
  classes and inherited ``load_weights`` are SGLang's own); ``srt/environ.py`` is executed
  whole (its real defaults: ``SGLANG_ENABLE_WEIGHT_LOADER_V2`` off, so the legacy loaders
  run); the functions that decide where a name goes are SGLang's own, compiled from their
  files (``maybe_remap_kv_scale_name``, ``supports_quantized_rl_reload``, ``replace_prefix``,
  ``replace_substrings``, ``get_layer_id``, ``add_prefix``, ``print_warning_once``,
  ``maybe_executor_submit``, ``FusedMoE.make_expert_params_mapping*``); every other name --
  kernels, layers, distributed state, transformers, triton, any package but torch / numpy --
  is a permissive stub: any attribute, call or subclass works, it is falsy and iterates as
  empty (a stub used as a decorator keeps the function). ``is_cuda()`` is True. Weight
  loads run in line (``should_async_load`` False), not in a thread pool.
* The model object is an instance of the registered class built without its ``__init__``
  (which would construct kernels): ``self.X = <literal>`` assignments of the ``__init__``
  methods are applied (stacked-parameter tables some models keep there), and the module tree
  SGLang gives a decoder model is attached: ``model.embed_tokens``, ``model.layers.{0,1}.
  {input_layernorm, post_attention_layernorm, self_attn.{qkv_proj, o_proj, <radix>},
  mlp.{gate_up_proj, down_proj}}``, ``model.norm``, ``lm_head``, where ``<radix>`` are the
  attribute names the model's family gives its ``RadixAttention`` modules (``self.X =
  RadixAttention(`` in the file of its ``load_weights``, else of its class: ``attn``;
  DeepSeek MLA ``attn_mqa``, ``attn_mha``), each with the float32 ``k_scale``/``v_scale``
  parameters a KV-cache quant method creates (variant ``kv``) or without them (``nokv``).
  Linear parameters carry a ``weight_loader``. ``config`` holds small Llama-like values
  (``CONFIG``; a field the loader needs and it lacks is answered by a stub, and the run
  repeated); other attributes ``__init__`` would have set are answered by stubs. Both are
  listed per architecture in the table's comments. ``post_load_weights`` is a no-op (it
  transforms loaded weights, never names).
* ``BACKGROUND`` -- the checkpoint names of every parameter of that tree -- is loaded first
  (a name the loader cannot take at all, e.g. a model whose checkpoints say ``W_pack``, is
  dropped from it); the baseline (``BASELINE``) must reach its parameters, else the
  architecture is ``not probed`` (another checkpoint layout, a sub-model built in
  ``__init__``, a draft model, a whole-checkpoint check), with the reason.
* Each probe (``model.layers.0.self_attn.<tail>``, ``PROBES``) is loaded after the background
  in one ``load_weights`` call; what it adds to the background's events is its outcome: the
  parameter that received it (``default_weight_loader`` or a parameter's ``weight_loader``),
  what SGLang logged (messages that name the other layer are whole-model summaries and left
  out), or the exception that stopped the load, each with its file:line.

The renderer groups architectures with the same outcomes (names templated: ``{prefix}``,
``{layer}``, ``{name}``) into loader classes. kvscale routes checkpoint names of those classes
by the recorded outcomes (``kvscale.engine.sglang.names.route_recorded``); LlamaForCausalLM's
class through ``names.remap``, which ``tests/test_sglang_parity.py`` checks against the
recorded outcomes.
"""

from __future__ import annotations

import argparse
import ast
import collections
import contextlib
import functools
import hashlib
import importlib.util
import inspect
import json
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EVIDENCE = HERE / "sglang_architectures.json"
SCHEMA = "kvscale.sglang-architectures/2"

PREFIX = "model.layers.0.self_attn"
LAYER = "model.layers.0"
OTHER_LAYER = "model.layers.1."
PROBES: tuple[str, ...] = (
    "k_scale",
    "v_scale",
    "q_scale",
    "kv_scale",
    "prob_scale",
    "k_proj.k_scale",
    "v_proj.v_scale",
    "q_proj.output_scale",
    "k_proj.output_scale",
    "v_proj.output_scale",
    "prob_output_scale",
    "attn.k_scale",
    "attn.v_scale",
    "attn.q_scale",
    "attn.prob_scale",
    "attn._k_scale",
    "attn._v_scale",
    "attn_mqa.k_scale",
    "attn_mqa.v_scale",
    "qkv_proj.k_scale",
    "qkv_proj.v_scale",
    "k_proj.k_bias",
    "v_proj.v_bias",
    "k_cache.scale",
    "v_cache.scale",
    "q.scale",
    "k_zero_point",
    "v_zero_point",
    "q_zero_point",
    "kvscale_unknown_scale",
)
"""Tails under ``model.layers.0.self_attn.``: every KV-scale naming convention kvscale knows
(llm-compressor / AutoFP8, ModelOpt, Quark output_scale / prob_output_scale, the deprecated
kv_scale, vLLM's canonical attn.* and device buffers, DeepSeek's attn_mqa, fused qkv,
ModelOpt's affine bias, HunYuan's k_cache.scale, zero points), and a name no convention has
(``kvscale_unknown_scale``: what the loader does with any other name)."""


def _background_names() -> tuple[str, ...]:
    out = ["model.embed_tokens.weight"]
    lin = ("weight", "weight_scale", "input_scale")
    for i in range(NUM_LAYERS):
        p = f"model.layers.{i}"
        out += [f"{p}.self_attn.{m}_proj.{x}" for m in "qkvo" for x in lin]
        out += [f"{p}.mlp.{m}_proj.{x}" for m in ("gate", "up", "down") for x in lin]
        out += [f"{p}.input_layernorm.weight", f"{p}.post_attention_layernorm.weight"]
    return (*out, "model.norm.weight", "lm_head.weight")


BASELINE: tuple[tuple[str, str], ...] = (
    ("model.layers.0.input_layernorm.weight", "model.layers.0.input_layernorm.weight"),
    ("model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.weight"),
)
"""(checkpoint name, parameter it must reach): the harness's tree is the model's."""

VARIANTS = ("kv", "nokv")
NUM_LAYERS = 2
BACKGROUND = _background_names()
"""The rest of the checkpoint, loaded before each probe: every projection (q/k/v/o,
gate/up/down with fp8 weight and input scales), norm and embedding of a two-layer Llama-like
model, under the names a HF checkpoint uses."""


# ======================================================================================
# Permissive stubs
# ======================================================================================


STUB_CALLS: list[str] | None = None
"""While a probe runs: the stubs called (what the harness could not run for real)."""


class _StubMeta(type):
    """Metaclass of the stubs: a stub is a class (so it can be subclassed, used in
    isinstance, annotations and decorators); every attribute and call gives another stub;
    stubs are falsy, empty, zero. Real classes deriving from a stub behave normally."""

    def _pure(cls) -> bool:
        return bool(cls.__dict__.get("_kvs_pure"))

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(f"{cls.__name__}.{name}")

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if not cls._pure():
            return super().__call__(*args, **kwargs)
        if STUB_CALLS is not None:
            STUB_CALLS.append(cls.__qualname__)
        if len(args) == 1 and not kwargs:
            # A stub used as a decorator keeps what it decorates: functions, and modules
            # (model classes). `register(SomeClass)` of any other class is taken as a
            # decorator factory.
            arg = args[0]
            if inspect.isroutine(arg) or (isinstance(arg, type) and _is_module_class(arg)):
                return arg
        return _stub(f"{cls.__name__}()")

    def __bool__(cls) -> bool:
        return not cls._pure()

    def __iter__(cls) -> Iterator[Any]:
        if not cls._pure():
            raise TypeError(f"{cls.__name__} is not iterable")
        return iter(())

    def __len__(cls) -> int:
        return 0

    def __getitem__(cls, key: Any) -> Any:
        if not cls._pure() and hasattr(cls, "__class_getitem__"):
            return cls.__class_getitem__(key)  # type: ignore[attr-defined]
        return _stub(f"{cls.__name__}[]")

    def __contains__(cls, item: Any) -> bool:
        return False

    def __setitem__(cls, key: Any, value: Any) -> None:
        pass

    def __delitem__(cls, key: Any) -> None:
        pass

    def __enter__(cls) -> Any:
        return cls

    def __exit__(cls, *exc: Any) -> None:
        return None

    def __int__(cls) -> int:
        return 0

    def __index__(cls) -> int:
        return 0

    def __float__(cls) -> float:
        return 0.0

    def __hash__(cls) -> int:
        return id(cls)

    def __eq__(cls, other: object) -> bool:
        return cls is other

    def __lt__(cls, other: Any) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def _same(cls, *other: Any) -> Any:
        return cls

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _same
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _same
    __pow__ = __rpow__ = __and__ = __rand__ = __xor__ = __rxor__ = __neg__ = __pos__ = _same
    __lshift__ = __rshift__ = __matmul__ = __rmatmul__ = __invert__ = _same

    def __or__(cls, other: Any) -> Any:
        return cls if cls._pure() else super().__or__(other)  # type: ignore[misc]

    def __ror__(cls, other: Any) -> Any:
        return cls if cls._pure() else super().__ror__(other)  # type: ignore[misc]

    def __repr__(cls) -> str:
        return f"<stub {cls.__name__}>"


class _StubBase(metaclass=_StubMeta):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _stub(f"{type(self).__name__}().{name}")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        pass


def _is_module_class(cls: type) -> bool:
    torch_nn = sys.modules.get("torch.nn")
    return torch_nn is not None and issubclass(cls, torch_nn.Module)


def _stub(name: str) -> Any:
    short = re.sub(r"\W", "_", name.rsplit(".", 1)[-1]) or "stub"
    return _StubMeta(short, (_StubBase,), {"_kvs_pure": True, "__qualname__": name})


def is_stub(obj: Any) -> bool:
    return isinstance(obj, _StubMeta) and obj._pure()


class StubModule(types.ModuleType):
    """A module every attribute of which is a stub (cached, so identity is stable)."""

    def __init__(self, name: str, overrides: dict[str, Any] | None = None) -> None:
        super().__init__(name)
        self.__path__: list[str] = []
        self.__kvs_stub__ = True
        # version checks at import time (transformers: the version SGLang 0.5.23 pins)
        self.__version__ = "5.19.0" if name.split(".")[0] == "transformers" else "0.0.0"
        for k, v in (overrides or {}).items():
            setattr(self, k, v)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        value = _stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


# ======================================================================================
# Import hook
# ======================================================================================

REAL_TOP_LEVEL = frozenset(["torch", "numpy", "typing_extensions"])
"""Third-party packages SGLang's model files get for real (so the result does not depend on
what else the Python environment has installed); every other non-stdlib import is a stub."""


class World:
    """SGLang's model modules, executed against stubs (see the module docstring).

    Real SGLang modules run with their own ``__import__`` (in their ``__builtins__``), which
    serves ``sglang.*`` (real or stub) and the stubbed third-party packages from this object,
    never from ``sys.modules``; other imports (stdlib, torch) are the normal ones. Inside
    ``with world.active():`` the ``sglang.*`` modules are also in ``sys.modules`` (what
    ``inspect``, ``dataclasses`` and ``typing`` look classes up in)."""

    def __init__(
        self,
        src: str | os.PathLike[str],
        provided: dict[str, dict[str, Any]],
        real: frozenset[str] = frozenset(),
    ) -> None:
        """``real``: modules outside ``srt/models`` and ``srt/configs`` to execute for real."""
        p = Path(src).resolve()
        if (p / "sglang" / "__init__.py").is_file():
            p = p / "sglang"
        if not (p / "srt" / "models" / "llama.py").is_file():
            raise SystemExit(f"{src}: not an extracted SGLang source tree (no srt/models)")
        self.pkg = p
        self.models_dir = p / "srt" / "models"
        self.provided = provided
        self.real = real
        self.used: dict[str, str] = {}
        self.mods: dict[str, types.ModuleType] = {}
        self.make_logger: Callable[[str], Any] = lambda name: None
        self._depth = 0
        import builtins

        self.builtins = dict(builtins.__dict__)
        self.builtins["__import__"] = self._import
        self._installed: set[str] = set()

    # -- which modules are real ---------------------------------------------------------
    def _real_file(self, fullname: str) -> Path | None:
        """The source file of a module executed for real, else None (a stub)."""
        if fullname in self.provided:
            return None
        parts = fullname.split(".")
        for base in (["sglang", "srt", "models"], ["sglang", "srt", "configs"]):
            # the models, and SGLang's own transformers config classes (their modules
            # re-export names some models star-import)
            if parts[:3] == base and len(parts) > 3:
                rel = self.pkg.joinpath(*parts[1:])
                if (rel / "__init__.py").is_file():
                    return rel / "__init__.py"
                if rel.with_suffix(".py").is_file():
                    return rel.with_suffix(".py")
                return None
        if fullname == "sglang.srt.environ" or fullname in self.real:
            return self.pkg.joinpath(*parts[1:]).with_suffix(".py")
        return None

    def _stubbed(self, fullname: str) -> bool:
        top = fullname.split(".")[0]
        return top == "sglang" or not (top in sys.stdlib_module_names or top in REAL_TOP_LEVEL)

    def get(self, fullname: str) -> types.ModuleType:
        """The module (created, and executed if real, on first use)."""
        mod = self.mods.get(fullname)
        if mod is not None:
            return mod
        parent_name, _, child = fullname.rpartition(".")
        parent = self.get(parent_name) if parent_name else None
        f = self._real_file(fullname)
        if f is None and fullname == "sglang.srt.models":
            mod = types.ModuleType(fullname)
            mod.__path__ = [str(self.pkg.joinpath(*fullname.split(".")[1:]))]
            mod.__builtins__ = self.builtins  # type: ignore[attr-defined]
        elif f is None:
            mod = StubModule(fullname, self.provided.get(fullname))
        else:
            mod = types.ModuleType(fullname)
            mod.__file__ = str(f)
            if f.name == "__init__.py":
                mod.__path__ = [str(f.parent)]
                mod.__package__ = fullname
            else:
                mod.__package__ = parent_name
            mod.__builtins__ = self.builtins  # type: ignore[attr-defined]
        self.mods[fullname] = mod
        if self._depth and fullname.split(".")[0] == "sglang":
            self._install(fullname, mod)
        if parent is not None:
            parent.__dict__.setdefault(child, mod)
        if f is not None:
            try:
                self._exec(mod, f)
            except BaseException:
                del self.mods[fullname]
                raise
        return mod

    def _regex(self) -> types.ModuleType:
        """The third-party ``regex`` a few model files import as ``re``: the real one if
        installed, else the standard ``re`` (their patterns behave the same in both)."""
        try:
            import regex

            return regex
        except ImportError:
            return re

    def _import(
        self,
        name: str,
        globals: dict[str, Any] | None = None,  # noqa: A002 (the signature of __import__)
        locals: Any = None,  # noqa: A002
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level:
            package = (globals or {}).get("__package__") or ""
            base = package.rsplit(".", level - 1)[0] if level > 1 else package
            name = f"{base}.{name}" if name else base
        if name == "regex":
            return self._regex()
        if not self._stubbed(name):
            import builtins

            return builtins.__import__(name, globals, locals, fromlist or (), 0)
        mod = self.get(name)
        if fromlist:
            for item in fromlist:
                if item == "*" or item in mod.__dict__:
                    continue
                sub = f"{name}.{item}"
                if self._real_file(sub) is not None:
                    self.get(sub)
            return mod
        if level:
            return mod
        return self.get(name.split(".")[0])

    def _exec(self, module: types.ModuleType, f: Path) -> None:
        data = f.read_bytes()
        self.used[str(f.relative_to(self.pkg))] = hashlib.sha256(data).hexdigest()
        code = compile(data, str(f), "exec", dont_inherit=True)
        exec(code, module.__dict__)
        self._patch(module)

    def _patch(self, module: types.ModuleType) -> None:
        """Route the module's logger to the recorder; give it the provided real functions
        it imported under their own names (they are looked up at call time)."""
        import logging

        ns = module.__dict__
        for key, value in list(ns.items()):
            if isinstance(value, logging.Logger) or (key == "logger" and is_stub(value)):
                ns[key] = self.make_logger(module.__name__)
        for names in self.provided.values():
            for k, v in names.items():
                if k in ns and is_stub(ns[k]):
                    ns[k] = v

    # -- activation -------------------------------------------------------------------
    def _install(self, name: str, mod: types.ModuleType) -> None:
        if name not in self._installed:
            self._saved.setdefault(name, sys.modules.get(name))
            sys.modules[name] = mod
            self._installed.add(name)

    _saved: dict[str, types.ModuleType | None] = {}

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        self._depth += 1
        if self._depth == 1:
            self._saved = {}
            for name, mod in self.mods.items():
                if name.split(".")[0] == "sglang":
                    self._install(name, mod)
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                for name in self._installed:
                    old = self._saved.get(name)
                    if old is None:
                        sys.modules.pop(name, None)
                    else:
                        sys.modules[name] = old
                self._installed = set()
                self._saved = {}

    def module(self, rel: str) -> types.ModuleType:
        """``srt/models/<rel>`` executed."""
        return self.get("sglang.srt.models." + rel.removesuffix(".py").replace("/", "."))

    def model_files(self) -> list[str]:
        """registry.import_model_classes: pkgutil.iter_modules over the package (modules,
        not packages), the ones that assign EntryClass (the others are imported only by the
        models that use them)."""
        return sorted(
            p.name
            for p in self.models_dir.glob("*.py")
            if p.name != "__init__.py" and _ast_entry_names(p)
        )


# ======================================================================================
# Recording what the loaders do
# ======================================================================================


def _site(frame: types.FrameType | None, pkg: Path) -> str | None:
    """file:line (relative to ``sglang/``) of the innermost frame in a model file (the line of
    the model's loader that did it: the call into default_weight_loader, the remap, the log),
    else the innermost frame in SGLang's source."""
    models = str(pkg / "srt" / "models")
    first = None
    while frame is not None:
        f = frame.f_code.co_filename
        if f.startswith(models):
            return f"{os.path.relpath(f, pkg)}:{frame.f_lineno}"
        if first is None and f.startswith(str(pkg)):
            first = f"{os.path.relpath(f, pkg)}:{frame.f_lineno}"
        frame = frame.f_back
    return first


def _tb_site(tb: types.TracebackType | None, pkg: Path) -> str | None:
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(str(pkg)):
            last = f"{os.path.relpath(tb.tb_frame.f_code.co_filename, pkg)}:{tb.tb_lineno}"
        tb = tb.tb_next
    return last


class Recorder:
    """Events of one probe: parameters loaded, messages logged, remap calls."""

    def __init__(self, pkg: Path) -> None:
        self.pkg = pkg
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def add(self, kind: str, depth: int = 2, **data: Any) -> None:
        site = _site(sys._getframe(depth), self.pkg)
        if "message" in data:
            data["message"] = canonical(data["message"])
        with self.lock:
            self.events.append({"event": kind, "site": site, **data})

    def take(self) -> list[dict[str, Any]]:
        out, self.events = self.events, []
        return out


class RecordingLogger:
    """Every module logger. warning/error are recorded (with the calling line);
    ``warning_once``/``info_once`` as transformers 5.19.0 adds them (once per message; the
    memory is cleared per probe); info/debug dropped."""

    def __init__(self, rec: Recorder, name: str) -> None:
        self.rec = rec
        self.name = name
        self.once: set[str] = set()

    @staticmethod
    def _fmt(msg: Any, args: tuple[Any, ...]) -> str:
        try:
            return str(msg) % args if args else str(msg)
        except Exception:  # pragma: no cover - defensive
            return f"{msg} {args}"

    def warning(self, msg: Any, *args: Any, **kw: Any) -> None:
        self.rec.add("log", depth=2, message=self._fmt(msg, args))

    error = warning
    warn = warning

    def warning_once(self, msg: Any, *args: Any, **kw: Any) -> None:
        text = self._fmt(msg, args)
        if text not in self.once:
            self.once.add(text)
            self.rec.add("log", depth=2, message=text)

    def info(self, *a: Any, **k: Any) -> None:
        pass

    info_once = debug = exception = critical_once = info

    def log(self, level: int, msg: Any, *args: Any, **kw: Any) -> None:
        if level >= 30:  # logging.WARNING
            self.rec.add("log", depth=2, message=self._fmt(msg, args))

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 (logging.Logger's name)
        return True

    def reset(self) -> None:
        self.once = set()


class _ParamNames:
    """id(parameter) -> its name in the tree (set when the tree is built)."""

    names: dict[int, str] = {}


def _build_tree(nn: Any, torch: Any, rec: Recorder, radix: tuple[str, ...], kv: bool) -> Any:
    def stacked_loader(param: Any, loaded: Any, *args: Any, **kwargs: Any) -> None:
        shard = kwargs.get("shard_id", args[0] if args else None)
        rec.add(
            "load",
            depth=2,
            param=_ParamNames.names.get(id(param), "?"),
            via="weight_loader",
            shard=None if shard is None else str(shard),
        )

    def p(loader: bool = True) -> Any:
        t = nn.Parameter(torch.zeros(1), requires_grad=False)
        if loader:
            t.weight_loader = stacked_loader
        return t

    def linear() -> Any:
        m = nn.Module()
        for n in ("weight", "weight_scale", "input_scale"):
            m.register_parameter(n, p())
        return m

    def norm() -> Any:
        m = nn.Module()
        m.register_parameter("weight", p(loader=False))
        return m

    class Skeleton(nn.Module):
        pass

    model = Skeleton()
    model.embed_tokens = norm()
    model.layers = nn.ModuleList()
    for _ in range(NUM_LAYERS):
        layer = nn.Module()
        attn = nn.Module()
        attn.qkv_proj = linear()
        attn.o_proj = linear()
        for r in radix:
            radix_mod = nn.Module()
            if kv:
                # BaseKVCacheMethod.create_weights: float32 [] parameters, no weight_loader
                radix_mod.register_parameter(
                    "k_scale",
                    nn.Parameter(torch.tensor(-1.0, dtype=torch.float32), requires_grad=False),
                )
                radix_mod.register_parameter(
                    "v_scale",
                    nn.Parameter(torch.tensor(-1.0, dtype=torch.float32), requires_grad=False),
                )
            attn.add_module(r, radix_mod)
        layer.self_attn = attn
        mlp = nn.Module()
        mlp.gate_up_proj = linear()
        mlp.down_proj = linear()
        layer.mlp = mlp
        layer.input_layernorm = norm()
        layer.post_attention_layernorm = norm()
        model.layers.append(layer)
    model.norm = norm()
    model.start_layer, model.end_layer = 0, NUM_LAYERS
    return model


def _attach(model: Any, config: Any, quant_config: Any) -> None:
    """``self.model.config`` / ``.quant_config`` (some loaders read them there)."""
    for k, v in (("config", config), ("quant_config", quant_config)):
        if not hasattr(model, k):
            setattr(model, k, v)


CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 64,
    "num_hidden_layers": NUM_LAYERS,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 128,
    "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "num_local_experts": 2,
    "num_experts": 2,
    "n_routed_experts": 2,
    "n_shared_experts": 1,
    "num_experts_per_tok": 1,
    "first_k_dense_replace": 0,
    "moe_layer_freq": 1,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "num_nextn_predict_layers": 0,
    "q_lora_rank": None,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 16,
    "qk_rope_head_dim": 8,
    "v_head_dim": 16,
    "hidden_act": "silu",
}
"""The harness model's config.json (Llama-like, two layers; MoE / MLA fields present so MoE
and DeepSeek loaders can compute their expert mappings). Attributes not listed raise
AttributeError like a transformers config does (``getattr(config, x, default)`` works)."""


class HarnessConfig:
    def __init__(self, values: dict[str, Any], seen: set[str]) -> None:
        self.__dict__.update(values)
        self.__dict__["_seen"] = seen

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("__"):
            self.__dict__["_seen"].add(name)
        raise AttributeError(name)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def get_text_config(self) -> HarnessConfig:
        return self


class _FakeQuantConfig:
    """``self.quant_config`` of the harness model: an fp8 config (a KV method exists in the
    ``kv`` variant); methods the loaders may ask are answered neutrally."""

    def get_name(self) -> str:
        return "fp8"

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(f"quant_config.{name}")


class ConfigView:
    """A config.json as the model code sees a transformers config: its fields as
    attributes (a missing one raises AttributeError, so ``getattr(config, x, default)``
    works), ``*_config`` sub-dicts as nested views, ``get_text_config()`` and ``to_dict()``
    as in transformers."""

    def __init__(self, values: dict[str, Any]) -> None:
        for k, v in values.items():
            if isinstance(v, dict) and k.endswith("_config"):
                v = ConfigView(v)
            self.__dict__[k] = v
        dtype = values.get("dtype", values.get("torch_dtype"))
        if isinstance(dtype, str):
            # transformers 5: config.dtype, the torch dtype of config.json's (torch_)dtype
            import torch

            self.__dict__["dtype"] = getattr(torch, dtype)
        if "rope_theta" in values and "rope_parameters" not in values:
            # transformers 5 standardises RoPE settings into rope_parameters
            # (modeling_rope_utils.RotaryEmbeddingConfigMixin), which SGLang reads
            rope = dict(values.get("rope_scaling") or {})
            rope.setdefault("rope_type", rope.pop("type", "default"))
            self.__dict__["rope_parameters"] = {**rope, "rope_theta": values["rope_theta"]}

    def get_text_config(self, *a: Any, **k: Any) -> Any:
        return self.__dict__.get("text_config", self)

    def to_dict(self) -> dict[str, Any]:
        return {
            k: v.to_dict() if isinstance(v, ConfigView) else v for k, v in self.__dict__.items()
        }

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(name)


class _Namespace:
    """Fixed attributes; any other attribute is a stub (the parallel-state objects)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _stub(f"parallel.{name}")


POST_LOAD_STEPS = ("post_load_weights", "_set_mla_wkc_wvc")
"""Methods a model's ``load_weights`` calls after the names are loaded to transform the
loaded weights (MLA's kv_b_proj split into w_kc / w_vc, requantization): no-ops in a build,
as in the probes (the harness's weights are placeholders). ``build`` checks that none
mentions a KV-scale parameter."""

CONSTRUCTION_REAL = frozenset(["sglang.srt.layers.quantization.quark.weights"])
"""Modules a build executes for real besides the models: the quant-method-specific loaders
a model's ``load_weights`` hands names to (gpt-oss under Quark)."""


def _construction_provided(
    h: Harness, provided: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """What a model's ``__init__`` needs besides stubs, for one process with one GPU (TP 1,
    PP 1, no data-parallel attention): the parallel state, and ``make_layers`` building
    every layer in order under SGLang's names (``add_prefix(idx, prefix)``; its layer-stack
    and offloader bookkeeping, which names and quantizes nothing, is left out). The expert
    layer accepts any arguments (its weights are never KV scales)."""
    nn = h.nn
    pp = _Namespace(is_first_rank=True, is_last_rank=True, world_size=1, rank_in_group=0, rank=0)
    parallel = _Namespace(
        tp_size=1,
        tp_rank=0,
        pp_group=pp,
        pp_size=1,
        pp_rank=0,
        attn_tp_size=1,
        attn_tp_rank=0,
        attn_dp_size=1,
        attn_dp_rank=0,
        attn_cp_size=1,
        attn_cp_rank=0,
        attn_dcp_size=1,
        moe_ep_size=1,
        moe_tp_size=1,
        moe_dp_size=1,
        dcp_enabled=False,
        enable_dp_lm_head=False,
    )

    def make_layers(
        num_hidden_layers: int,
        layer_fn: Callable[..., Any],
        pp_rank: int | None = None,
        pp_size: int | None = None,
        prefix: str = "",
        **_: Any,
    ) -> Any:
        modules = nn.ModuleList(
            [
                layer_fn(idx=idx, prefix=f"{prefix}.{idx}" if prefix else str(idx))
                for idx in range(num_hidden_layers)
            ]
        )
        if pp_rank is None or pp_size is None:
            return modules
        return modules, 0, num_hidden_layers

    def make_pp_layers(num_hidden_layers: int, layer_fn: Callable[..., Any], **kw: Any) -> Any:
        return make_layers(num_hidden_layers, layer_fn, pp_rank=0, pp_size=1, **kw)

    class FusedMoE(provided["sglang.srt.layers.moe"]["FusedMoE"]):  # type: ignore[misc,name-defined]
        def __init__(self, *a: Any, **k: Any) -> None:
            nn.Module.__init__(self)

        def __getattr__(self, name: str) -> Any:
            try:
                return nn.Module.__getattr__(self, name)
            except AttributeError:
                if name.startswith("__") or name in ("_parameters", "_buffers", "_modules"):
                    raise
                return _stub(f"FusedMoE().{name}")

    class PreTrainedModel(nn.Module):
        """transformers' base of some SGLang models: a torch module holding ``config``."""

        def __init__(self, config: Any = None, *a: Any, **k: Any) -> None:
            super().__init__()
            self.config = config

        def post_init(self) -> None:
            pass

    parallel_fns = {
        "get_parallel": lambda: parallel,
        "get_pp_group": lambda: pp,
        "get_pp_indices": lambda n, rank, size: (0, n),
        "get_tensor_model_parallel_world_size": lambda: 1,
        "get_tensor_model_parallel_rank": lambda: 0,
        "get_attention_tp_size": lambda: 1,
        "get_attention_tp_rank": lambda: 0,
        "get_attention_dp_size": lambda: 1,
        "get_attention_dp_rank": lambda: 0,
        "get_moe_expert_parallel_world_size": lambda: 1,
        "get_moe_tensor_parallel_world_size": lambda: 1,
        "append_stages": lambda *pairs, **k: tuple(_stub("stage") for _ in pairs),
        "get_num_fused_shared_experts": lambda *a, **k: 0,
        # layer_boundary.factories: the stage declarations (what a layer's FFN is, e.g.
        # sparse), kept as plain records; their executable boundaries are never built
        "declare_attn": lambda **k: _Namespace(**k),
        "declare_ffn": lambda sparse=False, **k: _Namespace(sparse=sparse, **k),
    }
    layers = {"make_layers": make_layers, "make_pp_layers": make_pp_layers}
    moe = {"FusedMoE": FusedMoE}
    ns_rope: dict[str, Any] = {}
    h.tree.exec("srt/utils/hf_transformers/common.py", ["get_rope_config"], ns_rope)
    hf_utils = {"get_rope_config": ns_rope["get_rope_config"]}
    return {
        "sglang.srt.utils": layers,
        "sglang.srt.utils.common": layers,
        "sglang.srt.distributed": parallel_fns,
        "sglang.srt.runtime_context": parallel_fns,
        "sglang.srt.layers.dp_attention": parallel_fns,
        "sglang.srt.layers.moe": moe,
        "sglang.srt.layers.moe.fused_moe_triton": moe,
        "sglang.srt.layers.moe.fused_moe_triton.layer": moe,
        "sglang.srt.utils.hf_transformers_utils": hf_utils,
        "sglang.srt.utils.hf_transformers.common": hf_utils,
        "transformers": {"PreTrainedModel": PreTrainedModel},
        "transformers.modeling_utils": {"PreTrainedModel": PreTrainedModel},
    }


# ======================================================================================
# Running one architecture
# ======================================================================================


@dataclass
class Outcome:
    """What one probe did: ``load`` (parameter), ``drop`` (message or silent), ``raise``."""

    kind: str
    target: str | None = None
    message: str | None = None
    site: str | None = None
    remap_site: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        for k in ("target", "message", "site", "remap_site"):
            v = getattr(self, k)
            if v is not None:
                out[k] = v
        return out


@dataclass
class ArchResult:
    arch: str
    file: str
    cls_site: str
    loader_site: str | None = None
    radix: tuple[str, ...] = ()
    status: str = "probed"
    reason: str | None = None
    outcomes: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    stub_attrs: list[str] = field(default_factory=list)
    config_attrs: list[str] = field(default_factory=list)
    attention_sites: list[dict[str, Any]] = field(default_factory=list)


class Harness:
    """Runs registered architectures' ``load_weights``.

    ``overrides`` replace provided functions per module (the parity oracle passes SGLang's
    own ``default_weight_loader`` and remap wired to its load tracker and logger);
    ``make_logger`` replaces the recording loggers."""

    def __init__(
        self,
        src: str | os.PathLike[str],
        overrides: dict[str, dict[str, Any]] | None = None,
        make_logger: Callable[[str], Any] | None = None,
        *,
        construct: bool = False,
    ) -> None:
        """``construct``: this World builds models with their own ``__init__`` (``build``):
        the construction helpers of ``_construction_provided`` are added (a separate World,
        so the loader probes keep their stubs)."""
        import torch
        from torch import nn

        self.torch, self.nn = torch, nn
        oracle = _load_module("kvscale_sglang_oracle", "sglang_oracle.py")
        self.tree = oracle.SglTree(src)
        self.pkg = self.tree.pkg
        self.rec = Recorder(self.pkg)
        self.loggers: list[RecordingLogger] = []
        self._make_logger = make_logger
        provided = self._provided()
        if construct:
            for module, names in _construction_provided(self, provided).items():
                provided.setdefault(module, {}).update(names)
        for module, names in (overrides or {}).items():
            provided.setdefault(module, {}).update(names)
        self.world = World(src, provided, CONSTRUCTION_REAL if construct else frozenset())
        self.world.make_logger = self._logger
        self._radix_cache: dict[str, tuple[str, ...]] = {}
        self._entry_files: dict[str, str] | None = None

    def build(self, cls: type, config: Any, quant_config: Any) -> Any:
        """The architecture's model, built by its own ``__init__`` (a World made with
        ``construct=True``): ``cls(config=config, quant_config=quant_config, prefix="")``,
        with CUDA streams and events answered by stubs while it runs."""
        torch = self.torch
        saved = (torch.cuda.Stream, torch.cuda.Event)
        torch.cuda.Stream = lambda *a, **k: _stub("torch.cuda.Stream()")  # type: ignore[misc]
        torch.cuda.Event = lambda *a, **k: _stub("torch.cuda.Event()")  # type: ignore[misc]
        try:
            with self.world.active():
                model = cls(config=config, quant_config=quant_config, prefix="")
        finally:
            torch.cuda.Stream, torch.cuda.Event = saved  # type: ignore[misc]
        if not isinstance(model, self.nn.Module):
            raise TypeError(f"{cls.__name__}(...) is not a torch module: {model!r}")
        for module in model.modules():
            for name in POST_LOAD_STEPS:
                step = _find_member(type(module), name)
                if step is None:
                    continue
                if re.search(r"(?<![A-Za-z0-9])(?:k|v|kv)_scale", inspect.getsource(step)):
                    raise AssertionError(f"{type(module).__name__}.{name} reads KV scales")
                object.__setattr__(module, name, _no_post_load)
        return model

    def config_class(self, model_type: str | None) -> type | None:
        """SGLang's own config class for a ``model_type`` (``srt/configs/*.py``, a class
        whose body sets ``model_type = "<it>"``), else None (transformers' own, stubbed)."""
        if not model_type:
            return None
        if self._config_classes is None:
            found: dict[str, tuple[str, str]] = {}
            for f in sorted((self.pkg / "srt" / "configs").glob("*.py")):
                for node in ast.parse(f.read_text()).body:
                    if not isinstance(node, ast.ClassDef):
                        continue
                    for stmt in node.body:
                        if (
                            isinstance(stmt, ast.Assign)
                            and [ast.unparse(t) for t in stmt.targets] == ["model_type"]
                            and isinstance(stmt.value, ast.Constant)
                        ):
                            found.setdefault(stmt.value.value, (f.stem, node.name))
            self._config_classes = found
        hit = self._config_classes.get(model_type)
        if hit is None:
            return None
        with self.world.active():
            return getattr(self.world.get(f"sglang.srt.configs.{hit[0]}"), hit[1])  # type: ignore[no-any-return]

    _config_classes: dict[str, tuple[str, str]] | None = None

    def _logger(self, name: str) -> Any:
        if self._make_logger is not None:
            return self._make_logger(name)
        lg = RecordingLogger(self.rec, name)
        self.loggers.append(lg)
        return lg

    def arch_class(self, arch: str) -> type:
        """The registered class of one architecture (only its file is executed)."""
        if self._entry_files is None:
            self._entry_files = {}
            for fname in self.world.model_files():
                for name in _ast_entry_names(self.world.models_dir / fname):
                    self._entry_files.setdefault(name, fname)
        fname = self._entry_files[arch]
        with self.world.active():
            entry = self.world.module(fname).EntryClass
        for cls in entry if isinstance(entry, list) else [entry]:
            if cls.__name__ == arch:
                return cls  # type: ignore[no-any-return]
        raise LookupError(f"{arch} is not an EntryClass of {fname}")

    def _provided(self) -> dict[str, dict[str, Any]]:
        """The real SGLang functions the stub modules hand out."""
        t = self.tree
        rec = self.rec
        wu_logger = self._logger("sglang.srt.utils.common")
        ns_common: dict[str, Any] = {"functools": functools, "logger": wu_logger}
        t.exec("srt/utils/common.py", ["print_warning_once", "add_prefix"], ns_common)
        self.print_warning_once = ns_common["print_warning_once"]
        ns_lc: dict[str, Any] = {"re": re}
        t.exec("srt/layers/utils/common.py", ["get_layer_id"], ns_lc)
        from collections.abc import Callable as _Callable
        from typing import Optional

        ns_wu: dict[str, Any] = {
            "Optional": Optional,
            "Callable": _Callable,
            "print_warning_once": self.print_warning_once,
            "logger": self._logger("sglang.srt.model_loader.weight_utils"),
            "torch": self.torch,
        }
        t.exec(
            "srt/model_loader/weight_utils.py",
            [
                "maybe_remap_kv_scale_name",
                "supports_quantized_rl_reload",
                "replace_prefix",
                "replace_substrings",
                "RUNAI_STREAMER_TENSOR_ATTR",
            ],
            ns_wu,
        )
        real_remap = ns_wu["maybe_remap_kv_scale_name"]

        def maybe_remap_kv_scale_name(name: str, params_dict: dict[str, Any]) -> str | None:
            rec.add("remap", depth=2, name=name)
            return real_remap(name, params_dict)  # type: ignore[no-any-return]

        def default_weight_loader(param: Any, loaded: Any) -> None:
            rec.add("load", depth=2, param=_ParamNames.names.get(id(param), "?"), via="default")

        ns_moe: dict[str, Any] = {"List": list, "Tuple": tuple, "Optional": Optional}
        node = t.node("srt/layers/moe/fused_moe_triton/layer.py", "FusedMoE")
        assert isinstance(node, ast.ClassDef)
        members = [
            f"FusedMoE.{n.name}"
            for n in node.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("make_expert")
        ]
        ns_moe["_NnModule"] = self.nn.Module
        fused_moe = t.make_class(
            "srt/layers/moe/fused_moe_triton/layer.py", "FusedMoE", ["_NnModule"], members, ns_moe
        )
        utils = {
            "print_warning_once": self.print_warning_once,
            "add_prefix": ns_common["add_prefix"],
            "is_cuda": lambda: True,
            "is_cuda_alike": lambda: True,
        }
        wu = {
            "maybe_remap_kv_scale_name": maybe_remap_kv_scale_name,
            "default_weight_loader": default_weight_loader,
            "supports_quantized_rl_reload": ns_wu["supports_quantized_rl_reload"],
            "replace_prefix": ns_wu["replace_prefix"],
            "replace_substrings": ns_wu["replace_substrings"],
            "RUNAI_STREAMER_TENSOR_ATTR": ns_wu["RUNAI_STREAMER_TENSOR_ATTR"],
        }
        lc = {"get_layer_id": ns_lc["get_layer_id"]}
        ns_mlu: dict[str, Any] = {
            "torch": self.torch,
            "concurrent": __import__("concurrent.futures"),
            "Any": Any,
            "Callable": _Callable,
            "Iterable": __import__("typing").Iterable,
            "List": list,
            "Dict": dict,
            "Optional": Optional,
        }
        t.exec("srt/model_loader/utils.py", ["should_async_load", "maybe_executor_submit"], ns_mlu)
        # Loads run in line, not in a thread pool: the recorder then sees which probe each
        # parameter write belongs to (where it lands is the same).
        mlu = {
            "should_async_load": lambda weight: False,
            "maybe_executor_submit": ns_mlu["maybe_executor_submit"],
        }
        moe = {"FusedMoE": fused_moe}
        return {
            # its module statements import every model through importlib (the real
            # registry); the harness enumerates EntryClass itself
            "sglang.srt.models.registry": {},
            "sglang.srt.utils": utils,
            "sglang.srt.utils.common": utils,
            "sglang.srt.model_loader.weight_utils": wu,
            "sglang.srt.model_loader.utils": mlu,
            "sglang.srt.layers.utils": lc,
            "sglang.srt.layers.utils.common": lc,
            "sglang.srt.layers.moe": moe,
            "sglang.srt.layers.moe.fused_moe_triton": moe,
            "sglang.srt.layers.moe.fused_moe_triton.layer": moe,
        }

    # -- the registry ------------------------------------------------------------------
    def entry_classes(self) -> dict[str, tuple[str, Any]]:
        """Architecture name -> (model file, class or the error executing the file)."""
        out: dict[str, tuple[str, Any]] = {}
        with self.world.active():
            for fname in self.world.model_files():
                try:
                    mod = self.world.module(fname)
                except Exception as e:  # the harness cannot execute this file
                    for arch in _ast_entry_names(self.world.models_dir / fname):
                        out.setdefault(arch, (fname, e))
                    continue
                entry = getattr(mod, "EntryClass", None)
                if entry is None or is_stub(entry):
                    continue
                for cls in entry if isinstance(entry, list) else [entry]:
                    out.setdefault(cls.__name__, (fname, cls))
        return dict(sorted(out.items()))

    def attention_sites(self, cls: type) -> list[dict[str, Any]]:
        """Every ``RadixAttention(...)`` call the architecture can reach, read from the
        source (static): the class, its bases, and every class of ``srt/models`` that a
        reached class body names (module globals, and imports inside its methods), in
        turn. Per call: file:line, the attribute it is assigned to, and the source of its
        ``quant_config`` (None when not passed: no KV method), ``v_head_dim`` and
        ``sliding_window_size`` arguments. A base class's default decoder layer is reached
        even where a subclass passes its own, so an architecture can show sites that its
        build does not use ("mixed")."""
        seen: set[type] = set()
        todo = [cls]
        sites: dict[str, dict[str, Any]] = {}
        while todo:
            current = todo.pop()
            for klass in current.__mro__:
                if klass in seen:
                    continue
                seen.add(klass)
                found = self._class_node(klass)
                if found is None:
                    continue
                rel, node = found
                for call, attr in _radix_calls(node):
                    kw = {k.arg: ast.unparse(k.value) for k in call.keywords if k.arg}
                    site = f"{rel}:{call.lineno}"
                    sites[site] = {
                        "site": site,
                        "attribute": attr,
                        "quant_config": kw.get("quant_config"),
                        "v_head_dim": kw.get("v_head_dim"),
                        "sliding_window_size": kw.get("sliding_window_size"),
                    }
                todo.extend(self._named_model_classes(klass, node))
        return [sites[k] for k in sorted(sites, key=_site_key)]

    def _class_node(self, klass: type) -> tuple[str, ast.ClassDef] | None:
        module = self.world.mods.get(klass.__module__)
        f = getattr(module, "__file__", None)
        if not f or not f.startswith(str(self.world.models_dir)):
            return None
        if f not in _AST_CACHE:
            _AST_CACHE[f] = ast.parse(Path(f).read_text())
        for node in ast.walk(_AST_CACHE[f]):
            if isinstance(node, ast.ClassDef) and node.name == klass.__name__:
                return os.path.relpath(f, self.world.models_dir), node
        return None

    def _named_model_classes(self, klass: type, node: ast.ClassDef) -> list[type]:
        names = dict(self.world.mods[klass.__module__].__dict__)
        for imp in ast.walk(node):
            if isinstance(imp, ast.ImportFrom) and (imp.module or "").startswith(
                "sglang.srt.models"
            ):
                try:
                    module = self.world.get(imp.module or "")
                except Exception:  # a module the harness cannot execute: not followed
                    continue
                for alias in imp.names:
                    if hasattr(module, alias.name):
                        names[alias.asname or alias.name] = getattr(module, alias.name)
        out = []
        for ref in ast.walk(node):
            value = names.get(ref.id) if isinstance(ref, ast.Name) else None
            if isinstance(value, type):
                f = getattr(self.world.mods.get(value.__module__), "__file__", None) or ""
                if f.startswith(str(self.world.models_dir)):
                    out.append(value)
        return out

    def radix_names(self, cls: type) -> tuple[str, ...]:
        """Attribute names of the RadixAttention modules the model's attention creates:
        ``self.X = RadixAttention(`` in the file that defines its ``load_weights`` (the
        model's own family), else in the class's file; ``attn`` if neither has one.
        (DCP-only decode copies are left out.)"""
        files = []
        lw = _find_member(cls, "load_weights")
        if lw is not None:
            files.append(inspect.getsourcefile(lw))
        files.append(inspect.getsourcefile(cls))
        for f in files:
            if f is None:
                continue
            if f not in self._radix_cache:
                src = Path(f).read_text()
                found = re.findall(r"self\.(\w+)\s*=\s*RadixAttention\(", src)
                names = tuple(dict.fromkeys(n for n in found if "dcp" not in n))
                self._radix_cache[f] = names
            if self._radix_cache[f]:
                return self._radix_cache[f]  # in source order: the first is the main one
        return ("attn",)

    def _instance(
        self,
        cls: type,
        tree_model: Any,
        seen: set[str],
        cfg: set[str],
        stubbed_config: dict[str, Any] | None = None,
    ) -> Any:
        nn = self.nn

        def __getattr__(self: Any, name: str) -> Any:  # noqa: N807
            try:
                return nn.Module.__getattr__(self, name)
            except AttributeError:
                if name.startswith("__") or name in ("_parameters", "_buffers", "_modules"):
                    raise
                seen.add(name)
                return _stub(f"self.{name}")

        def post_load_weights(self: Any, *a: Any, **k: Any) -> None:
            return None

        # A model class deriving from a stubbed base (transformers' PreTrainedModel, an
        # nn.Module) is made a module again.
        bases = (cls,) if issubclass(cls, nn.Module) else (cls, nn.Module)
        shell = type(
            cls.__name__,
            bases,
            {
                "__getattr__": __getattr__,
                "post_load_weights": post_load_weights,
                "__module__": cls.__module__,
            },
        )
        obj = shell.__new__(shell)
        nn.Module.__init__(obj)
        obj.config = HarnessConfig({**CONFIG, **(stubbed_config or {})}, cfg)
        obj.quant_config = _FakeQuantConfig()
        obj.model = tree_model
        _attach(tree_model, obj.config, obj.quant_config)
        lm_head = nn.Module()
        lm_head.register_parameter("weight", nn.Parameter(self.torch.zeros(1), requires_grad=False))
        obj.lm_head = lm_head
        for k, v in (
            (
                "pp_group",
                types.SimpleNamespace(
                    is_last_rank=True, is_first_rank=True, world_size=1, rank_in_group=0
                ),
            ),
            ("start_layer", 0),
            ("end_layer", NUM_LAYERS),
            ("num_fused_shared_experts", 0),
            ("tp_size", 1),
            ("tp_rank", 0),
        ):
            with contextlib.suppress(AttributeError):
                object.__setattr__(obj, k, v)
        for k, v in _init_literals(cls).items():
            if k not in obj.__dict__ and k not in ("config", "quant_config", "model"):
                with contextlib.suppress(AttributeError, TypeError):
                    object.__setattr__(obj, k, v)
        _ParamNames.names = {id(p): n for n, p in obj.named_parameters()}
        return obj

    def _load(self, obj: Any, names: Sequence[str]) -> tuple[list[dict[str, Any]], Any]:
        """One ``load_weights`` call on ``names`` (in that order): the events, and the
        exception that stopped it (or None)."""
        torch = self.torch
        for lg in self.loggers:
            lg.reset()
        self.print_warning_once.cache_clear()
        self.rec.take()
        weights = [(n, torch.zeros(1)) for n in names[:-1]]
        # the probe: a 0-d float32 scale, as producers write it
        weights.append((names[-1], torch.tensor(0.5, dtype=torch.float32)))
        error = None
        global STUB_CALLS
        STUB_CALLS = []
        self.last_yielded = None

        def feed() -> Iterator[tuple[str, Any]]:
            for item in weights:
                self.last_yielded = item[0]
                yield item
            self.last_yielded = None

        try:
            with _captured_output(self.rec):
                result = obj.load_weights(feed())
                if inspect.isgenerator(result):
                    list(result)
        except Exception as e:
            error = e
        finally:
            self.last_stub_calls, STUB_CALLS = STUB_CALLS, None
        return self.rec.take(), error

    def _background(
        self, obj: Any, background: list[str]
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Load the checkpoint names of every parameter of the tree (what a real checkpoint
        has besides KV scales); the reason it does not load as the tree says, or None.

        A name the architecture's loader cannot take at all (``KeyError`` while it is
        processed: its checkpoints name that module differently, e.g. ``W_pack``) is left out
        of ``background`` (in both layers), and the load is retried."""
        for _attempt in range(MAX_BACKGROUND_PRUNES):
            events, error = self._load(obj, background)
            culprit = self.last_yielded
            if (
                isinstance(error, KeyError)
                and culprit in background
                and not any(culprit == c for c, _ in BASELINE)
            ):
                for name in [culprit, culprit.replace(LAYER + ".", OTHER_LAYER)]:
                    if name in background:
                        background.remove(name)
                continue
            break
        if error is not None:
            site = _tb_site(error.__traceback__, self.pkg)
            return events, f"raise: {_fmt_exc(error)}{' at ' + site if site else ''}"
        loaded = {e["param"] for e in events if e["event"] == "load"}
        for ckpt, param in BASELINE:
            if param not in loaded:
                logs = [e for e in events if e["event"] == "log" and ckpt in e["message"]]
                how = f"; logged {logs[0]['message'][:160]!r} at {logs[0]['site']}" if logs else ""
                return events, f"{ckpt} does not load into {param}{how}"
        return events, None

    def _probe(
        self, obj: Any, name: str, names: list[str], background: list[dict[str, Any]]
    ) -> Outcome:
        """The probe after the background: what it added to the events."""
        events, error = self._load(obj, [*names, name])
        remaining = collections.Counter(_event_key(e) for e in background)
        own = []
        for e in events:
            k = _event_key(e)
            if remaining[k] > 0:
                remaining[k] -= 1
            else:
                own.append(e)
        remap = next((e["site"] for e in own if e["event"] == "remap"), None)
        loads = [e for e in own if e["event"] == "load"]
        # A message that names the other layer's parameters is a whole-model summary (what
        # was or was not loaded), not about the probe.
        logs = [e for e in own if e["event"] == "log" and OTHER_LAYER not in e["message"]]
        message = " | ".join(e["message"] for e in logs) or None
        if error is not None:
            site = _tb_site(error.__traceback__, self.pkg)
            return Outcome("raise", None, _fmt_exc(error), site, remap)
        if loads:
            target = loads[0]["param"]
            if loads[0]["via"] == "weight_loader" and loads[0].get("shard") is not None:
                target += f" [shard {loads[0]['shard']}]"
            return Outcome("load", target, message, loads[0]["site"], remap)
        return Outcome("drop", None, message, logs[0]["site"] if logs else None, remap)

    def run(self, arch: str, file: str, cls: Any) -> ArchResult:
        res = ArchResult(arch, file, _cls_site(cls, self.pkg) if isinstance(cls, type) else file)
        if not isinstance(cls, type):
            res.status, res.reason = "not-probed", f"the harness cannot execute {file}: {cls!r}"
            return res
        lw = _find_member(cls, "load_weights")
        res.loader_site = _func_site(lw, self.pkg) if lw is not None else None
        seen: set[str] = set()
        cfg: set[str] = set()
        stubbed_config: dict[str, Any] = {}
        with self.world.active():
            res.attention_sites = self.attention_sites(cls)
            res.radix = self.radix_names(cls)
            for _attempt in range(MAX_CONFIG_RETRIES):
                failure = self._run_variants(cls, res, seen, cfg, stubbed_config)
                missing = _missing_config_attr(failure, cfg, stubbed_config)
                if missing is None:
                    break
                # config.json of this architecture has a field the harness config lacks:
                # answer it with a stub and run again (listed in the evidence)
                stubbed_config[missing] = _stub(f"config.{missing}")
            if failure is not None:
                res.status, res.reason, res.outcomes = "not-probed", failure, {}
        res.stub_attrs = sorted(seen)
        res.config_attrs = sorted(stubbed_config)
        return res

    def _run_variants(
        self,
        cls: type,
        res: ArchResult,
        seen: set[str],
        cfg: set[str],
        stubbed_config: dict[str, Any],
    ) -> str | None:
        """Run the probes in both variants; the reason the baseline fails, or None."""
        res.outcomes = {}
        for variant in VARIANTS:
            tree_model = _build_tree(self.nn, self.torch, self.rec, res.radix, variant == "kv")
            try:
                obj = self._instance(cls, tree_model, seen, cfg, stubbed_config)
            except Exception as e:
                return f"cannot build the model object: {_fmt_exc(e)}"
            names = list(BACKGROUND)
            background, failure = self._background(obj, names)
            if failure is not None:
                stubs = sorted(set(self.last_stub_calls))
                return f"background checkpoint: {failure}" + (
                    f"; stubs called: {', '.join(stubs)}" if stubs else ""
                )
            res.outcomes[variant] = {
                t: self._probe(obj, f"{PREFIX}.{t}", names, background) for t in PROBES
            }
        return None


MAX_CONFIG_RETRIES = 12
MAX_BACKGROUND_PRUNES = 60


def _missing_config_attr(failure: str | None, cfg: set[str], stubbed: dict[str, Any]) -> str | None:
    if failure is None:
        return None
    m = re.search(r"raise: AttributeError: (\w+) at ", failure)
    if m and m.group(1) in cfg and m.group(1) not in stubbed:
        return m.group(1)
    return None


@contextlib.contextmanager
def _captured_output(rec: Recorder) -> Iterator[None]:
    import io
    import logging

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING and record.pathname.startswith(str(rec.pkg)):
                site = f"{os.path.relpath(record.pathname, rec.pkg)}:{record.lineno}"
                with rec.lock:
                    rec.events.append(
                        {"event": "log", "site": site, "message": canonical(record.getMessage())}
                    )

    class Printed(io.StringIO):
        def write(self, text: str) -> int:
            if text.strip():
                rec.add("log", depth=2, message=text.strip())
            return len(text)

    handler = Handler()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        with contextlib.redirect_stdout(Printed()):
            yield
    finally:
        root.removeHandler(handler)


_SET_REPR = re.compile(r"\{'[^{}]*'\}")


def canonical(text: str) -> str:
    """Messages that print a set of names do so in hash order: sort them."""
    return _SET_REPR.sub(
        lambda m: "{" + ", ".join(sorted(m.group(0)[1:-1].split(", "))) + "}", text
    )


def _event_key(e: dict[str, Any]) -> tuple[Any, ...]:
    return (e["event"], e.get("param"), e.get("shard"), e.get("message"), e.get("name"))


_AST_CACHE: dict[str, ast.Module] = {}


@functools.cache
def _init_literals(cls: type) -> dict[str, Any]:
    """``self.X = <literal>`` assignments of the ``__init__`` methods of the class and its
    bases (``stacked_params_mapping`` tables that some models build there): the harness
    model does not run ``__init__``, so these are set from SGLang's source instead."""
    out: dict[str, Any] = {}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        code = getattr(init, "__code__", None)
        if code is None or not os.path.isfile(code.co_filename):
            continue
        tree = _AST_CACHE.get(code.co_filename)
        if tree is None:
            tree = _AST_CACHE[code.co_filename] = ast.parse(Path(code.co_filename).read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first != code.co_firstlineno:
                continue
            for stmt in ast.walk(node):
                if (
                    isinstance(stmt, ast.Assign)
                    and len(stmt.targets) == 1
                    and isinstance(stmt.targets[0], ast.Attribute)
                    and isinstance(stmt.targets[0].value, ast.Name)
                    and stmt.targets[0].value.id == "self"
                ):
                    try:
                        value = ast.literal_eval(stmt.value)
                    except (ValueError, TypeError, SyntaxError, RecursionError):
                        continue
                    out.setdefault(stmt.targets[0].attr, value)  # the subclass's wins
            break
    return out


def _no_post_load(*a: Any, **k: Any) -> None:
    return None


def _radix_calls(node: ast.ClassDef) -> Iterator[tuple[ast.Call, str | None]]:
    """``RadixAttention(...)`` calls in a class body, with the attribute each is assigned
    to (``self.attn = RadixAttention(...)``), else None."""
    targets: dict[int, str] = {}
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            target = stmt.targets[0]
            if isinstance(target, ast.Attribute):
                targets[id(stmt.value)] = target.attr
    for call in ast.walk(node):
        if isinstance(call, ast.Call) and ast.unparse(call.func).split(".")[-1] == (
            "RadixAttention"
        ):
            yield call, targets.get(id(call))


def _site_key(site: str) -> tuple[str, int]:
    f, _, line = site.rpartition(":")
    return (f, int(line) if line.isdigit() else 0)


def kv_method_verdict(sites: list[dict[str, Any]]) -> str:
    """``quant_config``: every reachable RadixAttention gets the model's quant config (a
    KV method when the config makes one); ``none``: none does (the layer never has KV
    scales); ``mixed``: both kinds are reachable (a subclass picks; see the build);
    ``no-sites``: none found statically (layers chosen at run time)."""
    passed = {site["quant_config"] not in (None, "None") for site in sites}
    if not passed:
        return "no-sites"
    if passed == {True}:
        return "quant_config"
    return "none" if passed == {False} else "mixed"


def is_mla(sites: list[dict[str, Any]]) -> bool:
    """A latent (MLA) attention is reachable: a RadixAttention named ``attn_mqa`` or whose
    value head is the KV LoRA rank (DeepSeek-V2's ``DeepseekV2AttentionMLA`` and its
    subclasses, MiniCPM3, Sarvam, Dots3, DeepSeek-V4)."""
    return any(
        s["attribute"] == "attn_mqa" or "kv_lora_rank" in (s["v_head_dim"] or "") for s in sites
    )


def _fmt_exc(e: BaseException) -> str:
    msg = canonical(str(e))
    return f"{type(e).__name__}: {msg}" if msg else type(e).__name__


def _find_member(cls: type, name: str) -> Any:
    for k in cls.__mro__:
        if name in k.__dict__:
            f = k.__dict__[name]
            return getattr(f, "__func__", f)
    return None


def _func_site(f: Any, pkg: Path) -> str | None:
    f = inspect.unwrap(f)
    code = getattr(f, "__code__", None)
    if code is None or not code.co_filename.startswith(str(pkg)):
        return None
    return f"{os.path.relpath(code.co_filename, pkg)}:{code.co_firstlineno}"


def _cls_site(cls: type, pkg: Path) -> str:
    try:
        f = inspect.getsourcefile(cls)
        line = inspect.getsourcelines(cls)[1]
    except (OSError, TypeError):
        return cls.__module__
    return f"{os.path.relpath(f or '?', pkg)}:{line}"


@functools.cache
def _ast_entry_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
        ):
            v = node.value
            elts = v.elts if isinstance(v, ast.List) else [v]
            return [e.id for e in elts if isinstance(e, ast.Name)]
    return []


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


# ======================================================================================
# The evidence file
# ======================================================================================

VARIANT_MEANING = {
    "kv": "the RadixAttention modules hold float32 k_scale/v_scale parameters (sentinel -1), as "
    "BaseKVCacheMethod.create_weights makes them when the quant config gives a KV method",
    "nokv": "no KV-cache scale parameters (no KV method)",
}


def derive(src: str, archs: Sequence[str] | None = None) -> dict[str, Any]:
    """Run every registered architecture's loader; the evidence document."""
    h = Harness(src)
    results: dict[str, ArchResult] = {}
    for arch, (file, cls) in h.entry_classes().items():
        if archs and arch not in archs:
            continue
        results[arch] = h.run(arch, file, cls)
    used = {**h.tree.used, **h.world.used}
    return {
        "schema": SCHEMA,
        "provenance": {
            "sglang_version": h.tree.version(),
            "sglang_sources_sha256": dict(sorted(used.items())),
            "generator": "tests/parity/sglang_architectures.py",
        },
        "probe": {
            "prefix": PREFIX,
            "layer": LAYER,
            "tails": list(PROBES),
            "variants": VARIANT_MEANING,
            "background": "every projection (q/k/v/o, gate/up/down with weight, weight_scale, "
            "input_scale), norm and embedding of a two-layer Llama-like model, loaded before "
            "each probe",
        },
        "architectures": {a: _arch_evidence(r) for a, r in sorted(results.items())},
    }


def _arch_evidence(r: ArchResult) -> dict[str, Any]:
    """One architecture: where its class and loader are, and each probe's outcome with the
    KV-scale parameters (``kv``) and, where different, without (``nokv_differs``)."""
    out: dict[str, Any] = {
        "file": r.file,
        "class_site": r.cls_site,
        "loader_site": r.loader_site,
        "status": r.status,
        "reason": r.reason,
        "radix": list(r.radix),
        "stub_attrs": r.stub_attrs,
        "config_attrs": r.config_attrs,
        "attention_sites": r.attention_sites,
        "kv_method": kv_method_verdict(r.attention_sites),
        "mla": is_mla(r.attention_sites),
    }
    if r.outcomes:
        kv, nokv = r.outcomes["kv"], r.outcomes["nokv"]
        out["kv"] = {t: kv[t].to_json() for t in PROBES}
        out["nokv_differs"] = {
            t: nokv[t].to_json() for t in PROBES if nokv[t].to_json() != kv[t].to_json()
        }
    return out


def dumps(doc: dict[str, Any]) -> str:
    """The evidence as JSON text: one line per probe outcome (the file stays readable and
    diffs stay small), everything above it indented."""

    def enc(value: Any, depth: int, indent: str) -> str:
        if not isinstance(value, dict) or not value or depth >= 4:
            return json.dumps(value, ensure_ascii=False)
        inner = indent + " "
        items = [f"{inner}{json.dumps(k)}: {enc(v, depth + 1, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"

    return enc(doc, 0, "") + "\n"


def summary(doc: dict[str, Any]) -> str:
    archs = doc["architectures"]
    probed = sum(1 for e in archs.values() if e["status"] == "probed")
    return (
        f"SGLang {doc['provenance']['sglang_version']}: {len(archs)} architectures, "
        f"{probed} probed, {len(archs) - probed} not probed"
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--sglang-src", required=True, help="the extracted wheel (holds sglang/)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", help=f"write the evidence here ({EVIDENCE.relative_to(REPO)})")
    mode.add_argument(
        "--check", action="store_true", help="fail if the committed evidence is stale"
    )
    ap.add_argument("--arch", action="append", help="only this architecture (debugging)")
    args = ap.parse_args(argv)
    if args.check and args.arch:
        ap.error("--check derives every architecture")
    doc = derive(args.sglang_src, args.arch)
    print(summary(doc))
    text = dumps(doc)
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}; render the table with python tests/parity/render_tables.py")
        return 0
    if EVIDENCE.read_text() != text:
        print(f"{EVIDENCE} is stale: regenerate it with --out", file=sys.stderr)
        return 1
    print(f"{EVIDENCE} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
