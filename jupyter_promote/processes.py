"""Processes on this machine, told apart from a later process that was given the same pid."""

from __future__ import annotations


def start_ticks(pid: int) -> int | None:
    """The process start time in clock ticks (/proc/PID/stat field 22), to tell a pid from its reuse."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int, ticks: int | None) -> bool:
    """Whether the process that started at ``ticks`` as ``pid`` still runs (a zombie does not)."""
    if ticks is None or start_ticks(pid) != ticks:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
