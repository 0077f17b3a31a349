"""Which cells are the notebook's own code cells, and how a person numbers them.

One rule for every place that names a cell (``check``, the progress line, the verdict, the sidebar,
notifications, MLflow): the code cells nbclient executes (not empty, not tagged ``skip-execution``),
without the cells jupyter-promote or papermill injected, numbered from 1 in the notebook's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .notebook import source_of, tags_of

#: Cells jupyter-promote injects into a job notebook (setup, seed, finish).
INJECTED_TAG = "jupyter-promote-injected"
#: The cell papermill injects with the parameters given on the command line.
PAPERMILL_INJECTED_TAG = "injected-parameters"
#: nbclient's default tag for cells it does not execute.
SKIP_TAG = "skip-execution"


def executed(cell: Mapping[str, Any]) -> bool:
    """Whether nbclient executes ``cell``: a code cell with some source, not tagged ``skip-execution``."""
    return cell.get("cell_type") == "code" and bool(source_of(cell).strip()) and SKIP_TAG not in tags_of(cell)


def injected(cell: Mapping[str, Any]) -> bool:
    """Whether ``cell`` was injected by jupyter-promote or by papermill (not the notebook's own)."""
    return bool({INJECTED_TAG, PAPERMILL_INJECTED_TAG} & set(tags_of(cell)))


def own_numbers(cells: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """``{index in cells: number}`` for the notebook's own executed code cells, numbered from 1."""
    own = [i for i, cell in enumerate(cells) if executed(cell) and not injected(cell)]
    return {index: number for number, index in enumerate(own, 1)}


def first_line(cell: Mapping[str, Any], limit: int = 80) -> str:
    """The cell's first line that is not blank, shortened to ``limit`` characters (what a person finds it by)."""
    line = next((line.strip() for line in source_of(cell).splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
