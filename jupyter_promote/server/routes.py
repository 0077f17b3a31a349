"""REST handlers under ``/jupyter-promote/``: a thin layer that parses, calls and serializes.

Every handler is authenticated and authorized (resource ``jupyter_promote``); errors users can cause are
:class:`PromoteError` subclasses, mapped once to their HTTP status here. The API is described in
``openapi.yaml`` beside this module (a test checks the two agree).
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import tornado
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join

from ..errors import ForbiddenPath, PromoteError, UsageError
from ..freeze import environment_card, read_lock
from ..launch.launcher import check_kernel
from ..targets import load_target_classes
from .manager import JobManager
from .payload import confine, relative_to_root, request_from_payload

AUTH_RESOURCE = "jupyter_promote"
MAX_PAGE = 200
MAX_INTEGER = 2**63 - 1  # SQLite's INTEGER: a larger offset or seq is refused, not a 500 (the fuzz test found it)


def maps_errors(method: Callable[..., Awaitable[None]]) -> Callable[..., Awaitable[None]]:
    """PromoteError -> its HTTP status with ``{"message", "subject", "field"}``; never a 500 for a user's mistake."""

    @functools.wraps(method)
    async def wrapper(self: PromoteHandler, *args: Any, **kwargs: Any) -> None:
        try:
            await method(self, *args, **kwargs)
        except PromoteError as exc:
            self.set_status(exc.http_status)
            self.finish(json.dumps(exc.to_json()))

    return wrapper


def _non_finite(name: str) -> Any:
    raise UsageError(f"body: {name} is not a JSON number (only finite numbers are)", subject="body")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise UsageError(f"body: {text[:40]} is beyond a finite number", subject="body")
    return value


class PromoteHandler(APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def manager(self) -> JobManager:
        return self.settings["jupyter_promote_jobs"]

    @property
    def root_dir(self) -> str:
        """The contents manager's root, as it resolves paths (``settings["server_root_dir"]`` is only for
        display: it keeps the home directory contracted to ``~``).
        """
        return os.path.expanduser(str(self.contents_manager.root_dir))

    def notebook_argument(self, path: Any, field: str = "notebook") -> str:
        """A notebook path from a request, resolved as the contents manager resolves it (see :func:`confine`)."""
        return confine(
            self.root_dir, path, field, allow_hidden=bool(getattr(self.contents_manager, "allow_hidden", True))
        )

    def body(self) -> Any:
        """The request's JSON body, as browsers' JSON.parse would read it: no NaN, no Infinity, no overflow."""
        try:
            return json.loads(self.request.body or b"{}", parse_constant=_non_finite, parse_float=_finite_float)
        except RecursionError:
            raise UsageError("body: nested too deeply", subject="body") from None
        except UsageError:
            raise
        except ValueError:
            raise UsageError("body: not valid JSON", subject="body") from None

    def int_argument(self, name: str, default: int, minimum: int = 0, maximum: int | None = None) -> int:
        raw = self.get_argument(name, None)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise UsageError(f"{name}: {raw!r} is not a whole number", subject=name) from None
        if value < minimum or value > (MAX_INTEGER if maximum is None else maximum):
            raise UsageError(f"{name}: {raw} is out of range", subject=name)
        return value


class TargetsHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def get(self) -> None:
        targets: list[dict[str, Any]] = []
        classes = load_target_classes()
        names = self.settings["jupyter_promote_settings"].target_names()
        # each check may wait on an engine or a controller: all at once, in threads, off the event loop
        answers = await asyncio.gather(*(asyncio.to_thread(self.manager.target(n).available) for n in names))
        for name, (ok, why) in zip(names, answers, strict=False):
            cls = classes[name]
            target = self.manager.target(name)
            targets.append(
                {
                    "name": name,
                    "display_name": cls.display_name,
                    "available": ok,
                    "reason": why,
                    "options_schema": target.options_schema(),
                }
            )
        self.finish(json.dumps({"targets": targets}))


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
        records, total = self.manager.store.list_jobs(state=self.get_argument("state", None), notebook=full,
                                                      sweep=self.get_argument("sweep", None),
                                                      limit=limit, offset=offset)  # fmt: skip
        # the stored records are job.json documents already: sent as they are, not parsed and dumped again
        self.finish(f'{{"jobs": [{", ".join(records)}], "total": {total}, "limit": {limit}, "offset": {offset}}}')

    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        settings = self.settings["jupyter_promote_settings"]
        body = self.body()
        request, group = request_from_payload(body, self.notebook_argument, settings)
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
        new_id = await self.manager.rerun(job_id)
        self.set_status(202)
        self.finish(json.dumps({"id": new_id}))


class FreezeHandler(PromoteHandler):
    @tornado.web.authenticated
    @authorized
    @maps_errors
    async def post(self) -> None:
        body = self.body()
        if not isinstance(body, dict):
            raise UsageError("body: must be a JSON object", subject="body")
        notebook = self.notebook_argument(body.get("notebook"))
        kernel = body.get("kernel")
        check_kernel(kernel)
        gpus = body.get("gpus")
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 0):
            raise UsageError("gpus: must be a whole number of at least 0", subject="gpus", field="gpus")
        preview = await self.manager.preview_async(notebook, kernel, gpus)
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
            json.loads(data)
        except ValueError:
            raise UsageError(
                f"job {job_id}: its output notebook is being written or was cut short (not valid JSON); try again",
                subject=job_id,
            ) from None
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.finish(data)


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


def setup_route_handlers(web_app: Any) -> None:
    base = url_path_join(web_app.settings["base_url"], "jupyter-promote")
    job = r"(?P<job_id>[0-9a-f]{6,32})"
    web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "targets"), TargetsHandler),
            (url_path_join(base, "jobs"), JobsHandler),
            (url_path_join(base, "jobs", job), JobHandler),
            (url_path_join(base, "jobs", job, "rerun"), RerunHandler),
            (url_path_join(base, "jobs", job, "events"), EventsHandler),
            (url_path_join(base, "freeze"), FreezeHandler),
            (url_path_join(base, "sweeps", r"(?P<sweep_id>s[0-9a-f]{12})"), SweepHandler),
            (url_path_join(base, "jobs", job, "logs"), LogsHandler),
            (url_path_join(base, "jobs", job, "output"), OutputHandler),
            (url_path_join(base, "jobs", job, "artifacts", "(?P<path>.+)"), ArtifactHandler),
        ],
    )
