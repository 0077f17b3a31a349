"""On the submitter's side: a job's stream into its local run directory (see :mod:`jupyter_promote.channel`).

Each of the job's events is appended to the local ``events.jsonl`` through the local event log: numbered
there (one source of seqs with the pipeline's own events), its time and fields kept, the job's own number
as ``remote_seq``, signed there when the runner had signed it. A stream read again from its start (a
restarted server) skips what was relayed; a jump in the job's numbering is reported as an ``events_lost``
alert. Every record is used inside one guard: whatever it holds (a bad name, NaN, nesting 100,000 deep),
it is set aside with one ``channel`` alert per kind of fault, reported once for the job (also when the
stream is read again), and the stream goes on. The job's files are written whole (atomically) under the run
directory, its other output to ``job.log``.
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
from ..runtime.signing import read_key
from .decoder import Decoder

#: Files a job may send back: its output notebook, its observed environment, and what it wrote in work/.
_ROOT_FILES = ("output.ipynb", "observed_env.json")
_MAX_NAME = 1024


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


class Receiver:
    """Writes one job's stream into its run directory; :meth:`feed` takes the stream in pieces of any size.

    ``key``: the job's key (default: its run directory's); without one the stream is read unsigned."""

    def __init__(self, run: RunDir, job_id: str, key: bytes | None = None) -> None:
        self.run = run
        self.key = key if key is not None else read_key(str(run.path))
        self.log = EventLog(str(run.events), job_id, key=self.key)
        self.decoder = Decoder(self.key)
        self.last = 0  # the job's own seq of the last event relayed
        self.reported: set[tuple[Any, Any]] = set()
        self.faults: set[str] = set()
        for event in iter_events(str(run.events)):
            if event.get("type") == "attempt" and "remote_seq" not in event:  # a new attempt's stream: from 1
                self.last = 0
            if isinstance(event.get("remote_seq"), int):
                self.last = max(self.last, event["remote_seq"])
            if event.get("type") == "alert" and event.get("kind") == "bad_event":
                self.reported.add((event.get("set_aside_seq"), event.get("set_aside_type")))
            if event.get("type") == "alert" and event.get("kind") in ("channel", "files_left_out"):
                self.faults.add(str(event.get("fault", event.get("kind"))))
        self.replaying = self.last > 0  # read again from the start: its text is in job.log already

    def feed(self, text: str) -> None:
        """Use what ``text`` completes of the stream; never raises for what the stream holds."""
        for kind, payload in self.decoder.feed(text):
            try:
                self._use(kind, payload)
            except Exception as exc:  # the one guard: a record that cannot be used is reported, never fatal
                self.fault(kind, f"a {kind} record the job sent was set aside ({type(exc).__name__}: {str(exc)[:120]})")

    def fault(self, what: str, message: str, kind: str = "channel") -> None:
        """One alert per kind of fault, for the job's whole stream."""
        if what in self.faults:
            return
        self.faults.add(what)
        self.log.emit("alert", kind=kind, action="alert", source="channel", fault=what, message=message)

    def _use(self, kind: str, payload: Any) -> None:
        if kind == "event":
            self._event(payload)
        elif kind == "file":
            self._file(*payload)
        elif kind == "text":
            if not self.replaying:
                with open(self.run.log, "a", encoding="utf-8", errors="replace") as f:
                    f.write(payload + "\n")
        elif kind == "left_out":
            self._left_out(payload)
        elif kind == "fault":
            self.fault(*payload)

    def _left_out(self, payload: str) -> None:
        note = json.loads(payload, parse_constant=_no_constants)
        names, count, budget = note["left_out"], note["count"], note["budget"]
        if not (isinstance(names, list) and isinstance(count, int) and isinstance(budget, int)):
            raise ValueError("a note whose fields are not a list and numbers")
        shown = ", ".join(str(name)[:200] for name in names[:5])
        message = f"{count} file(s) the job wrote were not brought back (over {budget >> 20} MiB in all): {shown}"
        self.fault("files_left_out", message, kind="files_left_out")

    def _event(self, line: str) -> None:
        try:
            event = json.loads(line, parse_constant=_no_constants)
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
        if seq > self.last + 1 and self.key is None:  # unsigned: a jump is not trusted to skip ahead
            self._set_aside(event, f"its seq jumps from {self.last} (an unsigned stream is not fast-forwarded)")
            return
        self.log.relay(event)
        self.replaying = False
        if seq > self.last + 1:  # signed by the job's runner: events were really lost on the way
            lost = f"the job's events {self.last + 1}..{seq - 1} did not arrive"
            self.log.emit("alert", kind="events_lost", action="alert", source="channel", message=lost)
        self.last = seq

    def _set_aside(self, event: dict[str, Any], why: str) -> None:
        seq, kind = (repr(event.get(k))[:40] for k in ("seq", "type"))
        if (seq, kind) in self.reported:
            return
        self.reported.add((seq, kind))
        message = f"an event was set aside: {why} (seq {seq}, type {kind})"
        self.log.emit(
            "alert",
            kind="bad_event",
            action="alert",
            source="channel",
            set_aside_seq=seq,
            set_aside_type=kind,
            message=message,
        )

    def _file(self, name: Any, data: bytes) -> None:
        if not _output_name(name):
            self.fault("file_name", f"the job sent a file outside its run directory's outputs: {str(name)[:200]!r}")
            return
        target = Path(self.run.path, *PurePosixPath(name).parts)
        parent, root = os.path.realpath(target.parent), os.path.realpath(self.run.path)
        inside = parent == root or parent.startswith(root + os.sep)
        if not inside or target.is_dir() or target.is_symlink():
            self.fault(
                "file_place", f"the job sent a file where its run directory has a folder or a link: {name[:200]!r}"
            )
            return
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


def _output_name(name: Any) -> bool:
    """Whether ``name`` is one of the files a job may send back (relative, plain, in ``work/`` or known)."""
    if not isinstance(name, str) or not 0 < len(name) <= _MAX_NAME or "\0" in name or "\\" in name:
        return False
    path = PurePosixPath(name)
    if path.is_absolute() or not path.parts or any(p in ("..", ".") or len(p.encode()) > 255 for p in path.parts):
        return False
    return name in _ROOT_FILES or (path.parts[0] == "work" and len(path.parts) > 1)
