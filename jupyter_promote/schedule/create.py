"""A ScheduleRequest body (``server/openapi.yaml``) made into a schedule, at either door: every field checked
before anything is stored (its job request through the one request schema, :func:`request_from_body`), the
notebook frozen when the schedule freezes ``once``. PATCH bodies (ScheduleUpdate) are checked here too.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from ..config import PromoteSettings
from ..errors import UsageError
from ..launch.body import Resolve, check_body, request_from_body
from ..launch.schema import RequestSchema
from .model import Schedule, check_cron, due_after, new_schedule_id, zone


@functools.cache
def schema(name: str) -> RequestSchema:
    """The ScheduleRequest or ScheduleUpdate schema of the REST API's document."""
    return RequestSchema(name=name)


def new_schedule(
    body: Any, resolve: Resolve, settings: PromoteSettings, owner: str, now: float
) -> tuple[Schedule, str | None]:
    """The schedule ``body`` asks for, created at ``now`` (epoch seconds), and the notebook's text when it
    freezes ``once`` (kept in the store beside it); a one-line :class:`UsageError` for anything invalid."""
    valid = schema("ScheduleRequest").validate(check_body(body))
    cron = check_cron(valid["cron"])
    zone(valid["timezone"])
    request, group = request_from_body(valid["request"], resolve, settings)
    if group is not None:
        message = "request: a schedule fires one job (no sweep, replicas, seeds or contention)"
        raise UsageError(message, subject="request", field="request")
    schedule_id = new_schedule_id()
    frozen: dict[str, Any] = {}
    text = None
    if valid["freeze"] == "once":
        text = Path(request.notebook).read_text(encoding="utf-8")
        frozen = {"notebook_sha256": hashlib.sha256(text.encode()).hexdigest(), "frozen_at": now}
        frozen["environment"] = environment_now(request.notebook, request.kernel, settings)
    name = valid.get("name") or f"{Path(request.notebook).stem}-{schedule_id[:6]}"
    schedule = Schedule(
        id=schedule_id,
        name=name,
        notebook=os.path.abspath(request.notebook),
        request=request.body,
        cron=cron,
        timezone=valid["timezone"],
        missed=valid["missed"],
        overlap=valid["overlap"],
        freeze=valid["freeze"],
        frozen=frozen,
        created_at=now,
        next_due=due_after(cron, valid["timezone"], now)[0],
        last_fired=int(now),
        owner=owner,
    )
    return schedule, text


def environment_now(notebook: str, kernel: str | None, settings: PromoteSettings) -> dict[str, Any]:
    """The environment a job of ``notebook`` would be frozen with now, as drift compares it
    (:func:`..launch.history.lock_facts`: the lock's content hash, its Python and packages): the kernel
    chosen as the pipeline chooses it (the one asked for, else the notebook's, else the default Python
    kernel), frozen as each run freezes it (into a folder removed after)."""
    from ..freeze import freeze
    from ..job.notebook import read_notebook
    from ..launch.history import lock_facts
    from ..launch.pipeline import choose_kernel

    _, interpreter, _ = choose_kernel(read_notebook(notebook), notebook, kernel)
    with tempfile.TemporaryDirectory(prefix="promote-schedule-") as folder:
        env = freeze(interpreter, os.path.join(folder, "env"), env_allowlist=tuple(settings.env_allowlist))
    return lock_facts(env.lock) or {}


def changes(body: Any, schedule: Schedule, now: float) -> dict[str, Any]:
    """The columns a ScheduleUpdate ``body`` changes, checked, with the next due time computed again (from
    ``now``) when the cron expression, the time zone or the pause changes."""
    valid = schema("ScheduleUpdate").validate(check_body(body))
    if "cron" in valid:
        check_cron(valid["cron"])
    if "timezone" in valid:
        zone(valid["timezone"])
    if valid.keys() & {"cron", "timezone", "paused"}:
        cron, timezone = valid.get("cron", schedule.cron), valid.get("timezone", schedule.timezone)
        valid["next_due"] = due_after(cron, timezone, now)[0]
    # resumed: what was due while paused is not missed; a new cron or time zone counts from now, never back to
    # the last run under the old one (every due time of the new one since then would read as missed)
    resumed = valid.get("paused") is False and schedule.paused
    retimed = (
        valid.get("cron", schedule.cron) != schedule.cron
        or valid.get("timezone", schedule.timezone) != schedule.timezone
    )
    if resumed or retimed:
        valid["last_fired"] = int(now)
    return valid
