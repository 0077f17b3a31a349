"""Sends notices off the job's path: one background thread, retries with back-off, every attempt recorded.

A failure to notify is logged (and written to ``notifications.jsonl`` in the run directory) and retried; it
never fails, slows or blocks the job.
"""

from __future__ import annotations

import json
import logging
import smtplib
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path

from ..background import Retrying
from .message import Notice
from .settings import Destination, Notifications

log = logging.getLogger("jupyter_promote")


class Delivery:
    """Sends each (notice, destination) in one background thread, retried with back-off."""

    def __init__(self, settings: Notifications) -> None:
        self.settings = settings
        self._work: Retrying[tuple[Notice, Destination]] = Retrying(
            "notify", self._attempt, self._outcome, settings.retries, settings.retry_delay_s
        )

    def send(self, notice: Notice, destination: Destination) -> None:
        self._work.put((notice, destination))

    def close(self, timeout: float = 30.0) -> None:
        """Deliver what is queued (retries included) for at most ``timeout`` seconds, then stop."""
        self._work.close(timeout)

    def _attempt(self, item: tuple[Notice, Destination]) -> None:
        self._send_once(*item)

    def _outcome(self, item: tuple[Notice, Destination], attempt: int, error: str | None, last: bool) -> None:
        notice, destination = item
        self._record(notice, destination, attempt, error)
        if error is not None:
            log.warning(
                "jupyter-promote: notifying %s of job %s failed (attempt %d%s): %s",
                destination.name,
                notice.job.get("id"),
                attempt,
                ", giving up" if last else "",
                error,
            )

    def _send_once(self, notice: Notice, destination: Destination) -> None:
        if destination.kind == "email":
            self._email(notice, destination)
            return
        assert destination.url is not None
        body = json.dumps(notice.payload(destination.kind), default=str).encode()
        request = urllib.request.Request(
            destination.url, body, {"Content-Type": "application/json", "User-Agent": "jupyter-promote"}
        )
        with urllib.request.urlopen(request, timeout=self.settings.timeout_s) as response:
            response.read()

    def _email(self, notice: Notice, destination: Destination) -> None:
        s = self.settings
        context = ssl.create_default_context(cafile=s.smtp_ca_file or None)
        port = s.smtp_port or (465 if s.smtp_security == "ssl" else 25)
        smtp: smtplib.SMTP
        if s.smtp_security == "ssl":
            smtp = smtplib.SMTP_SSL(s.smtp_host, port, timeout=s.timeout_s, context=context)
        else:
            smtp = smtplib.SMTP(s.smtp_host, port, timeout=s.timeout_s)
        with smtp:
            if s.smtp_security == "starttls":
                smtp.starttls(context=context)
            if s.smtp_user:
                smtp.login(s.smtp_user, s.smtp_password() or "")
            smtp.send_message(notice.email(s.email_from, destination.to))

    @staticmethod
    def _record(notice: Notice, destination: Destination, attempt: int, error: str | None) -> None:
        if not notice.run_dir:
            return
        line = {
            "ts": round(time.time(), 3),
            "destination": destination.name,
            "kind": destination.kind,
            "event": notice.what,
            "attempt": attempt,
            "ok": error is None,
            "error": error,
        }
        try:
            with open(Path(notice.run_dir) / "notifications.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")
        except OSError as exc:
            log.warning("jupyter-promote: could not record a notification in %s: %s", notice.run_dir, exc)
