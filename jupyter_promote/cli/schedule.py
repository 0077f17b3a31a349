"""``jupyter promote schedule create|list|pause|resume|delete|run-now``: schedules in the job store the server
uses (``c.PromoteExtension.db_url``, else its ``store_path``; ``--db`` names another). The server fires them
(its scheduler ticks every ``c.PromoteExtension.schedule_tick_s``); ``run-now`` asks it to on its next tick.
"""

from __future__ import annotations

import argparse
import datetime
import os
from typing import Any

from ..errors import EXIT_OK, UsageError
from .context import CommandContext
from .options import (
    data_options,
    monitor_options,
    notify_options,
    parameter_options,
    resource_options,
    retry_options,
    secret_options,
)
from .request import in_cli_words, request_body

ACTIONS = ("create", "list", "pause", "resume", "delete", "run-now")


def schedule_parser(sub: Any) -> Any:
    """The ``schedule`` command's grammar: an action, then a notebook (create) or a schedule's id or name.

    ``sub`` is :func:`.parser.build_parser`'s subcommands (typed loosely: this module does not import the
    grammar that imports it)."""
    schedule = sub.add_parser(
        "schedule", help="run a notebook on a cron schedule, fired by the jupyter server (create, list, ...)"
    )
    schedule.add_argument("action", nargs="?", default="list", choices=ACTIONS, help="what to do (default: list)")
    schedule.add_argument("what", nargs="?", help="create: the notebook; pause/resume/delete/run-now: ID or NAME")
    schedule.add_argument("--cron", help='create: five fields, minute hour day month weekday ("0 3 * * *")')
    schedule.add_argument("--tz", default="UTC", help="create: the time zone of --cron (default: UTC)")
    schedule.add_argument("--name", help="create: a unique name (default: the notebook's name and an id)")
    schedule.add_argument(
        "--missed", choices=("latest", "all", "skip"), default="latest", help="runs missed while no server ran"
    )
    schedule.add_argument(
        "--overlap", choices=("skip", "queue", "allow"), default="skip", help="a due time while a run goes on"
    )
    schedule.add_argument("--refreeze", action="store_true", help="create: run the notebook as it is at each due time")
    schedule.add_argument("--db", help="the job store (default: the server's: c.PromoteExtension.db_url or store_path)")
    schedule.add_argument("--target", help="create: where to run (default: local)")
    schedule.add_argument("--kernel", help="create: kernelspec to run with (default: the notebook's own)")
    parameter_options(schedule)
    resource_options(schedule, "create: time limit, e.g. 30m, 2h")
    monitor_options(schedule)
    secret_options(schedule)
    retry_options(schedule)
    data_options(schedule)
    notify_options(schedule)
    schedule.set_defaults(replicas=None, seeds=None, contention=None, detach=False)
    return schedule


def store_of(args: argparse.Namespace, ctx: CommandContext) -> Any:
    """The schedules of the store the server uses (or ``--db``), this user's."""
    from jupyter_core.paths import jupyter_data_dir

    from ..schedule.store import ScheduleStore
    from ..server.store.engine import open_engine, store_url

    server = ctx.config.get("PromoteExtension", {})
    where = args.db or server.get("db_url") or server.get("store_path")
    where = where or os.path.join(jupyter_data_dir(), "promote", "jobs.sqlite")
    from ..rundir import server_user

    return ScheduleStore(open_engine(store_url(str(where))), server_user())


def cmd_schedule(args: argparse.Namespace, ctx: CommandContext) -> int:
    from ..schedule.model import due_after, iso

    if args.action != "list" and not args.what:
        raise UsageError(f"schedule {args.action}: give {'a notebook' if args.action == 'create' else 'an ID or NAME'}")
    store = store_of(args, ctx)
    try:
        if args.action == "create":
            _create(args, ctx, store)
        elif args.action == "list":
            schedules = store.all()
            if not schedules:
                print("no schedules (jupyter promote schedule create NOTEBOOK --cron EXPR)")
            for s in schedules:
                state = "paused" if s.paused else f"next {iso(s.next_due, s.timezone)}"
                print(f"{s.id}  {s.name}  {s.cron!r} {s.timezone}  {state}  last job {s.last_job or '-'}  {s.note}")
        else:
            schedule = store.get(args.what)
            now = int(_now())
            if args.action == "pause":
                store.update(schedule.id, paused=True)
            elif args.action == "resume":  # what was due while paused is not missed
                next_due = due_after(schedule.cron, schedule.timezone, now)[0]
                store.update(schedule.id, paused=False, last_fired=now, next_due=next_due)
            elif args.action == "delete":
                store.delete(schedule.id)
            else:
                store.update(schedule.id, run_now=now)
            done = {"run-now": "asked to run; the server fires it on its next tick", "delete": "deleted"}
            print(f"schedule {schedule.name} ({schedule.id}): {done.get(args.action, args.action + 'd')}")
    finally:
        store.engine.dispose()
    return EXIT_OK


def _create(args: argparse.Namespace, ctx: CommandContext, store: Any) -> None:
    from ..rundir import login_name
    from ..schedule.create import new_schedule
    from ..schedule.model import due_after, iso

    if not args.cron:
        raise UsageError("schedule create: --cron is required", subject="cron", field="cron")
    args.notebook = args.what
    body: dict[str, Any] = {
        "cron": args.cron,
        "timezone": args.tz,
        "missed": args.missed,
        "overlap": args.overlap,
        "freeze": "each_run" if args.refreeze else "once",
        "request": request_body(args),
    }
    if args.name is not None:
        body["name"] = args.name
    try:
        schedule, text = new_schedule(body, existing_notebook, ctx.settings, login_name(), _now())
    except UsageError as exc:
        raise in_cli_words(exc) from None
    store.add(schedule, text)
    print(f"schedule {schedule.name} ({schedule.id}) created; the jupyter server fires it. Next due times:")
    for due in due_after(schedule.cron, schedule.timezone, schedule.last_fired, 5):
        print(f"  {iso(due, schedule.timezone)}")


def existing_notebook(path: Any) -> str:
    if not isinstance(path, str) or not os.path.isfile(path):
        raise UsageError(f"notebook {path}: no such notebook", subject=str(path), field="notebook")
    return os.path.abspath(path)


def _now() -> float:
    return datetime.datetime.now(datetime.timezone.utc).timestamp()
