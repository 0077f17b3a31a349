"""Convert a notebook into a job notebook: the user's cells plus injected, tagged cells.

Order of the job notebook::

    [setup]  injected: start the monitor (and seed, when the notebook has no parameters cell)
    ...      the user's cells
    [parameters]           the user's, tag kept, so ``papermill -p`` works on the job notebook
    [injected-parameters]  papermill's, at run time
    [seed]   injected: seed from the ``seed`` parameter, once parameters are known
    ...
    [finish] injected: flush the monitor

Converting a job notebook again replaces the injected cells (idempotent).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import nbformat

from .._version import __version__
from ..models import MonitorSettings

INJECTED_TAG = "jupyter-promote-injected"
PARAMETERS_TAG = "parameters"
PAPERMILL_INJECTED_TAG = "injected-parameters"


@dataclass(frozen=True)
class Conversion:
    notebook: Any
    has_parameters_cell: bool
    code_cells: int


def _cell(name: str, source: str, with_id: bool) -> Any:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = [INJECTED_TAG]
    cell.metadata["jupyter"] = {"source_hidden": True}
    cell.metadata["jupyter_promote"] = {"role": name}
    if with_id:
        cell["id"] = f"jupyter-promote-{name}"
    else:
        cell.pop("id", None)
    return cell


def _tags(cell: Any) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def convert(nb: Any, monitor: MonitorSettings, *, deterministic: bool = False) -> Conversion:
    """Return the job notebook for ``nb`` (which is not modified)."""
    job = copy.deepcopy(nb)
    job.cells = [c for c in job.cells if INJECTED_TAG not in _tags(c)]
    with_id = (job.nbformat, job.nbformat_minor) >= (4, 5)
    params_at = next((i for i, c in enumerate(job.cells) if PARAMETERS_TAG in _tags(c)), None)
    settings = json.dumps(monitor.to_json(), sort_keys=True)
    seed_expr = 'globals().get("seed")' if params_at is None else "None"
    setup = _cell(
        "setup",
        "# jupyter-promote: job setup (injected; `jupyter promote convert` rewrites this cell)\n"
        "import jupyter_promote.runtime as _promote_runtime\n"
        f"_promote_runtime.setup(monitor={settings}, deterministic={deterministic!r}, seed={seed_expr})",
        with_id,
    )
    if params_at is not None:
        after = params_at + 1
        while after < len(job.cells) and PAPERMILL_INJECTED_TAG in _tags(job.cells[after]):
            after += 1
        seed = _cell(
            "seed",
            "# jupyter-promote: seed from the `seed` parameter when there is one (injected)\n"
            '_promote_runtime.seed(globals().get("seed"))',
            with_id,
        )
        job.cells.insert(after, seed)
    job.cells.insert(0, setup)
    job.cells.append(
        _cell("finish", "# jupyter-promote: flush the monitor (injected)\n_promote_runtime.finish()", with_id)
    )
    job.metadata["jupyter_promote"] = {"version": __version__, "monitor": monitor.to_json(), "deterministic": deterministic}
    nbformat.validate(job)
    code = sum(1 for c in job.cells if c.cell_type == "code" and c.source.strip())
    return Conversion(job, params_at is not None, code)


def write_notebook(nb: Any, path: str) -> None:
    """Write a notebook atomically (a partial file never appears at ``path``)."""
    import os
    import tempfile

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".job-", suffix=".ipynb", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            nbformat.write(nb, f)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
