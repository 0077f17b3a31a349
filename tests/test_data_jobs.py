"""Data that does not fit in a request (issue 27, section 4), end to end: a notebook on Ray, a cluster that
shares no filesystem with this machine, reads a 200 MB dataset from an S3-compatible server (moto's, started by
scripts/s3-up.sh, reached from the cluster's own network namespace), with the store's credentials given as
secrets by reference; its outputs and a checkpoint are written to the store (``artifacts_url``) and come
back into the run directory. Bad input (an unknown scheme, a bucket that is not there) is refused in one line
before anything is submitted."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from conftest import NOTEBOOKS, S3, SMALL_KERNEL, job, new_bucket, on_kernel

#: What the notebook does with its input: a digest of every file (in order), their count and size; then a
#: result, a 20 MB output and a checkpoint.
CELLS = [
    "import hashlib, os\nimport jupyter_promote as promote\nroot = promote.data('train')\n"
    "files = sorted(root.rglob('*.bin'))\n"
    "digest = hashlib.sha256(b''.join(hashlib.sha256(f.read_bytes()).digest() for f in files)).hexdigest()\n"
    "size = sum(f.stat().st_size for f in files)",
    "open('result.txt', 'w').write(f'{len(files)} {size} {digest}')\n"
    "open('predictions.bin', 'wb').write(bytes(range(256)) * (20 << 12))\n"
    "(promote.checkpoint_dir() / 'model.ckpt').write_bytes(b'weights' * 1000)",
]


@pytest.fixture
def dataset(s3: S3):
    """A bucket holding train/: 20 objects of 10 MB (200 MB), and the digest the notebook must find."""
    parts = {f"train/part-{i:02d}.bin": os.urandom(10 << 20) for i in range(20)}
    digest = hashlib.sha256(b"".join(hashlib.sha256(parts[k]).digest() for k in sorted(parts))).hexdigest()
    for bucket in new_bucket(s3, parts):
        yield bucket, f"20 {200 << 20} {digest}"


def store_settings(tmp_path: Path, s3: S3, artifacts_url: str) -> tuple[dict[str, str], list[str]]:
    """The CLI's configuration (the store's endpoint and artifacts_url) and the credentials as secrets from
    files of the user's (0600)."""
    config = tmp_path / "config"
    config.mkdir()
    (config / "jupyter_promote_config.py").write_text(
        f"c.PromoteSettings.storage_options = {{'endpoint_url': {s3.endpoint!r}}}\n"
        f"c.PromoteSettings.artifacts_url = {artifacts_url!r}\n"
    )
    secrets = []
    for name, value in (
        ("AWS_ACCESS_KEY_ID", s3.users["promote"]["key"]),
        ("AWS_SECRET_ACCESS_KEY", s3.users["promote"]["secret"]),
    ):
        path = tmp_path / name.lower()
        path.write_text(value)
        path.chmod(0o600)
        secrets += ["--secret", f"{name}=file:{path}"]
    return {"JUPYTER_CONFIG_DIR": str(config)}, secrets


def test_a_ray_job_reads_200_mb_from_object_storage_and_its_outputs_come_back(
    cli, small_kernel, ray_cluster, s3, dataset, tmp_path
):
    bucket, expected = dataset
    cli.env.update(small_kernel)
    env, secrets = store_settings(tmp_path, s3, f"s3://{bucket}/runs")
    nb = on_kernel(NOTEBOOKS / "smoke.ipynb", SMALL_KERNEL, tmp_path / "nb", CELLS)
    result = cli(
        "run", str(nb), "--target", "ray", "--data", f"train=s3://{bucket}/train", *secrets, env=env, timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    run = cli.only_run()
    record = job(run)
    # the notebook read every byte of the dataset on the node
    assert (run / "work" / "result.txt").read_text() == expected
    # its outputs came back through the store, and its checkpoint is kept there for a later attempt
    assert (run / "work" / "predictions.bin").stat().st_size == 20 << 20
    stored = s3.fs().find(f"{bucket}/runs/{record['id']}")
    assert f"{bucket}/runs/{record['id']}/checkpoints/model.ckpt" in stored, stored
    assert f"{bucket}/runs/{record['id']}/work/predictions.bin" in stored, stored
    log = (run / "job.log").read_text()
    assert f"data train: s3://{bucket}/train, 20 object(s), 209.7 MB" in log, log[-2000:]
    # the record keeps references: the URL, never a key
    assert record["data"] == {"train": f"s3://{bucket}/train"}
    assert s3.users["promote"]["secret"] not in json.dumps(record) + log


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("train=nosuch://b/p", "data train: unknown scheme 'nosuch'"),
        ("train=s3://promote-no-such-bucket/p", "data train: bucket 'promote-no-such-bucket' does not exist"),
    ],
)
def test_an_input_that_cannot_be_read_is_refused_before_anything_is_submitted(cli, s3, tmp_path, data, reason):
    env, secrets = store_settings(tmp_path, s3, "")
    result = cli("run", str(NOTEBOOKS / "smoke.ipynb"), "--target", "ray", "--data", data, *secrets, env=env)
    assert result.returncode == 2, result.stdout + result.stderr
    assert reason in result.stderr.strip().splitlines()[-1], result.stderr
    assert not cli.runs.exists() or not any(cli.runs.iterdir())
