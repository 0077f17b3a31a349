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
3. A lock that changes by one package (the small kernel plus ``six``, a venv at .envs/small-kernel-one):
   from a pruned builder, a cold build of the small kernel, then the build of the changed lock; ours and
   the naive one, each as a ratio of its own cold build.
4. Promote with an unchanged environment: seconds from ``jupyter promote run --target docker`` to the
   job's runner running in its container, against ``docker run`` of the same image to a Python in it
   running (the runner's interpreter printing its clock).
5. Image sizes, ours and naive.

Usage: python benchmarks/image_build.py [--rounds N]   (needs the Docker engine: scripts/docker-up.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
BASE = os.environ.get("PROMOTE_TEST_BASE_IMAGE", "jupyter-promote/base:bookworm")
CA = os.environ.get("PIP_CERT") or "/etc/ssl/certs/ca-certificates.crt"
NAIVE = """FROM {base}
RUN python3 -m venv /venv
COPY requirements.txt /requirements.txt
RUN --mount=type=secret,id=ca PIP_CERT=/run/secrets/ca /venv/bin/pip install --no-cache-dir -r /requirements.txt
COPY notebook.ipynb /work/notebook.ipynb
"""


def small_env(name: str = "small-kernel", *extra: str) -> Path:
    venv = ROOT / ".envs" / name
    if not (venv / ".complete").exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        requirements = ["-r", str(ROOT / "tests/envs/small-kernel.txt"), *extra]
        subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q", *requirements], check=True)
        (venv / ".complete").write_text("ok\n")
    return venv


def pins_of(python: str) -> list[str]:
    """The environment's pins, as the naive Dockerfile's requirements.txt (pip and setuptools left out)."""
    out = subprocess.run([python, "-m", "pip", "freeze", "--all"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if "==" in line and not line.startswith(("pip==", "setuptools=="))]


def prune() -> None:
    subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True, check=True)


def docker_cli() -> str:
    from jupyter_promote.image.docker_engine import buildkit_cli

    return buildkit_cli()


def size(ref: str) -> int:
    out = subprocess.run(
        ["docker", "image", "inspect", ref, "--format", "{{.Size}}"], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def promote(*args: str, env: dict[str, str], pack: bool = True) -> tuple[float, dict]:
    start = time.perf_counter()
    result = subprocess.run(
        [str(BIN / "jupyter"), "promote", *args, f"--ImageBuilder.base_image={BASE}", f"--ImageBuilder.pack={pack}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"jupyter promote {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    return elapsed, json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}


def naive_build(work: Path, tag: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [docker_cli(), "build", "-q", "-t", tag, "--secret", f"id=ca,src={CA}", str(work)],
        check=True,
        capture_output=True,
        env={**os.environ, "DOCKER_BUILDKIT": "1"},
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
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

    cold: dict[str, list[float]] = {"ours": [], "naive": [], "packed": []}
    ours_cold, naive_cold, packed_cold = cold["ours"], cold["naive"], cold["packed"]
    ref = packed_ref = ""
    for i in range(args.rounds):
        for which in ("ours", "naive", "packed") if i % 2 == 0 else ("packed", "naive", "ours"):
            prune()
            if which == "naive":
                naive_cold.append(naive_build(naive, "jupyter-promote/bench-naive:latest"))
            else:
                t, info = promote("build", "--python", python, "--rebuild", "--json", env=env, pack=which == "packed")
                cold[which].append(t)
                mode = info["verification"]["build"]["mode"]
                assert mode == ("pack" if which == "packed" else "rebuild"), info["verification"]["build"]
                ref, packed_ref = (ref, info["ref"]) if which == "packed" else (info["ref"], packed_ref)
            print(f"  round {i + 1} {which:6} cold build {cold[which][-1]:6.1f} s", flush=True)

    # notebook-only edit: ours rebuilds nothing (the notebook is never in the image); the naive one reruns COPY
    naive_build(naive, "jupyter-promote/bench-naive:latest")  # the naive one's cache, warm again after our prunes
    nb = json.loads(notebook.read_text())
    nb["cells"][0]["source"] = "a = 2\nname = 'edited'"
    (naive / "notebook.ipynb").write_text(json.dumps(nb))
    ours_edit, edited = promote("build", "--python", python, "--json", env=env)
    naive_edit = naive_build(naive, "jupyter-promote/bench-naive:latest")

    # a lock that changes by one package: each from a pruned builder, its cold build then the changed one
    changed = str(small_env("small-kernel-one", "six") / "bin/python")
    changed_pins = pins_of(changed)
    one = [p for p in changed_pins if p not in packages]
    prune()
    one_cold, _ = promote("build", "--python", python, "--rebuild", "--json", env=env)
    one_ours, one_info = promote("build", "--python", changed, "--json", env=env)
    prune()
    (naive / "requirements.txt").write_text("\n".join(packages) + "\n")
    one_naive_cold = naive_build(naive, "jupyter-promote/bench-naive:latest")
    (naive / "requirements.txt").write_text("\n".join(changed_pins) + "\n")
    one_naive = naive_build(naive, "jupyter-promote/bench-naive:latest")
    print(
        f"  one-package change ({', '.join(one)}): ours {one_cold:.1f} s cold -> {one_ours:.1f} s; "
        f"naive {one_naive_cold:.1f} s cold -> {one_naive:.1f} s",
        flush=True,
    )

    # unchanged environment: command -> runner running in its container
    kernels = tmp / "jupyter" / "kernels" / "bench-small"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "bench",
                "language": "python",
            }
        )
    )
    nb["metadata"]["kernelspec"] = {"name": "bench-small", "display_name": "bench", "language": "python"}
    job_nb = tmp / "job.ipynb"
    job_nb.write_text(json.dumps(nb))
    starts = []
    for _ in range(3):
        out = tmp / f"run-{len(starts)}"
        start = time.time()
        subprocess.run(
            [
                str(BIN / "jupyter"),
                "promote",
                "run",
                str(job_nb),
                "--target",
                "docker",
                "--out",
                str(out),
                f"--ImageBuilder.base_image={BASE}",
            ],
            env={**env, "JUPYTER_PATH": str(tmp / "jupyter")},
            capture_output=True,
            check=True,
        )
        events = [json.loads(x) for x in (out / "events.jsonl").read_text().splitlines()]
        running = next(e["ts"] for e in events if e["type"] == "status" and e["state"] == "running")
        starts.append(running - start)
    image = json.loads((tmp / "run-0" / "job.json").read_text())["image"]["ref"]
    plain_starts = []
    for _ in range(3):
        start = time.time()
        out = subprocess.run(
            ["docker", "run", "--rm", image, "/opt/promote/runner/bin/python", "-c", "import time; print(time.time())"],
            capture_output=True,
            text=True,
            check=True,
        )
        plain_starts.append(float(out.stdout.strip()) - start)

    oc, nc, pc = statistics.median(ours_cold), statistics.median(naive_cold), statistics.median(packed_cold)
    ds, dp = statistics.median(starts), statistics.median(plain_starts)
    print()
    print(
        f"cold build          ours {oc:6.1f} s   naive {nc:6.1f} s   ratio ours/naive {oc / nc:.2f}   (target <= 1.1)"
        f"   rounds ours {', '.join(f'{t:.1f}' for t in ours_cold)}; naive {', '.join(f'{t:.1f}' for t in naive_cold)}"
    )
    print(
        f"cold build packed   {pc:6.1f} s (no network)   naive {nc:6.1f} s (network)   ratio packed/naive "
        f"{pc / nc:.2f}   (target <= 0.5)   rounds {', '.join(f'{t:.1f}' for t in packed_cold)}"
    )
    print(
        f"notebook-only edit  ours {ours_edit:6.2f} s   ratio ours/our cold {ours_edit / oc:.3f}   (target <= 0.05),"
        f" {1 if edited.get('built') else 0} builds; naive rebuild {naive_edit:.2f} s"
    )
    print(
        f"one-package change  ours {one_ours:6.1f} s   ratio to its cold build {one_ours / one_cold:.2f} "
        f"({'built' if one_info.get('built') else 'not built'});   naive {one_naive:.1f} s   ratio to its cold build "
        f"{one_naive / one_naive_cold:.2f}"
    )
    print(
        f"unchanged env       command -> container running: median {ds:.2f} s "
        f"(runs {', '.join(f'{s:.2f}' for s in starts)});   docker run of the same image -> Python running: "
        f"median {dp:.2f} s (runs {', '.join(f'{s:.2f}' for s in plain_starts)});   ratio {ds / dp:.2f}"
    )
    print(
        f"image size          ours {size(ref) / 1e6:.0f} MB   packed {size(packed_ref) / 1e6:.0f} MB   "
        f"naive {size('jupyter-promote/bench-naive:latest') / 1e6:.0f} MB"
    )
    subprocess.run(["docker", "rmi", "jupyter-promote/bench-naive:latest"], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
