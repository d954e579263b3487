"""Docs stay in sync with the code: commands have help and are in the README, every problem
code is documented (docs/problem-codes.md is generated from CATALOGUE), docs/ci.md covers the CI
surface."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.cli import CliRunner
from support.paths import ROOT

from kvscale.cli import app
from kvscale.problems import CATALOGUE
from kvscale.render.junit import CHECKS

README = ROOT / "README.md"
DOCS = ROOT / "docs"
runner = CliRunner()


def _generator() -> ModuleType:
    path = DOCS / "gen_problem_codes.py"
    spec = importlib.util.spec_from_file_location("kvscale_gen_problem_codes", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def command_names() -> list[str]:
    names = []
    for command in app.registered_commands:
        if command.hidden:
            continue
        assert command.callback is not None
        names.append(command.name or command.callback.__name__.replace("_", "-"))
    return sorted(names)


def test_expected_commands_are_registered() -> None:
    assert {"inspect", "codes", "diff"} <= set(command_names())


@pytest.mark.parametrize("name", command_names())
def test_every_command_has_help(name: str) -> None:
    (command,) = (
        c
        for c in app.registered_commands
        if (c.name or (c.callback.__name__ if c.callback else "")) == name
    )
    text = command.help or (command.callback.__doc__ if command.callback else None) or ""
    assert text.strip(), f"kvscale {name} has no help text"
    result = runner.invoke(app, [name, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert text.strip().splitlines()[0] in result.stdout


def _readme() -> str:
    return README.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", command_names())
def test_every_command_is_in_the_readme(name: str) -> None:
    assert re.search(rf"`kvscale {re.escape(name)}\b", _readme()), f"kvscale {name} not in README"


def test_readme_documents_exit_codes_and_links_the_docs() -> None:
    text = _readme()
    assert "## Exit codes" in text
    for code in ("0", "1", "2", "3"):
        assert re.search(rf"(?m)^\| {code} \|", text), f"exit code {code} missing"
    assert "docs/problem-codes.md" in text


def test_problem_codes_page_is_generated_from_the_catalogue() -> None:
    page = DOCS / "problem-codes.md"
    expected = _generator().render()
    assert page.read_text(encoding="utf-8") == expected, (
        "docs/problem-codes.md is stale: run python docs/gen_problem_codes.py"
    )
    for code, entry in CATALOGUE.items():
        assert f"\n## {code}\n" in expected
        assert entry.meaning in expected and entry.fix in expected


def test_generator_check_mode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gen = _generator()
    assert gen.main(["--check"]) == 0
    monkeypatch.setattr(gen, "OUTPUT", tmp_path / "problem-codes.md")
    assert gen.main(["--check"]) == 1
    assert gen.main([]) == 0
    assert gen.main(["--check"]) == 0


def test_ci_doc_covers_the_ci_surface() -> None:
    text = (DOCS / "ci.md").read_text(encoding="utf-8")
    for option in (
        "--strict",
        "--fail-on",
        "--allow",
        "--policy",
        "--no-policy",
        "--junit",
        "--annotations",
        "--files",
        "--max-rel-change",
        "--all",
        "kvscale.toml",
        "[tool.kvscale]",
        "kvscale.diff/1",
        "GITHUB_ACTIONS",
    ):
        assert option in text, option
    for check in CHECKS:
        assert f"`{check.name}`" in text, check.name
        for code in check.codes:
            assert code in text, code
    for link in re.findall(r"\]\((\.\./[^)#]+|[a-z-]+\.md)", text):
        assert (DOCS / link).resolve().exists(), link


def test_every_limit_is_documented() -> None:
    from kvscale import limits

    text = (DOCS / "limits.md").read_text(encoding="utf-8")
    found = [v for v in vars(limits).values() if isinstance(v, limits.Limit)]
    assert len(found) >= 12
    for limit in found:
        assert f"| `{limit.name}` | `{limit.env}` | {limit.default:,}" in text, limit.name


@functools.lru_cache(maxsize=1)
def _limits_in_source() -> dict[str, str]:
    """Every ``Limit(name, env, ...)`` constructed anywhere in kvscale/, by name -> variable."""
    found: dict[str, str] = {}
    for path in sorted((ROOT / "kvscale").rglob("*.py")):
        text = path.read_text()
        if "Limit(" not in text:
            continue
        tree = ast.parse(text, str(path))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Limit"
                and len(node.args) >= 2
                and all(isinstance(a, ast.Constant) for a in node.args[:2])
            ):
                found[str(node.args[0].value)] = str(node.args[1].value)
    return found


def test_limits_found_in_the_source() -> None:
    """The inventory the documentation test below checks (a guard on the scan itself)."""
    limits = _limits_in_source()
    assert {
        "max-header-bytes": "KVSCALE_MAX_HEADER_BYTES",
        "max-scale-elements": "KVSCALE_MAX_SCALE_ELEMENTS",
        "max-shards": "KVSCALE_MAX_SHARDS",
        "max-config-bytes": "KVSCALE_MAX_CONFIG_BYTES",
        "max-index-bytes": "KVSCALE_MAX_INDEX_BYTES",
        "max-layers": "KVSCALE_MAX_LAYERS",
        "max-heads": "KVSCALE_MAX_HEADS",
        "max-policy-bytes": "KVSCALE_MAX_POLICY_BYTES",
        "max-document-bytes": "KVSCALE_MAX_DOCUMENT_BYTES",
        "max-verify-elements": "KVSCALE_MAX_VERIFY_ELEMENTS",
    }.items() <= limits.items()


def test_docs_list_every_limit_and_its_variable() -> None:
    text = (ROOT / "docs" / "limits.md").read_text()
    missing = [
        f"{name} ({env})"
        for name, env in sorted(_limits_in_source().items())
        if f"`{name}`" not in text or f"`{env}`" not in text
    ]
    assert missing == []
