"""Shipping: the wheel carries the prebuilt labextension, so `pip install` alone (no Node.js, no build)
gives a JupyterLab where the extension is enabled and OK."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARE = "jupyter_promote-0.1.0.data/data/share/jupyter/labextensions/jupyter-promote/"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_wheel_ships_the_prebuilt_labextension_and_pip_alone_enables_it(tmp_path):
    # Given the wheel, built as a release would build it
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        check=True,
        timeout=600,
    )
    wheel = next(tmp_path.glob("jupyter_promote-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    # Then it holds the built extension, its settings schema and the server extension's config
    assert SHARE + "package.json" in names and SHARE + "install.json" in names
    assert SHARE + "schemas/jupyter-promote/plugin.json" in names
    assert any(n.startswith(SHARE + "static/remoteEntry.") for n in names)
    assert "jupyter_promote-0.1.0.data/data/etc/jupyter/jupyter_server_config.d/jupyter_promote.json" in names
    # When it is installed with pip into a fresh environment (with JupyterLab, as a user has it)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel), "jupyterlab>=4,<5"], check=True, timeout=600)
    # Then JupyterLab lists the extension enabled and OK, and the server extension loads
    labext = subprocess.run(
        [str(env_dir / "bin" / "jupyter"), "labextension", "list"], capture_output=True, text=True, check=True
    )
    listing = labext.stdout + labext.stderr
    assert "jupyter-promote v0.1.0" in listing and "enabled" in listing and "OK" in listing, listing
    assert "(python, jupyter_promote)" in listing, listing  # installed by pip, not linked from a source tree
    serverext = subprocess.run(
        [str(env_dir / "bin" / "jupyter"), "server", "extension", "list"], capture_output=True, text=True, check=True
    )
    assert "jupyter_promote" in serverext.stderr + serverext.stdout and "OK" in serverext.stderr + serverext.stdout
