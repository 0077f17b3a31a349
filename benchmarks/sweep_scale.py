"""A 1,000-task sweep on Slurm, submitted and followed by ``jupyter promote sweep``, beside a 10-task sweep
and beside 1,000 separate sbatch calls, in one run, on the cluster scripts/slurm-up.sh starts.

The CLI runs as a user types it (``--target slurm --max-parallel 50``) with two settings of the target:
``--SlurmTarget.sbatch`` and ``--SlurmTarget.squeue`` point at shims that note the time of each call and exec
the real command, and ``--SlurmTarget.extra_directives=--hold`` submits the tasks held, so that no task runs
a notebook on this small machine while the follower is measured (a held task is PENDING, as in a busy queue).

1. Submit: the sbatch calls the CLI made (target: exactly 1, ``--array=0-999%50``, every task in Slurm under
   one array id) and how long that sbatch took, beside the same tasks submitted one sbatch each
   (``SlurmTarget.submit`` in this process, on ``--separate`` of them; fewer than all is extrapolated to all
   and labelled so).
2. Following: squeue calls per second while nothing changes (``--quiet`` s) and while tasks end (``--busy``
   s, ``scancel`` of a block of tasks every second), beside one squeue per task per second, what 1,000
   jobs followed one by one would cost (target: at most 1 per second, ``SlurmTarget.poll_interval``).
3. Memory and CPU of the CLI (its max RSS and CPU seconds, from ``wait4``), and the seconds from cancelling
   the whole array to the CLI's exit with every task's end seen; beside the same figures of a 10-task sweep.

Usage: python benchmarks/sweep_scale.py [--tasks 1000] [--max-parallel 50] [--separate 1000] [--quiet 30] [--busy 10]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sweep_submit import NOTEBOOK

BIN = Path(sys.executable).parent
SHIM = """#!/bin/sh
echo "start $(date +%s.%N)" >> {log}
out=$({real} "$@")
rc=$?
echo "end $(date +%s.%N) $(echo "$out" | head -1 | cut -c1-40)" >> {log}
printf '%s\\n' "$out"
exit $rc
"""


def shim(work: Path, name: str) -> tuple[Path, Path]:
    """A command that notes each call's start and end in ``work/NAME.calls`` and runs the real one."""
    real, log, path = shutil.which(name), work / f"{name}.calls", work / f"{name}-counting"
    assert real, f"{name} is not on PATH: run scripts/slurm-up.sh"
    path.write_text(SHIM.format(log=log, real=real))
    path.chmod(0o755)
    log.touch()
    return path, log


def calls(log: Path, since: float = 0.0) -> list[tuple[float, float, str]]:
    """(start, end, first line of output) of each ended call noted in ``log`` that started at ``since`` or later."""
    starts: list[tuple[float, str]] = []
    ends: list[tuple[float, str]] = []
    for line in log.read_text().splitlines():
        kind, ts, *out = line.split(maxsplit=2)
        (starts if kind == "start" else ends).append((float(ts), out[0] if out else ""))
    return [(s[0], e[0], e[1]) for s, e in zip(starts, ends, strict=False) if since <= s[0]]


def squeue_lines(*args: str) -> list[str]:
    out = subprocess.run(["squeue", "-h", *args], capture_output=True, text=True, check=False).stdout
    return out.splitlines()


def follow(args: argparse.Namespace, work: Path, tasks: int) -> dict[str, Any]:
    """Run ``jupyter promote sweep`` over ``tasks`` held tasks; measure submit, following, memory."""
    work.mkdir()
    sbatch, sbatch_log = shim(work, "sbatch")
    squeue, squeue_log = shim(work, "squeue")
    sets = work / "sets.yaml"
    sets.write_text("".join(f"- {{a: {i}}}\n" for i in range(tasks)))
    target = ["--target", "slurm", "--max-parallel", str(args.max_parallel), "--out", str(work / "sweep")]
    settings = [f"--SlurmTarget.sbatch={sbatch}", f"--SlurmTarget.squeue={squeue}"]
    command = [str(BIN / "jupyter"), "promote", "sweep", str(NOTEBOOK), "-f", str(sets), *target, *settings]
    env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")}
    started = time.time()
    with open(work / "cli.log", "wb") as log:
        cli = subprocess.Popen([*command, "--SlurmTarget.extra_directives=--hold"], env=env, stderr=log)
    array_id = ""
    try:
        while not calls(sbatch_log) and cli.poll() is None:
            time.sleep(0.05)
        assert cli.poll() is None, f"the CLI exited {cli.returncode}: {(work / 'cli.log').read_text()[-2000:]}"
        (start, end, array_id), *more = calls(sbatch_log)
        script = (work / "sweep" / "job.sbatch").read_text()
        result: dict[str, Any] = {
            "tasks": tasks,
            "prepare_s": round(start - started, 2),
            "sbatch_calls": 1 + len(more),
            "array": script.split("--array=")[1].split()[0],
            "tasks_under_array_id": len(squeue_lines("-r", f"--jobs={array_id}", "-o", "%i")),
            "submit_s": round(end - start, 3),
        }
        result.update(rates(args, squeue_log, array_id, tasks, cli.pid))
        cancelled = time.time()
        subprocess.run(["scancel", array_id], check=True)
        _, status, usage = os.wait4(cli.pid, 0)
        cli.returncode = os.waitstatus_to_exitcode(status)
        result.update(
            {
                "cancel_to_exit_s": round(time.time() - cancelled, 1),
                "cli_exit": cli.returncode,
                "cli_max_rss_mb": round(usage.ru_maxrss / 1024, 1),
                "cli_cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
                "squeue_calls_total": len(calls(squeue_log)),
            }
        )
        return result
    finally:
        if cli.returncode is None:
            cli.kill()
        if array_id:
            subprocess.run(["scancel", array_id], check=False)


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (its threads, not its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rates(args: argparse.Namespace, log: Path, array_id: str, tasks: int, pid: int) -> dict[str, Any]:
    """squeue calls per second while nothing changes, then while a block of tasks ends every second; the
    follower's CPU share meanwhile."""
    time.sleep(2)  # the followers' first polls
    quiet_from, cpu = time.time(), cpu_seconds(pid)
    time.sleep(args.quiet)
    quiet = len(calls(log, quiet_from)) / (time.time() - quiet_from)
    cpu_quiet = (cpu_seconds(pid) - cpu) / (time.time() - quiet_from)
    busy_from, block = time.time(), max(1, tasks // 2 // max(1, args.busy))
    for k in range(args.busy):
        first = k * block
        subprocess.run(["scancel", f"{array_id}_[{first}-{first + block - 1}]"], check=False)
        time.sleep(max(0.0, busy_from + k + 1 - time.time()))
    busy = len(calls(log, busy_from)) / (time.time() - busy_from)
    return {
        "squeue_per_s_quiet": round(quiet, 2),
        "squeue_per_s_busy": round(busy, 2),
        "busy_block": block,
        "cli_cpu_share_quiet": round(cpu_quiet, 3),
    }


async def separate(n: int, work: Path) -> float:
    """Seconds to submit ``n`` tasks of a sweep one sbatch each (``SlurmTarget.submit``), held."""
    from jupyter_promote.launch.pipeline import Pipeline
    from jupyter_promote.launch.request import GroupRequest, PromoteRequest
    from jupyter_promote.launch.sweep import prepare_sweep
    from jupyter_promote.models import MonitorSettings
    from jupyter_promote.targets.slurm import SlurmTarget

    pipeline = Pipeline(str(work / "runs"), poll_interval=0.1)
    request = PromoteRequest(notebook=str(NOTEBOOK), target="slurm", monitor=MonitorSettings())
    sweep = prepare_sweep(pipeline, request, GroupRequest("grid", [{"a": i} for i in range(n)]), None)
    target = SlurmTarget(extra_directives=["--hold"])
    ids: list[str] = []
    started = time.perf_counter()
    try:
        for task in sweep.tasks:
            ids.append((await target.submit(task.record, task.run))["job_id"])
        return time.perf_counter() - started
    finally:
        for chunk in range(0, len(ids), 200):
            subprocess.run(["scancel", *ids[chunk : chunk + 200]], check=False)


def report(small: dict[str, Any], large: dict[str, Any], sep_s: float, sep_n: int) -> None:
    """Each figure beside its baseline and target."""
    n, k = large["tasks"], small["tasks"]
    all_s = sep_s * n / sep_n
    how = "measured" if sep_n == n else f"extrapolated from {sep_n}"
    quiet, busy, submit = large["squeue_per_s_quiet"], large["squeue_per_s_busy"], large["submit_s"]
    one = large["sbatch_calls"] == 1 and large["tasks_under_array_id"] == n
    rss, rss0 = large["cli_max_rss_mb"], small["cli_max_rss_mb"]
    rows = [
        (
            "sbatch calls / tasks under its array id",
            f"{large['sbatch_calls']} / {large['tasks_under_array_id']}",
            f"{n} sbatch calls",
            f"1 / {n}",
            one,
        ),
        ("the array", large["array"], "", f"0-{n - 1}%N", large["array"].startswith(f"0-{n - 1}%")),
        (f"submit {n} tasks (s)", f"{submit:.3f}", f"{all_s:.1f} ({how}; x{all_s / submit:.0f})", "< 1 s", submit < 1),
        (
            "squeue calls/s, quiet / tasks ending",
            f"{quiet} / {busy}",
            f"{n} (1/task/s; x{n / max(busy, 0.01):.0f})",
            "<= 1",
            max(quiet, busy) <= 1,
        ),
        ("CLI max RSS (MB)", f"{rss}", f"{rss0} ({k} tasks; x{rss / rss0:.2f})", "(reported)", None),
        (
            "CLI CPU share while following, quiet",
            f"{large['cli_cpu_share_quiet']:.1%} of a core",
            f"{small['cli_cpu_share_quiet']:.1%} ({k} tasks)",
            "(reported)",
            None,
        ),
        ("CLI CPU s (whole run)", f"{large['cli_cpu_s']}", f"{small['cli_cpu_s']} ({k} tasks)", "(reported)", None),
        (
            "prepare s (CLI start to sbatch)",
            f"{large['prepare_s']}",
            f"{small['prepare_s']} ({k} tasks)",
            "(reported)",
            None,
        ),
        (
            "cancel all -> CLI exit (s)",
            f"{large['cancel_to_exit_s']}",
            f"{small['cancel_to_exit_s']} ({k} tasks)",
            "(reported)",
            None,
        ),
    ]
    print(f"{'figure':40} {'measured':20} {'baseline':36} {'target':10}")
    for name, measured, baseline, target, ok in rows:
        print(f"{name:40} {measured:20} {baseline:36} {target:10} {'' if ok is None else 'met' if ok else 'MISSED'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--baseline-tasks", type=int, default=10)
    parser.add_argument("--max-parallel", type=int, default=50)
    parser.add_argument("--separate", type=int, default=1000, help="tasks submitted one sbatch each (baseline)")
    parser.add_argument("--quiet", type=int, default=30, help="seconds of following while nothing changes")
    parser.add_argument("--busy", type=int, default=10, help="seconds of following while tasks end")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="promote-sweep-scale-") as tmp:
        work = Path(tmp)
        small = follow(args, work / "small", args.baseline_tasks)
        large = follow(args, work / "large", args.tasks)
        sep_n = min(args.separate, args.tasks)
        sep_s = asyncio.run(separate(sep_n, work / "separate"))
    print(json.dumps({"baseline": small, "sweep": large, "separate": {"tasks": sep_n, "s": round(sep_s, 2)}}, indent=1))
    report(small, large, sep_s, sep_n)


if __name__ == "__main__":
    main()
