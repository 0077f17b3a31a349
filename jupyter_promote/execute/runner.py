"""The job runner: ``python -m jupyter_promote.execute.runner RUN_DIR``, started by a target.

It executes ``job.ipynb`` with papermill's Python API and the ``promote`` engine, supervises the kernel
(time limit, cancellation on SIGTERM, kernels that stop answering, monitor decisions), and decides the
job's final state from exceptions and events, never from papermill's cell metadata. Its last event is
the final ``status``; its exit code is 0 when the job succeeded, 1 when it failed, 130 when cancelled.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from ..channel.keys import take_runner_key
from ..channel.wire import EscapingFormatter
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.checkpoints import CHECKPOINT_ENV
from ..runtime.events import EventLog, EventTail
from ..runtime.masking import mask
from . import attempts, early_kernel
from .job_data import JobData
from .masked_output import mask_notebook_writes, masked_streams
from .outcome import outcome
from .output import finish_output
from .papermill_import import import_papermill
from .supervisor import Pulse, Supervisor
from .workdir import StagedInputs, artifacts, stage

#: Seconds a job kernel may take to start (``PROMOTE_KERNEL_START_TIMEOUT`` overrides).
KERNEL_START_TIMEOUT_S = 300.0
#: Kernel starts tried before the job fails (only while no cell has run).
KERNEL_START_ATTEMPTS = 2


def _kernel_name(record: JobRecord) -> str:
    """The kernel the job runs on: the environment image's (``JUPYTER_PROMOTE_KERNEL``), else the record's."""
    return os.environ.get("JUPYTER_PROMOTE_KERNEL") or record.kernel


def _start_failure(exc: BaseException) -> bool:
    text = str(exc)
    return text.startswith("Kernel died before replying to kernel_info") or text.startswith("Kernel didn't respond")


def _record_environment(run: RunDir, kernel: str, events: list[dict[str, Any]]) -> None:
    """``observed_env.json``: the kernel's interpreter introspected here, where the job ran (node, image),
    with the torch settings the kernel reported in force at its end (in ``events``). A failure only warns."""
    import json
    import tempfile

    from ..freeze import OBSERVED_FILE, kernel_interpreter, observe

    try:
        lock = observe(kernel_interpreter(kernel))
        finished = [e for e in events if e["type"] == "heartbeat" and e.get("finished")]
        lock["runtime"] = {"torch": finished[-1].get("torch") if finished else None}
        fd, tmp = tempfile.mkstemp(prefix=".observed-", dir=run.path)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(lock, f, indent=1, sort_keys=True)
        os.replace(tmp, run.path / OBSERVED_FILE)
    except Exception as exc:
        print(f"jupyter-promote: could not record the job's environment: {exc}", file=sys.stderr, flush=True)


_OVERLAY_PATH = (
    "\n# jupyter-promote's runtime overlay: the installed package's other modules stay importable\n"
    "__path__ = __import__('pkgutil').extend_path(__path__, __name__)\n"
)


def _kernel_environment(run: RunDir, record: JobRecord) -> None:
    """Environment for the kernel (inherited through papermill): event file, job id, runtime overlay."""
    overlay = run.runtime_dir / "jupyter_promote"
    package = Path(__file__).resolve().parent.parent
    if not overlay.exists():
        shutil.copytree(package / "runtime", overlay / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
        # the overlay is a part of the package, not all of it: where jupyter-promote is installed for the
        # kernel's interpreter (papermill's entry point, `!papermill ...` in a cell), the rest is found there
        source = (package / "__init__.py").read_text(encoding="utf-8")
        (overlay / "__init__.py").write_text(source + _OVERLAY_PATH, encoding="utf-8")
        shutil.copy2(package / "_version.py", overlay / "_version.py")
    os.environ["PROMOTE_RUN_DIR"] = str(run.path)
    os.environ["PROMOTE_EVENTS"] = str(run.events)
    os.environ["PROMOTE_JOB_ID"] = record.id
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = str(run.runtime_dir) + (os.pathsep + path if path else "")


def _working_dir(run: RunDir, record: JobRecord) -> StagedInputs:
    """``RUN_DIR/work``, mirroring the notebook's folder (see :mod:`.workdir`): the job's cwd on every target.
    Where the job runs without the submitter's filesystem, the folder came with it (``PROMOTE_INPUTS``)."""
    inputs = os.environ.get("PROMOTE_INPUTS")
    if inputs:
        return stage(inputs, run.work_dir)
    return stage(record.inputs_folder, run.work_dir, exclude=(str(run.path),))


def _report_files(log: EventLog, staged: StagedInputs | None) -> None:
    """The job's artifacts (an ``artifacts`` event) and any input it wrote into (an alert)."""
    if staged is None:
        return
    try:
        log.emit("artifacts", files=artifacts(staged.work), source="runner")
        written = staged.written()
    except OSError as exc:
        print(f"jupyter-promote: could not list the job's files: {exc}", file=sys.stderr, flush=True)
        return
    if written:  # who changed them is not known (writes by other processes are left out): say what changed
        shown = ", ".join(written[:5]) + (f" and {len(written) - 5} more" if len(written) > 5 else "")
        message = (
            f"{shown} beside the notebook changed while the job ran; if the job wrote there, it wrote into your "
            "files (its working directory links to them): write new files instead, they are kept in the run directory"
        )
        log.emit("alert", kind="input_written", action="alert", source="runner", files=written, message=message)


def _log_to_stderr() -> None:
    """Cell outputs (papermill's log_output) and papermill's own messages go to the job log."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(EscapingFormatter("%(message)s"))  # a printed line never reads as a channel record
    papermill_log = logging.getLogger("papermill")
    papermill_log.addHandler(handler)
    papermill_log.setLevel(logging.INFO)


def run(run_dir: str) -> int:
    _log_to_stderr()
    run = RunDir(run_dir)
    record = run.read()
    take_runner_key(run.path)  # the kernel never holds the key: statuses it writes never count
    log = EventLog(str(run.events), record.id)
    log.emit("status", state="running", source="runner", pid=os.getpid())  # as soon as it can: before the setup
    _kernel_environment(run, record)
    data = JobData(record)  # before the attempt names its checkpoint folder: whether the target gave one
    over = attempts.begin(run, record, log)
    if over is not None:  # Slurm ran it again more often than it may be
        log.emit("status", state="failed", reason="preempted", message=over, source="runner")
        return 1
    supervisor = Supervisor(run, record, log)
    signal.signal(signal.SIGTERM, lambda *_: supervisor.stop("cancelled"))
    signal.signal(signal.SIGINT, lambda *_: supervisor.stop("cancelled"))
    with masked_streams(), Pulse(log, record.monitor.heartbeat_s):
        state, reason, message = _execute(run, record, log, supervisor, data)
        if message:
            print(f"jupyter-promote: job {state}: {mask(message)}", file=sys.stderr, flush=True)
    if state == "cancelled" and attempts.requeued_by_slurm():  # not a cancel: Slurm runs the job again
        text = "requeued by Slurm while running; this attempt ends here and Slurm runs the job again"
        log.emit("status", state="queued", reason="requeued", message=text, source="runner")
        return 0
    log.emit("status", state=state, reason=reason, message=message, source="runner")
    return {"succeeded": 0, "cancelled": 130}.get(state, 1)


def _execute(
    run: RunDir, record: JobRecord, log: EventLog, supervisor: Supervisor, data: JobData
) -> tuple[str, str | None, str | None]:
    """Execute the job notebook under ``supervisor`` and classify how it ended: (state, reason, message)."""
    error: BaseException | None = None
    staged: StagedInputs | None = None
    kernel: Any | None = None
    try:
        staged = _working_dir(run, record)
        data.fetch_inputs()  # named to the kernel in its environment: before it starts
        data.resume_checkpoints(Path(os.environ[CHECKPOINT_ENV]))
        attempts.say_how_it_starts(log)
        # the kernel boots while papermill loads (papermill would import first, then start it)
        kernel = early_kernel.start(_kernel_name(record), str(staged.work))
        papermill = import_papermill()  # loads the "promote" entry point, i.e. .papermill_engine
        mask_notebook_writes(str(run.output_notebook))
        from papermill.engines import papermill_engines

        from . import papermill_engine as engine

        papermill_engines.register("promote", engine.PromoteEngine)  # also an entry point; explicit here
        supervisor.start()
        _papermill(run, record, log, supervisor, staged, papermill.execute_notebook, engine, kernel)
    except BaseException as exc:  # every way an execution ends is classified below
        error = exc
    finally:
        supervisor.close()
        early_kernel.shut_down(kernel)  # nbclient stops the kernel it ran; this one only if it never did
    _report_files(log, staged)
    data.finish(staged.work if staged is not None else None, Path(os.environ[CHECKPOINT_ENV]))
    # a monitor decision may have been written just before the kernel went down
    events = EventTail(str(run.events)).read()
    for event in events:
        if event["type"] == "alert" and event.get("action") == "fail" and supervisor.fatal is None:
            supervisor.fatal = event
    tracker = getattr(sys.modules.get(f"{__package__}.papermill_engine"), "active_tracker", None)
    state, reason, message = outcome(error, supervisor, tracker)
    stopped = tracker.current if tracker is not None and state != "succeeded" else None
    stopped_as = {"timeout": "TimeoutError", "cancelled": "JobCancelled", "killed": "DeadKernelError"}
    finish_output(
        run.output_notebook,
        stopped_index=stopped,
        ename=stopped_as.get(reason or "", "JobStopped"),
        message=message or "",
    )
    if state == "succeeded":  # before the final status: whoever judges parity on it reads this record
        _record_environment(run, _kernel_name(record), events)
    return state, reason, message


def _papermill(
    run: RunDir,
    record: JobRecord,
    log: EventLog,
    supervisor: Supervisor,
    staged: StagedInputs,
    execute_notebook: Callable[..., Any],
    engine: ModuleType,
    kernel: Any | None = None,
) -> None:
    """papermill's run of the job notebook with the promote engine, first on ``kernel`` (booting) when given;
    a kernel that dies before its first reply is started once more by nbclient, with an alert saying so."""
    for attempt in range(1, KERNEL_START_ATTEMPTS + 1):
        given = {"km": kernel} if kernel is not None and attempt == 1 else {}
        try:
            execute_notebook(
                str(run.job_notebook),
                str(run.output_notebook),
                parameters=record.parameters,
                engine_name="promote",
                kernel_name=_kernel_name(record),
                cwd=str(staged.work),
                log_output=True,
                progress_bar=False,
                request_save_on_cell_execute=True,
                # papermill's 60 s is short for a busy cluster node (image layers, cold caches, neighbours)
                start_timeout=float(os.environ.get("PROMOTE_KERNEL_START_TIMEOUT", KERNEL_START_TIMEOUT_S)),
                **given,
            )
            break
        except RuntimeError as exc:
            early_kernel.shut_down(given.get("km"))
            # a kernel that dies before its first reply (a port taken by a neighbour between choosing and
            # binding it, a node under load) ran nothing yet: start it once more
            tracker = engine.active_tracker
            fresh = tracker is None or tracker.started is None
            if attempt == KERNEL_START_ATTEMPTS or not fresh or supervisor.stop_reason or not _start_failure(exc):
                raise
            log.emit(
                "alert",
                kind="kernel_start",
                action="retry",
                source="runner",
                message=f"the kernel did not start ({exc}); starting it again",
            )


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m jupyter_promote.execute.runner RUN_DIR", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(run(args[0]))


if __name__ == "__main__":
    main()
