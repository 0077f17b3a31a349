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

from ..events import JobView, problem
from ..events.authority import FinalStateRule, job_events
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail
from ..targets import Target
from ..targets.base import TargetStatus
from .prepared import Prepared

log = logging.getLogger("jupyter_promote")

#: Seconds a target may not answer before its jobs are settled as lost (``PROMOTE_TARGET_PATIENCE`` overrides).
TARGET_PATIENCE_S = float(os.environ.get("PROMOTE_TARGET_PATIENCE", "600"))
#: Seconds a target may report a job as ended before its final event must be in the log.
FINAL_EVENT_GRACE_S = 5.0


class RunnerSilence:
    """The runner's own heartbeats (``source: runner``), watched while the job runs: a runner that sends
    none for three of its heartbeats (and 5 s) is reported once (``runner_silent``); one silent past the
    kernel's silence limit (the stall timeout and three heartbeats, the runner's own rule for its kernel)
    has stopped (SIGSTOP, a frozen node) and its job is settled ``failed``/``unresponsive``. Jobs whose
    runner sends no pulse (an older runner) are not judged.
    """

    def __init__(self, record: JobRecord) -> None:
        heartbeat = record.monitor.heartbeat_s
        self.warn_after = 3 * heartbeat + 5
        self.limit = max(self.warn_after, record.monitor.stall_timeout_s + 3 * heartbeat)
        self.last: float | None = None
        self.warned = False

    def saw(self, event: dict[str, Any]) -> None:
        if event["type"] == "heartbeat" and event.get("source") == "runner":
            self.last, self.warned = time.monotonic(), False

    def check(self, view: JobView, log: EventLog) -> bool:
        """Report a silent runner; True when it has been silent too long (the job must be stopped)."""
        if view.state is not JobState.RUNNING:
            self.last = None  # back in the queue (requeued): a new runner will start its pulse again
            return False
        if self.last is None:
            return False
        quiet = time.monotonic() - self.last
        if quiet > self.limit:
            log.emit("status", state="failed", reason="unresponsive", source="pipeline",
                     message=f"the job's runner sent nothing for {quiet:.0f} s (stopped or hung); it was stopped")  # fmt: skip
            return True
        if quiet > self.warn_after and not self.warned:
            self.warned = True
            log.emit("alert", kind="runner_silent", action="alert", source="pipeline",
                     message=f"the job's runner has sent nothing for {quiet:.0f} s; it is stopped or hung "
                     f"(the job fails after {self.limit:.0f} s)")  # fmt: skip
        return False


def _set_aside(
    events: list[dict[str, Any]], tail: EventTail, log: EventLog, rule: FinalStateRule
) -> list[dict[str, Any]]:
    """The events that can be folded; each one that cannot (another writer's line, an unknown type or state)
    and each line that holds no event (not UTF-8, not JSON, too deep, NaN) is set aside and reported as an
    alert in the job's own log, never fatal."""
    bad = [(e, "not this job's (another writer's line)") for e in tail.foreign]
    tail.foreign.clear()
    good = []
    for event in events:
        why = problem(event) or rule.why(event)
        if why is None:
            good.append(event)
        else:
            bad.append((event, why))
    # a job followed again (a server restart) reads its file from the start: each line is reported once
    reported = {(e.get("set_aside_seq"), e.get("set_aside_type")) for e in good
                if e["type"] == "alert" and e.get("kind") == "bad_event"}  # fmt: skip
    for event, why in bad:
        seq, kind = (repr(event.get(k))[:40] for k in ("seq", "type"))  # whatever the line held, as text
        if (seq, kind) in reported:
            continue
        log.emit("alert", kind="bad_event", action="alert", source="pipeline", set_aside_seq=seq, set_aside_type=kind,
                 message=f"an event was set aside: {why} (seq {seq}, type {kind})")  # fmt: skip
    unreadable, reported_at = tail.unreadable[:], {e.get("set_aside_offset") for e in good if e["type"] == "alert"}
    tail.unreadable.clear()
    for offset, why in unreadable:
        if offset not in reported_at:
            message = f"a line of the events file was set aside: {why} (at byte {offset})"
            log.emit(
                "alert", kind="bad_event", action="alert", source="pipeline", set_aside_offset=offset, message=message
            )
    return good


async def follow(
    prepared: Prepared,
    target: Target,
    on_event: Callable[[dict[str, Any], JobView], None] | None = None,
    poll_interval: float = 0.1,
    patience: float = TARGET_PATIENCE_S,
) -> JobView:
    """Follow a submitted job to its final state, keeping job.json up to date.

    Polls the target every ``poll_interval`` seconds; a target that does not answer for ``patience``
    seconds settles the job as lost. The runner's own final event wins over what the target says.
    """
    record, run = prepared.record, prepared.run
    tail = EventTail(str(run.events), job=record.id)
    rule = FinalStateRule(run.path)
    view = JobView()
    ended_at: float | None = None

    reported_queue: tuple[str | None, str | None] = (None, None)
    unreachable_since: float | None = None  # the target stopped answering (an engine or controller restart)
    written = (view.state, view.reason, 0.0)  # job.json: at once on a state change, else at most 1/s
    silence = RunnerSilence(record)

    ended_by: list[str] = []  # who wrote the final status (the runner, or the target / pipeline for it)

    def drain() -> None:
        nonlocal written
        events = tail.read()
        for event in _set_aside(events, tail, prepared.log, rule):
            view.apply(event)
            silence.saw(event)
            if event["type"] == "status" and JobState(event["state"]).final:
                ended_by.append(str(event.get("source")))
            if on_event is not None:
                on_event(event, view)
        now = time.monotonic()
        if events and ((view.state, view.reason) != written[:2] or view.state.final or now - written[2] >= 1.0):
            view.update(record)
            run.write(record)
            written = (view.state, view.reason, now)

    while True:
        await _relay(target, record, run)
        drain()
        if view.state.final:
            await _collect(prepared, target, view, drain, poll_interval)
            if ended_by and ended_by[0] != "runner":
                await _until_quiet(prepared.run, drain)
            return view
        if silence.check(view, prepared.log):
            with contextlib.suppress(Exception):  # stopped on its target as far as it answers; settled anyway
                await target.cancel(record.handle)
            continue
        try:
            status = (await target.poll({record.id: record.handle}))[record.id]
        except Exception as exc:  # a target that does not answer now may answer soon: retried, then settled
            now = time.monotonic()
            if unreachable_since is None:
                unreachable_since = now
                prepared.log.emit("alert", kind="target_unreachable", action="alert", source="pipeline",
                                  message=f"the {target.name} target does not answer ({type(exc).__name__}: "
                                  f"{str(exc)[:200]}); asking again")  # fmt: skip
            elif now - unreachable_since > patience:
                prepared.log.emit("status", state="failed", reason="lost", source="pipeline",
                                  message=f"the {target.name} target did not answer for "
                                  f"{patience:.0f} s")  # fmt: skip
            await asyncio.sleep(min(5.0, max(poll_interval, 1.0)))
            continue
        unreachable_since = None
        if status.state is not JobState.QUEUED:
            reported_queue = (None, None)  # so that going back to the queue is reported
        elif (status.reason, status.message) != reported_queue:
            reported_queue = (status.reason, status.message)
            if view.state is JobState.RUNNING:  # a running job went back to the queue (node failure, preemption)
                prepared.log.emit("status", state="queued", reason="requeued", source="target",
                                  message=f"requeued while running: {status.message or 'back in the queue'}")  # fmt: skip
            elif status.reason not in (None, "pending"):  # why it waits: Resources, Priority, ...
                prepared.log.emit(
                    "status", state="queued", reason=status.reason, message=status.message, source="target"
                )
        if status.state is not None and status.state.final:
            await asyncio.sleep(poll_interval)  # the runner's own final event wins if it made it
            await _relay(target, record, run)
            drain()
            if not view.state.final:
                settle_from_target(prepared.log, status)
        elif status.state is None:  # ended; its final status event should be there
            ended_at = ended_at or time.monotonic()
            if time.monotonic() - ended_at > FINAL_EVENT_GRACE_S:
                settle_from_target(prepared.log, status)
        await asyncio.sleep(poll_interval)


async def _until_quiet(run: RunDir, drain: Callable[[], None], quiet_s: float = 2.0, limit_s: float = 15.0) -> None:
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
        log.emit("status", state="failed", reason="lost", source="target",
                 message=f"the job ended (exit code {status.exit_code}) without reporting how")  # fmt: skip


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
    prepared: Prepared, target: Target, view: JobView, drain: Callable[[], None], poll_interval: float
) -> None:
    """One last poll once the job reported its end: the target collects what is left (a container)
    and may know better how it ended (an OOM kill by the container's cgroup).
    """
    record = prepared.record
    if not record.handle:  # never submitted (cancelled before): nothing on the target to collect
        return
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
        return
    if status.state is JobState.RUNNING:  # its end was reported long ago and what is left still runs: stopped
        with contextlib.suppress(Exception):
            await target.cancel(record.handle)
            await target.poll({record.id: record.handle})  # and collected
        return
    if status.overrides and status.state is not None and (status.state, status.reason) != (view.state, view.reason):
        prepared.log.emit(
            "status", state=status.state.value, reason=status.reason, message=status.message, source="target"
        )
        drain()
