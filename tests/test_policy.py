"""kvscale.policy: which problems fail (--strict, --fail-on, --allow); policy files (kvscale.toml,
[tool.kvscale]) and their discovery."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kvscale.engine.options import EngineOptions
from kvscale.errors import UsageError
from kvscale.policy import (
    Policy,
    PolicyFile,
    discover_policy_file,
    load_policy_file,
    parse_codes,
    resolve_policy_file,
)
from kvscale.problems import Problem, Severity


def _p(code: str, severity: Severity) -> Problem:
    return Problem(severity, code, None, "m")


def test_policy_fails_rules() -> None:
    err, warn = _p("scale-zero", Severity.ERROR), _p("precision-lost", Severity.WARNING)
    assert Policy().fails(err) and not Policy().fails(warn)
    assert Policy(strict=True).fails(warn)
    assert Policy(fail_on=frozenset({"precision-lost"})).fails(warn)
    assert not Policy(allow=frozenset({"scale-zero"})).fails(err)
    assert not Policy(strict=True, allow=frozenset({"precision-lost"})).fails(warn)
    assert Policy(allow=frozenset({"scale-zero"})).allowed(err)


def test_merged_command_line_wins() -> None:
    file = Policy(
        strict=False,
        fail_on=frozenset({"precision-lost", "coverage-gap"}),
        allow=frozenset({"scale-zero"}),
    )
    cli = Policy(strict=True, fail_on=frozenset({"scale-zero"}), allow=frozenset({"coverage-gap"}))
    merged = file.merged(cli)
    assert merged == Policy(
        strict=True,
        fail_on=frozenset({"precision-lost", "scale-zero"}),
        allow=frozenset({"coverage-gap"}),
    )


def test_parse_codes_splits_and_rejects_unknown() -> None:
    assert parse_codes(["scale-zero,precision-lost", " coverage-gap "], "--x") == {
        "scale-zero",
        "precision-lost",
        "coverage-gap",
    }
    with pytest.raises(UsageError, match="'nope' in --allow"):
        parse_codes(["nope"], "--allow")


def test_kvscale_toml_top_level_keys(tmp_path: Path) -> None:
    path = tmp_path / "kvscale.toml"
    path.write_text(
        'strict = true\nfail_on = ["coverage-gap"]\nallow = "precision-lost, scale-missing"\n'
        'kv_cache_dtype = "fp8"\nplatform = "FNUZ"\nmodel_dtype = "bf16"\nmax_rel_change = 0.05\n'
    )
    assert load_policy_file(path) == PolicyFile(
        path=path,
        policy=Policy(
            strict=True,
            fail_on=frozenset({"coverage-gap"}),
            allow=frozenset({"precision-lost", "scale-missing"}),
        ),
        options=EngineOptions(kv_cache_dtype="fp8", platform="fnuz", model_dtype="bfloat16"),
        max_rel_change=0.05,
    )


def test_pyproject_tool_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n\n[tool.kvscale]\nallow = ["precision-lost"]\n')
    loaded = load_policy_file(path)
    assert loaded.policy == Policy(allow=frozenset({"precision-lost"}))
    assert loaded.options == EngineOptions() and loaded.max_rel_change is None


def test_pyproject_without_table_is_an_error_when_named(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n')
    with pytest.raises(UsageError, match=r"pyproject.toml: no \[tool.kvscale\] table"):
        load_policy_file(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("bogus = 1\n", r"kvscale.toml: unknown key 'bogus'"),
        ("[kvscale]\nstrict = true\n", r"kvscale.toml: unknown key 'kvscale'"),
        (
            'allow = ["no-such-code"]\n',
            r"kvscale.toml: unknown problem code 'no-such-code' in allow",
        ),
        ('fail_on = ["scale-zero", 3]\n', r"kvscale.toml: fail_on must be a list of problem codes"),
        ("fail_on = 3\n", r"kvscale.toml: fail_on must be a list"),
        ('strict = "yes"\n', r"kvscale.toml: strict must be true or false"),
        ('allow = ["scale-zero"]\nfail_on = ["scale-zero"]\n', r"scale-zero in both"),
        ('kv_cache_dtype = "fp9"\n', r"kvscale.toml: kv_cache_dtype: unknown KV-cache dtype 'fp9'"),
        ('platform = "tpu"\n', r"kvscale.toml: platform: unknown platform 'tpu'"),
        ('model_dtype = "int4"\n', r"kvscale.toml: model_dtype: unknown model dtype 'int4'"),
        ('engine = "tgi"\n', r"kvscale.toml: engine: unknown engine 'tgi'"),
        ("max_rel_change = -1\n", r"kvscale.toml: max_rel_change must be a finite number >= 0"),
        ("max_rel_change = nan\n", r"kvscale.toml: max_rel_change must be a finite number >= 0"),
        ("max_rel_change = true\n", r"kvscale.toml: max_rel_change must be a number"),
        ("strict = \n", r"kvscale.toml: invalid TOML"),
    ],
)
def test_bad_policy_files_name_the_file(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "kvscale.toml"
    path.write_text(text)
    with pytest.raises(UsageError, match=match) as info:
        load_policy_file(path)
    assert str(path) in info.value.message
    assert info.value.exit_code == 2


def test_missing_and_non_utf8_policy_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="policy file not found"):
        load_policy_file(tmp_path / "nope.toml")
    bad = tmp_path / "kvscale.toml"
    bad.write_bytes(b"strict = true # \xff\n")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_policy_file(bad)


def test_python_310_without_tomli_is_a_clear_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kvscale.toml"
    path.write_text("strict = true\n")
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    monkeypatch.setitem(sys.modules, "tomli", None)  # import tomli -> ImportError
    with pytest.raises(UsageError, match="needs Python 3.11\\+ or the tomli package") as info:
        load_policy_file(path)
    assert str(path) in info.value.message


def test_discovery_walks_up_to_the_repository_root(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    deep = root / "a" / "b"
    deep.mkdir(parents=True)
    (root / ".git").mkdir()
    assert discover_policy_file(deep) is None
    (root / "kvscale.toml").write_text("strict = true\n")
    assert discover_policy_file(deep) == root / "kvscale.toml"
    # The nearest file wins.
    (root / "a" / "kvscale.toml").write_text("strict = false\n")
    assert discover_policy_file(deep) == root / "a" / "kvscale.toml"


def test_discovery_stops_at_git_boundary(tmp_path: Path) -> None:
    (tmp_path / "kvscale.toml").write_text("strict = true\n")  # outside the repository
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert discover_policy_file(repo) is None
    # A .git *file* (worktrees, submodules) is a boundary too.
    sub = tmp_path / "worktree"
    sub.mkdir()
    (sub / ".git").write_text("gitdir: elsewhere\n")
    assert discover_policy_file(sub) is None


def test_discovery_pyproject_table_and_precedence(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    inner = root / "inner"
    inner.mkdir()
    # A pyproject without [tool.kvscale] is skipped (even one that mentions kvscale).
    (inner / "pyproject.toml").write_text('[project]\nname = "kvscale-models"\n')
    (root / "pyproject.toml").write_text("[tool.kvscale]\nstrict = true\n")
    assert discover_policy_file(inner) == root / "pyproject.toml"
    # In one directory kvscale.toml comes first.
    (root / "kvscale.toml").write_text("strict = false\n")
    assert discover_policy_file(inner) == root / "kvscale.toml"


def test_resolve_policy_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "kvscale.toml").write_text("strict = true\n")
    other = tmp_path / "other.toml"
    other.write_text('allow = ["precision-lost"]\n')
    found = resolve_policy_file(None, start=tmp_path)
    assert found is not None and found.policy == Policy(strict=True)
    assert resolve_policy_file(None, discover=False, start=tmp_path) is None
    named = resolve_policy_file(other, start=tmp_path)
    assert named is not None and named.policy == Policy(allow=frozenset({"precision-lost"}))
