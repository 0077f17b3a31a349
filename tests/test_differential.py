"""Differential tests: each notebook through plain ``papermill`` and through ``jupyter promote run --target
local``: papermill's own test notebooks (written by nobody here), the notebooks issue 24 describes, one
notebook per behaviour nbclient and papermill define (tests/notebooks/differential/behaviours/README.md), and
the notebooks of any folders named in ``PROMOTE_DIFFERENTIAL_EXTRA`` (``os.pathsep``-separated: a checkout of
another project's test notebooks, public tutorials; kept outside this repository under their own licences).

Asserted for each: the same outcome; for a failure, the cell we name is the one papermill's output marks;
the same outputs cell by cell and the same execution counts (injected cells aside). The agreement figures
are printed at the end of the run (tests/differential.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import differential
import pytest
from conftest import BIN, CORPUS, NOTEBOOKS, events, job

OURS = NOTEBOOKS / "differential"
#: papermill's notebooks left out, and why
LEFT_OUT = {
    "keyboard_interrupt.ipynb": "sleeps 60 s, then succeeds: the same as Sleep1s, a minute longer",
    "binder.ipynb": "runs papermill on paths of papermill's own repository",
}
#: (notebook, parameters): the notebooks the issue describes run with and without -p
PARAMETERS: dict[str, list[list[str]]] = {
    "numbering.ipynb": [[], ["x", "2"]],
    "overwritten_parameter.ipynb": [["lr", "0.1"]],
    "simple_execute.ipynb": [[], ["msg", "hello"]],
}


def _cases() -> list[tuple[Path, list[str]]]:
    notebooks = [n for n in sorted(CORPUS.glob("*.ipynb")) if n.name not in LEFT_OUT]
    notebooks += sorted((OURS / "issues").glob("*.ipynb")) + sorted((OURS / "behaviours").glob("*.ipynb"))
    for extra in filter(None, os.environ.get("PROMOTE_DIFFERENTIAL_EXTRA", "").split(os.pathsep)):
        notebooks += sorted(Path(extra).glob("*.ipynb"))
    return [(n, p) for n in notebooks for p in PARAMETERS.get(n.name, [[]])]


def _copy(notebook: Path, folder: Path) -> None:
    """The notebook into ``folder`` with the files beside it (data, modules; not the other notebooks)."""
    folder.mkdir()
    for item in notebook.parent.iterdir():
        if item.is_file() and (item == notebook or item.suffix != ".ipynb"):
            shutil.copy(item, folder / item.name)


CASES = _cases()


def _papermill(notebook: Path, folder: Path, parameters: list[str]) -> tuple[int, dict | None]:
    _copy(notebook, folder)
    pairs = [a for i in range(0, len(parameters), 2) for a in ("-p", *parameters[i : i + 2])]
    result = subprocess.run(
        [str(BIN / "papermill"), notebook.name, "output.ipynb", "-k", "python3", *pairs],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = folder / "output.ipynb"
    return result.returncode, differential.read(out) if out.exists() else None


def _named_cell(run: Path) -> int | None:
    """The number of the cell our verdict names as failed (from the events, and said in the message)."""
    failed = [e for e in events(run) if e["type"] == "cell" and e.get("phase") == "error" and not e.get("injected")]
    number = failed[-1]["number"] if failed else None
    message = job(run).get("message") or ""
    said = re.search(r"\bcell (\d+) of \d+", message)
    assert (int(said.group(1)) if said else None) == number or number is None, (message, number)
    return number if number is not None else (int(said.group(1)) if said else None)


@pytest.mark.parametrize(("notebook", "parameters"), CASES, ids=[f"{n.name}{'-p' if p else ''}" for n, p in CASES])
def test_papermill_and_promote_agree(cli, tmp_path, notebook, parameters):
    # Given a notebook, run by plain papermill in a folder of its own
    their_code, theirs = _papermill(notebook, tmp_path / "papermill", parameters)
    # When jupyter promote runs the same notebook, from a folder of its own, on the local target
    folder = tmp_path / "promote"
    _copy(notebook, folder)
    pairs = [a for i in range(0, len(parameters), 2) for a in ("-p", *parameters[i : i + 2])]
    result = cli("run", str(folder / notebook.name), "--target", "local", "--kernel", "python3", *pairs, timeout=300)
    assert "Traceback" not in result.stderr, result.stderr
    differential.FIGURES["notebooks"] += 1

    # Then the outcome is papermill's (a notebook we refuse in one line counts as a failure, as papermill's is)
    refused = result.returncode == 2 and not cli.runs.exists()
    if refused:
        assert their_code != 0 and len(result.stderr.strip().splitlines()) == 1, result.stderr
        differential.FIGURES["outcome agree"] += 1
        return
    run = cli.only_run()
    ours_ok = job(run)["state"] == "succeeded"
    assert ours_ok == (their_code == 0), (job(run), result.stderr[-2000:])
    differential.FIGURES["outcome agree"] += 1

    # and a failure names the cell papermill's output marks
    assert theirs is not None, "papermill wrote no output notebook"
    if not ours_ok:
        differential.FIGURES["failures"] += 1
        marked = differential.papermill_failing_cell(theirs)
        if marked is not None:
            assert _named_cell(run) == marked, (job(run)["message"], marked)
        differential.FIGURES["failing cell agree"] += 1

    # and every code cell's outputs and execution count are papermill's
    ours = differential.read(run / "output.ipynb")
    folders = (str(tmp_path / "papermill"), str(run / "work"), str(folder))
    differential.FIGURES["notebooks compared"] += 1
    differences = differential.compare_cells(theirs, ours, folders)
    assert not differences, "\n".join(differences)
    differential.FIGURES["notebooks outputs agree"] += 1
