"""``jupyter promote``: parse, load the one configuration file, dispatch; errors as one line and an exit code.

Exit codes: 0 succeeded; 1 the job failed; 2 a usage or input error; 3 parity failed;
4 the environment image could not be built, or does not reproduce the lock; 130 cancelled (Ctrl-C).
"""

from __future__ import annotations

import re
import signal
import sys
from collections.abc import Sequence

from ..errors import EXIT_CANCELLED, EXIT_OK, PromoteError
from .attach import cmd_attach, cmd_cancel
from .inspect import cmd_check, cmd_compare, cmd_logs, cmd_prune, cmd_status
from .parser import build_parser
from .run import cmd_run
from .signals import interrupt
from .stages import cmd_build, cmd_convert, cmd_freeze

_CONFIG_FLAG = re.compile(r"^--[A-Za-z_]\w*\.[A-Za-z_]\w*(=.*)?$")

COMMANDS = {
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
}


def _config_help(own_args: list[str], config_args: list[str]) -> int:
    """``--generate-config`` (one file for the CLI and the server extension) and ``--help-all``."""
    from ..config import load_config

    app = load_config(config_args).with_server_settings()
    if "--help-all" in own_args:
        app.print_help(classes=True)
        return EXIT_OK
    app.generate_config = True
    app.answer_yes = "-y" in own_args or "--yes" in own_args
    app.write_default_config()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``jupyter-promote`` / ``jupyter promote``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (CI systems, `timeout`, a batch system's end) and SIGHUP (a closed terminal) stop a job as Ctrl-C
    # does: what was started is cancelled and the record settled, never left pending
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, interrupt)
    config_args = [a for a in argv if _CONFIG_FLAG.match(a)]
    own_args = [a for a in argv if not _CONFIG_FLAG.match(a)]
    try:
        from ..config import PromoteSettings, load_config
        from ..rundir import login_name, runs_dir_of

        if "--generate-config" in own_args or "--help-all" in own_args:
            return _config_help(own_args, config_args)
        args = build_parser().parse_args(own_args)

        app = load_config(config_args)
        app.settings = PromoteSettings(config=app.config)
        app.argv = list(argv)  # as given: a detached sweep runs the same command again
        app.settings.runs_dir = runs_dir_of(app.settings.runs_dir, login_name())  # the CLI's user's, always
        return COMMANDS[args.command](args, app)
    except PromoteError as exc:
        print(f"jupyter promote: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("jupyter promote: interrupted", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:
        return EXIT_OK


def run_main() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run_main()
