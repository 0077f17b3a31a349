"""The job's side: which notices a job's events and its end make, for the destinations it chose."""

from __future__ import annotations

from typing import Any

from .delivery import Delivery
from .message import Notice
from .settings import Destination, Notifications


class Notifier:
    """One per door (the CLI, the server): hands notices to one :class:`Delivery`."""

    def __init__(self, settings: Notifications) -> None:
        self.settings = settings
        self.delivery = Delivery(settings)

    def alert(self, job: dict[str, Any], alert: dict[str, Any], run_dir: str | None) -> None:
        self._send(Notice("alert", job, alert=alert, run_dir=run_dir))

    def finished(self, job: dict[str, Any], run_dir: str | None) -> None:
        state = str(job.get("state"))
        parity = (job.get("parity") or {}).get("verdict")
        what = "parity_failed" if state == "succeeded" and parity == "fail" else state
        self._send(Notice(what, job, run_dir=run_dir))

    def close(self, timeout: float = 30.0) -> None:
        self.delivery.close(timeout)

    def _send(self, notice: Notice) -> None:
        names = notice.job.get("notify") or []
        if not names:
            return
        known = self.settings.parsed()
        for destination in (known[n] for n in names if n in known):
            if self._wants(destination, notice):
                self.delivery.send(notice, destination)

    @staticmethod
    def _wants(destination: Destination, notice: Notice) -> bool:
        return notice.what in destination.on
