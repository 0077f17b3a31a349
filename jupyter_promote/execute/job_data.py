"""The job's data on its node (:mod:`jupyter_promote.data`): inputs fetched before the kernel starts, and,
where the target shares no filesystem with the submitter, outputs and checkpoints kept on the storage of
``artifacts_url``.

- Each ``--data NAME=URL`` input is fetched into the node's content cache (``PROMOTE_DATA_CACHE``, else
  ``~/.cache/jupyter-promote/data`` of whoever runs the job: a second job on the node downloads nothing) and
  named to the kernel in ``PROMOTE_DATA_<NAME>`` (``promote.data(NAME)``). The cache entries are held (a
  shared lock) until the job ends, so no other job evicts them meanwhile.
- With ``artifacts_url`` on a target that shares no filesystem (Ray, Kubernetes) and no checkpoint volume of
  the target's: the checkpoint folder is filled from ``URL/JOB_ID/checkpoints`` as the attempt starts (a later
  attempt resumes from what an earlier one saved) and written back there every :data:`SYNC_S` seconds and at
  the end; the job's outputs go to ``URL/JOB_ID/work``, whence the submitter brings them back.

The store's credentials are the job's environment's (secrets: ``AWS_ACCESS_KEY_ID``, ...); its options are
the record's ``storage_options`` under the target's (``PROMOTE_STORAGE_OPTIONS``, JSON).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from ..models import JobRecord
from ..runtime.checkpoints import CHECKPOINT_ENV
from ..runtime.inputs import DATA_ENV, STORAGE_OPTIONS_ENV

#: Seconds between two writes of the checkpoint folder to the store.
SYNC_S = 5.0


def _say(text: str) -> None:
    print(f"jupyter-promote: {text}", file=sys.stderr, flush=True)


class JobData:
    """One attempt's inputs and stored outputs; :meth:`start` before the kernel, :meth:`finish` after it."""

    def __init__(self, record: JobRecord) -> None:
        self.record = record
        self.options: dict[str, Any] = {
            **record.storage_options,
            **json.loads(os.environ.get(STORAGE_OPTIONS_ENV) or "{}"),
        }
        remote = bool(os.environ.get("PROMOTE_INPUTS"))  # the job came to a node that shares no filesystem
        self.url = f"{record.artifacts_url.rstrip('/')}/{record.id}" if record.artifacts_url and remote else ""
        self.sync = bool(self.url) and CHECKPOINT_ENV not in os.environ  # no volume of the target's
        self.held: list[Any] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def fetch_inputs(self) -> None:
        """Every input into the node's cache, named to the kernel; an input that cannot be fetched raises its
        one-line error (the job fails before its first cell)."""
        if not self.record.data:
            return
        from ..data import fetch, parse_data

        cache = os.environ.get("PROMOTE_DATA_CACHE") or os.path.expanduser("~/.cache/jupyter-promote/data")
        for name, url in self.record.data.items():
            result = fetch(parse_data(f"{name}={url}"), cache, self.options)
            self.held.append(result)
            os.environ[DATA_ENV + name] = str(result.path)
            how = "from this node's cache" if result.cached else f"{result.bytes_downloaded / 1e6:.1f} MB fetched"
            _say(f"data {name}: {url}, {result.objects} object(s), {result.total_bytes / 1e6:.1f} MB ({how})")

    def resume_checkpoints(self, folder: Path) -> None:
        """The checkpoints an earlier attempt stored, into ``folder``; then kept in step with the store."""
        if not self.sync:
            return
        from ..data import download_tree

        try:
            kept = download_tree(f"{self.url}/checkpoints", folder, self.options)
        except Exception as exc:  # nothing stored yet is the usual case; a store that fails: from the top
            kept = []
            if "no objects" not in str(exc):
                _say(f"the checkpoints stored at {self.url}/checkpoints could not be read: {exc}")
        if kept:
            _say(f"{len(kept)} checkpoint file(s) from {self.url}/checkpoints")
        self._thread = threading.Thread(target=self._keep, args=(folder,), name="promote-checkpoints", daemon=True)
        self._thread.start()

    def _keep(self, folder: Path) -> None:
        seen: dict[str, tuple[int, int]] = {}
        while not self._stop.wait(SYNC_S):
            seen = self._store_checkpoints(folder, seen)

    def _store_checkpoints(self, folder: Path, seen: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
        """The checkpoint folder written to the store when it changed; what it held, by file."""
        from ..data import upload_tree

        now = {
            p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*")
            if p.is_file()
        }
        if now and now != seen:
            try:
                upload_tree(folder, f"{self.url}/checkpoints", self.options)
            except Exception as exc:
                _say(f"the checkpoints could not be stored at {self.url}/checkpoints: {exc}")
                return seen
        return now

    def finish(self, work: Path | None, checkpoints: Path) -> None:
        """The job's outputs (and its last checkpoints) to the store; the inputs let go."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=SYNC_S * 2)
        try:
            if self.url:
                from ..data import upload_tree

                if self.sync:
                    self._store_checkpoints(checkpoints, {})
                if work is not None and work.is_dir():
                    stored = upload_tree(work, f"{self.url}/work", self.options)
                    _say(f"{len(stored)} output file(s) stored at {self.url}/work")
        except Exception as exc:
            _say(f"the job's outputs could not be stored at {self.url}: {exc}")
        finally:
            for result in self.held:
                result.release()
