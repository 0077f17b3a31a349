"""What a Ray job is sent: the job's own folder, the shards of the notebook's folder and the runner, each
folder Ray zips checked against what one request of the dashboard takes."""

from __future__ import annotations

import shutil
from pathlib import Path

from ..errors import TargetError
from ..image.shards import folder_bytes
from ..image.shipped import INPUTS_MANIFEST, pack_folder
from ..models import JobRecord
from ..rundir import RunDir
from .inputs import copy_inputs


def check_sizes(folders: list[Path], cap: int, max_upload_mb: int) -> None:
    """Every folder Ray zips and sends (shards and parts are made to fit; the runner and the notebook are
    checked) under the cap, else one line naming it."""
    for folder in folders:
        if (size := folder_bytes(folder)) > cap:
            what = "the job's notebook" if folder.name == "job" else str(folder)
            limit = f"more than Ray is sent in one request (RayTarget.max_upload_mb = {max_upload_mb})"
            raise TargetError(f"{what}: {size / 2**20:.1f} MiB, {limit}", subject=str(folder))


def upload_dir(
    record: JobRecord, run: RunDir, scratch: Path, cap: int, max_inputs_mb: int, carry_hidden: list[str]
) -> tuple[Path, list[Path]]:
    """The job's own folder (``job.json``, ``job.ipynb`` and the manifest of the notebook's folder) and the
    shards that carry the notebook's folder, in ``scratch``."""
    upload = scratch / "job"
    upload.mkdir()
    shutil.copy2(run.job_json, upload / "job.json")
    shutil.copy2(run.job_notebook, upload / "job.ipynb")
    limit = max_inputs_mb << 20
    source = Path(record.inputs_folder)
    total = copy_inputs(source, scratch / "inputs", {str(run.path)}, limit, carry_hidden)
    if total > limit:
        raise TargetError(
            f"{source}: the notebook's folder holds over {max_inputs_mb} MiB of inputs, more than a Ray "
            "job carries (RayTarget.max_inputs_mb); put datasets where the cluster reads them (--data NAME=URL)",
            subject=record.notebook,
        )
    return upload, pack_folder(scratch / "inputs", scratch / "shards", upload / INPUTS_MANIFEST, cap)


def runner_copy(scratch: Path) -> Path:
    """This package less its web assets, copied (Ray's ``excludes`` would drop the notebook's files too)."""
    from ..image.recipe import copy_runner_source

    copy_runner_source(scratch / "runner")
    return scratch / "runner" / "jupyter_promote"
