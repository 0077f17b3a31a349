"""REST handlers of schedules under ``/jupyter-promote/schedules``: create (the job request checked as POST jobs
checks it), list, read, pause/resume or change (PATCH), delete, run now, and preview (the next due times of a
cron expression and a time zone, creating nothing). Authenticated and authorized as
every handler (:class:`.handler.PromoteHandler`); errors mapped once (400 bad input, 404 unknown, 409 a name
taken).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import tornado
from jupyter_server.auth.decorator import authorized

from ..analysis.drift import WINDOW, series
from ..launch.body import check_body
from ..schedule.create import changes, new_schedule, schema
from ..schedule.model import Schedule, check_cron, due_after, iso, zone
from ..schedule.scheduler import Scheduler
from .handler import PromoteHandler, maps_errors


def shown(schedule: Schedule, count: int = 5) -> dict[str, Any]:
    """A schedule as the API sends it: its fields and its next ``count`` due times (ISO 8601, its time zone)."""
    after = max(schedule.last_fired, int(schedule.created_at))
    dues = [] if schedule.paused else due_after(schedule.cron, schedule.timezone, after, count)
    return {**schedule.to_json(), "next": [iso(d, schedule.timezone) for d in dues]}


class ScheduleBase(PromoteHandler):
    @property
    def scheduler(self) -> Scheduler:
        scheduler: Scheduler = self.settings["jupyter_promote_scheduler"]
        return scheduler


class SchedulesHandler(ScheduleBase):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self) -> None:
        schedules = await asyncio.to_thread(self.scheduler.schedules.all)
        self.finish(json.dumps({"schedules": [shown(s) for s in schedules]}))

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        settings = self.settings["jupyter_promote_settings"]
        body, now = self.body(), self.scheduler.now()
        schedule, text = await asyncio.to_thread(
            new_schedule, body, self.notebook_argument, settings, self.username, now
        )
        await asyncio.to_thread(self.scheduler.schedules.add, schedule, text)
        self.set_status(201)
        self.finish(json.dumps(shown(schedule)))


class ScheduleHandler(ScheduleBase):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, schedule_id: str) -> None:
        """The schedule, with ``history``: its last succeeded runs' metrics, per metric (as drift reads them)."""
        schedule = await asyncio.to_thread(self.scheduler.schedules.get, schedule_id)
        store = self.settings["jupyter_promote_jobs"].store
        runs = await asyncio.to_thread(store.schedule_runs, schedule.id, WINDOW)
        history = series([(record.id, record.metrics) for record, _ in runs])
        history["drift"] = [record.drift for record, _ in runs]
        self.finish(json.dumps({**shown(schedule), "history": history}))

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def patch(self, schedule_id: str) -> None:
        store = self.scheduler.schedules
        schedule = store.get(schedule_id)
        fields = changes(self.body(), schedule, self.scheduler.now())
        if fields:
            store.update(schedule.id, **fields)
        self.finish(json.dumps(shown(store.get(schedule.id))))

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def delete(self, schedule_id: str) -> None:
        schedule = self.scheduler.schedules.get(schedule_id)
        self.scheduler.schedules.delete(schedule.id)
        self.finish(json.dumps({"id": schedule.id, "deleted": True}))


class ScheduleRunHandler(ScheduleBase):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self, schedule_id: str) -> None:
        schedule = self.scheduler.schedules.get(schedule_id)
        request = await asyncio.to_thread(self.scheduler.request, schedule)
        job_id = await self.scheduler.submit(request)
        self.scheduler.schedules.update(schedule.id, last_job=job_id)
        self.set_status(202)
        self.finish(json.dumps({"id": job_id}))


class SchedulePreviewHandler(ScheduleBase):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        """The next five due times of a SchedulePreview body after now, checked as a new schedule's are."""
        valid = schema("SchedulePreview").validate(check_body(self.body()))
        cron, timezone = check_cron(valid["cron"]), valid["timezone"]
        zone(timezone)
        dues = due_after(cron, timezone, self.scheduler.now(), 5)
        self.finish(json.dumps({"next": [iso(d, timezone) for d in dues]}))


def schedule_handlers(base: str) -> list[tuple[str, Any]]:
    """The routes of schedules under ``base`` (``<base_url>/jupyter-promote``)."""
    from jupyter_server.utils import url_path_join

    one = r"(?P<schedule_id>[0-9a-f]{12})"
    return [
        (url_path_join(base, "schedules"), SchedulesHandler),
        (url_path_join(base, "schedules", "preview"), SchedulePreviewHandler),
        (url_path_join(base, "schedules", one), ScheduleHandler),
        (url_path_join(base, "schedules", one, "run"), ScheduleRunHandler),
    ]
