"""Which filesystem the store's file is on: SQLite's WAL mode is unsafe on a network filesystem (its shared
memory is not shared across hosts), so the server uses the rollback journal there."""

from __future__ import annotations

import os
from collections.abc import Iterable

#: Filesystem types where SQLite's WAL mode is unsafe (its shared memory is not shared across hosts).
NETWORK_FILESYSTEMS = frozenset(
    [
        "nfs",
        "nfs4",
        "cifs",
        "smb3",
        "smbfs",
        "ncpfs",
        "afs",
        "9p",
        "lustre",
        "gpfs",
        "ceph",
        "glusterfs",
        "beegfs",
        "fuse.sshfs",
        "fuse.glusterfs",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.cephfs",
        "fuse.juicefs",
    ]
)


def filesystem_of(path: str, mountinfo: str | None = None) -> str:
    """The type of the filesystem ``path`` is (or would be) on: of this machine's mounts (through psutil, on
    Linux and macOS alike), or of the mounts a ``/proc/PID/mountinfo`` text lists; "" if unknown."""
    mounts = _mounts() if mountinfo is None else _mountinfo_mounts(mountinfo)
    path = os.path.realpath(path)
    best, kind = "", ""
    for point, fstype in mounts:
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fstype
    return kind


def _mounts() -> list[tuple[str, str]]:
    """(mount point, filesystem type) of every mount of this machine; none when they cannot be read."""
    import psutil

    try:
        return [(part.mountpoint, part.fstype) for part in psutil.disk_partitions(all=True)]
    except (OSError, psutil.Error):
        return []


def _mountinfo_mounts(mountinfo: str) -> Iterable[tuple[str, str]]:
    """(mount point, filesystem type) of each line of a ``mountinfo`` text (see proc(5))."""
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        point = fields[4].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        yield point, line.split(" - ", 1)[1].split()[0]
