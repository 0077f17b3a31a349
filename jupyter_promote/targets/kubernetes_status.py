"""A Kubernetes Job and its pod, read as a :class:`~jupyter_promote.targets.base.TargetStatus`.

No pod yet, or a pod waiting for a node -> queued (with the scheduler's reason); running -> running; ended
-> the runner's own final event, else the container's exit code (``OOMKilled`` -> ``oom``, an eviction ->
``killed``, ``DeadlineExceeded`` -> ``timeout``); a Job the cluster does not know -> ``lost``
(``cancelled`` after a cancel). Pure functions over the client's objects: no API calls.
"""

from __future__ import annotations

from typing import Any

from ..models import JobState
from .base import TargetStatus, memory_text

#: Waiting reasons after which a pod never starts by itself.
STUCK_REASONS = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)


def container_state(pod: Any) -> tuple[Any, Any]:
    """The job container's ``waiting`` and ``terminated`` states (None each when not so)."""
    if pod is None:
        return None, None
    for status in pod.status.container_statuses or []:
        if status.state is not None:
            return status.state.waiting, status.state.terminated
    return None, None


def ended_conditions(job: Any) -> dict[str, Any]:
    """The Job's true conditions by type (``Complete``, ``Failed``, ...)."""
    return {c.type: c for c in (job.status.conditions or []) if c.status == "True"}


def lost_status(handle: dict[str, Any]) -> TargetStatus:
    """The Job is gone from the cluster: cancelled when we deleted it, else lost."""
    if handle.get("cancelled"):
        return TargetStatus(JobState.CANCELLED, "cancelled", "cancelled (the Job was deleted)")
    return TargetStatus(
        JobState.FAILED,
        "lost",
        f"the Kubernetes cluster has no Job {handle['job']} in namespace {handle['namespace']} "
        "(deleted, or the cluster forgot it)",
    )


def stuck_message(waiting: Any) -> str | None:
    """Why the pod cannot start by itself (its waiting message, else its reason); None when it is not stuck."""
    if waiting is None or waiting.reason not in STUCK_REASONS:
        return None
    return (waiting.message or "").strip().splitlines()[0][:300] if waiting.message else str(waiting.reason)


def not_started_status(pod: Any, waiting: Any) -> TargetStatus:
    """A Job that has not ended and is not stuck: queued while its pod is pending, else running."""
    if pod is None or pod.status.phase == "Pending":
        conditions = (pod.status.conditions or []) if pod is not None else []
        scheduled = next((c for c in conditions if c.type == "PodScheduled"), None)
        if scheduled is not None and scheduled.status == "False":
            return TargetStatus(JobState.QUEUED, scheduled.reason or "pending", scheduled.message)
        return TargetStatus(JobState.QUEUED, "pending", waiting.reason if waiting is not None else None)
    return TargetStatus(JobState.RUNNING)


def ended_status(pod: Any, terminated: Any, failed: Any, handle: dict[str, Any]) -> TargetStatus:
    """How a Job whose pod ended did: ``failed`` is its ``Failed`` condition (None when it has none)."""
    code = terminated.exit_code if terminated is not None else None
    if pod is not None and pod.status.reason == "Evicted":  # the node took its resources back
        message = f"evicted: {pod.status.message or 'by the node'}"
        return TargetStatus(JobState.FAILED, "evicted", message, exit_code=code, overrides=True)
    if terminated is not None and terminated.reason == "OOMKilled":
        limit = handle.get("memory")
        message = (
            f"out of memory: the container hit its {memory_text(limit, 'i')} limit"
            if limit
            else "out of memory (OOMKilled)"
        )
        return TargetStatus(JobState.FAILED, "oom", message, exit_code=code, overrides=True)
    if handle.get("cancelled"):
        return TargetStatus(JobState.CANCELLED, "cancelled", "cancelled", exit_code=code)
    if failed is not None and failed.reason == "DeadlineExceeded":
        message = f"the Job's deadline passed: {failed.message}"
        return TargetStatus(JobState.FAILED, "timeout", message, exit_code=code)
    return TargetStatus(None, message=failed.message if failed is not None else None, exit_code=code)


def evicted_status(seen: str | None, handle: dict[str, Any], job: Any, pod: Any) -> TargetStatus | None:
    """The pod that ran (uid ``seen``) deleted while its Job was not: evicted (the Eviction API, a drain, a
    preemption). Its runner heard SIGTERM and said "cancelled", but nobody cancelled the job; and the Job
    controller would start a replacement pod, which is not how the job's attempts go (``--retries``)."""
    if seen is None or handle.get("cancelled") or job.metadata.deletion_timestamp is not None:
        return None
    if pod is not None and pod.metadata.uid == seen and pod.metadata.deletion_timestamp is None:
        return None
    message = "its pod was deleted while it ran, its Job was not (evicted, drained or preempted)"
    return TargetStatus(JobState.FAILED, "evicted", message, overrides=True)
