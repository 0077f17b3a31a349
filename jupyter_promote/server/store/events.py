"""A job's events in the store: each stored once (primary key ``(job, seq)``), its status events also kept as
state transitions; read back by seq."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

#: Events per INSERT statement (SQLite allows 32766 bound values; three per event).
EVENTS_PER_INSERT = 500


def event_text(event: dict[str, Any]) -> str:
    """The JSON text of an event: the line it was read from when there is one (no second encoding)."""
    return getattr(event, "text", None) or json.dumps(event, separators=(",", ":"), allow_nan=False)


def insert_events(db: Any, job_id: str, events: Iterable[dict[str, Any]], returning: bool) -> list[dict[str, Any]]:
    """Insert the events not stored yet (one statement per few hundred, ``returning``: the database runs
    ``INSERT ... RETURNING``), and the transitions of the new status events, in the transaction ``db`` is in;
    the new events, in the given order."""
    from sqlalchemy import text

    events = list(events)
    new: list[dict[str, Any]] = []
    for start in range(0, len(events), EVENTS_PER_INSERT):
        chunk = events[start : start + EVENTS_PER_INSERT]
        new += _insert_returning(db, job_id, chunk) if returning else _insert_one_by_one(db, job_id, chunk)
    transitions = [
        {"job": job_id, "seq": int(e["seq"]), "state": e["state"], "reason": e.get("reason"), "ts": e.get("ts")}
        for e in new
        if e.get("type") == "status"
    ]
    if transitions:
        db.execute(
            text(
                "INSERT INTO transitions (job, seq, state, reason, ts) VALUES (:job, :seq, :state, :reason, :ts) "
                "ON CONFLICT (job, seq) DO NOTHING"
            ),
            transitions,
        )
    return new


def _insert_returning(db: Any, job_id: str, chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from sqlalchemy import text

    values = ", ".join(f"(:job, :s{i}, :b{i})" for i in range(len(chunk)))
    params: dict[str, Any] = {"job": job_id}
    for i, event in enumerate(chunk):
        params[f"s{i}"], params[f"b{i}"] = int(event["seq"]), event_text(event)
    result = db.execute(
        text(f"INSERT INTO events (job, seq, body) VALUES {values} ON CONFLICT (job, seq) DO NOTHING RETURNING seq"),
        params,
    )
    inserted = {int(row[0]) for row in result.fetchall()}
    return [e for e in chunk if int(e["seq"]) in inserted]


def _insert_one_by_one(db: Any, job_id: str, chunk: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An SQLite older than 3.35 (no RETURNING): one statement per event."""
    from sqlalchemy import text

    new = []
    for event in chunk:
        result = db.execute(
            text("INSERT INTO events (job, seq, body) VALUES (:job, :seq, :body) ON CONFLICT DO NOTHING"),
            {"job": job_id, "seq": int(event["seq"]), "body": event_text(event)},
        )
        if result.rowcount:
            new.append(event)
    return new
