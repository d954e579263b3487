#!/usr/bin/env python3
"""Render kvscale/engine/vllm/arch_classes.py from tests/parity/vllm_arch_classes.json.

    python tests/parity/render_vllm_arch_classes.py          # rewrite the module
    python tests/parity/render_vllm_arch_classes.py --check  # exit 1 if it differs

The evidence file is the static analysis of vLLM 0.33.0's model registry
(tests/parity/vllm_arch_static.py, run by vllm_arch_oracle.py --classes-out); this renders the
facts kvscale's rules read (kvscale/engine/vllm/loaders.py defines their types) into a plain
Python table, so that kvscale needs neither the JSON nor an engine tree at run time.
tests/parity/test_vllm_arch_classes.py re-renders it in every default test run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EVIDENCE = HERE / "vllm_arch_classes.json"
MODULE = HERE.parents[1] / "kvscale" / "engine" / "vllm" / "arch_classes.py"

HEADER = '''"""Every architecture of vLLM 0.33.0's model registry, as kvscale's rules read it: the
KV-scale holders its modules build, the loaders a checkpoint name goes through, and the model's
own name mappers (``kvscale.engine.vllm.loaders`` defines the types).

GENERATED from tests/parity/vllm_arch_classes.json by tests/parity/render_vllm_arch_classes.py;
do not edit (tests/parity/test_vllm_arch_classes.py re-renders it). Static evidence, file and
line per fact, is in the JSON; the architectures marked ``executed=True`` are confirmed by vLLM's
own loaders (tests/parity/vllm_arch_expected.json).
"""

from __future__ import annotations

from kvscale.engine.vllm.loaders import ArchClass, Loader, WeightsMapper

'''

_HOLDER_KINDS = {"Attention": "Attention"}


def _holders(entry: Mapping[str, Any]) -> list[str]:
    out: set[str] = set()
    for h in entry.get("holders", []):
        kind = h["kind"]
        out.add("MLAAttention" if kind.startswith("MLAAttention") else _HOLDER_KINDS[kind])
    for how in entry.get("custom_holders", {}).values():
        out.add("custom-mla" if how == "custom (_init_kv_cache_quant)" else "fixed")
    return sorted(out)


def _quant_visible(source: str | None) -> bool:
    """AutoWeightsLoader.load_weights takes the first ``quant_config`` attribute of the module
    or a direct child: visible unless there is none or it is a child built without one."""
    if not source:
        return False
    return not (
        source.startswith(("none", "unknown"))
        or "quant_config=absent" in source
        or "quant_config=None" in source
    )


def _mapper(rules: Mapping[str, Any] | None) -> tuple[str | None, bool]:
    """(the WeightsMapper literal or None, whether it could not be rendered)."""
    if not rules:
        return None, False
    if "unresolved" in rules or "renaming" in rules:
        return None, True
    parts = []
    for key in ("regex", "substr", "stacked", "prefix", "suffix"):
        rows = rules.get(key)
        if not rows:
            continue
        if key == "regex":
            for pattern, _ in rows:
                re.compile(pattern)  # vLLM's `regex` patterns must mean the same in `re`
        body = "".join(f"({_lit(a)}, {_lit(b)}), " for a, b in rows)
        parts.append(f"{key}=({body})")
    return f"WeightsMapper({', '.join(parts)})", False


def _lit(value: Any) -> str:
    return repr(value)


def _loader(
    owner: str,
    defined_in: str,
    facts: Mapping[str, Any],
    *,
    auto: bool,
    quant_source: str | None,
    unresolved: bool = False,
) -> str:
    mapper, bad = _mapper(facts.get("mapper_rules"))
    args = [f"owner={owner!r}", f"defined_in={defined_in!r}", f"auto={auto}"]
    if auto and _quant_visible(quant_source):
        args.append("quant_visible=True")
    if "maybe_remap_kv_scale_name" in facts:
        args.append("remap=True")
    if "unknown_names" in facts:
        args.append("indexes_params=True")
    if mapper is not None:
        args.append(f"mapper={mapper}")
    if bad or unresolved:
        args.append("mapper_unresolved=True")
    return f"Loader({', '.join(args)})"


def _entry(arch: str, e: Mapping[str, Any]) -> str:
    args = [f"kind={e['class_of_loader']!r}", f"resolved={e.get('resolved', '')!r}"]
    holders = _holders(e)
    if holders:
        args.append(f"holders=frozenset({holders!r})")
    top = e.get("top_loader", {})
    chain = top.get("load_weights") or []
    if chain:
        auto = top.get("kind") == "AutoWeightsLoader"
        unresolved = bool(top.get("mapper_unresolved") or top.get("mapper_extended_at_runtime"))
        args.append(
            "top="
            + _loader(
                e["class"],
                chain[-1],
                top,
                auto=auto,
                quant_source=top.get("quant_config_source"),
                unresolved=unresolved,
            )
        )
    child = e.get("model_child") or {}
    where = child.get("load_weights")
    if where:
        at = where.split(" (")[0]
        facts = next((i for i in e.get("inner_loaders", []) if i["at"] == at), None)
        if facts is not None:
            args.append(
                "model="
                + _loader(
                    child["class"],
                    where,
                    facts,
                    auto="AutoWeightsLoader" in facts,
                    quant_source=facts.get("quant_config_source"),
                )
            )
    text = e.get("language_model_class")
    if text:
        args.append(f"language_model={text.split(':')[0]!r}")
    if "executed_by_oracle" in e:
        args.append("executed=True")
    return f"    {arch!r}: ArchClass({', '.join(args)}),\n"


def render(doc: Mapping[str, Any]) -> str:
    """The module's text for the evidence document (before formatting: ruff format runs over
    it in the test too, so the committed file is the formatted rendering)."""
    if doc.get("schema") != "kvscale.vllm-arch-classes/1":
        raise ValueError(f"unexpected schema {doc.get('schema')!r}")
    archs: Mapping[str, Any] = doc["architectures"]
    body = "".join(_entry(a, archs[a]) for a in sorted(archs))
    return (
        HEADER
        + f"VLLM_VERSION = {doc['vllm_version']!r}\n\n"
        + "ARCH_CLASSES: dict[str, ArchClass] = {\n"
        + body
        + "}\n"
        + '"""Registered architecture -> its facts (every entry of vLLM\'s model registry)."""\n'
    )


def formatted(source: str) -> str:
    """``ruff format`` of the rendered text, with the project's settings."""
    import subprocess

    ruff = Path(sys.executable).with_name("ruff")
    proc = subprocess.run(
        [str(ruff) if ruff.exists() else "ruff", "format", "--stdin-filename", str(MODULE), "-"],
        input=source,
        capture_output=True,
        text=True,
        check=True,
        cwd=HERE.parents[1],
    )
    return proc.stdout


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the module differs")
    args = ap.parse_args(argv)
    text = formatted(render(json.loads(EVIDENCE.read_text())))
    if args.check:
        if MODULE.read_text() != text:
            print(f"{MODULE} is stale: run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    MODULE.write_text(text)
    print(f"wrote {MODULE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
