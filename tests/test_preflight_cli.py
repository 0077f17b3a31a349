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
    nb["cells"].append(
        {
            "cell_type": "code",
            "id": "late",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": "print(never_defined_anywhere)",
        }
    )
    notebook.write_text(json.dumps(nb))
    # --strict: one line, exit 2, nothing written
    done = cli("run", str(notebook), "--strict")
    assert done.returncode == 2 and "--strict" in done.stderr.strip().splitlines()[-1]
    assert not cli.runs.exists() or not any(cli.runs.iterdir())
    # without it: the finding (an error: the job will fail on it), then the job, failing on that very cell
    done = cli("run", str(notebook))
    assert "error: cell 5: name 'never_defined_anywhere' is never defined" in done.stderr, done.stderr
    assert "cell 5 of 5" in done.stderr  # numbered as the verdict numbers it
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


def _notebook(path, *sources, language="python"):
    kernel = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if language != "python":
        kernel = {"name": "ir", "display_name": "R", "language": language}
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    cells = [{**cell, "id": f"c{i}", "source": source} for i, source in enumerate(sources)]
    path.write_text(
        json.dumps({"cells": cells, "metadata": {"kernelspec": kernel}, "nbformat": 4, "nbformat_minor": 5})
    )
    return str(path)


def test_local_carries_the_environment_so_check_and_strict_say_nothing(cli, tmp_path):
    # Given a notebook that reads a variable outside the allowlist
    notebook = _notebook(tmp_path / "env.ipynb", "import os\nkey = os.environ.get('WANDB_API_KEY')")
    # When it is checked and run --strict on the local target, which passes the whole environment
    checked = cli("check", notebook)
    run = cli("run", notebook, "--strict", "--target", "local")
    # Then nothing is reported and nothing refused
    assert checked.returncode == 0 and "nothing to report" in checked.stdout, checked.stdout
    assert run.returncode == 0 and "not carried" not in run.stderr, run.stderr
    # and on a target that carries only the allowlist, the read is reported: a credential, given only as a secret
    docker = cli("check", notebook, "--PromoteSettings.default_target=docker")
    assert docker.returncode == 1 and "'WANDB_API_KEY', a credential, which is never carried by value" in docker.stdout


def test_an_allowlist_on_the_command_line_extends_the_defaults(cli, tmp_path):
    # Given a notebook reading a default allowlisted variable and one more
    notebook = _notebook(
        tmp_path / "env.ipynb", "import os\na = os.getenv('MKL_NUM_THREADS')\nb = os.getenv('WANDB_MODE')"
    )
    # When the extra one is allowed on the command line, for a target that carries only the allowlist
    done = cli(
        "check", notebook, "--PromoteSettings.env_allowlist=['WANDB_MODE']", "--PromoteSettings.default_target=docker"
    )
    # Then neither is reported: the default stays allowed
    assert done.returncode == 0 and "nothing to report" in done.stdout, done.stdout


def test_check_refuses_a_non_python_notebook_as_run_does(cli, tmp_path):
    # Given an R notebook
    notebook = _notebook(tmp_path / "r.ipynb", "x <- 1\nprint(x)", language="R")
    # When it is checked and run
    checked, run = cli("check", notebook), cli("run", notebook)
    # Then both refuse it in the same line, with the same exit code
    assert checked.returncode == run.returncode == 2, (checked, run)
    assert checked.stderr.strip().splitlines()[-1] == run.stderr.strip().splitlines()[-1]
    assert "only Python notebooks can be promoted" in checked.stderr and "nothing to report" not in checked.stdout
