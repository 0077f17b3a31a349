"""The freeze cache: a kept introspection is reused while the environment is unchanged, never after pip changed it."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from jupyter_promote.freeze import freeze, python_interpreter
from jupyter_promote.freeze.cache import cache_dir


def make_wheel(folder: Path, name: str, version: str) -> Path:
    """A minimal pure-Python wheel, as a build backend would write it."""
    files = {
        f"{name}/__init__.py": f"VERSION = {version!r}\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{name}-{version}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{name}-{version}.dist-info/RECORD,,")
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{name}-{version}.dist-info/RECORD", "\n".join(record) + "\n")
    return wheel


def pip(python: Path, *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *args, "--quiet", "--disable-pip-version-check"],
        check=True,
    )


@pytest.fixture
def bare_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A venv of its own (no pip in it: the host's pip installs into it) and a cache of the test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    return tmp_path / "venv" / "bin" / "python"


def names(lock: dict) -> dict[str, str]:
    return {p["name"]: p["version"] for p in lock["packages"]}


def test_an_unchanged_environment_is_read_from_the_cache(bare_env: Path, tmp_path: Path) -> None:
    # Given an interpreter that notes each start of it, frozen once
    starts = tmp_path / "starts.log"
    wrapper = tmp_path / "python"
    wrapper.write_text(f'#!/bin/sh\necho started >> "{starts}"\nexec "{bare_env}" "$@"\n')
    wrapper.chmod(0o755)
    interpreter = python_interpreter(str(wrapper))
    first = freeze(interpreter, tmp_path / "a")
    assert starts.read_text().count("started") == 1
    # When it is frozen again with nothing installed or removed
    second = freeze(interpreter, tmp_path / "b")
    # Then the kept introspection answered: the same lock, the interpreter not started again
    assert second.content_hash == first.content_hash
    assert starts.read_text().count("started") == 1
    assert len(list(cache_dir().glob("*.json"))) == 1


def test_a_pip_install_or_uninstall_invalidates_the_cache(bare_env: Path, tmp_path: Path) -> None:
    # Given a frozen environment, its introspection kept
    interpreter = python_interpreter(str(bare_env))
    before = freeze(interpreter, tmp_path / "a")
    assert "promote-cache-probe" not in names(before.lock)
    # When pip installs a package into it
    wheel = make_wheel(tmp_path, "promote_cache_probe", "1.2.3")
    pip(bare_env, "install", "--no-index", "--no-deps", str(wheel))
    installed = freeze(interpreter, tmp_path / "b")
    # Then the next freeze sees it
    assert names(installed.lock).get("promote_cache_probe") == "1.2.3"
    assert installed.content_hash != before.content_hash
    # And when pip upgrades it, and then removes it, each freeze sees that too
    pip(bare_env, "install", "--no-index", "--no-deps", str(make_wheel(tmp_path, "promote_cache_probe", "1.2.4")))
    assert names(freeze(interpreter, tmp_path / "c").lock).get("promote_cache_probe") == "1.2.4"
    pip(bare_env, "uninstall", "-y", "promote_cache_probe")
    assert freeze(interpreter, tmp_path / "d").content_hash == before.content_hash


def test_a_recorded_variable_that_changes_is_not_read_from_the_cache(
    bare_env: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a freeze with OMP_NUM_THREADS=2
    interpreter = python_interpreter(str(bare_env))
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert freeze(interpreter, tmp_path / "a").lock["env"]["OMP_NUM_THREADS"] == "2"
    # When the variable changes, Then the lock records the new value
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert freeze(interpreter, tmp_path / "b").lock["env"]["OMP_NUM_THREADS"] == "3"
