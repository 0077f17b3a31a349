"""The runner's side of attempts (:mod:`jupyter_promote.launch.retry`): which attempt this is, the folder
that lets it resume, and telling a Slurm requeue from a cancel.

- The attempt is job.json's (the submitter counts the attempts it makes) plus, on Slurm, the times Slurm
  itself ran the same job again (``SLURM_RESTART_COUNT``: ``scontrol requeue``, a preemption, a node
  failure). A Slurm restart is announced by the runner with an ``attempt`` event; one past ``--retries``
  ends the job as ``failed``/``preempted`` without running the notebook again.
- ``PROMOTE_CHECKPOINT_DIR`` (unless the target named a volume): the run directory's ``checkpoints/``; an
  attempt after the first says whether it found anything there to resume from.
- SIGTERM stops the job as a cancel does; but when Slurm sends it to requeue the job (its restart count has
  grown), the attempt ends ``queued``/``requeued`` instead, and Slurm runs the job again.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.checkpoints import ATTEMPT_ENV, CHECKPOINT_ENV
from ..runtime.events import EventLog


def _slurm_restarts() -> int:
    try:
        return max(0, int(os.environ.get("SLURM_RESTART_COUNT") or 0))
    except ValueError:
        return 0


def begin(run: RunDir, record: JobRecord, log: EventLog) -> str | None:
    """Set the attempt's variables for the kernel and say how it starts; a reason to end the job at once
    (a Slurm restart past ``--retries``), else None."""
    restarts = _slurm_restarts()
    number = record.attempt + restarts
    os.environ[ATTEMPT_ENV] = str(number)
    folder = Path(os.environ.setdefault(CHECKPOINT_ENV, str(run.path / "checkpoints")))
    folder.mkdir(parents=True, exist_ok=True)
    if restarts:
        message = f"attempt {number}: Slurm ran the job again (restart {restarts})"
        log.emit("attempt", number=number, reason="requeued", message=message, source="runner")
        if restarts > record.retries:
            return f"requeued by Slurm {restarts} time(s), more than --retries {record.retries}"
    return None


def say_how_it_starts(log: EventLog) -> None:
    """An attempt after the first says whether it resumes (its checkpoint folder holds what an earlier one
    saved: on the run directory, a volume, or read back from the store) or restarts from the top."""
    number = int(os.environ.get(ATTEMPT_ENV, "1"))
    if number <= 1:
        return
    kept = sum(1 for path in Path(os.environ[CHECKPOINT_ENV]).rglob("*") if path.is_file())
    if kept:
        text = f"attempt {number} resumes: the checkpoint folder holds {kept} file(s) from an earlier attempt"
        log.emit("alert", kind="resumed", action="alert", source="runner", files=kept, message=text)
    else:
        text = f"attempt {number} restarts from the top: no checkpoint was saved (promote.checkpoint_dir())"
        log.emit("alert", kind="restarted", action="alert", source="runner", message=text)


def requeued_by_slurm(timeout: float = 10.0) -> bool:
    """Whether Slurm is requeueing this job (a SIGTERM for a requeue, not a cancel): its restart count has
    grown past this run's."""
    job = os.environ.get("SLURM_JOB_ID")
    if not job:
        return False
    try:
        shown = subprocess.run(
            ["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=timeout, check=False
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    found = re.search(r"\bRestarts=(\d+)", shown)
    return found is not None and int(found.group(1)) > _slurm_restarts()
