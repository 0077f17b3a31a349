"""Batch reruns: one notebook, N parameter sets, one sweep directory.

The kernel is frozen once, the job notebook written once (and the image built once); each task gets its
own run directory ``tasks/INDEX`` (job.json with its parameters, events, log, output notebook) whose
``job.ipynb`` and ``env`` are links to the shared ones, so preparing 100 tasks costs milliseconds.
Targets that can take them all at once (Slurm: one job array, ``Target.submit_array``) get one
submission; the others get the tasks one by one, at most ``max_parallel`` running.

sweep.json (in the sweep directory) says which tasks there are; ``summarise`` folds their records into
counts by state and the best and worst value of each reported metric.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PromoteError, UsageError
from ..events import JobView
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.events import EventLog, read_events
from ..targets import Target
from .pipeline import Pipeline, Prepared, PromoteRequest, new_job_id

SWEEP_FILE = "sweep.json"


@dataclass
class PreparedSweep:
    id: str
    path: Path
    tasks: list[Prepared]
    max_parallel: int | None


def prepare_sweep(
    pipeline: Pipeline, request: PromoteRequest, sets: list[dict[str, Any]], max_parallel: int | None
) -> PreparedSweep:
    """Freeze and convert once (task 0 is prepared the normal way), then lay out the other tasks beside it."""
    sweep_id = "s" + new_job_id()
    stem = Path(request.notebook).stem.replace(" ", "_")
    path = (
        Path(request.out)
        if request.out
        else Path(pipeline.runs_dir) / f"{stem}-sweep-{time.strftime('%Y%m%d-%H%M%S')}-{sweep_id[1:7]}"
    )
    if path.exists() and (not path.is_dir() or any(path.iterdir())):
        raise UsageError(f"--out {path}: already exists and is not empty", subject=str(path))
    size = len(sets)
    first = dataclasses.replace(request, out=str(path / "tasks" / "0"), parameters={**request.parameters, **sets[0]},
                                sweep={"id": sweep_id, "index": 0, "size": size})  # fmt: skip
    try:
        head = pipeline.prepare(first)
        path.chmod(0o700)  # the sweep's shared lock and job notebook, like each task's run directory
        # the shared parts move up to the sweep directory; task 0 links to them like every other task
        for name in ("env", "job.ipynb"):
            os.replace(head.run.path / name, path / name)
            os.symlink(os.path.join("..", "..", name), head.run.path / name)
        tasks = [head]
        for index in range(1, size):
            tasks.append(_task(path, head.record, index, {**request.parameters, **sets[index]}, size, sweep_id))
        _write_sweep(path, sweep_id, request, tasks, max_parallel)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    return PreparedSweep(sweep_id, path, tasks, max_parallel)


def _task(
    path: Path, template: JobRecord, index: int, parameters: dict[str, Any], size: int, sweep_id: str
) -> Prepared:
    run = RunDir(path / "tasks" / str(index))
    run.path.mkdir(parents=True)
    for name in ("env", "job.ipynb"):
        os.symlink(os.path.join("..", "..", name), run.path / name)
    record = dataclasses.replace(template, id=new_job_id(), parameters=parameters, created_at=round(time.time(), 3),
                                 sweep={"id": sweep_id, "index": index, "size": size}, handle={})  # fmt: skip
    run.write(record)
    log = EventLog(str(run.events), record.id)
    log.emit("status", state="pending", source="pipeline", message=f"task {index} of sweep {sweep_id}")
    return Prepared(record, run, None, True, log)  # type: ignore[arg-type]


def _write_sweep(
    path: Path, sweep_id: str, request: PromoteRequest, tasks: list[Prepared], max_parallel: int | None
) -> None:
    data = {
        "id": sweep_id, "notebook": os.path.abspath(request.notebook), "target": request.target,
        "max_parallel": max_parallel, "created_at": round(time.time(), 3),
        "tasks": [{"index": i, "job": t.record.id, "parameters": t.record.parameters} for i, t in enumerate(tasks)],
    }  # fmt: skip
    (path / SWEEP_FILE).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


async def submit_sweep(pipeline: Pipeline, sweep: PreparedSweep, target: Target) -> bool:
    """Submit every task at once when the target takes arrays; returns whether it did (else the tasks are
    submitted one by one by :func:`run_sweep`).
    """
    handles = await target.submit_array([t.record for t in sweep.tasks], [t.run for t in sweep.tasks], sweep.path,
                                        sweep.max_parallel)  # fmt: skip
    if handles is None:
        return False
    for task, handle in zip(sweep.tasks, handles, strict=True):
        task.record.handle = handle
        await pipeline.mark_submitted(task, target)
    return True


async def run_sweep(
    pipeline: Pipeline,
    sweep: PreparedSweep,
    target: Target,
    on_done: Callable[[Prepared, JobView], None] = lambda task, view: None,
) -> list[JobView]:
    """Submit (an array, or one by one within ``max_parallel``) and follow every task to its end."""
    if await submit_sweep(pipeline, sweep, target):

        async def follow(task: Prepared) -> JobView:
            view = await pipeline.follow(task, target)
            on_done(task, view)
            return view

        return list(await asyncio.gather(*(follow(t) for t in sweep.tasks)))
    slots = asyncio.Semaphore(sweep.max_parallel or len(sweep.tasks))

    async def one(task: Prepared) -> JobView:
        async with slots:
            try:
                task.record.handle = await target.submit(task.record, task.run)
            except PromoteError as exc:  # refused: this task fails, the others go on
                view = _refused(task, exc)
            else:
                await pipeline.mark_submitted(task, target)
                view = await pipeline.follow(task, target)
        on_done(task, view)
        return view

    return list(await asyncio.gather(*(one(t) for t in sweep.tasks)))


def _refused(task: Prepared, exc: PromoteError) -> JobView:
    task.log.emit("status", state="failed", reason="refused", message=str(exc), source="pipeline")
    view = JobView()
    for event in read_events(str(task.run.events)):
        view.apply(event)
    record = task.record
    record.state, record.reason, record.message, record.finished_at = (
        view.state,
        view.reason,
        view.message,
        view.finished_at,
    )
    task.run.write(record)
    return view


def _seed_and_replica_spread(vals: list[tuple[float, int, dict[str, Any]]]) -> dict[str, float]:
    """When tasks repeat seeds (``run --replicas N --seeds ...``): the spread of the per-seed means (the
    seed's share) apart from the mean spread within one seed (the replicas': hardware, scheduling).
    """
    from ..analysis.parity import by_seed

    seeds = by_seed((parameters, value) for value, _, parameters in vals)
    if len(seeds) < 2 and all(len(v) < 2 for v in seeds.values()):
        return {}
    means = [statistics.fmean(v) for v in seeds.values()]
    return {"seed_std": statistics.pstdev(means) if len(means) > 1 else 0.0,
            "replica_std": statistics.fmean(statistics.pstdev(v) for v in seeds.values())}  # fmt: skip


def read_sweep(path: Path) -> dict[str, Any]:
    return json.loads((path / SWEEP_FILE).read_text())


def summarise(path: Path) -> dict[str, Any]:
    """Counts by state and, for each reported metric, the best and worst task (lowest/highest value)."""
    sweep = read_sweep(path)
    counts: dict[str, int] = {}
    metrics: dict[str, list[tuple[float, int, dict[str, Any]]]] = {}
    tasks = []
    for task in sweep["tasks"]:
        run = RunDir(path / "tasks" / str(task["index"]))
        record = run.read() if run.exists() else None
        state = record.state.value if record else "missing"
        counts[state] = counts.get(state, 0) + 1
        tasks.append({"index": task["index"], "job": task["job"], "state": state, "parameters": task["parameters"],
                      "reason": record.reason if record else None, "metrics": record.metrics if record else {}})  # fmt: skip
        for name, value in (record.metrics if record else {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics.setdefault(name, []).append((float(value), task["index"], task["parameters"]))
    extremes = {
        name: {"min": {"value": min(vals)[0], "index": min(vals)[1], "parameters": min(vals)[2]},
               "max": {"value": max(vals)[0], "index": max(vals)[1], "parameters": max(vals)[2]}, "tasks": len(vals),
               "mean": statistics.fmean(v for v, _, _ in vals), "std": statistics.pstdev(v for v, _, _ in vals),
               **_seed_and_replica_spread(vals)}
        for name, vals in metrics.items()
    }  # fmt: skip
    return {"id": sweep["id"], "notebook": sweep["notebook"], "target": sweep["target"], "size": len(sweep["tasks"]),
            "states": counts, "metrics": extremes, "tasks": tasks, "replicas": _replica_agreement(path, tasks)}  # fmt: skip


def _replica_agreement(path: Path, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each set of identical tasks (the same parameters: ``run --replicas N``) that succeeded: whether
    their reported metrics agree bit for bit, and if not, the first report (step) where they diverge."""
    from ..analysis.parity import first_divergence

    groups: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        if task["state"] == "succeeded":
            groups.setdefault(json.dumps(task["parameters"], sort_keys=True), []).append(task)
    found = []
    for key, group in groups.items():
        if len(group) < 2:
            continue
        reports = [[e.get("metrics") or {} for e in read_events(str(path / "tasks" / str(t["index"]) / "events.jsonl"))
                    if e["type"] == "metric"] for t in group]  # fmt: skip
        divergence = first_divergence(reports)
        found.append({"parameters": json.loads(key), "tasks": [t["index"] for t in group],
                      "identical": divergence is None, "first_divergence": divergence})  # fmt: skip
    return found
