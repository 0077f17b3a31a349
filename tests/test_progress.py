"""The terminal's progress line: one line, cut to the terminal's width and cleared cleanly; notes, alerts and
results on lines of their own (a status wider than the terminal wrapped and left debris on each redraw)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import termios
import time

import pytest

from jupyter_promote.cli.progress import CLEAR_LINE, TerminalProgress, fit
from jupyter_promote.events import JobView
from jupyter_promote.models import JobState


def wide_view() -> JobView:
    """A running job whose status line is 94 characters: clock, bar of cells, cell, steps and rate, alerts."""
    view = JobView(state=JobState.RUNNING, cell_number=12, cells_total=40, steps=12345, steps_per_s=1234.5)
    view.started_at = time.time() - 3723  # 1:02:03
    view.alerts = [{"kind": "nan", "message": "loss"}]
    return view


@pytest.fixture
def terminal_80(monkeypatch):
    """A real pseudo-terminal 80 columns wide: what the program writes to it, and what it reads back."""
    monkeypatch.delenv("COLUMNS", raising=False)
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    stream = os.fdopen(child, "w", encoding="utf-8", buffering=1)
    written = bytearray()

    def read() -> str:
        while select.select([main], [], [], 0.5)[0]:  # the terminal passes it on in pieces
            written.extend(os.read(main, 65536))
        return written.decode()

    yield stream, read
    stream.close()
    os.close(main)


def test_a_94_character_status_on_an_80_column_terminal_stays_one_clean_line(terminal_80):
    stream, read = terminal_80
    progress = TerminalProgress(stream)
    view = wide_view()
    # When the status is drawn (94 characters wide), a note comes, the status is drawn again, and the job ends
    progress.on_event({"type": "step"}, view)
    assert len(progress._status_line) == 94, progress._status_line
    progress.note("! nan alert: loss is NaN at step 1234567")
    progress.on_event({"type": "step"}, view)
    progress.close()
    print("done", file=stream)
    text = read().replace("\r\n", "\n")
    # Then every draw of the status fits in 79 columns (the cursor never wraps onto a line of its own) ...
    draws = [piece.split("\n")[0] for piece in text.split(CLEAR_LINE)[1:]]
    statuses = [d for d in draws if d.startswith("1:02:0")]
    assert len(statuses) >= 3 and all(len(s) <= 79 for s in statuses), statuses
    assert all(s.endswith("…") and s.startswith("1:02:0") and "running · cell 12/40" in s for s in statuses)
    # ... the note is a line of its own, the status cleared before it, and the end starts on a clean line
    lines = text.split("\n")
    assert any(row.endswith(CLEAR_LINE + "! nan alert: loss is NaN at step 1234567") for row in lines), lines
    assert lines[-2].endswith(CLEAR_LINE + "done"), lines[-2:]


def test_the_width_follows_columns_when_set_and_a_line_that_fits_is_kept_whole(monkeypatch, terminal_80):
    stream, read = terminal_80
    monkeypatch.setenv("COLUMNS", "200")
    TerminalProgress(stream).on_event({"type": "step"}, wide_view())
    assert len(read().rpartition(CLEAR_LINE)[2]) == 94
    assert fit("x" * 79, 80) == "x" * 79 and fit("x" * 80, 80) == "x" * 78 + "…"


def test_a_file_gets_plain_lines_and_no_status():
    import io

    stream = io.StringIO()
    progress = TerminalProgress(stream)
    progress.on_event({"type": "status", "state": "running", "message": "kernel started"}, wide_view())
    progress.close()
    assert CLEAR_LINE not in stream.getvalue()
    assert stream.getvalue().endswith("running: kernel started\n")
