"""Sends notices off the job's path: one background thread, retries with back-off, every attempt recorded.

A failure to notify is logged (and written to ``notifications.jsonl`` in the run directory) and retried; it
never fails, slows or blocks the job.
"""

from __future__ import annotations

import json
import logging
import queue
import smtplib
import ssl
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from .message import Notice
from .settings import Destination, Notifications

log = logging.getLogger("jupyter_promote")


class Delivery:
    """A queue of (notice, destination) and the thread that works through it."""

    def __init__(self, settings: Notifications) -> None:
        self.settings = settings
        self._queue: queue.Queue[tuple[Notice, Destination] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def send(self, notice: Notice, destination: Destination) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="jupyter-promote-notify", daemon=True)
                self._thread.start()
        self._queue.put((notice, destination))

    def close(self, timeout: float = 30.0) -> None:
        """Deliver what is queued (retries included) for at most ``timeout`` seconds, then stop."""
        if self._thread is None:
            return
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._stopping.set()
            log.warning("jupyter-promote: notifications still unsent after %.0f s were dropped", timeout)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._deliver(*item)

    def _deliver(self, notice: Notice, destination: Destination) -> None:
        delay = self.settings.retry_delay_s
        for attempt in range(1, self.settings.retries + 2):
            try:
                self._send_once(notice, destination)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}".splitlines()[0]
                self._record(notice, destination, attempt, error)
                last = attempt > self.settings.retries
                log.warning("jupyter-promote: notifying %s of job %s failed (attempt %d%s): %s", destination.name,
                            notice.job.get("id"), attempt, ", giving up" if last else "", error)  # fmt: skip
                if last or self._stopping.wait(delay):
                    return
                delay *= 2
            else:
                self._record(notice, destination, attempt, None)
                return

    def _send_once(self, notice: Notice, destination: Destination) -> None:
        if destination.kind == "email":
            self._email(notice, destination)
            return
        assert destination.url is not None
        body = json.dumps(notice.payload(destination.kind), default=str).encode()
        request = urllib.request.Request(destination.url, body, {"Content-Type": "application/json",
                                                                 "User-Agent": "jupyter-promote"})  # fmt: skip
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
        line = {"ts": round(time.time(), 3), "destination": destination.name, "kind": destination.kind,
                "event": notice.what, "attempt": attempt, "ok": error is None, "error": error}  # fmt: skip
        try:
            with open(Path(notice.run_dir) / "notifications.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")
        except OSError as exc:
            log.warning("jupyter-promote: could not record a notification in %s: %s", notice.run_dir, exc)
