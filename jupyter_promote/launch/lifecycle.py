"""One job's life, the same at both doors: prepare -> submit -> follow -> judge, with hooks.

The CLI's hooks print progress; the server's store every event and publish it to browsers. Whatever
happens (a cancel before the job was prepared, while its target takes it, or after; a target that
refuses it; an error while following it), the job ends in a final state written to its own event log.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import JobCancelled, PromoteError
from ..events import JobView
from ..events.authority import job_events
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..targets import Target
from .pipeline import Pipeline, secret_values
from .prepared import Prepared
from .request import PromoteRequest
from .retry import attempt_message, delay, retried

if TYPE_CHECKING:
    from .history import ScheduleHistory

log = logging.getLogger("jupyter_promote")


class JobReporter(Protocol):
    """Told of a job's alerts and of its end, off the job's path: notifications, experiment tracking."""

    def alert(self, job: dict[str, Any], alert: dict[str, Any], run_dir: str | None) -> None: ...

    def finished(self, job: dict[str, Any], run_dir: str | None) -> None: ...

    def close(self, timeout: float) -> None: ...


class JobHooks:
    """What a door does as a job goes; each hook does nothing here."""

    def run_dir_made(self, run: RunDir) -> None:
        """Preparing made the run directory (called from the preparing thread)."""

    def prepared(self, prepared: Prepared) -> None:
        """The environment is frozen (and the image built) and the job notebook written."""

    def preparing_done(self) -> None:
        """Preparing ended, prepared or not (called from the preparing thread)."""

    def event(self, event: dict[str, Any], view: JobView) -> None:
        """One event of the job, as followed, and the view it folds into."""

    def settled(self, prepared: Prepared, view: JobView, by_error: bool) -> None:
        """The job reached its final state (``by_error``: following it failed and the lifecycle settled it)."""

    def schedule_history(self, record: JobRecord, limit: int) -> ScheduleHistory | None:
        """The schedule that fired ``record`` and its last ``limit`` succeeded runs (called from a thread);
        None where the door keeps no store of jobs (nothing is judged against the schedule's runs)."""
        return None


class JobLifecycle:
    """Runs one job to its end through a :class:`Pipeline` on a target.

    ``cancel()`` works at any point: before the job is prepared nothing is made (:meth:`run` raises
    :class:`JobCancelled`), before it is submitted it ends cancelled, and after it is cancelled on its target.
    """

    def __init__(self, pipeline: Pipeline, target: Target, hooks: JobHooks | None = None) -> None:
        self.pipeline = pipeline
        self.target = target
        self.hooks = hooks or JobHooks()
        self.reporters: tuple[JobReporter, ...] = pipeline.reporters
        self.prepared: Prepared | None = None
        self.cancel_requested = False
        self._told = 0  # the last event the hooks and reporters were told of

    def prepare(self, request: PromoteRequest, job_id: str | None = None) -> Prepared:
        """Freeze, (build,) convert: blocking, so the CLI runs it where Ctrl-C reaches it and the server in a
        thread. ``job_id``: the id the caller announced (else a new one)."""
        self.pipeline.on_run_dir = self.hooks.run_dir_made
        try:
            self.prepared = self.pipeline.prepare(request, job_id)
            self.hooks.prepared(self.prepared)
        finally:
            self.hooks.preparing_done()
        return self.prepared

    async def run(self, request: PromoteRequest, job_id: str | None = None) -> JobView:
        """Prepare (in a thread) as job ``job_id``, submit and follow. Raises :class:`PromoteError` when the job cannot be
        prepared or its target refuses it (then ``self.prepared`` says which), :class:`JobCancelled` when it
        was cancelled before it was prepared.
        """
        if self.cancel_requested:
            raise JobCancelled("cancelled before it started")
        await asyncio.to_thread(self.prepare, request, job_id)
        return await self.start()

    async def start(self, submitted: bool = False) -> JobView:
        """Submit the prepared job (unless a job array did already) and follow it to its end."""
        prepared = self.task
        if self.cancel_requested and not prepared.record.handle:
            message = "cancelled before submit"
            prepared.log.emit("status", state="cancelled", reason="cancelled", message=message, source="pipeline")
            return await self.follow()
        if not submitted:
            await self.pipeline.submit(prepared, self.target)
            if self.cancel_requested:  # a cancel that came while the target took the job
                await self.pipeline.cancel(prepared, self.target)
        return await self.follow()

    async def refused(self, exc: PromoteError) -> JobView:
        """The target refused this job of a group: it fails, its record says why, the others go on."""
        self.task.log.emit("status", state="failed", reason="refused", message=str(exc), source="pipeline")
        return await self.follow()

    async def follow(self) -> JobView:
        """Follow to the final state; whatever breaks following, the job is settled, never left running. A job
        the infrastructure failed is started again while it has attempts left (:mod:`.retry`)."""
        prepared = self.task
        try:
            view = await self.pipeline.follow(prepared, self.target, self._event)
            while retried(prepared.record, view, self.cancel_requested):
                view = await self._again(view)
        except Exception as exc:
            log.exception("jupyter-promote: following job %s failed", prepared.record.id)
            view = self._settle_after_error(prepared, exc)
            with contextlib.suppress(Exception):
                await self.pipeline.cancel(prepared, self.target)
            await self._ended(prepared, view, True)
            return view
        await self._ended(prepared, view, False)
        return view

    async def _ended(self, prepared: Prepared, view: JobView, by_error: bool) -> None:
        """Every job's end: a scheduled job judged against its schedule's runs, its report written (report.html,
        before anyone is told), the hooks and reporters told."""
        from ..report import write_report

        try:  # neither raises; a cancel while they work still leaves the job settled and told
            if prepared.record.schedule and not by_error:
                await self._judge_history(prepared, view)
            await asyncio.to_thread(write_report, prepared.run, prepared.record, view)
        finally:
            self.hooks.settled(prepared, view, by_error)
            self._notify_end(prepared, view)

    async def _judge_history(self, prepared: Prepared, view: JobView) -> None:
        """Drift against the schedule's own runs (:mod:`.history`): its alerts folded and told as any other."""
        from ..analysis.drift import WINDOW
        from .history import judge_history

        try:
            history = await asyncio.to_thread(self.hooks.schedule_history, prepared.record, WINDOW)
            if history is None:
                return
            tolerance = self.pipeline.parity_tolerance
            events = await asyncio.to_thread(judge_history, prepared, view, history, tolerance)
        except Exception:  # a verdict that cannot be made never changes how the job ended
            log.exception("jupyter-promote: job %s: could not be judged against its schedule", prepared.record.id)
            return
        for event in events:
            view.apply(event)
            self._event(event, view)

    async def _again(self, ended: JobView) -> JobView:
        """The job's next attempt: announced (signed), after a back-off, submitted again and followed."""
        prepared, record = self.task, self.task.record
        wait = delay(record.attempt + 1, self.pipeline.retry_backoff_s)
        message = attempt_message(record, ended, wait)
        prepared.log.emit(
            "attempt", number=record.attempt + 1, reason=ended.reason, delay_s=wait, message=message, source="pipeline"
        )
        with contextlib.suppress(Exception):  # what is left of the last attempt on its target (a Job, a container)
            await self.pipeline.cancel(prepared, self.target)
        # queued, not submitted: `jupyter promote cancel` and `status` see a job that starts again, not one ended
        record.attempt, record.handle = record.attempt + 1, {}
        record.state, record.reason, record.message, record.finished_at = JobState.QUEUED, "retrying", message, None
        prepared.run.write(record)  # the runner (and a payload sent to the cluster) reads which attempt it is
        if await self._cancelled_during(wait):  # by Ctrl-C, the server, or `jupyter promote cancel` (its event)
            return await self.pipeline.follow(prepared, self.target, self._event)
        if record.secrets and not prepared.secrets:  # followed again after a restart: read where they are
            prepared.secrets = secret_values(record.secrets, record.target)
        prepared.remove_on_refusal = False  # the run directory holds the earlier attempts
        if self.cancel_requested:
            text = f"cancelled before attempt {record.attempt}"
            prepared.log.emit("status", state="cancelled", reason="cancelled", message=text, source="pipeline")
        else:
            try:
                await self.pipeline.submit(prepared, self.target)
            except PromoteError as exc:  # refused this time: the job ends, saying why
                prepared.log.emit("status", state="failed", reason="refused", message=str(exc), source="pipeline")
        return await self.pipeline.follow(prepared, self.target, self._event)

    async def _cancelled_during(self, wait: float) -> bool:
        """Wait ``wait`` seconds for the next attempt, a little at a time; whether a cancel came meanwhile: asked
        here (settled as cancelled now) or written by another process (a final status after the attempt)."""
        prepared, deadline = self.task, time.monotonic() + wait
        while True:
            if JobView().fold(job_events(prepared.run.path)).state.final:
                return True
            if self.cancel_requested:
                text = f"cancelled before attempt {prepared.record.attempt}"
                prepared.log.emit("status", state="cancelled", reason="cancelled", message=text, source="pipeline")
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))

    def _event(self, event: dict[str, Any], view: JobView) -> None:
        if event["seq"] <= self._told:  # an attempt's follower reads the stream from its start: told once
            return
        self._told = int(event["seq"])
        self.hooks.event(event, view)
        if self.reporters and event.get("type") == "alert" and self.prepared is not None:
            job = self._as_now(self.prepared.record, view).to_json()
            for reporter in self.reporters:
                _tell(reporter.alert, job, event, str(self.prepared.run.path))

    def _notify_end(self, prepared: Prepared, view: JobView) -> None:
        if self.reporters:
            job = self._as_now(prepared.record, view).to_json()
            for reporter in self.reporters:
                _tell(reporter.finished, job, str(prepared.run.path))

    @staticmethod
    def _as_now(record: JobRecord, view: JobView) -> JobRecord:
        """A copy of the job's record with what its events say so far (the record itself is the pipeline's)."""
        copy = JobRecord.from_json(record.to_json())
        view.update(copy)
        return copy

    async def cancel(self) -> None:
        """Stop the job wherever it is (idempotent)."""
        self.cancel_requested = True
        if self.prepared is not None and self.prepared.record.handle:
            await self.pipeline.cancel(self.prepared, self.target)

    @property
    def task(self) -> Prepared:
        """The prepared job (only once :meth:`prepare` ran, or a group set it)."""
        if self.prepared is None:
            raise RuntimeError("the job is not prepared")
        return self.prepared

    @staticmethod
    def _settle_after_error(prepared: Prepared, exc: Exception) -> JobView:
        """Fail a job whose following raised, through its own event log (one source of seqs)."""
        record, run = prepared.record, prepared.run
        reason = "error"
        message = f"could not follow the job: {type(exc).__name__}: {exc}".splitlines()[0]
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            reason, message = "disk_full", f"the disk of the run directory {run.path} is full"
        view = JobView()
        try:
            prepared.log.emit("status", state="failed", reason=reason, message=message, source="pipeline")
            view.fold(job_events(run.path))  # a final status only from who may decide (events/authority.py)
            view.update(record)
            run.write(record)
        except Exception:  # the run directory itself is unusable (a full disk): the record still says why
            log.exception("jupyter-promote: job %s: could not write its final state", record.id)
            view.state, view.reason, view.message = JobState.FAILED, reason, message
            record.state, record.reason, record.message = view.state, reason, message
            record.finished_at = round(time.time(), 3)
        return view


def _tell(call: Any, *args: Any) -> None:
    """A reporter's failure is logged, never the job's."""
    try:
        call(*args)
    except Exception:
        log.exception("jupyter-promote: %s failed", getattr(call, "__qualname__", call))
