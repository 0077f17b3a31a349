"""``jupyter promote``: parse, load the one configuration file, dispatch; errors as one line and an exit code.

Exit codes: 0 succeeded; 1 the job failed; 2 a usage or input error; 3 parity failed;
4 the environment image could not be built, or does not reproduce the lock; 130 cancelled (Ctrl-C).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from traitlets import TraitError

from ..errors import EXIT_CANCELLED, EXIT_OK, EXIT_USAGE, PromoteError, UsageError
from .attach import cmd_attach, cmd_cancel
from .config_options import config_argv
from .context import Command, CommandContext, GroupAnnouncer
from .inspect import cmd_check, cmd_compare, cmd_logs, cmd_prune, cmd_status
from .parser import build_parser
from .run import cmd_run
from .schedule import cmd_schedule
from .signals import interrupt
from .stages import cmd_build, cmd_convert, cmd_freeze

if TYPE_CHECKING:
    from ..config import PromoteConfigApp

COMMANDS: dict[str, Command] = {
    "check": cmd_check,
    "compare": cmd_compare,
    "sweep": cmd_run,
    "build": cmd_build,
    "freeze": cmd_freeze,
    "convert": cmd_convert,
    "run": cmd_run,
    "status": cmd_status,
    "logs": cmd_logs,
    "prune": cmd_prune,
    "attach": cmd_attach,
    "cancel": cmd_cancel,
    "schedule": cmd_schedule,
}


def main(argv: Sequence[str] | None = None, detached: GroupAnnouncer | None = None) -> int:
    """Entry point of ``jupyter-promote`` / ``jupyter promote``; ``detached``: given by a detached sweep's own
    process (:mod:`.detached_sweep`), which runs the command its starter was given."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (CI systems, `timeout`, a batch system's end) and SIGHUP (a closed terminal) stop a job as Ctrl-C
    # does: what was started is cancelled and the record settled, never left pending
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)
    try:
        return _dispatch(argv, detached)
    except PromoteError as exc:
        print(f"jupyter promote: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except TraitError as exc:  # a setting's value refused where a class reads its configuration
        print(f"jupyter promote: error: configuration: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("jupyter promote: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_OK


def _dispatch(argv: list[str], detached: GroupAnnouncer | None) -> int:
    from ..config import PromoteConfigApp, PromoteSettings, server_settings_names
    from ..rundir import login_name, runs_dir_of

    app = PromoteConfigApp()
    # the server extension's settings are known to the grammar where they are shown or named: importing
    # jupyter_server for every command would cost two seconds
    wanted = ("--help-all", "--generate-config", *(f"--{name}." for name in server_settings_names()))
    if any(arg.startswith(wanted) for arg in argv):
        app.with_server_settings()
    args = build_parser(app.config_classes()).parse_args(argv)
    app.load(config_argv(args))  # the configuration files, then --Class.trait=value, read by traitlets
    if args.help_all or args.generate_config or app.generate_config or app.show_config:
        return _config_command(app, args)
    if args.command is None:
        raise UsageError("the following arguments are required: command")
    settings = PromoteSettings(config=app.config)
    settings.runs_dir = runs_dir_of(settings.runs_dir, login_name())  # the CLI's user's, always
    context = CommandContext(settings=settings, config=app.config, argv=argv, detached=detached)
    return COMMANDS[args.command](args, context)


def _config_command(app: PromoteConfigApp, args: argparse.Namespace) -> int:
    """``--help-all``, ``--generate-config [-y]`` (one file for the CLI and the server extension) and the
    application's own settings that are commands: ``--JupyterApp.generate_config``, ``--Application.show_config``."""
    if args.help_all:
        app.print_help(classes=True)
    elif args.generate_config or app.generate_config:
        app.answer_yes = app.answer_yes or args.yes
        try:
            app.write_default_config()
        except EOFError:  # traitlets asked whether to overwrite, and nobody can answer (no terminal)
            path = os.path.join(app.config_dir, f"{app.config_file_name}.py")
            raise UsageError(f"--generate-config: {path} exists; give -y to overwrite it") from None
    else:
        app.start()  # show_config (or show_config_json): traitlets prints the configuration as loaded
    return EXIT_OK


def run_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run_main()
