"""GitHub Actions annotations (``::error ...::`` workflow commands) and output hardening.

Stream: annotations go to **stderr**. GitHub's documentation says workflow commands are "sent to
the runner over stdout", but the runner feeds both streams of a ``run:`` step through the same
command parser (actions/runner ``Runner.Worker/Handlers/ScriptHandler.cs`` attaches an
``OutputManager`` with the ``ActionCommandManager`` to ``OutputDataReceived`` and to
``ErrorDataReceived``). Writing them to stderr keeps stdout exactly what it is without them: the
``--json`` document or the table, so ``kvscale inspect --json > report.json`` still works in a
workflow.

Grouping: one annotation per problem code and level (its first layers and messages inside), not
one per problem. GitHub shows only the first 10 error and 10 warning annotations of a step, and
a broken checkpoint easily has a problem in each of 126 layers.

Hardening: the runner also executes a command found in any *other* output line (a line that
starts with ``::``, or holds ``##[``); ``kvscale.render.escape.neutralize`` defuses those in
every line the CLI's ``Output`` emits, except these annotations.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath

from kvscale.core.inspect import ScaleReport
from kvscale.policy import Policy
from kvscale.problems import CATALOGUE, Problem, Severity
from kvscale.render.escape import sanitize

MAX_LINES_PER_ANNOTATION = 10


def annotations_enabled(mode: str, environ: Mapping[str, str] | None = None) -> bool:
    """``github``: on; ``none``: off; ``auto``: on when running under GitHub Actions."""
    if mode == "github":
        return True
    if mode == "none":
        return False
    env = os.environ if environ is None else environ
    return env.get("GITHUB_ACTIONS", "").lower() == "true"


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF are percent-encoded (``%`` first)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A workflow command's property value: as data, plus ``:`` and ``,`` (the separators)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command_line(
    level: str, message: str, *, title: str | None = None, file: str | None = None
) -> str:
    """``::error file=F,title=T::message``. Every part is sanitized first (an ESC or a bidi
    override in a tensor name must not reach the log raw), then escaped."""
    props = []
    if file:
        props.append(f"file={escape_property(sanitize(file))}")
    if title:
        props.append(f"title={escape_property(sanitize(title))}")
    head = f"::{level}" + (" " + ",".join(props) if props else "")
    lines = [sanitize(line) for line in message.split("\n")]
    return f"{head}::{escape_data(chr(10).join(lines))}"


def workspace_relative(path: str, environ: Mapping[str, str] | None = None) -> str:
    """A path GitHub can attach to a file: relative to ``GITHUB_WORKSPACE`` when inside it,
    with forward slashes."""
    env = os.environ if environ is None else environ
    workspace = env.get("GITHUB_WORKSPACE")
    candidate = PurePath(path)
    if workspace and candidate.is_absolute():
        try:
            candidate = candidate.relative_to(workspace)
        except ValueError:
            pass
    text = candidate.as_posix()
    return text[2:] if text.startswith("./") else text


def annotation_file(report: ScaleReport, layer: str | None) -> str | None:
    """The file an inspect problem points at: the shard holding the layer's first scale tensor,
    else config.json (model-level problems, layers without any tensor), else the checkpoint;
    None for a remote checkpoint (no file of the workspace: the annotation names none)."""
    if report.remote is not None:
        return None
    given = report.checkpoint
    if report.layout == "file":
        return workspace_relative(given)
    if report.layout != "directory":
        return workspace_relative(given)  # a Hugging Face cache lies outside the repository
    if layer is not None:
        for item in report.layers:
            if item.name == layer and item.sources:
                first = min(item.sources.values(), key=lambda s: s.load_order)
                return workspace_relative(str(Path(given) / first.file))
    if (Path(report.root) / "config.json").is_file():
        return workspace_relative(str(Path(given) / "config.json"))
    return workspace_relative(given)


def _short(layer: str) -> str:
    return layer.removesuffix(".attn")


def inspect_annotations(
    report: ScaleReport, policy: Policy, *, max_lines: int = MAX_LINES_PER_ANNOTATION
) -> list[str]:
    """One ``::error`` per failing problem code, one ``::warning`` per other reported code.

    Allowed codes (``--allow``) produce no annotation: the user said they are fine.
    """
    groups: dict[tuple[str, str], list[Problem]] = defaultdict(list)
    for p in report.problems:
        if policy.allowed(p):
            continue
        level = (
            "error" if policy.fails(p) else "notice" if p.severity is Severity.INFO else "warning"
        )
        groups[(level, p.code)].append(p)
    out: list[str] = []
    levels = ("error", "warning", "notice")
    order = sorted(groups, key=lambda key: (levels.index(key[0]), key[1]))
    for level, code in order:
        items = groups[(level, code)]
        layers = list(dict.fromkeys(name for p in items for name in (p.layer, *p.layers) if name))
        title = f"kvscale {code}"
        if len(layers) > 1:
            title += f" in {len(layers)} layers"
        if level == "error" and items[0].severity is Severity.WARNING:
            title += " (fails under the policy)"
        lines = [(f"{_short(p.layer)}: " if p.layer else "") + p.message for p in items[:max_lines]]
        if len(items) > max_lines:
            lines.append(
                f"... and {len(items) - max_lines} more (kvscale inspect --json lists all)"
            )
        entry = CATALOGUE.get(code)
        if entry is not None:
            lines.append(f"Fix: {entry.fix}")
        out.append(
            command_line(
                level,
                "\n".join(lines),
                title=title,
                file=annotation_file(report, items[0].layer),
            )
        )
    return out


def diff_annotations(
    failures: Sequence[tuple[str, str | None, str]],
    *,
    file: str | None = None,
    max_lines: int = MAX_LINES_PER_ANNOTATION,
) -> list[str]:
    """One ``::error`` per diff gate rule that failed; ``failures`` = (rule, layer, message)."""
    groups: dict[str, list[tuple[str | None, str]]] = defaultdict(list)
    for rule, layer, message in failures:
        groups[rule].append((layer, message))
    out: list[str] = []
    for rule in sorted(groups):
        items = groups[rule]
        title = f"kvscale diff {rule}" + (f" in {len(items)} layers" if len(items) > 1 else "")
        lines = [(f"{_short(layer)}: " if layer else "") + msg for layer, msg in items[:max_lines]]
        if len(items) > max_lines:
            lines.append(f"... and {len(items) - max_lines} more (kvscale diff --json lists all)")
        out.append(command_line("error", "\n".join(lines), title=title, file=file))
    return out
