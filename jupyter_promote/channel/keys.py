"""The job's key: made by whoever first needs it, held by the submitter and the runner, never by the kernel.

- :func:`job_key`: the submitter's side. The key in ``RUN_DIR/channel.key`` (mode 0600), made when missing;
  a target whose job runs without that folder (Ray, Kubernetes) hands it to the runner in
  :data:`~jupyter_promote.runtime.signing.KEY_ENV` (Ray's ``env_vars``, the pod's ``env``).
- :func:`take_runner_key`: the runner's side, before the kernel starts. The key out of the environment
  (so the kernel and its subprocesses do not inherit it), else the run directory's (made there when
  missing: local, Docker and Slurm share that folder with the submitter); the runner's children are
  marked so that their event logs never sign.

The key never goes into ``job.json`` (the job's folder is readable by the kernel and travels with the
job) nor into the job's log: the channel's lines carry MACs, not the key.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from ..runtime.signing import KEY_ENV, KEY_FILE, TAKEN_ENV, hold, read_key

_taken: dict[str, bytes | None] = {}  # run directory -> its key, as this process took it


def job_key(run_dir: str | Path) -> bytes:
    """The job's key, made (atomically, mode 0600) when its run directory has none yet."""
    key = read_key(str(run_dir))
    if key is not None:
        return key
    key = secrets.token_bytes(32)
    path = os.path.join(run_dir, KEY_FILE)
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(key.hex())
        try:
            os.link(tmp, path)  # never over a key another process made a moment ago
        except FileExistsError:
            return read_key(str(run_dir)) or key
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return key


def take_runner_key(run_dir: str | Path, make: bool = True) -> bytes | None:
    """In the runner's process, before the kernel starts: the job's key, taken out of the environment.

    ``make``: where the environment has none, use (or make) the run directory's; off where that folder is
    the job's own copy (Ray, Kubernetes: a submitter that sent no key verifies nothing). Later calls in the
    same process return the same key, and this process's event logs for ``run_dir`` sign with it.
    """
    where = os.path.realpath(run_dir)
    if where not in _taken:
        given = os.environ.pop(KEY_ENV, "")
        try:
            key = bytes.fromhex(given) or None
        except ValueError:
            key = None
        if key is None and make:
            key = job_key(where)
        _taken[where] = key
        os.environ[TAKEN_ENV] = f"{os.getpid()} {where}"
        if key is not None:  # this process's event logs for the job sign with it
            hold(where, key)
    return _taken[where]
