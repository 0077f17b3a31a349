"""Judges a training loop's throughput against its own recent past: a drop raises one alert, with when it began.

The monitor's watcher thread hands this judge one sample per tick: the steps taken since the last sample
and the time between the *steps* themselves (the training thread stamps each step), not between the
ticks. So a sample measures the loop alone: a loop that ends, pauses or starts within a tick is not
diluted by the idle part, and a job of a few long steps yields exact, if rare, samples.

* A run of samples is a *segment*: a cell that trains. A new cell, or a pause with no step for longer
  than ``PAUSE_FACTOR`` baseline step times and two windows (an evaluation, a checkpoint), starts a new one.
  A segment's first sample starts at the first step seen in it: the time before its loop began (imports,
  data loading, the cells before) is never in a sample.
* Each cell has its own baseline: a cell that trains a heavier model than the cell before is not a drop.
* The start of a segment is warm-up (a data loader filling, a compile): its first window, or its first
  ``WARMUP_STEPS`` steps when steps are short, is never judged and never in the baseline. From then on
  every sample is judged: a loop of 6 ms steps is judged half a second in, not after a fixed 16 s.
* The baseline is the median of the last ``BASELINE_SAMPLES`` samples that were not themselves part of a
  drop; the recent rate is the median of the last ``RECENT_SAMPLES``. Both are medians: one slow step,
  a garbage collection, ±30 % jitter move neither.
* A drop is the recent rate under ``DROP_RATIO`` of the baseline; it is reported once, with the step and
  the time the first slow sample began, and re-armed once the rate is back over ``RECOVER_RATIO``.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import deque
from dataclasses import dataclass

WARMUP_STEPS = 50
MIN_BASELINE_SAMPLES = 2
BASELINE_SAMPLES = 60
RECENT_SAMPLES = 3
DROP_RATIO = 0.5
RECOVER_RATIO = 0.8
PAUSE_FACTOR = 50.0


@dataclass(frozen=True)
class Drop:
    """A throughput drop: the recent rate, the baseline, and where the first slow sample began."""

    steps_per_s: float
    baseline: float
    since_step: int
    since_s: float  # seconds into the job
    since_wall: float  # time.time() of the same moment

    def message(self, cell: str) -> str:
        """The alert's text; ``cell`` names the cell that trains (``cell 3 (`train(model)`)``)."""
        began = time.strftime("%H:%M:%S", time.localtime(self.since_wall))
        return (
            f"throughput dropped to {self.steps_per_s:.3g} steps/s in {cell}, {self.steps_per_s / self.baseline:.0%} "
            f"of that cell's own baseline of {self.baseline:.3g} steps/s, since step {self.since_step} ({began}, "
            f"{self.since_s:.0f} s into the job); look for contention, throttling or a slower input pipeline"
        )


class ThroughputJudge:
    """Throughput samples in, at most one :class:`Drop` per drop out.

    Parameters
    ----------
    window_s
        The warm-up at the start of each segment, in seconds of training.
    started
        ``time.monotonic()`` when the job started (for "seconds into the job").
    """

    def __init__(self, window_s: float, started: float) -> None:
        self.window_s = window_s
        self.started = started
        self._baseline: deque[float] = deque(maxlen=BASELINE_SAMPLES)
        self._recent: deque[tuple[float, int, float]] = deque(maxlen=RECENT_SAMPLES)  # (rate, first step, t0)
        self._segment = -1
        self._origin = 0  # the step count when this segment began: its loop has not stepped yet
        self._segment_start: tuple[int, float] | None = None  # (steps, time) where this segment's loop began
        self._last: tuple[int, float] | None = None  # (steps, time of that step)
        self._paused = False
        self._rate: float | None = None  # the latest sample's, warm-up included
        self.dropped = False

    def observe(self, segment: int, steps: int, step_at: float, now: float) -> Drop | None:
        """The loop at a tick: the segment (cell) it is in, its step count, the time of its last step, now."""
        if segment != self._segment:  # a new cell: its own warm-up and its own baseline, from its first step
            self._segment, self._last, self._paused, self._origin = segment, None, False, steps
            self._baseline.clear()
            self.dropped = False
            self._restart()
        last = self._last
        if last is None:  # the loop starts at its first step seen in this cell, never earlier (no idle time)
            if steps != self._origin:
                self._last = (steps, step_at)
            return None
        if last is not None and steps == last[0]:
            self._paused = self._paused or now - step_at > self._pause_after()
            return None
        if steps < last[0] or self._paused:  # a pause is over: a new warm-up from here
            self._last, self._paused = (steps, step_at), False
            self._restart()
            return None
        done, elapsed = steps - last[0], step_at - last[1]
        self._last = (steps, step_at)
        if elapsed <= 0:
            return None
        self._rate = done / elapsed
        if self._segment_start is None:
            self._segment_start = last
        if step_at - self._segment_start[1] < self.window_s and steps - self._segment_start[0] < WARMUP_STEPS:
            return None  # warm-up
        return self._judge(self._rate, last[0] + 1, last[1])

    def _restart(self) -> None:
        self._segment_start, self._rate = None, None
        self._recent.clear()

    def _pause_after(self) -> float:
        """No step for this long is a pause (an evaluation, a checkpoint), not a slower loop; before the
        loop's pace is known (a first long step), nothing is."""
        rate = statistics.median(self._baseline) if len(self._baseline) >= MIN_BASELINE_SAMPLES else self._rate
        return math.inf if rate is None else max(PAUSE_FACTOR / rate, 2 * self.window_s)

    def _judge(self, rate: float, first_step: int, t0: float) -> Drop | None:
        self._recent.append((rate, first_step, t0))
        drop = None
        if len(self._baseline) >= MIN_BASELINE_SAMPLES and len(self._recent) == RECENT_SAMPLES:
            baseline = statistics.median(self._baseline)
            recent = statistics.median(r for r, _, _ in self._recent)
            if not self.dropped and recent < DROP_RATIO * baseline:
                self.dropped = True
                slow = [(s, t) for r, s, t in self._recent if r < DROP_RATIO * baseline]
                since_step, since = slow[0]
                drop = Drop(
                    recent, baseline, since_step, since - self.started, time.time() - (time.monotonic() - since)
                )
            elif self.dropped and recent > RECOVER_RATIO * baseline:
                self.dropped = False
        if not self.dropped and (
            len(self._baseline) < MIN_BASELINE_SAMPLES or rate >= DROP_RATIO * statistics.median(self._baseline)
        ):
            self._baseline.append(rate)
        return drop
