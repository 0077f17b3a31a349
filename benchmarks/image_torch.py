"""The torch kernel's image (``image_build.py --env torch``): packed cold build against the naive one, one run.

Environment: the small kernel of tests/envs/small-kernel.txt plus ``torch==2.13.0`` (the CPU build this
machine's pip finds on local disk), in a venv at .envs/torch-kernel (made if missing), registered as the
kernelspec ``bench-torch`` in a private JUPYTER_PATH, as a user has it.

1. Packed cold build: ``jupyter promote build --kernel bench-torch --rebuild --json`` on a fresh base (nothing
   cached on it), no network; its seconds and its verification line (``packed: N files verified ...``).
2. A notebook importing torch, ``jupyter promote run NB --target docker --kernel bench-torch``: the packed image
   reused, the job's outcome and its output.
3. The naive Dockerfile (pip install -r requirements.txt, the index reachable from the build) on another
   fresh base, bounded by ``--naive-timeout`` (default 1500 s): past it, the ratio is an upper bound.
   requirements.txt is the venv's ``pip freeze`` with local version labels dropped (``torch==2.13.0+cpu`` ->
   ``torch==2.13.0``): the index reachable from a build (PyPI) has no ``+cpu`` builds, and its torch 2.13.0
   for Linux is the CUDA one, which brings the nvidia-* wheels with it.
4. Image sizes.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from image_common import BIN, LOG, NAIVE, NAIVE_TAG, ROOT, naive_build, pins_of, promote, prune, size, small_env

KERNEL = "bench-torch"
NOTEBOOK = {
    "cells": [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": "torch",
            "metadata": {},
            "outputs": [],
            "source": "import torch\nx = torch.ones(64, 64)\nprint(torch.__version__, float((x @ x).sum()))",
        }
    ],
    "metadata": {"kernelspec": {"name": KERNEL, "display_name": "bench torch", "language": "python"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def kernelspec(python: str, jupyter_path: Path) -> None:
    kernels = jupyter_path / "kernels" / KERNEL
    kernels.mkdir(parents=True, exist_ok=True)
    argv = [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (kernels / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "bench torch", "language": "python"})
    )


def run_notebook(tmp: Path, env: dict[str, str], base: str) -> str:
    """Step 2: the notebook on Docker with the kernel's image; its state and the cell's printed line."""
    nb = tmp / "torch.ipynb"
    nb.write_text(json.dumps(NOTEBOOK))
    out = tmp / "run"
    start = time.perf_counter()
    command = [str(BIN / "jupyter"), "promote", "run", str(nb), "--target", "docker", "--kernel", KERNEL]
    result = subprocess.run(
        [*command, "--out", str(out), f"--ImageBuilder.base_image={base}"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    executed, printed = out / "output.ipynb", ""
    if executed.exists():
        cells = [c for c in json.loads(executed.read_text())["cells"] if "import torch" in "".join(c["source"])]
        printed = "".join("".join(o.get("text", "")) for c in cells for o in c.get("outputs", [])).strip()
    tail = (result.stderr.strip().splitlines() or [""])[-1]
    return f"rc {result.returncode} in {elapsed:.1f} s; printed {printed!r}; last line: {tail}"


def naive(tmp: Path, python: str, base: str, timeout: float) -> tuple[float, bool, list[str]]:
    """Step 3: seconds of the naive build (or of the timeout), whether it finished, and its requirements."""
    work = tmp / "naive"
    work.mkdir()
    pins = [line.split("+", 1)[0] for line in pins_of(python)]  # PyPI has no local versions (+cpu)
    (work / "requirements.txt").write_text("\n".join(pins) + "\n")
    (work / "notebook.ipynb").write_text(json.dumps(NOTEBOOK))
    (work / "Dockerfile").write_text(NAIVE.format(base=base))
    start = time.perf_counter()
    try:
        return naive_build(work, timeout=timeout), True, pins
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, False, pins
    except subprocess.CalledProcessError as failed:
        raise SystemExit(f"naive build failed:\n{(failed.stderr or b'').decode()[-2000:]}") from None


def torch_bench(no_prune: bool, naive_timeout: float) -> None:
    venv = small_env("torch-kernel", "torch==2.13.0")
    python = str(venv / "bin/python")
    tmp = Path(tempfile.mkdtemp(prefix="promote-bench-torch-"))
    kernelspec(python, tmp / "jupyter")
    env = {
        **os.environ,
        "JUPYTER_PATH": str(tmp / "jupyter"),
        "JUPYTER_PROMOTE_RUNS_DIR": str(tmp / "runs"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
    }
    pins = pins_of(python)
    torch_pin = next(p for p in pins if p.lower().startswith("torch=="))
    print(f"environment: {len(pins)} packages (+pip, setuptools), {torch_pin}; kernel {KERNEL} ({venv})", flush=True)
    base = prune(no_prune)
    packed, info = promote("build", "--kernel", KERNEL, "--rebuild", "--json", env=env, base=base)
    mode = info.get("verification", {}).get("build", {}).get("mode")
    lines = [line for line in LOG if line.startswith(("build mode:", "packed:")) or "pack refused" in line]
    print(f"  packed cold build {packed:.1f} s, mode {mode}", *(f"    {line}" for line in lines), sep="\n", flush=True)
    ran = run_notebook(tmp, env, base)
    print(f"  notebook on docker: {ran}", flush=True)
    naive_base = prune(no_prune)
    naive_s, finished, _ = naive(tmp, python, naive_base, naive_timeout)
    print(f"  naive cold build {naive_s:.1f} s ({'finished' if finished else 'timed out'})", flush=True)
    report(packed, naive_s, finished, info, mode)
    subprocess.run(["docker", "rmi", info["ref"]], capture_output=True, check=False)  # the packed image: ours
    subprocess.run(["rm", "-rf", str(tmp)], check=False)


def report(packed: float, naive_s: float, finished: bool, info: dict[str, Any], mode: Any) -> None:
    ratio = packed / naive_s
    bound = "" if finished else f" (naive did not finish in {naive_s:.0f} s: the ratio is at most this)"
    print(
        f"\ntorch cold build    packed {packed:6.1f} s (mode {mode}, no network)   naive "
        f"{'>' if not finished else ''}{naive_s:6.1f} s (network)   ratio packed/naive "
        f"{'<= ' if not finished else ''}{ratio:.2f}   (target <= 0.5){bound}"
    )
    naive_size = f"{size(NAIVE_TAG) / 1e6:.0f} MB" if finished else "n/a"
    print(f"image size          packed {size(info['ref']) / 1e6:.0f} MB   naive {naive_size}")


if __name__ == "__main__":
    raise SystemExit(f"run it as: python {ROOT / 'benchmarks/image_build.py'} --env torch")
