"""Progress of long work: the one event type core code reports, and the one callback type.

Core code calls ``progress(ProgressEvent(...))`` and never draws anything; the CLI's ``Output``
shows the events (a bar on a terminal, a line at a steady interval in a log).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    """Where one phase of a command stands."""

    phase: str
    """``headers`` (shard headers read), ``write`` (bytes written), ``model`` (loading a model),
    ``data`` (reading calibration data), ``calibrate`` / ``evaluate`` (samples run through the
    model), ``layers`` (layers verified)."""
    done: int
    total: int
    """In the phase's unit (``UNITS``)."""
    label: str = ""
    """The item just done (a file, a layer), or a short status."""
    tokens: int | None = None
    """Tokens run through the model so far (model phases)."""
    files_done: int | None = None
    """Files completed so far (``write``: ``done``/``total`` count bytes)."""
    files_total: int | None = None


UNITS = {
    "headers": "shards",
    "write": "bytes",
    "model": "steps",
    "data": "steps",
    "calibrate": "samples",
    "evaluate": "samples",
    "layers": "layers",
}
"""What ``done``/``total`` count in each phase."""

ProgressFn = Callable[[ProgressEvent], None]
