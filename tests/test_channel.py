"""The channel's format and its receiver, on real files: a stream cut anywhere, read again from its start,
with lines lost, damaged or hostile."""

from __future__ import annotations

import json
import os
import time
import tracemalloc

from jupyter_promote.channel.decoder import MAX_LINE_CHARS, MAX_OPEN
from jupyter_promote.channel.receiver import Receiver
from jupyter_promote.channel.sender import Sender
from jupyter_promote.channel.wire import MAX_LINE, escape, event_lines, file_lines, record
from jupyter_promote.events import JobView
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


KEY = bytes(range(32))


def test_gaps_bad_lines_damaged_and_hostile_files_are_reported_never_written(tmp_path):
    # Given a signed stream with a gap, a bogus event, a damaged file and files aimed outside the run
    local = job_run(tmp_path, "local")
    good = {"seq": 1, "ts": 1.0, "job": "j1", "type": "status", "state": "running"}
    later = {**good, "seq": 4, "state": "succeeded"}
    bogus = {"seq": 100000, "type": "status", "state": "bogus"}
    damaged = file_lines("output.ipynb", b"{}", KEY)
    ident = damaged[1].decode().split()[3]
    damaged[1] = record("p", f"{ident} 0 e3AA", KEY)  # signed, but not the file it announced
    lines = [
        *event_lines(json.dumps(good).encode(), KEY),
        *event_lines(json.dumps(bogus).encode(), KEY),
        *event_lines(json.dumps(later).encode(), KEY),
        *damaged,
        *file_lines("../../etc/passwd", b"x", KEY),
        *file_lines("work/model.pt", b"\x00weights", KEY),
    ]
    # When it is received
    Receiver(local, "j1", key=KEY).feed(b"".join(lines).decode() + "printed by the job\n")
    # Then the gap (real: signed) and each fault are reported, nothing lands outside, the text is kept
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


def signed_job_stream(remote: RunDir, key: bytes) -> str:
    """A job that raised ValueError: its runner's events (signed) through a real Sender."""
    log = EventLog(str(remote.events), "j1", key=key)
    log.emit("status", state="running", source="runner")
    log.emit("metric", metrics={"accuracy": 0.10}, source="kernel")
    remote.output_notebook.write_text('{"cells": [], "real": true}')
    log.emit("status", state="failed", reason="error", message="cell 2 failed: ValueError", source="runner")
    read_end, write_end = os.pipe()
    Sender(remote, fd=write_end, key=key).pump()
    os.close(write_end)
    with os.fdopen(read_end, "rb") as f:
        return f.read().decode()


def test_what_a_notebook_prints_cannot_forge_a_verdict_or_replace_a_file(tmp_path):
    # Given a failed job whose notebook printed data holding channel-looking records (a CSV row, a page, a
    # library's log): a succeeded status, a better metric with a high seq, a file record for output.ipynb
    remote = job_run(tmp_path, "remote")
    real = signed_job_stream(remote, KEY)
    forged_status = json.dumps({"seq": 90, "ts": 2.0, "job": "j1", "type": "status", "state": "succeeded"})
    forged_metric = json.dumps({"seq": 91, "ts": 2.0, "job": "j1", "type": "metric", "metrics": {"accuracy": 0.93}})
    printed = (
        f"id,row\n1,@promote e {forged_status}\n@promote e {forged_metric}\n"
        f"@promote e {'0' * 32} {forged_status}\n" + b"".join(file_lines("output.ipynb", b'{"forged": 1}')).decode()
    )
    lines = real.splitlines(keepends=True)
    stream = "".join(lines[:2]) + printed + "".join(lines[2:])
    # When the submitter receives it
    local = job_run(tmp_path, "local")
    Receiver(local, "j1", key=KEY).feed(stream)
    # Then the job's own state, metrics and notebook stand; the printed lines are text, reported once
    events = read_events(str(local.events))
    view = JobView().fold(events)
    print("state", view.state.value, "metrics", view.metrics)
    assert (view.state.value, view.metrics) == ("failed", {"accuracy": 0.10})
    assert json.loads(local.output_notebook.read_text()) == {"cells": [], "real": True}
    assert [e["fault"] for e in events if e.get("kind") == "channel"] == ["unsigned"]
    assert "1,@promote e" in (local.path / "job.log").read_text()


def test_the_runner_escapes_what_papermill_forwards_and_the_receiver_restores_it(tmp_path):
    # Given a cell output that starts lines with the marker, as the runner's log handler writes it
    printed = escape("@promote e {}\n@@promote x\nplain @promote e\n")
    # When it is received
    local = job_run(tmp_path, "local")
    Receiver(local, "j1", key=KEY).feed(printed)
    # Then the log holds what the cell printed, and nothing was taken for a record
    assert (local.path / "job.log").read_text() == "@promote e {}\n@@promote x\nplain @promote e\n"
    assert read_events(str(local.events)) == []


MALFORMED = {
    "empty name": ("file", ""),
    "over-long name": ("file", "work/" + "n" * 300),
    "a name that is a folder": ("file", "work"),
    "a name onto a folder": ("file", "work/sub"),
    "NUL": ("file", "work/a\0b"),
    "parts not a number": ("b", '{"id": "1.1", "kind": "file", "name": "work/x", "parts": "2", "size": 3}'),
    "fragment index out of range": ("p", "9.9 7 QUFB"),
    "n garbage": ("n", "garbage"),
    "n fields": ("n", '{"left_out": 3, "count": "x", "budget": null}'),
    "NaN in an event": ("e", '{"seq": 1, "ts": NaN, "job": "j1", "type": "status", "state": "running"}'),
    "nesting 100,000 deep": ("e", "[" * 100000 + "]" * 100000),
    "deep event": (
        "e",
        '{"seq": 1, "ts": 1, "job": "j1", "type": "metric", "metrics": ' + "[" * 5000 + "]" * 5000 + "}",
    ),
    "header not an object": ("b", "[1, 2]"),
    "part without index": ("p", "1.1"),
    "unknown kind": ("z", "{}"),
}


def malformed_line(kind: str, payload: str) -> str:
    if kind == "file":
        return b"".join(file_lines(payload, b"abc", KEY)).decode()
    if kind == "p" and payload.startswith("9.9"):  # a real header, then a fragment past its parts
        header = '{"id": "9.9", "kind": "file", "name": "work/x", "parts": 1, "size": 3, "sha256": "' + "0" * 64 + '"}'
        return record("b", header, KEY).decode() + record("p", payload, KEY).decode()
    return record(kind, payload, KEY).decode()


def test_malformed_records_are_set_aside_with_one_alert_each_and_the_stream_goes_on(tmp_path):
    # Given a job's stream with every kind of malformed record before its real events and files
    remote = job_run(tmp_path, "remote")
    real = signed_job_stream(remote, KEY)
    local = job_run(tmp_path, "local")
    (local.path / "work" / "sub").mkdir(parents=True)
    bad = "".join(malformed_line(kind, payload) for kind, payload in MALFORMED.values())
    # When it is received twice, in 64 KiB pieces (a pod log's chunks), as a restarted server does
    for _ in range(2):
        receiver = Receiver(local, "j1", key=KEY)
        text = bad + real
        for i in range(0, len(text), 65536):
            receiver.feed(text[i : i + 65536])
    # Then nothing raised, the job's real end and notebook arrived, each kind of fault reported once
    events = read_events(str(local.events))
    view = JobView().fold(events)
    faults = [e.get("fault") or e["kind"] for e in events if e["type"] == "alert"]
    print("faults", faults)
    assert view.state.value == "failed" and local.output_notebook.exists()
    assert len(faults) == len(set(faults))
    assert not (local.path / "work" / "x").exists()


def test_an_80_mb_line_and_never_closed_fragments_cost_bounded_time_and_memory(tmp_path):
    # Given an 80 MB line arriving in 64 KiB pieces, then 20,000 fragmented messages never closed
    local = job_run(tmp_path, "local")
    receiver = Receiver(local, "j1", key=KEY)
    piece = "x" * 65536
    tracemalloc.start()
    started = time.process_time()
    # When they are received
    for _ in range(80 * 16):
        receiver.feed(piece)
    receiver.feed("\n")
    for i in range(20000):
        header = json.dumps(
            {"id": f"o.{i}", "kind": "file", "name": "work/x", "parts": 2, "size": 4000, "sha256": "0" * 64}
        )
        receiver.feed(record("b", header, KEY).decode() + record("p", f"o.{i} 0 " + "QUFB" * 900, KEY).decode())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    cpu = time.process_time() - started
    print(f"peak {peak >> 20} MiB, cpu {cpu:.1f} s, open {len(receiver.decoder._pending)}")
    # Then memory stays bounded, the line is cut once, and what was dropped is reported once per kind
    assert peak < 16 << 20
    assert len(receiver.decoder._pending) <= MAX_OPEN
    faults = [e.get("fault") for e in read_events(str(local.events)) if e["type"] == "alert"]
    assert faults == ["long_line", "dropped"]
    assert len((local.path / "job.log").read_text()) < MAX_LINE_CHARS + 100
