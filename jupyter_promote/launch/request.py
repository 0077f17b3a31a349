"""What either door asks for: one job, or a group of jobs (a sweep, replicas and seeds, contention).

The CLI builds a :class:`PromoteRequest` from its arguments, the server from a ``POST jobs`` body; the
group options are checked here once, with the same words and the same field paths for both.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..models import JobRecord, MonitorSettings, Resources
from ..rundir import runs_dir_of

#: The kinds of job groups: a parameter grid or list, identical runs (per seed), the job beside a stress load.
GROUP_KINDS = ("grid", "replicas", "contention")
#: The fields of the JobRequest schema that ask for a group of jobs (:func:`group_request` checks them).
GROUP_FIELDS = ("sweep", "max_parallel", "replicas", "seeds", "contention")


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
class PromoteRequest:
    """One promote, as both doors ask for it."""

    notebook: str
    target: str = "local"
    parameters: dict[str, Any] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    deterministic: bool = False
    out: str | None = None
    image: ImageRequest | None = None  # set for targets whose jobs run in the environment's image
    sweep: dict[str, Any] | None = None  # {"id", "index", "size", "kind"} when the job is one of a group
    kernel: str | None = None  # the kernelspec to run with; None: the notebook's own
    notify: list[str] | None = None  # destinations (c.Notifications) by name; None: the configured defaults
    secrets: dict[str, str] = field(default_factory=dict)  # variable -> source (secrets.py), never a value
    retries: int = 0  # attempts after the first for infrastructure failures (retry.py)
    data: dict[str, str] = field(default_factory=dict)  # input name -> URL on storage the cluster reads
    owner: str = ""  # who asks: the server's current user; empty: this process's login name
    #: the JobRequest this was made from, as job.json keeps it (see launch/body.py); empty when built by hand
    body: dict[str, Any] = field(default_factory=dict)
    schedule: str = ""  # the id of the schedule that fires it (jupyter_promote/schedule); empty: asked by hand
    folder: str = ""  # where its inputs are, when not beside the notebook (a schedule's frozen copy): JobRecord


def job_body(body: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    """The JobRequest of one job of ``body``: without the group's options, with the job's own ``parameters``
    (a sweep's set merged over the request's), so that rerunning one job of a group runs that job again.
    Empty when ``body`` is (a request built by hand)."""
    if not body:
        return {}
    return {**{k: v for k, v in body.items() if k not in GROUP_FIELDS}, "parameters": dict(parameters)}


def job_record(request: PromoteRequest, job_id: str, **resolved: Any) -> JobRecord:
    """The record (job.json) of a new job of ``request``, pending: what it asks for, field for field, and
    the request itself; ``resolved`` overrides what preparing it decided (the kernel, the owner, ...)."""
    asked: dict[str, Any] = {
        "notebook": request.notebook,
        "target": request.target,
        "kernel": request.kernel or "",
        "parameters": request.parameters,
        "resources": request.resources,
        "monitor": request.monitor,
        "deterministic": request.deterministic,
        "sweep": request.sweep,
        "notify": list(request.notify or []),
        "secrets": dict(request.secrets),
        "retries": request.retries,
        "data": dict(request.data),
        "owner": request.owner,
        "schedule": request.schedule,
        "folder": request.folder,
        "request": job_body(request.body, request.parameters),
        "created_at": round(time.time(), 3),
    }
    return JobRecord(id=job_id, **{**asked, **resolved})


@dataclass
class GroupRequest:
    """Several jobs of one notebook: a sweep's parameter sets, replicas per seed, or contention."""

    kind: str
    sets: list[dict[str, Any]] = field(default_factory=list)  # merged over the request's own parameters
    max_parallel: int | None = None
    contention: str | None = None  # the stress spec ("cpu:4", "memory:1G", "gpu") of a contention group


def member(group_id: str, index: int, size: int, kind: str) -> dict[str, Any]:
    """A job's ``sweep`` field: which group it belongs to; ``kind`` only when it is not a plain sweep."""
    return {"id": group_id, "index": index, "size": size, **({"kind": kind} if kind != "grid" else {})}


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


def new_group_id() -> str:
    return "s" + new_job_id()


def default_run_dir(runs_dir: str, notebook: str, job_id: str, kind: str = "", owner: str = "") -> Path:
    stem = Path(notebook).stem.replace(" ", "_")
    middle = f"-{kind}" if kind else ""
    return Path(runs_dir_of(runs_dir, owner)) / f"{stem}{middle}-{time.strftime('%Y%m%d-%H%M%S')}-{job_id[:6]}"


def _whole(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise UsageError(f"{name}: {value!r} must be a whole number of at least {minimum}", subject=name, field=name)
    return value


def group_request(
    sets: list[dict[str, Any]] | None = None,
    max_parallel: Any = None,
    replicas: Any = None,
    seeds: Any = None,
    contention: Any = None,
) -> GroupRequest | None:
    """The group a request asks for (None for one job), its options checked: one kind at a time.

    ``replicas`` N and ``seeds`` [S...] give N identical runs per seed (a ``seed`` parameter each);
    ``contention`` runs the job alone, then beside a stress workload.
    """
    options = (("sweep", sets), ("replicas", replicas), ("seeds", seeds), ("contention", contention))
    given = [name for name, value in options if value is not None]
    if max_parallel is not None:
        _whole(max_parallel, "max_parallel", 1)
        if sets is None:
            raise UsageError("max_parallel: only applies to a sweep", subject="max_parallel", field="max_parallel")
    if "contention" in given and len(given) > 1:
        other = next(g for g in given if g != "contention")
        raise UsageError(f"contention with {other}: one at a time", subject="contention", field="contention")
    if "sweep" in given and len(given) > 1:
        other = next(g for g in given if g != "sweep")
        raise UsageError(f"{other} with a sweep: one at a time", subject=other, field=other)
    if contention is not None:
        from ..analysis.contention import Stress

        if not isinstance(contention, str):
            message = "contention: must be a string like cpu:4, memory:1G or gpu"
            raise UsageError(message, subject="contention", field="contention")
        try:
            Stress.parse(contention)
        except UsageError as exc:
            raise UsageError(exc.message, subject="contention", field="contention") from None
        return GroupRequest("contention", [{}, {}], contention=contention)
    if sets is not None:
        return GroupRequest("grid", sets, max_parallel)
    if replicas is None and seeds is None:
        return None
    count = 1 if replicas is None else _whole(replicas, "replicas", 1)
    if seeds is not None:
        if not isinstance(seeds, list) or not seeds:
            raise UsageError("seeds: must be a list of whole numbers", subject="seeds", field="seeds")
        for seed in seeds:
            if isinstance(seed, bool) or not isinstance(seed, int):
                raise UsageError(f"seeds: {seed!r} is not a whole number", subject="seeds", field="seeds")
    runs = [{"seed": s} for s in seeds] if seeds is not None else [{}]
    from ..job.sweep import MAX_SWEEP_SIZE

    if len(runs) * count > MAX_SWEEP_SIZE:
        message = f"replicas: {len(runs) * count} runs is more than {MAX_SWEEP_SIZE}"
        raise UsageError(message, subject="replicas", field="replicas")
    return GroupRequest("replicas", [dict(run) for run in runs for _ in range(count)])
