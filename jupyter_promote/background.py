"""Work done off a job's path: one daemon thread per kind of work, items in order, each retried with back-off.

Notifications and experiment tracking use it: whatever fails there is logged and retried, never raised
into the job, and a door that exits first drains what is queued, for a bounded time.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

log = logging.getLogger("jupyter_promote")

Item = TypeVar("Item")


class Retrying(Generic[Item]):
    """Hands each item to ``attempt(item)`` in one background thread, in order; a failing attempt is retried
    ``retries`` times after ``delay_s`` seconds, doubled each time, and every outcome goes to ``outcome(item,
    attempt_number, error or None, last)``."""

    def __init__(
        self,
        name: str,
        attempt: Callable[[Item], None],
        outcome: Callable[[Item, int, str | None, bool], None],
        retries: int,
        delay_s: float,
    ) -> None:
        self.name, self.attempt, self.outcome = name, attempt, outcome
        self.retries, self.delay_s = retries, delay_s
        self._queue: queue.Queue[Item | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def put(self, item: Item) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=f"jupyter-promote-{self.name}", daemon=True)
                self._thread.start()
        self._queue.put(item)

    def close(self, timeout: float) -> None:
        """Work through what is queued (retries included) for at most ``timeout`` seconds, then stop."""
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stopping.set()
            log.warning("jupyter-promote: %s: what was still queued after %.0f s was dropped", self.name, timeout)

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            delay = self.delay_s
            for number in range(1, self.retries + 2):
                try:
                    self.attempt(item)
                except Exception as exc:
                    last = number > self.retries
                    self.outcome(item, number, f"{type(exc).__name__}: {exc}".splitlines()[0], last)
                    if last or self._stopping.wait(delay):
                        break
                    delay *= 2
                else:
                    self.outcome(item, number, None, True)
                    break
