"""A sweep that runs on without its terminal: ``sweep --detach``, then ``attach SWEEP_ID`` and ``cancel SWEEP_ID``.

A sweep's tasks are started as slots free up (``--max-parallel``), so something must keep running to start
them: ``sweep --detach`` starts the same ``jupyter promote sweep`` in a session of its own (it outlives the
terminal and ignores its hangup), its output in ``<runs dir>/.detached/SWEEP_ID.log``, its exit code written
to ``SWEEP_ID.rc`` when it ends. The command returns once the tasks are prepared, or at once with the sweep's
own error when it was refused. ``attach`` shows the log from its start and follows it to the end, with the
exit code the sweep would have given; ``cancel`` stops it as Ctrl-C would (its tasks are cancelled).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..errors import EXIT_CANCELLED, EXIT_JOB_FAILED, EXIT_OK, JobNotFound
from ..launch.request import new_group_id
from ..processes import alive, start_ticks
from ..rundir import private_dir
from .signals import say

SWEEP_ID = re.compile(r"^s[0-9a-f]{12}$")
#: Set in the detached process itself: the sweep's id, chosen by the command that started it.
GROUP_ID: str | None = None


def folder_of(runs_dir: str) -> Path:
    return Path(runs_dir) / ".detached"


def start(argv: list[str], runs_dir: str) -> int:
    """Start ``jupyter promote sweep ARGV`` (without --detach) in the background; its id and how to follow it."""
    group_id = new_group_id()
    folder = folder_of(runs_dir)
    private_dir(folder, "the detached sweeps' folder")  # their logs name notebooks and parameters
    log_path, rc_path = folder / f"{group_id}.log", folder / f"{group_id}.rc"
    command = [sys.executable, "-c", _ENTRY, group_id, str(rc_path), *(a for a in argv if a != "--detach")]
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    (folder / f"{group_id}.pid").write_text(f"{process.pid} {start_ticks(process.pid)}")
    started = re.compile(rf"^sweep {group_id}: .* -> (.+)$", re.MULTILINE)
    while True:  # until its tasks are prepared, or it ended (refused: its own one-line error)
        text = log_path.read_text(errors="replace")
        found = started.search(text)
        if found:
            break
        if process.poll() is not None:
            sys.stderr.write(text)
            return process.returncode
        time.sleep(0.2)
    say(found.group(0))
    say(f"sweep {group_id} runs on in the background (process {process.pid}), without this terminal")
    say(f"  follow it:  jupyter promote attach {group_id}")
    say(f"  its state:  jupyter promote status {found.group(1)}")
    say(f"  stop it:    jupyter promote cancel {group_id}")
    say(f"  its log:    {log_path}")
    return EXIT_OK


class _Detached:
    """A detached sweep's files: its log, its exit code once it ended, and its process."""

    def __init__(self, group_id: str, runs_dir: str) -> None:
        folder = folder_of(runs_dir)
        self.log, self.rc = folder / f"{group_id}.log", folder / f"{group_id}.rc"
        try:
            pid, ticks = (folder / f"{group_id}.pid").read_text().split()
        except (OSError, ValueError):
            raise JobNotFound(
                f"{group_id}: no detached sweep of that id (looked in {folder})", subject=group_id
            ) from None
        if not self.log.is_file():
            raise JobNotFound(f"{group_id}: no detached sweep of that id (looked in {folder})", subject=group_id)
        self.pid, self.ticks = int(pid), (None if ticks == "None" else int(ticks))

    def ended(self) -> bool:
        """It wrote its exit code, or its process is gone (killed) without one."""
        return self.rc.exists() or not alive(self.pid, self.ticks)


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
    with contextlib.suppress(OSError, ValueError):
        return int(sweep.rc.read_text())
    say(f"sweep {group_id}: its process ended without an exit code (killed?); see {sweep.log}")
    return EXIT_JOB_FAILED


def cancel(group_id: str, runs_dir: str) -> int:
    """Stop the sweep as Ctrl-C would: its running tasks are cancelled, the rest never start."""
    sweep = _Detached(group_id, runs_dir)
    if sweep.ended():
        say(f"sweep {group_id} already ended; nothing to cancel")
        return EXIT_OK
    os.kill(sweep.pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not sweep.ended():
        time.sleep(0.3)
    if not sweep.ended():
        say(f"sweep {group_id}: asked to stop, still stopping its tasks; see {sweep.log}")
        return EXIT_OK
    say(f"sweep {group_id} cancelled")
    return EXIT_OK


#: How the detached process starts.
_ENTRY = "import sys; from jupyter_promote.cli.detached import run_detached; sys.exit(run_detached())"


def run_detached() -> int:
    """The detached sweep itself: ``python -c _ENTRY SWEEP_ID RC_FILE ARGV...``; its exit code in RC_FILE."""
    global GROUP_ID
    from .main import main

    GROUP_ID, rc_file, argv = sys.argv[1], sys.argv[2], sys.argv[3:]

    code = EXIT_JOB_FAILED
    try:
        code = main(argv)
    finally:
        with open(rc_file + ".tmp", "w") as f:
            f.write(f"{code}\n")
        os.replace(rc_file + ".tmp", rc_file)
    return code
