"""End to end as a user runs it (the rig of scripts/rig.sh): an unprivileged account, the package installed
from the built wheel into that user's own virtualenv, the notebook's kernel in a separate virtualenv, a
project folder below the home directory whose name has a space and non-ASCII characters, Jupyter started
there without ``root_dir`` or ``--allow-root``, Docker as a member of the ``docker`` group, Slurm jobs
submitted by that user. Nothing here runs the code under test as root.
"""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import NOTEBOOKS, docker_ready

RIG_USER = os.environ.get("PROMOTE_RIG_USER", "promote-user")
TARGETS = ("local", "docker", "slurm", "ray", "kubernetes")
PROJECT = NOTEBOOKS / "project"
PREFLIGHT = NOTEBOOKS / "preflight"
ACTIVATE = "source ~/.venvs/jupyter/bin/activate"


def as_user(script: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """``script`` in a login shell of the rig's user (their HOME, PATH and groups, nothing of root's)."""
    return subprocess.run(
        ["runuser", "-l", RIG_USER, "-c", script], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="module")
def user() -> pwd.struct_passwd:
    try:
        account = pwd.getpwnam(RIG_USER)
    except KeyError:
        pytest.fail(f"no account {RIG_USER}: run scripts/rig.sh (as root)")
    if not (Path(account.pw_dir) / ".venvs" / "jupyter" / "bin" / "jupyter").exists():
        pytest.fail(f"{RIG_USER} has no ~/.venvs/jupyter: run scripts/rig.sh (as root)")
    return account


def snapshot(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def new_project(user: pwd.struct_passwd, name: str, *sources: Path) -> Path:
    """A folder ``~/my projects ñ/<name> é`` of the user's, with the given files, notebooks on the user's kernel."""
    folder = Path(user.pw_dir) / "my projects ñ" / f"{name} é"
    done = as_user(f"rm -rf {shlex.quote(str(folder))} && mkdir -p {shlex.quote(str(folder))}")
    assert done.returncode == 0, done.stderr
    # the files are put there by the test (the checkout may be unreadable to the user), then handed over
    for source in sources:
        if source.is_dir():
            shutil.copytree(source, folder, dirs_exist_ok=True)
        else:
            shutil.copy(source, folder)
    for path in [folder, *folder.rglob("*")]:
        os.chown(path, user.pw_uid, user.pw_gid)
    for notebook in folder.glob("*.ipynb"):  # the user's own kernelspec, as their notebooks name it
        nb = json.loads(notebook.read_text())
        nb["metadata"]["kernelspec"] = {
            "name": "project-kernel",
            "display_name": "Project (venv)",
            "language": "python",
        }
        notebook.write_text(json.dumps(nb, indent=1))  # rewritten in place: still the user's file
    return folder


def owned_by(run_dir: Path, uid: int) -> list[str]:
    """Paths under ``run_dir`` (itself included) NOT owned by ``uid``."""
    return [str(p) for p in [run_dir, *run_dir.rglob("*")] if os.lstat(p).st_uid != uid]


def check_run(run_dir: Path, user: pwd.struct_passwd, scale: float = 2) -> dict[str, Any]:
    record = json.loads((run_dir / "job.json").read_text())
    assert record["state"] == "succeeded", record
    assert sorted(a["path"] for a in record["artifacts"]) == ["out/summary.json", "result.txt"]
    assert (run_dir / "work" / "result.txt").read_text() == f"total={6.5 * scale}\n"
    assert owned_by(run_dir, user.pw_uid) == []
    return record


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("target", TARGETS)
def test_the_cli_promotes_a_notebook_with_files_beside_it(user, target, slurm_cluster, ray_cluster, kube_cluster):
    if target in ("docker", "kubernetes"):
        docker_ready()
    # Given a project folder of the user's, with a notebook that reads data.csv and config/labels.txt
    project = new_project(user, f"cli {target}", PROJECT)
    before = snapshot(project)
    # When the user promotes it from that folder, with their own venv activated
    push = " --push" if target == "kubernetes" else ""  # to the cluster's registry, which its node pulls from
    done = as_user(
        f"{ACTIVATE} && cd {shlex.quote(str(project))} && jupyter promote run files.ipynb -p scale 2 --target {target}"
        + push
    )
    # Then the job succeeded and what it wrote is in its run directory, owned by the user, listed as artifacts
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    output = done.stdout + done.stderr
    run_dir = Path(re.search(r"run directory: (.+)", output).group(1).strip())
    assert run_dir.is_relative_to(user.pw_dir)
    check_run(run_dir, user)
    assert "artifacts: 2 file(s)" in output
    # And the user's folder is exactly as it was
    assert snapshot(project) == before
    status = as_user(f"{ACTIVATE} && jupyter promote status {shlex.quote(str(run_dir))}")
    assert status.returncode == 0 and "artifacts (2" in status.stdout and "out/summary.json" in status.stdout, status


@pytest.mark.slow
def test_check_flags_a_notebook_saved_out_of_order_before_anything_is_submitted(user):
    project = new_project(user, "check", PREFLIGHT / "makemore_bigrams.ipynb")
    cd = f"{ACTIVATE} && cd {shlex.quote(str(project))}"
    # When the user checks it
    done = as_user(f"{cd} && jupyter promote check makemore_bigrams.ipynb")
    # Then the cells run out of order and the name used before it is defined are named, with their cells
    assert done.returncode == 1, done
    assert "ran before" in done.stdout and "'P'" in done.stdout, done.stdout
    # And run --strict refuses with one line, writing nothing
    runs = Path(user.pw_dir) / ".local/share/jupyter/promote/runs"
    before = sorted(runs.iterdir()) if runs.is_dir() else []
    done = as_user(f"{cd} && jupyter promote run makemore_bigrams.ipynb --strict")
    assert done.returncode == 2 and "--strict" in done.stderr.strip().splitlines()[-1], done
    assert (sorted(runs.iterdir()) if runs.is_dir() else []) == before


@pytest.mark.slow
def test_an_unknown_kernel_is_one_line_listing_the_users_kernels(user):
    project = new_project(user, "kernel", PROJECT)
    done = as_user(f"{ACTIVATE} && cd {shlex.quote(str(project))} && jupyter promote run files.ipynb --kernel nope")
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "nope" in lines[0] and "project-kernel" in lines[0], done.stderr


class UserServer:
    """``jupyter lab`` started by the rig's user in a folder, with a token; requests as a browser makes them."""

    def __init__(self, folder: Path, log: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = secrets.token_hex(16)
        command = (
            f"{ACTIVATE} && cd {shlex.quote(str(folder))} && exec jupyter lab --no-browser --ip=127.0.0.1 "
            f"--port={self.port} --IdentityProvider.token={self.token}"
        )
        self.log = log
        self.proc = subprocess.Popen(
            ["runuser", "-l", RIG_USER, "-c", command],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                self.call("GET", "/api/status")
                return
            except (OSError, urllib.error.URLError):
                assert self.proc.poll() is None, log.read_text()[-3000:]
                time.sleep(0.5)
        raise AssertionError("the user's Jupyter server did not start: " + log.read_text()[-3000:])

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            data = response.read()
            return json.loads(data) if response.headers.get("Content-Type", "").startswith("application/json") else data

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


@pytest.fixture
def user_server(user, tmp_path) -> Iterator[tuple[UserServer, Path]]:
    project = new_project(user, "server", PROJECT)
    server = UserServer(project, tmp_path / "jupyter-lab.log")
    try:
        yield server, project
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_users_server_promotes_on_every_target_through_the_rest_api(
    user, user_server, slurm_cluster, ray_cluster, kube_cluster
):
    docker_ready()
    server, project = user_server
    before = snapshot(project)
    # Given the kernel's image in the Kubernetes cluster's registry (the server pushes nothing; its node pulls)
    pushed = as_user(f"{ACTIVATE} && jupyter promote build --kernel project-kernel --push")
    assert pushed.returncode == 0 and "@sha256:" in pushed.stdout + pushed.stderr, pushed
    # Given the dialog's preview of the notebook, which offers the user's own kernel
    preview = server.call("POST", "/jupyter-promote/freeze", {"notebook": "files.ipynb"})
    assert preview["kernel"] == "project-kernel" and "project-kernel" in {k["name"] for k in preview["kernels"]}
    assert preview["check"]["findings"] == []
    # When the notebook is promoted to each target
    ids = {
        t: server.call(
            "POST", "/jupyter-promote/jobs", {"notebook": "files.ipynb", "target": t, "parameters": {"scale": 2}}
        )["id"]
        for t in TARGETS
    }
    records = {}
    deadline = time.monotonic() + 1200
    while len(records) < len(ids) and time.monotonic() < deadline:
        for target, job_id in ids.items():
            record = server.call("GET", f"/jupyter-promote/jobs/{job_id}")
            if record["state"] in ("succeeded", "failed", "cancelled"):
                records[target] = record
        time.sleep(1)
    assert set(records) == set(ids), f"unfinished: {set(ids) - set(records)}"
    # Then each succeeded, as the user, with its artifacts listed and downloadable
    for target, record in records.items():
        assert record["state"] == "succeeded", (target, record)
        assert record["notebook_path"] == "files.ipynb"
        check_run(Path(record["run_dir"]), user)
        data = server.call("GET", f"/jupyter-promote/jobs/{record['id']}/artifacts/out/summary.json")
        assert json.loads(data)["total"] == 13.0
    # And the user's folder is unchanged
    assert snapshot(project) == before
