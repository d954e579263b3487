"""The build CI checks: ``.ci/run`` builds the sdist and the wheel and runs ``twine check`` on
them, with tools the test extra installs (so kvscale is one ``twine upload`` from published)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_ci_builds_and_checks_the_distributions() -> None:
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    build = commands.index('python -m build --outdir "$dist" .')
    check = commands.index('twine check --strict "$dist"/*')
    tests = commands.index("python -m pytest -q")
    assert build < check < tests  # (a broken package fails before the long test runs)


def test_the_test_extra_brings_build_and_twine() -> None:
    tomllib = pytest.importorskip("tomllib")  # (Python 3.11+)
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    names = {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0] for spec in extras["test"]}
    assert {"build", "twine"} <= names


def test_every_module_directory_is_a_package_the_wheel_ships() -> None:
    """``[tool.setuptools.packages.find]`` ships regular packages only: a directory of modules
    without ``__init__.py`` (kvscale/model/ was one) would be left out of the wheel."""
    dirs = {p.parent for p in (ROOT / "kvscale").rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(d.relative_to(ROOT)) for d in dirs if not (d / "__init__.py").is_file())
    assert missing == []
