"""End to end on a real one-node Slurm cluster (scripts/slurm-up.sh): sbatch jobs followed to the end,
a hostile parameter value, queue reasons, faults (scancel from outside, the time limit, a refused
submission), on the venv runtime ("none") and in Docker containers.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, SMALL_KERNEL, events, job, on_kernel, wait_for

HOSTILE = "x'; touch /tmp/pwned-by-promote; '"


@pytest.fixture
def slurm_cli(cli, small_kernel, slurm_cluster, tmp_path):
    cli.env.update(small_kernel)
    cli.nb = lambda name, extra=(): on_kernel(NOTEBOOKS / name, SMALL_KERNEL, tmp_path / "nb", list(extra))
    return cli


def state_of(run: Path) -> str:
    try:
        return job(run)["state"]
    except (FileNotFoundError, ValueError):
        return "pending"


def test_slurm_job_runs_in_a_venv_from_the_lock_and_a_hostile_value_stays_a_string(slurm_cli):
    # Given a parameter value that would run a command if it ever reached a shell unquoted
    nb = slurm_cli.nb("success.ipynb", ["import sys; print('interpreter', sys.executable)"])
    result = slurm_cli("run", str(nb), "--target", "slurm", "-p", "name", HOSTILE, timeout=900)
    assert result.returncode == 0, result.stderr
    run = slurm_cli.only_run()
    record = job(run)
    # Then it ran as a Slurm job, in the node's venv made from the lock, and the value arrived as a string
    assert record["state"] == "succeeded" and record["handle"]["job_id"].isdigit()
    output = (run / "output.ipynb").read_text()
    assert json.dumps(f"hello {HOSTILE}")[1:-1] in output
    assert "jupyter-promote/venvs/" in output  # the kernel was the recreated environment, not the notebook's
    assert not Path("/tmp/pwned-by-promote").exists()
    script = (run / "job.sbatch").read_text()
    assert HOSTILE not in script and "#SBATCH --job-name=promote-success" in script
    states = [e["state"] for e in events(run) if e["type"] == "status"]
    assert states[-2:] == ["running", "succeeded"] and "queued" in states


def test_scancel_from_outside_is_reported_as_cancelled(slurm_cli):
    proc = slurm_cli.popen("run", str(slurm_cli.nb("hang.ipynb")), "--target", "slurm")
    run = wait_for(
        lambda: next(iter(sorted(slurm_cli.runs.glob("*"))), None) if slurm_cli.runs.exists() else None,
        120,
        "a run dir",
    )
    wait_for(lambda: state_of(run) == "running", 300, "the job to run")
    subprocess.run(["scancel", job(run)["handle"]["job_id"]], check=True)
    proc.wait(timeout=120)
    record = job(run)
    assert proc.returncode == 130 and record["state"] == "cancelled", (record, proc.stderr.read())


def test_a_job_past_its_time_limit_is_reported_as_timeout(slurm_cli):
    # Slurm's smallest limit is a minute; it checks limits every 30 s or so
    result = slurm_cli("run", str(slurm_cli.nb("hang.ipynb")), "--target", "slurm", "--time", "1", timeout=400)
    record = job(slurm_cli.only_run())
    assert result.returncode == 1, result.stderr
    assert (record["state"], record["reason"]) == ("failed", "timeout"), record
    assert "time limit" in record["message"]


def test_a_submission_slurm_refuses_is_a_clear_error_and_leaves_nothing(slurm_cli):
    result = slurm_cli(
        "run", str(slurm_cli.nb("success.ipynb")), "--target", "slurm", "--SlurmTarget.partition=nowhere"
    )
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert "sbatch refused the job" in line and "partition" in line.lower()
    assert "Traceback" not in result.stderr
    assert not slurm_cli.runs.exists() or not any(slurm_cli.runs.iterdir())


def test_slurm_job_in_a_docker_container(slurm_cli):
    from conftest import BASE_IMAGE

    nb = slurm_cli.nb("success.ipynb", ["import sys; print('interpreter', sys.executable)"])
    result = slurm_cli(
        "run",
        str(nb),
        "--target",
        "slurm",
        "--SlurmTarget.container_runtime=docker",
        f"--ImageBuilder.base_image={BASE_IMAGE}",
        "-p",
        "name",
        "boxed",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    run = slurm_cli.only_run()
    output = (run / "output.ipynb").read_text()
    assert "hello boxed" in output and "/opt/promote/env/bin/python" in output
    assert "docker run" in (run / "job.sbatch").read_text()


def test_a_job_waiting_for_resources_shows_slurms_reason(slurm_cli, tmp_path):
    # Given the node's 2 CPUs taken by one job, a second job waits, and says why
    first = slurm_cli.popen("run", str(slurm_cli.nb("hang.ipynb")), "--target", "slurm", "--cpus", "2")
    run1 = wait_for(
        lambda: next(iter(sorted(slurm_cli.runs.glob("*"))), None) if slurm_cli.runs.exists() else None, 120, "run 1"
    )
    wait_for(lambda: state_of(run1) == "running", 300, "job 1 to run")
    second = slurm_cli.popen("run", str(slurm_cli.nb("success.ipynb")), "--target", "slurm", "--cpus", "2")
    run2 = wait_for(lambda: next((r for r in slurm_cli.runs.glob("*") if r != run1), None), 120, "run 2")
    queued = wait_for(
        lambda: [e for e in events(run2) if e["type"] == "status" and e.get("source") == "target"], 60, "a reason"
    )
    assert queued[0]["state"] == "queued" and queued[0]["reason"] == "resources" and "Resources" in queued[0]["message"]
    # When the first ends, the second runs
    subprocess.run(["scancel", job(run1)["handle"]["job_id"]], check=True)
    first.wait(timeout=120)
    second.wait(timeout=300)
    assert second.returncode == 0 and job(run2)["state"] == "succeeded"


def test_a_node_failure_during_a_job_is_reported_not_left_running(slurm_cli):
    proc = slurm_cli.popen("run", str(slurm_cli.nb("hang.ipynb")), "--target", "slurm")
    run = wait_for(
        lambda: next(iter(sorted(slurm_cli.runs.glob("*"))), None) if slurm_cli.runs.exists() else None,
        120,
        "a run dir",
    )
    wait_for(lambda: state_of(run) == "running", 300, "the job to run")
    subprocess.run(["pkill", "-9", "-x", "slurmd"], check=True)
    try:
        # Slurm notices the silent node after SlurmdTimeout (10 s here) and fails its batch job: without
        # --retries a job is submitted --no-requeue (with them, Slurm would run it again: test_retries.py)
        reported = wait_for(
            lambda: [
                e
                for e in events(run)
                if e["type"] == "status"
                and e.get("source") == "target"
                and (e["state"], e.get("reason")) in (("queued", "requeued"), ("failed", "node_fail"))
            ],
            120,
            "the node failure to be reported",
        )
        wait_for(lambda: state_of(run) in ("queued", "failed"), 10, "job.json to follow the event")  # the next poll
        assert "requeued" in reported[0]["message"] or "node" in reported[0]["message"]
    finally:
        subprocess.run(["slurmd"], check=False)
        wait_for(
            lambda: (
                subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True).stdout.strip()
                in ("idle", "mixed", "allocated")
            ),
            120,
            "the node to come back",
        )
        subprocess.run(["scancel", job(run)["handle"]["job_id"]], check=False)
        proc.wait(timeout=120)
    # ended, either by the node failure or by the scancel that followed it (never left running)
    assert (job(run)["state"], job(run)["reason"]) in (("failed", "node_fail"), ("cancelled", "cancelled")), job(run)


def test_slurm_job_in_a_podman_container_pulled_from_the_registry(slurm_cli, registry):
    from conftest import BASE_IMAGE

    # Given the environment image pushed to a registry (what cluster nodes pull by digest)
    nb = slurm_cli.nb("success.ipynb", ["import sys; print('interpreter', sys.executable)"])
    podman = [
        f"--SlurmTarget.container_args={a}"
        for a in ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024", "--tls-verify=false")
    ]
    result = slurm_cli(
        "run",
        str(nb),
        "--target",
        "slurm",
        "--SlurmTarget.container_runtime=podman",
        *podman,
        f"--ImageBuilder.base_image={BASE_IMAGE}",
        "--push",
        "--registry",
        f"{registry}/promote",
        "-p",
        "name",
        "podded",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    run = slurm_cli.only_run()
    record = job(run)
    script = (run / "job.sbatch").read_text()
    # Then the node ran it with podman, from the registry digest, in the frozen interpreter
    assert "podman run" in script and record["image"]["digest"] in script
    output = (run / "output.ipynb").read_text()
    assert "hello podded" in output and "/opt/promote/env/bin/python" in output


def test_the_controller_restarting_under_a_running_job_is_ridden_out(slurm_cli):
    # Given a job running on the node
    nb = slurm_cli.nb("hang.ipynb")
    proc = slurm_cli.popen("run", str(nb), "--target", "slurm", "-p", "seconds", "20")
    try:
        run = wait_for(lambda: slurm_cli.runs.exists() and next(iter(slurm_cli.runs.iterdir()), None), 600, "a run")
        wait_for(lambda: any("sleep" in (e.get("source") or "") for e in events(run)), 600, "the job to run")
        # When slurmctld stops for a few seconds and comes back with its saved state (an upgrade, a failover)
        subprocess.run(["pkill", "-x", "slurmctld"], check=True)
        wait_for(lambda: subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True).returncode != 0, 30, "stop")
        time.sleep(8)  # squeue fails meanwhile: the target keeps the last known states and backs off
        subprocess.run(["slurmctld"], check=True)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Then the job was followed through the outage to its end
    assert proc.returncode == 0, err[-3000:]
    assert job(run)["state"] == "succeeded"
