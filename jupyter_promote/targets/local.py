"""The ``local`` target: the runner in a subprocess on this machine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from typing import Any, ClassVar

import psutil
from traitlets import Float, Int, Unicode

from ..models import JobRecord, JobState
from ..processes import STARTED_KEY, alive, start_of, start_time
from ..rundir import RunDir
from ..runtime.checkpoints import ATTEMPT_ENV, CHECKPOINT_ENV
from ..runtime.inputs import DATA_ENV, STORAGE_OPTIONS_ENV
from ..runtime.masking import NAMES_ENV
from ..secrets import job_environment, read_node_files
from .base import Target, TargetStatus

log = logging.getLogger("jupyter_promote")
#: What a job runner's command line holds (``python -m jupyter_promote.execute.runner RUN_DIR``).
RUNNER_MODULE = "jupyter_promote.execute.runner"


def runner_of_this_user(pid: int) -> bool:
    """Whether ``pid`` is a job runner of this process's user: a handle this server did not make (a job followed
    again, from a record someone else may have written) never makes it watch or signal another process."""
    try:
        process = psutil.Process(pid)
        return process.uids().effective == os.geteuid() and RUNNER_MODULE in process.cmdline()
    except psutil.Error:
        return False


def usable_cpus() -> list[int]:
    """The CPUs this process may run on: its affinity on Linux, every CPU where there is none (macOS)."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


#: The variables a runner sets for its own job, never inherited by another job.
_JOB_OWN = (CHECKPOINT_ENV, ATTEMPT_ENV, DATA_ENV, STORAGE_OPTIONS_ENV, NAMES_ENV)


class LocalTarget(Target):
    """Runs the job on this machine, in its own session, with the notebook kernel's own interpreter."""

    name: ClassVar[str] = "local"
    display_name: ClassVar[str] = "This machine (local)"
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "pins the job to N CPUs (sched_setaffinity, on Linux) and sets OMP_NUM_THREADS",
        "gpus": "sets CUDA_VISIBLE_DEVICES to the first N GPUs",
        "time": "wall-clock limit enforced by the runner",
    }

    python = Unicode(
        sys.executable, help="Interpreter that runs the job runner (papermill); the kernel keeps its own."
    ).tag(config=True)
    kill_grace = Float(10.0, help="Seconds between SIGTERM and SIGKILL when a job is cancelled.").tag(config=True)
    nice = Int(
        0,
        help="Niceness added to the job's processes, so a busy job leaves this machine's Jupyter server and "
        "notebooks responsive (0: the job competes as an equal).",
    ).tag(config=True)

    def default_max_parallel(self) -> int | None:
        """This machine's usable CPUs: a 10,000-task sweep does not start 10,000 kernels at once."""
        return len(usable_cpus())

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._exit_codes: dict[int, int] = {}  # of the runners that ended, once reaped
        self._cancelled: set[int] = set()

    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        # this process's environment, less what a job's runner sets for its own job (a job started from inside
        # another must not find that job's checkpoints, inputs or secrets' names)
        env = {k: v for k, v in os.environ.items() if not k.startswith(_JOB_OWN)}
        # the job's secrets, node files included (this machine is the node): in the runner's environment only
        env.update(job_environment(record.secrets, {**(secrets or {}), **read_node_files(record.secrets)}))
        cpus = record.resources.cpus
        if cpus:
            env["OMP_NUM_THREADS"] = str(cpus)
        if record.resources.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(record.resources.gpus))
        usable = usable_cpus()

        nice = self.nice

        def before_exec() -> None:  # runs in the child
            if cpus and hasattr(os, "sched_setaffinity"):  # Linux; macOS has no CPU pinning
                os.sched_setaffinity(0, usable[: max(1, min(cpus, len(usable)))])
            if nice:
                os.nice(nice)

        with open(run.log, "ab") as log:
            proc = subprocess.Popen(
                [self.python, "-m", "jupyter_promote.execute.runner", str(run.path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(run.path),
                start_new_session=True,
                # affinity and niceness must be set in the child before exec; it calls nothing that takes a lock
                preexec_fn=before_exec if cpus or nice else None,  # noqa: PLW1509
            )
        self._children[proc.pid] = proc
        return {"pid": proc.pid, STARTED_KEY: start_time(proc.pid)}

    def _exit_code(self, handle: dict[str, Any]) -> tuple[bool, int | None]:
        """(still running, exit code when known)."""
        pid = int(handle["pid"])
        child = self._children.get(pid)
        if child is not None:
            code = child.poll()  # reaps it once it has ended: no zombie runners
            if code is not None:
                self._exit_codes[pid] = code
                del self._children[pid]
            return code is None, code
        if pid in self._exit_codes:
            return False, self._exit_codes[pid]
        return alive(pid, start_of(handle)) and runner_of_this_user(pid), None

    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        statuses = {}
        for job_id, handle in handles.items():
            running, code = self._exit_code(handle)
            if running:
                statuses[job_id] = TargetStatus(JobState.RUNNING)
            elif int(handle["pid"]) in self._cancelled:
                statuses[job_id] = TargetStatus(JobState.CANCELLED, "cancelled", "cancelled", exit_code=code)
            elif code is not None and code < 0:
                name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else str(-code)
                # from outside, not by a cancel (a shutdown, a kill): the infrastructure's, retried with --retries
                statuses[job_id] = TargetStatus(
                    JobState.FAILED, "interrupted", f"the job runner was killed by {name}", exit_code=code
                )
            else:  # ended: the runner's final status event says how; None state asks the events
                statuses[job_id] = TargetStatus(None, exit_code=code)
        return statuses

    async def cancel(self, handle: dict[str, Any]) -> None:
        pid = int(handle["pid"])
        if pid not in self._children and alive(pid, start_of(handle)) and not runner_of_this_user(pid):
            log.warning("jupyter-promote: pid %d is not a job runner of this user; not signalled", pid)
            return
        running, _ = self._exit_code(handle)
        if not running:
            return
        self._cancelled.add(pid)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        waited = 0.0
        while waited < self.kill_grace:
            await asyncio.sleep(0.1)
            waited += 0.1
            if not self._exit_code(handle)[0]:
                return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
