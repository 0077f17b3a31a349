"""A schedule: a stored job request (the JobRequest of ``server/openapi.yaml``, as job.json keeps one), a cron
expression and a time zone, and what the server does about runs it missed, runs that overlap and the
environment. Due times are whole seconds since the epoch; the next ones come from croniter in the schedule's
time zone (daylight-saving changes as croniter handles them).
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import PromoteError, UsageError

#: What a server that was down does about the due times it missed: run the latest once, every one, or none.
MISSED_POLICIES = ("latest", "all", "skip")
#: What a due time does while the schedule's previous run is still going: skipped, queued until it ends, run.
OVERLAP_POLICIES = ("skip", "queue", "allow")
#: ``once``: the notebook as it was when the schedule was created runs each time; ``each_run``: as it is then.
FREEZE_MODES = ("once", "each_run")
#: The most due times one look back reads (a schedule each minute, a server down for weeks).
MAX_LOOKBACK = 10000


class ScheduleNotFound(PromoteError):
    """A schedule id or name that this store does not hold."""

    http_status = 404


class ScheduleExists(PromoteError):
    """A schedule's name that another schedule has."""

    http_status = 409


@dataclass
class Schedule:
    """One schedule as the store keeps it (see the ``schedules`` table, migration 0003)."""

    id: str
    name: str
    notebook: str
    request: dict[str, Any]
    cron: str
    timezone: str = "UTC"
    paused: bool = False
    missed: str = "latest"
    overlap: str = "skip"
    freeze: str = "once"
    frozen: dict[str, Any] = field(default_factory=dict)  # once: {notebook_sha256, frozen_at, environment}
    created_at: float = 0.0
    next_due: int | None = None
    last_fired: int = 0  # the latest due time claimed (fired, skipped or queued); created_at at first
    queued: int | None = None  # a due time waiting for the running job to end (overlap: queue)
    run_now: int | None = None  # asked to run now by the command line; the server fires it on its next tick
    skipped: int = 0  # due times skipped because a run was still going (overlap: skip)
    last_job: str | None = None
    note: str = ""  # the last thing the scheduler said about it (missed runs, a skipped due time, a failure)
    owner: str = ""

    def to_json(self) -> dict[str, Any]:
        """The API's view: every field, the due times also as ISO 8601 in the schedule's time zone."""
        data = dataclasses.asdict(self)
        data["next_due_at"] = iso(self.next_due, self.timezone)
        data["last_fired_at"] = iso(self.last_fired, self.timezone) if self.last_fired else None
        return data


def new_schedule_id() -> str:
    return uuid.uuid4().hex[:12]


def zone(name: Any) -> zoneinfo.ZoneInfo:
    """The time zone ``name`` (IANA, such as ``Europe/Berlin``), or a one-line error."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError(
            "timezone: must be a time zone name such as Europe/Berlin", subject="timezone", field="timezone"
        )
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise UsageError(f"timezone {name!r}: unknown time zone", subject=name, field="timezone") from None


def check_cron(expression: Any) -> str:
    """``expression`` when croniter reads it as five fields (minute hour day month weekday), else an error."""
    from croniter import CroniterBadDateError, croniter

    if not isinstance(expression, str) or len(expression.split()) != 5 or not croniter.is_valid(expression):
        shown = expression if isinstance(expression, str) else repr(expression)
        message = f"cron {shown!r}: not a cron expression (five fields: minute hour day month weekday)"
        raise UsageError(message, subject=str(shown), field="cron")
    try:
        croniter(expression, datetime.datetime(2000, 1, 1)).get_next(datetime.datetime)
    except CroniterBadDateError:
        message = (
            f"cron {expression!r}: never matches a date (day {expression.split()[2]} of month {expression.split()[3]})"
        )
        raise UsageError(message, subject=expression, field="cron") from None
    return expression


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise UsageError(f"{name} {value!r}: must be one of {', '.join(choices)}", subject=str(value), field=name)
    return str(value)


def due_after(cron: str, timezone: str, after: float, count: int = 1) -> list[int]:
    """The ``count`` due times strictly after ``after`` (epoch seconds)."""
    times = _due_times(cron, timezone, after)
    return [next(times) for _ in range(count)]


def due_between(cron: str, timezone: str, after: float, until: float) -> list[int]:
    """The due times in ``(after, until]``, oldest first (at most :data:`MAX_LOOKBACK`, the latest ones)."""
    found: list[int] = []
    for due in _due_times(cron, timezone, after):
        if due > until:
            return found
        found.append(due)
        if len(found) > MAX_LOOKBACK:
            del found[0]
    return found


def _due_times(cron: str, timezone: str, after: float) -> Iterator[int]:
    """The due times after ``after``, as cron means them: wall-clock times of ``timezone``. croniter steps
    through naive local times (given an aware start it steps in fixed offsets, and a daily 12:00 runs at 11:00
    and again at 12:00 on the day the clocks go forward); each is then placed in the zone as zoneinfo does
    with ``fold=0``: a time the spring-forward skips (02:30 in Berlin) runs that much later (03:30 summer
    time), a time the fall-back repeats runs once, at its first occurrence."""
    from croniter import croniter

    tz = zone(timezone)
    start = datetime.datetime.fromtimestamp(after, tz).replace(tzinfo=None)
    for local in croniter(cron, start).all_next(datetime.datetime):
        due = int(local.replace(tzinfo=tz).timestamp())
        if due > after:  # a naive start inside the repeated hour is its first occurrence, earlier than after
            yield due


def iso(epoch: float | None, timezone: str) -> str | None:
    """``epoch`` in ``timezone`` as ISO 8601 with its offset (None for None)."""
    if epoch is None:
        return None
    return datetime.datetime.fromtimestamp(epoch, zone(timezone)).isoformat()
