"""The environment as a virtual environment on a cluster node, for jobs that run without a container
(``SlurmTarget.container_runtime = "none"``).

Recreated from the job's lock with its exact pins (``--no-deps``: the lock is the whole closure), the
wheels freeze built for local code, and a kernelspec ``promote-frozen``; then verified like an image
(introspected and diffed against the lock). Cached by the lock's hash in a folder on the shared
filesystem: the tasks of a sweep, started at once on many nodes, build it once (an flock) and reuse it.

Usage on the node (what the batch script runs): ``python -m jupyter_promote.image.venv ensure RUN_DIR CACHE``
prints the environment's prefix; on failure it ends the job (a ``failed``/``environment`` status event)
and exits 4.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import ImageError
from ..freeze import LOCK_FILE, read_environment
from ..freeze.kernels import Interpreter
from .recipe import pinned_requirements
from .verify import compare

KERNEL_NAME = "promote-frozen"
MARKER = ".promote-verified.json"


def ensure(env_dir: str | os.PathLike[str], cache_dir: str | os.PathLike[str], base_python: str | None = None) -> Path:
    """The verified venv of the lock in ``env_dir`` (a frozen environment folder), made when missing."""
    folder, cache = Path(env_dir), Path(cache_dir)
    lock = json.loads((folder / LOCK_FILE).read_text())
    key = lock["content_hash"].split(":")[-1][:32]
    prefix: Path = cache / key
    if (prefix / MARKER).is_file():
        return prefix
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{key}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # another task may be making it right now
        if (prefix / MARKER).is_file():
            return prefix
        shutil.rmtree(prefix, ignore_errors=True)  # a half-made one, from a job killed while making it
        try:
            _create(lock, folder, prefix, base_python)
            verification = compare(
                lock,
                read_environment(
                    Interpreter((str(prefix / "bin" / "python"),)), tuple(lock.get("env", {})), cached=False
                ),
            )
        except BaseException:
            shutil.rmtree(prefix, ignore_errors=True)
            raise
        if not verification.ok:
            shutil.rmtree(prefix, ignore_errors=True)
            raise ImageError(f"the node's environment {prefix} does not reproduce the lock:\n{verification.table()}")
        (prefix / MARKER).write_text(json.dumps(verification.to_json(), indent=2, sort_keys=True) + "\n")
    return prefix


def base_python(version: str) -> str:
    """An interpreter of the lock's Python major.minor on this node."""
    major_minor = ".".join(version.split(".")[:2])
    for name in (f"python{major_minor}", "python3"):
        found = shutil.which(name)
        if found is None:
            continue
        out = subprocess.run(
            [found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.stdout.strip() == major_minor:
            return found
    raise ImageError(f"Python {major_minor}: not on this node's PATH (the lock was frozen with Python {version})")


def _create(lock: dict[str, Any], env_dir: Path, prefix: Path, python: str | None) -> None:
    python = python or base_python(lock["python"]["version"])
    _run([python, "-m", "venv", "--without-pip", str(prefix)], "creating the venv")
    requirements = pinned_requirements(lock, local_wheels=False)
    wheels = [str(wheel_file(env_dir, p["source"])) for p in lock["packages"] if "wheel" in p["source"]]
    (prefix / "promote-requirements.txt").write_text(requirements + "".join(f"{w}\n" for w in wheels))
    # this process's pip installs into the venv (which has none of its own: it holds exactly the lock)
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(prefix / "bin" / "python"),
            "install",
            "--no-deps",
            "--no-input",
            "--disable-pip-version-check",
            "--quiet",
            "-r",
            str(prefix / "promote-requirements.txt"),
        ],
        "installing the lock's packages",
    )
    kernel_dir = prefix / "share" / "jupyter" / "kernels" / KERNEL_NAME
    kernel_dir.mkdir(parents=True)
    spec = {
        "argv": [str(prefix / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Frozen notebook environment",
        "language": "python",
    }
    (kernel_dir / "kernel.json").write_text(json.dumps(spec, indent=1) + "\n")


def wheel_file(env_dir: Path, source: dict[str, Any]) -> Path:
    """A wheel of the lock: built by freeze for local code (in the environment folder), or found in a
    find-links folder (``found_in``): sent with the environment where it travels, else read where it was."""
    beside: Path = env_dir / source["wheel"]
    if beside.is_file() or not source.get("found_in"):
        return beside
    return Path(source["found_in"]) / Path(source["wheel"]).name


def _run(command: list[str], what: str) -> None:
    # the submitter's PYTHONPATH travels with the batch job: pip would take the packages it finds there for
    # installed ones and leave the venv without them (found by the server's own Slurm test)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    result = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if result.returncode != 0:
        tail = "\n".join((result.stderr or result.stdout).strip().splitlines()[-15:])
        raise ImageError(f"{what} failed (exit {result.returncode}):\n{tail}")


def main(argv: list[str]) -> int:
    if len(argv) != 3 or argv[0] != "ensure":
        print("usage: python -m jupyter_promote.image.venv ensure RUN_DIR CACHE_DIR", file=sys.stderr)
        return 2
    from ..rundir import RunDir
    from ..runtime.events import EventLog

    run = RunDir(argv[1])
    try:
        print(ensure(run.env_dir, argv[2]))
    except (ImageError, OSError, ValueError, KeyError) as exc:
        message = f"the job's environment could not be made on this node: {exc}"
        print(f"jupyter-promote: {message}", file=sys.stderr)
        EventLog(str(run.events), run.read().id).emit(
            "status", state="failed", reason="environment", message=message.splitlines()[0], source="node"
        )
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
