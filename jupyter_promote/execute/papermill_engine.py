"""The ``promote`` papermill engine: cell events from outside the kernel, through nbclient's hooks.

Registered in the ``papermill.engine`` entry point group, so ``papermill --engine promote`` uses it too.
Because the hooks run in the papermill process, a kernel that dies still leaves its last ``cell``
event (start) behind.
"""

from __future__ import annotations

import os
import time
from typing import Any

from papermill.engines import NBClientEngine

from ..job.convert import INJECTED_TAG, PAPERMILL_INJECTED_TAG
from ..runtime.events import EventLog


def code_cells(nb: Any) -> list[int]:
    """Indices of the cells nbclient will execute."""
    skip = "skip-execution"
    return [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and c.source.strip() and skip not in c.metadata.get("tags", [])
    ]


def event_log_from_env() -> EventLog:
    run_dir = os.environ.get("PROMOTE_RUN_DIR") or os.getcwd()
    path = os.environ.get("PROMOTE_EVENTS") or os.path.join(run_dir, "events.jsonl")
    return EventLog(path, os.environ.get("PROMOTE_JOB_ID") or "papermill")


class CellTracker:
    """Turns nbclient hook calls into ``cell`` events and remembers which cell is running."""

    def __init__(self, log: EventLog, nb: Any) -> None:
        self.log = log
        indices = code_cells(nb)
        self.number = {index: n for n, index in enumerate(indices, 1)}
        self.total = len(indices)
        # the notebook's own cells, without ours or papermill's injected ones: what a person counts as "cell 3 of 5"
        self.injected_tags = {INJECTED_TAG, PAPERMILL_INJECTED_TAG}
        own = [i for i in indices if not self.injected_tags & set(nb.cells[i].metadata.get("tags", []))]
        self.own_number = {index: n for n, index in enumerate(own, 1)}
        self.own_total = len(own)
        self.current: int | None = None
        self.started: float | None = None
        self.last_error: dict[str, Any] | None = None

    def _base(self, cell: Any, index: int) -> dict[str, Any]:
        tags = cell.metadata.get("tags", [])
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        return {
            "index": index,
            "number": self.number.get(index),
            "total": self.total,
            "own_number": self.own_number.get(index),
            "own_total": self.own_total,
            "injected": bool(self.injected_tags & set(tags)),
            "source": first[:120],
        }

    def on_cell_start(self, cell: Any, cell_index: int, **_: Any) -> None:
        self.current, self.started = cell_index, time.monotonic()
        self.log.emit("cell", phase="start", **self._base(cell, cell_index))

    def on_cell_executed(self, cell: Any, cell_index: int, execute_reply: Any = None, **_: Any) -> None:
        status = ((execute_reply or {}).get("content") or {}).get("status", "ok")
        duration = time.monotonic() - self.started if self.started is not None else None
        self.log.emit(
            "cell", phase="end", ok=status == "ok", duration_s=round(duration or 0.0, 4), **self._base(cell, cell_index)
        )
        self.current = None

    def on_cell_error(self, cell: Any, cell_index: int, execute_reply: Any = None, **_: Any) -> None:
        content = (execute_reply or {}).get("content") or {}
        self.last_error = {"index": cell_index, "ename": content.get("ename"), "evalue": content.get("evalue")}
        self.log.emit(
            "cell",
            phase="error",
            ename=content.get("ename"),
            evalue=str(content.get("evalue", ""))[:500],
            **self._base(cell, cell_index),
        )


#: The tracker of the notebook executing in this process (read by the runner's supervisor).
active_tracker: CellTracker | None = None


class PromoteEngine(NBClientEngine):  # type: ignore[misc]  # papermill ships no type hints
    """nbclient engine with jupyter-promote's cell hooks."""

    @classmethod
    def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, **kwargs: Any) -> Any:
        global active_tracker
        tracker = CellTracker(event_log_from_env(), nb_man.nb)
        active_tracker = tracker
        return super().execute_managed_notebook(
            nb_man,
            kernel_name,
            on_cell_start=tracker.on_cell_start,
            on_cell_executed=tracker.on_cell_executed,
            on_cell_error=tracker.on_cell_error,
            **kwargs,
        )
