"""``jupyter promote prune``: finished jobs older than an age go, with their run directories; a running job never."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest
from conftest import NOTEBOOKS, job, wait_for

from jupyter_promote.runtime.signing import MAC_FIELD, event_mac, read_key


def age(run, days: float) -> None:
    """Make a finished job look as if it ran ``days`` earlier: its record's times and its events' shifted back."""
    shift = days * 86400
    record = job(run)
    for key in ("created_at", "started_at", "finished_at", "updated_at"):
        if record.get(key):
            record[key] -= shift
    (run / "job.json").write_text(json.dumps(record))
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines() if line.strip()]
    key = read_key(str(run))  # the runner signed its events, their times included: sign the shifted ones again
    shifted = [{**e, "ts": e["ts"] - shift} for e in events]
    signed = [{**e, MAC_FIELD: event_mac(key, e)} if key and MAC_FIELD in e else e for e in shifted]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in signed))


def test_prune_removes_old_finished_jobs_keeps_recent_and_running_ones(cli):
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    assert cli("run", str(NOTEBOOKS / "failing.ipynb")).returncode == 1
    old_ok, old_failed = sorted(cli.runs.iterdir(), key=lambda p: job(p)["state"], reverse=True)
    age(old_ok, 40)
    age(old_failed, 40)
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    recent = next(p for p in cli.runs.iterdir() if p not in (old_ok, old_failed))
    running = cli.popen("run", str(NOTEBOOKS / "hang.ipynb"), "--stall-timeout", "600")
    try:
        hang = wait_for(
            lambda: next((p for p in cli.runs.iterdir() if "hang" in p.name and job(p)["state"] == "running"), None),
            120,
            "the hanging job to run",
        )
        record = job(hang)
        record["created_at"] = time.time() - 90 * 86400  # however old, it has not ended
        (hang / "job.json").write_text(json.dumps(record))

        dry = cli("prune", "--older-than", "30d", "--state", "failed", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert f"would remove {job(old_failed)['id']}" in dry.stdout and job(old_ok)["id"] not in dry.stdout
        assert old_failed.exists()  # a dry run removes nothing

        result = cli("prune", "--older-than", "30d")
        assert result.returncode == 0, result.stderr
        assert not old_ok.exists() and not old_failed.exists()
        assert recent.exists() and hang.exists()
        assert "removed 2 job(s)" in result.stdout
        assert not [p for p in os.listdir(cli.runs) if p.startswith(".pruned-")]
    finally:
        running.terminate()
        running.communicate(timeout=60)


def _append_event(run, **fields) -> None:
    lines = (run / "events.jsonl").read_text().splitlines()
    event = {"seq": json.loads(lines[-1])["seq"] + 1, "job": job(run)["id"], **fields}
    (run / "events.jsonl").write_text("\n".join([*lines, json.dumps(event)]) + "\n")


def test_status_and_prune_take_no_time_from_an_event_whose_ts_is_text(cli):
    # Given two old finished jobs, one whose events end with a status whose ts is text (a writer's bug)
    for _ in range(2):
        assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    healthy, text_ts = sorted(cli.runs.iterdir())
    text_ts_id = job(text_ts)["id"]
    for run in (healthy, text_ts):
        age(run, 40)
    _append_event(text_ts, ts="yesterday", type="status", state="succeeded", stage="finished")
    # When status lists the jobs, and prune removes the old ones
    status = cli("status")
    pruned = cli("prune", "--older-than", "30d")
    # Then the event is set aside: both commands see two old succeeded jobs, and prune removes both
    assert status.returncode == 0, status.stderr
    assert text_ts_id in status.stdout and status.stdout.count("succeeded") == 2, status.stdout
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 2 job(s)" in pruned.stdout and not healthy.exists() and not text_ts.exists()


def test_status_and_prune_go_on_past_a_job_whose_record_is_unreadable(cli):
    # Given two old finished jobs, one whose job.json is torn
    for _ in range(2):
        assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    healthy, torn = sorted(cli.runs.iterdir())
    healthy_id = job(healthy)["id"]
    age(healthy, 40)
    (torn / "job.json").write_text('{"id": "torn", "state": ')
    # When status lists the jobs, and prune removes the old ones
    status = cli("status")
    pruned = cli("prune", "--older-than", "30d")
    # Then each lists or removes the healthy job and says, in one line, that it skipped the torn one
    assert status.returncode == 0, status.stderr
    assert healthy_id in status.stdout
    assert len(status.stderr.splitlines()) == 1 and str(torn) in status.stderr, status.stderr
    assert pruned.returncode == 0, pruned.stderr
    assert "removed 1 job(s)" in pruned.stdout and not healthy.exists() and torn.exists()
    assert len(pruned.stderr.splitlines()) == 1 and str(torn) in pruned.stderr, pruned.stderr


def test_a_record_whose_end_time_is_text_ends_when_it_was_last_updated(tmp_path):
    from jupyter_promote.housekeeping import ended_at, prunable
    from jupyter_promote.models import JobRecord, JobState
    from jupyter_promote.rundir import RunDir

    # Given two finished jobs' run directories, one whose record says it finished "yesterday"
    now = time.time()
    runs = []
    for name, finished in (("text", "yesterday"), ("number", now - 10 * 86400)):
        run = RunDir(tmp_path / name)
        run.path.mkdir()
        record = JobRecord(
            id=name,
            notebook="nb.ipynb",
            target="local",
            kernel="python3",
            state=JobState.SUCCEEDED,
            created_at=now - 20 * 86400,
            finished_at=finished,
        )
        run.write(record)
        runs.append(run)
    # When their ends are read, and the ones older than a week are found
    found = [p.record.id for p in prunable(runs, 7 * 86400, now=now + 8 * 86400, skipped=print)]
    # Then the text is no time: it ended when its record was last written; both are older than a week
    assert ended_at(runs[0].read()) == runs[0].read().updated_at
    assert sorted(found) == ["number", "text"]


def test_prune_refuses_a_bad_age_with_one_line(cli):
    result = cli("prune", "--older-than", "a month")
    assert result.returncode == 2
    assert result.stderr.strip() == "jupyter promote: error: --older-than 'a month': not an age (use e.g. 30d, 12h, 2w)"


# --- the retention setting, applied by the server -------------------------------------------------------------


@pytest.fixture
def store_before_start(tmp_path):
    """A store as a server left it: a job that ended 10 days ago, one that ended an hour ago, each with its run
    directory, and one that never ended (its server died 30 days ago)."""
    from jupyter_promote.models import JobRecord, JobState
    from jupyter_promote.rundir import RunDir
    from jupyter_promote.server.store import JobStore

    now = time.time()
    path = str(tmp_path / "store" / "jobs.sqlite")
    store = JobStore(path)
    jobs = {}
    for n, (name, state, ended_days_ago) in enumerate(
        (("old", "succeeded", 10), ("recent", "failed", 1 / 24), ("unended", "running", None))
    ):
        started = now - (ended_days_ago or 30) * 86400 - 60
        record = JobRecord(
            id=f"{n}123456789ab",
            notebook=str(NOTEBOOKS / "success.ipynb"),
            target="local",
            kernel="python3",
            state=JobState(state),
            created_at=started,
            started_at=started,
            finished_at=None if ended_days_ago is None else started + 60,
        )
        run = RunDir(tmp_path / "runs" / name)
        run.path.mkdir(parents=True)
        run.write(record)
        store.put_job(record, str(run.path))
        jobs[name] = (record.id, run.path)
    store.close()
    return path, jobs


@pytest.fixture
def jp_server_config(store_before_start, tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": store_before_start[0]},
        "PromoteSettings": {"retention": "7d"},
    }


async def test_the_server_applies_the_retention_setting_to_finished_jobs_only(jp_fetch, store_before_start):
    from test_server import api, error

    jobs = store_before_start[1]
    old_id, old_dir = jobs["old"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and old_dir.exists():
        await asyncio.sleep(0.2)
    # the job that ended 10 days ago is gone, record and run directory; the rest are kept
    assert not old_dir.exists()
    assert (await error(jp_fetch, "jobs", old_id))[0] == 404
    for name in ("recent", "unended"):
        job_id, run_dir = jobs[name]
        _, record = await api(jp_fetch, "jobs", job_id)
        assert run_dir.exists() and record["id"] == job_id
    # the unended one was settled at the start (its server is gone), and is recent now: kept
    _, unended = await api(jp_fetch, "jobs", jobs["unended"][0])
    assert unended["state"] == "failed" and unended["reason"] == "lost"


def test_prune_takes_the_retention_setting_as_its_default_age(cli):
    assert cli("run", str(NOTEBOOKS / "success.ipynb")).returncode == 0
    [run] = cli.runs.iterdir()
    age(run, 3)
    kept = cli("prune", "--dry-run", "--PromoteSettings.retention=5d")
    assert "would remove 0 job(s)" in kept.stdout and "older than 5d" in kept.stdout
    pruned = cli("prune", "--PromoteSettings.retention=2d")
    assert "removed 1 job(s)" in pruned.stdout and not run.exists()
