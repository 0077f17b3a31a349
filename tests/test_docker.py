"""End to end on a real Docker engine: image builds (network and hermetic), verification, reuse, the
docker target (success, failure, OOM, cancel), the registry, and secrets that must never reach a layer.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from conftest import NOTEBOOKS, ROOT, SMALL_KERNEL, containers_of_tests, events, job, on_kernel, volumes

PROBE = "import numpy, os, sys\nprint('probe', numpy.__version__, os.getuid(), sys.executable)"


def test_docker_run_builds_verifies_runs_and_reuses(docker_cli, tmp_path):
    # Given a notebook on the small kernel
    nb = on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "nb", [PROBE])
    volumes_before = volumes()
    # When it is promoted to the docker target
    result = docker_cli("run", str(nb), "--target", "docker", "-p", "name", "container", *docker_cli.base, timeout=900)
    assert result.returncode == 0, result.stderr
    run = docker_cli.only_run()
    record = job(run)
    # Then it ran in the frozen interpreter of a verified image, as the invoking user
    assert record["state"] == "succeeded"
    image = record["image"]
    assert image["ref"].startswith("jupyter-promote/env:" + record["lock_hash"].split(":")[1][:32])
    assert image["verification"]["ok"] is True and image["verification"]["differences"] == []
    assert any("patch-level" in w for w in image["verification"]["warnings"])  # 3.11.2 image, 3.11.x kernel
    output = (run / "output.ipynb").read_text()
    assert "hello container" in output
    assert "/opt/promote/env/bin/python" in output
    assert f" {os.getuid()} " in output
    assert (run / "output.ipynb").stat().st_uid == os.getuid()  # written as the invoking user
    labels = json.loads(
        subprocess.run(
            ["docker", "image", "inspect", image["ref"], "--format", "{{json .Config.Labels}}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert json.loads(labels["io.jupyter-promote.verification"])["ok"] is True
    assert labels["io.jupyter-promote.lock"] == record["lock_hash"]
    # And a second promote of the unchanged environment builds nothing
    again = docker_cli("run", str(nb), "--target", "docker", *docker_cli.base, timeout=300)
    assert again.returncode == 0, again.stderr
    assert "reused" in again.stderr and "build step" not in again.stderr
    second = next(job(r) for r in sorted(docker_cli.runs.iterdir()) if r != run)
    assert second["image"]["ref"] == image["ref"] and second["image"]["built"] is False
    assert containers_of_tests() == [] and volumes() == volumes_before


def test_docker_failing_cell_and_oom_kill(docker_cli, tmp_path):
    failing = on_kernel(NOTEBOOKS / "failing.ipynb", SMALL_KERNEL, tmp_path / "a")
    result = docker_cli("run", str(failing), "--target", "docker", *docker_cli.base, timeout=900)
    assert result.returncode == 1
    record = job(docker_cli.only_run())
    assert record["reason"] == "error" and "ZeroDivisionError" in record["message"]
    # an allocation far past --memory is killed by the container's cgroup: reason oom, with the limit
    hog = on_kernel(
        NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "b", ["x = b'x' * (600 << 20)\nprint(len(x))"]
    )
    result = docker_cli("run", str(hog), "--target", "docker", "--memory", "128M", *docker_cli.base, timeout=300)
    assert result.returncode == 1, result.stderr
    run = next(r for r in sorted(docker_cli.runs.iterdir()) if job(r)["notebook"] == str(hog))
    record = job(run)
    assert record["state"] == "failed" and record["reason"] == "oom", record
    assert "128M" in record["message"]
    assert containers_of_tests() == []


def test_docker_cancel_stops_and_removes_the_container(docker_cli, tmp_path):
    nb = on_kernel(NOTEBOOKS / "hang.ipynb", SMALL_KERNEL, tmp_path / "nb")
    proc = docker_cli.popen("run", str(nb), "--target", "docker", *docker_cli.base)
    deadline = time.time() + 600
    while time.time() < deadline:
        runs = list(docker_cli.runs.glob("*/events.jsonl")) if docker_cli.runs.exists() else []
        if runs and any(e["type"] == "cell" and "sleep" in (e.get("source") or "") for e in events(runs[0].parent)):
            break
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert job(docker_cli.only_run())["state"] == "cancelled"
    assert containers_of_tests() == []


def test_docker_gpus_refused_up_front_without_nvidia_runtime(docker_cli, tmp_path):
    nb = on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "nb")
    result = docker_cli("run", str(nb), "--target", "docker", "--gpus", "1", *docker_cli.base)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "NVIDIA runtime" in result.stderr
    assert not docker_cli.runs.exists() or not any(docker_cli.runs.iterdir())


def test_hermetic_wheelhouse_build_needs_no_network(docker_cli, small_kernel):
    # --wheelhouse builds with docker build --network=none: any step that reaches the network fails
    result = docker_cli(
        "build",
        "--python",
        small_kernel["PROMOTE_SMALL_PYTHON"],
        "--wheelhouse",
        "--rebuild",
        "--json",
        "--ImageBuilder.repository=jupyter-promote/test-wheelhouse",
        *docker_cli.base,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    ref = json.loads(result.stdout)
    assert ref["built"] is True and ref["verification"]["ok"] is True
    assert "wheelhouse mode" in result.stderr
    subprocess.run(["docker", "rmi", ref["ref"]], capture_output=True)


def test_failed_build_names_its_step_and_leaves_no_tag(docker_cli, small_kernel):
    repo = "jupyter-promote/test-broken"
    result = docker_cli(
        "build",
        "--python",
        small_kernel["PROMOTE_SMALL_PYTHON"],
        f"--ImageBuilder.repository={repo}",
        '--ImageBuilder.system_packages=["no-such-package-promote"]',
        *docker_cli.base,
        timeout=900,
    )
    assert result.returncode == 4, result.stderr
    assert "image build failed at step 2/" in result.stderr and "apt-get" in result.stderr
    assert "Traceback" not in result.stderr
    left = subprocess.run(["docker", "images", "-q", repo], capture_output=True, text=True, check=True).stdout
    assert left.strip() == ""


def test_push_to_registry_records_digest_and_later_promotes_pull_it(docker_cli, small_kernel, registry, tmp_path):
    repo = f"{registry}/promote"
    build = ["build", "--python", small_kernel["PROMOTE_SMALL_PYTHON"], "--registry", repo, "--json", *docker_cli.base]
    pushed = docker_cli(*build, "--push", timeout=900)
    assert pushed.returncode == 0, pushed.stderr
    ref = json.loads(pushed.stdout)
    assert ref["digest"].startswith(f"{repo}@sha256:")
    # Given the local copy is gone, When the same environment is promoted, Then the registry's image is used
    subprocess.run(["docker", "rmi", ref["ref"]], capture_output=True, check=True)
    nb = on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, tmp_path / "nb")
    run = docker_cli("run", str(nb), "--target", "docker", "--registry", repo, *docker_cli.base, timeout=600)
    assert run.returncode == 0, run.stderr
    assert "build step" not in run.stderr and "reused" in run.stderr
    record = job(docker_cli.only_run())
    assert record["image"]["ref"] == ref["ref"] and record["image"]["digest"] == ref["digest"]


def test_secrets_never_reach_the_context_or_a_layer(docker_cli, small_kernel, tmp_path):
    canary = "canary-4f1d9a7be0"
    # Given secrets in the host environment, the notebook's folder, the CA bundle and the pip settings
    folder = tmp_path / "project"
    on_kernel(NOTEBOOKS / "success.ipynb", SMALL_KERNEL, folder)  # the project the build must not see
    (folder / ".env").write_text(f"API_TOKEN={canary}\n")
    (folder / "id_rsa").write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{canary}\n")
    bundle = tmp_path / "ca.pem"
    bundle.write_text(Path("/etc/ssl/certs/ca-certificates.crt").read_text() + f"\n# {canary}\n")
    env = {"AWS_SECRET_ACCESS_KEY": canary, "GITHUB_TOKEN": canary, "PIP_TRUSTED_HOST": f"{canary}.invalid"}
    repo = "jupyter-promote/test-canary"
    args = [
        "build",
        "--python",
        small_kernel["PROMOTE_SMALL_PYTHON"],
        f"--ImageBuilder.repository={repo}",
        "--ca-bundle",
        str(bundle),
        "--ImageBuilder.pack=False",  # the rebuild path, which takes the CA bundle and pip settings as secrets
        *docker_cli.base,
    ]
    # When the build context is listed, Then it holds only what the Dockerfile needs
    dry = docker_cli(*args, "--dry-run", env=env)
    assert dry.returncode == 0, dry.stderr
    files = [line.strip() for line in dry.stdout.split("build context")[1].split("Dockerfile:")[0].splitlines()[1:]]
    assert {"Dockerfile", "requirements.lock.txt", "runner-requirements.txt", "runner/kernel.json"} <= set(files)
    assert all(
        f in ("Dockerfile", "requirements.lock.txt", "runner-requirements.txt") or f.startswith("runner/")
        for f in files
    )
    # When the image is built with them, Then no byte of any layer carries the canary
    built = docker_cli(*args, "--rebuild", "--json", env=env, timeout=900)
    assert built.returncode == 0, built.stderr
    ref = json.loads(built.stdout)["ref"]
    saved = subprocess.run(["docker", "save", ref], capture_output=True, check=True).stdout
    assert len(saved) > 10_000_000
    assert canary.encode() not in saved
    subprocess.run(["docker", "rmi", ref], capture_output=True)


def test_a_notebook_folder_with_a_colon_and_a_comma_is_mounted_whole(docker_cli, tmp_path):
    # Given a notebook that reads a file beside it, in a folder whose name has ':' and ','
    folder = tmp_path / "data:2024,v1"
    nb = on_kernel(
        NOTEBOOKS / "success.ipynb",
        SMALL_KERNEL,
        folder,
        ["print(open('input.txt').read())\nopen('out.txt', 'w').write('ok')"],
    )
    (folder / "input.txt").write_text("read from beside the notebook")
    # When it runs in a container
    result = docker_cli("run", str(nb), "--target", "docker", *docker_cli.base, timeout=900)
    # Then the folder was mounted as one path, read-only, and the job's own file is in its run directory
    assert result.returncode == 0, result.stderr
    run = docker_cli.only_run()
    assert "read from beside the notebook" in (run / "output.ipynb").read_text()
    assert (run / "work" / "out.txt").read_text() == "ok" and not (folder / "out.txt").exists()
    assert [a["path"] for a in job(run)["artifacts"]] == ["out.txt"]


def test_the_engine_restarting_under_a_running_job_settles_it(docker_cli, tmp_path):
    # Given a long job running in a container
    nb = on_kernel(NOTEBOOKS / "hang.ipynb", SMALL_KERNEL, tmp_path / "nb")
    proc = docker_cli.popen("run", str(nb), "--target", "docker", *docker_cli.base)
    try:
        deadline = time.time() + 600
        while time.time() < deadline:
            runs = list(docker_cli.runs.glob("*/events.jsonl")) if docker_cli.runs.exists() else []
            if runs and any("sleep" in (e.get("source") or "") for e in events(runs[0].parent)):
                break
            time.sleep(0.5)
        # When the Docker engine is stopped and started again (an upgrade, a crash)
        subprocess.run(["pkill", "-x", "dockerd"], check=True)
        while subprocess.run(["pgrep", "-x", "dockerd"], capture_output=True).returncode == 0:
            time.sleep(0.5)
        subprocess.run(["bash", str(ROOT / "scripts" / "docker-up.sh")], check=True, capture_output=True, timeout=120)
        _, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    # Then the job reached a final state that says why, without a traceback
    record = job(docker_cli.only_run())
    assert record["state"] in ("failed", "cancelled") and record["reason"], record
    assert proc.returncode in (1, 130) and "Traceback" not in err, err[-3000:]


def test_the_build_log_shows_what_pip_does_and_each_step_once(docker_cli, small_kernel, tmp_path):
    # Given an environment no earlier build has seen: numpy and a wheel of its own (a unique version)
    from test_freeze_cache import make_wheel

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    numpy = next(
        line for line in (ROOT / "tests/envs/small-kernel.txt").read_text().splitlines() if line.startswith("numpy==")
    )
    wheel = make_wheel(tmp_path, "promote_log_probe", f"1.0.{uuid.uuid4().int % 10**9}")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin/python"),
            "install",
            "-q",
            "--no-deps",
            numpy,
            str(wheel),
        ],
        check=True,
    )
    # When its image is built
    repo = "jupyter-promote/test-build-log"
    result = docker_cli(
        "build",
        "--python",
        str(venv / "bin/python"),
        f"--ImageBuilder.repository={repo}",
        "--json",
        "--ImageBuilder.pack=False",  # pip's log: the rebuild path's
        *docker_cli.base,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    # Then the log a person watches says what pip does: each package fetched, with its size, and installed
    assert any("environment | Collecting numpy==" in line for line in lines), result.stderr
    assert any(
        re.search(r"environment \|\s+(Downloading|Using cached) numpy-\S+ \(\d[\d.]* [kM]B\)", line) for line in lines
    ), result.stderr
    assert any("environment | Processing /opt/promote/lock/wheels/promote_log_probe" in line for line in lines)
    assert any("environment | Successfully installed" in line and "numpy-" in line for line in lines)
    # And each step's header once, never BuildKit's repeated ones
    headers = [line for line in lines if line.startswith("build step") and " done in " not in line]
    assert headers and len(headers) == len(set(headers)), headers
    assert sum("--python /opt/promote/env/bin/python install" in line for line in lines) <= 1
    subprocess.run(["docker", "rmi", json.loads(result.stdout)["ref"]], capture_output=True)
