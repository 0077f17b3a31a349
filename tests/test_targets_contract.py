"""The contract every target passes: submit, batched poll, cancel (idempotent), options schema."""

from __future__ import annotations

import asyncio

import pytest
from conftest import BASE_IMAGE, NOTEBOOKS, SMALL_KERNEL, on_kernel

from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import ImageRequest, PromoteRequest
from jupyter_promote.models import JobState, MonitorSettings
from jupyter_promote.targets import load_target_classes

TARGETS = sorted(load_target_classes())


@pytest.fixture
def prepare(request, monkeypatch):
    """Prepare a job for a target; container targets get the small kernel's verified image."""

    def make(tmp_path, notebook, name):
        path = NOTEBOOKS / notebook
        image = None
        builder = None
        if name != "local":  # a small environment: what a container or a node's venv is made of
            small = request.getfixturevalue("small_kernel")
            monkeypatch.setenv("JUPYTER_PATH", small["JUPYTER_PATH"])
            path = on_kernel(path, SMALL_KERNEL, tmp_path / "nb")
        target = load_target_classes()[name]()
        if target.needs_image:
            from jupyter_promote.image import ImageBuilder

            image, builder = ImageRequest(), ImageBuilder(base_image=BASE_IMAGE)
            if target.pulls_images:  # its nodes pull by digest from the cluster's registry
                builder.registry = request.getfixturevalue("kube_registry")
                image.push = True
        pipeline = Pipeline(str(tmp_path / "runs"), poll_interval=0.1, image_builder=builder)
        req = PromoteRequest(notebook=str(path), target=name, monitor=MonitorSettings(), image=image)
        return pipeline, pipeline.prepare(req)

    return make


@pytest.fixture(autouse=True)
def _cluster(request, monkeypatch):
    if "slurm" in request.node.name:
        request.getfixturevalue("slurm_cluster")
    if "ray" in request.node.name:
        request.getfixturevalue("ray_cluster")
    if "kubernetes" in request.node.name:
        monkeypatch.setenv("KUBECONFIG", request.getfixturevalue("kube_cluster"))


@pytest.mark.parametrize("name", TARGETS)
def test_target_runs_a_job_to_success(name, tmp_path, prepare):
    target = load_target_classes()[name]()
    assert target.available()[0]
    pipeline, prepared = prepare(tmp_path, "success.ipynb", name)

    async def go():
        await pipeline.submit(prepared, target)
        return await asyncio.wait_for(pipeline.follow(prepared, target), 240)

    view = asyncio.run(go())
    assert view.state is JobState.SUCCEEDED
    assert prepared.run.read().state is JobState.SUCCEEDED


@pytest.mark.parametrize("name", TARGETS)
def test_target_polls_many_jobs_in_one_call_and_cancels(name, tmp_path, prepare):
    target = load_target_classes()[name]()
    jobs = [prepare(tmp_path / str(i), "hang.ipynb", name) for i in range(2)]

    async def go():
        for pipeline, prepared in jobs:
            await pipeline.submit(prepared, target)
        handles = {p.record.id: p.record.handle for _, p in jobs}
        statuses = await target.poll(handles)
        assert set(statuses) == set(handles)
        assert all(s.state in (JobState.RUNNING, JobState.QUEUED) for s in statuses.values())
        for _, prepared in jobs:
            await target.cancel(prepared.record.handle)
            await target.cancel(prepared.record.handle)  # idempotent
        return [await asyncio.wait_for(pipeline.follow(prepared, target), 60) for pipeline, prepared in jobs]

    views = asyncio.run(go())
    assert all(v.state is JobState.CANCELLED for v in views), [v.state for v in views]


@pytest.mark.parametrize("name", TARGETS)
def test_target_describes_its_options(name):
    target = load_target_classes()[name]()
    schema = target.options_schema()
    assert set(schema["properties"]) == {"cpus", "memory", "gpus", "time"}
    assert target.name == name and target.display_name
