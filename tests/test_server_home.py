"""The server as people start it: ``cd ~/some project && jupyter lab``. jupyter_server then keeps its root
for display as ``~/...`` (``settings["server_root_dir"]``); every route must resolve notebook paths as the
contents manager does. The folder's name has a space and non-ASCII characters on purpose.

The same flows run as an unprivileged user from the installed wheel in ``tests/rig/``; this module keeps
the fast in-process version, with pytest-jupyter's HOME (``jp_home_dir``) standing in for the user's home.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

import pytest
from conftest import NOTEBOOKS
from test_server import api, error

PROJECT = NOTEBOOKS / "project"


@pytest.fixture
def jp_root_dir(jp_home_dir: Path) -> Path:
    root = jp_home_dir / "my project ñ é"
    root.mkdir()
    return root


@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "store" / "jobs.sqlite")},
    }


def snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its content hash: what the user would notice changing."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


async def wait_final(jp_fetch, job_id: str, timeout: float = 180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _, record = await api(jp_fetch, "jobs", job_id)
        if record["state"] in ("succeeded", "failed", "cancelled"):
            return record
        await asyncio_sleep(0.3)
    raise AssertionError(f"job {job_id} did not finish in {timeout} s")


async def asyncio_sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)


async def test_a_server_started_in_a_home_project_folder_promotes_its_notebooks(jp_fetch, jp_root_dir, jp_serverapp):
    # Given a project folder below the home directory, shown by the server as ~/my project ñ é
    shutil.copytree(PROJECT, jp_root_dir / "analysis")
    assert jp_serverapp.web_app.settings["server_root_dir"].startswith("~")
    before = snapshot(jp_root_dir)
    # When the dialog previews the notebook and promotes it
    code, preview = await api(jp_fetch, "freeze", method="POST", body={"notebook": "analysis/files.ipynb"})
    assert code == 200 and preview["kernel"] == "python3"
    assert "python3" in {k["name"] for k in preview["kernels"]}
    assert isinstance(preview["check"]["findings"], list)
    code, body = await api(
        jp_fetch, "jobs", method="POST", body={"notebook": "analysis/files.ipynb", "parameters": {"scale": 2}}
    )
    assert code == 202
    record = await wait_final(jp_fetch, body["id"])
    # Then it succeeded, read the files beside it, and what it wrote is listed as its artifacts
    assert record["state"] == "succeeded", record
    assert record["metrics"]["total"] == 13.0
    assert record["notebook_path"] == "analysis/files.ipynb"
    assert {a["path"] for a in record["artifacts"]} == {"result.txt", "out/summary.json"}
    response = await jp_fetch("jupyter-promote", "jobs", body["id"], "artifacts", "out/summary.json")
    assert json.loads(response.body) == {"total": 13.0, "labels": ["cat", "dog", "bird"]}
    assert "attachment" in response.headers["Content-Disposition"]
    work = Path(record["run_dir"]) / "work"
    assert (work / "result.txt").read_text() == "total=13.0\n" and (work / "data.csv").is_symlink()
    # And the user's folder is exactly as it was
    assert snapshot(jp_root_dir) == before
    # And the output and a rerun resolve the same way
    response = await jp_fetch("jupyter-promote", "jobs", body["id"], "output")
    assert json.loads(response.body)["cells"]
    code, again = await api(jp_fetch, "jobs", body["id"], "rerun", method="POST", body={})
    assert (await wait_final(jp_fetch, again["id"]))["state"] == "succeeded"
    _, listing = await api(jp_fetch, "jobs", notebook="analysis/files.ipynb")
    assert listing["total"] == 2


async def test_a_sweep_gives_each_task_its_own_files(jp_fetch, jp_root_dir):
    shutil.copytree(PROJECT, jp_root_dir / "analysis")
    before = snapshot(jp_root_dir)
    body = {"notebook": "analysis/files.ipynb", "sweep": {"scale": [1, 10]}}
    code, sweep = await api(jp_fetch, "jobs", method="POST", body=body)
    assert code == 202
    records = [await wait_final(jp_fetch, job_id) for job_id in sweep["ids"]]
    assert [r["state"] for r in records] == ["succeeded", "succeeded"]
    written = [(Path(r["run_dir"]) / "work" / "result.txt").read_text() for r in records]
    assert written == ["total=6.5\n", "total=65.0\n"]
    assert snapshot(jp_root_dir) == before


async def test_a_symlinked_notebook_is_promoted_as_the_file_browser_opens_it(jp_fetch, jp_root_dir, tmp_path):
    # Given a notebook kept elsewhere and linked into the project (the contents manager serves it)
    elsewhere = tmp_path / "shared-notebooks"
    shutil.copytree(PROJECT, elsewhere)
    (jp_root_dir / "linked.ipynb").symlink_to(elsewhere / "files.ipynb")
    code, body = await api(jp_fetch, "jobs", method="POST", body={"notebook": "linked.ipynb"})
    assert code == 202
    _, record = await api(jp_fetch, "jobs", body["id"])
    # Then its path maps back to the one the file browser shows
    assert record["notebook_path"] == "linked.ipynb"
    await wait_final(jp_fetch, body["id"])


@pytest.mark.parametrize(
    ("payload", "status", "field"),
    [
        ({"notebook": "../outside.ipynb"}, 403, "notebook"),
        ({"notebook": "nowhere.ipynb"}, 400, "no such notebook"),
        ({"notebook": "analysis/files.ipynb", "kernel": "no-such-kernel"}, 400, "python3"),
        ({"notebook": "analysis/files.ipynb", "kernel": 3}, 400, "kernel"),
    ],
)
async def test_bad_paths_and_kernels_are_refused_with_one_line(jp_fetch, jp_root_dir, payload, status, field):
    shutil.copytree(PROJECT, jp_root_dir / "analysis")
    code, body = await error(jp_fetch, "jobs", method="POST", body=payload)
    assert code == status and field in body["message"] and "\n" not in body["message"]
    _, listing = await api(jp_fetch, "jobs")
    assert listing["total"] == 0
