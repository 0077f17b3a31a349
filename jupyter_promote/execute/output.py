"""``output.ipynb`` as papermill's output reads: the notebook's own cells, marked where the job stopped.

papermill writes the executed job notebook as it goes. When the execution is over, the runner rewrites it:

- jupyter-promote's injected cells (setup, seed, finish) are left out, so the output re-runs where
  jupyter-promote is not installed and holds only what the user wrote and papermill injected;
- a cell that was running when the job was stopped (its time limit, a cancel, a kernel that died) is marked
  as papermill marks a failed cell (``metadata.papermill``: status ``failed``, exception true) with an error
  output that says why, and the notebook's ``metadata.papermill.exception`` is true;
- ``metadata.trusted`` is dropped: a job's output is not trusted to run its HTML and JavaScript when opened.

The file is replaced atomically; a notebook that cannot be read is left as it is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..job.cells import INJECTED_TAG
from ..runtime.masking import NOTEBOOK_STRUCTURE, mask_tree


def _mark_stopped(cell: dict[str, Any], ename: str, message: str) -> None:
    outputs = cell.setdefault("outputs", [])
    if any(isinstance(o, dict) and o.get("output_type") == "error" for o in outputs):
        return  # the kernel said why already (an interrupt, the monitor's error)
    papermill = cell.setdefault("metadata", {}).setdefault("papermill", {})
    papermill.update(status="failed", exception=True)
    outputs.append({"output_type": "error", "ename": ename, "evalue": message, "traceback": [f"{ename}: {message}"]})


def finish_output(
    path: str | os.PathLike[str], *, stopped_index: int | None = None, ename: str = "", message: str = ""
) -> bool:
    """Rewrite the output notebook at ``path``; ``stopped_index`` is the index (in the job notebook, which
    papermill's output keeps while no error marker was added) of the cell running when the job was stopped.
    Returns whether the file was rewritten."""
    target = Path(path)
    try:
        nb = json.loads(target.read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return False
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        return False
    if (
        stopped_index is not None
        and 0 <= stopped_index < len(cells)
        and cells[stopped_index].get("cell_type") == "code"
    ):
        _mark_stopped(cells[stopped_index], ename or "JobStopped", message)
        metadata = nb.setdefault("metadata", {})
        if isinstance(metadata.get("papermill"), dict):
            metadata["papermill"]["exception"] = True
    kept = [c for c in cells if INJECTED_TAG not in (c.get("metadata", {}).get("tags") or [])]
    nb["cells"] = mask_tree(kept, NOTEBOOK_STRUCTURE)  # the job's secrets never stay in it
    if isinstance(nb.get("metadata"), dict):
        nb["metadata"].pop("trusted", None)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return True
