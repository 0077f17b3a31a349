"""The event log: gap-free seq across processes, torn lines, incremental tails."""

from __future__ import annotations

import multiprocessing

from jupyter_promote.events import JobView
from jupyter_promote.models import JobState
from jupyter_promote.runtime.events import EventLog, EventTail, read_events


def _writer(path: str, n: int) -> None:
    log = EventLog(path, "job")
    for i in range(n):
        log.emit("heartbeat", i=i)


def test_seq_has_no_gaps_or_repeats_across_processes(tmp_path):
    path = str(tmp_path / "events.jsonl")
    procs = [multiprocessing.get_context("fork").Process(target=_writer, args=(path, 150)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    seqs = [e["seq"] for e in read_events(path)]
    assert seqs == list(range(1, 601))


def test_a_torn_last_line_is_skipped_and_numbering_continues(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path), "job")
    log.emit("status", state="running")
    with open(path, "ab") as f:
        f.write(b'{"seq": 2, "ts": 1, "ty')  # a writer killed mid-line
    assert log.emit("status", state="succeeded")["seq"] == 2
    assert [e["seq"] for e in read_events(str(path))] == [1, 2]


def test_tail_returns_only_new_events(tmp_path):
    path = str(tmp_path / "events.jsonl")
    log = EventLog(path, "job")
    tail = EventTail(path)
    assert tail.read() == []
    log.emit("status", state="queued")
    assert [e["state"] for e in tail.read()] == ["queued"]
    log.emit("status", state="running")
    log.emit("step", steps=10, steps_per_s=5.0)
    assert [e["type"] for e in tail.read()] == ["status", "step"]
    assert tail.read() == []


def test_fold_ignores_replays_and_keeps_final_state():
    events = [
        {"seq": 1, "type": "status", "state": "running", "ts": 1},
        {"seq": 2, "type": "alert", "kind": "nan", "message": "m", "ts": 2},
        {"seq": 3, "type": "status", "state": "failed", "reason": "nan", "message": "m", "ts": 3},
    ]
    view = JobView().fold(events + events)
    assert view.state is JobState.FAILED and view.reason == "nan" and len(view.alerts) == 1
