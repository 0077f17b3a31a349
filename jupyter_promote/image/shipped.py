"""The frozen environment sent with a job to a cluster that shares no filesystem with the submitter (Ray),
as content-addressed folders the engine uploads once per cluster.

The environment folder (``promote_env_KEY``: lock, requirements, the wheels freeze built or found, and
unless told otherwise the lock's other wheels, fetched with the submitter's own index and caches: clusters
often reach none) is kept in the user's cache. A file over :data:`PART_BYTES` (a torch wheel) goes in parts,
each a folder of its own (``promote_part_SHA_I``), named in ``parts.json``: engines cap what one upload may
hold (Ray's dashboard: 100 MiB). On the node, :func:`assemble` puts the folder back together.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..errors import ImageError
from ..freeze import LOCK_FILE
from .recipe import pinned_requirements
from .venv import wheel_file

#: The largest file sent whole; larger ones go in parts of this size.
PART_BYTES = 64 << 20
PARTS_FILE = "parts.json"


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jupyter-promote" / "shipped"


def environment_folders(env_dir: Path, with_wheels: bool = True) -> list[Path]:
    """The folders to send for the frozen environment in ``env_dir``: the environment's own first, then the
    parts of its large files. Made once per lock (and kept in the user's cache)."""
    lock = json.loads((env_dir / LOCK_FILE).read_text())
    key = lock["content_hash"].split(":")[-1][:16]
    folder = _cache() / f"promote_env_{key}{'' if with_wheels else '_pins'}"
    if not (folder / ".complete").is_file():
        _make(lock, env_dir, folder, with_wheels)
    parts = json.loads((folder / PARTS_FILE).read_text()) if (folder / PARTS_FILE).is_file() else {}
    return [folder] + [_cache() / name for entry in parts.values() for name in entry["parts"]]


def _make(lock: dict[str, Any], env_dir: Path, folder: Path, with_wheels: bool) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".env-", dir=folder.parent))
    try:
        shutil.copytree(env_dir, staging, dirs_exist_ok=True, symlinks=False)
        for pkg in lock["packages"]:  # wheels found in this machine's find-links folders go along
            source = pkg["source"]
            if source.get("found_in") and not (staging / source["wheel"]).is_file():
                (staging / source["wheel"]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(wheel_file(env_dir, source), staging / source["wheel"])
        if with_wheels:
            _download_wheels(lock, staging / "wheelhouse")
        _split_large_files(staging)
        (staging / ".complete").write_text("ok\n")
        with contextlib.suppress(OSError):  # another job made it meanwhile: theirs is the same
            os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _split_large_files(folder: Path) -> None:
    parts: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.stat().st_size > PART_BYTES):
        digest = hashlib.sha256()
        names = []
        with open(path, "rb") as f:
            for index, chunk in enumerate(iter(lambda: f.read(PART_BYTES), b"")):
                digest.update(chunk)
                part = _cache() / f"promote_part_{hashlib.sha256(chunk).hexdigest()[:16]}_{index}"
                if not (part / "part").is_file():
                    part.mkdir(parents=True, exist_ok=True)
                    (part / "part").write_bytes(chunk)
                names.append(part.name)
        parts[path.relative_to(folder).as_posix()] = {"parts": names, "sha256": digest.hexdigest()}
        path.unlink()
    if parts:
        (folder / PARTS_FILE).write_text(json.dumps(parts, indent=1, sort_keys=True) + "\n")


def _download_wheels(lock: dict[str, Any], into: Path) -> None:
    """The lock's exact pins as wheels for the lock's Python, from the submitter's own index and caches."""
    into.mkdir(parents=True, exist_ok=True)
    requirements = into.parent / ".pins.txt"
    requirements.write_text(pinned_requirements(lock, local_wheels=False))
    version = ".".join(str(lock["python"]["version"]).split(".")[:2])
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        version,
        "-d",
        str(into),
        "-r",
        str(requirements),
    ]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    requirements.unlink()
    if result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise ImageError(f"the lock's wheels could not be fetched to send with the job: {last}")


def assemble(folder: Path, parts_of: dict[str, Path], into: Path) -> None:
    """On the node: the environment folder as it was sent, in ``into`` (links to ``folder``'s files, the
    large ones joined from their parts, found in ``parts_of``: part name -> its folder), checked."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name != PARTS_FILE and not (into / entry.name).exists():
            (into / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    listing = folder / PARTS_FILE
    for rel, entry in (json.loads(listing.read_text()) if listing.is_file() else {}).items():
        target = into / rel
        if target.parent.is_symlink():  # a folder of the sent one, made real to hold the joined file
            source = target.parent.resolve()
            target.parent.unlink()
            target.parent.mkdir()
            for item in source.iterdir():
                (target.parent / item.name).symlink_to(item)
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with open(target, "wb") as out:
            for name in entry["parts"]:
                chunk = (parts_of[name] / "part").read_bytes()
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != entry["sha256"]:
            raise ImageError(f"{rel}: its parts arrived damaged (checksum)")
