"""One server's claim to the jobs it follows, in a store several servers may share: a user's two ``jupyter
lab``s share the per-user SQLite file; a hub's servers share one PostgreSQL database. Another server adopts
a job at its start only when the server that follows it no longer holds its lease (it stopped or died), so
a living server's pending or running jobs are never failed as lost.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from typing import Any, Protocol

from ..errors import UsageError


class Lease(Protocol):
    id: str

    def alive(self, server: str) -> bool:
        """Whether ``server`` (an id) still holds its lease."""

    def release(self) -> None: ...


class FileLease:
    """A lock file in ``<store folder>/servers/``, held (``flock``) for the server's lifetime: for an SQLite
    store, whose servers share its folder."""

    def __init__(self, store_path: str) -> None:
        self.folder = os.path.join(os.path.dirname(os.path.abspath(store_path)), "servers")
        os.makedirs(self.folder, mode=0o700, exist_ok=True)
        self.id = uuid.uuid4().hex[:12]
        self._file = open(os.path.join(self.folder, f"{self.id}.lock"), "w")  # noqa: SIM115 (held while we live)
        fcntl.flock(self._file, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def alive(self, server: str) -> bool:
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


#: The first key of jupyter-promote's advisory locks (two-key form), apart from other applications' locks.
ADVISORY_CLASS = 0x4A50  # "JP"


class AdvisoryLease:
    """A PostgreSQL session-level advisory lock, held by a connection of its own for the server's lifetime: for
    servers on different hosts that share only the database. A server that dies loses its connection, and
    with it the lock."""

    def __init__(self, engine: Any) -> None:
        from sqlalchemy import text

        self._text = text
        self.id = uuid.uuid4().hex[:8]
        self._connection = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        self._connection.execute(text("SELECT pg_advisory_lock(:c, :k)"), {"c": ADVISORY_CLASS, "k": _key(self.id)})

    def alive(self, server: str) -> bool:
        if server == self.id:
            return True
        try:
            key = _key(server)
        except ValueError:  # not one of ours
            return False
        params = {"c": ADVISORY_CLASS, "k": key}
        if self._connection.execute(self._text("SELECT pg_try_advisory_lock(:c, :k)"), params).scalar_one():
            self._connection.execute(self._text("SELECT pg_advisory_unlock(:c, :k)"), params)
            return False  # nobody held it: that server is gone
        return True

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self._connection.close()


def _key(server: str) -> int:
    """An advisory lock's second key (a signed 32-bit integer) from a lease id of 8 hex digits."""
    if len(server) != 8:
        raise ValueError(server)
    return int(server, 16) - 2**31


def lease_for(store: Any) -> Lease:
    """The lease that fits the store's database."""
    if store.dialect == "sqlite":
        return FileLease(store.engine.url.database or "")
    if store.dialect == "postgresql":
        return AdvisoryLease(store.engine)
    raise UsageError(
        f"db_url: {store.dialect} is not supported (SQLite or PostgreSQL)", subject="db_url", field="db_url"
    )
