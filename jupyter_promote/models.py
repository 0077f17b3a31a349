"""The models that flow through the pipeline: resources, job states and the job record (job.json)."""

from __future__ import annotations

import dataclasses
import enum
import os
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError

# re-exported (the names job records and requests have always imported): composed of the checks' declarations
from .monitor_settings import MONITOR_MINIMUMS as MONITOR_MINIMUMS  # noqa: PLC0414
from .monitor_settings import MonitorSettings as MonitorSettings  # noqa: PLC0414


class JobState(str, enum.Enum):
    """The states of a job, the same in the CLI, job.json, the API and the sidebar."""

    PENDING = "pending"
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in FINAL_STATES


FINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})

#: The reasons carried in job.json's ``reason``, as the runner, the targets and ``status`` set them.
FAILURE_REASONS = (
    "error",
    "nan",
    "stall",
    "throughput",
    "oom",
    "timeout",
    "killed",
    "lost",
    "cancelled",
    "disk_full",
    "unresponsive",
)

_MEMORY_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_TIME_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: Bounds beyond which a resource is a typo (or an attack), not a request: refused with one line.
MAX_MEMORY_BYTES = 2**60
MAX_TIME_LIMIT_S = 100 * 366 * 86400
MAX_COUNT = 1_000_000


def parse_memory(text: str) -> int:
    """Parse a memory size such as ``512M``, ``4G`` or ``2GiB`` into bytes (plain numbers are MiB, as in Slurm)."""
    match = _MEMORY_RE.match(str(text))
    if not match:
        raise UsageError(f"--memory {text!r}: not a size (use e.g. 512M, 4G, 2GiB)", subject="memory")
    number, unit = match.groups()
    scale = _MEMORY_UNITS[unit.lower()] if unit else 1024**2
    size = float(number) * scale
    if not size < MAX_MEMORY_BYTES:
        raise UsageError(f"--memory {str(text)[:40]!r}: larger than any machine (at most 1 EiB)", subject="memory")
    return int(size)


def parse_time_limit(text: str) -> int:
    """Parse a time limit into seconds: ``90s``, ``10m``, ``2h``, ``1d``, or Slurm's ``[D-]HH:MM:SS`` / ``MM`` forms."""
    value = str(text).strip()
    bad = UsageError(f"--time {text!r}: not a time limit (use e.g. 90s, 10m, 2h, 1:30:00, 1-00:00:00)", subject="time")
    if m := re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", value, re.IGNORECASE):
        seconds = float(m.group(1)) * _TIME_UNITS[m.group(2).lower()]
    elif m := re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", value):
        days, first, second, third = m.groups()
        parts = [int(p) for p in (first, second, third) if p is not None]
        if days is not None:  # D-HH[:MM[:SS]]
            parts += [0] * (3 - len(parts))
            seconds = int(days) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]
        elif len(parts) == 1:  # minutes, as Slurm reads a bare number
            seconds = parts[0] * 60
        elif len(parts) == 2:  # MM:SS
            seconds = parts[0] * 60 + parts[1]
        else:  # HH:MM:SS
            seconds = parts[0] * 3600 + parts[1] * 60 + parts[2]
    else:
        raise bad
    if seconds <= 0:
        raise bad
    if not seconds <= MAX_TIME_LIMIT_S:
        raise UsageError(f"--time {value[:40]!r}: longer than 100 years", subject="time")
    return int(seconds)


@dataclass(frozen=True)
class Resources:
    """The options vocabulary shared by every target; each target translates it."""

    cpus: int | None = None
    memory_bytes: int | None = None
    gpus: int | None = None
    time_limit_s: int | None = None

    @classmethod
    def parse(cls, cpus: Any = None, memory: Any = None, gpus: Any = None, time: Any = None) -> Resources:
        def count(name: str, value: Any) -> int | None:
            if value is None:
                return None
            whole = not isinstance(value, bool) and (not isinstance(value, float) or value.is_integer())
            try:
                number = int(value) if whole else None
            except (TypeError, ValueError, OverflowError):
                number = None
            if number is None or number > MAX_COUNT:  # true and 1.9 are not 1; 10**400 is not a machine
                raise UsageError(f"--{name} {str(value)[:40]!r}: not a whole number up to {MAX_COUNT}", subject=name)
            if number < 0 or (name == "cpus" and number == 0):
                raise UsageError(f"--{name} {value!r}: must be positive", subject=name)
            return number

        return cls(
            cpus=count("cpus", cpus),
            memory_bytes=parse_memory(memory) if memory is not None else None,
            gpus=count("gpus", gpus),
            time_limit_s=parse_time_limit(time) if time is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> Resources:
        return cls(**(data or {}))


@dataclass
class JobRecord:
    """job.json: what was asked, where it runs and how it ended."""

    id: str
    notebook: str
    target: str
    kernel: str
    parameters: dict[str, Any] = field(default_factory=dict)
    resources: Resources = field(default_factory=Resources)
    monitor: MonitorSettings = field(default_factory=MonitorSettings)
    deterministic: bool = False  # seeded, deterministic algorithms pinned (records before it was kept read False)
    state: JobState = JobState.PENDING
    reason: str | None = None
    message: str | None = None
    lock_hash: str | None = None
    image: dict[str, Any] | None = None  # the verified environment image (ImageRef) for container targets
    env: dict[str, str] = field(default_factory=dict)  # allow-listed environment variables, as frozen
    created_at: float = 0.0
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float = 0.0
    handle: dict[str, Any] = field(default_factory=dict)  # the target's own reference to the job
    metrics: dict[str, Any] = field(default_factory=dict)
    sweep: dict[str, Any] | None = None  # {"id", "index", "size"} for one task of a sweep
    parity: dict[str, Any] | None = None  # {"verdict": pass|fail|no baseline, "failed": [metric, ...]}
    artifacts: list[dict[str, Any]] = field(default_factory=list)  # files the job wrote: {"path", "size"} in work/
    notify: list[str] = field(default_factory=list)  # the destinations (c.Notifications) told of its end and alerts
    secrets: dict[str, str] = field(default_factory=dict)  # variable -> source (a reference, never the value)
    retries: int = 0  # attempts after the first for infrastructure failures (launch/retry.py)
    data: dict[str, str] = field(default_factory=dict)  # inputs: name -> URL (jupyter_promote/data)
    artifacts_url: str = ""  # where the job's outputs and checkpoints go when its target shares no filesystem
    storage_options: dict[str, Any] = field(default_factory=dict)  # fsspec's, no credentials (those are secrets)
    attempt: int = 1  # the attempt the job is in
    owner: str = ""  # who promoted it: the server's current user, or the CLI's login name
    #: the JobRequest (server/openapi.yaml) as validated and normalized: what a rerun asks for again
    #: (launch/body.py rerun_request); empty in records written before it was kept
    request: dict[str, Any] = field(default_factory=dict)
    schedule: str = ""  # the id of the schedule that fired it (jupyter_promote/schedule); empty: asked by hand
    #: the folder the job's inputs come from, when it is not the notebook's own: a schedule that froze its
    #: notebook runs that copy among the files beside the notebook it was frozen from
    folder: str = ""
    #: judged against its schedule's own runs (analysis/drift.py; drift.json has the whole verdict):
    #: {"verdict": drift|steady|not enough history, "runs", "drifted": [metric, ...], "environment": bool}
    drift: dict[str, Any] | None = None

    @property
    def inputs_folder(self) -> str:
        """The folder whose files the job reads beside its notebook (its working directory mirrors it)."""
        return self.folder or os.path.dirname(self.notebook)

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["state"] = self.state.value
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobRecord:
        data = dict(data)
        data["state"] = JobState(data.get("state", "pending"))
        data["resources"] = Resources.from_json(data.get("resources"))
        data["monitor"] = MonitorSettings.from_json(data.get("monitor"))
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
