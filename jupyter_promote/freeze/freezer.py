"""Freeze: a kernel's real environment -> ``promote.lock.json`` + ``requirements.txt`` (+ wheels for local code).

The environment is read by running :mod:`.introspect` *inside the kernel's interpreter*, never from the
process that runs jupyter-promote.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import FreezeError, KernelError
from . import cache
from .kernels import Interpreter, kernel_interpreter, python_interpreter
from .lock import build_lock, content_hash, render_requirements, unreproducible

__all__ = [
    "DEFAULT_ENV_ALLOWLIST",
    "OBSERVED_FILE",
    "FrozenEnv",
    "environment_card",
    "freeze",
    "kernel_interpreter",
    "observe",
    "python_interpreter",
    "read_lock",
    "tree_hash",
]

LOCK_FILE = "promote.lock.json"
#: In a run directory: the environment the job really ran with (see :func:`observe`).
OBSERVED_FILE = "observed_env.json"
REQUIREMENTS_FILE = "requirements.txt"
#: Environment variables that change behaviour and are safe to record; nothing else is captured.
DEFAULT_ENV_ALLOWLIST = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_ALLOC_CONF",
    "PYTHONHASHSEED",
    "TZ",
    "LANG",
    "LC_ALL",
)
_INTROSPECT = Path(__file__).with_name("introspect.py")
#: Seconds a kernel's interpreter may take to describe its environment (a preview allows less).
INTROSPECT_TIMEOUT_S = 300.0
_SKIP_DIRS = {".git", "__pycache__", "build", "dist", ".venv", ".tox", "node_modules", ".ipynb_checkpoints"}


@dataclass(frozen=True)
class FrozenEnv:
    lock: dict[str, Any]
    directory: Path

    @property
    def lock_path(self) -> Path:
        return self.directory / LOCK_FILE

    @property
    def content_hash(self) -> str:
        return str(self.lock["content_hash"])

    def summary(self) -> str:
        torch = self.lock.get("torch") or {}
        extra = f", torch {torch['version']}" + (f" CUDA {torch['cuda']}" if torch.get("cuda") else "") if torch else ""
        return (
            f"{len(self.lock['packages'])} packages, Python {self.lock['python']['version']}{extra} "
            f"[{self.content_hash[:19]}]"
        )


#: The packages a person looks for first when two environments are set side by side.
KEY_PACKAGES = ("torch", "numpy", "jax", "tensorflow", "scikit-learn", "pandas", "transformers", "papermill")


def observe(interpreter: Interpreter, env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST) -> dict[str, Any]:
    """The lock of ``interpreter`` as it is now, wherever that is (the job's node or image): what a job
    ran with, to set beside the lock it was made from. Writes nothing and builds no wheels."""
    doc = read_environment(interpreter, env_allowlist)
    return build_lock(doc, kernel=interpreter.kernel, created_at=round(time.time(), 3), host=socket.gethostname())


def read_lock(env_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The lock in a frozen environment directory, or None when there is none (yet)."""
    try:
        with open(Path(env_dir) / LOCK_FILE, encoding="utf-8") as f:
            lock: dict[str, Any] = json.load(f)
    except (OSError, ValueError):
        return None
    return lock


def environment_card(lock: dict[str, Any]) -> dict[str, Any]:
    """The facts of a lock a person compares at a glance (the sidebar's environment view)."""
    torch = lock.get("torch") or {}
    hardware = lock.get("hardware") or {}
    versions = {p["name"]: p["version"] for p in lock.get("packages", [])}
    return {
        "content_hash": lock.get("content_hash"),
        "python": (lock.get("python") or {}).get("version"),
        "torch": torch.get("version"),
        "cuda": torch.get("cuda"),
        "cudnn": torch.get("cudnn"),
        "cpu": (hardware.get("cpu") or {}).get("model"),
        "gpu": hardware.get("gpu"),
        "packages": len(versions),
        "key_packages": {name: versions[name] for name in KEY_PACKAGES if name in versions},
        "env": lock.get("env") or {},
    }


def read_environment(
    interpreter: Interpreter,
    env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST,
    timeout: float = INTROSPECT_TIMEOUT_S,
    *,
    cached: bool = True,
) -> dict[str, Any]:
    """Run the introspection program in ``interpreter`` and return its document (within ``timeout`` seconds).

    With ``cached``, the document of an earlier run is returned while the environment's fingerprint is
    unchanged (see :mod:`.cache`): no interpreter starts. Verifying a rebuilt environment passes False.
    """
    if cached and (doc := cache.load(interpreter, env_allowlist)) is not None:
        return doc
    doc = _introspect(interpreter, env_allowlist, timeout)
    cache.store(interpreter, env_allowlist, doc)
    return doc


def _introspect(interpreter: Interpreter, env_allowlist: tuple[str, ...], timeout: float) -> dict[str, Any]:
    command = [*interpreter.command, "-I", str(_INTROSPECT), ",".join(env_allowlist)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except OSError as exc:
        raise KernelError(f"{interpreter.display}: cannot start: {exc.strerror}") from None
    except subprocess.TimeoutExpired:
        raise KernelError(f"{interpreter.display}: introspection did not finish within {timeout:g} s") from None
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise KernelError(f"{interpreter.display}: introspection failed: {last}")
    try:
        lock: dict[str, Any] = json.loads(result.stdout)
        return lock
    except ValueError:
        raise KernelError(f"{interpreter.display}: introspection printed something that is not JSON") from None


def freeze(
    interpreter: Interpreter,
    out_dir: str | os.PathLike[str],
    *,
    env_allowlist: tuple[str, ...] = DEFAULT_ENV_ALLOWLIST,
    timeout: float = INTROSPECT_TIMEOUT_S,
) -> FrozenEnv:
    """Freeze ``interpreter``'s environment into ``out_dir`` (lock, requirements, wheels for local code).

    Raises :class:`FreezeError`, leaving ``out_dir`` untouched, when a package cannot be reproduced, and
    :class:`KernelError` when the interpreter cannot be introspected within ``timeout`` seconds.
    """
    doc = read_environment(interpreter, env_allowlist, timeout)
    lock = build_lock(doc, kernel=interpreter.kernel, created_at=round(time.time(), 3), host=socket.gethostname())
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".freeze-", dir=out.parent))
    try:
        _vendor_local_packages(interpreter, lock, staging)
        refused = unreproducible(lock)
        if refused:
            listing = "; ".join(f"{p['name']}=={p['version']} ({p['source']['unreproducible']})" for p in refused)
            raise FreezeError(
                f"{interpreter.display}: cannot reproduce {len(refused)} package(s) from an index: {listing}"
            )
        lock["content_hash"] = content_hash(lock)
        (staging / LOCK_FILE).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        (staging / REQUIREMENTS_FILE).write_text(render_requirements(lock))
        _replace_into(staging, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return FrozenEnv(lock, out)


def _replace_into(staging: Path, out: Path) -> None:
    """Move the staged files into ``out`` (created if needed), replacing earlier freeze outputs only."""
    out.mkdir(parents=True, exist_ok=True)
    if (out / "wheels").exists():
        shutil.rmtree(out / "wheels")
    for item in staging.iterdir():
        os.replace(item, out / item.name)


def _vendor_local_packages(interpreter: Interpreter, lock: dict[str, Any], staging: Path) -> None:
    """Build wheels for editable and local-directory installs; copy local archives. Never drop a package."""
    for pkg in lock["packages"]:
        source = pkg["source"]
        kind = source["kind"]
        if kind in ("editable", "local") and os.path.isdir(source.get("path", "")):
            source["tree_sha256"] = tree_hash(Path(source["path"]))
            wheel = _build_wheel(interpreter, pkg, Path(source["path"]), staging / "wheels")
            source["wheel"] = f"wheels/{wheel.name}"
        elif kind == "archive" and os.path.isfile(source.get("path", "")):
            data = Path(source["path"]).read_bytes()
            digest = hashlib.sha256(data).hexdigest()
            if source.get("sha256") and source["sha256"] != digest:
                source["unreproducible"] = f"{source['path']} changed since it was installed (sha256 differs)"
                continue
            source["sha256"] = digest
            (staging / "wheels").mkdir(exist_ok=True)
            target = staging / "wheels" / Path(source["path"]).name
            target.write_bytes(data)
            source["wheel"] = f"wheels/{target.name}"
        elif kind in ("editable", "local", "archive"):
            source["unreproducible"] = f"{source['unreproducible']}: {source.get('path')} no longer exists"


def _build_wheel(interpreter: Interpreter, pkg: dict[str, Any], path: Path, wheels: Path) -> Path:
    wheels.mkdir(parents=True, exist_ok=True)
    before = set(wheels.iterdir())
    env = {**os.environ, "SOURCE_DATE_EPOCH": "315532800"}  # reproducible zip timestamps
    command = [*interpreter.command, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(wheels), str(path)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, check=False)
    built = sorted(set(wheels.iterdir()) - before)
    if result.returncode != 0 or not built:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise FreezeError(
            f"{pkg['name']}=={pkg['version']} ({pkg['source']['kind']} install of {path}): building a wheel failed: {last}"
        )
    return built[-1]


def tree_hash(root: Path) -> str:
    """sha256 over the relative paths and contents of a source tree (build outputs and VCS data skipped)."""
    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            if name.endswith((".pyc", ".pyo")):
                continue
            file = Path(dirpath) / name
            digest.update(str(file.relative_to(root)).encode() + b"\0")
            try:
                digest.update(file.read_bytes())
            except OSError:
                continue
            digest.update(b"\0")
    return digest.hexdigest()
