"""Run the commands of the CI integrations locally, on a passing and a failing checkpoint.

    python examples/ci/run_local.py [--install] [--good DIR] [--broken DIR] [--keep] [-v]

It builds a fresh repository in a temporary directory, laid out as a checkout of a repository
that keeps its checkpoints in Git LFS and was checked out with LFS skipped: the workflow and job
files where GitHub and GitLab read them, ``kvscale.toml`` at the root, the two checkpoints under
``models/`` as LFS *pointer files* (what ``lfs: false`` / ``GIT_LFS_SKIP_SMUDGE=1`` leave), and
real copies under ``examples/`` (a checkpoint committed without LFS). A loopback Hub
(tests/support/hub_server.py, in this process) serves the real checkpoints as
``kvscale-ci/llm-compressor-fp8`` and ``kvscale-ci/broken``; ``HF_ENDPOINT`` points at it.
Then, with the good checkpoint (expect exit 0) and the broken one (expect exit 1, a readable
``FAIL`` summary, the problem codes, a JUnit report with failures, ``::error`` annotations for
GitHub):

* GitHub Actions (``github-actions.yml``): every ``run:`` step as written, each in
  ``bash --noprofile --norc -eo pipefail`` as the runner runs it, with ``GITHUB_ACTIONS=true``
  and the job's env (``${{ matrix.checkpoint }}`` set to the scenario's checkpoint,
  ``${{ secrets.* }}`` empty, as for a repository without the secret); ``if: env.X != ''``
  conditions are honoured, ``uses:`` steps are skipped. CHECKPOINT is the remote form the
  template recommends, ``hf://kvscale-ci/NAME@<sha>``, and a path in the repository;
* GitLab CI (``gitlab-ci.yml``): the job's ``script:`` lines in one shell, as the runner does,
  with the job's variables;
* pre-commit (``.pre-commit-hooks.yaml``): the files the hook's ``files`` pattern selects, passed
  to its ``entry`` (``tests/project/test_precommit.py`` runs the real ``pre-commit try-repo``);
* the trap the templates avoid: ``kvscale inspect`` on the LFS pointer files exits 2.

Every read of a ``.safetensors`` file from the Hub must be a ranged GET (no weights downloaded).

``--install`` (what ``run_local.sh`` does) runs the install steps too, as written: the GitHub
``Install kvscale`` step and the GitLab ``before_script``, each in a fresh virtual environment
made with ``python -m venv``. Only the install source changes: ``git+https://github.com/OWNER/
kvscale`` in ``KVSCALE_PACKAGE`` becomes ``git+file://`` of a snapshot of this working tree
(committed and tagged with the template's tag in a temporary clone, so that uncommitted work is
what gets installed). It then checks that the environment has no torch, safetensors or triton
(the light install) and runs the scenarios with that environment's ``kvscale``. pip needs its
package index for typer, rich, huggingface_hub and setuptools. Without ``--install`` the
scenarios use the ``kvscale`` next to this Python (``tests/project/test_ci_templates.py`` runs them so).

Exits 1 when any expectation fails. The YAML files are read with PyYAML when it is installed,
else with a small reader for the subset they use (block mappings and lists, ``|`` blocks, quoted
scalars, comments).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
GITHUB_FILE = HERE / "github-actions.yml"
GITLAB_FILE = HERE / "gitlab-ci.yml"
POLICY_FILE = HERE / "kvscale.toml"
HOOKS_FILE = REPO / ".pre-commit-hooks.yaml"
GOOD_PATH = "examples/llm-compressor-fp8"
BROKEN_PATH = "examples/broken"
GOOD_POINTERS = "models/llm-compressor-fp8"
JUNIT_PATH = "reports/kvscale-inspect.xml"
HUB_GOOD = "kvscale-ci/llm-compressor-fp8"
HUB_BROKEN = "kvscale-ci/broken"
# The install source the templates name, and what --install puts in its place.
INSTALL_SOURCE = re.compile(r"git\+https://github\.com/OWNER/kvscale(?=@)")
# What the light install must not pull in.
HEAVY_PACKAGES = ("torch", "safetensors", "triton", "numpy", "transformers")


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
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
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

    @property
    def installs(self) -> bool:
        return "install" in self.name.lower()


def _github_document(path: Path) -> dict[str, Any]:
    document = load_yaml(path)
    (job,) = document["jobs"].values()
    return dict(job)


def github_steps(path: Path = GITHUB_FILE) -> tuple[dict[str, str], list[Step]]:
    """The job's env (expressions unevaluated) and all its ``run:`` steps, install included."""
    job = _github_document(path)
    env = {str(k): str(v) for k, v in (job.get("env") or {}).items()}
    steps = []
    for step in job["steps"]:
        if "run" not in step:
            continue
        step_env = {str(k): str(v) for k, v in (step.get("env") or {}).items()}
        steps.append(Step(str(step.get("name", "")), step["run"], step.get("if"), step_env))
    return env, steps


def github_job(path: Path = GITHUB_FILE) -> tuple[dict[str, str], list[Step]]:
    """The job's env and its runnable steps after the install step."""
    env, steps = github_steps(path)
    return env, [step for step in steps if not step.installs]


def github_matrix_checkpoints(path: Path = GITHUB_FILE) -> list[str]:
    return [str(c) for c in _github_document(path)["strategy"]["matrix"]["checkpoint"]]


def github_checkout(path: Path = GITHUB_FILE) -> dict[str, Any]:
    """The ``actions/checkout`` step (its ``with:`` and ``env:``)."""
    (step,) = (
        s
        for s in _github_document(path)["steps"]
        if str(s.get("uses", "")).startswith("actions/checkout@")
    )
    return dict(step)


def gitlab_document(path: Path = GITLAB_FILE) -> dict[str, Any]:
    document = load_yaml(path)
    (job,) = (v for v in document.values() if isinstance(v, dict) and "script" in v)
    return dict(job)


def gitlab_job(path: Path = GITLAB_FILE) -> tuple[dict[str, str], list[str], str]:
    """The job's variables, its ``script:`` lines, and its JUnit report path."""
    job = gitlab_document(path)
    variables = {str(k): str(v) for k, v in (job.get("variables") or {}).items()}
    return variables, [str(line) for line in job["script"]], job["artifacts"]["reports"]["junit"]


def gitlab_before_script(path: Path = GITLAB_FILE) -> list[str]:
    return [str(line) for line in gitlab_document(path).get("before_script") or []]


def pre_commit_hook(path: Path = HOOKS_FILE, hook_id: str = "kvscale-inspect") -> dict[str, Any]:
    hooks = load_yaml(path)
    (hook,) = (h for h in hooks if h["id"] == hook_id)
    return dict(hook)


_ENV_EXPR = re.compile(r"^\$\{\{\s*(.*?)\s*\}\}$")
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


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


def evaluate(value: str, matrix: dict[str, str]) -> str:
    """``${{ matrix.X }}`` and ``${{ secrets.X }}`` (empty: a repository without the secret, or
    a pull request from a fork) in an env value; anything else is refused."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        if expr.startswith("secrets."):
            return ""
        if expr.startswith("matrix.") and expr[7:] in matrix:
            return matrix[expr[7:]]
        raise ValueError(f"unsupported expression ${{{{ {expr} }}}} in {value!r}")

    return _EXPR.sub(one, value)


def local_install_source(requirement: str, clone: Path) -> str:
    """The template's ``KVSCALE_PACKAGE`` with only its git URL replaced by a local clone's."""
    # file://localhost/PATH, not file:///PATH: the PEP 508 parser of pip < 24 rejects a
    # git+file URL without a host; git reads both the same.
    url = "git+file://localhost" + clone.resolve().as_posix()
    replaced, count = INSTALL_SOURCE.subn(url, requirement)
    if count != 1:
        raise ValueError(
            f"KVSCALE_PACKAGE {requirement!r} does not name git+https://github.com/OWNER/kvscale@TAG"
        )
    return replaced


def requirement_tag(requirement: str) -> str:
    """The revision a ``... @ git+URL@REV`` requirement pins."""
    match = re.search(r"git\+\S+@([^@\s/]+)$", requirement)
    if match is None:
        raise ValueError(f"{requirement!r} pins no revision (git+URL@TAG)")
    return match.group(1)


# --- the environment --------------------------------------------------------------------------

# Variables from the caller's environment that would change what a CI job sees.
_DROPPED = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_ENDPOINT",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_HUB_OFFLINE",
    "HF_TOKEN_PATH",
    "TRANSFORMERS_OFFLINE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "GITLAB_CI",
    "VIRTUAL_ENV",
    "PYTHONPATH",
    "GIT_LFS_SKIP_SMUDGE",
)


@dataclass
class World:
    """Where the commands run: the repository, the loopback Hub, the kvscale on PATH."""

    repo: Path
    hub_url: str
    hf_home: Path
    bindir: Path
    shas: dict[str, str]
    server: Any = None
    summary_file: Path | None = None

    def hub_ref(self, repo_id: str) -> str:
        """The remote form the templates recommend: a pinned revision (the commit sha)."""
        return f"hf://{repo_id}@{self.shas[repo_id]}"


def _content_sha(repo_id: str, directory: Path) -> str:
    """A commit sha for a served directory that depends on its files only (stable names)."""
    import hashlib

    digest = hashlib.sha1(repo_id.encode())
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(path.relative_to(directory).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def environment(world: World, extra: dict[str, str], *, keep_home: bool = False) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "CI_", "RUNNER_"))}
    for name in _DROPPED:
        env.pop(name, None)
    # The kvscale of the job's environment first, as on a runner after the install step.
    env["PATH"] = str(world.bindir) + os.pathsep + env.get("PATH", "")
    env["COLUMNS"] = "120"
    env.update(
        HF_ENDPOINT=world.hub_url,
        HF_HOME=str(world.hf_home),
        HF_HUB_OFFLINE="0",
        HF_HUB_DISABLE_TELEMETRY="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.update(extra)
    if not keep_home:
        # Nothing from the user's home (a Hub token file, configuration) leaks in. pip keeps
        # HOME (keep_home): its index and certificate settings live there.
        env["HOME"] = str(world.repo)
    return env


def _bash(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # GitHub's default shell on Linux: bash --noprofile --norc -eo pipefail {0}; GitLab's
    # runner runs a job's lines in one bash with errexit and pipefail too.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"


def _write_pointers(source: Path, target: Path) -> None:
    """``source`` as a checkout with LFS skipped leaves it: shards as pointer files."""
    import hashlib

    target.mkdir(parents=True)
    for path in sorted(source.iterdir()):
        if path.name.endswith(".safetensors"):
            data = path.read_bytes()
            oid = hashlib.sha256(data).hexdigest()
            (target / path.name).write_text(LFS_POINTER.format(oid=oid, size=len(data)))
        elif path.is_file():
            shutil.copy(path, target / path.name)


def make_repo(root: Path, good: Path, broken: Path) -> Path:
    """A fresh repository with the CI files where they belong, the checkpoints as LFS pointer
    files under models/ and as real files under examples/."""
    repo = root / "repo"
    repo.mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True, capture_output=True)
    else:  # policy discovery only needs the .git marker
        (repo / ".git").mkdir()
    (repo / ".gitattributes").write_text("*.safetensors filter=lfs diff=lfs merge=lfs -text\n")
    for source, name in ((good, "llm-compressor-fp8"), (broken, "broken")):
        shutil.copytree(source, repo / "examples" / name)
        _write_pointers(source, repo / "models" / name)
    (repo / ".github" / "workflows").mkdir(parents=True)
    shutil.copy(GITHUB_FILE, repo / ".github" / "workflows" / "kvscale.yml")
    shutil.copy(GITLAB_FILE, repo / ".gitlab-ci.yml")
    shutil.copy(POLICY_FILE, repo / "kvscale.toml")
    return repo


def _hub_server_class() -> Any:
    try:
        from support.hub_server import HubServer  # type: ignore[import-not-found]
    except ImportError:
        sys.path.insert(0, str(REPO / "tests"))
        from support.hub_server import HubServer  # type: ignore[import-not-found]
    return HubServer


@contextmanager
def world(workdir: Path, good: Path, broken: Path, bindir: Path | None = None) -> Iterator[World]:
    """The repository and a running loopback Hub serving the two checkpoints."""
    repo = make_repo(workdir, good, broken)
    server = _hub_server_class()()
    shas = {
        repo_id: server.add_repo(repo_id, directory, sha=_content_sha(repo_id, directory))
        for repo_id, directory in ((HUB_GOOD, good), (HUB_BROKEN, broken))
    }
    hf_home = workdir / "hf-home"
    hf_home.mkdir(parents=True)
    with server:
        yield World(
            repo=repo,
            hub_url=server.url,
            hf_home=hf_home,
            bindir=bindir or Path(sys.executable).parent,
            shas=shas,
            server=server,
        )


# --- installing as the templates do ---------------------------------------------------------


def snapshot_source(dest: Path, tag: str, source: Path = REPO) -> Path:
    """A git repository holding ``source``'s working tree (tracked and untracked files that git
    does not ignore, uncommitted changes included), committed and tagged ``tag``: what a
    ``git+file://`` install of that tag gets."""
    listing = subprocess.run(
        ["git", "-C", str(source), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        check=True,
        capture_output=True,
    ).stdout.decode()
    dest.mkdir(parents=True)
    for rel in sorted(set(filter(None, listing.split("\0")))):
        path = source / rel
        if not (path.is_file() or path.is_symlink()):
            continue  # deleted in the working tree
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / rel, follow_symlinks=False)
    git = ["git", "-C", str(dest), "-c", "user.name=kvscale-ci", "-c", "user.email=ci@localhost"]
    git += ["-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"]
    subprocess.run([*git, "init", "-q"], check=True, capture_output=True)
    subprocess.run([*git, "add", "-A"], check=True, capture_output=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], check=True, capture_output=True)
    subprocess.run([*git, "tag", tag], check=True, capture_output=True)
    return dest


def make_venv(path: Path, python: str = sys.executable) -> Path:
    """A fresh virtual environment (``python -m venv``); returns its bin directory."""
    subprocess.run([python, "-m", "venv", str(path)], check=True, capture_output=True)
    return path / "bin"


def installed_packages(bindir: Path) -> dict[str, str]:
    listing = subprocess.run(
        [str(bindir / "python"), "-m", "pip", "list", "--format=json"],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    ).stdout
    return {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(listing)}


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


# --- running ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    scenario: str
    expected: int
    code: int
    stdout: str
    stderr: str
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


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
    outcome.notes.append(f"JUnit: {root.get('tests')} tests, {failures} failures")


def _check_ranged_reads(outcome: Outcome, world: World, remote: bool) -> None:
    """No weights downloaded: every GET of a shard from the Hub asked for a byte range."""
    log = list(world.server.log) if world.server is not None else []
    shards = [r for r in log if r.method == "GET" and r.path.endswith(".safetensors")]
    whole = [r.path for r in shards if not r.range]
    if whole:
        outcome.problems.append(f"shards read without a Range header: {whole}")
    if remote and not shards:
        outcome.problems.append("nothing was read from the Hub")
    if log:
        sent = sum(r.sent for r in log)
        outcome.notes.append(
            f"Hub: {len(log)} requests ({len(shards)} ranged shard reads), {sent} B"
        )


def _note_annotation_files(outcome: Outcome, repo: Path) -> None:
    """GitHub links an annotation to ``file=`` only when that path is in the checkout."""
    named = set(re.findall(r"(?m)^::(?:error|warning|notice) file=([^,:]+)", outcome.stderr))
    outside = sorted(f for f in named if not (repo / f.replace("%3A", ":")).is_file())
    if outside:
        outcome.notes.append(f"annotations name files outside the checkout: {outside}")


def _finish(outcome: Outcome) -> Outcome:
    if outcome.code != outcome.expected:
        outcome.problems.insert(0, f"exit {outcome.code}, expected {outcome.expected}")
    return outcome


def _github_env(world: World, checkpoint: str, baseline: str = "") -> dict[str, str]:
    job_env, _ = github_steps(world.repo / ".github" / "workflows" / "kvscale.yml")
    env = {k: evaluate(v, {"checkpoint": checkpoint}) for k, v in job_env.items()}
    env["BASELINE"] = baseline
    if world.summary_file is not None:
        env["GITHUB_STEP_SUMMARY"] = str(world.summary_file)
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(world.repo), CI="true")
    return env


def install_github(world: World, clone: Path) -> Outcome:
    """The workflow's install step(s), as written, with KVSCALE_PACKAGE from ``clone``."""
    _, steps = github_steps(world.repo / ".github" / "workflows" / "kvscale.yml")
    env = _github_env(world, "")
    env["KVSCALE_PACKAGE"] = local_install_source(env["KVSCALE_PACKAGE"], clone)
    return _install("github-actions install", world, [s.run for s in steps if s.installs], env)


def install_gitlab(world: World, clone: Path) -> Outcome:
    variables, _, _ = gitlab_job(world.repo / ".gitlab-ci.yml")
    env = dict(variables, GITLAB_CI="true", CI="true")
    env["KVSCALE_PACKAGE"] = local_install_source(env["KVSCALE_PACKAGE"], clone)
    script = "\n".join(gitlab_before_script(world.repo / ".gitlab-ci.yml"))
    return _install("gitlab-ci install", world, [script], env)


def _install(name: str, world: World, scripts: list[str], env: dict[str, str]) -> Outcome:
    stdout = stderr = ""
    code = 0
    started = time.monotonic()
    for script in scripts:
        result = _bash(script, environment(world, env, keep_home=True), world.repo)
        stdout += result.stdout
        stderr += result.stderr
        if result.returncode:
            code = result.returncode
            break
    elapsed = time.monotonic() - started
    outcome = Outcome(name, 0, code, stdout, stderr)
    if not scripts:
        outcome.problems.append("no install step found")
    if code == 0:
        packages = installed_packages(world.bindir)
        heavy = sorted(set(HEAVY_PACKAGES) & set(packages))
        if heavy:
            outcome.problems.append(f"the light install pulled {heavy}")
        for needed in ("kvscale", "huggingface-hub"):
            if needed not in packages:
                outcome.problems.append(f"{needed} is not installed")
        size = _dir_size(world.bindir.parent) / 1e6
        outcome.notes.append(
            f"installed in {elapsed:.1f} s; {len(packages)} packages, venv {size:.0f} MB: "
            + ", ".join(f"{k}=={v}" for k, v in sorted(packages.items()))
        )
    return _finish(outcome)


def _label(checkpoint: str) -> str:
    """A scenario's name: the checkpoint without its pinned revision."""
    return checkpoint.partition("@")[0] if checkpoint.startswith("hf://") else checkpoint


def run_github(world: World, checkpoint: str, expected: int, *, remote: bool) -> Outcome:
    _, steps = github_job(world.repo / ".github" / "workflows" / "kvscale.yml")
    env = _github_env(world, checkpoint)
    stdout = stderr = ""
    code = 0
    shutil.rmtree(world.repo / "reports", ignore_errors=True)
    world.server.reset()
    for step in steps:
        if not condition_holds(step.condition, env):
            continue
        step_env = {k: evaluate(v, {"checkpoint": checkpoint}) for k, v in step.env.items()}
        result = _bash(step.run, environment(world, {**env, **step_env}), world.repo)
        stdout += result.stdout
        stderr += result.stderr
        if result.returncode != 0:
            code = result.returncode
            break  # a failed step fails the job; later steps without if: always() are skipped
    outcome = Outcome(f"github-actions {_label(checkpoint)}", expected, code, stdout, stderr)
    if expected:
        _expect_readable_failure(outcome, annotations=True)
    _check_junit(outcome, world.repo / JUNIT_PATH, failing=bool(expected))
    _check_ranged_reads(outcome, world, remote)
    _note_annotation_files(outcome, world.repo)
    return _finish(outcome)


def run_github_diff(world: World, baseline: str, checkpoint: str, expected: int) -> Outcome:
    _, steps = github_job(world.repo / ".github" / "workflows" / "kvscale.yml")
    (step,) = (s for s in steps if "kvscale diff" in s.run)
    env = _github_env(world, checkpoint, baseline)
    if not condition_holds(step.condition, env):
        raise AssertionError("the diff step did not run with BASELINE set")
    world.server.reset()
    result = _bash(step.run, environment(world, env), world.repo)
    outcome = Outcome(
        f"github-actions diff {_label(baseline)} {_label(checkpoint)}",
        expected,
        result.returncode,
        result.stdout,
        result.stderr,
    )
    if expected:
        _expect_readable_failure(outcome, annotations=True)
    _check_ranged_reads(outcome, world, baseline.startswith("hf://"))
    return _finish(outcome)


def run_gitlab(world: World, checkpoint: str, expected: int, *, remote: bool) -> Outcome:
    variables, script, junit = gitlab_job(world.repo / ".gitlab-ci.yml")
    env = dict(variables, CHECKPOINT=checkpoint, GITLAB_CI="true", CI="true")
    shutil.rmtree(world.repo / "reports", ignore_errors=True)
    world.server.reset()
    # The runner runs a job's lines in one shell and stops at the first failing one.
    result = _bash("\n".join(script), environment(world, env), world.repo)
    outcome = Outcome(
        f"gitlab-ci {_label(checkpoint)}", expected, result.returncode, result.stdout, result.stderr
    )
    if expected:
        _expect_readable_failure(outcome, annotations=False)
    _check_junit(outcome, world.repo / junit, failing=bool(expected))
    _check_ranged_reads(outcome, world, remote)
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


def run_pre_commit(world: World, checkpoint: str, expected: int) -> Outcome:
    hook = pre_commit_hook()
    files = hook_files(world.repo, hook["files"], checkpoint)
    if not files:
        raise AssertionError(f"the hook's files pattern selects nothing in {checkpoint}")
    args = shlex.split(hook["entry"]) + (files if hook.get("pass_filenames", True) else [])
    args[0] = shutil.which(args[0], path=str(world.bindir)) or args[0]
    result = subprocess.run(
        args,
        cwd=world.repo,
        env=environment(world, {}),
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


def run_lfs_pointer_trap(world: World) -> Outcome:
    """What the templates avoid: inspecting the working tree of a checkout without LFS. It must
    fail as unreadable input (exit 2) with one line, never pass."""
    _, steps = github_job(world.repo / ".github" / "workflows" / "kvscale.yml")
    (step,) = (s for s in steps if "kvscale inspect" in s.run)
    env = _github_env(world, GOOD_POINTERS)
    shutil.rmtree(world.repo / "reports", ignore_errors=True)
    result = _bash(step.run, environment(world, env), world.repo)
    outcome = Outcome(
        f"lfs-pointers {GOOD_POINTERS}", 2, result.returncode, result.stdout, result.stderr
    )
    lines = [line for line in result.stderr.splitlines() if line and not line.startswith("::")]
    if "Traceback" in result.stderr or len(lines) != 1:
        outcome.problems.append("not a one-line error on stderr")
    if not re.search(r"(?m)^::error ", result.stderr):
        outcome.problems.append("no ::error annotation on stderr")
    return _finish(outcome)


def _scenarios(world: World, *, github: bool = True, gitlab: bool = True) -> list[Outcome]:
    good, broken = world.hub_ref(HUB_GOOD), world.hub_ref(HUB_BROKEN)
    outcomes = []
    if github:
        outcomes += [
            run_github(world, good, 0, remote=True),
            run_github(world, broken, 1, remote=True),
            run_github(world, GOOD_PATH, 0, remote=False),
            run_github(world, BROKEN_PATH, 1, remote=False),
            run_github_diff(world, good, good, 0),
            run_github_diff(world, good, broken, 1),
            run_pre_commit(world, GOOD_PATH, 0),
            run_pre_commit(world, BROKEN_PATH, 1),
            run_lfs_pointer_trap(world),
        ]
    if gitlab:
        outcomes += [
            run_gitlab(world, good, 0, remote=True),
            run_gitlab(world, broken, 1, remote=True),
        ]
    return outcomes


def run_all(good: Path, broken: Path, workdir: Path, *, install: bool = False) -> list[Outcome]:
    """Every scenario; with ``install``, each CI system's install step first, in its own fresh
    virtual environment, and its scenarios with that environment's kvscale."""
    if not install:
        with world(workdir, good, broken) as w:
            w.summary_file = workdir / "step-summary.md"
            return _scenarios(w)
    requirement = gitlab_job()[0]["KVSCALE_PACKAGE"]
    clone = snapshot_source(workdir / "kvscale-src", requirement_tag(requirement))
    outcomes: list[Outcome] = []
    for system, installer in (("github", install_github), ("gitlab", install_gitlab)):
        bindir = make_venv(workdir / f"venv-{system}")
        with world(workdir / system, good, broken, bindir) as w:
            w.summary_file = workdir / f"{system}-step-summary.md"
            installed = installer(w, clone)
            outcomes.append(installed)
            if installed.ok:
                outcomes += _scenarios(w, github=system == "github", gitlab=system == "gitlab")
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--good", type=Path, default=REPO / GOOD_PATH)
    parser.add_argument("--broken", type=Path, default=REPO / BROKEN_PATH)
    parser.add_argument(
        "--install",
        action="store_true",
        help="run the install steps too, each in a fresh venv, from a snapshot of this tree",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every output")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="kvscale-ci-"))
    try:
        outcomes = run_all(
            args.good.resolve(), args.broken.resolve(), workdir, install=args.install
        )
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
        for note in outcome.notes:
            print(f"       {note}")
        if args.verbose or not outcome.ok:
            for name, text in (("stdout", outcome.stdout), ("stderr", outcome.stderr)):
                if text.strip():
                    print(f"  --- {name}\n" + "\n".join("  " + t for t in text.splitlines()))
        failed += not outcome.ok
    print(f"{len(outcomes) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
