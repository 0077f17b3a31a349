"""The Docker engine, reached two ways: docker-py for the API, the docker CLI for BuildKit builds.

docker-py has no BuildKit session support (secrets, bind mounts in ``RUN``), so builds go through a
docker CLI that can do BuildKit; everything else uses docker-py.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Any

from ..errors import TargetUnavailable, UsageError


@functools.lru_cache(maxsize=1)
def client() -> Any:
    """A docker-py client for the engine named by ``DOCKER_HOST`` (default: the local socket)."""
    try:
        import docker
    except ImportError:
        raise UsageError(
            "the docker target needs docker-py: pip install 'jupyter-promote[docker]'", subject="docker"
        ) from None
    try:
        engine = docker.from_env(timeout=120)
        engine.ping()
    except Exception as exc:
        raise TargetUnavailable(f"docker: the engine does not answer ({_first_line(exc)})", subject="docker") from None
    return engine


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _candidates() -> list[str]:
    seen: list[str] = []
    for directory in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/bin"]:
        path = os.path.join(directory, "docker")
        if os.access(path, os.X_OK) and os.path.realpath(path) not in map(os.path.realpath, seen):
            seen.append(path)
    return seen


def _can_buildkit(cli: str) -> bool:
    """A CLI builds with BuildKit when it has buildx, or is a classic CLI (< 23) with BuildKit built in."""
    try:
        if subprocess.run([cli, "buildx", "version"], capture_output=True, timeout=20, check=False).returncode == 0:
            return True
        out = subprocess.run(
            [cli, "version", "--format", "{{.Client.Version}}"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    try:
        return int(out.stdout.strip().split(".")[0]) < 23
    except ValueError:
        return False


@functools.lru_cache(maxsize=4)
def buildkit_cli(configured: str = "") -> str:
    """The docker CLI to build with: ``configured`` when given, else the first on PATH that can BuildKit."""
    if configured:
        if not shutil.which(configured):
            raise UsageError(f"--ImageBuilder.docker_cli={configured}: no such program", subject=configured)
        return configured
    for cli in _candidates():
        if _can_buildkit(cli):
            return cli
    raise TargetUnavailable(
        "docker: no docker CLI here can build with BuildKit (install docker-buildx, or set --ImageBuilder.docker_cli)",
        subject="docker",
    )


def has_nvidia_runtime() -> bool:
    info = client().info()
    return "nvidia" in (info.get("Runtimes") or {}) or bool(info.get("CDISpecDirs") and shutil.which("nvidia-ctk"))
