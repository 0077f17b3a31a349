"""Packages from where the user got them: a wheel with a local version label taken from a find-links folder on
this machine goes with the lock into the build; a package whose Requires-Python the base image's Python does
not meet is refused before any build, naming the package and a base that fits."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import BASE_IMAGE, docker_ready


def tiny_wheel(folder: Path, version: str, requires_python: str) -> Path:
    """A one-module distribution ``tinypkg`` built into ``folder`` (its wheel: a find-links folder)."""
    src = folder / "src"
    (src / "tinypkg").mkdir(parents=True)
    (src / "tinypkg" / "__init__.py").write_text("VALUE = 1\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
        f'[project]\nname = "tinypkg"\nversion = "{version}"\nrequires-python = "{requires_python}"\n'
    )
    links = folder / "links"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(links), str(src)], check=True, timeout=300
    )
    return links


def kernel_venv(folder: Path, links: Path) -> Path:
    """A venv with tinypkg installed from ``links`` as pip installs it from a find-links folder (no direct URL)."""
    env = folder / "venv"
    venv.create(env, with_pip=True)
    subprocess.run(
        [
            str(env / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-index",
            "--find-links",
            str(links),
            "tinypkg",
        ],
        check=True,
        timeout=300,
    )
    return env / "bin" / "python"


@pytest.mark.slow
def test_a_wheel_only_this_machine_has_goes_with_the_lock(cli, tmp_path):
    # Given a kernel whose tinypkg==1.0+site came from a find-links folder of this machine
    links = tiny_wheel(tmp_path, "1.0+site", ">=3.8")
    python = kernel_venv(tmp_path, links)
    # When it is frozen (pip configured with that folder, as the site configures it)
    done = cli("freeze", "--python", str(python), "-o", str(tmp_path / "env"), env={"PIP_FIND_LINKS": str(links)})
    assert done.returncode == 0, done.stderr
    lock = json.loads((tmp_path / "env" / "promote.lock.json").read_text())
    (pkg,) = [p for p in lock["packages"] if p["name"] == "tinypkg"]
    # Then the lock says where that very wheel is, and the build context carries it (a run directory does not)
    assert pkg["source"]["wheel"].startswith("wheels/tinypkg-1.0+site-") and pkg["source"]["found_in"] == str(links)
    assert not (tmp_path / "env" / "wheels").exists()
    assert pkg["requires_python"] == ">=3.8"
    plan = cli(
        "build",
        "--python",
        str(python),
        "--dry-run",
        f"--ImageBuilder.base_image={BASE_IMAGE}",
        env={"PIP_FIND_LINKS": str(links)},
    )
    assert plan.returncode == 0, plan.stderr
    assert "wheels/tinypkg-1.0+site-" in plan.stdout + plan.stderr


@pytest.mark.slow
def test_requires_python_beyond_the_base_images_is_refused_before_building(cli, tmp_path):
    docker_ready()
    # Given a package that requires a newer Python than the base image's 3.11.2
    python = kernel_venv(tmp_path, tiny_wheel(tmp_path, "2.0", ">=3.11.5"))
    # When its image is built on that base
    done = cli("build", "--python", str(python), f"--ImageBuilder.base_image={BASE_IMAGE}", "--rebuild")
    # Then it is refused at once (exit 4), naming the package, its Requires-Python and a base that fits
    assert done.returncode == 4, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert "tinypkg==2.0 requires Python >=3.11.5" in line and "python:3.11" in line and "3.11.2" in line
    assert "building" not in done.stderr
