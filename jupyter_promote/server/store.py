"""The server's durable job store: SQLite (WAL mode; the rollback journal on a network filesystem): jobs,
state transitions and events by seq.

Run directories stay the source of truth for a job's files; the store indexes jobs for the API and keeps
every event exactly once (primary key ``(job, seq)``), so a restarted server resumes where it stopped.

Followed jobs' events (thousands a second on a cluster) are written off the server's event loop: queued
(:meth:`JobStore.add_events_soon`, :meth:`JobStore.put_job_soon`) and written by one writer thread, all
that is queued in one transaction, in the order queued. Every other write first writes what is queued, so
writes land in the order they were asked for; reads use a connection of their own (WAL: a read never
waits for a commit). What each write found new is handed, in write order, to ``on_stored``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from ..models import FINAL_STATES, JobRecord

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    run_dir TEXT,
    notebook TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);
CREATE INDEX IF NOT EXISTS jobs_by_created ON jobs (created_at);
CREATE TABLE IF NOT EXISTS events (
    job TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (job, seq)
);
CREATE TABLE IF NOT EXISTS owners (
    job TEXT PRIMARY KEY,
    server TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS transitions (
    job TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    reason TEXT,
    ts REAL,
    PRIMARY KEY (job, seq)
);
"""


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


class JobStore:
    """Thread-safe access to one SQLite database file.

    Parameters
    ----------
    path
        The database file (created, readable by its owner alone).
    on_stored
        Called with the new events of every :meth:`add_events` and :meth:`add_events_soon`, in the order they
        were written (from the writer thread or the writing one, with the store locked: keep it short).
    """

    def __init__(self, path: str, on_stored: Callable[[Stored], None] | None = None, wal: bool = True) -> None:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        self.path = path
        self.on_stored = on_stored
        self._lock = threading.Lock()  # the writing connection, and the order of writes
        fresh = not os.path.exists(path)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        if fresh:  # every user's jobs, parameters and events: readable by that user alone
            os.chmod(path, 0o600)
        # WAL: reads never wait for a write; on a network filesystem, the rollback journal (WAL would corrupt)
        self._db.execute(f"PRAGMA journal_mode={'WAL' if wal else 'DELETE'}")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        self._read_lock = threading.Lock()
        self._read = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        # what is queued for the writer thread: ("events", job, events) or ("job", id, row)
        self._queue: list[tuple[str, str, Any]] = []
        self._queued = threading.Condition()
        self._closing = False
        self._writer: threading.Thread | None = None

    # -- writes queued for the writer thread ---------------------------------------------------------------
    def add_events_soon(
        self, job_id: str, events: list[dict[str, Any]], record: JobRecord | None = None, run_dir: str | None = None
    ) -> None:
        """Store these events once each, soon, in the writer thread (the new ones go to ``on_stored``); with
        ``record``, that record (as it is now) in the same transaction, after them."""
        items: list[tuple[str, str, Any]] = [("events", job_id, list(events))] if events else []
        if record is not None:
            items.append(("job", record.id, _job_row(record, run_dir)))
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
            self.flush()

    def flush(self) -> None:
        """Write what is queued now (the writer thread does it anyway, soon)."""
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        with self._queued:
            items, self._queue = self._queue, []
        if not items:
            return
        stored: list[Stored] = []
        self._db.execute("BEGIN")
        try:
            for kind, job_id, payload in items:
                if kind == "events":
                    new = self._insert_events(job_id, payload)
                    if new:
                        stored.append((job_id, new))
                else:
                    self._upsert_job(payload)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
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

    # -- writes now (after what is queued) ------------------------------------------------------------------
    def put_job(self, record: JobRecord, run_dir: str | None) -> None:
        """Insert or replace a job's row from its record."""
        row = _job_row(record, run_dir)
        with self._lock:
            self._flush_locked()
            self._upsert_job(row)

    def delete_job(self, job_id: str) -> None:
        """Forget a job: its row, its events, its transitions and its owner, in one transaction."""
        with self._lock:
            self._flush_locked()
            self._db.execute("BEGIN")
            try:
                for table, column in (("events", "job"), ("transitions", "job"), ("owners", "job"), ("jobs", "id")):
                    self._db.execute(f"DELETE FROM {table} WHERE {column} = ?", (job_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _upsert_job(self, row: tuple[Any, ...]) -> None:
        self._db.execute(
            "INSERT INTO jobs (id, run_dir, notebook, state, created_at, record) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET run_dir=excluded.run_dir, state=excluded.state, record=excluded.record",
            row,
        )

    def claim(self, job_id: str, server: str) -> None:
        """``server`` follows this job from now on (see :class:`ServerLease`)."""
        with self._lock:
            self._flush_locked()
            self._db.execute(
                "INSERT INTO owners (job, server) VALUES (?, ?) ON CONFLICT(job) DO UPDATE SET server=excluded.server",
                (job_id, server),
            )

    def adopt(self, job_id: str, server: str, previous: str | None) -> bool:
        """Take the job over from ``previous`` (None: nobody claimed it), atomically: of two servers that
        start at once, exactly one adopts it."""
        with self._lock:
            self._flush_locked()
            if previous is None:
                cursor = self._db.execute("INSERT OR IGNORE INTO owners (job, server) VALUES (?, ?)", (job_id, server))
            else:
                cursor = self._db.execute(
                    "UPDATE owners SET server = ? WHERE job = ? AND server = ?", (server, job_id, previous)
                )
            return cursor.rowcount == 1

    def owner(self, job_id: str) -> str | None:
        """The server that follows this job, when one has claimed it."""
        with self._read_lock:
            row = self._read.execute("SELECT server FROM owners WHERE job = ?", (job_id,)).fetchone()
        return str(row[0]) if row else None

    def get_job(self, job_id: str) -> tuple[JobRecord, str | None] | None:
        with self._read_lock:
            row = self._read.execute("SELECT record, run_dir FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return (JobRecord.from_json(json.loads(row[0])), row[1]) if row else None

    def list_jobs(
        self,
        *,
        state: str | None = None,
        notebook: str | None = None,
        sweep: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> tuple[list[str], int]:
        """One page of jobs, newest first, as their stored job.json text (what the API sends as it is),
        and the total that match.
        """
        where, args = [], []
        if state:
            where.append("state = ?")
            args.append(state)
        if notebook:
            where.append("notebook = ?")
            args.append(notebook)
        if sweep:
            where.append("json_extract(record, '$.sweep.id') = ?")
            args.append(sweep)
        clause = (" WHERE " + " AND ".join(where)) if where else ""
        with self._read_lock:
            total = self._read.execute(f"SELECT COUNT(*) FROM jobs{clause}", args).fetchone()[0]
            rows = self._read.execute(
                f"SELECT record FROM jobs{clause} ORDER BY created_at DESC, id LIMIT ? OFFSET ?", [*args, limit, offset]
            ).fetchall()
        return [r[0] for r in rows], int(total)

    def unfinished(self) -> list[tuple[JobRecord, str | None]]:
        marks = ",".join("?" for _ in FINAL_STATES)
        finals = [s.value for s in FINAL_STATES]
        with self._read_lock:
            rows = self._read.execute(
                f"SELECT record, run_dir FROM jobs WHERE state NOT IN ({marks})", finals
            ).fetchall()
        return [(JobRecord.from_json(json.loads(r[0])), r[1]) for r in rows]

    def add_events(self, job_id: str, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Store events once each, now (after what is queued); returns those that were new (in seq order),
        which also go to ``on_stored``."""
        with self._lock:
            self._flush_locked()
            self._db.execute("BEGIN")
            try:
                new = self._insert_events(job_id, events)
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            if new:
                self._stored((job_id, new))
        return new

    def _insert_events(self, job_id: str, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        new = []
        for event in events:
            cur = self._db.execute(
                "INSERT OR IGNORE INTO events (job, seq, body) VALUES (?, ?, ?)",
                (job_id, int(event["seq"]), event_text(event)),
            )
            if cur.rowcount:
                new.append(event)
                if event.get("type") == "status":
                    self._db.execute(
                        "INSERT OR IGNORE INTO transitions (job, seq, state, reason, ts) VALUES (?, ?, ?, ?, ?)",
                        (job_id, int(event["seq"]), event["state"], event.get("reason"), event.get("ts")),
                    )
        return new

    def last_seq(self, job_id: str) -> int:
        """The seq of the job's last stored event (0 when none)."""
        with self._read_lock:
            row = self._read.execute("SELECT MAX(seq) FROM events WHERE job = ?", (job_id,)).fetchone()
        return int(row[0] or 0)

    def events_after(self, job_id: str, after: int = 0, limit: int = 10000) -> list[dict[str, Any]]:
        with self._read_lock:
            rows = self._read.execute(
                "SELECT body FROM events WHERE job = ? AND seq > ? ORDER BY seq LIMIT ?", (job_id, after, limit)
            ).fetchall()
        return [json.loads(r[0]) for r in rows]

    def transitions(self, job_id: str) -> list[dict[str, Any]]:
        with self._read_lock:
            rows = self._read.execute(
                "SELECT seq, state, reason, ts FROM transitions WHERE job = ? ORDER BY seq", (job_id,)
            ).fetchall()
        return [{"seq": r[0], "state": r[1], "reason": r[2], "ts": r[3]} for r in rows]


def _job_row(record: JobRecord, run_dir: str | None) -> tuple[Any, ...]:
    data = json.dumps(record.to_json(), sort_keys=True, allow_nan=False)
    return (record.id, run_dir, record.notebook, record.state.value, record.created_at, data)


class ServerLease:
    """One server's claim to the jobs it follows, in a store several servers may share (a user's two
    ``jupyter lab``s share the per-user store): a lock file in ``<store folder>/servers/`` held for the
    server's lifetime. Another server adopts a job at its start only when the job's owner no longer holds
    its lock (it stopped or died), so a living server's pending or running jobs are never failed as lost.
    """

    def __init__(self, store_path: str) -> None:
        self.folder = os.path.join(os.path.dirname(os.path.abspath(store_path)), "servers")
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self.id = uuid.uuid4().hex[:12]
        self._file = open(os.path.join(self.folder, f"{self.id}.lock"), "w")  # noqa: SIM115 (held while we live)
        fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def alive(self, server: str) -> bool:
        """Whether ``server`` (an id) still holds its lease."""
        if server == self.id:
            return True
        path = os.path.join(self.folder, f"{server}.lock")
        try:
            with open(path) as f:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        except BlockingIOError:
            return True
        with contextlib.suppress(OSError):
            os.unlink(path)  # a dead server's lease: gone
        return False

    def release(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._file.name)
        self._file.close()
