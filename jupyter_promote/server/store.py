"""The server's durable job store, through SQLAlchemy: an SQLite file by default (WAL mode; the rollback
journal on a network filesystem), or a database server such as PostgreSQL for a hub
(``c.PromoteExtension.db_url``). Jobs, state transitions and events by seq; the schema is kept by Alembic
migrations (:mod:`.migrations`), so an upgrade keeps old jobs.

Run directories stay the source of truth for a job's files; the store indexes jobs for the API and keeps
every event exactly once (primary key ``(job, seq)``), so a restarted server resumes where it stopped.

Followed jobs' events (thousands a second on a cluster) are written off the server's event loop: queued
(:meth:`JobStore.add_events_soon`) and written by one writer thread, all that is queued in one transaction,
in the order queued. Every other write first writes what is queued, so writes land in the order they were
asked for; reads use a connection of their own (a read never waits for a commit). What each write found new
is handed, in write order, to ``on_stored``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..housekeeping import UNREADABLE
from ..models import FINAL_STATES, JobRecord
from ..rundir import server_user


def event_text(event: dict[str, Any]) -> str:
    """The JSON text of an event: the line it was read from when there is one (no second encoding)."""
    return getattr(event, "text", None) or json.dumps(event, separators=(",", ":"), allow_nan=False)


#: Filesystem types where SQLite's WAL mode is unsafe (its shared memory is not shared across hosts).
NETWORK_FILESYSTEMS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "ncpfs", "afs", "9p", "lustre", "gpfs",
                                 "ceph", "glusterfs", "beegfs", "fuse.sshfs", "fuse.glusterfs", "fuse.s3fs",
                                 "fuse.gcsfuse", "fuse.cephfs", "fuse.juicefs"})  # fmt: skip


def filesystem_of(path: str, mountinfo: str | None = None) -> str:
    """The type of the filesystem ``path`` is (or would be) on, from ``/proc/self/mountinfo``; "" if unknown."""
    if mountinfo is None:
        try:
            with open("/proc/self/mountinfo") as f:
                mountinfo = f.read()
        except OSError:
            return ""
    path = os.path.realpath(path)
    best, kind = "", ""
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, line.split(" - ", 1)[1].split()[0]
    return kind


#: Seconds the writer thread waits, once woken, for more to write in the same transaction.
GATHER_S = 0.02
#: What one store write found new: the job and its new events, in seq order.
Stored = tuple[str, list[dict[str, Any]]]
T = TypeVar("T")
log = logging.getLogger("jupyter_promote")


def _once_more_if_disconnected(work: Callable[[], T]) -> T:
    """``work()``, and once more when the database dropped the connection it used (SQLAlchemy then gives that
    Connection a new one on its next use): a database restarted or failed over under a running server."""
    from sqlalchemy.exc import DBAPIError

    try:
        return work()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        log.warning("jupyter-promote: the job store's database connection was lost; reconnecting")
        return work()


#: Events per INSERT statement (SQLite allows 32766 bound values; three per event).
_EVENTS_PER_INSERT = 500


def store_url(path_or_url: str) -> str:
    """A SQLAlchemy URL: ``path_or_url`` as it is when it is one, else the SQLite file at that path."""
    if "://" in path_or_url:
        return path_or_url
    return "sqlite:///" + os.path.abspath(os.path.expanduser(path_or_url))


def open_engine(url: str, wal: bool = True) -> Any:
    """A SQLAlchemy engine on the store's database, its schema migrated to the newest revision.

    SQLite: the file (and its folder) readable by its owner alone; WAL (or the rollback journal where WAL is
    unsafe); transactions begun by us, so that BEGIN ... COMMIT is what SQLAlchemy says it is.
    """
    from sqlalchemy import create_engine, event
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    from .migrations import upgrade

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        path = parsed.database or ""
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        fresh = not os.path.exists(path)
        engine = create_engine(parsed, poolclass=NullPool, connect_args={"check_same_thread": False})

        @event.listens_for(engine, "connect")
        def _connect(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.isolation_level = None  # the driver begins nothing on its own
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=10000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _begin(connection: Any) -> None:
            connection.exec_driver_sql("BEGIN")

        with engine.connect():
            pass
        if fresh:  # every user's jobs, parameters and events: readable by that user alone
            os.chmod(path, 0o600)
    else:
        engine = create_engine(parsed, poolclass=NullPool)
    upgrade(engine)
    return engine


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
        self._returning = self.dialect != "sqlite" or self._sqlite_has_returning()
        # what is queued for the writer thread: ("events", job, events) or ("job", id, row)
        self._queue: list[tuple[str, str, Any]] = []
        self._queued = threading.Condition()
        self._closing = False
        self._writer: threading.Thread | None = None

    @staticmethod
    def _sqlite_has_returning() -> bool:
        import sqlite3

        return sqlite3.sqlite_version_info >= (3, 35)

    def _query(self, sql: str, params: dict[str, Any] | None = None) -> list[Any]:
        """Rows of one read, in a transaction of its own (no snapshot is kept between reads)."""

        def read() -> list[Any]:
            with self._read.begin():
                return list(self._read.execute(self._text(sql), params or {}).fetchall())

        with self._read_lock:
            return _once_more_if_disconnected(read)

    # -- writes queued for the writer thread ---------------------------------------------------------------
    def add_events_soon(
        self, job_id: str, events: list[dict[str, Any]], record: JobRecord | None = None, run_dir: str | None = None
    ) -> None:
        """Store these events once each, soon, in the writer thread (the new ones go to ``on_stored``); with
        ``record``, that record (as it is now) in the same transaction, after them."""
        items: list[tuple[str, str, Any]] = [("events", job_id, list(events))] if events else []
        if record is not None:
            items.append(("job", record.id, self._job_row(record, run_dir)))
        if not items:
            return
        with self._queued:
            self._queue += items
            if not self._closing:
                if self._writer is None:
                    self._writer = threading.Thread(target=self._write_queued, name="promote-store", daemon=True)
                    self._writer.start()
                self._queued.notify()
                return
        self.flush()  # the store is closing: written now, in the caller's thread

    def _write_queued(self) -> None:
        while True:
            with self._queued:
                while not self._queue and not self._closing:
                    self._queued.wait()
                if self._closing and not self._queue:
                    return
                closing = self._closing
            if not closing:  # what the other jobs' polls bring meanwhile goes in the same transaction
                time.sleep(GATHER_S)
            try:
                self.flush()
            except Exception:  # the database is away: what was queued stays queued, written once it is back
                log.exception("jupyter-promote: the job store could not write; trying again in a second")
                if closing:
                    return
                time.sleep(1.0)

    def flush(self) -> None:
        """Write what is queued now (the writer thread does it anyway, soon)."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._queued:
            items, self._queue = self._queue, []
        if not items:
            return

        def write() -> list[Stored]:
            stored: list[Stored] = []
            with self._db.begin():
                for kind, job_id, payload in items:
                    if kind == "events":
                        new = self._insert_events(job_id, payload)
                        if new:
                            stored.append((job_id, new))
                    else:
                        self._upsert_job(payload)
            return stored

        try:
            stored = _once_more_if_disconnected(write)
        except BaseException:
            with self._queued:  # not written: first in line for the next write
                self._queue[:0] = items
            raise
        for item in stored:
            self._stored(item)

    def _stored(self, item: Stored) -> None:
        if self.on_stored is not None:
            self.on_stored(item)

    def close(self) -> None:
        with self._queued:
            self._closing = True
            self._queued.notify()
        if self._writer is not None:
            self._writer.join()
        with self._lock:
            self._flush_locked()
            self._db.close()
        with self._read_lock:
            self._read.close()
        self.engine.dispose()

    # -- writes now (after what is queued) ------------------------------------------------------------------
    def put_job(self, record: JobRecord, run_dir: str | None) -> None:
        """Insert or replace a job's row from its record."""
        row = self._job_row(record, run_dir)
        with self._lock:
            self._flush_locked()
            self._write(lambda: self._upsert_job(row))

    def delete_job(self, job_id: str) -> None:
        """Forget a job: its row, its events, its transitions and its follower, in one transaction."""
        with self._lock:
            self._flush_locked()

            def delete() -> None:
                for table, column in (("events", "job"), ("transitions", "job"), ("followers", "job"), ("jobs", "id")):
                    self._db.execute(self._text(f"DELETE FROM {table} WHERE {column} = :job"), {"job": job_id})

            self._write(delete)

    def _write(self, work: Callable[[], T]) -> T:
        """``work`` in a transaction of the writing connection (the store locked); once more on a new
        connection when the database dropped this one (a restart, a failover)."""

        def transaction() -> T:
            with self._db.begin():
                return work()

        return _once_more_if_disconnected(transaction)

    def _job_row(self, record: JobRecord, run_dir: str | None) -> dict[str, Any]:
        data = json.dumps(record.to_json(), sort_keys=True, allow_nan=False)
        return {"id": record.id, "run_dir": run_dir, "notebook": record.notebook, "state": record.state.value,
                "created_at": record.created_at, "owner": record.owner, "sweep": (record.sweep or {}).get("id"),
                "server_user": self.user, "record": data}  # fmt: skip

    def _upsert_job(self, row: dict[str, Any]) -> None:
        self._db.execute(
            self._text(
                "INSERT INTO jobs (id, run_dir, notebook, state, created_at, owner, sweep, server_user, record) "
                "VALUES (:id, :run_dir, :notebook, :state, :created_at, :owner, :sweep, :server_user, :record) "
                "ON CONFLICT (id) DO UPDATE SET run_dir = excluded.run_dir, state = excluded.state, "
                "owner = excluded.owner, sweep = excluded.sweep, record = excluded.record"
            ),
            row,
        )

    def claim(self, job_id: str, server: str) -> None:
        """``server`` follows this job from now on (see :mod:`.lease`)."""
        with self._lock:
            self._flush_locked()
            self._write(
                lambda: self._db.execute(
                    self._text(
                        "INSERT INTO followers (job, server) VALUES (:job, :server) "
                        "ON CONFLICT (job) DO UPDATE SET server = excluded.server"
                    ),
                    {"job": job_id, "server": server},
                )
            )

    def adopt(self, job_id: str, server: str, previous: str | None) -> bool:
        """Take the job over from ``previous`` (None: nobody claimed it), atomically: of two servers that
        start at once, exactly one adopts it."""
        with self._lock:
            self._flush_locked()

            def take() -> int:
                if previous is None:
                    sql = "INSERT INTO followers (job, server) VALUES (:job, :server) ON CONFLICT (job) DO NOTHING"
                else:
                    sql = "UPDATE followers SET server = :server WHERE job = :job AND server = :previous"
                result = self._db.execute(self._text(sql), {"job": job_id, "server": server, "previous": previous})
                return int(result.rowcount)

            return self._write(take) == 1

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
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[str], int]:
        """One page of jobs, newest first, as their stored job.json text (what the API sends as it is),
        and the total that match.
        """
        asked = {"state": state, "notebook": notebook, "sweep": sweep, "owner": owner}
        params = {"server_user": self.user, **{k: v for k, v in asked.items() if v}}
        clause = " WHERE " + " AND ".join(f"{k} = :{k}" for k in params)

        def read() -> tuple[list[str], int]:
            with self._read.begin():
                total = self._read.execute(self._text(f"SELECT COUNT(*) FROM jobs{clause}"), params).scalar_one()
                rows = self._read.execute(
                    self._text(
                        f"SELECT record FROM jobs{clause} ORDER BY created_at DESC, id LIMIT :limit OFFSET :offset"
                    ),
                    {**params, "limit": limit, "offset": offset},
                ).fetchall()
            return [r[0] for r in rows], int(total)

        with self._read_lock:
            return _once_more_if_disconnected(read)

    def unfinished(self) -> list[tuple[JobRecord, str | None]]:
        """Every job that has not ended, with its run directory (a row that is no record of its job is said
        in one line and passed over, see :meth:`_records`)."""
        finals = {f"final{i}": s.value for i, s in enumerate(FINAL_STATES)}
        marks = ", ".join(f":{name}" for name in finals)
        rows = self._query(
            f"SELECT id, record, run_dir FROM jobs WHERE server_user = :user AND state NOT IN ({marks})",
            {**finals, "user": self.user},
        )
        return self._records(rows)

    def finished(self) -> list[JobRecord]:
        """Every job that has ended, oldest first (a row that is no record of its job passed over)."""
        finals = {f"final{i}": s.value for i, s in enumerate(FINAL_STATES)}
        marks = ", ".join(f":{name}" for name in finals)
        rows = self._query(
            f"SELECT id, record, run_dir FROM jobs WHERE server_user = :user AND state IN ({marks}) ORDER BY created_at",
            {**finals, "user": self.user},
        )
        return [record for record, _ in self._records(rows)]

    @staticmethod
    def _records(rows: Iterable[Any]) -> list[tuple[JobRecord, str | None]]:
        """The records of rows ``(id, record, run_dir)``; a row whose record cannot be read, or is another
        job's (a row written by a bug, or by someone else on a shared database), is said in one line and
        passed over: one bad row never stops a server's start or its retention pass."""
        records = []
        for job_id, text, run_dir in rows:
            try:
                record = JobRecord.from_json(json.loads(text))
                if record.id != job_id:
                    raise ValueError(f"it holds the record of job {str(record.id)[:40]!r}")
            except UNREADABLE as exc:
                why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
                log.warning("jupyter-promote: job %s: its row in the job store was passed over: %s", job_id, why)
                continue
            records.append((record, run_dir))
        return records

    def add_events(self, job_id: str, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store events once each, now (after what is queued); returns those that were new (in seq order),
        which also go to ``on_stored``."""
        with self._lock:
            self._flush_locked()
            events = list(events)
            new = self._write(lambda: self._insert_events(job_id, events))
            if new:
                self._stored((job_id, new))
        return new

    def _insert_events(self, job_id: str, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Insert the events not stored yet (one statement per few hundred); the new ones, in the given order."""
        events = list(events)
        new: list[dict[str, Any]] = []
        for start in range(0, len(events), _EVENTS_PER_INSERT):
            chunk = events[start : start + _EVENTS_PER_INSERT]
            if self._returning:
                values = ", ".join(f"(:job, :s{i}, :b{i})" for i in range(len(chunk)))
                params: dict[str, Any] = {"job": job_id}
                for i, event in enumerate(chunk):
                    params[f"s{i}"], params[f"b{i}"] = int(event["seq"]), event_text(event)
                result = self._db.execute(
                    self._text(
                        f"INSERT INTO events (job, seq, body) VALUES {values} ON CONFLICT (job, seq) DO NOTHING "
                        "RETURNING seq"
                    ),
                    params,
                )
                inserted = {int(row[0]) for row in result.fetchall()}
                new += [e for e in chunk if int(e["seq"]) in inserted]
            else:  # an SQLite older than 3.35: one statement per event
                for event in chunk:
                    result = self._db.execute(
                        self._text(
                            "INSERT INTO events (job, seq, body) VALUES (:job, :seq, :body) ON CONFLICT DO NOTHING"
                        ),
                        {"job": job_id, "seq": int(event["seq"]), "body": event_text(event)},
                    )
                    if result.rowcount:
                        new.append(event)
        transitions = [{"job": job_id, "seq": int(e["seq"]), "state": e["state"], "reason": e.get("reason"),
                        "ts": e.get("ts")} for e in new if e.get("type") == "status"]  # fmt: skip
        if transitions:
            self._db.execute(
                self._text(
                    "INSERT INTO transitions (job, seq, state, reason, ts) VALUES (:job, :seq, :state, :reason, :ts) "
                    "ON CONFLICT (job, seq) DO NOTHING"
                ),
                transitions,
            )
        return new

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
