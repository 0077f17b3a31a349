"""Groups of jobs, the same at both doors: one notebook, N parameter sets, one group directory.

A sweep (a grid or a list of sets) and replicas (identical runs per seed) freeze the kernel once, write
the job notebook once (and build the image once); each task gets its own run directory ``tasks/INDEX``
(job.json with its parameters, events, log, output notebook) whose ``job.ipynb`` and ``env`` link to the
shared ones, so preparing 100 tasks costs milliseconds. Targets that take them all at once (Slurm: one
job array, ``Target.submit_array``) get one submission; the others get the tasks one by one, at most
``max_parallel`` running. A contention group runs the job alone (``isolated``), then beside a stress
workload (``contended``). ``sweep.json`` in the group directory says which tasks there are;
:func:`jupyter_promote.analysis.spread.summarise` reads a group's spread from it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..analysis.spread import SWEEP_FILE
from ..errors import PromoteError, UsageError
from ..events import JobView
from ..job.notebook import read_notebook
from ..job.overrides import refuse_identical_tasks
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.events import EventLog
from ..targets import Target
from .lifecycle import JobLifecycle
from .pipeline import Pipeline, record_overrides
from .prepared import Prepared
from .request import GroupRequest, PromoteRequest, default_run_dir, job_body, member, new_group_id, new_job_id


@dataclass
class PreparedSweep:
    id: str
    path: Path
    tasks: list[Prepared]
    max_parallel: int | None
    kind: str = "grid"


def group_dir(runs_dir: str, request: PromoteRequest, group_id: str, kind: str) -> Path:
    """The group's directory: ``--out``, or a new one under the runs directory; it must be new or empty."""
    name = "contention" if kind == "contention" else "sweep"
    path = (
        Path(request.out).absolute()
        if request.out
        else default_run_dir(runs_dir, request.notebook, group_id[1:], name, request.owner)
    )
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"--out {path}: already exists and is not empty", subject=str(path), field="out")
    return path


def prepare_sweep(
    pipeline: Pipeline,
    request: PromoteRequest,
    group: GroupRequest,
    max_parallel: int | None,
    ids: list[str] | None = None,
    group_id: str | None = None,
) -> PreparedSweep:
    """Freeze and convert once (task 0 is prepared the normal way), then lay out the other tasks beside it.

    ``ids`` and ``group_id`` are given when the caller announced them before preparing (the server).
    """
    sets, kind = group.sets, group.kind
    if kind == "grid":
        refuse_identical_tasks(read_notebook(request.notebook), request.notebook, request.parameters, sets)
    group_id = group_id or new_group_id()
    ids = ids or [new_job_id() for _ in sets]
    path = group_dir(pipeline.runs_dir, request, group_id, kind)
    size = len(sets)
    first = dataclasses.replace(
        request,
        out=str(path / "tasks" / "0"),
        parameters={**request.parameters, **sets[0]},
        sweep=member(group_id, 0, size, kind),
    )
    try:
        head = pipeline.prepare(first, ids[0])
        path.chmod(0o700)  # the sweep's shared lock and job notebook, like each task's run directory
        # the shared parts move up to the sweep directory; task 0 links to them like every other task
        for name in ("env", "job.ipynb"):
            os.replace(head.run.path / name, path / name)
            os.symlink(os.path.join("..", "..", name), head.run.path / name)
        head.remove_on_refusal = False  # a task the target refuses stays, failed, in its group
        tasks = [head]
        for index in range(1, size):
            sweep = member(group_id, index, size, kind)
            task = _task(path, head.record, ids[index], {**request.parameters, **sets[index]}, sweep)
            task.overrides = tuple(o for o in head.overrides if o.name in task.record.parameters)
            task.secrets = head.secrets  # the values read for the group: each task delivers them
            record_overrides(task.log, task.overrides)
            tasks.append(task)
        write_group_file(
            path, group_id, kind, request, [(t.record.id, t.record.parameters) for t in tasks], max_parallel
        )
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    for task in tasks:
        task.judge_alone = kind != "replicas"
    return PreparedSweep(group_id, path, tasks, max_parallel, kind)


def _task(path: Path, template: JobRecord, job_id: str, parameters: dict[str, Any], sweep: dict[str, Any]) -> Prepared:
    run = RunDir(path / "tasks" / str(sweep["index"]))
    run.path.mkdir(parents=True)
    for name in ("env", "job.ipynb"):
        os.symlink(os.path.join("..", "..", name), run.path / name)
    record = dataclasses.replace(
        template,
        id=job_id,
        parameters=parameters,
        request=job_body(template.request, parameters),
        created_at=round(time.time(), 3),
        sweep=sweep,
        handle={},
    )
    run.write(record)
    log = EventLog(str(run.events), record.id)
    log.emit("status", state="pending", source="pipeline", message=f"task {sweep['index']} of sweep {sweep['id']}")
    return Prepared.resume(run, record, has_parameters_cell=True, log=log, remove_on_refusal=False)


def write_group_file(
    path: Path,
    group_id: str,
    kind: str,
    request: PromoteRequest,
    jobs: list[tuple[str, dict[str, Any]]],
    max_parallel: int | None,
    dirs: tuple[str, ...] | None = None,
) -> None:
    """``sweep.json``: the group's jobs (id, parameters) and, when not ``tasks/INDEX``, their directories."""
    tasks = [
        {"index": i, "job": job_id, "parameters": parameters, **({"dir": dirs[i]} if dirs else {})}
        for i, (job_id, parameters) in enumerate(jobs)
    ]
    data = {
        "id": group_id,
        "kind": kind,
        "notebook": os.path.abspath(request.notebook),
        "target": request.target,
        "max_parallel": max_parallel,
        "created_at": round(time.time(), 3),
        "tasks": tasks,
    }
    path.mkdir(parents=True, exist_ok=True)
    (path / SWEEP_FILE).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


async def run_sweep(
    sweep: PreparedSweep,
    jobs: list[JobLifecycle],
    target: Target,
    on_done: Callable[[Prepared, JobView], None] = lambda task, view: None,
) -> list[JobView]:
    """Submit (one array, or one by one within ``max_parallel``) and follow every task to its end.

    ``jobs`` holds one lifecycle per task, its prepared task set: each can be cancelled on its own.
    """
    live = [job for job in jobs if not job.cancel_requested]
    handles = None
    if live:
        records, runs = [j.task.record for j in live], [j.task.run for j in live]
        secrets = live[0].task.secrets  # one request's: every task's the same
        given = (secrets,) if secrets else ()  # as Pipeline.submit gives them
        handles = await target.submit_array(records, runs, sweep.path, sweep.max_parallel, *given)
    if handles is not None:
        for job, handle in zip(live, handles, strict=True):
            job.task.record.handle = handle
            await job.pipeline.mark_submitted(job.task, target)

        async def follow(job: JobLifecycle) -> JobView:
            view = await job.start(submitted=job in live)
            on_done(job.task, view)
            return view

        return list(await asyncio.gather(*(follow(j) for j in jobs)))
    slots = asyncio.Semaphore(sweep.max_parallel or len(jobs))

    async def one(job: JobLifecycle) -> JobView:
        async with slots:
            try:
                view = await job.start()
            except PromoteError as exc:  # refused: this task fails, the others go on
                view = await job.refused(exc)
        on_done(job.task, view)
        return view

    return list(await asyncio.gather(*(one(j) for j in jobs)))
