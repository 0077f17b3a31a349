"""A seeded fuzz of the channel's decoder and receiver: a job's real stream (every kind of record, through a
real Sender) with malformed and oversized records, forged ones (unsigned, or under another key) and
arbitrary printed text between its lines, cut into pieces of random sizes. Whatever arrives: no exception
out of the receiver, the folded state is the job's own, memory stays bounded. The figures go to the fault
ledger."""

from __future__ import annotations

import json
import os
import random
import re
import threading
import tracemalloc

import pytest
from fault_ledger import FIGURES

from jupyter_promote.channel.receiver import Receiver
from jupyter_promote.channel.sender import Sender
from jupyter_promote.channel.wire import file_lines, record
from jupyter_promote.events import JobView
from jupyter_promote.models import JobRecord
from jupyter_promote.rundir import RunDir
from jupyter_promote.runtime.events import EventLog, read_events

KEY, OTHER = b"k" * 32, b"o" * 32
SEEDS = range(40)
#: The most memory (tracemalloc's peak) one stream may cost the receiver: its largest file is 200 KB.
PEAK_BOUND = 8 << 20


def job_run(tmp_path, name: str) -> RunDir:
    run = RunDir(tmp_path / name)
    run.path.mkdir()
    run.write(JobRecord(id="j1", notebook="nb.ipynb", target="ray", kernel="python3"))
    return run


def real_stream(rng: random.Random, remote: RunDir) -> list[str]:
    """The job's own records, line by line: statuses, metrics, alerts, events too long for a line, files."""
    log = EventLog(str(remote.events), "j1", key=KEY)
    log.emit("status", state="running", source="runner")
    for i in range(rng.randint(5, 40)):
        kind = rng.choice(["metric", "alert", "heartbeat", "long"])
        if kind == "metric":
            log.emit("metric", metrics={"accuracy": round(rng.random(), 3), f"m{i}": i}, source="kernel")
        elif kind == "alert":
            log.emit("alert", kind="stall", action="alert", message="é" * rng.randint(0, 50), source="kernel")
        elif kind == "heartbeat":
            log.emit("heartbeat", steps=i, source="runner")
        else:
            log.emit("alert", kind="note", action="alert", message="x" * rng.randint(4000, 20000), source="kernel")
    remote.output_notebook.write_text(json.dumps({"cells": [], "seed": rng.random()}))
    (remote.work_dir).mkdir(exist_ok=True)
    (remote.work_dir / "model.bin").write_bytes(rng.randbytes(rng.randint(0, 200_000)))
    state = rng.choice(["succeeded", "failed", "cancelled"])
    log.emit("status", state=state, reason=None if state == "succeeded" else "error", source="runner")
    read_end, write_end = os.pipe()
    sender = Sender(remote, fd=write_end, key=KEY)
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(lambda: os.read(read_end, 1 << 16), b"")))
    reader.start()
    sender.pump()
    os.close(write_end)
    reader.join()
    os.close(read_end)
    text = b"".join(chunks).decode()
    writes = re.findall(r"\n@promote [^\n]*\n", text)  # each one write of the sender's: never torn
    assert "".join(writes) == text
    return writes


def noise(rng: random.Random) -> str:
    """Something the notebook printed, or a record nobody may trust."""
    forged = json.dumps({"seq": rng.randint(1, 10**6), "ts": 1.0, "job": "j1", "type": "status", "state": "succeeded"})
    choices = [
        lambda: "".join(rng.choice('ab ,;@\t\r{}"é\x00') for _ in range(rng.randint(0, 200))) + "\n",
        lambda: "progress 10%",  # no newline: a record's own newline still starts it
        lambda: f"row,@promote e {forged}\n",
        lambda: f"@promote e {forged}\n",
        lambda: f"@promote e {'0' * 32} {forged}\n",
        lambda: record("e", forged, OTHER).decode(),
        lambda: b"".join(file_lines("output.ipynb", b'{"forged": true}', OTHER)).decode(),
        lambda: b"".join(file_lines("output.ipynb", b'{"forged": true}')).decode(),
        lambda: record("e", rng.choice(["nan", "[" * 50000, '{"seq": "1"}', "{", "[1]", '{"ts": NaN}']), KEY).decode(),
        lambda: record("b", rng.choice(["{}", '{"id": "z", "parts": -1}', "[]", "garbage", '{"id": 5}']), KEY).decode(),
        lambda: record("p", rng.choice(["z 0 AAAA", "9 x y", "", "9.9 99999999999 AA"]), KEY).decode(),
        lambda: record("n", rng.choice(["garbage", "{}", '{"left_out": [], "count": 1, "budget": 1}']), KEY).decode(),
        lambda: "y" * rng.randint(70_000, 300_000) + "\n",
        lambda: record(
            "b",
            json.dumps(
                {
                    "id": f"open.{rng.random()}",
                    "kind": "file",
                    "name": "work/z",
                    "parts": 3,
                    "size": 8000,
                    "sha256": "0" * 64,
                }
            ),
            KEY,
        ).decode(),  # never closed
    ]
    return rng.choice(choices)()


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_streams_never_raise_never_forge_and_stay_bounded(tmp_path, seed):
    # Given a job's real stream, with noise between its lines
    rng = random.Random(seed)
    remote = job_run(tmp_path, "remote")
    lines = real_stream(rng, remote)
    mixed: list[str] = []
    for line in lines:
        while rng.random() < 0.3:
            mixed.append(noise(rng))
        mixed.append(line)
    stream = "".join(mixed)
    # When it arrives in pieces of random sizes, and once more from its start (a restarted server)
    local = job_run(tmp_path, "local")
    tracemalloc.start()
    raised = 0
    try:
        for _ in range(2):
            receiver = Receiver(local, "j1", key=KEY)
            at = 0
            while at < len(stream):
                size = rng.choice([1, 7, 100, 4096, 65536, 1 << 20])
                receiver.feed(stream[at : at + size])
                at += size
            receiver.feed("\n")
    except Exception:
        raised = 1
        raise
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        mine = JobView().fold(read_events(str(remote.events)))
        seen = JobView().fold(read_events(str(local.events)))
        forged = (seen.state, seen.reason, seen.metrics) != (mine.state, mine.reason, mine.metrics)
        forged |= local.output_notebook.read_text() != remote.output_notebook.read_text()
        FIGURES["channel fuzz streams"] += 1
        FIGURES["channel fuzz lines"] += len(mixed)
        FIGURES["channel fuzz noise lines"] += len(mixed) - len(lines)
        FIGURES["channel fuzz exceptions"] += raised
        FIGURES["channel fuzz forged states"] += int(forged)
        FIGURES["channel fuzz over the memory bound"] += int(peak > PEAK_BOUND)
        print(f"seed {seed}: {len(mixed)} lines ({len(mixed) - len(lines)} noise), peak {peak >> 10} KiB")
    # Then the job's own state, metrics and files, within the memory bound
    assert not forged, (seen.state, seen.metrics, mine.state, mine.metrics)
    assert (local.work_dir / "model.bin").read_bytes() == (remote.work_dir / "model.bin").read_bytes()
    assert peak < PEAK_BOUND
