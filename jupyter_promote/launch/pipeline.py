"""The one code path from a notebook to a finished job: freeze -> convert -> submit -> follow.

The CLI and (later) the server both call :class:`Pipeline`; each stage is reported as an event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import KernelError, PromoteError, UsageError
from ..events import JobView, problem
from ..freeze import DEFAULT_ENV_ALLOWLIST, FrozenEnv, freeze, kernel_interpreter
from ..job.convert import convert, write_notebook
from ..job.notebook import kernel_of, read_notebook
from ..models import JobRecord, JobState, MonitorSettings, Resources
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail
from ..targets import Target
from ..targets.base import TargetStatus

FALLBACK_KERNEL = "python3"
#: Seconds a target may not answer before its jobs are settled as lost (``PROMOTE_TARGET_PATIENCE`` overrides).
TARGET_PATIENCE_S = float(os.environ.get("PROMOTE_TARGET_PATIENCE", "600"))
#: Seconds a target may report a job as ended before its final event must be in the log.
FINAL_EVENT_GRACE_S = 5.0


@dataclass
class PromoteRequest:
    notebook: str
    target: str = "local"
    parameters: dict[str, Any] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    deterministic: bool = False
    out: str | None = None
    image: ImageRequest | None = None  # set for targets whose jobs run in the environment's image
    job_id: str | None = None  # given when the caller must know the id before the job is prepared
    sweep: dict[str, Any] | None = None  # {"id", "index", "size"} when the job is one task of a sweep
    kernel: str | None = None  # the kernelspec to run with; None: the notebook's own


@dataclass
class ImageRequest:
    """How to get the environment image: ``jupyter promote build``'s options, the keywords of
    :meth:`jupyter_promote.image.ImageBuilder.ensure`.
    """

    base_image: str | None = None
    ca_bundle: str | None = None
    wheelhouse: bool | None = None
    push: bool = False
    registry: str | None = None
    rebuild: bool = False


@dataclass
class Prepared:
    record: JobRecord
    run: RunDir
    env: FrozenEnv
    has_parameters_cell: bool
    log: EventLog
    created_dir: bool = True  # whether prepare made the run directory (else it emptied a given one)


def _remove_run(path: Path, created: bool) -> None:
    if created:
        shutil.rmtree(path, ignore_errors=True)
    elif path.is_dir():
        for item in path.iterdir():
            shutil.rmtree(item) if item.is_dir() else item.unlink()


def _set_aside(events: list[dict[str, Any]], tail: EventTail, log: EventLog) -> list[dict[str, Any]]:
    """The events that can be folded; each one that cannot (another writer's line, an unknown type or state)
    is set aside and reported as an alert in the job's own log, never fatal."""
    bad = [(e, "not this job's (another writer's line)") for e in tail.foreign]
    tail.foreign.clear()
    good = []
    for event in events:
        why = problem(event)
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
    return good


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


def default_run_dir(runs_dir: str, notebook: str, job_id: str) -> Path:
    stem = Path(notebook).stem.replace(" ", "_")
    return Path(runs_dir) / f"{stem}-{time.strftime('%Y%m%d-%H%M%S')}-{job_id[:6]}"


class Pipeline:
    """Runs promote requests against targets.

    Parameters
    ----------
    runs_dir
        Where run directories go when a request names none.
    env_allowlist
        Environment variable names a freeze may record.
    poll_interval
        Seconds between target polls while following a job.
    """

    def __init__(
        self,
        runs_dir: str,
        env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST,
        poll_interval: float = 0.1,
        image_builder: Any = None,
        on_line: Callable[[str], None] = lambda line: None,
        parity_tolerance: dict[str, Any] | None = None,
    ) -> None:
        self.runs_dir = runs_dir
        self.env_allowlist = env_allowlist
        self.poll_interval = poll_interval
        self.notes: list[str] = []
        self.image_builder = image_builder  # an ImageBuilder, for requests that need an image
        self.on_line = on_line  # build progress, one line at a time
        self.parity_tolerance = dict(parity_tolerance or {})  # metric -> tolerance, when the notebook declares none
        self.on_run_dir: Callable[[RunDir], None] = lambda run: None  # prepare made the run directory
        #: seconds a target may not answer polls (an engine or controller restarting) before the job is lost
        self.target_patience = TARGET_PATIENCE_S

    def prepare(self, request: PromoteRequest) -> Prepared:
        """Validate, then create the run directory, freeze the kernel and write the job notebook.

        Nothing is written when the notebook or the request is invalid; a failed freeze removes the run
        directory it created.
        """
        notebook = os.path.abspath(request.notebook)
        nb = read_notebook(notebook)
        kernel = request.kernel or kernel_of(nb, request.notebook)
        try:
            interpreter = kernel_interpreter(kernel)
        except KernelError:
            if kernel == FALLBACK_KERNEL or request.kernel:  # a kernel asked for by name must exist
                raise
            # like Elyra: a Python notebook whose kernel is not installed here runs on the default Python kernel
            interpreter = kernel_interpreter(FALLBACK_KERNEL)
            self.notes.append(f"kernel {kernel!r} is not installed here; using {FALLBACK_KERNEL!r} instead")
            kernel = FALLBACK_KERNEL
        conversion = convert(nb, request.monitor, deterministic=request.deterministic)
        job_id = request.job_id or new_job_id()
        path = Path(request.out) if request.out else default_run_dir(self.runs_dir, notebook, job_id)
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise UsageError(f"--out {path}: already exists and is not empty", subject=str(path))
        created = not path.exists()
        path.mkdir(parents=True, exist_ok=True)
        if created:  # parameters, logs and outputs are the user's alone, also on a shared login node
            path.chmod(0o700)
        run = RunDir(path)
        self.on_run_dir(run)
        try:
            now = round(time.time(), 3)
            record = JobRecord(
                id=job_id,
                notebook=notebook,
                target=request.target,
                kernel=kernel,
                parameters=request.parameters,
                resources=request.resources,
                monitor=request.monitor,
                created_at=now,
                sweep=request.sweep,
            )
            run.write(record)
            log = EventLog(str(run.events), job_id)
            log.emit("status", state="pending", source="pipeline", message="freezing the kernel's environment")
            env = freeze(interpreter, run.env_dir, env_allowlist=self.env_allowlist)
            record.lock_hash = env.content_hash
            record.env = dict(env.lock.get("env") or {})
            if request.image is not None:
                record.image = self._image(request.image, env, interpreter, log, run)
            write_notebook(conversion.notebook, str(run.job_notebook))
            run.write(record)
        except BaseException:
            _remove_run(path, created)
            raise
        return Prepared(record, run, env, conversion.has_parameters_cell, log, created)

    def _image(
        self, options: ImageRequest, env: FrozenEnv, interpreter: Any, log: EventLog, run: RunDir
    ) -> dict[str, Any]:
        from ..image import ImageBuilder

        builder = self.image_builder or ImageBuilder()
        log.emit("status", state="pending", source="pipeline", message="building or finding the environment image")
        with open(run.build_log, "a", encoding="utf-8") as build_log:

            def on_line(line: str) -> None:
                build_log.write(line.rstrip("\n") + "\n")
                build_log.flush()
                self.on_line(line)

            def on_stage(stage: str) -> None:
                log.emit("status", state="pending", source="pipeline", message=f"{stage} the environment image")

            ref = builder.ensure(env, interpreter, **dataclasses.asdict(options), on_line=on_line, on_stage=on_stage)
        log.emit(
            "image",
            source="pipeline",
            ref=ref.ref,
            built=ref.built,
            digest=ref.digest,
            verified=ref.verification.get("ok"),
        )
        return ref.to_json()

    async def submit(self, prepared: Prepared, target: Target) -> None:
        """Hand the job to its target. A target that refuses it (sbatch's "invalid partition") leaves nothing
        behind: the run directory goes, as if the promote had never started.
        """
        record, run = prepared.record, prepared.run
        try:
            record.handle = await target.submit(record, run)
        except PromoteError:
            _remove_run(run.path, prepared.created_dir)
            raise
        await self.mark_submitted(prepared, target)

    async def mark_submitted(self, prepared: Prepared, target: Target) -> None:
        """The job has its handle: it is queued on the target."""
        record, run = prepared.record, prepared.run
        record.state = JobState.QUEUED
        run.write(record)
        prepared.log.emit("status", state="queued", source="pipeline", target=target.name)

    async def follow(
        self,
        prepared: Prepared,
        target: Target,
        on_event: Callable[[dict[str, Any], JobView], None] | None = None,
    ) -> JobView:
        """Follow a submitted job to its final state, keeping job.json up to date."""
        record, run = prepared.record, prepared.run
        tail = EventTail(str(run.events), job=record.id)
        view = JobView()
        ended_at: float | None = None

        reported_queue: tuple[str | None, str | None] = (None, None)
        unreachable_since: float | None = None  # the target stopped answering (an engine or controller restart)
        written = (view.state, view.reason, 0.0)  # job.json: at once on a state change, else at most 1/s

        def drain() -> None:
            nonlocal written
            events = tail.read()
            for event in _set_aside(events, tail, prepared.log):
                view.apply(event)
                if on_event is not None:
                    on_event(event, view)
            now = time.monotonic()
            if events and ((view.state, view.reason) != written[:2] or view.state.final or now - written[2] >= 1.0):
                self._update_record(record, view, run)
                written = (view.state, view.reason, now)

        while True:
            drain()
            if view.state.final:
                await self._collect(prepared, target, view, drain)
                if view.state is JobState.SUCCEEDED:
                    self.judge(prepared, view)
                return view
            try:
                status = (await target.poll({record.id: record.handle}))[record.id]
            except Exception as exc:  # a target that does not answer now may answer soon: retried, then settled
                now = time.monotonic()
                if unreachable_since is None:
                    unreachable_since = now
                    prepared.log.emit("alert", kind="target_unreachable", action="alert", source="pipeline",
                                      message=f"the {target.name} target does not answer ({type(exc).__name__}: "
                                      f"{str(exc)[:200]}); asking again")  # fmt: skip
                elif now - unreachable_since > self.target_patience:
                    prepared.log.emit("status", state="failed", reason="lost", source="pipeline",
                                      message=f"the {target.name} target did not answer for "
                                      f"{self.target_patience:.0f} s")  # fmt: skip
                await asyncio.sleep(min(5.0, max(self.poll_interval, 1.0)))
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
                await asyncio.sleep(self.poll_interval)  # the runner's own final event wins if it made it
                drain()
                if not view.state.final:
                    prepared.log.emit(
                        "status",
                        state=status.state.value,
                        reason=status.reason,
                        message=status.message,
                        source="target",
                    )
            elif status.state is None:  # ended; its final status event should be there
                ended_at = ended_at or time.monotonic()
                if time.monotonic() - ended_at > FINAL_EVENT_GRACE_S:
                    prepared.log.emit(
                        "status",
                        state="failed",
                        reason="lost",
                        message=f"the job ended (exit code {status.exit_code}) without reporting how",
                        source="pipeline",
                    )
            await asyncio.sleep(self.poll_interval)

    async def _collect(self, prepared: Prepared, target: Target, view: JobView, drain: Callable[[], None]) -> None:
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
            await asyncio.sleep(max(self.poll_interval, 0.5) if status is None else self.poll_interval)
        if status is None:  # the job has ended as its events say; what is left on the target stays there
            return
        if status.overrides and status.state is not None and (status.state, status.reason) != (view.state, view.reason):
            prepared.log.emit(
                "status", state=status.state.value, reason=status.reason, message=status.message, source="target"
            )
            drain()

    def judge(self, prepared: Prepared, view: JobView) -> dict[str, Any] | None:
        """Parity of a succeeded job with its source notebook's baseline: parity.json, parity.txt and
        ``record.parity``; None when the source notebook is gone (nothing to compare with).
        """
        import json

        from ..analysis import parity
        from ..freeze import read_lock

        record, run = prepared.record, prepared.run
        try:
            source = read_notebook(record.notebook)
        except PromoteError:
            return None
        lock = read_lock(run.env_dir)
        if lock is None:
            return None
        job_lock = lock
        if record.image and record.image.get("verification", {}).get("python"):  # the image's own Python
            job_lock = {**lock, "python": {**lock.get("python", {}), "version": record.image["verification"]["python"]}}
        job_lock = parity.job_environment(run.path, job_lock)  # what the job recorded itself, when it did
        try:
            result = parity.judge(source, dict(view.metrics), lock, job_lock, self.parity_tolerance)
        except PromoteError as exc:  # a tolerance that is not one
            result = {"verdict": "error", "error": str(exc), "metrics": [], "not_in_baseline": [], "environment": {}}
            (run.path / parity.PARITY_FILE).write_text(json.dumps(result, indent=2) + "\n")
        else:
            parity.write(run.path, result, Path(record.notebook).name)
        record.parity = {
            "verdict": result["verdict"],
            "failed": [m["metric"] for m in result["metrics"] if not m["ok"]],
        }
        run.write(record)
        return result

    async def cancel(self, prepared: Prepared, target: Target) -> None:
        await target.cancel(prepared.record.handle)

    @staticmethod
    def _update_record(record: JobRecord, view: JobView, run: RunDir) -> None:
        view.update(record)
        run.write(record)
