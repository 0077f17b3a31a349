"""How a job execution ended, classified: (state, reason, message), never from papermill's cell metadata."""

from __future__ import annotations

from typing import Any

from .supervisor import Supervisor

_MEMORY_ERRORS = {"OutOfMemoryError", "MemoryError"}


def _check_failures() -> dict[str, str]:
    """The exception each monitor check raises into the user's code, by name -> the check's declared reason:
    a job stopped by one whose alert never reached the events (or raised by the notebook itself) says why."""
    from ..runtime.checks import CheckFailure, load_checks

    checks = load_checks().checks
    return {c.failure.__name__: c.reason for c in checks if c.reason and c.failure is not CheckFailure}


def outcome(error: BaseException | None, supervisor: Supervisor, tracker: Any) -> tuple[str, str | None, str | None]:
    """(state, reason, message) of a finished execution. A cell is named as the user counts the notebook's
    own code cells (:mod:`jupyter_promote.job.cells`), with its first line quoted."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    running = tracker.current if tracker is not None else None
    where = f" in {tracker.describe(running)}" if running is not None else ""
    if supervisor.stop_reason == "cancelled":
        return "cancelled", "cancelled", f"cancelled{where}"
    if supervisor.stop_reason == "timeout":
        return "failed", "timeout", f"ran past its time limit{where}"
    if error is None:
        return "succeeded", None, None
    fatal = supervisor.fatal
    if fatal is not None:
        # a monitor check that fails a job says why in its alert (its declared reason); the runner's own don't
        return "failed", str(fatal.get("reason") or fatal["kind"]), fatal["message"]
    if isinstance(error, PapermillExecutionError):
        ename, evalue = error.ename, str(error.evalue or "")
        last = tracker.last_error if tracker is not None else None
        if ename == "CellExecutionError" and not evalue and last and last.get("index") == error.cell_index:
            # the cell failed without an error output (IPython's UsageError, for one): the reply says why
            ename, evalue = str(last.get("ename") or ename), str(last.get("evalue") or "")
        label = tracker.describe(error.cell_index) if tracker is not None else f"the cell at index {error.cell_index}"
        message = f"{label} failed: {ename}: {evalue}".rstrip(": ")
        if ename in _MEMORY_ERRORS:
            return "failed", "oom", message
        return "failed", _check_failures().get(ename, "error"), message
    if isinstance(error, DeadKernelError):
        return "failed", "killed", f"the kernel died{where} (killed by a signal or out of memory)"
    if isinstance(error, CellTimeoutError):
        return "failed", "timeout", f"a cell timed out{where}"
    if isinstance(error, KeyboardInterrupt):
        return "cancelled", "cancelled", "cancelled before the kernel started"
    first = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return "failed", "error", f"{type(error).__name__}: {first}".rstrip(": ")
