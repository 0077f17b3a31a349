"""Schedules: cron and time-zone due times, fired exactly once by two servers on one store, missed runs and
overlapping runs per policy, bad input refused with nothing stored, and a schedule that fires a real local job
through the server. Every clock here is the test's own: nothing waits for a due time.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import shutil
import subprocess
import sys
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from conftest import NOTEBOOKS
from tornado.httpclient import HTTPClientError

from jupyter_promote.cli.schedule import existing_notebook
from jupyter_promote.config import PromoteSettings
from jupyter_promote.errors import UsageError
from jupyter_promote.launch.request import job_record, new_job_id
from jupyter_promote.models import JobState
from jupyter_promote.schedule import ScheduleExists
from jupyter_promote.schedule.create import changes, new_schedule
from jupyter_promote.schedule.model import due_after, iso
from jupyter_promote.schedule.scheduler import MAX_CATCH_UP, Scheduler
from jupyter_promote.schedule.store import ScheduleStore
from jupyter_promote.server.store import JobStore

BERLIN = ZoneInfo("Europe/Berlin")
T0 = datetime.datetime(2026, 6, 1, 12, 0, 30, tzinfo=datetime.timezone.utc)


class Clock:
    """The tests' clock: it moves when a test moves it."""

    def __init__(self, now: datetime.datetime) -> None:
        self.now = now

    def __call__(self) -> datetime.datetime:
        return self.now


class World:
    """A store, its schedules, and a scheduler whose jobs are recorded in the store as a server records them
    (pending, carrying the schedule's id) without running them."""

    def __init__(self, url: str, tmp: Path, clock: Clock) -> None:
        self.jobs = JobStore(url)
        self.schedules = ScheduleStore(self.jobs.engine, self.jobs.user)
        self.settings = PromoteSettings()
        self.settings.runs_dir = str(tmp / "runs")
        self.submitted: list[tuple[str, str]] = []
        self.scheduler = Scheduler(self.schedules, self.submit, self.settings, clock=clock)

    async def submit(self, request) -> str:
        record = job_record(request, new_job_id())
        self.jobs.put_job(record, None)
        self.submitted.append((record.id, request.schedule))
        return record.id

    def end(self, job_id: str) -> None:
        record, _ = self.jobs.get_job(job_id)
        record.state = JobState.SUCCEEDED
        self.jobs.put_job(record, None)


@pytest.fixture
def notebook(tmp_path: Path) -> Path:
    path = tmp_path / "nightly.ipynb"
    shutil.copy(NOTEBOOKS / "success.ipynb", path)
    return path


def create(world: World, notebook: Path, now: datetime.datetime, **fields):
    body = {"cron": "0 * * * *", "request": {"notebook": str(notebook)}, **fields}
    schedule, text = new_schedule(body, existing_notebook, world.settings, "me", now.timestamp())
    world.schedules.add(schedule, text)
    return schedule


def test_due_times_follow_the_time_zone_through_the_spring_forward_day():
    # Given a daily 02:30 schedule in Berlin, the night the clocks jump from 02:00 to 03:00 (29 March 2026)
    start = datetime.datetime(2026, 3, 28, 12, tzinfo=BERLIN).timestamp()
    # Then the due times are croniter's: 03:30 CEST that day (02:30 does not exist), 02:30 CEST after it
    assert [iso(d, "Europe/Berlin") for d in due_after("30 2 * * *", "Europe/Berlin", start, 3)] == [
        "2026-03-29T03:30:00+02:00",
        "2026-03-30T02:30:00+02:00",
        "2026-03-31T02:30:00+02:00",
    ]
    # And 03:00 in Berlin is 01:00 UTC in summer, 02:00 UTC in winter
    winter = datetime.datetime(2026, 1, 10, tzinfo=BERLIN).timestamp()
    first = datetime.datetime.fromtimestamp(due_after("0 3 * * *", "Europe/Berlin", winter)[0], datetime.timezone.utc)
    assert first.hour == 2


@pytest.mark.parametrize(
    ("cron", "zone_name", "start", "expected"),
    [
        # a daily noon in Berlin across the spring-forward and the fall-back: noon local time, once a day
        ("0 12 * * *", "Europe/Berlin", (2026, 3, 28, 12), ["2026-03-29T12:00:00+02:00", "2026-03-30T12:00:00+02:00"]),
        ("0 12 * * *", "Europe/Berlin", (2026, 10, 24, 12), ["2026-10-25T12:00:00+01:00", "2026-10-26T12:00:00+01:00"]),
        # a weekday 09:00 from the Friday before the change: Monday 09:00 summer time
        ("0 9 * * 1-5", "Europe/Berlin", (2026, 3, 27, 9), ["2026-03-30T09:00:00+02:00", "2026-03-31T09:00:00+02:00"]),
        # 01:30 in New York, which the fall-back repeats: once, at its first occurrence, then 01:30 winter time
        (
            "30 1 * * *",
            "America/New_York",
            (2026, 11, 1, 0),
            ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"],
        ),
        # every half hour through the repeated hour: each wall-clock time once
        (
            "*/30 * * * *",
            "Europe/Berlin",
            (2026, 10, 25, 1, 50),
            ["2026-10-25T02:00:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-25T03:00:00+01:00"],
        ),
    ],
)
def test_due_times_are_wall_clock_times_across_both_daylight_saving_changes(cron, zone_name, start, expected):
    after = datetime.datetime(*start, tzinfo=ZoneInfo(zone_name)).timestamp()
    assert [iso(d, zone_name) for d in due_after(cron, zone_name, after, len(expected))] == expected


def test_a_cron_expression_that_never_matches_a_date_is_refused_in_one_line(tmp_path, notebook):
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, Clock(T0))
    with pytest.raises(UsageError, match=r"^cron '0 0 30 2 \*': never matches a date \(day 30 of month 2\)$"):
        create(world, notebook, T0, name="never", cron="0 0 30 2 *")
    assert world.schedules.all() == []


async def test_two_servers_on_one_store_fire_a_due_time_exactly_once(store_url, tmp_path, notebook):
    # Given two schedulers (two servers) on one store and one hourly schedule
    clock = Clock(T0)
    one, two = World(store_url, tmp_path, clock), World(store_url, tmp_path, clock)
    schedule = create(one, notebook, T0)
    # When both tick just after the due time, at once, and again
    clock.now = T0.replace(hour=13, minute=0, second=5)
    await asyncio.gather(one.scheduler.tick(), two.scheduler.tick(), one.scheduler.tick(), two.scheduler.tick())
    await asyncio.gather(one.scheduler.tick(), two.scheduler.tick())
    # Then exactly one job was fired, carrying the schedule's id, and the next due time is 14:00
    fired = one.submitted + two.submitted
    assert [s for _, s in fired] == [schedule.id]
    stored = one.schedules.get(schedule.id)
    assert stored.last_job == fired[0][0] and iso(stored.next_due, "UTC") == "2026-06-01T14:00:00+00:00"
    assert json.loads(one.jobs.list_jobs()[0][0])["schedule"] == schedule.id


@pytest.mark.parametrize(
    ("policy", "runs", "said"),
    [
        ("latest", 1, "missed 5 runs while the server was down; ran the latest (2026-06-01T17:00:00+00:00) once"),
        ("all", 5, "missed 5 runs while the server was down; ran each of them (missed: all)"),
        ("skip", 0, "missed 5 runs while the server was down; ran none of them (missed: skip)"),
    ],
)
async def test_runs_missed_while_the_server_was_down_follow_the_policy(tmp_path, notebook, policy, runs, said):
    # Given an hourly schedule, and a server that was down from 12:00 to 17:30
    clock = Clock(T0)
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, clock)
    schedule = create(world, notebook, T0, missed=policy, overlap="allow")
    # When the server starts again and ticks
    clock.now = T0.replace(hour=17, minute=30)
    await world.scheduler.tick()
    # Then the policy decided how many ran, and the schedule's note says so
    assert len(world.submitted) == runs
    assert world.schedules.get(schedule.id).note == said
    # And nothing more runs until the next due time, which runs normally
    await world.scheduler.tick()
    assert len(world.submitted) == runs
    clock.now = T0.replace(hour=18, minute=0, second=10)
    await world.scheduler.tick()
    assert len(world.submitted) == runs + 1


async def test_a_long_downtime_runs_at_most_the_latest_catch_up_runs(tmp_path, notebook):
    # Given an hourly schedule that runs whatever it missed, and a server down for two days
    clock = Clock(T0)
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, clock)
    schedule = create(world, notebook, T0, missed="all", overlap="allow")
    clock.now = T0 + datetime.timedelta(days=2, minutes=30)
    await world.scheduler.tick()
    # Then 48 were missed, the latest 24 run, and the note says so
    assert len(world.submitted) == MAX_CATCH_UP == 24
    assert world.schedules.get(schedule.id).note == (
        "missed 48 runs while the server was down; ran the latest 24 of them (missed: all, at most 24)"
    )


async def test_a_new_cron_expression_counts_from_now_not_from_the_last_run(tmp_path, notebook):
    # Given a yearly schedule created two days ago that runs whatever it missed
    clock = Clock(T0)
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, clock)
    schedule = create(world, notebook, T0, cron="0 0 1 1 *", missed="all", overlap="allow")
    clock.now = T0 + datetime.timedelta(days=2)
    # When its cron expression becomes every five minutes (PATCH schedules/{id})
    world.schedules.update(schedule.id, **changes({"cron": "*/5 * * * *"}, schedule, clock.now.timestamp()))
    await world.scheduler.tick()
    # Then the two days under the old expression are not five-minute runs it missed: none runs now, and the
    # next one runs when it is due
    assert world.submitted == [] and world.schedules.get(schedule.id).note in (None, "")
    clock.now += datetime.timedelta(minutes=5)
    await world.scheduler.tick()
    assert len(world.submitted) == 1


@pytest.mark.parametrize("overlap", ["skip", "queue", "allow"])
async def test_a_due_time_while_the_previous_job_runs_follows_the_overlap_policy(tmp_path, notebook, overlap):
    # Given a schedule each minute whose first job is still running at the second due time
    clock = Clock(T0)
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, clock)
    schedule = create(world, notebook, T0, cron="* * * * *", overlap=overlap)
    clock.now = T0.replace(minute=1, second=2)
    await world.scheduler.tick()
    first = world.submitted[0][0]
    clock.now = T0.replace(minute=2, second=2)
    await world.scheduler.tick()
    stored = world.schedules.get(schedule.id)
    # Then skip skips it (counted), queue keeps it, allow runs it beside the first
    assert len(world.submitted) == {"skip": 1, "queue": 1, "allow": 2}[overlap]
    assert stored.skipped == (1 if overlap == "skip" else 0)
    assert (stored.queued is not None) == (overlap == "queue")
    # When the first job ends, a queued due time runs at the next tick (before the next due time)
    world.end(first)
    clock.now = T0.replace(minute=2, second=20)
    await world.scheduler.tick()
    assert len(world.submitted) == {"skip": 1, "queue": 2, "allow": 2}[overlap]
    assert world.schedules.get(schedule.id).queued is None


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path, notebook):
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, Clock(T0))
    create(world, notebook, T0, name="nightly")
    bad = [
        ({"cron": "61 * * * *"}, "cron '61 * * * *': not a cron expression"),
        ({"cron": "0 3 * *"}, "cron '0 3 * *': not a cron expression"),
        ({"timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus': unknown time zone"),
        ({"request": {"notebook": str(tmp_path / "gone.ipynb")}}, "gone.ipynb: no such notebook"),
        ({"request": {"notebook": str(notebook), "replicas": 2}}, "request: a schedule fires one job"),
        ({"missed": "sometimes"}, "missed: 'sometimes' must be one of latest, all, skip"),
    ]
    for fields, message in bad:
        with pytest.raises(UsageError) as info:
            create(world, notebook, T0, name="other", **fields)
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ScheduleExists, match="schedule name 'nightly': another schedule has it"):
        create(world, notebook, T0, name="nightly")
    assert [s.name for s in world.schedules.all()] == ["nightly"]


async def test_a_schedule_whose_notebook_is_gone_says_so_and_runs_nothing(tmp_path, notebook):
    # Given a schedule that runs the notebook as it is at each due time, and the notebook deleted since
    clock = Clock(T0)
    world = World(str(tmp_path / "jobs.sqlite"), tmp_path, clock)
    schedule = create(world, notebook, T0, freeze="each_run")
    notebook.unlink()
    # When it is due
    clock.now = T0.replace(hour=13, minute=0, second=1)
    await world.scheduler.tick()
    # Then nothing ran and its note says why; a schedule frozen once would still run its frozen copy
    assert world.submitted == []
    assert (
        world.schedules.get(schedule.id).note
        == f"due 2026-06-01T13:00:00+00:00: not run: notebook {notebook}: no longer exists"
    )


def test_the_command_line_creates_lists_and_refuses(tmp_path, notebook):
    db = str(tmp_path / "jobs.sqlite")
    promote = [sys.executable, "-m", "jupyter_promote.cli", "schedule"]
    done = subprocess.run(
        [*promote, "create", str(notebook), "--cron", "30 2 * * *", "--tz", "Europe/Berlin", "--name", "n", "--db", db],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert len([line for line in done.stdout.splitlines() if line.startswith("  20")]) == 5
    bad = subprocess.run(
        [*promote, "create", str(notebook), "--cron", "0 3 * * *", "--tz", "Nowhere/Land", "--db", db],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip() == "jupyter promote: error: timezone 'Nowhere/Land': unknown time zone"
    listed = subprocess.run([*promote, "list", "--db", db], capture_output=True, text=True, check=True)
    assert listed.stdout.count("\n") == 1 and " n " in listed.stdout


# -- through a real server -----------------------------------------------------------------------------------
@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "store" / "jobs.sqlite"), "schedule_tick_s": 0},
    }


async def api(jp_fetch, *path, method="GET", body=None):
    kwargs = {"method": method}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch("jupyter-promote", *path, **kwargs)
    return response.code, json.loads(response.body)


async def refused(jp_fetch, *path, **kwargs):
    with pytest.raises(HTTPClientError) as info:
        await api(jp_fetch, *path, **kwargs)
    return info.value.code, json.loads(info.value.response.body)["message"]


def reads_beside(source: str) -> dict:
    """A notebook whose one cell runs ``source`` (on the default kernel)."""
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source}
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return {"cells": [cell], "metadata": {"kernelspec": kernelspec}, "nbformat": 4, "nbformat_minor": 4}


async def test_a_schedule_fires_a_real_job_through_the_server(jp_fetch, jp_serverapp, jp_root_dir):
    # Given a notebook that reads a file beside it
    check = "text = open('data.txt').read()\nassert text == 'as it is now', text"
    (jp_root_dir / "success.ipynb").write_text(json.dumps(reads_beside(check)))
    (jp_root_dir / "data.txt").write_text("as it was")
    body = {
        "name": "hourly",
        "cron": "0 * * * *",
        "timezone": "Europe/Berlin",
        "request": {"notebook": "success.ipynb"},
    }
    code, schedule = await api(jp_fetch, "schedules", method="POST", body=body)
    assert code == 201 and len(schedule["next"]) == 5 and schedule["freeze"] == "once"
    assert schedule["frozen"]["notebook_sha256"]
    # bad input: 400 / 409 with one line, nothing stored
    assert await refused(jp_fetch, "schedules", method="POST", body={**body, "name": "x", "cron": "nope"}) == (
        400,
        "cron 'nope': not a cron expression (five fields: minute hour day month weekday)",
    )
    assert (await refused(jp_fetch, "schedules", method="POST", body=body))[0] == 409
    missing = {**body, "name": "y", "request": {"notebook": "gone.ipynb"}}
    assert (await refused(jp_fetch, "schedules", method="POST", body=missing))[0] == 400
    _, listed = await api(jp_fetch, "schedules")
    assert [s["name"] for s in listed["schedules"]] == ["hourly"]
    # pause and resume
    _, paused = await api(jp_fetch, "schedules", schedule["id"], method="PATCH", body={"paused": True})
    assert paused["paused"] and paused["next"] == []
    _, resumed = await api(jp_fetch, "schedules", schedule["id"], method="PATCH", body={"paused": False})
    assert not resumed["paused"]
    # and, after the schedule froze it, the notebook is broken and the file beside it changes
    (jp_root_dir / "success.ipynb").write_text(json.dumps(reads_beside("raise RuntimeError('edited after')")))
    (jp_root_dir / "data.txt").write_text("as it is now")
    # When the server's scheduler ticks just after the next due time (its clock moved by the test)
    scheduler = jp_serverapp.web_app.settings["jupyter_promote_scheduler"]
    due = datetime.datetime.fromtimestamp(resumed["next_due"], datetime.timezone.utc)
    scheduler.clock = Clock(due + datetime.timedelta(seconds=3))
    (job_id,) = await scheduler.tick()
    # Then a real local job ran, carrying the schedule's id: the notebook as frozen, among the files beside it
    record = await wait_final(jp_fetch, job_id)
    assert record["state"] == "succeeded" and record["schedule"] == schedule["id"], record
    # And run-now fires another one; delete forgets the schedule (its jobs stay)
    code, ran = await api(jp_fetch, "schedules", schedule["id"], "run", method="POST", body={})
    assert code == 202 and (await wait_final(jp_fetch, ran["id"]))["schedule"] == schedule["id"]
    await api(jp_fetch, "schedules", schedule["id"], method="DELETE")
    assert (await refused(jp_fetch, "schedules", schedule["id"]))[0] == 404
    fired = json.loads((await jp_fetch("jupyter-promote", "jobs", params={"schedule": schedule["id"]})).body)
    assert sorted(j["id"] for j in fired["jobs"]) == sorted([job_id, ran["id"]])


async def wait_final(jp_fetch, job_id: str, timeout: float = 60) -> dict:
    for _ in range(int(timeout / 0.2)):
        _, record = await api(jp_fetch, "jobs", job_id)
        if record["state"] in ("succeeded", "failed", "cancelled"):
            return record
        await asyncio.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {record}")


async def test_the_preview_gives_the_next_five_due_times_and_creates_nothing(jp_fetch):
    # Given a cron expression each day at 03:00 in Berlin
    body = {"cron": "0 3 * * *", "timezone": "Europe/Berlin"}
    # When the dialog asks for its preview
    code, preview = await api(jp_fetch, "schedules", "preview", method="POST", body=body)
    # Then five due times come back, a day apart, at 03:00 Berlin time, and no schedule was created
    times = [datetime.datetime.fromisoformat(t) for t in preview["next"]]
    assert code == 200 and len(times) == 5
    assert all((t.hour, t.minute, t.utcoffset()) == (3, 0, t.astimezone(BERLIN).utcoffset()) for t in times)
    assert [(times[i + 1] - times[i]).days for i in range(4)] == [1, 1, 1, 1]
    assert (await api(jp_fetch, "schedules"))[1] == {"schedules": []}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            {"cron": "61 * * * *"},
            "cron '61 * * * *': not a cron expression (five fields: minute hour day month weekday)",
        ),
        ({"cron": "0 3 * * *", "timezone": "Mars/Olympus"}, "timezone 'Mars/Olympus': unknown time zone"),
    ],
)
async def test_the_preview_refuses_a_bad_cron_or_time_zone_in_one_line(jp_fetch, body, message):
    assert await refused(jp_fetch, "schedules", "preview", method="POST", body=body) == (400, message)
