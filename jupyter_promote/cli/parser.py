"""The command line's grammar: ``jupyter promote``'s parser, one function per command.

Every command also takes each setting ``--help-all`` lists (``--Class.trait=value``, see :mod:`.config_options`);
what the arguments ask for is made a request in :mod:`.request`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import NoReturn, TypeAlias

from traitlets.config import Configurable

from .config_options import add_config_options
from .options import (
    data_options,
    image_options,
    interpreter_options,
    monitor_options,
    notify_options,
    parameter_options,
    preflight_options,
    resource_options,
    retry_options,
    secret_options,
)

_CONFIG_EPILOG = "Any setting of `jupyter promote --help-all` is taken too, as --Class.trait=value."


class _Parser(argparse.ArgumentParser):
    #: The settings a command's parser takes as ``--Class.trait``: added when it parses, not when it is built, so
    #: that only the command given pays for them (some 1,500 options over every command: a tenth of a second)
    config_classes: Sequence[type[Configurable]] = ()

    def parse_known_args(  # type: ignore[override]  # (typeshed overloads on namespace: ours is one form)
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self.config_classes:
            add_config_options(self, self.config_classes)
            self.config_classes = ()
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:  # one line, exit code 2; main() adds "jupyter promote: error: "
        from ..errors import UsageError

        command = self.prog.removeprefix("jupyter promote").strip()
        if "-p/--parameters: expected 2 arguments" in message or "-r/--parameters-raw: expected 2" in message:
            message += " (give a name and a value apart: -p lr 0.1, not -p lr=0.1)"
        raise UsageError(f"{command}: {message}" if command else message)


#: The subcommands of the top-level parser.
Commands: TypeAlias = "argparse._SubParsersAction[_Parser]"


def build_parser(config_classes: Sequence[type[Configurable]] | None = None) -> argparse.ArgumentParser:
    """The whole grammar; ``config_classes``: the settings taken as ``--Class.trait`` (default: the CLI's)."""
    from .._version import __version__

    if config_classes is None:
        from ..config import PromoteConfigApp

        config_classes = PromoteConfigApp().config_classes()
    parser = _Parser(
        prog="jupyter promote", description="Promote a notebook to a cluster job that behaves the same way."
    )
    parser.add_argument("--version", action="version", version=f"jupyter-promote {__version__}")
    parser.add_argument(
        "--generate-config",
        action="store_true",
        help="write a default jupyter_promote_config.py (for the CLI and the server) and exit",
    )
    parser.add_argument("-y", "--yes", action="store_true", help="with --generate-config: overwrite without asking")
    parser.add_argument("--help-all", action="store_true", help="every setting of jupyter_promote_config.py, and exit")
    add_config_options(parser, config_classes, before_command=True)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    from .schedule import schedule_parser

    commands = (_freeze, _convert, _run, _sweep, _compare, _build, _check, _status, _attach, _cancel, _prune, _logs)
    for add in (*commands, schedule_parser):
        command = add(sub)
        command.epilog = _CONFIG_EPILOG
        command.config_classes = config_classes
    return parser


def _freeze(sub: Commands) -> _Parser:
    freeze = sub.add_parser("freeze", help="freeze a kernel's environment into promote.lock.json")
    interpreter_options(freeze, "path of an interpreter to freeze instead of a kernel's")
    freeze.add_argument("-o", "--out", default="promote-env", help="output directory (default: promote-env)")
    freeze.add_argument("--json", action="store_true", help="print the lock on stdout")
    return freeze


def _convert(sub: Commands) -> _Parser:
    convert = sub.add_parser("convert", help="turn a notebook into a monitored papermill job notebook")
    convert.add_argument("notebook", help="the notebook to convert")
    convert.add_argument("-o", "--out", required=True, help="the job notebook to write")
    monitor_options(convert)
    return convert


def _run(sub: Commands) -> _Parser:
    run = sub.add_parser("run", help="freeze, convert, run on a target and follow the job to the end")
    run.add_argument("notebook", help="the notebook to run (.ipynb)")
    parameter_options(run)
    run.add_argument("--target", help="where to run (default: local)")
    run.add_argument("--out", help="run directory (default: a new one under the runs directory)")
    preflight_options(run)
    resource_options(run, "time limit, e.g. 30m, 2h, 1:00:00")
    run.add_argument("--json", action="store_true", help="print the final job.json on stdout and nothing else")
    run.add_argument(
        "--detach",
        action="store_true",
        help="submit the job, print its id and return; follow it later with `jupyter promote attach ID`",
    )
    run.add_argument(
        "--contention",
        metavar="cpu[:N]|memory[:SIZE]|gpu",
        help="run the job alone, then beside a stress workload, and report both side by side",
    )
    run.add_argument(
        "--replicas", type=int, default=None, metavar="N", help="N identical runs; reports each metric's spread"
    )
    run.add_argument(
        "--seeds",
        nargs="+",
        type=int,
        default=None,
        metavar="SEED",
        help="one run per seed (the `seed` parameter); seed spread reported apart from replica spread",
    )
    monitor_options(run)
    secret_options(run)
    retry_options(run)
    data_options(run)
    notify_options(run)
    image_options(run)
    return run


def _sweep(sub: Commands) -> _Parser:
    sweep = sub.add_parser(
        "sweep", help="run a notebook once per parameter set (a grid, or a YAML list); one job array on Slurm"
    )
    sweep.add_argument("notebook", help="the notebook to run once per parameter set")
    sweep.add_argument(
        "-p",
        "--parameters",
        nargs="+",
        action="append",
        default=[],
        metavar=("NAME", "VALUE"),
        help="a parameter and its values, typed as papermill types -p (the grid is every combination)",
    )
    sweep.add_argument(
        "-f", "--sets-file", metavar="SETS.yaml", help="a YAML list of parameter sets (or a grid mapping)"
    )
    sweep.add_argument("--target", help="where to run (default: local)")
    preflight_options(sweep)
    sweep.add_argument(
        "--max-parallel", type=int, default=None, metavar="N", help="tasks running at once (default: all)"
    )
    sweep.add_argument("--out", help="sweep directory (default: a new one under the runs directory)")
    resource_options(sweep, "time limit of each task")
    sweep.add_argument("--json", action="store_true", help="print the sweep's summary on stdout")
    sweep.add_argument(
        "--detach",
        action="store_true",
        help="run the sweep in the background, print its id and return; follow it later with "
        "`jupyter promote attach SWEEP_ID`",
    )
    monitor_options(sweep)
    secret_options(sweep)
    retry_options(sweep)
    data_options(sweep)
    notify_options(sweep)
    image_options(sweep)
    return sweep


def _compare(sub: Commands) -> _Parser:
    compare = sub.add_parser(
        "compare", help="parity of runs with the notebook's tested baseline, and their environment diff"
    )
    compare.add_argument("notebook", help="the saved source notebook (its promote.report outputs are the baseline)")
    compare.add_argument("runs", nargs="+", metavar="RUN_DIR", help="the run directories to judge")
    compare.add_argument("--json", action="store_true", help="print the parity report as JSON")
    return compare


def _build(sub: Commands) -> _Parser:
    build = sub.add_parser("build", help="build (or find) the verified container image of a kernel's environment")
    interpreter_options(build, "path of an interpreter whose environment to build")
    image_options(build)
    build.add_argument(
        "--dry-run", action="store_true", help="show the tag, the Dockerfile and the build context; build nothing"
    )
    build.add_argument("--json", action="store_true", help="print the image record on stdout")
    return build


def _check(sub: Commands) -> _Parser:
    check = sub.add_parser(
        "check", help="what will differ on the cluster: cells out of order, undefined names, installs, paths"
    )
    check.add_argument("notebook", help="the notebook to check")
    check.add_argument(
        "--gpus", type=int, default=None, metavar="N", help="the GPUs the job would request (default: none)"
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")
    check.add_argument("--target", help="the target the job would run on (default: the default target)")
    secret_options(check)
    return check


def _status(sub: Commands) -> _Parser:
    status = sub.add_parser("status", help="the state of a job, a sweep, or recent jobs")
    status.add_argument("job", nargs="?", help="run directory, sweep directory or job id")
    status.add_argument("--json", action="store_true", help="print the job records as JSON")
    return status


def _attach(sub: Commands) -> _Parser:
    attach = sub.add_parser(
        "attach", help="follow a submitted job (run --detach) or a detached sweep to its end, as run would have"
    )
    attach.add_argument("job", help="run directory, job id, or the id of a detached sweep (s...)")
    return attach


def _cancel(sub: Commands) -> _Parser:
    cancel = sub.add_parser("cancel", help="stop a job on its target (or a detached sweep) and wait for it to end")
    cancel.add_argument("job", help="run directory, job id, or the id of a detached sweep (s...)")
    return cancel


def _prune(sub: Commands) -> _Parser:
    prune = sub.add_parser("prune", help="remove finished jobs and their run directories (never a running job)")
    prune.add_argument(
        "--older-than",
        default=None,
        metavar="AGE",
        help="jobs that ended longer ago than this, e.g. 30d, 12h, 2w (default: "
        "c.PromoteSettings.retention when set, else 30d)",
    )
    prune.add_argument(
        "--state",
        default="all",
        choices=["succeeded", "failed", "cancelled", "all"],
        help="only jobs that ended so (default: all)",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")
    return prune


def _logs(sub: Commands) -> _Parser:
    logs = sub.add_parser("logs", help="the job's stdout/stderr")
    logs.add_argument("job", help="run directory or job id")
    logs.add_argument("--follow", "-F", action="store_true", help="keep printing until the job ends")
    return logs
