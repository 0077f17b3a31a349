"""``-p NAME VALUE`` that the notebook assigns again after papermill injects it: said in ``run``, recorded in
the job, and a sweep whose every task would run the same configuration is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from conftest import events

from jupyter_promote.job.overrides import overridden_parameters


def notebook(*cells: str, parameters: int | None = None) -> dict:
    """A notebook of code cells; the cell at index ``parameters`` tagged ``parameters``."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for index, source in enumerate(cells):
        cell = nbformat.v4.new_code_cell(source)
        if index == parameters:
            cell.metadata["tags"] = ["parameters"]
        nb.cells.append(cell)
    return json.loads(nbformat.writes(nb))


def write(path: Path, nb: dict) -> Path:
    path.write_text(json.dumps(nb))
    return path


def test_run_says_and_records_that_the_notebook_assigns_a_given_parameter_again(cli, tmp_path):
    # Given a notebook without a parameters cell whose second code cell sets lr
    nb = write(tmp_path / "tutorial.ipynb", notebook("print('start')", "lr = 1e-3", "print('lr is', lr)"))
    # When it runs with -p lr 0.1
    result = cli("run", str(nb), "-p", "lr", "0.1", timeout=300)
    # Then the job ran with the notebook's value, and the run says so in one line and records it as an alert
    assert result.returncode == 0, result.stderr
    expected = (
        "parameter lr is assigned again in cell 2 (lr = 1e-3), after papermill injects it: "
        "the job runs with the notebook's value"
    )
    assert expected in result.stderr
    run = cli.only_run()
    output = (run / "output.ipynb").read_text()
    assert "lr is 0.001" in output
    alerts = [e for e in events(run) if e["type"] == "alert"]
    assert [(a["kind"], a["name"], a["cell"]) for a in alerts] == [("parameter_overridden", "lr", 2)]
    assert alerts[0]["message"] == expected


def test_only_assignments_after_the_injected_cell_that_ignore_the_injected_value_are_found():
    # Given notebooks with and without a parameters cell, and assignments before, in and after it
    cells = ("lr = 0.5", "lr = 0.1\nepochs = 3", "x = 1", "lr: float = 1e-3", "epochs = epochs * 2")
    with_cell = notebook(*cells, parameters=1)
    conditional = notebook("if 'lr' not in globals():\n    lr = 1e-3", "%time seed = 0", "lr, (seed, w) = 1, (2, 3)")
    # When the names given with -p are looked up
    found = overridden_parameters(with_cell, ["lr", "epochs", "x"])
    found_without = overridden_parameters(conditional, ["lr", "seed"])
    # Then only what runs after papermill's injection and overwrites it is reported, with the cell and its line
    assert [(o.name, o.cell, o.line) for o in found] == [("x", 3, "x = 1"), ("lr", 4, "lr: float = 1e-3")]
    assert [(o.name, o.cell) for o in found_without] == [("seed", 2), ("lr", 3)]
    assert "after papermill injects it" in found[0].message()


def test_a_sweep_whose_tasks_would_all_run_the_same_configuration_is_refused(cli, tmp_path):
    # Given a notebook without a parameters cell that sets lr itself
    nb = write(tmp_path / "tutorial.ipynb", notebook("lr = 1e-3", "print(lr)"))
    # When a sweep varies lr alone
    result = cli("sweep", str(nb), "-p", "lr", "0.1", "0.01")
    # Then it is refused in one line, as bad input, and nothing is created
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "every task of this sweep would run the same configuration" in result.stderr
    assert "cell 1 assigns lr again" in result.stderr
    assert not cli.runs.exists() or not any(cli.runs.iterdir())
