"""``jupyter promote``: freeze, convert, run, status, logs.

Exit codes: 0 succeeded; 1 the job failed; 2 a usage or input error; 3 parity failed (reserved);
4 the environment image could not be built, or does not reproduce the lock; 130 cancelled (Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from ..errors import (
    EXIT_CANCELLED,
    EXIT_JOB_FAILED,
    EXIT_OK,
    EXIT_PARITY_FAILED,
    JobNotFound,
    PromoteError,
    TargetUnavailable,
    UsageError,
)
from ..models import JobState, MonitorSettings

_CONFIG_FLAG = re.compile(r"^--[A-Za-z_]\w*\.[A-Za-z_]\w*(=.*)?$")
_EXIT_BY_STATE = {JobState.SUCCEEDED: EXIT_OK, JobState.FAILED: EXIT_JOB_FAILED, JobState.CANCELLED: EXIT_CANCELLED}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit code 2
        raise UsageError(f"{self.prog}: {message}")


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
    convert.add_argument("notebook")
    convert.add_argument("-o", "--out", required=True, help="the job notebook to write")
    _monitor_options(convert)

    run = sub.add_parser("run", help="freeze, convert, run on a target and follow the job to the end")
    run.add_argument("notebook")
    run.add_argument("-p", "--parameters", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    run.add_argument("-r", "--parameters-raw", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"))
    run.add_argument("-y", "--parameters-yaml", action="append", default=[], metavar="YAML")
    run.add_argument("-f", "--parameters-file", action="append", default=[], metavar="PARAMS.yaml")
    run.add_argument("--target", help="where to run (default: local)")
    run.add_argument("--out", help="run directory (default: a new one under the runs directory)")
    _preflight_options(run)
    _resource_options(run, "time limit, e.g. 30m, 2h, 1:00:00")
    run.add_argument("--json", action="store_true", help="print the final job.json on stdout and nothing else")
    run.add_argument("--contention", metavar="cpu[:N]|memory[:SIZE]|gpu",
                     help="run the job alone, then beside a stress workload, and report both side by side")  # fmt: skip
    run.add_argument(
        "--replicas", type=int, default=None, metavar="N", help="N identical runs; reports each metric's spread"
    )
    run.add_argument("--seeds", nargs="+", type=int, default=None, metavar="SEED",
                     help="one run per seed (the `seed` parameter); seed spread reported apart from replica spread")  # fmt: skip
    _monitor_options(run)
    _image_options(run)

    sweep = sub.add_parser(
        "sweep", help="run a notebook once per parameter set (a grid, or a YAML list); one job array on Slurm"
    )
    sweep.add_argument("notebook")
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
    _monitor_options(sweep)
    _image_options(sweep)

    compare = sub.add_parser(
        "compare", help="parity of runs with the notebook's tested baseline, and their environment diff"
    )
    compare.add_argument("notebook", help="the saved source notebook (its promote.report outputs are the baseline)")
    compare.add_argument("runs", nargs="+", metavar="RUN_DIR")
    compare.add_argument("--json", action="store_true")

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
    check.add_argument("notebook")
    check.add_argument(
        "--gpus", type=int, default=None, metavar="N", help="the GPUs the job would request (default: none)"
    )
    check.add_argument("--json", action="store_true", help="print the findings as JSON")

    status = sub.add_parser("status", help="the state of a job, a sweep, or recent jobs")
    status.add_argument("job", nargs="?", help="run directory, sweep directory or job id")
    status.add_argument("--json", action="store_true")

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


def _checked_kernel(kernel: str | None) -> None:
    """``--kernel NAME`` names an installed Python kernelspec (else one line listing the installed ones)."""
    if kernel:
        from ..freeze import kernel_interpreter

        try:
            kernel_interpreter(kernel)
        except PromoteError as exc:
            raise UsageError(f"--kernel {exc.message}", subject=kernel) from None


def _notebook_findings(notebook: str, gpus: int | None, app: Any) -> list[Any]:
    """The pre-flight findings of a saved notebook (for ``check`` and before ``run``/``sweep``)."""
    import nbformat

    from ..job.notebook import read_notebook
    from ..preflight import check_notebook

    nb = nbformat.from_dict(read_notebook(os.path.abspath(notebook)))
    return check_notebook(nb, gpus=gpus, env_allowlist=app.settings.env_allowlist)


def _preflight(args: argparse.Namespace, app: Any) -> None:
    """The pre-flight check before anything is submitted: warnings on stderr; with --strict, a refusal."""
    from ..preflight import format_findings

    gpus = int(args.gpus) if getattr(args, "gpus", None) and str(args.gpus).isdigit() else None
    findings = _notebook_findings(args.notebook, gpus, app)
    for line in format_findings(findings):
        _say(line)
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
    _say(f"smoke run: {args.notebook} on this machine" + (f" with {smoke}" if smoke else " (no cell tagged 'smoke')"))
    quick = argparse.Namespace(**{**vars(args), "target": "local", "out": None, "smoke": False, "strict": False,
                                  "json": False, "replicas": None, "seeds": None, "contention": None,
                                  "cpus": None, "memory": None, "gpus": None})  # fmt: skip
    given = args.command == "run"  # a run's own parameters stay, the smoke cell's go over them; a sweep's do not
    quick.parameters = [p for p in args.parameters if p[0] not in smoke] if given else []
    quick.parameters_raw = [p for p in args.parameters_raw if p[0] not in smoke] if given else []
    quick.parameters_file = args.parameters_file if given else []
    quick.parameters_yaml = (args.parameters_yaml if given else []) + ([json.dumps(smoke)] if smoke else [])
    code = cmd_run(quick, app)
    if code not in (EXIT_OK, EXIT_PARITY_FAILED):  # a quick run's metrics need not match the baseline
        _say(f"smoke run failed: nothing was submitted to {args.target or app.settings.default_target}")
        return code
    _say("smoke run succeeded: submitting the job")
    return EXIT_OK


def cmd_check(args: argparse.Namespace, app: Any) -> int:
    """``jupyter promote check NOTEBOOK``: exit 0 when there is nothing to report, 1 when there is."""
    from ..preflight import format_findings

    findings = _notebook_findings(args.notebook, args.gpus, app)
    if args.json:
        print(json.dumps([f.to_json() for f in findings], indent=2))
    elif findings:
        for line in format_findings(findings):
            print(line)
        print(f"{args.notebook}: {len(findings)} finding(s); the job runs the notebook top to bottom in a fresh kernel")
    else:
        print(f"{args.notebook}: nothing to report")
    return 1 if findings else EXIT_OK


def _resource_options(parser: argparse.ArgumentParser, time_help: str) -> None:
    parser.add_argument("--cpus")
    parser.add_argument("--memory")
    parser.add_argument("--gpus")
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


def _image_request(args: argparse.Namespace) -> Any:
    from ..launch.pipeline import ImageRequest

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


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# ---- commands ------------------------------------------------------------------------------------
def cmd_freeze(args: argparse.Namespace, app: Any) -> int:
    from ..freeze import freeze, kernel_interpreter, python_interpreter

    interpreter = python_interpreter(args.python) if args.python else kernel_interpreter(args.kernel or "python3")
    env = freeze(interpreter, args.out, env_allowlist=tuple(app.settings.env_allowlist))
    for warning in env.lock["warnings"]:
        _say(f"warning: {warning}")
    _say(f"froze {interpreter.display}: {env.summary()} -> {env.lock_path}")
    if args.json:
        print(json.dumps(env.lock, indent=2, sort_keys=True))
    return EXIT_OK


def cmd_convert(args: argparse.Namespace, app: Any) -> int:
    from ..job.convert import convert, write_notebook
    from ..job.notebook import kernel_of, read_notebook

    nb = read_notebook(args.notebook)
    kernel_of(nb, args.notebook)
    out = Path(args.out)
    if not out.parent.is_dir():
        raise UsageError(f"-o {args.out}: directory {out.parent} does not exist", subject=args.out)
    result = convert(nb, monitor_settings(args), deterministic=args.deterministic)
    if not result.has_parameters_cell:
        _say(f"note: {args.notebook} has no cell tagged 'parameters'; papermill will inject parameters at the top")
    write_notebook(result.notebook, str(out))
    injected = 3 if result.has_parameters_cell else 2  # setup, (seed,) finish
    _say(f"wrote {out} ({result.code_cells} code cells, {injected} of them injected)")
    return EXIT_OK


def cmd_run(args: argparse.Namespace, app: Any) -> int:
    from ..job.parameters import collect_parameters
    from ..launch.pipeline import Pipeline, PromoteRequest
    from ..targets import target_class
    from .progress import TerminalProgress

    if args.replicas is not None or args.seeds is not None:
        if args.contention:
            raise UsageError("--contention with --replicas/--seeds: one at a time", subject="contention")
        return _run_replicas(args, app)
    if args.contention:
        return _run_contention(args, app)

    settings = app.settings
    target_name = args.target or settings.default_target
    target = target_class(target_name)(config=app.config)
    ok, why = target.available()
    if not ok:
        raise TargetUnavailable(f"--target {target_name}: unavailable: {why}", subject=target_name)
    _checked_kernel(args.kernel)
    _preflight(args, app)
    if args.smoke and _smoke_run(args, app) != EXIT_OK:
        return EXIT_JOB_FAILED
    request = PromoteRequest(
        notebook=args.notebook,
        kernel=args.kernel,
        target=target_name,
        parameters=collect_parameters(args.parameters, args.parameters_raw, args.parameters_yaml, args.parameters_file),
        resources=settings.resources({"cpus": args.cpus, "memory": args.memory, "gpus": args.gpus, "time": args.time}),
        monitor=monitor_settings(args, settings.monitor_defaults),
        deterministic=args.deterministic,
        out=args.out,
        image=_image_request(args) if target.needs_image else None,
    )
    for warning in target.check_resources(request.resources):
        _say(f"warning: {warning}")
    progress = TerminalProgress()
    builder = None
    if target.needs_image:
        from ..image import ImageBuilder

        builder = ImageBuilder(config=app.config)
    pipeline = Pipeline(
        settings.runs_dir,
        tuple(settings.env_allowlist),
        settings.poll_interval,
        image_builder=builder,
        on_line=lambda line: progress.note(f"  {line}"),
        parity_tolerance=settings.parity_tolerance,
    )
    prepared = pipeline.prepare(request)
    progress.note(f"promoting {args.notebook} to {target.display_name}")
    for note in pipeline.notes:
        progress.note(f"  note: {note}")
    progress.note(f"  environment: {prepared.env.summary()}")
    if prepared.record.image:
        progress.note(
            f"  image: {prepared.record.image['ref']}" + (" (built)" if prepared.record.image["built"] else "")
        )
    if not prepared.has_parameters_cell:
        progress.note(
            f"  note: {args.notebook} has no cell tagged 'parameters'; parameters go at the top (papermill's rule)"
        )
    _warn_unknown_parameters(args.notebook, request.parameters, progress)
    progress.note(f"  run directory: {prepared.run.path}")
    view = asyncio.run(_submit_and_follow(pipeline, prepared, target, progress))
    progress.close()
    record = prepared.run.read()
    if view.state is JobState.SUCCEEDED:
        summary = f"succeeded in {_duration(record)}"
        if view.alerts:
            summary += f" with {len(view.alerts)} alert(s)"
    else:
        summary = f"{view.state.value} ({view.reason}): {view.message}"
    progress.note(f"job {record.id} {summary}")
    progress.note(f"  output: {prepared.run.output_notebook}")
    if record.artifacts:
        size = sum(a["size"] for a in record.artifacts)
        progress.note(f"  artifacts: {len(record.artifacts)} file(s), {size} bytes, in {prepared.run.work_dir}")
    parity_failed = _show_parity(prepared.run.path, record, progress.note)
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True))
    return EXIT_PARITY_FAILED if parity_failed and view.state is JobState.SUCCEEDED else _EXIT_BY_STATE[view.state]


def _show_parity(run_dir: Path, record: Any, say: Any) -> bool:
    """Print the parity report of a run that has a baseline; whether parity failed."""
    from ..analysis.parity import REPORT_FILE

    if not record.parity or record.parity["verdict"] == "no baseline":
        return False
    report = run_dir / REPORT_FILE
    for line in report.read_text().splitlines() if report.exists() else [f"parity: {record.parity['verdict']}"]:
        say(line)
    return record.parity["verdict"] != "pass"


def cmd_compare(args: argparse.Namespace, app: Any) -> int:
    import tempfile

    from ..analysis import parity
    from ..events import JobView
    from ..freeze import LOCK_FILE, freeze, kernel_interpreter, read_lock
    from ..job.notebook import kernel_of, read_notebook
    from ..runtime.events import read_events

    nb = read_notebook(args.notebook)
    runs = []
    for path in args.runs:
        run = Path(path)
        if not (run / "job.json").is_file() or not (run / "env" / LOCK_FILE).is_file():
            raise UsageError(f"{path}: not a run directory (no job.json and env/{LOCK_FILE})", subject=path)
        runs.append(run)
    # the notebook kernel's environment as it is now, against the one each run was made from
    with tempfile.TemporaryDirectory(prefix="promote-compare-") as tmp:
        env = freeze(kernel_interpreter(kernel_of(nb, args.notebook)), os.path.join(tmp, "env"),
                     env_allowlist=tuple(app.settings.env_allowlist))  # fmt: skip
        notebook_lock = env.lock
    failed = False
    results = []
    for run in runs:
        view = JobView().fold(read_events(str(run / "events.jsonl")))
        job_lock = parity.job_environment(run, read_lock(run / "env") or {})
        result = parity.judge(nb, dict(view.metrics), notebook_lock, job_lock, app.settings.parity_tolerance)
        text = parity.write(run, result, f"{run.name} against {os.path.basename(args.notebook)}")
        failed |= result["verdict"] != "pass"
        results.append({"run": str(run), **result})
        if not args.json:
            print(text, end="")
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    return EXIT_PARITY_FAILED if failed else EXIT_OK


def sweep_sets(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The parameter sets of ``sweep``: the -p grid, or the sets file, never both."""
    from ..job.parameters import resolve_type
    from ..job.sweep import expand

    if args.sets_file and args.parameters:
        raise UsageError("-f and -p: give the sets in a file or as a grid, not both", subject="sweep")
    if args.sets_file:
        import yaml

        try:
            with open(args.sets_file, encoding="utf-8") as f:
                spec = yaml.safe_load(f)
        except OSError as exc:
            raise UsageError(f"-f {args.sets_file}: {exc.strerror}", subject=args.sets_file) from None
        except yaml.YAMLError:
            raise UsageError(f"-f {args.sets_file}: not valid YAML", subject=args.sets_file) from None
        return expand(spec, origin=f"-f {args.sets_file}")
    grid: dict[str, list[Any]] = {}
    for item in args.parameters:
        if len(item) < 2:
            raise UsageError(f"-p {item[0]}: give the parameter's values after its name", subject=item[0])
        grid[item[0]] = [resolve_type(v) for v in item[1:]]
    if not grid:
        raise UsageError("sweep: nothing to vary (give -p NAME V1 V2 ... or -f SETS.yaml)", subject="sweep")
    return expand(grid, origin="-p")


def _run_contention(args: argparse.Namespace, app: Any) -> int:
    """``run --contention SPEC``: the job alone, then the same job beside the stress workload."""
    from ..analysis.contention import Stress, StressWorkload, report

    stress = Stress.parse(args.contention)
    base = Path(args.out) if args.out else Path(app.settings.runs_dir) / (
        f"{Path(args.notebook).stem}-contention-{time.strftime('%Y%m%d-%H%M%S')}")  # fmt: skip
    if base.exists() and any(base.iterdir()):
        raise UsageError(f"--out {base}: already exists and is not empty", subject=str(base))
    args.contention = None
    as_json, args.json = args.json, False
    _say(f"contention: the job alone first, then beside {stress.describe()}")
    args.out = str(base / "isolated")
    first = cmd_run(args, app)
    args.out = str(base / "contended")
    with StressWorkload(stress) as workload:
        second = cmd_run(args, app)
    result, text = report(base / "isolated", base / "contended", stress, workload.held_bytes)
    for line in text.rstrip("\n").splitlines():
        _say(line)
    if as_json:
        print(json.dumps(result, indent=2, sort_keys=True))
    return second if second != EXIT_OK else first


def _run_replicas(args: argparse.Namespace, app: Any) -> int:
    """``run --replicas N [--seeds S...]``: the same job N times (per seed), as a sweep of identical sets."""
    from ..job.parameters import collect_parameters

    replicas = args.replicas if args.replicas is not None else 1
    if replicas < 1:
        raise UsageError(f"--replicas {replicas}: must be at least 1", subject="replicas")
    base = collect_parameters(args.parameters, args.parameters_raw, args.parameters_yaml, args.parameters_file)
    seeds = args.seeds if args.seeds is not None else [None]
    sets = [{**base, **({"seed": s} if s is not None else {})} for s in seeds for _ in range(replicas)]
    args.max_parallel = None
    return cmd_sweep(args, app, sets, then=_judge_replicas)


def _judge_replicas(sweep_path: Path, summary: dict[str, Any], app: Any) -> int | None:
    """Parity of each replica with the notebook's baseline. With two seeds or more, a metric beyond its
    tolerance but within the seed-variance band passes (and the report says so). Exit 3 when one fails."""
    from ..analysis import parity
    from ..freeze import read_lock
    from ..job.notebook import read_notebook

    source = read_notebook(summary["notebook"])
    if not parity.baseline_of(source)["metrics"]:
        return None
    succeeded = [t for t in summary["tasks"] if t["state"] == "succeeded"]
    band = parity.seed_band([(t["parameters"], t["metrics"]) for t in succeeded])
    notebook_lock = read_lock(sweep_path / "env") or {}
    failed = []
    for task in succeeded:
        run = sweep_path / "tasks" / str(task["index"])
        result = parity.judge(source, task["metrics"], notebook_lock, parity.job_environment(run, notebook_lock),
                              app.settings.parity_tolerance, band)  # fmt: skip
        parity.write(run, result, f"task {task['index']} of sweep {summary['id']}")
        if result["verdict"] == "fail":
            failed.append(task["index"])
        banded = [r["metric"] for r in result["metrics"] if r.get("within_seed_band")]
        _say(f"  parity of task {task['index']}: {result['verdict']}"
             + (f" ({', '.join(banded)} within the seed-variance band)" if banded else ""))  # fmt: skip
    if band:
        _say("  seed-variance band (2 std of the per-seed means): "
             + ", ".join(f"{name} ±{width:.3g}" for name, width in sorted(band.items())))  # fmt: skip
    return EXIT_PARITY_FAILED if failed else None


def cmd_sweep(args: argparse.Namespace, app: Any, sets: list[dict[str, Any]] | None = None, then: Any = None) -> int:
    from ..launch.pipeline import Pipeline, PromoteRequest
    from ..launch.sweep import prepare_sweep, run_sweep, summarise
    from ..targets import target_class

    settings = app.settings
    sets = sets if sets is not None else sweep_sets(args)
    if args.max_parallel is not None and args.max_parallel < 1:
        raise UsageError(f"--max-parallel {args.max_parallel}: must be at least 1", subject="max_parallel")
    target_name = args.target or settings.default_target
    target = target_class(target_name)(config=app.config)
    ok, why = target.available()
    if not ok:
        raise TargetUnavailable(f"--target {target_name}: unavailable: {why}", subject=target_name)
    _checked_kernel(args.kernel)
    _preflight(args, app)
    if args.smoke and _smoke_run(args, app) != EXIT_OK:
        return EXIT_JOB_FAILED
    request = PromoteRequest(
        notebook=args.notebook, kernel=args.kernel, target=target_name,
        resources=settings.resources({"cpus": args.cpus, "memory": args.memory, "gpus": args.gpus, "time": args.time}),
        monitor=monitor_settings(args, settings.monitor_defaults), deterministic=args.deterministic, out=args.out,
        image=_image_request(args) if target.needs_image else None,
    )  # fmt: skip
    for warning in target.check_resources(request.resources):
        _say(f"warning: {warning}")
    builder = None
    if target.needs_image:
        from ..image import ImageBuilder

        builder = ImageBuilder(config=app.config)
    pipeline = Pipeline(settings.runs_dir, tuple(settings.env_allowlist), settings.poll_interval, image_builder=builder,
                        on_line=lambda line: _say(f"  {line}"), parity_tolerance=settings.parity_tolerance)  # fmt: skip
    sweep = prepare_sweep(pipeline, request, sets, args.max_parallel or target.default_max_parallel())
    _say(f"sweep {sweep.id}: {len(sets)} tasks of {args.notebook} on {target.display_name} -> {sweep.path}")
    done = [0]

    def on_done(task: Any, view: Any) -> None:
        done[0] += 1
        from ..job.sweep import label

        _say(f"  [{done[0]}/{len(sets)}] task {task.record.sweep['index']} ({label(task.record.parameters)}): "
             f"{view.state.value}" + (f" ({view.reason})" if view.reason and view.state is not JobState.SUCCEEDED else ""))  # fmt: skip

    async def go() -> list[Any]:
        loop = asyncio.get_running_loop()
        work = asyncio.ensure_future(run_sweep(pipeline, sweep, target, on_done))
        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, work.cancel)
        try:
            return await work
        except asyncio.CancelledError:
            _say("cancelling the sweep (Ctrl-C) ...")
            for task in sweep.tasks:
                if task.record.handle:
                    await target.cancel(task.record.handle)
            return []

    views = asyncio.run(go())
    summary = summarise(sweep.path)
    _print_sweep(summary)
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    if not views:
        return EXIT_CANCELLED
    if not all(v.state is JobState.SUCCEEDED for v in views):
        return EXIT_JOB_FAILED
    return (then(sweep.path, summary, app) if then else None) or EXIT_OK


def _print_sweep(summary: dict[str, Any], say: Any = _say) -> None:
    states = ", ".join(f"{n} {s}" for s, n in sorted(summary["states"].items()))
    say(f"sweep {summary['id']}: {summary['size']} tasks: {states}")
    for name, ends in sorted(summary["metrics"].items()):
        low, high = ends["min"], ends["max"]
        say(f"  {name}: min {low['value']:g} (task {low['index']}), max {high['value']:g} (task {high['index']}), "
            f"std {ends['std']:.3g} over {ends['tasks']} tasks")  # fmt: skip
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
            say(f"  replicas {tasks}: first diverge at step {where['step']} (report {where['report']}): "
                f"{where['metric'] or where.get('problem')} = {values}")  # fmt: skip


def cmd_build(args: argparse.Namespace, app: Any) -> int:
    import tempfile

    from ..freeze import freeze, kernel_interpreter, python_interpreter
    from ..image import ImageBuilder

    interpreter = python_interpreter(args.python) if args.python else kernel_interpreter(args.kernel or "python3")
    builder = ImageBuilder(config=app.config)
    with tempfile.TemporaryDirectory(prefix="promote-build-") as tmp:
        env = freeze(interpreter, os.path.join(tmp, "env"), env_allowlist=tuple(app.settings.env_allowlist))
        _say(f"froze {interpreter.display}: {env.summary()}")
        if args.dry_run:
            plan = builder.plan(env, base_image=args.base_image, registry=args.registry)
            print(f"tag: {plan.tag}\nbase image: {plan.base_image}\nbuild context ({plan.context}):")
            for name in plan.files:
                print(f"  {name}")
            print("Dockerfile:\n" + plan.dockerfile, end="")
            return EXIT_OK
        ref = builder.ensure(env, interpreter, **dataclasses.asdict(_image_request(args)), on_line=_say)
    _say(f"image {ref.ref}" + (f" ({ref.digest})" if ref.digest else ""))
    if args.json:
        print(json.dumps(ref.to_json(), indent=2, sort_keys=True))
    return EXIT_OK


def _duration(record: Any) -> str:
    if record.started_at and record.finished_at:
        return f"{record.finished_at - record.started_at:.1f} s"
    return "?"


def _warn_unknown_parameters(notebook: str, params: dict[str, Any], progress: Any) -> None:
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


async def _submit_and_follow(pipeline: Any, prepared: Any, target: Any, progress: Any) -> Any:
    loop = asyncio.get_running_loop()
    interrupted = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, interrupted.set)
    try:
        await pipeline.submit(prepared, target)
        follow = asyncio.create_task(pipeline.follow(prepared, target, progress.on_event))
        stop = asyncio.create_task(interrupted.wait())
        done, _ = await asyncio.wait({follow, stop}, return_when=asyncio.FIRST_COMPLETED)
        if follow in done:
            stop.cancel()
            return follow.result()
        progress.note("cancelling (Ctrl-C): stopping the job and saving its partial output ...")
        await pipeline.cancel(prepared, target)
        try:
            return await asyncio.wait_for(follow, timeout=60)
        except asyncio.TimeoutError:
            prepared.log.emit(
                "status", state="cancelled", reason="cancelled", message="cancelled (Ctrl-C)", source="cli"
            )
            return await pipeline.follow(prepared, target, progress.on_event)
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)  # which resets it to the default: ours again, for what follows
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _interrupt)


def _find_run(job: str, runs_dir: str) -> Any:
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


def reconcile(run: Any, app: Any) -> Any:
    """job.json brought up to date with the job's events and, when still unfinished, its target."""
    from ..events import JobView
    from ..runtime.events import EventLog, read_events
    from ..targets import target_class

    record = run.read()
    view = JobView().fold(read_events(str(run.events)))
    if not view.state.final and record.handle:
        target = target_class(record.target)(config=app.config)
        status = asyncio.run(target.poll({record.id: record.handle}))[record.id]
        if status.state is None or status.state.final:
            EventLog(str(run.events), record.id).emit(
                "status",
                state=(status.state or JobState.FAILED).value,
                reason=status.reason or "lost",
                message=status.message or "the job is gone and never reported how it ended",
                source="status",
            )
            view = JobView().fold(read_events(str(run.events)))
    if view.seq:
        view.update(record)
        run.write(record)
    return record, view


def cmd_status(args: argparse.Namespace, app: Any) -> int:
    from ..rundir import RunDir

    if args.job is None:
        root = Path(app.settings.runs_dir)
        runs = [RunDir(p) for p in sorted(root.iterdir())] if root.is_dir() else []
        rows = [reconcile(r, app)[0] for r in runs if r.exists()]
        if args.json:
            print(json.dumps([r.to_json() for r in rows], indent=2, sort_keys=True))
        else:
            for r in rows[-20:]:
                started = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
                print(
                    f"{r.id}  {r.state.value:<10} {r.reason or '':<8} {r.target:<8} {started}  {os.path.basename(r.notebook)}"
                )
        return EXIT_OK
    if os.path.isfile(os.path.join(args.job, "sweep.json")):
        from ..launch.sweep import summarise

        summary = summarise(Path(args.job))
        if args.json:
            print(json.dumps(summary, indent=2, sort_keys=True))
        else:
            _print_sweep(summary, print)
        return EXIT_OK
    run = _find_run(args.job, app.settings.runs_dir)
    record, view = reconcile(run, app)
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
    if record.artifacts:
        print(f"  artifacts ({len(record.artifacts)}, in {run.work_dir}):")
        for item in record.artifacts:
            print(f"    {item['path']}  {item['size']} bytes")
    return EXIT_OK


def cmd_logs(args: argparse.Namespace, app: Any) -> int:
    from ..events import JobView
    from ..runtime.events import read_events

    run = _find_run(args.job, app.settings.runs_dir)
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
        if not args.follow or JobView().fold(read_events(str(run.events))).state.final:
            if args.follow and data:
                continue
            return EXIT_OK
        time.sleep(0.5)


COMMANDS = {
    "check": cmd_check,
    "compare": cmd_compare,
    "sweep": cmd_sweep,
    "build": cmd_build,
    "freeze": cmd_freeze,
    "convert": cmd_convert,
    "run": cmd_run,
    "status": cmd_status,
    "logs": cmd_logs,
}


def _config_help(own_args: list[str], config_args: list[str]) -> int:
    """``--generate-config`` (one file for the CLI and the server extension) and ``--help-all``."""
    from ..config import load_config

    app = load_config(config_args)
    if "--help-all" in own_args:
        app.print_help(classes=True)
        return EXIT_OK
    app.generate_config = True
    app.answer_yes = "-y" in own_args or "--yes" in own_args
    app.write_default_config()
    return EXIT_OK


#: Ctrl-C, and what CI systems, `timeout` and a batch system's end send (SIGTERM) or a closed terminal (SIGHUP).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``jupyter-promote`` / ``jupyter promote``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # SIGTERM (CI systems, `timeout`, a batch system's end) and SIGHUP (a closed terminal) stop a job as Ctrl-C
    # does: what was started is cancelled and the record settled, never left pending
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _interrupt)
    config_args = [a for a in argv if _CONFIG_FLAG.match(a)]
    own_args = [a for a in argv if not _CONFIG_FLAG.match(a)]
    try:
        from ..config import PromoteSettings, load_config

        if "--generate-config" in own_args or "--help-all" in own_args:
            return _config_help(own_args, config_args)
        args = build_parser().parse_args(own_args)

        app = load_config(config_args)
        app.settings = PromoteSettings(config=app.config)
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
