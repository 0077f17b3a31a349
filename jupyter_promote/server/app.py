"""The jupyter_server extension: settings, the job store and manager, the event bus, the REST routes."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from jupyter_server.extension.application import ExtensionApp
from traitlets import Unicode, default

from ..config import PromoteSettings
from .routes import setup_route_handlers
from .store import event_text

JOB_EVENTS_SCHEMA = "https://events.jupyter.org/jupyter_promote/job_events/v1"
_SCHEMA_FILE = Path(__file__).parent.parent / "events" / "schemas" / "job_events.yaml"


class PromoteExtension(ExtensionApp):
    name = "jupyter_promote"
    classes = [PromoteSettings]  # noqa: RUF012 (ExtensionApp declares it an instance trait)

    store_path = Unicode(help="SQLite file of the job store (default: <jupyter data dir>/promote/jobs.sqlite).").tag(
        config=True
    )

    def _config_file_name_default(self) -> str:
        """``jupyter_promote_config.{py,json}``: the CLI's file too, so an admin writes each setting once."""
        return "jupyter_promote_config"

    @default("store_path")
    def _default_store_path(self) -> str:
        return os.path.join(jupyter_data_dir(), "promote", "jobs.sqlite")

    def initialize_settings(self) -> None:
        from ..launch.launcher import Launcher
        from .manager import JobManager
        from .store import JobStore, ServerLease

        settings = PromoteSettings(config=self.config)
        self._server.event_logger.register_event_schema(_SCHEMA_FILE)
        self.store = JobStore(self.store_path)
        self.lease = ServerLease(self.store_path)
        self.jobs = JobManager(self.store, Launcher(settings, self.config), publish=self._publish, lease=self.lease)
        self.settings.update({"jupyter_promote_settings": settings, "jupyter_promote_jobs": self.jobs})
        # a server embedded in a running loop (tests, some launchers) never calls the start hook
        with contextlib.suppress(RuntimeError):
            self._reconcile_task = asyncio.get_running_loop().create_task(self._reconcile_once())

    @property
    def _server(self) -> Any:
        """The ServerApp this extension is linked to (always, once its settings are initialized)."""
        assert self.serverapp is not None
        return self.serverapp

    def _publish(self, job_id: str, events: list[dict[str, Any]]) -> None:
        """One bus message per batch of new events (what one poll of the job brought), in seq order."""
        data: dict[str, Any] = {"job": job_id, "first_seq": int(events[0]["seq"]), "last_seq": int(events[-1]["seq"]),
                                "events": "[" + ",".join(event_text(e) for e in events) + "]"}  # fmt: skip
        states = [e["state"] for e in events if e["type"] == "status"]
        if states:
            data["state"] = states[-1]
        self._server.event_logger.emit(schema_id=JOB_EVENTS_SCHEMA, data=data)

    def initialize_handlers(self) -> None:
        setup_route_handlers(self._server.web_app)

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        """Called by a real server once its loop runs: resume or settle unfinished jobs."""
        await self._reconcile_once()

    async def _reconcile_once(self) -> None:
        if not getattr(self, "_reconciled", False):
            self._reconciled = True
            await self.jobs.reconcile()

    async def stop_extension(self) -> None:
        await self.jobs.close()
        self.store.close()
        self.lease.release()
