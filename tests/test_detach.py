"""``run --detach``, ``attach`` and ``cancel``: a job that runs on without its terminal, followed again later,
with the exit code ``run`` would have given; Ctrl-C while attached stops following, never the job."""

from __future__ import annotations

import re
import signal

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
    wait_for(lambda: job(run)["state"] == "running" or cli("status", job_id).stdout.find("running") >= 0, 60,
             "the detached job to run")  # fmt: skip
    attach = cli.popen("attach", job_id)
    wait_for(lambda: "running" in cli("status", job_id).stdout, 30, "the job to be followed")
    attach.send_signal(signal.SIGINT)
    _, stderr = attach.communicate(timeout=60)
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
