"""The runner's pulse, watched while its job runs: a silent runner is reported, then its job is stopped.

A runner that sends no heartbeat of its own for three of its heartbeats (and 5 s) is reported once as
``runner_silent``; one silent past its kernel's silence limit has stopped (SIGSTOP, a frozen node), and its
job is settled ``failed``/``unresponsive``. A runner that sends no pulse at all (an older one) is not judged.
"""

from __future__ import annotations

import time
from typing import Any

from ..events import JobView
from ..models import JobRecord, JobState
from ..runtime.events import EventLog


class RunnerSilence:
    """The runner's own heartbeats (``source: runner``), watched while the job runs: a runner that sends
    none for three of its heartbeats (and 5 s) is reported once (``runner_silent``); one silent past the
    kernel's silence limit (the stall timeout and three heartbeats, the runner's own rule for its kernel)
    has stopped (SIGSTOP, a frozen node) and its job is settled ``failed``/``unresponsive``. Jobs whose
    runner sends no pulse (an older runner) are not judged.
    """

    def __init__(self, record: JobRecord) -> None:
        heartbeat = record.monitor.heartbeat_s
        self.warn_after = 3 * heartbeat + 5
        self.limit = max(self.warn_after, record.monitor.stall_timeout_s + 3 * heartbeat)
        self.last: float | None = None
        self.warned = False

    def saw(self, event: dict[str, Any]) -> None:
        if event["type"] == "heartbeat" and event.get("source") == "runner":
            self.last, self.warned = time.monotonic(), False

    def check(self, view: JobView, log: EventLog) -> bool:
        """Report a silent runner; True when it has been silent too long (the job must be stopped)."""
        if view.state is not JobState.RUNNING:
            self.last = None  # back in the queue (requeued): a new runner will start its pulse again
            return False
        if self.last is None:
            return False
        quiet = time.monotonic() - self.last
        if quiet > self.limit:
            log.emit(
                "status",
                state="failed",
                reason="unresponsive",
                source="pipeline",
                message=f"the job's runner sent nothing for {quiet:.0f} s (stopped or hung); it was stopped",
            )
            return True
        if quiet > self.warn_after and not self.warned:
            self.warned = True
            log.emit(
                "alert",
                kind="runner_silent",
                action="alert",
                source="pipeline",
                message=f"the job's runner has sent nothing for {quiet:.0f} s; it is stopped or hung "
                f"(the job fails after {self.limit:.0f} s)",
            )
        return False
