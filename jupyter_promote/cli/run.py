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
from typing import Any

from ..errors import EXIT_JOB_FAILED, EXIT_OK, EXIT_PARITY_FAILED, UsageError
from ..launch.launcher import Launcher
from ..launch.lifecycle import JobLifecycle
from ..launch.prepared import Prepared
from ..launch.request import GroupRequest, PromoteRequest
from ..targets import Target
from .context import CommandContext
from .group import run_group
from .outcome import ProgressHooks, exit_code, show_end, until_stopped
from .progress import TerminalProgress
from .request import request_from_args
from .signals import say


def cmd_run(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``run`` (one job; with --replicas/--seeds or --contention, a group) and ``sweep``."""
    request, group = request_from_args(args, ctx.settings)
    if group is not None and group.kind == "grid":  # refused before a smoke run, a freeze or a detach, not after
        from ..job.notebook import read_notebook
        from ..job.overrides import refuse_identical_tasks

        refuse_identical_tasks(read_notebook(request.notebook), request.notebook, request.parameters, group.sets)
    if args.command == "sweep" and args.detach and ctx.detached is None:  # (in its own process: run it)
        from .detached import start

        return start(ctx.argv, ctx.runs_dir)
    launcher = Launcher(ctx.settings, ctx.config)
    try:
        return _run(args, ctx, launcher, request, group)
    finally:
        launcher.close()  # the notifications and exports still queued go out before the command returns


def _run(
    args: argparse.Namespace,
    ctx: CommandContext,
    launcher: Launcher,
    request: PromoteRequest,
    group: GroupRequest | None,
) -> int:
    target, warnings = launcher.open(request)
    _preflight(args, ctx)
    if args.smoke and _smoke_run(args, ctx) != EXIT_OK:
        return EXIT_JOB_FAILED
    for warning in warnings:
        say(f"warning: {warning}")
    if group is not None:
        return run_group(args, ctx, launcher, target, request, group)
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
    view = asyncio.run(until_stopped(job.start(), job.cancel, progress.note))
    if view is None:  # the target did not confirm the cancel within a minute: settled here
        prepared.log.emit("status", state="cancelled", reason="cancelled", message="cancelled (Ctrl-C)", source="cli")
        view = asyncio.run(job.follow())
    progress.close()
    record = prepared.run.read()
    parity_failed = show_end(record, view, prepared, progress.note)
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True))
    return exit_code(view, parity_failed)


def _show_prepared(
    args: argparse.Namespace, job: JobLifecycle, prepared: Prepared, target: Target, progress: TerminalProgress
) -> None:
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


def _preflight(args: argparse.Namespace, ctx: CommandContext) -> None:
    """The pre-flight check before anything is submitted: warnings on stderr; with --strict, a refusal."""
    from ..preflight import format_findings
    from .inspect import notebook_findings

    gpus = int(args.gpus) if getattr(args, "gpus", None) and str(args.gpus).isdigit() else None
    findings = notebook_findings(args.notebook, gpus, ctx, getattr(args, "target", None), args.secret)
    for line in format_findings(findings):
        say(line)
    if findings and args.strict:
        raise UsageError(
            f"{args.notebook}: the pre-flight check reported {len(findings)} finding(s) and --strict refuses to submit",
            subject=args.notebook,
        )


def local_source(option: str) -> bool:
    """Whether a ``--secret`` option's source reaches a job on this machine (env:, file:)."""
    from ..secrets import parse_option

    return parse_option(option)[1].startswith(("env:", "file:"))


def _smoke_run(args: argparse.Namespace, ctx: CommandContext) -> int:
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
    quick_settings = {
        "command": "run",
        "target": "local",
        "out": None,
        "smoke": False,
        "strict": False,
        "json": False,
        "detach": False,
        "retries": None,
        # the secrets the smoke run (local) can get: a Kubernetes Secret or a node's file stays the job's
        "secret": [text for text in args.secret or [] if local_source(text)],
    }
    no_group = {"replicas": None, "seeds": None, "contention": None, "cpus": None, "memory": None, "gpus": None}
    quick = argparse.Namespace(**{**vars(args), **quick_settings, **no_group})
    given = args.command == "run"  # a run's own parameters stay, the smoke cell's go over them; a sweep's do not
    quick.parameters = [p for p in args.parameters if p[0] not in smoke] if given else []
    quick.parameters_raw = [p for p in args.parameters_raw if p[0] not in smoke] if given else []
    quick.parameters_file = args.parameters_file if given else []
    quick.parameters_yaml = (args.parameters_yaml if given else []) + ([json.dumps(smoke)] if smoke else [])
    code = cmd_run(quick, ctx)
    if code not in (EXIT_OK, EXIT_PARITY_FAILED):  # a quick run's metrics need not match the baseline
        say(f"smoke run failed: nothing was submitted to {args.target or ctx.settings.default_target}")
        return code
    say("smoke run succeeded: submitting the job")
    return EXIT_OK


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
