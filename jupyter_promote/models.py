"""The models that flow through the pipeline: resources, job states and the job record (job.json)."""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from dataclasses import dataclass, field
from typing import Any

from .errors import UsageError


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
    "error", "nan", "stall", "throughput", "oom", "timeout", "killed", "lost", "cancelled", "disk_full", "unresponsive",
)  # fmt: skip

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


#: The least value of each numeric monitor setting (seconds, or optimizer steps for check_every).
MONITOR_MINIMUMS: dict[str, float] = {
    "stall_timeout_s": 1.0,
    "check_every": 1,
    "heartbeat_s": 1.0,
    "window_s": 0.5,
    "gpu_sample_s": 1.0,
}


@dataclass(frozen=True)
class MonitorSettings:
    """What the in-job monitor watches and what it does about it (baked into the job notebook)."""

    stall_timeout_s: float = 600.0
    nan_action: str = "fail"  # "fail" or "alert"
    stall_action: str = "fail"
    throughput_action: str = "alert"
    check_every: int = 10  # steps between finiteness checks (no host sync on CUDA: read back a check later)
    heartbeat_s: float = 5.0
    window_s: float = 2.0  # throughput window
    gpu_sample_s: float = 5.0

    def __post_init__(self) -> None:
        for name in ("nan_action", "stall_action", "throughput_action"):
            if getattr(self, name) not in ("fail", "alert"):
                raise UsageError(f"{name} {getattr(self, name)!r}: must be 'fail' or 'alert'", subject=name)

    def checked(self) -> MonitorSettings:
        """This request's settings, bounded (the one place, for the CLI and the server alike): a heartbeat
        every nanosecond would flood the store and the browsers, a NaN would reach the job notebook as code.
        Records stored before the bounds existed still load (``from_json`` does not check them)."""
        for name, least in MONITOR_MINIMUMS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UsageError(f"{name} {value!r}: must be a finite number", subject=name)
            if value < least or (name == "stall_timeout_s" and value <= 0):
                raise UsageError(f"{name} {value!r}: must be at least {least:g}", subject=name)
        return self

    def bounded(self) -> MonitorSettings:
        """These settings as loaded from a record someone else may have written (a shared store, an old job):
        each number that is not a finite number becomes its default, each below its minimum that minimum;
        the result passes :meth:`checked`. What a follower derives from them (silence limits) stays sane."""
        changes: dict[str, Any] = {}
        for name, least in MONITOR_MINIMUMS.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                changes[name] = getattr(MonitorSettings, name)
            elif value < least:
                changes[name] = type(getattr(MonitorSettings, name))(least)
        return dataclasses.replace(self, **changes) if changes else self

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> MonitorSettings:
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
    owner: str = ""  # who promoted it: the server's current user, or the CLI's login name

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
