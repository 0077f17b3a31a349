"""On the submitter's side: a job's stream into its local run directory (see :mod:`jupyter_promote.channel`).

Each of the job's events is appended to the local ``events.jsonl`` through the local event log: numbered
there (one source of seqs with the pipeline's own events), its time and fields kept, the job's own number
as ``remote_seq``. A stream read again from its start (a restarted server) skips what was relayed; a
jump in the job's numbering is reported as an ``events_lost`` alert; a line that is not a valid event is
set aside with a ``bad_event`` alert, as on a shared filesystem. The job's files are written whole
(atomically) under the run directory, its other output to ``job.log``.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from ..events import problem
from ..rundir import RunDir
from ..runtime.events import EventLog, iter_events
from .wire import Decoder

#: Files a job may send back: its output notebook, its observed environment, and what it wrote in work/.
_ROOT_FILES = ("output.ipynb", "observed_env.json")


class Receiver:
    """Writes one job's stream into its run directory; :meth:`feed` takes the stream in pieces of any size."""

    def __init__(self, run: RunDir, job_id: str) -> None:
        self.run = run
        self.log = EventLog(str(run.events), job_id)
        self.decoder = Decoder()
        self.last = 0  # the job's own seq of the last event relayed
        self.reported: set[tuple[Any, Any]] = set()
        for event in iter_events(str(run.events)):
            if isinstance(event.get("remote_seq"), int):
                self.last = max(self.last, event["remote_seq"])
            if event.get("type") == "alert" and event.get("kind") == "bad_event":
                self.reported.add((event.get("set_aside_seq"), event.get("set_aside_type")))
        self.replaying = self.last > 0  # read again from the start: its text is in job.log already

    def feed(self, text: str) -> None:
        for kind, payload in self.decoder.feed(text):
            if kind == "event":
                self._event(payload)
            elif kind == "file":
                self._file(*payload)
            elif kind == "text":
                if not self.replaying:
                    with open(self.run.log, "a", encoding="utf-8") as f:
                        f.write(payload + "\n")
            elif kind == "left_out" and not self.replaying:
                note = json.loads(payload)
                self.log.emit("alert", kind="files_left_out", action="alert", source="channel",
                              message=f"{note['count']} file(s) the job wrote were not brought back (over "
                              f"{note['budget'] >> 20} MiB in all): {', '.join(note['left_out'][:5])}")  # fmt: skip
            elif kind == "broken" and not self.replaying:
                self.log.emit("alert", kind="channel", action="alert", source="channel", message=payload)

    def _event(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        if not isinstance(event, dict):
            self._set_aside({"seq": None, "type": None}, "not an event (a line that does not parse)")
            return
        why = problem(event)
        if why is not None:
            self._set_aside(event, why)
            return
        seq = event["seq"]
        if seq <= self.last:
            return  # relayed before this stream was read again
        self.replaying = False
        if seq > self.last + 1:
            self.log.emit("alert", kind="events_lost", action="alert", source="channel",
                          message=f"the job's events {self.last + 1}..{seq - 1} did not arrive")  # fmt: skip
        self.last = seq
        self.log.relay(event)

    def _set_aside(self, event: dict[str, Any], why: str) -> None:
        seq, kind = (repr(event.get(k))[:40] for k in ("seq", "type"))
        if (seq, kind) in self.reported:
            return
        self.reported.add((seq, kind))
        self.log.emit("alert", kind="bad_event", action="alert", source="channel", set_aside_seq=seq,
                      set_aside_type=kind, message=f"an event was set aside: {why} (seq {seq}, type {kind})")  # fmt: skip

    def _file(self, name: str, data: bytes) -> None:
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts or not (name in _ROOT_FILES or path.parts[0] == "work"):
            self.log.emit("alert", kind="channel", action="alert", source="channel",
                          message=f"the job sent a file outside its run directory's outputs: {name[:200]!r}")  # fmt: skip
            return
        target = Path(self.run.path, *path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".recv-", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
