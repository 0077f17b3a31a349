"""A detached sweep's handshake: its own process keeps a small JSON status file (id, pid, folder, state, exit
code), written atomically; its starter and ``attach`` read that, never a message meant for a person."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NOTEBOOKS

from jupyter_promote.cli.detached_status import DetachedStatus, status_path


def test_a_status_is_replaced_whole_and_a_missing_or_broken_one_reads_as_none(tmp_path):
    path = tmp_path / "s0123456789ab.json"
    assert DetachedStatus.read(path) is None
    first = DetachedStatus(id="s0123456789ab", pid=42, started=12.5, state="starting")
    first.write(path)
    assert DetachedStatus.read(path) == first
    ended = DetachedStatus(id="s0123456789ab", pid=42, started=12.5, state="ended", folder="/f", exit_code=3)
    ended.write(path)
    assert DetachedStatus.read(path) == ended and [p.name for p in tmp_path.iterdir()] == [path.name]
    with pytest.raises(ValueError):
        DetachedStatus(id="s0123456789ab", pid=42, started=None, state="sleeping").write(path)
    path.write_text("{half")
    assert DetachedStatus.read(path) is None


def test_a_refused_sweep_says_so_in_its_status_file(tmp_path):
    # Given the detached process of a sweep that is refused (no such target)
    status = tmp_path / "s0123456789ab.json"
    sweep = ["sweep", str(NOTEBOOKS / "success.ipynb"), "-p", "a", "1", "--target", "nowhere"]
    command = [sys.executable, "-m", "jupyter_promote.cli.detached_sweep", "s0123456789ab", str(status), *sweep]
    env = {"JUPYTER_PROMOTE_RUNS_DIR": str(tmp_path / "runs"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    # Then it ends with the sweep's exit code, and its status file says so: ended, its pid, no folder
    assert done.returncode == 2 and "nowhere" in done.stderr
    found = json.loads(status.read_text())
    assert found["id"] == "s0123456789ab" and found["state"] == "ended" and found["exit_code"] == 2
    assert found["folder"] is None and isinstance(found["pid"], int)


def test_a_detached_sweep_names_its_folder_in_its_status_file(cli):
    result = cli("sweep", str(NOTEBOOKS / "success.ipynb"), "-p", "a", "1", "--detach", timeout=180)
    assert result.returncode == 0, result.stderr
    sweep_id = re.search(r"sweep (s[0-9a-f]{12}) runs on in the background", result.stderr).group(1)
    found = DetachedStatus.read(status_path(str(cli.runs), sweep_id))
    [folder] = [p for p in cli.runs.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert found is not None and found.state in ("running", "ended") and found.folder == str(folder)
    assert f"jupyter promote status {folder}" in result.stderr
    assert cli("attach", sweep_id, timeout=240).returncode == 0
    assert DetachedStatus.read(status_path(str(cli.runs), sweep_id)).exit_code == 0


def test_a_sweep_detached_before_the_status_file_can_still_be_attached_and_followed(tmp_path):
    from jupyter_promote.cli.detached import attach
    from jupyter_promote.processes import alive

    # Given the files an earlier version left for two detached sweeps: one that ended with 3, one still running
    folder = tmp_path / ".detached"
    folder.mkdir()
    (folder / "s0123456789ab.pid").write_text("999999 12345")
    (folder / "s0123456789ab.rc").write_text("3")
    (folder / "s0123456789ab.log").write_text("sweep s0123456789ab: 2 tasks\n")
    ticks = int(Path("/proc/self/stat").read_text().rpartition(")")[2].split()[19])  # the old handles' clock ticks
    (folder / "s00000000000a.pid").write_text(f"{os.getpid()} {ticks}")
    # When they are looked up by id
    ended = DetachedStatus.read(status_path(str(tmp_path), "s0123456789ab"))
    running = DetachedStatus.read(status_path(str(tmp_path), "s00000000000a"))
    # Then the ended one reads as ended with its exit code (attach returns it), the running one as this process
    assert ended is not None and (ended.state, ended.exit_code) == ("ended", 3)
    assert attach("s0123456789ab", str(tmp_path)) == 3
    assert running is not None and running.state == "running" and alive(running.pid, running.started)
