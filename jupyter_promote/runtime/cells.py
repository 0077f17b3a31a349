"""Which of the notebook's cells the kernel is running, named as the user counts them.

The kernel sees only each cell's source (IPython's ``pre_run_cell``): nbclient sends no cell id or index. The
job notebook (``job.ipynb`` in the run directory) holds the user's cells verbatim, beside our injected cells;
papermill's injected parameters are added at run time and are not in it. So the cells the kernel runs are
matched, in order, against the notebook's own code cells, numbered as the runner numbers them (non-empty code
cells without the ``skip-execution`` tag, injected cells aside, from 1): a cell that matches none (an injected
one, or a job run without its notebook at hand) is named by its first line alone.
"""

from __future__ import annotations

import json
import os
from typing import Any

# the rule of jupyter_promote.job.cells, repeated: the runtime imports nothing outside itself
_INJECTED_TAGS = {"jupyter-promote-injected", "injected-parameters"}
_SKIP_TAG = "skip-execution"
_FIRST_LINE_CHARS = 80


def own_code_cells(nb: dict[str, Any]) -> list[str]:
    """The sources of the notebook's own code cells that run, in order: cell ``n`` is at index ``n - 1``."""
    sources = []
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell.get("cell_type") == "code" and source.strip() and _SKIP_TAG not in tags and not tags & _INJECTED_TAGS:
            sources.append(source)
    return sources


def first_line(source: str) -> str:
    """A cell's first non-blank line, shortened: what a person searches the notebook for."""
    line = next((s.strip() for s in source.splitlines() if s.strip()), "")
    return line if len(line) <= _FIRST_LINE_CHARS else line[: _FIRST_LINE_CHARS - 1] + "…"


class CellNames:
    """Names the cells a job's kernel runs.

    Parameters
    ----------
    notebook
        The job notebook's path; when it cannot be read, cells are named by their first line only.
    """

    def __init__(self, notebook: str | None) -> None:
        self._sources: list[str] = []
        self._next = 0
        if notebook is not None and os.path.isfile(notebook):
            try:
                with open(notebook, encoding="utf-8") as f:
                    self._sources = own_code_cells(json.load(f))
            except (OSError, ValueError, AttributeError, TypeError):
                self._sources = []

    def started(self, source: str) -> tuple[int | None, str]:
        """The cell that starts running ``source``: its number (None when it is not one of the notebook's own
        cells) and its first line."""
        for index in range(self._next, len(self._sources)):
            if self._sources[index] == source:
                self._next = index + 1
                return index + 1, first_line(source)
        return None, first_line(source)


def describe(number: int | None, line: str) -> str:
    """``cell 3 (`train(model)`)``, or ``the cell `train(model)``` when its number is unknown."""
    if number is None:
        return f"the cell `{line}`" if line else "a cell"
    return f"cell {number} (`{line}`)" if line else f"cell {number}"
