"""The server's durable job store, through SQLAlchemy: an SQLite file by default (WAL mode; the rollback
journal on a network filesystem), or a database server such as PostgreSQL for a hub
(``c.PromoteExtension.db_url``). Jobs, state transitions and events by seq; the schema is kept by Alembic
migrations (:mod:`..migrations`), so an upgrade keeps old jobs.

Run directories stay the source of truth for a job's files; the store indexes jobs for the API and keeps
every event exactly once (primary key ``(job, seq)``), so a restarted server resumes where it stopped.

Followed jobs' events (thousands a second on a cluster) are written off the server's event loop: queued
(:meth:`JobStore.add_events_soon`) and written by one writer thread (:mod:`.writer`), all that is queued in
one transaction, in the order queued. Every other write first writes what is queued, so writes land in the
order they were asked for; reads use a connection of their own (a read never waits for a commit). What each
write found new is handed, in write order, to ``on_stored``.

Here: the connections, their locks and the order of writes; the SQL of each table is in :mod:`.jobs`,
:mod:`.events` and :mod:`.followers`, the engine in :mod:`.engine`.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ...models import JobRecord
from ...rundir import server_user
from . import events as event_rows
from . import followers, jobs
from .engine import has_returning, once_more_if_disconnected, open_engine, store_url
from .events import event_text
from .filesystem import NETWORK_FILESYSTEMS, filesystem_of
from .writer import GATHER_S, Item, WriteQueue

__all__ = ["GATHER_S", "NETWORK_FILESYSTEMS", "JobStore", "Stored", "event_text", "filesystem_of", "store_url"]

#: What one store write found new: the job and its new events, in seq order.
Stored = tuple[str, list[dict[str, Any]]]
T = TypeVar("T")


class JobStore:
    """Thread-safe access to the store's database: two connections (one writes, one reads), each used under
    its own lock.

    Parameters
    ----------
    path_or_url
        A SQLAlchemy database URL (``postgresql+psycopg://user@host/db``), or the path of an SQLite file
        (created, readable by its owner alone).
    on_stored
        Called with the new events of every :meth:`add_events` and :meth:`add_events_soon`, in the order they
        were written (from the writer thread or the writing one, with the store locked: keep it short).
    wal
        SQLite only: use WAL mode (False: the rollback journal, for a file on a network filesystem).
    user
        Whose jobs this store keeps and shows (default: the server's user, :func:`server_user`): in a database
        a hub's servers share, each sees, follows and adopts its own user's jobs only.
    """

    def __init__(
        self,
        path_or_url: str,
        on_stored: Callable[[Stored], None] | None = None,
        wal: bool = True,
        user: str | None = None,
    ) -> None:
        from sqlalchemy import text

        self._text = text
        self.user = user or server_user()
        self.url = store_url(path_or_url)
        self.engine = open_engine(self.url, wal=wal)
        self.dialect = self.engine.dialect.name
        self.on_stored = on_stored
        self._lock = threading.Lock()  # the writing connection, and the order of writes
        self._db = self.engine.connect()
        self._read_lock = threading.Lock()
        self._read = self.engine.connect()
        self._returning = has_returning(self.dialect)
        self._queue = WriteQueue(self.flush)

    def _query(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        """Rows of one read, in a transaction of its own (no snapshot is kept between reads)."""

        def read() -> list[Any]:
            with self._read.begin():
                return list(self._read.execute(self._text(sql), params or {}).fetchall())

        with self._read_lock:
            return once_more_if_disconnected(read)

    # -- writes queued for the writer thread ---------------------------------------------------------------
    def add_events_soon(
        self, job_id: str, events: list[dict[str, Any]], record: JobRecord | None = None, run_dir: str | None = None
    ) -> None:
        """Store these events once each, soon, in the writer thread (the new ones go to ``on_stored``); with
        ``record``, that record (as it is now) in the same transaction, after them."""
        items: list[Item] = [("events", job_id, list(events))] if events else []
        if record is not None:
            items.append(("job", record.id, jobs.job_row(record, run_dir, self.user)))
        if items and not self._queue.put(items):
            self.flush()  # the store is closing: written now, in the caller's thread

    def flush(self) -> None:
        """Write what is queued now (the writer thread does it anyway, soon)."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        items = self._queue.take()
        if not items:
            return

        def write() -> list[Stored]:
            stored: list[Stored] = []
            with self._db.begin():
                for kind, job_id, payload in items:
                    if kind == "events":
                        new = event_rows.insert_events(self._db, job_id, payload, self._returning)
                        if new:
                            stored.append((job_id, new))
                    else:
                        jobs.upsert_job(self._db, payload)
            return stored

        try:
            stored = once_more_if_disconnected(write)
        except BaseException:
            self._queue.put_back(items)
            raise
        for item in stored:
            self._stored(item)

    def _stored(self, item: Stored) -> None:
        if self.on_stored is not None:
            self.on_stored(item)

    def close(self) -> None:
        self._queue.close()
        with self._lock:
            self._flush_locked()
            self._db.close()
        with self._read_lock:
            self._read.close()
        self.engine.dispose()

    # -- writes now (after what is queued) ------------------------------------------------------------------
    def _write(self, work: Callable[[], T]) -> T:
        """What is queued, then ``work`` in a transaction of the writing connection, the store locked; once
        more on a new connection when the database dropped this one (a restart, a failover)."""

        def transaction() -> T:
            with self._db.begin():
                return work()

        with self._lock:
            self._flush_locked()
            return once_more_if_disconnected(transaction)

    def put_job(self, record: JobRecord, run_dir: str | None) -> None:
        """Insert or replace a job's row from its record."""
        row = jobs.job_row(record, run_dir, self.user)
        self._write(lambda: jobs.upsert_job(self._db, row))

    def delete_job(self, job_id: str) -> None:
        """Forget a job: its row, its events, its transitions and its follower, in one transaction."""
        self._write(lambda: jobs.delete_job(self._db, job_id))

    def claim(self, job_id: str, server: str) -> None:
        """``server`` follows this job from now on (see :mod:`..lease`)."""
        self._write(lambda: followers.claim(self._db, job_id, server))

    def adopt(self, job_id: str, server: str, previous: str | None) -> bool:
        """Take the job over from ``previous`` (None: nobody claimed it), atomically: of two servers that
        start at once, exactly one adopts it."""
        return self._write(lambda: followers.adopt(self._db, job_id, server, previous))

    def add_events(self, job_id: str, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store events once each, now (after what is queued); returns those that were new (in seq order),
        which also go to ``on_stored``."""
        events = list(events)
        with self._lock:  # held until on_stored has them: writes reach it in write order
            self._flush_locked()
            new = once_more_if_disconnected(lambda: self._insert_in_transaction(job_id, events))
            if new:
                self._stored((job_id, new))
        return new

    def _insert_in_transaction(self, job_id: str, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        with self._db.begin():
            return event_rows.insert_events(self._db, job_id, events, self._returning)

    # -- reads ------------------------------------------------------------------------------------------------
    def follower(self, job_id: str) -> str | None:
        """The server that follows this job, when one has claimed it."""
        rows = self._query("SELECT server FROM followers WHERE job = :job", {"job": job_id})
        return str(rows[0][0]) if rows else None

    def get_job(self, job_id: str) -> tuple[JobRecord, str | None] | None:
        rows = self._query(
            "SELECT record, run_dir FROM jobs WHERE id = :id AND server_user = :user", {"id": job_id, "user": self.user}
        )
        return (JobRecord.from_json(json.loads(rows[0][0])), rows[0][1]) if rows else None

    def list_jobs(
        self,
        *,
        state: str | None = None,
        notebook: str | None = None,
        sweep: str | None = None,
        owner: str | None = None,
        schedule: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[str], int]:
        """One page of jobs, newest first, as their stored job.json text (what the API sends as it is),
        and the total that match.
        """
        asked = {"state": state, "notebook": notebook, "sweep": sweep, "owner": owner, "schedule": schedule}
        params = {"server_user": self.user, **{k: v for k, v in asked.items() if v}}
        with self._read_lock:
            return once_more_if_disconnected(lambda: jobs.list_page(self._read, params, limit, offset))

    def unfinished(self) -> list[tuple[JobRecord, str | None]]:
        """Every job that has not ended, with its run directory (a row that is no record of its job is said
        in one line and passed over, see :func:`.jobs.records`)."""
        clause, params = jobs.by_state(final=False)
        sql = f"SELECT id, record, run_dir FROM jobs WHERE server_user = :user AND {clause}"
        return jobs.records(self._query(sql, {**params, "user": self.user}))

    def finished(self) -> list[JobRecord]:
        """Every job that has ended, oldest first (a row that is no record of its job passed over)."""
        clause, params = jobs.by_state(final=True)
        sql = f"SELECT id, record, run_dir FROM jobs WHERE server_user = :user AND {clause} ORDER BY created_at"
        return [record for record, _ in jobs.records(self._query(sql, {**params, "user": self.user}))]

    def schedule_runs(
        self, schedule: str, limit: int, before: JobRecord | None = None
    ) -> list[tuple[JobRecord, str | None]]:
        """The last ``limit`` succeeded jobs of ``schedule`` (with ``before``: created before that job, itself
        left out), oldest first, each with its run directory."""
        sql = (
            "SELECT id, record, run_dir FROM jobs WHERE server_user = :user AND schedule = :schedule AND state = :state"
        )
        params: dict[str, Any] = {"user": self.user, "schedule": schedule, "state": "succeeded", "limit": limit}
        if before is not None:
            sql += " AND id != :job AND created_at <= :created"
            params.update(job=before.id, created=before.created_at)
        rows = self._query(sql + " ORDER BY created_at DESC, id LIMIT :limit", params)
        return jobs.records(reversed(rows))

    def last_seq(self, job_id: str) -> int:
        """The seq of the job's last stored event (0 when none)."""
        rows = self._query("SELECT MAX(seq) FROM events WHERE job = :job", {"job": job_id})
        return int(rows[0][0] or 0)

    def events_after(self, job_id: str, after: int = 0, limit: int = 10000) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT body FROM events WHERE job = :job AND seq > :after ORDER BY seq LIMIT :limit",
            {"job": job_id, "after": after, "limit": limit},
        )
        return [json.loads(r[0]) for r in rows]

    def transitions(self, job_id: str) -> list[dict[str, Any]]:
        rows = self._query(
            "SELECT seq, state, reason, ts FROM transitions WHERE job = :job ORDER BY seq", {"job": job_id}
        )
        return [{"seq": r[0], "state": r[1], "reason": r[2], "ts": r[3]} for r in rows]
