"""Submitting a 100-task sweep to Slurm: one job array against 100 separate sbatch calls, side by side in
one run, on the cluster scripts/slurm-up.sh starts; then the cost of polling 100 active jobs.

1. Accept time: seconds from "the sweep is prepared" (kernel frozen once, task run directories laid out)
   until Slurm has accepted every task. The array is ``SlurmTarget.submit_array`` (one sbatch); the
   baseline is ``SlurmTarget.submit`` once per task (100 sbatch calls, each with its own script). Targets
   (issue 4): the array at least 10x faster, and under 1 s for all 100 tasks.
2. Poll cost: Slurm commands per poll of all 100 tasks (target: 1) and seconds per poll.

The tasks are cancelled as soon as they are counted (they would run a notebook each). Preparing the
sweep (freeze + 100 run directories) is timed and printed too; it is not part of the accept time.

Usage: python benchmarks/sweep_submit.py [--tasks 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import GroupRequest, PromoteRequest
from jupyter_promote.launch.sweep import prepare_sweep
from jupyter_promote.models import MonitorSettings
from jupyter_promote.targets.slurm import SlurmTarget

NOTEBOOK = Path(__file__).resolve().parent.parent / "tests" / "notebooks" / "success.ipynb"


def scancel(ids: set[str]) -> None:
    if ids:
        subprocess.run(["scancel", *sorted(ids)], check=False, capture_output=True)


async def bench(args: argparse.Namespace, work: Path) -> dict[str, object]:
    pipeline = Pipeline(str(work / "runs"), poll_interval=0.1)
    request = PromoteRequest(notebook=str(NOTEBOOK), target="slurm", monitor=MonitorSettings())
    sets = [{"a": i} for i in range(args.tasks)]
    result: dict[str, object] = {"tasks": args.tasks}
    array_s, separate_s, prepare_s = [], [], []
    polls: list[tuple[int, float]] = []
    for _ in range(args.rounds):
        # array
        started = time.perf_counter()
        sweep = prepare_sweep(pipeline, request, GroupRequest("grid", sets), None)
        prepare_s.append(time.perf_counter() - started)
        target = SlurmTarget()
        started = time.perf_counter()
        handles = await target.submit_array(
            [t.record for t in sweep.tasks], [t.run for t in sweep.tasks], sweep.path, None
        )
        array_s.append(time.perf_counter() - started)
        assert handles is not None and len(handles) == args.tasks
        # poll all 100 through one target, as 100 followers do
        by_job = {t.record.id: h for t, h in zip(sweep.tasks, handles, strict=True)}
        for _ in range(3):
            before = target.commands_run
            target._last_query = 0.0  # a fresh poll each time, not the cached answer
            started = time.perf_counter()
            await asyncio.gather(*(target.poll({job: handle}) for job, handle in by_job.items()))
            polls.append((target.commands_run - before, time.perf_counter() - started))
        scancel({handles[0]["array"]})
        # 100 separate sbatch calls of the same tasks
        sweep2 = prepare_sweep(pipeline, request, GroupRequest("grid", sets), None)
        target2 = SlurmTarget()
        started = time.perf_counter()
        ids = set()
        for task in sweep2.tasks:
            ids.add((await target2.submit(task.record, task.run))["job_id"])
        separate_s.append(time.perf_counter() - started)
        scancel(ids)
        await asyncio.sleep(1)
    array, separate = statistics.median(array_s), statistics.median(separate_s)
    result.update(
        {
            "rounds": args.rounds,
            "prepare_sweep_s": round(statistics.median(prepare_s), 3),
            "accept_all_array_s": round(array, 4),
            "accept_all_separate_sbatch_s": round(separate, 3),
            "separate_over_array": round(separate / array, 1),
            "slurm_commands_per_poll_of_all_tasks": max(c for c, _ in polls),
            "seconds_per_poll_of_all_tasks": round(statistics.median(s for _, s in polls), 4),
        }
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="promote-sweep-bench-") as tmp:
        result = asyncio.run(bench(args, Path(tmp)))
    print(json.dumps(result, indent=2))
    print(
        f"targets: array >= 10x faster {'met' if result['separate_over_array'] >= 10 else 'MISSED'}; "  # type: ignore[operator]
        f"all accepted < 1 s {'met' if result['accept_all_array_s'] < 1 else 'MISSED'}; "  # type: ignore[operator]
        f"1 command per poll {'met' if result['slurm_commands_per_poll_of_all_tasks'] == 1 else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
