"""What a Slurm job's state means here: one ``squeue`` row -> a :class:`~jupyter_promote.targets.base.TargetStatus`.

Queued and running states keep Slurm's reason (Resources, Priority, ...); a job that ended by itself
(``COMPLETED``) is left to the runner's own final event; the states in which Slurm stopped the job (time
limit, memory, node failure, preemption) override what the runner last said. A pending task of a job array
that ``scancel ARRAY_TASK`` cancels leaves no row at all (Slurm drops it from the array's record): a task
gone while it waited, from an array Slurm still lists, was cancelled (:func:`vanished_status`).
"""

from __future__ import annotations

from ..models import JobState
from .base import TargetStatus

#: Slurm job state -> (our state, our reason, whether Slurm knows better than the runner's last word).
#: ``None`` means "ask the job's events": the runner's final status says how a job that ran ended.
SLURM_STATES: dict[str, tuple[JobState | None, str | None, bool]] = {
    "PENDING": (JobState.QUEUED, None, False),
    "CONFIGURING": (JobState.QUEUED, "configuring", False),
    "REQUEUED": (JobState.QUEUED, "requeued", False),
    "REQUEUE_HOLD": (JobState.QUEUED, "requeued", False),
    "REQUEUE_FED": (JobState.QUEUED, "requeued", False),
    "RESV_DEL_HOLD": (JobState.QUEUED, "held", False),
    "RUNNING": (JobState.RUNNING, None, False),
    "COMPLETING": (JobState.RUNNING, None, False),
    "SUSPENDED": (JobState.RUNNING, "suspended", False),
    "STOPPED": (JobState.RUNNING, "stopped", False),
    "SIGNALING": (JobState.RUNNING, None, False),
    "STAGE_OUT": (JobState.RUNNING, None, False),
    "RESIZING": (JobState.RUNNING, None, False),
    "COMPLETED": (None, None, False),
    "FAILED": (JobState.FAILED, "failed", False),
    "CANCELLED": (JobState.CANCELLED, "cancelled", False),
    "TIMEOUT": (JobState.FAILED, "timeout", True),
    "DEADLINE": (JobState.FAILED, "timeout", True),
    "OUT_OF_MEMORY": (JobState.FAILED, "oom", True),
    "NODE_FAIL": (JobState.FAILED, "node_fail", True),
    "BOOT_FAIL": (JobState.FAILED, "node_fail", True),
    "PREEMPTED": (JobState.FAILED, "preempted", True),
    "REVOKED": (JobState.CANCELLED, "cancelled", True),
}
_MESSAGES = {
    "FAILED": "the batch job failed",
    "CANCELLED": "cancelled in Slurm (scancel)",
    "TIMEOUT": "ran past its time limit (--time) and was stopped by Slurm",
    "DEADLINE": "reached its deadline and was stopped by Slurm",
    "OUT_OF_MEMORY": "ran out of memory (--mem) and was killed by Slurm",
    "NODE_FAIL": "its node failed",
    "BOOT_FAIL": "its node failed to boot",
    "PREEMPTED": "preempted by a higher-priority job",
    "REQUEUED": "requeued by Slurm",
}


def vanished_status(slurm_id: str, last: TargetStatus | None, listed: set[str]) -> TargetStatus:
    """What a job that ``squeue`` no longer lists means, given what it said of the job last and the ids it
    lists now: ended, its final event to come (state ``None``), unless it is a task of an array still listed
    that was last seen waiting (it never ran, so no runner will say how it ended): cancelled. A task never
    seen (a follower started after it went) is left to its events: it may have run and been forgotten.
    """
    array, _, task = slurm_id.partition("_")
    waited = last is not None and last.state is JobState.QUEUED
    if task and waited and any(i == array or i.startswith(f"{array}_") for i in listed):
        return TargetStatus(JobState.CANCELLED, "cancelled", _MESSAGES["CANCELLED"] + " while waiting in the queue")
    return TargetStatus(None)


def slurm_status(state: str, reason: str, exit_code: str = "") -> TargetStatus:
    """One squeue row -> a :class:`TargetStatus`; Slurm's reason (Resources, Priority, ...) is kept."""
    base = state.split(maxsplit=1)[0].rstrip("+")  # "CANCELLED by 0" in some versions
    ours, our_reason, overrides = SLURM_STATES.get(base, (JobState.RUNNING, None, False))
    why = "" if reason in ("", "None", "(null)") else reason
    if ours is JobState.QUEUED:
        message = _MESSAGES.get(base, "waiting in the Slurm queue") + (f" ({why})" if why else "")
        return TargetStatus(JobState.QUEUED, our_reason or (why.lower() or "pending"), message)
    if ours is JobState.RUNNING:
        return TargetStatus(JobState.RUNNING, our_reason, f"{base.lower()} in Slurm" if our_reason else None)
    code = None
    if exit_code and ":" in exit_code:
        code = int(exit_code.split(":", maxsplit=1)[0] or 0)
    if ours is None:
        return TargetStatus(None, exit_code=code)
    message = _MESSAGES.get(base, base.lower()) + (f" ({why})" if why else "")
    return TargetStatus(ours, our_reason, message, exit_code=code, overrides=overrides)
