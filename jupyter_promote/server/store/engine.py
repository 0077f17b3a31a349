"""The store's database engine: an SQLite file (WAL mode, or the rollback journal where WAL is unsafe) or a
database server, its schema migrated to the newest revision on open, and a work retried once on a new
connection when the database dropped the one it used."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")
log = logging.getLogger("jupyter_promote")


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
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url
    from sqlalchemy.pool import NullPool

    from ..migrations import upgrade

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(parsed, wal)
    else:
        engine = create_engine(parsed, poolclass=NullPool)
    upgrade(engine)
    return engine


def _sqlite_engine(parsed: Any, wal: bool) -> Any:
    from sqlalchemy import create_engine, event
    from sqlalchemy.pool import NullPool

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
    return engine


def has_returning(dialect: str) -> bool:
    """Whether the database runs ``INSERT ... RETURNING`` (an SQLite older than 3.35 does not)."""
    return dialect != "sqlite" or sqlite3.sqlite_version_info >= (3, 35)


def once_more_if_disconnected(work: Callable[[], T]) -> T:
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
