"""A database that drops the store's connections (a restart, a failover, an administrator): the store connects
again and goes on, every queued event written once, on a real PostgreSQL server."""

from __future__ import annotations

import time

from conftest import postgres_database

from jupyter_promote.models import JobRecord, JobState
from jupyter_promote.server.store import JobStore


def events(first: int, last: int) -> list[dict]:
    return [{"seq": s, "ts": time.time(), "type": "metric", "metrics": {"i": s}} for s in range(first, last + 1)]


def drop_connections(url: str) -> int:
    """What PostgreSQL does to its clients when it restarts: every other connection to the database ends."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as connection:
        dropped = connection.execute(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = :db AND pid <> pg_backend_pid()"
            ),
            {"db": make_url(url).database},
        ).scalar_one()
    admin.dispose()
    return int(dropped)


def test_the_store_writes_and_reads_on_after_the_database_dropped_its_connections():
    with postgres_database() as url:
        store = JobStore(url)
        record = JobRecord(id="abcdef123456", notebook="/n.ipynb", target="local", kernel="python3")
        record.state = JobState.RUNNING
        store.put_job(record, None)
        store.add_events(record.id, events(1, 10))
        store.add_events_soon(record.id, events(11, 20))
        store.flush()
        # When the database drops both of the store's connections
        assert drop_connections(url) >= 2
        # Then queued events are written (by the writer thread, on a new connection), reads answer, and writes
        # made now land: every event once, in order
        store.add_events_soon(record.id, events(15, 30))  # a replay of 15..20 among them
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and store.last_seq(record.id) < 30:
            time.sleep(0.1)
        record.state = JobState.SUCCEEDED
        store.put_job(record, None)
        assert [e["seq"] for e in store.events_after(record.id)] == list(range(1, 31))
        found = store.get_job(record.id)
        assert found is not None and found[0].state is JobState.SUCCEEDED
        assert store.list_jobs()[1] == 1
        # And once more, for the synchronous writes
        drop_connections(url)
        assert store.add_events(record.id, events(31, 31))[0]["seq"] == 31
        store.close()
