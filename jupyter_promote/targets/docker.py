"""The ``docker`` target: the runner in a container of the job's verified environment image.

The run directory is bind-mounted at its own path (output notebook, events and the log land there,
written as the invoking user); the notebook's folder is mounted read-only so relative data paths work.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from traitlets import Bool, Float, Unicode

from ..errors import TargetError, UsageError
from ..models import JobRecord, JobState, Resources
from ..rundir import RunDir
from .base import Target, TargetStatus, container_environment, memory_text

RUNNER = "/opt/promote/runner/bin/python"
LABEL_JOB = "io.jupyter-promote.job"
_ENTRY = "exec " + RUNNER + ' -m jupyter_promote.execute.runner "$0" >>"$0/job.log" 2>&1'


class DockerTarget(Target):
    """Runs the job in a container on a Docker engine (``DOCKER_HOST`` or the local socket)."""

    name: ClassVar[str] = "docker"
    display_name: ClassVar[str] = "Docker (container on this engine)"
    needs_image: ClassVar[bool] = True
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "CPU quota of N CPUs (NanoCpus) and OMP_NUM_THREADS",
        "memory": "hard memory limit, no swap; an OOM kill is reported as reason 'oom'",
        "gpus": "N GPUs through the NVIDIA runtime (DeviceRequest)",
        "time": "wall-clock limit enforced by the runner",
    }

    shm_size = Unicode("1g", help="Size of /dev/shm in the job container (PyTorch DataLoader workers need it).").tag(
        config=True
    )
    kill_grace = Float(10.0, help="Seconds between SIGTERM and SIGKILL when a job is cancelled.").tag(config=True)
    mount_notebook_dir = Bool(True, help="Mount the notebook's folder read-only at its own path.").tag(config=True)
    network_mode = Unicode("bridge", help="Network of the job container (bridge, none, host).").tag(config=True)

    def available(self) -> tuple[bool, str | None]:
        from ..image.docker_engine import client

        try:
            client()
        except Exception as exc:  # PromoteError with the reason, or docker-py missing
            return False, str(exc)
        return True, None

    def check_resources(self, resources: Resources) -> list[str]:
        if resources.gpus:
            from ..image.docker_engine import has_nvidia_runtime

            if not has_nvidia_runtime():
                raise TargetError(
                    f"--gpus {resources.gpus}: this Docker engine has no NVIDIA runtime "
                    "(install nvidia-container-toolkit and restart dockerd), so no GPU can be given to the job",
                    subject="gpus",
                )
        return super().check_resources(resources)

    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        from docker.types import DeviceRequest, Mount

        from ..image.docker_engine import client

        if not record.image:
            raise UsageError(
                f"job {record.id}: the docker target needs an image and the job has none", subject=record.id
            )
        res = record.resources
        # path -> read-only; as Mounts (the engine's structured API): a path with ',' or ':' stays one path
        binds = {str(run.path): False}
        shared = os.path.dirname(os.path.realpath(run.job_notebook))  # a sweep task links to its sweep's notebook
        if shared != os.path.realpath(run.path):
            binds.setdefault(shared, True)
        notebook_dir = record.inputs_folder
        if self.mount_notebook_dir and notebook_dir and os.path.isdir(notebook_dir):
            binds.setdefault(notebook_dir, True)
        mounts = [Mount(path, path, type="bind", read_only=ro) for path, ro in binds.items()]
        kwargs: dict[str, Any] = {}
        if res.memory_bytes:
            kwargs.update(mem_limit=res.memory_bytes, memswap_limit=res.memory_bytes)
        if res.cpus:
            kwargs["nano_cpus"] = int(res.cpus * 1e9)
        if res.gpus:
            kwargs["device_requests"] = [DeviceRequest(count=res.gpus, capabilities=[["gpu"]])]
        engine = await asyncio.to_thread(client)  # the engine's API blocks: never on the server's event loop
        container = await asyncio.to_thread(
            engine.containers.create,
            record.image["ref"],
            ["/bin/sh", "-c", _ENTRY, str(run.path)],
            entrypoint=[],
            init=True,
            user=f"{os.getuid()}:{os.getgid()}",
            working_dir=str(run.path),
            # secrets by value, in the container's environment when it runs: never in an image layer
            environment={**container_environment(record), **(secrets or {})},
            mounts=mounts,
            shm_size=self.shm_size,
            network_mode=self.network_mode,
            labels={LABEL_JOB: record.id, "io.jupyter-promote.run-dir": str(run.path)},
            **kwargs,
        )
        try:
            await asyncio.to_thread(container.start)
        except BaseException:  # refused at start (a device, a mount): nothing is left behind
            await asyncio.to_thread(container.remove, force=True)
            raise
        return {"container": container.id, "memory": res.memory_bytes}

    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        return await asyncio.to_thread(self._poll, handles)  # docker-py blocks: off the server's event loop

    def _poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        from docker.errors import NotFound

        from ..image.docker_engine import client

        engine = client()
        statuses: dict[str, TargetStatus] = {}
        for job_id, handle in handles.items():
            try:
                container = engine.containers.get(handle["container"])
                container.reload()
            except NotFound:
                statuses[job_id] = TargetStatus(None)  # already collected: the events say how it ended
                continue
            state = container.attrs["State"]
            if state["Status"] in ("created", "running", "restarting", "paused"):
                statuses[job_id] = TargetStatus(JobState.RUNNING)
                continue
            code = state.get("ExitCode")
            if state.get("OOMKilled"):
                limit = handle.get("memory")
                message = (
                    f"out of memory: the container hit its {memory_text(limit)} limit"
                    if limit
                    else "out of memory (OOM killed)"
                )
                statuses[job_id] = TargetStatus(JobState.FAILED, "oom", message, exit_code=code, overrides=True)
            elif handle.get("cancelled"):  # stopped by us, perhaps before the runner could say so itself
                statuses[job_id] = TargetStatus(JobState.CANCELLED, "cancelled", "cancelled", exit_code=code)
            else:
                statuses[job_id] = TargetStatus(None, exit_code=code)
            container.remove(force=True)  # collected: nothing is left behind
        return statuses

    async def cancel(self, handle: dict[str, Any]) -> None:
        from docker.errors import NotFound

        from ..image.docker_engine import client

        handle["cancelled"] = True

        def stop() -> None:
            try:
                client().containers.get(handle["container"]).stop(timeout=int(self.kill_grace))
            except NotFound:
                return

        await asyncio.to_thread(stop)
