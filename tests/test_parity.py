"""Parity with the notebook's tested baseline: the saved notebook's promote.report outputs, recorded by a
real interactive run, against what the job reports; exit code 3 when a metric drifts beyond its tolerance."""

from __future__ import annotations

import json

import nbformat
import pytest
from conftest import job
from nbclient import NotebookClient

from jupyter_promote.analysis.parity import compare_metrics, first_divergence, seed_band

SOURCE = [
    ("drift = 0.0", ["parameters"]),
    ("accuracy = 0.9 + drift\nloss = 0.5", []),
    (
        "import jupyter_promote as promote\npromote.report(accuracy=accuracy, loss=loss, tolerance={'accuracy': 0.01})",
        [],
    ),
]


@pytest.fixture
def tested_notebook(tmp_path):
    return _tested(tmp_path, SOURCE)


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
    # the environment the job recorded itself at its end (observed_env.json), as parity reads it
    lock_path = run / "observed_env.json"
    lock = json.loads(lock_path.read_text())
    assert lock["runtime"]["torch"] is None  # this job never imported torch
    frozen = json.loads((run / "env" / "promote.lock.json").read_text())
    assert lock["packages"] == frozen["packages"]  # the local target runs the kernel's own interpreter
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


def _tested(tmp_path, cells, name="tested.ipynb", execute=True):
    """A notebook run interactively first (a real kernel), saved with its outputs: the baseline."""
    nb = nbformat.v4.new_notebook()
    for source, tags in cells:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = tags
        nb.cells.append(cell)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    if execute:
        NotebookClient(nb, kernel_name="python3", timeout=120).execute()
    path = tmp_path / name
    nbformat.write(nb, str(path))
    return path


def test_first_divergence_names_the_step_and_the_metric():
    same = [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5}]
    assert first_divergence([same, list(same)]) is None
    other = [{"step": 0, "loss": 1.0}, {"step": 1, "loss": 0.5000001}]
    assert first_divergence([same, other]) == {"report": 1, "step": 1, "metric": "loss", "values": [0.5, 0.5000001]}
    assert first_divergence([same, same[:1]])["problem"] == "some runs stopped reporting here"
    assert first_divergence([[{"acc": 1}], [{"acc": 2}]])["step"] == 0  # no step metric: the report's position


def test_a_metric_within_the_seed_band_passes_and_says_so():
    runs = [({"seed": 0}, {"acc": 0.90}), ({"seed": 1}, {"acc": 0.91}), ({"seed": 2}, {"acc": 0.89})]
    band = seed_band(runs)
    assert band["acc"] == pytest.approx(2 * 0.0081650, rel=1e-4)
    assert seed_band(runs[:1]) == {} and seed_band([({"seed": 0}, {"acc": 1}), ({"seed": 0}, {"acc": 2})]) == {}
    baseline = {"metrics": {"acc": 0.90}, "tolerance": {"acc": 0.001}}
    inside = compare_metrics(baseline, {"acc": 0.91}, {}, band)
    assert inside["verdict"] == "pass" and inside["metrics"][0]["within_seed_band"] is True
    outside = compare_metrics(baseline, {"acc": 0.95}, {}, band)
    assert outside["verdict"] == "fail" and "seed band" in outside["metrics"][0]["problem"]
    assert compare_metrics(baseline, {"acc": 0.91}, {})["verdict"] == "fail"  # no band: the tolerance alone


SEEDED = [
    ("seed = 0\ndrift = 0.0", ["parameters"]),
    ("accuracy = 0.9 + 0.01 * [0, 1, -1][seed] + drift", []),
    ("import jupyter_promote as promote\npromote.report(accuracy=accuracy, tolerance={'accuracy': 0.001})", []),
]


def test_seeds_beyond_the_tolerance_but_within_the_seed_band_pass_parity(cli, tmp_path):
    nb = _tested(tmp_path, SEEDED)
    result = cli("run", str(nb), "--seeds", "0", "1", "2", timeout=600)
    assert result.returncode == 0, result.stderr
    assert "within the seed-variance band" in result.stderr and "accuracy ±0.0163" in result.stderr
    sweep = next(p for p in cli.runs.iterdir() if "sweep" in p.name)
    report = json.loads((sweep / "tasks" / "1" / "parity.json").read_text())
    row = report["metrics"][0]
    assert report["verdict"] == "pass" and row["within_seed_band"] is True and row["job"] == pytest.approx(0.91)
    assert "within the seed-variance band ±0.0163" in (sweep / "tasks" / "1" / "parity.txt").read_text()


def test_seeds_that_all_drift_beyond_the_band_fail_parity_with_exit_3(cli, tmp_path):
    nb = _tested(tmp_path, SEEDED)
    result = cli("run", str(nb), "--seeds", "0", "1", "2", "-p", "drift", "0.05", timeout=600)
    assert result.returncode == 3, result.stderr
    assert result.stderr.count(": fail") == 3


def test_replicas_report_where_they_first_diverge(cli, tmp_path):
    # the first two reports are the same in every replica; from step 2 on each replica draws its own value
    steps = (
        "import os\nimport jupyter_promote as promote\nfor step in range(4):\n"
        "    value = step if step < 2 else int.from_bytes(os.urandom(4), 'big')\n"
        "    promote.report(step=step, value=value)"
    )
    nb = _tested(tmp_path, [("x = 1", ["parameters"]), (steps, [])], name="noisy.ipynb", execute=False)  # no baseline
    result = cli("run", str(nb), "--replicas", "2", "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    group = json.loads(result.stdout)["replicas"][0]
    assert group["tasks"] == [0, 1] and group["identical"] is False
    assert group["first_divergence"]["step"] == 2 and group["first_divergence"]["metric"] == "value"
    assert "first diverge at step 2" in result.stderr


def test_the_job_records_the_environment_it_ran_with_and_the_flags_in_force(cli, tmp_path):
    flags = "import torch\nimport jupyter_promote as promote\ntorch.set_num_threads(1)\npromote.report(threads=torch.get_num_threads())"
    nb = _tested(tmp_path, [("x = 1", ["parameters"]), (flags, [])], name="flags.ipynb")
    result = cli("run", str(nb), "--deterministic")
    assert result.returncode == 0, result.stderr
    run = cli.only_run()
    observed = json.loads((run / "observed_env.json").read_text())
    torch_settings = observed["runtime"]["torch"]
    assert torch_settings["threads"] == 1 and torch_settings["deterministic_algorithms"] is True
    assert torch_settings["deterministic_warn_only"] is True and torch_settings["cudnn_benchmark"] is False
    assert any(p["name"] == "torch" for p in observed["packages"])
    text = (run / "parity.txt").read_text()
    assert "in force in the job: torch threads 1; deterministic algorithms on (warn only)" in text
