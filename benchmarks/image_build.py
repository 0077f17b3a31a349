"""Image builds: jupyter-promote's recipe against a naive Dockerfile, same environment, same engine, one run.

Environment: the small kernel of tests/envs/small-kernel.txt (ipykernel + numpy, 30+ distributions),
in a venv at .envs/small-kernel (made if missing). Base image: the offline one scripts/base-image.sh makes.

1. Cold build (no build cache, interleaved rounds): ours / naive. Target <= 1.1.
   The naive baseline is what people write first:
   ``COPY requirements.txt`` / ``RUN pip install -r requirements.txt`` / ``COPY notebook``.
   "ours" is the rebuild from the lock's pins (``--ImageBuilder.pack=False``); "packed" is the default, the
   kernel's installed files packed into the image (no index, ``--network=none``): packed / naive, target <= 0.5.
2. Rebuild after a notebook-only edit: ours (``jupyter promote build``) / our cold build, and how many
   images it built (target: 0). The naive Dockerfile's own rebuild after the same edit is shown beside it.
3. A lock that changes by one package: ``pip install six`` into the kernel's venv (.envs/small-kernel-step3,
   ``six`` uninstalled first), as a notebook user does; from a pruned builder, a cold build of the
   environment, then the build after the install; ours and the naive one, each as a ratio of its own cold
   build, and how many of our packed layers were written again (the build log's ``pack:`` lines not cached).
4. Promote with an unchanged environment: seconds from ``jupyter promote run --target docker`` to the
   job's runner running in its container, against ``docker run`` of the same image to a Python in it
   running (the runner's interpreter printing its clock).
5. Image sizes, ours and naive.

``--env torch``: the torch kernel instead, its packed cold build against the naive one (image_torch.py).

Usage: python benchmarks/image_build.py [--rounds N] [--steps 12345] [--no-prune] [--env torch]   (needs Docker:
scripts/docker-up.sh). ``--no-prune`` leaves the builder cache alone (a shared machine): a cold build is then
one on a base image of its own (the base plus a layer of its own), on which nothing is cached.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from image_common import (
    BASE,
    BASES,
    BIN,
    LOG,
    NAIVE,
    NAIVE_TAG,
    ROOT,
    naive_build,
    pins_of,
    promote,
    prune,
    size,
    small_env,
)


def packed_layers() -> tuple[int, int]:
    """(pack layers written, of how many) in the last promote's build: written when its ADD was not cached."""
    adds = [line for line in LOG if ": ADD pack/" in line]
    return sum(1 for line in adds if "(cached)" not in line), len(adds)


def cold_builds(args: argparse.Namespace, python: str, naive: Path, env: dict[str, str]) -> dict[str, Any]:
    """Step 1: cold builds, interleaved rounds; step 2: the rebuild after a notebook-only edit."""
    cold: dict[str, list[float]] = {"ours": [], "naive": [], "packed": []}
    refs, bases = {"ours": "", "packed": ""}, {"packed": BASE}
    for i in range(args.rounds):
        for which in ("ours", "naive", "packed") if i % 2 == 0 else ("packed", "naive", "ours"):
            base = bases[which] = prune(args.no_prune)
            if which == "naive":
                (naive / "Dockerfile").write_text(NAIVE.format(base=base))
                cold["naive"].append(naive_build(naive, NAIVE_TAG))
            else:
                t, info = promote(
                    "build", "--python", python, "--rebuild", "--json", env=env, pack=which == "packed", base=base
                )
                cold[which].append(t)
                mode = info["verification"]["build"]["mode"]
                assert mode == ("pack" if which == "packed" else "rebuild"), info["verification"]["build"]
                refs[which] = info["ref"]
            print(f"  round {i + 1} {which:6} cold build {cold[which][-1]:6.1f} s", flush=True)
    # notebook-only edit: ours rebuilds nothing (the notebook is never in the image); the naive one reruns COPY
    naive_build(naive, NAIVE_TAG)  # the naive one's cache, warm again after our prunes
    nb = json.loads((naive / "notebook.ipynb").read_text())
    nb["cells"][0]["source"] = "a = 2\nname = 'edited'"
    (naive / "notebook.ipynb").write_text(json.dumps(nb))
    edit, edited = promote("build", "--python", python, "--json", env=env, base=bases["packed"])
    naive_edit = naive_build(naive, NAIVE_TAG)
    return {"cold": cold, "refs": refs, "edit": edit, "edited": edited, "naive_edit": naive_edit}


def one_package(args: argparse.Namespace, naive: Path, env: dict[str, str]) -> dict[str, Any]:
    """Step 3: ``pip install six`` into the kernel's venv, ours and naive, each against its own cold build."""
    venv = small_env("small-kernel-step3")
    python = str(venv / "bin/python")
    pip = [python, "-m", "pip", "-q"]
    subprocess.run([*pip, "uninstall", "-y", "six"], capture_output=True, check=False)  # what a last run left
    before = pins_of(python)
    base = prune(args.no_prune)
    cold, _ = promote("build", "--python", python, "--rebuild", "--json", env=env, base=base)
    subprocess.run([*pip, "install", "six"], check=True)
    after = pins_of(python)
    one, info = promote("build", "--python", python, "--json", env=env, base=base)
    written = packed_layers()
    subprocess.run([*pip, "uninstall", "-y", "six"], capture_output=True, check=False)
    base = prune(args.no_prune)
    (naive / "Dockerfile").write_text(NAIVE.format(base=base))
    (naive / "requirements.txt").write_text("\n".join(before) + "\n")
    naive_cold = naive_build(naive, NAIVE_TAG)
    (naive / "requirements.txt").write_text("\n".join(after) + "\n")
    naive_one = naive_build(naive, NAIVE_TAG)
    changed = [p for p in after if p not in before]
    print(
        f"  one-package change ({', '.join(changed)}): ours {cold:.1f} s cold -> {one:.1f} s "
        f"({written[0]} of {written[1]} packed layers written); naive {naive_cold:.1f} s cold -> {naive_one:.1f} s",
        flush=True,
    )
    return {"cold": cold, "one": one, "info": info, "written": written, "naive_cold": naive_cold, "naive": naive_one}


def unchanged(python: str, nb: dict[str, Any], env: dict[str, str], tmp: Path) -> tuple[list[float], list[float]]:
    """Step 4: command -> runner running in its container, against ``docker run`` of the same image."""
    kernels = tmp / "jupyter" / "kernels" / "bench-small"
    kernels.mkdir(parents=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (kernels / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "bench", "language": "python"}))
    nb["metadata"]["kernelspec"] = {"name": "bench-small", "display_name": "bench", "language": "python"}
    job_nb = tmp / "job.ipynb"
    job_nb.write_text(json.dumps(nb))
    starts = []
    for i in range(4):  # the first one may build: not counted
        out = tmp / f"run-{i}"
        start = time.time()
        command = [str(BIN / "jupyter"), "promote", "run", str(job_nb), "--target", "docker", "--out", str(out)]
        subprocess.run(
            [*command, f"--ImageBuilder.base_image={BASE}"],
            env={**env, "JUPYTER_PATH": str(tmp / "jupyter")},
            capture_output=True,
            check=True,
        )
        events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
        running = next(e["ts"] for e in events if e["type"] == "status" and e["state"] == "running")
        starts += [running - start] if i else []
    image = json.loads((tmp / "run-0" / "job.json").read_text())["image"]["ref"]
    plain_starts = []
    for _ in range(3):
        start = time.time()
        printed = subprocess.run(
            ["docker", "run", "--rm", image, "/opt/promote/runner/bin/python", "-c", "import time; print(time.time())"],
            capture_output=True,
            text=True,
            check=True,
        )
        plain_starts.append(float(printed.stdout.strip()) - start)
    return starts, plain_starts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", default="12345", help="which steps to run (1 and 2 go together)")
    parser.add_argument("--no-prune", action="store_true", help="leave the builder cache alone: fresh bases instead")
    parser.add_argument("--env", choices=("small", "torch"), default="small", help="torch: image_torch.py's run")
    parser.add_argument("--naive-timeout", type=float, default=1500, help="--env torch: the naive build's limit")
    args = parser.parse_args()
    if args.env == "torch":
        from image_torch import torch_bench

        try:
            return torch_bench(args.no_prune, args.naive_timeout)
        finally:
            subprocess.run(["docker", "rmi", NAIVE_TAG, *BASES], capture_output=True)
    venv = small_env()
    python = str(venv / "bin/python")
    tmp = Path(tempfile.mkdtemp(prefix="promote-bench-"))
    env = {**os.environ, "JUPYTER_PROMOTE_RUNS_DIR": str(tmp / "runs"), "XDG_CACHE_HOME": str(tmp / "cache")}
    # the same environment for both: the lock's pins
    packages = pins_of(python)
    naive = tmp / "naive"
    naive.mkdir()
    (naive / "Dockerfile").write_text(NAIVE.format(base=BASE))
    (naive / "requirements.txt").write_text("\n".join(packages) + "\n")
    notebook = ROOT / "tests/notebooks/success.ipynb"
    shutil.copy(notebook, naive / "notebook.ipynb")
    print(
        f"environment: {len(packages)} packages (+pip, setuptools); base image {BASE}; {args.rounds} rounds", flush=True
    )
    try:
        first = cold_builds(args, python, naive, env) if "1" in args.steps or "2" in args.steps else None
        one = one_package(args, naive, env) if "3" in args.steps else None
        nb = json.loads(notebook.read_text())
        starts = unchanged(python, nb, env, tmp) if "4" in args.steps else None
        print()
        report(first, one, starts, "5" in args.steps)
    finally:
        subprocess.run(["docker", "rmi", NAIVE_TAG, *BASES], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


def report(first: dict[str, Any] | None, one: dict[str, Any] | None, starts: Any, sizes: bool) -> None:
    if first is not None:
        cold = first["cold"]
        oc, nc, pc = (statistics.median(cold[k]) for k in ("ours", "naive", "packed"))
        print(
            f"cold build          ours {oc:6.1f} s   naive {nc:6.1f} s   ratio ours/naive {oc / nc:.2f}   (target <= 1.1)"
            f"   rounds ours {', '.join(f'{t:.1f}' for t in cold['ours'])}; naive {', '.join(f'{t:.1f}' for t in cold['naive'])}"
        )
        print(
            f"cold build packed   {pc:6.1f} s (no network)   naive {nc:6.1f} s (network)   ratio packed/naive "
            f"{pc / nc:.2f}   (target <= 0.5)   rounds {', '.join(f'{t:.1f}' for t in cold['packed'])}"
        )
        print(
            f"notebook-only edit  ours {first['edit']:6.2f} s   ratio ours/our cold {first['edit'] / oc:.3f}   (target <= 0.05),"
            f" {1 if first['edited'].get('built') else 0} builds; naive rebuild {first['naive_edit']:.2f} s"
        )
    if one is not None:
        print(
            f"one-package change  ours {one['one']:6.1f} s   ratio to its cold build {one['one'] / one['cold']:.2f} "
            f"({'built' if one['info'].get('built') else 'not built'}, {one['written'][0]} of {one['written'][1]} packed "
            f"layers written);   naive {one['naive']:.1f} s   ratio to its cold build {one['naive'] / one['naive_cold']:.2f}"
        )
    if starts is not None:
        (ours, plain), ds = starts, statistics.median(starts[0])
        dp = statistics.median(plain)
        print(
            f"unchanged env       command -> container running: median {ds:.2f} s "
            f"(runs {', '.join(f'{s:.2f}' for s in ours)});   docker run of the same image -> Python running: "
            f"median {dp:.2f} s (runs {', '.join(f'{s:.2f}' for s in plain)});   ratio {ds / dp:.2f}"
        )
    if sizes and first is not None:
        print(
            f"image size          ours {size(first['refs']['ours']) / 1e6:.0f} MB   packed "
            f"{size(first['refs']['packed']) / 1e6:.0f} MB   naive {size(NAIVE_TAG) / 1e6:.0f} MB"
        )


if __name__ == "__main__":
    main()
