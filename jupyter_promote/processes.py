"""Processes on this machine, told apart from a later process that was given the same pid.

A process is known by its pid and its start time, as psutil knows it on Linux and macOS alike: a pid
the kernel has since handed to another process reads as gone, and so does a zombie (ended, not yet
reaped). The start time is kept in seconds since this machine booted, so that setting the clock (NTP)
while a job runs does not make it look like another process; a handle written before this module used
psutil holds Linux clock ticks (``start_ticks``) and still reads (:func:`start_of`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import psutil

#: Start times closer than this are the same start: half the clock's resolution on Linux (1/100 s ticks),
#: far above the rounding of (seconds since the epoch - boot time).
SAME_START_S = 0.005
#: The key of a handle that holds :func:`start_time`; ``start_ticks`` held Linux clock ticks before.
STARTED_KEY = "started"


def start_time(pid: int) -> float | None:
    """When ``pid`` started, in seconds since this machine booted; None when there is no such process."""
    try:
        return _since_boot(pid)
    except psutil.Error:
        return None


def alive(pid: int, start: float | None) -> bool:
    """Whether the process that started at ``start`` (from :func:`start_time`) as ``pid`` still runs: False for
    a zombie, and for another process that was given the pid since."""
    if start is None:
        return False
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return abs(_since_boot(pid) - start) < SAME_START_S
    except psutil.Error:  # gone, a zombie psutil cannot read, or not ours to read
        return False


def start_of(handle: Mapping[str, Any]) -> float | None:
    """The start time a handle records: :data:`STARTED_KEY`, or the clock ticks of a handle written before."""
    start = handle.get(STARTED_KEY)
    if isinstance(start, (int, float)):
        return float(start)
    ticks = handle.get("start_ticks")
    if isinstance(ticks, int) and hasattr(os, "sysconf"):
        return ticks / os.sysconf("SC_CLK_TCK")
    return None


def _since_boot(pid: int) -> float:
    """``pid``'s start in seconds since boot. psutil gives it since the epoch, as the boot time plus the
    time from boot; the boot time moves when the clock is set, so it is read before and after."""
    for _ in range(3):
        boot: float = psutil.boot_time()
        created: float = psutil.Process(pid).create_time()  # a fresh object each time: it caches the create time
        if psutil.boot_time() == boot:
            return created - boot
    return created - boot
