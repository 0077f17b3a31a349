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

from .._version import __version__
from ..models import MonitorSettings
from .cells import INJECTED_TAG, PAPERMILL_INJECTED_TAG, executed
from .notebook import tags_of, validate, write_notebook

__all__ = ["INJECTED_TAG", "Conversion", "convert", "write_notebook"]

PARAMETERS_TAG = "parameters"


@dataclass(frozen=True)
class Conversion:
    notebook: dict[str, Any]
    has_parameters_cell: bool
    code_cells: int


def _cell(name: str, source: str, with_id: bool) -> dict[str, Any]:
    lines = source.splitlines(keepends=True)
    cell: dict[str, Any] = {
        "cell_type": "code",
        "execution_count": None,
        "metadata": {"jupyter": {"source_hidden": True}, "jupyter_promote": {"role": name}, "tags": [INJECTED_TAG]},
        "outputs": [],
        "source": lines,
    }
    if with_id:
        cell["id"] = f"jupyter-promote-{name}"
    return cell


def convert(nb: dict[str, Any], monitor: MonitorSettings, *, deterministic: bool = False) -> Conversion:
    """Return the job notebook for ``nb`` (which is not modified)."""
    job = copy.deepcopy(nb)
    cells = [c for c in job["cells"] if INJECTED_TAG not in tags_of(c)]
    with_id = int(job.get("nbformat_minor", 0)) >= 5
    params_at = next((i for i, c in enumerate(cells) if PARAMETERS_TAG in tags_of(c)), None)
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
        while after < len(cells) and PAPERMILL_INJECTED_TAG in tags_of(cells[after]):
            after += 1
        seed = _cell(
            "seed",
            "# jupyter-promote: seed from the `seed` parameter when there is one (injected)\n"
            '_promote_runtime.seed(globals().get("seed"))',
            with_id,
        )
        cells.insert(after, seed)
    cells.insert(0, setup)
    cells.append(_cell("finish", "# jupyter-promote: flush the monitor (injected)\n_promote_runtime.finish()", with_id))
    job["cells"] = cells
    job.setdefault("metadata", {})["jupyter_promote"] = {
        "version": __version__,
        "monitor": monitor.to_json(),
        "deterministic": deterministic,
    }
    validate(job, "the job notebook")
    code = sum(1 for c in cells if executed(c))
    return Conversion(job, params_at is not None, code)
