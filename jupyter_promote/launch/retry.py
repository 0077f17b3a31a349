"""Attempts: a job the infrastructure failed is started again, the notebook's own failures never are.

Anchors: Metaflow's ``@retry``, Kubernetes' pod failure policies, SkyPilot's managed jobs. A job asks for
``--retries N`` (``retries`` in a request): when it ends for a reason of :data:`RETRIED` (its pod evicted, its
Slurm job preempted or its node lost, the target not answering past its patience, its runner gone without a
word), and attempts are left, the job is not over: an ``attempt`` event (signed by its submitter, as a final
status is) starts it again in the same run directory after a back-off, and the target is given it once more.
The notebook's own errors, NaN, a time limit, an OOM kill and a cancel end the job as they always did.

Where the target reruns the job itself (a Slurm job requeued: ``scontrol requeue``, a node failure), the
same job id runs again and the runner numbers the attempt (``SLURM_RESTART_COUNT``); nothing is resubmitted.

A notebook that saves to :func:`jupyter_promote.checkpoint_dir` resumes from its last checkpoint: the folder
is the run directory's ``checkpoints/``, which every attempt on a target that shares the run directory sees;
its runner says in an alert whether the attempt found a checkpoint to resume from.
"""

from __future__ import annotations

from ..events import JobView
from ..models import JobRecord

#: Why a job may be started again: the infrastructure's failures, each in words.
RETRIED = {
    "preempted": "preempted by the scheduler",
    "evicted": "its pod was evicted",
    "node_fail": "its node failed",
    "lost": "lost by its target (it stopped answering, or the job ended without a word)",
    "interrupted": "its runner was stopped from outside, not by a cancel",
}
#: The most attempts after the first a job may ask for.
MAX_RETRIES = 10
#: The longest wait before an attempt (seconds).
MAX_DELAY_S = 300.0


def retried(record: JobRecord, view: JobView, cancelled: bool) -> bool:
    """Whether the job that ended as ``view`` says is started again."""
    return (
        not cancelled
        and view.state.final
        and view.reason in RETRIED
        and record.attempt <= min(record.retries, MAX_RETRIES)
    )


def delay(attempt: int, base_s: float) -> float:
    """Seconds before attempt ``attempt`` (2, 3, ...): ``base_s``, doubled each time, at most :data:`MAX_DELAY_S`."""
    return float(min(MAX_DELAY_S, base_s * 2.0 ** max(0, attempt - 2)))


def attempt_message(record: JobRecord, view: JobView, after_s: float) -> str:
    """The attempt event's words: which attempt of how many, after how long, and why."""
    why = view.message or RETRIED.get(view.reason or "", view.reason or "")
    return f"attempt {record.attempt + 1} of {record.retries + 1} in {after_s:g} s: {why}"
