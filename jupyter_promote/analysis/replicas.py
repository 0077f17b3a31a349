"""Replicas judged together: each replica's parity with the notebook's baseline, with the seed-variance band.

With two seeds or more, a metric beyond its tolerance but within the band the seeds themselves span
(2 std of the per-seed means) passes, and the report says so: the seed explains it, not the cluster.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import parity
from .spread import task_dir


def judge_replicas(group: Path, summary: dict[str, Any], tolerance: dict[str, Any]) -> tuple[list[str], bool]:
    """Write each succeeded replica's parity report (parity.json/.txt, ``record.parity``).

    Returns the lines to show (none when the notebook has no baseline) and whether a replica failed.
    """
    from ..freeze import read_lock
    from ..job.notebook import read_notebook
    from ..rundir import RunDir

    source = read_notebook(summary["notebook"])
    if not parity.baseline_of(source)["metrics"]:
        return [], False
    succeeded = [t for t in summary["tasks"] if t["state"] == "succeeded"]
    band = parity.seed_band([(t["parameters"], t["metrics"]) for t in succeeded])
    notebook_lock = read_lock(group / "env") or {}
    lines, failed = [], False
    for task in succeeded:
        run = group / task_dir(task)
        result = parity.judge(
            source, task["metrics"], notebook_lock, parity.job_environment(run, notebook_lock), tolerance, band
        )
        parity.write(run, result, f"task {task['index']} of sweep {summary['id']}")
        record = RunDir(run).read()
        record.parity = {
            "verdict": result["verdict"],
            "failed": [m["metric"] for m in result["metrics"] if not m["ok"]],
        }
        RunDir(run).write(record)
        banded = [r["metric"] for r in result["metrics"] if r.get("within_seed_band")]
        failed |= result["verdict"] == "fail"
        lines.append(
            f"  parity of task {task['index']}: {result['verdict']}"
            + (f" ({', '.join(banded)} within the seed-variance band)" if banded else "")
        )
    if band:
        lines.append(
            "  seed-variance band (2 std of the per-seed means): "
            + ", ".join(f"{name} ±{width:.3g}" for name, width in sorted(band.items()))
        )
    return lines, failed
