"""A job ready to submit or to follow: its record, run directory, event log and what preparing it learned.

:meth:`Pipeline.prepare <jupyter_promote.launch.pipeline.Pipeline.prepare>` makes one for a new job;
:meth:`Prepared.resume` makes one from what a run directory holds, for whoever follows a job it did not
start (``attach``, the server's reconcile after a restart, a sweep's tasks).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..freeze import FrozenEnv
from ..job.overrides import Override
from ..models import JobRecord
from ..rundir import RunDir
from ..runtime.events import EventLog


@dataclass
class Prepared:
    record: JobRecord
    run: RunDir
    env: FrozenEnv | None  # the frozen environment; None when resumed from a run directory
    has_parameters_cell: bool
    log: EventLog
    created_dir: bool = True  # whether prepare made the run directory (else it emptied a given one)
    remove_on_refusal: bool = True  # a target's refusal removes the run directory (not a group's task's)
    judge_alone: bool = True  # parity judged as the job ends (replicas are judged together, with the seed band)
    overrides: tuple[Override, ...] = ()  # parameters the notebook assigns again after papermill injects them
    #: the values of the secrets the submitter read (``env:``, ``file:``): in memory only, for the target
    secrets: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def resume(
        cls,
        run: RunDir,
        record: JobRecord | None = None,
        *,
        has_parameters_cell: bool = False,
        log: EventLog | None = None,
        remove_on_refusal: bool = True,
    ) -> Prepared:
        """The job whose run directory is ``run``, as its own ``job.json`` (or ``record``) describes it: what
        following it, cancelling it or judging it needs; nothing is frozen or converted again."""
        record = record if record is not None else run.read()
        log = log if log is not None else EventLog(str(run.events), record.id)
        return cls(record, run, None, has_parameters_cell, log, created_dir=False, remove_on_refusal=remove_on_refusal)
