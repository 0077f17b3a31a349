"""The server's jobs: requests run through the same launcher and lifecycle as the CLI's, in the background;
every event stored once and pushed to browsers; unfinished jobs reconciled when the server starts.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..analysis.spread import SWEEP_FILE
from ..errors import JobCancelled, JobNotFinished, JobNotFound, PromoteError, UsageError
from ..events import problem
from ..launch.body import rerun_request
from ..launch.group import GroupRun
from ..launch.launcher import Launcher
from ..launch.lifecycle import JobLifecycle
from ..launch.request import GroupRequest, PromoteRequest, job_record, member, new_group_id, new_job_id
from ..models import JobRecord, JobState
from ..report import write_report
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail
from ..targets import Target
from .hooks import StoringHooks
from .lease import Lease
from .publisher import StoredPublisher
from .store import JobStore
from .trust import UntrustedRun, own_run

log = logging.getLogger("jupyter_promote")


class JobManager:
    """Runs promote requests for the server and keeps the store up to date.

    Parameters
    ----------
    store
        The durable job store.
    launcher
        Opens targets and builds pipelines (the CLI's launcher, from the same settings).
    publish
        Called with every batch of new events (job id, events), on the event loop: the server's event bus.
        What the store wrote since the last call goes out as one batch per job (consecutive seqs).
    lease
        This server's claim to the jobs it follows, in a store other servers may share.
    """

    def __init__(
        self,
        store: JobStore,
        launcher: Launcher,
        publish: Callable[[str, list[dict[str, Any]]], None] = lambda job, events: None,
        lease: Lease | None = None,
    ) -> None:
        self.store = store
        self.launcher = launcher
        self.lease = lease
        self._active: dict[str, JobLifecycle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.publisher = StoredPublisher(publish)
        store.on_stored = self.publisher.stored
        # previews run a kernel's interpreter (seconds when it is slow): a pool of their own, so six dialogs
        # opened at once never starve the threads that target checks and polls use
        self.previews = ThreadPoolExecutor(max_workers=2, thread_name_prefix="promote-preview")

    def target(self, name: str) -> Target:
        """One instance per target for the server's lifetime (a target polling in batches sees all its jobs)."""
        return self.launcher.target(name)

    async def submit(self, request: PromoteRequest) -> str:
        """Check the target, record the job as pending and start it in the background; returns its id."""
        target, _ = await asyncio.to_thread(self.launcher.open, request)
        record = self._pending(job_record(request, new_job_id()))
        job = JobLifecycle(self.launcher.pipeline(), target, StoringHooks(self, record))
        self._active[record.id] = job
        self._spawn(self._run(job, request, record))
        return record.id

    async def submit_group(self, request: PromoteRequest, group: GroupRequest) -> tuple[str, list[str]]:
        """A sweep, replicas or contention: every job recorded as pending at once, then run as one group
        (one freeze and, on Slurm, one job array). Returns the group's id and its job ids in order.
        """
        target, _ = await asyncio.to_thread(self.launcher.open, request)
        if group.max_parallel is None and group.kind == "grid":
            group.max_parallel = target.default_max_parallel()
        group_id, ids = new_group_id(), [new_job_id() for _ in group.sets]
        records = {}
        for index, (job_id, values) in enumerate(zip(ids, group.sets, strict=True)):
            one = dataclasses.replace(request, parameters={**request.parameters, **values})
            records[job_id] = self._pending(
                job_record(one, job_id, sweep=member(group_id, index, len(ids), group.kind))
            )
        pipeline = self.launcher.pipeline()
        run = GroupRun(
            pipeline, target, request, group, lambda job_id: StoringHooks(self, records[job_id]), ids, group_id
        )
        self._active.update(run.jobs)
        self._spawn(self._run_group(run, records))
        return group_id, ids

    def _pending(self, record: JobRecord) -> JobRecord:
        """``record`` stored as pending (no run directory yet), claimed by this server's lease."""
        self.store.put_job(record, None)
        if self.lease is not None:
            self.store.claim(record.id, self.lease.id)
        return record

    def _spawn(self, coro: Any) -> None:
        loop = self.publisher.loop = asyncio.get_running_loop()
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, job: JobLifecycle, request: PromoteRequest, record: JobRecord) -> None:
        try:
            await job.run(request, record.id)
        except JobCancelled as exc:
            self.end_unsubmitted(record, "cancelled", "cancelled", str(exc))
        except PromoteError as exc:  # invalid, or refused by the target (then its run directory is gone)
            why = "refused" if job.prepared else "invalid"
            self.end_unsubmitted(job.prepared.record if job.prepared else record, "failed", why, str(exc))
        except Exception as exc:  # a bug, not the user's: still never a job stuck in pending
            log.exception("jupyter-promote: job %s failed", record.id)
            self.end_unsubmitted(record, "failed", "error", f"{type(exc).__name__}: {exc}")
        finally:
            self._active.pop(record.id, None)

    async def _run_group(self, run: GroupRun, records: dict[str, JobRecord]) -> None:
        reason, message = "error", "the group ended before this job ran"
        try:
            await asyncio.to_thread(run.prepare)
            await run.run()
            for job in run.jobs.values():  # replicas are judged together once all ended: their verdicts stored
                if job.prepared is not None and job.prepared.run.exists():
                    self.store.put_job(job.prepared.run.read(), str(job.prepared.run.path))
        except PromoteError as exc:
            reason, message = "invalid", str(exc)
        except Exception as exc:
            log.exception("jupyter-promote: group %s failed", run.id)
            reason, message = "error", f"{type(exc).__name__}: {exc}"
        finally:
            for job_id in records:  # whatever happened, no job of the group stays unfinished
                self._active.pop(job_id, None)
                stored = self.store.get_job(job_id)
                if stored is not None and not stored[0].state.final:
                    job = run.jobs[job_id]
                    if job.cancel_requested:
                        self.end_unsubmitted(stored[0], "cancelled", "cancelled", "cancelled before it started")
                    else:
                        self.end_unsubmitted(stored[0], "failed", reason, message)

    def end_unsubmitted(self, record: JobRecord, state: str, reason: str, message: str) -> None:
        """Settle a job that was never submitted. Its final event goes through its run directory's event log
        when it has one (one source of seqs for the file and the store, job.json updated too); else (never
        prepared, or refused and removed) it is numbered after what the store holds."""
        record.state, record.reason, record.message = JobState(state), reason, message
        record.finished_at = round(time.time(), 3)
        fields = {"state": state, "stage": "finished", "reason": reason, "message": message, "source": "server"}
        found = self.store.get_job(record.id)
        run = RunDir(found[1]) if found is not None and found[1] else None
        events: list[dict[str, Any]] = []
        if run is not None and run.exists():
            try:
                EventLog(str(run.events), record.id).emit("status", **fields)
                run.write(record)
                write_report(run, record)  # no output notebook to render: the header alone, at once
                tail = EventTail(str(run.events), after=self.store.last_seq(record.id), job=record.id)
                events = [event for event in tail.read() if problem(event) is None]
            except OSError as exc:  # a full disk: the store alone says how it ended
                log.warning("jupyter-promote: job %s: could not write its end to %s: %s", record.id, run.path, exc)
                events, run = [], None
        if not events:
            seq = self.store.last_seq(record.id) + 1
            events = [{"seq": seq, "ts": record.finished_at, "job": record.id, "type": "status", **fields}]
        self.store.put_job(record, str(run.path) if run is not None else None)
        self.store.add_events(record.id, events)  # what is new is published (see StoredPublisher)

    async def cancel(self, job_id: str) -> JobRecord:
        """Cancel a job (idempotent: a finished job is left as it is)."""
        record, run_dir = self.get(job_id)
        if record.state.final:
            return record
        job = self._active.get(job_id)
        if job is not None:
            await job.cancel()
            return record
        try:
            current = own_run(job_id, run_dir, record.handle)
        except UntrustedRun as exc:
            log.warning("jupyter-promote: %s", exc)
            raise
        if current is not None and current.handle:  # submitted, followed by another server: stop it on its target
            await self.target(current.target).cancel(current.handle)
        return record

    @property
    def running(self) -> int:
        """How many jobs this server is preparing, running or following now."""
        return len(self._active)

    async def rerun(self, job_id: str, owner: str = "") -> str:
        """The same request (the one job.json keeps, :func:`rerun_request`), as a new job of ``owner`` (who
        asked again)."""
        record, _ = self.get(job_id)
        if not os.path.isfile(record.notebook):
            raise UsageError(f"job {job_id}: its notebook {record.notebook} no longer exists", subject=job_id)
        return await self.submit(rerun_request(record, owner, self.launcher.settings))

    async def remove(self, job_id: str) -> JobRecord:
        """Remove a finished job: its run directory (renamed aside first, so it goes at once) and its record.
        A job that has not ended is refused: cancel it first."""
        from ..housekeeping import remove

        record, run_dir = self.get(job_id)
        for _ in range(100):  # a job that just ended may still be judged (parity) and settled: a moment
            if not (record.state.final and job_id in self._active):
                break
            await asyncio.sleep(0.1)
        if not record.state.final or job_id in self._active:
            message = f"job {job_id}: still {record.state.value}; cancel it first, then remove it"
            raise JobNotFinished(message, subject=job_id)
        if run_dir and RunDir(run_dir).exists():
            own_run(job_id, run_dir, record.handle)  # this user's folder of this job, or refused
            await asyncio.to_thread(remove, RunDir(run_dir))
        self.store.delete_job(job_id)
        return record

    async def remove_older_than(self, age_s: float, now: float | None = None) -> list[str]:
        """Remove every finished job that ended more than ``age_s`` ago (the retention setting): their ids."""
        from ..housekeeping import ended_at

        now = time.time() if now is None else now
        removed = []
        for record in self.store.finished():
            if now - ended_at(record) >= age_s and record.id not in self._active:
                try:
                    await self.remove(record.id)
                except Exception as exc:  # removed meanwhile, not ended, not ours, a folder that stays: kept, said
                    why = (str(exc).splitlines() or [""])[0][:300]
                    log.warning("jupyter-promote: retention kept job %s: %s: %s", record.id, type(exc).__name__, why)
                    continue
                removed.append(record.id)
        return removed

    def get(self, job_id: str) -> tuple[JobRecord, str | None]:
        found = self.store.get_job(job_id)
        if found is None:
            raise JobNotFound(f"job {job_id}: no such job", subject=job_id)
        return found

    def group_dir(self, group_id: str) -> str:
        """The directory of a sweep, replicas or contention group (where its sweep.json is)."""
        records, _ = self.store.list_jobs(sweep=group_id, limit=10, offset=0)
        for text in records:
            run_dir = self.get(json.loads(text)["id"])[1]
            for folder in (Path(run_dir).parent, Path(run_dir).parent.parent) if run_dir else ():
                if (folder / SWEEP_FILE).is_file():
                    return str(folder)
        raise JobNotFound(f"sweep {group_id}: no such group (or it is still being prepared)", subject=group_id)

    async def reconcile(self) -> None:
        """At server start: resume watching every unfinished job of this user's (see :mod:`.reconcile`)."""
        from .reconcile import reconcile

        reconcile(self)

    def follow_again(self, job: JobLifecycle) -> None:
        """Follow a job this server did not start (a restart, a dead server's job adopted) to its end."""
        self._active[job.task.record.id] = job
        self._spawn(self._follow_again(job))

    async def _follow_again(self, job: JobLifecycle) -> None:
        try:
            await job.follow()
        finally:
            self._active.pop(job.task.record.id, None)

    async def preview_async(
        self, notebook: str, kernel: str | None = None, gpus: int | None = None, target: str = "local"
    ) -> dict[str, Any]:
        """What a promote of ``notebook`` on ``target`` would use (see
        :func:`jupyter_promote.server.preview.preview`), in the previews' own threads."""
        from .preview import preview

        allowlist = tuple(self.launcher.settings.env_allowlist)
        call = functools.partial(preview, notebook, allowlist, self.launcher.config, kernel, gpus, target)
        return await asyncio.get_running_loop().run_in_executor(self.previews, call)

    async def close(self) -> None:
        self.previews.shutdown(wait=False, cancel_futures=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
