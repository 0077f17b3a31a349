"""A detached sweep's own process: ``python -m jupyter_promote.cli.detached_sweep SWEEP_ID STATUS_FILE ARGV...``.

It runs ``jupyter promote ARGV`` (the sweep, without ``--detach``) as the group ``SWEEP_ID`` its starter
announced, and keeps ``STATUS_FILE`` (:mod:`.detached_status`) saying where it stands; nothing imports this
module but that command line, so the command's own modules never import their caller.
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import EXIT_JOB_FAILED
from ..processes import start_time
from .detached_status import DetachedStatus
from .main import main


class StatusFile:
    """The sweep's side of the handshake (a :class:`~.context.GroupAnnouncer`): each state as it is reached."""

    def __init__(self, group_id: str, path: Path) -> None:
        self.group_id, self.path = group_id, path
        pid = os.getpid()
        self.status = DetachedStatus(id=group_id, pid=pid, started=start_time(pid), state="starting")
        self.status.write(path)

    def running(self, folder: Path) -> None:
        self.status = replace(self.status, state="running", folder=str(folder))
        self.status.write(self.path)

    def ended(self, exit_code: int) -> None:
        self.status = replace(self.status, state="ended", exit_code=exit_code)
        self.status.write(self.path)


def run_detached(argv: list[str] | None = None) -> int:
    """Run the sweep; its exit code, also written to the status file (even when it raised)."""
    group_id, status_file, *command = sys.argv[1:] if argv is None else argv
    status = StatusFile(group_id, Path(status_file))
    code = EXIT_JOB_FAILED
    try:
        code = main(command, detached=status)
    finally:
        status.ended(code)
    return code


if __name__ == "__main__":
    sys.exit(run_detached())
