"""``run --detach``, ``attach`` and ``cancel``: a job that runs on without its terminal, followed again later,
with the exit code ``run`` would have given; Ctrl-C while attached stops following, never the job."""

from __future__ import annotations

import json
import re
import signal
import time

from conftest import NOTEBOOKS, job, wait_for


def detached(cli, notebook: str, *args: str) -> str:
    result = cli("run", str(NOTEBOOKS / notebook), *args, "--detach")
    assert result.returncode == 0, result.stderr
    job_id = re.search(r"job ([0-9a-f]{12}) submitted", result.stderr).group(1)
    assert f"jupyter promote attach {job_id}" in result.stderr
    return job_id


def test_a_detached_job_is_attached_to_and_ends_with_the_exit_code_run_gives(cli):
    job_id = detached(cli, "failing.ipynb")
    attached = cli("attach", job_id)
    assert attached.returncode == 1, attached.stderr  # as `run` of a failing notebook exits
    assert f"attached to job {job_id}" in attached.stderr and "failed (error)" in attached.stderr
    again = cli("attach", job_id)  # a job that already ended: its end again, at once
    assert again.returncode == 1 and "failed (error)" in again.stderr


def test_ctrl_c_while_attached_stops_following_then_cancel_stops_the_job(cli):
    job_id = detached(cli, "hang.ipynb")
    run = cli.only_run()
    wait_for(
        lambda: job(run)["state"] == "running" or cli("status", job_id).stdout.find("running") >= 0,
        60,
        "the detached job to run",
    )
    attach = cli.popen("attach", job_id)
    # When attach says it is attached (a Ctrl-C before that is an interrupted command, not a stop of following)
    first = ""
    while "attached to job" not in first and attach.poll() is None:
        first += attach.stderr.readline()
    assert "attached to job" in first, first
    attach.send_signal(signal.SIGINT)
    _, stderr = attach.communicate(timeout=60)
    stderr = first + stderr
    assert attach.returncode == 130 and f"stopped following job {job_id}; it goes on" in stderr, stderr
    assert "running" in cli("status", job_id).stdout  # the job went on
    cancelled = cli("cancel", job_id)
    assert cancelled.returncode == 0 and f"job {job_id} cancelled" in cancelled.stderr, cancelled.stderr
    assert job(run)["state"] == "cancelled"
    assert cli("attach", job_id).returncode == 130  # cancelled, as `run` reports it
    assert "nothing to cancel" in cli("cancel", job_id).stderr


def test_detach_applies_to_one_job(cli):
    result = cli("run", str(NOTEBOOKS / "success.ipynb"), "--replicas", "2", "--detach")
    assert result.returncode == 2
    assert "--detach: applies to one job" in result.stderr


def detached_sweep(cli, *args: str) -> str:
    result = cli("sweep", str(NOTEBOOKS / "hang.ipynb"), *args, "--detach", timeout=180)
    assert result.returncode == 0, result.stderr
    sweep_id = re.search(r"sweep (s[0-9a-f]{12}) runs on in the background", result.stderr).group(1)
    assert f"jupyter promote attach {sweep_id}" in result.stderr
    return sweep_id


def test_a_detached_sweep_runs_on_and_is_attached_to_with_its_summary_and_exit_code(cli):
    # Given a sweep of two tasks, one at a time, started in the background
    started = time.monotonic()
    sweep_id = detached_sweep(cli, "-p", "seconds", "2", "3", "--max-parallel", "1")
    assert time.monotonic() - started < 60  # it returned while the tasks run
    # When attached to
    attached = cli("attach", sweep_id, timeout=240)
    # Then it follows the sweep to its end: both tasks, the summary, the exit code the sweep gives
    assert attached.returncode == 0, attached.stderr
    assert f"attached to sweep {sweep_id}" in attached.stderr
    assert "[1/2]" in attached.stderr and "[2/2]" in attached.stderr and "succeeded" in attached.stderr
    [sweep_dir] = [p for p in cli.runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert sweep_id[1:7] in sweep_dir.name
    # And attaching again to the ended sweep answers at once, the same
    assert cli("attach", sweep_id).returncode == 0


def test_cancel_stops_a_detached_sweep_and_its_tasks(cli):
    sweep_id = detached_sweep(cli, "-p", "seconds", "300", "301")
    cancelled = cli("cancel", sweep_id, timeout=180)
    assert cancelled.returncode == 0 and f"sweep {sweep_id} cancelled" in cancelled.stderr, cancelled.stderr
    attached = cli("attach", sweep_id)
    assert attached.returncode == 130, attached.stderr
    [sweep_dir] = [p for p in cli.runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    states = [json.loads(p.read_text())["state"] for p in sweep_dir.rglob("job.json")]
    assert states == ["cancelled", "cancelled"], states


def test_a_refused_detached_sweep_says_why_at_once(cli):
    result = cli("sweep", str(NOTEBOOKS / "hang.ipynb"), "-p", "seconds", "1", "--target", "nowhere", "--detach")
    assert result.returncode == 2 and "nowhere" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_attach_to_an_unknown_sweep_is_one_line(cli):
    result = cli("attach", "s0123456789ab")
    assert result.returncode != 0 and len(result.stderr.strip().splitlines()) == 1
    assert "no detached sweep" in result.stderr
