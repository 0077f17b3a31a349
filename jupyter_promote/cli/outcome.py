"""Following a job on the terminal and saying how it ended: shared by ``run``, a group's run and ``attach``.

Its progress as events come (:class:`ProgressHooks`), Ctrl-C (and SIGTERM/SIGHUP) as a cancel
(:func:`until_stopped`), and the last lines: output, artifacts, parity and how the job ended, with the
documented exit code (:func:`exit_code`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..errors import EXIT_CANCELLED, EXIT_JOB_FAILED, EXIT_OK, EXIT_PARITY_FAILED
from ..events import JobView
from ..launch.lifecycle import JobHooks
from ..launch.prepared import Prepared
from ..models import JobRecord, JobState
from ..rundir import RunDir
from .progress import TerminalProgress
from .signals import STOP_SIGNALS, interrupt

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


def exit_code(view: JobView, parity_failed: bool) -> int:
    """The documented exit code of a job that ended so."""
    return EXIT_PARITY_FAILED if parity_failed and view.state is JobState.SUCCEEDED else _EXIT_BY_STATE[view.state]


def show_end(record: JobRecord, view: JobView, prepared: Prepared, say: Callable[[str], None]) -> bool:
    """How the job ended, its output, artifacts and parity; a failed cell last. Whether parity failed."""
    say(f"  output: {prepared.run.output_notebook}")
    if prepared.run.report.is_file():
        say(f"  report: {prepared.run.report}")
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


async def until_stopped(work: Awaitable[Any], cancel: Callable[[], Awaitable[None]], say: Callable[[str], None]) -> Any:
    """Run ``work``; Ctrl-C, SIGTERM or SIGHUP cancel it (what was started is stopped and settled).

    None when the cancel was not confirmed within a minute.
    """
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
