"""A group of jobs on the terminal: a sweep, replicas and seeds, or contention, run to its end.

Each task's end is one line as it comes; the group's summary (each metric's spread, replicas' first
divergence, contention side by side) and the exit code come when the last task ended. In a detached sweep's
own process the group takes the id its starter announced and says where it is once its tasks are prepared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable

from ..errors import EXIT_CANCELLED, EXIT_JOB_FAILED, EXIT_OK, EXIT_PARITY_FAILED
from ..events import JobView
from ..launch.group import GroupRun
from ..launch.launcher import Launcher
from ..launch.lifecycle import JobHooks
from ..launch.prepared import Prepared
from ..launch.request import GroupRequest, PromoteRequest
from ..models import JobState
from ..targets import Target
from .context import CommandContext
from .inspect import print_sweep
from .outcome import ProgressHooks, until_stopped
from .progress import TerminalProgress
from .signals import say


def run_group(
    args: argparse.Namespace,
    ctx: CommandContext,
    launcher: Launcher,
    target: Target,
    request: PromoteRequest,
    group: GroupRequest,
) -> int:
    """A sweep, replicas (a sweep of identical sets) or contention, to the end; its summary on stderr."""
    from ..analysis.spread import summarise

    if group.kind == "grid" and group.max_parallel is None:
        group.max_parallel = target.default_max_parallel()
    progress = TerminalProgress()
    hooks = (lambda job_id: ProgressHooks(progress)) if group.kind == "contention" else (lambda job_id: JobHooks())
    group_id = ctx.detached.group_id if ctx.detached is not None else None
    pipeline = launcher.pipeline(on_line=lambda line: say(f"  {line}"))
    run = GroupRun(pipeline, target, request, group, hooks, group_id=group_id)
    if group.kind == "contention":
        from ..analysis.contention import Stress

        say(f"contention: the job alone first, then beside {Stress.parse(group.contention or '').describe()}")
    path = run.prepare()
    if group.kind != "contention":
        say(f"sweep {run.id}: {len(group.sets)} tasks of {args.notebook} on {target.display_name} -> {path}")
    if ctx.detached is not None:
        ctx.detached.running(path)
    for override in run.sweep.tasks[0].overrides if run.sweep else ():
        say(f"  warning: {override.message()}")
    views = asyncio.run(until_stopped(run.run(_task_ended(len(group.sets))), run.cancel, say)) or []
    progress.close()
    summary = summarise(path)
    if group.kind != "contention":
        print_sweep(summary, say)
    for line in run.report_lines:
        say(line)
    if args.json:
        print(json.dumps(run.contention if group.kind == "contention" else summary, indent=2, sort_keys=True))
    if len(views) < len(run.ids) or any(v.state is JobState.CANCELLED for v in views):
        return EXIT_CANCELLED
    if not all(v.state is JobState.SUCCEEDED for v in views):
        return EXIT_JOB_FAILED
    return EXIT_PARITY_FAILED if run.parity_failed else EXIT_OK


def _task_ended(size: int) -> Callable[[Prepared, JobView], None]:
    """One line per task as it ends: ``[done/size] task INDEX (PARAMETERS): STATE (REASON)``."""
    from ..job.sweep import label

    done = [0]

    def on_done(task: Prepared, view: JobView) -> None:
        done[0] += 1
        failed = f" ({view.reason})" if view.reason and view.state is not JobState.SUCCEEDED else ""
        index = (task.record.sweep or {}).get("index")
        say(f"  [{done[0]}/{size}] task {index} ({label(task.record.parameters)}): {view.state.value}{failed}")

    return on_done
