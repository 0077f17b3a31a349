"""Housekeeping: finished jobs older than an age, found and removed with their run directories.

A job that has not ended (pending, queued, running, as its events and its target say) is never removed.
Removal is all or nothing per job: the run directory is first renamed aside (one atomic step, so nothing
reads a half-deleted job), then deleted. A job that cannot be read (a torn job.json, a record of another
shape) is said in one line and passed over: one bad job never stops a pass over the others.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeGuard, TypeVar

from .errors import PromoteError, UsageError
from .models import JobRecord
from .rundir import RunDir

#: What ``--state`` accepts: a final state, or all of them.
PRUNE_STATES = ("succeeded", "failed", "cancelled", "all")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
#: What reading one job can raise when its files are not what a job's are: torn, of another shape, gone.
UNREADABLE = (PromoteError, OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError)
_Read = TypeVar("_Read")


def parse_age(text: str, what: str = "--older-than") -> float:
    """``30d``, ``12h``, ``2w``, ``90m``, ``45s`` as seconds."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", str(text), re.IGNORECASE)
    if not match:
        raise UsageError(f"{what} {text!r}: not an age (use e.g. 30d, 12h, 2w)", subject=what)
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class Prunable:
    run: RunDir
    record: JobRecord
    age_s: float
    size: int


def readable(
    runs: Iterable[RunDir], read: Callable[[RunDir], _Read], skipped: Callable[[str], None]
) -> Iterator[tuple[RunDir, _Read]]:
    """Each of ``runs`` with what ``read`` makes of it; one that cannot be read is told to ``skipped`` in one
    line (its run directory and why) and passed over."""
    for run in runs:
        try:
            value = read(run)
        except UNREADABLE as exc:
            why = (str(exc).splitlines() or [type(exc).__name__])[0].removeprefix(f"{run.job_json}: ")
            skipped(f"skipped {run.path}: {why[:300]}")
            continue
        yield run, value


def _time(value: object) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def ended_at(record: JobRecord) -> float:
    """When a finished job ended: its end, else its last update, else its creation, the first of them that
    is a time (a record written by a bug may hold text there); a record that holds none ended now."""
    times = (record.finished_at, record.updated_at, record.created_at)
    return next((float(t) for t in times if _time(t)), time.time())


def prunable(
    runs: list[RunDir],
    older_than_s: float,
    state: str = "all",
    now: float | None = None,
    *,
    skipped: Callable[[str], None],
) -> Iterator[Prunable]:
    """The finished jobs among ``runs`` that ended more than ``older_than_s`` ago, in ``state`` (or any);
    one that cannot be read is told to ``skipped`` (see :func:`readable`) and kept."""
    if state not in PRUNE_STATES:
        raise UsageError(f"--state {state!r}: one of {', '.join(PRUNE_STATES)}", subject="state")
    now = time.time() if now is None else now
    for run, record in readable(runs, RunDir.read, skipped):
        if not record.state.final or (state not in ("all", record.state.value)):
            continue
        age = now - ended_at(record)
        if age >= older_than_s:
            yield Prunable(run, record, age, tree_size(run.path))


def remove(run: RunDir) -> None:
    """Remove one job's run directory, renamed aside first so that it is gone at once or not at all."""
    aside = run.path.with_name(f".pruned-{run.path.name}")
    os.replace(run.path, aside)
    shutil.rmtree(aside, ignore_errors=True)


def tree_size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def human_size(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"
