"""The command line's grammar: ``jupyter promote``'s parser, and its arguments as a request.

:func:`request_from_args` is the command line's twin of the server's ``request_from_payload``: both end
in a :class:`PromoteRequest` and, for a sweep, replicas or contention, a :class:`GroupRequest`, checked
by the same code (``PromoteSettings.resources``/``monitor`` and ``group_request``).
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from ..config import PromoteSettings
from ..errors import UsageError
from ..launch.request import GroupRequest, ImageRequest, PromoteRequest, group_request
from ..models import MonitorSettings


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit code 2; main() adds "jupyter promote: error: "
        command = self.prog.removeprefix("jupyter promote").strip()
        if "-p/--parameters: expected 2 arguments" in message or "-r/--parameters-raw: expected 2" in message:
            message += " (give a name and a value apart: -p lr 0.1, not -p lr=0.1)"
        raise UsageError(f"{command}: {message}" if command else message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="jupyter promote", description="Promote a notebook to a cluster job that behaves the same way."
    )
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"jupyter-promote {__version__}")
    parser.add_argument("--generate-config", action="store_true",
                        help="write a default jupyter_promote_config.py (for the CLI and the server) and exit")  # fmt: skip
    parser.add_argument("--help-all", action="store_true", help="every setting of jupyter_promote_config.py, and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    freeze = sub.add_parser("freeze", help="freeze a kernel's environment into promote.lock.json")
    which = freeze.add_mutually_exclusive_group()
    which.add_argument("--kernel", help="kernelspec name (default: python3)")
    which.add_argument("--python", help="path of an interpreter to freeze instead of a kernel's")
    freeze.add_argument("-o", "--out", default="promote-env", help="output directory (default: promote-env)")
    freeze.add_argument("--json", action="store_true", help="print the lock on stdout")

    convert = sub.add_parser("convert", help="turn a notebook into a monitored papermill job notebook")
    convert.add_argument("notebook", help="the notebook to convert")
    convert.add_argument("-o", "--out", required=True, help="the job notebook to write")
    _monitor_options(convert)

    run = sub.add_parser("run", help="freeze, convert, run on a target and follow the job to the end")
    run.add_argument("notebook", help="the notebook to run (.ipynb)")
    run.add_argument("-p", "--parameters", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="a parameter, typed as papermill types it (-p lr 0.1 is a float, -p n 3 an int)")  # fmt: skip
    run.add_argument("-r", "--parameters-raw", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="a parameter as a string, untyped")  # fmt: skip
    run.add_argument("-y", "--parameters-yaml", action="append", default=[], metavar="YAML",
                     help="parameters as a YAML mapping, for lists and dicts")  # fmt: skip
    run.add_argument("-f", "--parameters-file", action="append", default=[], metavar="PARAMS.yaml",
                     help="parameters from a YAML file")  # fmt: skip
    run.add_argument("--target", help="where to run (default: local)")
    run.add_argument("--out", help="run directory (default: a new one under the runs directory)")
    _preflight_options(run)
    _resource_options(run, "time limit, e.g. 30m, 2h, 1:00:00")
    run.add_argument("--json", action="store_true", help="print the final job.json on stdout and nothing else")
    run.add_argument("--detach", action="store_true",
                     help="submit the job, print its id and return; follow it later with `jupyter promote attach ID`")  # fmt: skip
    run.add_argument("--contention", metavar="cpu[:N]|memory[:SIZE]|gpu",
                     help="run the job alone, then beside a stress workload, and report both side by side")  # fmt: skip
    run.add_argument(
        "--replicas", type=int, default=None, metavar="N", help="N identical runs; reports each metric's spread"
    )
    run.add_argument("--seeds", nargs="+", type=int, default=None, metavar="SEED",
                     help="one run per seed (the `seed` parameter); seed spread reported apart from replica spread")  # fmt: skip
    _monitor_options(run)
    _notify_options(run)
    _image_options(run)

    sweep = sub.add_parser(
        "sweep", help="run a notebook once per parameter set (a grid, or a YAML list); one job array on Slurm"
    )
    sweep.add_argument("notebook", help="the notebook to run once per parameter set")
    sweep.add_argument("-p", "--parameters", nargs="+", action="append", default=[], metavar=("NAME", "VALUE"),
                       help="a parameter and its values, typed as papermill types -p (the grid is every combination)")  # fmt: skip
    sweep.add_argument(
        "-f", "--sets-file", metavar="SETS.yaml", help="a YAML list of parameter sets (or a grid mapping)"
    )
    sweep.add_argument("--target", help="where to run (default: local)")
    _preflight_options(sweep)
    sweep.add_argument(
        "--max-parallel", type=int, default=None, metavar="N", help="tasks running at once (default: all)"
    )
    sweep.add_argument("--out", help="sweep directory (default: a new one under the runs directory)")
    _resource_options(sweep, "time limit of each task")
    sweep.add_argument("--json", action="store_true", help="print the sweep's summary on stdout")
    sweep.add_argument("--detach", action="store_true",
                       help="run the sweep in the background, print its id and return; follow it later with "
                            "`jupyter promote attach SWEEP_ID`")  # fmt: skip
    _monitor_options(sweep)
    _notify_options(sweep)
    _image_options(sweep)

    compare = sub.add_parser(
        "compare", help="parity of runs with the notebook's tested baseline, and their environment diff"
    )
    compare.add_argument("notebook", help="the saved source notebook (its promote.report outputs are the baseline)")
    compare.add_argument("runs", nargs="+", metavar="RUN_DIR", help="the run directories to judge")
    compare.add_argument("--json", action="store_true", help="print the parity report as JSON")

    build = sub.add_parser("build", help="build (or find) the verified container image of a kernel's environment")
    which = build.add_mutually_exclusive_group()
    which.add_argument("--kernel", help="kernelspec name (default: python3)")
    which.add_argument("--python", help="path of an interpreter whose environment to build")
    _image_options(build)
    build.add_argument(
        "--dry-run", action="store_true", help="show the tag, the Dockerfile and the build context; build nothing"
    )
    build.add_argument("--json", action="store_true", help="print the image record on stdout")

    check = sub.add_parser(
        "check", help="what will differ on the cluster: cells out of order, undefined names, installs, paths"
    )
    check.add_argument("notebook", help="the notebook to check")
    check.add_argument(
        "--gpus", type=int, default=None, metavar="N", help="the GPUs the job would request (default: none)"
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")

    status = sub.add_parser("status", help="the state of a job, a sweep, or recent jobs")
    status.add_argument("job", nargs="?", help="run directory, sweep directory or job id")
    status.add_argument("--json", action="store_true", help="print the job records as JSON")

    attach = sub.add_parser(
        "attach", help="follow a submitted job (run --detach) or a detached sweep to its end, as run would have"
    )
    attach.add_argument("job", help="run directory, job id, or the id of a detached sweep (s...)")
    cancel = sub.add_parser("cancel", help="stop a job on its target (or a detached sweep) and wait for it to end")
    cancel.add_argument("job", help="run directory, job id, or the id of a detached sweep (s...)")

    prune = sub.add_parser("prune", help="remove finished jobs and their run directories (never a running job)")
    prune.add_argument("--older-than", default=None, metavar="AGE",
                       help="jobs that ended longer ago than this, e.g. 30d, 12h, 2w (default: "
                            "c.PromoteSettings.retention when set, else 30d)")  # fmt: skip
    prune.add_argument("--state", default="all", choices=["succeeded", "failed", "cancelled", "all"],
                       help="only jobs that ended so (default: all)")  # fmt: skip
    prune.add_argument("--dry-run", action="store_true", help="list what would be removed; remove nothing")

    logs = sub.add_parser("logs", help="the job's stdout/stderr")
    logs.add_argument("job", help="run directory or job id")
    logs.add_argument("--follow", "-F", action="store_true", help="keep printing until the job ends")
    return parser


def _preflight_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", help="kernelspec to run with (default: the notebook's own)")
    parser.add_argument(
        "--strict", action="store_true", help="refuse to submit when the pre-flight check reports anything"
    )
    parser.add_argument("--smoke", action="store_true",
                        help="first a quick local top-to-bottom run with the parameters of the cell tagged 'smoke'; "
                        "nothing is submitted when it fails")  # fmt: skip


def _resource_options(parser: argparse.ArgumentParser, time_help: str) -> None:
    parser.add_argument("--cpus", help="CPUs for the job, e.g. 4")
    parser.add_argument("--memory", help="memory for the job, e.g. 8G or 512M")
    parser.add_argument("--gpus", help="GPUs for the job, e.g. 1")
    parser.add_argument("--time", help=time_help)


def _image_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("image (container targets)")
    group.add_argument("--base-image", help="base image (default: python:X.Y.Z-slim of the kernel's Python)")
    group.add_argument(
        "--ca-bundle", help="CA bundle for pip in the build (default: $PIP_CERT, $REQUESTS_CA_BUNDLE or $SSL_CERT_FILE)"
    )
    group.add_argument(
        "--wheelhouse", action="store_true", default=None, help="hermetic build: wheels fetched on the host, --no-index"
    )
    group.add_argument("--push", action="store_true", help="push the image to the registry")
    group.add_argument("--registry", help="HOST:PORT/REPO to find images in and push to")
    group.add_argument("--rebuild", action="store_true", help="build even when an image of this environment exists")


def image_request(args: argparse.Namespace) -> ImageRequest:
    return ImageRequest(
        base_image=args.base_image,
        ca_bundle=args.ca_bundle,
        wheelhouse=args.wheelhouse,
        push=args.push,
        registry=args.registry,
        rebuild=args.rebuild,
    )


def _monitor_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--stall-timeout", type=float, default=None, metavar="S", help="seconds without progress (default 600)"
    )
    parser.add_argument("--deterministic", action="store_true", help="seed and pin deterministic algorithms")
    parser.add_argument(
        "--monitor",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="monitor setting, e.g. nan_action=alert, stall_action=alert, throughput_action=fail, check_every=10",
    )


def _notify_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--notify", action="append", default=None, metavar="NAME",
                        help="tell this destination (c.Notifications.destinations) when the job ends or raises an "
                        "alert; repeat for several; 'none' for none (default: c.Notifications.defaults)")  # fmt: skip


def monitor_settings(args: argparse.Namespace, defaults: dict[str, Any] | None = None) -> MonitorSettings:
    fields = MonitorSettings.__dataclass_fields__
    values: dict[str, Any] = {}
    for item in args.monitor:
        key, sep, value = item.partition("=")
        if not sep or key not in fields:
            raise UsageError(
                f"--monitor {item}: expected KEY=VALUE with KEY one of {', '.join(fields)}", subject="monitor"
            )
        kind: Any = type(fields[key].default)
        try:
            values[key] = kind(value)
        except ValueError:
            raise UsageError(f"--monitor {item}: {value!r} is not a {kind.__name__}", subject="monitor") from None
    if args.stall_timeout is not None:
        values["stall_timeout_s"] = args.stall_timeout
    return MonitorSettings(**{**(defaults or {}), **values}).checked()


def sweep_sets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The parameter sets of ``sweep``: the -p grid, or the sets file, never both."""
    from ..job.parameters import check_parameters, load_yaml, resolve_type
    from ..job.sweep import expand

    if args.sets_file and args.parameters:
        raise UsageError("-f and -p: give the sets in a file or as a grid, not both", subject="sweep")
    if args.sets_file:
        origin = f"-f {args.sets_file}"
        try:
            with open(args.sets_file, encoding="utf-8") as f:
                spec = load_yaml(f.read(), origin)  # bounded: an alias bomb is refused
        except OSError as exc:
            raise UsageError(f"{origin}: {exc.strerror}", subject=args.sets_file) from None
        return [check_parameters(values, origin) for values in expand(spec, origin=origin)]
    grid: dict[str, list[Any]] = {}
    for item in args.parameters:
        if len(item) < 2:
            raise UsageError(f"-p {item[0]}: give the parameter's values after its name", subject=item[0])
        grid[item[0]] = [resolve_type(v) for v in item[1:]]
    if not grid:
        raise UsageError("sweep: nothing to vary (give -p NAME V1 V2 ... or -f SETS.yaml)", subject="sweep")
    return expand(grid, origin="-p")


def request_from_args(
    args: argparse.Namespace, settings: PromoteSettings
) -> tuple[PromoteRequest, GroupRequest | None]:
    """``run``'s or ``sweep``'s arguments as the request both doors make, and the group they ask for."""
    from ..job.parameters import collect_parameters

    if args.command == "sweep":
        parameters: dict[str, Any] = {}
        if args.max_parallel is not None and args.max_parallel < 1:
            raise UsageError(f"--max-parallel {args.max_parallel}: must be at least 1", subject="max_parallel",
                             field="max_parallel")  # fmt: skip
        group = group_request(sweep_sets(args), args.max_parallel)
    else:
        parameters = collect_parameters(args.parameters, args.parameters_raw, args.parameters_yaml,
                                        args.parameters_file)  # fmt: skip
        if args.replicas is not None and args.replicas < 1:
            raise UsageError(f"--replicas {args.replicas}: must be at least 1", subject="replicas", field="replicas")
        if args.contention and (args.replicas is not None or args.seeds is not None):
            raise UsageError("--contention with --replicas/--seeds: one at a time", subject="contention",
                             field="contention")  # fmt: skip
        group = group_request(None, None, args.replicas, args.seeds, args.contention)
        if args.detach and group is not None:
            raise UsageError("--detach: applies to one job (not to --replicas, --seeds or --contention)",
                             subject="detach")  # fmt: skip
    request = PromoteRequest(
        notebook=args.notebook,
        kernel=args.kernel,
        target=args.target or settings.default_target,
        parameters=parameters,
        resources=settings.resources({"cpus": args.cpus, "memory": args.memory, "gpus": args.gpus, "time": args.time}),
        monitor=monitor_settings(args, settings.monitor_defaults),
        deterministic=args.deterministic,
        out=args.out,
        image=image_request(args),
        notify=args.notify,
    )
    return request, group
