"""Unpacking the notebook's folder that came with a job (Kubernetes: ``inputs.tar.gz``), bounded.

The archive is the submitter's (:func:`jupyter_promote.targets.inputs.pack_inputs`), but whatever reads it
in the pod treats it as untrusted: only regular files and folders, never a path out of the folder, and at
most :data:`MAX_UNPACKED_BYTES` and :data:`MAX_MEMBERS`, so a compressed bomb (995 KiB that expands to
1000 MiB) fills no disk. Plain Python 3.8+ (``extractall(filter=...)`` is newer than some images' Python).
"""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

#: The submitter refuses a folder whose files come to more than this many times its compressed limit.
MAX_EXPANSION = 20
#: A ConfigMap holds 1 MiB: the most a job's folder may come to, unpacked.
MAX_UNPACKED_BYTES = MAX_EXPANSION << 20
#: The most files and folders unpacked (a million empty files exhaust a scratch volume's inodes).
MAX_MEMBERS = 100_000


class InputsTooLarge(tarfile.TarError):
    """An archive that unpacks past the bounds."""


def unpack_inputs(
    archive_path: Path, into: Path, max_bytes: int = MAX_UNPACKED_BYTES, max_members: int = MAX_MEMBERS
) -> int:
    """The notebook's folder into ``into``; returns the bytes written.

    Raises
    ------
    InputsTooLarge
        Past ``max_bytes`` or ``max_members`` (what was unpacked so far stays; the job fails).
    """
    into.mkdir(exist_ok=True)
    written = members = 0
    with tarfile.open(archive_path) as archive:
        for member in archive:  # streamed: a bomb's members are counted as they come
            members += 1
            if members > max_members:
                raise InputsTooLarge(f"{archive_path.name} holds more than {max_members} files")
            parts = Path(member.name).parts
            if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
                continue
            target = into.joinpath(*parts)
            if member.isdir():
                target.mkdir(parents=True, exist_ok=True)
                continue
            if written + member.size > max_bytes:
                raise InputsTooLarge(f"{archive_path.name} unpacks to more than {max_bytes >> 20} MiB")
            target.parent.mkdir(parents=True, exist_ok=True)
            source = archive.extractfile(member)
            if source is not None:
                with source, open(target, "wb") as out:
                    shutil.copyfileobj(source, out)
            written += member.size
    return written
