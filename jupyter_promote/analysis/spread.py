"""A group's spread: counts by state, each metric's best and worst task, mean and std, the seed's share
of the spread apart from the replicas', and where identical runs first diverge. Read from a sweep
directory (``sweep.json`` and each task's record and events), so the CLI and the server show the same.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from ..rundir import RunDir
from ..runtime.events import read_events

SWEEP_FILE = "sweep.json"


def task_dir(task: dict[str, Any]) -> str:
    """A task's run directory, relative to its group's (``tasks/INDEX``, or ``isolated``/``contended``)."""
    return str(task.get("dir") or f"tasks/{task['index']}")


def _seed_and_replica_spread(vals: list[tuple[float, int, dict[str, Any]]]) -> dict[str, float]:
    """When tasks differ only by seed (``run --replicas N --seeds ...``): the spread of the per-seed means (the
    seed's share) apart from the mean spread within one seed (the replicas': hardware, scheduling).
    """
    from .parity import by_seed

    rest = {json.dumps({k: v for k, v in p.items() if k != "seed"}, sort_keys=True, default=str) for _, _, p in vals}
    if len(rest) > 1:  # a learning-rate grid: its tasks differ by more than the seed, none is another's replica
        return {}
    seeds = by_seed((parameters, value) for value, _, parameters in vals)
    if len(seeds) < 2 and all(len(v) < 2 for v in seeds.values()):
        return {}
    means = [statistics.fmean(v) for v in seeds.values()]
    return {
        "seed_std": statistics.pstdev(means) if len(means) > 1 else 0.0,
        "replica_std": statistics.fmean(statistics.pstdev(v) for v in seeds.values()),
    }


def read_sweep(path: Path) -> dict[str, Any]:
    sweep: dict[str, Any] = json.loads((path / SWEEP_FILE).read_text())
    return sweep


def summarise(path: Path) -> dict[str, Any]:
    """Counts by state and, for each reported metric, the best and worst task (lowest/highest value)."""
    sweep = read_sweep(path)
    counts: dict[str, int] = {}
    metrics: dict[str, list[tuple[float, int, dict[str, Any]]]] = {}
    tasks = []
    for task in sweep["tasks"]:
        run = RunDir(path / task_dir(task))
        record = run.read() if run.exists() else None
        state = record.state.value if record else "missing"
        counts[state] = counts.get(state, 0) + 1
        tasks.append(
            {
                "index": task["index"],
                "job": task["job"],
                "dir": task_dir(task),
                "state": state,
                "parameters": task["parameters"],
                "reason": record.reason if record else None,
                "metrics": record.metrics if record else {},
            }
        )
        for name, value in (record.metrics if record else {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                metrics.setdefault(name, []).append((float(value), task["index"], task["parameters"]))
    extremes = {
        name: {
            "min": {"value": min(vals)[0], "index": min(vals)[1], "parameters": min(vals)[2]},
            "max": {"value": max(vals)[0], "index": max(vals)[1], "parameters": max(vals)[2]},
            "tasks": len(vals),
            "mean": statistics.fmean(v for v, _, _ in vals),
            "std": statistics.pstdev(v for v, _, _ in vals),
            **_seed_and_replica_spread(vals),
        }
        for name, vals in metrics.items()
    }
    kind = sweep.get("kind", "grid")
    return {
        "id": sweep["id"],
        "kind": kind,
        "notebook": sweep["notebook"],
        "target": sweep["target"],
        "size": len(sweep["tasks"]),
        "states": counts,
        "metrics": extremes,
        "tasks": tasks,
        "replicas": _replica_agreement(path, tasks),
        "seed_band": _seed_band(tasks) if kind == "replicas" else {},
        "contention": _contention(path) if kind == "contention" else None,
    }


def _seed_band(tasks: list[dict[str, Any]]) -> dict[str, float]:
    """With two seeds or more: each metric's seed-variance band (2 std of the per-seed means)."""
    from .parity import seed_band

    return seed_band([(t["parameters"], t["metrics"]) for t in tasks if t["state"] == "succeeded"])


def _contention(path: Path) -> dict[str, Any] | None:
    """The contention report of a contention group (written once both runs ended), or None before."""
    from .contention import CONTENTION_FILE

    report = path / "contended" / CONTENTION_FILE
    return json.loads(report.read_text()) if report.is_file() else None


def _replica_agreement(path: Path, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For each set of identical tasks (the same parameters: ``run --replicas N``) that succeeded: whether
    their reported metrics agree bit for bit, and if not, the first report (step) where they diverge."""
    from .parity import first_divergence

    groups: dict[str, list[dict[str, Any]]] = {}
    for task in tasks:
        if task["state"] == "succeeded":
            groups.setdefault(json.dumps(task["parameters"], sort_keys=True), []).append(task)
    found = []
    for key, group in groups.items():
        if len(group) < 2:
            continue
        reports = [
            [
                e.get("metrics") or {}
                for e in read_events(str(path / t["dir"] / "events.jsonl"))
                if e["type"] == "metric"
            ]
            for t in group
        ]
        divergence = first_divergence(reports)
        found.append(
            {
                "parameters": json.loads(key),
                "tasks": [t["index"] for t in group],
                "identical": divergence is None,
                "first_divergence": divergence,
            }
        )
    return found
