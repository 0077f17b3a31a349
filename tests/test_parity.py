"""Parity with the notebook's tested baseline: the saved notebook's promote.report outputs, recorded by a
real interactive run, against what the job reports; exit code 3 when a metric drifts beyond its tolerance."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import job

SOURCE = [
    ("drift = 0.0", ["parameters"]),
    ("accuracy = 0.9 + drift\nloss = 0.5", []),
    ("import jupyter_promote as promote\npromote.report(accuracy=accuracy, loss=loss, tolerance={'accuracy': 0.01})", []),
]


@pytest.fixture
def tested_notebook(tmp_path):
    """A notebook run interactively first (a real kernel, as a person would), and saved with its outputs."""
    nb = nbformat.v4.new_notebook()
    for source, tags in SOURCE:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    path = tmp_path / "tested.ipynb"
    nbformat.write(nb, str(path))
    return path


def test_a_metric_that_drifts_beyond_its_tolerance_fails_parity_with_exit_3(cli, tested_notebook):
    result = cli("run", str(tested_notebook), "-p", "drift", "0.05")
    assert result.returncode == 3, result.stderr
    run = cli.only_run()
    parity = json.loads((run / "parity.json").read_text())
    rows = {r["metric"]: r for r in parity["metrics"]}
    assert parity["verdict"] == "fail" and rows["accuracy"]["ok"] is False and rows["loss"]["ok"] is True
    assert rows["accuracy"]["baseline"] == 0.9 and rows["accuracy"]["job"] == pytest.approx(0.95)
    assert job(run)["state"] == "succeeded" and job(run)["parity"] == {"verdict": "fail", "failed": ["accuracy"]}
    assert "FAIL" in result.stderr and "0.9" in result.stderr and "0.95" in result.stderr
    assert "environment: the same as the notebook kernel's" in (run / "parity.txt").read_text()


def test_a_metric_within_its_tolerance_passes(cli, tested_notebook):
    result = cli("run", str(tested_notebook), "-p", "drift", "0.001")
    assert result.returncode == 0, result.stderr
    assert job(cli.only_run())["parity"] == {"verdict": "pass", "failed": []}


def test_compare_shows_a_changed_package_next_to_the_failure(cli, tested_notebook):
    cli("run", str(tested_notebook), "-p", "drift", "0.05")
    run = cli.only_run()
    lock_path = run / "env" / "promote.lock.json"
    lock = json.loads(lock_path.read_text())
    changed = next(p for p in lock["packages"] if p["name"].lower() == "numpy")
    was = changed["version"]
    changed["version"] = "1.0.0"  # the job's environment had another numpy than the notebook kernel has now
    lock_path.write_text(json.dumps(lock))
    result = cli("compare", str(tested_notebook), str(run), "--json")
    assert result.returncode == 3, result.stderr
    report = json.loads(result.stdout)[0]
    assert report["verdict"] == "fail"
    assert {"name": "numpy", "notebook": was, "job": "1.0.0"} in report["environment"]["changed"]
    assert f"numpy {was} -> 1.0.0" in (run / "parity.txt").read_text()


def test_compare_refuses_what_is_not_a_run_directory(cli, tested_notebook, tmp_path):
    result = cli("compare", str(tested_notebook), str(tmp_path))
    assert result.returncode == 2 and "not a run directory" in result.stderr.strip().splitlines()[-1]
