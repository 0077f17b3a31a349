"""Finished jobs exported to a real MLflow tracking server (``mlflow server`` on loopback, from its own venv,
started by the tests): one run per job with its parameters, metrics, tags and artifacts; a sweep's jobs under
one parent run."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, ROOT, wait_for

MLFLOW = "mlflow==3.17.2"  # the server's version; the client is mlflow-skinny of the same version (test extra)


@pytest.fixture(scope="module")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory):
    venv = ROOT / ".envs" / "mlflow-server"
    if not (venv / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", MLFLOW], check=True)
        (venv / ".complete").write_text("ok\n")
    data = tmp_path_factory.mktemp("mlflow")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [
        str(venv / "bin" / "mlflow"),
        "server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--backend-store-uri",
        f"sqlite:///{data}/mlflow.db",
        "--artifacts-destination",
        str(data / "artifacts"),
    ]
    with open(data / "server.log", "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        uri = f"http://127.0.0.1:{port}"

        def up() -> bool:
            import urllib.request

            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as response:
                    return response.status == 200
            except OSError:
                assert server.poll() is None, (data / "server.log").read_text()[-2000:]
                return False

        try:
            wait_for(up, 180, "the MLflow server to answer")
            yield uri
        finally:
            server.terminate()
            server.wait(timeout=30)


def runs_of(uri: str) -> list:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("jupyter-promote")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def test_a_job_becomes_one_mlflow_run_with_its_params_metrics_tags_and_artifacts(cli, mlflow_server):
    from mlflow.tracking import MlflowClient

    result = cli(
        "run",
        str(NOTEBOOKS / "mlp_train.ipynb"),
        "-p",
        "lr",
        "0.05",
        f"--MlflowExport.tracking_uri={mlflow_server}",
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    run_dir = cli.only_run()
    [exported] = [json.loads(line) for line in (run_dir / "mlflow.jsonl").read_text().splitlines()]
    assert exported["ok"], exported
    run = MlflowClient(tracking_uri=mlflow_server).get_run(exported["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.params["lr"] == "0.05"
    assert run.data.tags["promote.job_id"] == record["id"] and run.data.tags["promote.target"] == "local"
    assert run.data.tags["promote.notebook"].endswith("mlp_train.ipynb")
    reported = {k for k in record["metrics"]}
    assert reported and reported <= set(run.data.metrics), (reported, run.data.metrics)
    assert "promote.steps_per_s" in run.data.metrics
    artifacts = {a.path for a in MlflowClient(tracking_uri=mlflow_server).list_artifacts(exported["run_id"])}
    assert "env" in artifacts and "observed_env.json" in artifacts, artifacts


def test_a_sweeps_jobs_are_children_of_one_parent_run(cli, mlflow_server, tmp_path):
    result = cli(
        "sweep",
        str(NOTEBOOKS / "success.ipynb"),
        "-p",
        "x",
        "1",
        "2",
        "--max-parallel",
        "2",
        f"--MlflowExport.tracking_uri={mlflow_server}",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    sweep = json.loads(next(Path(cli.runs).rglob("sweep.json")).read_text())
    runs = [
        r
        for r in runs_of(mlflow_server)
        if r.data.tags.get("promote.sweep_id") == sweep["id"] or r.data.tags.get("mlflow.parentRunId")
    ]
    parents = [r for r in runs if r.data.tags.get("promote.kind") == "sweep"]
    assert len(parents) == 1, [r.data.tags for r in runs]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parents[0].info.run_id]
    assert len(children) == 2 and {c.data.params.get("x") for c in children} == {"1", "2"}


def test_an_unreachable_tracking_server_never_fails_the_job(cli):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    started = time.time()
    result = cli(
        "run",
        str(NOTEBOOKS / "success.ipynb"),
        f"--MlflowExport.tracking_uri={dead}",
        "--MlflowExport.retries=1",
        "--MlflowExport.retry_delay_s=0.1",
    )
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in (cli.only_run() / "mlflow.jsonl").read_text().splitlines()]
    assert [line["ok"] for line in lines] == [False, False]
    assert time.time() - started < 180
