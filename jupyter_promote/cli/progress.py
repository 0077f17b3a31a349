"""Live progress of a job on a terminal (stderr): stage, cell N of M, steps/s, alerts as they happen.

On a terminal the status is ONE line, rewritten in place and cut to the terminal's width (less one column, so
the cursor never wraps to a line of its own); notes, alerts and results are whole lines of their own, written
above it. Elsewhere (a file, a pipe, CI) every line is plain.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any, TextIO

from ..events import JobView

NON_TTY_STEP_EVERY_S = 5.0
#: Clears the terminal's line: back to its start, then erase to its end.
CLEAR_LINE = "\r\x1b[K"


def terminal_width(stream: TextIO) -> int:
    """The columns of the terminal ``stream`` writes to: $COLUMNS when set (as :func:`shutil.get_terminal_size`
    reads it), else the terminal's own size, else 80."""
    fallback = shutil.get_terminal_size((80, 24)).columns if os.environ.get("COLUMNS") else 0
    if fallback > 0:
        return fallback
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return shutil.get_terminal_size((80, 24)).columns


def fit(line: str, width: int) -> str:
    """``line`` cut to ``width - 1`` characters (an ellipsis where it was cut): a full-width line would wrap."""
    room = max(1, width - 1)
    return line if len(line) <= room else line[: room - 1] + "…"


class TerminalProgress:
    """Prints a job's events as they arrive: one rewritten line on a terminal, plain lines otherwise."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._status_shown = False
        self._last_step_print = 0.0
        self._last_state: str | None = None
        self._status_line = ""  # the status as last shown, before it was cut to the terminal's width

    def stage(self, state: str, message: str) -> None:
        """A stage announced before it starts (freezing: before the freeze, not once its event is followed)."""
        self._last_state = state
        self.note(f"[{time.strftime('%H:%M:%S')}] {state}: {message}")

    def note(self, text: str) -> None:
        """A line of its own, above the status line (which is written again under it)."""
        shown = self._status_shown
        self._clear()
        print(text, file=self.stream, flush=True)
        if shown and self._status_line:
            self._show(self._status_line)

    def _clear(self) -> None:
        if self.tty and self._status_shown:
            self.stream.write(CLEAR_LINE)
            self._status_shown = False

    def _status(self, view: JobView) -> None:
        if self.tty:
            self._status_line = _elapsed(view) + _cells_bar(view) + view.progress_line()
            self._show(self._status_line)

    def _show(self, line: str) -> None:
        self.stream.write(CLEAR_LINE + fit(line, terminal_width(self.stream)))
        self.stream.flush()
        self._status_shown = True

    def on_event(self, event: dict[str, Any], view: JobView) -> None:
        kind = event["type"]
        if kind == "status" and event["state"] != self._last_state:
            self._last_state = event["state"]
            if not view.state.final:
                detail = f": {event['message']}" if event.get("message") else ""
                self.note(f"[{time.strftime('%H:%M:%S')}] {event['state']}{detail}")
        elif kind == "alert":
            self.note(f"! {event['kind']} alert: {event['message']}")
        elif kind == "attempt":  # the infrastructure failed the job: it starts again
            self._last_state = None
            self.note(f"[{time.strftime('%H:%M:%S')}] {event.get('message') or 'started again'}")
        elif kind == "metric":
            self.note("  metrics: " + ", ".join(f"{k}={v}" for k, v in event["metrics"].items()))
        elif kind == "cell" and event.get("phase") == "start" and not self.tty:
            if not event.get("injected") and view.cell_number is not None:  # the notebook's own cells only
                self.note(f"  cell {view.cell_number}/{view.cells_total}: {event.get('source', '')}")
        elif kind == "step" and not self.tty:
            now = time.monotonic()
            if now - self._last_step_print >= NON_TTY_STEP_EVERY_S:
                self._last_step_print = now
                self.note(f"  {_elapsed(view)}{view.steps} steps ({view.steps_per_s or 0:.1f} steps/s)")
        if not view.state.final:
            self._status(view)

    def close(self) -> None:
        """The status line cleared; what follows starts on a clean line."""
        self._clear()
        self._status_line = ""


BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(done: float, total: int, width: int = BAR_WIDTH) -> str:
    """A progress bar in block characters, to an eighth of a cell: ``|█████▌              |``."""
    filled = max(0.0, min(1.0, done / total)) * width if total else 0.0
    whole, eighths = int(filled), int((filled - int(filled)) * 8)
    partial = _EIGHTHS[eighths] if whole < width and eighths else ""
    return "|" + "█" * whole + partial + " " * (width - whole - len(partial)) + "|"


def _cells_bar(view: JobView) -> str:
    """The notebook's own code cells done so far, as a bar (while it runs; "" before)."""
    if view.state.value != "running" or not view.cells_total or view.cell_number is None:
        return ""
    return bar(view.cell_number - 1, view.cells_total) + " "


def _elapsed(view: JobView) -> str:
    """Time since the job started running, as a clock reads it: "0:42 · ", "1:02:03 · "."""
    if view.started_at is None:
        return ""
    seconds = int(max(0.0, time.time() - view.started_at))
    hours, rest = divmod(seconds, 3600)
    clock = f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
    return f"{clock} · "
