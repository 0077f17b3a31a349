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

from .errors import JobNotFound, UsageError
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


def private_dir(path: Path, what: str = "--out") -> None:
    """Make ``path`` a folder only its owner reads (``0700``): each folder created on the way to it too (the runs
    folder included: job names are the user's alone), and a folder already there tightened when it is this
    user's, refused when it is someone else's. Errors are one line naming ``what`` and the path."""
    try:
        missing = []
        for folder in [path, *path.parents]:
            if folder.exists():
                break
            missing.append(folder)
        for folder in reversed(missing):
            folder.mkdir(mode=0o700, exist_ok=True)
            folder.chmod(0o700)  # mkdir's mode is masked by the umask: say it once more
        st = path.stat()
        if not path.is_dir():
            raise UsageError(f"{what} {path}: exists and is not a folder", subject=str(path))
        if st.st_uid != os.getuid() and os.getuid() != 0:
            raise UsageError(f"{what} {path}: belongs to another user (uid {st.st_uid})", subject=str(path))
        if st.st_mode & 0o077:
            path.chmod(0o700)
    except OSError as exc:
        raise UsageError(
            f"{what} {path}: cannot be made a private folder ({exc.strerror})", subject=str(path)
        ) from None
    except ValueError as exc:  # a NUL in the path
        raise UsageError(f"{what} {path!r}: not a usable path ({exc})", subject=str(path)) from None


def make_run_dir(path: Path) -> None:
    """A new run directory at ``path`` (a private folder, see :func:`private_dir`): refused when it exists and
    holds anything (another run's files are never mixed with this one's)."""
    try:
        occupied = path.exists() and (not path.is_dir() or any(path.iterdir()))
    except (OSError, ValueError) as exc:
        raise UsageError(f"--out {path}: cannot be read ({exc})", subject=str(path)) from None
    if occupied:
        raise UsageError(f"--out {path}: already exists and is not empty", subject=str(path))
    private_dir(path)


class RunDir:
    """``job.json``, ``job.ipynb``, ``output.ipynb``, ``events.jsonl``, ``env/``, ``job.log``, ``build.log``,
    ``work/``, ``report.html`` of one job."""

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
    report = property(lambda self: self.path / "report.html")  # once the job ended (jupyter_promote.report)

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
