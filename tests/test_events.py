"""The event log: gap-free seq across processes, torn lines, incremental tails."""

from __future__ import annotations

import math
import multiprocessing

import nbformat
import pytest
from conftest import job

from jupyter_promote.events import JobView, problem
from jupyter_promote.models import JobState
from jupyter_promote.runtime.events import EventLog, EventTail, iter_events, read_events


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


# --- events that cannot kill a job or the tools ---------------------------------------------------------------

_DEEP = b'{"seq": 2, "ts": 1, "job": "job", "type": "heartbeat", "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def test_lines_no_reader_can_parse_are_skipped_and_numbering_continues(tmp_path):
    # Given an events file with, between two events, lines no reader can parse: nested 5,000 deep, NaN and
    # Infinity (no browser parses them), 1e999 (no encoder here writes it), UTF-16, bytes that are not UTF-8
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path), "job")
    log.emit("status", state="running")
    tail = EventTail(str(path), job="job")
    assert [e["seq"] for e in tail.read()] == [1]
    with open(path, "ab") as f:
        f.write(_DEEP + b"\n")
        f.write(b'{"seq": 2, "ts": 1, "job": "job", "type": "step", "steps_per_s": NaN}\n')
        f.write(b'{"seq": 2, "ts": Infinity, "job": "job", "type": "heartbeat"}\n')
        f.write(b'{"seq": 2, "ts": 1e999, "job": "job", "type": "heartbeat"}\n')
        f.write('{"seq": 2, "ts": 1, "job": "job", "type": "heartbeat"}\n'.encode("utf-16"))
        f.write(b'{"seq": 2, "ts": 1, "job": "job\xff", "type": "heartbeat"}\n')
        f.write(_DEEP + b"\n")  # the last line: what the next writer reads its seq from
    # When a writer appends after them, and every reader reads the file
    appended = log.emit("status", state="succeeded")
    # Then the bad lines are skipped as torn lines are, and the numbering goes on from the last event
    assert appended["seq"] == 2
    assert [e["seq"] for e in read_events(str(path))] == [1, 2]
    assert [e["seq"] for e in iter_events(str(path))] == [1, 2]
    assert [e["seq"] for e in tail.read()] == [2] and tail.foreign == []


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        ({"type": "heartbeat", "steps": "5"}, "steps"),
        ({"type": "heartbeat", "steps": True}, "steps"),
        ({"type": "heartbeat", "steps": 10**400}, "steps"),
        ({"type": "step", "steps": 5.5, "steps_per_s": 2.0}, "steps"),
        ({"type": "step", "steps": 5, "steps_per_s": "fast"}, "steps_per_s"),
        ({"type": "step", "steps": 5, "steps_per_s": math.inf}, "steps_per_s"),
        ({"type": "step", "steps": 5, "steps_per_s": math.nan}, "steps_per_s"),
        ({"type": "status", "state": "failed", "ts": "yesterday"}, "ts"),
        ({"type": "status", "state": "failed", "ts": math.nan}, "ts"),
        ({"type": "status", "state": "failed", "ts": True}, "ts"),
        ({"type": "status", "state": "failed", "message": 7}, "message"),
        ({"type": "status", "state": "failed", "reason": ["error"]}, "reason"),
        ({"type": "cell", "phase": "start", "number": "3", "total": 4}, "number"),
        ({"type": "cell", "phase": "start", "own_number": 1.5, "own_total": 4}, "own_number"),
        ({"type": "cell", "phase": "start", "number": 1, "total": -4}, "total"),
        ({"type": "cell", "phase": "error", "number": 1, "ename": {"x": 1}}, "ename"),
        ({"type": "metric", "metrics": {"loss": [1.0]}}, "metrics"),
        ({"type": "metric", "metrics": {"loss": math.inf}}, "metrics"),
        ({"type": "alert", "kind": "nan", "message": 5}, "message"),
        ({"type": "image", "ref": "img:1", "built": "yes"}, "built"),
        ({"type": "image", "ref": 1}, "ref"),
        ({"type": "gpu", "devices": {"index": 0}}, "devices"),
        ({"type": "artifacts", "files": [{"path": "a", "size": -1}]}, "files"),
    ],
)
def test_an_event_whose_fields_the_fold_cannot_use_is_set_aside_naming_the_field(bad, named):
    # Given a running job's events and one event whose field has a type the fold cannot use
    good = [{"seq": 1, "ts": 1.0, "job": "job", "type": "status", "state": "running"}]
    event = {"seq": 2, "ts": 2.0, "job": "job", **bad}
    # When it is checked and folded
    why = problem(event)
    view = JobView().fold([*good, event])
    # Then it is set aside with one line naming the field, and the view is as if it never came
    assert why is not None and named in why and "\n" not in why and len(why) < 200, why
    assert view.to_json() == JobView().fold(good).to_json()


def test_a_whole_number_written_as_a_float_is_still_a_seq():
    # Given an event whose seq is 2.0 (the browser's JSON.parse cannot tell it from 2)
    events = [
        {"seq": 1, "ts": 1, "type": "status", "state": "running"},
        {"seq": 2.0, "ts": 2, "type": "heartbeat", "steps": 3.0},
    ]
    # When folded
    view = JobView().fold(events)
    # Then it folds, as the sidebar folds it
    assert problem(events[1]) is None and view.seq == 2 and view.steps == 3


def _notebook(path, cells):
    """A Python notebook of ``cells`` (code sources) at ``path``."""
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(c) for c in cells], metadata={"kernelspec": kernelspec}
    )
    path.write_text(nbformat.writes(nb))
    return path


def test_a_job_whose_notebook_writes_unfoldable_events_still_succeeds(cli, tmp_path):
    # Given a notebook whose cell appends events the folds cannot use to its job's own events file
    cells = [
        "import os\nfrom jupyter_promote.runtime.events import EventLog\n"
        "log = EventLog(os.environ['PROMOTE_EVENTS'], os.environ['PROMOTE_JOB_ID'])\n"
        "log.emit('heartbeat', steps='5')\n"
        "log.relay({'seq': 1, 'ts': 'now', 'type': 'heartbeat', 'steps': 1})",
        f"with open(os.environ['PROMOTE_EVENTS'], 'ab') as f:\n    f.write({_DEEP!r} + b'\\n')",
        "import jupyter_promote as promote\npromote.report(accuracy=0.9)",
    ]
    notebook = _notebook(tmp_path / "writes_bad_events.ipynb", cells)
    # When it is run for real, and its status read
    result = cli("run", str(notebook))
    assert result.returncode == 0, result.stderr[-2000:]
    status = cli("status", str(cli.only_run()))
    # Then it succeeds, each unfoldable event set aside and reported once, its metric kept
    record = job(cli.only_run())
    assert record["state"] == "succeeded" and record["metrics"] == {"accuracy": 0.9}
    set_aside = [
        e["message"] for e in read_events(str(cli.only_run() / "events.jsonl")) if e.get("kind") == "bad_event"
    ]
    assert len(set_aside) == 3 and "steps" in set_aside[0] and "ts" in set_aside[1], set_aside
    assert "nested too deep" in set_aside[2], set_aside  # the line no reader parses: reported too
    assert status.returncode == 0 and "succeeded" in status.stdout, status.stderr


# --- lines that hold no event: reported once each, never fatal -----------------------------------------------

_NAN = b'{"seq": 2, "ts": 1, "job": "job", "type": "step", "steps": 1, "steps_per_s": NaN}'


def test_the_tail_keeps_each_unreadable_line_with_where_it_is_and_why(tmp_path):
    # Given an events file with, after one event, a line nested 5,000 deep, one with NaN, one that is not
    # UTF-8, one JSON value that is no event, a blank line, and a torn last line still being written
    path = tmp_path / "events.jsonl"
    EventLog(str(path), "job").emit("status", state="running")
    start = path.stat().st_size
    lines = [_DEEP, _NAN, b'{"seq": 2, "job": "job\xff"}', b"[1, 2]", b""]
    with open(path, "ab") as f:
        f.write(b"\n".join(lines) + b"\n" + b'{"seq": 2, "ts"')
    # When a tail reads it
    tail = EventTail(str(path), job="job")
    events = tail.read()
    # Then the event is returned, and each complete line that holds none is kept once with its byte offset
    # and why (the blank line and the torn one are not: a writer may still complete the latter)
    assert [e["seq"] for e in events] == [1]
    offsets = [start + sum(len(line) + 1 for line in lines[:i]) for i in range(4)]
    assert [offset for offset, _ in tail.unreadable] == offsets
    whys = [why for _, why in tail.unreadable]
    assert "nested too deep" in whys[0] and "NaN" in whys[1] and "UTF-8" in whys[2] and "no event" in whys[3]
    # And read again, nothing new is kept
    tail.unreadable.clear()
    assert tail.read() == [] and tail.unreadable == []


def test_the_follower_reports_each_unreadable_line_once_even_when_it_reads_the_file_again(tmp_path):
    from jupyter_promote.events.authority import FinalStateRule
    from jupyter_promote.launch.set_aside import set_aside as _set_aside

    # Given a job's events file with a line nested 5,000 deep and a line with NaN between its events
    path = tmp_path / "events.jsonl"
    log = EventLog(str(path), "job")
    log.emit("status", state="running")
    with open(path, "ab") as f:
        f.write(_DEEP + b"\n" + _NAN + b"\n")
    log.emit("heartbeat", steps=1)
    # When a follower reads it, and then another follows the job again from the start (a server restart)
    for _ in range(2):
        tail = EventTail(str(path), job="job")
        _set_aside(tail.read(), tail, log, FinalStateRule(tmp_path))
        _set_aside(tail.read(), tail, log, FinalStateRule(tmp_path))  # its own alerts come back: no new ones
    # Then there is exactly one bad_event alert per unreadable line, saying why, and the events are untouched
    alerts = [e for e in read_events(str(path)) if e.get("kind") == "bad_event"]
    assert len(alerts) == 2, alerts
    assert "nested too deep" in alerts[0]["message"] and "NaN" in alerts[1]["message"]
    assert [e["type"] for e in read_events(str(path))] == ["status", "heartbeat", "alert", "alert"]


def test_a_job_whose_notebook_appends_lines_no_reader_parses_succeeds_with_one_alert_each(cli, tmp_path):
    # Given a notebook that appends a line nested 5,000 deep and a line with NaN to its job's events file
    cells = [
        f"import os\nwith open(os.environ['PROMOTE_EVENTS'], 'ab') as f:\n    f.write({_DEEP!r} + b'\\n')",
        f"with open(os.environ['PROMOTE_EVENTS'], 'ab') as f:\n    f.write({_NAN!r} + b'\\n')",
        "import jupyter_promote as promote\npromote.report(accuracy=0.9)",
    ]
    notebook = _notebook(tmp_path / "appends_unreadable_lines.ipynb", cells)
    # When it is run for real
    result = cli("run", str(notebook))
    # Then it succeeds, its metric kept, with exactly one bad_event alert per line, each saying why
    assert result.returncode == 0, result.stderr[-2000:]
    run = cli.only_run()
    assert job(run)["state"] == "succeeded" and job(run)["metrics"] == {"accuracy": 0.9}
    alerts = [e["message"] for e in read_events(str(run / "events.jsonl")) if e.get("kind") == "bad_event"]
    assert len(alerts) == 2, alerts
    assert "nested too deep" in alerts[0] and "NaN" in alerts[1], alerts
