"""Fold a job's events, in seq order, into what a person wants to see: state, progress, alerts, metrics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..models import JobRecord, JobState
from ..runtime.events import EVENT_TYPES, STAGES, stage_of_state

_STATES = frozenset(s.value for s in JobState)
_Check = Callable[[Any], bool]


def _number(value: Any) -> bool:
    """A finite number, not a boolean (JSON's ``true`` is no number; NaN, Infinity and 1e999 are none either)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int past a float's range: the browser reads it as Infinity
        return False


def _whole(value: Any) -> bool:
    """A whole number: 3, or 3.0 (the browser's JSON.parse cannot tell them apart)."""
    return _number(value) and float(value).is_integer()


def _count(value: Any) -> bool:
    return _whole(value) and value >= 0


def _rate(value: Any) -> bool:
    return _number(value) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _flag(value: Any) -> bool:
    return isinstance(value, bool)


def _optional(check: _Check) -> _Check:
    return lambda value: value is None or check(value)


def _metrics(value: Any) -> bool:
    """What ``promote.report`` writes: names to finite numbers, booleans or text (NaN as "nan")."""
    return isinstance(value, dict) and all(
        v is None or _number(v) or isinstance(v, (str, bool)) for v in value.values()
    )


def _files(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(f, dict) and isinstance(f.get("path"), str) and _count(f.get("size")) for f in value
    )


def _devices(value: Any) -> bool:
    return value is None or (isinstance(value, list) and all(isinstance(d, dict) for d in value))


_TEXT, _COUNT = (_optional(_text), "a string"), (_optional(_count), "a whole number >= 0")
#: Every field a fold reads, by event type: the check it must pass (a missing field reads as None) and what
#: it must be, in words. The sidebar's fold (labextension/src/job/validate.ts, ``problem``) holds the same table.
_FIELDS: dict[str, tuple[tuple[str, _Check, str], ...]] = {
    "status": (("reason", *_TEXT), ("message", *_TEXT)),
    "image": (("ref", *_TEXT), ("built", _optional(_flag), "true, false or null"), ("digest", *_TEXT)),
    "cell": (
        ("number", *_COUNT),
        ("own_number", *_COUNT),
        ("total", *_COUNT),
        ("own_total", *_COUNT),
        ("source", *_TEXT),
        ("ename", *_TEXT),
        ("evalue", *_TEXT),
    ),
    "step": (("steps", *_COUNT), ("steps_per_s", _optional(_rate), "a finite number >= 0")),
    "heartbeat": (("steps", *_COUNT),),
    "metric": (("metrics", _metrics, "an object of finite numbers, booleans and strings"),),
    "gpu": (("devices", _devices, "a list of objects"),),
    "alert": (("kind", _text, "a string"), ("message", *_TEXT)),
    "artifacts": (("files", _files, "a list of {path: string, size: whole number >= 0}"),),
    "attempt": (("number", _optional(lambda v: _count(v) and v >= 1), "a whole number >= 1"), *(("reason", *_TEXT),)),
}


def _int(value: Any) -> Any:
    """A whole number checked by :func:`problem` as an int (3.0 is 3), None as None."""
    return None if value is None else int(value)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def problem(event: dict[str, Any]) -> str | None:
    """Why ``event`` cannot be folded (one line), or None. Such events are set aside, never fatal.

    Every field either fold reads is checked here, once: the follower, the server and the channel receiver
    set aside what this refuses, and the folds need not check again.
    """
    kind = event.get("type")
    if "ts" not in event or not isinstance(event.get("job", ""), str):
        return "not written by jupyter-promote (no ts)"
    if kind not in EVENT_TYPES:
        return f"unknown type {_shown(kind)}"
    seq: Any = event.get("seq")
    if not _whole(seq) or seq < 1:
        return f"seq {_shown(seq)} is not a positive whole number"
    if not _number(event["ts"]):
        return f"ts {_shown(event['ts'])} is not a finite number"
    if kind == "status" and not (isinstance(event.get("state"), str) and event["state"] in _STATES):
        return f"unknown state {_shown(event.get('state'))}"
    for name, check, what in _FIELDS.get(str(kind), ()):
        if not check(event.get(name)):
            article = "an" if str(kind)[0] in "aeiou" else "a"
            return f"{article} {kind} event whose {name} is not {what}: {_shown(event.get(name))}"
    return None


@dataclass
class JobView:
    state: JobState = JobState.PENDING
    reason: str | None = None
    message: str | None = None
    seq: int = 0
    cell_number: int | None = None
    cells_total: int | None = None
    cells_done: int = 0
    cell_source: str | None = None
    steps: int = 0
    steps_per_s: float | None = None
    alerts: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    started_at: float | None = None
    finished_at: float | None = None
    last_event_at: float | None = None
    failed_cell: dict[str, Any] | None = None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    #: the stages so far, each {"name", "start", "end"} (end None while in it): freezing, building, ...
    stages: list[dict[str, Any]] = field(default_factory=list)
    image: dict[str, Any] | None = None
    #: which attempt the job is in (1, or more once an infrastructure failure was retried: ``attempt`` events)
    attempt: int = 1

    @property
    def stage(self) -> str | None:
        """The stage the job is in (the last one entered), or None before any."""
        return self.stages[-1]["name"] if self.stages else None

    def _enter(self, name: str, ts: float) -> None:
        if self.stages and self.stages[-1]["name"] == name:
            return
        if self.stages and self.stages[-1]["end"] is None:
            self.stages[-1]["end"] = ts
        self.stages.append({"name": name, "start": ts, "end": ts if name == "finished" else None})

    def apply(self, event: dict[str, Any]) -> None:
        if problem(event) is not None:
            return  # set aside (the follower reports it); it neither moves seq nor the state
        if event["seq"] <= self.seq:
            return  # already folded: replays and reconnects are harmless
        self.seq = int(event["seq"])
        self.last_event_at = event.get("ts")
        kind = event["type"]
        if kind == "status":
            state = JobState(event["state"])
            if self.state.final and not state.final:
                return
            self.state = state
            self.reason = event.get("reason")
            self.message = event.get("message")
            if state is JobState.RUNNING and self.started_at is None:
                self.started_at = event.get("ts")
            if state.final:
                self.finished_at = event.get("ts")
            stage = event.get("stage") if event.get("stage") in STAGES else stage_of_state(state.value)
            if stage is not None:
                self._enter(stage, event["ts"])
        elif kind == "image":
            if event.get("ref"):
                self.image = {"ref": event["ref"], "built": event.get("built"), "digest": event.get("digest")}
        elif kind == "cell":
            self._cell(event)
        elif kind == "step":
            if event.get("steps") is not None:
                self.steps = int(event["steps"])
            self.steps_per_s = event.get("steps_per_s")
        elif kind == "heartbeat":
            self.steps = max(self.steps, int(event.get("steps") or 0))
        elif kind == "alert":
            self.alerts.append(event)
        elif kind == "metric":
            self.metrics.update(event.get("metrics", {}))
        elif kind == "artifacts":
            self.artifacts = list(event.get("files") or [])
        elif kind == "attempt":
            self._attempt(event)

    def _attempt(self, event: dict[str, Any]) -> None:
        """The job starts again after an infrastructure failure (its submitter's word, signed): queued once
        more, its progress from zero; its alerts and metrics so far are kept."""
        self.attempt = int(event.get("number") or self.attempt + 1)
        self.state, self.reason, self.message = JobState.QUEUED, "retrying", event.get("message")
        self.finished_at, self.failed_cell = None, None
        self.cell_number, self.cell_source, self.cells_done = None, None, 0
        self.steps, self.steps_per_s = 0, None
        self._enter("queued", event["ts"])

    def _cell(self, event: dict[str, Any]) -> None:
        """Cells are the notebook's own code cells, numbered from 1, whatever the runner injected."""
        own = event.get("own_total") is not None
        total = event.get("own_total") if own else event.get("total")
        if total is not None:
            self.cells_total = int(total)
        if event.get("injected") and own:
            return
        number = _int(event.get("own_number") if event.get("own_number") is not None else event.get("number"))
        if event.get("phase") == "start":
            self.cell_number = number
            self.cell_source = event.get("source")
        elif event.get("phase") == "end" and event.get("ok"):
            self.cells_done += 1
        elif event.get("phase") == "error":
            self.failed_cell = {"number": number, **{k: event.get(k) for k in ("ename", "evalue", "source")}}

    def to_json(self) -> dict[str, Any]:
        """The view as the golden event streams hold it (the sidebar's fold gives the same, key for key)."""
        return {
            "state": self.state.value,
            "reason": self.reason,
            "message": self.message,
            "seq": self.seq,
            "stage": self.stage,
            "stages": [dict(s) for s in self.stages],
            "cell_number": self.cell_number,
            "cells_total": self.cells_total,
            "cells_done": self.cells_done,
            "failed_cell": self.failed_cell,
            "steps": self.steps,
            "steps_per_s": self.steps_per_s,
            "alerts": [{"kind": a.get("kind"), "message": a.get("message")} for a in self.alerts],
            "metrics": dict(self.metrics),
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "artifacts": [{"path": a["path"], "size": a["size"]} for a in self.artifacts],
            "image": self.image,
            "attempt": self.attempt,
        }

    def update(self, record: JobRecord) -> None:
        """Carry what the events say into the job's record (job.json)."""
        record.state, record.reason, record.message = self.state, self.reason, self.message
        record.started_at = record.started_at or self.started_at
        record.finished_at = self.finished_at
        record.metrics = dict(self.metrics)
        record.artifacts = list(self.artifacts)
        record.attempt = self.attempt

    def fold(self, events: list[dict[str, Any]]) -> JobView:
        for event in events:
            self.apply(event)
        return self

    def progress_line(self) -> str:
        """One line for a terminal: stage, cell N of M, steps and steps/s."""
        parts = [self.state.value] + ([f"attempt {self.attempt}"] if self.attempt > 1 else [])
        if self.cells_total and self.state is JobState.RUNNING and self.cell_number is not None:
            parts.append(f"cell {self.cell_number}/{self.cells_total}")
        if self.steps:
            rate = f" ({self.steps_per_s:.1f} steps/s)" if self.steps_per_s else ""
            parts.append(f"{self.steps} steps{rate}")
        if self.alerts:
            parts.append(f"{len(self.alerts)} alert{'s' if len(self.alerts) != 1 else ''}")
        if self.reason and self.state.final:
            parts.append(f"reason: {self.reason}")
        return " · ".join(parts)
