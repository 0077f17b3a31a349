"""The server's scheduler: on each tick (its clock injectable: a callable returning an aware datetime), every
due time of every schedule is claimed in the store by one conditional UPDATE, so that of two servers on one
store exactly one fires it, then fired as a normal job (the same ``submit`` POST jobs uses) that carries the
schedule's id.

Due times missed while no server ran (older than :data:`GRACE_S` when seen) follow the schedule's ``missed``
policy, said in its note and the server's log; a due time while the schedule's previous job still runs
follows its ``overlap`` policy (skipped and counted, queued until that job ends, or run anyway).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

from ..config import PromoteSettings
from ..errors import PromoteError, UsageError
from ..launch.body import request_from_body
from ..launch.request import PromoteRequest
from ..rundir import runs_dir_of
from .model import Schedule, due_after, due_between, iso
from .store import ScheduleStore

log = logging.getLogger("jupyter_promote")
#: A due time seen later than this (seconds) was missed (the server was down), not merely reached.
GRACE_S = 120.0
#: The most missed due times ``missed: all`` runs at once after downtime (the latest ones).
MAX_CATCH_UP = 24
#: Seconds between two ticks of a running server.
TICK_S = 15.0
Clock = Callable[[], datetime.datetime]
Submit = Callable[[PromoteRequest], Awaitable[str]]


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class Scheduler:
    """Fires the schedules of ``schedules`` through ``submit`` (the server's :meth:`JobManager.submit`)."""

    def __init__(
        self,
        schedules: ScheduleStore,
        submit: Submit,
        settings: PromoteSettings,
        clock: Clock = utc_now,
        grace_s: float = GRACE_S,
    ) -> None:
        self.schedules = schedules
        self.submit = submit
        self.settings = settings
        self.clock = clock
        self.grace_s = grace_s

    def now(self) -> float:
        return self.clock().timestamp()

    async def run(self, every_s: float = TICK_S) -> None:
        """Tick until cancelled (a tick that fails is logged; the next one tries again). A due time is missed
        only when it is older than two ticks (or :data:`GRACE_S`): a late tick is not downtime."""
        self.grace_s = max(self.grace_s, 2 * every_s)
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("jupyter-promote: the scheduler's tick failed")
            await asyncio.sleep(every_s)

    async def tick(self) -> list[str]:
        """Fire what is due now; the ids of the jobs fired."""
        now = self.now()
        fired: list[str] = []
        for schedule in await asyncio.to_thread(self.schedules.all):
            try:
                fired += await self._tick_one(schedule, now)
            except Exception:  # one schedule's failure never stops the others
                log.exception("jupyter-promote: schedule %s: its tick failed", schedule.name)
        return fired

    async def _tick_one(self, schedule: Schedule, now: float) -> list[str]:
        store, fired = self.schedules, []
        if schedule.run_now is not None and store.take(schedule.id, "run_now", schedule.run_now):
            fired.append(await self.fire(schedule, "asked to run now"))
        if schedule.paused:
            return [job for job in fired if job]
        running = store.running_jobs(schedule.id)
        if schedule.queued is not None and not running and store.take(schedule.id, "queued", schedule.queued):
            fired.append(await self.fire(schedule, f"queued at {iso(schedule.queued, schedule.timezone)}"))
            running = 1
        # (a server down for long owes many due times of a frequent schedule: counted off the event loop)
        due = await asyncio.to_thread(due_between, schedule.cron, schedule.timezone, schedule.last_fired, now)
        if not due:
            return [job for job in fired if job]
        next_due = due_after(schedule.cron, schedule.timezone, now)[0]
        if not store.claim(schedule.id, schedule.last_fired, due[-1], next_due):
            return [job for job in fired if job]  # another server claimed these due times
        for when in self._plan(schedule, due, now):
            shown = iso(when, schedule.timezone)
            if running and schedule.overlap == "skip":
                note = f"due {shown}: skipped, its previous job is still running (overlap: skip)"
                log.info("jupyter-promote: schedule %s: %s", schedule.name, note)
                store.skipped_one(schedule.id, note)
            elif running and schedule.overlap == "queue":
                store.update(schedule.id, queued=when, note=f"due {shown}: queued until its previous job ends")
            else:
                fired.append(await self.fire(schedule, f"due {shown}"))
        return [job for job in fired if job]

    def _plan(self, schedule: Schedule, due: list[int], now: float) -> list[int]:
        """The due times to run: those just reached, and the missed ones as the ``missed`` policy says."""
        on_time = [when for when in due if now - when <= self.grace_s]
        missed = [when for when in due if now - when > self.grace_s]
        if not missed:
            return on_time
        runs = "run" if len(missed) == 1 else "runs"
        if schedule.missed == "all" and len(missed) > MAX_CATCH_UP:
            plan, did = (
                missed[-MAX_CATCH_UP:] + on_time,
                f"ran the latest {MAX_CATCH_UP} of them (missed: all, at most {MAX_CATCH_UP})",
            )
        elif schedule.missed == "all":
            plan, did = missed + on_time, "ran each of them (missed: all)"
        elif schedule.missed == "latest" and not on_time:
            plan, did = [missed[-1]], f"ran the latest ({iso(missed[-1], schedule.timezone)}) once"
        elif schedule.missed == "latest":
            plan, did = on_time, "ran the one due now instead"
        else:
            plan, did = on_time, "ran none of them (missed: skip)"
        note = f"missed {len(missed)} {runs} while the server was down; {did}"
        log.warning("jupyter-promote: schedule %s: %s", schedule.name, note)
        self.schedules.update(schedule.id, note=note)
        return plan

    async def fire(self, schedule: Schedule, why: str) -> str:
        """Submit the schedule's job now; its id, or "" when it could not be (said in the note and the log)."""
        try:
            request = await asyncio.to_thread(self.request, schedule)
            job_id = await self.submit(request)
        except Exception as exc:  # claimed, so never lost without a word: the note says why it did not run
            reason = str(exc) if isinstance(exc, PromoteError) else f"{type(exc).__name__}: {exc}"
            note = f"{why}: not run: {reason}"
            log.warning(
                "jupyter-promote: schedule %s: %s", schedule.name, note, exc_info=not isinstance(exc, PromoteError)
            )
            with contextlib.suppress(Exception):  # a store that failed the submit may fail this too: logged above
                self.schedules.update(schedule.id, note=note)
            return ""
        log.info("jupyter-promote: schedule %s: %s: job %s", schedule.name, why, job_id)
        self.schedules.update(schedule.id, last_job=job_id)
        return job_id

    def request(self, schedule: Schedule) -> PromoteRequest:
        """The schedule's job request, made again through the one request schema (its notebook: the frozen
        copy when it freezes once, else the notebook as it is now, which must still exist)."""
        body = {**schedule.request, "notebook": schedule.notebook}
        if schedule.freeze == "once":
            body["notebook"] = self._frozen_copy(schedule)
        request, _ = request_from_body(body, _existing, self.settings)
        request.schedule, request.owner = schedule.id, schedule.owner
        if schedule.freeze == "once":  # the copy runs among the files beside the notebook, as they are now
            request.folder = os.path.dirname(os.path.abspath(schedule.notebook))
        return request

    def _frozen_copy(self, schedule: Schedule) -> str:
        """The notebook as the schedule froze it, written once under ``<runs dir>/schedules/<id>/``."""
        text = self.schedules.frozen_notebook(schedule.id)
        if text is None:
            raise UsageError(f"schedule {schedule.name}: its frozen notebook is missing", subject=schedule.id)
        folder = Path(runs_dir_of(str(self.settings.runs_dir), schedule.owner)) / "schedules" / schedule.id
        path = folder / os.path.basename(schedule.notebook)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(text, encoding="utf-8")
        return str(path)


def _existing(path: object) -> str:
    if not isinstance(path, str) or not os.path.isfile(path):
        raise UsageError(f"notebook {path}: no longer exists", subject=str(path), field="notebook")
    return path
