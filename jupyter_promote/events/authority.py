"""Who decides how a job ended: its runner, or jupyter-promote itself; never the notebook.

The kernel appends to the job's events file too (on ``local``, Docker and Slurm it is the runner's own
file), so a notebook could write a final ``status`` line (``succeeded``) and then fail. A final status
counts only when it is signed under the job's key (:mod:`jupyter_promote.runtime.signing`): the runner
signs its events, the submitter's own event logs (a job lost, cancelled, refused) sign theirs, the
kernel holds no key. Any other final status is set aside (the follower reports it once, as every line
it cannot fold). A job without a key (from before keys) keeps the old rule: its first final status.

One rule for every reader: the server's and the CLI's follower (:func:`~jupyter_promote.launch.follow.follow`)
and ``jupyter promote status`` (:func:`job_events`).
"""

from __future__ import annotations

import os
from typing import Any

from ..runtime.events import read_events
from ..runtime.signing import read_key, signed_by

_FINAL = ("succeeded", "failed", "cancelled")
FORGED = (
    "a final status (or an attempt) its runner or submitter did not sign (the notebook's own line? only they say "
    "how a job ended, and whether it starts again)"
)


class FinalStateRule:
    """Whether a job's events may end it; the key is looked for again until there is one (the runner makes
    it as it starts, on a target that shares the run directory)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = os.fspath(run_dir)
        self.key: bytes | None = None

    def why(self, event: dict[str, Any]) -> str | None:
        """Why ``event`` may not end the job (one line), or None."""
        final = event.get("type") == "status" and event.get("state") in _FINAL
        if not final and event.get("type") != "attempt":  # an attempt starts an ended job again
            return None
        if self.key is None:
            self.key = read_key(self.run_dir)
        if self.key is None or signed_by(self.key, event):
            return None
        return FORGED

    def screen(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``events`` without those that may not end the job."""
        return [event for event in events if self.why(event) is None]


def job_events(run_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """A run directory's events as every reader folds them: final statuses only from who may decide."""
    return FinalStateRule(run_dir).screen(read_events(os.path.join(os.fspath(run_dir), "events.jsonl")))
