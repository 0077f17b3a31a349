"""The verdict names the cell as the user counts it, and the output notebook reads as papermill's would.

Issue 24's example: code cells ``x = 1`` (tagged ``parameters``), ``print(x)``, ``1 / 0``, ``print('never')``
were reported as "cell 5 failed" (and "cell 6" with ``-p``) while the progress said "cell 3/4".
"""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import NOTEBOOKS, events, job

ISSUE = NOTEBOOKS / "differential" / "issues"


@pytest.mark.parametrize("parameters", [[], ["-p", "x", "2"]], ids=["plain", "with -p"])
def test_the_failing_cell_is_the_one_the_progress_showed(cli, tmp_path, parameters):
    # Given the issue's notebook, with and without a parameter that papermill injects as a cell of its own
    notebook = tmp_path / "numbering.ipynb"
    shutil.copy(ISSUE / "numbering.ipynb", notebook)
    # When it runs
    result = cli("run", str(notebook), *parameters)
    # Then the verdict names cell 3 of 4, quoting its first line, as the progress line counted it
    assert result.returncode == 1, result.stderr
    record = job(cli.only_run())
    assert record["message"] == 'cell 3 of 4 ("1 / 0") failed: ZeroDivisionError: division by zero', record
    assert "cell 3/4: 1 / 0" in result.stderr
    # and every cell event is one of the notebook's cells that ran, numbered from 1
    cells = [e for e in events(cli.only_run()) if e["type"] == "cell" and not e.get("injected")]
    assert {e["number"] for e in cells} == {1, 2, 3} and all(e["total"] == 4 for e in cells)


def test_markdown_empty_and_skipped_cells_are_not_counted_nor_reported(cli, tmp_path):
    # Given markdown, empty, blank and skip-execution cells before the failing one
    notebook = tmp_path / "gaps.ipynb"
    shutil.copy(ISSUE / "gaps.ipynb", notebook)
    result = cli("run", str(notebook))
    # Then the failing cell is the third that runs, and no event names a cell that did not run
    record = job(cli.only_run())
    assert record["message"].startswith('cell 3 of 4 ("def f():") failed: ZeroDivisionError'), record
    assert result.returncode == 1
    assert all(e["number"] is not None for e in events(cli.only_run()) if e["type"] == "cell" and not e["injected"])


def test_an_unknown_magic_keeps_ipythons_usage_error(cli, tmp_path):
    # Given a cell with a line magic IPython does not know (no error output, only an error reply)
    notebook = tmp_path / "unknown_magic.ipynb"
    shutil.copy(ISSUE / "unknown_magic.ipynb", notebook)
    cli("run", str(notebook))
    # Then the verdict says what IPython said, not a bare CellExecutionError
    message = job(cli.only_run())["message"]
    assert message.startswith('cell 2 of 3 ("%not_a_magic 1") failed: UsageError: Line magic function'), message


def test_the_output_notebook_is_the_users_with_papermills_counts_and_reruns_without_us(cli, tmp_path):
    # Given a notebook that succeeds
    notebook = tmp_path / "rich.ipynb"
    shutil.copy(ISSUE / "rich_outputs.ipynb", notebook)
    assert cli("run", str(notebook)).returncode == 0
    out = json.loads((cli.only_run() / "output.ipynb").read_text())
    # Then the output holds the user's cells only, counted 1, 2, 3, and nothing that imports jupyter_promote
    assert [c["execution_count"] for c in out["cells"]] == [1, 2, 3]
    assert not any("jupyter_promote" in "".join(c["source"]) for c in out["cells"])
    assert "trusted" not in out["metadata"]


def test_a_cell_stopped_by_the_time_limit_is_marked_as_papermill_marks_a_failure(cli):
    # Given a notebook whose third cell sleeps past the job's time limit
    result = cli("run", str(NOTEBOOKS / "hang.ipynb"), "--time", "8s")
    assert result.returncode == 1
    record = job(cli.only_run())
    assert record["reason"] == "timeout" and 'cell 3 of 4 ("time.sleep(seconds)")' in record["message"], record
    # Then output.ipynb marks that cell failed, with an error output that says why, and the notebook failed
    out = json.loads((cli.only_run() / "output.ipynb").read_text())
    stopped = out["cells"][2]
    assert stopped["metadata"]["papermill"]["status"] == "failed" and stopped["metadata"]["papermill"]["exception"]
    assert [o["ename"] for o in stopped["outputs"] if o["output_type"] == "error"] == ["TimeoutError"]
    assert out["metadata"]["papermill"]["exception"] is True
    assert out["cells"][3]["metadata"]["papermill"]["status"] != "completed" or not out["cells"][3]["outputs"]


def test_smoke_without_a_smoke_cell_is_refused_with_the_fix(cli, tmp_path):
    # Given a notebook with no cell tagged smoke
    notebook = tmp_path / "train.ipynb"
    shutil.copy(NOTEBOOKS / "success.ipynb", notebook)
    # When it is run with --smoke
    result = cli("run", str(notebook), "--smoke")
    # Then it is refused in one line naming the fix, and nothing ran
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "no cell tagged 'smoke'" in result.stderr and not cli.runs.exists()
