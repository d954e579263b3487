"""Which problems fail a run: severity, ``--strict``, ``--fail-on`` and ``--allow``; policy files.

Errors fail unless allowed; warnings fail under ``--strict`` or when their code is in
``--fail-on``; an allowed code never fails (it is still reported, marked allowed).

A policy file keeps those rules in the repository, next to the checkpoints it gates:

* ``kvscale.toml`` with top-level keys, or
* a ``[tool.kvscale]`` table in ``pyproject.toml``,

found from the current directory upwards (the first directory holding either wins; the search
stops after the directory that holds ``.git``, so a policy outside the repository never leaks
in), or named with ``--policy FILE``. Command-line options win over the file (``Policy.merged``).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kvscale.engine.options import EngineOptions
from kvscale.engine.registry import engine_names
from kvscale.errors import ConfigError, KVScaleError, UsageError
from kvscale.io.safetensors import read_small_file
from kvscale.limits import MAX_POLICY_BYTES
from kvscale.problems import CATALOGUE, Problem, Severity

POLICY_FILE = "kvscale.toml"
PYPROJECT = "pyproject.toml"
PYPROJECT_TABLE = "tool.kvscale"


@dataclass(frozen=True)
class Policy:
    strict: bool = False
    fail_on: frozenset[str] = field(default_factory=frozenset)
    allow: frozenset[str] = field(default_factory=frozenset)

    def fails(self, item: Problem) -> bool:
        if item.code in self.allow:
            return False
        if item.severity is Severity.ERROR:
            return True
        if item.severity is Severity.INFO:
            return item.code in self.fail_on
        return self.strict or item.code in self.fail_on

    def failing(self, problems: Iterable[Problem]) -> list[Problem]:
        return [p for p in problems if self.fails(p)]

    def allowed(self, item: Problem) -> bool:
        return item.code in self.allow

    def merged(self, other: Policy) -> Policy:
        """Command-line options (other) on top of a policy file (self)."""
        return Policy(
            strict=self.strict or other.strict,
            fail_on=(self.fail_on - other.allow) | other.fail_on,
            allow=(self.allow - other.fail_on) | other.allow,
        )


def parse_codes(values: Sequence[str] | None, option: str) -> frozenset[str]:
    """``--fail-on a,b --fail-on c`` -> {a, b, c}; unknown codes are a usage error."""
    codes: set[str] = set()
    for value in values or ():
        for part in value.split(","):
            code = part.strip()
            if not code:
                continue
            if code not in CATALOGUE:
                raise UsageError(
                    f"unknown problem code {code!r} in {option}",
                    hint="run `kvscale codes` for the list",
                )
            codes.add(code)
    return frozenset(codes)


# --- policy files ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyFile:
    """A parsed policy file: the fail rules plus defaults for command options."""

    path: Path
    policy: Policy
    options: EngineOptions = field(default_factory=EngineOptions)
    """Engine options the file sets (the command line wins over each)."""
    max_rel_change: float | None = None
    """Default drift gate for ``kvscale diff`` (None: not set here)."""
    no_drift_gate: bool = False
    """``max_rel_change = false``: ``kvscale diff`` runs without a drift gate."""


POLICY_KEYS: Mapping[str, str] = {
    "strict": "true or false: warnings fail the run too (like --strict)",
    "fail_on": "problem codes that fail the run even as warnings (like --fail-on)",
    "allow": "problem codes that never fail the run (like --allow)",
    "engine": f"default for --engine ({engine_names()})",
    "kv_cache_dtype": "default for --kv-cache-dtype",
    "platform": "default for --platform (ocp or fnuz)",
    "model_dtype": "default for --model-dtype",
    "attention_backend": "default for --attention-backend",
    "kv_cache_dtype_skip_layers": "default for --kv-cache-dtype-skip-layers (a list, or "
    "comma-separated text)",
    "gpu_arch": "default for --gpu-arch",
    "max_rel_change": "default for kvscale diff --max-rel-change (a number; false: no drift "
    "gate, like --no-drift-gate)",
}


def _toml_module(path: Path) -> ModuleType:
    """``tomllib`` (3.11+) or the ``tomli`` backport; a usage error naming the file otherwise."""
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    try:
        import tomli  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError(
            f"{path}: reading TOML policy files needs Python 3.11+ or the tomli package",
            hint="pip install tomli, or pass --no-policy",
        ) from None
    return tomli  # type: ignore[no-any-return,unused-ignore]


def _read_toml(path: Path) -> dict[str, Any]:
    toml = _toml_module(path)
    if not os.path.lexists(path):
        raise UsageError(f"{path}: policy file not found")
    try:
        # Bounded and non-blocking like every read: a FIFO or /dev/zero named kvscale.toml is
        # refused, not waited on or read forever.
        data = read_small_file(path, MAX_POLICY_BYTES, "policy file")
    except KVScaleError as exc:
        raise UsageError(exc.message, hint=exc.hint) from None
    try:
        text = data.decode("utf-8")
        parsed: dict[str, Any] = toml.loads(text)
    except UnicodeDecodeError:
        raise UsageError(f"{path}: policy file is not UTF-8 text") from None
    except toml.TOMLDecodeError as exc:
        raise UsageError(f"{path}: invalid TOML: {' '.join(str(exc).split())[:200]}") from None
    except RecursionError:
        raise UsageError(f"{path}: invalid TOML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise UsageError(f"{path}: invalid TOML: {' '.join(str(exc).split())[:200]}") from None
    return parsed


def _policy_table(path: Path, document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The kvscale settings of a file: top-level keys of kvscale.toml, [tool.kvscale] of
    pyproject.toml (None when a pyproject has no such table)."""
    if path.name == PYPROJECT:
        tool = document.get("tool", {})
        table = tool.get("kvscale") if isinstance(tool, Mapping) else None
        if table is None:
            return None
        if not isinstance(table, Mapping):
            raise UsageError(f"{path}: [{PYPROJECT_TABLE}] must be a table")
        return table
    return document


def _codes_value(path: Path, key: str, value: object) -> frozenset[str]:
    if isinstance(value, str):
        items: list[object] = [value]
    elif isinstance(value, list):
        items = list(value)
    else:
        raise UsageError(f"{path}: {key} must be a list of problem codes")
    codes: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{path}: {key} must be a list of problem codes, got {item!r}")
        for part in item.split(","):
            code = part.strip()
            if not code:
                continue
            if code not in CATALOGUE:
                raise UsageError(
                    f"{path}: unknown problem code {code!r} in {key}",
                    hint="run `kvscale codes` for the list",
                )
            codes.add(code)
    return frozenset(codes)


def _string_value(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{path}: {key} must be a non-empty string")
    return value.strip()


def parse_policy(path: Path, table: Mapping[str, Any]) -> PolicyFile:
    """Validate one settings table; every mistake is a usage error naming the file."""
    unknown = sorted(set(table) - set(POLICY_KEYS))
    if unknown:
        raise UsageError(
            f"{path}: unknown key{'s' if len(unknown) > 1 else ''} "
            + ", ".join(repr(k) for k in unknown),
            hint="known keys: " + ", ".join(POLICY_KEYS),
        )
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise UsageError(f"{path}: strict must be true or false")
    fail_on = _codes_value(path, "fail_on", table.get("fail_on", []))
    allow = _codes_value(path, "allow", table.get("allow", []))
    both = sorted(fail_on & allow)
    if both:
        # Within one file there is no "later wins": a code in both lists is a mistake.
        raise UsageError(f"{path}: {', '.join(both)} in both fail_on and allow")

    values: dict[str, object] = {}
    for key in (
        "engine",
        "kv_cache_dtype",
        "platform",
        "model_dtype",
        "attention_backend",
        "kv_cache_dtype_skip_layers",
        "gpu_arch",
    ):
        if key in table:
            raw = table[key]
            if key == "kv_cache_dtype_skip_layers" and isinstance(raw, list):
                if not all(isinstance(x, (str, int)) and not isinstance(x, bool) for x in raw):
                    raise UsageError(f"{path}: {key} must be a list of layer indices or names")
                values[key] = tuple(str(x) for x in raw)
            else:
                values[key] = _string_value(path, key, raw)
            try:
                EngineOptions(**{key: values[key]})  # type: ignore[arg-type]
            except UsageError as exc:
                raise UsageError(f"{path}: {key}: {exc.message}", hint=exc.hint) from None
    try:
        options = EngineOptions(**values)  # type: ignore[arg-type]
    except UsageError as exc:
        raise UsageError(f"{path}: {exc.message}", hint=exc.hint) from None
    max_rel_change = None
    no_drift_gate = table.get("max_rel_change") is False
    if "max_rel_change" in table and not no_drift_gate:
        value = table["max_rel_change"]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{path}: max_rel_change must be a number (or false: no drift gate)")
        try:
            max_rel_change = float(value)
        except OverflowError:  # a TOML integer of 400 digits
            max_rel_change = math.inf
        if not math.isfinite(max_rel_change) or max_rel_change < 0:
            raise UsageError(f"{path}: max_rel_change must be a finite number >= 0")
    return PolicyFile(
        path=path,
        policy=Policy(strict=strict, fail_on=fail_on, allow=allow),
        options=options,
        max_rel_change=max_rel_change,
        no_drift_gate=no_drift_gate,
    )


def load_policy_file(path: str | os.PathLike[str]) -> PolicyFile:
    """Read ``kvscale.toml`` (top-level keys) or ``pyproject.toml`` (``[tool.kvscale]``).

    A file with another name is read like ``kvscale.toml``.
    """
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{path}: is a directory, not a policy file")
    table = _policy_table(path, _read_toml(path))
    if table is None:
        raise UsageError(f"{path}: no [{PYPROJECT_TABLE}] table")
    return parse_policy(path, table)


_TOOL_KVSCALE = re.compile(r"^\s*\[\s*tool\s*\.\s*kvscale\s*[\].]", re.MULTILINE)
_TOOL_TABLE = re.compile(r"^\s*\[\s*tool\s*\]", re.MULTILINE)


def _pyproject_may_have_table(path: Path) -> bool:
    """Cheap pre-check, so that an unrelated pyproject.toml is never parsed (on Python 3.10
    without tomli that would be an error for a file that holds no kvscale settings)."""
    try:
        text = read_small_file(path, MAX_POLICY_BYTES, "pyproject.toml").decode(
            "utf-8", errors="replace"
        )
    except KVScaleError:
        return True  # let the real read report what is wrong with it
    if _TOOL_KVSCALE.search(text):
        return True
    # Rare spellings: a [tool] table with a kvscale key, or a dotted key tool.kvscale.x = ...
    return "kvscale" in text and (_TOOL_TABLE.search(text) is not None or "tool.kvscale" in text)


def discover_policy_file(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest ``kvscale.toml``, or ``pyproject.toml`` with a ``[tool.kvscale]`` table.

    Searched from ``start`` (default: the current directory) upwards. In each directory
    ``kvscale.toml`` comes first. The search ends after the directory that holds ``.git`` (the
    repository root) or at the filesystem root.
    """
    here = Path(start if start is not None else os.getcwd()).resolve()
    for directory in (here, *here.parents):
        candidate = directory / POLICY_FILE
        if candidate.is_file():
            return candidate
        if os.path.lexists(candidate):
            # A FIFO, a device or a dangling link named kvscale.toml: skipping it would run
            # without the policy the user wrote; reading it could block or never end.
            raise ConfigError(
                candidate,
                "is not a regular file (a FIFO, a device or a broken link); kvscale reads its "
                "policy from a regular kvscale.toml",
                hint="replace it with a file, or pass --no-policy",
            )
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and _pyproject_may_have_table(pyproject):
            if _policy_table(pyproject, _read_toml(pyproject)) is not None:
                return pyproject
        if (directory / ".git").exists():
            return None
    return None


def resolve_policy_file(
    explicit: str | os.PathLike[str] | None,
    *,
    discover: bool = True,
    start: str | os.PathLike[str] | None = None,
) -> PolicyFile | None:
    """``--policy FILE`` when given, else the discovered file (unless ``--no-policy``)."""
    if explicit is not None:
        return load_policy_file(explicit)
    if not discover:
        return None
    found = discover_policy_file(start)
    return load_policy_file(found) if found is not None else None
