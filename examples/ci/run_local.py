"""Run the commands of the CI integrations locally, on a passing and a failing checkpoint.

    python examples/ci/run_local.py [--good DIR] [--broken DIR] [--keep]

It builds a fresh repository in a temporary directory (``git init``, the two checkpoints copied
to ``examples/llm-compressor-fp8`` and ``examples/broken``, the workflow and job files copied to
where GitHub and GitLab read them), then:

* GitHub Actions (``github-actions.yml``): runs every ``run:`` step except the install step,
  with bash -eo pipefail as the runner does, ``GITHUB_ACTIONS=true`` and the job's env;
  ``if: env.X != ''`` conditions are honoured, ``uses:`` steps are skipped;
* GitLab CI (``gitlab-ci.yml``): runs the job's ``script:`` lines (not ``before_script``,
  which installs kvscale) with the job's variables, stopping at the first failure as GitLab does;
* pre-commit (``.pre-commit-hooks.yaml``): selects the repository's files with the hook's
  ``files`` pattern, as pre-commit does, and runs its ``entry`` with them;

each with the good checkpoint (expect exit 0) and the broken one (expect exit 1, a readable
``FAIL`` summary, the problem codes, and for GitHub ``::error`` annotations). The diff step runs
with BASELINE set: good vs good (exit 0) and good vs broken (exit 1). Exits 1 when any
expectation fails. ``tests/test_ci_examples.py`` runs the same scenarios under pytest.

The YAML files are read with PyYAML when it is installed, else with a small reader for the
subset they use (block mappings and lists, ``|`` blocks, quoted scalars, comments).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GITHUB_FILE = HERE / "github-actions.yml"
GITLAB_FILE = HERE / "gitlab-ci.yml"
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"
GOOD_PATH = "examples/llm-compressor-fp8"
BROKEN_PATH = "examples/broken"
JUNIT_PATH = "reports/kvscale-inspect.xml"


# --- a small YAML reader for the subset these files use ----------------------------------------

_KEY = re.compile(r"""^(?P<key>"[^"]*"|'[^']*'|[^\s"'#][^:#]*?):(?:\s+|$)(?P<rest>.*)$""")


def _strip_comment(text: str) -> str:
    quote = None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _scalar(text: str) -> Any:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    return text


class MiniYaml:
    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.i = 0

    @staticmethod
    def _indent(line: str) -> int:
        return len(line) - len(line.lstrip(" "))

    def _skip(self) -> None:
        while self.i < len(self.lines):
            stripped = self.lines[self.i].strip()
            if stripped and not stripped.startswith("#"):
                return
            self.i += 1

    def parse(self) -> Any:
        return self._node(0)

    def _node(self, min_indent: int) -> Any:
        self._skip()
        if self.i >= len(self.lines):
            return None
        line = self.lines[self.i]
        indent = self._indent(line)
        if indent < min_indent:
            return None
        if line.strip() == "-" or line.strip().startswith("- "):
            return self._list(indent)
        return self._map(indent)

    def _map(self, indent: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        while True:
            self._skip()
            if self.i >= len(self.lines):
                return out
            line = self.lines[self.i]
            stripped = line.strip()
            if self._indent(line) != indent or stripped.startswith("- "):
                return out
            match = _KEY.match(stripped)
            if match is None:
                raise ValueError(f"line {self.i + 1}: expected 'key: value': {stripped!r}")
            self.i += 1
            out[str(_scalar(match.group("key")))] = self._value(match.group("rest"), indent)

    def _value(self, rest: str, indent: int) -> Any:
        rest = _strip_comment(rest)
        if rest in ("|", "|-"):
            return self._block(indent, keep_newline=rest == "|")
        if rest == "":
            return self._node(indent + 1)
        return _scalar(rest)

    def _list(self, indent: int) -> list[Any]:
        out: list[Any] = []
        while True:
            self._skip()
            if self.i >= len(self.lines):
                return out
            line = self.lines[self.i]
            stripped = line.strip()
            if self._indent(line) != indent or not (stripped == "-" or stripped.startswith("- ")):
                return out
            content = stripped[1:].lstrip()
            if not content:
                self.i += 1
                out.append(self._node(indent + 1))
                continue
            item_indent = indent + len(stripped) - len(content)
            if _KEY.match(content):
                # "- key: value" starts a mapping whose keys line up with "key".
                self.lines[self.i] = " " * item_indent + content
                out.append(self._map(item_indent))
            else:
                self.i += 1
                out.append(_scalar(_strip_comment(content)))

    def _block(self, indent: int, *, keep_newline: bool) -> str:
        collected: list[str] = []
        block_indent: int | None = None
        while self.i < len(self.lines):
            line = self.lines[self.i]
            if not line.strip():
                collected.append("")
                self.i += 1
                continue
            current = self._indent(line)
            if current <= indent or (block_indent is not None and current < block_indent):
                break
            if block_indent is None:
                block_indent = current
            collected.append(line[block_indent:])
            self.i += 1
        while collected and not collected[-1]:
            collected.pop()
        return "\n".join(collected) + ("\n" if keep_newline and collected else "")


def load_yaml(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        return MiniYaml(text).parse()
    return yaml.safe_load(text)


# --- the commands of each integration ---------------------------------------------------------


@dataclass
class Step:
    name: str
    run: str
    condition: str | None
    env: dict[str, str] = field(default_factory=dict)


def github_job(path: Path = GITHUB_FILE) -> tuple[dict[str, str], list[Step]]:
    """The job's env and its runnable steps (no ``uses:``, no install step)."""
    document = load_yaml(path)
    (job,) = document["jobs"].values()
    env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    steps = []
    for step in job["steps"]:
        if "run" not in step or "install" in str(step.get("name", "")).lower():
            continue
        step_env = {str(k): str(v) for k, v in (step.get("env") or {}).items()}
        steps.append(Step(str(step.get("name", "")), step["run"], step.get("if"), step_env))
    return env, steps


def github_matrix_checkpoints(path: Path = GITHUB_FILE) -> list[str]:
    document = load_yaml(path)
    (job,) = document["jobs"].values()
    return [str(c) for c in job["strategy"]["matrix"]["checkpoint"]]


def gitlab_job(path: Path = GITLAB_FILE) -> tuple[dict[str, str], list[str], str]:
    """The job's variables, its ``script:`` lines, and its JUnit report path."""
    document = load_yaml(path)
    (job,) = (v for k, v in document.items() if isinstance(v, dict) and "script" in v)
    variables = {str(k): str(v) for k, v in (job.get("variables") or {}).items()}
    return variables, [str(line) for line in job["script"]], job["artifacts"]["reports"]["junit"]


def pre_commit_hook(path: Path = HOOKS_FILE, hook_id: str = "kvscale-inspect") -> dict[str, Any]:
    hooks = load_yaml(path)
    (hook,) = (h for h in hooks if h["id"] == hook_id)
    return dict(hook)


_ENV_EXPR = re.compile(r"^\$\{\{\s*(.*?)\s*\}\}$")


def condition_holds(condition: str | None, env: dict[str, str]) -> bool:
    """The few ``if:`` forms the workflow uses: ``env.X != ''``, ``env.X == ''``, always()."""
    if condition is None:
        return True
    expr = condition.strip()
    match = _ENV_EXPR.match(expr)
    if match:
        expr = match.group(1)
    if expr in ("always()", "success()"):
        return True
    match = re.fullmatch(r"env\.(\w+)\s*(==|!=)\s*''", expr)
    if match is None:
        raise ValueError(f"unsupported if: condition {condition!r}")
    empty = env.get(match.group(1), "") == ""
    return empty if match.group(2) == "==" else not empty


# --- running ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    scenario: str
    expected: int
    code: int
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _environment(extra: dict[str, str], repo: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_"))}
    env.pop("GITLAB_CI", None)
    # The kvscale next to this Python first, as a CI job's venv would be.
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "120"
    env.update(extra)
    env["HOME"] = str(repo)  # nothing from the user's home (pip config, ...) leaks in
    return env


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # GitHub's default shell on Linux: bash --noprofile --norc -eo pipefail {0}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def make_repo(root: Path, good: Path, broken: Path) -> Path:
    """A fresh repository with the two checkpoints and the CI files where they belong."""
    repo = root / "repo"
    repo.mkdir()
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    else:  # policy discovery only needs the .git marker
        (repo / ".git").mkdir()
    for source, target in ((good, GOOD_PATH), (broken, BROKEN_PATH)):
        shutil.copytree(source, repo / target)
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(GITHUB_FILE, repo / ".github" / "workflows" / "kvscale.yml")
    shutil.copy(GITLAB_FILE, repo / ".gitlab-ci.yml")
    return repo


def _expect_readable_failure(outcome: Outcome, *, annotations: bool) -> None:
    text = outcome.stdout + outcome.stderr
    if "FAIL" not in text:
        outcome.problems.append("no FAIL summary in the output")
    if not re.search(r"\b(error|fail) [a-z-]+", text):
        outcome.problems.append("no problem code in the output")
    if "Traceback" in text:
        outcome.problems.append("a traceback in the output")
    if annotations and not re.search(r"(?m)^::error ", outcome.stderr):
        outcome.problems.append("no ::error annotation on stderr")


def _check_junit(outcome: Outcome, path: Path, *, failing: bool) -> None:
    if not path.is_file():
        outcome.problems.append(f"no JUnit report at {path}")
        return
    root = ET.parse(path).getroot()
    failures = int(root.get("failures", "-1"))
    if failing != (failures > 0):
        outcome.problems.append(f"JUnit report has {failures} failures")


def _finish(outcome: Outcome) -> Outcome:
    if outcome.code != outcome.expected:
        outcome.problems.insert(0, f"exit {outcome.code}, expected {outcome.expected}")
    return outcome


def run_github(repo: Path, checkpoint: str, expected: int) -> Outcome:
    job_env, steps = github_job(repo / ".github" / "workflows" / "kvscale.yml")
    env = dict(job_env, CHECKPOINT=checkpoint, BASELINE="")
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(repo), CI="true")
    stdout = stderr = ""
    code = 0
    shutil.rmtree(repo / "reports", ignore_errors=True)
    for step in steps:
        if not condition_holds(step.condition, env):
            continue
        result = _bash(step.run, _environment({**env, **step.env}, repo), repo)
        stdout += result.stdout
        stderr += result.stderr
        if result.returncode != 0:
            code = result.returncode
            break  # a failed step fails the job; later steps without if: always() are skipped
    outcome = Outcome(f"github-actions {checkpoint}", expected, code, stdout, stderr)
    if expected:
        _expect_readable_failure(outcome, annotations=True)
    _check_junit(outcome, repo / JUNIT_PATH, failing=bool(expected))
    return _finish(outcome)


def run_github_diff(repo: Path, baseline: str, checkpoint: str, expected: int) -> Outcome:
    job_env, steps = github_job(repo / ".github" / "workflows" / "kvscale.yml")
    (step,) = (s for s in steps if "kvscale diff" in s.run)
    env = dict(job_env, CHECKPOINT=checkpoint, BASELINE=baseline)
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(repo), CI="true")
    if not condition_holds(step.condition, env):
        raise AssertionError("the diff step did not run with BASELINE set")
    result = _bash(step.run, _environment(env, repo), repo)
    outcome = Outcome(
        f"github-actions diff {baseline} {checkpoint}",
        expected,
        result.returncode,
        result.stdout,
        result.stderr,
    )
    if expected:
        _expect_readable_failure(outcome, annotations=True)
    return _finish(outcome)


def run_gitlab(repo: Path, checkpoint: str, expected: int) -> Outcome:
    variables, script, junit = gitlab_job(repo / ".gitlab-ci.yml")
    env = dict(variables, CHECKPOINT=checkpoint, GITLAB_CI="true", CI="true")
    shutil.rmtree(repo / "reports", ignore_errors=True)
    stdout = stderr = ""
    code = 0
    for line in script:  # GitLab runs the lines in one shell and stops at the first failure
        result = _bash(line, _environment(env, repo), repo)
        stdout += result.stdout
        stderr += result.stderr
        if result.returncode != 0:
            code = result.returncode
            break
    outcome = Outcome(f"gitlab-ci {checkpoint}", expected, code, stdout, stderr)
    if expected:
        _expect_readable_failure(outcome, annotations=False)
    _check_junit(outcome, repo / junit, failing=bool(expected))
    return _finish(outcome)


def hook_files(repo: Path, pattern: str, under: str) -> list[str]:
    """The files pre-commit would pass: repository-relative paths matching ``files``."""
    regex = re.compile(pattern)
    found = []
    for path in sorted((repo / under).rglob("*")):
        rel = path.relative_to(repo).as_posix()
        if path.is_file() and regex.search(rel):
            found.append(rel)
    return found


def run_pre_commit(repo: Path, checkpoint: str, expected: int) -> Outcome:
    hook = pre_commit_hook()
    files = hook_files(repo, hook["files"], checkpoint)
    if not files:
        raise AssertionError(f"the hook's files pattern selects nothing in {checkpoint}")
    import shlex

    args = shlex.split(hook["entry"]) + (files if hook.get("pass_filenames", True) else [])
    result = subprocess.run(
        args,
        cwd=repo,
        env=_environment({}, repo),
        capture_output=True,
        text=True,
        timeout=300,
    )
    outcome = Outcome(
        f"pre-commit {checkpoint}", expected, result.returncode, result.stdout, result.stderr
    )
    if expected:
        _expect_readable_failure(outcome, annotations=False)
    return _finish(outcome)


def run_all(good: Path, broken: Path, workdir: Path) -> list[Outcome]:
    repo = make_repo(workdir, good, broken)
    return [
        run_github(repo, GOOD_PATH, 0),
        run_github(repo, BROKEN_PATH, 1),
        run_github_diff(repo, GOOD_PATH, GOOD_PATH, 0),
        run_github_diff(repo, GOOD_PATH, BROKEN_PATH, 1),
        run_gitlab(repo, GOOD_PATH, 0),
        run_gitlab(repo, BROKEN_PATH, 1),
        run_pre_commit(repo, GOOD_PATH, 0),
        run_pre_commit(repo, BROKEN_PATH, 1),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=Path, default=REPO / GOOD_PATH)
    parser.add_argument("--broken", type=Path, default=REPO / BROKEN_PATH)
    parser.add_argument("--keep", action="store_true", help="keep the temporary repository")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every output")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kvscale-ci-"))
    try:
        outcomes = run_all(args.good.resolve(), args.broken.resolve(), workdir)
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    failed = 0
    for outcome in outcomes:
        verdict = "ok  " if outcome.ok else "FAIL"
        print(f"{verdict} {outcome.scenario}: exit {outcome.code} (expected {outcome.expected})")
        for problem in outcome.problems:
            print(f"       {problem}")
        if args.verbose or not outcome.ok:
            for name, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
                if text.strip():
                    print(f"  --- {name}\n" + "\n".join("  " + t for t in text.splitlines()))
        failed += not outcome.ok
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
