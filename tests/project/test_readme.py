"""The README's promises that can be run: its Python API example, its module list, shell
completion."""

from __future__ import annotations

import re
import subprocess
import sys

from support.paths import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : end if end > 0 else None]


def test_python_api_example_runs() -> None:
    block = re.search(r"```python\n(.*?)```", _section("Python API"), re.S)
    assert block is not None
    result = subprocess.run(
        [sys.executable, "-c", block.group(1)], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "model.layers.0.self_attn.attn separate 0.02099609375" in result.stdout


def test_development_section_names_every_module() -> None:
    layout = _section("Development")
    listed = set(re.findall(r"^(kvscale/\S+)", layout, re.M))
    expanded = set()
    for entry in listed:
        group = re.fullmatch(r"(.*)/\{(.*)\}\.py", entry)
        if group:
            expanded |= {f"{group.group(1)}/{name}.py" for name in group.group(2).split(",")}
        else:
            expanded.add(entry)
    modules = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "kvscale").rglob("*.py")
        if p.name != "__init__.py" or p.parent.name in ("kvscale", "engine", "vllm", "sglang")
    }
    missing = sorted(m for m in modules if m not in expanded)
    assert not missing, f"README Development section lacks {missing}"
    stale = sorted(m for m in expanded if not (ROOT / m).exists())
    assert not stale, f"README Development section names missing modules {stale}"


def test_development_section_names_every_test_directory() -> None:
    """tests/ mirrors kvscale/; every other directory of it is listed, and every listed one
    exists."""
    layout = _section("Development")
    listed = {entry.rstrip("/") for entry in re.findall(r"^(tests/\S*)", layout, re.M)}
    missing = sorted(entry for entry in listed if not (ROOT / entry).is_dir())
    assert not missing, f"README Development section names missing directories {missing}"
    mirrored = {p.name for p in (ROOT / "kvscale").iterdir() if p.is_dir() and any(p.glob("*.py"))}
    unlisted = sorted(
        f"tests/{p.name}"
        for p in (ROOT / "tests").iterdir()
        if p.is_dir()
        and p.name not in mirrored
        and not p.name.startswith((".", "__"))
        and f"tests/{p.name}" not in listed
    )
    assert not unlisted, f"README Development section lacks {unlisted}"


def test_shell_completion_for_bash_zsh_fish() -> None:
    for shell in ("bash", "zsh", "fish"):
        result = subprocess.run(
            [sys.executable, "-m", "kvscale", "--show-completion", shell],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert result.returncode == 0 and "kvscale" in result.stdout, (shell, result.stderr)
