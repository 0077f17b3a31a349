"""Following a submitted job: its events folded as they come, its target polled, its end settled.

The runner's own events say how a job went; the target is asked too, for what the runner cannot say
(a job still queued and why, a job requeued, killed by the scheduler, or gone without a word). Lines
that cannot be folded are set aside and reported once as ``bad_event`` alerts, never fatal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from ..events import JobView
from ..events.authority import FinalStateRule, job_events
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail
from ..targets import Target
from ..targets.base import TargetStatus
from .prepared import Prepared
from .runner_silence import RunnerSilence
from .set_aside import set_aside

log = logging.getLogger("jupyter_promote")

#: Seconds a target may not answer before its jobs are settled as lost (``PROMOTE_TARGET_PATIENCE`` overrides).
TARGET_PATIENCE_S = float(os.environ.get("PROMOTE_TARGET_PATIENCE", "600"))
#: Seconds a target may report a job as ended before its final event must be in the log.
FINAL_EVENT_GRACE_S = 5.0
#: Seconds after the runner said its scheduler requeued the job during which an end state the scheduler shows
#: (the killed attempt's, before the job is queued again) is not taken as the job's end.
REQUEUE_GRACE_S = 60.0
#: The longest wait between looks at a job that waits to run (queued, held) while it writes nothing and its
#: target says nothing new: the wait grows from the poll interval by :data:`IDLE_GROWTH` per quiet look and is
#: short again at the next change. A running job is looked at every poll interval: its end is seen at once.
IDLE_POLL_S = 1.0
IDLE_GROWTH = 1.5


async def follow(
    prepared: Prepared,
    target: Target,
    on_event: Callable[[dict[str, Any], JobView], None] | None = None,
    poll_interval: float = 0.1,
    patience: float = TARGET_PATIENCE_S,
) -> JobView:
    """Follow a submitted job to its final state, keeping job.json up to date.

    Polls the target every ``poll_interval`` seconds, less often (up to :data:`IDLE_POLL_S`) while a job
    that waits to run writes nothing and its target reports the same; a target that does not
    answer for ``patience`` seconds settles the job as lost. The runner's own final event wins over what
    the target says.
    """
    return await _Follower(prepared, target, on_event, poll_interval, patience).run()


class _Follower:
    """One job followed to its end: its folded view and what the follower remembers between polls."""

    def __init__(
        self,
        prepared: Prepared,
        target: Target,
        on_event: Callable[[dict[str, Any], JobView], None] | None,
        poll_interval: float,
        patience: float,
    ) -> None:
        self.prepared, self.target, self.on_event = prepared, target, on_event
        self.poll_interval, self.patience = poll_interval, patience
        self.record, self.run_dir = prepared.record, prepared.run
        self.tail = EventTail(str(self.run_dir.events), job=self.record.id)
        self.rule = FinalStateRule(self.run_dir.path)
        self.view = JobView()
        self.silence = RunnerSilence(self.record)
        self.ended_at: float | None = None  # the target stopped knowing the job; its final event is awaited
        self.reported_queue: tuple[str | None, str | None] = (None, None)
        self.unreachable_since: float | None = None  # the target stopped answering (an engine or controller restart)
        self.written = (self.view.state, self.view.reason, 0.0)  # job.json: at once on a state change, else 1/s
        self.ended_by: list[str] = []  # who wrote the final status (the runner, or the target / pipeline for it)
        self.wait = poll_interval  # until the next look: longer while nothing changes (a held or quiet job)
        self.last_said: tuple[JobState | None, str | None] = (None, None)  # the target's last answer
        self.last_word: TargetStatus | None = None  # what the target said once the job had ended
        self.requeued_at: float | None = None  # the runner or the target said the job went back to its queue

    async def run(self) -> JobView:
        while True:
            await _relay(self.target, self.record, self.run_dir)
            changed = self.drain()
            if self.view.state.final:
                self.last_word = await _collect(self.prepared, self.target, self.view, self.drain, self.poll_interval)
                if self.ended_by and self.ended_by[0] != "runner":
                    await _until_quiet(self.run_dir, self.drain)
                    # what came meanwhile (a runner's "cancelled" relayed after its pod was evicted) does not
                    # outweigh what the target knows better
                    _override(self.prepared, self.view, self.last_word, self.drain)
                return self.view
            if self.silence.check(self.view, self.prepared.log):
                with contextlib.suppress(Exception):  # stopped on its target as far as it answers; settled anyway
                    await self.target.cancel(self.record.handle)
                continue
            status = await self.poll()
            if status is None:
                await asyncio.sleep(min(5.0, max(self.poll_interval, 1.0)))
                continue
            self.report_queue(status)
            await self.settle_if_ended(status)
            await asyncio.sleep(self.pace(changed, status))

    def pace(self, changed: bool, status: TargetStatus) -> float:
        """Seconds until the next look: the poll interval while the job runs (its end is seen at once) and
        after a change (events, or a new answer from the target); for a job that waits (queued, held) a little
        longer each quiet look, up to :data:`IDLE_POLL_S`."""
        said = (status.state, status.reason)
        if changed or said != self.last_said or self.view.state is JobState.RUNNING:
            self.wait = self.poll_interval
        else:
            self.wait = min(max(IDLE_POLL_S, self.poll_interval), self.wait * IDLE_GROWTH)
        self.last_said = said
        return self.wait

    def drain(self) -> bool:
        """Fold the events written since the last read, telling ``on_event``; job.json kept up to date.
        Whether there were any."""
        events = self.tail.read()
        for event in set_aside(events, self.tail, self.prepared.log, self.rule):
            self.view.apply(event)
            self.silence.saw(event)
            if event["type"] == "status" and JobState(event["state"]).final:
                self.ended_by.append(str(event.get("source")))
            self.note_requeue(event)
            if self.on_event is not None:
                self.on_event(event, self.view)
        view, now = self.view, time.monotonic()
        changed = (view.state, view.reason) != self.written[:2]
        if events and (changed or view.state.final or now - self.written[2] >= 1.0):
            view.update(self.record)
            self.run_dir.write(self.record)
            self.written = (view.state, view.reason, now)
        return bool(events)

    async def poll(self) -> TargetStatus | None:
        """What the target says of the job; None while it does not answer (reported once, then settled as
        ``failed``/``lost`` once it has not answered for ``patience`` seconds)."""
        try:
            status = (await self.target.poll({self.record.id: self.record.handle}))[self.record.id]
        except Exception as exc:  # a target that does not answer now may answer soon: retried, then settled
            now, name = time.monotonic(), self.target.name
            if self.unreachable_since is None:
                self.unreachable_since = now
                message = f"the {name} target does not answer ({type(exc).__name__}: {str(exc)[:200]}); asking again"
                self.prepared.log.emit(
                    "alert", kind="target_unreachable", action="alert", source="pipeline", message=message
                )
            elif now - self.unreachable_since > self.patience:
                message = f"the {name} target did not answer for {self.patience:.0f} s"
                self.prepared.log.emit("status", state="failed", reason="lost", source="pipeline", message=message)
            return None
        self.unreachable_since = None
        return status

    def report_queue(self, status: TargetStatus) -> None:
        """Why a queued job waits (Resources, Priority, ...), and a running job sent back to the queue; each
        once, until the job leaves the queue again."""
        if status.state is not JobState.QUEUED:
            self.reported_queue = (None, None)  # so that going back to the queue is reported
            return
        if (status.reason, status.message) == self.reported_queue:
            return
        self.reported_queue = (status.reason, status.message)
        log = self.prepared.log
        if self.view.state is JobState.RUNNING:  # a running job went back to the queue (node failure, preemption)
            message = f"requeued while running: {status.message or 'back in the queue'}"
            log.emit("status", state="queued", reason="requeued", source="target", message=message)
        elif status.reason not in (None, "pending"):
            log.emit("status", state="queued", reason=status.reason, message=status.message, source="target")

    def note_requeue(self, event: dict[str, Any]) -> None:
        """A job sent back to its queue (its runner's word, or the target's) stays so, whatever reason the queue
        gives next (``begintime``: Slurm's requeue hold), until it runs again or starts a new attempt."""
        if event["type"] == "attempt" or (event["type"] == "status" and event.get("state") == JobState.RUNNING.value):
            self.requeued_at = None
        elif event["type"] == "status" and event.get("reason") == "requeued":
            self.requeued_at = time.monotonic()

    def requeued_lately(self) -> bool:
        """Whether the job went back to its scheduler's queue less than :data:`REQUEUE_GRACE_S` ago and has not
        run since (the scheduler may show the killed attempt's end before the job is queued again)."""
        return self.requeued_at is not None and time.monotonic() - self.requeued_at < REQUEUE_GRACE_S

    async def settle_if_ended(self, status: TargetStatus) -> None:
        """A job its target says ended is settled by :func:`settle_from_target`, unless its own final event
        comes first: at once for a final state the target knows, after a grace for one it no longer knows."""
        ended = status.state is None or (status.state.final and not status.overrides)
        if ended and self.requeued_lately():
            self.ended_at = None
            return  # the runner said its scheduler runs the job again: a passing end state is not the job's end
        if status.state is not None and status.state.final:
            await asyncio.sleep(self.poll_interval)  # the runner's own final event wins if it made it
            await _relay(self.target, self.record, self.run_dir)
            self.drain()
            if not self.view.state.final:
                settle_from_target(self.prepared.log, status)
        elif status.state is None:  # ended; its final status event should be there
            self.ended_at = self.ended_at or time.monotonic()
            if time.monotonic() - self.ended_at > FINAL_EVENT_GRACE_S:
                settle_from_target(self.prepared.log, status)


async def _until_quiet(run: RunDir, drain: Callable[[], object], quiet_s: float = 2.0, limit_s: float = 15.0) -> None:
    """A job that ended without its runner's word (killed, lost, unresponsive) may leave its kernel running
    a moment longer (ipykernel notices its parent is gone within a second or two) and writing heartbeats:
    what it writes until its events file is quiet is stored too, so the store and the file agree."""
    size, quiet_from, deadline = -1, time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() < deadline:
        drain()
        now_size = run.events.stat().st_size if run.events.exists() else 0
        if now_size != size:
            size, quiet_from = now_size, time.monotonic()
        elif time.monotonic() - quiet_from >= quiet_s:
            return
        await asyncio.sleep(0.25)


async def _relay(target: Target, record: JobRecord, run: RunDir) -> None:
    """The job's events and files into its run directory, where the target keeps them elsewhere; a relay
    that fails now is tried again at the next poll (the target's poll says whether the job is gone)."""
    try:
        await target.relay(record, run)
    except Exception as exc:
        log.warning("jupyter-promote: job %s: its events could not be brought in now: %s", record.id, exc)


def settle_from_target(log: EventLog, status: TargetStatus) -> None:
    """The one rule for a job its own events leave unfinished while its target says it ended: the state the
    target knows (scancel, a time limit), else ``failed``/``lost``. Used while following and by ``status``."""
    if status.state is not None:
        log.emit("status", state=status.state.value, reason=status.reason, message=status.message, source="target")
    else:
        log.emit(
            "status",
            state="failed",
            reason="lost",
            source="target",
            message=f"the job ended (exit code {status.exit_code}) without reporting how",
        )


async def check_once(record: JobRecord, run: RunDir, target: Target) -> None:
    """``jupyter promote status``'s look at an unfinished job: one poll; settled by :func:`settle_from_target`
    when the target says it ended (the server instead follows the job again, by the same rule)."""
    await target.relay(record, run, follow=False)
    if not record.handle:
        return
    status = (await target.poll({record.id: record.handle}))[record.id]
    ended = status.state is None or status.state.final
    if ended and not JobView().fold(job_events(run.path)).state.final:  # not already told by the relay
        settle_from_target(EventLog(str(run.events), record.id), status)


async def _collect(
    prepared: Prepared, target: Target, view: JobView, drain: Callable[[], object], poll_interval: float
) -> TargetStatus | None:
    """One last poll once the job reported its end: the target collects what is left (a container)
    and may know better how it ended (an OOM kill by the container's cgroup).
    """
    record = prepared.record
    if not record.handle:  # never submitted (cancelled before): nothing on the target to collect
        return None
    deadline = time.monotonic() + FINAL_EVENT_GRACE_S * 6
    status: TargetStatus | None = None
    while time.monotonic() < deadline:
        try:
            status = (await target.poll({record.id: record.handle}))[record.id]
        except Exception:  # not answering (an engine restarting): asked again until the deadline
            status = None
        if status is not None and status.state is not JobState.RUNNING:  # else: the runner is exiting
            break
        await asyncio.sleep(max(poll_interval, 0.5) if status is None else poll_interval)
    if status is None:  # the job has ended as its events say; what is left on the target stays there
        return None
    if status.state is JobState.RUNNING:  # its end was reported long ago and what is left still runs: stopped
        with contextlib.suppress(Exception):
            await target.cancel(record.handle)
            await target.poll({record.id: record.handle})  # and collected
        return None
    _override(prepared, view, status, drain)
    return status


def _override(prepared: Prepared, view: JobView, status: TargetStatus | None, drain: Callable[[], object]) -> None:
    """The target's better word on how the job ended (an eviction, an OOM kill) said again when an event that
    came after it (the runner's "cancelled" on the SIGTERM of an eviction) ended the job otherwise."""
    if status is None or not status.overrides or status.state is None:
        return
    if (status.state, status.reason) != (view.state, view.reason):
        prepared.log.emit(
            "status", state=status.state.value, reason=status.reason, message=status.message, source="target"
        )
        drain()
