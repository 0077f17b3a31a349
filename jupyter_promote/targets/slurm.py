"""The ``slurm`` target: the job as an ``sbatch`` batch job, followed with one ``squeue`` call per poll.

The run directory must be on a filesystem the nodes share (as home and project directories are on HPC
sites): the batch script, job.json, the events and the log live there. Job state comes from ``squeue
--states=all``, which knows finished jobs for ``MinJobAge`` (300 s by default) after they end; the runner's
own final event says how a job that ran to its end finished. No accounting database is needed. The batch
script is :mod:`.slurm_script`'s; what Slurm's states mean is :mod:`.slurm_states`'s.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from traitlets import Enum, Float, List, Unicode, default

from ..errors import TargetError
from ..models import JobRecord, JobState
from ..rundir import RunDir
from .base import Target, TargetStatus
from .slurm_script import RUNTIMES, JobScript, SiteSettings, hold_secrets, render
from .slurm_states import slurm_status, vanished_status

__all__ = ["SlurmTarget", "laid_out_as_array", "slurm_status"]


class SlurmTarget(Target):
    """Submits jobs with ``sbatch`` to a Slurm cluster whose nodes share this machine's filesystem."""

    name: ClassVar[str] = "slurm"
    display_name: ClassVar[str] = "Slurm cluster"
    resource_support: ClassVar[dict[str, str]] = {
        "cpus": "--cpus-per-task=N, and OMP_NUM_THREADS",
        "memory": "--mem (Slurm kills a job over it: reason 'oom' where the cluster reports it)",
        "gpus": "--gres=gpu:N (or --gpus=N, SlurmTarget.gpu_directive)",
        "time": "--time; Slurm stops the job at the limit (reason 'timeout')",
    }

    partition = Unicode("", help="--partition of every job (empty: the cluster's default).").tag(config=True)
    account = Unicode("", help="--account to charge.").tag(config=True)
    qos = Unicode("", help="--qos of every job.").tag(config=True)
    constraint = Unicode("", help="--constraint (node features), e.g. 'a100|h100'.").tag(config=True)
    gpu_directive = Enum(["gres", "gpus"], "gres", help="How GPUs are asked for: --gres=gpu:N or --gpus=N.").tag(
        config=True
    )
    extra_directives = List(Unicode(), help="Extra #SBATCH lines, e.g. ['--exclusive', '--reservation=demo'].").tag(
        config=True
    )
    skip_directives = List(Unicode(), help="Directives never written, e.g. ['--mem'] on a site that forbids it.").tag(
        config=True
    )
    prologue = Unicode("", help="Shell lines run before the job, e.g. 'module load cuda/12.4'.").tag(config=True)
    epilogue = Unicode("", help="Shell lines run after the job (its exit status is kept).").tag(config=True)
    container_runtime = Enum(
        list(RUNTIMES),
        "none",
        help="How the job gets its environment on the node: docker, podman, apptainer, enroot (pyxis), or none "
        "(a virtual environment recreated from the lock, cached by its hash in venv_cache).",
    ).tag(config=True)
    container_args = List(Unicode(), help="Extra arguments of the container command (podman: --ulimit ...).").tag(
        config=True
    )
    python = Unicode(sys.executable, help="The interpreter with jupyter_promote on the nodes (runtime none).").tag(
        config=True
    )
    venv_cache = Unicode(help="Shared folder of the nodes' environments (runtime none).").tag(config=True)
    sbatch = Unicode("sbatch", help="The sbatch command.").tag(config=True)
    squeue = Unicode("squeue", help="The squeue command.").tag(config=True)
    scancel = Unicode("scancel", help="The scancel command.").tag(config=True)
    poll_interval = Float(1.0, help="Seconds between squeue calls while jobs change.").tag(config=True)
    poll_max_interval = Float(10.0, help="Longest wait between squeue calls, backing off while nothing changes.").tag(
        config=True
    )

    @default("venv_cache")
    def _default_venv_cache(self) -> str:
        return os.path.join(os.path.expanduser("~"), ".cache", "jupyter-promote", "venvs")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._watched: dict[str, str] = {}  # slurm job id -> our job id
        self._statuses: dict[str, TargetStatus] = {}
        self._last_query = 0.0
        self._interval = self.poll_interval
        self._query_lock = asyncio.Lock()
        self.commands_run = 0  # squeue calls so far (the benchmark's "commands per poll")
        self._availability: tuple[float, tuple[bool, str | None]] | None = None

    @property
    def needs_image(self) -> bool:  # type: ignore[override]
        return self.container_runtime != "none"

    def site(self) -> SiteSettings:
        return SiteSettings(
            partition=self.partition,
            account=self.account,
            qos=self.qos,
            constraint=self.constraint,
            gpu_directive=self.gpu_directive,
            extra_directives=tuple(self.extra_directives),
            skip_directives=tuple(self.skip_directives),
            prologue=self.prologue,
            epilogue=self.epilogue,
            container_runtime=self.container_runtime,
            container_args=tuple(self.container_args),
        )

    # ---- availability --------------------------------------------------------------------------
    def available(self) -> tuple[bool, str | None]:
        now = time.monotonic()
        if self._availability and now - self._availability[0] < 15:
            return self._availability[1]
        import subprocess

        if shutil.which(self.sbatch) is None:
            answer: tuple[bool, str | None] = (False, f"{self.sbatch} is not on PATH (no Slurm client here)")
        else:
            try:
                out = subprocess.run(
                    [self.squeue, "-h", "-o", "%i", "--jobs=1"], capture_output=True, text=True, timeout=5, check=False
                )
                broken = out.returncode != 0 and "Invalid job id" not in out.stderr
                answer = (
                    (False, f"the Slurm controller does not answer: {out.stderr.strip()[:200]}")
                    if broken
                    else (True, None)
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                answer = (False, f"the Slurm controller does not answer: {exc}")
        self._availability = (now, answer)
        return answer

    # ---- submit ---------------------------------------------------------------------------------
    def script_for(self, record: JobRecord, run: RunDir | Path, array: str = "") -> str:
        """The batch script of ``record`` (for an array: of all its tasks, run directories ``run/tasks/N``)."""
        image = ""
        if self.needs_image and record.image:
            image = record.image.get("digest") or record.image["ref"]
        env = {k: v for k, v in record.env.items() if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k)}
        job = JobScript(
            job_name=_job_name(record.notebook),
            run_dir=str(run.path if isinstance(run, RunDir) else run),
            notebook_dir=record.inputs_folder,
            resources=record.resources,
            python=self.python,
            image=image,
            env=env,
            array=array,
            venv_cache=self.venv_cache,
            secrets=tuple(sorted(record.secrets)),
            retries=record.retries,
            node_files=tuple(
                (name, source.removeprefix("node-file:"))
                for name, source in sorted(record.secrets.items())
                if source.startswith("node-file:")
            ),
        )
        return render(job, self.site())

    async def submit(self, record: JobRecord, run: RunDir, secrets: Mapping[str, str] | None = None) -> dict[str, Any]:
        script = run.path / "job.sbatch"
        script.write_text(self.script_for(record, run))
        hold_secrets(run.path, secrets)
        job_id = await self.sbatch_script(script, run.log, run.path)
        self._watched[job_id] = record.id
        return {"job_id": job_id}

    async def submit_array(
        self,
        records: list[JobRecord],
        runs: list[RunDir],
        sweep_dir: Path,
        max_parallel: int | None,
        secrets: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]] | None:
        """One ``sbatch --array`` for every task; each task reads its own run directory by its index."""
        if not laid_out_as_array(runs, sweep_dir):
            return None  # not laid out as a sweep: one by one
        sweep_dir = sweep_dir.resolve()  # the script and sbatch's --chdir and --output name it whatever the cwd
        array = f"0-{len(records) - 1}" + (f"%{max_parallel}" if max_parallel else "")
        script = sweep_dir / "job.sbatch"
        script.write_text(self.script_for(records[0], sweep_dir, array))
        for run in runs:
            hold_secrets(run.path, secrets)
        array_id = await self.sbatch_script(script, sweep_dir / "tasks" / "%a" / "job.log", sweep_dir)
        handles = [{"job_id": f"{array_id}_{i}", "array": array_id} for i in range(len(records))]
        for record, handle in zip(records, handles, strict=True):
            self._watched[handle["job_id"]] = record.id
            # just accepted: waiting in the queue. A task scancelled before the first squeue (a loaded machine)
            # leaves no row, and one never seen waiting would read as gone without a word (lost), not cancelled
            waiting = f"submitted as task {handle['job_id']} of job array {array_id}"
            self._statuses[handle["job_id"]] = TargetStatus(JobState.QUEUED, "pending", waiting)
        return handles

    async def sbatch_script(self, script: Path, log: Path, cwd: Path) -> str:
        """Submit a rendered script; the Slurm job id, or a :class:`TargetError` carrying sbatch's message."""
        proc = await asyncio.create_subprocess_exec(
            self.sbatch,
            "--parsable",
            f"--output={log}",
            "--open-mode=append",
            f"--chdir={cwd}",
            str(script),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            lines = [
                ln.removeprefix("sbatch: error: ").strip()
                for ln in err.decode(errors="replace").splitlines()
                if ln.strip()
            ]
            raise TargetError(
                f"sbatch refused the job: {'; '.join(lines) or f'exit {proc.returncode}'}", subject="slurm"
            )
        return out.decode().strip().split(";")[0]

    # ---- poll -----------------------------------------------------------------------------------
    async def poll(self, handles: dict[str, dict[str, Any]]) -> dict[str, TargetStatus]:
        """Answers from one ``squeue`` call that covers every job this target follows: many jobs' poll
        loops share it, and it is repeated no faster than ``poll_interval`` (backing off while nothing changes).
        """
        wanted = {str(h["job_id"]): job_id for job_id, h in handles.items()}
        self._watched.update(wanted)
        async with self._query_lock:
            stale = time.monotonic() - self._last_query >= self._interval
            if stale or any(slurm_id not in self._statuses for slurm_id in wanted):
                await self._query()
        return {job_id: self._statuses.get(slurm_id, TargetStatus(None)) for slurm_id, job_id in wanted.items()}

    async def _query(self) -> None:
        ids = sorted(self._watched, key=lambda i: (len(i), i))
        jobs = sorted({i.split("_")[0] for i in ids}, key=lambda i: (len(i), i))  # an array's tasks: its id
        self.commands_run += 1
        proc = await asyncio.create_subprocess_exec(
            self.squeue,
            "-h",
            "-r",
            "--states=all",
            f"--jobs={','.join(jobs)}",
            "-o",
            "%i|%T|%r",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await proc.communicate()
        self._last_query = time.monotonic()
        if proc.returncode != 0 and "Invalid job id" not in err.decode(errors="replace"):
            self.log.warning(
                "jupyter-promote: squeue failed (%s); keeping the last known states", err.decode().strip()[:200]
            )
            self._interval = min(self.poll_max_interval, self._interval * 2)
            return
        seen: dict[str, TargetStatus] = {}
        for line in out.decode(errors="replace").splitlines():
            parts = line.strip().split("|")
            if len(parts) >= 3:
                seen[parts[0]] = slurm_status(parts[1], parts[2])
        changed = False
        for slurm_id in ids:
            last = self._statuses.get(slurm_id)  # gone from squeue: ask the events (or cancelled while pending)
            status = seen[slurm_id] if slurm_id in seen else vanished_status(slurm_id, last, set(seen))
            changed |= last != status
            self._statuses[slurm_id] = status
            if status.state is None or status.state.final:
                self._watched.pop(slurm_id, None)
        self._interval = self.poll_interval if changed else min(self.poll_max_interval, self._interval * 1.5)

    # ---- cancel ---------------------------------------------------------------------------------
    async def cancel(self, handle: dict[str, Any]) -> None:
        proc = await asyncio.create_subprocess_exec(
            self.scancel, str(handle["job_id"]), stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
        )
        await proc.communicate()  # a job that already ended: nothing to do (idempotent)
        self._interval = self.poll_interval
        self._last_query = 0.0


def laid_out_as_array(runs: list[RunDir], sweep_dir: Path) -> bool:
    """Whether the tasks' run directories are ``sweep_dir/tasks/0..N-1``, as one job array reads them by index."""
    root = sweep_dir.resolve()  # `--out sw` from the submitting shell's folder: the same folders, resolved
    return [r.path.resolve() for r in runs] == [root / "tasks" / str(i) for i in range(len(runs))]


def _job_name(notebook: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(notebook).stem)[:40].strip("_.-") or "notebook"
    return f"promote-{stem}"
