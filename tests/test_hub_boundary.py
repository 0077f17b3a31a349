"""A store others write too (a hub's shared database) is not trusted with this server's processes and files:
before a server follows, adopts, cancels or removes a job, its run directory and job.json must be this uid's,
job.json must be that job's, and the handle the one job.json holds; monitor settings are bounded again on load.
A row that fails is said in one log line and left alone. The retention pass goes on past a bad row or a folder
it cannot remove. Real stores (SQLite), the real local target, real processes."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from jupyter_promote.config import PromoteSettings
from jupyter_promote.errors import ForbiddenPath
from jupyter_promote.launch.launcher import Launcher
from jupyter_promote.models import JobRecord, JobState, MonitorSettings
from jupyter_promote.processes import STARTED_KEY, start_time
from jupyter_promote.rundir import RunDir
from jupyter_promote.server.manager import JobManager
from jupyter_promote.server.store import JobStore
from jupyter_promote.targets.local import LocalTarget

NOBODY = 65534


@pytest.fixture
def bystander():
    """A process of this user that is no job's: what a planted handle points at."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def _manager(tmp_path: Path) -> tuple[JobStore, JobManager]:
    store = JobStore(str(tmp_path / "store" / "jobs.sqlite"))
    settings = PromoteSettings(runs_dir=str(tmp_path / "runs"), env_allowlist=[], poll_interval=0.1)
    return store, JobManager(store, Launcher(settings))


def _plant(
    store: JobStore,
    run_dir: Path,
    row_id: str,
    json_id: str,
    handle: dict,
    row_handle: dict | None = None,
    monitor: dict | None = None,
) -> None:
    """A running job's row in the store, naming ``run_dir``, whose job.json says ``json_id`` and ``handle``."""
    run_dir.mkdir(parents=True, exist_ok=True)
    on_disk = JobRecord(
        id=json_id,
        notebook="/nowhere.ipynb",
        target="local",
        kernel="python3",
        state=JobState.RUNNING,
        handle=handle,
        created_at=time.time(),
    )
    data = on_disk.to_json()
    data["monitor"] = {**MonitorSettings().to_json(), **(monitor or {})}
    (run_dir / "job.json").write_text(json.dumps(data))
    (run_dir / "events.jsonl").write_text("")
    row = JobRecord(
        id=row_id,
        notebook="/nowhere.ipynb",
        target="local",
        kernel="python3",
        state=JobState.RUNNING,
        handle=handle if row_handle is None else row_handle,
        created_at=time.time(),
    )
    store.put_job(row, str(run_dir))


def _handle(process: subprocess.Popen[bytes]) -> dict:
    return {"pid": process.pid, STARTED_KEY: start_time(process.pid)}


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
@pytest.mark.parametrize("planted", ["another uid's run directory", "job.json of another job", "another handle"])
async def test_a_planted_row_is_neither_followed_nor_cancelled_after_a_restart(tmp_path, caplog, bystander, planted):
    # Given a row in the server's own store naming a job whose run directory or job.json is not that job's
    store, manager = _manager(tmp_path)
    run_dir, handle = tmp_path / "mallory" / "run", _handle(bystander)
    if planted == "another uid's run directory":
        _plant(store, run_dir, "planted00001", "planted00001", handle)
        for path in (run_dir, run_dir / "job.json", run_dir / "events.jsonl"):
            os.chown(path, NOBODY, NOBODY)
    elif planted == "job.json of another job":
        _plant(store, run_dir, "planted00001", "victim000001", handle)
    else:  # the row's handle is not the one its job.json holds
        _plant(store, run_dir, "planted00001", "planted00001", handle, row_handle={"pid": 1, "start_ticks": 1})
    caplog.set_level(logging.WARNING, logger="jupyter_promote")
    try:
        # When the server starts again (reconcile) and the job is then cancelled through the API
        await manager.reconcile()
        followed = manager.running
        with pytest.raises(ForbiddenPath) as refused:
            await manager.cancel("planted00001")
        # Then nothing was followed or signalled: the bystander still runs; one line says why
        assert followed == 0
        assert bystander.poll() is None
        said = [r.getMessage() for r in caplog.records if "planted00001" in r.getMessage()]
        print(said, refused.value)
        assert len(said) >= 1 and all("left alone" in line for line in said), said
        assert "\n" not in str(refused.value)
        assert store.get_job("planted00001")[0].state is JobState.RUNNING  # left as it is
    finally:
        await manager.close()
        store.close()


async def test_a_handle_that_is_no_job_runner_is_never_signalled(tmp_path, caplog, bystander):
    # Given this server's own job (its folder, its job.json) whose handle names a process that is no job runner
    store, manager = _manager(tmp_path)
    _plant(store, tmp_path / "runs" / "job", "ownjob000001", "ownjob000001", _handle(bystander))
    caplog.set_level(logging.WARNING, logger="jupyter_promote")
    try:
        # When the server follows it again and it is cancelled
        await manager.reconcile()
        await manager.cancel("ownjob000001")
        await asyncio.sleep(0.5)
        # Then that process is not signalled, and the local target says so in one line
        assert bystander.poll() is None
        said = [r.getMessage() for r in caplog.records if f"pid {bystander.pid}" in r.getMessage()]
        print(said)
        assert said and "not signalled" in said[0]
    finally:
        await manager.close()
        store.close()


async def test_the_local_target_does_not_take_an_unrelated_process_for_a_running_job(bystander):
    # Given a handle naming a living process that is not a job runner
    target = LocalTarget()
    # When the target is polled for it and asked to cancel it
    status = (await target.poll({"j": _handle(bystander)}))["j"]
    await target.cancel(_handle(bystander))
    # Then the job is not running there and the process is untouched
    assert status.state is not JobState.RUNNING
    assert bystander.poll() is None


def test_monitor_settings_loaded_from_a_record_are_bounded_again():
    # Given settings no request could have asked for (a planted or old record)
    loaded = MonitorSettings.from_json(
        {
            "heartbeat_s": 0.001,
            "stall_timeout_s": -5,
            "window_s": float("nan"),
            "check_every": "1",
            "gpu_sample_s": True,
        }
    )
    # When they are bounded as a loaded record's are
    bounded = loaded.bounded()
    # Then each is at least its minimum, a number, and what passes the request's own check
    print(bounded)
    assert bounded.heartbeat_s == 1.0 and bounded.stall_timeout_s == 1.0
    assert bounded.window_s == MonitorSettings().window_s and bounded.check_every == MonitorSettings().check_every
    assert bounded.gpu_sample_s == MonitorSettings().gpu_sample_s
    assert bounded.checked() == bounded
    assert MonitorSettings(heartbeat_s=7.0).bounded() == MonitorSettings(heartbeat_s=7.0)


async def test_a_job_followed_again_uses_bounded_monitor_settings(tmp_path, bystander):
    # Given this server's own running job whose job.json asks for a heartbeat every millisecond
    store, manager = _manager(tmp_path)
    _plant(
        store,
        tmp_path / "runs" / "job",
        "ownjob000002",
        "ownjob000002",
        _handle(bystander),
        monitor={"heartbeat_s": 0.001, "stall_timeout_s": 0.001},
    )
    try:
        # When the server starts again and follows it
        await manager.reconcile()
        # Then it follows it with settings bounded as a request's are
        followed = manager._active["ownjob000002"].task.record.monitor
        print(followed)
        assert followed.heartbeat_s >= 1.0 and followed.stall_timeout_s >= 1.0
    finally:
        await manager.close()
        store.close()


async def test_one_bad_row_or_folder_does_not_stop_the_retention_pass(tmp_path, caplog):
    # Given finished jobs older than the retention: a row that is no record, a job whose folder cannot be
    # removed (its aside name is taken by a folder with files), and a good one
    store, manager = _manager(tmp_path)
    old = time.time() - 10 * 86400
    runs = {}
    for job_id in ("stuck0000001", "good00000001"):
        run = RunDir(tmp_path / "runs" / job_id)
        run.path.mkdir(parents=True)
        record = JobRecord(
            id=job_id,
            notebook="/nb.ipynb",
            target="local",
            kernel="python3",
            state=JobState.SUCCEEDED,
            created_at=old,
            finished_at=old,
        )
        run.write(record)
        store.put_job(record, str(run.path))
        runs[job_id] = run
    blocker = runs["stuck0000001"].path.with_name(".pruned-stuck0000001")
    blocker.mkdir()
    (blocker / "keep").write_text("x")
    with sqlite3.connect(tmp_path / "store" / "jobs.sqlite") as db:
        db.execute(
            "INSERT INTO jobs (id, run_dir, notebook, state, created_at, owner, sweep, server_user, record) "
            "VALUES ('bad000000001', NULL, 'x', 'succeeded', 1, '', NULL, ?, 'not a record')",
            (store.user,),
        )
    caplog.set_level(logging.WARNING, logger="jupyter_promote")
    try:
        # When the retention pass runs
        removed = await manager.remove_older_than(86400)
        # Then the good job is removed, the others are kept, each said in one line
        said = [r.getMessage() for r in caplog.records]
        print(removed, said)
        assert removed == ["good00000001"]
        assert not runs["good00000001"].path.exists() and runs["stuck0000001"].exists()
        assert any("bad000000001" in line for line in said) and any("stuck0000001" in line for line in said)
        assert all("\n" not in line for line in said)
    finally:
        await manager.close()
        store.close()
