"""Long runs are never silent outside a terminal: a progress line on stderr every
``KVSCALE_PROGRESS_INTERVAL`` seconds (default ``PROGRESS_INTERVAL``), one line each,
neutralized, never on stdout (issue 25).

A ``verify --data``-like run is simulated by a fake core call that reports ``evaluate`` events
(samples, tokens) and moves a fake clock one second per sample, so the expected lines are exact.
"""

from __future__ import annotations

import re
import types
from collections.abc import Callable
from typing import Any

import pytest
from typer.testing import CliRunner

import kvscale.cli.output as output_module
from kvscale.cli import app
from kvscale.errors import InputError
from kvscale.progress import ProgressEvent

HOSTILE = "::error::pwned\n##[error]x \x1b[31mred\u202e"
"""A label from a checkpoint or data file: a workflow command, a newline, ESC, a bidi override."""


def _fake_run(clock: list[float], samples: int) -> Callable[..., Any]:
    def verify_target(target: str, options: Any, progress: Any = None) -> Any:
        # As evaluate_model: a start event, then one after each sample.
        progress(ProgressEvent("evaluate", 0, samples, tokens=0))
        for done in range(1, samples + 1):
            clock[0] += 1.0
            progress(ProgressEvent("evaluate", done, samples, label=HOSTILE, tokens=512 * done))
        raise InputError(target, "the fake run ends here")

    return verify_target


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(output_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    return now


def _run(monkeypatch: pytest.MonkeyPatch, clock: list[float], env: dict[str, str], *extra: str):
    import kvscale.core.verify.run as run

    monkeypatch.setattr(run, "verify_target", _fake_run(clock, 10))
    return CliRunner().invoke(app, ["verify", "examples/broken", "--no-policy", *extra], env=env)


LINE = re.compile(
    r"kvscale: progress: running the model: (\d+)/10 samples, ([\d,]+) tokens"
    # no rate, label or ETA on the start event (done 0)
    r"(?: \(([\d,]+) tok/s\))?(?:, (.*))?, 0:(\d\d) elapsed(?:, about 0:(\d\d) left)?"
)


@pytest.mark.parametrize(("interval", "expected"), [("2.5", [3, 6, 9]), ("0", list(range(0, 11)))])
def test_a_line_every_interval_one_line_each_neutralized_never_on_stdout(
    monkeypatch: pytest.MonkeyPatch, clock: list[float], interval: str, expected: list[int]
) -> None:
    result = _run(monkeypatch, clock, {"KVSCALE_PROGRESS_INTERVAL": interval})
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[-1] == "kvscale: error: examples/broken: the fake run ends here"
    matches = [LINE.fullmatch(line) for line in lines[:-1]]
    assert all(matches), lines
    assert [int(m.group(1)) for m in matches if m] == expected
    for m in matches:
        assert m is not None
        done = int(m.group(1))
        assert int(m.group(5)) == done  # one second per sample
        if done == 0:
            assert m.group(3, 4, 6) == (None, None, None)
            continue
        # From the start event: 512 tokens a second, and the 10 - done seconds left.
        assert m.group(3) == "512"
        assert m.group(6) == (None if done == 10 else f"{10 - done:02d}")
        label = m.group(4)
        assert label == "::error::pwned\\x0a\\x23#[error]x \\x1b[31mred\\u202e"
    assert "##[" not in result.stderr and "\x1b" not in result.stderr


def test_default_interval_is_progress_interval(
    monkeypatch: pytest.MonkeyPatch, clock: list[float]
) -> None:
    monkeypatch.setattr(output_module, "PROGRESS_INTERVAL", 4.0)
    result = _run(monkeypatch, clock, {"KVSCALE_PROGRESS_INTERVAL": ""})
    done = [int(m.group(1)) for line in result.stderr.splitlines() if (m := LINE.fullmatch(line))]
    assert done == [4, 8]


def test_json_mode_keeps_stdout_to_the_document(
    monkeypatch: pytest.MonkeyPatch, clock: list[float]
) -> None:
    result = _run(monkeypatch, clock, {"KVSCALE_PROGRESS_INTERVAL": "1"}, "--json")
    assert result.exit_code == 2
    assert sum(1 for line in result.stderr.splitlines() if LINE.fullmatch(line)) == 10
    assert " 0/10 samples" not in result.stderr  # the start event, before the first second
    assert "progress" not in result.stdout


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_a_bad_interval_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, clock: list[float], value: str
) -> None:
    result = _run(monkeypatch, clock, {"KVSCALE_PROGRESS_INTERVAL": value})
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        f"kvscale: error: KVSCALE_PROGRESS_INTERVAL must be a number of seconds >= 0, got "
        f"{value!r} (unset it for a line every 15 s)"
    ]
