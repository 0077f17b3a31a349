"""A group of jobs run to its end, the same at both doors: a sweep or replicas (one freeze, one array where
the target has arrays) and contention (the job alone, then beside a stress workload).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..analysis.spread import summarise
from ..errors import JobCancelled
from ..events import JobView
from ..targets import Target
from .lifecycle import JobHooks, JobLifecycle
from .pipeline import Pipeline
from .prepared import Prepared
from .request import GroupRequest, PromoteRequest, member, new_group_id, new_job_id
from .sweep import PreparedSweep, group_dir, prepare_sweep, run_sweep, write_group_file

#: The run directories of a contention group's two jobs, relative to the group's directory.
CONTENTION_DIRS = ("isolated", "contended")


class GroupRun:
    """Runs one :class:`GroupRequest`; each job has its own lifecycle (and hooks), cancellable on its own.

    Parameters
    ----------
    pipeline, target
        As for :class:`JobLifecycle`.
    request
        What every job of the group shares (notebook, target, resources, ...).
    group
        The sets (merged over ``request.parameters``) and the kind of group.
    hooks_for
        Job id -> that job's hooks (the server stores and publishes each job's events).
    ids, group_id
        Given when the caller announced them before preparing (the server); else made here.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        target: Target,
        request: PromoteRequest,
        group: GroupRequest,
        hooks_for: Callable[[str], JobHooks] = lambda job_id: JobHooks(),
        ids: list[str] | None = None,
        group_id: str | None = None,
    ) -> None:
        self.pipeline, self.target, self.request, self.group = pipeline, target, request, group
        self.id = group_id or new_group_id()
        self.ids = ids or [new_job_id() for _ in group.sets]
        self.jobs = {job_id: JobLifecycle(pipeline, target, hooks_for(job_id)) for job_id in self.ids}
        self.path: Path | None = None
        self.sweep: PreparedSweep | None = None
        self.report_lines: list[str] = []  # replicas' parity with the seed band; contention's side by side
        self.contention: dict[str, Any] | None = None  # a contention group's report (contention.json)
        self.parity_failed = False

    def prepare(self) -> Path:
        """Blocking: the group's directory; for a sweep or replicas, the one freeze and every task's run directory."""
        if self.group.kind == "contention":  # each run is prepared when its turn comes
            self.path = group_dir(self.pipeline.runs_dir, self.request, self.id, "contention")
            jobs = [(job_id, dict(self.request.parameters)) for job_id in self.ids]
            write_group_file(self.path, self.id, "contention", self.request, jobs, None, CONTENTION_DIRS)
            return self.path
        first = self.jobs[self.ids[0]]
        self.pipeline.on_run_dir = first.hooks.run_dir_made
        try:
            group = self.group
            self.sweep = prepare_sweep(self.pipeline, self.request, group, group.max_parallel, self.ids, self.id)
        finally:
            first.hooks.preparing_done()
        self.path = self.sweep.path
        for task in self.sweep.tasks:
            job = self.jobs[task.record.id]
            job.prepared = task
            job.hooks.prepared(task)
        return self.path

    async def run(self, on_done: Callable[[Prepared, JobView], None] = lambda task, view: None) -> list[JobView]:
        """Every job to its end (after :meth:`prepare`); replicas are then judged together."""
        if self.group.kind == "contention":
            return await self._run_contention(on_done)
        assert self.sweep is not None and self.path is not None
        views = await run_sweep(self.sweep, [self.jobs[i] for i in self.ids], self.target, on_done)
        if self.group.kind == "replicas":
            from ..analysis.replicas import judge_replicas

            self.report_lines, self.parity_failed = await asyncio.to_thread(
                judge_replicas, self.path, summarise(self.path), self.pipeline.parity_tolerance
            )
        return views

    async def cancel(self, job_id: str | None = None) -> None:
        """Cancel one job of the group, or all of them."""
        for one in [job_id] if job_id else self.ids:
            await self.jobs[one].cancel()

    def _contention_request(self, index: int) -> PromoteRequest:
        assert self.path is not None
        out, sweep = str(self.path / CONTENTION_DIRS[index]), member(self.id, index, 2, "contention")
        return dataclasses.replace(self.request, out=out, sweep=sweep)

    async def _run_contention(self, on_done: Callable[[Prepared, JobView], None]) -> list[JobView]:
        from ..analysis.contention import Stress, StressWorkload, report

        assert self.path is not None and self.group.contention is not None
        stress = Stress.parse(self.group.contention)
        views = []
        workload: StressWorkload | None = None
        for index in range(2):
            job = self.jobs[self.ids[index]]
            if index == 1:
                workload = StressWorkload(stress)
                await asyncio.to_thread(workload.__enter__)
            try:
                views.append(await job.run(self._contention_request(index), self.ids[index]))
            except JobCancelled:
                return views
            finally:
                if workload is not None:
                    await asyncio.to_thread(workload.__exit__, None, None, None)
            on_done(job.task, views[-1])
        held = workload.held_bytes if workload else None
        self.contention, text = report(self.path / CONTENTION_DIRS[0], self.path / CONTENTION_DIRS[1], stress, held)
        self.report_lines = text.rstrip("\n").splitlines()
        return views
