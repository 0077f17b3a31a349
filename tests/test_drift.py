"""Scheduled runs judged against their own history: the drift math (robust z-score, no spread, too little
history, the environment's packages), and a real scheduled job through a real server whose metric moved
away from its schedule's earlier runs: a drift alert in its events and its store, drift.json, the report's
sparkline, the record's summary and ``jupyter promote status``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NOTEBOOKS

from jupyter_promote.analysis import drift
from jupyter_promote.analysis.parity import Tolerance
from jupyter_promote.events.authority import job_events
from jupyter_promote.launch.history import lock_facts
from jupyter_promote.models import JobRecord, JobState
from jupyter_promote.report.drift import sparkline
from jupyter_promote.rundir import RunDir
from jupyter_promote.schedule.store import ScheduleStore

KERNEL = json.loads((NOTEBOOKS / "success.ipynb").read_text())["metadata"]


# -- the math ------------------------------------------------------------------------------------------------
def test_a_value_far_from_the_median_drifts_by_its_robust_z_score():
    # Given five runs whose loss varies a little, and one odd run among them
    history = [0.41, 0.42, 0.43, 0.42, 5.0]
    # When this run's loss is close to the median, Then it is steady (the odd run moves neither median nor MAD)
    steady = drift.metric_drift("loss", 0.425, history)
    assert steady["median"] == 0.42 and steady["mad"] == pytest.approx(0.01)
    assert steady["z"] == pytest.approx(0.005 / (1.4826 * 0.01)) and not steady["drifted"]
    assert steady["basis"] == "mad" and steady["history"] == history
    # When it is far from it, Then it drifted, and the message says by how much
    moved = drift.metric_drift("loss", 0.92, history)
    assert moved["drifted"] and moved["z"] == pytest.approx(0.5 / (1.4826 * 0.01))
    assert drift.metric_message(moved) == "loss drifted: 0.92 vs a median of 0.42 over the last 5 runs (robust z 33.7)"
    # And the threshold is the caller's: 3.5 by default
    assert not drift.metric_drift("loss", 0.46, history)["drifted"]  # z 2.7
    assert drift.metric_drift("loss", 0.46, history, threshold=2.0)["drifted"]


def test_runs_with_no_spread_are_judged_by_the_parity_tolerance_or_exactly():
    history = [100.0] * 5
    # no tolerance: exact equality
    assert not drift.metric_drift("acc", 100.0, history)["drifted"]
    exact = drift.metric_drift("acc", 100.0001, history)
    assert exact["drifted"] and exact["basis"] == "exact" and exact["z"] is None and exact["mad"] == 0
    assert "every past run had the same value" in drift.metric_message(exact)
    # an absolute tolerance, then a relative one (1% of the median)
    assert not drift.metric_drift("acc", 100.0001, history, Tolerance(abs=0.001))["drifted"]
    assert drift.metric_drift("acc", 100.01, history, Tolerance(abs=0.001))["basis"] == "tolerance"
    assert not drift.metric_drift("acc", 100.5, history, Tolerance(rel=0.01))["drifted"]
    assert drift.metric_drift("acc", 102.0, history, Tolerance(rel=0.01))["drifted"]


def test_past_values_that_vary_though_most_are_the_median_are_scaled_by_their_mean_deviation():
    # Given past runs 1, 1, 1, 2, 2 (a MAD of 0, but they vary)
    past = [1, 1, 1, 2, 2]
    # Then a value already seen twice is no drift, one far away is
    seen, far = drift.metric_drift("acc", 2.0, past), drift.metric_drift("acc", 9.0, past)
    assert (seen["basis"], seen["drifted"]) == ("mad", False) and seen["z"] < 3.5
    assert (far["basis"], far["drifted"]) == ("mad", True)


def test_values_near_the_float_limits_drift_with_a_finite_score_that_json_keeps():
    verdict = drift.metric_drift("x", 1e308, [-1e308, -9e307, -8e307])
    assert verdict["drifted"] and verdict["z"] == 1e9
    json.dumps(verdict, allow_nan=False)


def test_too_little_history_gives_no_verdict():
    # Given two earlier runs only (three are needed)
    row = drift.metric_drift("loss", 9.0, [0.4, 0.5])
    assert row["problem"] == "not enough history: 2 runs" and not row["drifted"] and row["basis"] == "history"
    result = drift.judge({"loss": 9.0, "name": "x"}, [{"loss": 0.4}, {"loss": 0.5}], None)
    # Then the whole verdict says so (a metric that is not a number is not judged at all)
    assert result["verdict"] == "not enough history" and [r["metric"] for r in result["metrics"]] == ["loss"]
    assert drift.lines(result) == [
        "drift against the schedule's last 2 runs: NOT ENOUGH HISTORY",
        "  loss 9: not enough history: 2 runs",
    ]


def test_only_the_last_runs_of_the_window_count():
    # Given twelve runs: two old ones around 10, then ten around 1
    past = [{"loss": 10.0}, {"loss": 10.1}] + [{"loss": 1.0 + i / 100} for i in range(10)]
    # When this run reports 10.05 with a window of ten, Then only the ten recent runs count: it drifted
    (row,) = drift.metrics_drift({"loss": 10.05}, past, window=10)
    assert len(row["history"]) == 10 and row["drifted"]
    # And a run that did not report the metric is left out of its history
    (row,) = drift.metrics_drift({"loss": 1.0}, [{"loss": 1.0}, {}, {"loss": 1.0}, {"other": 3}], window=10)
    assert row["history"] == [1.0, 1.0]


def test_the_environment_drifts_when_its_lock_changes_and_says_what_changed():
    before = {"lock_hash": "sha256:a", "python": "3.11.9", "packages": {"numpy": "1.26.4", "tqdm": "4.66.0"}}
    same = drift.environment_drift(before, dict(before), "the previous run (job j1)")
    assert not same["drifted"] and same["problem"] is None
    after = {"lock_hash": "sha256:b", "python": "3.11.10", "packages": {"numpy": "2.0.1", "rich": "13.7.1"}}
    changed = drift.environment_drift(before, after, "the schedule's creation")
    assert changed["drifted"]
    assert changed["changed"] == [{"name": "numpy", "before": "1.26.4", "after": "2.0.1"}]
    assert changed["added"] == [{"name": "rich", "version": "13.7.1"}]
    assert changed["removed"] == [{"name": "tqdm", "version": "4.66.0"}]
    assert drift.environment_message(changed) == (
        "the environment changed since the schedule's creation: python 3.11.9 -> 3.11.10; numpy 1.26.4 -> 2.0.1; "
        "+rich 13.7.1; -tqdm 4.66.0"
    )
    # a lock whose hash changed with the same packages (a source's hash) still drifted, said by its hash
    hashed = drift.environment_drift(before, {**before, "lock_hash": "sha256:c"}, "x")
    assert drift.environment_changes(hashed) == "the lock's content hash changed (sha256:a -> sha256:c)"
    # nothing to compare with
    assert drift.environment_drift(before, None, "x")["problem"] == "this run has no environment lock"
    # a lock as freeze writes it, its names normalised
    lock = {
        "content_hash": "sha256:d",
        "python": {"version": "3.12.1"},
        "packages": [{"name": "Foo_Bar", "version": "1"}],
    }
    assert lock_facts(lock) == {"lock_hash": "sha256:d", "python": "3.12.1", "packages": {"foo-bar": "1"}}
    assert lock_facts(None, "sha256:e") == {"lock_hash": "sha256:e", "python": None, "packages": {}}


def test_runs_read_as_one_series_per_metric():
    runs = [("a", {"loss": 1.0, "tag": "x"}), ("b", {"acc": 0.5}), ("c", {"loss": 2.0, "acc": True})]
    assert drift.series(runs) == {
        "jobs": ["a", "b", "c"],
        "metrics": {"loss": [1.0, None, 2.0], "acc": [None, 0.5, None]},
    }


def test_the_sparkline_highlights_this_run():
    svg = sparkline([1.0, 2.0, 1.5], 9.0, median=1.5, drifted=True)
    assert svg.startswith('<svg class="jp-Promote-sparkline"') and svg.count("<circle") == 4
    assert 'class="this-run"' in svg and "#cf222e" in svg and "<script" not in svg
    # this run is the highest point: at the top of the box
    assert 'class="this-run" cx="156.0" cy="4.0"' in svg
    flat = sparkline([2.0, 2.0, 2.0], 2.0)
    assert "#1a7f37" in flat and 'cy="16.0"' in flat


# -- a real scheduled job through a real server ---------------------------------------------------------------
@pytest.fixture
def jp_server_config(tmp_path, monkeypatch):
    monkeypatch.setenv("JUPYTER_PROMOTE_RUNS_DIR", str(tmp_path / "runs"))
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_promote": True}, "allow_unauthenticated_access": False},
        "PromoteExtension": {"store_path": str(tmp_path / "store" / "jobs.sqlite"), "schedule_tick_s": 0},
    }


def write_notebook(path: Path) -> Path:
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": "shift = 0.0"},
        {
            "cell_type": "code",
            "metadata": {},
            "source": "import jupyter_promote as promote\npromote.report(loss=0.42 + shift)",
        },
    ]
    for number, cell in enumerate(cells):
        cell.update(id=f"cell-{number}", execution_count=None, outputs=[])
    path.write_text(json.dumps({"cells": cells, "metadata": KERNEL, "nbformat": 4, "nbformat_minor": 5}))
    return path


async def api(jp_fetch, *path, method="GET", body=None):
    kwargs = {"method": method} if body is None else {"method": method, "body": json.dumps(body)}
    response = await jp_fetch("jupyter-promote", *path, **kwargs)
    return response.code, json.loads(response.body)


async def test_a_scheduled_run_whose_metric_moved_raises_a_drift_alert(jp_fetch, jp_serverapp, jp_root_dir, tmp_path):
    # Given a schedule frozen once, its environment recorded as it was at its creation
    write_notebook(jp_root_dir / "nightly.ipynb")
    body = {
        "name": "nightly",
        "cron": "0 3 * * *",
        "request": {"notebook": "nightly.ipynb", "parameters": {"shift": 0.5}},
    }
    code, schedule = await api(jp_fetch, "schedules", method="POST", body=body)
    created_with = schedule["frozen"]["environment"]
    assert code == 201 and created_with["lock_hash"].startswith("sha256:") and created_with["packages"]
    # And five earlier runs of it that succeeded with a steady loss, in the server's job store
    store = jp_serverapp.web_app.settings["jupyter_promote_jobs"].store
    for i, loss in enumerate([0.41, 0.42, 0.43, 0.42, 0.44]):
        run = RunDir(tmp_path / "history" / f"run{i}")
        run.path.mkdir(parents=True)
        record = JobRecord(
            id=f"hist{i}",
            notebook=str(jp_root_dir / "nightly.ipynb"),
            target="local",
            kernel="python3",
            state=JobState.SUCCEEDED,
            metrics={"loss": loss},
            created_at=time.time() - 3600 + i,
            schedule=schedule["id"],
        )
        run.write(record)
        store.put_job(record, str(run.path))
    # And since then papermill changed, as far as the environment recorded at the creation says
    changed = {
        **created_with,
        "lock_hash": "sha256:older",
        "packages": {**created_with["packages"], "papermill": "0.1"},
    }
    schedules = ScheduleStore(store.engine, store.user)
    schedules.update(schedule["id"], frozen=json.dumps({**schedule["frozen"], "environment": changed}))
    # When the schedule runs (its notebook shifted by its parameter: loss 0.92)
    code, ran = await api(jp_fetch, "schedules", schedule["id"], "run", method="POST", body={})
    record = await wait_judged(jp_fetch, ran["id"])
    # Then its record says it drifted, in the loss and in the environment
    assert record["state"] == "succeeded" and record["metrics"]["loss"] == pytest.approx(0.92)
    assert record["drift"] == {"verdict": "drift", "runs": 5, "drifted": ["loss"], "environment": True}
    # (the environment recorded at the creation is the one each run freezes: the same kernel, the same hash)
    assert record["lock_hash"] == created_with["lock_hash"]
    _, run_dir = store.get_job(ran["id"])
    # And its events hold one drift alert for the metric and one for the environment, stored for the sidebar
    alerts = [e for e in job_events(run_dir) if e["type"] == "alert" and e["kind"] == "drift"]
    assert [a["message"] for a in alerts] == [
        "loss drifted: 0.92 vs a median of 0.42 over the last 5 runs (robust z 33.7)",
        f"the environment changed since the schedule's creation: papermill 0.1 -> {created_with['packages']['papermill']}",
    ]
    _, stored = await api(jp_fetch, "jobs", ran["id"], "events")
    assert [e["seq"] for e in stored["events"] if e.get("kind") == "drift"] == [a["seq"] for a in alerts]
    # And drift.json has the whole verdict, with the history the earlier runs give
    judged = json.loads((Path(run_dir) / "drift.json").read_text())
    assert judged["jobs"] == [f"hist{i}" for i in range(5)] and judged["freeze"] == "once"
    assert judged["metrics"][0]["history"] == [0.41, 0.42, 0.43, 0.42, 0.44]
    # And the report's header shows the sparkline, this run highlighted as drifted
    page = (Path(run_dir) / "report.html").read_text()
    section = page[page.index("Drift against the schedule's runs") : page.index("<h2>Alerts</h2>")]
    assert '<svg class="jp-Promote-sparkline"' in section and 'class="this-run"' in section and "#cf222e" in section
    assert "papermill 0.1 -&gt; " in section
    # And the schedule's history, per metric, has this run last
    _, read = await api(jp_fetch, "schedules", schedule["id"])
    assert read["history"]["jobs"] == [*(f"hist{i}" for i in range(5)), ran["id"]]
    assert read["history"]["metrics"]["loss"][:5] == [0.41, 0.42, 0.43, 0.42, 0.44]
    assert read["history"]["drift"][-1]["verdict"] == "drift"
    # And `jupyter promote status` prints the verdict
    status = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "jupyter_promote.cli", "status", run_dir],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "  drift against the schedule's last 5 runs: DRIFT" in status.stdout
    assert "  loss 0.92 (median 0.42, robust z 33.7): DRIFTED" in status.stdout


async def wait_judged(jp_fetch, job_id: str, timeout: float = 60) -> dict:
    """The job's record once it ended and its end was judged (stored after its final state)."""
    for _ in range(int(timeout / 0.2)):
        _, record = await api(jp_fetch, "jobs", job_id)
        if record["state"] in ("succeeded", "failed", "cancelled") and record.get("drift"):
            return record
        await asyncio.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish: {record}")
