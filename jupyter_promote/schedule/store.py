"""Schedules' rows in the job store's database (the ``schedules`` table, migration 0003), each statement in a
transaction of its own on a connection of its own. Every claim of a due time is one conditional UPDATE
(``... WHERE last_fired = :seen``): of two servers on one store that tick at once, exactly one gets the row.
"""

from __future__ import annotations

import json
from typing import Any

from ..models import FINAL_STATES
from .model import Schedule, ScheduleExists, ScheduleNotFound

#: The columns of a schedule's row, in :class:`Schedule`'s order (``frozen_notebook`` is kept apart; the field
#: ``freeze`` is the column ``freeze_mode``: FREEZE is a reserved word of PostgreSQL).
COLUMNS = (
    "id, name, notebook, request, cron, timezone, paused, missed, overlap, freeze_mode, frozen, created_at, next_due, "
    "last_fired, queued, run_now, skipped, last_job, note, owner"
)

NAMES = tuple(name.strip() for name in COLUMNS.split(","))
FIELD_OF = {"freeze_mode": "freeze"}


class ScheduleStore:
    """The schedules of one server user (``user``) in the database of ``engine`` (a :class:`JobStore`'s)."""

    def __init__(self, engine: Any, user: str) -> None:
        self.engine = engine
        self.user = user

    def _run(self, sql: str, params: dict[str, Any]) -> Any:
        from sqlalchemy import text

        with self.engine.begin() as db:
            result = db.execute(text(sql), {**params, "user": self.user})
            return result.fetchall() if result.returns_rows else int(result.rowcount)

    def add(self, schedule: Schedule, frozen_notebook: str | None) -> None:
        """Insert ``schedule``; a name this user's schedules already have is a :class:`ScheduleExists`, and
        nothing is written."""
        from sqlalchemy.exc import IntegrityError

        row = _row(schedule)
        names = ", ".join(row)
        values = ", ".join(f":{k}" for k in row)
        try:
            self._run(
                f"INSERT INTO schedules ({names}, frozen_notebook, server_user) VALUES ({values}, :fn, :user)",
                {**row, "fn": frozen_notebook},
            )
        except IntegrityError:
            raise ScheduleExists(
                f"schedule name {schedule.name!r}: another schedule has it", subject=schedule.name, field="name"
            ) from None

    def all(self) -> list[Schedule]:
        rows = self._run(f"SELECT {COLUMNS} FROM schedules WHERE server_user = :user ORDER BY created_at", {})
        return [_schedule(r) for r in rows]

    def get(self, key: str) -> Schedule:
        """The schedule whose id, or else name, is ``key``."""
        sql = f"SELECT {COLUMNS} FROM schedules WHERE server_user = :user AND (id = :key OR name = :key)"
        rows = sorted(self._run(sql, {"key": key}), key=lambda r: r[0] != key)  # an id before a name
        if not rows:
            raise ScheduleNotFound(f"schedule {key}: no such schedule", subject=key)
        return _schedule(rows[0])

    def frozen_notebook(self, schedule_id: str) -> str | None:
        rows = self._run(
            "SELECT frozen_notebook FROM schedules WHERE id = :id AND server_user = :user", {"id": schedule_id}
        )
        return str(rows[0][0]) if rows and rows[0][0] is not None else None

    def update(self, schedule_id: str, **fields: Any) -> None:
        """Set some columns of one schedule (paused, cron, timezone, policies, next_due, note, ...)."""
        sets = ", ".join(f"{k} = :{k}" for k in fields)
        self._run(f"UPDATE schedules SET {sets} WHERE id = :id AND server_user = :user", {**fields, "id": schedule_id})

    def delete(self, schedule_id: str) -> bool:
        return bool(self._run("DELETE FROM schedules WHERE id = :id AND server_user = :user", {"id": schedule_id}))

    def claim(self, schedule_id: str, seen: int, due: int, next_due: int | None) -> bool:
        """Move ``last_fired`` from ``seen`` (what this server read) to ``due``: True for the one server that did."""
        sql = (
            "UPDATE schedules SET last_fired = :due, next_due = :next WHERE id = :id AND server_user = :user "
            "AND last_fired = :seen AND paused = :no"
        )
        params = {"id": schedule_id, "seen": seen, "due": due, "next": next_due, "no": False}
        return bool(self._run(sql, params) == 1)

    def take(self, schedule_id: str, column: str, seen: int) -> bool:
        """Clear ``queued`` or ``run_now`` if it still is ``seen``: True for the one server that did."""
        assert column in ("queued", "run_now")
        sql = f"UPDATE schedules SET {column} = NULL WHERE id = :id AND server_user = :user AND {column} = :seen"
        return bool(self._run(sql, {"id": schedule_id, "seen": seen}) == 1)

    def skipped_one(self, schedule_id: str, note: str) -> None:
        sql = "UPDATE schedules SET skipped = skipped + 1, note = :note WHERE id = :id AND server_user = :user"
        self._run(sql, {"id": schedule_id, "note": note})

    def running_jobs(self, schedule_id: str) -> int:
        """How many jobs this schedule fired have not ended."""
        finals = {f"f{i}": s.value for i, s in enumerate(FINAL_STATES)}
        marks = ", ".join(f":{k}" for k in finals)
        sql = f"SELECT COUNT(*) FROM jobs WHERE schedule = :id AND server_user = :user AND state NOT IN ({marks})"
        return int(self._run(sql, {"id": schedule_id, **finals})[0][0])


def _row(schedule: Schedule) -> dict[str, Any]:
    row = {name: getattr(schedule, FIELD_OF.get(name, name)) for name in NAMES}
    row["request"] = json.dumps(schedule.request, sort_keys=True)
    row["frozen"] = json.dumps(schedule.frozen, sort_keys=True)
    return row


def _schedule(row: Any) -> Schedule:
    values = {FIELD_OF.get(name, name): value for name, value in zip(NAMES, row, strict=True)}
    values["request"] = json.loads(values["request"])
    values["frozen"] = json.loads(values["frozen"])
    values["paused"] = bool(values["paused"])
    for name in ("next_due", "last_fired", "queued", "run_now"):
        values[name] = None if values[name] is None else int(values[name])
    values["last_fired"] = values["last_fired"] or 0
    return Schedule(**values)
