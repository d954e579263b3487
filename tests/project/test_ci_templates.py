"""examples/ci/: the GitHub Actions workflow, GitLab CI job and pre-commit hook, run locally.

The scenarios live in examples/ci/run_local.py (also runnable by hand: examples/ci/run_local.sh);
this module runs them under pytest on the bundled example checkpoints (a passing one and a
broken one, served by a loopback Hub as the templates read them, and as files in the
repository), and checks the files' structure. The slow test runs the templates' install steps
too, in fresh virtual environments (the light install: no torch). test_precommit.py runs the
hook with pre-commit itself.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.slow  # runs the templates' scenarios end to end (seconds each)

CI = ROOT / "examples" / "ci"
GOOD = ROOT / "examples" / "llm-compressor-fp8"
BROKEN = ROOT / "examples" / "broken"


def _load_run_local() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kvscale_ci_run_local", CI / "run_local.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


run_local = _load_run_local()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    results = run_local.run_all(GOOD, BROKEN, tmp_path_factory.mktemp("ci"))
    return {outcome.scenario: outcome for outcome in results}


SCENARIOS = [
    "github-actions hf://kvscale-ci/llm-compressor-fp8",
    "github-actions hf://kvscale-ci/broken",
    "github-actions examples/llm-compressor-fp8",
    "github-actions examples/broken",
    "github-actions diff hf://kvscale-ci/llm-compressor-fp8 hf://kvscale-ci/llm-compressor-fp8",
    "github-actions diff hf://kvscale-ci/llm-compressor-fp8 hf://kvscale-ci/broken",
    "gitlab-ci hf://kvscale-ci/llm-compressor-fp8",
    "gitlab-ci hf://kvscale-ci/broken",
    "pre-commit examples/llm-compressor-fp8",
    "pre-commit examples/broken",
    "lfs-pointers models/llm-compressor-fp8",
]


def test_scenario_list_is_complete(outcomes: dict[str, object]) -> None:
    assert sorted(outcomes) == sorted(SCENARIOS)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_integration_commands(outcomes: dict[str, object], scenario: str) -> None:
    outcome = outcomes[scenario]
    assert outcome.problems == [], (  # type: ignore[attr-defined]
        f"{scenario}: {outcome.problems}\n--- stdout\n{outcome.stdout}\n"  # type: ignore[attr-defined]
        f"--- stderr\n{outcome.stderr}"  # type: ignore[attr-defined]
    )
    assert outcome.code == outcome.expected  # type: ignore[attr-defined]


def test_remote_reads_are_small(outcomes: dict[str, object]) -> None:
    """The Hub served the config, the API answer and one ranged read of the shard: no weights."""
    for scenario in ("github-actions hf://kvscale-ci/broken", "gitlab-ci hf://kvscale-ci/broken"):
        outcome = outcomes[scenario]
        assert "Hub: 3 requests (1 ranged shard reads)" in " ".join(outcome.notes)  # type: ignore[attr-defined]
        assert re.search(
            r"(?m)^FAIL: 5 attention layers .*; read [\d.]+ KB of [\d.]+ KB from "
            r"kvscale-ci/broken@[0-9a-f]{12} in 3 requests$",
            outcome.stdout,  # type: ignore[attr-defined]
        ), outcome.stdout  # type: ignore[attr-defined]
    remote = outcomes["github-actions hf://kvscale-ci/broken"]
    # A remote checkpoint is no file of the workspace: its annotations name none.
    assert re.search(
        r"(?m)^::error title=kvscale scale-zero::model\.layers\.0\.self_attn: v_scale is 0\.0",
        remote.stderr,  # type: ignore[attr-defined]
    )
    assert "::error file=" not in remote.stderr  # type: ignore[attr-defined]


def test_lfs_pointer_files_are_refused(outcomes: dict[str, object]) -> None:
    """Inspecting a checkout made without LFS (the trap the templates avoid) is exit 2."""
    outcome = outcomes["lfs-pointers models/llm-compressor-fp8"]
    assert re.search(
        r"(?m)^kvscale: error: models/llm-compressor-fp8/model\.safetensors: ",
        outcome.stderr,  # type: ignore[attr-defined]
    )


def test_broken_messages_are_readable(outcomes: dict[str, object]) -> None:
    github = outcomes["github-actions examples/broken"]
    # Annotations name the code and point at the checkpoint's files.
    assert re.search(
        r"(?m)^::error file=examples/broken/model\.safetensors,title=kvscale scale-zero::"
        r"model\.layers\.0\.self_attn: v_scale is 0\.0",
        github.stderr,  # type: ignore[attr-defined]
    )
    pre_commit = outcomes["pre-commit examples/broken"]
    text = pre_commit.stdout  # type: ignore[attr-defined]
    assert text.startswith("KV-cache scales of examples/broken\n")
    assert "error scale-zero" in text
    assert re.search(r"(?m)^FAIL: \d+ attention layers", text)
    assert pre_commit.stderr == ""  # type: ignore[attr-defined]


# --- the files themselves ----------------------------------------------------------------------


def test_yaml_files_parse_the_same_with_and_without_pyyaml() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML cross-check of the small YAML reader")
    for path in (CI / "github-actions.yml", CI / "gitlab-ci.yml", ROOT / ".pre-commit-hooks.yaml"):
        mine = run_local.MiniYaml(path.read_text()).parse()
        theirs = yaml.safe_load(path.read_text())
        if isinstance(theirs, dict) and True in theirs:  # YAML 1.1 reads the key `on` as true
            theirs["on"] = theirs.pop(True)
        assert mine == theirs, path


def test_mini_yaml_reader_subset() -> None:
    text = (
        "# comment\n"
        "a: 1\n"
        "b:\n"
        "  - x  # trailing comment\n"
        '  - "quoted # not a comment"\n'
        "  - key: v\n"
        "    run: |\n"
        "      echo one\n"
        "\n"
        "      echo two\n"
        "    other: 'it''s'\n"
        "c: true\n"
    )
    assert run_local.MiniYaml(text).parse() == {
        "a": 1,
        "b": [
            "x",
            "quoted # not a comment",
            {"key": "v", "run": "echo one\n\necho two\n", "other": "it's"},
        ],
        "c": True,
    }


def test_github_workflow_structure() -> None:
    env, steps = run_local.github_steps()
    assert env["CHECKPOINT"] == "${{ matrix.checkpoint }}"
    assert env["HF_TOKEN"] == "${{ secrets.HF_TOKEN }}"
    assert env["KVSCALE_PACKAGE"] == "kvscale[hub] @ git+https://github.com/OWNER/kvscale@v0.3.0"
    assert [(s.name, s.installs) for s in steps] == [
        ("Install kvscale", True),
        ("Inspect KV-cache scales", False),
        ("Diff against the previous release", False),
    ]
    assert steps[0].run == 'python -m pip install "$KVSCALE_PACKAGE"'
    assert 'kvscale inspect "$CHECKPOINT" --strict --junit reports/kvscale-inspect.xml' in (
        steps[1].run
    )
    assert steps[2].condition == "env.BASELINE != ''"
    assert run_local.github_matrix_checkpoints() == ["hf://ORG/NAME@main"]
    checkout = run_local.github_checkout()
    assert checkout["with"] == {"lfs": False}
    assert checkout["env"] == {"GIT_LFS_SKIP_SMUDGE": "1"}


def test_gitlab_job_structure() -> None:
    variables, script, junit = run_local.gitlab_job()
    assert variables["CHECKPOINT"] == "hf://ORG/NAME@main"
    assert variables["GIT_LFS_SKIP_SMUDGE"] == "1"
    assert variables["KVSCALE_PACKAGE"] == (
        "kvscale[hub] @ git+https://github.com/OWNER/kvscale@v0.3.0"
    )
    assert run_local.gitlab_document()["image"] == "python:3.11"  # not -slim: pip needs git
    assert run_local.gitlab_before_script() == ['python -m pip install "$KVSCALE_PACKAGE"']
    assert junit == "reports/kvscale-inspect.xml"
    assert script[1] == 'kvscale inspect "$CHECKPOINT" --strict --junit reports/kvscale-inspect.xml'


def test_templates_download_no_weights_and_no_torch() -> None:
    for path in (CI / "github-actions.yml", CI / "gitlab-ci.yml"):
        text = path.read_text()
        commands = "\n".join(
            line for line in text.splitlines() if not line.lstrip().startswith("#")
        )
        for forbidden in ("lfs: true", "git lfs", "torch", "--index-url", "hf_hub_download"):
            assert forbidden not in commands, (path.name, forbidden)


def test_install_source_substitution(tmp_path: Path) -> None:
    requirement = "kvscale[hub] @ git+https://github.com/OWNER/kvscale@v0.3.0"
    assert run_local.requirement_tag(requirement) == "v0.3.0"
    assert run_local.requirement_tag("kvscale @ git+https://h/o/kvscale@0123abc") == "0123abc"
    clone = tmp_path / "kvscale"
    assert run_local.local_install_source(requirement, clone) == (
        f"kvscale[hub] @ git+file://localhost{clone.as_posix()}@v0.3.0"
    )
    with pytest.raises(ValueError, match="OWNER/kvscale@TAG"):
        run_local.local_install_source("kvscale==0.3.0", clone)
    with pytest.raises(ValueError, match="pins no revision"):
        run_local.requirement_tag("kvscale @ git+https://github.com/OWNER/kvscale")


def test_expressions() -> None:
    evaluate = run_local.evaluate
    assert evaluate("${{ matrix.checkpoint }}", {"checkpoint": "hf://a/b@c"}) == "hf://a/b@c"
    assert evaluate("${{ secrets.HF_TOKEN }}", {}) == ""
    assert evaluate("plain", {}) == "plain"
    with pytest.raises(ValueError, match="unsupported expression"):
        evaluate("${{ github.ref }}", {})


def test_pre_commit_hook_definition() -> None:
    hook = run_local.pre_commit_hook()
    assert hook["id"] == "kvscale-inspect"
    assert hook["language"] == "python"
    assert hook["entry"] == "kvscale inspect --strict --files"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    assert "additional_dependencies" not in hook  # the plain install: no torch
    files = re.compile(hook["files"])
    for selected in (
        "model.safetensors",
        "ckpt/model-00001-of-00002.safetensors",
        "ckpt/model.safetensors.index.json",
        "ckpt/config.json",
        "config.json",
        "ckpt/hf_quant_config.json",
    ):
        assert files.search(selected), selected
    for ignored in ("README.md", "ckpt/generation_config.json", "ckpt/myconfig.json", "x.py"):
        assert not files.search(ignored), ignored


def test_condition_evaluation() -> None:
    holds = run_local.condition_holds
    assert holds(None, {})
    assert holds("always()", {})
    assert holds("env.BASELINE != ''", {"BASELINE": "x"})
    assert not holds("${{ env.BASELINE != '' }}", {"BASELINE": ""})
    assert holds("env.BASELINE == ''", {})
    with pytest.raises(ValueError, match="unsupported"):
        holds("github.event_name == 'push'", {})


def test_example_policy_file_is_valid() -> None:
    from kvscale.policy import Policy, load_policy_file

    loaded = load_policy_file(CI / "kvscale.toml")
    assert loaded.policy == Policy(
        strict=False,
        fail_on=frozenset({"default-scale-used", "coverage-gap"}),
        allow=frozenset({"precision-lost"}),
    )
    assert loaded.max_rel_change == 0.01


def test_run_local_sh_calls_the_runner() -> None:
    script = (CI / "run_local.sh").read_text()
    assert script.startswith("#!/usr/bin/env bash\n")
    assert 'run_local.py" --install "$@"' in script
    assert (CI / "run_local.sh").stat().st_mode & 0o111


@pytest.mark.slow
def test_templates_as_pasted_in_fresh_venvs(tmp_path: Path) -> None:
    """run_local.sh: the install steps as written (from a snapshot of this tree), each in a
    fresh venv without torch, then every scenario with that venv's kvscale."""
    results = run_local.run_all(GOOD, BROKEN, tmp_path, install=True)
    names = [outcome.scenario for outcome in results]
    assert sorted(names) == sorted([*SCENARIOS, "github-actions install", "gitlab-ci install"])
    for outcome in results:
        assert outcome.problems == [], (
            f"{outcome.scenario}: {outcome.problems}\n--- stdout\n{outcome.stdout}\n"
            f"--- stderr\n{outcome.stderr}"
        )
