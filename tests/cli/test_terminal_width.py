"""On a terminal the human output fits the terminal: text columns wrap and fold, numbers stay
whole, no column is dropped; piped, it is the same text at any width (issue 25: the README's
own ``broken`` example wrapped into garbage on an 80-column terminal).

Real pseudo-terminals at 60, 80 and 120 columns; the piped text is pinned by
``tests/golden/human/``."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOX = "│┃┏┓┗┛┡┩└┘┳┻╇┼┬┴━─┼╋├┤"


def _on_terminal(args: list[str], columns: int) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1", TERM="xterm", HF_HUB_OFFLINE="1")
    with subprocess.Popen(
        [sys.executable, "-m", "kvscale", *args],
        cwd=ROOT,
        env=env,
        stdin=slave,
        stdout=slave,
        stderr=subprocess.DEVNULL,
    ) as proc:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait(timeout=120)
    os.close(master)
    return code, b"".join(chunks).decode().replace("\r\n", "\n")


def _numbers(text: str) -> list[str]:
    """The numbers in the cells of a table (layer labels excluded)."""
    out = []
    for line in text.splitlines():
        cells = [c.strip() for c in re.split(f"[{BOX}]", line)[2:]]
        out += [w for c in cells for w in c.split() if re.fullmatch(r"-?[0-9][0-9.e+-]*\*?", w)]
    return out


def _check_fits(text: str, piped: str, columns: int) -> None:
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= columns, f"{columns}: {text}"
    table = [line for line in lines if line and line[0] in BOX]
    assert len({len(line) for line in table}) == 1, text  # every row is one box
    assert sorted(_numbers(text)) == sorted(_numbers(piped)), f"{columns}: {text}"
    # the words of every message are all there, in order (wrapping only moves line ends)
    prose = [line for line in piped.splitlines() if not line or line[0] not in BOX]
    shown = [line for line in lines if not line or line[0] not in BOX]
    assert " ".join(" ".join(prose).split()) == " ".join(" ".join(shown).split())


@pytest.mark.parametrize("columns", [60, 80, 120])
def test_readme_broken_example_fits_the_terminal(columns: int) -> None:
    args = ["inspect", "examples/broken", "--no-policy"]
    piped = (ROOT / "tests/golden/human/inspect-broken.txt").read_text()
    wide = [line for line in piped.splitlines() if line and line[0] in BOX]
    assert max(len(line) for line in wide) > 80  # the table is wider than a terminal
    code, text = _on_terminal(args, columns)
    assert code == 1
    _check_fits(text, piped, columns)


@pytest.mark.parametrize("columns", [40, 60, 80, 120])
def test_diff_table_fits_or_keeps_its_natural_width(columns: int) -> None:
    """In process (``Output.to_text`` at a terminal's width): the diff's "a -> b" cells wrap
    between their numbers; a terminal too narrow for its numbers gets the natural width,
    never a dropped column."""
    from kvscale.cli.output import Output
    from kvscale.core.diff import diff_paths
    from kvscale.render.diff import diff_renderables

    result = diff_paths(ROOT / "examples/llm-compressor-fp8", ROOT / "examples/wrong-scale")
    piped = Output().to_text(diff_renderables(result, show_all=True))
    text = Output().to_text(diff_renderables(result, show_all=True), width=columns)
    if columns >= 60:
        _check_fits(text, piped, columns)
    else:
        table = [line for line in text.splitlines() if line and line[0] in BOX]
        assert table == [line for line in piped.splitlines() if line and line[0] in BOX]
