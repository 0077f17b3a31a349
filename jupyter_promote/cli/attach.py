"""Jobs that run on without a terminal: ``attach`` follows one again, ``cancel`` stops one.

``run --detach`` submits a job and returns; the job's runner (or its batch system) carries on and writes its
events into the run directory, where ``attach`` reads them from the start and then follows them to the end,
with the progress, the alerts, the verdict and the exit code ``run`` would have given. Ctrl-C during
``attach`` stops following, never the job.
"""

from __future__ import annotations

import argparse
import asyncio
import time

from ..errors import EXIT_CANCELLED, EXIT_OK
from ..launch.launcher import Launcher
from ..launch.lifecycle import JobLifecycle
from ..launch.prepared import Prepared
from ..runtime.events import EventLog
from ..targets import target_class
from .context import CommandContext
from .detached import attach as attach_sweep
from .detached import cancel as cancel_sweep
from .detached_status import SWEEP_ID
from .inspect import find_run, reconcile
from .outcome import ProgressHooks, exit_code, show_end
from .progress import TerminalProgress
from .signals import say


def cmd_attach(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``jupyter promote attach ID``: follow a submitted job (or a detached sweep) to its end, as ``run`` (or
    ``sweep``) would have."""
    if SWEEP_ID.match(args.job):
        return attach_sweep(args.job, ctx.runs_dir)
    run = find_run(args.job, ctx.runs_dir)
    record = run.read()
    launcher = Launcher(ctx.settings, ctx.config)
    progress = TerminalProgress()
    try:  # from the line below on, Ctrl-C stops following, whenever it comes (even as the line is written)
        progress.note(f"attached to job {record.id} ({record.notebook} on {record.target}); Ctrl-C stops following")
        job = JobLifecycle(launcher.pipeline(), launcher.target(record.target), ProgressHooks(progress))
        job.prepared = Prepared.resume(run, record)
        view = asyncio.run(job.follow())
    except KeyboardInterrupt:
        progress.close()
        say(
            f"stopped following job {record.id}; it goes on (jupyter promote attach {record.id}, "
            f"jupyter promote cancel {record.id})"
        )
        return EXIT_CANCELLED
    finally:
        launcher.close()
    progress.close()
    record = run.read()
    parity_failed = show_end(record, view, job.task, progress.note)
    return exit_code(view, parity_failed)


def cmd_cancel(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``jupyter promote cancel ID``: stop a job on its target (or a detached sweep) and wait for it to end."""
    if SWEEP_ID.match(args.job):
        return cancel_sweep(args.job, ctx.runs_dir)
    run = find_run(args.job, ctx.runs_dir)
    record, view = reconcile(run, ctx)
    if view.state.final or record.state.final:
        say(f"job {record.id} already ended: {record.state.value}; nothing to cancel")
        return EXIT_OK
    if record.handle:
        asyncio.run(target_class(record.target)(config=ctx.config).cancel(record.handle))
    else:  # never submitted (its command stopped while preparing it): settled here
        log = EventLog(str(run.events), record.id)
        log.emit(
            "status", state="cancelled", reason="cancelled", message="cancelled before it was submitted", source="cli"
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        record, view = reconcile(run, ctx)
        if view.state.final:
            say(f"job {record.id} {view.state.value}" + (f" ({view.message})" if view.message else ""))
            return EXIT_OK
        time.sleep(0.5)
    say(
        f"job {record.id}: its target took the cancel but the job has not ended yet; see jupyter promote status {record.id}"
    )
    return EXIT_OK
