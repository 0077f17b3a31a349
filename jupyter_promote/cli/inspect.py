"""What the command line shows of notebooks and jobs: ``check``, ``compare``, ``status`` and ``logs``."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import EXIT_OK, EXIT_PARITY_FAILED, JobNotFound, UsageError
from .context import CommandContext
from .signals import say

if TYPE_CHECKING:
    from ..events import JobView
    from ..models import JobRecord
    from ..rundir import RunDir


def notebook_findings(
    notebook: str,
    gpus: int | None,
    ctx: CommandContext,
    target: str | None = None,
    secrets: list[str] | None = None,
    secrets_read: set[str] | None = None,
) -> list[Any]:
    """The pre-flight findings of a saved notebook (for ``check`` and before ``run``/``sweep``) as a job on
    ``target`` (default: the default target) with ``secrets`` (``--secret`` options) would run it; the
    names of the secrets it reads go into ``secrets_read``."""
    from ..job.notebook import read_notebook
    from ..preflight import WHOLE_ENVIRONMENT_TARGETS, check_notebook
    from ..secrets import availability, deliverable_defaults, parse_option, refs_of

    nb = read_notebook(os.path.abspath(notebook))
    target = target or ctx.settings.default_target
    whole = target in WHOLE_ENVIRONMENT_TARGETS
    asked = dict(parse_option(text) for text in secrets or ())
    refs = refs_of(asked, deliverable_defaults(ctx.settings.secrets, target))
    return check_notebook(
        nb,
        gpus=gpus,
        env_allowlist=ctx.settings.env_allowlist,
        whole_environment=whole,
        secrets=availability(refs, target),
        secrets_read=secrets_read,
    )


def cmd_check(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``jupyter promote check NOTEBOOK``: exit 0 when there is nothing to report, 1 when there is; a notebook
    ``run`` refuses (not Python, unreadable) is refused the same way."""
    from ..job.notebook import kernel_of, read_notebook
    from ..preflight import format_findings

    kernel_of(read_notebook(os.path.abspath(args.notebook)), args.notebook)
    read: set[str] = set()
    findings = notebook_findings(args.notebook, args.gpus, ctx, args.target, args.secret, read)
    if read and not args.json:
        print(f"{args.notebook}: reads the secrets {', '.join(sorted(read))} (given by reference)")
    if args.json:
        print(json.dumps([f.to_json() for f in findings], indent=2))
    elif findings:
        for line in format_findings(findings):
            print(line)
        print(f"{args.notebook}: {len(findings)} finding(s); the job runs the notebook top to bottom in a fresh kernel")
    else:
        print(f"{args.notebook}: nothing to report")
    return 1 if findings else EXIT_OK


def cmd_compare(args: argparse.Namespace, ctx: CommandContext) -> int:
    import tempfile

    from ..analysis import parity
    from ..events import JobView
    from ..freeze import LOCK_FILE, freeze, kernel_interpreter, read_lock
    from ..job.notebook import kernel_of, read_notebook
    from ..runtime.events import read_events

    nb = read_notebook(args.notebook)
    if not parity.baseline_of(nb)["metrics"]:
        print(
            f"{args.notebook}: no baseline to compare with (no promote.report output in the saved notebook; "
            "run it interactively, call promote.report(...), save it, then compare)"
        )
        return EXIT_OK
    runs = []
    for path in args.runs:
        run = Path(path)
        if not (run / "job.json").is_file() or not (run / "env" / LOCK_FILE).is_file():
            raise UsageError(f"{path}: not a run directory (no job.json and env/{LOCK_FILE})", subject=path)
        runs.append(run)
    # the notebook kernel's environment as it is now, against the one each run was made from
    with tempfile.TemporaryDirectory(prefix="promote-compare-") as tmp:
        env = freeze(
            kernel_interpreter(kernel_of(nb, args.notebook)),
            os.path.join(tmp, "env"),
            env_allowlist=tuple(ctx.settings.env_allowlist),
        )
        notebook_lock = env.lock
    failed = False
    results = []
    for run in runs:
        view = JobView().fold(read_events(str(run / "events.jsonl")))
        job_lock = parity.job_environment(run, read_lock(run / "env") or {})
        result = parity.judge(nb, dict(view.metrics), notebook_lock, job_lock, ctx.settings.parity_tolerance)
        text = parity.write(run, result, f"{run.name} against {os.path.basename(args.notebook)}")
        failed |= result["verdict"] != "pass"
        results.append({"run": str(run), **result})
        if not args.json:
            print(text, end="")
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    return EXIT_PARITY_FAILED if failed else EXIT_OK


def print_sweep(summary: dict[str, Any], say: Callable[[str], None] = say) -> None:
    states = ", ".join(f"{n} {s}" for s, n in sorted(summary["states"].items()))
    say(f"sweep {summary['id']}: {summary['size']} tasks: {states}")
    for name, ends in sorted(summary["metrics"].items()):
        low, high = ends["min"], ends["max"]
        say(
            f"  {name}: min {low['value']:g} (task {low['index']}), max {high['value']:g} (task {high['index']}), "
            f"std {ends['std']:.3g} over {ends['tasks']} tasks"
        )
        if "seed_std" in ends:
            say(
                f"    spread from the seed {ends['seed_std']:.3g}; between replicas of one seed {ends['replica_std']:.3g}"
            )
    for group in summary.get("replicas", []):
        tasks = ", ".join(str(i) for i in group["tasks"])
        where = group["first_divergence"]
        if where is None:
            say(f"  replicas {tasks}: identical, bit for bit, in every report")
        else:
            values = ", ".join(repr(v) for v in where["values"])
            say(
                f"  replicas {tasks}: first diverge at step {where['step']} (report {where['report']}): "
                f"{where['metric'] or where.get('problem')} = {values}"
            )


def find_run(job: str, runs_dir: str) -> RunDir:
    """The run directory ``job`` names: a path, or a job id (its first characters) under ``runs_dir``."""
    from ..rundir import RunDir

    if os.path.isdir(job):
        return RunDir(job)
    root = Path(runs_dir)
    if root.is_dir():
        for candidate in sorted(root.iterdir()):
            if candidate.name.endswith(f"-{job[:6]}") and (candidate / "job.json").is_file():
                run = RunDir(candidate)
                if run.read().id.startswith(job):
                    return run
    raise JobNotFound(f"{job}: no such run directory or job id (looked in {runs_dir})", subject=job)


def reconcile(run: RunDir, ctx: CommandContext) -> tuple[JobRecord, JobView]:
    """job.json brought up to date with the job's events and, when still unfinished, its target."""
    from ..events import JobView
    from ..events.authority import job_events
    from ..launch.follow import check_once
    from ..targets import target_class

    record = run.read()
    was_final = record.state.final
    view = JobView().fold(job_events(run.path))
    if not view.state.final and record.handle:
        asyncio.run(check_once(record, run, target_class(record.target)(config=ctx.config)))
        view = JobView().fold(job_events(run.path))
    if view.seq:
        view.update(record)
        run.write(record)
    if view.state.final and not was_final:  # ended with no one following it (a detached job): its report now
        from ..report import write_report

        write_report(run, record, view)
    return record, view


#: The jobs ``status`` lists, newest first.
STATUS_ROWS = 20


def _skipped(line: str) -> None:
    print(f"jupyter promote: {line}", file=sys.stderr)


def cmd_status(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..analysis import drift
    from ..housekeeping import readable
    from ..rundir import RunDir

    if args.job is None:
        root = Path(ctx.runs_dir)
        runs = [RunDir(p) for p in root.iterdir()] if root.is_dir() else []
        read = readable((r for r in runs if r.exists()), lambda r: reconcile(r, ctx)[0], _skipped)
        rows = sorted((record for _, record in read), key=lambda r: r.created_at, reverse=True)
        if args.json:
            print(json.dumps([r.to_json() for r in rows], indent=2, sort_keys=True))
        elif not rows:
            print(
                f"no jobs yet in {root} (the runs directory: c.PromoteSettings.runs_dir or $JUPYTER_PROMOTE_RUNS_DIR)"
            )
        else:
            print(f"{'JOB':<12}  {'STATE':<10} {'REASON':<10} {'TARGET':<10} {'CREATED':<16}  NOTEBOOK")
            for r in rows[:STATUS_ROWS]:
                created = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
                print(
                    f"{r.id:<12}  {r.state.value:<10} {r.reason or '':<10} {r.target:<10} {created:<16}  "
                    f"{os.path.basename(r.notebook)}"
                )
            if len(rows) > STATUS_ROWS:
                print(f"({STATUS_ROWS} newest of {len(rows)} jobs in {root}; --json lists all)")
        return EXIT_OK
    if os.path.isfile(os.path.join(args.job, "sweep.json")):
        from ..analysis.spread import summarise

        summary = summarise(Path(args.job))
        if args.json:
            print(json.dumps(summary, indent=2, sort_keys=True))
        else:
            print_sweep(summary, print)
        return EXIT_OK
    run = find_run(args.job, ctx.runs_dir)
    record, view = reconcile(run, ctx)
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True))
        return EXIT_OK
    print(f"job {record.id}: {view.progress_line()}")
    print(f"  notebook: {record.notebook}")
    print(f"  target:   {record.target}")
    if record.message:
        print(f"  message:  {record.message}")
    for alert in view.alerts:
        print(f"  ! {alert['kind']}: {alert['message']}")
    if view.metrics:
        print("  metrics:  " + ", ".join(f"{k}={v}" for k, v in view.metrics.items()))
    judged = drift.read(run.path)  # a scheduled job against its schedule's runs
    for line in drift.lines(judged) if judged else []:
        print(f"  {line}")
    if record.artifacts:
        print(f"  artifacts ({len(record.artifacts)}, in {run.work_dir}):")
        for item in record.artifacts:
            print(f"    {item['path']}  {item['size']} bytes")
    if run.report.is_file():
        print(f"  report:   {run.report}")
    return EXIT_OK


def cmd_logs(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..events import JobView
    from ..events.authority import job_events

    run = find_run(args.job, ctx.runs_dir)
    offset = 0
    while True:
        try:
            with open(run.log, "rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            data = b""
        offset += len(data)
        sys.stdout.write(data.decode("utf-8", "replace"))
        sys.stdout.flush()
        if not args.follow or JobView().fold(job_events(run.path)).state.final:
            if args.follow and data:
                continue
            return EXIT_OK
        time.sleep(0.5)


def cmd_prune(args: argparse.Namespace, ctx: CommandContext) -> int:
    """``jupyter promote prune``: remove finished jobs older than an age (never one still running)."""
    from ..housekeeping import human_size, parse_age, prunable, readable, remove
    from ..launch.group_prune import prunable_groups
    from ..rundir import RunDir

    args.older_than = args.older_than or ctx.settings.retention or "30d"
    older_than = parse_age(args.older_than)
    root = Path(ctx.runs_dir)
    runs = [RunDir(p) for p in root.iterdir() if not p.name.startswith(".")] if root.is_dir() else []
    # bring each record up to date first: a job whose kernel died unseen is settled, one still running is kept
    read = readable((r for r in runs if r.exists()), lambda r: reconcile(r, ctx)[0], _skipped)
    current = [run for run, record in read if record.state.final]
    found = sorted(prunable(current, older_than, args.state, skipped=_skipped), key=lambda p: p.record.created_at)
    groups = (
        list(prunable_groups(root.iterdir(), older_than, args.state, time.time(), skipped=_skipped))
        if root.is_dir()
        else []
    )
    verb = "would remove" if args.dry_run else "removed"
    for item in found:
        if not args.dry_run:
            remove(item.run)
        days = item.age_s / 86400
        print(
            f"{verb} {item.record.id}  {item.record.state.value:<10} ended {days:.1f} days ago  "
            f"{human_size(item.size):>10}  {item.run.path}"
        )
    for group in groups:
        if not args.dry_run:
            remove(RunDir(group.path))
        print(
            f"{verb} {group.kind} {group.id} ({group.tasks} tasks)  ended {group.age_s / 86400:.1f} days ago  "
            f"{human_size(group.size):>10}  {group.path}"
        )
    total = human_size(sum(item.size for item in found) + sum(group.size for group in groups))
    kept = len(runs) - len(found) - len(groups)
    print(
        f"{verb} {len(found)} job(s) and {len(groups)} sweep folder(s), {total}; kept {kept} in {root} "
        f"(finished {args.state} jobs older than {args.older_than} are pruned; running jobs never)"
    )
    return EXIT_OK
