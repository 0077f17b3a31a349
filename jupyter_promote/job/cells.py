"""Which cells are the notebook's own code cells, and how a person numbers them.

One rule for every place that names a cell (``check``, the progress line, the verdict, the sidebar,
notifications, MLflow): the code cells nbclient executes (not empty, not tagged ``skip-execution``),
without the cells jupyter-promote or papermill injected, numbered from 1 in the notebook's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Cells jupyter-promote injects into a job notebook (setup, seed, finish).
INJECTED_TAG = "jupyter-promote-injected"
#: The cell papermill injects with the parameters given on the command line.
PAPERMILL_INJECTED_TAG = "injected-parameters"
#: nbclient's default tag for cells it does not execute.
SKIP_TAG = "skip-execution"


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _tags(cell: Mapping[str, Any]) -> list[str]:
    metadata = cell.get("metadata")
    tags = metadata.get("tags") if isinstance(metadata, Mapping) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def executed(cell: Mapping[str, Any]) -> bool:
    """Whether nbclient executes ``cell``: a code cell with some source, not tagged ``skip-execution``."""
    return cell.get("cell_type") == "code" and bool(_source(cell).strip()) and SKIP_TAG not in _tags(cell)


def injected(cell: Mapping[str, Any]) -> bool:
    """Whether ``cell`` was injected by jupyter-promote or by papermill (not the notebook's own)."""
    return bool({INJECTED_TAG, PAPERMILL_INJECTED_TAG} & set(_tags(cell)))


def own_numbers(cells: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """``{index in cells: number}`` for the notebook's own executed code cells, numbered from 1."""
    own = [i for i, cell in enumerate(cells) if executed(cell) and not injected(cell)]
    return {index: number for number, index in enumerate(own, 1)}


def first_line(cell: Mapping[str, Any], limit: int = 80) -> str:
    """The cell's first line that is not blank, shortened to ``limit`` characters (what a person finds it by)."""
    line = next((line.strip() for line in _source(cell).splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"
