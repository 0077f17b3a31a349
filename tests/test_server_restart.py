"""A real ``jupyter server`` stopped and started again while a job runs: the job is watched again where
its events left off, nothing is lost or stored twice, and it can still be cancelled.
"""

from __future__ import annotations

import shutil
import sys

import fault_ledger
from conftest import NOTEBOOKS, wait_for
from live_server import Server


def test_restart_resumes_watching_a_running_job(tmp_path, store_url):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "hang.ipynb", root / "hang.ipynb")
    with open(tmp_path / "server.log", "wb") as log:
        server = Server(root, store_url, tmp_path / "runs", log)
        server.start()
        try:
            job_id = server.call("POST", "jobs", body={"notebook": "hang.ipynb"})["id"]
            wait_for(lambda: server.call("GET", "jobs", job_id)["state"] == "running", 90, "the job to run")
            before = server.call("GET", "jobs", job_id, "events")["events"]
        finally:
            server.stop()
        # the job's runner lives in its own session: it outlives the server
        fault_ledger.injected("server stopped and started while running")
        server.start()
        try:
            assert server.call("GET", "jobs", job_id)["state"] == "running"
            heartbeat = max(e["seq"] for e in before)
            wait_for(
                lambda: max(e["seq"] for e in server.call("GET", "jobs", job_id, "events")["events"]) > heartbeat + 1,
                30,
                "events after the restart",
            )
            server.call("DELETE", "jobs", job_id)
            record = fault_ledger.check_job(server.call, job_id, 60, states=("cancelled",))
            assert record["reason"] == "cancelled"
            events = server.call("GET", "jobs", job_id, "events")["events"]
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1))  # none lost, none twice
            assert events[: len(before)] == before
        finally:
            server.stop()
    assert sys.executable


def test_a_second_server_on_the_same_store_leaves_the_first_ones_jobs_alone(tmp_path, store_url):
    # Given a user's first server with a running job and a sweep task waiting for its slot
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "hang.ipynb", root / "hang.ipynb")
    store, runs = store_url, tmp_path / "runs"
    with open(tmp_path / "first.log", "wb") as first_log, open(tmp_path / "second.log", "wb") as second_log:
        first = Server(root, store, runs, first_log)
        second = Server(root, store, runs, second_log)
        first.start()
        try:
            sweep = first.call(
                "POST", "jobs", body={"notebook": "hang.ipynb", "sweep": {"n": [1, 2]}, "max_parallel": 1}
            )
            running, waiting = sweep["ids"]
            wait_for(lambda: first.call("GET", "jobs", running)["state"] == "running", 90, "the first task to run")
            # When a second server starts on the same store (a second `jupyter lab`)
            fault_ledger.injected("a second server on the same store")
            second.start()
            try:
                # Then it neither fails the waiting task as lost nor takes over the running one
                for job_id, state in ((running, "running"), (waiting, "pending")):
                    assert second.call("GET", "jobs", job_id)["state"] == state
                    assert first.call("GET", "jobs", job_id)["state"] == state
                    assert [t["state"] for t in first.call("GET", "jobs", job_id)["transitions"]].count("failed") == 0
            finally:
                second.stop()
            # And the first server still runs its sweep to the end
            first.call("DELETE", "jobs", running)
            record = wait_for(
                lambda: (r := first.call("GET", "jobs", waiting))["state"] == "running" and r, 120, "task 2"
            )
            first.call("DELETE", "jobs", waiting)
            for job_id in (running, waiting):
                fault_ledger.check_job(first.call, job_id, 60, states=("cancelled",))
            assert record["sweep"]["index"] == 1
        finally:
            first.stop()


def test_a_server_killed_outright_picks_its_jobs_up_again(tmp_path, store_url):
    # Given a job running under a server that is then killed with SIGKILL (no shutdown code runs)
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "hang.ipynb", root / "hang.ipynb")
    with open(tmp_path / "server.log", "wb") as log:
        server = Server(root, store_url, tmp_path / "runs", log)
        server.start()
        job_id = server.call("POST", "jobs", body={"notebook": "hang.ipynb", "parameters": {"seconds": 12}})["id"]
        wait_for(lambda: server.call("GET", "jobs", job_id)["state"] == "running", 90, "the job to run")
        server.proc.kill()
        server.proc.wait()
        fault_ledger.injected("server SIGKILL while running")
        # When it is started again
        server.start()
        try:
            # Then the job is followed to its end, every event stored once and in order
            record = fault_ledger.check_job(server.call, job_id, 120, states=("succeeded",))
            assert record["reason"] is None
        finally:
            server.stop()


def test_a_row_planted_in_the_store_is_left_alone_by_the_restarted_server(tmp_path):
    # Given a server's store holding a running job's row that names another uid's run directory, whose job.json
    # points at a process of the server's user that is no job (what anyone sharing a hub's database can write)
    import json
    import os
    import subprocess
    import time
    import urllib.error

    import pytest

    from jupyter_promote.models import JobRecord, JobState
    from jupyter_promote.processes import STARTED_KEY, start_time
    from jupyter_promote.server.store import JobStore

    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    root, store_path = tmp_path / "root", tmp_path / "store" / "jobs.sqlite"
    root.mkdir()
    bystander = subprocess.Popen(["sleep", "60"])
    planted = tmp_path / "mallory" / "run"
    planted.mkdir(parents=True)
    record = JobRecord(
        id="0badc0ffee01",
        notebook="/nowhere.ipynb",
        target="local",
        kernel="python3",
        state=JobState.RUNNING,
        created_at=time.time(),
        handle={"pid": bystander.pid, STARTED_KEY: start_time(bystander.pid)},
    )
    data = record.to_json()
    data["monitor"]["heartbeat_s"] = data["monitor"]["stall_timeout_s"] = 0.001
    (planted / "job.json").write_text(json.dumps(data))
    (planted / "events.jsonl").write_text("")
    for path in (planted, planted / "job.json", planted / "events.jsonl"):
        os.chown(path, 65534, 65534)
    store = JobStore(str(store_path))
    store.put_job(record, str(planted))
    store.close()
    try:
        with open(tmp_path / "server.log", "wb") as log:
            server = Server(root, str(store_path), tmp_path / "runs", log)
            # When the server starts (it reconciles) and the job is cancelled through the API
            server.start()
            try:
                with pytest.raises(urllib.error.HTTPError) as refused:
                    server.call("DELETE", "jobs", "0badc0ffee01")
                state = server.call("GET", "jobs", "0badc0ffee01")["state"]
            finally:
                server.stop()
        # Then the process is never signalled, the row is left as it was, and the server said why, one line each
        lines = [
            line
            for line in (tmp_path / "server.log").read_text().splitlines()
            if "jupyter-promote: job 0badc0ffee01" in line
        ]
        print(refused.value.code, state, lines)
        assert bystander.poll() is None
        assert refused.value.code == 403 and state == "running"
        assert lines and all("left alone" in line for line in lines)
    finally:
        bystander.kill()
        bystander.wait()
