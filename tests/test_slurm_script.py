"""The Slurm batch script without a cluster: golden scripts per container runtime, directives, quoting,
and the mapping of Slurm's job states."""

from __future__ import annotations

import os
import shlex
import subprocess

import pytest
from test_image_recipe import _golden

from jupyter_promote.errors import UsageError
from jupyter_promote.models import JobState, Resources
from jupyter_promote.targets.slurm import slurm_status
from jupyter_promote.targets.slurm_script import JobScript, SiteSettings, directives, render

JOB = JobScript(
    job_name="promote-train",
    run_dir="/shared/runs/train-20261203-101500-abc123",
    notebook_dir="/shared/projects/my notebooks",
    resources=Resources.parse(cpus=4, memory="16G", gpus=2, time="2h"),
    python="/shared/envs/promote/bin/python",
    image="registry.example.com:5000/promote@sha256:" + "cd" * 32,
    env={"OMP_NUM_THREADS": "4", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    venv_cache="/shared/cache/venvs",
    secrets=("DB_PASSWORD", "HF_TOKEN"),
    node_files=(("DB_PASSWORD", "/home/me/.db password"),),
    retries=2,
)
SITE = SiteSettings(
    partition="gpu",
    account="proj-42",
    qos="normal",
    constraint="a100|h100",
    extra_directives=("--exclusive",),
    prologue="module load cuda/12.4",
    epilogue="echo done",
)


@pytest.mark.parametrize("runtime", ["none", "docker", "podman", "apptainer", "enroot"])
def test_batch_script_matches_golden(runtime):
    site = SiteSettings(
        **{
            **SITE.__dict__,
            "container_runtime": runtime,
            "container_args": ("--ulimit", "nofile=1024:1024") if runtime == "podman" else (),
        }
    )
    text = render(JOB, site)
    _golden(f"slurm-{runtime}.sbatch", text)
    assert subprocess.run(["bash", "-n"], input=text, text=True, check=False).returncode == 0  # valid shell


def test_directives_from_resources_and_site():
    lines = directives(JOB, SITE)
    assert "#SBATCH --cpus-per-task=4" in lines and "#SBATCH --mem=16384M" in lines
    assert "#SBATCH --gres=gpu:2" in lines and "#SBATCH --time=0-02:00:00" in lines
    assert (
        "#SBATCH --partition=gpu" in lines
        and "#SBATCH --constraint=a100|h100" in lines
        and "#SBATCH --exclusive" in lines
    )
    gpus = directives(JOB, SiteSettings(gpu_directive="gpus", skip_directives=("mem", "--time")))
    assert "#SBATCH --gpus=2" in gpus and not any("--mem" in line or "--time" in line for line in gpus)


def test_a_value_that_is_not_a_plain_token_is_refused_not_pasted():
    with pytest.raises(UsageError, match="--partition"):
        directives(JOB, SiteSettings(partition="gpu\n#SBATCH --uid=0"))
    with pytest.raises(UsageError, match="--account"):
        directives(JOB, SiteSettings(account="a b"))


def test_paths_and_environment_values_are_quoted(tmp_path):
    hostile = "x'; touch /tmp/pwned-by-promote; '"
    job = JobScript(
        job_name="promote-x",
        run_dir=str(tmp_path / "run dir"),
        notebook_dir=str(tmp_path),
        resources=Resources(),
        python="/bin/true",
        env={"SEED_NOTE": hostile},
    )
    text = render(job, SiteSettings(container_runtime="none"))
    assert f"export SEED_NOTE={shlex.quote(hostile)}" in text
    exports = "\n".join(line for line in text.splitlines() if line.startswith("export "))
    out = subprocess.run(
        ["bash", "-c", exports + '\nprintf %s "$SEED_NOTE|$PROMOTE_RUN_DIR"'],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout == f"{hostile}|{tmp_path / 'run dir'}"
    assert not os.path.exists("/tmp/pwned-by-promote")


@pytest.mark.parametrize(
    ("state", "reason", "ours", "our_reason", "overrides"),
    [
        ("PENDING", "Resources", JobState.QUEUED, "resources", False),
        ("PENDING", "Priority", JobState.QUEUED, "priority", False),
        ("PENDING", "None", JobState.QUEUED, "pending", False),
        ("REQUEUED", "None", JobState.QUEUED, "requeued", False),
        ("RUNNING", "None", JobState.RUNNING, None, False),
        ("COMPLETED", "None", None, None, False),
        ("FAILED", "NonZeroExitCode", JobState.FAILED, "failed", False),
        ("CANCELLED", "None", JobState.CANCELLED, "cancelled", False),
        ("CANCELLED by 0", "None", JobState.CANCELLED, "cancelled", False),
        ("TIMEOUT", "TimeLimit", JobState.FAILED, "timeout", True),
        ("OUT_OF_MEMORY", "OutOfMemory", JobState.FAILED, "oom", True),
        ("NODE_FAIL", "None", JobState.FAILED, "node_fail", True),
        ("PREEMPTED", "None", JobState.FAILED, "preempted", True),
    ],
)
def test_slurm_states_map_to_job_states_with_the_reason(state, reason, ours, our_reason, overrides):
    status = slurm_status(state, reason)
    assert (status.state, status.reason, status.overrides) == (ours, our_reason, overrides)
    if ours is JobState.QUEUED and reason not in ("None",):
        assert reason in status.message


@pytest.mark.parametrize("runtime", ["docker", "podman", "apptainer"])
def test_a_folder_a_container_bind_cannot_express_is_refused_in_one_line(runtime):
    job = JobScript(
        job_name="promote-x",
        run_dir="/runs/a:b",
        notebook_dir="/data/v1,v2",
        resources=Resources(),
        python="/bin/true",
        image="registry/env:tag",
    )
    with pytest.raises(UsageError, match="cannot be bound"):
        render(job, SiteSettings(container_runtime=runtime))
    assert render(job, SiteSettings(container_runtime="none"))  # the node's venv needs no bind


def test_a_sweep_given_a_relative_out_is_still_one_job_array(tmp_path, monkeypatch):
    from pathlib import Path

    from jupyter_promote.rundir import RunDir
    from jupyter_promote.targets.slurm import laid_out_as_array

    # Given a sweep laid out under a relative --out, as `sweep ... --out sw` run from tmp_path lays it out
    monkeypatch.chdir(tmp_path)
    runs = [RunDir(Path("sw") / "tasks" / str(i)) for i in range(3)]
    # When the target decides between one array and one sbatch per task
    # Then the same folders, however they are written, are one array; other folders are not
    assert laid_out_as_array(runs, Path("sw"))
    assert laid_out_as_array(runs, tmp_path / "sw")
    assert laid_out_as_array(runs, tmp_path / "x" / ".." / "sw")
    assert not laid_out_as_array(runs[1:], Path("sw"))
    assert not laid_out_as_array(runs, Path("other"))
