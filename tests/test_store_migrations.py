"""An upgrade keeps old jobs: a job store written by jupyter-promote 0.1 (its schema, created by hand here as
0.1 created it) is migrated in place by Alembic when the new store opens it, on an SQLite file and on a real
PostgreSQL database."""

from __future__ import annotations

import json
import os
import sqlite3

from jupyter_promote.server.migrations import revision
from jupyter_promote.server.store import JobStore, store_url

#: The store's schema as jupyter-promote 0.1 created it (CREATE TABLE IF NOT EXISTS at every start).
SCHEMA_0_1 = """
CREATE TABLE IF NOT EXISTS jobs (id TEXT PRIMARY KEY, run_dir TEXT, notebook TEXT NOT NULL, state TEXT NOT NULL,
    created_at REAL NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state);
CREATE INDEX IF NOT EXISTS jobs_by_created ON jobs (created_at);
CREATE TABLE IF NOT EXISTS events (job TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL, PRIMARY KEY (job, seq));
CREATE TABLE IF NOT EXISTS owners (job TEXT PRIMARY KEY, server TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS transitions (job TEXT NOT NULL, seq INTEGER NOT NULL, state TEXT NOT NULL, reason TEXT,
    ts REAL, PRIMARY KEY (job, seq));
"""

OLD_JOB = {
    "id": "0123456789ab",
    "notebook": "/home/ana/train.ipynb",
    "target": "slurm",
    "kernel": "python3",
    "state": "succeeded",
    "created_at": 1700000000.0,
    "sweep": {"id": "s0123456789ab", "index": 0, "size": 2},
    "parameters": {"lr": 0.1},
}


def write_0_1_store(url: str) -> None:
    """A store as 0.1 left it: one finished job of a sweep, its events and transitions, its follower."""
    from sqlalchemy import create_engine, text

    if "://" not in url:
        os.makedirs(os.path.dirname(url), exist_ok=True)
    engine = create_engine(store_url(url))
    with engine.begin() as connection:
        for statement in filter(str.strip, SCHEMA_0_1.split(";")):
            connection.execute(text(statement))
        connection.execute(
            text("INSERT INTO jobs VALUES (:id, '/runs/train-1', :notebook, 'succeeded', :created_at, :record)"),
            {**OLD_JOB, "record": json.dumps(OLD_JOB)},
        )
        for seq, state in ((1, "pending"), (2, "running"), (3, "succeeded")):
            body = json.dumps({"seq": seq, "type": "status", "state": state, "ts": 1700000000.0 + seq})
            connection.execute(
                text("INSERT INTO events VALUES (:job, :seq, :body)"), {"job": OLD_JOB["id"], "seq": seq, "body": body}
            )
            connection.execute(
                text("INSERT INTO transitions VALUES (:job, :seq, :state, NULL, :ts)"),
                {"job": OLD_JOB["id"], "seq": seq, "state": state, "ts": 1700000000.0 + seq},
            )
        connection.execute(text("INSERT INTO owners VALUES (:job, 'a1b2c3d4e5f6')"), {"job": OLD_JOB["id"]})
    engine.dispose()


def test_a_0_1_store_is_migrated_in_place_and_keeps_its_jobs(store_url):
    # Given a store written by 0.1
    write_0_1_store(store_url)
    # When the new store opens it
    store = JobStore(store_url)
    # Then it is at the newest revision, and everything 0.1 stored is still there
    assert revision(store.engine) == "0003"
    record, run_dir = store.get_job(OLD_JOB["id"])
    assert record.parameters == {"lr": 0.1} and run_dir == "/runs/train-1" and record.owner == ""
    assert [e["state"] for e in store.events_after(OLD_JOB["id"])] == ["pending", "running", "succeeded"]
    assert [t["state"] for t in store.transitions(OLD_JOB["id"])] == ["pending", "running", "succeeded"]
    assert store.follower(OLD_JOB["id"]) == "a1b2c3d4e5f6"
    # And the new columns were filled from the stored records: the sweep is found by its column
    records, total = store.list_jobs(sweep="s0123456789ab")
    assert total == 1 and json.loads(records[0])["id"] == OLD_JOB["id"]
    # And new jobs go in beside it, with their owner
    record.id, record.owner = "ba9876543210", "ana"
    store.put_job(record, None)
    assert store.list_jobs(owner="ana")[1] == 1 and store.list_jobs()[1] == 2
    store.close()
    # And opening it again migrates nothing twice
    again = JobStore(store_url)
    assert revision(again.engine) == "0003" and again.list_jobs()[1] == 2
    again.close()


def test_a_new_sqlite_store_is_created_at_the_newest_revision_readable_by_its_owner_alone(tmp_path):
    path = tmp_path / "promote" / "jobs.sqlite"
    store = JobStore(str(path))
    assert revision(store.engine) == "0003"
    assert path.stat().st_mode & 0o777 == 0o600
    store.close()
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"jobs", "events", "transitions", "followers", "alembic_version"} <= tables
