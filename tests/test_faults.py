"""Faults and bad input (issue: no job stuck, no event lost, no 500): each finding reproduced, then fixed.

A notebook that appends a malformed line to its own events file: the line is set aside and reported as an
alert, the job's own events keep their numbering, and the job ends as it should, by the CLI and the server.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import events, job
from test_server import api, error
from test_server_home import jp_server_config, wait_final  # noqa: F401 (a fixture)

BOGUS = '{"seq":100000,"type":"status","state":"bogus"}'


def bogus_notebook(folder):
    folder.mkdir(parents=True, exist_ok=True)
    cells = [
        "import os\nwith open(os.environ['PROMOTE_EVENTS'], 'a') as f:\n    f.write(" + repr(BOGUS + "\n") + ")",
        "from jupyter_promote import report\nreport(after=1)",
    ]
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": s}
            for i, s in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "bogus.ipynb"
    path.write_text(json.dumps(nb))
    return path


def test_a_malformed_event_is_set_aside_and_the_job_ends_normally(cli, tmp_path):
    done = cli("run", str(bogus_notebook(tmp_path / "nb")))
    assert done.returncode == 0, done.stderr
    run = cli.only_run()
    assert job(run)["state"] == "succeeded" and job(run)["metrics"] == {"after": 1}
    own = [e for e in events(run) if "job" in e]
    assert [e["seq"] for e in own] == list(range(1, len(own) + 1))  # the foreign seq moved nothing
    assert any(e["type"] == "alert" and e["kind"] == "bad_event" for e in own)
    status = cli("status", str(run))
    assert status.returncode == 0 and "Traceback" not in status.stderr and "bad_event" in status.stdout


async def test_the_server_sets_a_malformed_event_aside(jp_fetch, jp_root_dir):
    bogus_notebook(jp_root_dir)
    _, body = await api(jp_fetch, "jobs", method="POST", body={"notebook": "bogus.ipynb"})
    record = await wait_final(jp_fetch, body["id"])
    assert record["state"] == "succeeded"
    _, stored = await api(jp_fetch, "jobs", body["id"], "events")
    seqs = [e["seq"] for e in stored["events"]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert any(e["type"] == "alert" and e.get("kind") == "bad_event" for e in stored["events"])


async def test_non_finite_numbers_hostile_names_and_unbounded_monitors_are_400s(jp_fetch, jp_root_dir):
    from tornado.httpclient import HTTPClientError

    bogus_notebook(jp_root_dir)
    bodies = {
        '{"notebook": "bogus.ipynb", "parameters": {"lr": NaN}}': "NaN",
        '{"notebook": "bogus.ipynb", "parameters": {"lr": -Infinity}}': "Infinity",
        '{"notebook": "bogus.ipynb", "resources": {"cpus": 1e999}}': "1e999",
        '{"notebook": "bogus.ipynb", "monitor": {"stall_timeout_s": "nan"}}': "stall_timeout_s",
        '{"notebook": "bogus.ipynb", "monitor": {"heartbeat_s": 1e-9}}': "heartbeat_s",
        '{"notebook": "bogus.ipynb", "monitor": {"window_s": 0.01}}': "window_s",
        '{"notebook": "bogus.ipynb", "parameters": {"x = 1\\nopen(\'/tmp/p\', \'w\')\\ny": 1}}': "identifier",
        '{"notebook": "bogus.ipynb", "parameters": {"class": 1}}': "identifier",
        "[" * 3000 + "]" * 3000: "body",
    }
    for body, field in bodies.items():
        try:
            await jp_fetch("jupyter-promote", "jobs", method="POST", body=body)
        except HTTPClientError as exc:
            message = json.loads(exc.response.body)["message"]
            assert exc.code == 400 and field in message and "\n" not in message, (body[:80], exc.code, message)
        else:
            raise AssertionError(f"accepted: {body[:80]}")
    _, listing = await api(jp_fetch, "jobs")
    assert listing["total"] == 0


def test_the_cli_bounds_monitor_settings_in_the_same_place(cli, tmp_path):
    done = cli("run", str(bogus_notebook(tmp_path / "nb")), "--monitor", "heartbeat_s=0.000000001")
    assert done.returncode == 2 and "heartbeat_s" in done.stderr and "at least 1" in done.stderr
    done = cli("run", str(bogus_notebook(tmp_path / "nb")), "--monitor", "window_s=nan")
    assert done.returncode == 2 and "finite" in done.stderr


async def test_rerun_is_confined_again(jp_fetch, jp_root_dir, jp_serverapp, tmp_path):
    from tornado.httpclient import HTTPClientError

    from jupyter_promote.models import JobRecord

    # Given a job promoted by a server started elsewhere (the store is the user's, shared by their servers)
    elsewhere = bogus_notebook(tmp_path / "other-project")
    store = jp_serverapp.web_app.settings["jupyter_promote_jobs"].store
    store.put_job(JobRecord(id="abcdef123456", notebook=str(elsewhere), target="local", kernel="python3"), None)
    # When this server is asked to rerun it, Then it refuses: the notebook is outside this server's root
    try:
        await jp_fetch("jupyter-promote", "jobs", "abcdef123456", "rerun", method="POST", body="{}")
    except HTTPClientError as exc:
        assert exc.code == 403 and "outside the server's root" in json.loads(exc.response.body)["message"]
    else:
        raise AssertionError("a rerun of a notebook outside the root was accepted")


def test_credentials_in_index_urls_never_reach_the_lock():
    from jupyter_promote.freeze.introspect import strip_credentials

    assert strip_credentials("https://__token__:s3cr@tPART@host/simple") == "https://host/simple"
    assert strip_credentials("https://host/simple?access_token=abc") == "https://host/simple"
    assert strip_credentials("/opt/wheels") == "/opt/wheels"


def test_run_directories_and_the_store_are_private(cli, tmp_path):
    import os
    import stat

    from jupyter_promote.server.store import JobStore

    done = cli("run", str(bogus_notebook(tmp_path / "nb")))
    assert done.returncode == 0
    assert stat.S_IMODE(os.stat(cli.only_run()).st_mode) == 0o700
    store = JobStore(str(tmp_path / "state" / "jobs.sqlite"))
    store.close()
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "state" / "jobs.sqlite").st_mode) == 0o600


async def test_inputs_that_answered_500_are_400s_naming_the_field(jp_fetch, jp_root_dir):
    from tornado.httpclient import HTTPClientError

    bogus_notebook(jp_root_dir)
    nb = json.loads((jp_root_dir / "bogus.ipynb").read_text())
    nb["metadata"]["kernelspec"]["language"] = 3
    (jp_root_dir / "odd.ipynb").write_text(json.dumps(nb))
    cases = [
        ("jobs", {"notebook": "bogus.ipynb", "resources": {"memory": "9" * 400}}, "memory"),
        ("jobs", {"notebook": "bogus.ipynb", "resources": {"time": "9" * 400 + "h"}}, "time"),
        ("jobs", {"notebook": "bogus.ipynb", "resources": {"cpus": True}}, "cpus"),
        ("jobs", {"notebook": "bogus.ipynb", "resources": {"cpus": 1.9}}, "cpus"),
        ("jobs", {"notebook": "bogus.ipynb", "resources": {"gpus": 10**400}}, "gpus"),
        ("freeze", {"notebook": "odd.ipynb"}, "3"),
    ]
    for route, body, field in cases:
        try:
            await jp_fetch("jupyter-promote", route, method="POST", body=json.dumps(body))
        except HTTPClientError as exc:
            message = json.loads(exc.response.body)["message"]
            assert exc.code == 400 and field in message and "\n" not in message, (body, exc.code, message)
        else:
            raise AssertionError(f"accepted: {body}")
    _, created = await api(jp_fetch, "jobs", method="POST", body={"notebook": "bogus.ipynb"})
    code, logs = await api(jp_fetch, "jobs", created["id"], "logs", after=str(2**63 - 1))
    assert code == 200 and logs["text"] == ""
    await wait_final(jp_fetch, created["id"])


FILL_DISK = """import os
try:
    with open('filler', 'wb') as f:
        while True:
            f.write(b'x' * 65536)
except OSError as exc:
    print('the disk is full:', exc)
"""


@pytest.fixture
def small_disk(tmp_path):
    """The server's runs directory (tmp_path/runs, see jp_server_config) on a 3 MiB filesystem of its own."""
    runs = tmp_path / "runs"
    runs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(runs)], check=True)
    yield runs
    subprocess.run(["umount", "-l", str(runs)], check=False)


async def test_a_full_disk_settles_the_job_and_nothing_half_written_is_served(small_disk, jp_fetch, jp_root_dir):
    from tornado.httpclient import HTTPClientError

    # Given a notebook that fills the disk of its run directory, then goes on
    cells = [FILL_DISK, "import time\nfor i in range(5):\n    print('still here', i)\n    time.sleep(1)"]
    nb = {
        "cells": [
            {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": s}
            for i, s in enumerate(cells)
        ],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    (jp_root_dir / "fill.ipynb").write_text(json.dumps(nb))
    # When it is promoted
    _, body = await api(jp_fetch, "jobs", method="POST", body={"notebook": "fill.ipynb"})
    record = await wait_final(jp_fetch, body["id"], timeout=180)
    # Then the job reached a final state that says why, and no temp file is left behind
    assert record["state"] == "failed", record
    assert record["reason"] in ("disk_full", "error", "lost"), record
    print("full disk:", record["reason"], record["message"])
    assert not [p for p in os.listdir(record["run_dir"]) if p.startswith(".job-")]
    # And the output is served only when it parses
    try:
        response = await jp_fetch("jupyter-promote", "jobs", body["id"], "output")
        json.loads(response.body)
    except HTTPClientError as exc:
        message = json.loads(exc.response.body)["message"]
        assert exc.code == 400 and ("not valid JSON" in message or "no output notebook" in message), message


async def test_a_cancel_that_comes_while_the_target_takes_the_job_is_not_lost(tmp_path):
    import asyncio

    from jupyter_promote.config import PromoteSettings
    from jupyter_promote.launch.launcher import Launcher
    from jupyter_promote.launch.request import PromoteRequest
    from jupyter_promote.server.manager import JobManager
    from jupyter_promote.server.store import JobStore
    from jupyter_promote.targets.local import LocalTarget

    class SlowToTake(LocalTarget):  # the real local target, with a scheduler's latency injected into submit
        async def submit(self, record, run):
            await asyncio.sleep(1.5)
            return await super().submit(record, run)

    store = JobStore(str(tmp_path / "jobs.sqlite"))
    settings = PromoteSettings(runs_dir=str(tmp_path / "runs"), env_allowlist=[], poll_interval=0.1)
    manager = JobManager(store, Launcher(settings, make_target=lambda name: SlowToTake()))
    notebook = bogus_notebook(tmp_path / "nb")
    nb = json.loads(notebook.read_text())
    nb["cells"] = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "s",
            "metadata": {},
            "outputs": [],
            "source": "import time\ntime.sleep(60)",
        }
    ]
    notebook.write_text(json.dumps(nb))
    try:
        job_id = await manager.submit(PromoteRequest(notebook=str(notebook), target="local"))
        while store.get_job(job_id)[1] is None:  # prepared: its run directory is known, submit is under way
            await asyncio.sleep(0.05)
        await manager.cancel(job_id)
        for _ in range(600):
            record, _ = store.get_job(job_id)
            if record.state.final:
                break
            await asyncio.sleep(0.1)
        assert record.state.value == "cancelled", record
    finally:
        await manager.close()
        store.close()


def test_a_kernel_killed_as_the_oom_killer_kills_it_is_named_not_left_running(cli, tmp_path):
    # Given a notebook whose kernel is killed with SIGKILL in its second cell (what the OOM killer sends)
    notebook = bogus_notebook(tmp_path / "nb")
    nb = json.loads(notebook.read_text())
    nb["cells"] = [
        {"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {}, "outputs": [], "source": s}
        for i, s in enumerate(["x = 1", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "print('never')"])
    ]
    notebook.write_text(json.dumps(nb))
    done = cli("run", str(notebook))
    # Then the job failed, killed, in the cell that was running, and says so in its last line
    assert done.returncode == 1
    record = job(cli.only_run())
    assert record["state"] == "failed" and record["reason"] == "killed", record
    assert "cell 2" in record["message"], record["message"]


def test_a_cell_nested_too_deeply_is_reported_not_fatal():
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from jupyter_promote.preflight import check_notebook

    nb = new_notebook()
    nb.cells = [new_code_cell("a = 1\nx = " + " + ".join(["a"] * 3000)), new_code_cell("print(b)")]
    found = {(f.kind, f.cell) for f in check_notebook(nbformat.from_dict(nb))}
    assert ("syntax", 1) in found and ("undefined", 2) in found


async def test_a_kernel_that_hangs_answers_the_dialogs_preview_with_one_line_soon(
    jp_fetch, jp_root_dir, tmp_path, monkeypatch
):
    # Given a notebook whose kernel's interpreter never answers (a hung network mount, a broken conda hook)
    from jupyter_promote.server import preview

    wrapper = tmp_path / "hung-python"
    wrapper.write_text("#!/bin/sh\nexec sleep 600\n")
    wrapper.chmod(0o755)
    spec = tmp_path / "share" / "kernels" / "hung"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps({"argv": [str(wrapper), "-f", "{connection_file}"], "display_name": "hung", "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "share"))
    monkeypatch.setattr(preview, "PREVIEW_TIMEOUT_S", 3.0)
    bogus_notebook(jp_root_dir)
    # When the dialog asks for its preview
    code, body = await error(jp_fetch, "freeze", method="POST", body={"notebook": "bogus.ipynb", "kernel": "hung"})
    # Then it is told in one line, once the preview's (short) timeout has passed, and the interpreter is stopped
    assert code == 400 and "did not finish within 3 s" in body["message"] and "\n" not in body["message"], body
    assert subprocess.run(["pgrep", "-f", str(wrapper)], capture_output=True).returncode == 1
