"""The frozen environment sent with a job to a cluster that shares no filesystem with the submitter (Ray),
as content-addressed folders the engine uploads once per cluster, each small enough for one upload.

The environment (lock, requirements, the wheels freeze built or found, and unless told otherwise the lock's
other wheels, fetched with the submitter's own index and caches: clusters often reach none) is staged once
per lock in the user's cache. Its files travel in shards and parts (:mod:`.shards`: each folder at most
``cap`` bytes zipped, named by its content, so adding a package re-sends one shard, not the environment);
the environment's own folder (``promote_env_HASH``) holds only the manifest that names them all, with each
file's size and sha256. On the node, :func:`assemble` puts the environment back together and checks it.
The notebook's folder travels the same way (:func:`pack_folder`), so no upload outgrows the engine's limit
whatever the environment or the inputs hold.
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import ImageError
from ..freeze import LOCK_FILE
from .recipe import pinned_requirements
from .shards import CAP_BYTES, Entry, ShardError, entries, gather, pack
from .venv import wheel_file

#: The file in ``promote_env_HASH`` (and beside a job's notebook) that names every file sent and where.
MANIFEST = "manifest.json"
#: Beside a job's notebook on the node: the manifest of the notebook's folder, sent in shards (``inputs/``).
INPUTS_MANIFEST = "inputs.manifest.json"
_FILES = ".files.json"  # in a staged environment: its files' sizes and hashes, taken once
_COMPLETE = ".complete"


def _cache() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "jupyter-promote" / "shipped"


def environment_folders(env_dir: Path, with_wheels: bool = True, cap: int = CAP_BYTES) -> list[Path]:
    """The folders to send for the frozen environment in ``env_dir``: the environment's own (its manifest)
    first, then its shards and parts, each at most ``cap`` bytes zipped. Staged once per lock (and kept in
    the user's cache); the same lock gives the same folders."""
    lock = json.loads((env_dir / LOCK_FILE).read_text())
    key = lock["content_hash"].split(":")[-1][:16]
    tree = _cache() / f"staged_{key}{'' if with_wheels else '_pins'}"
    if not (tree / _COMPLETE).is_file():
        _make(lock, env_dir, tree, with_wheels)
    listed = json.loads((tree / _FILES).read_text())
    files = [Entry(rel, size, sha, tree / rel) for rel, (size, sha) in listed.items()]
    try:
        manifest, folders = pack(files, _cache(), cap)
    except ShardError as exc:
        raise ImageError(f"the environment cannot be sent in parts: {exc}") from None
    return [_manifest_folder({"lock": lock["content_hash"], "files": manifest}, "promote_env"), *folders]


def pack_folder(folder: Path, out: Path, manifest: Path, cap: int = CAP_BYTES) -> list[Path]:
    """``folder``'s files as shards and parts in ``out``, named in ``manifest`` (written): returns the
    folders. Their files are links to ``folder``'s where the disk allows."""
    try:
        files, folders = pack(entries(folder), out, cap)
    except ShardError as exc:
        raise ImageError(f"{folder}: cannot be sent in parts: {exc}") from None
    manifest.write_text(json.dumps({"files": files}, indent=1, sort_keys=True) + "\n")
    return folders


def _manifest_folder(manifest: dict[str, Any], prefix: str) -> Path:
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    folder = _cache() / f"{prefix}_{hashlib.sha256(text.encode()).hexdigest()[:20]}"
    if not folder.is_dir():
        staging = Path(tempfile.mkdtemp(prefix=".env-", dir=folder.parent))
        (staging / MANIFEST).write_text(text)
        try:
            os.replace(staging, folder)
        except OSError:  # made meanwhile by another job: the same
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def _make(lock: dict[str, Any], env_dir: Path, tree: Path, with_wheels: bool) -> None:
    tree.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".env-", dir=tree.parent))
    try:
        shutil.copytree(env_dir, staging, dirs_exist_ok=True, symlinks=False)
        for pkg in lock["packages"]:  # wheels found in this machine's find-links folders go along
            source = pkg["source"]
            if source.get("found_in") and not (staging / source["wheel"]).is_file():
                (staging / source["wheel"]).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(wheel_file(env_dir, source), staging / source["wheel"])
        if with_wheels:
            _download_wheels(lock, staging / "wheelhouse")
        listed = {e.rel: [e.size, e.sha256] for e in entries(staging, lambda rel: rel in (_FILES, _COMPLETE))}
        (staging / _FILES).write_text(json.dumps(listed, indent=1) + "\n")
        (staging / _COMPLETE).write_text("ok\n")
        shutil.rmtree(tree, ignore_errors=True)  # one left half made
        with contextlib.suppress(OSError):  # another job made it meanwhile: theirs is the same
            os.replace(staging, tree)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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


def assemble(manifest: Path, locate: Callable[[str], Path | None], into: Path, link: bool = True) -> None:
    """On the node: the files ``manifest`` names, in ``into``, from the folders that came with the job
    (``locate``: a folder's name -> where it is, None when it did not come), each checked by size and sha256.
    ``link``: links to the sent files (an environment's wheels); else copies (a notebook's inputs).

    Raises
    ------
    ImageError
        A folder or file that did not arrive, or arrived damaged: named.
    """
    try:
        gather(json.loads(manifest.read_text())["files"], locate, into, link)
    except ShardError as exc:
        raise ImageError(f"what was sent with the job arrived incomplete: {exc}") from None
