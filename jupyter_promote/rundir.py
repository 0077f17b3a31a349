"""The run directory of one job: its files, and job.json written atomically; and where run directories go."""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import re
import tempfile
import time
from pathlib import Path

from .errors import JobNotFound
from .models import JobRecord


def login_name() -> str:
    """This process's user, as the CLI's jobs record their owner."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no passwd entry (some containers)
        return str(os.getuid())


def server_user() -> str:
    """Whose jobs a server keeps in a store others may share: its JupyterHub user, or its login name."""
    return os.environ.get("JUPYTERHUB_USER") or login_name()


def runs_dir_of(runs_dir: str, owner: str) -> str:
    """``runs_dir`` for one owner: ``~`` expanded and ``{username}`` replaced by a name safe in a path."""
    if "{username}" in runs_dir:
        safe = re.sub(r"[^A-Za-z0-9._@+-]", "-", owner or login_name()).lstrip(".") or "user"
        runs_dir = runs_dir.replace("{username}", safe)
    return os.path.expanduser(runs_dir)


class RunDir:
    """``job.json``, ``job.ipynb``, ``output.ipynb``, ``events.jsonl``, ``env/``, ``job.log``, ``build.log``,
    ``work/`` of one job."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).absolute()

    job_json = property(lambda self: self.path / "job.json")
    job_notebook = property(lambda self: self.path / "job.ipynb")
    output_notebook = property(lambda self: self.path / "output.ipynb")
    events = property(lambda self: self.path / "events.jsonl")
    env_dir = property(lambda self: self.path / "env")
    log = property(lambda self: self.path / "job.log")
    build_log = property(lambda self: self.path / "build.log")  # the image build's output, for image targets
    runtime_dir = property(lambda self: self.path / "runtime")
    work_dir = property(lambda self: self.path / "work")  # the job's cwd; the files it wrote are its artifacts

    def exists(self) -> bool:
        return bool(self.job_json.is_file())

    def read(self) -> JobRecord:
        try:
            with open(self.job_json, encoding="utf-8") as f:
                return JobRecord.from_json(json.load(f))
        except FileNotFoundError:
            raise JobNotFound(f"{self.path}: not a run directory (no job.json)", subject=str(self.path)) from None
        except (ValueError, TypeError) as exc:
            raise JobNotFound(f"{self.job_json}: unreadable job record ({exc})", subject=str(self.path)) from None

    def write(self, record: JobRecord) -> None:
        record.updated_at = round(time.time(), 3)
        fd, tmp = tempfile.mkstemp(prefix=".job-", suffix=".json", dir=self.path)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(record.to_json(), f, indent=2, sort_keys=True)
                f.write("\n")
            os.replace(tmp, self.job_json)
        except BaseException:  # a full disk, an interrupt: job.json stays as it was, no temp file is left
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
