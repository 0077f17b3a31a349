"""Preemption, eviction and a lost node: retried as attempts of the same job, resumed from a checkpoint, and
proven by the notebook's own metrics (issue 27, section 2). A training notebook that saves its state to
``promote.checkpoint_dir()`` every epoch is interrupted mid-run; with ``--retries`` it starts again, resumes
from its last checkpoint and ends with the metrics of an uninterrupted run (parity with its tested baseline
passes); the attempts and the resume are in its events. Without ``--retries``, or for the notebook's own
error, nothing is retried."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import nbformat
import pytest
from conftest import SMALL_KERNEL, events, job, wait_for
from nbclient import NotebookClient

from jupyter_promote.events import JobView
from jupyter_promote.launch.retry import MAX_DELAY_S, delay

#: A training loop of plain Python (so that any kernel runs it): its state after each epoch is saved to the
#: checkpoint folder, and loaded from there when an earlier attempt left one.
TRAIN = """
import json, os, time
import jupyter_promote as promote
state_file = promote.checkpoint_dir() / "state.json"
state = json.loads(state_file.read_text()) if state_file.exists() else {"epoch": 0, "w": 1.0, "history": []}
resumed_at = state["epoch"]
for epoch in range(state["epoch"], epochs):
    time.sleep(pause)
    state["w"] = round(state["w"] * 0.9 + 0.05 * epoch, 10)
    state["history"].append(state["w"])
    state["epoch"] = epoch + 1
    tmp = state_file.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, state_file)
"""
REPORT = "promote.report(w=state['w'], epochs=len(state['history']))"


def training_notebook(folder: Path, kernel: str = "python3") -> Path:
    """The notebook as its author leaves it: run once interactively, so its outputs hold the tested baseline."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": kernel, "display_name": kernel, "language": "python"}
    params = nbformat.v4.new_code_cell("epochs = 8\npause = 0.0")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell(TRAIN), nbformat.v4.new_code_cell(REPORT)]
    folder.mkdir(parents=True, exist_ok=True)
    NotebookClient(nb, timeout=120, kernel_name=kernel, resources={"metadata": {"path": str(folder)}}).execute()
    path = folder / "train.ipynb"
    nbformat.write(nb, path)
    return path


def on_small_kernel(nb: Path) -> None:
    """The notebook names the small kernel (its baseline was made on python3: plain Python, the same result)."""
    notebook = json.loads(nb.read_text())
    notebook["metadata"]["kernelspec"] = {"name": SMALL_KERNEL, "display_name": SMALL_KERNEL, "language": "python"}
    nb.write_text(json.dumps(notebook))


def kill_tree(pid: int) -> None:
    """The process ``pid`` and everything it started, killed: a worker dying with its children."""
    import psutil

    runner = psutil.Process(pid)
    for process in [*runner.children(recursive=True), runner]:
        process.kill()


def running_pid(run: Path) -> int | None:
    """The runner's pid, once the job's latest attempt runs and has saved a checkpoint past epoch 2."""
    state = run / "checkpoints" / "state.json"
    if not state.exists() or json.loads(state.read_text())["epoch"] < 2:
        return None
    pids = [e.get("pid") for e in events(run) if e["type"] == "status" and e.get("state") == "running"]
    return pids[-1] if pids and pids[-1] else None


def test_the_back_off_doubles_to_its_bound():
    assert [delay(n, 5.0) for n in (2, 3, 4)] == [5.0, 10.0, 20.0]
    assert delay(20, 5.0) == MAX_DELAY_S


def test_a_local_job_whose_runner_is_killed_resumes_from_its_checkpoint_and_passes_parity(cli, tmp_path):
    nb = training_notebook(tmp_path / "nb")
    args = ["run", str(nb), "--retries", "2", "-p", "pause", "0.7", "--PromoteSettings.retry_backoff_s=0.5"]
    proc = cli.popen(*args)
    try:
        run = wait_for(lambda: next(iter(cli.runs.glob("*/job.json")), None), 60, "the run directory").parent
        pid = wait_for(lambda: running_pid(run), 120, "a checkpoint past epoch 2")
        # When the job's whole process group is killed, as a machine going down would (not a cancel)
        os.killpg(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, out + err
    record, stream = job(run), events(run)
    # Then it was attempt 2 of 3, after the first ended interrupted, and it resumed from its checkpoint
    assert record["state"] == "succeeded" and record["attempt"] == 2, record
    attempts = [e for e in stream if e["type"] == "attempt"]
    assert [(a["number"], a["reason"]) for a in attempts] == [(2, "interrupted")], attempts
    assert attempts[0]["message"].startswith("attempt 2 of 3 in 0.5 s: the job runner was killed by SIGKILL")
    resumed = [e for e in stream if e["type"] == "alert" and e["kind"] == "resumed"]
    assert len(resumed) == 1 and resumed[0]["message"].startswith("attempt 2 resumes"), resumed
    # ...and ended with the metrics of an uninterrupted run: parity with the tested baseline passes
    assert record["metrics"]["epochs"] == 8
    assert record["parity"]["verdict"] == "pass", record["parity"]
    assert "attempt 2" in err or "attempt 2" in out
    assert JobView().fold(stream).attempt == 2


def test_without_retries_or_for_the_notebooks_own_error_nothing_is_started_again(cli, tmp_path):
    nb = training_notebook(tmp_path / "nb")
    failing = tmp_path / "nb" / "failing.ipynb"
    notebook = nbformat.read(nb, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("raise RuntimeError('diverged')"))
    nbformat.write(notebook, failing)
    done = cli("run", str(failing), "--retries", "3")
    assert done.returncode == 1
    run = cli.only_run()
    assert job(run)["reason"] == "error" and job(run)["attempt"] == 1
    assert not [e for e in events(run) if e["type"] == "attempt"]


def test_a_retry_count_over_its_bound_is_refused_in_one_line(cli, tmp_path):
    done = cli("run", str(tmp_path / "missing.ipynb"), "--retries", "11")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("jupyter promote: error: --retries"), done.stderr


@pytest.fixture
def slurm_cli(cli, slurm_cluster):
    return cli


def test_a_slurm_job_requeued_while_running_resumes_from_its_checkpoint_and_passes_parity(slurm_cli, tmp_path):
    nb = training_notebook(tmp_path / "nb")
    args = ["run", str(nb), "--target", "slurm", "--retries", "1", "-p", "pause", "0.7"]
    proc = slurm_cli.popen(*args)
    try:
        run = wait_for(lambda: next(iter(slurm_cli.runs.glob("*/job.json")), None), 60, "the run directory").parent
        wait_for(lambda: running_pid(run), 240, "a checkpoint past epoch 2")
        slurm_id = job(run)["handle"]["job_id"]
        # When Slurm requeues it (an admin, a preemption in REQUEUE mode)
        subprocess.run(["scontrol", "requeue", slurm_id], check=True)
        # (Slurm holds a requeued job ~2 minutes before it may start again; the cluster's admin lets it go now)
        wait_for(lambda: "PENDING" in _squeue(slurm_id), 60, "the job back in the queue")
        subprocess.run(["scontrol", "update", f"JobId={slurm_id}", "StartTime=now"], check=True)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    log = run / "job.log"  # what the batch script and the runner printed, each attempt
    assert proc.returncode == 0, out + err + (log.read_text()[-4000:] if log.exists() else "")
    record, stream = job(run), events(run)
    assert record["state"] == "succeeded" and record["attempt"] == 2, record
    attempts = [e for e in stream if e["type"] == "attempt"]
    assert [(a["number"], a["reason"]) for a in attempts] == [(2, "requeued")], attempts
    assert any(e["type"] == "alert" and e["kind"] == "resumed" for e in stream)
    assert any(e["type"] == "status" and e.get("reason") == "requeued" and e.get("source") == "runner" for e in stream)
    assert record["metrics"]["epochs"] == 8 and record["parity"]["verdict"] == "pass", record


def _squeue(slurm_id: str) -> str:
    return subprocess.run(["squeue", "-h", "-j", slurm_id, "-o", "%T"], capture_output=True, text=True).stdout


def test_a_ray_job_whose_runner_dies_resumes_from_a_shared_checkpoint_folder(cli, small_kernel, ray_cluster, tmp_path):
    cli.env.update(small_kernel)
    nb = training_notebook(tmp_path / "nb")  # its baseline made on python3; the job runs on the small kernel
    on_small_kernel(nb)
    shared = Path(f"/tmp/promote-ray-checkpoints-{os.getpid()}")  # the cluster's jobs run as another user
    shared.mkdir(mode=0o1777, exist_ok=True)
    shared.chmod(0o1777)
    args = ["run", str(nb), "--target", "ray", "--retries", "1", "-p", "pause", "0.7"]
    proc = cli.popen(*args, f"--RayTarget.checkpoint_root={shared}", "--PromoteSettings.retry_backoff_s=0.5")
    try:
        run = wait_for(lambda: next(iter(cli.runs.glob("*/job.json")), None), 120, "the run directory").parent
        state = shared / job(run)["id"] / "state.json"
        wait_for(lambda: state.exists() and json.loads(state.read_text())["epoch"] >= 2, 300, "a checkpoint")
        pid = [e["pid"] for e in events(run) if e["type"] == "status" and e.get("state") == "running"][-1]
        # When the worker process running the job dies, with the kernel it started (not a cancel)
        kill_tree(pid)
        out, err = proc.communicate(timeout=400)
    finally:
        proc.kill()
        subprocess.run(["rm", "-rf", str(shared)], check=False)
    assert proc.returncode == 0, out + err
    record, stream = job(run), events(run)
    assert record["state"] == "succeeded" and record["attempt"] == 2, record
    assert [a["reason"] for a in stream if a["type"] == "attempt"] == ["lost"]
    assert record["handle"]["submission_id"] == f"promote-{record['id']}-2"
    assert any(e["type"] == "alert" and e["kind"] == "resumed" for e in stream)
    assert record["metrics"]["epochs"] == 8 and record["parity"]["verdict"] == "pass", record


def test_a_kubernetes_job_whose_pod_is_evicted_resumes_from_its_checkpoint_volume(
    docker_cli, kube_cluster, kube_registry, tmp_path
):
    """The Eviction API (a drain, a preemption) deletes the pod, not its Job: its runner hears SIGTERM and says
    cancelled, but nobody cancelled; the target knows it was evicted, and the job starts again as a Job of its
    own, its checkpoints on a volume every attempt mounts."""
    from kubernetes import client, config

    cli = docker_cli
    cli.env["KUBECONFIG"] = kube_cluster
    nb = training_notebook(tmp_path / "nb")
    on_small_kernel(nb)
    shared = Path(f"/tmp/promote-kube-checkpoints-{os.getpid()}")  # a folder of the node, as a hostPath
    shared.mkdir(mode=0o1777, exist_ok=True)
    shared.chmod(0o1777)
    settings = tmp_path / "config"
    settings.mkdir()
    volume = {"hostPath": {"path": str(shared), "type": "Directory"}}
    (settings / "jupyter_promote_config.py").write_text(f"c.KubernetesTarget.checkpoint_volume = {volume!r}\n")
    cli.env["JUPYTER_CONFIG_DIR"] = str(settings)
    registry = [f"--ImageBuilder.registry={kube_registry}", "--push", "--PromoteSettings.retry_backoff_s=0.5"]
    proc = cli.popen(
        "run", str(nb), "--target", "kubernetes", "--retries", "1", "-p", "pause", "0.7", *cli.base, *registry
    )
    admin = client.CoreV1Api(config.new_client_from_config(kube_cluster.replace("user", "admin")))
    try:
        run = wait_for(lambda: next(iter(cli.runs.glob("*/job.json")), None), 300, "the run directory").parent
        job_id = job(run)["id"]
        state = shared / job_id / "state.json"
        wait_for(lambda: state.exists() and json.loads(state.read_text())["epoch"] >= 2, 300, "a checkpoint")
        pod = admin.list_namespaced_pod("promote", label_selector=f"jupyter-promote.io/job={job_id}").items[0]
        # When the pod is evicted through the API, as `kubectl drain` does
        eviction = {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": pod.metadata.name}}
        admin.create_namespaced_pod_eviction(pod.metadata.name, "promote", eviction)
        out, err = proc.communicate(timeout=400)
    finally:
        proc.kill()
        subprocess.run(["rm", "-rf", str(shared)], check=False)
    assert proc.returncode == 0, out + err
    record, stream = job(run), events(run)
    assert record["state"] == "succeeded" and record["attempt"] == 2, record
    assert [a["reason"] for a in stream if a["type"] == "attempt"] == ["evicted"]
    assert record["handle"]["job"].endswith("-2")
    assert any(e["type"] == "alert" and e["kind"] == "resumed" for e in stream)
    assert record["metrics"]["epochs"] == 8 and record["parity"]["verdict"] == "pass", record


@pytest.fixture
def store_bucket(s3):
    from conftest import new_bucket

    yield from new_bucket(s3, {})


def test_a_ray_job_resumes_from_checkpoints_kept_on_object_storage(
    cli, small_kernel, ray_cluster, s3, store_bucket, tmp_path
):
    """No volume the nodes share: the checkpoint folder is written to artifacts_url every few seconds, and
    the next attempt reads it back before its kernel starts."""
    from test_data_jobs import store_settings

    cli.env.update(small_kernel)
    nb = training_notebook(tmp_path / "nb")
    on_small_kernel(nb)
    env, secrets = store_settings(tmp_path, s3, f"s3://{store_bucket}/runs")
    cli.env.update(env)
    args = ["run", str(nb), "--target", "ray", "--retries", "1", "-p", "pause", "1.5", *secrets]
    proc = cli.popen(*args, "--PromoteSettings.retry_backoff_s=0.5")
    try:
        run = wait_for(lambda: next(iter(cli.runs.glob("*/job.json")), None), 120, "the run directory").parent
        stored = f"{store_bucket}/runs/{job(run)['id']}/checkpoints/state.json"

        def saved_past_epoch_2() -> bool:
            fs = s3.fs()
            return fs.exists(stored) and json.loads(fs.cat(stored))["epoch"] >= 2

        wait_for(saved_past_epoch_2, 300, "a checkpoint on the store")
        pid = [e["pid"] for e in events(run) if e["type"] == "status" and e.get("state") == "running"][-1]
        kill_tree(pid)
        out, err = proc.communicate(timeout=400)
    finally:
        proc.kill()
    assert proc.returncode == 0, out + err
    record, stream = job(run), events(run)
    assert record["state"] == "succeeded" and record["attempt"] == 2, record
    assert any(e["type"] == "alert" and e["kind"] == "resumed" for e in stream)
    assert record["metrics"]["epochs"] == 8 and record["parity"]["verdict"] == "pass", record


def _notebook(folder: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "python3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / "job.ipynb")
    return folder / "job.ipynb"


def test_a_cancel_during_the_back_off_ends_the_job_and_nothing_starts_again(cli, tmp_path):
    """Review: `jupyter promote cancel` said "already ended" between attempts, and the next one ran anyway."""
    nb = _notebook(tmp_path / "nb", "import os, signal\nos.killpg(os.getpgid(os.getppid()), signal.SIGKILL)")
    proc = cli.popen("run", str(nb), "--retries", "2", "--PromoteSettings.retry_backoff_s=30")
    try:
        run = wait_for(lambda: next(iter(cli.runs.glob("*/job.json")), None), 60, "the run directory").parent
        wait_for(lambda: any(e["type"] == "attempt" for e in events(run)), 60, "the attempt")
        done = cli("cancel", job(run)["id"], timeout=60)
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert done.returncode == 0 and "cancelled" in done.stdout + done.stderr, done.stdout + done.stderr
    assert proc.returncode == 130  # the command that ran it says cancelled too
    record = job(run)
    assert record["state"] == "cancelled" and record["attempt"] == 2, record
    assert [e["state"] for e in events(run) if e["type"] == "status" and e["state"] == "running"] == ["running"]


def test_a_line_the_notebook_writes_with_a_low_seq_cannot_turn_its_error_into_a_retried_loss(cli, tmp_path):
    """Review: a forged seq-1 line made the runner's signed final status read as a replay; the job was settled
    lost, and lost is retried."""
    forged = '{"seq": 1, "ts": 1.0, "job": "x", "type": "heartbeat"}'
    nb = _notebook(
        tmp_path / "nb",
        f"import os\nopen(os.environ['PROMOTE_EVENTS'], 'a').write({forged!r} + '\\n')",
        "raise ValueError('my own bug')",
    )
    done = cli("run", str(nb), "--retries", "1")
    assert done.returncode == 1
    record = job(cli.only_run())
    assert (record["reason"], record["attempt"]) == ("error", 1), record
    assert "my own bug" in record["message"]


def test_a_job_started_from_inside_another_never_gets_its_checkpoint_folder(cli, tmp_path):
    nb = _notebook(
        tmp_path / "nb",
        "import jupyter_promote as promote\nprint('folder', promote.checkpoint_dir())",
    )
    done = cli("run", str(nb), env={"PROMOTE_CHECKPOINT_DIR": str(tmp_path / "someone-elses")})
    assert done.returncode == 0, done.stderr
    run = cli.only_run()
    assert f"folder {run / 'checkpoints'}" in (run / "output.ipynb").read_text()
