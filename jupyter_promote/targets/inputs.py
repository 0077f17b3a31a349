"""The notebook's folder as a job carries it to a cluster that does not share the submitter's filesystem.

Ray sends it as a folder in the job's ``working_dir``; Kubernetes as a ``tar.gz`` in the job's ConfigMap.
Both leave out what the job never reads (tool folders, hidden folders, run directories) and follow links,
as the job's working directory on a shared filesystem does (:mod:`jupyter_promote.execute.workdir`).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

from ..execute.workdir import SKIPPED


def input_files(source: Path, skip: set[str]) -> Iterator[tuple[Path, Path, int]]:
    """``(path, relative path, size)`` of each file the job gets from ``source``, in a stable order."""
    for folder, dirs, files in os.walk(source, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not d.startswith(".")
                         and os.path.realpath(os.path.join(folder, d)) not in skip
                         and not os.path.exists(os.path.join(folder, d, "job.json")))  # fmt: skip
        rel = Path(folder).relative_to(source)
        for name in sorted(files):
            path = Path(folder, name)
            try:
                size = path.stat().st_size
            except OSError:
                continue
            yield path, rel / name, size


def copy_inputs(source: Path, into: Path, skip: set[str], limit: int) -> int:
    """Copy the notebook's folder into ``into``; returns the bytes copied, stopping past ``limit``."""
    into.mkdir(parents=True, exist_ok=True)
    total = 0
    for path, rel, size in input_files(source, skip):
        total += size
        if total > limit:
            return total
        (into / rel).parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copyfile(path, into / rel)
    return total


def pack_inputs(source: Path, skip: set[str], limit: int) -> tuple[bytes, int]:
    """The notebook's folder as a ``tar.gz``; returns it and the bytes of the files, stopping past ``limit``
    (the archive is then incomplete: the caller refuses the job)."""
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6, dereference=True) as archive:
        for path, rel, size in input_files(source, skip):
            total += size
            if total > limit:
                break
            with contextlib.suppress(OSError):
                info = archive.gettarinfo(str(path), arcname=str(rel))
                info.mode, info.uid, info.gid, info.uname, info.gname = 0o644, 0, 0, "", ""
                with open(path, "rb") as handle:
                    archive.addfile(info, handle)
    return buffer.getvalue(), total
