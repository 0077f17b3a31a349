"""The job's event log: JSON lines with a gap-free ``seq``, appended by several processes.

The kernel (monitor, ``report``), the runner (cell hooks, final state) and the CLI (pending, queued)
all append to one ``events.jsonl``. An exclusive ``flock`` around "read the last seq, append one
line" keeps ``seq`` 1, 2, 3, ... with no gaps and no repeats across processes. Standard library only.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from .masking import EVENT_STRUCTURE, mask_tree, masking
from .signing import MAC_FIELD, event_mac, may_sign_here, read_key, signed_by

EVENT_TYPES = ("status", "image", "cell", "heartbeat", "step", "metric", "gpu", "alert", "artifacts", "attempt")
_TAIL_BYTES = 65536
#: Unreadable lines an :class:`EventTail` keeps until its reader takes them (a runner's tail never does).
_MAX_UNREADABLE = 1000
#: The stages a person sees on a job's timeline. A ``status`` event says which one it starts in ``stage``
#: (pending ones name theirs: freezing, building, pushing); clients never read a message for it.
STAGES = ("freezing", "building", "pushing", "queued", "running", "finished")
_FINAL_STATES = ("succeeded", "failed", "cancelled")


def stage_of_state(state: str) -> str | None:
    """The stage a status event of ``state`` starts when it names none (pending continues the current one)."""
    if state in _FINAL_STATES:
        return "finished"
    return state if state in ("queued", "running") else None


class EventLog:
    """Append events for one job to one file.

    Parameters
    ----------
    path
        The ``events.jsonl`` file; created when missing.
    job
        The job id written into every event.
    key
        The job's key (:mod:`.signing`): every event is signed with it. Without one, a log outside the
        runner's children signs with the key in the run directory, once there is one (its status events
        look for it): the submitter's own word on a job (lost, cancelled) counts as the runner's does.
    """

    def __init__(self, path: str, job: str, key: bytes | None = None) -> None:
        self.path = os.fspath(path)
        self.job = job
        self.key = key
        self._lock = threading.Lock()
        # where this writer's last line ended and its seq: when the file still ends there, nobody else
        # appended and the next seq is known without reading (a monitor emitting hundreds per second)
        self._end: int | None = None
        self._seq = 0

    def emit(self, type: str, **fields: Any) -> dict[str, Any]:
        """Append one event and return it, with its ``seq``."""
        if type not in EVENT_TYPES:
            raise ValueError(f"unknown event type {type!r}")
        if type == "status" and "stage" not in fields:
            stage = stage_of_state(str(fields.get("state")))
            if stage is not None:
                fields["stage"] = stage
        key = self._key(look=type in ("status", "attempt"))  # who may end a job, or start it again
        return self._append(round(time.time(), 6), {"type": type, **fields}, key)

    def relay(self, event: dict[str, Any]) -> dict[str, Any]:
        """Append an event another log wrote (a job's own, on a cluster that shares no filesystem with this
        one): numbered here, its time and fields kept, its own seq as ``remote_seq``; signed here only when
        it came signed under this log's key (the runner's word stays the runner's, nobody else's becomes it)."""
        fields = {k: v for k, v in event.items() if k not in ("seq", "ts", "job", "remote_seq", MAC_FIELD)}
        key = self._key(look=True)
        signed = key is not None and signed_by(key, event)
        return self._append(event["ts"], {**fields, "remote_seq": event["seq"]}, key if signed else None)

    def _key(self, look: bool) -> bytes | None:
        run_dir = os.path.dirname(os.path.abspath(self.path))
        if self.key is None and look and may_sign_here(run_dir):
            self.key = read_key(run_dir)
        return self.key

    def _append(self, ts: float, fields: dict[str, Any], key: bytes | None) -> dict[str, Any]:
        with self._lock, open(self.path, "a+b") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                end = f.seek(0, os.SEEK_END)
                if end == self._end:
                    seq, ends_with_newline = self._seq, True
                else:
                    seq, ends_with_newline = _last_seq(f)
                    if seq < self._seq:  # a line after ours claims a lower seq: the count never goes back
                        seq = max(self._seq, _max_seq(f))
                event = {"seq": seq + 1, "ts": ts, "job": self.job, **fields}
                line = json.dumps(event, default=_jsonable, allow_nan=False, separators=(",", ":"))
                if masking():  # a secret the job was given never reaches its events (their structure untouched)
                    event = mask_tree(json.loads(line), EVENT_STRUCTURE)
                    line = json.dumps(event, allow_nan=False, separators=(",", ":"))
                if key is not None:  # signed as it will be read back
                    event = json.loads(line)
                    event[MAC_FIELD] = event_mac(key, event)
                    line = json.dumps(event, allow_nan=False, separators=(",", ":"))
                f.write((b"" if ends_with_newline else b"\n") + line.encode() + b"\n")
                f.flush()
                self._end, self._seq = f.tell(), seq + 1
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        return event


def _jsonable(value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


def _last_seq(f: Any) -> tuple[int, bool]:
    """The seq of the last complete event in ``f`` (0 when there is none), and whether f ends a line.

    Only lines an EventLog wrote count (they carry ``job`` and ``ts``): a line appended by anything else,
    whatever ``seq`` it claims, does not move the count. Every writer of a job's file (the pipeline, the
    runner, the papermill engine, the kernel) shares that one count.
    """
    end = f.seek(0, os.SEEK_END)
    if end == 0:
        return 0, True
    size = min(end, _TAIL_BYTES)
    while True:
        f.seek(end - size)
        chunk = f.read(size)
        lines = chunk.split(b"\n")
        # the first piece may be a partial line unless we read from the start of the file
        candidates = lines if size == end else lines[1:]
        for raw in reversed(candidates):
            event = _parse(raw)
            if event is not None and isinstance(event.get("job"), str) and "ts" in event:
                return int(event["seq"]), chunk.endswith(b"\n")
        if size == end:
            return 0, chunk.endswith(b"\n")
        size = min(end, size * 4)


def _max_seq(f: Any) -> int:
    """The highest seq of any event in ``f`` (a whole read: only when a line claims a lower seq than ours)."""
    f.seek(0)
    best = 0
    for raw in f.read().split(b"\n"):
        event = _parse(raw)
        if event is not None and isinstance(event.get("job"), str) and "ts" in event:
            best = max(best, int(event["seq"]))
    return best


class Event(dict):  # type: ignore[type-arg]
    """An event as read from the file, with the JSON ``text`` of its line: a reader that stores or
    forwards events (the server, thousands per second) sends that text on instead of encoding again.
    """

    __slots__ = ("text",)
    text: str


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # 1e999: what no EventLog writes and every JSON encoder here refuses
        raise ValueError(f"{text[:20]} is past a float's range")
    return value


def _parse(raw: bytes) -> Event | None:
    """The event on one line, or None when the line holds none: torn (a writer killed mid-line), not UTF-8,
    not JSON, nested deeper than the parser goes, or holding NaN, Infinity or 1e999 (an EventLog never writes
    them, a browser cannot parse the first two). Whatever the line holds, this raises nothing."""
    event = _parse_line(raw)
    return event if isinstance(event, Event) else None


def _parse_line(raw: bytes) -> Event | str | None:
    """The event on one line; else why the line holds none, in a few words; None for a blank line."""
    raw = raw.strip()
    if not raw:
        return None
    try:
        text = raw.decode()
        data = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except UnicodeDecodeError:
        return "not UTF-8"
    except RecursionError:
        return "nested too deep to parse"
    except (ValueError, OverflowError) as exc:  # JSONDecodeError is a ValueError; NaN, Infinity and 1e999 too
        return "not JSON (torn or malformed)" if isinstance(exc, json.JSONDecodeError) else str(exc)[:80]
    if not (isinstance(data, dict) and isinstance(data.get("seq"), int)):
        return "JSON but no event (no whole-number seq)"
    event = Event(data)
    event.text = text
    return event


def read_events(path: str, after: int = 0) -> list[dict[str, Any]]:
    """Every complete event in ``path`` with ``seq > after``, in order."""
    return [e for e in iter_events(path) if e["seq"] > after]


def iter_events(path: str) -> Iterator[dict[str, Any]]:
    try:
        with open(path, "rb") as f:
            for raw in f:
                if raw.endswith(b"\n"):
                    event = _parse(raw)
                    if event is not None:
                        yield event
    except FileNotFoundError:
        return


class EventTail:
    """Follow an event file incrementally: each :meth:`read` returns the events appended since the last.

    Given ``job``, lines that are not that job's (another writer's, or no EventLog's) are not returned and
    do not move ``after``: they are kept in :attr:`foreign` for the reader to report. Complete lines that
    hold no event (not UTF-8, not JSON, too deep, NaN) are kept in :attr:`unreadable` as (byte offset, why).
    """

    def __init__(self, path: str, after: int = 0, job: str | None = None) -> None:
        self.path = os.fspath(path)
        self.after = after
        self.job = job
        self.foreign: list[dict[str, Any]] = []
        self.unreadable: list[tuple[int, str]] = []
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        offset = self._offset - len(self._partial)  # where the first line read now starts in the file
        self._offset += len(data)
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        events: list[dict[str, Any]] = []
        for raw in lines:
            start, offset = offset, offset + len(raw) + 1
            event = _parse_line(raw)
            if not isinstance(event, Event):
                if event is not None and len(self.unreadable) < _MAX_UNREADABLE:  # a reader that never clears it
                    self.unreadable.append((start, event))
                continue
            if self.job is not None and event.get("job") != self.job:
                self.foreign.append(event)
            elif event["seq"] > self.after:
                events.append(event)
                self.after = event["seq"]
        return events
