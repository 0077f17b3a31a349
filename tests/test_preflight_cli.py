"""Before anything is submitted: ``jupyter promote check``, the warnings of ``run``/``sweep``, ``--strict``,
``--kernel`` and the ``--smoke`` run. The rig (test_rig.py) repeats the main cases as an unprivileged user.
"""

from __future__ import annotations

import json
import shutil

from conftest import NOTEBOOKS, job

PREFLIGHT = NOTEBOOKS / "preflight"


def test_check_names_the_cells_run_out_of_order_and_the_undefined_name(cli):
    done = cli("check", str(PREFLIGHT / "makemore_bigrams.ipynb"))
    assert done.returncode == 1
    assert "ran before cells" in done.stdout and "'P'" in done.stdout
    found = json.loads(cli("check", str(PREFLIGHT / "makemore_bigrams.ipynb"), "--json").stdout)
    assert {"order", "undefined", "never_run"} <= {f["kind"] for f in found}


def test_check_of_a_clean_notebook_says_nothing_to_report(cli):
    done = cli("check", str(PREFLIGHT / "train_mlp.ipynb"))
    assert done.returncode == 0 and "nothing to report" in done.stdout


def test_run_warns_but_submits_and_strict_refuses_writing_nothing(cli, tmp_path):
    notebook = tmp_path / "nb.ipynb"
    nb = json.loads((NOTEBOOKS / "success.ipynb").read_text())
    nb["cells"].append({"cell_type": "code", "id": "late", "metadata": {}, "outputs": [], "execution_count": None,
                        "source": "print(never_defined_anywhere)"})  # fmt: skip
    notebook.write_text(json.dumps(nb))
    # --strict: one line, exit 2, nothing written
    done = cli("run", str(notebook), "--strict")
    assert done.returncode == 2 and "--strict" in done.stderr.strip().splitlines()[-1]
    assert not cli.runs.exists() or not any(cli.runs.iterdir())
    # without it: the warning, then the job (which fails on that very cell)
    done = cli("run", str(notebook))
    assert "warning: " in done.stderr and "never_defined_anywhere" in done.stderr
    assert done.returncode == 1


def test_an_unknown_kernel_is_one_line_listing_the_installed_ones(cli):
    done = cli("run", str(NOTEBOOKS / "success.ipynb"), "--kernel", "nope")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "nope" in lines[0] and "python3" in lines[0]


def test_smoke_runs_the_smoke_parameters_first_and_submits_only_when_it_succeeds(cli, tmp_path):
    notebook = tmp_path / "smoke.ipynb"
    shutil.copy(NOTEBOOKS / "smoke.ipynb", notebook)
    # Given a notebook whose raw cell tagged "smoke" sets steps = 3
    done = cli("run", str(notebook), "--smoke", "-p", "steps", "50")
    assert done.returncode == 0, done.stderr
    runs = sorted(cli.runs.iterdir(), key=lambda p: job(p)["created_at"])
    assert [job(r)["metrics"]["steps"] for r in runs] == [3, 50]  # the smoke run, then the job with its own
    # When the smoke run fails, nothing is submitted
    shutil.rmtree(cli.runs)
    done = cli("run", str(notebook), "--smoke", "-p", "fail_at", "1")
    assert done.returncode == 1 and "nothing was submitted" in done.stderr
    assert len(list(cli.runs.iterdir())) == 1
