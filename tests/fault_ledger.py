"""The fault suite's figures: each fault injected, each job checked against the invariants and what broke
them, each fuzz request and its answer. conftest prints them at the end of a test run; a test that sees an
invariant broken records it here before it fails, so the figures say what was seen, not what was hoped.

The invariants a job must keep whatever was done to it (Slurm's and Kubernetes' promise):
- it reaches a final state with a reason (unless it succeeded) within a bound;
- the events in the store are exactly its events file's: gap-free, each once, the same bodies;
- job.json and the store agree on its state and reason.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

FIGURES: Counter[str] = Counter()
KINDS: set[str] = set()


def injected(kind: str) -> None:
    """One fault of ``kind`` was injected (a kill -9 of the server while queued, a full disk, ...)."""
    FIGURES["faults injected"] += 1
    KINDS.add(kind)


def fuzzed(code: int) -> None:
    """One fuzz request was answered with ``code``."""
    FIGURES["fuzz requests"] += 1
    if code >= 500:
        FIGURES["500s in the fuzz"] += 1


def file_events(run_dir: str | Path, job_id: str) -> list[dict[str, Any]]:
    """The events a job's EventLogs wrote (lines another writer appended are not the job's)."""
    events = []
    for line in (Path(run_dir) / "events.jsonl").read_bytes().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("job") == job_id and "ts" in event:
            events.append(event)
    return events


def check_job(
    call: Any, job_id: str, bound_s: float, states: tuple[str, ...] | None = None, prepared: bool = True
) -> dict[str, Any]:
    """Wait up to ``bound_s`` for ``job_id`` to be final (``call`` is a live server's ``call``), then check
    the invariants; returns its record. ``states``: the final states the fault allows; ``prepared``: whether
    the job has a run directory (a job refused or cancelled before it was prepared has none)."""
    FIGURES["jobs checked"] += 1
    deadline = time.time() + bound_s
    while (record := call("GET", "jobs", job_id))["state"] not in ("succeeded", "failed", "cancelled"):
        if time.time() > deadline:
            FIGURES["jobs left non-terminal"] += 1
            raise AssertionError(f"job {job_id} is still {record['state']} after {bound_s:.0f} s: {record}")
        time.sleep(0.3)
    if record["state"] != "succeeded" and not record.get("reason"):
        FIGURES["jobs ended without a reason"] += 1
        raise AssertionError(f"job {job_id} ended {record['state']} without a reason: {record}")
    time.sleep(1.0)  # what the runner wrote after its final event (a last pulse) is stored by now, or never
    stored = call("GET", "jobs", job_id, "events")["events"]
    seqs = [e["seq"] for e in stored]
    FIGURES["events duplicated"] += len(seqs) - len(set(seqs))
    assert record.get("run_dir") or not prepared, f"job {job_id}: the store lost its run directory: {record}"
    if record.get("run_dir"):
        written = file_events(record["run_dir"], job_id)
        lost = {e["seq"] for e in written} - set(seqs)
        FIGURES["events lost"] += len(lost)
        assert not lost, f"job {job_id}: events in its file but not in the store: {sorted(lost)}"
        strays = set(seqs) - {e["seq"] for e in written}
        assert not strays, f"job {job_id}: events in the store but not in its file: {sorted(strays)}"
        assert [e for e in stored if e["seq"] in {w["seq"] for w in written}] == written
        on_disk = json.loads((Path(record["run_dir"]) / "job.json").read_text())
        if (on_disk["state"], on_disk.get("reason")) != (record["state"], record.get("reason")):
            FIGURES["job.json disagreeing with the store"] += 1
            raise AssertionError(f"job {job_id}: job.json says {on_disk['state']}, the store {record['state']}")
    assert seqs == list(range(1, len(seqs) + 1)), f"job {job_id}: stored seqs are not 1..n: {seqs}"
    if states is not None:
        assert record["state"] in states, record
    return record


def summary() -> list[str]:
    """The figures as lines, zeros included where a fault could have broken something."""
    if not FIGURES:
        return []
    keys = (
        "faults injected",
        "jobs checked",
        "jobs left non-terminal",
        "jobs ended without a reason",
        "events lost",
        "events duplicated",
        "job.json disagreeing with the store",
        "fuzz requests",
        "500s in the fuzz",
    )
    lines = [f"{key}: {FIGURES[key]}" for key in keys]
    lines += [f"{key}: {count}" for key, count in sorted(FIGURES.items()) if key not in keys]  # e.g. the channel fuzz
    lines.append("fault kinds: " + ", ".join(sorted(KINDS)))
    return lines
