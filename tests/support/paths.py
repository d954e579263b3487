"""Where things are: the repository and the test suite's data directories."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
ROOT = TESTS.parent
EXAMPLES = ROOT / "examples"
DOCS = ROOT / "docs"
GOLDEN = TESTS / "golden"
FIXTURES = TESTS / "fixtures"
PARITY = TESTS / "parity"
