"""Throughput drop: a training loop much slower than its own recent past raises one alert, with when it began.

The judging is :class:`..throughput.ThroughputJudge`'s; this check feeds it one sample per watcher tick
(the cell that trains, its step count, the time of its last step) and reports each drop it finds.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..cells import describe
from ..settings import action
from ..throughput import ThroughputJudge
from .base import Check, MonitorContext


@dataclass(frozen=True)
class ThroughputSettings:
    throughput_action: str = action("alert", help="a throughput drop: fail the job, or only alert")


class ThroughputCheck(Check[ThroughputSettings]):
    name = "throughput"
    kind = "throughput_drop"
    reason = "throughput"
    settings_class = ThroughputSettings
    action_setting = "throughput_action"

    def __init__(self, monitor: MonitorContext, settings: ThroughputSettings) -> None:
        super().__init__(monitor, settings)
        self.judge = ThroughputJudge(monitor.core.window_s, time.monotonic())

    def on_tick(self, now: float) -> None:
        segment, cell, line = self.monitor.cell
        drop = self.judge.observe(segment, self.monitor.steps, self.monitor.step_at, now)
        if drop is None:
            return
        self.fail_soon(
            drop.message(describe(cell, line)),
            cell=cell,
            cell_source=line,
            steps_per_s=round(drop.steps_per_s, 3),
            baseline=round(drop.baseline, 3),
            since_step=drop.since_step,
            since_s=round(drop.since_s, 1),
        )
