"""A sweep that runs on without its terminal: ``sweep --detach``, then ``attach SWEEP_ID`` and ``cancel SWEEP_ID``.

A sweep's tasks are started as slots free up (``--max-parallel``), so something must keep running to start
them: ``sweep --detach`` starts the same ``jupyter promote sweep`` in a session of its own (it outlives the
terminal and ignores its hangup; :mod:`.detached_sweep`), its output in ``<runs dir>/.detached/SWEEP_ID.log``.
The sweep says where it stands in its status file (:mod:`.detached_status`): the command returns once that
says ``running`` (its tasks are prepared), or at once with the sweep's own error when it ended refused.
``attach`` shows the log from its start and follows it to the end, with the exit code the sweep would have
given; ``cancel`` stops it as Ctrl-C would (its tasks are cancelled).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from ..errors import EXIT_CANCELLED, EXIT_JOB_FAILED, EXIT_OK, JobNotFound
from ..launch.request import new_group_id
from ..processes import alive
from ..rundir import private_dir
from .detached_status import DetachedStatus, folder_of, log_path, status_path
from .signals import say

#: The detached process's module (run with ``python -m``; see :mod:`.detached_sweep`).
_ENTRY = "jupyter_promote.cli.detached_sweep"


def start(argv: list[str], runs_dir: str) -> int:
    """Start ``jupyter promote sweep ARGV`` (without --detach) in the background; its id and how to follow it."""
    group_id = new_group_id()
    private_dir(folder_of(runs_dir), "the detached sweeps' folder")  # their logs name notebooks and parameters
    log, status = log_path(runs_dir, group_id), status_path(runs_dir, group_id)
    command = [sys.executable, "-m", _ENTRY, group_id, str(status), *(a for a in argv if a != "--detach")]
    with open(log, "wb") as output:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    while True:  # until its tasks are prepared, or it ended (refused: its own one-line error)
        found = DetachedStatus.read(status)
        if found is not None and found.state == "running":
            break
        if (found is not None and found.state == "ended") or process.poll() is not None:
            code = process.wait()
            sys.stderr.write(log.read_text(errors="replace"))
            return found.exit_code if found is not None and found.exit_code is not None else code
        time.sleep(0.2)
    sys.stderr.write(log.read_text(errors="replace"))  # what it said so far: the sweep, its warnings
    say(f"sweep {group_id} runs on in the background (process {process.pid}), without this terminal")
    say(f"  follow it:  jupyter promote attach {group_id}")
    say(f"  its state:  jupyter promote status {found.folder}")
    say(f"  stop it:    jupyter promote cancel {group_id}")
    say(f"  its log:    {log}")
    return EXIT_OK


class _Detached:
    """A detached sweep found by its id: its log, and its process as its status file names it."""

    def __init__(self, group_id: str, runs_dir: str) -> None:
        self.id, self.path = group_id, status_path(runs_dir, group_id)
        self.log = log_path(runs_dir, group_id)
        if self.status() is None or not self.log.is_file():
            raise JobNotFound(
                f"{group_id}: no detached sweep of that id (looked in {folder_of(runs_dir)})", subject=group_id
            )

    def status(self) -> DetachedStatus | None:
        return DetachedStatus.read(self.path)

    def ended(self) -> bool:
        """It said it ended, or its process is gone (killed) without saying so."""
        status = self.status()
        return status is None or status.state == "ended" or not alive(status.pid, status.started)

    def exit_code(self) -> int | None:
        status = self.status()
        return status.exit_code if status is not None else None


def attach(group_id: str, runs_dir: str) -> int:
    """Show the sweep's output from its start and follow it to its end: the sweep's exit code."""
    sweep = _Detached(group_id, runs_dir)
    say(f"attached to sweep {group_id}; Ctrl-C stops following")
    try:
        with open(sweep.log, "rb") as log:
            while True:
                ended = sweep.ended()
                chunk = log.read()
                if chunk:
                    sys.stderr.write(chunk.decode(errors="replace"))
                    sys.stderr.flush()
                if ended:
                    break
                time.sleep(0.3)
    except KeyboardInterrupt:
        say(f"stopped following sweep {group_id}; it goes on (jupyter promote cancel {group_id} stops it)")
        return EXIT_CANCELLED
    code = sweep.exit_code()
    if code is not None:
        return code
    say(f"sweep {group_id}: its process ended without an exit code (killed?); see {sweep.log}")
    return EXIT_JOB_FAILED


def cancel(group_id: str, runs_dir: str) -> int:
    """Stop the sweep as Ctrl-C would: its running tasks are cancelled, the rest never start."""
    sweep = _Detached(group_id, runs_dir)
    status = sweep.status()
    if status is None or sweep.ended():
        say(f"sweep {group_id} already ended; nothing to cancel")
        return EXIT_OK
    os.kill(status.pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not sweep.ended():
        time.sleep(0.3)
    if not sweep.ended():
        say(f"sweep {group_id}: asked to stop, still stopping its tasks; see {sweep.log}")
        return EXIT_OK
    say(f"sweep {group_id} cancelled")
    return EXIT_OK
