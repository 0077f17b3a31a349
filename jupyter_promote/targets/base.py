"""The target contract: submit a job, poll many jobs at once, cancel, point at logs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from traitlets.config import LoggingConfigurable

from ..models import JobRecord, JobState, Resources
from ..rundir import RunDir
from ..runtime.inputs import STORAGE_OPTIONS_ENV
from ..secrets import job_environment


@dataclass(frozen=True)
class TargetStatus:
    """What a target knows of one job; ``state`` None means "ask the job's events"."""

    state: JobState | None
    reason: str | None = None
    message: str | None = None
    exit_code: int | None = None
    #: the target knows better than the runner's own last word (an OOM kill by the container's cgroup)
    overrides: bool = False


class Target(LoggingConfigurable):
    """A place jobs run. Subclasses set the class attributes and implement the four methods.

    Targets are traitlets ``Configurable``: their settings come from the Jupyter config files or the
    command line (``--LocalTarget.kill_grace=5``).
    """

    name: ClassVar[str]
    display_name: ClassVar[str]
    #: whether jobs run in the environment's container image (built and verified before submit)
    needs_image: ClassVar[bool] = False
    #: whether the job's nodes pull its image from a registry (then it is pushed there whenever one is configured)
    pulls_images: ClassVar[bool] = False
    #: whether the job's runner writes into the run directory itself (else its target relays what it writes)
    shares_run_dir: ClassVar[bool] = True
    #: which of the shared resource options this target honours, with what it does about each
    resource_support: ClassVar[dict[str, str]] = {}

    def default_max_parallel(self) -> int | None:
        """How many tasks of a sweep run at once when the user says nothing (None: all; a scheduler queues)."""
        return None

    def available(self) -> tuple[bool, str | None]:
        """Whether jobs can be submitted now, and why not."""
        return True, None

    def options_schema(self) -> dict[str, Any]:
        """JSON schema of the shared options vocabulary, as this target honours it."""
        props: dict[str, dict[str, Any]] = {
            "cpus": {"type": "integer", "minimum": 1, "title": "CPUs"},
            "memory": {"type": "string", "title": "Memory", "examples": ["4G"]},
            "gpus": {"type": "integer", "minimum": 0, "title": "GPUs"},
            "time": {"type": "string", "title": "Time limit", "examples": ["2h", "1:00:00"]},
        }
        for key, prop in props.items():
            prop["description"] = self.resource_support.get(key, "not supported by this target")
        return {"type": "object", "properties": props, "additionalProperties": False}

    def check_resources(self, resources: Resources) -> list[str]:
        """Warnings about options this target cannot honour (one line each)."""
        asked = {
            "cpus": resources.cpus,
            "memory": resources.memory_bytes,
            "gpus": resources.gpus,
            "time": resources.time_limit_s,
        }
        return [
            f"--{key}: not honoured by the {self.name} target"
            for key, value in asked.items()
            if value is not None and key not in self.resource_support
        ]

    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Start the job in ``run`` and return the handle to store in job.json. ``secrets`` are the values of
        the job's secrets read by the submitter (name -> value; :mod:`jupyter_promote.secrets`): delivered to
        the job at run time, as this target can, never written where jupyter-promote keeps anything."""
        raise NotImplementedError

    async def submit_array(
        self,
        records: list[JobRecord],
        runs: list[RunDir],
        sweep_dir: Path,
        max_parallel: int | None,
        secrets: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]] | None:
        """Submit the tasks of a sweep in one go (a Slurm job array) and return their handles, in order;
        None when this target takes jobs one at a time (the sweep then submits them one by one).
        """
        return None

    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        """The status of many jobs in one call: job id -> status."""
        raise NotImplementedError

    async def relay(self, record: JobRecord, run: RunDir, follow: bool = True) -> None:
        """Bring what the job wrote where it runs (its events, its files) into ``run``: for targets whose jobs
        do not share the run directory's filesystem. ``follow``: keep bringing them in as they come (a
        follower calls this at every poll); else bring what there is now and return."""

    async def cancel(self, handle: dict[str, Any]) -> None:
        """Stop a job (idempotent)."""
        raise NotImplementedError

    def log_path(self, run: RunDir, handle: dict[str, Any]) -> str:
        """Where the job's stdout/stderr accumulate."""
        return str(run.log)


def container_environment(record: JobRecord) -> dict[str, str]:
    """The job's environment in a container of its image (Docker, a Kubernetes pod): the job's own variables,
    then what the image's runner needs (a writable HOME and runtime directory, unbuffered output), and
    ``OMP_NUM_THREADS`` from ``--cpus``; the names of its secrets (their values are delivered apart)."""
    env = {**record.env, **job_environment(record.secrets, {})}
    env.update({"HOME": "/tmp", "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime", "PYTHONUNBUFFERED": "1"})
    if record.resources.cpus:
        env["OMP_NUM_THREADS"] = str(record.resources.cpus)
    return env


def memory_text(n: int, binary_suffix: str = "") -> str:
    """``n`` bytes as the engine writes its limits: ``128M`` (Docker), ``128Mi`` with ``binary_suffix="i"``
    (Kubernetes); ``N bytes`` when no unit divides it."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size}{unit}{binary_suffix}"
    return f"{n} bytes"


def data_environment(storage_options: dict[str, Any], data_cache: str) -> dict[str, str]:
    """What a job's runner on a cluster's node is told of its storage (:mod:`jupyter_promote.execute.job_data`):
    the target's storage options (JSON) and the node's cache of inputs, where the target names them."""
    import json

    env = {STORAGE_OPTIONS_ENV: json.dumps(storage_options)} if storage_options else {}
    return {**env, **({"PROMOTE_DATA_CACHE": data_cache} if data_cache else {})}
