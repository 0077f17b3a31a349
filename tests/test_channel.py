"""The channel's format and its receiver, on real files: a stream cut anywhere, read again from its start,
with lines lost, damaged or hostile."""

from __future__ import annotations

import json
import os

from jupyter_promote.channel.receiver import Receiver
from jupyter_promote.channel.sender import Sender
from jupyter_promote.channel.wire import MAX_LINE, event_lines, file_lines
from jupyter_promote.models import JobRecord
from jupyter_promote.rundir import RunDir
from jupyter_promote.runtime.events import EventLog, read_events


def job_run(tmp_path, name):
    run = RunDir(tmp_path / name)
    run.path.mkdir()
    run.write(JobRecord(id="j1", notebook="nb.ipynb", target="ray", kernel="python3"))
    return run


def stream_of(remote: RunDir) -> str:
    """What a job's stdout carries: its events file through a real Sender (into a pipe)."""
    read_end, write_end = os.pipe()
    Sender(remote, fd=write_end).pump()
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        return f.read().decode()


def test_a_stream_cut_anywhere_and_read_twice_relays_each_event_once(tmp_path):
    # Given a job's events, one of them longer than a line may be
    remote = job_run(tmp_path, "remote")
    log = EventLog(str(remote.events), "j1")
    log.emit("status", state="running", source="runner")
    log.emit("alert", kind="stall", action="alert", message="x" * 9000)
    log.emit("status", state="succeeded", source="runner")
    text = stream_of(remote)
    assert all(len(line) + 1 <= MAX_LINE for line in text.splitlines())
    # When it arrives in pieces of 7 characters, then once more from its start (a restarted server)
    local = job_run(tmp_path, "local")
    EventLog(str(local.events), "j1").emit("status", state="queued", source="pipeline")
    receiver = Receiver(local, "j1")
    for i in range(0, len(text), 7):
        receiver.feed(text[i : i + 7])
    Receiver(local, "j1").feed(text)
    # Then each event is in the local log once, numbered after the local ones, its own seq kept
    events = read_events(str(local.events))
    assert [e["seq"] for e in events] == [1, 2, 3, 4]
    assert [e.get("remote_seq") for e in events] == [None, 1, 2, 3]
    assert events[2]["message"] == "x" * 9000


def test_gaps_bad_lines_damaged_and_hostile_files_are_reported_never_written(tmp_path):
    local = job_run(tmp_path, "local")
    good = {"seq": 1, "ts": 1.0, "job": "j1", "type": "status", "state": "running"}
    later = {**good, "seq": 4, "state": "succeeded"}
    bogus = {"seq": 100000, "type": "status", "state": "bogus"}
    damaged = file_lines("output.ipynb", b"{}")
    damaged[1] = damaged[1][:-3] + b"AA\n"
    lines = [*event_lines(json.dumps(good).encode()), *event_lines(json.dumps(bogus).encode()),
             *event_lines(json.dumps(later).encode()), *damaged, *file_lines("../../etc/passwd", b"x"),
             *file_lines("work/model.pt", b"\x00weights")]  # fmt: skip
    Receiver(local, "j1").feed(b"".join(lines).decode() + "printed by the job\n")
    events = read_events(str(local.events))
    kinds = [e.get("kind") for e in events if e["type"] == "alert"]
    assert kinds == ["bad_event", "events_lost", "channel", "channel"], events
    assert [e.get("remote_seq") for e in events if e["type"] == "status"] == [1, 4]
    assert max(e["seq"] for e in events) == len(events)  # the bogus seq moved nothing
    assert not (local.path / "output.ipynb").exists() and not (tmp_path / "etc").exists()
    assert (local.path / "work" / "model.pt").read_bytes() == b"\x00weights"
    assert (local.path / "job.log").read_text() == "printed by the job\n"


def test_the_sender_sends_the_files_before_the_final_status(tmp_path):
    remote = job_run(tmp_path, "remote")
    remote.output_notebook.write_text('{"cells": []}')
    (remote.work_dir).mkdir()
    (remote.work_dir / "out.txt").write_text("result")
    os.symlink("/etc/hostname", remote.work_dir / "input-link")  # an input, not an artifact
    EventLog(str(remote.events), "j1").emit("status", state="succeeded", source="runner")
    text = stream_of(remote)
    local = job_run(tmp_path, "local")
    Receiver(local, "j1").feed(text)
    assert text.index('"output.ipynb"') < text.index('"succeeded"')
    assert (local.path / "work" / "out.txt").read_text() == "result"
    assert not (local.path / "work" / "input-link").exists()
