"""Pruning whole groups: a sweep's, replicas' or contention's folder (``sweep.json``, the shared ``env`` and
``job.ipynb``, a run directory per task) goes when every task in it has ended long enough ago.

A group folder has no ``job.json`` of its own, so the per-job prune passes over it; this is its counterpart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..analysis.spread import SWEEP_FILE, task_dir
from ..housekeeping import UNREADABLE, ended_at, tree_size
from ..rundir import RunDir


@dataclass(frozen=True)
class PrunableGroup:
    """A group folder every task of which has ended, and how long ago the last one did."""

    path: Path
    id: str
    kind: str
    tasks: int
    age_s: float
    size: int


def prunable_groups(
    folders: Iterable[Path], older_than_s: float, state: str, now: float, *, skipped: Callable[[str], None]
) -> Iterator[PrunableGroup]:
    """The group folders among ``folders`` whose every task is finished (in ``state``, unless ``all``) and
    ended more than ``older_than_s`` before ``now``; a group with a task still running, missing or unreadable
    is kept, one that cannot be read is told to ``skipped`` in one line."""
    for folder in folders:
        if not (folder / SWEEP_FILE).is_file():
            continue
        try:
            sweep = json.loads((folder / SWEEP_FILE).read_text(encoding="utf-8"))
            records = [RunDir(folder / task_dir(task)).read() for task in sweep["tasks"]]
        except UNREADABLE as exc:
            skipped(f"skipped {folder}: {(str(exc).splitlines() or [type(exc).__name__])[0][:300]}")
            continue
        if not records or not all(r.state.final and state in ("all", r.state.value) for r in records):
            continue
        age = now - max(ended_at(record) for record in records)
        if age >= older_than_s:
            kind = str(sweep.get("kind", "grid"))
            yield PrunableGroup(folder, str(sweep.get("id", "")), kind, len(records), age, tree_size(folder))
