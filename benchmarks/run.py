"""``jupyter promote run --target local`` against plain ``papermill`` on the same notebooks, interleaved, as ratios.

(The monitoring overhead on a training loop is benchmarks/monitor_overhead.py.)

For a 1-cell and a 10-cell notebook (written here: the first code cell notes the wall clock in a file named by
``BENCH_MARK``, so "command to first user cell" is measured the same way for both tools), each round runs
both commands, in alternating order, and measures:

* wall seconds of the command, and CPU seconds (user + system of the command and everything it started);
* seconds from the command's start to the first user cell running.

Reported: medians per tool, the ratio of medians and a distribution-free ~95% interval of the per-round
ratios' median (order statistics), beside the issue's target (ratio <= 1.00, first cell <= papermill's).
A warm-up round of each tool goes first (the freeze cache is filled once, as on a user's second promote;
papermill's imports are warm in the OS cache too).

Then the breakdown of one promoted run of the 10-cell notebook from its own events (command start ->
pending -> running -> kernel ready (the first cell sent) -> first user cell -> final status -> command end)
and the slowest imports of the CLI process (``-X importtime``) with whether nbformat/jsonschema were imported.

``--before DIR`` adds a third tool: ``jupyter promote run`` with the ``jupyter_promote`` package of the
source tree ``DIR`` first on PYTHONPATH (e.g. ``git worktree add /tmp/before main``), for a before/after.

Usage: python benchmarks/run.py [--rounds 11] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = Path(sys.executable).parent
MARK_CELL = "import os, time\nopen(os.environ['BENCH_MARK'], 'a').write(f'{time.time()}\\n')"
Tool = Callable[[Path, Path, dict[str, str]], list[str]]


def notebook(path: Path, cells: int) -> Path:
    """A notebook of ``cells`` code cells: parameters ``n = 10`` (10-cell), the mark, then ``x_i = i * n``."""
    sources = [MARK_CELL] if cells == 1 else ["n = 10", MARK_CELL] + [f"x{i} = {i} * n" for i in range(cells - 2)]
    nb_cells = [
        {"cell_type": "code", "execution_count": None, "id": f"cell-{i}", "metadata": {}, "outputs": [], "source": s}
        for i, s in enumerate(sources)
    ]
    if cells > 1:
        nb_cells[0]["metadata"] = {"tags": ["parameters"]}
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    doc = {"cells": nb_cells, "metadata": {"kernelspec": kernelspec}, "nbformat": 4, "nbformat_minor": 5}
    path.write_text(json.dumps(doc, indent=1))
    return path


def papermill(nb: Path, work: Path, env: dict[str, str]) -> list[str]:
    return [str(BIN / "papermill"), str(nb), str(work / "out.ipynb"), "--cwd", str(work)]


def promote(nb: Path, work: Path, env: dict[str, str]) -> list[str]:
    env["JUPYTER_PROMOTE_RUNS_DIR"] = str(work / "runs")
    return [str(BIN / "jupyter"), "promote", "run", str(nb), "--json"]


def before(tree: str) -> Tool:
    def tool(nb: Path, work: Path, env: dict[str, str]) -> list[str]:
        env["PYTHONPATH"] = tree + os.pathsep + env.get("PYTHONPATH", "")
        env["JUPYTER_PROMOTE_RUNS_DIR"] = str(work / "runs-before")
        return [sys.executable, "-m", "jupyter_promote.cli", "run", str(nb), "--json"]

    return tool


def timed(tool: Tool, nb: Path, work: Path) -> tuple[float, float, float]:
    """(wall s, CPU s of the command and its children, s from the command's start to the first user cell)."""
    mark = work / "mark"
    mark.unlink(missing_ok=True)
    env = {**os.environ, "BENCH_MARK": str(mark)}
    command = tool(nb, work, env)
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, wall_start = time.perf_counter(), time.time()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    return wall, cpu, float(mark.read_text().split()[0]) - wall_start


def median_interval(values: list[float]) -> tuple[float, float]:
    """A distribution-free interval for the median of ``values``: order statistics covering >= 95%
    (for 11 rounds: the 2nd and 10th smallest, 98.8%)."""
    ordered, n = sorted(values), len(values)
    low = 0
    for k in range(n // 2):  # the largest k with P(Binomial(n, 1/2) <= k) <= 2.5%
        if sum(math.comb(n, i) for i in range(k + 1)) / 2**n <= 0.025:
            low = k
    return ordered[low], ordered[n - 1 - low]


def compare(nb: Path, work: Path, tools: dict[str, Tool], rounds: int) -> None:
    for tool in tools.values():  # warm-up, not counted
        timed(tool, nb, work)
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in tools}
    names = list(tools)
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            results[name].append(timed(tools[name], nb, work))
    base = results["papermill"]
    print(f"\n{nb.name}: {rounds} interleaved rounds, medians")
    for name, rows in results.items():
        wall, cpu, first = (statistics.median(r[k] for r in rows) for k in range(3))
        line = f"  {name:10} wall {wall:5.2f} s  CPU {cpu:5.2f} s  command -> first user cell {first:5.2f} s"
        if name != "papermill":
            ratios = [r[0] / b[0] for r, b in zip(rows, base, strict=True)]
            firsts = [r[2] / b[2] for r, b in zip(rows, base, strict=True)]
            low, high = median_interval(ratios)
            flow, fhigh = median_interval(firsts)
            line += (
                f"\n  {'':10} wall ratio {statistics.median(ratios):.2f} [{low:.2f}, {high:.2f}] (target <= 1.00), "
                f"CPU ratio {cpu / statistics.median(r[1] for r in base):.2f}, "
                f"first-cell ratio {statistics.median(firsts):.2f} [{flow:.2f}, {fhigh:.2f}] (target <= 1.00)"
            )
        print(line)
    for name, rows in results.items():
        print(f"  {name:10} rounds (wall/CPU/first s): " + ", ".join(f"{w:.2f}/{c:.2f}/{f:.2f}" for w, c, f in rows))


def breakdown(nb: Path, work: Path) -> None:
    """One promoted run's path from its events, and the CLI's slowest imports."""
    runs = work / "breakdown"
    env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(runs), "BENCH_MARK": str(work / "mark")}
    command = [sys.executable, "-X", "importtime", "-m", "jupyter_promote.cli", "run", str(nb), "--json"]
    start = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    end = time.time()
    events = [json.loads(line) for run in runs.iterdir() for line in (run / "events.jsonl").open()]
    first = {}
    for event in events:
        kind = event["type"] if event["type"] != "status" else event["state"]
        if event["type"] == "cell" and event.get("phase") == "start":
            kind = "user cell" if event.get("number") else "kernel ready"
        first.setdefault(kind, event["ts"])
    steps = ["pending", "running", "kernel ready", "user cell", "succeeded"]
    print(f"\nbreakdown of one promoted run of {nb.name} (seconds after the command started; -X importtime on):")
    print("  " + ", ".join(f"{step} {first[step] - start:.2f}" for step in steps) + f", command end {end - start:.2f}")
    imports = [line.split("|") for line in done.stderr.splitlines() if line.startswith("import time:")][1:]
    top = sorted(((int(cum), name.strip()) for _, cum, name in imports if not name.startswith("  ")), reverse=True)
    names = {name.strip() for _, _, name in imports}
    print(f"  CLI imports: {sum(cum for cum, _ in top) / 1e6:.2f} s in all ({len(names)} modules); slowest: ", end="")
    print(", ".join(f"{name} {cum / 1e6:.2f}" for cum, name in top[:8]))
    heavy = [m for m in ("nbformat", "jsonschema", "rfc3987_syntax", "papermill", "nbclient") if m in names]
    print(f"  heavy modules imported by the CLI: {', '.join(heavy) or 'none'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--before", help="a source tree whose jupyter_promote is measured too")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="promote-bench-"))
    tools: dict[str, Tool] = {"papermill": papermill, "promote": promote}
    if args.before:
        tools["before"] = before(os.path.abspath(args.before))
    for cells in (1, 10):
        compare(notebook(work / f"cells{cells}.ipynb", cells), work, tools, args.rounds)
    breakdown(work / "cells10.ipynb", work)


if __name__ == "__main__":
    main()
