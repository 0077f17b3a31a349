"""``jupyter promote run`` and ``sweep``: the command line's adapter over the one launcher and lifecycle.

What is the CLI's own: the pre-flight check and the smoke run before anything is submitted, progress on
the terminal, Ctrl-C (and SIGTERM/SIGHUP) as a cancel, and the last lines: how the job ended and, when a
cell failed, which one and why.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..errors import EXIT_CANCELLED, EXIT_JOB_FAILED, EXIT_OK, EXIT_PARITY_FAILED, UsageError
from ..events import JobView
from ..launch.group import GroupRun
from ..launch.launcher import Launcher
from ..launch.lifecycle import JobHooks, JobLifecycle
from ..launch.prepared import Prepared
from ..launch.request import GroupRequest, PromoteRequest
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..targets import Target
from .inspect import print_sweep
from .parser import request_from_args
from .progress import TerminalProgress
from .signals import STOP_SIGNALS, interrupt, say

_EXIT_BY_STATE = {JobState.SUCCEEDED: EXIT_OK, JobState.FAILED: EXIT_JOB_FAILED, JobState.CANCELLED: EXIT_CANCELLED}


class ProgressHooks(JobHooks):
    """The terminal's view of a job: each event as it comes."""

    def __init__(self, progress: TerminalProgress, starting: str | None = None) -> None:
        self.progress = progress
        self.starting = starting  # said once the notebook and the request are found valid

    def run_dir_made(self, run: RunDir) -> None:
        # what is refused before this (a notebook that is not valid, ...) is said in one line alone
        if self.starting is not None:
            self.progress.note(self.starting)
            self.progress.stage("pending", "freezing the kernel's environment ...")

    def event(self, event: dict[str, Any], view: JobView) -> None:
        self.progress.on_event(event, view)


def cmd_run(args: argparse.Namespace, app: Any) -> int:
    """``run`` (one job; with --replicas/--seeds or --contention, a group) and ``sweep``."""
    request, group = request_from_args(args, app.settings)
    if group is not None and group.kind == "grid":  # refused before a smoke run, a freeze or a detach, not after
        from ..job.notebook import read_notebook
        from ..job.overrides import refuse_identical_tasks

        refuse_identical_tasks(read_notebook(request.notebook), request.notebook, request.parameters, group.sets)
    if args.command == "sweep" and args.detach:
        from .detached import start

        return start(app.argv, app.settings.runs_dir)
    launcher = Launcher(app.settings, app.config)
    try:
        return _run(args, app, launcher, request, group)
    finally:
        launcher.close()  # the notifications and exports still queued go out before the command returns


def _run(args: argparse.Namespace, app: Any, launcher: Launcher, request: Any, group: Any) -> int:
    target, warnings = launcher.open(request)
    _preflight(args, app)
    if args.smoke and _smoke_run(args, app) != EXIT_OK:
        return EXIT_JOB_FAILED
    for warning in warnings:
        say(f"warning: {warning}")
    if group is not None:
        return _run_group(args, app, launcher, target, request, group)
    progress = TerminalProgress()
    hooks = ProgressHooks(progress, f"promoting {args.notebook} to {target.display_name}")
    job = JobLifecycle(launcher.pipeline(on_line=lambda line: progress.note(f"  {line}")), target, hooks)
    prepared = job.prepare(request)
    _show_prepared(args, job, prepared, target, progress)
    if args.detach:
        asyncio.run(job.pipeline.submit(prepared, target))
        progress.close()
        job_id = prepared.record.id
        say(f"job {job_id} submitted to {target.display_name}; it runs on without this terminal")
        say(f"  follow it:  jupyter promote attach {job_id}")
        say(f"  its state:  jupyter promote status {job_id}")
        say(f"  stop it:    jupyter promote cancel {job_id}")
        if args.json:
            print(json.dumps(prepared.run.read().to_json(), indent=2, sort_keys=True))
        return EXIT_OK
    view = asyncio.run(_until_stopped(job.start(), job.cancel, progress.note))
    if view is None:  # the target did not confirm the cancel within a minute: settled here
        prepared.log.emit("status", state="cancelled", reason="cancelled", message="cancelled (Ctrl-C)", source="cli")
        view = asyncio.run(job.follow())
    progress.close()
    record = prepared.run.read()
    parity_failed = show_end(record, view, prepared, progress.note)
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True))
    return exit_code(view, parity_failed)


def exit_code(view: JobView, parity_failed: bool) -> int:
    """The documented exit code of a job that ended so."""
    return EXIT_PARITY_FAILED if parity_failed and view.state is JobState.SUCCEEDED else _EXIT_BY_STATE[view.state]


def _show_prepared(args: argparse.Namespace, job: JobLifecycle, prepared: Prepared, target: Target,
                   progress: TerminalProgress) -> None:  # fmt: skip
    for note in job.pipeline.notes:
        progress.note(f"  note: {note}")
    if prepared.env is not None:
        progress.note(f"  environment: {prepared.env.summary()}")
    if prepared.record.image:
        built = " (built)" if prepared.record.image["built"] else ""
        progress.note(f"  image: {prepared.record.image['ref']}{built}")
    if not prepared.has_parameters_cell:
        progress.note(
            f"  note: {args.notebook} has no cell tagged 'parameters'; parameters go at the top (papermill's rule)"
        )
    _warn_unknown_parameters(args.notebook, prepared.record.parameters, progress)
    for override in prepared.overrides:
        progress.note(f"  warning: {override.message()}")
    progress.note(f"  run directory: {prepared.run.path}")


def show_end(record: JobRecord, view: JobView, prepared: Prepared, say: Callable[[str], None]) -> bool:
    """How the job ended, its output, artifacts and parity; a failed cell last. Whether parity failed."""
    say(f"  output: {prepared.run.output_notebook}")
    if record.artifacts:
        size = sum(a["size"] for a in record.artifacts)
        say(f"  artifacts: {len(record.artifacts)} file(s), {size} bytes, in {prepared.run.work_dir}")
    parity_failed = _show_parity(prepared.run.path, record, say)
    if view.state is JobState.SUCCEEDED:
        summary = f"succeeded in {_duration(record)}" + (f" with {len(view.alerts)} alert(s)" if view.alerts else "")
    else:
        summary = f"{view.state.value} ({view.reason}): {view.message}"
    say(f"job {record.id} {summary}")
    return parity_failed


async def _until_stopped(
    work: Awaitable[Any], cancel: Callable[[], Awaitable[None]], say: Callable[[str], None]
) -> Any:
    """Run ``work``; Ctrl-C, SIGTERM or SIGHUP cancel it (what was started is stopped and settled)."""
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, interrupted.set)
    try:
        running = asyncio.ensure_future(work)
        stop = asyncio.create_task(interrupted.wait())
        done, _ = await asyncio.wait({running, stop}, return_when=asyncio.FIRST_COMPLETED)
        if running in done:
            stop.cancel()
            return running.result()
        say("cancelling (Ctrl-C): stopping what was submitted and saving partial output ...")
        await cancel()
        try:
            return await asyncio.wait_for(running, timeout=60)
        except asyncio.TimeoutError:
            return None
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)  # which resets it to the default: ours again, for what follows
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, interrupt)


def _run_group(args: argparse.Namespace, app: Any, launcher: Launcher, target: Target, request: PromoteRequest,
               group: GroupRequest) -> int:  # fmt: skip
    """A sweep, replicas (a sweep of identical sets) or contention, to the end; its summary on stderr."""
    from ..analysis.spread import summarise
    from ..job.sweep import label

    if group.kind == "grid" and group.max_parallel is None:
        group.max_parallel = target.default_max_parallel()
    progress = TerminalProgress()
    hooks = (lambda job_id: ProgressHooks(progress)) if group.kind == "contention" else (lambda job_id: JobHooks())
    from . import detached

    run = GroupRun(launcher.pipeline(on_line=lambda line: say(f"  {line}")), target, request, group, hooks,
                   group_id=detached.GROUP_ID)  # fmt: skip
    if group.kind == "contention":
        from ..analysis.contention import Stress

        say(f"contention: the job alone first, then beside {Stress.parse(group.contention or '').describe()}")
    path = run.prepare()
    if group.kind != "contention":
        say(f"sweep {run.id}: {len(group.sets)} tasks of {args.notebook} on {target.display_name} -> {path}")
    for override in run.sweep.tasks[0].overrides if run.sweep else ():
        say(f"  warning: {override.message()}")
    done = [0]

    def on_done(task: Prepared, view: JobView) -> None:
        done[0] += 1
        failed = f" ({view.reason})" if view.reason and view.state is not JobState.SUCCEEDED else ""
        index = (task.record.sweep or {}).get("index")
        say(f"  [{done[0]}/{len(group.sets)}] task {index} ({label(task.record.parameters)}): "
            f"{view.state.value}{failed}")  # fmt: skip

    views = asyncio.run(_until_stopped(run.run(on_done), run.cancel, say)) or []
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


def _preflight(args: argparse.Namespace, app: Any) -> None:
    """The pre-flight check before anything is submitted: warnings on stderr; with --strict, a refusal."""
    from ..preflight import format_findings
    from .inspect import notebook_findings

    gpus = int(args.gpus) if getattr(args, "gpus", None) and str(args.gpus).isdigit() else None
    findings = notebook_findings(args.notebook, gpus, app, getattr(args, "target", None))
    for line in format_findings(findings):
        say(line)
    if findings and args.strict:
        raise UsageError(
            f"{args.notebook}: the pre-flight check reported {len(findings)} finding(s) and --strict refuses to submit",
            subject=args.notebook,
        )


def _smoke_run(args: argparse.Namespace, app: Any) -> int:
    """``--smoke``: the notebook top to bottom on this machine with its smoke parameters, before the real job."""
    from ..job.notebook import read_notebook
    from ..job.parameters import smoke_parameters

    smoke = smoke_parameters(read_notebook(os.path.abspath(args.notebook)))
    if not smoke:  # without one, the smoke run would be the whole training, once here and once as the job
        raise UsageError(
            f"--smoke: {args.notebook} has no cell tagged 'smoke' that makes a quick run (a raw cell such as "
            "'epochs = 1'); tag one, or leave --smoke out",
            subject=args.notebook,
        )
    say(f"smoke run: {args.notebook} on this machine with {smoke}")
    quick_settings = {"command": "run", "target": "local", "out": None, "smoke": False, "strict": False, "json": False}
    no_group = {"replicas": None, "seeds": None, "contention": None, "cpus": None, "memory": None, "gpus": None}
    quick = argparse.Namespace(**{**vars(args), **quick_settings, **no_group})
    given = args.command == "run"  # a run's own parameters stay, the smoke cell's go over them; a sweep's do not
    quick.parameters = [p for p in args.parameters if p[0] not in smoke] if given else []
    quick.parameters_raw = [p for p in args.parameters_raw if p[0] not in smoke] if given else []
    quick.parameters_file = args.parameters_file if given else []
    quick.parameters_yaml = (args.parameters_yaml if given else []) + ([json.dumps(smoke)] if smoke else [])
    code = cmd_run(quick, app)
    if code not in (EXIT_OK, EXIT_PARITY_FAILED):  # a quick run's metrics need not match the baseline
        say(f"smoke run failed: nothing was submitted to {args.target or app.settings.default_target}")
        return code
    say("smoke run succeeded: submitting the job")
    return EXIT_OK


def _show_parity(run_dir: Path, record: JobRecord, say: Callable[[str], None]) -> bool:
    """Print the parity report of a run that has a baseline; whether parity failed."""
    from ..analysis.parity import REPORT_FILE

    if not record.parity or record.parity["verdict"] == "no baseline":
        return False
    report = run_dir / REPORT_FILE
    for line in report.read_text().splitlines() if report.exists() else [f"parity: {record.parity['verdict']}"]:
        say(line)
    return bool(record.parity["verdict"] != "pass")


def _duration(record: JobRecord) -> str:
    if record.started_at and record.finished_at:
        return f"{record.finished_at - record.started_at:.1f} s"
    return "?"


def _warn_unknown_parameters(notebook: str, params: dict[str, Any], progress: TerminalProgress) -> None:
    if not params:
        return
    from papermill import inspect_notebook

    try:
        known = inspect_notebook(notebook)
    except Exception:
        return
    for name in params:
        if known and name not in known:
            progress.note(
                f"  warning: parameter {name!r} is not in the notebook's parameters cell ({', '.join(known)})"
            )
