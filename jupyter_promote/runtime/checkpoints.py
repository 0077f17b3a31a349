"""``promote.checkpoint_dir()`` and ``promote.attempt()``: where a job keeps what lets a later attempt resume.

In a job the runner names the folder (``PROMOTE_CHECKPOINT_DIR``): the run directory's ``checkpoints/`` where
every attempt sees the run directory (local, Docker, Slurm), else the volume or shared folder the target's
settings name (Kubernetes, Ray). It survives the job's attempts and starts empty for a new job, so a job never
resumes from another job's checkpoints. In an interactive session it is a fresh temporary folder, one per
kernel. Standard library only.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: The variables the runner sets for the kernel.
CHECKPOINT_ENV = "PROMOTE_CHECKPOINT_DIR"
ATTEMPT_ENV = "PROMOTE_ATTEMPT"

_interactive: Path | None = None


def checkpoint_dir() -> Path:
    """The job's checkpoint folder (created when missing)."""
    global _interactive
    named = os.environ.get(CHECKPOINT_ENV)
    if named:
        folder = Path(named)
        folder.mkdir(parents=True, exist_ok=True)
        return folder
    if _interactive is None:
        _interactive = Path(tempfile.mkdtemp(prefix="promote-checkpoints-"))
    return _interactive


def attempt() -> int:
    """Which attempt of the job this is: 1, then 2, 3, ... once the infrastructure failed it (``--retries``)."""
    try:
        return max(1, int(os.environ.get(ATTEMPT_ENV, "1")))
    except ValueError:
        return 1
