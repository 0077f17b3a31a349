"""What the image-build benchmarks share: the kernel venvs, the naive Dockerfile, fresh bases, promote's CLI.

Used by image_build.py (the small kernel, steps 1-5) and image_torch.py (the torch kernel).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
NAIVE_TAG = "jupyter-promote/bench-naive:latest"


def small_env(name: str = "small-kernel", *extra: str) -> Path:
    """A kernel venv at .envs/NAME (made if missing): the small kernel's pins, plus ``extra`` requirements."""
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


BASES: list[str] = []  # the fresh bases made here, removed at the end


def prune(keep_cache: bool = False) -> str:
    """A builder with nothing cached for the next build; the base image to build on (a fresh one when
    ``keep_cache``: its id is new, so no layer built on it is cached)."""
    if not keep_cache:
        subprocess.run(["docker", "builder", "prune", "-af"], capture_output=True, check=True)
        return BASE
    tag = f"jupyter-promote/bench-base:{os.getpid()}-{len(BASES)}"
    dockerfile = f"FROM {BASE}\nRUN echo {tag} > /etc/promote-bench\n".encode()  # a layer: a new cache chain
    subprocess.run(["docker", "build", "-q", "-t", tag, "-"], input=dockerfile, capture_output=True, check=True)
    BASES.append(tag)
    return tag


def docker_cli() -> str:
    from jupyter_promote.image.docker_engine import buildkit_cli

    return str(buildkit_cli())


def size(ref: str) -> int:
    out = subprocess.run(
        ["docker", "image", "inspect", ref, "--format", "{{.Size}}"], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


LOG: list[str] = []  # the last promote's stderr: its build log


def promote(*args: str, env: dict[str, str], pack: bool = True, base: str = BASE) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    result = subprocess.run(
        [str(BIN / "jupyter"), "promote", *args, f"--ImageBuilder.base_image={base}", f"--ImageBuilder.pack={pack}"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - start
    LOG[:] = result.stderr.splitlines()
    if result.returncode != 0:
        raise SystemExit(f"jupyter promote {' '.join(args)} failed:\n{result.stderr[-2000:]}")
    return elapsed, json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}


def naive_build(work: Path, tag: str = NAIVE_TAG, timeout: float | None = None) -> float:
    """Seconds of ``docker build`` of the naive Dockerfile in ``work`` (TimeoutExpired past ``timeout``)."""
    start = time.perf_counter()
    subprocess.run(
        [docker_cli(), "build", "-q", "-t", tag, "--secret", f"id=ca,src={CA}", str(work)],
        check=True,
        capture_output=True,
        env={**os.environ, "DOCKER_BUILDKIT": "1"},
        timeout=timeout,
    )
    return time.perf_counter() - start
