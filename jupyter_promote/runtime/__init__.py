"""The in-job runtime: what the injected cells call inside the job's kernel.

Standard library only; torch and pynvml are used when the notebook's environment has them.
Environment variables set by the runner:

``PROMOTE_EVENTS``   the events file (default: ``events.jsonl`` in ``PROMOTE_RUN_DIR``, else the cwd)
``PROMOTE_RUN_DIR``  the job's run directory (stack dumps go there)
``PROMOTE_JOB_ID``   the job id written into every event
"""

from __future__ import annotations

import os
import sys
import uuid
from dataclasses import dataclass
from typing import Any

from .checks import MonitorAbort, NonFiniteError, StallError
from .determinism import enable_determinism, seed_everything
from .events import EventLog
from .monitor import Monitor

__all__ = ["MonitorAbort", "NonFiniteError", "StallError", "current_job", "finish", "seed", "setup"]


@dataclass
class _Job:
    id: str
    run_dir: str
    log: EventLog
    monitor: Monitor


_job: _Job | None = None
_deterministic = False
#: The seed of a ``--deterministic`` job whose notebook has no ``seed`` parameter.
DEFAULT_SEED = 0


def current_job() -> _Job | None:
    """The job this kernel runs, or None in an interactive session."""
    return _job


def setup(monitor: dict[str, Any] | None = None, deterministic: bool = False, seed: Any = None) -> None:
    """Start monitoring this kernel as a job (idempotent); called by the injected setup cell."""
    global _job
    if _job is not None:
        return
    run_dir = os.environ.get("PROMOTE_RUN_DIR") or os.getcwd()
    events = os.environ.get("PROMOTE_EVENTS") or os.path.join(run_dir, "events.jsonl")
    job_id = os.environ.get("PROMOTE_JOB_ID") or f"papermill-{uuid.uuid4().hex[:12]}"
    log = EventLog(events, job_id)
    global _deterministic
    _deterministic = deterministic
    if deterministic:
        enable_determinism(log)
    if seed is not None or deterministic:
        seed_everything(DEFAULT_SEED if seed is None else seed)  # the seed parameter, once known, re-seeds
    mon = Monitor(log, monitor or {}, run_dir)
    _job = _Job(job_id, run_dir, log, mon)
    log.emit("heartbeat", pid=os.getpid(), steps=0, busy=True, python=sys.version.split()[0], started=True)
    mon.start()


def seed(value: Any) -> None:
    """Seed the generators from the job's ``seed`` parameter (with ``--deterministic`` and no such parameter:
    DEFAULT_SEED); called by the injected cell after the parameters."""
    if value is not None:
        seed_everything(value)
    elif _deterministic:
        seed_everything(DEFAULT_SEED)


def finish() -> None:
    """Flush the monitor; called by the injected last cell."""
    global _job
    if _job is None:
        return
    _job.monitor.stop()
    from .observed import torch_settings

    # the torch settings in force, for the runner's record of what the job ran with (observed_env.json)
    _job.log.emit(
        "heartbeat", pid=os.getpid(), steps=_job.monitor.steps, busy=False, finished=True, torch=torch_settings()
    )
    _job = None
