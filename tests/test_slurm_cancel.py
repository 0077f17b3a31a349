"""``scancel`` from outside while jobs wait in the Slurm queue (submitted held): a sweep's tasks cancelled one by
one (Slurm drops a pending task from its array, no row is left for it) and a single job; each ends
``cancelled``, and the CLI exits 130 as documented, never ``failed``/``lost``.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, SMALL_KERNEL, job, on_kernel, wait_for

HOLD = "--SlurmTarget.extra_directives=--hold"


@pytest.fixture
def slurm_cli(cli, small_kernel, slurm_cluster, tmp_path):
    cli.env.update(small_kernel)
    cli.nb = on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "nb")
    return cli


def state_of(run: Path) -> str:
    try:
        return str(job(run)["state"])
    except (FileNotFoundError, ValueError):
        return "pending"


def test_a_held_sweep_whose_tasks_are_scancelled_one_by_one_ends_cancelled(slurm_cli, tmp_path):
    # Given a sweep of three tasks submitted held, as one job array, each task followed while queued
    sets = tmp_path / "sets.yaml"
    sets.write_text(json.dumps([{"a": i} for i in range(3)]))
    command = ("sweep", str(slurm_cli.nb), "-f", str(sets), "--target", "slurm", "--max-parallel", "50", HOLD)
    proc = slurm_cli.popen(*command)
    sweep = wait_for(lambda: next(iter(slurm_cli.runs.glob("*-sweep-*")), None), 120, "the sweep folder")
    tasks = [sweep / "tasks" / str(i) for i in range(3)]
    wait_for(lambda: all(state_of(t) == "queued" for t in tasks), 300, "every task queued")
    ids = [job(t)["handle"]["job_id"] for t in tasks]
    try:
        # When one task is cancelled in Slurm, it alone ends cancelled (not lost) while the others wait on
        subprocess.run(["scancel", ids[1]], check=True)
        wait_for(lambda: state_of(tasks[1]) != "queued", 60, "task 1 to end")
        assert job(tasks[1])["state"] == "cancelled" and job(tasks[1])["reason"] == "cancelled", job(tasks[1])
        assert [state_of(t) for t in (tasks[0], tasks[2])] == ["queued", "queued"]
        # and then the others, one by one (the last one leaves only the array's own row in squeue)
        for slurm_id in (ids[0], ids[2]):
            subprocess.run(["scancel", slurm_id], check=True)
        proc.wait(timeout=120)
    finally:
        subprocess.run(["scancel", ids[0].split("_")[0]], check=False)
        if proc.poll() is None:
            proc.kill()
    # Then every task ended cancelled, and so did the sweep: exit 130
    records = [job(t) for t in tasks]
    assert [(r["state"], r["reason"]) for r in records] == [("cancelled", "cancelled")] * 3, records
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""


def test_a_held_job_scancelled_while_queued_ends_cancelled(slurm_cli):
    # Given a single job submitted held, waiting in the queue
    proc = slurm_cli.popen("run", str(slurm_cli.nb), "--target", "slurm", HOLD)
    run = wait_for(lambda: next(iter(slurm_cli.runs.glob("*")), None), 120, "a run dir")
    wait_for(lambda: state_of(run) == "queued", 300, "the job queued")
    # When it is cancelled in Slurm before it ran
    subprocess.run(["scancel", job(run)["handle"]["job_id"]], check=True)
    proc.wait(timeout=120)
    # Then it ended cancelled and the CLI exits 130
    record = job(run)
    assert (record["state"], record["reason"]) == ("cancelled", "cancelled"), record
    assert proc.returncode == 130, proc.stderr.read() if proc.stderr else ""
