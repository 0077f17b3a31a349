"""A real ``jupyter server`` stopped and started again while a job runs: the job is watched again where
its events left off, nothing is lost or stored twice, and it can still be cancelled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from conftest import BIN, NOTEBOOKS

TOKEN = "promote-test-token"


class Server:
    def __init__(self, root, store, runs, log):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.args = [str(BIN / "jupyter"), "server", "--no-browser", "--allow-root", f"--port={self.port}",
                     "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
                     f"--PromoteExtension.store_path={store}"]  # fmt: skip
        self.env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(runs)}
        self.log = log
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, env=self.env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                self.call("GET", "targets")
                return
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise AssertionError("jupyter server did not start")

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def call(self, method, *path, body=None):
        url = f"http://127.0.0.1:{self.port}/jupyter-promote/" + "/".join(path)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


def wait_for(predicate, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


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
            record = wait_for(lambda: (r := server.call("GET", "jobs", job_id))["state"] == "cancelled" and r, 60, "cancel")
            assert record["reason"] == "cancelled"
            events = server.call("GET", "jobs", job_id, "events")["events"]
            seqs = [e["seq"] for e in events]
            assert seqs == list(range(1, len(seqs) + 1))  # none lost, none twice
            assert events[: len(before)] == before
        finally:
            server.stop()
    assert sys.executable
