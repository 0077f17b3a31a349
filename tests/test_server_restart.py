"""A real ``jupyter server`` stopped and started again while a job runs: the job is watched again where
its events left off, nothing is lost or stored twice, and it can still be cancelled.
"""

from __future__ import annotations

import shutil
import sys

from conftest import NOTEBOOKS, wait_for
from live_server import Server


def test_restart_resumes_watching_a_running_job(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    shutil.copy(NOTEBOOKS / "hang.ipynb", root / "hang.ipynb")
    with open(tmp_path / "server.log", "wb") as log:
        server = Server(root, tmp_path / "jobs.sqlite", tmp_path / "runs", log)
        server.start()
        try:
            job_id = server.call("POST", "jobs", body={"notebook": "hang.ipynb"})["id"]
            wait_for(lambda: server.call("GET", "jobs", job_id)["state"] == "running", 90, "the job to run")
            before = server.call("GET", "jobs", job_id, "events")["events"]
        finally:
            server.stop()
        # the job's runner lives in its own session: it outlives the server
        server.start()
        try:
            assert server.call("GET", "jobs", job_id)["state"] == "running"
            heartbeat = max(e["seq"] for e in before)
            wait_for(lambda: max(e["seq"] for e in server.call("GET", "jobs", job_id, "events")["events"]) > heartbeat + 1,
                     30, "events after the restart")  # fmt: skip
            server.call("DELETE", "jobs", job_id)
            record = wait_for(
                lambda: (r := server.call("GET", "jobs", job_id))["state"] == "cancelled" and r, 60, "cancel"
            )
            assert record["reason"] == "cancelled"
            events = server.call("GET", "jobs", job_id, "events")["events"]
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1))  # none lost, none twice
            assert events[: len(before)] == before
        finally:
            server.stop()
    assert sys.executable
