"""Notebooks whose metadata JupyterLab, nbformat's reader and papermill all run: a kernelspec without ``name``,
or no kernelspec at all, run as jobs on the kernel that ``--kernel`` names or the default one.
"""

from __future__ import annotations

import json

import pytest
from conftest import job

CELLS = [
    {"cell_type": "code", "execution_count": None, "id": "a", "metadata": {}, "outputs": [], "source": "print(6 * 7)"}
]


@pytest.mark.parametrize(
    ("metadata", "kernel_args"),
    [
        ({"kernelspec": {"display_name": "Python 3", "language": "python"}}, ["--kernel", "python3"]),
        ({"kernelspec": {"display_name": "Python 3", "language": "python"}}, []),
        ({}, []),
    ],
    ids=["no-name-with-kernel", "no-name", "no-metadata"],
)
def test_a_notebook_without_a_kernel_name_runs_on_the_kernel_given_or_the_default(cli, tmp_path, metadata, kernel_args):
    # Given a notebook whose kernelspec has no name (or that has no kernelspec)
    nb = tmp_path / "lab.ipynb"
    nb.write_text(json.dumps({"cells": CELLS, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}))
    # When it runs, with a parameter (papermill needs the language to write it)
    result = cli("run", str(nb), "-p", "x", "1", *kernel_args, timeout=300)
    # Then it ran on python3, the notebook's own cells untouched, and the job notebook names the kernel
    assert result.returncode == 0, result.stderr
    run = cli.only_run()
    assert job(run)["kernel"] == "python3"
    assert "42" in (run / "output.ipynb").read_text()
    spec = json.loads((run / "job.ipynb").read_text())["metadata"]["kernelspec"]
    assert spec["name"] == "python3" and spec["language"] == "python"
    assert json.loads(nb.read_text())["metadata"] == metadata
