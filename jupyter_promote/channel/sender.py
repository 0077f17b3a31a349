"""In the job: its events, output notebook and files onto its stdout (see :mod:`jupyter_promote.channel`).

A thread follows ``events.jsonl`` as the runner, the kernel's monitor and the node write it, and forwards
each complete line. The output notebook goes along every :data:`OUTPUT_EVERY_S` seconds when it changed;
when the job's final status line comes, the job's files go first (the output notebook, the observed
environment, the files it wrote in ``work/``, up to :data:`MAX_FILES_BYTES`), so that whoever reads the
final status has them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from ..execute.workdir import artifacts
from ..rundir import RunDir
from .wire import event_lines, file_lines, note_lines

#: How often the output notebook is sent while the job runs (seconds), when it changed.
OUTPUT_EVERY_S = 60.0
#: The most bytes of files sent at the job's end; past it, the rest is named in an alert line instead.
MAX_FILES_BYTES = 256 << 20
_FINAL = ("succeeded", "failed", "cancelled")


class Sender:
    """Forwards one run directory's events and files to ``fd`` (stdout) from a thread of its own, each
    record signed with ``key`` (the job's, :func:`~jupyter_promote.channel.keys.take_runner_key`)."""

    def __init__(self, run: RunDir, fd: int = 1, poll_s: float = 0.2, key: bytes | None = None) -> None:
        self.run = run
        self.key = key
        self.fd = fd
        self.poll_s = poll_s
        self._offset = 0
        self._partial = b""
        self._sent_output: float | None = None
        self._last_output_at = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="promote-channel", daemon=True)
        self._lock = threading.Lock()

    def __enter__(self) -> Sender:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Send everything written so far, then stop."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        self.pump()

    def _loop(self) -> None:
        while not self._stop.wait(self.poll_s):
            self.pump()
            if time.monotonic() - self._last_output_at >= OUTPUT_EVERY_S:
                self._last_output_at = time.monotonic()
                self._send_output()

    def pump(self) -> None:
        """Forward the complete lines appended to the events file since the last call."""
        with self._lock:
            try:
                with open(self.run.events, "rb") as f:
                    f.seek(self._offset)
                    data = f.read()
            except FileNotFoundError:
                return
            self._offset += len(data)
            *lines, self._partial = (self._partial + data).split(b"\n")
            for line in lines:
                if line.strip():
                    if _is_final(line):
                        self._send_files()
                    self._write(event_lines(line, self.key))

    def _send_output(self) -> None:
        path = self.run.output_notebook
        try:
            mtime = path.stat().st_mtime
            if mtime == self._sent_output:
                return
            data = path.read_bytes()
            json.loads(data)  # papermill may be writing it right now: sent next time, whole
        except (OSError, ValueError):
            return
        self._sent_output = mtime
        self._write(file_lines("output.ipynb", data, self.key))

    def _send_files(self) -> None:
        self._sent_output = None
        self._send_output()
        names = ["observed_env.json"]
        if self.run.work_dir.is_dir():
            names += ["work/" + a["path"] for a in artifacts(self.run.work_dir)]
        budget, left_out = MAX_FILES_BYTES, []
        for name in names:
            path = Path(self.run.path, name)
            try:
                size = path.stat().st_size
                if size > budget:
                    left_out.append(name)
                    continue
                data = path.read_bytes()
            except OSError:
                continue
            budget -= len(data)
            self._write(file_lines(name, data, self.key))
        if left_out:
            note = {"left_out": left_out[:50], "count": len(left_out), "budget": MAX_FILES_BYTES}
            self._write(note_lines(note, self.key))

    def _write(self, lines: list[bytes]) -> None:
        for line in lines:
            view = memoryview(line)
            while view:  # one write per line (each under PIPE_BUF): other writers never tear it
                written = os.write(self.fd, view)
                view = view[written:]


def _is_final(line: bytes) -> bool:
    if b'"status"' not in line:
        return False
    try:
        event = json.loads(line)
    except ValueError:
        return False
    return isinstance(event, dict) and event.get("type") == "status" and event.get("state") in _FINAL
