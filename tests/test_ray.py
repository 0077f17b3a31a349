"""End to end on a real Ray head (scripts/ray-up.sh): a head run by its own user, who cannot read the
submitter's run directories, in a network namespace where only loopback exists. Every event, the output
notebook, the observed environment and the job's files come back through the job's log; the job's inputs
go with it. From the CLI and the REST API: success with artifacts, NaN failing fast, cancel, a sweep of
four, and a server killed outright while a Ray job runs.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import fault_ledger
import pytest
from conftest import NOTEBOOKS, SMALL_KERNEL, TORCH_KERNEL, events, job, on_kernel
from test_fault_points import Live

RAY_USER = "promote-ray"


@pytest.fixture
def ray_cli(cli, small_kernel, ray_cluster, tmp_path):
    cli.env.update(small_kernel)
    cli.nb = lambda name, extra=(): on_kernel(NOTEBOOKS / name, SMALL_KERNEL, tmp_path / "nb", list(extra))
    return cli


def relayed(run: Path) -> list[dict]:
    return [e for e in events(run) if "remote_seq" in e]


def test_a_notebook_runs_on_ray_and_everything_comes_back_without_a_shared_filesystem(ray_cli):
    # Given a notebook that reads a file beside it and writes one
    nb = ray_cli.nb("success.ipynb", ["open('result.txt', 'w').write(open('data.txt').read() * 2)"])
    (nb.parent / "data.txt").write_text("hello\n")
    # (and a folder named as the runner's assets: what the notebook's folder holds arrives whole)
    (nb.parent / "labextension").mkdir()
    (nb.parent / "labextension" / "notes.txt").write_text("kept\n")
    # When it is promoted to Ray
    result = ray_cli("run", str(nb), "--target", "ray", timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    run = ray_cli.only_run()
    # Then the job ran where the run directory cannot be seen (the cluster's own user)...
    hidden = subprocess.run(["runuser", "-u", RAY_USER, "--", "test", "-e", str(run / "job.json")])
    assert hidden.returncode != 0
    # ...and every event it wrote came back once, in order, numbered in the local log
    seqs = [e["seq"] for e in events(run)]
    assert seqs == list(range(1, len(seqs) + 1))
    remote = [e["remote_seq"] for e in relayed(run)]
    assert remote == list(range(1, len(remote) + 1)) and len(remote) > 10
    assert not [e for e in events(run) if e["type"] == "alert"]
    # with the output notebook, the environment it ran with, the file it wrote and its log
    record = job(run)
    assert record["state"] == "succeeded" and record["handle"]["submission_id"] == f"promote-{record['id']}"
    assert record["parity"]["verdict"] == "no baseline"
    assert "hello" in json.dumps(json.loads((run / "output.ipynb").read_text()))
    assert json.loads((run / "observed_env.json").read_text())["python"]["version"]
    assert (run / "work" / "result.txt").read_text() == "hello\nhello\n"
    assert record["artifacts"] == [{"path": "result.txt", "size": 12}]
    assert "Running entrypoint" in (run / "job.log").read_text()
    # and what Ray's SDK said of its uploads is in the build log, not the terminal
    assert "ray: Creating a file package" in (run / "build.log").read_text()
    assert "Creating a file package" not in result.stderr + result.stdout


def test_a_diverging_notebook_fails_fast_with_nan_on_ray(cli, torch_kernel, ray_cluster, tmp_path):
    cli.env.update(torch_kernel)
    nb = on_kernel(NOTEBOOKS / "diverge.ipynb", TORCH_KERNEL, tmp_path / "nb")
    result = cli("run", str(nb), "--target", "ray", timeout=900)
    assert result.returncode == 1, result.stdout + result.stderr
    record = job(cli.only_run())
    assert record["state"] == "failed" and record["reason"] == "nan", record
    alerts = [e for e in events(cli.only_run()) if e["type"] == "alert" and e.get("kind") == "nan"]
    assert alerts and alerts[0]["step"] < 5000


def test_a_sweep_of_four_on_ray(ray_cli):
    result = ray_cli(
        "sweep",
        str(ray_cli.nb("success.ipynb")),
        "-p",
        "a",
        "1",
        "2",
        "3",
        "4",
        "--target",
        "ray",
        "--json",
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["states"] == {"succeeded": 4}
    assert sorted(t["metrics"]["b"] for t in summary["tasks"]) == [2, 4, 6, 8]


@pytest.fixture
def ray_server(tmp_path, small_kernel, ray_cluster):
    live = Live(tmp_path, small_kernel)
    live.on_kernel(SMALL_KERNEL)
    with live.running():
        yield live


def test_the_rest_api_runs_and_cancels_a_ray_job(ray_server):
    job_id = ray_server.start_sleeping("ray", 300)
    ray_server.call("DELETE", "jobs", job_id)
    record = fault_ledger.check_job(ray_server.call, job_id, 120, states=("cancelled",))
    assert record["reason"] == "cancelled"


def test_a_server_killed_while_a_ray_job_runs_loses_no_event(ray_server):
    job_id = ray_server.start_sleeping("ray", 300, parameters={"seconds": 12})
    ray_server.killed_and_restarted(job_id, "server SIGKILL while a Ray job runs")


def test_a_job_the_cluster_does_not_know_is_lost(ray_cluster):
    import asyncio

    from jupyter_promote.models import JobState
    from jupyter_promote.targets.ray import RayTarget

    status = asyncio.run(RayTarget().poll({"j": {"address": ray_cluster, "submission_id": "promote-neverwas"}}))["j"]
    assert (status.state, status.reason) == (JobState.FAILED, "lost") and "promote-neverwas" in status.message
