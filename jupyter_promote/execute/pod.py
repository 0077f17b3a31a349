"""A job in a pod of its verified image (Kubernetes): ``python -m jupyter_promote.execute.pod PAYLOAD``.

``PAYLOAD`` is the folder the job came in, read-only (the job's ConfigMap: ``job.json``, ``job.ipynb``
and ``inputs.tar.gz``, the notebook's folder); the job runs in the current folder, the pod's scratch
space, as its run directory. The environment is the image's own, already verified; the runner runs
inside a :class:`~jupyter_promote.channel.sender.Sender`, so every event and the job's files reach the
submitter through the pod's log. Exits as the runner does; 4 when the payload cannot be unpacked.
"""

from __future__ import annotations

import os
import shutil
import sys
import tarfile
from pathlib import Path

from ..channel.keys import take_runner_key
from ..channel.sender import Sender
from ..rundir import RunDir
from ..runtime.events import EventLog
from .unpack import unpack_inputs

#: The payload's files (the ConfigMap's keys).
JOB_JSON, JOB_NOTEBOOK, INPUTS = "job.json", "job.ipynb", "inputs.tar.gz"


def run(payload: Path) -> int:
    here = Path.cwd()
    key = take_runner_key(here, make=False)  # out of the environment before anything starts
    try:
        for name in (JOB_JSON, JOB_NOTEBOOK):
            shutil.copyfile(payload / name, here / name)
        run_dir = RunDir(here)
        record = run_dir.read()
    except Exception as exc:  # nothing to report on: the job's own record did not come
        print(f"jupyter-promote: the job's payload {payload} is unusable: {exc}", file=sys.stderr)
        return 4
    with Sender(run_dir, key=key):
        try:
            if (payload / INPUTS).is_file():
                unpack_inputs(payload / INPUTS, here / "inputs")
        except (OSError, tarfile.TarError) as exc:
            EventLog(str(run_dir.events), record.id, key=key).emit(
                "status",
                state="failed",
                reason="error",
                source="node",
                message=f"the notebook's folder that came with the job could not be unpacked: {exc}",
            )
            return 4
        os.environ["PROMOTE_INPUTS"] = str(here / "inputs")
        from .runner import run as run_job

        return run_job(str(here))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m jupyter_promote.execute.pod PAYLOAD_DIR", file=sys.stderr)
        return 2
    return run(Path(argv[0]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
