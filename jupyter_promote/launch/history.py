"""A scheduled job judged against its schedule's own runs as it ends (:mod:`..analysis.drift`): ``drift.json``
in its run directory, a summary in its record (``JobRecord.drift``), and one ``drift`` alert per metric that
drifted and one for an environment that changed.

The schedule's runs come from the door that followed the job (:meth:`.lifecycle.JobHooks.schedule_history`):
the server reads them from its job store, where every job a schedule fired is a row that names the
schedule, with its record and its run directory. A door that keeps no store (the CLI, which never fires a
schedule) gives none, and nothing is judged.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis import drift
from ..analysis.parity import Tolerance
from ..models import JobRecord, JobState

if TYPE_CHECKING:
    from ..events import JobView
    from .prepared import Prepared


@dataclass
class ScheduleHistory:
    """What a door knows of the schedule that fired a job."""

    schedule: str
    #: ``once``, ``each_run``, or "" when the schedule is gone (deleted since it fired the job)
    freeze: str = ""
    #: the environment recorded when the schedule was created (freeze ``once``): {lock_hash, python, packages}
    created_with: dict[str, Any] | None = None
    #: its last succeeded runs before this job, oldest first: (record, run directory)
    runs: list[tuple[JobRecord, str | None]] = field(default_factory=list)


def lock_facts(lock: dict[str, Any] | None, lock_hash: str | None = None) -> dict[str, Any] | None:
    """What an environment drift compares of a lock: its content hash, its Python, its packages (name ->
    version, names PEP 503 normalised); with no lock, the content hash alone (``lock_hash``), else None."""
    from ..freeze.lock import canonical_name

    if lock is None:
        return {"lock_hash": lock_hash, "python": None, "packages": {}} if lock_hash else None
    return {
        "lock_hash": lock.get("content_hash") or lock_hash,
        "python": (lock.get("python") or {}).get("version"),
        "packages": {canonical_name(p["name"]): p["version"] for p in lock.get("packages", [])},
    }


def tolerances(notebook: str, configured: dict[str, Any]) -> dict[str, Tolerance]:
    """Each metric's parity tolerance as ``(abs, rel)``: the notebook's own (``promote.report(...,
    tolerance=...)``), else the configured one (``c.PromoteSettings.parity_tolerance``)."""
    from ..analysis.parity import baseline_of, parse_tolerance
    from ..errors import PromoteError
    from ..job.notebook import read_notebook

    try:
        declared = baseline_of(read_notebook(notebook))["tolerance"]
    except PromoteError:  # the notebook is gone: the configured tolerances alone
        declared = {}
    found = {}
    for name, spec in {**configured, **declared}.items():
        with contextlib.suppress(PromoteError):  # a tolerance that is not one: parity says so, drift goes on
            found[name] = parse_tolerance(name, spec)
    return found


def _before(history: ScheduleHistory) -> tuple[dict[str, Any] | None, str]:
    """The environment this run's is compared with, and what it is, in words."""
    from ..freeze import read_lock

    if history.freeze == "once" and history.created_with:
        return history.created_with, "the schedule's creation"
    if not history.runs:
        return None, "the schedule's first run"
    record, run_dir = history.runs[-1]
    lock = read_lock(Path(run_dir) / "env") if run_dir else None
    return lock_facts(lock, record.lock_hash), f"the previous run (job {record.id})"


def judge_history(
    prepared: Prepared, view: JobView, history: ScheduleHistory, configured: dict[str, Any]
) -> list[dict[str, Any]]:
    """Judge the ended job in ``prepared`` against ``history``: ``drift.json`` written, ``record.drift`` set
    (job.json written), the alerts emitted into the job's events. Returns those events, to be told as any.

    Metrics are judged for a succeeded job only (a failed one's are partial); the environment for any job
    that was frozen.
    """
    from ..freeze import read_lock

    record, run = prepared.record, prepared.run
    before, against = _before(history)
    after = lock_facts(read_lock(run.env_dir), record.lock_hash)
    environment = drift.environment_drift(before, after, against) if before is not None else None
    metrics = dict(view.metrics) if view.state is JobState.SUCCEEDED else {}
    past = [past_record.metrics for past_record, _ in history.runs]
    result = drift.judge(metrics, past, environment, tolerances(record.notebook, configured))
    result.update(schedule=history.schedule, freeze=history.freeze, jobs=[r.id for r, _ in history.runs])
    text = json.dumps(result, indent=2, sort_keys=True, allow_nan=False)
    (run.path / drift.DRIFT_FILE).write_text(text + "\n", encoding="utf-8")
    record.drift = drift.summary(result)
    run.write(record)
    events = []
    for row in result["metrics"]:
        if row["drifted"]:
            message = drift.metric_message(row)
            events.append(
                prepared.log.emit(
                    "alert", kind="drift", action="alert", source="pipeline", metric=row["metric"], message=message
                )
            )
    if environment and environment["drifted"]:
        message = drift.environment_message(environment)
        events.append(prepared.log.emit("alert", kind="drift", action="alert", source="pipeline", message=message))
    return events
