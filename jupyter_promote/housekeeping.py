"""Housekeeping: finished jobs older than an age, found and removed with their run directories.

A job that has not ended (pending, queued, running, as its events and its target say) is never removed.
Removal is all or nothing per job: the run directory is first renamed aside (one atomic step, so nothing
reads a half-deleted job), then deleted.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError
from .models import JobRecord
from .rundir import RunDir

#: What ``--state`` accepts: a final state, or all of them.
PRUNE_STATES = ("succeeded", "failed", "cancelled", "all")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


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


def ended_at(record: JobRecord) -> float:
    """When a finished job ended (its last update, or its creation, for a record that never said)."""
    return record.finished_at or record.updated_at or record.created_at


def prunable(
    runs: list[RunDir], older_than_s: float, state: str = "all", now: float | None = None
) -> Iterator[Prunable]:
    """The finished jobs among ``runs`` that ended more than ``older_than_s`` ago, in ``state`` (or any)."""
    if state not in PRUNE_STATES:
        raise UsageError(f"--state {state!r}: one of {', '.join(PRUNE_STATES)}", subject="state")
    now = time.time() if now is None else now
    for run in runs:
        record = run.read()
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
