"""The ``ray`` target: a Ray Job per promoted notebook, through Ray's job submission client.

The cluster shares no filesystem with the submitter. What the job needs travels with it as Ray packages:
its ``working_dir`` holds ``job.json``, ``job.ipynb`` and the manifest of the notebook's folder; its
``py_modules`` hold the frozen environment (lock, requirements and, unless ``ship_wheels`` is off, the
lock's wheels: clusters often reach no package index), the notebook's folder (up to ``max_inputs_mb``) and
this package's runner (unless ``ship_runner`` is off), in shards and parts (:mod:`..image.shipped`) of at
most ``max_upload_mb`` zipped (Ray's dashboard refuses over 100 MiB), named by content: uploaded once per
cluster. Ray's SDK messages go to the job's ``build.log``, never the terminal. On the node,
``jupyter_promote.execute.remote`` checks what arrived, makes the environment's verified venv (cached by the
lock's hash) and runs the job; its events and files come back through the job's log, followed here.

States: PENDING -> queued, RUNNING -> running, SUCCEEDED/FAILED -> the runner's own final event (else
``lost`` with the driver's exit code; ``environment`` when Ray could not set the job's runtime up),
STOPPED -> cancelled, a job the cluster does not know -> ``lost``. A sweep is one submission per task:
Ray queues what the cluster's CPUs cannot take yet (each job asks ``entrypoint_num_cpus``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from traitlets import Bool, Dict, Int, Unicode

from ..channel.keys import job_key
from ..channel.receiver import Receiver
from ..errors import TargetError
from ..image.shipped import environment_folders
from ..models import JobRecord, JobState
from ..rundir import RunDir
from ..runtime.checkpoints import CHECKPOINT_ENV
from ..runtime.signing import KEY_ENV
from ..secrets import job_environment
from .base import Target, TargetStatus, data_environment
from .inputs import carry_hidden_setting
from .ray_sdk_log import route_sdk_log, sdk_log_into
from .ray_upload import check_sizes, runner_copy, upload_dir

#: Seconds a job Ray reports ended may still be bringing its log in before it is taken as ended.
LOG_GRACE_S = 60.0


class RayTarget(Target):
    """Runs the job as a Ray Job on the cluster whose dashboard is at ``address``."""

    name: ClassVar[str] = "ray"
    display_name: ClassVar[str] = "Ray (a job on a Ray cluster)"
    shares_run_dir: ClassVar[bool] = False
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "entrypoint_num_cpus (Ray queues the job until a node has them) and OMP_NUM_THREADS",
        "memory": "entrypoint_memory (scheduling only: Ray does not cap the job's memory)",
        "gpus": "entrypoint_num_gpus",
        "time": "wall-clock limit enforced by the runner",
    }

    address = Unicode("http://127.0.0.1:8265", help="The Ray dashboard's address (RAY_ADDRESS style).").tag(config=True)
    python = Unicode(
        "python3",
        help="The interpreter on the cluster's nodes (with papermill and ipykernel's client) that runs the job runner.",
    ).tag(config=True)
    venv_cache = Unicode(
        "",
        help="Where the nodes keep the jobs' environments (default: "
        "~/.cache/jupyter-promote/venvs of the user Ray runs as).",
    ).tag(config=True)
    ship_wheels = Bool(
        True,
        help="Send the lock's wheels with the environment (for clusters without a "
        "package index); off: the nodes' pip installs the pins from their own index.",
    ).tag(config=True)
    ship_runner = Bool(
        True,
        help="Send this jupyter-promote with each job (py_modules), so that the nodes "
        "need only its dependencies and always run the submitter's version.",
    ).tag(config=True)
    max_inputs_mb = Int(100, help="The most MiB of the notebook's folder sent with a job.").tag(config=True)
    max_upload_mb = Int(
        48,
        help="The most MiB Ray is sent in one request: the environment and the notebook's folder go in "
        "shards and parts of at most this (the dashboard refuses over 100 MiB; a proxy in front may refuse less).",
    ).tag(config=True)
    carry_hidden = carry_hidden_setting()
    runtime_env = Dict(help="More runtime_env fields for every job (env_vars, container, ...).").tag(config=True)
    storage_options = Dict(
        help="fsspec's options as the cluster's nodes reach the storage of --data and artifacts_url, over "
        "c.PromoteSettings.storage_options (e.g. another endpoint_url inside the cluster's network).",
    ).tag(config=True)
    data_cache = Unicode(
        "",
        help="The node's cache of --data inputs (by content; a second job on the node downloads nothing). Empty: "
        "~/.cache/jupyter-promote/data of the user the cluster runs jobs as.",
    ).tag(config=True)
    checkpoint_root = Unicode(
        "",
        help="A folder every node of the cluster shares (NFS, a mounted volume), writable by the cluster's jobs: a "
        "job's checkpoints (promote.checkpoint_dir()) go to ROOT/JOB_ID and survive its attempts. Empty: the "
        "job's own scratch folder, gone with the attempt (a retried job restarts from the top).",
    ).tag(config=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._client: Any = None
        self._tails: dict[str, asyncio.Task[None]] = {}
        self._tailed: set[str] = set()  # jobs whose whole log has been read
        # a tail taken up again goes on where the last one stopped, with the same receiver
        self._receivers: dict[str, tuple[Receiver, int]] = {}  # job -> (its receiver, characters it read)
        self._ended_at: dict[str, float] = {}

    # -- the cluster ---------------------------------------------------------------------------------------
    def client(self) -> Any:
        if self._client is None:
            try:
                from ray.job_submission import JobSubmissionClient
            except ImportError:
                raise TargetError("the ray target needs Ray's client: pip install 'jupyter-promote[ray]'") from None
            route_sdk_log()  # its uploads and warnings, line by line: the build log's, not the terminal's
            try:
                self._client = JobSubmissionClient(self.address)
            except Exception as exc:
                raise TargetError(
                    f"no Ray cluster answers at {self.address}: {str(exc).splitlines()[0][:200]}", subject=self.address
                ) from None
        return self._client

    def available(self) -> tuple[bool, str | None]:
        try:
            self.client()
        except TargetError as exc:
            return False, str(exc)
        return True, None

    # -- submit -----------------------------------------------------------------------------------------
    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self._submit, record, run, dict(secrets or {}))

    def _submit(self, record: JobRecord, run: RunDir, secrets: dict[str, str]) -> dict[str, Any]:
        self._tailed.discard(record.id)  # what an earlier attempt left: its log is another Ray job's
        self._receivers.pop(record.id, None)
        self._ended_at.pop(record.id, None)
        cap = self.max_upload_mb << 20
        scratch = Path(tempfile.mkdtemp(prefix=".ray-upload-", dir=run.path))
        try:
            folders = environment_folders(run.env_dir, with_wheels=self.ship_wheels, cap=cap)
            upload, inputs = upload_dir(record, run, scratch, cap, self.max_inputs_mb, self.carry_hidden)
            py_modules = [*folders, *inputs] + ([runner_copy(scratch)] if self.ship_runner else [])
            check_sizes([upload, *py_modules], cap, self.max_upload_mb)
            sdk_log_into(run.build_log)
            return self._send(record, run, upload, folders[0].name, [str(f) for f in py_modules], secrets)
        finally:
            sdk_log_into(None)
            shutil.rmtree(scratch, ignore_errors=True)

    def _send(
        self, record: JobRecord, run: RunDir, upload: Path, env: str, py_modules: list[str], secrets: dict[str, str]
    ) -> dict[str, Any]:
        env_vars = {"PYTHONUNBUFFERED": "1", **record.env, KEY_ENV: job_key(run.path).hex()}
        # the job's secrets in its runtime_env: whoever may read this cluster's jobs may read them (README)
        env_vars.update(job_environment(record.secrets, secrets))
        env_vars.update(data_environment(self.storage_options, self.data_cache))
        if self.checkpoint_root:
            env_vars[CHECKPOINT_ENV] = f"{self.checkpoint_root.rstrip('/')}/{record.id}"
        if record.resources.cpus:
            env_vars["OMP_NUM_THREADS"] = str(record.resources.cpus)
        runtime_env = {
            **self.runtime_env,
            "working_dir": str(upload),
            "py_modules": py_modules,
            "env_vars": {**self.runtime_env.get("env_vars", {}), **env_vars},
        }
        entrypoint = (
            f"{shlex.quote(self.python)} -m jupyter_promote.execute.remote {env} {shlex.quote(self.venv_cache)}"
        )
        options: dict[str, Any] = {"entrypoint_num_cpus": record.resources.cpus or 1}
        if record.resources.gpus:
            options["entrypoint_num_gpus"] = record.resources.gpus
        if record.resources.memory_bytes:
            options["entrypoint_memory"] = record.resources.memory_bytes
        try:
            submission_id = self.client().submit_job(
                entrypoint=entrypoint,
                runtime_env=runtime_env,
                # each attempt is a Ray job of its own (a submission id is never reused)
                submission_id=f"promote-{record.id}" + (f"-{record.attempt}" if record.attempt > 1 else ""),
                metadata={"jupyter-promote-job": record.id},
                **options,
            )
        except TargetError:
            raise
        except Exception as exc:
            first = (str(exc).strip() or type(exc).__name__).splitlines()[0][:300].rstrip(".")
            if "413" in first or "body size" in first:  # a proxy in front of the dashboard that takes less
                first += f"; lower RayTarget.max_upload_mb ({self.max_upload_mb}) below the cluster's limit"
            raise TargetError(
                f"the Ray cluster at {self.address} refused the job: {first}", subject=self.address
            ) from None
        return {"address": self.address, "submission_id": submission_id}

    # -- follow -----------------------------------------------------------------------------------------
    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        return {job_id: await asyncio.to_thread(self._status, job_id, h) for job_id, h in handles.items()}

    def _status(self, job_id: str, handle: dict[str, Any]) -> TargetStatus:
        from ray.job_submission import JobStatus

        sid = handle["submission_id"]
        try:
            info = self.client().get_job_info(sid)
        except RuntimeError as exc:
            if "does not exist" not in str(exc) and "404" not in str(exc):
                raise
            return TargetStatus(
                JobState.FAILED,
                "lost",
                f"the Ray cluster at {self.address} has no job {sid} (restarted, or it forgot the job)",
            )
        status = info.status
        if status is JobStatus.PENDING:
            return TargetStatus(JobState.QUEUED, "pending", info.message)
        if status is JobStatus.RUNNING:
            return TargetStatus(JobState.RUNNING)
        if job_id in self._tails and job_id not in self._tailed:  # its last events may still be on their way
            ended = self._ended_at.setdefault(job_id, time.monotonic())
            if time.monotonic() - ended < LOG_GRACE_S:
                return TargetStatus(JobState.RUNNING)
        if status is JobStatus.STOPPED:
            return TargetStatus(JobState.CANCELLED, "cancelled", "stopped on the Ray cluster")
        if status is JobStatus.FAILED and str(info.error_type or "").upper().startswith("RUNTIME_ENV"):
            return TargetStatus(JobState.FAILED, "environment", (info.message or "").splitlines()[0][:300])
        return TargetStatus(None, message=info.message, exit_code=info.driver_exit_code)

    async def relay(self, record: JobRecord, run: RunDir, follow: bool = True) -> None:
        handle = record.handle
        if not handle:
            return
        if not follow:  # one look (``jupyter promote status``): what the log holds now
            text = await asyncio.to_thread(self.client().get_job_logs, handle["submission_id"])
            Receiver(run, record.id).feed(text + "\n")
            return
        task = self._tails.get(record.id)
        if record.id in self._tailed or (task is not None and not task.done()):
            return
        self._tails[record.id] = asyncio.get_running_loop().create_task(self._tail(record, run))

    async def _tail(self, record: JobRecord, run: RunDir) -> None:
        """Ray's log tail of the job into its run directory. Ray's tail always starts at the log's start:
        what an earlier tail of this server read is skipped here (what was relayed before a restart is
        skipped by seq); a broken stream is taken up again at the next poll."""
        receiver, done = self._receivers.get(record.id) or (Receiver(run, record.id), 0)
        seen = 0
        try:
            async for chunk in self.client().tail_job_logs(record.handle["submission_id"]):
                new = chunk[max(0, done - seen) :]
                seen += len(chunk)
                if new:
                    receiver.feed(new)
                    done = seen
                    self._receivers[record.id] = (receiver, done)
        except Exception as exc:
            self.log.warning("jupyter-promote: the log of Ray job %s broke off (%s); reading it again", record.id, exc)
            return
        receiver.feed("\n")
        self._tailed.add(record.id)

    async def cancel(self, handle: dict[str, Any]) -> None:
        with contextlib.suppress(RuntimeError):  # a job the cluster no longer knows: nothing to stop
            await asyncio.to_thread(self.client().stop_job, handle["submission_id"])
