"""What the job store wrote, published to browsers from the event loop: one bus message per job and run of
consecutive seqs, whichever thread the store wrote from (its writer thread, or the caller's).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Callable
from typing import Any

from .store import Stored

#: Called with a job's id and a batch of its new events, on the event loop: the server's event bus.
Publish = Callable[[str, list[dict[str, Any]]], None]


class StoredPublisher:
    """Queues what the store reports (:meth:`stored`) and publishes it in batches on ``loop``.

    ``loop`` is the server's event loop: the one running when this is made, or the one a job was last
    started on; with none (a manager used synchronously), what is stored is published at once.
    """

    def __init__(self, publish: Publish) -> None:
        self.publish = publish
        # what the store found new, in write order, until the event loop publishes it
        self._stored: collections.deque[Stored] = collections.deque()
        self._publish_soon = False
        self.loop: asyncio.AbstractEventLoop | None = None
        with contextlib.suppress(RuntimeError):
            self.loop = asyncio.get_running_loop()

    def stored(self, item: Stored) -> None:
        """The store wrote new events (in its writer thread, or the caller's): published from the event loop."""
        self._stored.append(item)
        if self._publish_soon:
            return
        loop: asyncio.AbstractEventLoop | None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = self.loop
        if loop is None:  # no event loop yet (a manager used synchronously): published at once
            self._publish_stored()
            return
        self._publish_soon = True
        with contextlib.suppress(RuntimeError):  # a loop already closed (the server stopped): nobody listens
            loop.call_soon_threadsafe(self._publish_stored)

    def _publish_stored(self) -> None:
        """What was stored since the last call, one bus message per job and run of consecutive seqs."""
        self._publish_soon = False
        batches: dict[str, list[list[dict[str, Any]]]] = {}
        while self._stored:
            job_id, events = self._stored.popleft()
            runs = batches.setdefault(job_id, [])
            if runs and int(runs[-1][-1]["seq"]) + 1 == int(events[0]["seq"]):
                runs[-1].extend(events)
            else:
                runs.append(list(events))
        for job_id, runs in batches.items():
            for events in runs:
                self.publish(job_id, events)
