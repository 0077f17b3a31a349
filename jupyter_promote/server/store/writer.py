"""Writes queued for the store's one writer thread: followed jobs' events (thousands a second on a cluster)
leave the server's event loop at once and are written, all that is queued in one transaction, in the order
queued. What could not be written stays first in line; a write asked while the store closes is the caller's
to make."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds the writer thread waits, once woken, for more to write in the same transaction.
GATHER_S = 0.02
#: One queued write: ("events", job id, events) or ("job", job id, row).
Item = tuple[str, str, Any]
log = logging.getLogger("jupyter_promote")


class WriteQueue:
    """The queue and its writer thread, started with the first write; ``flush`` writes what :meth:`take`
    gives (in the writer thread, which retries each second while the database is away)."""

    def __init__(self, flush: Callable[[], None]) -> None:
        self._flush = flush
        self._items: list[Item] = []
        self._queued = threading.Condition()
        self._closing = False
        self._writer: threading.Thread | None = None

    def put(self, items: list[Item]) -> bool:
        """Queue ``items`` for the writer thread; False when the store is closing (queued, not yet written:
        the caller flushes)."""
        with self._queued:
            self._items += items
            if self._closing:
                return False
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_queued, name="promote-store", daemon=True)
                self._writer.start()
            self._queued.notify()
            return True

    def take(self) -> list[Item]:
        """What is queued, taken out of the queue."""
        with self._queued:
            items, self._items = self._items, []
        return items

    def put_back(self, items: list[Item]) -> None:
        """Items :meth:`take` gave that were not written: first in line for the next write."""
        with self._queued:
            self._items[:0] = items

    def close(self) -> None:
        """Stop the writer thread once it wrote what is queued (or could not)."""
        with self._queued:
            self._closing = True
            self._queued.notify()
        if self._writer is not None:
            self._writer.join()

    def _write_queued(self) -> None:
        while True:
            with self._queued:
                while not self._items and not self._closing:
                    self._queued.wait()
                if self._closing and not self._items:
                    return
                closing = self._closing
            if not closing:  # what the other jobs' polls bring meanwhile goes in the same transaction
                time.sleep(GATHER_S)
            try:
                self._flush()
            except Exception:  # the database is away: what was queued stays queued, written once it is back
                log.exception("jupyter-promote: the job store could not write; trying again in a second")
                if closing:
                    return
                time.sleep(1.0)
