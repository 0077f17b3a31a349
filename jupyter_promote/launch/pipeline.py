"""The one code path from a notebook to a finished job: freeze -> convert -> submit -> follow.

Both doors reach it through :class:`jupyter_promote.launch.lifecycle.JobLifecycle`; each stage is reported
as an event (a ``status`` event with its ``stage``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import KernelError, PromoteError
from ..events import JobView
from ..freeze import DEFAULT_ENV_ALLOWLIST, FrozenEnv, freeze, kernel_interpreter
from ..freeze.kernels import Interpreter
from ..job.convert import convert, write_notebook
from ..job.notebook import kernel_of, read_notebook, with_kernel
from ..job.overrides import Override, overridden_parameters
from ..models import JobState
from ..rundir import RunDir, login_name, make_run_dir
from ..runtime.events import EventLog
from ..targets import Target
from .prepared import Prepared
from .request import ImageRequest, PromoteRequest, default_run_dir, job_record, new_job_id
from .storage import bring_back, check_inputs, credentials_of

FALLBACK_KERNEL = "python3"


def choose_kernel(nb: Any, notebook: str, asked: str | None) -> tuple[str, Interpreter, str | None]:
    """The kernel a job of ``notebook`` (read: ``nb``) runs on, its interpreter, and a note when it is not the
    notebook's own: the one asked for (which must exist), else the notebook's; like Elyra, a Python notebook
    whose kernel is not installed here runs on the default Python kernel."""
    kernel = asked or kernel_of(nb, notebook)
    try:
        return kernel, kernel_interpreter(kernel), None
    except KernelError:
        if kernel == FALLBACK_KERNEL or asked:
            raise
    note = f"kernel {kernel!r} is not installed here; using {FALLBACK_KERNEL!r} instead"
    return FALLBACK_KERNEL, kernel_interpreter(FALLBACK_KERNEL), note


def _remove_run(path: Path, created: bool) -> None:
    if created:
        shutil.rmtree(path, ignore_errors=True)
    elif path.is_dir():
        for item in path.iterdir():
            shutil.rmtree(item) if item.is_dir() else item.unlink()


def record_overrides(log: EventLog, overrides: tuple[Override, ...]) -> None:
    """One alert per parameter the job will not run with: job.json's parameters say what was asked, these what ran."""
    for override in overrides:
        message = override.message()
        log.emit(
            "alert",
            kind="parameter_overridden",
            action="alert",
            source="pipeline",
            message=message,
            name=override.name,
            cell=override.cell,
        )


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
        reporters: tuple[Any, ...] = (),
    ) -> None:
        self.runs_dir = runs_dir
        self.reporters = reporters  # told of each job's alerts and end (notifications, experiment tracking)
        self.env_allowlist = env_allowlist
        self.poll_interval = poll_interval
        self.notes: list[str] = []
        self.image_builder = image_builder  # an ImageBuilder, for requests that need an image
        self.on_line = on_line  # build progress, one line at a time
        self.parity_tolerance = dict(parity_tolerance or {})  # metric -> tolerance, when the notebook declares none
        self.on_run_dir: Callable[[RunDir], None] = lambda run: None  # prepare made the run directory
        #: seconds a target may not answer polls (an engine or controller restarting) before the job is lost
        from .follow import TARGET_PATIENCE_S

        self.target_patience = TARGET_PATIENCE_S
        self.retry_backoff_s = 5.0  # seconds before a job's second attempt, doubled for each after it
        self.artifacts_url = ""  # c.PromoteSettings.artifacts_url
        self.storage_options: dict[str, Any] = {}  # c.PromoteSettings.storage_options

    def prepare(self, request: PromoteRequest, job_id: str | None = None) -> Prepared:
        """Validate, then create the run directory, freeze the kernel and write the job notebook.

        ``job_id`` is given when the caller announced the job before preparing it (the server, a group).
        Nothing is written when the notebook or the request is invalid; a failed freeze removes the run
        directory it created.
        """
        notebook = os.path.abspath(request.notebook)
        # a source that is not there is refused before anything is written
        secrets = secret_values(request.secrets, request.target)
        check_inputs(request.data, {**self.storage_options, **credentials_of(secrets)})
        nb = read_notebook(notebook)
        kernel, interpreter, note = choose_kernel(nb, request.notebook, request.kernel)
        if note:
            self.notes.append(note)
        conversion = convert(with_kernel(nb, kernel), request.monitor, deterministic=request.deterministic)
        job_id = job_id or new_job_id()
        path = (
            Path(request.out) if request.out else default_run_dir(self.runs_dir, notebook, job_id, owner=request.owner)
        )
        created = not path.exists()
        make_run_dir(path)  # parameters, logs and outputs are the user's alone, also on a shared login node
        run = RunDir(path)
        self.on_run_dir(run)
        try:
            record = job_record(request, job_id, notebook=notebook, kernel=kernel, owner=request.owner or login_name())
            record.artifacts_url, record.storage_options = self.artifacts_url, dict(self.storage_options)
            run.write(record)
            log = EventLog(str(run.events), job_id)
            message = "freezing the kernel's environment"
            log.emit("status", state="pending", stage="freezing", source="pipeline", message=message)
            env = freeze(interpreter, run.env_dir, env_allowlist=self.env_allowlist)
            record.lock_hash = env.content_hash
            record.env = dict(env.lock.get("env") or {})
            if request.image is not None:
                record.image = self._image(request.image, env, interpreter, log, run)
            write_notebook(conversion.notebook, str(run.job_notebook))
            run.write(record)
            overrides = tuple(overridden_parameters(nb, record.parameters))
            record_overrides(log, overrides)
        except BaseException:
            _remove_run(path, created)
            raise
        prepared = Prepared(record, run, env, conversion.has_parameters_cell, log, created, overrides=overrides)
        prepared.secrets = secrets
        return prepared

    def _image(
        self, options: ImageRequest, env: FrozenEnv, interpreter: Any, log: EventLog, run: RunDir
    ) -> dict[str, Any]:
        from ..image import ImageBuilder

        builder = self.image_builder or ImageBuilder()
        message = "building or finding the environment image"
        log.emit("status", state="pending", stage="building", source="pipeline", message=message)
        with open(run.build_log, "a", encoding="utf-8") as build_log:

            def on_line(line: str) -> None:
                build_log.write(line.rstrip("\n") + "\n")
                build_log.flush()
                self.on_line(line)

            def on_stage(stage: str) -> None:
                log.emit(
                    "status", state="pending", stage=stage, source="pipeline", message=f"{stage} the environment image"
                )

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
            # a target written before secrets takes two arguments: it is given them only for a job that has some
            given = (prepared.secrets,) if prepared.secrets else ()
            record.handle = await target.submit(record, run, *given)
        except PromoteError:
            if prepared.remove_on_refusal:
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
        """Follow a submitted job to its final state, keeping job.json up to date; judge it when it succeeded."""
        from .follow import follow

        view = await follow(prepared, target, on_event, self.poll_interval, self.target_patience)
        if prepared.record.artifacts_url and not target.shares_run_dir:
            await asyncio.to_thread(bring_back, prepared)
        if view.state is JobState.SUCCEEDED and prepared.judge_alone:
            self.judge(prepared, view)
        return view

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
        job_lock = parity.job_environment(run.path, lock)  # what the job recorded itself, or its image's Python
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


def secret_values(sources: dict[str, str], target: str) -> dict[str, str]:
    """The values of the secrets (name -> source) that the submitter reads, checked for ``target``."""
    from ..secrets import check_target, refs_of, resolve

    refs = refs_of(sources)
    check_target(refs, target)
    return resolve(refs)
