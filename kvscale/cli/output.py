"""The one output object of the CLI: results to stdout, everything else to stderr.

Commands never touch a console or ``sys.stdout`` directly; they hand results to an ``Output``:

* ``json(document)``: one JSON document on stdout, ASCII only, never through rich (which wraps
  long lines and breaks JSON);
* ``render(renderables)``: people's output (rich tables and texts from ``kvscale.render``),
  turned into text here, once. Piped (a CI log, a file) it is the same text at any terminal
  width: tables at their natural width, one line per message. On a terminal it fits the
  terminal: the columns a renderer lets wrap (names, codes, sources; ``no_wrap=False``) wrap
  and fold, the others (numbers) stay whole, and no column is dropped or value truncated; a
  table whose whole columns alone are wider than the terminal keeps its natural width. Lines
  without trailing spaces, colour only on a terminal without ``NO_COLOR``, and every line
  neutralized for CI logs;
* ``warning``/``error``/``note``: one line each on stderr;
* ``annotations``: GitHub workflow commands on stderr (the only lines allowed to be commands);
* ``progress``: a progress bar on stderr for work that lasts (on a terminal), or a line at a
  steady interval (in a CI log; ``KVSCALE_PROGRESS_INTERVAL`` seconds), so that no long run is
  silent.

Escaping is ``kvscale.render.escape``'s: renderers build text through ``safe_text``/``sanitize``
(control characters and markup of checkpoint strings shown literally), and this object applies
``neutralize`` to every line it emits, after layout, so that no checkpoint-controlled name can
become a workflow command in a CI log.
"""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from kvscale.progress import UNITS, ProgressEvent
from kvscale.render.escape import neutralize, sanitize

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

RENDER_WIDTH = 4096
"""Width human output is laid out at when stdout is not a terminal: wide enough that rich never
folds a table cell or wraps a message, so that a CI log holds the same text at any width."""

MIN_FOLDED_WIDTH = 3
"""The narrowest a wrapping column gets on a terminal; a table that does not fit even so keeps its
natural width (the terminal then wraps its lines; rich would drop columns)."""


def _tolerant(stream: TextIO) -> TextIO:
    """Make a text stream replace what its encoding cannot hold instead of raising.

    With ``PYTHONIOENCODING=ascii`` (or a Latin-1 locale) a non-ASCII tensor name would
    otherwise raise UnicodeEncodeError in the middle of a table, and then again while the
    error is reported. Only the error handler changes; the encoding stays the user's.
    """
    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, io.UnsupportedOperation):
            pass
    return stream


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _colour(stream: TextIO) -> bool:
    return _isatty(stream) and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


_documents_written = 0


def documents_written() -> int:
    """How many JSON documents this process has written to stdout (the error handler writes an
    error document only where a command wrote none)."""
    return _documents_written


def output_for(json_output: bool, quiet: bool, fmt: str | None) -> Output:
    """The Output of a command from ``--json``, ``--quiet`` and ``--format`` (table, json,
    markdown, csv), which exclude each other (``--json`` is ``--format json``)."""
    from kvscale.errors import UsageError

    chosen = [
        name
        for name, on in (("--json", json_output), ("--quiet", quiet), ("--format", fmt is not None))
        if on
    ]
    if len(chosen) > 1 and not (chosen == ["--json", "--format"] and fmt == "json"):
        raise UsageError(f"{chosen[0]} and {chosen[1]} exclude each other")
    if json_output or fmt == "json":
        return Output("json")
    if quiet:
        return Output("quiet")
    return Output({"table": "human", None: "human"}.get(fmt, fmt or "human"))


class Output:
    """Where a command's results and messages go (see the module doc).

    ``mode``: ``human`` (tables), ``json`` (one document), ``quiet`` (problems and exit code
    only: ``render`` prints nothing, ``problem_lines`` still print).
    """

    def __init__(
        self,
        mode: str = "human",
        *,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.mode = mode
        self._stdout = stdout
        self._stderr = stderr

    @property
    def stdout(self) -> TextIO:
        return _tolerant(self._stdout or sys.stdout)

    @property
    def stderr(self) -> TextIO:
        return _tolerant(self._stderr or sys.stderr)

    # --- results (stdout) -----------------------------------------------------------------------

    def json(self, document: Any) -> None:
        """One JSON document on stdout, ASCII-only so hostile names cannot reach the terminal."""
        global _documents_written
        _documents_written += 1
        text = json.dumps(document, ensure_ascii=True, allow_nan=False, indent=2)
        # JSON strings hold `#` only inside strings, and `\\u0023` decodes back to `#`.
        self._write(self.stdout, text.replace("##[", "#\\u0023[") + "\n")

    def result(
        self,
        *,
        document: Callable[[], Any],
        renderables: Callable[[], Sequence[RenderableType]],
        lines: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        """A command's result in the chosen mode: the JSON document, the quiet lines (nothing
        when the command has none), or the renderables (table, Markdown, CSV). Each is built
        only when it is shown."""
        if self.mode == "json":
            self.json(document())
        elif self.mode == "quiet":
            if lines is not None:
                self.lines(lines())
        else:
            self.render(renderables())

    def render(self, renderables: Sequence[RenderableType]) -> None:
        """People's output on stdout: a table (``human``), Markdown or CSV; nothing in quiet or
        json mode. Under GitHub Actions the Markdown form also goes to the job summary."""
        if self.mode not in ("human", "markdown", "csv"):
            return
        from kvscale.render import formats

        if self.mode == "markdown":
            text = finish_lines(formats.to_markdown(renderables))
        elif self.mode == "csv":
            text = finish_lines(formats.to_csv(renderables))
        else:
            text = self.to_text(
                renderables, colour=_colour(self.stdout), width=_terminal_width(self.stdout)
            )
        self._write(self.stdout, text)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary and os.environ.get("GITHUB_ACTIONS") == "true":
            markdown = text if self.mode == "markdown" else formats.to_markdown(renderables)
            try:
                with open(summary, "a", encoding="utf-8") as stream:
                    stream.write(finish_lines(markdown) + "\n")
            except OSError as exc:
                self.warning(f"cannot append to the job summary {summary}: {exc.strerror}")

    def to_text(
        self,
        renderables: Sequence[RenderableType],
        *,
        colour: bool = False,
        width: int | None = None,
    ) -> str:
        """Renderables as the final lines (laid out, trimmed, neutralized); ``width``: a
        terminal's (None: ``RENDER_WIDTH``, the natural width)."""
        from rich.table import Table

        natural = _capture_console(colour, RENDER_WIDTH)
        terminal = _capture_console(colour, width) if width is not None else natural
        parts = []
        for renderable in renderables:
            console = terminal
            if console is not natural and isinstance(renderable, Table):
                if not fit_table(renderable, console, console.width):
                    console = natural
            with console.capture() as capture:
                console.print(renderable)
            parts.append(capture.get())
        return finish_lines("".join(parts))

    def lines(self, lines: Iterable[str]) -> None:
        """Plain result lines on stdout, in every mode but json (quiet: problems only)."""
        if self.mode == "json":
            return
        text = "".join(sanitize(line) + "\n" for line in lines)
        self._write(self.stdout, finish_lines(text))

    # --- messages (stderr) --------------------------------------------------------------------

    def error(self, message: str) -> None:
        """The one stderr line for a failed command."""
        self._write(self.stderr, _one_line("error", message, self.stderr))

    def warning(self, message: str) -> None:
        self._write(self.stderr, _one_line("warning", message, self.stderr))

    def note(self, message: str) -> None:
        if self.mode == "quiet":
            return
        self._write(self.stderr, _one_line("note", message, self.stderr))

    def annotations(self, commands: Iterable[str]) -> None:
        """GitHub workflow commands (built by ``render.annotations``), one per line, on stderr."""
        text = "".join(line + "\n" for line in commands)
        if text:
            self._write(self.stderr, text)

    @contextmanager
    def progress(self) -> Iterator[Progress]:
        """A ``ProgressFn`` for core calls: events shown on stderr (``Progress``; raises
        UsageError for a bad ``KVSCALE_PROGRESS_INTERVAL``)."""
        bar = Progress(self.stderr, interval=progress_interval())
        try:
            yield bar
        finally:
            bar.close()

    @staticmethod
    def _write(stream: TextIO, text: str) -> None:
        """Write and flush. A stream on a POSIX file descriptor is written with ``os.write``
        until every byte is out: when the reader of a pipe goes away during a large write, the
        kernel returns a short count and Python's buffered writer reports success and drops the
        rest (CPython 3.11; measured with ``| head -c 10`` on a 250 KB document: exit 0); the
        next ``os.write`` raises BrokenPipeError, which the CLI turns into exit 141."""
        fd = _posix_fd(stream)
        if fd is None:
            stream.write(text)
            stream.flush()
            return
        stream.flush()  # (anything written through the stream before goes first)
        data = memoryview(text.encode(stream.encoding or "utf-8", stream.errors or "strict"))
        while data:
            data = data[os.write(fd, data) :]


def finish_lines(text: str) -> str:
    """Trailing spaces removed (rich pads table cells), every line neutralized."""
    lines = [line.rstrip() for line in text.split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return neutralize("\n".join(lines) + "\n") if lines else ""


def _posix_fd(stream: TextIO) -> int | None:
    if os.name != "posix":
        return None
    try:
        return stream.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        return None


def _terminal_width(stream: TextIO) -> int | None:
    """The width of the terminal ``stream`` writes to (``COLUMNS`` first, as ``shutil``
    reads it); None when it is not a terminal."""
    if not _isatty(stream):
        return None
    return max(shutil.get_terminal_size((80, 24)).columns, 1)


def fit_table(table: Any, console: Console, width: int) -> bool:
    """Narrow ``table``'s wrapping columns (``no_wrap=False``) just enough that it fits
    ``width``: the widest first, to one common cap (``max_width``, never below a column's
    ``min_width``), found by bisection on the table's measured width. Columns that do not wrap
    (numbers) keep their width. A table that fits is left as it is; so is one that cannot fit
    with its wrapping columns at ``MIN_FOLDED_WIDTH`` (False: lay it out at its natural
    width)."""
    from rich.measure import Measurement

    natural = console.options.update_width(RENDER_WIDTH)
    if Measurement.get(console, natural, table).maximum <= width:
        return True
    wrapping = [c for c in table.columns if not c.no_wrap and c.width is None]
    limits = [c.max_width for c in wrapping]

    def cap(limit: int) -> None:
        for column, own in zip(wrapping, limits, strict=True):
            # (a column's min_width, e.g. its longest number, is never cut into)
            width_ = max(limit, column.min_width or 0)
            column.max_width = width_ if own is None else min(own, width_)

    def fits(limit: int) -> bool:
        cap(limit)
        return Measurement.get(console, natural, table).maximum <= width

    low, high = MIN_FOLDED_WIDTH, width
    if not wrapping or not fits(low):
        for column, own in zip(wrapping, limits, strict=True):
            column.max_width = own
        return False
    while low < high:  # the largest cap that fits
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    cap(low)
    return True


def _capture_console(colour: bool, width: int = RENDER_WIDTH) -> Console:
    from rich.console import Console

    return Console(
        file=io.StringIO(),
        width=width,
        highlight=False,
        soft_wrap=False,
        emoji=False,
        force_terminal=colour,
        color_system="standard" if colour else None,
        no_color=not colour,
        legacy_windows=False,
    )


def _one_line(prefix: str, message: str, stream: TextIO) -> str:
    # sanitize() escapes every control character, so the only newline is the final one.
    line = neutralize(f"kvscale: {prefix}: {sanitize(message)}")
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        line.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        line = line.encode("ascii", "backslashreplace").decode("ascii")
    return line + "\n"


PHASE_TITLES = {
    "headers": "reading shard headers",
    "write": "writing",
    "model": "loading the model",
    "data": "reading the data",
    "calibrate": "calibrating",
    "evaluate": "running the model",
    "layers": "verifying layers",
}
"""How each ``ProgressEvent.phase`` is shown."""

PROGRESS_INTERVAL = 15.0
"""Seconds between progress lines when stderr is not a terminal (a CI log); the first comes after
as long, so quick runs print none. ``KVSCALE_PROGRESS_INTERVAL`` changes it."""

PROGRESS_INTERVAL_ENV = "KVSCALE_PROGRESS_INTERVAL"


def progress_interval() -> float:
    """``PROGRESS_INTERVAL``, or ``KVSCALE_PROGRESS_INTERVAL`` seconds when set (0: a line for
    every event). A value that is not a finite number >= 0 is a usage error: a CI job that set
    it must not run silently with the default."""
    from kvscale.errors import UsageError

    raw = os.environ.get(PROGRESS_INTERVAL_ENV)
    if raw is None or not raw.strip():
        return PROGRESS_INTERVAL
    try:
        value = float(raw.strip())
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0.0):
        raise UsageError(
            f"{PROGRESS_INTERVAL_ENV} must be a number of seconds >= 0, got {raw[:40]!r}",
            hint=f"unset it for a line every {PROGRESS_INTERVAL:g} s",
        )
    return value


class Progress:
    """Shows ``ProgressEvent``s on stderr: on a terminal a rich bar that appears only when work
    lasts more than a moment; elsewhere (a CI log, a pipe) one plain line every
    ``PROGRESS_INTERVAL`` seconds, so that a long run is never silent. Core code calls it with
    events; nothing is shown when disabled."""

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 0.4,
        interval: float | None = None,
        enabled: bool = True,
    ) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.terminal = _isatty(stream)
        self.enabled = enabled
        self._start = time.monotonic()
        self._phase: str | None = None
        self._phase_start = self._start
        self._last_line = self._start
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, event: ProgressEvent) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        # A phase starts with its first event, or again at done 0 (plan's confirmation runs
        # evaluate once more): its rate and ETA count from there.
        if event.phase != self._phase or event.done == 0:
            self._phase = event.phase
            self._phase_start = now
            self.close()
        if self.terminal:
            self._draw(event, now)
        elif now - self._last_line >= self.interval:
            self._last_line = now
            self.stream.write(_one_line("progress", self._line(event, now), self.stream))
            self.stream.flush()

    def _line(self, event: ProgressEvent, now: float) -> str:
        title = PHASE_TITLES.get(event.phase, event.phase)
        unit = UNITS.get(event.phase, "")
        if unit == "bytes":
            parts = [f"{title}: {_size(event.done)} of {_size(event.total)}"]
        else:
            parts = [f"{title}: {event.done:,}/{event.total:,} {unit}".rstrip()]
        elapsed = now - self._phase_start
        # A rate or an ETA over less than a second says nothing: a phase whose core sends no
        # start event (done 0) starts at its first event, which comes after a unit of work.
        measured = elapsed >= 1.0
        if event.tokens is not None:
            rate = f" ({event.tokens / elapsed:,.0f} tok/s)" if measured else ""
            parts.append(f"{event.tokens:,} tokens{rate}")
        if event.label:
            parts.append(sanitize(event.label)[-60:])
        parts.append(f"{_clock(now - self._start)} elapsed")
        if measured and 0 < event.done < event.total:
            parts.append(f"about {_clock(elapsed * (event.total - event.done) / event.done)} left")
        return ", ".join(parts)

    def _draw(self, event: ProgressEvent, now: float) -> None:
        if self._progress is None:
            if now - self._start < self.delay or event.done >= event.total:
                return
            self._open(UNITS.get(event.phase, "") == "bytes", UNITS.get(event.phase, ""))
        label = event.label
        if event.tokens is not None:
            seconds = now - self._phase_start
            label = f"{event.tokens} tokens" + (
                f", {event.tokens / seconds:.0f} tok/s" if seconds >= 1.0 else ""
            )
        # Shard and layer names come from the checkpoint: escape before rich sees them.
        self._progress.update(
            self._task,
            completed=event.done,
            total=event.total,
            label=sanitize(label)[-40:],
            description=PHASE_TITLES.get(event.phase, event.phase),
        )

    def _open(self, bytes_: bool, unit: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        console = Console(file=self.stream, highlight=False, emoji=False)
        columns: list[Any] = [TextColumn("{task.description}"), BarColumn()]
        if bytes_:
            columns += [DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn()]
        else:
            columns += [MofNCompleteColumn(), TextColumn(unit), TimeElapsedColumn()]
        columns.append(TextColumn("{task.fields[label]}", markup=False))
        self._progress = Progress(*columns, console=console, transient=True)
        self._progress.start()
        self._task = self._progress.add_task("", total=1, label="")

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def _clock(seconds: float) -> str:
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:,} B" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return f"{n} B"
