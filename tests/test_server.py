"""The server extension in a real Jupyter server: authenticated REST API, the job store, live events,
reconciliation at start. Jobs run for real on the local target.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import time
from typing import ClassVar

import pytest
from conftest import BASE_IMAGE, NOTEBOOKS
from tornado.httpclient import HTTPClientError

from jupyter_promote.models import JobRecord, JobState
from jupyter_promote.rundir import RunDir
from jupyter_promote.server.store import JobStore


@pytest.fixture
def store_path(tmp_path):
    return str(tmp_path / "store" / "jobs.sqlite")


@pytest.fixture
def jp_server_config(store_path, tmp_path, monkeypatch):
    # like the extension template's check_auth: a handler without authentication would warn, and warnings fail tests
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": store_path},
        "ImageBuilder": {"base_image": BASE_IMAGE, "cache_dir": str(tmp_path / "image-cache")},
    }


@pytest.fixture
def notebooks(jp_root_dir):
    for name in ("success.ipynb", "failing.ipynb", "hang.ipynb", "typed.ipynb"):
        shutil.copy(NOTEBOOKS / name, jp_root_dir / name)
    (jp_root_dir / "sub").mkdir()
    shutil.copy(NOTEBOOKS / "success.ipynb", jp_root_dir / "sub" / "inner.ipynb")
    return jp_root_dir


async def api(jp_fetch, *path, method="GET", body=None, **params):
    kwargs = {"method": method, "params": params}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch("jupyter-promote", *path, **kwargs)
    return response.code, json.loads(response.body) if response.body else None


async def error(jp_fetch, *path, **kwargs):
    with pytest.raises(HTTPClientError) as info:
        await api(jp_fetch, *path, **kwargs)
    return info.value.code, json.loads(info.value.response.body)


async def wait_final(jp_fetch, job_id, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, record = await api(jp_fetch, "jobs", job_id)
        if record["state"] in ("succeeded", "failed", "cancelled"):
            return record
        await asyncio.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {record}")


async def test_targets_lists_local(jp_fetch):
    code, body = await api(jp_fetch, "targets")
    assert code == 200
    targets = {t["name"]: t for t in body["targets"]}
    assert targets["local"]["available"] is True
    assert "cpus" in targets["local"]["options_schema"]["properties"]


async def test_every_route_refuses_unauthenticated_requests(jp_fetch):
    for path in (("targets",), ("jobs",), ("jobs", "abcdef123456"), ("jobs", "abcdef123456", "events")):
        with pytest.raises(HTTPClientError) as info:
            await jp_fetch("jupyter-promote", *path, headers={"Authorization": ""})
        assert info.value.code in (401, 403), path


async def test_post_runs_a_job_and_the_api_shows_all_of_it(jp_fetch, notebooks):
    # When a notebook is promoted through the API
    code, body = await api(
        jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "parameters": {"name": "api"}}
    )
    assert code == 202
    job_id = body["id"]
    # Then it runs to the end, and every view of it agrees
    record = await wait_final(jp_fetch, job_id)
    assert record["state"] == "succeeded" and record["parameters"] == {"name": "api"}
    assert [t["state"] for t in record["transitions"]] == ["pending", "queued", "running", "succeeded"]
    _, events = await api(jp_fetch, "jobs", job_id, "events")
    seqs = [e["seq"] for e in events["events"]]
    assert seqs == list(range(1, len(seqs) + 1))
    _, later = await api(jp_fetch, "jobs", job_id, "events", after=str(seqs[-3]))
    assert [e["seq"] for e in later["events"]] == seqs[-2:]
    _, logs = await api(jp_fetch, "jobs", job_id, "logs")
    assert "hello api" in logs["text"] and logs["offset"] == len(logs["text"].encode())
    _, build = await api(jp_fetch, "jobs", job_id, "logs", stream="build")
    assert build == {"text": "", "offset": 0}  # the local target builds no image
    code, bad = await error(jp_fetch, "jobs", job_id, "logs", stream="nope")
    assert code == 400 and bad["message"] == "stream 'nope': not a log (expected job or build)"
    environment = record["environment"]
    assert environment["python"].count(".") == 2 and environment["content_hash"] == record["lock_hash"]
    assert environment["packages"] > 10 and "papermill" in environment["key_packages"]
    assert record["notebook_path"] == "success.ipynb"
    response = await jp_fetch("jupyter-promote", "jobs", job_id, "output")
    assert "hello api" in response.body.decode()
    _, listing = await api(jp_fetch, "jobs", state="succeeded")
    assert [j["id"] for j in listing["jobs"]] == [job_id] and listing["total"] == 1
    _, listing = await api(jp_fetch, "jobs", notebook="success.ipynb")
    assert listing["total"] == 1
    code, cancelled = await api(jp_fetch, "jobs", job_id, method="DELETE")  # idempotent on a finished job
    assert code == 202 and cancelled["state"] == "succeeded"


async def test_cancel_through_the_api(jp_fetch, notebooks):
    _, body = await api(jp_fetch, "jobs", method="POST", body={"notebook": "hang.ipynb"})
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, record = await api(jp_fetch, "jobs", body["id"])
        if record["state"] == "running":
            break
        await asyncio.sleep(0.2)
    await api(jp_fetch, "jobs", body["id"], method="DELETE")
    await api(jp_fetch, "jobs", body["id"], method="DELETE")
    record = await wait_final(jp_fetch, body["id"], timeout=60)
    assert record["state"] == "cancelled"


async def test_purge_removes_a_finished_job_and_refuses_a_running_one(jp_fetch, notebooks):
    _, running = await api(jp_fetch, "jobs", method="POST", body={"notebook": "hang.ipynb"})
    try:
        await _purge_one_of_two(jp_fetch, running)
    finally:
        await api(jp_fetch, "jobs", running["id"], method="DELETE")
    assert (await wait_final(jp_fetch, running["id"], timeout=60))["state"] == "cancelled"


async def _purge_one_of_two(jp_fetch, running):
    _, done = await api(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb"})
    record = await wait_final(jp_fetch, done["id"])
    run_dir = record["run_dir"]
    assert RunDir(run_dir).exists()
    # a job that has not ended is not removed: 409, and it goes on
    code, body = await error(jp_fetch, "jobs", running["id"], method="DELETE", purge="true")
    assert code == 409 and "cancel it first" in body["message"], body
    # a finished one is: its record, its events and its run directory
    code, body = await api(jp_fetch, "jobs", done["id"], method="DELETE", purge="true")
    assert code == 200 and body == {"id": done["id"], "removed": True}
    assert not RunDir(run_dir).exists()
    assert (await error(jp_fetch, "jobs", done["id"]))[0] == 404
    assert (await error(jp_fetch, "jobs", done["id"], "events"))[0] == 404
    _, listing = await api(jp_fetch, "jobs")
    assert done["id"] not in [job["id"] for job in listing["jobs"]]


@pytest.mark.parametrize(
    ("payload", "status", "field"),
    [
        ({}, 400, "notebook"),
        ({"notebook": "missing.ipynb"}, 400, "notebook"),
        ({"notebook": "../etc/passwd"}, 403, "notebook"),
        ({"notebook": "/etc/passwd"}, 403, "notebook"),
        ({"notebook": "success.ipynb", "target": "nowhere"}, 400, "nowhere"),
        ({"notebook": "success.ipynb", "resources": {"cpus": "many"}}, 400, "cpus"),
        ({"notebook": "success.ipynb", "resources": {"disk": "1G"}}, 400, "resources"),
        ({"notebook": "success.ipynb", "monitor": {"nan_action": "panic"}}, 400, "monitor"),
        ({"notebook": "success.ipynb", "parameters": [1, 2]}, 400, "parameters"),
        ({"notebook": "success.ipynb", "surprise": 1}, 400, "surprise"),
        ({"notebook": "success\x00.ipynb"}, 400, "NUL"),  # found by the fuzz test: was a 500
        ([1, 2, 3], 400, "body"),
        ({"notebook": "success.ipynb", "sweep": {"a": []}}, 400, "sweep.a"),
        ({"notebook": "success.ipynb", "sweep": 3}, 400, "sweep"),
        ({"notebook": "success.ipynb", "sweep": [{"a": 1}, 2]}, 400, "sweep[1]"),
        ({"notebook": "success.ipynb", "sweep": {"a": [1]}, "max_parallel": 0}, 400, "max_parallel"),
        ({"notebook": "success.ipynb", "max_parallel": 2}, 400, "max_parallel"),
    ],
)
async def test_bad_payloads_get_their_status_and_name_the_field(jp_fetch, notebooks, tmp_path, payload, status, field):
    code, body = await error(jp_fetch, "jobs", method="POST", body=payload)
    assert code == status, body
    assert field in body["message"] and "\n" not in body["message"]
    if field == "nowhere":
        assert "local" in body["message"]  # the available targets are listed
    _, listing = await api(jp_fetch, "jobs")
    assert listing["total"] == 0  # nothing was created


async def test_a_sweep_runs_one_job_per_set_with_bounded_parallelism(jp_fetch, notebooks):
    # Given a 2 x 2 grid and at most 2 jobs at a time
    body = {
        "notebook": "success.ipynb",
        "parameters": {"name": "grid"},
        "sweep": {"a": [1, 2], "b": [10, 20]},
        "max_parallel": 2,
    }
    code, sweep = await api(jp_fetch, "jobs", method="POST", body=body)
    assert code == 202 and len(sweep["ids"]) == 4 and sweep["id"] == sweep["ids"][0]
    records = [await wait_final(jp_fetch, job_id, timeout=240) for job_id in sweep["ids"]]
    # Then each job ran its own set over the shared parameters, in grid order
    assert [r["state"] for r in records] == ["succeeded"] * 4
    assert [r["parameters"] for r in records] == [{"name": "grid", "a": a, "b": b} for a in (1, 2) for b in (10, 20)]
    assert [r["metrics"]["b"] for r in records] == [2, 2, 4, 4]  # the notebook computes b = a * 2 after b is injected
    assert [r["sweep"] for r in records] == [{"id": sweep["sweep"], "index": i, "size": 4} for i in range(4)]
    # And never more than 2 ran at once
    spans = []
    for r in records:
        times = {t["state"]: t["ts"] for t in r["transitions"]}
        spans.append((times["running"], times["succeeded"]))
    for start, _ in spans:
        assert sum(1 for s, e in spans if s <= start < e) <= 2
    _, listing = await api(jp_fetch, "jobs", sweep=sweep["sweep"])
    assert listing["total"] == 4


async def test_unknown_job_is_404_and_bad_query_is_400(jp_fetch):
    code, body = await error(jp_fetch, "jobs", "abcdef123456")
    assert code == 404 and "abcdef123456" in body["message"]
    code, _ = await error(jp_fetch, "jobs", limit="many")
    assert code == 400
    code, body = await error(jp_fetch, "jobs", offset=str(2**70))  # found by the fuzz test: was a 500
    assert code == 400 and "offset" in body["message"]


async def test_events_reach_the_event_bus_live(jp_fetch, jp_ws_fetch, notebooks):
    ws = await jp_ws_fetch("api", "events", "subscribe")
    _, body = await api(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb"})
    seen = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        message = json.loads(await asyncio.wait_for(ws.read_message(), timeout=60))
        if message.get("schema_id", "").endswith("jupyter_promote/job_events/v1") and message["job"] == body["id"]:
            seen.append(message)
            if message.get("state") == "succeeded":
                break
    ws.close()
    assert seen and seen[-1]["state"] == "succeeded"
    events = [event for message in seen for event in json.loads(message["events"])]
    # every event once, in order, and each message's bounds are its own events'
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    for message in seen:
        batch = json.loads(message["events"])
        assert (message["first_seq"], message["last_seq"]) == (batch[0]["seq"], batch[-1]["seq"])
    assert events[0]["type"] == "status" and events[-1]["state"] == "succeeded"
    _, stored = await api(jp_fetch, "jobs", body["id"], "events")
    assert stored["events"] == events


@pytest.fixture
def unfinished_jobs(store_path, tmp_path):
    """Before the server starts: a job whose runner is gone, and one whose runner still runs."""
    store = JobStore(store_path)
    gone = JobRecord(
        id="0123456789ab",
        notebook=str(NOTEBOOKS / "success.ipynb"),
        target="local",
        kernel="python3",
        state=JobState.RUNNING,
        created_at=time.time(),
        handle={"pid": 2**22 - 7, "start_ticks": 1},
    )
    gone_run = RunDir(tmp_path / "gone")
    gone_run.path.mkdir()
    gone_run.write(gone)
    store.put_job(gone, str(gone_run.path))
    never = JobRecord(
        id="ba9876543210",
        notebook=str(NOTEBOOKS / "success.ipynb"),
        target="local",
        kernel="python3",
        created_at=time.time(),
    )
    store.put_job(never, None)
    # a real job started outside the server, still running when the server starts
    out = tmp_path / "live"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyter_promote.cli", "run", str(NOTEBOOKS / "hang.ipynb"), "--out", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.time() + 60
    while (time.time() < deadline and not (out / "job.json").exists()) or (
        RunDir(out).exists() and not RunDir(out).read().handle
    ):
        time.sleep(0.2)
    live = RunDir(out).read()
    store.put_job(live, str(out))
    store.close()
    proc.kill()  # the CLI follower goes; the job's runner (its own session) keeps running
    proc.wait()
    yield {"gone": gone.id, "never": never.id, "live": live.id}


async def test_server_start_reconciles_unfinished_jobs(unfinished_jobs, jp_fetch):
    ids = unfinished_jobs
    gone = await wait_final(jp_fetch, ids["gone"], timeout=30)
    assert gone["state"] == "failed" and gone["reason"] == "lost"
    never = await wait_final(jp_fetch, ids["never"], timeout=10)
    assert never["state"] == "failed" and never["reason"] == "lost"
    # the live job is watched again: its events keep arriving, and it can be cancelled through the API
    _, record = await api(jp_fetch, "jobs", ids["live"])
    assert record["state"] in ("queued", "running")
    await asyncio.sleep(1)
    _, events = await api(jp_fetch, "jobs", ids["live"], "events")
    assert events["events"] and events["events"][0]["seq"] == 1
    await api(jp_fetch, "jobs", ids["live"], method="DELETE")
    live = await wait_final(jp_fetch, ids["live"], timeout=60)
    assert live["state"] == "cancelled"


async def test_rerun_and_freeze_preview(jp_fetch, notebooks):
    _, body = await api(
        jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "parameters": {"name": "one"}}
    )
    await wait_final(jp_fetch, body["id"])
    code, again = await api(jp_fetch, "jobs", body["id"], "rerun", method="POST", body={})
    assert code == 202 and again["id"] != body["id"]
    record = await wait_final(jp_fetch, again["id"])
    assert record["state"] == "succeeded" and record["parameters"] == {"name": "one"}
    code, preview = await api(jp_fetch, "freeze", method="POST", body={"notebook": "success.ipynb"})
    assert code == 200 and preview["kernel"] == "python3"
    assert preview["lock"]["content_hash"].startswith("sha256:") and preview["lock"]["packages"]
    assert preview["image"]["tag"].startswith("jupyter-promote/env:" + preview["lock"]["content_hash"][7:39])
    assert preview["image"]["exists"] is False  # the project's own environment is never built by the tests
    assert preview["environment"]["content_hash"] == preview["lock"]["content_hash"]
    _, typed = await api(jp_fetch, "freeze", method="POST", body={"notebook": "typed.ipynb"})
    by_name = {p["name"]: p for p in typed["parameters"]}
    assert [p["name"] for p in typed["parameters"]] == ["count", "ratio", "flag", "nothing", "label", "items"]
    assert by_name["ratio"] == {
        "name": "ratio",
        "type": "float",
        "default": "0.5",
        "value": 0.5,
        "literal": True,
        "help": "",
    }
    assert by_name["flag"]["type"] == "bool" and by_name["items"]["value"] == [1]
    code, body = await error(jp_fetch, "freeze", method="POST", body={"notebook": "../x.ipynb"})
    assert code == 403


NBFORMAT_4_5 = {"nbformat": 4, "nbformat_minor": 5}


async def test_the_preview_judges_environment_reads_for_the_target_the_dialog_asks_about(jp_fetch, jp_root_dir):
    # Given a notebook that reads an environment variable no allowlist carries
    source = "import os\ntoken = os.environ['MY_TEST_API_TOKEN']"
    cell = {"cell_type": "code", "execution_count": None, "id": "a", "metadata": {}, "outputs": [], "source": source}
    (jp_root_dir / "reads_env.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {}, **NBFORMAT_4_5}))

    async def env_findings(**target):
        _, preview = await api(jp_fetch, "freeze", method="POST", body={"notebook": "reads_env.ipynb", **target})
        return [f["message"] for f in preview["check"]["findings"] if f["kind"] in ("env", "secret")]

    # When the dialog previews it for local (the default target, and named), and for docker
    # Then local carries the whole environment (nothing to report, as `check --target local` says), docker does not
    assert await env_findings() == []
    assert await env_findings(target="local") == []
    docker = await env_findings(target="docker")
    assert len(docker) == 1 and "MY_TEST_API_TOKEN" in docker[0]
    # And a target the server does not offer is refused naming the field
    code, body = await error(jp_fetch, "freeze", method="POST", body={"notebook": "reads_env.ipynb", "target": "nope"})
    assert code == 400 and body["field"] == "target"


async def test_the_preview_refuses_an_nbformat_3_notebook_with_the_way_to_upgrade_it(jp_fetch, jp_root_dir):
    # Given an nbformat 3 notebook in the server's root (cells inside worksheets)
    old = {"metadata": {}, "nbformat": 3, "nbformat_minor": 0, "worksheets": [{"cells": [], "metadata": {}}]}
    (jp_root_dir / "old.ipynb").write_text(json.dumps(old))
    # When the dialog previews it
    code, body = await error(jp_fetch, "freeze", method="POST", body={"notebook": "old.ipynb"})
    # Then the answer is 400 with one line saying what it is and how to upgrade it
    assert code == 400, body
    assert "an nbformat 3 notebook" in body["message"] and "--nbformat 4" in body["message"]
    # And promoted anyway, the job fails saying the same
    _, job = await api(jp_fetch, "jobs", method="POST", body={"notebook": "old.ipynb"})
    record = await wait_final(jp_fetch, job["id"])
    assert record["state"] == "failed" and "an nbformat 3 notebook" in json.dumps(record)


def test_openapi_document_matches_the_handlers():
    import re
    from pathlib import Path

    import yaml

    from jupyter_promote.server import routes

    spec = yaml.safe_load((Path(routes.__file__).parent / "openapi.yaml").read_text())
    documented = {
        (path, method.upper()) for path, item in spec["paths"].items() for method in item if method != "parameters"
    }

    class App:
        settings: ClassVar[dict] = {"base_url": "/"}
        table: ClassVar[list] = []

        def add_handlers(self, host, handlers):
            self.table.extend(handlers)

    app = App()
    routes.setup_route_handlers(app)
    served = set()
    for pattern, handler in app.table:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", pattern)
        for method in ("GET", "POST", "DELETE", "PUT", "PATCH"):
            if method.lower() in handler.__dict__:
                served.add((path, method))
    assert served == documented
