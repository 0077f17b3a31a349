"""An environment as large as a real one, sent to the real Ray head (scripts/ray-up.sh) at the shipping layer:
160 wheels of incompressible bytes (about 260 MiB, one of them over the cap) go as content-addressed shards
and parts, none over the cap, none refused; the node puts every wheel back together, checked; a second
submission of the same environment uploads nothing. Ray's SDK talk stays out of the terminal. (The venv
install of synthetic wheels is left out: tests/test_ray.py makes real venvs on the node.) And a cap set above
what the cluster takes is refused in one line, from the CLI.
"""

from __future__ import annotations

import json
import logging
import os
import random
import shlex
import tempfile
import time
import zipfile
from pathlib import Path

import pytest
from test_ray import ray_cli  # noqa: F401 (the fixture: the CLI on the small kernel, with the Ray head)

from jupyter_promote.freeze import LOCK_FILE
from jupyter_promote.image import shipped
from jupyter_promote.image.shards import folder_bytes
from jupyter_promote.targets.ray import RayTarget
from jupyter_promote.targets.ray_upload import runner_copy as _runner

MIB = 1 << 20
CAP = 48 * MIB  # RayTarget.max_upload_mb's default
NODE_CHECK = """
import sys
from pathlib import Path
from jupyter_promote.execute.remote import _locate
from jupyter_promote.image.shipped import MANIFEST, assemble
env = _locate(sys.argv[1])
assemble(env / MANIFEST, _locate, Path("node-env"))
wheels = sorted(Path("node-env/wheels").iterdir())
print("ARRIVED", len(wheels), sum(p.stat().st_size for p in wheels))
"""


def synthetic_wheel(folder: Path, name: str, size: int) -> Path:
    """A wheel (dist-info, RECORD) whose payload is random bytes: stored, as wheels of binaries compress."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as wheel:
        wheel.writestr(f"{name}/payload.bin", os.urandom(size))
        wheel.writestr(f"{name}/__init__.py", "")
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture(scope="module")
def big_env(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("big")
    links, env = root / "links", root / "env"
    links.mkdir()
    env.mkdir()
    rng = random.Random(11)
    sizes = [rng.randint(200_000, 1_900_000) for _ in range(152)] + [8 * MIB] * 7 + [60 * MIB]
    packages = []
    for i, size in enumerate(sizes):
        wheel = synthetic_wheel(links, f"synthetic{i:03d}", size)
        source = {"kind": "wheel", "wheel": f"wheels/{wheel.name}", "found_in": str(links)}
        packages.append({"name": f"synthetic{i:03d}", "version": "1.0", "source": source})
    lock = {"content_hash": "sha256:" + os.urandom(32).hex(), "python": {"version": "3.11"}, "packages": packages}
    (env / LOCK_FILE).write_text(json.dumps(lock))
    (env / "requirements.txt").write_text("# synthetic\n")
    return env


def _submit(client, folders: list[Path], caplog) -> tuple[str, float, list[logging.LogRecord]]:
    caplog.clear()
    started = time.monotonic()
    sid = client.submit_job(
        entrypoint=f"python3 -c {shlex.quote(NODE_CHECK)} {folders[0].name}",
        runtime_env={"py_modules": [str(f) for f in [*folders, _runner(Path(tempfile.mkdtemp()))]]},
        entrypoint_num_cpus=1,
    )
    return sid, time.monotonic() - started, list(caplog.records)


def _wait(client, sid: str) -> str:
    from ray.job_submission import JobStatus

    for _ in range(600):
        status = client.get_job_status(sid)
        if status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED):
            break
        time.sleep(0.5)
    logs = client.get_job_logs(sid)
    assert status is JobStatus.SUCCEEDED, logs[-2000:]
    return logs


def test_an_environment_of_260_mib_reaches_ray_in_shards_and_is_reused(
    big_env, ray_cluster, tmp_path, monkeypatch, caplog, capfd
):
    # Given 160 wheels (about 260 MiB of incompressible bytes), staged under a cache of their own
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folders = shipped.environment_folders(big_env, with_wheels=False, cap=CAP)
    sizes = [folder_bytes(f) for f in [*folders, _runner(tmp_path / "runner")]]
    total = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("staged_*/wheels/*.whl"))
    assert total > 250 * MIB and max(sizes) <= CAP
    caplog.set_level(logging.DEBUG, logger="jupyter_promote.targets.ray")
    client = RayTarget(address=ray_cluster).client()
    # When the environment is submitted to the real cluster, twice
    first, first_s, said = _submit(client, folders, caplog)
    logs = _wait(client, first)
    second, second_s, said_again = _submit(client, folders, caplog)
    _wait(client, second)
    first_uploads, second_uploads = (sum("Uploading package" in r.getMessage() for r in s) for s in (said, said_again))
    print(
        f"\nshards+parts: {len(folders) - 1} (+1 manifest), biggest upload (estimate) {max(sizes) / MIB:.1f} MiB, "
        f"first submit {first_s:.1f}s ({first_uploads} uploads), second {second_s:.1f}s ({second_uploads} uploads)"
    )
    # Then nothing was refused, the node got every wheel back, checked, and the second submission sent nothing
    assert f"ARRIVED 160 {total}" in logs
    assert first_uploads >= len(folders) - 1 and second_uploads == 0
    # and Ray's SDK said what it uploaded to our log (debug), never to the terminal
    assert any("is very large" in r.getMessage() and r.levelno == logging.DEBUG for r in said)
    err = capfd.readouterr().err
    assert "very large" not in err and "Uploading package" not in err


def test_a_cap_above_what_the_cluster_takes_is_one_line(ray_cli):  # noqa: F811
    # Given a notebook beside a 101 MiB input, and a cap set above the dashboard's 100 MiB
    nb = ray_cli.nb("success.ipynb")
    (nb.parent / "big.bin").write_bytes(os.urandom(101 * MIB))
    # When it is promoted to Ray
    result = ray_cli(
        "run", str(nb), "--target", "ray", "--RayTarget.max_upload_mb=120", "--RayTarget.max_inputs_mb=200"
    )
    # Then one line says the cluster refused it and which setting to lower; no Ray SDK chatter, no traceback
    assert result.returncode != 0
    err = result.stderr
    lines = [line for line in err.splitlines() if "refused the job" in line]
    assert (
        len(lines) == 1 and "413" in lines[0] and "..;" not in lines[0] and "RayTarget.max_upload_mb (120)" in lines[0]
    ), err
    assert "Traceback" not in err and "very large" not in err and "Uploading package" not in err, err
