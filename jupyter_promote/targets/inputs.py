"""The notebook's folder as a job carries it to a cluster that does not share the submitter's filesystem.

Ray sends it as a folder in the job's ``working_dir``; Kubernetes as a ``tar.gz`` in the job's ConfigMap.
Both leave out what the job never reads (tool folders, run directories) and what must not leave the
submitter's machine unasked: hidden files and folders (``.netrc``, ``.pgpass``, ``.git-credentials``,
``.env``, ``.ssh/``) travel only when named in the target's ``carry_hidden`` setting. Links are followed
inside the folder; a link that leaves it (a dataset elsewhere, ``/dev/zero``) is refused, naming it, since
what it points at is not the project's to send. Only regular files travel (no FIFOs, no devices).
The cluster side unpacks with :func:`jupyter_promote.execute.unpack.unpack_inputs`, bounded.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tarfile
from collections.abc import Collection
from pathlib import Path, PurePosixPath

from traitlets import List, Unicode

from ..errors import TargetError
from ..execute.workdir import SKIPPED

#: Links out of the folder named in the refusal, at most.
_NAMED_LINKS = 5


def carry_hidden_setting() -> List[str]:
    """The ``carry_hidden`` setting of a target that ships the notebook's folder (one help text for all)."""
    return List(
        Unicode(),
        help="Hidden files or folders of the notebook's folder sent with a job, as paths relative to it "
        "('.env', '.streamlit/config.toml'); every other hidden file stays on your machine "
        "(credentials: .netrc, .pgpass, .git-credentials, .env, .ssh/).",
    ).tag(config=True)


def _is_hidden(rel: PurePosixPath) -> bool:
    return any(part.startswith(".") for part in rel.parts)


def _named(rel: PurePosixPath, carry_hidden: Collection[str], folder: bool) -> bool:
    """Whether a hidden ``rel`` is named, is inside a named folder, or (a folder) holds a named path."""
    text = rel.as_posix()
    for named in carry_hidden:
        name = PurePosixPath(named).as_posix()
        if text == name or text.startswith(name + "/") or (folder and name.startswith(text + "/")):
            return True
    return False


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def input_files(
    source: Path, skip: set[str], carry_hidden: Collection[str] = ()
) -> list[tuple[Path, PurePosixPath, int]]:
    """``(path, relative path, size)`` of each file the job gets from ``source``, in a stable order.

    Raises
    ------
    TargetError
        When a link in the folder leaves it (named in the message).
    """
    root = os.path.realpath(source)
    found: list[tuple[Path, PurePosixPath, int]] = []
    leaving: list[str] = []
    visited = {root}
    for folder, dirs, files in os.walk(source, followlinks=True):
        rel_folder = PurePosixPath(Path(folder).relative_to(source).as_posix())
        kept = []
        for name in sorted(dirs):
            sub, rel = os.path.join(folder, name), rel_folder / name
            real = os.path.realpath(sub)
            if name in SKIPPED or real in skip or os.path.exists(os.path.join(sub, "job.json")):
                continue
            if _is_hidden(rel) and not _named(rel, carry_hidden, folder=True):
                continue
            if not _inside(real, root):
                leaving.append(f"{rel} -> {real}")
            elif real not in visited:  # a link back into the folder is walked once
                visited.add(real)
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            path, rel = Path(folder, name), rel_folder / name
            if _is_hidden(rel) and not _named(rel, carry_hidden, folder=False):
                continue
            real = os.path.realpath(path)
            if not _inside(real, root):
                leaving.append(f"{rel} -> {real}")
                continue
            try:
                st = os.stat(real)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found.append((path, rel, st.st_size))
    if leaving:
        more = f" and {len(leaving) - _NAMED_LINKS} more" if len(leaving) > _NAMED_LINKS else ""
        raise TargetError(
            f"{source}: links that leave the notebook's folder cannot travel with the job: "
            f"{', '.join(leaving[:_NAMED_LINKS])}{more}; copy what the job reads into the folder, "
            "or put it where the cluster reads it",
            subject=str(source),
        )
    return found


def _copy_bounded(path: Path, into: Path, size: int) -> None:
    """At most ``size`` bytes of ``path``: a file growing meanwhile sends what was counted."""
    with open(path, "rb") as source, open(into, "wb") as out:
        remaining = size
        while remaining > 0:
            chunk = source.read(min(remaining, 1 << 20))
            if not chunk:
                break
            out.write(chunk)
            remaining -= len(chunk)


def copy_inputs(source: Path, into: Path, skip: set[str], limit: int, carry_hidden: Collection[str] = ()) -> int:
    """Copy the notebook's folder into ``into``; returns the bytes copied, stopping past ``limit``."""
    files = input_files(source, skip, carry_hidden)
    into.mkdir(parents=True, exist_ok=True)
    total = 0
    for path, rel, size in files:
        total += size
        if total > limit:
            return total
        target = into.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            _copy_bounded(path, target, size)
    return total


def pack_inputs(source: Path, skip: set[str], limit: int, carry_hidden: Collection[str] = ()) -> tuple[bytes, int]:
    """The notebook's folder as a ``tar.gz``; returns it and the bytes of the files, stopping past ``limit``
    (the archive is then incomplete: the caller refuses the job)."""
    files = input_files(source, skip, carry_hidden)
    buffer = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as archive:
        for path, rel, size in files:
            total += size
            if total > limit:
                break
            info = tarfile.TarInfo(rel.as_posix())
            info.size, info.mode = size, 0o644
            try:
                with open(path, "rb") as handle:
                    archive.addfile(info, handle)
            except OSError:
                continue
    return buffer.getvalue(), total
