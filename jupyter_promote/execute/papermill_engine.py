"""The ``promote`` papermill engine: cell events from outside the kernel, through nbclient's hooks.

Registered in the ``papermill.engine`` entry point group, so ``papermill --engine promote`` uses it too.
Because the hooks run in the papermill process, a kernel that dies still leaves its last ``cell``
event (start) behind.

Cells are numbered as a person counts them (:mod:`jupyter_promote.job.cells`): the notebook's own code
cells that run, from 1. jupyter-promote's injected cells run without entering the kernel's history, so
every execution count is the one plain papermill gives the same notebook.
"""

from __future__ import annotations

import os
import time
from typing import Any

from nbclient.util import run_sync
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine
from papermill.log import logger
from papermill.utils import merge_kwargs, remove_args

from ..job.cells import INJECTED_TAG, executed, first_line, injected, own_numbers
from ..runtime.events import EventLog
from ..runtime.masking import mask


def event_log_from_env() -> EventLog:
    run_dir = os.environ.get("PROMOTE_RUN_DIR") or os.getcwd()
    path = os.environ.get("PROMOTE_EVENTS") or os.path.join(run_dir, "events.jsonl")
    return EventLog(path, os.environ.get("PROMOTE_JOB_ID") or "papermill")


class CellTracker:
    """Turns nbclient hook calls into ``cell`` events and remembers which cell is running.

    Only cells that execute are reported (nbclient calls ``on_cell_start`` for markdown, empty and
    skipped cells too). ``number``/``total`` count the notebook's own code cells; an injected cell has
    ``number`` None and ``injected`` true.
    """

    def __init__(self, log: EventLog, nb: Any) -> None:
        self.log = log
        self.cells = list(nb.cells)  # papermill inserts its error marker cells into nb.cells afterwards
        self.own_number = own_numbers(nb.cells)
        self.own_total = len(self.own_number)
        self.current: int | None = None
        self.started: float | None = None
        self.last_error: dict[str, Any] | None = None

    def describe(self, index: int) -> str:
        """The cell at ``index`` as a verdict names it: ``cell 3 of 4 ("1 / 0")``."""
        number = self.own_number.get(index)
        if number is None:
            cell = self.cells[index] if 0 <= index < len(self.cells) else {}
            role = (cell.get("metadata", {}).get("jupyter_promote") or {}).get("role")
            return f"jupyter-promote's injected {role} cell" if role else "papermill's injected parameters cell"
        quoted = first_line(self.cells[index])
        return f"cell {number} of {self.own_total}" + (f' ("{quoted}")' if quoted else "")

    def _base(self, cell: Any, index: int) -> dict[str, Any]:
        number = self.own_number.get(index)
        return {
            "index": index,
            "number": number,
            "total": self.own_total,
            # the same numbering under the names earlier event streams used
            "own_number": number,
            "own_total": self.own_total,
            "injected": injected(cell),
            "source": first_line(cell, 120),
        }

    def on_cell_start(self, cell: Any, cell_index: int, **_: Any) -> None:
        if not executed(cell):
            return  # markdown, raw, empty and skipped cells are not run
        self.current, self.started = cell_index, time.monotonic()
        self.log.emit("cell", phase="start", **self._base(cell, cell_index))

    def on_cell_executed(self, cell: Any, cell_index: int, execute_reply: Any = None, **_: Any) -> None:
        status = ((execute_reply or {}).get("content") or {}).get("status", "ok")
        duration = time.monotonic() - self.started if self.started is not None else 0.0
        self.log.emit(
            "cell", phase="end", ok=status == "ok", duration_s=round(duration, 4), **self._base(cell, cell_index)
        )
        self.current = None

    def on_cell_error(self, cell: Any, cell_index: int, execute_reply: Any = None, **_: Any) -> None:
        content = (execute_reply or {}).get("content") or {}
        self.last_error = {"index": cell_index, "ename": content.get("ename"), "evalue": content.get("evalue")}
        self.log.emit(
            "cell",
            phase="error",
            ename=content.get("ename"),
            evalue=mask(str(content.get("evalue", "")))[:500],  # masked whole: a prefix no longer matches
            **self._base(cell, cell_index),
        )


#: The tracker of the notebook executing in this process (read by the runner's supervisor).
active_tracker: CellTracker | None = None


class PromoteNotebookClient(PapermillNotebookClient):  # type: ignore[misc]  # papermill ships no type hints
    """papermill's client, executing jupyter-promote's injected cells outside the kernel's history."""

    async def async_execute_cell(self, cell: Any, cell_index: int, *args: Any, **kwargs: Any) -> Any:
        if INJECTED_TAG in cell.get("metadata", {}).get("tags", []):
            kwargs["store_history"] = False  # In [n] stays what the user's notebook counts
        return await super().async_execute_cell(cell, cell_index, *args, **kwargs)

    execute_cell = run_sync(async_execute_cell)


class PromoteEngine(NBClientEngine):  # type: ignore[misc]  # papermill ships no type hints
    """nbclient engine with jupyter-promote's cell hooks."""

    @classmethod
    def execute_managed_notebook(
        cls,
        nb_man: Any,
        kernel_name: str,
        log_output: bool = False,
        stdout_file: Any = None,
        stderr_file: Any = None,
        start_timeout: float = 60,
        execution_timeout: float | None = None,
        **kwargs: Any,
    ) -> Any:
        global active_tracker
        tracker = CellTracker(event_log_from_env(), nb_man.nb)
        active_tracker = tracker
        # as NBClientEngine.execute_managed_notebook does, with our client and hooks
        kwargs = remove_args(["input_path"], **kwargs)
        safe_kwargs = remove_args(["timeout", "startup_timeout"], **kwargs)
        final_kwargs = merge_kwargs(
            safe_kwargs,
            timeout=execution_timeout if execution_timeout else kwargs.get("timeout"),
            startup_timeout=start_timeout,
            kernel_name=kernel_name,
            log=logger,
            log_output=log_output,
            stdout_file=stdout_file,
            stderr_file=stderr_file,
            on_cell_start=tracker.on_cell_start,
            on_cell_executed=tracker.on_cell_executed,
            on_cell_error=tracker.on_cell_error,
        )
        # a kernel manager the runner started (its kernel booted while papermill loaded) is nbclient's to stop
        return PromoteNotebookClient(nb_man, **final_kwargs).execute(cleanup_kc=True)
