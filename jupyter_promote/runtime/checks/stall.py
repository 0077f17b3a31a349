"""Stall: a running cell with no optimizer step and no cell progress for ``stall_timeout_s`` fails the job.

Checked from the watcher thread; the Python stacks of every thread are saved in the run directory
(``stacks-<time>.txt``) and named in the alert, so a hang says where it hangs.
"""

from __future__ import annotations

import faulthandler
import os
import time
from dataclasses import dataclass

from ..settings import action, setting
from .base import Check, CheckFailure, MonitorContext


class StallError(CheckFailure):
    """No progress for longer than the stall timeout."""


@dataclass(frozen=True)
class StallSettings:
    stall_timeout_s: float = setting(
        600.0, minimum=1.0, help="seconds without an optimizer step or cell progress before the job stalled"
    )
    stall_action: str = action("fail", help="a stall: fail the job, or only alert")


class StallCheck(Check[StallSettings]):
    name = "stall"
    kind = "stall"
    reason = "stall"
    settings_class = StallSettings
    action_setting = "stall_action"
    failure = StallError

    def __init__(self, monitor: MonitorContext, settings: StallSettings) -> None:
        super().__init__(monitor, settings)
        self.stalled = False

    def on_tick(self, now: float) -> None:
        idle = now - self.monitor.progress_at
        if self.monitor.busy and idle > self.settings.stall_timeout_s and not self.stalled:
            self.stalled = True
            stacks = self._dump_stacks()
            message = (
                f"no optimizer step and no cell progress for {idle:.0f} s "
                f"(stall timeout {self.settings.stall_timeout_s:g} s)"
                + (f"; Python stacks saved to {stacks}" if stacks else "")
            )
            self.fail_soon(message, idle_s=round(idle, 1), stacks=stacks or None)

    def _dump_stacks(self) -> str:
        """Every thread's Python stack into the run directory; the file's name, or "" when it could not be written."""
        path = os.path.join(self.monitor.run_dir, f"stacks-{int(time.time())}.txt")
        try:
            with open(path, "w") as f:
                faulthandler.dump_traceback(f, all_threads=True)
        except OSError:
            return ""
        return os.path.basename(path)
