"""The contract every target passes: submit, batched poll, cancel (idempotent), options schema."""

from __future__ import annotations

import asyncio
import time

import pytest

from conftest import NOTEBOOKS
from jupyter_promote.models import JobState, MonitorSettings
from jupyter_promote.pipeline import Pipeline, PromoteRequest
from jupyter_promote.targets import load_target_classes

TARGETS = sorted(load_target_classes())


def prepare(tmp_path, notebook, name):
    pipeline = Pipeline(str(tmp_path / "runs"), poll_interval=0.1)
    return pipeline, pipeline.prepare(PromoteRequest(notebook=str(NOTEBOOKS / notebook), target=name, monitor=MonitorSettings()))


@pytest.mark.parametrize("name", TARGETS)
def test_target_runs_a_job_to_success(name, tmp_path):
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
def test_target_polls_many_jobs_in_one_call_and_cancels(name, tmp_path):
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
