"""The fixed overhead of jupyter-promote against plain papermill, interleaved, reported as a ratio.

(The monitoring overhead on a training loop is benchmarks/monitor_overhead.py.)

Fixed overhead: ``jupyter promote run --target local`` against ``papermill`` on a 10-cell notebook,
   wall-clock seconds. Target: at most 1 s extra.

Usage: python benchmarks/run.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent
BIN = Path(sys.executable).parent


def plain(notebook: Path, work: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "papermill"), str(notebook), str(work / "out.ipynb"), "--cwd", str(work)],
        check=True,
        capture_output=True,
        env=env,
    )
    return time.perf_counter() - start


def promoted(notebook: Path, work: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(
        [str(BIN / "jupyter"), "promote", "run", str(notebook), "--json"],
        check=True,
        capture_output=True,
        env={**env, "JUPYTER_PROMOTE_RUNS_DIR": str(work / "runs")},
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="promote-bench-"))
    env = dict(os.environ)

    # fixed overhead on a 10-cell notebook
    times: dict[str, list[float]] = {"plain": [], "promoted": []}
    for _ in range(args.rounds):
        for name, fn in (("plain", plain), ("promoted", promoted)):
            times[name].append(fn(HERE / "ten_cells.ipynb", work, env))
    a, b = statistics.median(times["plain"]), statistics.median(times["promoted"])
    print(
        f"fixed overhead: plain papermill {a:.2f} s, jupyter promote run {b:.2f} s, "
        f"extra {b - a:+.2f} s, ratio {b / a:.2f} (target: at most 1 s extra)"
    )


if __name__ == "__main__":
    main()
