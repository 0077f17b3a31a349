"""Submit-to-running and event latency on each target, side by side in one run, rounds interleaved.

A notebook on a small kernel (the test suite's, ``.envs/small-kernel``; made by the tests or by hand)
reports a metric every 0.2 s for 3 s. For each target (``local``, ``slurm`` on the cluster of
scripts/slurm-up.sh, ``ray`` on the head of scripts/ray-up.sh, ``kubernetes`` on the cluster of
scripts/k8s-up.sh, in the small kernel's verified image, built once):

1. Submit to running: seconds from handing the prepared job to its target until the runner's ``running``
   event is in the local run directory (the freeze before it is not counted; on Ray and on a Slurm node
   the environment's venv is cached by the lock's hash after the first round).
2. Event latency: for each metric event, the time it reached the follower (``on_event``, polling every
   0.1 s) minus the time the kernel wrote it (the event's ``ts``; one machine, one clock): median and p95.

Slurm is the baseline (its nodes share the run directory's filesystem); Ray and Kubernetes relay events
through the job's log. Ratios are against Slurm.

Usage: python benchmarks/target_latency.py [--rounds 3] [--targets local slurm ray kubernetes]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_promote.image import ImageBuilder
from jupyter_promote.launch.pipeline import Pipeline
from jupyter_promote.launch.request import ImageRequest, PromoteRequest
from jupyter_promote.models import MonitorSettings
from jupyter_promote.targets import target_class

ROOT = Path(__file__).resolve().parent.parent
KERNEL = ROOT / ".envs" / "small-kernel" / "bin" / "python"
BASE_IMAGE = os.environ.get("PROMOTE_TEST_BASE_IMAGE", "jupyter-promote/base:bookworm")
KUBECONFIG = "/etc/promote-kube/user.kubeconfig"
CELLS = [
    "import time\nimport jupyter_promote as promote",
    "for i in range(15):\n    promote.report(i=i)\n    time.sleep(0.2)",
]


def notebook(folder: Path) -> Path:
    spec = folder / "share" / "kernels" / "promote-small"
    spec.mkdir(parents=True)
    argv = [str(KERNEL), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "small", "language": "python"}))
    os.environ["JUPYTER_PATH"] = str(folder / "share")
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "id": f"c{i}",
                "metadata": {},
                "outputs": [],
                "source": source,
            }
            for i, source in enumerate(CELLS)
        ],
        "metadata": {"kernelspec": {"name": "promote-small", "display_name": "small", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = folder / "nb" / "latency.ipynb"
    path.parent.mkdir()
    path.write_text(json.dumps(nb))
    return path


async def one(pipeline: Pipeline, path: Path, name: str) -> tuple[float, list[float]]:
    target = target_class(name)()
    image = ImageRequest() if target.needs_image else None
    prepared = pipeline.prepare(PromoteRequest(notebook=str(path), target=name, monitor=MonitorSettings(), image=image))
    started = time.time()
    running_at: list[float] = []
    delays: list[float] = []

    def on_event(event: dict, view: object) -> None:
        now = time.time()
        if event["type"] == "status" and event.get("state") == "running" and not running_at:
            running_at.append(now)
        if event["type"] == "metric":
            delays.append(now - event["ts"])

    await pipeline.submit(prepared, target)
    view = await asyncio.wait_for(pipeline.follow(prepared, target, on_event), 900)
    assert view.state.value == "succeeded", (name, view.state, view.message)
    return running_at[0] - started, delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", nargs="+", default=["local", "slurm", "ray", "kubernetes"])
    args = parser.parse_args()
    if not KERNEL.exists():
        raise SystemExit(f"{KERNEL}: the small kernel is missing (run the tests once, or see tests/conftest.py)")
    with tempfile.TemporaryDirectory(prefix="promote-latency-") as tmp:
        path = notebook(Path(tmp))
        if os.path.exists(KUBECONFIG):
            os.environ.setdefault("KUBECONFIG", KUBECONFIG)
        builder = ImageBuilder(base_image=BASE_IMAGE)
        pipeline = Pipeline(str(Path(tmp) / "runs"), poll_interval=0.1, image_builder=builder)
        submit: dict[str, list[float]] = {t: [] for t in args.targets}
        delays: dict[str, list[float]] = {t: [] for t in args.targets}
        for _ in range(args.rounds):
            for name in args.targets:  # interleaved: a busy moment of the machine hits every target alike
                s, d = asyncio.run(one(pipeline, path, name))
                submit[name].append(s)
                delays[name].extend(d)
    base = "slurm" if "slurm" in args.targets else args.targets[0]
    print(
        f"{'target':10} {'submit->running s (median, min..max)':38} {'event latency s (median, p95, n)':34} ratios to {base}"
    )
    for name in args.targets:
        sub, lat = submit[name], sorted(delays[name])
        p95 = lat[min(len(lat) - 1, int(0.95 * len(lat)))]
        ratio_sub = statistics.median(sub) / statistics.median(submit[base])
        ratio_lat = statistics.median(lat) / statistics.median(delays[base])
        print(
            f"{name:10} {statistics.median(sub):6.2f} ({min(sub):.2f}..{max(sub):.2f}){'':17} "
            f"{statistics.median(lat):6.3f}, {p95:.3f}, {len(lat):4d}{'':14} "
            f"submit x{ratio_sub:.2f}, events x{ratio_lat:.2f}"
        )


if __name__ == "__main__":
    main()
