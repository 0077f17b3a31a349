"""Convert: the job notebook (golden), idempotence, plain papermill reruns, refusals."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import nbformat
from conftest import BIN, NOTEBOOKS

GOLDEN = Path(__file__).parent / "golden"


def convert(cli, notebook, out, *extra):
    return cli("convert", str(notebook), "-o", str(out), *extra)


def test_job_notebook_matches_golden_file(cli, tmp_path):
    for name in ("success", "failing"):
        out = tmp_path / f"{name}.job.ipynb"
        assert convert(cli, NOTEBOOKS / f"{name}.ipynb", out).returncode == 0
        golden = GOLDEN / f"{name}.job.ipynb"
        if os.environ.get("UPDATE_GOLDEN"):
            golden.write_text(out.read_text())
        assert out.read_text() == golden.read_text(), f"{name}: rerun with UPDATE_GOLDEN=1 if the change is intended"


def test_injected_cells_are_tagged_and_placed(cli, tmp_path):
    out = tmp_path / "job.ipynb"
    assert convert(cli, NOTEBOOKS / "success.ipynb", out).returncode == 0
    nb = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    assert "jupyter-promote-injected" in tags[0] and "jupyter-promote-injected" in tags[-1]
    params = next(i for i, t in enumerate(tags) if "parameters" in t)
    assert "jupyter-promote-injected" in tags[params + 1]  # the seed cell follows the parameters


def test_convert_is_idempotent(cli, tmp_path):
    once, twice = tmp_path / "once.ipynb", tmp_path / "twice.ipynb"
    assert convert(cli, NOTEBOOKS / "success.ipynb", once).returncode == 0
    assert convert(cli, once, twice).returncode == 0
    assert once.read_text() == twice.read_text()


def test_notebook_without_parameters_cell_converts_with_a_note(cli, tmp_path):
    notebook = tmp_path / "plain.ipynb"
    nb = nbformat.v4.new_notebook(
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "P"}}
    )
    nb.cells = [nbformat.v4.new_code_cell("x = 1")]
    nbformat.write(nb, notebook)
    result = convert(cli, notebook, tmp_path / "job.ipynb")
    assert result.returncode == 0 and "no cell tagged 'parameters'" in result.stderr


def test_plain_papermill_reruns_a_job_notebook_with_monitoring(cli, tmp_path):
    job = tmp_path / "job.ipynb"
    assert convert(cli, NOTEBOOKS / "success.ipynb", job).returncode == 0
    result = subprocess.run(
        [str(BIN / "papermill"), str(job), str(tmp_path / "out.ipynb"), "-p", "name", "batch", "--cwd", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    assert "hello batch" in (tmp_path / "out.ipynb").read_text()
    evs = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert any(e["type"] == "metric" and e["metrics"] == {"b": 2} for e in evs)
    assert any(e["type"] == "heartbeat" for e in evs)


def test_papermill_engine_entry_point_emits_cell_events(cli, tmp_path):
    job = tmp_path / "job.ipynb"
    assert convert(cli, NOTEBOOKS / "failing.ipynb", job).returncode == 0
    result = subprocess.run(
        [str(BIN / "papermill"), "--engine", "promote", str(job), str(tmp_path / "out.ipynb"), "--cwd", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    evs = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    errors = [e for e in evs if e["type"] == "cell" and e["phase"] == "error"]
    assert errors and errors[0]["ename"] == "ZeroDivisionError"


def test_bad_notebooks_are_refused_in_one_line_and_nothing_is_written(cli, tmp_path):
    malformed = tmp_path / "malformed.ipynb"
    malformed.write_text('{"cells": [')
    invalid = tmp_path / "invalid.ipynb"
    invalid.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "bogus"}]})
    )
    r_kernel = tmp_path / "r.ipynb"
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "ir", "language": "R", "display_name": "R"}})
    nbformat.write(nb, r_kernel)
    for notebook, reason in (
        (malformed, "not valid JSON"),
        (invalid, "not a valid notebook"),
        (r_kernel, "R kernel"),
        (tmp_path / "missing.ipynb", "no such file"),
    ):
        out = tmp_path / "out.ipynb"
        result = convert(cli, notebook, out)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and str(notebook) in lines[0] and reason in lines[0], lines
        assert not out.exists()
