"""Notifications through the server: the destinations the dialog offers, and a job posted with a choice of
them notifying a real HTTP listener on loopback (the server's own config names the destinations)."""

from __future__ import annotations

import asyncio
import shutil

import pytest
from conftest import NOTEBOOKS
from test_notify import Listener
from test_server import api, error, wait_final


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch, listener):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "store" / "jobs.sqlite")},
        "Notifications": {
            "destinations": {
                "team": {"kind": "slack", "url": f"{listener.url}/team?token=secret"},
                "hook": {"kind": "webhook", "url": f"{listener.url}/hook", "on": ["failed"]},
            },
            "defaults": ["hook"],
        },
    }


async def test_the_dialog_is_offered_names_and_kinds_never_urls(jp_fetch):
    code, body = await api(jp_fetch, "notifications")
    assert code == 200
    assert body["defaults"] == ["hook"]
    assert {(d["name"], d["kind"]) for d in body["destinations"]} == {("team", "slack"), ("hook", "webhook")}
    assert "secret" not in str(body) and "127.0.0.1" not in str(body)


async def test_a_job_posted_with_a_choice_notifies_that_choice(jp_fetch, jp_root_dir, listener):
    shutil.copy(NOTEBOOKS / "success.ipynb", jp_root_dir / "success.ipynb")
    _, job = await api(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "notify": ["team"]})
    record = await wait_final(jp_fetch, job["id"])
    assert record["state"] == "succeeded" and record["notify"] == ["team"]
    for _ in range(100):  # delivered off the job's path, just after its end
        if listener.bodies:
            break
        await asyncio.sleep(0.1)
    assert [path for path, _ in listener.bodies] == ["/team?token=secret"]
    assert "succeeded" in listener.bodies[0][1]["text"]


async def test_an_unknown_destination_is_a_400_naming_the_field(jp_fetch, jp_root_dir):
    shutil.copy(NOTEBOOKS / "success.ipynb", jp_root_dir / "success.ipynb")
    code, body = await error(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "notify": ["pager"]})
    assert code == 400 and body["field"] == "notify" and "pager" in body["message"]
