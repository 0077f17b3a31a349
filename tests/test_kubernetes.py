"""End to end on a real Kubernetes cluster (scripts/k8s-up.sh): kube-apiserver with RBAC, the Job controller and
garbage collector of kube-controller-manager, kube-scheduler, etcd, and one node, a kubelet over a containerd
of its own that pulls the jobs' images by digest from the cluster's registry, where the tests push them
(``c.ImageBuilder.registry`` and ``--push``). The tests submit as a user who may edit one namespace. The pod
sees none of the submitter's files: the job goes in a ConfigMap, and every event, the output notebook, the
observed environment and the job's files come back through the pod's log. From the CLI and the REST API:
success with inputs and artifacts, parity with the tested baseline, NaN failing fast, an OOM kill, a pod
waiting for CPUs no node has, an image that cannot be pulled, a job the cluster forgot, cancel, a sweep of
four, and a server killed outright while a Kubernetes job runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
from pathlib import Path

import fault_ledger
import pytest
from conftest import BASE_IMAGE, NOTEBOOKS, SMALL_KERNEL, TORCH_KERNEL, events, job, on_kernel, wait_for
from kubernetes import client, config
from test_fault_points import Live

from jupyter_promote.image import ImageBuilder
from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import ImageRequest, PromoteRequest
from jupyter_promote.models import JobState, Resources
from jupyter_promote.targets.kubernetes import KubernetesTarget, job_name

NAMESPACE = "promote"


@pytest.fixture
def kube_cli(docker_cli, kube_cluster, kube_registry, tmp_path):
    docker_cli.env["KUBECONFIG"] = kube_cluster
    docker_cli.base = [*docker_cli.base, f"--ImageBuilder.registry={kube_registry}", "--push"]
    docker_cli.nb = lambda name, extra=(): on_kernel(NOTEBOOKS / name, SMALL_KERNEL, tmp_path / "nb", list(extra))
    return docker_cli


def api(kube_cluster: str, who: str = "user") -> client.ApiClient:
    return config.new_client_from_config(kube_cluster.replace("user", who))


def left_behind(kube_cluster: str, job_id: str) -> list[str]:
    """The Jobs, pods and ConfigMaps of one job that are still in the cluster."""
    core, batch = client.CoreV1Api(api(kube_cluster)), client.BatchV1Api(api(kube_cluster))
    selector = f"jupyter-promote.io/job={job_id}"
    return [
        o.metadata.name
        for call in (batch.list_namespaced_job, core.list_namespaced_pod, core.list_namespaced_config_map)
        for o in call(NAMESPACE, label_selector=selector).items
    ]


def test_a_notebook_runs_on_kubernetes_and_everything_comes_back_without_a_shared_filesystem(kube_cli, kube_cluster):
    # Given a notebook that reads a file beside it, writes one, and fails where its own folder exists
    nb = kube_cli.nb(
        "success.ipynb",
        [
            "import os\nopen('result.txt', 'w').write(open('data.txt').read() * 2)",
            "assert not os.path.exists(FOLDER), 'the pod sees the folder'",
        ],
    )
    nb.write_text(nb.read_text().replace("FOLDER", json.dumps(str(nb.parent)).replace('"', "'")))
    (nb.parent / "data.txt").write_text("hello\n")
    # When it is promoted to Kubernetes
    result = kube_cli("run", str(nb), "--target", "kubernetes", *kube_cli.base, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    run = kube_cli.only_run()
    record = job(run)
    # Then the job ran in a pod that cannot see the notebook's folder (its own cell says so)...
    output = json.loads((run / "output.ipynb").read_text())
    assert "hello" in json.dumps(output)
    assert record["state"] == "succeeded" and record["handle"]["job"] == job_name(record["id"])
    # (in the image the node pulled from the cluster's registry by digest)
    assert re.fullmatch(r"127\.0\.0\.1:\d+/promote@sha256:[0-9a-f]{64}", record["image"]["digest"]), record["image"]
    # ...and every event it wrote came back once, in order, numbered in the local log
    seqs = [e["seq"] for e in events(run)]
    assert seqs == list(range(1, len(seqs) + 1))
    remote = [e["remote_seq"] for e in events(run) if "remote_seq" in e]
    assert remote == list(range(1, len(remote) + 1)) and len(remote) > 10
    assert not [e for e in events(run) if e["type"] == "alert"]
    # with the environment it ran with, the file it wrote, and nothing left in the cluster
    assert json.loads((run / "observed_env.json").read_text())["python"]["version"]
    assert (run / "work" / "result.txt").read_text() == "hello\nhello\n"
    assert record["artifacts"] == [{"path": "result.txt", "size": 12}]
    wait_for(lambda: not left_behind(kube_cluster, record["id"]), 60, "the Job, its pod and ConfigMap to go")


def test_an_oom_kill_in_a_pod_is_reported_with_its_limit(kube_cli):
    hog = kube_cli.nb("success.ipynb", ["x = b'x' * (600 << 20)\nprint(len(x))"])
    result = kube_cli("run", str(hog), "--target", "kubernetes", "--memory", "128M", *kube_cli.base, timeout=600)
    assert result.returncode == 1, result.stdout + result.stderr
    record = job(kube_cli.only_run())
    assert (record["state"], record["reason"]) == ("failed", "oom"), record
    assert "128Mi" in record["message"]


def _pipeline(tmp_path: Path, small_kernel: dict[str, str], monkeypatch, notebook: str, registry: str, **resources):
    monkeypatch.setenv("JUPYTER_PATH", small_kernel["JUPYTER_PATH"])
    path = on_kernel(NOTEBOOKS / notebook, SMALL_KERNEL, tmp_path / "nb")
    builder = ImageBuilder(base_image=BASE_IMAGE, registry=registry)
    pipeline = Pipeline(str(tmp_path / "runs"), poll_interval=0.2, image_builder=builder)
    request = PromoteRequest(
        notebook=str(path), target="kubernetes", image=ImageRequest(push=True), resources=Resources(**resources)
    )
    return pipeline, pipeline.prepare(request)


def test_a_pod_no_node_can_take_waits_queued_with_the_schedulers_reason(
    tmp_path, small_kernel, kube_cluster, kube_registry, monkeypatch
):
    monkeypatch.setenv("KUBECONFIG", kube_cluster)
    pipeline, prepared = _pipeline(tmp_path, small_kernel, monkeypatch, "success.ipynb", kube_registry, cpus=64)
    target = KubernetesTarget()

    async def go():
        await pipeline.submit(prepared, target)
        follow = asyncio.ensure_future(pipeline.follow(prepared, target))
        queued = await wait_async(
            lambda: asyncio.sleep(0, events(prepared.run.path)),
            lambda evs: any(e.get("reason") == "Unschedulable" for e in evs),
        )
        await target.cancel(prepared.record.handle)
        return queued, await asyncio.wait_for(follow, 60)

    evs, view = asyncio.run(go())
    # the user sees that it waits, and why
    queued = [e for e in evs if e["type"] == "status" and e.get("reason") == "Unschedulable"]
    assert queued and queued[0]["state"] == "queued" and "Insufficient cpu" in queued[0]["message"]
    assert view.state is JobState.CANCELLED


async def wait_async(call, done, timeout: float = 60):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = await call()
        if done(value) or loop.time() > deadline:
            return value
        await asyncio.sleep(0.5)


def test_a_job_whose_pod_vanishes_with_its_job_is_lost(
    tmp_path, small_kernel, kube_cluster, kube_registry, monkeypatch
):
    monkeypatch.setenv("KUBECONFIG", kube_cluster)
    pipeline, prepared = _pipeline(tmp_path, small_kernel, monkeypatch, "hang.ipynb", kube_registry)
    target = KubernetesTarget()
    admin_core, admin_batch = (
        client.CoreV1Api(api(kube_cluster, "admin")),
        client.BatchV1Api(api(kube_cluster, "admin")),
    )

    async def go():
        await pipeline.submit(prepared, target)
        follow = asyncio.ensure_future(pipeline.follow(prepared, target))
        await wait_async(
            lambda: asyncio.sleep(0, events(prepared.run.path)), lambda evs: any(e["type"] == "cell" for e in evs), 300
        )
        # the cluster forgets the job: its pod dies at once with the node under it (SIGKILL: no last word),
        # its Job and pod go
        name = prepared.record.handle["job"]
        pods = admin_core.list_namespaced_pod(NAMESPACE, label_selector=f"job-name={name}").items
        assert sum(kill_pod_processes(pod.metadata.uid) for pod in pods) > 0
        admin_batch.delete_namespaced_job(name, NAMESPACE, body={"propagationPolicy": "Orphan"})
        for pod in pods:
            admin_core.delete_namespaced_pod(pod.metadata.name, NAMESPACE, body={"gracePeriodSeconds": 0})
        fault_ledger.injected("Kubernetes Job and pod deleted behind the job's back")
        return await asyncio.wait_for(follow, 120)

    view = asyncio.run(go())
    assert (view.state, view.reason) == (JobState.FAILED, "lost"), (view.state, view.reason, view.message)
    assert "has no Job" in view.message


def kill_pod_processes(uid: str) -> int:
    """SIGKILL every process of the pod ``uid`` on the test cluster's node (below the kubelet's cgroup root,
    scripts/k8s-node-up.sh), as when the node dies under it: how many there were."""
    pids = {
        int(pid)
        for procs in Path("/sys/fs/cgroup/pids/promote-kube").glob(f"**/pod{uid}/**/cgroup.procs")
        for pid in procs.read_text().split()
    }
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return len(pids)


def test_a_sweep_of_four_on_kubernetes(kube_cli):
    result = kube_cli(
        "sweep",
        str(kube_cli.nb("success.ipynb")),
        "-p",
        "a",
        "1",
        "2",
        "3",
        "4",
        "--target",
        "kubernetes",
        "--json",
        *kube_cli.base,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["states"] == {"succeeded": 4}
    assert sorted(t["metrics"]["b"] for t in summary["tasks"]) == [2, 4, 6, 8]


def test_a_pod_whose_image_cannot_be_pulled_waits_with_the_reason_then_fails(
    tmp_path, small_kernel, kube_cluster, kube_registry, monkeypatch
):
    monkeypatch.setenv("KUBECONFIG", kube_cluster)
    pipeline, prepared = _pipeline(tmp_path, small_kernel, monkeypatch, "success.ipynb", kube_registry)
    prepared.record.image = {"ref": "127.0.0.1:1/promote/missing:1"}  # a registry that is not there (loopback)
    target = KubernetesTarget(start_patience_s=8)

    async def go():
        await pipeline.submit(prepared, target)
        return await asyncio.wait_for(pipeline.follow(prepared, target), 120)

    view = asyncio.run(go())
    assert (view.state, view.reason) == (JobState.FAILED, "environment"), (view.state, view.reason, view.message)
    assert "ErrImagePull" in view.message or "ImagePullBackOff" in view.message
    queued = [e for e in events(prepared.run.path) if e["type"] == "status" and e["state"] == "queued"]
    assert any(e.get("reason") in ("ErrImagePull", "ImagePullBackOff") for e in queued)  # why it waited
    # a pod that never started goes once the kubelet took its sandbox down: slower on a loaded node
    wait_for(lambda: not left_behind(kube_cluster, prepared.record.id), 180, "the failed Job to go")


def test_parity_with_the_notebooks_tested_baseline_on_kubernetes(kube_cli, small_kernel, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    # Given a notebook run interactively on its kernel and saved with its report: the baseline
    monkeypatch.setenv("JUPYTER_PATH", small_kernel["JUPYTER_PATH"])
    nb = nbformat.v4.new_notebook()
    for source, tags in [
        ("drift = 0.0", ["parameters"]),
        ("accuracy = 0.9 + drift", []),
        ("import jupyter_promote as promote\npromote.report(accuracy=accuracy, tolerance={'accuracy': 0.01})", []),
    ]:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": SMALL_KERNEL, "display_name": SMALL_KERNEL, "language": "python"}
    NotebookClient(nb, kernel_name=SMALL_KERNEL, timeout=120).execute()
    path = tmp_path / "tested" / "tested.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    # When it is promoted to Kubernetes with a drift beyond the tolerance
    result = kube_cli("run", str(path), "-p", "drift", "0.05", "--target", "kubernetes", *kube_cli.base, timeout=600)
    # Then the job succeeded and its behaviour did not match: exit code 3, the metric named
    assert result.returncode == 3, result.stdout + result.stderr
    record = job(kube_cli.only_run())
    assert record["state"] == "succeeded" and record["parity"] == {"verdict": "fail", "failed": ["accuracy"]}
    # beside the environment it ran with: the image's packages are the lock's; its Python is the base image's
    # (Debian's 3.11.2 here), named when the kernel's differs
    parity = (kube_cli.only_run() / "parity.txt").read_text()
    assert re.search(
        r"^  environment: (the same as the notebook kernel's|python: [0-9.]+ -> [0-9.]+)$", parity, re.M
    ), parity


@pytest.mark.timeout(1500)  # the first run builds and verifies the torch kernel's image (~6 min here)
def test_a_diverging_notebook_fails_fast_with_nan_on_kubernetes(kube_cli, torch_kernel, tmp_path):
    kube_cli.env.update(torch_kernel)
    nb = on_kernel(NOTEBOOKS / "diverge.ipynb", TORCH_KERNEL, tmp_path / "torch")
    result = kube_cli("run", str(nb), "--target", "kubernetes", *kube_cli.base, timeout=1500)
    assert result.returncode == 1, result.stdout + result.stderr
    record = job(kube_cli.only_run())
    assert (record["state"], record["reason"]) == ("failed", "nan"), record
    alerts = [e for e in events(kube_cli.only_run()) if e["type"] == "alert" and e.get("kind") == "nan"]
    assert alerts and alerts[0]["step"] < 5000


@pytest.fixture
def small_image_pushed(small_kernel, kube_registry, tmp_path_factory, monkeypatch) -> str:
    """The registry the small kernel's image was pushed to: the server (which pushes nothing) finds it in the
    engine with its digest there, and the node pulls it by that digest, as a site's images are pushed before
    its users' servers run them. (Pushed for each server: the image's tag covers the runner's source.)"""
    _, prepared = _pipeline(tmp_path_factory.mktemp("push"), small_kernel, monkeypatch, "hang.ipynb", kube_registry)
    assert "@sha256:" in (prepared.record.image or {}).get("digest", ""), prepared.record.image
    return kube_registry


@pytest.fixture
def kube_server(tmp_path, small_kernel, kube_cluster, small_image_pushed):
    live = Live(tmp_path, {**small_kernel, "KUBECONFIG": kube_cluster})
    live.server.args += [f"--ImageBuilder.base_image={BASE_IMAGE}", f"--ImageBuilder.registry={small_image_pushed}"]
    live.on_kernel(SMALL_KERNEL)
    with live.running():
        yield live


def test_the_rest_api_runs_and_cancels_a_kubernetes_job(kube_server, kube_cluster):
    job_id = kube_server.start_sleeping("kubernetes", 600)
    kube_server.call("DELETE", "jobs", job_id)
    record = fault_ledger.check_job(kube_server.call, job_id, 120, states=("cancelled",))
    assert record["reason"] == "cancelled"
    wait_for(lambda: not left_behind(kube_cluster, job_id), 60, "the cancelled Job, its pod and ConfigMap to go")


def test_a_server_killed_while_a_kubernetes_job_runs_loses_no_event(kube_server):
    job_id = kube_server.start_sleeping("kubernetes", 600, parameters={"seconds": 12})
    kube_server.killed_and_restarted(job_id, "server SIGKILL while a Kubernetes job runs")
