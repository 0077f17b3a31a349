"""Which server follows which job (see :mod:`..lease`): claimed by the server that starts it, adopted
atomically by one server when its follower is gone."""

from __future__ import annotations

from typing import Any


def claim(db: Any, job_id: str, server: str) -> None:
    """``server`` follows this job from now on, in the transaction ``db`` is in."""
    from sqlalchemy import text

    db.execute(
        text(
            "INSERT INTO followers (job, server) VALUES (:job, :server) "
            "ON CONFLICT (job) DO UPDATE SET server = excluded.server"
        ),
        {"job": job_id, "server": server},
    )


def adopt(db: Any, job_id: str, server: str, previous: str | None) -> bool:
    """Take the job over from ``previous`` (None: nobody claimed it) in one statement: of two servers that
    try at once, exactly one does."""
    from sqlalchemy import text

    if previous is None:
        sql = "INSERT INTO followers (job, server) VALUES (:job, :server) ON CONFLICT (job) DO NOTHING"
    else:
        sql = "UPDATE followers SET server = :server WHERE job = :job AND server = :previous"
    result = db.execute(text(sql), {"job": job_id, "server": server, "previous": previous})
    return int(result.rowcount) == 1
