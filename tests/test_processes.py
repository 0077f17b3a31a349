"""Process identity (pid + start time, through psutil): real processes, no stand-ins."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from jupyter_promote.processes import STARTED_KEY, alive, start_of, start_time


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])


def test_a_running_process_reads_as_itself_until_it_ends():
    process = _sleeper()
    try:
        start = start_time(process.pid)
        assert start is not None and alive(process.pid, start)
    finally:
        process.kill()
        process.wait()
    assert not alive(process.pid, start)
    assert start_time(process.pid) is None or start_time(process.pid) != start


def test_a_zombie_reads_as_gone():
    # Given a child that ended and was not reaped yet (a zombie)
    process = _sleeper()
    start = start_time(process.pid)
    process.kill()
    deadline = time.monotonic() + 10
    while psutil.Process(process.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert psutil.Process(process.pid).status() == psutil.STATUS_ZOMBIE
        # Then it does not run, though its pid and start time are still there
        assert not alive(process.pid, start)
    finally:
        process.wait()


def test_a_pid_given_to_another_process_reads_as_a_different_process():
    # Given the identity of a process that ended, and another process now holding a pid with another start
    first = _sleeper()
    first_start = start_time(first.pid)
    first.kill()
    first.wait()
    time.sleep(0.05)  # a start time has 1/100 s resolution: the second starts at another one
    second = _sleeper()
    try:
        second_start = start_time(second.pid)
        assert first_start is not None and second_start is not None and second_start != first_start
        # Then the pid alone does not make it the same process: its start time differs
        assert not alive(second.pid, first_start)
        assert not alive(second.pid, second_start + 0.01)  # one clock tick later is another start
        assert not alive(second.pid, None)
        assert alive(second.pid, second_start)
    finally:
        second.kill()
        second.wait()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="clock ticks are Linux's")
def test_a_handle_written_with_clock_ticks_still_names_its_process():
    # Given a handle written before psutil: the start in clock ticks since boot (/proc/PID/stat field 22)
    process = _sleeper()
    try:
        with open(f"/proc/{process.pid}/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        legacy, current = (
            {"pid": process.pid, "start_ticks": ticks},
            {"pid": process.pid, STARTED_KEY: start_time(process.pid)},
        )
        # Then both read as the same running process, and a handle with neither reads as none
        assert alive(process.pid, start_of(legacy)) and alive(process.pid, start_of(current))
        assert start_of({"pid": process.pid}) is None
        assert not alive(process.pid, start_of({"pid": process.pid, "start_ticks": ticks + 1}))
    finally:
        process.kill()
        process.wait()
