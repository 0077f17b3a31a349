"""The fixed overhead of jupyter-promote against plain papermill, interleaved, reported as a ratio.

(The monitoring overhead on a training loop is benchmarks/monitor_overhead.py.)

Fixed overhead: ``jupyter promote run --target local`` against ``papermill`` on a 10-cell notebook,
   wall-clock seconds and CPU seconds (user + system of the command and everything it started), paired
   and interleaved rounds; medians, then every round. Target: at most 0.3 s extra. The first promote of
   an environment introspects the kernel and keeps it (the freeze cache); a warm-up round of each goes
   first, as the papermill baseline's own imports are warm too.

Usage: python benchmarks/run.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent


def _timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the command and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def plain(notebook: Path, work: Path, env: dict[str, str]) -> tuple[float, float]:
    return _timed([str(BIN / "papermill"), str(notebook), str(work / "out.ipynb"), "--cwd", str(work)], env)


def promoted(notebook: Path, work: Path, env: dict[str, str]) -> tuple[float, float]:
    return _timed(
        [str(BIN / "jupyter"), "promote", "run", str(notebook), "--json"],
        {**env, "JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")},
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="promote-bench-"))
    env = dict(os.environ)

    # fixed overhead on a 10-cell notebook; one warm-up round of each first (not counted)
    runs = {"plain": plain, "promoted": promoted}
    for fn in runs.values():
        fn(HERE / "ten_cells.ipynb", work, env)
    wall: dict[str, list[float]] = {"plain": [], "promoted": []}
    cpu: dict[str, list[float]] = {"plain": [], "promoted": []}
    for i in range(args.rounds):
        for name in ("plain", "promoted") if i % 2 == 0 else ("promoted", "plain"):
            w, c = runs[name](HERE / "ten_cells.ipynb", work, env)
            wall[name].append(w)
            cpu[name].append(c)
    a, b = statistics.median(wall["plain"]), statistics.median(wall["promoted"])
    ca, cb = statistics.median(cpu["plain"]), statistics.median(cpu["promoted"])
    extra = statistics.median(p - q for p, q in zip(wall["promoted"], wall["plain"], strict=True))
    print(
        f"fixed overhead: plain papermill {a:.2f} s, jupyter promote run {b:.2f} s, "
        f"extra {b - a:+.2f} s (median of paired differences {extra:+.2f} s), ratio {b / a:.2f} "
        f"(target: at most 0.3 s extra)"
    )
    print(f"CPU seconds:    plain papermill {ca:.2f} s, jupyter promote run {cb:.2f} s, extra {cb - ca:+.2f} s")
    for name in ("plain", "promoted"):
        rounds = ", ".join(f"{w:.2f}/{c:.2f}" for w, c in zip(wall[name], cpu[name], strict=True))
        print(f"  {name:8} rounds (wall/CPU s): {rounds}")


if __name__ == "__main__":
    main()
