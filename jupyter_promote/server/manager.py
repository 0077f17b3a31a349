"""The server's jobs: REST payloads -> the same :class:`Pipeline` the CLI uses, run in the background,
every event stored once and pushed to browsers; unfinished jobs reconciled when the server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import functools
import keyword
import logging
import os
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..config import PromoteSettings
from ..errors import ForbiddenPath, JobNotFound, KernelError, PromoteError, TargetUnavailable, UsageError
from ..events import JobView
from ..job.sweep import expand
from ..launch.pipeline import Pipeline, Prepared, PromoteRequest, new_job_id
from ..models import JobRecord, JobState, MonitorSettings
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail
from ..targets import Target, target_class
from .store import JobStore, ServerLease

log = logging.getLogger("jupyter_promote")
_PAYLOAD_FIELDS = {
    "notebook",
    "kernel",
    "target",
    "parameters",
    "resources",
    "monitor",
    "deterministic",
    "sweep",
    "max_parallel",
}
RESOURCE_OPTIONS = ("cpus", "memory", "gpus", "time")
#: How often the events of a job being prepared (freeze, image build, push) are stored and published.
PREPARE_POLL_S = 0.25


def confine(root: str, path: Any, field: str = "notebook", allow_hidden: bool = True) -> str:
    """``path`` (relative to the server's root) as the absolute path the contents manager serves, or an error.

    Resolved as jupyter_server's ``FileContentsManager`` resolves it: ``root`` with ``~`` expanded, the path
    joined to it lexically (a symlink inside the root is followed wherever it leads, as the file browser
    follows it), absolute paths and ``..`` refused, hidden files refused unless the contents manager allows
    them. Nothing is read before the path is accepted.
    """
    if not isinstance(path, str) or not path.strip():
        raise UsageError(f"{field}: must be a path relative to the server's root", subject=field)
    if "\x00" in path:
        raise UsageError(f"{field}: a path cannot contain a NUL character", subject=field)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if os.path.isabs(path) or ".." in parts:
        raise ForbiddenPath(f"{field} {path!r}: outside the server's root", subject=field)
    if not allow_hidden and any(p.startswith(".") for p in parts):
        raise ForbiddenPath(f"{field} {path!r}: a hidden file (ContentsManager.allow_hidden is off)", subject=field)
    full = os.path.join(os.path.abspath(os.path.expanduser(root)), *parts)
    if not os.path.isfile(full):
        raise UsageError(f"{field} {path!r}: no such notebook", subject=field)
    return full


def relative_to_root(root: str, path: str) -> str | None:
    """``path`` relative to the server's root (what the contents API takes), or None when it is outside.

    The inverse of :func:`confine`: lexical, with ``~`` expanded, so a notebook reached through a symlink
    maps back to the path the file browser shows.
    """
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(os.path.expanduser(root)))
    return None if relative == ".." or relative.startswith("../") else relative.replace(os.sep, "/")


def request_from_payload(payload: Any, resolve: Callable[[Any], str], settings: PromoteSettings) -> PromoteRequest:
    """Validate a ``POST jobs`` body (without its sweep); every error names its field.

    Resources and monitor settings the body leaves out come from ``settings`` (the server's defaults).
    """
    if not isinstance(payload, dict):
        raise UsageError("body: must be a JSON object", subject="body")
    unknown = sorted(set(payload) - _PAYLOAD_FIELDS)
    if unknown:
        raise UsageError(
            f"{unknown[0]}: unknown field (expected {', '.join(sorted(_PAYLOAD_FIELDS))})", subject=unknown[0]
        )
    notebook = resolve(payload.get("notebook"))
    target = payload.get("target", settings.default_target)
    if not isinstance(target, str):
        raise UsageError("target: must be a string", subject="target")
    offered = settings.target_names()
    if target not in offered:
        raise UsageError(f"target {target!r}: no such target here (available: {', '.join(offered)})", subject="target")
    for name in ("parameters", "resources", "monitor"):
        if not isinstance(payload.get(name, {}), dict):
            raise UsageError(f"{name}: must be an object", subject=name)
    for name in payload.get("parameters", {}):
        if not name.isidentifier() or keyword.iskeyword(name):  # it becomes `name = value` in the job notebook
            raise UsageError(f"parameters: {name[:60]!r} is not a Python identifier", subject="parameters")
    resources = payload.get("resources", {})
    unknown = sorted(set(resources) - set(RESOURCE_OPTIONS))
    if unknown:
        raise UsageError(f"resources.{unknown[0]}: unknown option ({', '.join(RESOURCE_OPTIONS)})", subject="resources")
    monitor = payload.get("monitor", {})
    fields = MonitorSettings.__dataclass_fields__
    unknown = sorted(set(monitor) - set(fields))
    if unknown:
        raise UsageError(f"monitor.{unknown[0]}: unknown setting ({', '.join(fields)})", subject="monitor")
    try:
        given = {k: _typed(fields[k].default, v) for k, v in monitor.items()}
        settings_ = settings.monitor(given)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"monitor: {exc}", subject="monitor") from None
    except UsageError as exc:
        raise UsageError(f"monitor.{exc.message}", subject="monitor") from None
    if not isinstance(payload.get("deterministic", False), bool):
        raise UsageError("deterministic: must be true or false", subject="deterministic")
    try:
        parsed = settings.resources(resources)
    except UsageError as exc:
        raise UsageError(f"resources.{exc.message.removeprefix('--')}", subject="resources") from None
    return PromoteRequest(
        notebook=notebook,
        kernel=kernel_from_payload(payload),
        target=target,
        parameters=payload.get("parameters", {}),
        resources=parsed,
        monitor=settings_,
        deterministic=payload.get("deterministic", False),
    )


def kernel_from_payload(payload: dict[str, Any]) -> str | None:
    """The body's ``kernel``: an installed Python kernelspec's name, or None for the notebook's own."""
    kernel = payload.get("kernel")
    if kernel is None:
        return None
    if not isinstance(kernel, str) or not kernel.strip():
        raise UsageError("kernel: must be a kernelspec name", subject="kernel")
    from ..freeze import kernel_interpreter

    try:
        kernel_interpreter(kernel)
    except KernelError as exc:
        raise UsageError(exc.message, subject="kernel") from None
    return kernel


def sweep_from_payload(payload: dict[str, Any]) -> tuple[list[dict[str, Any]] | None, int | None]:
    """The body's sweep (parameter sets) and ``max_parallel``; (None, None) for a single job."""
    max_parallel = payload.get("max_parallel")
    if max_parallel is not None and (
        isinstance(max_parallel, bool) or not isinstance(max_parallel, int) or max_parallel < 1
    ):
        raise UsageError("max_parallel: must be a whole number of at least 1", subject="max_parallel")
    if "sweep" not in payload:
        if max_parallel is not None:
            raise UsageError("max_parallel: only applies to a sweep", subject="max_parallel")
        return None, None
    return expand(payload["sweep"]), max_parallel


def _typed(default: Any, value: Any) -> Any:
    """A JSON value as the type of a MonitorSettings field (never a bool where a number is meant)."""
    kind = type(default)
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"{value!r} is not a {kind.__name__}")
    if kind is str and not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise TypeError(f"{value!r} is not a whole number")
    return kind(value)


class JobManager:
    """Runs promote requests for the server and keeps the store up to date.

    Parameters
    ----------
    store
        The durable job store.
    runs_dir, env_allowlist, poll_interval
        As for :class:`Pipeline`.
    make_target
        Target name -> configured target instance.
    publish
        Called with every new event (job id, event): the server's event bus.
    """

    def __init__(
        self,
        store: JobStore,
        *,
        runs_dir: str,
        env_allowlist: tuple[str, ...],
        poll_interval: float,
        make_target: Callable[[str], Target] | None = None,
        publish: Callable[[str, list[dict[str, Any]]], None] = lambda job, events: None,
        config: Any = None,
        parity_tolerance: dict[str, Any] | None = None,
        lease: ServerLease | None = None,
    ) -> None:
        self.store = store
        self.lease = lease  # this server's claim to the jobs it follows, in a store other servers may share
        self.parity_tolerance = dict(parity_tolerance or {})
        self.runs_dir = runs_dir
        self.env_allowlist = env_allowlist
        self.poll_interval = poll_interval
        self.make_target = make_target or (lambda name: target_class(name)())
        self.publish = publish
        self.config = config
        self._active: dict[str, tuple[Pipeline, Prepared, Target]] = {}
        self._cancel_requested: set[str] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._targets: dict[str, Target] = {}
        # previews run a kernel's interpreter (seconds when it is slow): a pool of their own, so six dialogs
        # opened at once never starve the threads that target checks and polls use
        self.previews = ThreadPoolExecutor(max_workers=2, thread_name_prefix="promote-preview")

    def _pipeline(self) -> Pipeline:
        from ..image import ImageBuilder

        builder = ImageBuilder(config=self.config) if self.config is not None else None
        return Pipeline(self.runs_dir, self.env_allowlist, self.poll_interval, image_builder=builder,
                        parity_tolerance=self.parity_tolerance)  # fmt: skip

    async def submit(self, request: PromoteRequest) -> str:
        """Check the target, record the job as pending and start it in the background; returns its id."""
        target = await self._checked_target(request)
        return self._start(request, target, None)

    async def submit_sweep(
        self, request: PromoteRequest, sets: list[dict[str, Any]], max_parallel: int | None = None
    ) -> tuple[str, list[str]]:
        """One job per parameter set (merged over ``request.parameters``), at most ``max_parallel`` of them
        running at a time (the others wait as pending); returns the sweep's id and its job ids in order.
        """
        target = await self._checked_target(request)
        sweep_id = "s" + new_job_id()
        slots = asyncio.Semaphore(max_parallel or target.default_max_parallel() or len(sets))
        ids = []
        for index, values in enumerate(sets):
            task = dataclasses.replace(request, parameters={**request.parameters, **values},
                                       sweep={"id": sweep_id, "index": index, "size": len(sets)})  # fmt: skip
            ids.append(self._start(task, target, slots))
        return sweep_id, ids

    def target(self, name: str) -> Target:
        """One instance per target for the server's lifetime: its jobs share it, so a target that polls in
        batches (Slurm: one squeue for all) sees them all.
        """
        if name not in self._targets:
            self._targets[name] = self.make_target(name)
        return self._targets[name]

    async def _checked_target(self, request: PromoteRequest) -> Target:
        """The request's target, once it answers and accepts the resources. Both checks may ask an engine or
        a controller (docker, squeue) and wait: they run in a thread, never on the server's event loop.
        """
        target = self.target(request.target)
        ok, why = await asyncio.to_thread(target.available)
        if not ok:
            raise TargetUnavailable(f"target {request.target}: unavailable: {why}", subject=request.target)
        await asyncio.to_thread(target.check_resources, request.resources)
        if target.needs_image and request.image is None:
            from ..launch.pipeline import ImageRequest

            request.image = ImageRequest()
        return target

    def _start(self, request: PromoteRequest, target: Target, slots: asyncio.Semaphore | None) -> str:
        request.job_id = new_job_id()
        record = JobRecord(id=request.job_id, notebook=request.notebook, target=request.target, kernel=request.kernel or "",
                           parameters=request.parameters, resources=request.resources, monitor=request.monitor,
                           created_at=round(time.time(), 3), sweep=request.sweep)  # fmt: skip
        self.store.put_job(record, None)
        if self.lease is not None:
            self.store.claim(record.id, self.lease.id)
        self._spawn(self._run(request, target, record, slots))
        return request.job_id

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(
        self, request: PromoteRequest, target: Target, record: JobRecord, slots: asyncio.Semaphore | None
    ) -> None:
        if slots is None:
            await self._prepare_and_follow(request, target, record)
            return
        async with slots:  # a sweep's job waits here, pending, for a free slot
            await self._prepare_and_follow(request, target, record)

    async def _prepare_and_follow(self, request: PromoteRequest, target: Target, record: JobRecord) -> None:
        if record.id in self._cancel_requested:
            self._cancel_requested.discard(record.id)
            self._end_unsubmitted(record, "cancelled", "cancelled", "cancelled before it started")
            return
        pipeline = self._pipeline()
        made: list[RunDir] = []
        pipeline.on_run_dir = made.append  # from the preparing thread
        publishing = asyncio.get_running_loop().create_task(self._publish_while_preparing(record.id, made))
        try:
            prepared = await asyncio.to_thread(pipeline.prepare, request)
        except PromoteError as exc:
            self._end_unsubmitted(record, "failed", "invalid", str(exc))
            return
        except Exception as exc:  # a bug, not the user's: still never a job stuck in pending
            log.exception("jupyter-promote: preparing job %s failed", record.id)
            self._end_unsubmitted(record, "failed", "error", f"{type(exc).__name__}: {exc}")
            return
        finally:
            publishing.cancel()
        self.store.put_job(prepared.record, str(prepared.run.path))
        if record.id in self._cancel_requested:
            prepared.log.emit(
                "status", state="cancelled", reason="cancelled", message="cancelled before submit", source="server"
            )
            await self._follow(pipeline, prepared, target)
            return
        try:
            await pipeline.submit(prepared, target)
        except PromoteError as exc:  # refused by the target: the run directory is gone, the record says why
            self._end_unsubmitted(prepared.record, "failed", "refused", str(exc))
            return
        if record.id in self._cancel_requested:  # a DELETE that came while the target took the job
            await pipeline.cancel(prepared, target)
        await self._follow(pipeline, prepared, target)

    async def _publish_while_preparing(self, job_id: str, made: list[RunDir]) -> None:
        """Store and publish the events of freezing, building and pushing as they happen (an image build takes
        minutes); following the job later finds them stored and publishes only what is new."""
        tail: EventTail | None = None
        while True:
            await asyncio.sleep(PREPARE_POLL_S)
            if tail is None and made:
                tail = EventTail(str(made[0].events))
            events = tail.read() if tail is not None else []
            new = self.store.add_events(job_id, events) if events else []
            if new:
                self.publish(job_id, new)

    async def _follow(self, pipeline: Pipeline, prepared: Prepared, target: Target) -> None:
        """Follow to the end; the events of each poll are stored in one transaction, then published."""
        job_id = prepared.record.id
        self._active[job_id] = (pipeline, prepared, target)
        run_dir = str(prepared.run.path)
        batch: list[dict[str, Any]] = []
        latest: list[JobView] = []
        settled = [False]  # by this server after an error: no later view may take that back

        def flush() -> None:
            events = batch[:]
            batch.clear()
            new = self.store.add_events(job_id, events) if events else []
            if any(event["type"] == "status" for event in new) and not settled[0]:
                latest[-1].update(prepared.record)
                self.store.put_job(prepared.record, run_dir)
            if new:
                self.publish(job_id, new)

        def on_event(event: dict[str, Any], view: JobView) -> None:
            if not batch:  # runs once the pipeline has read everything this poll brought
                asyncio.get_running_loop().call_soon(flush)
            batch.append(event)
            latest[:] = [view]

        try:
            await pipeline.follow(prepared, target, on_event)
        except Exception as exc:  # whatever breaks following, the job is settled, never left running
            log.exception("jupyter-promote: following job %s failed", job_id)
            batch.clear()
            settled[0] = True
            self._settle_after_error(prepared, exc)
            with contextlib.suppress(Exception):  # a job the server no longer follows is not left running
                await pipeline.cancel(prepared, target)
        finally:
            flush()
            self._active.pop(job_id, None)
            self._cancel_requested.discard(job_id)
            try:  # job.json, unless it could not take the settled state (a full disk) or cannot be read
                current = prepared.record if settled[0] else prepared.run.read()
            except PromoteError:
                current = prepared.record
            self.store.put_job(current, run_dir)

    def _settle_after_error(self, prepared: Prepared, exc: Exception) -> None:
        """Fail a job whose following raised, through its own event log (one source of seqs), and store it."""
        record, run = prepared.record, prepared.run
        reason = "error"
        message = f"the server could not follow the job: {type(exc).__name__}: {exc}".splitlines()[0]
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            reason, message = "disk_full", f"the disk of the run directory {run.path} is full"
        try:
            prepared.log.emit("status", state="failed", reason=reason, message=message, source="server")
            events = EventTail(str(run.events), after=self.store.last_seq(record.id), job=record.id).read()
            view = JobView().fold(self.store.events_after(record.id, 0) + events)
            view.update(record)
            run.write(record)
            new = self.store.add_events(record.id, events)
            if new:
                self.publish(record.id, new)
        except Exception:  # the run directory itself is unusable (a full disk): the store still says why
            log.exception("jupyter-promote: job %s: could not write its final state", record.id)
            record.state, record.reason, record.message = JobState.FAILED, reason, message
            record.finished_at = round(time.time(), 3)
        self.store.put_job(record, str(run.path))

    def _end_unsubmitted(self, record: JobRecord, state: str, reason: str, message: str) -> None:
        record.state, record.reason, record.message = JobState(state), reason, message
        record.finished_at = round(time.time(), 3)
        self.store.put_job(record, None)
        # after what preparing published (a freeze that failed after its first event)
        event = {"seq": self.store.last_seq(record.id) + 1, "ts": record.finished_at, "job": record.id, "type": "status", "state": state,
                 "reason": reason, "message": message, "source": "server"}  # fmt: skip
        new = self.store.add_events(record.id, [event])
        if new:
            self.publish(record.id, new)

    async def cancel(self, job_id: str) -> JobRecord:
        """Cancel a job (idempotent: a finished job is left as it is)."""
        found = self.store.get_job(job_id)
        if found is None:
            raise JobNotFound(f"job {job_id}: no such job", subject=job_id)
        record, _ = found
        if record.state.final:
            return record
        active = self._active.get(job_id)
        if active is not None:
            pipeline, prepared, target = active
            await pipeline.cancel(prepared, target)
            return record
        run_dir = found[1]
        current = RunDir(run_dir).read() if run_dir and RunDir(run_dir).exists() else None
        if current is not None and current.handle:  # submitted, followed by another server: stop it on its target
            await self.target(current.target).cancel(current.handle)
        else:
            self._cancel_requested.add(job_id)
        return record

    async def rerun(self, job_id: str) -> str:
        """The same notebook, target, parameters, resources and monitor settings, as a new job."""
        record, _ = self.get(job_id)
        request = PromoteRequest(notebook=record.notebook, target=record.target, parameters=dict(record.parameters),
                                 resources=record.resources, monitor=record.monitor, kernel=record.kernel or None)  # fmt: skip
        if not os.path.isfile(request.notebook):
            raise UsageError(f"job {job_id}: its notebook {record.notebook} no longer exists", subject=job_id)
        return await self.submit(request)

    def preview(self, notebook: str, kernel: str | None = None, gpus: int | None = None) -> dict[str, Any]:
        """What a promote of ``notebook`` would use: its kernel's lock, the kernels to choose from, the
        pre-flight findings and, for image targets, the image tag and whether that image exists already.
        Builds nothing.
        """
        import tempfile

        import nbformat
        from jupyter_client.kernelspec import KernelSpecManager

        from ..freeze import environment_card, freeze, kernel_interpreter
        from ..job.notebook import kernel_of, read_notebook
        from ..job.parameters import notebook_parameters
        from ..preflight import check_notebook

        nb = read_notebook(notebook)
        own = kernel_of(nb, notebook)
        interpreter = kernel_interpreter(kernel or own)
        specs = KernelSpecManager().get_all_specs()
        kernels = [{"name": name, "display_name": spec["spec"].get("display_name", name)}
                   for name, spec in sorted(specs.items()) if spec["spec"].get("language", "").lower() == "python"]  # fmt: skip
        findings = check_notebook(nbformat.from_dict(nb), gpus=gpus, env_allowlist=self.env_allowlist)
        with tempfile.TemporaryDirectory(prefix="promote-preview-") as tmp:
            env = freeze(interpreter, os.path.join(tmp, "env"), env_allowlist=self.env_allowlist)
            result: dict[str, Any] = {
                "kernel": own,
                "kernels": kernels,
                "check": {"findings": [f.to_json() for f in findings]},
                "summary": env.summary(),
                "environment": environment_card(env.lock),
                "parameters": notebook_parameters(notebook),
                "lock": env.lock,
                "image": None,
            }
            try:
                from ..image import ImageBuilder

                builder = ImageBuilder(config=self.config) if self.config is not None else ImageBuilder()
                plan = builder.plan(env)
                shutil.rmtree(plan.context, ignore_errors=True)  # the tag is all a preview needs
                result["image"] = {
                    "tag": plan.tag,
                    "base_image": plan.base_image,
                    "exists": builder.find(plan.tag) is not None,
                }
            except PromoteError as exc:  # no engine here: the preview still shows the lock
                result["image_error"] = str(exc)
        return result

    def get(self, job_id: str) -> tuple[JobRecord, str | None]:
        found = self.store.get_job(job_id)
        if found is None:
            raise JobNotFound(f"job {job_id}: no such job", subject=job_id)
        return found

    async def reconcile(self) -> None:
        """At server start: resume watching every unfinished job; a job whose target lost it becomes
        ``failed``/``lost`` (the pipeline's own rule); one never submitted fails at once.
        """
        for record, run_dir in self.store.unfinished():
            owner = self.store.owner(record.id)
            if self.lease is not None and owner is not None and self.lease.alive(owner):
                continue  # another living server follows it (two jupyter labs on one store)
            if self.lease is not None and not self.store.adopt(record.id, self.lease.id, owner):
                continue  # another server starting at this moment took it over first
            run = RunDir(run_dir) if run_dir else None
            current = run.read() if run is not None and run.exists() else None
            if current is None or not current.handle:
                self._end_unsubmitted(record, "failed", "lost", "the server stopped before the job was submitted")
                continue
            try:
                target = self.target(current.target)
            except PromoteError as exc:
                self._end_unsubmitted(current, "failed", "lost", str(exc))
                continue
            assert run is not None  # a handle is only ever written into a run directory's job.json
            prepared = Prepared(current, run, None, False, EventLog(str(run.events), current.id))  # type: ignore[arg-type]
            self._spawn(self._follow(self._pipeline(), prepared, target))

    async def preview_async(self, notebook: str, kernel: str | None = None, gpus: int | None = None) -> dict[str, Any]:
        """:meth:`preview` in the previews' own threads."""
        return await asyncio.get_running_loop().run_in_executor(
            self.previews, functools.partial(self.preview, notebook, kernel, gpus)
        )

    async def close(self) -> None:
        self.previews.shutdown(wait=False, cancel_futures=True)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
