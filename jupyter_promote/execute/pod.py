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

from ..channel.sender import Sender
from ..rundir import RunDir

#: The payload's files (the ConfigMap's keys).
JOB_JSON, JOB_NOTEBOOK, INPUTS = "job.json", "job.ipynb", "inputs.tar.gz"


def unpack(payload: Path, into: Path) -> None:
    """The job's files from the payload into its run directory; its inputs into ``inputs/``."""
    for name in (JOB_JSON, JOB_NOTEBOOK):
        shutil.copyfile(payload / name, into / name)
    inputs = into / "inputs"
    inputs.mkdir(exist_ok=True)
    if (payload / INPUTS).is_file():
        with tarfile.open(payload / INPUTS) as archive:
            archive.extractall(inputs, filter="data")  # no links out, no absolute paths, no devices


def run(payload: Path) -> int:
    here = Path.cwd()
    try:
        unpack(payload, here)
    except (OSError, tarfile.TarError) as exc:
        print(f"jupyter-promote: the job's payload {payload} could not be unpacked: {exc}", file=sys.stderr)
        return 4
    run_dir = RunDir(here)
    with Sender(run_dir):
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
