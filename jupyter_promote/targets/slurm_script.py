"""The sbatch script of a job: directives from its resources and the site's settings, then one command
per container runtime. Deterministic (golden-tested).

Nothing a user typed is pasted into the script unquoted: parameter values never reach it at all (the
runner reads them from job.json), and every path or name that does is ``shlex.quote``-d or checked to be
a plain token.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..models import Resources
from ..runtime.masking import NAMES_ENV

#: The file beside a job (in its run directory) holding the secrets the submitter read: 0600, read and
#: removed by the batch script when the job starts.
SECRETS_FILE = ".promote-secrets"
RUNTIMES = ("none", "docker", "podman", "apptainer", "enroot")
# what a #SBATCH value may hold: sbatch reads these lines itself (bash never does), so only whitespace and
# line breaks could smuggle in another directive; constraint expressions keep their |&*()[]!
_TOKEN = re.compile(r"^[A-Za-z0-9_.,:@%+=/|&*()\[\]!-]+$")


@dataclass(frozen=True)
class SiteSettings:
    """What the site configures on :class:`~jupyter_promote.targets.slurm.SlurmTarget`."""

    partition: str = ""
    account: str = ""
    qos: str = ""
    constraint: str = ""
    gpu_directive: str = "gres"  # "gres" -> --gres=gpu:N, "gpus" -> --gpus=N
    extra_directives: tuple[str, ...] = ()
    skip_directives: tuple[str, ...] = ()
    prologue: str = ""
    epilogue: str = ""
    container_runtime: str = "none"
    container_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class JobScript:
    """One job (or one job array) to render."""

    job_name: str
    run_dir: str  # for an array: the folder holding the tasks' run directories (tasks/INDEX)
    notebook_dir: str
    resources: Resources
    python: str  # the interpreter that runs jupyter_promote on the node (runtime "none")
    image: str = ""  # the environment image (container runtimes)
    env: dict[str, str] = field(default_factory=dict)
    array: str = ""  # e.g. "0-99%10"
    venv_cache: str = ""
    secrets: tuple[str, ...] = ()  # the names of the job's secrets (their values never reach the script)
    node_files: tuple[tuple[str, str], ...] = ()  # (name, path) of the secrets read from a file on the node
    retries: int = 0  # --retries: Slurm may run the job again (requeue) only when the job allows attempts


def directives(job: JobScript, site: SiteSettings) -> list[str]:
    res = job.resources
    wanted: list[tuple[str, str]] = [("--job-name", job.job_name)]
    if job.array:
        wanted.append(("--array", job.array))
    if res.cpus:
        wanted.append(("--cpus-per-task", str(res.cpus)))
    if res.memory_bytes:
        wanted.append(("--mem", f"{max(1, -(-res.memory_bytes // (1 << 20)))}M"))
    if res.gpus:
        wanted.append(("--gpus", str(res.gpus)) if site.gpu_directive == "gpus" else ("--gres", f"gpu:{res.gpus}"))
    if res.time_limit_s:
        minutes = max(1, -(-res.time_limit_s // 60))
        wanted.append(("--time", f"{minutes // 1440}-{minutes % 1440 // 60:02d}:{minutes % 60:02d}:00"))
    for option, value in (
        ("--partition", site.partition),
        ("--account", site.account),
        ("--qos", site.qos),
        ("--constraint", site.constraint),
    ):
        if value:
            wanted.append((option, value))
    lines = []
    skip = {s if s.startswith("-") else f"--{s}" for s in site.skip_directives}
    for option, value in wanted:
        if option in skip:
            continue
        if not _TOKEN.match(value):
            raise UsageError(f"{option} {value!r}: not a plain Slurm value (no spaces or line breaks)", subject=option)
        lines.append(f"#SBATCH {option}={value}")
    # a preempted job, a failed node or `scontrol requeue`: Slurm runs the job again (an attempt) only with
    # --retries; without, it ends (preempted, node_fail) and a requeue is refused
    requeue = "--requeue" if job.retries else "--no-requeue"
    if not {"--requeue", "--no-requeue"} & skip:
        lines.append(f"#SBATCH {requeue}")
    for extra in site.extra_directives:
        if "\n" in extra:
            raise UsageError(
                f"SlurmTarget.extra_directives {extra!r}: one directive per entry", subject="extra_directives"
            )
        lines.append(f"#SBATCH {extra.strip()}")
    return lines


def _runner_command(job: JobScript, site: SiteSettings, run_dir: str) -> list[str]:
    """The lines that run the job on the node: in a venv recreated from the lock, or in the job's image."""
    runtime = site.container_runtime
    q = shlex.quote
    if runtime == "none":
        return [
            f"venv=$({q(job.python)} -m jupyter_promote.image.venv ensure {run_dir} {q(job.venv_cache)}) || exit 4",
            'export JUPYTER_PATH="$venv/share/jupyter${JUPYTER_PATH:+:$JUPYTER_PATH}"',
            "export JUPYTER_PROMOTE_KERNEL=promote-frozen",
            f"{q(job.python)} -m jupyter_promote.execute.runner {run_dir}",
        ]
    for path in (job.run_dir, job.notebook_dir):  # bind syntaxes split on both, and none has an escape
        if "," in path or ":" in path:
            raise UsageError(
                f"{path}: a folder whose path has ',' or ':' cannot be bound into a {runtime} container; "
                "rename it, or run on the node's venv (SlurmTarget.container_runtime = 'none')",
                subject=path,
            )
    if runtime not in _CONTAINER_COMMANDS:
        raise UsageError(
            f"SlurmTarget.container_runtime {runtime!r}: not one of {', '.join(RUNTIMES)}", subject="container_runtime"
        )
    # a sweep's tasks link to the job notebook and environment in the sweep folder: mount all of it
    root = q(job.run_dir) if job.array else run_dir
    names = set(job.env) | ({"OMP_NUM_THREADS"} if job.resources.cpus else set()) | set(job.secrets)
    if job.secrets:
        names.add(NAMES_ENV)
    container = _Container(
        mounts=(f"{root}:{root}", f"{q(job.notebook_dir)}:{q(job.notebook_dir)}:ro"),
        runner="/opt/promote/runner/bin/python -m jupyter_promote.execute.runner " + run_dir,
        extra=" ".join(q(a) for a in site.container_args),
        envs=" ".join(f"-e {name}" for name in sorted(names)),  # values come from the exports above
    )
    parts = _CONTAINER_COMMANDS[runtime](job, runtime, container)
    return [" ".join(p for p in parts if p)]


@dataclass(frozen=True)
class _Container:
    """What every container runtime's command is made of (each already quoted for the shell)."""

    mounts: tuple[str, ...]  # host:container[:ro]
    runner: str  # the runner's command inside the image
    extra: str  # SlurmTarget.container_args
    envs: str  # ``-e NAME`` for each exported variable the job sees


def _docker_command(job: JobScript, runtime: str, c: _Container) -> list[str]:
    """docker or podman: the image run as the submitting user, with the job's CPU and memory as limits."""
    name = f'promote-"$SLURM_JOB_ID"{"-$SLURM_ARRAY_TASK_ID" if job.array else ""}'
    limits = []
    if job.resources.cpus:
        limits.append(f"--cpus={job.resources.cpus}")
    if job.resources.memory_bytes:
        limits.append(f"--memory={job.resources.memory_bytes} --memory-swap={job.resources.memory_bytes}")
    mounts = [f"-v {m}" for m in c.mounts]
    user = '--user="$(id -u):$(id -g)"'
    environment = ["-e HOME=/tmp", "-e PYTHONUNBUFFERED=1", c.envs]
    image = ["--entrypoint=", shlex.quote(job.image), c.runner]
    return [runtime, "run", "--rm", "--init", f"--name={name}", user, *mounts, *environment, *limits, c.extra, *image]


def _apptainer_command(job: JobScript, runtime: str, c: _Container) -> list[str]:
    """apptainer: the image pulled from its registry, contained, with a clean environment."""
    isolation = ["--containall", "--cleanenv", f"--bind={','.join(c.mounts)}", "--env=HOME=/tmp"]
    return ["apptainer", "exec", *isolation, c.extra, shlex.quote(f"docker://{job.image}"), c.runner]


def _enroot_command(job: JobScript, runtime: str, c: _Container) -> list[str]:
    """enroot through pyxis, Slurm's enroot plugin: ``srun`` with the image as a container option."""
    registry = "/" in job.image and "." in job.image.split("/", 1)[0]
    image = job.image.replace("/", "#", 1) if registry else job.image
    container = [f"--container-image={shlex.quote(image)}", f"--container-mounts={','.join(c.mounts)}"]
    isolation = ["--container-workdir=/tmp", "--no-container-mount-home"]
    return ["srun", "--ntasks=1", *container, *isolation, c.extra, c.runner]


_CONTAINER_COMMANDS: dict[str, Callable[[JobScript, str, _Container], list[str]]] = {
    "docker": _docker_command,
    "podman": _docker_command,
    "apptainer": _apptainer_command,
    "enroot": _enroot_command,
}


def _secret_lines(job: JobScript) -> list[str]:
    """The job's secrets into its environment: those the submitter read from the 0600 file it wrote beside
    the job (:data:`SECRETS_FILE`, removed once read), those on the node from their files."""
    if not job.secrets:
        return []
    q = shlex.quote
    held = f'"$PROMOTE_RUN_DIR"/{SECRETS_FILE}'
    lines = ["# the job's secrets: by reference here, their values only in the job's environment"]
    # removed once read; a job Slurm may run again (--retries) reads it at each start and removes it at its end
    gone = "" if job.retries else f" rm -f {held};"
    lines.append(f"if [ -f {held} ]; then . {held};{gone} fi")
    for name, path in job.node_files:
        failed = f"echo {q(f'jupyter-promote: secret {name}: node-file:{path} cannot be read on this node')} >&2"
        lines.append(f'{name}="$(cat {q(path)})" || {{ {failed}; exit 1; }}; export {name}')
    lines.append(f"export {NAMES_ENV}={q(','.join(sorted(job.secrets)))}")
    return lines


def render(job: JobScript, site: SiteSettings) -> str:
    """The whole batch script."""
    q = shlex.quote
    run_dir = '"$PROMOTE_RUN_DIR"'
    lines = ["#!/bin/bash", f"# jupyter-promote job {job.job_name} (container runtime: {site.container_runtime})"]
    lines += directives(job, site)
    lines += ["", "set -uo pipefail"]
    if job.array:
        lines.append(f'export PROMOTE_RUN_DIR={q(job.run_dir)}/tasks/"$SLURM_ARRAY_TASK_ID"')
    else:
        lines.append(f"export PROMOTE_RUN_DIR={q(job.run_dir)}")
    env = dict(job.env)
    if job.resources.cpus:
        env["OMP_NUM_THREADS"] = str(job.resources.cpus)
    for name, value in sorted(env.items()):
        lines.append(f"export {name}={q(value)}")
    lines += _secret_lines(job)
    lines.append('cd "$PROMOTE_RUN_DIR"')
    if site.prologue.strip():
        lines += ["# site prologue", site.prologue.strip()]
    lines += _runner_command(job, site, run_dir)
    lines.append("status=$?")
    if job.secrets and job.retries:
        lines.append(f'rm -f "$PROMOTE_RUN_DIR"/{SECRETS_FILE}')
    if site.epilogue.strip():
        lines += ["# site epilogue", site.epilogue.strip()]
    lines.append("exit $status")
    return "\n".join(lines) + "\n"


def hold_secrets(run_dir: Path, secrets: Mapping[str, str] | None) -> None:
    """The values of a job's secrets, as shell assignments in a file only its owner can read, beside the job:
    the batch script reads it on the node and removes it (a shared filesystem carries it, nothing else)."""
    if not secrets:
        return
    text = "".join(f"export {name}={shlex.quote(value)}\n" for name, value in sorted(secrets.items()))
    path = run_dir / SECRETS_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(text)
