"""Static analysis of vLLM 0.33.0's model registry for tests/parity/vllm_arch_oracle.py
(--classes-out): every registered architecture -> the facts that decide what happens to a
checkpoint's KV-cache scales, each with file:line evidence.

Facts per architecture (the oracle executes at least one architecture of each resulting
class with vLLM's real loaders; the rest is read from the source, not run):

* holders: the KV-scale holders its module tree constructs (classes reached from the
  architecture's class through the names its methods use) -- `Attention` and subclasses,
  `MLAAttention` (directly, through `MultiHeadLatentAttentionWrapper`, or subclassed),
  custom layers that call `_init_kv_cache_quant` (KV method possible only if a quant config
  returns one for that class: none does) or only `set_default_quant_scales` (always 1.0) --
  and whether each construction passes `quant_config` (without it no KV method exists,
  whatever the checkpoint's quantization: the scales stay 1.0).
* top_loader: the effective top-level `load_weights` (MRO, following `super()`), whether it
  uses `AutoWeightsLoader` and with which `mapper=`; where that loader finds a
  `quant_config` (the model itself or its first direct child that has the attribute:
  AutoWeightsLoader.load_weights); `sample_names`: the sample checkpoint KV names whose
  top-level result differs from Llama's (no model mapper), each as [with the base
  cache-scale mapper (ModelOpt / compressed-tensors), with Fp8Config's / QuarkConfig's, with
  no quant config], mapped with vLLM's own WeightsMapper._map_name_with_shard.
* inner_loaders: `load_weights` of the classes below (they receive the names the top pass
  produced): `maybe_remap_kv_scale_name` calls, nested `AutoWeightsLoader` (and where it
  finds a `quant_config`), and whether a name that is not a parameter is skipped or indexes
  `params_dict` (KeyError).
* model_child: the class built as `self.model` (through a `_init_model` factory too) and
  the load_weights it inherits: the module whose loader receives the `model.` names, and
  whose class name vLLM's AutoWeightsLoader quotes when it refuses one.
* mapper_rules (top and inner loaders): the model's own WeightsMapper each loader applies
  (`mapper=` or `self.hf_to_vllm_mapper.apply`), evaluated from the source, as its tables in
  insertion order (regex, substr, stacked, prefix, suffix); kvscale renders them into
  kvscale/engine/vllm/arch_classes.py.
* language_model: multimodal wrappers that build a registered text architecture
  (`init_vllm_registered_model`), with `architectures=` when literal.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any

ATTN_FILE = "model_executor/layers/attention/attention.py"
MLA_FILE = "model_executor/layers/attention/mla_attention.py"
WRAP_FILE = "model_executor/layers/mla.py"
LMHEAD_FILE = "model_executor/layers/vocab_parallel_embedding.py"
LINEAR_FILE = "model_executor/layers/linear.py"
REGISTRY = "model_executor/models/registry.py"
MODELS_CONFIG = "model_executor/models/config.py"

# positional index of `quant_config` in the constructors (their signatures in 0.33.0)
_QC_POS = {"Attention": 7, "MLAAttention": 10, "MultiHeadLatentAttentionWrapper": 10}

SAMPLE_PREFIXES = (
    "model.layers.0.self_attn",
    "model.language_model.layers.0.self_attn",
    "language_model.model.layers.0.self_attn",
)
SAMPLE_COLUMNS = ("modelopt/ct cache mapper", "fp8/quark cache mapper", "no quant_config")
SAMPLE_SUFFIXES = (
    "k_scale",
    "k_proj.k_scale",
    "kv_scale",
    "attn.k_scale",
    "mla_attn.mla_attn.k_scale",
    "k_proj.output_scale",
)


def _loc(rel: str, node: ast.AST) -> str:
    return f"vllm/{rel}:{getattr(node, 'lineno', '?')}"


class StaticIndex:
    """vo._SrcIndex plus module-level functions."""

    def __init__(self, vo: Any, tree: Any) -> None:
        self.vo = vo
        self.t = tree
        self.idx = vo._SrcIndex(tree)
        self._funcs: dict[str, dict[str, ast.FunctionDef]] = {}

    def functions(self, rel: str) -> dict[str, ast.FunctionDef]:
        if rel not in self._funcs:
            self._funcs[rel] = {
                n.name: n for n in self.t.tree(rel).body if isinstance(n, ast.FunctionDef)
            }
        return self._funcs[rel]

    def resolve_function(
        self, rel: str, name: str, depth: int = 0
    ) -> tuple[str, ast.FunctionDef] | None:
        if depth > 6:
            return None
        if name in self.functions(rel):
            return rel, self.functions(rel)[name]
        imp = self.idx.info(rel)["imports"].get(name)
        if imp and imp[0] is not None:
            return self.resolve_function(imp[0], imp[1], depth + 1)
        return None

    def resolve_class(self, rel: str, name: str) -> tuple[str, ast.ClassDef] | None:
        try:
            got = self.idx.resolve_class(rel, name)
        except SyntaxError:
            return None
        if got is None and rel.endswith("__init__.py"):
            # platform packages import inside `if current_platform.is_cuda(): ...`: the
            # first branch that binds the name (CUDA first in every 0.33.0 package)
            for n in ast.walk(self.t.tree(rel)):
                if isinstance(n, ast.ImportFrom) and n.level:
                    for a in n.names:
                        if (a.asname or a.name) == name:
                            src = self.idx.rel_for_module(n.module or "", rel, n.level)
                            if src is not None:
                                return self.resolve_class(src, a.name)
        return got

    def module_value(self, rel: str, name: str) -> tuple[str, ast.expr] | None:
        """A module-level `name = <expr>` of rel (or imported from another vLLM file)."""
        info = self.idx.info(rel)
        if name in info["assigns"]:
            return rel, info["assigns"][name]
        imp = info["imports"].get(name)
        if imp and imp[0] is not None and imp[0] != rel:
            sub = self.idx.info(imp[0])
            if imp[1] in sub["assigns"]:
                return imp[0], sub["assigns"][imp[1]]
        return None

    def mro(self, rel: str, cls: ast.ClassDef) -> list[tuple[str, ast.ClassDef]]:
        return self.idx.mro(rel, cls)[0]

    def mro_names(self, rel: str, cls: ast.ClassDef) -> set[tuple[str, str]]:
        return {(r, c.name) for r, c in self.mro(rel, cls)}


def _holder_kind(si: StaticIndex, rel: str, cls: ast.ClassDef) -> str | None:
    names = si.mro_names(rel, cls)
    if (WRAP_FILE, "MultiHeadLatentAttentionWrapper") in names:
        return "MultiHeadLatentAttentionWrapper"
    if (MLA_FILE, "MLAAttention") in names:
        return "MLAAttention"
    if (ATTN_FILE, "Attention") in names:
        return "Attention"
    return None


def _custom_holder_kind(cls: ast.ClassDef) -> str | None:
    calls = {
        ast.unparse(n.func)
        for n in ast.walk(cls)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
    }
    if "_init_kv_cache_quant" in calls:
        return "custom (_init_kv_cache_quant)"
    if "set_default_quant_scales" in calls:
        return "custom (set_default_quant_scales only)"
    return None


def _local_classes(func: ast.AST) -> dict[str, set[str]]:
    """name -> class names assigned to it in this function (attn_cls = A if c else B)."""
    out: dict[str, set[str]] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            names = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)}
            out.setdefault(n.targets[0].id, set()).update(names)
        elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value:
            names = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)}
            out.setdefault(n.target.id, set()).update(names)
    return out


def _quant_arg(call: ast.Call, kind: str) -> str:
    for k in call.keywords:
        if k.arg == "quant_config":
            return ast.unparse(k.value)
    if any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    ):
        return "via *args/**kwargs"
    pos = _QC_POS.get(kind)
    if pos is not None and len(call.args) > pos:
        return ast.unparse(call.args[pos])
    return "absent"


def _is_model_code(rel: str) -> bool:
    return rel.startswith("model_executor/models/") or rel.startswith("models/")


class Reach:
    """Classes and module functions reachable from an architecture's class."""

    def __init__(self, si: StaticIndex) -> None:
        self.si = si

    def run(self, rel: str, cls: ast.ClassDef) -> dict[str, Any]:
        si = self.si
        seen: set[tuple[str, str]] = set()
        stack: list[tuple[str, ast.AST]] = [(rel, cls)]
        holders: dict[str, dict[str, Any]] = {}
        custom: dict[str, str] = {}
        loaders: list[tuple[str, ast.ClassDef]] = []
        registered: list[str] = []
        while stack:
            r, node = stack.pop()
            key = (r, f"{getattr(node, 'name', '?')}:{getattr(node, 'lineno', 0)}")
            if key in seen:
                continue
            seen.add(key)
            bodies: list[tuple[str, ast.AST]] = []
            if isinstance(node, ast.ClassDef):
                for rr, cc in si.mro(r, node):
                    if not _is_model_code(rr) and rr != WRAP_FILE:
                        continue
                    bodies.append((rr, cc))
                    ck = _custom_holder_kind(cc)
                    if ck and _is_model_code(rr):
                        custom[f"{cc.name} ({_loc(rr, cc)})"] = ck
                    if any(
                        isinstance(b, ast.FunctionDef) and b.name == "load_weights" for b in cc.body
                    ) and _is_model_code(rr):
                        loaders.append((rr, cc))
            else:
                bodies.append((r, node))
            for rr, body in bodies:
                for fn in [
                    n for n in ast.walk(body) if isinstance(n, (ast.FunctionDef, ast.Lambda))
                ] or [body]:
                    local = _local_classes(fn)
                    for call in (n for n in ast.walk(fn) if isinstance(n, ast.Call)):
                        self._call(rr, call, local, holders)
                        if ast.unparse(call.func) == "init_vllm_registered_model":
                            arch = next(
                                (
                                    ast.unparse(k.value)
                                    for k in call.keywords
                                    if k.arg == "architectures"
                                ),
                                "from hf_config",
                            )
                            registered.append(f"{arch} ({_loc(rr, call)})")
                for n in ast.walk(body):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                        got = si.resolve_class(rr, n.id)
                        if got is not None:
                            if _is_model_code(got[0]) or got[0] == WRAP_FILE:
                                stack.append(got)
                            continue
                        fgot = si.resolve_function(rr, n.id)
                        if fgot is not None and _is_model_code(fgot[0]):
                            stack.append(fgot)
                            continue
                        vgot = si.module_value(rr, n.id)
                        if (
                            vgot is not None
                            and _is_model_code(vgot[0])
                            and isinstance(
                                vgot[1], (ast.Dict, ast.List, ast.Tuple, ast.Name, ast.IfExp)
                            )
                        ):
                            stack.append(vgot)
        return {
            "holders": sorted(holders.values(), key=lambda h: h["at"]),
            "custom_holders": custom,
            "loaders": loaders,
            "registered": sorted(set(registered)),
        }

    def _call(
        self,
        rel: str,
        call: ast.Call,
        local: Mapping[str, set[str]],
        holders: dict[str, dict[str, Any]],
    ) -> None:
        si = self.si
        f = call.func
        cands: list[str] = []
        if isinstance(f, ast.Name):
            cands = [f.id, *sorted(local.get(f.id, ()))]
        elif isinstance(f, ast.Attribute) and ast.unparse(f) == "super().__init__":
            return
        for name in cands:
            got = si.resolve_class(rel, name)
            if got is None:
                continue
            kind = _holder_kind(si, *got)
            if kind is None:
                continue
            at = _loc(rel, call)
            base_kind = "Attention" if kind == "Attention" else kind
            holders[at + ":" + got[1].name] = {
                "class": got[1].name,
                "kind": "MLAAttention (via MultiHeadLatentAttentionWrapper)"
                if kind == "MultiHeadLatentAttentionWrapper"
                else kind,
                "at": at,
                "quant_config": _quant_arg(call, base_kind if name == f.id or True else kind),
                "defined": _loc(*got) if isinstance(got[1], ast.ClassDef) else "?",
            }


def _mutates_quant_attr(si: StaticIndex, rel: str, cls: ast.ClassDef) -> str | None:
    for r, c in si.mro(rel, cls):
        if c.name == "SupportsQuant":
            return f"SupportsQuant ({_loc(r, c)})"
        for n in ast.walk(c):
            if isinstance(n, (ast.Assign, ast.AnnAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for tg in targets:
                    if ast.unparse(tg) == "self.quant_config":
                        return f"self.quant_config ({_loc(r, n)})"
    return None


def _quant_config_source(si: StaticIndex, rel: str, cls: ast.ClassDef) -> str:
    """Where AutoWeightsLoader(self) finds quant_config: self, else the first direct child
    (registration order in __init__) that has the attribute (models/utils.py,
    AutoWeightsLoader.load_weights)."""
    own = _mutates_quant_attr(si, rel, cls)
    if own:
        return f"self: {own}"
    inits = [
        (r, b)
        for r, c in si.mro(rel, cls)
        for b in c.body
        if isinstance(b, ast.FunctionDef) and b.name == "__init__" and _is_model_code(r)
    ]
    if not inits:
        return "unknown (no __init__ found)"
    # base classes' __init__ first: super().__init__() usually runs before the subclass
    # registers its own children
    assigns = [(r, n) for r, f in reversed(inits) for n in ast.walk(f)]
    for irel, n in assigns:
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1):
            continue
        tg = ast.unparse(n.targets[0])
        if not tg.startswith("self.") or tg.count(".") != 1 or not isinstance(n.value, ast.Call):
            continue
        fname = ast.unparse(n.value.func)
        if fname == "init_vllm_registered_model":
            return f"child {tg[5:]}: the registered inner model ({_loc(irel, n)})"
        got = si.resolve_class(irel, fname.split(".")[-1])
        if got is None:
            continue
        names = si.mro_names(*got)
        if (LMHEAD_FILE, "ParallelLMHead") in names or (LINEAR_FILE, "LinearBase") in names:
            qc = _quant_arg(n.value, "")
            return f"child {tg[5:]} ({got[1].name}, quant_config={qc}) ({_loc(irel, n)})"
        sub = _mutates_quant_attr(si, *got)
        if sub:
            return f"child {tg[5:]} ({got[1].name}: {sub})"
    return "none (no cache-scale mapper, no ignored suffixes)"


def _loader_facts(si: StaticIndex, rel: str, func: ast.FunctionDef) -> dict[str, Any]:
    out: dict[str, Any] = {"at": _loc(rel, func)}
    remaps = [
        n.lineno
        for n in ast.walk(func)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "maybe_remap_kv_scale_name"
    ]
    autos = [
        n
        for n in ast.walk(func)
        if isinstance(n, ast.Call) and ast.unparse(n.func) == "AutoWeightsLoader"
    ]
    if remaps:
        out["maybe_remap_kv_scale_name"] = [f"vllm/{rel}:{x}" for x in remaps]
    if autos:
        out["AutoWeightsLoader"] = [_loc(rel, a) for a in autos]
        mappers = [
            ast.unparse(k.value)
            for n in ast.walk(func)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "load_weights"
            for k in n.keywords
            if k.arg == "mapper"
        ]
        if mappers:
            out["mapper"] = mappers
    text = ast.unparse(func)
    guarded = ("not in params_dict" in text) or ("in params_dict" in text and "load_param" in text)
    indexes = "params_dict[" in text
    if indexes and not autos:
        out["unknown_names"] = (
            "checked against params_dict on some paths (see code)"
            if guarded
            else "params_dict[name] unguarded: an unknown name raises KeyError"
        )
    delegates = sorted(
        {
            ast.unparse(n.func.value)
            for n in ast.walk(func)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "load_weights"
            and ast.unparse(n.func.value).startswith("self.")
        }
    )
    if delegates:
        out["delegates_to"] = delegates
    return out


def _top_loader(si: StaticIndex, rel: str, cls: ast.ClassDef, code: Any) -> dict[str, Any]:
    vo = si.vo
    mro = si.mro(rel, cls)
    lw = vo._class_attr(mro, "load_weights")
    if lw is None or not isinstance(lw[2], ast.FunctionDef):
        return {"kind": "unresolved", "reason": "no load_weights in the resolvable MRO"}
    lrel, lcls, func = lw
    chain = [f"{_loc(lrel, func)} ({lcls.name}.load_weights)"]
    while True:
        calls = [
            n
            for n in ast.walk(func)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "load_weights"
        ]
        autos = [c for c in calls if "AutoWeightsLoader" in ast.unparse(func)]
        supers = [c for c in calls if ast.unparse(c.func.value) == "super()"]
        if autos or not supers:
            break
        pos = next(i for i, (_r, c) in enumerate(mro) if c is lcls)
        nxt = vo._class_attr(mro[pos + 1 :], "load_weights")
        if nxt is None or not isinstance(nxt[2], ast.FunctionDef):
            break
        lrel, lcls, func = nxt
        chain.append(f"{_loc(lrel, func)} ({lcls.name}.load_weights)")
    out: dict[str, Any] = {"load_weights": chain}
    facts = _loader_facts(si, lrel, func)
    out.update({k: v for k, v in facts.items() if k != "at"})
    if "AutoWeightsLoader" not in facts:
        out["kind"] = "custom (no AutoWeightsLoader at the top level)"
        rules = _applied_mapper_rules(si, code, lrel, lcls, func)
        if rules:
            out["mapper_rules"] = rules
        return out
    out["kind"] = "AutoWeightsLoader"
    out["quant_config_source"] = _quant_config_source(si, rel, cls)
    local = vo._function_locals(func)
    mapper_kw = None
    for n in ast.walk(func):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and n.func.attr == "load_weights"
        ):
            mapper_kw = next((k.value for k in n.keywords if k.arg == "mapper"), mapper_kw)
    ev = vo._MapperEval(si.idx, code.base.WeightsMapper)
    try:
        top = (
            code.base.WeightsMapper()
            if mapper_kw is None
            else ev.eval(mapper_kw, lrel, lcls, local)
        )
        if top is None:
            top = code.base.WeightsMapper()
    except vo._Unresolved as e:
        out["mapper_unresolved"] = f"{ast.unparse(mapper_kw) if mapper_kw else ''}: {e}"
        return out
    if not isinstance(top, code.base.WeightsMapper):
        out["mapper_unresolved"] = "not a WeightsMapper"
        return out
    if vo._mutates_mapper(mro):
        out["mapper_extended_at_runtime"] = vo._mutates_mapper(mro)
    out["mapper_evidence"] = ev.evidence
    rules = mapper_rules(top)
    if rules:
        out["mapper_rules"] = rules
    base_cache = code.base.quant_classes["modelopt"].get_cache_scale_mapper()
    fp8_cache = code.base.quant_classes["fp8"].get_cache_scale_mapper()
    rotary = code.base.AutoWeightsLoader.REMOVE_UNUSED_ROTARY_EMBEDS_MAPPER
    empty = code.base.WeightsMapper()

    def row(model_mapper: Any, name: str) -> list[str | None]:
        out_row: list[str | None] = []
        for cache in (base_cache, fp8_cache, None):
            mapper = model_mapper | cache | rotary if cache is not None else model_mapper | rotary
            res = mapper._map_name_with_shard(name)
            out_row.append(None if res is None else res[0])
        return out_row

    samples: dict[str, list[str | None]] = {}
    for pfx in SAMPLE_PREFIXES:
        for sfx in SAMPLE_SUFFIXES:
            name = f"{pfx}.{sfx}"
            mine = row(top, name)
            if mine != row(empty, name):  # only where the model's mapper changes the name
                samples[name] = mine
    out["sample_names"] = samples
    return out


def mapper_rules(mapper: Any) -> dict[str, list[list[Any]]]:
    """A model's WeightsMapper as data, each table in its insertion order (the order
    WeightsMapper._map_name_with_shard applies them: renaming, regex, substr, stacked,
    prefix, suffix; a None target drops the weight)."""
    out: dict[str, list[list[Any]]] = {}
    if mapper.orig_to_new_renaming:
        out["renaming"] = [[repr(r)] for r in mapper.orig_to_new_renaming]
    tables = (
        ("regex", [[p.pattern, v] for p, v in mapper.orig_to_new_regex.items()]),
        ("substr", [[k, v] for k, v in mapper.orig_to_new_substr.items()]),
        ("stacked", [[k, v[0]] for k, v in mapper.orig_to_new_stacked.items()]),
        ("prefix", [[k, v] for k, v in mapper.orig_to_new_prefix.items()]),
        ("suffix", [[k, v] for k, v in mapper.orig_to_new_suffix.items()]),
    )
    for key, rows in tables:
        if rows:
            out[key] = rows
    return out


def _applied_mapper_rules(
    si: StaticIndex, code: Any, rel: str, cls: ast.ClassDef, func: ast.FunctionDef
) -> dict[str, Any] | None:
    """The mapper a load_weights applies: the `mapper=` of its AutoWeightsLoader call, or the
    `self.hf_to_vllm_mapper.apply(...)` of a hand-written loader; None when it applies none
    (an unevaluable one is reported as such)."""
    vo = si.vo
    node: ast.expr | None = None
    for n in ast.walk(func):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            if n.func.attr == "load_weights":
                node = next((k.value for k in n.keywords if k.arg == "mapper"), node)
            elif n.func.attr == "apply" and ast.unparse(n.func.value).endswith("hf_to_vllm_mapper"):
                node = n.func.value
    if node is None:
        return None
    ev = vo._MapperEval(si.idx, code.base.WeightsMapper)
    try:
        mapper = ev.eval(node, rel, cls, vo._function_locals(func))
    except vo._Unresolved as e:
        return {"unresolved": f"{ast.unparse(node)}: {e}"}
    if not isinstance(mapper, code.base.WeightsMapper):
        return {"unresolved": f"{ast.unparse(node)}: not a WeightsMapper"}
    rules: dict[str, Any] = dict(mapper_rules(mapper))
    rules["evidence"] = ev.evidence
    return rules


def _returned_class(si: StaticIndex, rel: str, func: ast.FunctionDef) -> tuple[str, Any] | None:
    for n in ast.walk(func):
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Call):
            if isinstance(n.value.func, ast.Name):
                got = si.resolve_class(rel, n.value.func.id)
                if got is not None:
                    return got
    return None


def model_child(si: StaticIndex, rel: str, cls: ast.ClassDef, attr: str = "model") -> Any:
    """The class an architecture builds as `self.<attr>` (the decoder stack whose loader
    receives the names under `<attr>.`), following a `self._init_model(...)`-style factory
    or a `self.model_cls(...)` class attribute to its most-derived override; None when not
    resolvable."""
    mro = si.mro(rel, cls)
    for r, c in mro:
        for fn in (b for b in c.body if isinstance(b, ast.FunctionDef)):
            for n in ast.walk(fn):
                if not (
                    isinstance(n, ast.Assign)
                    and len(n.targets) == 1
                    and ast.unparse(n.targets[0]) == f"self.{attr}"
                    and isinstance(n.value, ast.Call)
                ):
                    continue
                f = n.value.func
                got = None
                if isinstance(f, ast.Name):
                    got = si.resolve_class(r, f.id)
                elif isinstance(f, ast.Attribute) and ast.unparse(f.value) == "self":
                    found = si.vo._class_attr(mro, f.attr)
                    if found is not None and isinstance(found[2], ast.FunctionDef):
                        got = _returned_class(si, found[0], found[2])
                    elif (
                        found is not None
                        and isinstance(found[2], ast.Assign)
                        and isinstance(found[2].value, ast.Name)
                    ):
                        # a class attribute naming the class (`model_cls = DeepseekV2Model`)
                        got = si.resolve_class(found[0], found[2].value.id)
                if got is None:
                    continue
                crel, ccls = got
                out: dict[str, Any] = {"attr": attr, "class": ccls.name, "at": _loc(r, n)}
                lw = si.vo._class_attr(si.mro(crel, ccls), "load_weights")
                if lw is not None and isinstance(lw[2], ast.FunctionDef):
                    out["load_weights"] = f"{_loc(lw[0], lw[2])} ({lw[1].name}.load_weights)"
                return out
    return None


def classify_registry(oracle: Any) -> dict[str, Any]:
    tree = oracle.tree
    code = oracle.code
    oracle_vo = __import__("sys").modules["kvscale_parity_vllm_oracle"]
    si = StaticIndex(oracle_vo, tree)
    reg = tree.tree(REGISTRY)
    ns: dict[str, Any] = {"__builtins__": __builtins__}
    for node in reg.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            tgt = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(tgt, ast.Name) and tgt.id.startswith("_") and tgt.id.endswith("_MODELS"):
                try:
                    exec(tree.compile(REGISTRY, [node]), ns)
                except Exception:
                    pass
    registry = {
        a: v
        for a, v in (ns.get("_VLLM_MODELS") or {}).items()
        if isinstance(v, tuple) and len(v) >= 2
    }
    hooks = code._config_hook_names if hasattr(code, "_config_hook_names") else {}
    if not hooks:
        code.config_hook("__none__")
        hooks = code._config_hook_names
    reach = Reach(si)
    executed = _executed_architectures(oracle)
    results: dict[str, Any] = {}
    for arch in sorted(registry):
        modname, clsname = registry[arch][0], registry[arch][1]
        r: dict[str, Any] = {"module": modname, "class": clsname}
        results[arch] = r
        rel = si.idx.rel_for_module(modname)
        if rel is None:
            r["class_of_loader"] = "unresolved"
            r["reason"] = f"module {modname} not found"
            continue
        got = si.resolve_class(rel, clsname)
        if got is None:
            r["class_of_loader"] = "unresolved"
            r["reason"] = f"{clsname} not statically resolvable in {rel} (built at import time)"
            continue
        crel, cls = got
        r["resolved"] = _loc(crel, cls)
        if rel.endswith("__init__.py") and crel != rel:
            r["platform_dispatch"] = (
                f"vllm/{rel} picks the implementation by platform; analysed: vllm/{crel}"
            )
        try:
            reached = reach.run(crel, cls)
        except RecursionError:
            reached = {"holders": [], "custom_holders": {}, "loaders": [], "registered": []}
        r["holders"] = reached["holders"]
        if reached["custom_holders"]:
            r["custom_holders"] = reached["custom_holders"]
        if reached["registered"]:
            r["language_model"] = reached["registered"]
        r["top_loader"] = _top_loader(si, crel, cls, code)
        child = model_child(si, crel, cls)
        if child is not None:
            r["model_child"] = child
        inner = []
        top_chain = " ".join(r["top_loader"].get("load_weights", []))
        seen_loaders: set[str] = set()
        for lrel, lcls in reached["loaders"]:
            fn = next(
                b for b in lcls.body if isinstance(b, ast.FunctionDef) and b.name == "load_weights"
            )
            key = _loc(lrel, fn)
            if (
                f"({lcls.name}.load_weights)" in top_chain
                or key in seen_loaders
                or lrel == "model_executor/models/utils.py"
            ):
                continue
            seen_loaders.add(key)
            facts = _loader_facts(si, lrel, fn)
            facts["class"] = lcls.name
            rules = _applied_mapper_rules(si, code, lrel, lcls, fn)
            if rules:
                facts["mapper_rules"] = rules
            if "AutoWeightsLoader" in facts:
                facts["quant_config_source"] = _quant_config_source(si, lrel, lcls)
            inner.append(facts)
        if inner:
            r["inner_loaders"] = sorted(inner, key=lambda x: x["at"])
        if arch in hooks:
            r["config_hook"] = f"MODELS_CONFIG_MAP[{arch!r}] = {hooks[arch]} (vllm/{MODELS_CONFIG})"
        r["class_of_loader"] = _class_label(r)
        if arch in executed:
            r["executed_by_oracle"] = executed[arch]
    # multimodal wrappers naming their text architecture: inherit its holders' class
    for r in results.values():
        lm = r.get("language_model") or []
        if r.get("holders") or not lm:
            continue
        lit = [x for x in lm if x.startswith("[")]
        if len(lit) == 1:
            inner = ast.literal_eval(lit[0].split(" (", 1)[0])[0]
            inner_r = results.get(inner)
            if inner_r is not None:
                r["language_model_class"] = f"{inner}: {inner_r['class_of_loader']}"
    counts: dict[str, int] = {}
    for r in results.values():
        counts[r["class_of_loader"]] = counts.get(r["class_of_loader"], 0) + 1
    return {
        "schema": "kvscale.vllm-arch-classes/1",
        "vllm_version": tree.version(),
        "vllm_sources_sha256": dict(sorted(tree.used.items())),
        "generator": "tests/parity/vllm_arch_oracle.py --classes-out",
        "method": " ".join(__doc__.split()),
        "sample_names_columns": list(SAMPLE_COLUMNS),
        "classes": CLASS_MEANINGS,
        "confidence": CONFIDENCE,
        "counts": dict(sorted(counts.items())),
        "architectures": results,
    }


def _executed_architectures(oracle: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in oracle.arch_cases.CASES:
        arch = c["config"]["architectures"][0]
        out.setdefault(arch, []).append(c["group"])
    return {a: sorted(set(g)) for a, g in out.items()}


CLASS_MEANINGS = {
    "no-kv-holder": "no Attention / MLAAttention / custom KV-scale layer reached (Mamba-only, "
    "encoders without a KV cache, own cache formats such as DeepSeek-V4): no KV scale",
    "attention-without-quant_config": "some Attention is built without quant_config: no KV "
    "method there, its scales are 1.0 whatever the checkpoint holds (Jamba; names that do "
    "not resolve then also refuse when no quant_config is visible to the loader)",
    "mla": "MLAAttention holders: a KV method only under ModelOpt FP8/NVFP4/MXFP8; the "
    "loader decides whether any name reaches mla_attn.mla_attn.*_scale (see top_loader, "
    "inner_loaders and the executed cases)",
    "mla-custom": "a custom MLA layer calling _init_kv_cache_quant (no quant config returns "
    "a KV method for it: scales 1.0)",
    "fixed-scales": "custom attention that only sets default scales (always 1.0)",
    "llama-like": "Attention with quant_config, top-level AutoWeightsLoader with a visible "
    "quant_config, and the model's top-level mapper leaves the sample KV names of "
    "model.layers.0.self_attn (k_scale, k_proj.k_scale, kv_scale, k_proj.output_scale) "
    "exactly as LlamaForCausalLM's (no mapper) does. The inner loaders and the real "
    "attention path (self_attn / mixer / attention) are listed, not judged",
    "attention-renamed": "Attention with quant_config, AutoWeightsLoader at the top, but the "
    "top pass maps the sample KV names differently from Llama (model mapper renames or "
    "stacked rules first: see sample_names)",
    "attention-custom-loader": "Attention with quant_config, top-level load_weights without "
    "AutoWeightsLoader (hand-written): see top_loader",
    "attention-no-quant-visible": "Attention with quant_config, but the top-level "
    "AutoWeightsLoader finds no quant_config: no cache-scale mapper, no ignored suffixes",
    "dynamic": "mapper extended at runtime (Transformers backend) or not statically evaluable",
    "multimodal-wrapper": "builds its text model with init_vllm_registered_model (the "
    "architecture named by `architectures=` or by the text sub-config): the wrapper's mapper "
    "(prefix renames such as model.language_model. -> language_model.model.) and its "
    "top-level cache-scale pass run first, then the text architecture's own loader "
    "(language_model_class when literal)",
    "unresolved": "class, load_weights or mapper could not be resolved statically",
}

CONFIDENCE = (
    "Static: the reach analysis follows names used in class and function bodies (it may "
    "over-approximate: a class referenced but not built on a given config, e.g. DeepSeek's "
    "MHA / non-MLA / MLA attention variants chosen by config, all appear); quant_config at a "
    "construction is the argument expression, not its runtime value (e.g. LongCat's "
    "`None if 'self_attn' in disable_quant_module else quant_config`); the quant_config "
    "source is the first direct child assigned in __init__ that has the attribute. Classes "
    "marked executed_by_oracle are confirmed by tests/parity/vllm_arch_expected.json."
)


def _class_label(r: Mapping[str, Any]) -> str:
    holders: list[dict[str, Any]] = r.get("holders", [])
    top = r.get("top_loader", {})
    kinds = {h["kind"] for h in holders}
    custom = set(r.get("custom_holders", {}).values())
    if not kinds and not custom and not r.get("language_model"):
        return "no-kv-holder"
    if top.get("mapper_unresolved") or top.get("mapper_extended_at_runtime"):
        return "dynamic"
    if not kinds:
        if "custom (_init_kv_cache_quant)" in custom:
            return "mla-custom"
        if custom:
            return "fixed-scales"
        return "multimodal-wrapper"
    if any(k.startswith("MLAAttention") for k in kinds):
        return "mla"
    if any(h["quant_config"] in ("absent", "None") for h in holders):
        return "attention-without-quant_config"
    if top.get("kind") != "AutoWeightsLoader":
        return "attention-custom-loader"
    if str(top.get("quant_config_source", "")).startswith("none"):
        return "attention-no-quant-visible"
    samples = top.get("sample_names", {})
    # the sample names the model mapper renames away from Llama's result
    p = "model.layers.0.self_attn"
    llama_like = not any(
        f"{p}.{sfx}" in samples
        for sfx in ("k_scale", "k_proj.k_scale", "kv_scale", "k_proj.output_scale")
    )
    return "llama-like" if llama_like else "attention-renamed"


def iter_holder_lines(doc: Mapping[str, Any]) -> Iterable[str]:
    for arch, r in doc["architectures"].items():
        for h in r.get("holders", []):
            yield f"{arch}\t{h['kind']}\t{h['quant_config']}\t{h['at']}"
