"""Watching a job from its runner, outside the kernel: the kernel's time limit, cancellation, a kernel that
stops answering, the monitor's fatal decisions (:class:`Supervisor`); and the runner's own heartbeat
(:class:`Pulse`), by which a follower tells a stopped or hung runner from a busy kernel.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Any

from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.events import EventLog, EventTail

KILL_GRACE_S = 20.0  # how long a cell interrupted by the monitor may take to stop before its kernel is killed


class Supervisor:
    """Watches the kernel from outside it, in a thread of the runner."""

    def __init__(self, run: RunDir, record: JobRecord, log: EventLog) -> None:
        self.run = run
        self.log = log
        self.deadline = time.monotonic() + record.resources.time_limit_s if record.resources.time_limit_s else None
        self.stall_timeout = record.monitor.stall_timeout_s
        self.silence_limit = record.monitor.stall_timeout_s + 3 * record.monitor.heartbeat_s
        self.kernel_pid: int | None = None
        self.stop_reason: str | None = None  # "cancelled" or "timeout"
        self.fatal: dict[str, Any] | None = None  # the monitor alert that failed the job
        self._fatal_at: float | None = None
        self._last_kernel_event = time.monotonic()
        self._tail = EventTail(str(run.events))
        self._done = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._loop, name="promote-supervisor", daemon=True).start()

    def close(self) -> None:
        self._done.set()

    def stop(self, reason: str) -> None:
        """Stop the job for ``reason`` (cancelled, timeout): kill the kernel, papermill then raises."""
        if self.stop_reason is None:
            self.stop_reason = reason
        if self.kernel_pid is None:
            raise KeyboardInterrupt  # no kernel yet: unwind the runner's main thread
        self._kill_kernel()

    def _kill_kernel(self) -> None:
        pid = self.kernel_pid
        if pid is None:
            return
        try:
            if os.getpgid(pid) == pid:  # jupyter_client starts kernels in their own session
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _loop(self) -> None:
        from . import papermill_engine as engine  # imported by run() already

        while not self._done.wait(0.5):
            now = time.monotonic()
            for event in self._tail.read():
                if event["type"] in ("heartbeat", "step", "metric", "gpu", "alert") and event.get("source") != "runner":
                    self._last_kernel_event = now
                if event["type"] == "heartbeat" and event.get("started"):
                    self.kernel_pid = int(event["pid"])
                if event["type"] == "alert" and event.get("action") == "fail" and self.fatal is None:
                    self.fatal, self._fatal_at = event, now
            if self.deadline is not None and now > self.deadline and self.stop_reason is None:
                self.stop_reason = "timeout"
                self._kill_kernel()
            if self._fatal_at is not None and now - self._fatal_at > KILL_GRACE_S:
                self._kill_kernel()  # the interrupted cell did not stop
                self._fatal_at = None
            tracker = engine.active_tracker
            running = tracker is not None and tracker.current is not None
            if (
                running
                and self.kernel_pid
                and self.fatal is None
                and now - self._last_kernel_event > self.silence_limit
            ):
                # the kernel stopped answering altogether (a hung C call holding the GIL): judge from outside
                self.fatal = self.log.emit(
                    "alert",
                    kind="stall",
                    action="fail",
                    source="runner",
                    message=f"the kernel sent nothing for {now - self._last_kernel_event:.0f} s "
                    f"(stall timeout {self.stall_timeout:g} s); it was killed",
                )
                self._kill_kernel()


class Pulse:
    """The runner's own heartbeat (``source: runner``) every ``heartbeat_s``, from its start to its final
    event: a follower tells a runner that is stopped or hung (SIGSTOP, a frozen node) from a busy kernel."""

    def __init__(self, log: EventLog, heartbeat_s: float) -> None:
        self.log = log
        self.heartbeat_s = heartbeat_s
        self._done = threading.Event()

    def __enter__(self) -> Pulse:
        threading.Thread(target=self._beat, name="promote-pulse", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()

    def _beat(self) -> None:
        while True:
            with contextlib.suppress(OSError):  # a full disk: the job's own events say what happens next
                self.log.emit("heartbeat", source="runner")
            if self._done.wait(self.heartbeat_s):
                return
