"""Notebooks of an older (or newer) nbformat than 4: refused in one line that says which version the file is and
how to upgrade it, by ``run`` and ``check`` alike (exit 2), before anything is frozen or submitted.
"""

from __future__ import annotations

import json

import pytest

from jupyter_promote.errors import NotebookError
from jupyter_promote.job.notebook import read_notebook

#: An nbformat 3 notebook as IPython 2 saved it: cells inside ``worksheets``, code in ``input``.
NBFORMAT_3 = {
    "metadata": {"name": "old"},
    "nbformat": 3,
    "nbformat_minor": 0,
    "worksheets": [
        {
            "cells": [
                {
                    "cell_type": "code",
                    "collapsed": False,
                    "input": ["x = 1"],
                    "language": "python",
                    "metadata": {},
                    "outputs": [],
                }
            ],
            "metadata": {},
        }
    ],
}


def test_reading_an_nbformat_3_notebook_says_its_version_and_how_to_upgrade_it(tmp_path):
    # Given a notebook saved in nbformat 3 (no top-level 'cells': they are in its worksheets)
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps(NBFORMAT_3))
    # When it is read
    with pytest.raises(NotebookError) as info:
        read_notebook(old)
    # Then one line says it is nbformat 3 and gives both ways to upgrade it
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{old}: an nbformat 3 notebook")
    assert f"jupyter nbconvert --to notebook --nbformat 4 {old}" in message
    assert "JupyterLab" in message


def test_a_newer_nbformat_is_refused_naming_its_version(tmp_path):
    # Given a notebook that declares a future nbformat 5
    new = tmp_path / "new.ipynb"
    new.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 5, "nbformat_minor": 0}))
    # When it is read
    with pytest.raises(NotebookError) as info:
        read_notebook(new)
    # Then the line names the version found and the one supported
    assert str(info.value) == f"{new}: nbformat 5 is not supported (only version 4)"


@pytest.mark.parametrize("command", ["run", "check"])
def test_run_and_check_refuse_an_nbformat_3_notebook_in_one_line(cli, tmp_path, command):
    # Given an nbformat 3 notebook
    old = tmp_path / "old.ipynb"
    old.write_text(json.dumps(NBFORMAT_3))
    # When `jupyter promote run` or `check` is given it
    result = cli(command, str(old), timeout=120)
    # Then it exits 2 with one line on stderr saying what it is and how to upgrade it; nothing ran
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "an nbformat 3 notebook" in lines[0] and "jupyter nbconvert --to notebook --nbformat 4" in lines[0]
    assert not cli.runs.exists() or not any(cli.runs.iterdir())
