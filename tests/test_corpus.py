"""Every notebook of papermill's own test corpus through convert and run: runs, or refused in one line."""

from __future__ import annotations

import pytest
from conftest import CORPUS, job

NOTEBOOKS = sorted(CORPUS.glob("*.ipynb"))
#: what each notebook of the corpus must do: "succeeded", "failed" (with the failing cell named) or "refused"
EXPECTED = {
    "binder.ipynb": "failed",  # shells out to papermill with paths of papermill's repository
    "complex_parameters.ipynb": "failed",  # its parameters cell is not valid Python on its own
    "test_logging.ipynb": "failed",  # imports ggplot, which is not installed
    "broken.ipynb": "failed",
    "broken1.ipynb": "failed",
    "broken2.ipynb": "failed",
    "line_magic_error.ipynb": "failed",
    "notimplemented_translator.ipynb": "refused",
    "sysexit1.ipynb": "failed",
    # systemexit.ipynb: a bare `raise SystemExit` is a clean stop, as papermill says
    # keyboard_interrupt.ipynb: only sleeps 60 s, and succeeds
    "read_check.ipynb": "failed",
}


def test_corpus_is_present():
    assert len(NOTEBOOKS) >= 20, f"papermill's notebooks not found at {CORPUS}; set PROMOTE_CORPUS"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_corpus_notebook(cli, tmp_path, notebook):
    expected = EXPECTED.get(notebook.name, "succeeded")
    converted = cli("convert", str(notebook), "-o", str(tmp_path / "job.ipynb"))
    assert "Traceback" not in converted.stderr
    result = cli("run", str(notebook), timeout=300)
    assert "Traceback" not in result.stderr, result.stderr
    if expected == "refused":
        assert converted.returncode == 2 and result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and notebook.name in result.stderr
        return
    assert converted.returncode == 0, converted.stderr
    record = job(cli.only_run())
    assert record["state"] == expected, (record, result.stderr)
    if expected == "failed":
        assert result.returncode == 1
        assert "cell" in record["message"], record["message"]
    else:
        assert result.returncode == 0
