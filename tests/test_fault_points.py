"""Faults injected at each point of a job's life against a real server, runner and target: the server killed
with SIGKILL while the job is prepared, while it starts, as it finishes, and while it waits in Slurm's queue;
the runner killed while its kernel starts, while a cell runs and as it finishes; the runner stopped (SIGSTOP)
for good and for a while. After each, the invariants of tests/fault_ledger.py hold.

A kernel whose interpreter takes a few seconds to start (a wrapper that sleeps, as a cold node or a big
environment does) stretches each point of a job's life long enough to hit it: the freeze (which asks the
interpreter), the kernel's start and the environment recorded as the job ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fault_ledger
import pytest
from conftest import NOTEBOOKS, SMALL_KERNEL, wait_for
from live_server import Server

SLOW_START_S = 6


@pytest.fixture
def slow_kernel(tmp_path: Path) -> dict[str, str]:
    """A kernelspec ``slow`` whose interpreter starts ``SLOW_START_S`` seconds late; the environment that shows it."""
    wrapper = tmp_path / "slow-python"
    wrapper.write_text(f'#!/bin/sh\nsleep {SLOW_START_S}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    spec = tmp_path / "share" / "kernels" / "slow"
    spec.mkdir(parents=True)
    argv = [str(wrapper), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "slow", "language": "python"}))
    # no freeze cache: every look at the kernel's environment starts it, slowly (the runner's last look too,
    # which holds the job at the "finishing" point)
    return {"JUPYTER_PATH": str(tmp_path / "share"), "JUPYTER_PROMOTE_NO_FREEZE_CACHE": "1"}


class Live:
    """A live server over a root holding hang.ipynb and success.ipynb, started and killed at will."""

    def __init__(self, tmp: Path, env: dict[str, str]) -> None:
        self.root = root = tmp / "root"
        root.mkdir()
        for name in ("hang.ipynb", "success.ipynb"):
            shutil.copy(NOTEBOOKS / name, root / name)
        self.log = open(tmp / "server.log", "ab")  # noqa: SIM115 (closed by stop)
        self.server = Server(root, tmp / "jobs.sqlite", tmp / "runs", self.log)
        self.server.env.update(env)

    def call(self, *args, **kwargs):
        return self.server.call(*args, **kwargs)

    def kill(self) -> None:
        self.server.proc.kill()  # SIGKILL: no shutdown code runs
        self.server.proc.wait()

    def events(self, job_id: str) -> list[dict]:
        return self.call("GET", "jobs", job_id, "events")["events"]

    @contextlib.contextmanager
    def running(self) -> Iterator[Live]:
        """The server started; stopped (unless a test killed it) and its log closed after."""
        self.server.start()
        try:
            yield self
        finally:
            if self.server.proc.poll() is None:
                self.server.stop()
            self.log.close()

    def on_kernel(self, kernel: str) -> None:
        """The root's notebooks name ``kernel``."""
        for name in ("hang.ipynb", "success.ipynb"):
            nb = json.loads((self.root / name).read_text())
            nb["metadata"]["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
            (self.root / name).write_text(json.dumps(nb))

    def start_sleeping(self, target: str, timeout: float, **body) -> str:
        """A job of hang.ipynb on ``target``, once its sleeping cell runs: its id."""
        job_id = self.call("POST", "jobs", body={"notebook": "hang.ipynb", "target": target, **body})["id"]
        wait_for(
            lambda: any(e["type"] == "cell" and "sleep" in str(e.get("source")) for e in self.events(job_id)),
            timeout,
            "the job's cell to run",
        )
        return job_id

    def killed_and_restarted(self, job_id: str, what: str) -> dict:
        """SIGKILL the server while ``job_id`` runs elsewhere, start it again: the job succeeds, every event
        relayed from the job's log once (read again from its start), the output notebook in."""
        self.kill()
        fault_ledger.injected(what)
        self.server.start()
        record = fault_ledger.check_job(self.call, job_id, 180, states=("succeeded",))
        remote = [e["remote_seq"] for e in self.events(job_id) if "remote_seq" in e]
        assert remote == list(range(1, len(remote) + 1))
        assert Path(record["run_dir"], "output.ipynb").is_file()
        return record

    def runner_pid(self, job_id: str) -> int:
        record = wait_for(lambda: (r := self.call("GET", "jobs", job_id)).get("handle") and r, 60, "a handle")
        return int(record["handle"]["pid"])


@pytest.fixture
def live(tmp_path, slow_kernel):
    with Live(tmp_path, slow_kernel).running() as live:
        yield live


def stage_of(live: Live, job_id: str) -> str | None:
    stages = [e.get("stage") for e in live.events(job_id) if e["type"] == "status"]
    return stages[-1] if stages else None


# ---- the server killed outright ---------------------------------------------------------------------------
def test_server_killed_while_the_job_is_prepared(live):
    # Given a job whose environment is being frozen
    job_id = live.call("POST", "jobs", body={"notebook": "hang.ipynb", "kernel": "slow"})["id"]
    wait_for(lambda: stage_of(live, job_id) == "freezing", 30, "the freeze to start")
    # When the server is killed outright and started again
    live.kill()
    fault_ledger.injected("server SIGKILL while preparing")
    live.server.start()
    # Then the job is failed as lost, in its own run directory too, every event stored once
    record = fault_ledger.check_job(live.call, job_id, 60, states=("failed",))
    assert record["reason"] == "lost" and "before the job was submitted" in record["message"]
    assert record["run_dir"] and Path(record["run_dir"], "events.jsonl").is_file()


def test_server_killed_while_the_kernel_starts(live):
    # Given a job submitted whose kernel is starting
    job_id = live.call("POST", "jobs", body={"notebook": "hang.ipynb", "kernel": "slow", "parameters": {"seconds": 2}})[
        "id"
    ]
    wait_for(lambda: live.call("GET", "jobs", job_id)["state"] == "running", 60, "the runner to start")
    assert not any(e["type"] == "cell" for e in live.events(job_id))
    live.kill()
    fault_ledger.injected("server SIGKILL while the kernel starts")
    live.server.start()
    # Then the job is followed again to its end
    fault_ledger.check_job(live.call, job_id, 120, states=("succeeded",))


def test_server_killed_as_the_job_finishes(live):
    # Given a job whose cells have all run and whose environment is being recorded
    job_id = live.call("POST", "jobs", body={"notebook": "hang.ipynb", "kernel": "slow", "parameters": {"seconds": 1}})[
        "id"
    ]
    wait_for(lambda: any(e["type"] == "artifacts" for e in live.events(job_id)), 90, "the cells to end")
    live.kill()
    fault_ledger.injected("server SIGKILL as the job finishes")
    live.server.start()
    record = fault_ledger.check_job(live.call, job_id, 90, states=("succeeded",))
    assert Path(record["run_dir"], "observed_env.json").is_file()


# ---- the runner killed outright -------------------------------------------------------------------------
@pytest.mark.parametrize("point", ["kernel starting", "cell running", "finishing"])
def test_runner_killed(live, point):
    # Given a job at one point of its life
    seconds = 600 if point == "cell running" else 1
    job_id = live.call(
        "POST", "jobs", body={"notebook": "hang.ipynb", "kernel": "slow", "parameters": {"seconds": seconds}}
    )["id"]
    pid = live.runner_pid(job_id)
    reached = {
        "kernel starting": lambda: live.call("GET", "jobs", job_id)["state"] == "running",
        "cell running": lambda: any(
            e["type"] == "cell" and "sleep" in str(e.get("source")) for e in live.events(job_id)
        ),
        "finishing": lambda: any(e["type"] == "artifacts" for e in live.events(job_id)),
    }[point]
    wait_for(reached, 120, point)
    # When its runner is killed with SIGKILL (the OOM killer, a node's watchdog)
    os.killpg(pid, signal.SIGKILL)
    fault_ledger.injected(f"runner SIGKILL while {point}")
    # Then the job fails, interrupted (not its notebook's doing: with --retries it would start again), within a bound
    record = fault_ledger.check_job(live.call, job_id, 60, states=("failed",))
    assert record["reason"] == "interrupted" and "SIGKILL" in record["message"], record


# ---- the runner stopped ----------------------------------------------------------------------------------
MONITOR = {"heartbeat_s": 1, "stall_timeout_s": 6, "stall_action": "alert"}  # silence limit: 6 + 3 x 1 s


def test_a_stopped_runner_is_reported_then_its_job_failed_unresponsive(live):
    # Given a running job
    job_id = live.call("POST", "jobs", body={"notebook": "hang.ipynb", "monitor": MONITOR})["id"]
    pid = live.runner_pid(job_id)
    wait_for(
        lambda: any(e["type"] == "heartbeat" and e.get("source") == "runner" for e in live.events(job_id)),
        60,
        "the runner's pulse",
    )
    # When its runner is stopped (SIGSTOP) and never continued
    os.kill(pid, signal.SIGSTOP)
    fault_ledger.injected("runner SIGSTOP")
    # Then the follower reports it, and fails the job as unresponsive, stopping it on its target
    record = fault_ledger.check_job(live.call, job_id, 60, states=("failed",))
    assert record["reason"] == "unresponsive" and "runner sent nothing" in record["message"], record
    alerts = [e for e in live.events(job_id) if e["type"] == "alert" and e["kind"] == "runner_silent"]
    assert len(alerts) == 1
    wait_for(
        lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0,
        30,
        "the stopped runner to be killed",
    )


def test_a_runner_stopped_for_a_while_only_raises_an_alert(live):
    # Given a running job with a longer stall timeout
    monitor = {**MONITOR, "stall_timeout_s": 40}
    job_id = live.call(
        "POST", "jobs", body={"notebook": "hang.ipynb", "monitor": monitor, "parameters": {"seconds": 15}}
    )["id"]
    pid = live.runner_pid(job_id)
    wait_for(
        lambda: any(e["type"] == "heartbeat" and e.get("source") == "runner" for e in live.events(job_id)),
        60,
        "the runner's pulse",
    )
    # When its runner is stopped long enough to be reported, then continued
    os.kill(pid, signal.SIGSTOP)
    fault_ledger.injected("runner SIGSTOP, then SIGCONT")
    try:
        wait_for(
            lambda: any(e["type"] == "alert" and e["kind"] == "runner_silent" for e in live.events(job_id)),
            30,
            "the silence to be reported",
        )
    finally:
        os.kill(pid, signal.SIGCONT)
    # Then the job goes on to succeed
    fault_ledger.check_job(live.call, job_id, 90, states=("succeeded",))


# ---- the server killed while its job waits in Slurm's queue ----------------------------------------------
def test_server_killed_while_the_job_is_queued_on_slurm(tmp_path, small_kernel, slurm_cluster):
    live = Live(tmp_path, small_kernel)
    for name in ("hang.ipynb", "success.ipynb"):  # on a small kernel: its venv is made on the node quickly
        nb = json.loads((NOTEBOOKS / name).read_text())
        nb["metadata"]["kernelspec"] = {"name": SMALL_KERNEL, "display_name": SMALL_KERNEL, "language": "python"}
        (live.root / name).write_text(json.dumps(nb))
    live.server.start()
    try:
        # Given the node's 2 CPUs taken by one job, and a second job waiting in the queue
        busy = live.call("POST", "jobs", body={"notebook": "hang.ipynb", "target": "slurm", "resources": {"cpus": 2}})[
            "id"
        ]
        wait_for(lambda: live.call("GET", "jobs", busy)["state"] == "running", 300, "the first job to run")
        waiting = live.call(
            "POST", "jobs", body={"notebook": "success.ipynb", "target": "slurm", "resources": {"cpus": 2}}
        )["id"]
        wait_for(lambda: any(e.get("reason") == "resources" for e in live.events(waiting)), 120, "the queue's reason")
        # When the server is killed outright and started again
        live.kill()
        fault_ledger.injected("server SIGKILL while queued (Slurm)")
        live.server.start()
        assert live.call("GET", "jobs", waiting)["state"] == "queued"
        # Then, the first cancelled, the waiting job runs to its end, followed by the new server
        live.call("DELETE", "jobs", busy)
        fault_ledger.check_job(live.call, busy, 120, states=("cancelled",))
        fault_ledger.check_job(live.call, waiting, 300, states=("succeeded",))
    finally:
        if live.server.proc.poll() is None:
            live.server.stop()
        live.log.close()
