"""The server's hooks on a job's lifecycle: every event stored once, in batches, and published to browsers.

While a job is prepared (a freeze, an image build that takes minutes) its events are read from its run
directory a few times a second; once it is followed, each poll's events are queued for the store's writer
thread (off the event loop; with every other job's, one transaction), then go out on the event bus
(:meth:`.JobManager.stored`), and the record is stored at every
status event, in the same transaction as its events.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..events import JobView, problem
from ..events.authority import FinalStateRule
from ..launch.lifecycle import JobHooks
from ..launch.prepared import Prepared
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.events import EventTail

if TYPE_CHECKING:
    from ..launch.history import ScheduleHistory
    from .manager import JobManager

#: How often the events of a job being prepared (freeze, image build, push) are stored and published.
PREPARE_POLL_S = 0.25


def foldable(run_dir: Path, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events the follower would fold: none it sets aside, no final status but its runner's or ours."""
    rule = FinalStateRule(run_dir)
    return [event for event in events if problem(event) is None and rule.why(event) is None]


class StoringHooks(JobHooks):
    """Stores and publishes one job's events and record for a :class:`JobManager`."""

    def __init__(self, manager: JobManager, record: JobRecord, run_dir: str | None = None) -> None:
        self.manager = manager
        self.record = record
        self.run_dir = run_dir  # known once preparing made it (or, for a job followed again, from the store)
        self.loop = asyncio.get_running_loop()
        self._publishing: asyncio.Task[None] | None = None
        self._batch: list[dict[str, Any]] = []
        self._view: JobView | None = None

    # -- preparing (called from the preparing thread) --------------------------------------------------
    def run_dir_made(self, run: RunDir) -> None:
        self.loop.call_soon_threadsafe(self._start_publishing, run)

    def prepared(self, prepared: Prepared) -> None:
        self.loop.call_soon_threadsafe(self._prepared, prepared)

    def preparing_done(self) -> None:
        self.loop.call_soon_threadsafe(self._stop_publishing)

    def _stop_publishing(self) -> None:
        if self._publishing is not None:
            self._publishing.cancel()

    def _start_publishing(self, run: RunDir) -> None:
        self.run_dir = str(run.path)  # stored at once: a job that ends before it is prepared ends in its folder
        self.manager.store.put_job(self.record, self.run_dir)
        self._publishing = self.loop.create_task(self._publish_while_preparing(run))

    def _prepared(self, prepared: Prepared) -> None:
        self.record, self.run_dir = prepared.record, str(prepared.run.path)
        self.manager.store.put_job(prepared.record, self.run_dir)

    async def _publish_while_preparing(self, run: RunDir) -> None:
        """Following the job later finds these stored and publishes only what is new."""
        tail = EventTail(str(run.events), job=self.record.id)
        while True:
            await asyncio.sleep(PREPARE_POLL_S)
            self._store(foldable(run.path, tail.read()))

    # -- following ---------------------------------------------------------------------------------------
    def event(self, event: dict[str, Any], view: JobView) -> None:
        if not self._batch:  # runs once the pipeline has read everything this poll brought
            self.loop.call_soon(self._flush)
        self._batch.append(event)
        self._view = view

    def _flush(self) -> None:
        events, self._batch = self._batch, []
        if any(event["type"] == "status" for event in events) and self._view is not None:
            self._view.update(self.record)  # the record goes in with its events (one transaction)
            self.manager.store.add_events_soon(self.record.id, events, self.record, self.run_dir)
        else:
            self._store(events)

    def _store(self, events: list[dict[str, Any]]) -> None:
        """Queued for the store's writer thread; what is new is published once written."""
        self.manager.store.add_events_soon(self.record.id, events)

    def schedule_history(self, record: JobRecord, limit: int) -> ScheduleHistory | None:
        """The schedule's row (how it freezes, the environment it was created with) and its last succeeded runs,
        from the job store (called from a thread)."""
        from ..errors import PromoteError
        from ..launch.history import ScheduleHistory
        from ..schedule.store import ScheduleStore

        store = self.manager.store
        history = ScheduleHistory(record.schedule, runs=store.schedule_runs(record.schedule, limit, record))
        try:
            schedule = ScheduleStore(store.engine, store.user).get(record.schedule)
        except PromoteError:  # deleted since it fired this job: its runs are still its history
            return history
        history.freeze = schedule.freeze
        history.created_with = schedule.frozen.get("environment")
        return history

    def settled(self, prepared: Prepared, view: JobView, by_error: bool) -> None:
        """The job's end: what is left of its events stored, then its record (job.json when readable)."""
        self.record, self.run_dir = prepared.record, str(prepared.run.path)
        if by_error:  # the lifecycle wrote the failure into the log: stored from there, no later view wins
            self._batch.clear()
            self._view = None
            with contextlib.suppress(Exception):
                store = self.manager.store
                after = store.last_seq(self.record.id)
                tail = EventTail(str(prepared.run.events), after=after, job=self.record.id)
                store.add_events(self.record.id, foldable(prepared.run.path, tail.read()))
            self.manager.store.put_job(prepared.record, self.run_dir)
            return
        self._flush()
        try:  # job.json: the record as the job left it (with its parity)
            current = prepared.run.read()
        except Exception:
            current = prepared.record
        self.manager.store.put_job(current, self.run_dir)
