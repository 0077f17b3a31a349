"""``jupyter promote sweep``: a parameter grid or a YAML list of sets, on the local target with bounded
parallelism and on Slurm as one job array; each task its own run directory, a summary by state and metric.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import NOTEBOOKS, SMALL_KERNEL, job, on_kernel

HOSTILE = "x'; touch /tmp/pwned-by-promote; '"


def only_sweep(cli) -> Path:
    sweeps = sorted(cli.runs.glob("*-sweep-*"))
    assert len(sweeps) == 1, sweeps
    return sweeps[0]


def test_a_grid_runs_every_combination_within_max_parallel(cli):
    result = cli(
        "sweep",
        str(NOTEBOOKS / "success.ipynb"),
        "-p",
        "a",
        "1",
        "2",
        "3",
        "-p",
        "name",
        "x",
        "y",
        "--max-parallel",
        "2",
        "--json",
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["size"] == 6 and summary["states"] == {"succeeded": 6}
    assert [t["parameters"] for t in summary["tasks"]] == [{"a": a, "name": n} for a in (1, 2, 3) for n in ("x", "y")]
    assert summary["metrics"]["b"]["min"] == {"value": 2.0, "index": 0, "parameters": {"a": 1, "name": "x"}}
    assert summary["metrics"]["b"]["max"]["value"] == 6.0
    sweep = only_sweep(cli)
    records = [job(sweep / "tasks" / str(i)) for i in range(6)]
    assert all(r["sweep"]["id"] == summary["id"] for r in records) and len({r["id"] for r in records}) == 6
    assert (sweep / "tasks" / "3" / "job.ipynb").is_symlink()  # one job notebook and one environment for all
    spans = sorted((r["started_at"], r["finished_at"]) for r in records)
    assert all(sum(1 for s, e in spans if s <= start < e) <= 2 for start, _ in spans)
    # status reads the same summary back
    status = cli("status", str(sweep), "--json")
    assert json.loads(status.stdout)["states"] == {"succeeded": 6}


def test_a_failing_task_fails_the_sweep_not_the_others(cli, tmp_path):
    nb = on_kernel(NOTEBOOKS / "success.ipynb", "python3", tmp_path / "nb", ["assert a != 2, 'a is 2'"])
    sets = tmp_path / "sets.yaml"
    sets.write_text("- {a: 1}\n- {a: 2}\n- {a: 3}\n")
    result = cli("sweep", str(nb), "-f", str(sets), "--json", timeout=600)
    summary = json.loads(result.stdout)
    assert result.returncode == 1
    assert summary["states"] == {"succeeded": 2, "failed": 1}
    assert [t["state"] for t in summary["tasks"]] == ["succeeded", "failed", "succeeded"]


def test_bad_sweeps_are_one_line_errors_and_create_nothing(cli, tmp_path):
    nb = str(NOTEBOOKS / "success.ipynb")
    (tmp_path / "bad.yaml").write_text("- 1\n- 2\n")
    for args, word in (
        ([], "nothing to vary"),
        (["-p", "a"], "values"),
        (["-f", str(tmp_path / "missing.yaml")], "missing.yaml"),
        (["-f", str(tmp_path / "bad.yaml")], "bad.yaml[0]"),
        (["-p", "a", "1", "--max-parallel", "0"], "--max-parallel"),
    ):
        result = cli("sweep", nb, *args)
        assert result.returncode == 2, (args, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and word in lines[0] and "Traceback" not in result.stderr, (args, result.stderr)
    assert not cli.runs.exists() or not any(cli.runs.iterdir())


def test_on_slurm_a_sweep_is_one_job_array(cli, small_kernel, slurm_cluster, tmp_path):
    cli.env.update(small_kernel)
    nb = on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "nb")
    sets = tmp_path / "sets.yaml"
    sets.write_text(json.dumps([{"a": 1, "name": HOSTILE}, {"a": 5}, {"a": 7, "name": "z"}]))
    result = cli("sweep", str(nb), "-f", str(sets), "--target", "slurm", "--max-parallel", "2", "--json", timeout=900)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["states"] == {"succeeded": 3}
    sweep = only_sweep(cli)
    script = (sweep / "job.sbatch").read_text()
    assert "#SBATCH --array=0-2%2" in script and HOSTILE not in script
    handles = [job(sweep / "tasks" / str(i))["handle"] for i in range(3)]
    assert len({h["array"] for h in handles}) == 1  # one sbatch
    assert [h["job_id"] for h in handles] == [f"{handles[0]['array']}_{i}" for i in range(3)]
    output = (sweep / "tasks" / "0" / "output.ipynb").read_text()
    assert json.dumps(f"hello {HOSTILE}")[1:-1] in output
    assert not Path("/tmp/pwned-by-promote").exists()
    assert [t["metrics"]["b"] for t in summary["tasks"]] == [2, 10, 14]


def test_replicas_and_seeds_report_the_seed_spread_apart_from_the_replica_spread(cli, tmp_path):
    nb = on_kernel(
        NOTEBOOKS / "success.ipynb",
        "python3",
        tmp_path / "nb",
        ["import random\nimport jupyter_promote as promote\npromote.report(draw=random.random())"],
    )
    result = cli("run", str(nb), "--deterministic", "--replicas", "2", "--seeds", "0", "1", "--json", timeout=600)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["size"] == 4 and [t["parameters"].get("seed") for t in summary["tasks"]] == [0, 0, 1, 1]
    draw = summary["metrics"]["draw"]
    # the same seed reproduces exactly on one machine; another seed moves the metric
    assert draw["replica_std"] == 0.0 and draw["seed_std"] > 0
    assert "spread from the seed" in result.stderr


def _finished_group(path: Path, kind: str, results: list[tuple[dict, float]], ended: float = 1000.0) -> Path:
    """A group directory as a finished sweep leaves it: sweep.json, and each task's job.json with its metric."""
    from jupyter_promote.models import JobRecord, JobState
    from jupyter_promote.rundir import RunDir

    tasks = []
    for index, (parameters, loss) in enumerate(results):
        job_id = f"{index:012x}"
        run = RunDir(path / "tasks" / str(index))
        run.path.mkdir(parents=True)
        run.write(
            JobRecord(
                id=job_id,
                notebook="/nb.ipynb",
                target="local",
                kernel="python3",
                parameters=parameters,
                state=JobState.SUCCEEDED,
                metrics={"loss": loss},
                finished_at=ended,
            )
        )
        tasks.append({"index": index, "job": job_id, "parameters": parameters})
    sweep = {"id": "s" + "0" * 12, "kind": kind, "notebook": "/nb.ipynb", "target": "local", "tasks": tasks}
    (path / "sweep.json").write_text(json.dumps(sweep))
    return path


def test_a_learning_rate_grid_speaks_of_no_replicas_and_seeds_alone_do(tmp_path):
    from jupyter_promote.analysis.spread import summarise
    from jupyter_promote.cli.inspect import print_sweep

    # Given a finished learning-rate grid (one seed for all), an lr x seed grid, and replicas of two seeds
    lr_grid = _finished_group(tmp_path / "lr", "grid", [({"lr": 0.1, "seed": 0}, 0.5), ({"lr": 0.01, "seed": 0}, 0.9)])
    lr_seed = _finished_group(
        tmp_path / "ls", "grid", [({"lr": lr, "seed": s}, lr + s) for lr in (1, 2) for s in (0, 1)]
    )
    replicas = _finished_group(tmp_path / "rep", "replicas", [({"seed": s}, 0.5 + s) for s in (0, 0, 1, 1)])
    # When each is summarised
    lines: list[str] = []
    for group in (lr_grid, lr_seed):
        print_sweep(summarise(group), lines.append)
    spread = summarise(replicas)["metrics"]["loss"]
    # Then the grids' tasks are not called replicas of one seed; tasks that differ only by seed are
    assert not any("replica" in line for line in lines), lines
    assert spread["seed_std"] == 0.5 and spread["replica_std"] == 0.0


def test_prune_finds_a_sweep_folder_once_every_task_has_ended_long_ago(tmp_path):
    from jupyter_promote.housekeeping import remove
    from jupyter_promote.launch.group_prune import prunable_groups
    from jupyter_promote.models import JobState
    from jupyter_promote.rundir import RunDir

    # Given a runs folder with an old finished sweep, a recent one and an old one with a task still running
    day = 86400.0
    old = _finished_group(tmp_path / "old-sweep", "grid", [({"lr": 0.1}, 1.0), ({"lr": 0.2}, 2.0)], ended=1000.0)
    recent = _finished_group(tmp_path / "recent-sweep", "grid", [({"lr": 0.1}, 1.0)], ended=40 * day)
    running = _finished_group(tmp_path / "running-sweep", "replicas", [({}, 1.0), ({}, 1.0)], ended=1000.0)
    task = RunDir(running / "tasks" / "1")
    record = task.read()
    record.state = JobState.RUNNING
    task.write(record)
    (tmp_path / "not-a-group").mkdir()
    # When the groups older than 30 days are looked for, 41 days in
    skipped: list[str] = []
    found = list(prunable_groups(sorted(tmp_path.iterdir()), 30 * day, "all", 41 * day, skipped=skipped))
    # Then only the old, finished sweep is prunable, and it can be removed whole
    assert [(g.path, g.tasks, g.kind) for g in found] == [(old, 2, "grid")] and not skipped
    assert list(prunable_groups([old], 30 * day, "failed", 41 * day, skipped=skipped)) == []
    remove(RunDir(found[0].path))
    assert not old.exists() and recent.exists() and running.exists()
