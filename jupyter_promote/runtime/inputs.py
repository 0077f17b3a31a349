"""``promote.data(NAME)``: where the job's input NAME (``--data NAME=URL``) lies on its node.

The runner fetched it into the node's cache before the kernel started and named it in ``PROMOTE_DATA_<NAME>``
(a folder for a prefix, a file for one object). In an interactive session, set that variable to a local copy
to run the same code. Standard library only.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "PROMOTE_DATA_"
#: fsspec's options for the job's storage as its target's nodes reach it (JSON), set by the target.
STORAGE_OPTIONS_ENV = "PROMOTE_STORAGE_OPTIONS"


def data(name: str) -> Path:
    """The local path of input ``name``; a LookupError naming the fix when the job has no such input."""
    where = os.environ.get(DATA_ENV + name)
    if not where:
        given = sorted(k[len(DATA_ENV) :] for k in os.environ if k.startswith(DATA_ENV))
        have = f"this job's inputs: {', '.join(given)}" if given else "this is no job with --data inputs"
        raise LookupError(f"no input named {name!r} ({have}; interactively, set {DATA_ENV}{name} to a local copy)")
    return Path(where)
