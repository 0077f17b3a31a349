"""A detached sweep's status file: the handshake between the sweep's own process and whoever looks for it.

``<runs dir>/.detached/SWEEP_ID.json`` holds ``{"id", "pid", "started", "folder", "state", "exit_code"}``; the
detached process alone writes it, atomically (a reader sees the old file or the new one, never half of one):
``starting`` as it starts, ``running`` with the sweep's folder once its tasks are prepared, ``ended`` with its
exit code. Its output goes to ``SWEEP_ID.log`` beside it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..processes import start_of

#: A detached sweep's id as a person types it (``attach s0123456789ab``).
SWEEP_ID = re.compile(r"^s[0-9a-f]{12}$")
#: The states of a detached sweep, in order.
STATES = ("starting", "running", "ended")


def folder_of(runs_dir: str) -> Path:
    """Where detached sweeps keep their status files and logs."""
    return Path(runs_dir) / ".detached"


def status_path(runs_dir: str, group_id: str) -> Path:
    return folder_of(runs_dir) / f"{group_id}.json"


def log_path(runs_dir: str, group_id: str) -> Path:
    return folder_of(runs_dir) / f"{group_id}.log"


@dataclass(frozen=True)
class DetachedStatus:
    """What the detached process last said of itself."""

    id: str
    pid: int
    started: float | None  # the process's start time (processes.start_time): tells it from a later one of its pid
    state: str
    folder: str | None = None  # the sweep's folder, once its tasks are prepared
    exit_code: int | None = None  # once it ended

    def write(self, path: Path) -> None:
        """Replace the status file at ``path`` by this one, atomically."""
        if self.state not in STATES:
            raise ValueError(f"{self.state!r}: not a state of a detached sweep ({', '.join(STATES)})")
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(asdict(self), sort_keys=True) + "\n", encoding="utf-8")
        os.replace(partial, path)

    @classmethod
    def read(cls, path: Path) -> DetachedStatus | None:
        """The status at ``path``; None when there is none (not yet written, or not a detached sweep's)."""
        try:
            data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                id=str(data["id"]),
                pid=int(data["pid"]),
                started=None if data.get("started") is None else float(data["started"]),
                state=str(data["state"]),
                folder=data.get("folder"),
                exit_code=None if data.get("exit_code") is None else int(data["exit_code"]),
            )
        except FileNotFoundError:
            return _read_before_status_files(path)
        except (OSError, ValueError, KeyError, TypeError):
            return None


def _read_before_status_files(path: Path) -> DetachedStatus | None:
    """A sweep detached by a version before the status file: ``SWEEP_ID.pid`` ("PID TICKS") and, once it ended,
    ``SWEEP_ID.rc``; so that a sweep running across an upgrade can still be attached and cancelled."""
    try:
        pid, ticks = path.with_suffix(".pid").read_text(encoding="utf-8").split()
        rc = path.with_suffix(".rc")
        exit_code = int(rc.read_text(encoding="utf-8")) if rc.exists() else None
        started = start_of({"start_ticks": None if ticks == "None" else int(ticks)})
        state = "ended" if exit_code is not None else "running"
        return DetachedStatus(id=path.stem, pid=int(pid), started=started, state=state, exit_code=exit_code)
    except (OSError, ValueError):
        return None
