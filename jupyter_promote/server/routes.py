"""REST handlers under ``/jupyter-promote/``: a thin layer that parses, calls and serializes.

Every handler is authenticated and authorized (resource ``jupyter_promote``); errors users can cause are
:class:`PromoteError` subclasses, mapped once to their HTTP status (:mod:`.handler`). The API is described in
``openapi.yaml`` beside this module (a test checks the two agree).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

import tornado
from jupyter_server.auth.decorator import authorized
from jupyter_server.utils import url_path_join

from ..errors import ForbiddenPath, JobNotFound, UsageError
from ..freeze import environment_card, read_lock
from ..launch.launcher import check_kernel
from ..targets import load_target_classes
from .handler import MAX_PAGE, PromoteHandler, maps_errors
from .payload import check_body, relative_to_root, request_from_payload
from .schedule_routes import schedule_handlers


class TargetsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self) -> None:
        classes = load_target_classes()
        names = self.settings["jupyter_promote_settings"].target_names()
        # each check may wait on an engine or a controller: all at once, in threads, off the event loop
        answers = await asyncio.gather(*(asyncio.to_thread(self.manager.target(n).available) for n in names))
        targets = [
            {
                "name": name,
                "display_name": classes[name].display_name,
                "available": ok,
                "reason": why,
                "options_schema": self.manager.target(name).options_schema(),
            }
            for name, (ok, why) in zip(names, answers, strict=True)
        ]
        self.finish(json.dumps({"targets": targets}))


class NotificationsHandler(PromoteHandler):
    """The notification destinations a job may name (names, kinds and what each is told; never URLs or
    addresses, which may carry secrets), and the ones a job notifies when it names none."""

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self) -> None:
        notifications = self.manager.launcher.notifications
        destinations = [{"name": d.name, "kind": d.kind, "on": list(d.on)} for d in notifications.parsed().values()]
        self.finish(json.dumps({"destinations": destinations, "defaults": list(notifications.defaults)}))


class JobsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self) -> None:
        limit = self.int_argument("limit", 50, 1, MAX_PAGE)
        offset = self.int_argument("offset", 0)
        notebook = self.get_argument("notebook", None)
        if notebook and "\x00" in notebook:
            raise UsageError("notebook: a path cannot contain a NUL character", subject="notebook")
        full = os.path.join(os.path.abspath(self.root_dir), notebook) if notebook else None
        records, total = self.manager.store.list_jobs(
            state=self.get_argument("state", None),
            notebook=full,
            sweep=self.get_argument("sweep", None),
            owner=self.get_argument("owner", None),
            schedule=self.get_argument("schedule", None),
            limit=limit,
            offset=offset,
        )
        # the stored records are job.json documents already: sent as they are, not parsed and dumped again
        self.finish(f'{{"jobs": [{", ".join(records)}], "total": {total}, "limit": {limit}, "offset": {offset}}}')

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        settings = self.settings["jupyter_promote_settings"]
        body = self.body()
        request, group = request_from_payload(body, self.notebook_argument, settings)
        request.owner = self.username
        if group is None:
            job_id = await self.manager.submit(request)
            self.set_status(202)
            self.finish(json.dumps({"id": job_id}))
            return
        group_id, ids = await self.manager.submit_group(request, group)
        self.set_status(202)
        self.finish(json.dumps({"id": ids[0], "sweep": group_id, "ids": ids, "kind": group.kind}))


class SweepHandler(PromoteHandler):
    """A group's summary: counts by state, each metric's spread, replicas' agreement, contention."""

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, sweep_id: str) -> None:
        from ..analysis.spread import summarise

        path = self.manager.group_dir(sweep_id)
        summary = await asyncio.to_thread(summarise, Path(path))
        self.finish(json.dumps(summary, default=str))


class JobHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str) -> None:
        record, run_dir = self.manager.get(job_id)
        lock = read_lock(os.path.join(run_dir, "env")) if run_dir else None
        self.finish(
            json.dumps(
                {
                    **record.to_json(),
                    "run_dir": run_dir,
                    "transitions": self.manager.store.transitions(job_id),
                    "environment": environment_card(lock) if lock else None,
                    "notebook_path": relative_to_root(self.root_dir, record.notebook),
                }
            )
        )

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def delete(self, job_id: str) -> None:
        if self.get_argument("purge", "") in ("1", "true"):  # remove a finished job, not cancel one
            record = await self.manager.remove(job_id)
            self.finish(json.dumps({"id": record.id, "removed": True}))
            return
        record = await self.manager.cancel(job_id)
        self.set_status(202)
        self.finish(json.dumps({"id": record.id, "state": record.state.value}))


class RerunHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self, job_id: str) -> None:
        record, _ = self.manager.get(job_id)
        relative = relative_to_root(self.root_dir, record.notebook)
        if relative is None:  # confined again: the folder may have been moved or replaced since
            raise ForbiddenPath(
                f"job {job_id}: its notebook {record.notebook} is outside the server's root", subject=job_id
            )
        self.notebook_argument(relative)
        new_id = await self.manager.rerun(job_id, owner=self.username)
        self.set_status(202)
        self.finish(json.dumps({"id": new_id}))


class FreezeHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        body = check_body(self.body())
        notebook = self.notebook_argument(body.get("notebook"))
        kernel = body.get("kernel")
        check_kernel(kernel)
        gpus = body.get("gpus")
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
            raise UsageError("gpus: must be a whole number of at least 0", subject="gpus", field="gpus")
        settings = self.settings["jupyter_promote_settings"]
        target = body.get("target", settings.default_target)
        offered = settings.target_names()
        if not isinstance(target, str) or target not in offered:
            available = ", ".join(offered)
            raise UsageError(
                f"target {target!r}: no such target here (available: {available})", subject="target", field="target"
            )
        preview = await self.manager.preview_async(notebook, kernel, gpus, target)
        self.finish(json.dumps(preview))


class EventsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str) -> None:
        self.manager.get(job_id)
        after = self.int_argument("after", 0)
        self.finish(json.dumps({"events": self.manager.store.events_after(job_id, after)}))


#: The logs of a run directory: the job's stdout/stderr, and the image build's output.
LOG_STREAMS = {"job": "job.log", "build": "build.log"}


class LogsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str) -> None:
        _, run_dir = self.manager.get(job_id)
        after = self.int_argument("after", 0)
        stream = self.get_argument("stream", "job")
        if stream not in LOG_STREAMS:
            raise UsageError(f"stream {stream!r}: not a log (expected {' or '.join(LOG_STREAMS)})", subject="stream")
        data = b""
        path = os.path.join(run_dir or "", LOG_STREAMS[stream])
        if run_dir and os.path.exists(path) and after <= os.path.getsize(path):
            with open(path, "rb") as f:
                f.seek(after)
                data = f.read(1 << 20)
        self.finish(json.dumps({"text": data.decode("utf-8", "replace"), "offset": after + len(data)}))


class OutputHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str) -> None:
        _, run_dir = self.manager.get(job_id)
        path = os.path.join(run_dir or "", "output.ipynb")
        if not run_dir or not os.path.isfile(path):
            raise UsageError(f"job {job_id}: has no output notebook yet", subject=job_id)
        with open(path, "rb") as f:
            data = f.read()
        try:  # papermill rewrites it after every cell, in place: a torn or truncated copy is never served
            notebook = json.loads(data)
        except ValueError:
            raise UsageError(
                f"job {job_id}: its output notebook is being written or was cut short (not valid JSON); try again",
                subject=job_id,
            ) from None
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.finish(json.dumps(untrusted(notebook)))


def untrusted(notebook: Any) -> Any:
    """``notebook`` without ``metadata.trusted``, its own and its cells' (also while the job runs, and for
    an output relayed from a cluster): saved by "Open output", a trusted one would run its HTML and JavaScript."""
    if isinstance(notebook, dict):
        for holder in [notebook, *(c for c in notebook.get("cells") or [] if isinstance(c, dict))]:
            if isinstance(holder.get("metadata"), dict):
                holder["metadata"].pop("trusted", None)
    return notebook


class ArtifactHandler(PromoteHandler):
    """One file the job wrote (listed in its record's ``artifacts``), as a download."""

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str, path: str) -> None:
        record, run_dir = self.manager.get(job_id)
        if path not in {a["path"] for a in record.artifacts} or not run_dir:
            raise UsageError(f"artifact {path!r}: job {job_id} wrote no such file", subject="path")
        # anchored on the run directory itself: a job that replaced work/ by a link moves nothing
        work = os.path.join(os.path.realpath(run_dir), "work")
        full = os.path.realpath(os.path.join(work, path))
        if os.path.islink(work) or os.path.commonpath([work, full]) != work or not os.path.isfile(full):
            raise UsageError(f"artifact {path!r}: no longer in the run directory", subject="path")
        self.set_header("Content-Type", "application/octet-stream")
        self.set_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(os.path.basename(path))}")
        with open(full, "rb") as f:
            while chunk := f.read(1 << 20):
                self.write(chunk)
                await self.flush()
        self.finish()


#: How a report is opened: a sandbox (no script runs, no form posts, an origin of its own), nothing fetched from
#: anywhere; only its inline styles and data: images and fonts apply.
REPORT_CSP = (
    "sandbox; default-src 'none'; style-src 'unsafe-inline'; img-src data:; font-src data:; "
    "frame-ancestors 'self'; form-action 'none'; base-uri 'none'"
)


class ReportHandler(PromoteHandler):
    """The job's ``report.html`` (written as it ended), opened under :data:`REPORT_CSP`; ``download=1``: saved."""

    @property
    def content_security_policy(self) -> str:
        return REPORT_CSP

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self, job_id: str) -> None:
        _, run_dir = self.manager.get(job_id)
        download = self.get_argument("download", "")
        if download not in ("", "0", "1", "false", "true"):
            raise UsageError(f"download: {download[:40]!r} is not 1, true, 0 or false", subject="download")
        try:  # never through a link: the job's own files share its run directory
            fd = os.open(os.path.join(run_dir or "", "report.html"), os.O_RDONLY | os.O_NOFOLLOW)
        except (OSError, ValueError):
            fd = -1
        if not run_dir or fd < 0:
            raise JobNotFound(f"job {job_id}: has no report (yet: it is written when the job ends)", subject=job_id)
        with os.fdopen(fd, "rb") as f:
            data = await asyncio.to_thread(f.read)
        how = "attachment" if download in ("1", "true") else "inline"
        self.set_header("Content-Disposition", f'{how}; filename="report-{job_id}.html"')
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.finish(data, set_content_type="text/html; charset=utf-8")


def setup_route_handlers(web_app: Any) -> None:
    base = url_path_join(web_app.settings["base_url"], "jupyter-promote")
    job = r"(?P<job_id>[0-9a-f]{6,32})"
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "targets"), TargetsHandler),
            (url_path_join(base, "notifications"), NotificationsHandler),
            (url_path_join(base, "jobs"), JobsHandler),
            (url_path_join(base, "jobs", job), JobHandler),
            (url_path_join(base, "jobs", job, "rerun"), RerunHandler),
            (url_path_join(base, "jobs", job, "events"), EventsHandler),
            (url_path_join(base, "freeze"), FreezeHandler),
            (url_path_join(base, "sweeps", r"(?P<sweep_id>s[0-9a-f]{12})"), SweepHandler),
            (url_path_join(base, "jobs", job, "logs"), LogsHandler),
            (url_path_join(base, "jobs", job, "output"), OutputHandler),
            (url_path_join(base, "jobs", job, "report"), ReportHandler),
            (url_path_join(base, "jobs", job, "artifacts", "(?P<path>.+)"), ArtifactHandler),
            *schedule_handlers(base),
        ],
    )
