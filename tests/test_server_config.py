"""The server extension's traitlets: enabled targets, default resources and monitor settings."""

from __future__ import annotations

import shutil

import pytest
from conftest import NOTEBOOKS
from test_server import api, error, wait_final


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "jobs.sqlite")},
        "PromoteSettings": {
            "enabled_targets": ["local"],
            "default_resources": {"cpus": 1, "time": "10m"},
            "monitor_defaults": {"stall_timeout_s": 123, "nan_action": "alert"},
        },
    }


async def test_only_enabled_targets_are_offered_and_defaults_fill_requests(jp_fetch, jp_root_dir):
    shutil.copy(NOTEBOOKS / "success.ipynb", jp_root_dir / "success.ipynb")
    _, body = await api(jp_fetch, "targets")
    assert [t["name"] for t in body["targets"]] == ["local"]
    code, refused = await error(jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "target": "docker"})
    assert code == 400 and "docker" in refused["message"] and "available: local" in refused["message"]
    _, job = await api(
        jp_fetch, "jobs", method="POST", body={"notebook": "success.ipynb", "monitor": {"nan_action": "fail"}}
    )
    record = await wait_final(jp_fetch, job["id"])
    assert record["state"] == "succeeded"
    assert record["resources"]["cpus"] == 1 and record["resources"]["time_limit_s"] == 600
    assert record["monitor"]["stall_timeout_s"] == 123 and record["monitor"]["nan_action"] == "fail"
