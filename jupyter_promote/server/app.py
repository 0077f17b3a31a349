"""The jupyter_server extension: settings, the job store and manager, the event bus, the REST routes."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import Float, Unicode, default

from ..config import PromoteSettings
from ..errors import PromoteError
from .routes import setup_route_handlers
from .store import event_text

#: Seconds between two passes of the retention setting.
RETENTION_EVERY_S = 3600.0
JOB_EVENTS_SCHEMA = "https://events.jupyter.org/jupyter_promote/job_events/v1"
_SCHEMA_FILE = Path(__file__).parent.parent / "events" / "schemas" / "job_events.yaml"


class PromoteExtension(ExtensionApp):
    name = "jupyter_promote"
    classes = [PromoteSettings]  # noqa: RUF012 (ExtensionApp declares it an instance trait)

    store_path = Unicode(help="SQLite file of the job store (default: <jupyter data dir>/promote/jobs.sqlite).").tag(
        config=True
    )

    activity_interval_s = Float(
        60.0,
        help="While jobs run, the server reports activity this often (seconds), so that a hub's idle culler "
        "does not stop a server whose jobs are still running; 0: never.",
    ).tag(config=True)

    db_url = Unicode(
        "",
        help="The job store's database as a SQLAlchemy URL, for a hub whose servers share one: "
        "'postgresql+psycopg://promote@db.example.org/promote' (the password from ~/.pgpass or $PGPASSWORD "
        "rather than the URL). Empty: the SQLite file store_path.",
    ).tag(config=True)

    schedule_tick_s = Float(
        15.0,
        help="How often (seconds) the server fires the schedules that are due (jupyter promote schedule ...); "
        "0: this server fires none (another server on the same store does).",
    ).tag(config=True)

    def _config_file_name_default(self) -> str:
        """``jupyter_promote_config.{py,json}``: the CLI's file too, so an admin writes each setting once."""
        return "jupyter_promote_config"

    @default("store_path")
    def _default_store_path(self) -> str:
        return os.path.join(jupyter_data_dir(), "promote", "jobs.sqlite")

    def initialize_settings(self) -> None:
        from ..launch.launcher import Launcher
        from ..schedule.scheduler import Scheduler
        from ..schedule.store import ScheduleStore
        from .lease import lease_for
        from .manager import JobManager
        from .store import JobStore

        settings = PromoteSettings(config=self.config)
        self.promote_settings = settings
        self._server.event_logger.register_event_schema(_SCHEMA_FILE)
        if self.db_url:
            self.store = JobStore(self.db_url)
        else:
            self.store = JobStore(self.store_path, wal=self._store_may_use_wal())
        self.lease = lease_for(self.store)
        self.jobs = JobManager(self.store, Launcher(settings, self.config), publish=self._publish, lease=self.lease)
        self.scheduler = Scheduler(ScheduleStore(self.store.engine, self.store.user), self.jobs.submit, settings)
        self.settings.update(
            {
                "jupyter_promote_settings": settings,
                "jupyter_promote_jobs": self.jobs,
                "jupyter_promote_scheduler": self.scheduler,
            }
        )
        # a server embedded in a running loop (tests, some launchers) never calls the start hook
        with contextlib.suppress(RuntimeError):
            self._start_task = asyncio.get_running_loop().create_task(self._start_once())

    def _store_may_use_wal(self) -> bool:
        from .store import NETWORK_FILESYSTEMS, filesystem_of

        kind = filesystem_of(os.path.dirname(os.path.abspath(self.store_path)))
        if kind not in NETWORK_FILESYSTEMS:
            return True
        self.log.warning(
            "jupyter-promote: the job store %s is on a network filesystem (%s), where SQLite's WAL mode is unsafe: "
            "using its rollback journal instead (slower under load); set c.PromoteExtension.store_path to a file "
            "on a local disk for speed",
            self.store_path,
            kind,
        )
        return False

    async def _report_activity(self) -> None:
        """Running jobs count as activity: jupyter_server adds every ``*_last_activity`` setting to the
        ``last_activity`` of ``/api/status``, which JupyterHub's culler reads."""
        while True:
            if self.jobs.running:
                self._server.web_app.settings["jupyter_promote_last_activity"] = datetime.datetime.now(
                    datetime.timezone.utc
                )
            await asyncio.sleep(self.activity_interval_s)

    @property
    def _server(self) -> Any:
        """The ServerApp this extension is linked to (always, once its settings are initialized)."""
        assert self.serverapp is not None
        return self.serverapp

    def _publish(self, job_id: str, events: list[dict[str, Any]]) -> None:
        """One bus message per batch of new events (what one poll of the job brought), in seq order."""
        data: dict[str, Any] = {
            "job": job_id,
            "first_seq": int(events[0]["seq"]),
            "last_seq": int(events[-1]["seq"]),
            "events": "[" + ",".join(event_text(e) for e in events) + "]",
        }
        states = [e["state"] for e in events if e["type"] == "status"]
        if states:
            data["state"] = states[-1]
        self._server.event_logger.emit(schema_id=JOB_EVENTS_SCHEMA, data=data)

    def initialize_handlers(self) -> None:
        setup_route_handlers(self._server.web_app)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Called by a real server once its loop runs: resume or settle unfinished jobs."""
        await self._start_once()

    async def _start_once(self) -> None:
        if not getattr(self, "_started", False):
            self._started = True
            if self.activity_interval_s > 0:
                self._activity_task = asyncio.get_running_loop().create_task(self._report_activity())
            await self.jobs.reconcile()
            if self.schedule_tick_s > 0:
                self._schedule_task = asyncio.get_running_loop().create_task(self.scheduler.run(self.schedule_tick_s))
            if self.promote_settings.retention:
                self._retention_task = asyncio.get_running_loop().create_task(self._retain())

    async def _retain(self) -> None:
        """The retention setting: finished jobs older than it removed at the start, then every hour."""
        from ..housekeeping import parse_age

        try:
            age = parse_age(self.promote_settings.retention, "c.PromoteSettings.retention")
        except PromoteError as exc:
            self.log.error("jupyter-promote: %s; nothing is removed", exc)
            return
        while True:
            try:
                removed = await self.jobs.remove_older_than(age)
            except Exception:  # the store or a disk failing now: tried again at the next pass
                self.log.exception("jupyter-promote: retention pass failed")
                removed = []
            if removed:
                self.log.info(
                    "jupyter-promote: retention (%s) removed %d finished job(s): %s",
                    self.promote_settings.retention,
                    len(removed),
                    ", ".join(removed),
                )
            await asyncio.sleep(RETENTION_EVERY_S)

    async def stop_extension(self) -> None:
        tasks = ("_activity_task", "_retention_task", "_schedule_task")
        for task in (getattr(self, name, None) for name in tasks):
            if task is not None:
                task.cancel()
        await self.jobs.close()
        self.store.close()
        self.lease.release()
