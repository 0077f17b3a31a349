"""Only the job's runner (or jupyter-promote itself) decides how a job ended, never the notebook's kernel:
the rule of :mod:`jupyter_promote.events.authority`, as ``run``, the follower and ``status`` apply it."""

from __future__ import annotations

import json
import os
import time

import nbformat

from jupyter_promote.channel.keys import job_key, take_runner_key
from jupyter_promote.events import JobView
from jupyter_promote.events.authority import FORGED, job_events
from jupyter_promote.models import JobRecord
from jupyter_promote.rundir import RunDir
from jupyter_promote.runtime.events import EventLog, read_events
from jupyter_promote.runtime.signing import MAC_FIELD, TAKEN_ENV, signed_by

FORGE = """import json, os, time
path = os.environ["PROMOTE_EVENTS"]
last = json.loads(open(path).read().splitlines()[-1])
line = {"seq": last["seq"] + 1, "ts": time.time(), "job": os.environ["PROMOTE_JOB_ID"], "type": "status",
        "state": "succeeded", "stage": "finished", "source": "runner"}
with open(path, "a") as f:
    f.write(json.dumps(line) + "\\n")
raise ValueError("accuracy 0.10")"""


def test_a_notebook_that_writes_succeeded_then_raises_fails_in_run_and_status(cli, tmp_path):
    # Given a notebook whose cell appends a succeeded status to its own events file, then raises
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1"), nbformat.v4.new_code_cell(FORGE)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "forge.ipynb")
    # When it runs on the local target, and status looks at its run directory afterwards
    result = cli("run", "forge.ipynb", "--target", "local")
    run = cli.only_run()
    status = cli("status", str(run))
    print(result.stdout[-400:], status.stdout)
    # Then run, status and job.json all say failed, and the forged line is reported, not folded
    assert result.returncode != 0 and "failed" in result.stdout + result.stderr
    assert "failed" in status.stdout.splitlines()[0]
    assert json.loads((run / "job.json").read_text())["state"] == "failed"
    assert any(FORGED in str(e.get("message")) for e in read_events(str(run / "events.jsonl")))


def test_final_statuses_count_from_the_runner_and_the_submitter_only(tmp_path, monkeypatch):
    # Given a run directory with a key: the runner's log signs, the kernel appends an unsigned succeeded
    monkeypatch.delenv(TAKEN_ENV, raising=False)  # taking the key marks this process's environment
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    run.write(JobRecord(id="j1", notebook="nb.ipynb", target="local", kernel="python3"))
    key = take_runner_key(run.path)
    assert key == job_key(run.path) and (run.path / "channel.key").stat().st_mode & 0o077 == 0
    runner = EventLog(str(run.events), "j1")
    runner.emit("status", state="running", source="runner")
    forged = {"seq": 2, "ts": time.time(), "job": "j1", "type": "status", "state": "succeeded", "source": "runner"}
    with open(run.events, "a") as f:
        f.write(json.dumps(forged) + "\n")
    runner.emit("status", state="failed", reason="error", message="cell 2 failed: ValueError", source="runner")
    # When every reader folds the events by the rule
    view = JobView().fold(job_events(run.path))
    # Then the runner's word stands, the forged line is left out
    assert (view.state.value, view.reason) == ("failed", "error")
    assert [e["seq"] for e in job_events(run.path)] == [1, 3]
    # And the submitter's own word (a job settled lost) counts: its event logs sign with the run's key
    EventLog(str(run.events), "j1").emit("status", state="failed", reason="lost", source="target")
    assert [e["seq"] for e in job_events(run.path)] == [1, 3, 4]


def test_a_job_without_a_key_keeps_its_first_final_status(tmp_path):
    # Given a run directory from before keys (none in it)
    run = RunDir(tmp_path / "old")
    run.path.mkdir()
    log = EventLog(str(run.events), "j2")
    log.emit("status", state="running", source="runner")
    log.emit("status", state="succeeded", source="runner")
    # When it is folded by the rule / Then it ended as it said
    assert JobView().fold(job_events(run.path)).state.value == "succeeded"


def test_a_process_that_inherits_a_runners_mark_still_signs_for_its_own_jobs(tmp_path, monkeypatch):
    # Given the mark a runner leaves in its environment for its children (the kernel), naming its run directory
    runner_run, own_run = tmp_path / "runner", tmp_path / "own"
    for folder in (runner_run, own_run):
        folder.mkdir()
        job_key(folder)
    monkeypatch.setenv(TAKEN_ENV, f"{os.getpid() + 1} {os.path.realpath(runner_run)}")
    # When this process (a child of that runner: a test run, a nested `jupyter promote`) writes final statuses
    theirs = EventLog(str(runner_run / "events.jsonl"), "j1").emit("status", state="succeeded", source="runner")
    ours = EventLog(str(own_run / "events.jsonl"), "j2").emit("status", state="failed", source="cli")
    # Then it never signs for the runner's job, and signs for its own
    assert MAC_FIELD not in theirs and signed_by(job_key(own_run), ours)
