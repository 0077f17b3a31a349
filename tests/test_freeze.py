"""Freeze a real kernel's interpreter: the lock, its hash, local code, secrets."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def lock_of(directory: Path) -> dict:
    return json.loads((directory / "promote.lock.json").read_text())


def test_freeze_default_kernel_records_the_environment(cli, tmp_path):
    result = cli("freeze", "-o", str(tmp_path / "env"))
    assert result.returncode == 0, result.stderr
    lock = lock_of(tmp_path / "env")
    assert lock["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert lock["python"]["implementation"] == "cpython"
    assert lock["platform"]["libc"]["name"] == "glibc"
    names = {p["name"].lower(): p for p in lock["packages"]}
    assert names["torch"]["version"].startswith("2.13.0")
    assert lock["torch"]["version"].startswith("2.13.0") and "cuda" in lock["torch"]
    # a local version label without a recorded index: the index is inferred and said so
    if "+" in names["torch"]["version"]:
        assert names["torch"]["source"]["index"].startswith("https://download.pytorch.org/whl/")
        assert "inferred" in names["torch"]["source"]["index_known"]
    assert "jupyter-promote" not in names and any(e["name"] == "jupyter_promote" for e in lock["excluded"])
    assert lock["hardware"]["cpu"]["count"] >= 1 and lock["hardware"]["cpu"]["model"]
    requirements = (tmp_path / "env" / "requirements.txt").read_text()
    assert f"numpy=={names['numpy']['version']}" in requirements
    assert lock["content_hash"] in requirements


def test_content_hash_is_stable_across_freezes(cli, tmp_path):
    assert cli("freeze", "-o", str(tmp_path / "a")).returncode == 0
    assert cli("freeze", "-o", str(tmp_path / "b")).returncode == 0
    a, b = lock_of(tmp_path / "a"), lock_of(tmp_path / "b")
    assert a["origin"]["created_at"] != b["origin"]["created_at"]
    assert a["content_hash"] == b["content_hash"]


def test_secrets_never_reach_the_lock(cli, tmp_path):
    env = {
        "MY_API_TOKEN": "s3cr3t-token-value",
        "OMP_NUM_THREADS": "3",
        "PIP_EXTRA_INDEX_URL": "https://alice:s3cr3t-password@pypi.example.com/simple",
    }
    assert cli("freeze", "-o", str(tmp_path / "env"), env=env).returncode == 0
    for file in (tmp_path / "env").rglob("*"):
        if file.is_file():
            assert "s3cr3t" not in file.read_text(errors="replace"), file
    lock = lock_of(tmp_path / "env")
    assert lock["env"] == {"OMP_NUM_THREADS": "3"} or lock["env"].get("OMP_NUM_THREADS") == "3"
    assert "https://pypi.example.com/simple" in lock["indexes"]["extra_index_urls"]


@pytest.fixture(scope="module")
def other_env(tmp_path_factory):
    """A second, separate interpreter: a venv with one editable local project."""
    root = tmp_path_factory.mktemp("other")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
    project = root / "mylib"
    (project / "mylib").mkdir(parents=True)
    (project / "mylib" / "__init__.py").write_text("VALUE = 1\n")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "mylib"\nversion = "0.3.0"\n'
    )
    python = root / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-e", str(project)], check=True)
    return python, project


def test_freeze_reads_the_given_interpreter_and_builds_local_code_into_a_wheel(cli, tmp_path, other_env):
    python, _ = other_env
    result = cli("freeze", "--python", str(python), "-o", str(tmp_path / "env"))
    assert result.returncode == 0, result.stderr
    lock = lock_of(tmp_path / "env")
    names = {p["name"].lower(): p for p in lock["packages"]}
    assert "torch" not in names and "papermill" not in names  # not the tool's own environment
    mylib = names["mylib"]
    assert mylib["source"]["kind"] == "editable"
    wheel = tmp_path / "env" / mylib["source"]["wheel"]
    assert wheel.is_file() and wheel.name.startswith("mylib-0.3.0")
    assert f"./{mylib['source']['wheel']}" in (tmp_path / "env" / "requirements.txt").read_text()


def test_freeze_refuses_a_package_it_cannot_reproduce(cli, tmp_path, other_env):
    python, project = other_env
    moved = project.with_name("mylib-moved")
    project.rename(moved)
    try:
        out = tmp_path / "env"
        result = cli("freeze", "--python", str(python), "-o", str(out))
        assert result.returncode == 2
        assert "mylib==0.3.0" in result.stderr and "no longer exists" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        assert not out.exists()
    finally:
        moved.rename(project)


def test_freeze_errors_are_one_line(cli, tmp_path):
    for args in (("--kernel", "no-such-kernel"), ("--python", str(tmp_path / "nope"))):
        result = cli("freeze", *args, "-o", str(tmp_path / "env"))
        assert result.returncode == 2
        assert len(result.stderr.strip().splitlines()) == 1 and "error" in result.stderr


def _wheel(folder: Path, name: str, version: str) -> Path:
    """A real, minimal pure-Python wheel, as a downloaded ``torch-2.3.0+cpu-...`` one is named."""
    import base64
    import hashlib
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": "VALUE = 1\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        record = []
        for path, text in files.items():
            archive.writestr(path, text)
            digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(text.encode())}")
        archive.writestr(f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,"]) + "\n")
    return wheel


def test_freeze_keeps_a_wheel_installed_from_a_file_whose_name_has_a_plus_or_a_space(cli, tmp_path):
    # Given a venv with a wheel installed from a local file named like a downloaded +cpu wheel, in a folder
    # whose name has a space (pip records the file URL percent-encoded: %2B and %20)
    wheel = _wheel(tmp_path / "down loads", "plusdemo", "1.0+cpu")
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], check=True)
    # When its environment is frozen
    result = cli("freeze", "--python", str(python), "-o", str(tmp_path / "env"))
    # Then the wheel is found where it is and carried into the environment
    assert result.returncode == 0, result.stderr
    plusdemo = next(p for p in lock_of(tmp_path / "env")["packages"] if p["name"] == "plusdemo")
    assert plusdemo["source"]["path"] == str(wheel)
    assert (tmp_path / "env" / plusdemo["source"]["wheel"]).read_bytes() == wheel.read_bytes()
