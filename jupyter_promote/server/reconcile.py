"""At a server's start, every unfinished job of its user's, as the store says: one still running is followed
again from its events file (the runner lives in its own session and outlives the server); one its target lost
becomes ``failed``/``lost`` (the pipeline's own rule); one never submitted fails at once.

A row is acted on only once its run directory proves it is this user's job (:func:`.trust.own_run`); one that
does not, or whose reading fails in any way, is said in one log line and left alone: one row never stops a
server's start.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import PromoteError
from ..launch.lifecycle import JobLifecycle
from ..launch.prepared import Prepared
from ..models import JobRecord
from ..rundir import RunDir
from .hooks import StoringHooks
from .trust import UntrustedRun, own_run

if TYPE_CHECKING:
    from .manager import JobManager

log = logging.getLogger("jupyter_promote")


def reconcile(manager: JobManager) -> None:
    """Follow again, or settle, each unfinished job of the store's user (see the module's docstring)."""
    for record, run_dir in manager.store.unfinished():
        try:
            _reconcile_one(manager, record, run_dir)
        except UntrustedRun as exc:
            log.warning("jupyter-promote: %s", exc)
        except Exception as exc:  # one job's trouble never stops the server's start
            why = (str(exc).splitlines() or [""])[0][:300]
            log.warning("jupyter-promote: job %s: not followed again: %s: %s", record.id, type(exc).__name__, why)


def _reconcile_one(manager: JobManager, record: JobRecord, run_dir: str | None) -> None:
    store, lease = manager.store, manager.lease
    follower = store.follower(record.id)
    if lease is not None and follower is not None and lease.alive(follower):
        return  # another living server follows it (two jupyter labs on one store)
    current = own_run(record.id, run_dir, record.handle)  # this user's folder of this job, or refused
    if lease is not None and not store.adopt(record.id, lease.id, follower):
        return  # another server starting at this moment took it over first
    if current is None or not current.handle:
        # its run directory's own record when there is one: nothing else in the row reaches job.json
        manager.end_unsubmitted(current or record, "failed", "lost", "the server stopped before the job was submitted")
        return
    try:
        target = manager.target(current.target)
    except PromoteError as exc:
        manager.end_unsubmitted(current, "failed", "lost", str(exc))
        return
    assert run_dir is not None  # a handle is only ever written into a run directory's job.json
    run = RunDir(run_dir)
    job = JobLifecycle(manager.launcher.pipeline(), target, StoringHooks(manager, current, run_dir))
    job.prepared = Prepared.resume(run, current)
    manager.follow_again(job)
