"""Secrets stay home: what a job carries to a cluster (hidden files, links out of the folder, a bounded
unpack) and credentials never written into records or logs (issue 24, section 7)."""

from __future__ import annotations

import io
import json
import os
import socket
import tarfile

import pytest
from conftest import NOTEBOOKS

from jupyter_promote.errors import TargetError
from jupyter_promote.execute.unpack import InputsTooLarge, unpack_inputs
from jupyter_promote.targets.inputs import copy_inputs, pack_inputs

SECRETS = (".netrc", ".pgpass", ".git-credentials", ".env", ".bash_history")


def project_with_secrets(folder):
    folder.mkdir()
    (folder / "train.ipynb").write_text("{}")
    (folder / "data.csv").write_text("x\n1\n")
    for name in SECRETS:
        (folder / name).write_text("machine example.com login me password hunter2\n")
    (folder / ".ssh").mkdir()
    (folder / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (folder / ".streamlit").mkdir()
    (folder / ".streamlit" / "config.toml").write_text("[server]\n")
    return folder


def packed_names(source, carry_hidden=()):
    archive, _ = pack_inputs(source, set(), 1 << 20, *([carry_hidden] if carry_hidden else []))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return sorted(tar.getnames())


def test_hidden_files_stay_home_unless_named(tmp_path):
    # Given a notebook's folder holding credentials in hidden files and a hidden folder
    source = project_with_secrets(tmp_path / "project")
    # When it is packed for Kubernetes and copied for Ray, with nothing named
    names = packed_names(source)
    copied = copy_inputs(source, tmp_path / "ray", set(), 1 << 20)
    # Then only the project's visible files travel
    print("packed:", names)
    assert names == ["data.csv", "train.ipynb"]
    assert sorted(p.name for p in (tmp_path / "ray").rglob("*")) == ["data.csv", "train.ipynb"]
    assert copied == len("x\n1\n") + len("{}")
    # And a hidden file or folder named in carry_hidden travels, and nothing else hidden with it
    names = packed_names(source, [".env", ".streamlit"])
    assert names == [".env", ".streamlit/config.toml", "data.csv", "train.ipynb"]


def test_a_link_out_of_the_folder_is_refused_naming_it(tmp_path):
    # Given a folder with a link to /dev/zero, a link to a dataset elsewhere, and a link inside the folder
    source = tmp_path / "project"
    source.mkdir()
    (source / "train.ipynb").write_text("{}")
    (source / "zero").symlink_to("/dev/zero")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "big.bin").write_text("b")
    (source / "dataset").symlink_to(tmp_path / "elsewhere")
    (source / "same.ipynb").symlink_to(source / "train.ipynb")
    (source / "loop").symlink_to(source)
    # When it is packed
    with pytest.raises(TargetError) as refused:
        pack_inputs(source, set(), 1 << 20)
    # Then the refusal is one line naming both links that leave, before anything is copied
    message = str(refused.value)
    print(message)
    assert "\n" not in message and "zero -> /dev/zero" in message and "dataset -> " in message
    with pytest.raises(TargetError):
        copy_inputs(source, tmp_path / "ray", set(), 1 << 20)
    assert not (tmp_path / "ray").exists()
    # And links that stay inside travel (a loop back to the folder is walked once)
    os.unlink(source / "zero")
    os.unlink(source / "dataset")
    assert packed_names(source) == ["same.ipynb", "train.ipynb"]


def test_the_pod_unpack_stops_at_its_cap(tmp_path):
    # Given an archive of under 100 KiB whose one file unpacks to 64 MiB of zeros (a tar bomb)
    bomb = tmp_path / "inputs.tar.gz"
    with tarfile.open(bomb, "w:gz") as tar:
        info = tarfile.TarInfo("zeros.bin")
        info.size = 64 << 20
        tar.addfile(info, io.BytesIO(bytes(info.size)))
    assert bomb.stat().st_size < 100 << 10
    # When the pod unpacks it
    with pytest.raises(InputsTooLarge) as refused:
        unpack_inputs(bomb, tmp_path / "inputs")
    # Then it stops before writing past the cap, saying why
    print(refused.value)
    assert not (tmp_path / "inputs" / "zeros.bin").exists()
    assert "MiB" in str(refused.value)
    # And an honest folder unpacks whole
    honest, _ = pack_inputs(project_with_secrets(tmp_path / "p"), set(), 1 << 20)
    (tmp_path / "honest.tar.gz").write_bytes(honest)
    assert unpack_inputs(tmp_path / "honest.tar.gz", tmp_path / "out") == len("x\n1\n") + len("{}")


def test_tracking_uri_credentials_reach_no_record_and_no_log(cli):
    # Given an MLflow tracking URI with a user and password, on a port where nothing answers
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://alice:s3cr3t-mlflow-pw@127.0.0.1:{s.getsockname()[1]}"
    # When a job runs and its export fails
    uri = f"--MlflowExport.tracking_uri={dead}"
    result = cli("run", str(NOTEBOOKS / "success.ipynb"), uri, "--MlflowExport.retries=0")
    # Then the failure is recorded and logged, without the password anywhere
    run = cli.only_run()
    record = (run / "mlflow.jsonl").read_text()
    print(record, result.stderr[-600:])
    assert result.returncode == 0 and '"ok": false' in record
    assert "s3cr3t-mlflow-pw" not in result.stderr + result.stdout
    for file in run.rglob("*"):
        if file.is_file():
            assert "s3cr3t-mlflow-pw" not in file.read_text(errors="replace"), file


def test_index_tokens_in_a_urls_path_never_reach_the_lock(cli, tmp_path):
    # Given pip configured with Gemfury and Cloudsmith indexes whose tokens are in the URL, path and userinfo
    env = {
        "PIP_INDEX_URL": "https://dl.cloudsmith.io/s3cr3tCloudsmith/acme/private/python/simple/",
        "PIP_EXTRA_INDEX_URL": "https://pypi.fury.io/s3cr3tFuryPath/alice/ https://s3cr3tFuryUser@pypi.fury.io/bob/",
    }
    # When the environment is frozen
    result = cli("freeze", "-o", str(tmp_path / "env"), env=env)
    assert result.returncode == 0, result.stderr
    # Then no token is in any file of the lock, and each index still reads as what it is
    for file in (tmp_path / "env").rglob("*"):
        if file.is_file():
            assert "s3cr3t" not in file.read_text(errors="replace"), file
    indexes = json.loads((tmp_path / "env" / "promote.lock.json").read_text())["indexes"]
    print(indexes)
    assert indexes["index_url"] == "https://dl.cloudsmith.io/***/acme/private/python/simple/"
    assert indexes["extra_index_urls"] == ["https://pypi.fury.io/***/alice/", "https://pypi.fury.io/bob/"]
