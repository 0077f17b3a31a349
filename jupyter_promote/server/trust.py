"""What a server may act on when its store is a database others write too (a hub's shared PostgreSQL without
per-user roles): a row names a run directory and a handle, but only the run directory says what the job is.

Before a server follows, adopts, cancels or removes a job, the run directory the row names and its ``job.json``
must belong to this process's uid, ``job.json`` must be that job's (same id), and a handle in the row must be
the one ``job.json`` holds. The monitor settings the follower uses are bounded again on load. A row that fails
is refused with one line (:class:`UntrustedRun`), and left alone.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

from ..errors import ForbiddenPath
from ..housekeeping import UNREADABLE
from ..models import JobRecord
from ..rundir import RunDir

#: The most of job.json read (a record with its metrics, artifacts and parameters fits many times over).
MAX_JOB_JSON_BYTES = 32 * 1024 * 1024


class UntrustedRun(ForbiddenPath):
    """A store row names a run directory this server must not act on (not its uid's, or another job's)."""


def _refuse(job_id: str, why: str) -> UntrustedRun:
    return UntrustedRun(f"job {job_id}: {why}; left alone", subject=job_id)


def _identity(handle: dict[str, Any]) -> dict[str, Any]:
    """What names the job on its target (a flag a cancel adds, such as Docker's ``cancelled``, aside)."""
    return {key: value for key, value in handle.items() if key != "cancelled"}


def own_run(job_id: str, run_dir: str | None, row_handle: dict[str, Any] | None = None) -> JobRecord | None:
    """The record in the run directory a store row names, once it is safe to act on; None when there is
    nothing there to act on (no run directory yet, or no job.json in it yet).

    Raises
    ------
    UntrustedRun
        The folder or job.json belongs to another uid, job.json is a link or not a file, is unreadable,
        or is another job's, or the row's handle is not job.json's.
    """
    if not run_dir:
        return None
    uid = os.geteuid()
    path = RunDir(run_dir).job_json
    try:
        folder = os.stat(path.parent)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise _refuse(job_id, f"its run directory {str(path.parent)[:200]!r} cannot be read ({exc})") from None
    if not stat.S_ISDIR(folder.st_mode) or folder.st_uid != uid:
        raise _refuse(job_id, f"its run directory {path.parent} is not a folder of this server's user (uid {uid})")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _refuse(job_id, f"{path} cannot be opened (a link, or {exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != uid:
            raise _refuse(job_id, f"{path} is not a file of this server's user (uid {uid})")
        text = f.read(MAX_JOB_JSON_BYTES + 1)
    try:
        if len(text) > MAX_JOB_JSON_BYTES:
            raise ValueError(f"over {MAX_JOB_JSON_BYTES} bytes")
        record = JobRecord.from_json(json.loads(text))
        record.monitor = record.monitor.bounded()
        handle = _identity(dict(record.handle))
    except UNREADABLE as exc:
        why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
        raise _refuse(job_id, f"{path} is not a job record ({why})") from None
    if record.id != job_id:
        raise _refuse(job_id, f"{path} is the record of job {str(record.id)[:40]!r}, not of this one")
    if row_handle and _identity(row_handle) != handle:
        raise _refuse(job_id, f"the store's handle is not the one {path} holds")
    return record
