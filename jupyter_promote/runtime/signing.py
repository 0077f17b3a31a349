"""Events signed by the job's runner: an HMAC (SHA-256) under a per-job key, so that a line the kernel or the
notebook wrote cannot pass for one of the runner's. Standard library only (it is copied into the kernel's
runtime overlay with the rest of :mod:`jupyter_promote.runtime`; the key is not).

The key is 32 random bytes, hex in ``RUN_DIR/channel.key`` (mode 0600) on the submitter's side, and in the
runner's environment as :data:`KEY_ENV` where the job runs without that folder (Ray, Kubernetes); the runner
takes it out of its environment before the kernel starts (:func:`jupyter_promote.channel.keys.take_runner_key`).
It protects against what a notebook prints and what it appends to its events file; it is not a boundary
against notebook code that goes looking for the key as the same user (nothing at one uid is).
"""

from __future__ import annotations

import hmac
import json
import os
from hashlib import sha256
from typing import Any

#: The runner's environment variable carrying the key (hex) where the run directory is not shared.
KEY_ENV = "PROMOTE_CHANNEL_KEY"
#: The key's file in the submitter's run directory.
KEY_FILE = "channel.key"
#: Set by the runner once it took the key, to ``PID RUN_DIR``: its children (the kernel) never sign for that
#: run directory. (Named, so that a process which inherits it, a test runner, a nested ``jupyter promote``,
#: still signs for its own jobs.)
TAKEN_ENV = "PROMOTE_CHANNEL_KEY_TAKEN"
#: The field an event's MAC travels in.
MAC_FIELD = "mac"


def event_mac(key: bytes, event: dict[str, Any]) -> str:
    """The MAC of ``event`` (every field but :data:`MAC_FIELD`, as canonical JSON)."""
    body = {k: v for k, v in event.items() if k != MAC_FIELD}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hmac.new(key, text.encode(), sha256).hexdigest()


def signed_by(key: bytes, event: dict[str, Any]) -> bool:
    """Whether ``event`` carries a valid MAC under ``key``."""
    mac = event.get(MAC_FIELD)
    if not isinstance(mac, str):
        return False
    try:
        expected = event_mac(key, event)
    except (TypeError, ValueError, RecursionError):  # not JSON-like (NaN): nothing the runner wrote
        return False
    return hmac.compare_digest(mac, expected)


_held: dict[str, bytes] = {}  # run directory -> the key this process took for it (the runner's)


def hold(run_dir: str, key: bytes) -> None:
    """Keep ``key`` as this process's key for ``run_dir`` (the runner, once it took the key)."""
    _held[os.path.realpath(run_dir)] = key


def read_key(run_dir: str) -> bytes | None:
    """The job's key: this process's own for ``run_dir`` (:func:`hold`), else its run directory's, else None
    (a job from before keys, or a folder without one)."""
    held = _held.get(os.path.realpath(run_dir))
    if held is not None:
        return held
    try:
        with open(os.path.join(run_dir, KEY_FILE), encoding="ascii") as f:
            return bytes.fromhex(f.read().strip()) or None
    except (OSError, ValueError):
        return None


def may_sign_here(run_dir: str) -> bool:
    """False in the children of the runner of ``run_dir`` (the kernel and what it starts): they never sign."""
    pid, _, taken_for = os.environ.get(TAKEN_ENV, "").partition(" ")
    if not pid or taken_for != os.path.realpath(run_dir):
        return True
    return pid == str(os.getpid())
