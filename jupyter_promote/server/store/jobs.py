"""Jobs' rows in the store: a job's record (its ``job.json`` text) and the columns the API filters on, one
row per job; rows read back as records, a row that is no record of its job passed over."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

from ...housekeeping import UNREADABLE
from ...models import FINAL_STATES, JobRecord

log = logging.getLogger("jupyter_promote")
#: The tables that hold a job, each with its column that names the job (the job's own row last).
JOB_TABLES = (("events", "job"), ("transitions", "job"), ("followers", "job"), ("jobs", "id"))


def job_row(record: JobRecord, run_dir: str | None, server_user: str) -> dict[str, Any]:
    """The row of a job's record, kept by ``server_user``'s server."""
    return {
        "id": record.id,
        "run_dir": run_dir,
        "notebook": record.notebook,
        "state": record.state.value,
        "created_at": record.created_at,
        "owner": record.owner,
        "sweep": (record.sweep or {}).get("id"),
        "schedule": record.schedule or None,
        "server_user": server_user,
        "record": json.dumps(record.to_json(), sort_keys=True, allow_nan=False),
    }


def upsert_job(db: Any, row: dict[str, Any]) -> None:
    """Insert or replace a job's row, in the transaction ``db`` is in."""
    from sqlalchemy import text

    db.execute(
        text(
            "INSERT INTO jobs (id, run_dir, notebook, state, created_at, owner, sweep, schedule, server_user, record) "
            "VALUES (:id, :run_dir, :notebook, :state, :created_at, :owner, :sweep, :schedule, :server_user, :record) "
            "ON CONFLICT (id) DO UPDATE SET run_dir = excluded.run_dir, state = excluded.state, "
            "owner = excluded.owner, sweep = excluded.sweep, schedule = excluded.schedule, record = excluded.record"
        ),
        row,
    )


def delete_job(db: Any, job_id: str) -> None:
    """Forget a job: its row, its events, its transitions and its follower, in the transaction ``db`` is in."""
    from sqlalchemy import text

    for table, column in JOB_TABLES:
        db.execute(text(f"DELETE FROM {table} WHERE {column} = :job"), {"job": job_id})


def by_state(final: bool) -> tuple[str, dict[str, Any]]:
    """A WHERE clause (and its parameters) for the rows whose state is final (or not)."""
    finals = {f"final{i}": s.value for i, s in enumerate(FINAL_STATES)}
    marks = ", ".join(f":{name}" for name in finals)
    return f"state {'' if final else 'NOT '}IN ({marks})", finals


def list_page(db: Any, params: dict[str, Any], limit: int, offset: int) -> tuple[list[str], int]:
    """The records (job.json text) of one page of the rows whose columns equal ``params``, newest first, and
    the total that match, in one transaction of ``db``."""
    from sqlalchemy import text

    clause = " WHERE " + " AND ".join(f"{k} = :{k}" for k in params)
    with db.begin():
        total = db.execute(text(f"SELECT COUNT(*) FROM jobs{clause}"), params).scalar_one()
        rows = db.execute(
            text(f"SELECT record FROM jobs{clause} ORDER BY created_at DESC, id LIMIT :limit OFFSET :offset"),
            {**params, "limit": limit, "offset": offset},
        ).fetchall()
    return [r[0] for r in rows], int(total)


def records(rows: Iterable[Any]) -> list[tuple[JobRecord, str | None]]:
    """The records of rows ``(id, record, run_dir)``; a row whose record cannot be read, or is another
    job's (a row written by a bug, or by someone else on a shared database), is said in one line and
    passed over: one bad row never stops a server's start or its retention pass."""
    found = []
    for job_id, record_text, run_dir in rows:
        try:
            record = JobRecord.from_json(json.loads(record_text))
            if record.id != job_id:
                raise ValueError(f"it holds the record of job {str(record.id)[:40]!r}")
        except UNREADABLE as exc:
            why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            log.warning("jupyter-promote: job %s: its row in the job store was passed over: %s", job_id, why)
            continue
        found.append((record, run_dir))
    return found
