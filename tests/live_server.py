"""A real ``jupyter server`` in its own process, on a free port of 127.0.0.1, with token auth."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

from conftest import BIN

TOKEN = "promote-test-token"


class Server:
    def __init__(self, root, store, runs, log, *extra_args):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.args = [
            str(BIN / "jupyter"),
            "server",
            "--no-browser",
            "--allow-root",
            f"--port={self.port}",
            "--ServerApp.ip=127.0.0.1",
            f"--IdentityProvider.token={TOKEN}",
            f"--ServerApp.root_dir={root}",
            # the store: an SQLite file, or a database server's URL
            f"--PromoteExtension.{'db_url' if '://' in str(store) else 'store_path'}={store}",
            *extra_args,
        ]
        self.url = f"http://127.0.0.1:{self.port}"
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
        url = f"{self.url}/jupyter-promote/" + "/".join(path)
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"token {TOKEN}"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


@contextlib.contextmanager
def serving(tmp, notebooks):
    """A live server over a root holding ``notebooks`` (copied), stopped at the end; its log must hold no
    traceback (an error users can cause is answered, never raised)."""
    root = tmp / "root"
    root.mkdir()
    for notebook in notebooks:
        shutil.copy(notebook, root / notebook.name)
    with open(tmp / "server.log", "wb") as log:
        live = Server(root, tmp / "jobs.sqlite", tmp / "runs", log)
        live.start()
        try:
            yield live
        finally:
            live.stop()
    assert b"Traceback" not in (tmp / "server.log").read_bytes(), (tmp / "server.log").read_text()[-4000:]
